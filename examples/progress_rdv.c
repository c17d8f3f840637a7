/* Does a rendezvous message move while its ranks compute? Ranks 0 and 1 post a receive
 * and a send of BYTES to each other (MPI_Irecv, MPI_Isend), compute for COMPUTE_MS
 * without calling MPI, then MPI_Waitall; REPS times. Rank 0 prints the median time in
 * MPI_Waitall. Open MPI's TCP transport grants a rendezvous request only while a rank
 * runs the progress engine, so above its eager limit (64 KiB) the whole transfer
 * happens inside MPI_Waitall, whatever the computation before it (docs/accuracy.md,
 * seventeenth session: PETSc's halo exchanges in DOLFINx):
 *   mpicc -O2 -o prdv examples/progress_rdv.c
 *   scripts/emucluster run -- -np 2 --map-by node ./prdv 72000 20 50
 * Usage: progress_rdv [BYTES [COMPUTE_MS [REPS]]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bytes = argc > 1 ? atoi(argv[1]) : 72000;
    double compute = (argc > 2 ? atof(argv[2]) : 20.0) * 1e-3;
    int reps = argc > 3 ? atoi(argv[3]) : 50;
    if (size != 2 || reps < 1) {
        if (rank == 0)
            fprintf(stderr, "progress_rdv: needs 2 ranks and REPS >= 1\n");
        MPI_Finalize();
        return 2;
    }
    char *sb = calloc(bytes, 1), *rb = calloc(bytes, 1);
    double *w = calloc(reps, sizeof(double));
    int peer = 1 - rank;
    volatile double sink = 0;
    for (int i = 0; i < reps; i++) {
        MPI_Request q[2];
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Irecv(rb, bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(sb, bytes, MPI_CHAR, peer, 0, MPI_COMM_WORLD, &q[1]);
        double t = MPI_Wtime();
        while (MPI_Wtime() - t < compute)
            sink += 1.0;
        double s = MPI_Wtime();
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        w[i] = MPI_Wtime() - s;
    }
    if (rank == 0) {
        qsort(w, reps, sizeof(double), cmp);
        printf("progress_rdv: %d B each way, %.1f ms of computation: MPI_Waitall median %.3f ms "
               "(min %.3f, max %.3f)\n",
               bytes, compute * 1e3, w[reps / 2] * 1e3, w[0] * 1e3, w[reps - 1] * 1e3);
    }
    free(sb);
    free(rb);
    free(w);
    MPI_Finalize();
    return 0;
}

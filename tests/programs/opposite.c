/* Opposite messages between ranks 0 and 1 (one per host), after IDLE seconds of spinning
 * before each exchange: per size, the time of a lone one-way message (best of 10) and the
 * mean time of 10 exchanges after a warm-up, in three forms: Irecv + Isend + Waitall,
 * Irecv + Send + Wait, and a 2-rank MPI_Alltoall. Prints each exchange's time over the
 * lone message's (docs/accuracy.md, "Two hosts").
 *
 *   mpicc -O2 -o opposite tests/programs/opposite.c
 *   scripts/emucluster up 2 --rate 100mbit
 *   scripts/emucluster run -- -np 2 --map-by node ./opposite 0.005
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (r == 0) fprintf(stderr, "opposite: needs exactly 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    double idle = argc > 1 ? atof(argv[1]) : 0.0;
    const int sizes[] = {98304, 262144, 1048576};
    const char *form[] = {"isend", "send", "alltoall"};
    const int reps = 10;
    char *sb = calloc(1, 1 << 21), *rb = calloc(1, 1 << 21), *ab = calloc(1, 1 << 21);
    int peer = 1 - r;
    for (int i = 0; i < 3; i++) {
        int m = sizes[i];
        double lone = 1e9;
        for (int k = 0; k < reps; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime();
            if (r == 0) {
                MPI_Send(sb, m, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(rb, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(rb, m, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sb, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
            t = MPI_Wtime() - t;
            if (t < lone) lone = t;
        }
        for (int f = 0; f < 3; f++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double total = 0;
            for (int k = 0; k <= reps; k++) {
                double t0 = MPI_Wtime();
                while (MPI_Wtime() - t0 < idle)
                    ;
                double t = MPI_Wtime();
                MPI_Request q[2];
                if (f == 2) {
                    MPI_Alltoall(sb, m, MPI_BYTE, ab, m, MPI_BYTE, MPI_COMM_WORLD);
                } else {
                    MPI_Irecv(rb, m, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &q[0]);
                    if (f == 0) {
                        MPI_Isend(sb, m, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &q[1]);
                        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
                    } else {
                        MPI_Send(sb, m, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
                        MPI_Wait(&q[0], MPI_STATUS_IGNORE);
                    }
                }
                t = MPI_Wtime() - t;
                if (k > 0) total += t; /* the first lines the pair up */
            }
            if (r == 0)
                printf("idle %.4f s %8d B %-8s lone %.4f s exchange %.4f s factor %.2f\n", idle, m,
                       form[f], lone, total / reps, total / reps / lone);
        }
    }
    free(sb);
    free(rb);
    free(ab);
    MPI_Finalize();
    return 0;
}

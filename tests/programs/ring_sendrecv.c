/* Ring Sendrecv: every rank sends S bytes to rank-1 and receives from rank+1 at once
 * (GROMACS's halo pulse), against a lone transfer (rank 0 sends S bytes to rank 1, which
 * answers with 1 byte; the others idle). Per size: the median over repetitions of the
 * slowest rank's exchange, and of the lone round trip. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
    int sizes[] = {1024, 4096, 16384, 24576, 49152, 98304, 262144};
    int reps = argc > 1 ? atoi(argv[1]) : 100;
    char *sb = calloc(1, 262144), *rb = calloc(1, 262144);
    double *t = calloc(reps, sizeof(double)), *l = calloc(reps, sizeof(double));
    int left = (r + n - 1) % n, right = (r + 1) % n;
    for (int k = 0; k < 7; k++) {
        int s = sizes[k];
        for (int i = 0; i < reps; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Sendrecv(sb, s, MPI_BYTE, left, 1, rb, s, MPI_BYTE, right, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            double d = MPI_Wtime() - t0;
            MPI_Allreduce(&d, &t[i], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
        for (int i = 0; i < reps; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (r == 0) { MPI_Send(sb, s, MPI_BYTE, 1, 2, MPI_COMM_WORLD); MPI_Recv(rb, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
            if (r == 1) { MPI_Recv(rb, s, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(sb, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD); }
            l[i] = MPI_Wtime() - t0;
        }
        qsort(t, reps, sizeof(double), cmp); qsort(l, reps, sizeof(double), cmp);
        if (r == 0) { printf("%7d B: ring sendrecv %.3f ms, lone round trip %.3f ms, ratio %.2f\n", s, t[reps/2] * 1e3, l[reps/2] * 1e3, t[reps/2] / l[reps/2]); fflush(stdout); }
    }
    MPI_Finalize();
    return 0;
}

/* Ranks 1..k send BYTES each to rank 0 at once (blocking MPI_Send; rank 0 Irecv + Waitall),
 * a barrier apart, for k = 1 .. size-1 and each size given: the mean, median, best and worst
 * of the slowest rank's time over a lone message's (k = 1). The port's share alone gives k;
 * what is above it is TCP's losses in the switch port's queue and the retransmission
 * timeouts that follow (docs/accuracy.md, eighth session).
 *
 *   mpicc -O2 -o incast tests/programs/incast.c
 *   scripts/emucluster run -- -np 4 --map-by node ./incast 15 262144 1048576 2097152
 *       (REPS BYTES...)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int reps = argc > 1 ? atoi(argv[1]) : 15;
    if (reps < 1 || n < 2 || n > 9) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int ai = 2; ai < argc; ai++) {
        int s = atoi(argv[ai]);
        if (s < 1) continue;
        char *b = calloc(n, s);
        double *t = calloc(reps, sizeof(double)), lone = 0;
        for (int k = 1; k < n; k++) {
            for (int i = 0; i < reps; i++) {
                MPI_Request q[8];
                int nq = 0;
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (r == 0) {
                    for (int j = 1; j <= k; j++)
                        MPI_Irecv(b + (size_t)j * s, s, MPI_BYTE, j, 0, MPI_COMM_WORLD, &q[nq++]);
                    MPI_Waitall(nq, q, MPI_STATUSES_IGNORE);
                } else if (r <= k) {
                    MPI_Send(b, s, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
                double d = MPI_Wtime() - t0;
                MPI_Allreduce(&d, &t[i], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            }
            double mean = 0;
            for (int i = 0; i < reps; i++) mean += t[i] / reps;
            qsort(t, reps, sizeof(double), cmp);
            if (k == 1) lone = t[reps / 2];
            if (r == 0) {
                printf("%8d B in%d: mean %.2f  median %.2f  best %.2f  worst %.2f lone times (lone %.1f ms)\n",
                       s, k, mean / lone, t[reps / 2] / lone, t[0] / lone, t[reps - 1] / lone,
                       lone * 1e3);
                fflush(stdout);
            }
        }
        free(b); free(t);
    }
    MPI_Finalize();
    return 0;
}

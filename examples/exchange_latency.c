/* A small message one way against both ways at once: for each size, the median one-way
 * time of 600 ping-pong round trips (halved) between ranks 0 and 1, and the median of 600
 * MPI_Sendrecv exchanges (each rank sends and receives at once), after 50 of each
 * (docs/accuracy.md, nineteenth session; `calibrate`'s exchange, docs/calibrate.md):
 *   mpicc -O2 -o xl examples/exchange_latency.c
 *   scripts/emucluster run -- -np 2 --map-by node --bind-to none ./xl */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 600

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n) {
    qsort(t, n, sizeof *t, cmp);
    return t[n / 2];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (r == 0) fprintf(stderr, "exchange_latency: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int other = 1 - r;
    static double t[N];
    static char a[32768], b[32768];
    const int sizes[] = {0, 8, 256, 1024, 2048, 4096, 8192, 16384, 32768};
    for (int si = 0; si < (int)(sizeof sizes / sizeof *sizes); si++) {
        const int s = sizes[si];
        for (int i = -50; i < N; i++) {
            double t0 = MPI_Wtime();
            if (r == 0) {
                MPI_Send(a, s, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(b, s, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b, s, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(a, s, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
            }
            if (i >= 0) t[i] = (MPI_Wtime() - t0) / 2;
        }
        const double one_way = median(t, N);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = -50; i < N; i++) {
            double t0 = MPI_Wtime();
            MPI_Sendrecv(a, s, MPI_CHAR, other, 1, b, s, MPI_CHAR, other, 1, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            if (i >= 0) t[i] = MPI_Wtime() - t0;
        }
        const double both = median(t, N);
        MPI_Barrier(MPI_COMM_WORLD);
        if (r == 0)
            printf("%6d B: one way %8.2f us, both ways at once %8.2f us, difference %7.2f us\n", s,
                   one_way * 1e6, both * 1e6, (both - one_way) * 1e6);
    }
    MPI_Finalize();
    return 0;
}

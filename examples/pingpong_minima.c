/* How repeatable the empty message's latency is: 2,000 empty round trips between ranks 0
 * and 1 after 50 to warm up; rank 0 prints the spread of the minimum over batches of 8
 * (what `calibrate` once took) and of all round trips, halved (docs/calibrate.md,
 * "Ping-pong"; docs/accuracy.md, seventeenth session):
 *   mpicc -O2 -o pm examples/pingpong_minima.c
 *   scripts/emucluster run -- -np 2 --map-by node ./pm */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 2000
#define BATCH 8

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    static double t[N], mins[N / BATCH];
    char b[1];
    for (int i = -50; i < N; i++) {
        if (rank == 0) {
            double s = MPI_Wtime();
            MPI_Send(b, 0, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(b, 0, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (i >= 0)
                t[i] = (MPI_Wtime() - s) / 2;
        } else if (rank == 1) {
            MPI_Recv(b, 0, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b, 0, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) {
        int nb = N / BATCH;
        for (int k = 0; k < nb; k++) {
            double m = t[k * BATCH];
            for (int j = 1; j < BATCH; j++)
                if (t[k * BATCH + j] < m)
                    m = t[k * BATCH + j];
            mins[k] = m;
        }
        qsort(mins, nb, sizeof(double), cmp);
        qsort(t, N, sizeof(double), cmp);
        printf("min of %d over %d batches: p10 %.2f p50 %.2f p90 %.2f max %.2f us; "
               "all: min %.2f p50 %.2f p90 %.2f us\n",
               BATCH, nb, mins[nb / 10] * 1e6, mins[nb / 2] * 1e6, mins[nb * 9 / 10] * 1e6,
               mins[nb - 1] * 1e6, t[0] * 1e6, t[N / 2] * 1e6, t[N * 9 / 10] * 1e6);
    }
    MPI_Finalize();
    return 0;
}

/* What ranks that wait by polling cost two ranks that measure, where ranks share cores:
 * ranks 2 and up poll a receive with MPI_Test and sleep IDLE_US microseconds between
 * polls while ranks 0 and 1 ping-pong 8 bytes 2,000 times (after 200); rank 0 prints the
 * smallest of the first 64 one-way times, and the smallest, median and 90th percentile of
 * all (docs/calibrate.md: calibrate's barrier; docs/accuracy.md, nineteenth session):
 *   mpicc -O2 -o ip examples/idle_pollers.c
 *   scripts/emucluster run -- -np 4 --map-by node --bind-to none ./ip 20
 *   scripts/emucluster run -- -np 4 --map-by node --bind-to none ./ip 5000
 * Usage: idle_pollers IDLE_US   (at least 2 ranks) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 2000

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int idle_us = argc > 1 ? atoi(argv[1]) : 20;
    if (n < 2 || idle_us < 0) {
        if (r == 0) fprintf(stderr, "idle_pollers: needs 2 ranks or more and IDLE_US >= 0\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    static double t[N];
    char c = 0;
    double a[1] = {0}, b[1];
    if (r >= 2) {
        MPI_Request q;
        MPI_Irecv(&c, 1, MPI_CHAR, 0, 9, MPI_COMM_WORLD, &q);
        int done = 0;
        while (!done) {
            MPI_Test(&q, &done, MPI_STATUS_IGNORE);
            if (!done) usleep(idle_us);
        }
    } else {
        for (int i = -200; i < N; i++) {
            double t0 = MPI_Wtime();
            if (r == 0) {
                MPI_Send(a, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(b, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(b, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(a, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
            }
            if (i >= 0) t[i] = (MPI_Wtime() - t0) / 2;
        }
        if (r == 0) {
            double first = t[0];
            for (int i = 1; i < 64; i++)
                if (t[i] < first) first = t[i];
            qsort(t, N, sizeof *t, cmp);
            printf("pollers sleep %5d us: smallest of 64 %6.2f us, smallest %6.2f, median %6.2f, "
                   "90th percentile %6.2f\n",
                   idle_us, first * 1e6, t[0] * 1e6, t[N / 2] * 1e6, t[9 * N / 10] * 1e6);
            for (int k = 2; k < n; k++) MPI_Send(&c, 1, MPI_CHAR, k, 9, MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}

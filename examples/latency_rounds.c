/* The latency with every rank active, in rounds: pairs (0,1), (2,3), ... ping-pong 8
 * bytes at once, ROUNDS rounds of REPS round trips with a sleep of SLEEP_US between rounds;
 * rank 0 prints each pair's median one-way time per round (µs) and their mean. Where ranks
 * share CPUs (the emulated cluster) the rounds of one launch agree and launches differ
 * (docs/accuracy.md, twenty-second session).  Usage: latency_rounds ROUNDS REPS SLEEP_US */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    int R = atoi(argv[1]), K = atoi(argv[2]), sleep_us = atoi(argv[3]);
    int peer = rank ^ 1; char b[8] = {0};
    double *t = malloc(sizeof(double) * K);
    double *all = malloc(sizeof(double) * size * R);
    double *mine = malloc(sizeof(double) * R);
    for (int r = 0; r < R; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (sleep_us > 0) usleep(sleep_us);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 0; k < K; k++) {
            double t0 = MPI_Wtime();
            if (rank % 2 == 0) { MPI_Send(b, 8, MPI_CHAR, peer, 0, MPI_COMM_WORLD); MPI_Recv(b, 8, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
            else { MPI_Recv(b, 8, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(b, 8, MPI_CHAR, peer, 0, MPI_COMM_WORLD); }
            t[k] = (MPI_Wtime() - t0) / 2;
        }
        qsort(t, K, sizeof(double), cmp);
        mine[r] = t[K / 2];
    }
    MPI_Gather(mine, R, MPI_DOUBLE, all, R, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double s = 0; int n = 0;
        for (int p = 0; p < size; p += 2) { printf("pair %d:", p / 2); for (int r = 0; r < R; r++) { printf(" %.1f", all[p * R + r] * 1e6); s += all[p * R + r]; n++; } printf("\n"); }
        printf("mean of round medians %.1f us\n", s / n * 1e6);
    }
    MPI_Finalize();
    return 0;
}

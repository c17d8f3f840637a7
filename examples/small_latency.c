/* Small-message latency with every rank active: REPS MPI_Allreduce calls of COUNT doubles,
 * then REPS MPI_Sendrecv of COUNT doubles between rank pairs (r, r^1), all pairs at once;
 * rank 0 prints the time per call of each. On the emulated cluster it shows what sharing
 * this machine's cores costs a small message (docs/accuracy.md, tenth session):
 *   mpicc -O2 -o sl examples/small_latency.c
 *   scripts/emucluster run -- -np 4 --map-by node ./sl 5000 1
 * Usage: small_latency [REPS [COUNT]]   (an even number of ranks) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int reps = argc > 1 ? atoi(argv[1]) : 10000;
    const int count = argc > 2 ? atoi(argv[2]) : 1;
    if (size % 2 != 0 || reps < 1 || count < 1) {
        if (rank == 0) fprintf(stderr, "small_latency: needs an even number of ranks, REPS >= 1, COUNT >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double *a = calloc(count, sizeof *a), *b = calloc(count, sizeof *b);
    for (int k = 0; k < 100; k++) MPI_Allreduce(a, b, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int k = 0; k < reps; k++) MPI_Allreduce(a, b, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    const int peer = rank ^ 1;
    for (int k = 0; k < reps; k++)
        MPI_Sendrecv(a, count, MPI_DOUBLE, peer, 0, b, count, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    double t3 = MPI_Wtime();
    if (rank == 0)
        printf("small_latency: %d ranks, %d double(s): MPI_Allreduce %.1f us/call, pairwise MPI_Sendrecv %.1f us/call\n",
               size, count, (t1 - t0) / reps * 1e6, (t3 - t2) / reps * 1e6);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}

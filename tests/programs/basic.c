/* Point-to-point and collectives with known record counts per rank.
 * Run with 4 ranks. Prints only deterministic results (sums), so that its output can be
 * compared byte for byte with and without the layer. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) {
        if (rank == 0) fprintf(stderr, "basic: needs 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    int buf[1000];
    for (int i = 0; i < 1000; i++) buf[i] = rank * 1000 + i;
    long sum = 0;

    /* 1. Blocking ring: rank r sends 100 ints to r+1 (MPI_Send x1, MPI_Recv x1 per rank).
     *    Even ranks send first to avoid deadlock. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int in[1000];
    if (rank % 2 == 0) {
        MPI_Send(buf, 100, MPI_INT, next, 7, MPI_COMM_WORLD);
        MPI_Recv(in, 100, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(in, 100, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, 100, MPI_INT, next, 7, MPI_COMM_WORLD);
    }
    for (int i = 0; i < 100; i++) sum += in[i];

    /* 2. ANY_SOURCE: ranks 1..3 send 10 doubles to rank 0, which receives with ANY_SOURCE. */
    double d[10] = {0};
    if (rank == 0) {
        for (int k = 1; k < size; k++) {
            MPI_Status st;
            MPI_Recv(d, 10, MPI_DOUBLE, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &st);
            sum += (long)d[0];
        }
    } else {
        for (int i = 0; i < 10; i++) d[i] = rank;
        MPI_Send(d, 10, MPI_DOUBLE, 0, 11, MPI_COMM_WORLD);
    }

    /* 3. Nonblocking exchange with both neighbours: 2 MPI_Isend + 2 MPI_Irecv + 1 MPI_Waitall. */
    int a[50], b[50];
    MPI_Request req[4];
    MPI_Irecv(a, 50, MPI_INT, prev, 21, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(b, 50, MPI_INT, next, 22, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(buf, 50, MPI_INT, next, 21, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(buf, 50, MPI_INT, prev, 22, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    sum += a[0] + b[0];

    /* 4. Nonblocking ANY_SOURCE receive completed by MPI_Wait: rank 2 receives from rank 3. */
    if (rank == 2) {
        int x = 0;
        MPI_Request r;
        MPI_Irecv(&x, 1, MPI_INT, MPI_ANY_SOURCE, 31, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        sum += x;
    } else if (rank == 3) {
        int x = 333;
        MPI_Send(&x, 1, MPI_INT, 2, 31, MPI_COMM_WORLD);
    }

    /* 5. A split communicator {0,2} and {1,3}, with the order of ranks reversed (key = -rank):
     *    in the sub-communicator, local rank 0 is WORLD rank 2 (or 3). Local rank 0 sends to
     *    local rank 1: WORLD 2 -> 0 and 3 -> 1. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hr;
    MPI_Comm_rank(half, &hr);
    int v = rank;
    if (hr == 0) MPI_Send(&v, 1, MPI_INT, 1, 41, half);
    else { MPI_Recv(&v, 1, MPI_INT, 0, 41, half, MPI_STATUS_IGNORE); sum += v; }
    /* Bcast in the sub-communicator from local root 1 (WORLD 0 or 1): 256 bytes. */
    char bc[256];
    for (int i = 0; i < 256; i++) bc[i] = (char)(hr == 1 ? i : 0);
    MPI_Bcast(bc, 256, MPI_CHAR, 1, half);
    sum += bc[255];
    MPI_Comm_free(&half);

    /* 6. Collectives on WORLD: alltoall of 1000 bytes per pair, bcast, scatter, reduce,
     *    allreduce, barrier. */
    char *sa = malloc(1000 * size), *ra = malloc(1000 * size);
    for (int i = 0; i < 1000 * size; i++) sa[i] = (char)(rank + i);
    MPI_Alltoall(sa, 1000, MPI_CHAR, ra, 1000, MPI_CHAR, MPI_COMM_WORLD);
    for (int i = 0; i < 1000 * size; i += 997) sum += ra[i];
    int big[4096];
    for (int i = 0; i < 4096; i++) big[i] = (rank == 0) ? i : -1;
    MPI_Bcast(big, 4096, MPI_INT, 0, MPI_COMM_WORLD);
    sum += big[4095];
    int sc[4 * 8], scr[8];
    for (int i = 0; i < 32; i++) sc[i] = i;
    MPI_Scatter(sc, 8, MPI_INT, scr, 8, MPI_INT, 0, MPI_COMM_WORLD);
    sum += scr[7];
    long tot = 0;
    MPI_Reduce(&sum, &tot, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    long all = 0;
    MPI_Allreduce(&sum, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Deterministic output: every rank's sum, gathered and printed by rank 0 only
     * (output of several ranks interleaves in any order). */
    long sums[4];
    MPI_Gather(&sum, 1, MPI_LONG, sums, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0; r < size; r++) printf("rank %d sum %ld all %ld\n", r, sums[r], all);
    free(sa); free(ra);
    MPI_Finalize();
    return 0;
}

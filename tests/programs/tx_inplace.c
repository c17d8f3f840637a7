/* MPI_IN_PLACE in Allreduce, Reduce (root), Gather (root), Scatter (root), Allgather and
 * Alltoall. Run with 4 ranks. Every rank's results are gathered to rank 0, which prints
 * them, so that the output is deterministic. */
#include <mpi.h>
#include <stdio.h>

#define NRES 16

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) MPI_Abort(MPI_COMM_WORLD, 3);
    int res[NRES] = {0};

    /* Allreduce in place: 3 ints. */
    int a[3] = {rank, 2 * rank, 1};
    MPI_Allreduce(MPI_IN_PLACE, a, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    res[0] = a[0]; res[1] = a[1]; res[2] = a[2];

    /* Reduce in place at root 1: 2 ints. */
    int r[2] = {rank + 1, 10 * rank};
    if (rank == 1) MPI_Reduce(MPI_IN_PLACE, r, 2, MPI_INT, MPI_MAX, 1, MPI_COMM_WORLD);
    else MPI_Reduce(r, NULL, 2, MPI_INT, MPI_MAX, 1, MPI_COMM_WORLD);
    res[3] = rank == 1 ? r[0] * 1000 + r[1] : -1;

    /* Gather in place at root 2: 2 ints per rank; the root's share is already in place.
     * The root's send count and type are ignored: pass 0 and MPI_DATATYPE_NULL. */
    int g[8] = {0};
    int mine[2] = {rank, rank * rank};
    if (rank == 2) {
        g[4] = mine[0]; g[5] = mine[1];
        MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, 2, MPI_INT, 2, MPI_COMM_WORLD);
        for (int i = 0; i < 8; i++) res[4] = res[4] * 3 + g[i];
    } else {
        MPI_Gather(mine, 2, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 2, MPI_COMM_WORLD);
        res[4] = -1;
    }

    /* Scatter in place at root 3: 2 ints per rank; the root keeps its share in place. */
    int s[8];
    int got[2] = {-7, -7};
    if (rank == 3) {
        for (int i = 0; i < 8; i++) s[i] = 100 + i;
        MPI_Scatter(s, 2, MPI_INT, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, 3, MPI_COMM_WORLD);
        got[0] = s[6]; got[1] = s[7];
    } else {
        MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, got, 2, MPI_INT, 3, MPI_COMM_WORLD);
    }
    res[5] = got[0]; res[6] = got[1];

    /* Allgather in place: 2 ints per rank. */
    int ag[8] = {0};
    ag[2 * rank] = rank + 5; ag[2 * rank + 1] = rank * 7;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ag, 2, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < 8; i++) res[7] = res[7] * 5 + ag[i];

    /* Alltoall in place: 1 int per pair. */
    int at[4];
    for (int i = 0; i < 4; i++) at[i] = rank * 10 + i;
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, at, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) res[8 + i] = at[i];

    int all[4 * NRES];
    MPI_Gather(res, NRES, MPI_INT, all, NRES, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int k = 0; k < 4; k++) {
            printf("rank %d:", k);
            for (int i = 0; i < 12; i++) printf(" %d", all[k * NRES + i]);
            printf("\n");
        }
    MPI_Finalize();
    return 0;
}

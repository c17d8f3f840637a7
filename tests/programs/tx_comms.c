/* Sub-communicators: split, dup, and a 2x2 Cartesian grid cut into row and column
 * communicators with MPI_Cart_sub (as HPL does). Point-to-point and collectives in each;
 * results gathered to rank 0. Run with 4 ranks. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) MPI_Abort(MPI_COMM_WORLD, 3);
    int res[8] = {0};

    /* Duplicate: a ring with tag 62. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int v = rank * 11, w = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, (rank + 1) % 4, 62, &w, 1, MPI_INT, (rank + 3) % 4, 62, dup,
                 MPI_STATUS_IGNORE);
    res[0] = w;

    /* Split into {0,1} and {2,3}, reversed order: local 0 is WORLD 1 (or 3). */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, -rank, &half);
    int hr;
    MPI_Comm_rank(half, &hr);
    int s = rank + 1;
    MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_INT, MPI_PROD, half);
    res[1] = s * 10 + hr;

    /* 2x2 grid, row-major: rank = 2*row + col. */
    MPI_Comm grid, row, col;
    int dims[2] = {2, 2}, periods[2] = {0, 0};
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    int keep_col[2] = {0, 1}, keep_row[2] = {1, 0};
    MPI_Cart_sub(grid, keep_col, &row); /* ranks of the same row */
    MPI_Cart_sub(grid, keep_row, &col); /* ranks of the same column */
    int coords[2];
    MPI_Cart_coords(grid, rank, 2, coords);
    int cr;
    MPI_Comm_rank(col, &cr);
    /* Column exchange with tag 61: local peer 1 - cr, WORLD rank ^ 2. */
    int x = 1000 + rank, y = -1;
    if (cr == 0) {
        MPI_Send(&x, 1, MPI_INT, 1, 61, col);
        MPI_Recv(&y, 1, MPI_INT, 1, 61, col, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&y, 1, MPI_INT, 0, 61, col, MPI_STATUS_IGNORE);
        MPI_Send(&x, 1, MPI_INT, 0, 61, col);
    }
    res[2] = y;
    /* Row broadcast from local root 1 (column 1): 16 doubles. */
    double d[16];
    for (int i = 0; i < 16; i++) d[i] = rank * 100 + i;
    MPI_Bcast(d, 16, MPI_DOUBLE, 1, row);
    res[3] = (int)d[15];
    res[4] = coords[0] * 10 + coords[1];
    /* Nonblocking in the row communicator with ANY_SOURCE: tag 63. */
    int rr;
    MPI_Comm_rank(row, &rr);
    int z = -1, zo = 7 * rank;
    MPI_Request q[2];
    MPI_Status st[2];
    MPI_Irecv(&z, 1, MPI_INT, MPI_ANY_SOURCE, 63, row, &q[0]);
    MPI_Isend(&zo, 1, MPI_INT, 1 - rr, 63, row, &q[1]);
    MPI_Waitall(2, q, st);
    res[5] = z;
    res[6] = st[0].MPI_SOURCE;

    MPI_Comm_free(&row);
    MPI_Comm_free(&col);
    MPI_Comm_free(&grid);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    int all[32];
    MPI_Gather(res, 8, MPI_INT, all, 8, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int k = 0; k < 4; k++) {
            printf("rank %d:", k);
            for (int i = 0; i < 7; i++) printf(" %d", all[k * 8 + i]);
            printf("\n");
        }
    MPI_Finalize();
    return 0;
}

/* MPI_PROC_NULL as peer of Send, Recv, Isend, Irecv and Sendrecv; the statuses of the
 * receives are printed. Run with 2 ranks; rank 0 prints. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int buf[64];
    for (int i = 0; i < 64; i++) buf[i] = i;
    int in[64] = {0};
    MPI_Status st;
    int count, res[12];

    MPI_Send(buf, 64, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD);
    in[0] = -9;
    MPI_Recv(in, 64, MPI_INT, MPI_PROC_NULL, 6, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    res[0] = st.MPI_SOURCE == MPI_PROC_NULL;
    res[1] = st.MPI_TAG == MPI_ANY_TAG;
    res[2] = count;
    res[3] = in[0];

    MPI_Request rq[2];
    MPI_Isend(buf, 32, MPI_INT, MPI_PROC_NULL, 7, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(in, 32, MPI_INT, MPI_PROC_NULL, 8, MPI_COMM_WORLD, &rq[1]);
    MPI_Status sts[2];
    MPI_Waitall(2, rq, sts);
    MPI_Get_count(&sts[1], MPI_INT, &count);
    res[4] = sts[1].MPI_SOURCE == MPI_PROC_NULL;
    res[5] = count;
    res[6] = rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL;

    /* Sendrecv along an open chain: rank 0 has no left neighbour, the last rank no right. */
    int left = rank == 0 ? MPI_PROC_NULL : rank - 1;
    int right = rank == size - 1 ? MPI_PROC_NULL : rank + 1;
    int v = 100 + rank, w = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, right, 9, &w, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    res[7] = w;
    res[8] = st.MPI_SOURCE == MPI_PROC_NULL ? -2 : st.MPI_SOURCE;
    res[9] = count;
    /* Both ends PROC_NULL. */
    MPI_Sendrecv(&v, 1, MPI_INT, MPI_PROC_NULL, 10, &w, 1, MPI_INT, MPI_PROC_NULL, 10,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    res[10] = w;
    res[11] = 0;

    int all[64 * 12];
    MPI_Gather(res, 12, MPI_INT, all, 12, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int k = 0; k < size; k++) {
            printf("rank %d:", k);
            for (int i = 0; i < 11; i++) printf(" %d", all[k * 12 + i]);
            printf("\n");
        }
    MPI_Finalize();
    return 0;
}

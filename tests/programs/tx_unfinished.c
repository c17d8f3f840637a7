/* Nonblocking sends never completed: rank 0 posts three MPI_Isend to rank 1 and never
 * tests, waits on or frees their requests (as Ray does with a few at its end); rank 1
 * receives them with blocking receives. 2 KiB messages: eager within a node, and too large
 * for Open MPI's shared request of sends complete at their post, so each send has its own
 * request. Run with 2 ranks; rank 1 prints what it received. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) MPI_Abort(MPI_COMM_WORLD, 3);
    enum { N = 512 };
    static int out[3][N], in[3][N];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < N; j++) out[i][j] = 7 + i + j;
    MPI_Request rq[3];
    if (rank == 0) {
        for (int i = 0; i < 3; i++)
            MPI_Isend(out[i], N, MPI_INT, 1, 40 + i, MPI_COMM_WORLD, &rq[i]);
    } else {
        for (int i = 0; i < 3; i++) {
            MPI_Recv(in[i], N, MPI_INT, 0, 40 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf("received %d .. %d with tag %d\n", in[i][0], in[i][N - 1], 40 + i);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

/* Wait states with known causes, for tests/mpi_waits.rs. A first barrier lines the ranks
 * up (MPI_Init returns up to 0.1 s apart under MPICH, which would eat into the late
 * sender's wait). Then rank 1 sleeps 200 ms before its send to rank 0 (a late sender);
 * rank 2 sleeps 400 ms before a second barrier (the others wait at the barrier); every
 * rank then exchanges 1 MB with its ring neighbours. Last, rank 3 sleeps 200 ms before a
 * send that rank 0 polls for with MPI_Test in a tight loop (a late sender seen by a
 * polling loop: the successful test is recorded from the loop's first unsuccessful one),
 * then polls alternately for two messages of rank 3's. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int v = rank;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        usleep(200000);
        MPI_Send(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Recv(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 2) usleep(400000);
    MPI_Barrier(MPI_COMM_WORLD);
    int n = 1 << 20;
    char *a = calloc(n, 1), *b = calloc(n, 1);
    MPI_Sendrecv(a, n, MPI_BYTE, (rank + 1) % size, 1, b, n, MPI_BYTE, (rank + size - 1) % size, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    free(a);
    free(b);
    if (rank == 3) {
        usleep(200000);
        MPI_Send(&v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Request req;
        int flag = 0;
        MPI_Irecv(&v, 1, MPI_INT, 3, 9, MPI_COMM_WORLD, &req);
        while (!flag) MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    }
    /* A loop that alternates between two requests (both late): no successful test is
     * charged with the loop, since it waited on neither alone. */
    if (rank == 3) {
        usleep(200000);
        MPI_Send(&v, 1, MPI_INT, 0, 10, MPI_COMM_WORLD);
        MPI_Send(&v, 1, MPI_INT, 0, 11, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Request ra, rb;
        int fa = 0, fb = 0, va, vb;
        MPI_Irecv(&va, 1, MPI_INT, 3, 10, MPI_COMM_WORLD, &ra);
        MPI_Irecv(&vb, 1, MPI_INT, 3, 11, MPI_COMM_WORLD, &rb);
        while (!fa || !fb) {
            if (!fa) MPI_Test(&ra, &fa, MPI_STATUS_IGNORE);
            if (!fb) MPI_Test(&rb, &fb, MPI_STATUS_IGNORE);
        }
    }
    MPI_Finalize();
    return 0;
}

/* A world that spawns two others, one after the other (MPI_Comm_spawn), as a manager
 * does with its workers: the parent world makes 100 all-reduces and sends each child a
 * message over the intercommunicator; each child world makes 50 all-reduces. Prints
 * one line per process with what it computed. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int sum = 0;
    if (parent == MPI_COMM_NULL) {
        for (int s = 1; s <= 2; s++) {
            MPI_Comm inter;
            int errs[2];
            char *args[] = {"child", NULL};
            MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errs);
            for (int i = 0; i < 50; i++) {
                int v = rank + i;
                MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            }
            if (rank == 0) {
                int v = 40 + s;
                MPI_Send(&v, 1, MPI_INT, 0, 7, inter);
                MPI_Send(&v, 1, MPI_INT, 1, 7, inter);
            }
            MPI_Comm_disconnect(&inter);
        }
        printf("parent %d of %d sum %d\n", rank, size, sum);
    } else {
        int got;
        MPI_Recv(&got, 1, MPI_INT, 0, 7, parent, MPI_STATUS_IGNORE);
        for (int i = 0; i < 50; i++) {
            int v = rank * got;
            MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        }
        MPI_Comm_disconnect(&parent);
        printf("child %d of %d got %d sum %d\n", rank, size, got, sum);
    }
    MPI_Finalize();
    return 0;
}

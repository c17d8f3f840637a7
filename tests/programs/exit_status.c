/* Exits with the status given as argv[1] after a clean MPI_Finalize: the launcher (and
 * `pmpi-predict run`) must pass it through. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return argc > 1 ? atoi(argv[1]) : 0;
}

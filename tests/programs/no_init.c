/* An MPI rank that links MPI but never calls MPI_Init (MPI_Initialized is allowed
 * before it): the layer cannot record anything and must say so at exit. */
#include <mpi.h>
#include <stdio.h>

int main(void) {
    int flag = -1;
    MPI_Initialized(&flag);
    printf("initialized %d\n", flag);
    return 0;
}

/* A job that runs for a while at a steady pace: ITERS rounds of a ring exchange
 * (MPI_Sendrecv of BYTES to the next rank, from the previous), each followed by SLEEP_MS of
 * "compute". Prints the number of exchanges per rank. Usage: steady ITERS BYTES SLEEP_MS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 100;
    int bytes = argc > 2 ? atoi(argv[2]) : 65536;
    int ms = argc > 3 ? atoi(argv[3]) : 20;
    char *out = calloc(bytes, 1), *in = calloc(bytes, 1);
    struct timespec pause = {0, (long)ms * 1000000L};
    for (int i = 0; i < iters; i++) {
        MPI_Sendrecv(out, bytes, MPI_BYTE, (rank + 1) % size, 1, in, bytes, MPI_BYTE,
                     (rank + size - 1) % size, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        nanosleep(&pause, NULL);
    }
    printf("rank %d exchanges %d\n", rank, iters);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}

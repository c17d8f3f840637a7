/* MPI_Alltoall sweep for the accuracy benchmark: for each block size given on the command
 * line (bytes per pair), REPS timed calls, each after a barrier.
 * Usage: alltoall_sweep REPS SIZE [SIZE...] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: alltoall_sweep REPS SIZE [SIZE...]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int reps = atoi(argv[1]);
    size_t maxm = 0;
    for (int i = 2; i < argc; i++) if ((size_t)atol(argv[i]) > maxm) maxm = (size_t)atol(argv[i]);
    char *s = malloc(maxm * size), *r = malloc(maxm * size);
    memset(s, rank, maxm * size);
    for (int i = 2; i < argc; i++) {
        int m = atoi(argv[i]);
        for (int k = 0; k < reps; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Alltoall(s, m, MPI_CHAR, r, m, MPI_CHAR, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) printf("alltoall_sweep: %d ranks, %d sizes, %d reps\n", size, argc - 2, reps);
    free(s); free(r);
    MPI_Finalize();
    return 0;
}

/* MPI_Bcast and MPI_Scatter sweeps for the accuracy benchmark: for each size (bytes per
 * broadcast, and per destination for the scatter), REPS calls of each from rank 0, each
 * after a barrier.  Usage: coll_sweep REPS SIZE [SIZE...] */
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
        if (rank == 0) fprintf(stderr, "usage: coll_sweep REPS SIZE [SIZE...]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int reps = atoi(argv[1]);
    size_t maxm = 0;
    for (int i = 2; i < argc; i++) if ((size_t)atol(argv[i]) > maxm) maxm = (size_t)atol(argv[i]);
    char *b = malloc(maxm * size), *r = malloc(maxm);
    memset(b, 1, maxm * size);
    for (int i = 2; i < argc; i++) {
        int m = atoi(argv[i]);
        for (int k = 0; k < reps; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Bcast(b, m, MPI_CHAR, 0, MPI_COMM_WORLD);
        }
        for (int k = 0; k < reps; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Scatter(b, m, MPI_CHAR, r, m, MPI_CHAR, 0, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) printf("coll_sweep: %d ranks, %d sizes, %d reps\n", size, argc - 2, reps);
    free(b); free(r);
    MPI_Finalize();
    return 0;
}

/* pmpi-predict demo workload: the communication patterns the models are about.
 *   1. MPI_Alltoall sweep, 1 KiB .. 256 KiB per pair (the contention signature);
 *   2. outgoing conflict: rank 0 sends 2 MiB to ranks 1 and 2 at once (penalty ~2);
 *   3. incoming conflict: ranks 1 and 2 send 2 MiB to rank 3 at once;
 *   4. MPI_Bcast and MPI_Scatter of 256 KiB from rank 0.
 * Runs on any number of ranks >= 4 (extra ranks take part in the collectives only).
 * Prints one checksum line from rank 0 so that runs can be compared. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 4) {
        if (rank == 0) fprintf(stderr, "demo: needs at least 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int reps = argc > 1 ? atoi(argv[1]) : 2;
    const size_t max_block = 256 * 1024, big = 2 * 1024 * 1024;
    char *s = malloc(max_block * size), *r = malloc(max_block * size);
    char *b1 = malloc(big), *b2 = malloc(big);
    memset(s, rank + 1, max_block * size);
    memset(b1, 7, big);
    long check = 0;

    for (size_t m = 1024; m <= max_block; m *= 4)
        for (int k = 0; k < reps; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Alltoall(s, (int)m, MPI_CHAR, r, (int)m, MPI_CHAR, MPI_COMM_WORLD);
            check += r[(size - 1) * m];
        }

    for (int k = 0; k < reps; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Request q[2];
            MPI_Isend(b1, (int)big, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &q[0]);
            MPI_Isend(b1, (int)big, MPI_CHAR, 2, 1, MPI_COMM_WORLD, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        } else if (rank == 1 || rank == 2) {
            MPI_Recv(b2, (int)big, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            check += b2[big - 1];
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1 || rank == 2) {
            MPI_Send(b1, (int)big, MPI_CHAR, 3, 2, MPI_COMM_WORLD);
        } else if (rank == 3) {
            MPI_Request q[2];
            MPI_Irecv(b2, (int)big, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &q[0]);
            MPI_Irecv(b1, (int)big, MPI_CHAR, 2, 2, MPI_COMM_WORLD, &q[1]);
            MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
            check += b2[0];
        }
    }

    for (int k = 0; k < reps; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Bcast(r, (int)max_block, MPI_CHAR, 0, MPI_COMM_WORLD);
        MPI_Scatter(s, (int)(max_block / size), MPI_CHAR, r, (int)(max_block / size), MPI_CHAR, 0, MPI_COMM_WORLD);
        check += r[0];
    }

    long total = 0;
    MPI_Reduce(&check, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("demo: %d ranks, checksum %ld\n", size, total);
    free(s); free(r); free(b1); free(b2);
    MPI_Finalize();
    return 0;
}

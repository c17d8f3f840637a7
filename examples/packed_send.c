/* When does a blocking send of a datatype not contiguous return? Rank 0 sends N bytes
 * (default 196,608) to rank 1 five times as MPI_BYTE and five times as one vector type:
 * the top 64 rows of a column-major matrix of 128 rows, N/512 columns (as ScaLAPACK's
 * BLACS sends a block); rank 1 posts each receive LATE microseconds after a barrier
 * (default 200) and reports when it completed. Prints the send's time and the receive's
 * (docs/accuracy.md, twentieth session; docs/engine.md, FLAG_PACKED):
 *   mpicc -O2 -o ps examples/packed_send.c
 *   scripts/emucluster run -- -np 2 --map-by node --bind-to none ./ps 196608 200
 *   mpicc.mpich -O2 -o ps-m examples/packed_send.c
 *   scripts/emucluster run-mpich -- -hosts h0,h1 -n 2 ./ps-m 196608 20000
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int n = argc > 1 ? atoi(argv[1]) : 196608;   /* bytes */
    int late = argc > 2 ? atoi(argv[2]) : 200;   /* us */
    int rows = 64, cols = n / 8 / rows;          /* doubles: rows x cols, lda = 2*rows */
    double *a = calloc((size_t)2 * rows * cols, 8);
    MPI_Datatype vec; MPI_Type_vector(cols, rows, 2 * rows, MPI_DOUBLE, &vec); MPI_Type_commit(&vec);
    for (int k = 0; k < 2; k++) {
        for (int rep = 0; rep < 5; rep++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime();
            if (rank == 0) {
                if (k == 0) MPI_Send(a, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                else MPI_Send(a, 1, vec, 1, 0, MPI_COMM_WORLD);
                double s = MPI_Wtime() - t;
                double r; MPI_Recv(&r, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                printf("%s %d B late %d us: send %.3f ms, recv done %.3f ms\n", k ? "vector" : "bytes ", n, late, s * 1e3, r * 1e3);
            } else {
                usleep(late);
                if (k == 0) MPI_Recv(a, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                else MPI_Recv(a, 1, vec, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double r = MPI_Wtime() - t;
                MPI_Send(&r, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
            }
        }
    }
    MPI_Finalize();
    return 0;
}

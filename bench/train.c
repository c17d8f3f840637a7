/* A train of small messages, as Meep's halo exchange sends them: rank 1 sends K messages
 * (sizes cycling through 8, 2224, 168, 8, 160 bytes) back to back with MPI_Isend to rank
 * 0, which has them posted; rank 0 then answers 8 bytes; N rounds. Prints the time a
 * round. Usage: train N K. Run under the layer on 2 emulated hosts and compare with the
 * replay (docs/accuracy.md, twenty-sixth session):
 *   mpicc -O2 -o /tmp/train bench/train.c
 *   scripts/emucluster up 4 --rate 100mbit --slots 2
 *   scripts/emucluster run -- -np 2 --map-by node -x LD_PRELOAD=$PWD/target/release/libpmpi_predict.so \
 *       -x PMPI_PREDICT_OUT=/tmp/train-15 -x PMPI_PREDICT_PROFILE=PROFILE /tmp/train 2000 15
 *   target/release/pmpi-predict accuracy /tmp/train-15 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int n = argc > 1 ? atoi(argv[1]) : 1000, k = argc > 2 ? atoi(argv[2]) : 15;
    static const int sizes[5] = {8, 2224, 168, 8, 160};
    char *buf = calloc(k, 4096); MPI_Request *rq = malloc(sizeof(MPI_Request) * (k + 1));
    char ack[8] = {0};
    long bytes = 0; for (int j = 0; j < k; j++) bytes += sizes[j % 5];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        if (rank == 1) {
            MPI_Irecv(ack, 8, MPI_BYTE, 0, 99, MPI_COMM_WORLD, &rq[k]);
            for (int j = 0; j < k; j++) MPI_Isend(buf + 4096 * j, sizes[j % 5], MPI_BYTE, 0, j, MPI_COMM_WORLD, &rq[j]);
            MPI_Waitall(k + 1, rq, MPI_STATUSES_IGNORE);
        } else if (rank == 0) {
            for (int j = 0; j < k; j++) MPI_Irecv(buf + 4096 * j, sizes[j % 5], MPI_BYTE, 1, j, MPI_COMM_WORLD, &rq[j]);
            MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 8, MPI_BYTE, 1, 99, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0) printf("train of %d messages (%ld bytes): %.1f us a round\n", k, bytes, t / n * 1e6);
    MPI_Finalize();
    return 0;
}

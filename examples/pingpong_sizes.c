/* One-way time of a ping-pong between ranks 0 and 1 at a few sizes, each repetition
 * 20 ms after the last so that a shaper's token bucket is full again: what a lone
 * message of that size costs on an idle link. Usage: pingpong_sizes
 * Prints one line per size with the time a 100 Mbit/s wire needs for the bytes. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const long sizes[] = {512, 4096, 16384, 65536, 4194304};
    char *buf = calloc(4194304, 1);
    for (int s = 0; s < 5; s++) {
        const long m = sizes[s];
        const int reps = m > 1000000 ? 3 : 20;
        double sum = 0;
        for (int k = 0; k < reps; k++) {
            usleep(20000);
            MPI_Barrier(MPI_COMM_WORLD);
            const double t = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, (int)m, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, (int)m, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, (int)m, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int)m, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
            }
            sum += MPI_Wtime() - t;
        }
        if (rank == 0)
            printf("%8ld B one-way %10.1f us  (wire at 100 Mbit/s %10.1f us)\n", m,
                   sum / reps / 2 * 1e6, m * 8 / 100.0);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}

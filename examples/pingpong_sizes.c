/* One-way time of a ping-pong between ranks 0 and 1 at a few sizes, each repetition
 * 20 ms after the last so that a shaper's token bucket is full again: what a lone
 * message of that size costs on an idle link.
 * Usage: pingpong_sizes [MBIT [SIZE...]]
 * MBIT: the port's rate, for the wire time printed beside each size (default 100);
 * SIZE: message sizes in bytes (default 512 4096 16384 65536 4194304).
 * Prints one line per size (mean and median one-way time), then the rate of 40 MiB
 * sent back to back in 1 MiB messages. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_REPS 20

static int by_value(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const double mbit = argc > 1 ? atof(argv[1]) : 100.0;
    long sizes[32] = {512, 4096, 16384, 65536, 4194304};
    int n = 5;
    if (argc > 2) {
        n = 0;
        for (int i = 2; i < argc && n < 32; i++)
            sizes[n++] = atol(argv[i]);
    }
    long largest = 1048576;
    for (int s = 0; s < n; s++)
        if (sizes[s] > largest)
            largest = sizes[s];
    char *buf = calloc((size_t)largest, 1);
    for (int s = 0; s < n; s++) {
        const long m = sizes[s];
        const int reps = m > 1000000 ? 3 : MAX_REPS;
        double t_one[MAX_REPS], sum = 0;
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
            t_one[k] = (MPI_Wtime() - t) / 2;
            sum += t_one[k];
        }
        qsort(t_one, (size_t)reps, sizeof t_one[0], by_value);
        if (rank == 0)
            printf("%8ld B one-way %10.1f us, median %10.1f us  (wire at %g Mbit/s %10.1f us)\n",
                   m, sum / reps * 1e6, t_one[reps / 2] * 1e6, mbit, m * 8 / mbit);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double t = MPI_Wtime();
    for (int k = 0; k < 40; k++) {
        if (rank == 0)
            MPI_Send(buf, 1048576, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        else if (rank == 1)
            MPI_Recv(buf, 1048576, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("40 MiB in 1 MiB messages back to back: %.1f Mbit/s\n",
               40.0 * 1048576 * 8 / (MPI_Wtime() - t) / 1e6);
    free(buf);
    MPI_Finalize();
    return 0;
}

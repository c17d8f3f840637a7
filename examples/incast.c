/* Incast: SENDERS ranks (RECV+1, RECV+2, ... modulo the size) send M bytes to rank RECV at
 * once after a barrier; RECV prints "M REP SECONDS" (barrier to the last arrival) for each
 * repetition and size, 16 KiB to 2 MiB (docs/accuracy.md, twenty-second session: on the
 * emulated cluster a repetition either shares the port fairly or stalls on a retransmission
 * timeout, about 0.2 s).  Usage: incast REPS [SENDERS [RECV]]   (defaults 20, 2, 0) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    int nsenders = argc > 2 ? atoi(argv[2]) : 2; int recv = argc > 3 ? atoi(argv[3]) : 0;
    long sizes[] = {16384, 32768, 65536, 131072, 262144, 524288, 1048576, 2097152};
    int ns = sizeof sizes / sizeof *sizes;
    char *buf = malloc(2097152 * (size_t)size);
    MPI_Request q[16];
    for (int r = 0; r < reps; r++)
    for (int s = 0; s < ns; s++) {
        long m = sizes[s];
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == recv) {
            for (int k = 1; k <= nsenders; k++) MPI_Irecv(buf + k * m, (int)m, MPI_CHAR, (recv + k) % size, 0, MPI_COMM_WORLD, &q[k - 1]);
            MPI_Waitall(nsenders, q, MPI_STATUSES_IGNORE);
            double t = MPI_Wtime() - t0;
            printf("%ld %d %.6f\n", m, r, t);
        } else if ((rank - recv + size) % size <= nsenders) {
            MPI_Send(buf, (int)m, MPI_CHAR, recv, 0, MPI_COMM_WORLD);
        }
    }
    MPI_Finalize();
    return 0;
}

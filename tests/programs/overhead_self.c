/* Per-call cost of the layer without a peer: 1 rank, MPI_COMM_SELF, so that the
 * figures do not depend on a second rank being scheduled (scripts/bench-overhead-self).
 * Unsuccessful MPI_Iprobe (counted, not recorded) and Irecv+Isend+Waitall to self (three
 * records). Prints ns per iteration. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int n = atoi(argv[1]), flag, x = 1, y;
    MPI_Request q[2];
    double t = MPI_Wtime();
    for (int i = 0; i < n; i++) MPI_Iprobe(MPI_ANY_SOURCE, 5, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    double ip = (MPI_Wtime() - t) / n * 1e9;
    t = MPI_Wtime();
    for (int i = 0; i < n; i++) {
        MPI_Irecv(&y, 1, MPI_INT, 0, 1, MPI_COMM_SELF, &q[0]);
        MPI_Isend(&x, 1, MPI_INT, 0, 1, MPI_COMM_SELF, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    }
    double ex = (MPI_Wtime() - t) / n * 1e9;
    printf("iprobe %.1f\nself_exchange %.1f\n", ip, ex);
    MPI_Finalize();
    return 0;
}

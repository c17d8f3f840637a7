/* Synchronous sends to a late receiver: ranks 1..n-1 MPI_Ssend S bytes to rank 0, which
 * sleeps 20 ms before posting its receives (in rank order); rank 0 prints each receive's
 * and each MPI_Ssend's time, three repetitions. Below the eager limit the data moves at
 * once (the receives find it there) and the sends end at the match; from the limit on each
 * receive waits for its transfer (docs/engine.md, the replay's table). Usage:
 *   mpicc -O2 -o /tmp/ssend bench/ssend.c
 *   scripts/emucluster up 4 --rate 100mbit --slots 2
 *   scripts/emucluster run -- -np 4 --map-by node /tmp/ssend 27648
 *   mpicc.mpich -O2 -o /tmp/ssend-mpich bench/ssend.c
 *   scripts/emucluster run-mpich -- -n 2 /tmp/ssend-mpich 27648 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int c, char **v) {
    MPI_Init(&c, &v);
    int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (c < 2) {
        if (r == 0) fprintf(stderr, "usage: ssend BYTES\n");
        MPI_Finalize();
        return 2;
    }
    int S = atoi(v[1]);
    char *b = calloc(1, S);
    for (int rep = 0; rep < 3; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        if (r == 0) {
            usleep(20000);
            double tr[16];
            for (int k = 1; k < n; k++) { double t1 = MPI_Wtime(); MPI_Recv(b, S, MPI_BYTE, k, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); tr[k] = MPI_Wtime() - t1; }
            printf("S=%d rep %d recvs:", S, rep); for (int k = 1; k < n; k++) printf(" %.2f", tr[k] * 1e3); printf(" ms\n");
        } else {
            MPI_Ssend(b, S, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            t = MPI_Wtime() - t;
            MPI_Send(&t, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
        }
        if (r == 0) { printf("  ssends:"); for (int k = 1; k < n; k++) { double x; MPI_Recv(&x, 1, MPI_DOUBLE, k, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); printf(" %.2f", x * 1e3); } printf(" ms\n"); }
    }
    MPI_Finalize();
}

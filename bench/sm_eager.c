/* Whether an eager send within a node returns before its receiver enters MPI: per size,
 * after a barrier the receiver (rank 1) sleeps 20 ms before its receive, and rank 0 prints
 * how long its MPI_Bcast (root) and its MPI_Send took. Open MPI 4.1 on one node: 8-256 B
 * return at once (ob1 sends them inline), 300 B-4 KiB wait for the receiver's progress
 * engine, about 20 ms (the shared-memory transport completes such a send when the receiver
 * has taken its fragment; docs/accuracy.md, twenty-eighth session). Usage:
 *   mpicc -O2 -o /tmp/sm_eager bench/sm_eager.c
 *   mpirun --bind-to none -np 2 /tmp/sm_eager */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    static char b[8192];
    int sizes[] = {8, 64, 128, 200, 256, 300, 512, 644, 1024, 4000, 4096};
    for (int k = 0; k < 11; k++) {
        for (int op = 0; op < 2; op++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (r == 1) usleep(20000);
            double t = MPI_Wtime();
            if (op == 0) MPI_Bcast(b, sizes[k], MPI_BYTE, 0, MPI_COMM_WORLD);
            else if (r == 0) MPI_Send(b, sizes[k], MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            else if (r == 1) MPI_Recv(b, sizes[k], MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            t = MPI_Wtime() - t;
            if (r == 0) printf("%s %d B: %.3f ms\n", op ? "send" : "bcast root", sizes[k], t * 1e3);
        }
    }
    MPI_Finalize();
    return 0;
}

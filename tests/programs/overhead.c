/* Microbenchmark for the layer's overhead: per-call time of small MPI calls, measured
 * by the program itself (MPI_Wtime over many iterations). Run with 2 ranks, with and
 * without the layer; scripts/bench-overhead compares the two. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int iters = argc > 1 ? atoi(argv[1]) : 200000;
    int peer = 1 - rank, x = 0, flag;
    MPI_Request rq;
    double t;

    /* 1. ping-pong of 8 bytes: MPI_Send + MPI_Recv per iteration on each rank. */
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) { MPI_Send(&x, 2, MPI_INT, peer, 0, MPI_COMM_WORLD); MPI_Recv(&x, 2, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
        else { MPI_Recv(&x, 2, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(&x, 2, MPI_INT, peer, 0, MPI_COMM_WORLD); }
    }
    double pp = (MPI_Wtime() - t) / iters;

    /* 2. Isend/Irecv + Waitall exchange. */
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        MPI_Request q[2]; int y;
        MPI_Irecv(&y, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &q[0]);
        MPI_Isend(&x, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    }
    double nb = (MPI_Wtime() - t) / iters;

    /* 3. Unsuccessful MPI_Iprobe polling (local only). */
    t = MPI_Wtime();
    for (int i = 0; i < iters; i++) MPI_Iprobe(peer, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    double ip = (MPI_Wtime() - t) / iters;

    /* 4. MPI_Allreduce of one int. */
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    for (int i = 0; i < iters; i++) { int s = i, r; MPI_Allreduce(&s, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); }
    double ar = (MPI_Wtime() - t) / iters;
    (void)rq;
    if (rank == 0) printf("pingpong_us %.4f\nnonblocking_us %.4f\niprobe_us %.4f\nallreduce_us %.4f\n", pp * 1e6, nb * 1e6, ip * 1e6, ar * 1e6);
    MPI_Finalize();
    return 0;
}

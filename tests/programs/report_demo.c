/* A small iterative stencil-like program for the report views (tests/report_html.rs,
 * docs/reports.md): per step a halo exchange with both ring neighbours (Isend/Irecv/
 * Waitall, 64 KiB and 256 KiB), a blocking Sendrecv, an Allreduce, every 5th step an
 * Alltoall and a Bcast. The last rank computes 50 % longer, so the others wait for it.
 * Usage: report_demo [steps, default 20] */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void compute(double seconds) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile double x = 0;
    do {
        for (int i = 0; i < 1000; i++) x += i * 1e-9;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 < seconds);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 20;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int small = 64 * 1024, big = 256 * 1024;
    char *sl = calloc(big, 1), *sr = calloc(big, 1), *rl = calloc(big, 1), *rr = calloc(big, 1);
    char *a2a = calloc((size_t)size * 16384, 1), *a2b = calloc((size_t)size * 16384, 1);
    double v = rank, s;
    for (int it = 0; it < steps; it++) {
        compute(rank == size - 1 ? 0.006 : 0.004);
        int m = it % 2 ? big : small;
        MPI_Request req[4];
        MPI_Irecv(rl, m, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(rr, m, MPI_BYTE, right, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(sr, m, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(sl, m, MPI_BYTE, left, 2, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        MPI_Sendrecv(sl, 4096, MPI_BYTE, right, 3, rl, 4096, MPI_BYTE, left, 3, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (it % 5 == 4) {
            MPI_Alltoall(a2a, 16384, MPI_BYTE, a2b, 16384, MPI_BYTE, MPI_COMM_WORLD);
            MPI_Bcast(sl, 1024, MPI_BYTE, 0, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(sl);
    free(sr);
    free(rl);
    free(rr);
    free(a2a);
    free(a2b);
    MPI_Finalize();
    return 0;
}

/* Patterns of concurrent rendezvous messages against a lone one (median of reps, slowest rank). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    int sizes[] = {262144, 1048576, 2097152};
    char *sb = calloc(1, 2 * 2097152), *rb = calloc(1, 2 * 2097152);
    double *t = calloc(reps, sizeof(double));
    int left = (r + n - 1) % n, right = (r + 1) % n;
    const char *names[] = {"lone 0->1", "pair 0<->1", "ring both ways (Isend/Irecv x2)", "ring one way", "ring sendrecv x2 (b_eff)"};
    for (int k = 0; k < 3; k++) {
        int s = sizes[k];
        double lone = 0;
        for (int pat = 0; pat < 5; pat++) {
            for (int i = 0; i < reps; i++) {
                MPI_Request q[4]; int nq = 0;
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (pat == 0) {
                    if (r == 0) MPI_Send(sb, s, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                    if (r == 1) MPI_Recv(rb, s, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (pat == 1) {
                    if (r < 2) MPI_Sendrecv(sb, s, MPI_BYTE, 1 - r, 1, rb, s, MPI_BYTE, 1 - r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (pat == 2) {
                    MPI_Irecv(rb, s, MPI_BYTE, left, 1, MPI_COMM_WORLD, &q[nq++]);
                    MPI_Irecv(rb + s, s, MPI_BYTE, right, 2, MPI_COMM_WORLD, &q[nq++]);
                    MPI_Isend(sb, s, MPI_BYTE, right, 1, MPI_COMM_WORLD, &q[nq++]);
                    MPI_Isend(sb + s, s, MPI_BYTE, left, 2, MPI_COMM_WORLD, &q[nq++]);
                    MPI_Waitall(nq, q, MPI_STATUSES_IGNORE);
                } else if (pat == 3) {
                    MPI_Sendrecv(sb, s, MPI_BYTE, right, 1, rb, s, MPI_BYTE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Sendrecv(sb, s, MPI_BYTE, right, 1, rb, s, MPI_BYTE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Sendrecv(sb, s, MPI_BYTE, left, 2, rb, s, MPI_BYTE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
                double d = MPI_Wtime() - t0;
                MPI_Allreduce(&d, &t[i], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            }
            qsort(t, reps, sizeof(double), cmp);
            if (pat == 0) lone = t[reps / 2];
            if (r == 0) { printf("%8d B  %-34s median %8.3f ms  min %8.3f  ratio to lone %.2f\n", s, names[pat], t[reps/2]*1e3, t[0]*1e3, t[reps/2]/lone); fflush(stdout); }
        }
    }
    MPI_Finalize();
    return 0;
}

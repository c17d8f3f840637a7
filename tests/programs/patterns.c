/* Patterns of concurrent rendezvous messages by Isend/Irecv/Waitall on 4 hosts (one rank
 * each), against a lone message: median of the slowest rank. Each pattern is a list of arcs. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    struct { const char *name; int n; int a[8][2]; } P[] = {
        {"lone 0->1", 1, {{0,1}}},
        {"pair 0<->1", 2, {{0,1},{1,0}}},
        {"out2 0->1 0->2", 2, {{0,1},{0,2}}},
        {"out2 + back 0<->1 0<->2", 4, {{0,1},{0,2},{1,0},{2,0}}},
        {"out2 in2 other 0->1 0->2 3->0 2->3", 4, {{0,1},{0,2},{3,0},{2,3}}},
        {"chain both 0<->1<->2", 4, {{0,1},{1,0},{1,2},{2,1}}},
        {"ring both ways", 8, {{0,1},{1,2},{2,3},{3,0},{1,0},{2,1},{3,2},{0,3}}},
        {"two pairs 0<->1 2<->3", 4, {{0,1},{1,0},{2,3},{3,2}}},
    };
    int np = sizeof(P) / sizeof(P[0]);
    int s = argc > 2 ? atoi(argv[2]) : 1048576;
    char *sb = calloc(1, s), *rb = calloc(8, s);
    double *t = calloc(reps, sizeof(double)), lone = 0;
    for (int p = 0; p < np; p++) {
        for (int i = 0; i < reps; i++) {
            MPI_Request q[16]; int nq = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int k = 0; k < P[p].n; k++) {
                if (P[p].a[k][1] == r) MPI_Irecv(rb + (size_t)k * s, s, MPI_BYTE, P[p].a[k][0], k, MPI_COMM_WORLD, &q[nq++]);
            }
            for (int k = 0; k < P[p].n; k++) {
                if (P[p].a[k][0] == r) MPI_Isend(sb, s, MPI_BYTE, P[p].a[k][1], k, MPI_COMM_WORLD, &q[nq++]);
            }
            MPI_Waitall(nq, q, MPI_STATUSES_IGNORE);
            double d = MPI_Wtime() - t0;
            MPI_Allreduce(&d, &t[i], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
        qsort(t, reps, sizeof(double), cmp);
        if (p == 0) lone = t[reps / 2];
        if (r == 0) { printf("%8d B  %-36s median %8.3f ms  min %8.3f  max %8.3f  ratio %.2f\n", s, P[p].name, t[reps/2]*1e3, t[0]*1e3, t[reps-1]*1e3, t[reps/2]/lone); fflush(stdout); }
    }
    MPI_Finalize();
    return 0;
}

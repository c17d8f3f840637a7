/* The conflict schemes of the bandwidth-sharing paper's Fig. 2, built with MPI_Isend /
 * MPI_Irecv (one rank per host). Every arc of a scheme starts at once after a barrier;
 * each is REPS times. Usage: conflicts REPS BYTES
 *   lone      0->1
 *   out2      0->1 0->2                 (outgoing conflict, 2 arcs)
 *   out3      0->1 0->2 0->3            (outgoing conflict, 3 arcs)
 *   in2       1->0 2->0                 (incoming conflict, 2 arcs)
 *   in3       1->0 2->0 3->0            (incoming conflict, 3 arcs)
 *   mixed     0->1 0->2 3->2            (outgoing at 0, incoming at 2)
 * Schemes needing more ranks than there are are skipped. Tags number the schemes. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct arc { int src, dst; };
struct scheme { const char *name; int n; struct arc a[3]; };
static const struct scheme schemes[] = {
    {"lone", 1, {{0, 1}}},
    {"out2", 2, {{0, 1}, {0, 2}}},
    {"out3", 3, {{0, 1}, {0, 2}, {0, 3}}},
    {"in2", 2, {{1, 0}, {2, 0}}},
    {"in3", 3, {{1, 0}, {2, 0}, {3, 0}}},
    {"mixed", 3, {{0, 1}, {0, 2}, {3, 2}}},
};

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reps = argc > 1 ? atoi(argv[1]) : 3;
    int bytes = argc > 2 ? atoi(argv[2]) : 4 << 20;
    char *sb = malloc(bytes), *rb = malloc((size_t)bytes * 3);
    memset(sb, 5, bytes);
    int done = 0;
    for (unsigned s = 0; s < sizeof schemes / sizeof schemes[0]; s++) {
        const struct scheme *sc = &schemes[s];
        int need = 0;
        for (int i = 0; i < sc->n; i++) {
            if (sc->a[i].src >= need) need = sc->a[i].src + 1;
            if (sc->a[i].dst >= need) need = sc->a[i].dst + 1;
        }
        if (need > size) continue;
        done++;
        for (int k = 0; k < reps; k++) {
            MPI_Request q[6];
            int nq = 0, nr = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = 0; i < sc->n; i++) {
                if (sc->a[i].dst == rank)
                    MPI_Irecv(rb + (size_t)bytes * nr++, bytes, MPI_CHAR, sc->a[i].src, 100 + s, MPI_COMM_WORLD, &q[nq++]);
                if (sc->a[i].src == rank)
                    MPI_Isend(sb, bytes, MPI_CHAR, sc->a[i].dst, 100 + s, MPI_COMM_WORLD, &q[nq++]);
            }
            MPI_Waitall(nq, q, MPI_STATUSES_IGNORE);
        }
    }
    if (rank == 0) printf("conflicts: %d schemes, %d reps, %d bytes\n", done, reps, bytes);
    free(sb); free(rb);
    MPI_Finalize();
    return 0;
}

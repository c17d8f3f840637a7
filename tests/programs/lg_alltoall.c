/* All-to-all across two clusters: MPI_Alltoall (the direct exchange) against the Local
 * Group algorithm of the grid paper (alltoall-clusters-and-grids, Algorithm 1), written
 * with point-to-point calls. Ranks 0..N1-1 are cluster C1, the others C2 (N1 <= N2).
 *
 * Local phase: a message M(i,j) between clusters is first stored on a rank of the
 * sender's cluster: on C1, on j mod N1; on C2, on floor(i/N1)*N1 + j (kept on the sender
 * when that rank does not exist). Messages within a cluster go straight to j.
 * Inter-cluster phase: in step s = 1..ceil(N2/N1), rank i of C1 exchanges with
 * j = i + s*N1, each sending in one message everything it stores for the other (and a
 * sender that kept its own messages sends them in the step floor(src/N1)).
 *
 * Usage: lg_alltoall N1 BYTES REPS. Prints "direct_s T", "lg_s T" (medians over REPS,
 * after a barrier; the slowest rank's time) and "lg_ok 1" when every block arrived where
 * it belongs. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n, n1, n2;

/* Where M(src,dst) is stored before crossing, and in which step it crosses; -1: local. */
static void route(int src, int dst, int *stage, int *step) {
    int c1s = src < n1, c1d = dst < n1;
    if (c1s == c1d) {
        *stage = -1;
        *step = 0;
    } else if (c1s) {
        *stage = dst % n1;
        *step = dst / n1;
    } else {
        int st = (src / n1) * n1 + dst;
        *stage = st < n ? st : src;
        *step = src / n1;
    }
}

static void fill(char *b, int src, int dst, int m) {
    for (int k = 0; k < m; k++) b[k] = (char)(src * 31 + dst * 7 + k);
}

static int check(const char *b, int src, int dst, int m) {
    for (int k = 0; k < m; k++)
        if (b[k] != (char)(src * 31 + dst * 7 + k)) return 0;
    return 1;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One Local Group all-to-all: send[j] is M(me,j); recv[i] receives M(i,me). */
static void lg(int me, char *send, char *recv, int m, char *store, MPI_Comm c) {
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)(4 * n * n + 4));
    int nr = 0;
    /* Local phase: store[(i*n + j)*m] holds M(i,j) on its stage (or final) rank. */
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            int st, sp, to;
            route(i, j, &st, &sp);
            to = st < 0 ? j : st;
            char *slot = st < 0 && j == me ? recv + (size_t)i * m : store + ((size_t)i * n + j) * m;
            if (i == me && to == me) {
                memcpy(slot, send + (size_t)j * m, m);
            } else if (i == me) {
                MPI_Isend(send + (size_t)j * m, m, MPI_BYTE, to, 1, c, &rq[nr++]);
            } else if (to == me) {
                MPI_Irecv(slot, m, MPI_BYTE, i, 1, c, &rq[nr++]);
            }
        }
    }
    MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
    /* Inter-cluster phase: per step, one packed message per (stage, destination). */
    int steps = (n2 + n1 - 1) / n1;
    char *pack = malloc((size_t)n * n * m + 1);
    for (int s = 1; s <= steps; s++) {
        nr = 0;
        size_t off = 0;
        for (int peer = 0; peer < n; peer++) {
            /* what I send to peer in this step */
            int out = 0;
            for (int k = 0; k < n; k++) {
                int st, sp;
                route(k, peer, &st, &sp);
                if (st == me && sp == s) out++;
            }
            if (out > 0) {
                char *p = pack + off;
                for (int k = 0; k < n; k++) {
                    int st, sp;
                    route(k, peer, &st, &sp);
                    if (st == me && sp == s) {
                        memcpy(pack + off, store + ((size_t)k * n + peer) * m, m);
                        off += m;
                    }
                }
                MPI_Isend(p, out * m, MPI_BYTE, peer, 2, c, &rq[nr++]);
            }
        }
        /* Receives: into a per-peer buffer. */
        char **inbuf = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
        for (int peer = 0; peer < n; peer++) {
            int in = 0;
            for (int k = 0; k < n; k++) {
                int st, sp;
                route(k, me, &st, &sp);
                if (st == peer && sp == s) in++;
            }
            if (in > 0) {
                inbuf[peer] = malloc((size_t)in * m);
                MPI_Irecv(inbuf[peer], in * m, MPI_BYTE, peer, 2, c, &rq[nr++]);
            }
        }
        MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
        for (int peer = 0; peer < n; peer++) {
            if (!inbuf[peer]) continue;
            size_t o = 0;
            for (int k = 0; k < n; k++) {
                int st, sp;
                route(k, me, &st, &sp);
                if (st == peer && sp == s) {
                    memcpy(recv + (size_t)k * m, inbuf[peer] + o, m);
                    o += m;
                }
            }
            free(inbuf[peer]);
        }
        free(inbuf);
    }
    free(pack);
    free(rq);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    n1 = argc > 1 ? atoi(argv[1]) : n / 2;
    int m = argc > 2 ? atoi(argv[2]) : 65536;
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    n2 = n - n1;
    if (n1 < 1 || n1 > n2 || m < 1 || reps < 1) {
        if (me == 0) fprintf(stderr, "lg_alltoall: need 1 <= N1 <= N - N1, BYTES >= 1, REPS >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *send = malloc((size_t)n * m), *recv = malloc((size_t)n * m);
    char *store = malloc((size_t)n * n * m);
    for (int j = 0; j < n; j++) fill(send + (size_t)j * m, me, j, m);
    double *td = malloc(sizeof(double) * reps), *tl = malloc(sizeof(double) * reps);
    int ok = 1;
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        MPI_Alltoall(send, m, MPI_BYTE, recv, m, MPI_BYTE, MPI_COMM_WORLD);
        t = MPI_Wtime() - t;
        MPI_Allreduce(&t, &td[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        memset(recv, 0, (size_t)n * m);
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        lg(me, send, recv, m, store, MPI_COMM_WORLD);
        t = MPI_Wtime() - t;
        MPI_Allreduce(&t, &tl[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        for (int i = 0; i < n; i++) ok &= check(recv + (size_t)i * m, i, me, m);
    }
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    qsort(td, reps, sizeof(double), cmp);
    qsort(tl, reps, sizeof(double), cmp);
    if (me == 0) {
        printf("direct_s %.6f\nlg_s %.6f\nlg_ok %d\n", td[reps / 2], tl[reps / 2], all_ok);
    }
    free(send);
    free(recv);
    free(store);
    free(td);
    free(tl);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}

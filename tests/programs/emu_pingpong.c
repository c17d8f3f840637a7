/*
 * emu_pingpong.c — bandwidth and contention probe for scripts/emucluster.
 *
 * Usage: mpirun -np >=3 emu_pingpong [MODE] [BYTES] [REPS]
 *   MODE  all (default) | single | incoming | outgoing
 *   BYTES message size (default 4 MiB), REPS repetitions (default 3; median kept)
 *
 * Every timed transfer is measured by the sender, from just after a barrier
 * until a 1-byte acknowledgement from the receiver arrives (sent as soon as
 * the receiver has the whole message), so kernel socket buffering cannot hide
 * transfer time.
 *
 *   single   rank 0 -> rank 1 alone                  prints  single_mbps X
 *   incoming ranks 0 and 1 -> rank 2 at the same time, and each alone;
 *            prints incoming_ratio_r0, incoming_ratio_r1 (each sender's conflict
 *            time / its lone time), incoming_ratio_mean, and incoming_ratio =
 *            the larger one (when both are done; ~2 on a shared receiver port).
 *            TCP shares a port unfairly, so one sender may finish at ~1.5.
 *   outgoing rank 0 -> ranks 1 and 2 at the same time, and each alone;
 *            prints outgoing_ratio_to1, outgoing_ratio_to2, outgoing_ratio_mean,
 *            outgoing_ratio (the larger)
 *
 * Output lines are "key value" for easy parsing; rank 0 prints them.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_DATA 1
#define TAG_ACK 2

static char *buf_a, *buf_b;
static long nbytes;
static int reps, rank, size;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One round: each sender s[i] sends to receiver r[i] (i < npairs), all at once.
 * Returns in t[i] the time sender s[i] observed (valid on rank 0 after gather). */
static void round_trip(int npairs, const int *s, const int *r, double *t)
{
    MPI_Request req[16];
    int nreq = 0, i;
    char ack = 0;
    double mine[16], all[16];

    for (i = 0; i < npairs; i++) mine[i] = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();

    /* receivers: post receives, ack each sender when its data is complete */
    int rpair[16];
    for (i = 0; i < npairs; i++) {
        if (r[i] == rank) {
            MPI_Irecv(nreq ? buf_b : buf_a, (int)nbytes, MPI_CHAR, s[i], TAG_DATA,
                      MPI_COMM_WORLD, &req[nreq]);
            rpair[nreq++] = i;
        }
    }
    /* senders: nonblocking sends (one rank may send several) */
    int spair[16], ns = 0;
    MPI_Request sreq[16];
    for (i = 0; i < npairs; i++) {
        if (s[i] == rank) {
            MPI_Isend(buf_a, (int)nbytes, MPI_CHAR, r[i], TAG_DATA, MPI_COMM_WORLD,
                      &sreq[ns]);
            spair[ns++] = i;
        }
    }
    /* receivers complete in any order */
    for (int done = 0; done < nreq; done++) {
        int idx;
        MPI_Waitany(nreq, req, &idx, MPI_STATUS_IGNORE);
        MPI_Send(&ack, 1, MPI_CHAR, s[rpair[idx]], TAG_ACK + rpair[idx], MPI_COMM_WORLD);
    }
    /* senders: wait for acks, in any order */
    if (ns > 0) {
        MPI_Request areq[16];
        char acks[16];
        MPI_Waitall(ns, sreq, MPI_STATUSES_IGNORE);
        for (i = 0; i < ns; i++)
            MPI_Irecv(&acks[i], 1, MPI_CHAR, r[spair[i]], TAG_ACK + spair[i],
                      MPI_COMM_WORLD, &areq[i]);
        for (int done = 0; done < ns; done++) {
            int idx;
            MPI_Waitany(ns, areq, &idx, MPI_STATUS_IGNORE);
            mine[spair[idx]] = MPI_Wtime() - t0;
        }
    }
    MPI_Reduce(mine, all, npairs, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (i = 0; i < npairs; i++) t[i] = all[i];
}

/* median over reps of each pair's time */
static void measure(int npairs, const int *s, const int *r, double *med)
{
    double t[16], samples[16][64];
    int k, i;
    round_trip(npairs, s, r, t); /* warm-up: connection setup */
    for (k = 0; k < reps; k++) {
        round_trip(npairs, s, r, t);
        for (i = 0; i < npairs; i++) samples[i][k] = t[i];
    }
    if (rank == 0)
        for (i = 0; i < npairs; i++) med[i] = median(samples[i], reps);
}

static double mbps(double secs) { return nbytes * 8.0 / secs / 1e6; }

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    nbytes = argc > 2 ? atol(argv[2]) : 4L << 20;
    reps = argc > 3 ? atoi(argv[3]) : 3;
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int all = !strcmp(mode, "all");
    int need = (all || strcmp(mode, "single")) ? 3 : 2;
    if (size < need) {
        if (rank == 0) fprintf(stderr, "emu_pingpong: mode %s needs >= %d ranks\n", mode, need);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    buf_a = malloc(nbytes);
    buf_b = malloc(nbytes);
    memset(buf_a, 1, nbytes);
    memset(buf_b, 2, nbytes);

    char name[MPI_MAX_PROCESSOR_NAME], names[16][MPI_MAX_PROCESSOR_NAME];
    int len;
    MPI_Get_processor_name(name, &len);
    int nn = size < 16 ? size : 16;
    char *gathered = malloc((size_t)size * MPI_MAX_PROCESSOR_NAME);
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, gathered, MPI_MAX_PROCESSOR_NAME,
               MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 0; i < nn; i++) {
            memcpy(names[i], gathered + (size_t)i * MPI_MAX_PROCESSOR_NAME, MPI_MAX_PROCESSOR_NAME);
            printf("rank%d_host %s\n", i, names[i]);
        }
        printf("bytes %ld\nreps %d\n", nbytes, reps);
    }

    if (all || !strcmp(mode, "single")) {
        int s[1] = {0}, r[1] = {1};
        double med[1];
        measure(1, s, r, med);
        if (rank == 0) printf("single_seconds %.6f\nsingle_mbps %.2f\n", med[0], mbps(med[0]));
    }
    if (all || !strcmp(mode, "incoming")) {
        int s0[1] = {0}, s1[1] = {1}, r2[1] = {2};
        int s[2] = {0, 1}, r[2] = {2, 2};
        double lone0[1], lone1[1], both[2];
        measure(1, s0, r2, lone0);
        measure(1, s1, r2, lone1);
        measure(2, s, r, both);
        if (rank == 0) {
            double q0 = both[0] / lone0[0], q1 = both[1] / lone1[0];
            printf("incoming_lone_seconds_r0 %.6f\nincoming_lone_seconds_r1 %.6f\n", lone0[0], lone1[0]);
            printf("incoming_conflict_seconds_r0 %.6f\nincoming_conflict_seconds_r1 %.6f\n", both[0], both[1]);
            printf("incoming_ratio_r0 %.3f\nincoming_ratio_r1 %.3f\n", q0, q1);
            printf("incoming_ratio_mean %.3f\nincoming_ratio %.3f\n", 0.5 * (q0 + q1), q0 > q1 ? q0 : q1);
        }
    }
    if (all || !strcmp(mode, "outgoing")) {
        int s0[1] = {0}, r1[1] = {1}, r2[1] = {2};
        int s[2] = {0, 0}, r[2] = {1, 2};
        double lone1[1], lone2[1], both[2];
        measure(1, s0, r1, lone1);
        measure(1, s0, r2, lone2);
        measure(2, s, r, both);
        if (rank == 0) {
            double q1 = both[0] / lone1[0], q2 = both[1] / lone2[0];
            printf("outgoing_lone_seconds_to1 %.6f\noutgoing_lone_seconds_to2 %.6f\n", lone1[0], lone2[0]);
            printf("outgoing_conflict_seconds_to1 %.6f\noutgoing_conflict_seconds_to2 %.6f\n", both[0], both[1]);
            printf("outgoing_ratio_to1 %.3f\noutgoing_ratio_to2 %.3f\n", q1, q2);
            printf("outgoing_ratio_mean %.3f\noutgoing_ratio %.3f\n", 0.5 * (q1 + q2), q1 > q2 ? q1 : q2);
        }
    }
    fflush(stdout);
    free(gathered);
    free(buf_a);
    free(buf_b);
    MPI_Finalize();
    return 0;
}

/* The calls modern codes make, with known peers, roots and sizes, at 4 ranks:
 * nonblocking collectives, persistent requests, Reduce_scatter(_block), Scan, Exscan,
 * Alltoallw, Sendrecv(_replace) with differing tags, matched probes and one-sided calls (request-based and
 * atomic ones included), on MPI_COMM_WORLD and on a split
 * communicator whose local ranks are in reverse WORLD order.
 *
 * Each rank writes what the layer should record, one line per record, to
 * modern-RANK.txt in the working directory:
 *   ROW call peer root bytes_sent bytes_received comm_size nonblocking source
 * (WORLD ranks, "-" where calls.csv leaves the field empty), for each v/w variant and
 * neighbourhood collective one line per peer it moves bytes to (S) or from (R), as the
 * spool's continuation records should hold them:
 *   ARC call S|R peer bytes
 * then one line per call name:
 *   COUNT call n
 * Its stdout is one line per rank, identical with and without the layer. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *out;
static int w, nw;

#define MAXC 128
static const char *names[MAXC];
static int counts[MAXC];

static void count(const char *call) {
    for (int i = 0; i < MAXC; i++) {
        if (names[i] == NULL) {
            names[i] = call;
        }
        if (strcmp(names[i], call) == 0) {
            counts[i]++;
            return;
        }
    }
    fprintf(stderr, "modern_calls: more than %d call names\n", MAXC);
    MPI_Abort(MPI_COMM_WORLD, 4);
}

static void rank_s(char *b, int r) {
    if (r < 0)
        strcpy(b, "-");
    else
        sprintf(b, "%d", r);
}

/* One expected record. peer/root/source: WORLD rank or -1 (empty). */
static void row(const char *call, int peer, int root, long bs, long br, int csize, int nb,
                int source) {
    char p[16], r[16], s[16];
    rank_s(p, peer);
    rank_s(r, root);
    rank_s(s, source);
    fprintf(out, "ROW %s %s %s %ld %ld %d %d %s\n", call, p, r, bs, br, csize, nb, s);
    count(call);
}

/* A completion call's record (Wait*, successful Test*). */
static void done(const char *call) { row(call, -1, -1, 0, 0, 0, 0, -1); }

/* A nonblocking collective's record on a communicator of `n` ranks. */
static void icoll(const char *call, int root, long bs, long br, int n) {
    row(call, -1, root, bs, br, n, 1, -1);
}

static void coll(const char *call, int root, long bs, long br, int n) {
    row(call, -1, root, bs, br, n, 0, -1);
}

/* Per-peer bytes of a v/w or neighbourhood call: `bytes` to (dir 'S') or from ('R')
 * WORLD rank `peer`. A peer without bytes, or MPI_PROC_NULL, has none recorded. */
static void arc(const char *call, char dir, int peer, long bytes) {
    if (bytes > 0 && peer != MPI_PROC_NULL)
        fprintf(out, "ARC %s %c %d %ld\n", call, dir, peer, bytes);
}

int main(int argc, char **argv) {
    /* Open MPI 4.1's default one-sided component (osc rdma) fails now and then at window
     * creation on this test host, with or without the layer ("A system call failed during
     * shared memory initialization"); the point-to-point one is steady. MPICH ignores it. */
    setenv("OMPI_MCA_osc", "pt2pt", 0);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &w);
    MPI_Comm_size(MPI_COMM_WORLD, &nw);
    if (nw != 4) {
        if (w == 0)
            fprintf(stderr, "modern_calls needs 4 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char fname[64];
    sprintf(fname, "modern-%d.txt", w);
    out = fopen(fname, "w");
    if (!out)
        MPI_Abort(MPI_COMM_WORLD, 3);
    const int I = (int)sizeof(int), D = (int)sizeof(double);
    const int right = (w + 1) % 4, left = (w + 3) % 4;
    long check = 0;

    /* {0,2} and {1,3}, local rank 0 = the higher WORLD rank. */
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, w % 2, -w, &sub);
    int sr, sn, sub_world[2];
    MPI_Comm_rank(sub, &sr);
    MPI_Comm_size(sub, &sn);
    {
        MPI_Group g, wg;
        int loc[2] = {0, 1};
        MPI_Comm_group(sub, &g);
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Group_translate_ranks(g, 2, loc, wg, sub_world);
        MPI_Group_free(&g);
        MPI_Group_free(&wg);
    }
    const int partner = sub_world[1 - sr];

    int sc[4], rc[4], sd[4], rd[4];
    int ibuf[64], ibuf2[64];
    double dbuf[64], dbuf2[64];
    for (int i = 0; i < 64; i++) {
        ibuf[i] = w + i;
        dbuf[i] = w * 0.5 + i;
    }
    MPI_Request rq[4];
    MPI_Status st;

    /* ---- 1. nonblocking collectives ---- */
    MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Ibarrier", -1, 0, 0, 4);
    done("MPI_Wait");

    /* Sub-communicator broadcast from local rank 1. */
    MPI_Ibcast(ibuf, 64, MPI_INT, 1, sub, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Ibcast", sub_world[1], sr == 1 ? 64 * I : 0, sr == 1 ? 0 : 64 * I, 2);
    done("MPI_Wait");

    MPI_Ireduce(dbuf, dbuf2, 10, MPI_DOUBLE, MPI_SUM, 2, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], &st);
    icoll("MPI_Ireduce", 2, 10 * D, w == 2 ? 10 * D : 0, 4);
    done("MPI_Wait");

    /* Completed by a polling MPI_Test: only the successful one is recorded. */
    {
        int flag = 0;
        MPI_Iallreduce(ibuf, ibuf2, 5, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
        while (!flag)
            MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
        icoll("MPI_Iallreduce", -1, 5 * I, 5 * I, 4);
        done("MPI_Test");
        check += ibuf2[0];
    }

    MPI_Ialltoall(ibuf, 3, MPI_INT, ibuf2, 3, MPI_INT, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Ialltoall", -1, 12 * I, 12 * I, 4);
    done("MPI_Wait");

    /* To rank i: i+1 ints; from every rank: w+1 ints. */
    for (int i = 0, a = 0, b = 0; i < 4; i++) {
        sc[i] = i + 1;
        sd[i] = a;
        a += sc[i];
        rc[i] = w + 1;
        rd[i] = b;
        b += rc[i];
    }
    MPI_Ialltoallv(ibuf, sc, sd, MPI_INT, ibuf2, rc, rd, MPI_INT, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Ialltoallv", -1, 10 * I, 4 * (w + 1) * I, 4);
    done("MPI_Wait");
    for (int i = 0; i < 4; i++) {
        arc("MPI_Ialltoallv", 'S', i, (i + 1) * I);
        arc("MPI_Ialltoallv", 'R', i, (w + 1) * I);
    }

    {
        MPI_Datatype st_[4] = {MPI_INT, MPI_INT, MPI_INT, MPI_INT};
        MPI_Datatype rt_[4] = {MPI_INT, MPI_INT, MPI_INT, MPI_INT};
        int sdb[4], rdb[4];
        for (int i = 0; i < 4; i++) {
            sdb[i] = sd[i] * I;
            rdb[i] = rd[i] * I;
        }
        MPI_Ialltoallw(ibuf, sc, sdb, st_, ibuf2, rc, rdb, rt_, MPI_COMM_WORLD, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        icoll("MPI_Ialltoallw", -1, 10 * I, 4 * (w + 1) * I, 4);
        done("MPI_Wait");
        MPI_Alltoallw(ibuf, sc, sdb, st_, ibuf2, rc, rdb, rt_, MPI_COMM_WORLD);
        coll("MPI_Alltoallw", -1, 10 * I, 4 * (w + 1) * I, 4);
        for (int i = 0; i < 4; i++) {
            arc("MPI_Ialltoallw", 'S', i, (i + 1) * I);
            arc("MPI_Ialltoallw", 'R', i, (w + 1) * I);
            arc("MPI_Alltoallw", 'S', i, (i + 1) * I);
            arc("MPI_Alltoallw", 'R', i, (w + 1) * I);
        }
    }

    MPI_Iallgather(ibuf, 2, MPI_INT, ibuf2, 2, MPI_INT, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Iallgather", -1, 2 * I, 8 * I, 4);
    done("MPI_Wait");

    /* Rank j contributes j+1 ints. */
    for (int i = 0, a = 0; i < 4; i++) {
        rc[i] = i + 1;
        rd[i] = a;
        a += rc[i];
    }
    MPI_Iallgatherv(ibuf, w + 1, MPI_INT, ibuf2, rc, rd, MPI_INT, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Iallgatherv", -1, (w + 1) * I, 10 * I, 4);
    done("MPI_Wait");
    for (int i = 0; i < 4; i++)
        arc("MPI_Iallgatherv", 'R', i, (i + 1) * I);

    /* Two gathers completed in the reverse order of their posts. */
    MPI_Igather(ibuf, 3, MPI_INT, ibuf2, 3, MPI_INT, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Igatherv(dbuf, w + 1, MPI_DOUBLE, dbuf2, rc, rd, MPI_DOUBLE, 3, MPI_COMM_WORLD,
                 &rq[1]);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Igather", 1, 3 * I, w == 1 ? 12 * I : 0, 4);
    icoll("MPI_Igatherv", 3, (w + 1) * D, w == 3 ? 10 * D : 0, 4);
    done("MPI_Wait");
    done("MPI_Wait");
    for (int i = 0; w == 3 && i < 4; i++)
        arc("MPI_Igatherv", 'R', i, (i + 1) * D);

    MPI_Iscatter(ibuf, 2, MPI_INT, ibuf2, 2, MPI_INT, 0, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Iscatter", 0, w == 0 ? 8 * I : 0, 2 * I, 4);
    done("MPI_Wait");

    MPI_Iscatterv(ibuf, rc, rd, MPI_INT, ibuf2, w + 1, MPI_INT, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Iscatterv", 1, w == 1 ? 10 * I : 0, (w + 1) * I, 4);
    done("MPI_Wait");
    for (int i = 0; w == 1 && i < 4; i++)
        arc("MPI_Iscatterv", 'S', i, (i + 1) * I);

    /* ---- 1b. blocking v-variants, each with counts of its own per peer ---- */
    {
        int vs[4], vsd[4], vr[4], vrd[4];
        /* To rank i: w+2i+1 ints; from rank i: i+2w+1. */
        for (int i = 0, a = 0, b = 0; i < 4; i++) {
            vs[i] = w + 2 * i + 1;
            vsd[i] = a;
            a += vs[i];
            vr[i] = i + 2 * w + 1;
            vrd[i] = b;
            b += vr[i];
        }
        MPI_Alltoallv(ibuf, vs, vsd, MPI_INT, ibuf2, vr, vrd, MPI_INT, MPI_COMM_WORLD);
        coll("MPI_Alltoallv", -1, (4 * w + 16) * I, (8 * w + 10) * I, 4);
        for (int i = 0; i < 4; i++) {
            arc("MPI_Alltoallv", 'S', i, vs[i] * I);
            arc("MPI_Alltoallv", 'R', i, vr[i] * I);
        }
        check += ibuf2[0];
        /* Gatherv to rank 0: rank j sends 2j+1 ints. */
        for (int i = 0, a = 0; i < 4; i++) {
            vr[i] = 2 * i + 1;
            vrd[i] = a;
            a += vr[i];
        }
        MPI_Gatherv(ibuf, 2 * w + 1, MPI_INT, ibuf2, vr, vrd, MPI_INT, 0, MPI_COMM_WORLD);
        coll("MPI_Gatherv", 0, (2 * w + 1) * I, w == 0 ? 16 * I : 0, 4);
        for (int i = 0; w == 0 && i < 4; i++)
            arc("MPI_Gatherv", 'R', i, vr[i] * I);
        /* Scatterv from rank 2: rank j gets j+2 ints. */
        for (int i = 0, a = 0; i < 4; i++) {
            vs[i] = i + 2;
            vsd[i] = a;
            a += vs[i];
        }
        MPI_Scatterv(ibuf, vs, vsd, MPI_INT, ibuf2, w + 2, MPI_INT, 2, MPI_COMM_WORLD);
        coll("MPI_Scatterv", 2, w == 2 ? 14 * I : 0, (w + 2) * I, 4);
        for (int i = 0; w == 2 && i < 4; i++)
            arc("MPI_Scatterv", 'S', i, vs[i] * I);
        /* Allgatherv: rank j contributes 4-j ints. */
        for (int i = 0, a = 0; i < 4; i++) {
            vr[i] = 4 - i;
            vrd[i] = a;
            a += vr[i];
        }
        MPI_Allgatherv(ibuf, 4 - w, MPI_INT, ibuf2, vr, vrd, MPI_INT, MPI_COMM_WORLD);
        coll("MPI_Allgatherv", -1, (4 - w) * I, 10 * I, 4);
        for (int i = 0; i < 4; i++)
            arc("MPI_Allgatherv", 'R', i, vr[i] * I);
        check += ibuf2[1];
    }

    /* Rank j gets j+1 ints of the reduction. */
    MPI_Ireduce_scatter(ibuf, ibuf2, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Ireduce_scatter", -1, 10 * I, (w + 1) * I, 4);
    done("MPI_Wait");

    MPI_Ireduce_scatter_block(ibuf, ibuf2, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    icoll("MPI_Ireduce_scatter_block", -1, 8 * I, 2 * I, 4);
    done("MPI_Wait");

    /* Both prefix reductions completed by one Waitall. */
    MPI_Iscan(ibuf, ibuf2, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[0]);
    MPI_Iexscan(ibuf, ibuf2 + 8, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    icoll("MPI_Iscan", -1, 3 * I, 3 * I, 4);
    icoll("MPI_Iexscan", -1, 3 * I, 3 * I, 4);
    done("MPI_Waitall");
    check += ibuf2[0];

    /* ---- 2. persistent requests ---- */
    {
        MPI_Request pr[2];
        MPI_Recv_init(ibuf2, 50, MPI_INT, left, 5, MPI_COMM_WORLD, &pr[0]);
        MPI_Send_init(ibuf, 50, MPI_INT, right, 5, MPI_COMM_WORLD, &pr[1]);
        for (int it = 0; it < 3; it++) {
            MPI_Startall(2, pr);
            MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
            row("MPI_Recv_init", left, -1, 0, 50 * I, 4, 1, -1);
            row("MPI_Send_init", right, -1, 50 * I, 0, 4, 1, -1);
            done("MPI_Waitall");
        }
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
    }
    {
        /* Synchronous sends to the partner on the sub-communicator; ANY_SOURCE receives. */
        MPI_Request pr[2];
        MPI_Recv_init(dbuf2, 10, MPI_DOUBLE, MPI_ANY_SOURCE, 6, sub, &pr[0]);
        MPI_Ssend_init(dbuf, 10, MPI_DOUBLE, 1 - sr, 6, sub, &pr[1]);
        for (int it = 0; it < 2; it++) {
            MPI_Start(&pr[0]);
            MPI_Start(&pr[1]);
            MPI_Wait(&pr[1], MPI_STATUS_IGNORE);
            MPI_Wait(&pr[0], &st);
            row("MPI_Ssend_init", partner, -1, 10 * D, 0, 2, 1, -1);
            row("MPI_Recv_init", partner, -1, 0, 10 * D, 2, 1, -1);
            done("MPI_Wait");
            done("MPI_Wait");
        }
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
    }
    {
        /* Buffered send to the right. */
        int bsize = 1024 + MPI_BSEND_OVERHEAD;
        char *bbuf = malloc(bsize);
        MPI_Buffer_attach(bbuf, bsize);
        MPI_Request pr[2];
        MPI_Recv_init(ibuf2, 4, MPI_INT, left, 7, MPI_COMM_WORLD, &pr[0]);
        MPI_Bsend_init(ibuf, 4, MPI_INT, right, 7, MPI_COMM_WORLD, &pr[1]);
        MPI_Start(&pr[1]);
        MPI_Start(&pr[0]);
        MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
        row("MPI_Bsend_init", right, -1, 4 * I, 0, 4, 1, -1);
        row("MPI_Recv_init", left, -1, 0, 4 * I, 4, 1, -1);
        done("MPI_Waitall");
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
        MPI_Buffer_detach(&bbuf, &bsize);
        free(bbuf);
    }
    {
        /* Ready send: the receive is posted before the barrier, the send after it. */
        MPI_Request pr, r;
        MPI_Rsend_init(ibuf, 8, MPI_INT, right, 8, MPI_COMM_WORLD, &pr);
        MPI_Irecv(ibuf2, 8, MPI_INT, left, 8, MPI_COMM_WORLD, &r);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Start(&pr);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        row("MPI_Irecv", left, -1, 0, 8 * I, 4, 1, -1);
        coll("MPI_Barrier", -1, 0, 0, 4);
        row("MPI_Rsend_init", right, -1, 8 * I, 0, 4, 1, -1);
        done("MPI_Wait");
        done("MPI_Wait");
        MPI_Request_free(&pr);
    }

    /* ---- 3. blocking reductions, prefixes, Sendrecv_replace ---- */
    MPI_Reduce_scatter(ibuf, ibuf2, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    coll("MPI_Reduce_scatter", -1, 10 * I, (w + 1) * I, 4);
    MPI_Reduce_scatter_block(ibuf, ibuf2, 3, MPI_INT, MPI_SUM, sub);
    coll("MPI_Reduce_scatter_block", -1, 6 * I, 3 * I, 2);
    MPI_Scan(dbuf, dbuf2, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    coll("MPI_Scan", -1, 2 * D, 2 * D, 4);
    MPI_Exscan(dbuf, dbuf2, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    coll("MPI_Exscan", -1, 2 * D, 2 * D, 4);
    check += (long)dbuf2[0];

    MPI_Sendrecv_replace(ibuf, 7, MPI_INT, right, 9, left, 9, MPI_COMM_WORLD, &st);
    row("MPI_Sendrecv_replace", right, -1, 7 * I, 7 * I, 4, 0, left);
    MPI_Sendrecv_replace(dbuf, 5, MPI_DOUBLE, 1 - sr, 9, 1 - sr, 9, sub, MPI_STATUS_IGNORE);
    row("MPI_Sendrecv_replace", partner, -1, 5 * D, 5 * D, 2, 0, partner);
    /* Send and receive tags that differ, as FFTW's transposes give them (MPB): each
     * message's tag names its sender and receiver. */
    MPI_Sendrecv(ibuf, 3, MPI_INT, right, w * nw + right, ibuf2, 3, MPI_INT, left, left * nw + w, MPI_COMM_WORLD, &st);
    row("MPI_Sendrecv", right, -1, 3 * I, 3 * I, 4, 0, left);
    MPI_Sendrecv_replace(dbuf, 5, MPI_DOUBLE, 1 - sr, 20 + sr, 1 - sr, 21 - sr, sub, MPI_STATUS_IGNORE);
    row("MPI_Sendrecv_replace", partner, -1, 5 * D, 5 * D, 2, 0, partner);
    check += ibuf[0] + ibuf2[0];

    /* ---- 4. matched probes ---- */
    {
        MPI_Request r;
        MPI_Message m;
        int n = 0;
        MPI_Isend(ibuf, 9, MPI_INT, right, 10, MPI_COMM_WORLD, &r);
        MPI_Mprobe(MPI_ANY_SOURCE, 10, MPI_COMM_WORLD, &m, &st);
        MPI_Get_count(&st, MPI_INT, &n);
        MPI_Mrecv(ibuf2, n, MPI_INT, &m, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        row("MPI_Isend", right, -1, 9 * I, 0, 4, 1, -1);
        row("MPI_Mprobe", left, -1, 0, 0, 4, 0, -1);
        row("MPI_Mrecv", left, -1, 0, 9 * I, 4, 0, -1);
        done("MPI_Wait");
        check += ibuf2[0];
    }
    {
        /* On the sub-communicator: polling MPI_Improbe, then MPI_Imrecv. */
        MPI_Request r, r2;
        MPI_Message m;
        int flag = 0;
        MPI_Isend(dbuf, 6, MPI_DOUBLE, 1 - sr, 11, sub, &r);
        while (!flag)
            MPI_Improbe(MPI_ANY_SOURCE, 11, sub, &flag, &m, MPI_STATUS_IGNORE);
        MPI_Imrecv(dbuf2, 6, MPI_DOUBLE, &m, &r2);
        MPI_Wait(&r2, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        row("MPI_Isend", partner, -1, 6 * D, 0, 2, 1, -1);
        row("MPI_Improbe", partner, -1, 0, 0, 2, 0, -1);
        row("MPI_Imrecv", partner, -1, 0, 6 * D, 2, 1, -1);
        done("MPI_Wait");
        done("MPI_Wait");
    }

    /* ---- 5. neighbourhood collectives ---- */
    {
        /* A periodic ring: in- and out-neighbours left and right. */
        MPI_Comm ring, star;
        int dims[1] = {4}, periods[1] = {1};
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
        /* A star: rank 0 sends to and receives from 1, 2, 3; the others from and to 0. */
        int nbr[3], deg = 0;
        if (w == 0) {
            for (int i = 1; i < 4; i++)
                nbr[deg++] = i;
        } else {
            nbr[deg++] = 0;
        }
        MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg, nbr, MPI_UNWEIGHTED, deg, nbr,
                                       MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &star);
        /* Counts per neighbour: rank 0 sends k ints to rank k and gets k from it. */
        int cnt[3], dsp[3], rcnt[3], rdsp[3];
        long vsum = 0;
        for (int i = 0; i < deg; i++) {
            cnt[i] = w == 0 ? nbr[i] : w;
            dsp[i] = i * 8;
            rcnt[i] = nbr[i] + 1; /* allgatherv: neighbour q contributes q+1 ints */
            rdsp[i] = i * 8;
            vsum += cnt[i];
        }
        long rsum = 0;
        for (int i = 0; i < deg; i++)
            rsum += rcnt[i];
        int one[2] = {1, 1};
        MPI_Aint adsp[2] = {0, D};
        MPI_Datatype dt[2] = {MPI_DOUBLE, MPI_DOUBLE};

        MPI_Neighbor_allgather(ibuf, 2, MPI_INT, ibuf2, 2, MPI_INT, ring);
        coll("MPI_Neighbor_allgather", -1, 4 * I, 4 * I, 4);
        MPI_Neighbor_allgatherv(ibuf, w + 1, MPI_INT, ibuf2, rcnt, rdsp, MPI_INT, star);
        coll("MPI_Neighbor_allgatherv", -1, (w + 1) * deg * I, rsum * I, 4);
        MPI_Neighbor_alltoall(ibuf, 3, MPI_INT, ibuf2, 3, MPI_INT, star);
        coll("MPI_Neighbor_alltoall", -1, 3 * deg * I, 3 * deg * I, 4);
        MPI_Neighbor_alltoallv(ibuf, cnt, dsp, MPI_INT, ibuf2, cnt, dsp, MPI_INT, star);
        coll("MPI_Neighbor_alltoallv", -1, vsum * I, vsum * I, 4);
        MPI_Neighbor_alltoallw(dbuf, one, adsp, dt, dbuf2, one, adsp, dt, ring);
        coll("MPI_Neighbor_alltoallw", -1, 2 * D, 2 * D, 4);
        /* On the ring (a Cartesian topology): left (w+1) ints, right 2(w+1); the left
         * neighbour's to its right and the right one's to its left come back. */
        {
            int lc[2] = {w + 1, 2 * (w + 1)}, ld[2] = {0, 8};
            int lr[2] = {2 * (left + 1), right + 1}, lrd[2] = {0, 16};
            MPI_Neighbor_alltoallv(ibuf, lc, ld, MPI_INT, ibuf2, lr, lrd, MPI_INT, ring);
            coll("MPI_Neighbor_alltoallv", -1, 3 * (w + 1) * I, (2 * (left + 1) + right + 1) * I,
                 4);
            arc("MPI_Neighbor_alltoallv", 'S', left, lc[0] * I);
            arc("MPI_Neighbor_alltoallv", 'S', right, lc[1] * I);
            arc("MPI_Neighbor_alltoallv", 'R', left, lr[0] * I);
            arc("MPI_Neighbor_alltoallv", 'R', right, lr[1] * I);
        }
        /* The star's v/w calls, blocking and not: per-neighbour bytes. */
        for (int i = 0; i < deg; i++) {
            const char *v[2] = {"MPI_Neighbor_alltoallv", "MPI_Ineighbor_alltoallv"};
            const char *g[2] = {"MPI_Neighbor_allgatherv", "MPI_Ineighbor_allgatherv"};
            for (int k = 0; k < 2; k++) {
                arc(v[k], 'S', nbr[i], cnt[i] * I);
                arc(v[k], 'R', nbr[i], cnt[i] * I);
                arc(g[k], 'S', nbr[i], (w + 1) * I);
                arc(g[k], 'R', nbr[i], rcnt[i] * I);
            }
        }
        /* The ring's w calls: one double to and from each side. */
        for (int k = 0; k < 2; k++) {
            const char *c = k ? "MPI_Ineighbor_alltoallw" : "MPI_Neighbor_alltoallw";
            arc(c, 'S', left, D);
            arc(c, 'S', right, D);
            arc(c, 'R', left, D);
            arc(c, 'R', right, D);
        }
        /* The uniform calls, blocking and not: the ring's allgather two ints to and from
         * each side, the star's alltoall three to and from each neighbour. */
        for (int k = 0; k < 2; k++) {
            const char *g = k ? "MPI_Ineighbor_allgather" : "MPI_Neighbor_allgather";
            const char *a = k ? "MPI_Ineighbor_alltoall" : "MPI_Neighbor_alltoall";
            arc(g, 'S', left, 2 * I);
            arc(g, 'S', right, 2 * I);
            arc(g, 'R', left, 2 * I);
            arc(g, 'R', right, 2 * I);
            for (int i = 0; i < deg; i++) {
                arc(a, 'S', nbr[i], 3 * I);
                arc(a, 'R', nbr[i], 3 * I);
            }
        }

        MPI_Request nr[5];
        MPI_Ineighbor_allgather(ibuf, 2, MPI_INT, ibuf2, 2, MPI_INT, ring, &nr[0]);
        MPI_Ineighbor_allgatherv(ibuf, w + 1, MPI_INT, ibuf2 + 32, rcnt, rdsp, MPI_INT, star,
                                 &nr[1]);
        MPI_Ineighbor_alltoall(ibuf, 3, MPI_INT, ibuf2 + 16, 3, MPI_INT, star, &nr[2]);
        MPI_Ineighbor_alltoallv(ibuf, cnt, dsp, MPI_INT, ibuf2 + 32, cnt, dsp, MPI_INT, star,
                                &nr[3]);
        MPI_Ineighbor_alltoallw(dbuf, one, adsp, dt, dbuf2, one, adsp, dt, ring, &nr[4]);
        MPI_Waitall(5, nr, MPI_STATUSES_IGNORE);
        icoll("MPI_Ineighbor_allgather", -1, 4 * I, 4 * I, 4);
        icoll("MPI_Ineighbor_allgatherv", -1, (w + 1) * deg * I, rsum * I, 4);
        icoll("MPI_Ineighbor_alltoall", -1, 3 * deg * I, 3 * deg * I, 4);
        icoll("MPI_Ineighbor_alltoallv", -1, vsum * I, vsum * I, 4);
        icoll("MPI_Ineighbor_alltoallw", -1, 2 * D, 2 * D, 4);
        done("MPI_Waitall");
        check += ibuf2[0];
        /* A (non-distributed) graph: the ring again, two neighbours each. */
        MPI_Comm graph;
        int index[4] = {2, 4, 6, 8}, edges[8] = {3, 1, 0, 2, 1, 3, 2, 0};
        MPI_Graph_create(MPI_COMM_WORLD, 4, index, edges, 0, &graph);
        MPI_Neighbor_alltoall(ibuf, 3, MPI_INT, ibuf2, 3, MPI_INT, graph);
        coll("MPI_Neighbor_alltoall", -1, 6 * I, 6 * I, 4);
        arc("MPI_Neighbor_alltoall", 'S', left, 3 * I);
        arc("MPI_Neighbor_alltoall", 'S', right, 3 * I);
        arc("MPI_Neighbor_alltoall", 'R', left, 3 * I);
        arc("MPI_Neighbor_alltoall", 'R', right, 3 * I);
        MPI_Comm_free(&graph);
        /* A line (a Cartesian topology, not periodic): rank 0 has no lower neighbour and
         * rank 3 no upper one (MPI_PROC_NULL), whose blocks the totals count (two
         * neighbours per dimension) and whose arcs are left out. */
        {
            MPI_Comm line;
            int nper[1] = {0}, lo, hi;
            MPI_Cart_create(MPI_COMM_WORLD, 1, dims, nper, 0, &line);
            MPI_Cart_shift(line, 0, 1, &lo, &hi);
            MPI_Neighbor_alltoall(ibuf, 5, MPI_INT, ibuf2, 5, MPI_INT, line);
            coll("MPI_Neighbor_alltoall", -1, 10 * I, 10 * I, 4);
            MPI_Request lr;
            MPI_Ineighbor_allgather(ibuf, 4, MPI_INT, ibuf2, 4, MPI_INT, line, &lr);
            MPI_Wait(&lr, MPI_STATUS_IGNORE);
            icoll("MPI_Ineighbor_allgather", -1, 8 * I, 8 * I, 4);
            done("MPI_Wait");
            for (int k = 0; k < 2; k++) {
                const char *c = k ? "MPI_Ineighbor_allgather" : "MPI_Neighbor_alltoall";
                long b = (k ? 4 : 5) * I;
                arc(c, 'S', lo, b);
                arc(c, 'S', hi, b);
                arc(c, 'R', lo, b);
                arc(c, 'R', hi, b);
            }
            MPI_Comm_free(&line);
        }
        MPI_Comm_free(&ring);
        MPI_Comm_free(&star);
    }

    /* ---- 6. one-sided ---- */
    {
        /* Rows of synchronisation calls that complete transfers carry the bytes this rank
         * put and got since its previous such call. */
        int *base;
        MPI_Win win;
        MPI_Win_allocate(64 * I, I, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        for (int i = 0; i < 64; i++)
            base[i] = i;
        const int far = (w + 2) % 4;
        int res = 0;

        MPI_Win_fence(0, win);
        coll("MPI_Win_fence", -1, 0, 0, 4);
        MPI_Put(ibuf, 4, MPI_INT, right, 0, 4, MPI_INT, win);
        row("MPI_Put", right, -1, 4 * I, 0, 4, 0, -1);
        MPI_Get(ibuf2, 3, MPI_INT, left, 24, 3, MPI_INT, win);
        row("MPI_Get", left, -1, 0, 3 * I, 4, 0, -1);
        MPI_Accumulate(ibuf, 2, MPI_INT, right, 8, 2, MPI_INT, MPI_SUM, win);
        row("MPI_Accumulate", right, -1, 2 * I, 0, 4, 0, -1);
        MPI_Get_accumulate(ibuf, 1, MPI_INT, &res, 1, MPI_INT, far, 16, 1, MPI_INT, MPI_SUM,
                           win);
        row("MPI_Get_accumulate", far, -1, I, I, 4, 0, -1);
        MPI_Win_fence(0, win);
        coll("MPI_Win_fence", -1, 7 * I, 4 * I, 4);
        check += ibuf2[0] + res;

        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
        row("MPI_Win_lock", right, -1, 0, 0, 4, 0, -1);
        MPI_Put(ibuf, 5, MPI_INT, right, 32, 5, MPI_INT, win);
        row("MPI_Put", right, -1, 5 * I, 0, 4, 0, -1);
        MPI_Win_flush(right, win);
        row("MPI_Win_flush", right, -1, 5 * I, 0, 4, 0, -1);
        MPI_Put(ibuf, 6, MPI_INT, right, 40, 6, MPI_INT, win);
        row("MPI_Put", right, -1, 6 * I, 0, 4, 0, -1);
        MPI_Win_flush_local(right, win);
        row("MPI_Win_flush_local", right, -1, 6 * I, 0, 4, 0, -1);
        MPI_Win_unlock(right, win);
        row("MPI_Win_unlock", right, -1, 0, 0, 4, 0, -1);

        MPI_Win_lock_all(0, win);
        row("MPI_Win_lock_all", -1, -1, 0, 0, 4, 0, -1);
        /* Request-based transfers are recorded at the call, like the blocking ones; their
         * completion call records only itself. Fetch_and_op moves one element each way,
         * Compare_and_swap two (compare and origin values) to the target and one back. */
        MPI_Request rq[4];
        int got2[2], fetched = 0, swapped = 0, cmp = -1;
        MPI_Rput(ibuf, 3, MPI_INT, right, 48, 3, MPI_INT, win, &rq[0]);
        row("MPI_Rput", right, -1, 3 * I, 0, 4, 0, -1);
        MPI_Rget(got2, 2, MPI_INT, left, 24, 2, MPI_INT, win, &rq[1]);
        row("MPI_Rget", left, -1, 0, 2 * I, 4, 0, -1);
        MPI_Raccumulate(ibuf, 2, MPI_INT, right, 56, 2, MPI_INT, MPI_SUM, win, &rq[2]);
        row("MPI_Raccumulate", right, -1, 2 * I, 0, 4, 0, -1);
        MPI_Rget_accumulate(ibuf, 1, MPI_INT, &fetched, 1, MPI_INT, far, 60, 1, MPI_INT, MPI_SUM,
                            win, &rq[3]);
        row("MPI_Rget_accumulate", far, -1, I, I, 4, 0, -1);
        MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        done("MPI_Waitall");
        MPI_Fetch_and_op(ibuf, &fetched, MPI_INT, far, 62, MPI_SUM, win);
        row("MPI_Fetch_and_op", far, -1, I, I, 4, 0, -1);
        MPI_Compare_and_swap(ibuf, &cmp, &swapped, MPI_INT, left, 63, win);
        row("MPI_Compare_and_swap", left, -1, 2 * I, I, 4, 0, -1);
        MPI_Get(ibuf2, 2, MPI_INT, left, 24, 2, MPI_INT, win);
        row("MPI_Get", left, -1, 0, 2 * I, 4, 0, -1);
        MPI_Win_flush_all(win);
        /* 3 + 2 + 1 + 1 + 2 ints put, 2 + 1 + 1 + 1 + 2 got since MPI_Win_unlock. */
        row("MPI_Win_flush_all", -1, -1, 9 * I, 7 * I, 4, 0, -1);
        check += got2[0] + got2[1];
        MPI_Get(ibuf2, 1, MPI_INT, left, 24, 1, MPI_INT, win);
        row("MPI_Get", left, -1, 0, I, 4, 0, -1);
        MPI_Win_flush_local_all(win);
        row("MPI_Win_flush_local_all", -1, -1, 0, I, 4, 0, -1);
        MPI_Win_unlock_all(win);
        row("MPI_Win_unlock_all", -1, -1, 0, 0, 4, 0, -1);
        MPI_Barrier(MPI_COMM_WORLD);
        coll("MPI_Barrier", -1, 0, 0, 4);
        MPI_Win_free(&win);

        /* Post-start-complete-wait with the partner, on a window over the split
         * communicator. */
        static double wmem[16];
        MPI_Win swin;
        MPI_Win_create(wmem, sizeof wmem, D, MPI_INFO_NULL, sub, &swin);
        MPI_Group sg, pg;
        int other = 1 - sr;
        MPI_Comm_group(sub, &sg);
        MPI_Group_incl(sg, 1, &other, &pg);
        MPI_Win_post(pg, 0, swin);
        row("MPI_Win_post", -1, -1, 0, 0, 2, 0, -1);
        MPI_Win_start(pg, 0, swin);
        row("MPI_Win_start", -1, -1, 0, 0, 2, 0, -1);
        MPI_Put(dbuf, 3, MPI_DOUBLE, other, 0, 3, MPI_DOUBLE, swin);
        row("MPI_Put", partner, -1, 3 * D, 0, 2, 0, -1);
        MPI_Win_complete(swin);
        row("MPI_Win_complete", -1, -1, 3 * D, 0, 2, 0, -1);
        MPI_Win_wait(swin);
        row("MPI_Win_wait", -1, -1, 0, 0, 2, 0, -1);
        MPI_Group_free(&pg);
        MPI_Group_free(&sg);
        MPI_Win_free(&swin);
        check += (long)wmem[0];
    }

    MPI_Comm_free(&sub);
    for (int i = 0; i < MAXC && names[i]; i++)
        fprintf(out, "COUNT %s %d\n", names[i], counts[i]);
    fclose(out);
    printf("rank %d of %d: check %ld\n", w, nw, check);
    MPI_Finalize();
    return 0;
}

/* Two opposite rendezvous messages a direction between ranks 0 and 1 (one per host), as
 * hpcc's ring does at 2 ranks: each rank posts Irecv(other, tag 200), Irecv(other, tag
 * 201), Isend(other, BYTES, tag 200), Isend(other, BYTES, tag 201), then completes them one
 * by one with MPI_Waitany, recording when each completes. Per repetition: how far rank 1
 * posted after rank 0 (lead, ms), each rank's time from its own post to its last
 * completion over a lone message's time (the median of the lone repetitions, mode L), and
 * the completion times of its four requests (R200 R201 S200 S201, from the earlier of the
 * two posts, in lone times). The hosts share one kernel, so MPI_Wtime is one clock.
 *
 * Modes (a string of letters, run in order; L first sets the lone time):
 *   L  lone: rank 0 Isend, rank 1 Irecv, Wait (one direction, one message)
 *   1  one a direction: Irecv(200), Isend(200), Waitany x2
 *   2  two a direction, as above
 *   P  two a direction, rank 1 runs the progress engine (MPI_Iprobe loop) for D us
 *      before posting: it sees rank 0's requests first
 *   C  two a direction, rank 1 computes (no MPI call) for D us before posting, rank 0
 *      for D/10 us (so that its requests arrive after rank 1 has left the barrier)
 *   H  two a direction, rank 0 computes D us between its two Isends, rank 1 runs the
 *      progress engine D/2 us before posting: it sees rank 0's first request only
 *   p, c  as P and C with one message a direction
 * SYNC: "bar" (a barrier before every repetition) or "b2b" (a barrier before the first
 * only, the repetitions back to back).
 *
 *   mpicc -O2 -o pair_two tests/programs/pair_two.c
 *   scripts/emucluster up 2 --rate 100mbit --slots 2
 *   scripts/emucluster run -- -np 2 --map-by node --bind-to none ./pair_two 21 2000000 L12 bar 0
 *       (REPS BYTES MODES SYNC D_US [VERBOSE])
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void spin(double s) {
    double t = MPI_Wtime();
    while (MPI_Wtime() - t < s) {
    }
}

static void poll(double s) {
    double t = MPI_Wtime();
    int flag;
    while (MPI_Wtime() - t < s)
        MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

/* per repetition and rank: post time, end time, completion time of R200 R201 S200 S201 */
#define NF 8 /* + the arrival of the last byte of 200 and 201 (rb[s-1] polled) */

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int reps = argc > 1 ? atoi(argv[1]) : 21;
    int s = argc > 2 ? atoi(argv[2]) : 2000000;
    const char *modes = argc > 3 ? argv[3] : "L12";
    int b2b = argc > 4 && strcmp(argv[4], "b2b") == 0;
    double d = (argc > 5 ? atof(argv[5]) : 0) * 1e-6;
    int verbose = argc > 6 ? atoi(argv[6]) : 1;
    if (reps < 1 || s < 1 || np < 2) MPI_Abort(MPI_COMM_WORLD, 2);
    int o = 1 - r;
    char *sb = calloc(2, s), *rb = calloc(2, s);
    double *t = calloc((size_t)reps * NF, sizeof(double));
    double *all = calloc((size_t)reps * NF * 2, sizeof(double));
    double lone = 0;
    for (const char *m = modes; *m; m++) {
        char mode = *m;
        if (!strchr("L12PCHpc", mode)) continue;
        memset(t, 0, (size_t)reps * NF * sizeof(double));
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < reps && r < 2; i++) {
            MPI_Request q[4];
            int n = 0;
            double *ti = t + (size_t)i * NF;
            if (!b2b || mode == 'L') MPI_Barrier(MPI_COMM_WORLD); /* L: always a barrier apart */
            if ((mode == 'P' || mode == 'p') && r == 1) poll(d);
            if ((mode == 'C' || mode == 'c') && r == 1) spin(d);
            /* and rank 0 a tenth of it: its requests then arrive after rank 1 has left the
             * barrier (else rank 1 may read them with the barrier's last message) */
            if ((mode == 'C' || mode == 'c') && r == 0) spin(d / 10);
            if (mode == 'H' && r == 1) poll(d / 2);
            ti[0] = MPI_Wtime();
            if (mode == 'L') {
                if (r == 1) MPI_Irecv(rb, s, MPI_BYTE, o, 200, MPI_COMM_WORLD, &q[0]);
                else MPI_Isend(sb, s, MPI_BYTE, o, 200, MPI_COMM_WORLD, &q[0]);
                MPI_Wait(&q[0], MPI_STATUS_IGNORE);
                ti[1] = ti[2 + (r == 1 ? 0 : 2)] = MPI_Wtime();
                continue;
            }
            int two = strchr("2PCH", mode) != NULL;
            sb[s - 1] = sb[2 * (size_t)s - 1] = (char)(1 + i % 120);
            rb[s - 1] = rb[2 * (size_t)s - 1] = 0;
            MPI_Irecv(rb, s, MPI_BYTE, o, 200, MPI_COMM_WORLD, &q[n++]);
            if (two) MPI_Irecv(rb + s, s, MPI_BYTE, o, 201, MPI_COMM_WORLD, &q[n++]);
            MPI_Isend(sb, s, MPI_BYTE, o, 200, MPI_COMM_WORLD, &q[n++]);
            if (mode == 'H' && r == 0) spin(d);
            if (two) MPI_Isend(sb + s, s, MPI_BYTE, o, 201, MPI_COMM_WORLD, &q[n++]);
            /* index of q[k] in R200 R201 S200 S201 */
            int slot[4] = {0, 1, 2, 3};
            if (!two) { slot[1] = 2; }
            /* the last byte of each message carries the repetition's mark: polling it tells
             * when the data arrived (the put protocol writes into the buffer in order),
             * before the request completes (on the sender's FIN) */
            volatile char *last0 = rb + s - 1, *last1 = rb + 2 * (size_t)s - 1;
            char mark = (char)(1 + i % 120);
            for (int k = 0; k < n;) {
                int idx, flag;
                MPI_Testany(n, q, &idx, &flag, MPI_STATUS_IGNORE);
                double now = MPI_Wtime();
                if (!ti[6] && *last0 == mark) ti[6] = now;
                if (two && !ti[7] && *last1 == mark) ti[7] = now;
                if (flag && idx != MPI_UNDEFINED) {
                    ti[2 + slot[idx]] = now;
                    k++;
                }
            }
            ti[1] = MPI_Wtime();
        }
        MPI_Gather(t, reps * NF, MPI_DOUBLE, all, reps * NF, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (r != 0) continue;
        double *dur = calloc(reps, sizeof(double)), *dmax = calloc(reps, sizeof(double));
        for (int i = 0; i < reps; i++) {
            double *a = all + (size_t)i * NF, *b = all + (size_t)(reps + i) * NF;
            double t0 = a[0] < b[0] ? a[0] : b[0];
            double e = a[1] > b[1] ? a[1] : b[1];
            dur[i] = e - t0; /* from the earlier post to the later end */
            dmax[i] = dur[i];
        }
        qsort(dmax, reps, sizeof(double), cmp);
        if (mode == 'L') lone = dmax[reps / 2];
        if (lone == 0) lone = dmax[reps / 2];
        int bins[4] = {0, 0, 0, 0};
        double mean = 0;
        for (int i = 0; i < reps; i++) {
            double x = dur[i] / lone;
            mean += x / reps;
            bins[x < 1.5 ? 0 : x < 2.5 ? 1 : x < 3.5 ? 2 : 3]++;
        }
        printf("%c %s %d B D=%.0fus: lone %.1f ms; step (earlier post to later end) mean %.2f "
               "median %.2f min %.2f max %.2f lone; <1.5: %d, 1.5-2.5: %d, 2.5-3.5: %d, >3.5: %d of %d\n",
               mode, b2b ? "b2b" : "bar", s, d * 1e6, lone * 1e3, mean, dmax[reps / 2] / lone,
               dmax[0] / lone, dmax[reps - 1] / lone, bins[0], bins[1], bins[2], bins[3], reps);
        if (mode != 'L') {
            /* each rank's own time (its post to its end) and period (end to end), in lone times */
            double *own = calloc(2 * reps, sizeof(double)), *per = calloc(2 * reps, sizeof(double));
            int no = 0, npd = 0;
            for (int i = 0; i < reps; i++)
                for (int k = 0; k < 2; k++) {
                    double *a = all + (size_t)(k * reps + i) * NF;
                    own[no++] = (a[1] - a[0]) / lone;
                    if (i) per[npd++] = (a[1] - a[1 - NF]) / lone;
                }
            qsort(own, no, sizeof(double), cmp);
            qsort(per, npd, sizeof(double), cmp);
            printf("  own time, both ranks: 10/25/50/75/90 %% %.2f %.2f %.2f %.2f %.2f", own[no / 10],
                   own[no / 4], own[no / 2], own[3 * no / 4], own[9 * no / 10]);
            if (npd)
                printf("; period %.2f %.2f %.2f %.2f %.2f", per[npd / 10], per[npd / 4], per[npd / 2],
                       per[3 * npd / 4], per[9 * npd / 10]);
            printf(" lone\n");
            free(own);
            free(per);
        }
        if (verbose && mode != 'L') {
            printf("  rep  lead_ms  step | r0: R200 R201 S200 S201 end | r1: R200 R201 S200 S201 end  (lone times from the earlier post)"
                   " | own r0 r1 | period r0 r1 | data in r0: 200 201 r1: 200 201\n");
            for (int i = 0; i < reps; i++) {
                double *a = all + (size_t)i * NF, *b = all + (size_t)(reps + i) * NF;
                double t0 = a[0] < b[0] ? a[0] : b[0];
#define REL(x) ((x) == 0 ? -1.0 : ((x) - t0) / lone)
                double pa = i ? (a[1] - a[1 - NF]) / lone : 0, pb = i ? (b[1] - b[1 - NF]) / lone : 0;
                printf("  %3d %8.3f %5.2f | %.2f %.2f %.2f %.2f %.2f | %.2f %.2f %.2f %.2f %.2f | %.2f %.2f | %.2f %.2f | %.2f %.2f %.2f %.2f\n", i,
                       (b[0] - a[0]) * 1e3, dur[i] / lone, REL(a[2]), REL(a[3]), REL(a[4]),
                       REL(a[5]), REL(a[1]), REL(b[2]), REL(b[3]), REL(b[4]), REL(b[5]), REL(b[1]),
                       (a[1] - a[0]) / lone, (b[1] - b[0]) / lone, pa, pb, REL(a[6]), REL(a[7]),
                       REL(b[6]), REL(b[7]));
            }
        }
        fflush(stdout);
        free(dur);
        free(dmax);
    }
    free(sb); free(rb); free(t); free(all);
    MPI_Finalize();
    return 0;
}

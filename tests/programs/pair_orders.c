/* Opposite messages between ranks 0 and 1 (one per host; any further ranks wait), posted
 * in five orders, a barrier apart: per order, the mean and median of the slower rank's
 * time over a lone message's, and how many repetitions took over 1.5 lone times (the two
 * messages moved one after the other). Modes: 0 lone (Irecv/Send), 1 Irecv Isend Waitall,
 * 2 Irecv Send Wait, 3 Isend Irecv Waitall, 4 Sendrecv, 5 Send Recv / Recv Send (one
 * after the other by construction), 6 lone (Irecv/Isend). Mode 0 or 6 first sets the lone
 * time (docs/accuracy.md, eighth session).
 *
 *   mpicc -O2 -o pair_orders tests/programs/pair_orders.c
 *   scripts/emucluster up 4 --rate 100mbit --slots 2
 *   scripts/emucluster run -- -np 4 --map-by node ./pair_orders 31 1048576 01234
 *       (REPS BYTES MODES)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int reps = argc > 1 ? atoi(argv[1]) : 9;
    int s = argc > 2 ? atoi(argv[2]) : 1048576;
    const char *modes = argc > 3 ? argv[3] : "012345";
    if (reps < 1 || s < 1) MPI_Abort(MPI_COMM_WORLD, 2);
    int o = 1 - r;
    char *sb = calloc(1, s), *rb = calloc(1, s);
    double *t = calloc(reps, sizeof(double)), lone = 0;
    const char *names[] = {"lone Irecv/Send", "Irecv Isend Waitall", "Irecv Send Wait",
                           "Isend Irecv Waitall", "Sendrecv", "Send Recv / Recv Send",
                           "lone Irecv/Isend"};
    for (const char *m = modes; *m; m++) {
        int mode = *m - '0';
        if (mode < 0 || mode > 6) continue;
        for (int i = 0; i < reps; i++) {
            MPI_Request q[2];
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (r < 2) switch (mode) {
                case 0:
                    if (r == 1) MPI_Recv(rb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    else MPI_Send(sb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD);
                    break;
                case 6:
                    if (r == 1) MPI_Irecv(rb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[0]);
                    else MPI_Isend(sb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[0]);
                    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
                    break;
                case 1:
                    MPI_Irecv(rb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[0]);
                    MPI_Isend(sb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[1]);
                    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
                    break;
                case 2:
                    MPI_Irecv(rb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[0]);
                    MPI_Send(sb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD);
                    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
                    break;
                case 3:
                    MPI_Isend(sb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[1]);
                    MPI_Irecv(rb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[0]);
                    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
                    break;
                case 4:
                    MPI_Sendrecv(sb, s, MPI_BYTE, o, 0, rb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE);
                    break;
                case 5:
                    if (r == 0) {
                        MPI_Send(sb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD);
                        MPI_Recv(rb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    } else {
                        MPI_Recv(rb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        MPI_Send(sb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD);
                    }
                    break;
                }
            double d = MPI_Wtime() - t0;
            MPI_Allreduce(&d, &t[i], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
        double mean = 0;
        for (int i = 0; i < reps; i++) mean += t[i] / reps;
        qsort(t, reps, sizeof(double), cmp);
        if (mode == 0 || mode == 6 || lone == 0) lone = t[reps / 2];
        int slow = 0;
        for (int i = 0; i < reps; i++) slow += t[i] > 1.5 * lone;
        if (r == 0) {
            printf("%8d B  %-22s mean %.2f  median %.2f  min %.2f  max %.2f lone  %2d/%d over 1.5\n",
                   s, names[mode], mean / lone, t[reps / 2] / lone, t[0] / lone,
                   t[reps - 1] / lone, slow, reps);
            fflush(stdout);
        }
    }
    free(sb); free(rb); free(t);
    MPI_Finalize();
    return 0;
}

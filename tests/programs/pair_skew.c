/* Opposite messages between ranks 0 and 1 (one per host; any further ranks wait, or sleep
 * with IDLE_SLEEP set), rank 1 starting D lone times after rank 0 (D = 0, 0.02, 0.11,
 * 0.34, 0.68), receives posted first (Irecv, Isend, Waitall) or, with SEND_FIRST = 1,
 * sends first: each rank's mean time from its own start over a lone message's. Moving
 * together, rank 0 takes about D + 1; rank 0's message held while rank 1's moves, about
 * D + 2 (docs/accuracy.md, eighth session).
 *
 *   mpicc -O2 -o pair_skew tests/programs/pair_skew.c
 *   scripts/emucluster run -- -np 4 --map-by node ./pair_skew 21 1048576 0
 *       (REPS BYTES SEND_FIRST)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void spin(double s) {
    double t = MPI_Wtime();
    while (MPI_Wtime() - t < s) {
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int reps = argc > 1 ? atoi(argv[1]) : 21;
    int s = argc > 2 ? atoi(argv[2]) : 1048576;
    int send_first = argc > 3 ? atoi(argv[3]) : 0;
    if (reps < 1 || s < 1) MPI_Abort(MPI_COMM_WORLD, 2);
    int o = 1 - r;
    char *sb = calloc(1, s), *rb = calloc(1, s);
    double lone = 0;
    for (int i = 0; i < 5; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (r == 0) MPI_Send(sb, s, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        else if (r == 1) MPI_Recv(rb, s, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double d = MPI_Wtime() - t0, m;
        MPI_Allreduce(&d, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        lone += m / 5;
    }
    const double delays[] = {0, 0.02, 0.11, 0.34, 0.68};
    for (int k = 0; k < 5; k++) {
        double D = delays[k] * lone, e0 = 0, e1 = 0;
        for (int i = 0; i < reps; i++) {
            MPI_Request q[2];
            MPI_Barrier(MPI_COMM_WORLD);
            if (r >= 2 && getenv("IDLE_SLEEP")) usleep((useconds_t)(1e6 * (3 * lone + D)));
            if (r == 1) spin(D);
            double t0 = MPI_Wtime();
            if (r < 2) {
                if (send_first) {
                    MPI_Isend(sb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[1]);
                    MPI_Irecv(rb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[0]);
                } else {
                    MPI_Irecv(rb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[0]);
                    MPI_Isend(sb, s, MPI_BYTE, o, 0, MPI_COMM_WORLD, &q[1]);
                }
                MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
            }
            double d[2] = {r == 0 ? MPI_Wtime() - t0 : 0, r == 1 ? MPI_Wtime() - t0 : 0}, m[2];
            MPI_Allreduce(d, m, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            e0 += m[0] / reps;
            e1 += m[1] / reps;
        }
        if (r == 0) {
            printf("%8d B %s, rank 1 %.2f lone times late: rank 0 %.2f, rank 1 %.2f lone times\n",
                   s, send_first ? "sends first" : "receives first", delays[k], e0 / lone,
                   e1 / lone);
            fflush(stdout);
        }
    }
    free(sb); free(rb);
    MPI_Finalize();
    return 0;
}

/* A request and its answer across a shaped link, as LIGGGHTS exchanges its ghost atoms at
 * 2 ranks: rank 1 sends M1 bytes to rank 0, which answers M2 bytes as soon as the request
 * has arrived; then K 8-byte all-reduces and an optional pause of GAP µs; N rounds.
 * Prints the median one-way time of each direction (the ranks of the emulated cluster
 * share one machine's monotonic clock). On the emulated 100 Mbit/s ports (a 3,028 B token
 * bucket) the answer pays what its bucket lacks, emptied by the previous answer's last
 * bytes, and a single message beyond the bucket after a pause passes the bucket's bytes
 * at once (docs/accuracy.md, twenty-seventh session). Usage: bucket M1 M2 N [K [GAP]]
 *   mpicc -O2 -o /tmp/bucket bench/bucket.c
 *   scripts/emucluster up 4 --rate 100mbit --slots 2
 *   scripts/emucluster run -- -np 2 --map-by node /tmp/bucket 1728 1856 3000 3
 *   scripts/emucluster run -- -np 2 --map-by node /tmp/bucket 4096 8 3000 3 300
 * Under the layer (-x LD_PRELOAD=... -x PMPI_PREDICT_OUT=DIR), `pmpi-predict accuracy DIR`
 * compares the replay with it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: bucket M1 M2 N [K [GAP_US]]\n");
        MPI_Finalize();
        return 2;
    }
    int m1 = atoi(argv[1]), m2 = atoi(argv[2]), k = argc > 4 ? atoi(argv[4]) : 3;
    size_t n = (size_t)atol(argv[3]);
    double gap = argc > 5 ? atof(argv[5]) * 1e-6 : 0;
    if (m1 < 0 || m2 < 0 || m1 > 1 << 20 || m2 > 1 << 20 || n < 1 || n > 1000000) {
        if (rank == 0) fprintf(stderr, "bucket: sizes 0..1 MiB, 1..1000000 rounds\n");
        MPI_Finalize();
        return 2;
    }
    char *buf = calloc(2, 1 << 20);
    double *t = calloc(4 * n, sizeof(double)); /* request sent, arrived; answer sent, arrived */
    for (size_t i = 0; i < n; i++) {
        MPI_Request q;
        if (rank == 1) {
            t[4 * i] = now();
            MPI_Send(buf, m1, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            MPI_Irecv(buf + (1 << 20), m2, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            t[4 * i + 3] = now();
        } else if (rank == 0) {
            MPI_Irecv(buf, m1, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            t[4 * i + 1] = t[4 * i + 2] = now();
            MPI_Send(buf + (1 << 20), m2, MPI_CHAR, 1, 2, MPI_COMM_WORLD);
        }
        for (int j = 0; j < k; j++) {
            double x = 1, y;
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        if (gap > 0) {
            double end = now() + gap;
            while (now() < end) {}
        }
    }
    if (rank == 0) {
        MPI_Send(t, (int)(4 * n), MPI_DOUBLE, 1, 9, MPI_COMM_WORLD);
    } else if (rank == 1) {
        double *u = calloc(4 * n, sizeof(double)), *a = calloc(n, sizeof(double)),
               *c = calloc(n, sizeof(double));
        MPI_Recv(u, (int)(4 * n), MPI_DOUBLE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < n; i++) {
            a[i] = u[4 * i + 1] - t[4 * i];
            c[i] = t[4 * i + 3] - u[4 * i + 2];
        }
        qsort(a, n, sizeof(double), cmp);
        qsort(c, n, sizeof(double), cmp);
        printf("request %d B (1 -> 0): median %.1f us, p10 %.1f, p90 %.1f | answer %d B (0 -> 1): median %.1f us, p10 %.1f, p90 %.1f\n",
               m1, a[n / 2] * 1e6, a[n / 10] * 1e6, a[9 * n / 10] * 1e6, m2, c[n / 2] * 1e6,
               c[n / 10] * 1e6, c[9 * n / 10] * 1e6);
        free(u); free(a); free(c);
    }
    free(buf);
    free(t);
    MPI_Finalize();
    return 0;
}

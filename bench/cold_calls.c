/* Which MPI calls pay for time spent outside MPI, and how much (bench/cold_send.c's
 * follow-up). Rank 0, before each timed call, either spins G us (mode "gap": G from 0 to
 * 20 ms; nothing touched) or reads one byte a cache line of K KiB (mode "sweep": K from 0
 * to 32 MiB, the caches evicted, 0-1 ms), then times one of: a blocking 8 B MPI_Send,
 * MPI_Isend + MPI_Wait, MPI_Recv of 8 B already arrived, an 8 B MPI_Allreduce, a
 * MPI_Barrier. Medians and quartiles over 30 rounds. On the emulated cluster (2 hosts,
 * 100 Mbit/s, Open MPI; twenty-ninth session) every call pays, growing with the gap (8 B
 * send 8.3 us back to back, 9.9 after 1 ms, 18 after 5, 34-57 after 20) and with the
 * memory touched (6.9 us -> 11 after 1-8 MiB, 20 after 32 MiB); MPICH alike.
 *   mpicc -O2 -o /tmp/cold_calls bench/cold_calls.c
 *   scripts/emucluster run -- -np 2 --map-by node /tmp/cold_calls gap
 *   scripts/emucluster run -- -np 2 --map-by node /tmp/cold_calls sweep */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
static void spin(double us) { double t0 = MPI_Wtime(); while (MPI_Wtime() - t0 < us * 1e-6) ; }
int main(int c, char **v) {
    MPI_Init(&c, &v);
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int sweep = c > 1 && strcmp(v[1], "sweep") == 0;
    size_t N = 32 << 20; char *mem = malloc(N); memset(mem, 1, N);
    static char b[64];
    int gaps[] = {0, 500, 1000, 2000, 5000, 10000, 20000};
    int kib[] = {0, 256, 1024, 4096, 8192, 16384, 32768};
    const char *names[] = {"send 8 B", "isend+wait 8 B", "recv 8 B (arrived)", "allreduce 8 B", "barrier"};
    for (int call = 0; call < 5; call++) {
        for (int g = 0; g < 7; g++) {
            double t[30];
            for (int i = 0; i < 30; i++) {
                MPI_Barrier(MPI_COMM_WORLD);
                if (call == 2 && r == 1) MPI_Send(b, 8, MPI_BYTE, 0, 4, MPI_COMM_WORLD);
                if (r == 0) {
                    if (sweep) { long s = 0; for (size_t q = 0; q < (size_t)kib[g] << 10; q += 64) s += mem[q]++; if (s == 42) printf("x"); }
                    else spin(gaps[g]);
                    if (call == 2 && !sweep && gaps[g] == 0) spin(200); /* let the message arrive */
                }
                double t0 = MPI_Wtime();
                if (call == 0) { if (r == 0) MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD); else if (r == 1) MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
                if (call == 1) { if (r == 0) { MPI_Request q; MPI_Isend(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &q); MPI_Wait(&q, MPI_STATUS_IGNORE); } else if (r == 1) MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
                if (call == 2 && r == 0) MPI_Recv(b, 8, MPI_BYTE, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (call == 3) { double x = 1, y; MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
                if (call == 4) MPI_Barrier(MPI_COMM_WORLD);
                t[i] = MPI_Wtime() - t0;
            }
            if (r == 0) {
                qsort(t, 30, sizeof(double), cmp);
                if (sweep) printf("%-19s after %5d KiB read: median %.1f us (quartiles %.1f-%.1f)\n", names[call], kib[g], t[15] * 1e6, t[7] * 1e6, t[22] * 1e6);
                else printf("%-19s after %5d us spin: median %.1f us (quartiles %.1f-%.1f)\n", names[call], gaps[g], t[15] * 1e6, t[7] * 1e6, t[22] * 1e6);
                fflush(stdout);
            }
        }
    }
    MPI_Finalize();
}

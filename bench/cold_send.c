/* The first blocking send after time outside MPI: rank 0 computes C ms (a loop over M MB,
 * default 32; 0: none) and then MPI_Sends 8 B and 42 KB to rank 1, which waits in
 * MPI_Recv; 20 rounds, median send times, against the same sends after a barrier alone.
 * On the emulated cluster (2 hosts, 100 Mbit/s, Open MPI): back to back 11-17 us and
 * 26-73 us; after 5-50 ms of compute 72-90 us and 50-78 us, whatever the memory touched;
 * after 1 ms 11 us (docs/accuracy.md, twenty-eighth session). Usage: cold_send [C [M]]
 *   mpicc -O2 -o /tmp/cold_send bench/cold_send.c
 *   scripts/emucluster run -- -np 2 --map-by node /tmp/cold_send 50 0 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
int main(int c, char **v) {
    MPI_Init(&c, &v);
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int C = c > 1 ? atoi(v[1]) : 50;
    size_t N = (size_t)(c > 2 ? atoi(v[2]) : 32) << 20; if (N == 0) N = 4096; char *mem = malloc(N); memset(mem, 1, N);
    static char b[43000];
    double t8[20], t42[20];
    for (int mode = 0; mode < 2; mode++) {
        for (int i = 0; i < 20; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (r == 0) {
                if (mode == 1) { double t0 = MPI_Wtime(); long s = 0; while (MPI_Wtime() - t0 < C * 1e-3) for (size_t k = 0; k < N; k += 64) s += mem[k]++; if (s == 42) printf("x"); }
                double t = MPI_Wtime(); MPI_Send(b, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD); t8[i] = MPI_Wtime() - t;
                t = MPI_Wtime(); MPI_Send(b, 42098, MPI_BYTE, 1, 2, MPI_COMM_WORLD); t42[i] = MPI_Wtime() - t;
            } else {
                MPI_Recv(b, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Recv(b, 42098, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        if (r == 0) { qsort(t8, 20, sizeof(double), cmp); qsort(t42, 20, sizeof(double), cmp); printf("%s: send 8 B %.1f us, 42 KB %.1f us (medians)\n", mode ? "after compute" : "back to back", t8[10] * 1e6, t42[10] * 1e6); }
    }
    MPI_Finalize();
}

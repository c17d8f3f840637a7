#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* How long a local flush waits after a one-sided read from another rank: rank 0 reads
 * SIZE bytes from rank 1 with MPI_Get_accumulate (MPI_SUM) and with MPI_Get, each followed
 * by MPI_Win_flush_local_all (and the first by MPI_Win_flush_all), REPS times, and prints
 * each call's time in µs. Usage: rma_flush [REPS [SIZE]] (2 ranks or more). */
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, np; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &np);
  int reps = argc > 1 ? atoi(argv[1]) : 5, size = argc > 2 ? atoi(argv[2]) : 31008;
  if (np < 2 || reps < 1 || size < 8) { if (!r) fprintf(stderr, "usage: rma_flush [REPS [SIZE]] (2 ranks or more)\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
  int n = size / 8; double *base, *res = malloc(8 * (size_t)n), *org = calloc(n, 8); MPI_Win w;
  MPI_Win_allocate(8 * (MPI_Aint)n, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
  MPI_Win_lock_all(0, w);
  MPI_Barrier(MPI_COMM_WORLD);
  if (r == 0) for (int k = 0; k < reps; k++) {
    double t0 = MPI_Wtime(); MPI_Get_accumulate(org, n, MPI_DOUBLE, res, n, MPI_DOUBLE, 1, 0, n, MPI_DOUBLE, MPI_SUM, w);
    double t1 = MPI_Wtime(); MPI_Win_flush_local_all(w);
    double t2 = MPI_Wtime(); MPI_Win_flush_all(w);
    double t3 = MPI_Wtime(); MPI_Get(res, n, MPI_DOUBLE, 1, 0, n, MPI_DOUBLE, w);
    double t4 = MPI_Wtime(); MPI_Win_flush_local_all(w);
    double t5 = MPI_Wtime();
    printf("get_accumulate %.1f us, flush_local_all %.1f, flush_all %.1f | get %.1f, flush_local_all %.1f\n",
           (t1 - t0) * 1e6, (t2 - t1) * 1e6, (t3 - t2) * 1e6, (t4 - t3) * 1e6, (t5 - t4) * 1e6);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_unlock_all(w); MPI_Win_free(&w); free(res); free(org);
  MPI_Finalize(); return 0;
}

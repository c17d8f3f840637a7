/* MPI_THREAD_MULTIPLE: 4 threads per rank; thread t of rank 0 sends N messages of
 * (t+1) ints with tag 100+t to rank 1, where thread t receives them. Run with 2 ranks;
 * argv[1] is N (default 200). Rank 0 prints the totals. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define T 4
static int rank, n = 200;
static long got[T];

static void *work(void *arg) {
    int t = (int)(long)arg;
    int buf[T];
    for (int i = 0; i < T; i++) buf[i] = t * 10 + i;
    for (int k = 0; k < n; k++) {
        if (rank == 0) {
            MPI_Send(buf, t + 1, MPI_INT, 1, 100 + t, MPI_COMM_WORLD);
        } else {
            int in[T];
            MPI_Recv(in, T, MPI_INT, 0, 100 + t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            got[t] += in[t];
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1) n = atoi(argv[1]);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("no MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 0;
    }
    pthread_t th[T];
    for (long t = 0; t < T; t++) pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    long tot[T];
    MPI_Reduce(got, tot, T, MPI_LONG, MPI_SUM, 1, MPI_COMM_WORLD);
    if (rank == 1) MPI_Send(tot, T, MPI_LONG, 0, 1, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Recv(tot, T, MPI_LONG, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int t = 0; t < T; t++) printf("thread %d received %ld\n", t, tot[t]);
    }
    MPI_Finalize();
    return 0;
}

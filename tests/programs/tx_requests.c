/* Request arrays with inactive entries (MPI_REQUEST_NULL) in Waitall, Waitany and
 * Testall; Waitsome, Testany and Testsome; status fields printed by completion index.
 * Run with 2 ranks; rank 0 prints. */
#include <mpi.h>
#include <stdio.h>

#define N 6

static void print_statuses(const char *what, MPI_Status *st, int *done, int n) {
    for (int i = 0; i < n; i++) {
        if (!done[i]) { printf("%s[%d] inactive\n", what, i); continue; }
        int c;
        MPI_Get_count(&st[i], MPI_INT, &c);
        printf("%s[%d] source %d tag %d count %d\n", what, i, st[i].MPI_SOURCE, st[i].MPI_TAG, c);
    }
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) MPI_Abort(MPI_COMM_WORLD, 3);
    int out[N][8], in[N][8];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < 8; j++) out[i][j] = rank * 100 + i * 8 + j;
    MPI_Request rq[N];
    MPI_Status st[N];
    int done[N];
    int other = 1 - rank;

    for (int phase = 0; phase < 6; phase++) {
        /* Even slots are live receives of i+1 ints with tag 10*phase+i; odd slots inactive. */
        for (int i = 0; i < N; i++) {
            rq[i] = MPI_REQUEST_NULL;
            done[i] = 0;
            if (i % 2 == 0)
                MPI_Irecv(in[i], 8, MPI_INT, other, 10 * phase + i, MPI_COMM_WORLD, &rq[i]);
        }
        for (int i = N - 1; i >= 0; i--)
            if (i % 2 == 0)
                MPI_Send(out[i], i + 1, MPI_INT, other, 10 * phase + i, MPI_COMM_WORLD);
        int idx, flag, outc, ind[N];
        MPI_Status one;
        switch (phase) {
        case 0:
            MPI_Waitall(N, rq, st);
            for (int i = 0; i < N; i += 2) done[i] = 1;
            break;
        case 1:
            for (;;) {
                MPI_Waitany(N, rq, &idx, &one);
                if (idx == MPI_UNDEFINED) break;
                st[idx] = one;
                done[idx] = 1;
            }
            break;
        case 2:
            do MPI_Testall(N, rq, &flag, st); while (!flag);
            for (int i = 0; i < N; i += 2) done[i] = 1;
            break;
        case 3:
            for (;;) {
                MPI_Status tmp[N];
                MPI_Waitsome(N, rq, &outc, ind, tmp);
                if (outc == MPI_UNDEFINED) break;
                for (int k = 0; k < outc; k++) { st[ind[k]] = tmp[k]; done[ind[k]] = 1; }
            }
            break;
        case 4:
            for (;;) {
                MPI_Testany(N, rq, &idx, &flag, &one);
                if (flag && idx == MPI_UNDEFINED) break;
                if (flag) { st[idx] = one; done[idx] = 1; }
            }
            break;
        case 5:
            for (;;) {
                MPI_Status tmp[N];
                MPI_Testsome(N, rq, &outc, ind, tmp);
                if (outc == MPI_UNDEFINED) break;
                for (int k = 0; k < outc; k++) { st[ind[k]] = tmp[k]; done[ind[k]] = 1; }
            }
            break;
        }
        if (rank == 0) {
            static const char *names[] = {"waitall", "waitany", "testall", "waitsome", "testany", "testsome"};
            print_statuses(names[phase], st, done, N);
            int sum = 0;
            for (int i = 0; i < N; i += 2)
                for (int j = 0; j <= i; j++) sum += in[i][j];
            printf("%s sum %d\n", names[phase], sum);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* Waitall over inactive requests only, and a zero-length array. */
    for (int i = 0; i < N; i++) rq[i] = MPI_REQUEST_NULL;
    MPI_Waitall(N, rq, MPI_STATUSES_IGNORE);
    MPI_Waitall(0, rq, MPI_STATUSES_IGNORE);
    int idx;
    MPI_Waitany(N, rq, &idx, MPI_STATUS_IGNORE);
    if (rank == 0) printf("all-null waitany index undefined %d\n", idx == MPI_UNDEFINED);
    MPI_Finalize();
    return 0;
}

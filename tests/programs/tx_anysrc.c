/* MPI_ANY_SOURCE / MPI_ANY_TAG receives, blocking and nonblocking, with MPI_Probe; the
 * status fields (MPI_SOURCE, MPI_TAG, MPI_Get_count) are printed in a deterministic
 * order; barriers separate the rounds, so that an ANY_TAG receive matches its own round. Run with 4 ranks. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 4) MPI_Abort(MPI_COMM_WORLD, 3);
    if (rank == 0) {
        /* Blocking: each other rank sends rank*3 ints with tag 50+rank. */
        int seen[4][3];
        memset(seen, 0, sizeof seen);
        for (int k = 1; k < size; k++) {
            int in[16];
            MPI_Status st;
            MPI_Recv(in, 16, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            int c;
            MPI_Get_count(&st, MPI_INT, &c);
            seen[st.MPI_SOURCE][0] = st.MPI_TAG;
            seen[st.MPI_SOURCE][1] = c;
            seen[st.MPI_SOURCE][2] = in[0];
        }
        for (int k = 1; k < size; k++)
            printf("recv from %d tag %d count %d first %d\n", k, seen[k][0], seen[k][1], seen[k][2]);
        MPI_Barrier(MPI_COMM_WORLD);
        /* Probe then receive exactly what was probed: second round, doubles. */
        memset(seen, 0, sizeof seen);
        for (int k = 1; k < size; k++) {
            MPI_Status st;
            MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            int c;
            MPI_Get_count(&st, MPI_DOUBLE, &c);
            double in[16];
            MPI_Status st2;
            MPI_Recv(in, c, MPI_DOUBLE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st2);
            seen[st.MPI_SOURCE][0] = st.MPI_TAG;
            seen[st.MPI_SOURCE][1] = c;
            seen[st.MPI_SOURCE][2] = (int)in[c - 1];
        }
        for (int k = 1; k < size; k++)
            printf("probe from %d tag %d count %d last %d\n", k, seen[k][0], seen[k][1], seen[k][2]);
        MPI_Barrier(MPI_COMM_WORLD);
        /* Nonblocking ANY_SOURCE, ANY_TAG, completed by Waitall with statuses. */
        MPI_Request rq[3];
        MPI_Status sts[3];
        char cin[3][32];
        for (int k = 0; k < 3; k++)
            MPI_Irecv(cin[k], 32, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[k]);
        MPI_Waitall(3, rq, sts);
        memset(seen, 0, sizeof seen);
        for (int k = 0; k < 3; k++) {
            int c;
            MPI_Get_count(&sts[k], MPI_CHAR, &c);
            seen[sts[k].MPI_SOURCE][0] = sts[k].MPI_TAG;
            seen[sts[k].MPI_SOURCE][1] = c;
        }
        for (int k = 1; k < size; k++)
            printf("irecv from %d tag %d count %d\n", k, seen[k][0], seen[k][1]);
    } else {
        int out[16];
        for (int i = 0; i < 16; i++) out[i] = rank * 100 + i;
        MPI_Send(out, rank * 3, MPI_INT, 0, 50 + rank, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double d[16];
        for (int i = 0; i < 16; i++) d[i] = rank * 10 + i;
        MPI_Send(d, rank + 1, MPI_DOUBLE, 0, 60 + rank, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        char c[32];
        memset(c, 'a' + rank, sizeof c);
        MPI_Send(c, 5 * rank, MPI_CHAR, 0, 70 + rank, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}

/* Many communicators: 3,000 made and freed one after the other (MPI_Comm_split), then
 * 1,000 alive at once (MPI_Comm_dup), an MPI_Allreduce on each. Prints each rank's sum. */
#include <mpi.h>
#include <stdio.h>

#define LIVE 1000

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long total = 0;
    for (int i = 0; i < 3000; i++) {
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, i % 2, rank, &c);
        int v = 1, s = 0;
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, c);
        total += s;
        MPI_Comm_free(&c);
    }
    static MPI_Comm keep[LIVE];
    for (int i = 0; i < LIVE; i++) MPI_Comm_dup(MPI_COMM_WORLD, &keep[i]);
    for (int i = 0; i < LIVE; i++) {
        int v = 1, s = 0;
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, keep[i]);
        total += s;
    }
    for (int i = 0; i < LIVE; i++) MPI_Comm_free(&keep[i]);
    printf("rank %d total %ld\n", rank, total);
    MPI_Finalize();
    return 0;
}

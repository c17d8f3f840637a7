/* fork() and system() inside an MPI program: the children never call MPI. Run with 2
 * ranks; rank 0 prints. Each rank makes exactly 3 MPI_Send/MPI_Recv pairs and one
 * MPI_Allreduce. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int other = 1 - rank, v = rank, w = -1;
    MPI_Sendrecv(&v, 1, MPI_INT, other, 1, &w, 1, MPI_INT, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* The child works a little and leaves through exit(), which runs atexit handlers. */
        volatile long x = 0;
        for (long i = 0; i < 1000000; i++) x += i;
        exit(x > 0 ? 3 : 4);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    int child = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    MPI_Sendrecv(&v, 1, MPI_INT, other, 2, &w, 1, MPI_INT, other, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int rc = system("exit 5");
    int sys = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    MPI_Sendrecv(&v, 1, MPI_INT, other, 3, &w, 1, MPI_INT, other, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int r[2] = {child, sys}, all[2];
    MPI_Allreduce(r, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("fork child exit sum %d, system exit sum %d, last %d\n", all[0], all[1], w);
    MPI_Finalize();
    return 0;
}

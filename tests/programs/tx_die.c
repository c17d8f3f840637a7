/* Runs that never reach MPI_Finalize. Run with 2 ranks; argv[1] selects how rank 1 ends
 * after sending M (argv[2], default 50) messages to rank 0, which receives them and then
 * waits forever:
 *   term  - rank 1 sends itself SIGTERM
 *   abort - rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7)
 *   exit  - rank 1 calls exit(0) (rank 0 then waits outside MPI, in sleep); before it,
 *           rank 1 posts one 2 KiB MPI_Isend (tag 3) it never completes, which rank 0
 *           receives
 *   own   - every rank installs its own one-shot SIGTERM handler (SA_RESETHAND) before
 *           MPI_Init; rank 1 sends itself SIGTERM, prints whether its handler ran and
 *           whether the action was reset to the default, and the run finalizes normally
 *   loop  - no ending: rank 0 sends to rank 1 forever and writes its count of completed
 *           sends and its pid to the file "progress" every 100 sends (for a SIGKILL test). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t handled = 0;
static void own_handler(int sig) { handled = sig; }

int main(int argc, char **argv) {
    int rank;
    const char *mode = argc > 1 ? argv[1] : "term";
    if (strcmp(mode, "own") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = own_handler;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int m = argc > 2 ? atoi(argv[2]) : 50;
    int buf[16] = {0};
    if (strcmp(mode, "loop") == 0) {
        if (rank == 0) {
            for (long k = 1;; k++) {
                MPI_Send(buf, 16, MPI_INT, 1, 1, MPI_COMM_WORLD);
                if (k % 100 == 0) {
                    FILE *f = fopen("progress.tmp", "w");
                    fprintf(f, "%ld %d\n", k, (int)getpid());
                    fclose(f);
                    rename("progress.tmp", "progress");
                }
                usleep(20);
            }
        } else {
            for (;;) MPI_Recv(buf, 16, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 1) {
        for (int k = 0; k < m; k++) MPI_Send(buf, 16, MPI_INT, 0, 1, MPI_COMM_WORLD);
        if (strcmp(mode, "own") == 0) {
            kill(getpid(), SIGTERM);
            struct sigaction now;
            sigaction(SIGTERM, NULL, &now);
            printf("rank 1 handled signal %d, reset to default %d\n", (int)handled,
                   now.sa_handler == SIG_DFL);
            fflush(stdout);
            MPI_Send(buf, 16, MPI_INT, 0, 2, MPI_COMM_WORLD);
            MPI_Finalize();
            return 0;
        }
        if (strcmp(mode, "term") == 0) kill(getpid(), SIGTERM);
        else if (strcmp(mode, "abort") == 0) MPI_Abort(MPI_COMM_WORLD, 7);
        else {
            static int big[512];
            MPI_Request rq;
            MPI_Isend(big, 512, MPI_INT, 0, 3, MPI_COMM_WORLD, &rq);
            /* Received: rank 0 says so once it has it. */
            MPI_Recv(buf, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            exit(0);
        }
        for (;;) sleep(1);
    } else {
        for (int k = 0; k < m; k++)
            MPI_Recv(buf, 16, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("rank 0 received %d\n", m);
        fflush(stdout);
        if (strcmp(mode, "exit") == 0) {
            static int big[512];
            MPI_Recv(big, 512, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 1, MPI_INT, 1, 4, MPI_COMM_WORLD);
        }
        /* After rank 1's exit(0), waiting inside MPI races the launcher: MPICH's rank 0
         * either sees the connection close and aborts (status 1) or is killed by hydra
         * first (status 0). Outside MPI only the launcher ends it. */
        if (strcmp(mode, "exit") == 0)
            for (;;) sleep(1);
        MPI_Recv(buf, 16, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}

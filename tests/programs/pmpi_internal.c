/* Calls the layer must not record although they reach its PMPI_* exports: ROMIO's own
 * communication inside collective MPI-IO (MPICH's default MPI-IO; Open MPI's with
 * OMPI_MCA_io=romio321) and the program's own direct PMPI_* calls. Recorded: exactly
 * one MPI_Barrier per rank. Argument: the file to write. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, buf[1024], sum = 0, one = 1;
    MPI_File fh;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 1024; i++) buf[i] = rank;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    MPI_File_write_at_all(fh, (MPI_Offset)rank * sizeof buf, buf, 1024, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    PMPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d sum %d\n", rank, sum);
    MPI_Finalize();
    return 0;
}

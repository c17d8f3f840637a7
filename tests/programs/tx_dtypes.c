/* Derived datatypes (a strided vector; a contiguous type of a struct type) and zero
 * counts; then 8 KiB sent as a strided block of a matrix (not contiguous: the layer flags
 * it), as doubles, and as a contiguous type of doubles. Run with 2 ranks; rank 0 prints. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

struct particle { double x; int id; char tag; };

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) MPI_Abort(MPI_COMM_WORLD, 3);

    /* A column of an 8x8 matrix of doubles: vector of 8 blocks of 1, stride 8 (64 bytes). */
    MPI_Datatype col;
    MPI_Type_vector(8, 1, 8, MPI_DOUBLE, &col);
    MPI_Type_commit(&col);
    /* Struct of double, int, char; then 3 of them contiguous. */
    MPI_Datatype pt, pts;
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {offsetof(struct particle, x), offsetof(struct particle, id),
                        offsetof(struct particle, tag)};
    MPI_Datatype types[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
    MPI_Type_create_struct(3, bl, disp, types, &pt);
    MPI_Type_commit(&pt);
    MPI_Type_contiguous(3, pt, &pts);
    MPI_Type_commit(&pts);

    double m[64];
    struct particle p[6];
    if (rank == 0) {
        for (int i = 0; i < 64; i++) m[i] = i;
        for (int i = 0; i < 6; i++) { p[i].x = i * 1.5; p[i].id = 10 + i; p[i].tag = 'A' + i; }
        MPI_Send(&m[3], 1, col, 1, 1, MPI_COMM_WORLD);
        MPI_Send(p, 2, pts, 1, 2, MPI_COMM_WORLD);
        MPI_Send(m, 0, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD);
        MPI_Request r;
        MPI_Isend(p, 0, pts, 1, 4, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        int back[8];
        MPI_Status st;
        MPI_Recv(back, 8, MPI_INT, 1, 5, MPI_COMM_WORLD, &st);
        int c;
        MPI_Get_count(&st, MPI_INT, &c);
        printf("vector column sum %d\n", back[0]);
        printf("struct ids %d %d tags %c%c x %d\n", back[1], back[2], back[3], back[4], back[5]);
        printf("zero counts %d %d; reply count %d\n", back[6], back[7], c);
    } else {
        for (int i = 0; i < 64; i++) m[i] = -1;
        MPI_Status st;
        int ce, c0, c1;
        MPI_Recv(&m[5], 1, col, 0, 1, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, col, &ce);
        double colsum = 0;
        for (int i = 0; i < 8; i++) colsum += m[5 + 8 * i];
        MPI_Recv(p, 2, pts, 0, 2, MPI_COMM_WORLD, &st);
        MPI_Recv(m, 0, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_DOUBLE, &c0);
        MPI_Request r;
        MPI_Irecv(p, 0, pts, 0, 4, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, &st);
        MPI_Get_count(&st, pts, &c1);
        int back[8] = {(int)colsum * 10 + ce, p[0].id, p[5].id, p[1].tag, p[4].tag,
                       (int)(p[3].x * 10), c0, c1};
        MPI_Send(back, 8, MPI_INT, 0, 5, MPI_COMM_WORLD);
    }
    /* 8 KiB four ways: a 64 x 16 block of a 64 x 32 matrix (tags 6 and 9, blocking and
     * not), 1024 doubles (7), one contiguous type of 1024 doubles (8). */
    static double big[64 * 32];
    MPI_Datatype blk, cont;
    MPI_Type_vector(64, 16, 32, MPI_DOUBLE, &blk);
    MPI_Type_commit(&blk);
    MPI_Type_contiguous(1024, MPI_DOUBLE, &cont);
    MPI_Type_commit(&cont);
    if (rank == 0) {
        MPI_Send(big, 1, blk, 1, 6, MPI_COMM_WORLD);
        MPI_Send(big, 1024, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
        MPI_Send(big, 1, cont, 1, 8, MPI_COMM_WORLD);
        MPI_Request r;
        MPI_Isend(big, 1, blk, 1, 9, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(big, 1, blk, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(big, 1024, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(big, 1, cont, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(big, 1, blk, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Type_free(&blk);
    MPI_Type_free(&cont);
    /* Zero-count collectives. */
    int z = 0;
    MPI_Bcast(&z, 0, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &z, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Type_free(&col);
    MPI_Type_free(&pts);
    MPI_Type_free(&pt);
    MPI_Finalize();
    return 0;
}

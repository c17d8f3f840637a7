#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* Per-member time of MPI_Bcast from rank 0 after two barriers, for each size given: the
 * median over REPS of each rank's time, printed by rank 0 (which member gets the data
 * when shows the tree the library runs). Usage: bcast_members REPS SIZE [SIZE...] */
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int r,n; MPI_Comm_rank(MPI_COMM_WORLD,&r); MPI_Comm_size(MPI_COMM_WORLD,&n);
  if(argc<3){ if(r==0) fprintf(stderr,"usage: bcast_members REPS SIZE [SIZE...]\n"); MPI_Abort(MPI_COMM_WORLD,2); }
  int reps=atoi(argv[1]); if(reps<1) reps=1; char *buf=calloc(1,1<<20); double *t=malloc(sizeof(double)*reps);
  for(int a=2;a<argc;a++){ int m=atoi(argv[a]); if(m<0||m>(1<<20)) MPI_Abort(MPI_COMM_WORLD,2); /* the buffer's size */
    for(int k=0;k<reps+5;k++){ MPI_Barrier(MPI_COMM_WORLD); MPI_Barrier(MPI_COMM_WORLD); double s=MPI_Wtime(); MPI_Bcast(buf,m,MPI_CHAR,0,MPI_COMM_WORLD); if(k>=5) t[k-5]=MPI_Wtime()-s; }
    qsort(t,reps,sizeof(double),cmp); double med=t[reps/2], *all=malloc(sizeof(double)*n);
    MPI_Gather(&med,1,MPI_DOUBLE,all,1,MPI_DOUBLE,0,MPI_COMM_WORLD);
    if(r==0){ printf("%7d B:",m); for(int i=0;i<n;i++) printf(" %d:%.0f",i,all[i]*1e6); printf(" us\n"); fflush(stdout);} free(all); }
  MPI_Finalize(); return 0;}

/* How long a message takes to be seen by a rank that polls for it while other ranks of its
 * machine compute or poll (docs/engine.md, "Ranks that share CPUs"). Rank 1 computes for a
 * random 0..WORK seconds, then sends rank 0 its clock (CLOCK_MONOTONIC: the emulated hosts
 * share one machine's clock); rank 0 waits in MPI_Recv and takes the time from the send to
 * its receive's return. Ranks 2.. wait in MPI (first pass) or compute in 50-ms stretches
 * (second pass). Prints the mean, median and 90th percentile of each pass.
 * Usage: cpu_wait_latency ITERS WORK
 *   scripts/emucluster run -- -np 4 --map-by node --bind-to none ./cpu_wait_latency 1000 0.004 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static void spin(double s){double t=now(); volatile double x=0; while(now()-t<s) x+=1;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int r,n; MPI_Comm_rank(MPI_COMM_WORLD,&r); MPI_Comm_size(MPI_COMM_WORLD,&n);
  int iters=atoi(argv[1]); double work=atof(argv[2]);
  double *d=malloc(sizeof(double)*iters);
  for(int mode=0;mode<2;mode++){
    MPI_Barrier(MPI_COMM_WORLD);
    if(r==0){
      for(int i=0;i<iters;i++){ double t; MPI_Recv(&t,1,MPI_DOUBLE,1,0,MPI_COMM_WORLD,MPI_STATUS_IGNORE); d[i]=now()-t; spin(0.0002);}
      char b=0; for(int k=2;k<n;k++) MPI_Send(&b,1,MPI_BYTE,k,2,MPI_COMM_WORLD);
      qsort(d,iters,sizeof(double),cmp); double s=0; for(int i=0;i<iters;i++) s+=d[i];
      printf("others %s:  send->recv-return mean %.1f us, median %.1f, p90 %.1f\n", mode?"compute":"poll", s/iters*1e6, d[iters/2]*1e6, d[iters*9/10]*1e6);
    } else if(r==1){
      for(int i=0;i<iters;i++){ spin(work*(rand()%1000)/1000.0); double t=now(); MPI_Send(&t,1,MPI_DOUBLE,0,0,MPI_COMM_WORLD);}
    } else {
      char b; if(mode==0) MPI_Recv(&b,1,MPI_BYTE,0,2,MPI_COMM_WORLD,MPI_STATUS_IGNORE);
      else { int f=0; MPI_Request q; MPI_Irecv(&b,1,MPI_BYTE,0,2,MPI_COMM_WORLD,&q); while(!f){ spin(0.05); MPI_Test(&q,&f,MPI_STATUS_IGNORE);} }
    }
  }
  MPI_Finalize(); return 0;
}

! Fortran twin of overhead_self.c, through `use mpi`: under Open MPI it reaches the
! layer through the PMPI_* trampolines (scripts/bench-overhead-self).
program overhead_self
  use mpi
  implicit none
  integer :: ierr, n, i, x, y, q(2)
  logical :: flag
  character(len=32) :: arg
  double precision :: t, ip, ex
  call MPI_Init(ierr)
  call get_command_argument(1, arg)
  read(arg, *) n
  x = 1
  t = MPI_Wtime()
  do i = 1, n
    call MPI_Iprobe(MPI_ANY_SOURCE, 5, MPI_COMM_SELF, flag, MPI_STATUS_IGNORE, ierr)
  end do
  ip = (MPI_Wtime() - t) / n * 1d9
  t = MPI_Wtime()
  do i = 1, n
    call MPI_Irecv(y, 1, MPI_INTEGER, 0, 1, MPI_COMM_SELF, q(1), ierr)
    call MPI_Isend(x, 1, MPI_INTEGER, 0, 1, MPI_COMM_SELF, q(2), ierr)
    call MPI_Waitall(2, q, MPI_STATUSES_IGNORE, ierr)
  end do
  ex = (MPI_Wtime() - t) / n * 1d9
  print '(a, f0.1)', 'f_iprobe ', ip
  print '(a, f0.1)', 'f_self_exchange ', ex
  call MPI_Finalize(ierr)
end program overhead_self

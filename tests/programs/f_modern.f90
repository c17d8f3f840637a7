! Nonblocking collective, persistent requests and a matched probe from Fortran (use mpi)
! at 2 ranks: each call is recorded once, named after the C call.
program f_modern
  use mpi
  implicit none
  integer :: ierr, rank, req, preq, msg, n, buf(4), st(MPI_STATUS_SIZE)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  buf = rank
  call MPI_IBCAST(buf, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  if (rank == 0) then
    call MPI_SEND_INIT(buf, 4, MPI_INTEGER, 1, 3, MPI_COMM_WORLD, preq, ierr)
  else
    call MPI_RECV_INIT(buf, 4, MPI_INTEGER, 0, 3, MPI_COMM_WORLD, preq, ierr)
  end if
  call MPI_START(preq, ierr)
  call MPI_WAIT(preq, MPI_STATUS_IGNORE, ierr)
  call MPI_START(preq, ierr)
  call MPI_WAIT(preq, MPI_STATUS_IGNORE, ierr)
  call MPI_REQUEST_FREE(preq, ierr)
  if (rank == 0) then
    call MPI_SEND(buf, 2, MPI_INTEGER, 1, 4, MPI_COMM_WORLD, ierr)
  else
    call MPI_MPROBE(0, 4, MPI_COMM_WORLD, msg, st, ierr)
    call MPI_GET_COUNT(st, MPI_INTEGER, n, ierr)
    call MPI_MRECV(buf, n, MPI_INTEGER, msg, MPI_STATUS_IGNORE, ierr)
  end if
  print '(a,i0,a,i0)', 'rank ', rank, ': ', buf(1)
  call MPI_FINALIZE(ierr)
end program f_modern

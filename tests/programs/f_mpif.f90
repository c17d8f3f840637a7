! Fortran census through mpif.h: a known number of calls with known bytes per rank.
! Run on 4 ranks. Per rank: MPI_Send 3, MPI_Recv 3 (ring, 100 integers = 400 bytes,
! tag 7), MPI_Isend 2 and MPI_Irecv 2 (25 doubles = 200 bytes to and from both
! neighbours, tag 21), MPI_Waitall 1, MPI_Bcast 1 (256 doubles = 2048 bytes from root 0),
! MPI_Allreduce 2 (10 integers = 40 bytes; the second with MPI_IN_PLACE), MPI_Alltoall 1
! (8 integers = 32 bytes per rank), MPI_Barrier 1. Prints one deterministic line per rank.
program f_mpif
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, left, right, it, i
  integer :: sbuf(100), rbuf(100), v(10), w(10), reqs(4)
  integer, allocatable :: as(:), ar(:)
  double precision :: hs(25), hr(25, 2), bc(256)
  integer(kind=8) :: total

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs /= 4) call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  total = 0

  do it = 1, 3
    sbuf = rank * 1000 + it
    if (mod(rank, 2) == 0) then
      call MPI_Send(sbuf, 100, MPI_INTEGER, right, 7, MPI_COMM_WORLD, ierr)
      call MPI_Recv(rbuf, 100, MPI_INTEGER, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Recv(rbuf, 100, MPI_INTEGER, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Send(sbuf, 100, MPI_INTEGER, right, 7, MPI_COMM_WORLD, ierr)
    end if
    total = total + sum(rbuf)
  end do

  hs = dble(rank)
  call MPI_Irecv(hr(1, 1), 25, MPI_DOUBLE_PRECISION, left, 21, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Irecv(hr(1, 2), 25, MPI_DOUBLE_PRECISION, right, 21, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Isend(hs, 25, MPI_DOUBLE_PRECISION, right, 21, MPI_COMM_WORLD, reqs(3), ierr)
  call MPI_Isend(hs, 25, MPI_DOUBLE_PRECISION, left, 21, MPI_COMM_WORLD, reqs(4), ierr)
  call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE, ierr)
  total = total + int(sum(hr), 8)

  if (rank == 0) then
    do i = 1, 256
      bc(i) = dble(i)
    end do
  end if
  call MPI_Bcast(bc, 256, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  total = total + int(sum(bc), 8)

  v = rank + 1
  call MPI_Allreduce(v, w, 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(MPI_IN_PLACE, v, 10, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  total = total + sum(w) + sum(v)

  allocate(as(8 * nprocs), ar(8 * nprocs))
  do i = 1, 8 * nprocs
    as(i) = rank * 100 + i
  end do
  call MPI_Alltoall(as, 8, MPI_INTEGER, ar, 8, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  total = total + sum(ar)

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  print '(a, i0, a, i0)', 'rank ', rank, ' total ', total
  call MPI_Finalize(ierr)
end program f_mpif

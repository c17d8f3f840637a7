//! `pmpi-predict calibrate`: measures the network under MPI (`bench`, over the PMPI
//! wrappers of `mpi`), reads the library's eager limits (`eager`, through MPI_T), fits
//! every model's parameters (`fit`, pure) and writes the profile (`run`); with
//! `--clusters`, measures the wide-area link between two clusters instead (`backbone`).

pub mod backbone;
pub mod bench;
pub mod eager;
pub mod fit;
pub mod hostcpu;
pub mod mpi;
pub mod run;
pub mod tcp;

pub use run::{Options, run};

//! `pmpi-predict calibrate`: measures the network under MPI (`bench`), fits every model's
//! parameters (`fit`, pure) and assembles the profile (`run`).

pub mod bench;
pub mod fit;

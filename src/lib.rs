//! pmpi-predict's preload layer: the `MPI_*`/`PMPI_*` interposers generated from
//! `wrappers/`, the per-thread recording rings and the spools. Loaded with `LD_PRELOAD`
//! into unmodified MPI programs; at MPI_Finalize rank 0 makes one call into the core
//! (`pmpi_core::report::write_report`). See docs/architecture.md.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod interpose;
mod record;

// The core modules the layer uses, under their own names.
use pmpi_core::{config, report, topo, trace};

//! The `pmpi-predict` command-line tool: `calibrate` (MPI benchmarks that fit the
//! models' parameters), `analyze`, `replay`, `watch`, `model`, `profile` and `run`. It
//! links MPI for `calibrate` but never the layer. See docs/architecture.md.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod calibrate;
pub mod cli;

// The core modules the commands use, under their own names.
use pmpi_core::{error, model, predict, profile, replay, report, topo, trace};

//! pmpi-predict: a PMPI interposition layer that records MPI calls, and the pure
//! models, graph and prediction engine that turn those records into predictions.
//!
//! Only `interpose` and `record` touch MPI; everything else is pure and tested
//! without it.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod calibrate;
pub mod cli;
pub mod config;
pub mod graph;
pub mod interpose;
pub mod model;
pub mod predict;
pub mod profile;
pub mod record;
pub mod replay;
pub mod report;
pub mod topo;
pub mod trace;
pub mod wrapspec;

//! Interconnect, penalty and collective models (pure; no MPI).
//!
//! One model per file. Point-to-point models give the contention-free time of one message
//! ([`PointToPoint`]); penalty models give, for a graph of concurrent inter-node messages,
//! how much slower each one goes ([`PenaltyModel`]); collective models (`alltoall`, `bcast`,
//! `scatter`, `grid`) give the time of whole operations. `reference` holds slow, obviously
//! correct versions used as test oracles.
#![forbid(unsafe_code)]

use std::fmt;

pub mod alltoall;
pub mod bcast;
pub mod gige;
pub mod graph;
pub mod grid;
pub mod hockney;
pub mod infiniband;
pub mod lom;
pub mod maxmin;
pub mod myrinet;
pub mod penalty;
pub mod plogp;
pub mod reference;
pub mod scatter;
pub mod tree;

pub use gige::GigabitEthernet;
pub use graph::{CommGraph, Edge};
pub use hockney::Hockney;
pub use infiniband::InfiniBand;
pub use lom::Lom;
pub use maxmin::MaxMinFair;
pub use myrinet::Myrinet;
pub use penalty::{ModelName, PenaltyModel, penalty_model_by_name};
pub use plogp::{PLogP, PiecewiseLinear};

/// Contention-free time of one point-to-point message (the paper's T_ref(m)).
///
/// Contract: `time(src, dst, bytes)` is in seconds, finite and ≥ 0 for any input once the
/// model has been built (constructors validate their parameters). Homogeneous models ignore
/// `src` and `dst`; heterogeneous ones document what they do with nodes they do not know.
pub trait PointToPoint: Send + Sync {
    /// Short model name, as used in profiles ("hockney", "plogp", "lom").
    fn name(&self) -> &str;
    /// Seconds for `bytes` bytes from node `src` to node `dst`, without contention.
    fn time(&self, src: u32, dst: u32, bytes: u64) -> f64;
}

/// Why a model could not be built or evaluated.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelError {
    /// A parameter is negative, NaN, infinite or outside its documented range.
    BadParam {
        name: String,
        value: f64,
        why: &'static str,
    },
    /// A calibration table is empty, unsorted or holds bad values.
    BadTable { name: String, why: String },
    /// A graph arc goes from a node to itself.
    SelfLoop { index: usize, node: u32 },
    /// Collective models need at least two processes.
    TooFewProcs { procs: u64 },
    /// More processes than [`MAX_PROCS`].
    TooManyProcs { procs: u64 },
    /// An unknown model name.
    UnknownModel { name: String, known: &'static str },
    /// A parameter the model does not have.
    UnknownParam {
        model: String,
        name: String,
        known: &'static str,
    },
    /// An unknown strategy name for a collective operation.
    UnknownStrategy {
        op: &'static str,
        name: String,
        known: String,
    },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::BadParam { name, value, why } => {
                write!(f, "parameter {name} = {value}: {why}")
            }
            ModelError::BadTable { name, why } => write!(f, "table {name}: {why}"),
            ModelError::SelfLoop { index, node } => {
                write!(f, "arc #{index} goes from node {node} to itself")
            }
            ModelError::TooFewProcs { procs } => {
                write!(f, "{procs} processes: a collective needs at least 2")
            }
            ModelError::TooManyProcs { procs } => {
                write!(f, "{procs} processes: more than the supported {MAX_PROCS}")
            }
            ModelError::UnknownModel { name, known } => {
                write!(f, "unknown model '{name}' (known: {known})")
            }
            ModelError::UnknownParam { model, name, known } => {
                write!(
                    f,
                    "model {model} has no parameter '{name}' (known: {known})"
                )
            }
            ModelError::UnknownStrategy { op, name, known } => {
                write!(f, "unknown {op} strategy '{name}' (known: {known})")
            }
        }
    }
}

impl std::error::Error for ModelError {}

/// Checks that a parameter is finite and ≥ 0.
pub fn non_negative(name: &str, value: f64) -> Result<f64, ModelError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(ModelError::BadParam {
            name: name.to_string(),
            value,
            why: "must be finite and >= 0",
        })
    }
}

/// Checks that a parameter is finite and > 0.
pub(crate) fn positive(name: &str, value: f64) -> Result<f64, ModelError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ModelError::BadParam {
            name: name.to_string(),
            value,
            why: "must be finite and > 0",
        })
    }
}

/// Largest process count the collective models accept (some sum over processes).
pub const MAX_PROCS: u64 = 1 << 24;

/// Rejects fewer than two or more than [`MAX_PROCS`] processes.
pub(crate) fn check_procs(procs: u64) -> Result<(), ModelError> {
    if procs < 2 {
        Err(ModelError::TooFewProcs { procs })
    } else if procs > MAX_PROCS {
        Err(ModelError::TooManyProcs { procs })
    } else {
        Ok(())
    }
}

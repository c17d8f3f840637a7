//! `pmpi-predict calibrate -o PROFILE.json`: run under an MPI launcher
//! (`mpirun -np N pmpi-predict calibrate ...`), it measures the network and writes a
//! profile. Arguments are checked before MPI starts, so bad input exits with status 2 on
//! every rank without touching the network.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use clap::Args;

use super::CliError;
use crate::calibrate::{self, Options};

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Where to write the profile (JSON, docs/profile.md).
    #[arg(short, long, value_name = "PROFILE.json")]
    output: PathBuf,
    /// Fewer sizes and repetitions, no LOM phase (aims at < 20 s on 100 Mbit/s).
    #[arg(long)]
    quick: bool,
    /// Wall-time budget in seconds (default 60, 20 with --quick): optional phases that
    /// would overrun it are skipped, essential ones drop to one repetition.
    #[arg(long, value_name = "SECONDS")]
    budget: Option<f64>,
    /// Message size of the penalty schemes in bytes (default: a lone message takes
    /// ~80 ms on the measured link, between 256 KiB and 20 MB).
    #[arg(long, value_name = "BYTES")]
    penalty_bytes: Option<usize>,
    /// Measure the wide-area link between the two clusters FILE names instead
    /// (`{"clusters": {"A": [nodes], "B": [nodes]}}`, every node of the job in one): its
    /// alpha and beta and how messages crossing it at once slow each other. Writes FILE's
    /// content with its `wan` section to -o, for `replay --clusters` (docs/whatif.md).
    #[arg(long, value_name = "FILE")]
    clusters: Option<PathBuf>,
}

fn options(a: CalibrateArgs) -> Result<Options, CliError> {
    let budget = a.budget.unwrap_or(if a.quick { 20.0 } else { 60.0 });
    if !(budget.is_finite() && budget > 0.0) {
        return Err(CliError::input(format!(
            "--budget must be a positive number of seconds (got {budget})"
        )));
    }
    if let Some(b) = a.penalty_bytes
        && !(1024..=i32::MAX as usize).contains(&b)
    {
        return Err(CliError::input(format!(
            "--penalty-bytes must be between 1024 and {} (got {b})",
            i32::MAX
        )));
    }
    if let Some(c) = &a.clusters
        && !c.is_file()
    {
        return Err(CliError::input(format!(
            "--clusters {}: no such file",
            c.display()
        )));
    }
    if a.output.as_os_str().is_empty() || a.output.is_dir() {
        return Err(CliError::input(format!(
            "-o {}: give a file name for the profile",
            a.output.display()
        )));
    }
    let parent = a
        .output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if !parent.is_dir() {
        return Err(CliError::input(format!(
            "-o {}: directory {} does not exist",
            a.output.display(),
            parent.display()
        )));
    }
    let node = std::env::var("PMPI_PREDICT_NODE")
        .ok()
        .filter(|s| !s.is_empty());
    Ok(Options {
        output: a.output,
        quick: a.quick,
        budget_s: budget,
        penalty_bytes: a.penalty_bytes,
        node,
        clusters: a.clusters,
    })
}

/// Checks the arguments, then calibrates. Returns the exit status.
pub fn run(a: CalibrateArgs) -> i32 {
    match options(a) {
        Ok(o) => calibrate::run(&o),
        Err(e) => e.report(),
    }
}

//! `pmpi-predict analyze DIR`: rebuilds a run's report from its spool files, without MPI,
//! also for a run that never reached MPI_Finalize (then marked incomplete).

use super::{CliError, exit_status};
use std::path::PathBuf;

/// Arguments of `analyze`.
#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// Output directory of a run (holds rank-NNNNN.json and rank-NNNNN.spool).
    pub dir: PathBuf,
    /// Calibration profile (default: the built-in profile).
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// Penalty model overriding the profile's: gige, myrinet, infiniband, maxmin, none.
    #[arg(long)]
    pub model: Option<String>,
    /// Broadcast strategy to assume for every MPI_Bcast instead of Open MPI's decision
    /// (flat, flat-rendezvous, segmented-flat, chain, chain-rendezvous, segmented-chain,
    /// binary, binomial, binomial-rendezvous, segmented-binomial).
    #[arg(long)]
    pub bcast: Option<String>,
    /// Scatter strategy to assume (flat, chain, binomial).
    #[arg(long)]
    pub scatter: Option<String>,
    /// Do not print the hotspot ranking.
    #[arg(long)]
    pub quiet: bool,
}

/// Runs `analyze`.
pub fn run(a: AnalyzeArgs) -> i32 {
    exit_status(analyze(&a))
}

fn analyze(a: &AnalyzeArgs) -> Result<(), CliError> {
    if !a.dir.is_dir() {
        return Err(CliError::input(format!(
            "{} is not a directory",
            a.dir.display()
        )));
    }
    let opts = crate::report::ReportOptions {
        profile: a.profile.clone(),
        model: a.model.clone(),
        bcast: a.bcast.clone(),
        scatter: a.scatter.clone(),
        strict: true,
        print_hotspots: !a.quiet,
    };
    let s = crate::report::write_report_with(&a.dir, &opts).map_err(CliError::input)?;
    println!(
        "{} records from {} ranks{}; wrote {}, {} and {}",
        s.records,
        s.ranks,
        if s.complete {
            ""
        } else {
            " (INCOMPLETE run: not every rank reached MPI_Finalize)"
        },
        a.dir.join("calls.csv").display(),
        a.dir.join("summary.json").display(),
        a.dir.join("hotspots.json").display()
    );
    Ok(())
}

//! `pmpi-predict analyze DIR`: rebuilds a run's report from its spool files, without MPI,
//! also for a run that never reached MPI_Finalize (then marked incomplete).

use super::{CliError, exit_status};
use std::path::PathBuf;

/// Arguments of `analyze`.
#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// Output directory of a run (holds rank-NNNNN.json and rank-NNNNN.spool).
    pub dir: PathBuf,
    #[command(flatten)]
    pub engine: super::EngineArgs,
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
    let opts = a.engine.options(!a.quiet);
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

//! `pmpi-predict analyze DIR`: rebuilds a run's report from its spool files, without MPI,
//! also for a run that never reached MPI_Finalize (then marked incomplete).

use super::{CliError, exit_status};
use std::path::PathBuf;

/// Arguments of `analyze`.
#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// Output directory of a run (holds rank-NNNNN.json and rank-NNNNN.spool). Further
    /// directories (the spools of a run on node-local disks, copied from each node) are
    /// merged into the first, where the report is written.
    pub dir: PathBuf,
    pub more: Vec<PathBuf>,
    #[command(flatten)]
    pub engine: super::EngineArgs,
    /// Do not print the hotspot ranking.
    #[arg(long)]
    pub quiet: bool,
    /// Predict the run as it is read: memory bounded by the messages in flight, not the
    /// run's length, the same five files (the predictions are sorted on disk in the run's
    /// directory meanwhile: about 70 bytes a record). Taken anyway above
    /// PMPI_PREDICT_BATCH_MAX_MB (16) of spools, as at MPI_Finalize.
    #[arg(long)]
    pub stream: bool,
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
    if !a.more.is_empty() {
        let from: Vec<&std::path::Path> = a.more.iter().map(PathBuf::as_path).collect();
        let got = crate::trace::merge_dirs(&a.dir, &from)?;
        eprintln!(
            "pmpi-predict: merged {} ranks into {}",
            got.len(),
            a.dir.display()
        );
    }
    // Said before the report, so that a run some ranks never joined is not mistaken
    // for a complete one.
    let missing = crate::trace::missing_ranks(&a.dir)?;
    for line in missing_lines(&missing) {
        eprintln!("pmpi-predict: {line}");
    }
    let opts = a.engine.options_for(&a.dir, !a.quiet);
    // The rule of MPI_Finalize and `replay`: a run too large to load whole is read.
    if a.stream || crate::report::too_large_to_load(&a.dir) {
        let s = crate::report::stream::write_report_streamed(&a.dir, &opts)?;
        println!(
            "{} records from {} ranks{}; wrote calls.csv, summary.json, hotspots.json, report.html and trace.json in {} (predicted as the run was read)",
            s.records,
            s.ranks,
            incomplete(s.complete),
            a.dir.display()
        );
        for n in s.stats.notes() {
            eprintln!("pmpi-predict: note: {n}");
        }
        return Ok(());
    }
    let s = crate::report::write_report_with(&a.dir, &opts)?;
    println!(
        "{} records from {} ranks{}; wrote calls.csv, summary.json, hotspots.json, report.html and trace.json in {}",
        s.records,
        s.ranks,
        incomplete(s.complete),
        a.dir.display()
    );
    for n in s.notes() {
        eprintln!("pmpi-predict: note: {n}");
    }
    Ok(())
}

/// What the summary line says of a run not every rank finished.
fn incomplete(complete: bool) -> &'static str {
    if complete {
        ""
    } else {
        " (INCOMPLETE run: not every rank reached MPI_Finalize)"
    }
}

/// Ranks as a list: `2, 3`.
fn list(r: &[i32]) -> String {
    r.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
}

/// One line per kind of missing rank files, naming the ranks.
fn missing_lines(m: &crate::trace::MissingRanks) -> Vec<String> {
    let mut out = Vec::new();
    if !m.no_meta.is_empty() {
        out.push(format!(
            "{} of {} ranks left no files (rank {}): their calls are missing from the report; a rank whose MPI_Init the layer did not see records nothing (see \"What is and is not recorded\" in LD_PRELOAD.md), and a rank on another node may have written to a directory not gathered here",
            m.no_meta.len(),
            m.world_size,
            list(&m.no_meta)
        ));
    }
    if !m.no_spool.is_empty() {
        out.push(format!(
            "rank {} left metadata but no spool file: its calls are missing from the report",
            list(&m.no_spool)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::MissingRanks;

    #[test]
    fn missing_ranks_are_named() {
        let m = MissingRanks {
            world_size: 4,
            no_meta: vec![2, 3],
            no_spool: vec![1],
        };
        let l = missing_lines(&m);
        assert_eq!(l.len(), 2);
        assert!(
            l[0].starts_with("2 of 4 ranks left no files (rank 2, 3):"),
            "{}",
            l[0]
        );
        assert_eq!(
            l[1],
            "rank 1 left metadata but no spool file: its calls are missing from the report"
        );
        assert!(missing_lines(&MissingRanks::default()).is_empty());
    }
}

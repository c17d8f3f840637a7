//! `pmpi-predict accuracy DIR`: measured against predicted per group of like calls, with
//! the contention-free baseline beside it.

use super::{CliError, exit_status};
use crate::report::accuracy;
use std::path::PathBuf;

/// Arguments of `accuracy`.
#[derive(clap::Args, Debug)]
pub struct AccuracyArgs {
    /// Output directory of a run.
    pub dir: PathBuf,
    #[command(flatten)]
    pub engine: super::EngineArgs,
    /// Only these calls (comma-separated MPI names, e.g. MPI_Alltoall,MPI_Isend).
    #[arg(long, value_delimiter = ',')]
    pub calls: Vec<String>,
    /// Group point-to-point calls by size class (<1 KiB, <64 KiB, <1 MiB, larger) instead
    /// of by exact size and tag: for applications with many message sizes.
    #[arg(long)]
    pub size_classes: bool,
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `accuracy`.
pub fn run(a: AccuracyArgs) -> i32 {
    exit_status(accuracy_cmd(&a))
}

fn accuracy_cmd(a: &AccuracyArgs) -> Result<(), CliError> {
    if !a.dir.is_dir() {
        return Err(CliError::input(format!(
            "{} is not a directory",
            a.dir.display()
        )));
    }
    for c in &a.calls {
        if crate::trace::call_id(c).is_none() {
            return Err(CliError::input(format!(
                "--calls: unknown call {c:?} (e.g. MPI_Alltoall)"
            )));
        }
    }
    let opts = a.engine.options_for(&a.dir, false);
    let (profile, model, _) = opts.resolve()?;
    let run = crate::trace::load_run(&a.dir)?;
    let assume = opts.assumptions()?;
    let pred = crate::predict::predict_run_with(&run, &profile, model.as_deref(), &assume)
        .map_err(CliError::input)?;
    let (groups, fam) = accuracy::groups(&run, &pred, &a.calls, a.size_classes);
    let whole = accuracy::run_accuracy(&run, &pred);
    let held = accuracy::tcp_held_calls(&run, &pred);
    if a.json {
        let v = serde_json::json!({"model": pred.model, "groups": groups, "family": fam, "run": whole,
                "cpu_sharing": crate::report::cpu_sharing(&run),
                "network": crate::report::network(&run),
                "tcp_timeout_calls": held});
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| CliError::internal(e.to_string()))?
        );
    } else {
        print!("{}", accuracy::table(&groups, &fam));
        print!("{}", accuracy::run_text(&whole));
        for c in crate::report::cpu_sharing(&run) {
            println!("note: {}", c.text());
        }
        for n in crate::topo::placement::Placement::from_run(&run).launch_notes(&profile) {
            println!("note: {n}");
        }
        if let Some(t) = crate::trace::netstat::timeouts_note(&crate::report::network(&run)) {
            println!("note: {t}");
            println!(
                "note: blocking calls a timeout may have held (calls.csv's tcp_timeout): {}, measured {:.3} s, predicted {:.3} s",
                held.calls, held.measured_s, held.predicted_s
            );
        }
    }
    Ok(())
}

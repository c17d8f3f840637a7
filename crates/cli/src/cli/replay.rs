//! `pmpi-predict replay DIR`: replays a recorded run under other conditions (placement,
//! network model or profile, two clusters) and compares it with the recorded run.

use super::{CliError, exit_status};
use crate::predict::{self, AlltoallAlgo, Conditions};
use crate::replay::whatif::{self, PlacementSpec};
use crate::report::whatif as report;
use crate::topo::placement::Placement;
use serde_json::json;
use std::path::PathBuf;

/// Arguments of `replay`.
#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// Output directory of a recorded run (holds rank-NNNNN.json and rank-NNNNN.spool).
    pub dir: PathBuf,
    #[command(flatten)]
    pub engine: super::EngineArgs,
    /// Placement of the ranks: rrn (round-robin by node), rrp (by processor: fill each
    /// node in turn), random[:SEED], or a file of `RANK NODE` lines. Default: as recorded,
    /// or rrp when --nodes or --cores-per-node is given.
    #[arg(long)]
    pub placement: Option<PlacementSpec>,
    /// Number of nodes for rrn, rrp and random (default: as recorded).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// Slots per node (default: ranks / nodes, rounded up).
    #[arg(long)]
    pub cores_per_node: Option<usize>,
    /// Two clusters joined by a wide-area link: JSON
    /// `{"clusters": {"A": ["node0", ...], "B": [...]}, "wan": {"alpha": S, "beta": S_PER_BYTE}}`.
    #[arg(long)]
    pub clusters: Option<PathBuf>,
    /// All-to-all across the clusters: direct (Eq. 6) or local-group (Eq. 7).
    #[arg(long, default_value = "direct")]
    pub alltoall: AlltoallAlgo,
    /// Where to write replay.json (a directory, created; default DIR/replay).
    #[arg(short = 'o', long)]
    pub out: Option<PathBuf>,
    /// Print only where the report is.
    #[arg(long)]
    pub quiet: bool,
    /// Replay the run as it is read: memory bounded by the messages in flight, not the
    /// run's length, the same replay.json and views (temporary disk in the output
    /// directory: about 70 bytes a record per replay). Taken anyway above
    /// PMPI_PREDICT_BATCH_MAX_MB (16) of spools.
    #[arg(long)]
    pub stream: bool,
}

/// Runs `replay`.
pub fn run(a: ReplayArgs) -> i32 {
    exit_status(replay(&a))
}

/// The placement the replay uses, and a description for the report.
fn placement(
    a: &ReplayArgs,
    run: &crate::trace::RunTrace,
) -> Result<(Placement, String), CliError> {
    let recorded = Placement::from_run(run);
    let world = recorded.node_of_rank.len();
    let spec = match (&a.placement, a.nodes.or(a.cores_per_node)) {
        (Some(s), _) => s.clone(),
        (None, Some(_)) => PlacementSpec::Rrp,
        (None, None) => {
            let d = format!("as recorded ({} nodes)", recorded.nodes());
            return Ok((recorded, d));
        }
    };
    let (nodes, cores) = match &spec {
        // A file names its nodes; only explicit limits are checked.
        PlacementSpec::File(_) => (
            a.nodes.unwrap_or(usize::MAX),
            a.cores_per_node.unwrap_or(usize::MAX),
        ),
        _ => {
            let nodes = a.nodes.unwrap_or(recorded.nodes().max(1));
            let cores = a
                .cores_per_node
                .unwrap_or(world.div_ceil(nodes.max(1)).max(1));
            (nodes, cores)
        }
    };
    let p = whatif::place(&spec, world, nodes, cores)?;
    let d = match spec {
        PlacementSpec::File(_) => format!("{spec} ({} nodes)", p.nodes()),
        _ => format!("{spec} ({nodes} nodes x {cores} cores)"),
    };
    Ok((p, d))
}

fn replay(a: &ReplayArgs) -> Result<(), CliError> {
    if !a.dir.is_dir() {
        return Err(CliError::input(format!(
            "{} is not a directory",
            a.dir.display()
        )));
    }
    // The new run's views would replace the recorded run's own summary.json,
    // hotspots.json and report.html.
    if let Some(o) = &a.out
        && let (Ok(o), Ok(d)) = (o.canonicalize(), a.dir.canonicalize())
        && o == d
    {
        return Err(CliError::input(format!(
            "-o {}: that is the recorded run's directory, whose report the replay's would replace; choose another (default: {})",
            a.dir.display(),
            a.dir.join("replay").display()
        )));
    }
    let opts = a.engine.options_for(&a.dir, false);
    let (profile, model, source) = opts.resolve()?;
    let assume = opts.assumptions()?;
    // The rule of `analyze` at MPI_Finalize: above this many bytes of spools, the run is
    // replayed as it is read.
    let stream = a.stream || crate::report::too_large_to_load(&a.dir);
    // Loaded whole for the batch path; the ranks' metadata alone for the streamed one.
    let run = if stream {
        crate::trace::load_shell(&a.dir)?
    } else {
        crate::trace::load_run(&a.dir)?
    };
    if run.ranks.is_empty() {
        return Err(CliError::input(format!(
            "{}: no recorded ranks (rank-*.json)",
            a.dir.display()
        )));
    }
    let (pl, pl_text) = placement(a, &run)?;
    let clusters = match &a.clusters {
        Some(f) => Some(whatif::load_clusters(f, &pl)?),
        None => None,
    };
    let cond = Conditions {
        placement: pl,
        clusters,
        alltoall: a.alltoall,
    };
    let model_name = predict::model_name(
        predict::penalty_model(&profile, model.as_deref())
            .map_err(CliError::input)?
            .as_deref(),
    );
    let conditions = json!({
        "placement": pl_text,
        "node_of_rank": cond.placement.node_of_rank.iter()
            .map(|&n| cond.placement.names[n as usize].clone()).collect::<Vec<_>>(),
        "model": model_name,
        "profile": source,
        "clusters": cond.clusters.as_ref().map(|c| json!({
            "names": c.names,
            "cluster_of_node": c.cluster_of_node,
            "wan": {"alpha": c.wan.alpha, "beta": c.wan.beta},
        })),
        "alltoall": a.alltoall.to_string(),
    });
    let out = a.out.clone().unwrap_or_else(|| a.dir.join("replay"));
    std::fs::create_dir_all(&out)
        .map_err(|e| CliError::io(format!("cannot create {}: {e}", out.display())))?;
    // The views of the replayed run (its placement, its predictions) are written into
    // `out` on either path; no trace.json: the recorded run's own is beside its calls.csv.
    let w = if stream {
        crate::report::stream::replay_streamed(
            &a.dir,
            &out,
            &profile,
            model.as_deref(),
            &source,
            &assume,
            &cond,
            conditions,
        )?
        .whatif
    } else {
        let recorded = predict::predict_run_with(&run, &profile, model.as_deref(), &assume)
            .map_err(CliError::input)?;
        let what = predict::predict_run_under(&run, &profile, model.as_deref(), &assume, &cond)
            .map_err(CliError::input)?;
        let figs = crate::report::callagg::CallAggregates::of_run(&run, &what.calls);
        let w = report::build(&run, &recorded, &what, &figs, conditions);
        let summary =
            crate::report::write_summary_hotspots(&out, &run, &what, &figs, &w.hotspots, &source)?;
        crate::report::html::write_views(
            &out,
            &run,
            &what,
            &figs,
            &summary,
            &w.hotspots,
            &source,
            0,
        );
        w
    };
    let path = out.join("replay.json");
    let text = serde_json::to_string_pretty(&w).map_err(|e| CliError::internal(e.to_string()))?;
    std::fs::write(&path, text + "\n")
        .map_err(|e| CliError::io(format!("cannot write {}: {e}", path.display())))?;
    let mut label = format!("placement {pl_text}, model {model_name}");
    if let Some(c) = &cond.clusters {
        label += &format!(
            ", {} clusters (wan α {:.3} ms, {:.1} MB/s), all-to-all {}",
            c.names.len(),
            c.wan.alpha * 1e3,
            if c.wan.beta > 0.0 {
                1e-6 / c.wan.beta
            } else {
                f64::INFINITY
            },
            a.alltoall
        );
    }
    if !a.quiet {
        print!("{}", report::text(&w, &label));
    }
    println!(
        "wrote {} and {}{}",
        path.display(),
        out.join("report.html").display(),
        if stream {
            " (replayed as the run was read)"
        } else {
            ""
        }
    );
    Ok(())
}

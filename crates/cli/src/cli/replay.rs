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
    /// CPUs of each node: where a node's ranks outnumber them, a rank whose call could end
    /// waits for one (docs/engine.md, "Ranks that share CPUs"). Default: the machines the
    /// run was recorded on (an emulated cluster's hosts share one machine's CPUs).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub cpus_per_node: Option<u32>,
    /// Two clusters joined by a wide-area link: JSON
    /// `{"clusters": {"A": ["node0", ...], "B": [...]}, "wan": {"alpha": S, "beta": S_PER_BYTE}}`.
    #[arg(long)]
    pub clusters: Option<PathBuf>,
    /// All-to-all across the clusters: direct (Eq. 6) or local-group (Eq. 7).
    #[arg(long, default_value = "direct")]
    pub alltoall: AlltoallAlgo,
    /// The ranks' compute between MPI calls: a factor on every recorded compute gap (`1`,
    /// the default: as recorded; `0.5`: processors twice as fast), or `auto` (as recorded,
    /// less the CPU time the hosts' interrupts took from it on the recorded network, plus
    /// what they would take on the replayed one: needs both profiles' measured interrupt
    /// cost). `auto` is no longer the default: on the emulated cluster it carried the
    /// interrupts' share to 2-6 times what the runs on the new network measured
    /// (docs/accuracy.md, twenty-fourth session).
    #[arg(long, default_value = "1", value_parser = parse_compute)]
    pub compute: Compute,
    /// Who runs the MPI library's progress engine: `library` (as recorded: Open MPI over
    /// TCP moves an inter-node rendezvous message only while both ranks are in a blocking
    /// call or a completion) or `async` (a progress thread: the message moves as soon as
    /// both sides are posted, overlapping the computation).
    #[arg(long, default_value = "library")]
    pub progress: crate::predict::ProgressMode,
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

/// What `--compute` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Compute {
    Auto,
    Factor(f64),
}

fn parse_compute(s: &str) -> Result<Compute, String> {
    if s == "auto" {
        return Ok(Compute::Auto);
    }
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(Compute::Factor(x)),
        _ => Err(format!(
            "{s:?}: `auto` or a positive factor on the recorded compute (0.5: twice as fast)"
        )),
    }
}

/// The recording's profile's interrupt cost per byte: the profile its layer named (the
/// replay's own where it is the same file).
fn recorded_cost(
    run: &crate::trace::RunTrace,
    target: &crate::profile::Profile,
    source: &str,
) -> Option<f64> {
    let path = run.ranks.iter().find_map(|r| r.meta.profile.clone())?;
    let same = match (std::fs::canonicalize(&path), std::fs::canonicalize(source)) {
        (Ok(a), Ok(b)) => a == b,
        _ => path == source,
    };
    let host = if same {
        target.host
    } else {
        crate::profile::Profile::load(&path).ok()?.host
    };
    host.map(|h| h.irq_s_per_byte)
}

/// Bytes sent between nodes (as recorded, under the new conditions) and makespans
/// (measured, predicted with the compute as recorded): what `--compute auto` scales by.
type Figures = ((f64, f64), (f64, f64));

/// The recorded run and the network it is replayed on.
struct Inputs<'a> {
    dir: &'a std::path::Path,
    run: &'a crate::trace::RunTrace,
    profile: &'a crate::profile::Profile,
    model: Option<&'a str>,
    assume: &'a predict::Assumptions,
}

impl Inputs<'_> {
    /// The replay under the recorded conditions (the run loaded whole).
    fn recorded(&self) -> Result<predict::RunPrediction, CliError> {
        predict::predict_run_with(self.run, self.profile, self.model, self.assume)
            .map_err(CliError::input)
    }

    /// The replay under `cond` (the run loaded whole).
    fn under(&self, cond: &Conditions) -> Result<predict::RunPrediction, CliError> {
        predict::predict_run_under(self.run, self.profile, self.model, self.assume, cond)
            .map_err(CliError::input)
    }

    /// What `--compute auto` needs of a run replayed as it is read: the bytes sent between
    /// nodes as recorded and under `cond`, the measured makespan and `cond`'s.
    fn streamed_figures(&self, cond: &Conditions) -> Result<Figures, CliError> {
        use predict::stream::{InterNodeBytes, predict_stream_under, predict_stream_with};
        let mut src = InterNodeBytes::default();
        predict_stream_with(
            self.dir,
            self.profile,
            self.model,
            self.assume,
            &mut |_, _, _, _| {},
            Some(&mut src),
        )?;
        let mut tgt = InterNodeBytes::default();
        let st = predict_stream_under(
            self.dir,
            self.profile,
            self.model,
            self.assume,
            cond,
            &mut |_, _, _, _| {},
            Some(&mut tgt),
        )?;
        Ok((
            (src.0 as f64, tgt.0 as f64),
            (st.makespan_measured, st.makespan),
        ))
    }
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
    for n in pl.launch_notes(&profile) {
        eprintln!("pmpi-predict: note: {n}");
    }
    let clusters = match &a.clusters {
        Some(f) => Some(whatif::load_clusters(f, &pl)?),
        None => None,
    };
    let mut cond = Conditions {
        placement: pl,
        clusters,
        alltoall: a.alltoall,
        compute_scale: 1.0,
        progress: a.progress,
        cpus_per_node: a.cpus_per_node,
    };
    let inputs = Inputs {
        dir: &a.dir,
        run: &run,
        profile: &profile,
        model: model.as_deref(),
        assume: &assume,
    };
    // The batch path's two replays with the compute as recorded, made here when `auto`
    // needs their bytes and makespan (and kept where the compute stays as recorded).
    let mut batch = None;
    let share = match a.compute {
        Compute::Factor(x) => {
            cond.compute_scale = x;
            None
        }
        Compute::Auto => {
            let metas: Vec<&crate::trace::RankMeta> = run.ranks.iter().map(|r| &r.meta).collect();
            let costs = (
                recorded_cost(&run, &profile, &source),
                profile.host.map(|h| h.irq_s_per_byte),
            );
            let figures = if costs.0.is_none() || costs.1.is_none() {
                ((1.0, 1.0), (1.0, 1.0))
            } else if stream {
                inputs.streamed_figures(&cond)?
            } else {
                let (recorded, what) = (inputs.recorded()?, inputs.under(&cond)?);
                let f = (
                    (recorded.inter_node_bytes(), what.inter_node_bytes()),
                    (what.makespan_measured, what.makespan),
                );
                batch = Some((recorded, what));
                f
            };
            match predict::host_share_of(&metas, costs.0, costs.1, figures.0, figures.1) {
                Ok(h) => {
                    if (h.scale - 1.0).abs() > 1e-3 {
                        cond.compute_scale = h.scale;
                        // The what-if replay again, with the compute scaled.
                        if let Some(b) = &mut batch {
                            b.1 = inputs.under(&cond)?;
                        }
                    }
                    Some(h)
                }
                Err(note) => {
                    if let Some(n) = note {
                        eprintln!("pmpi-predict: note: {n}");
                    }
                    None
                }
            }
        }
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
        "progress": a.progress.to_string(),
        "cpus_per_node": a.cpus_per_node,
        "compute": {
            "scale": cond.compute_scale,
            "recorded_irq_share": share.map(|h| h.recorded),
            "predicted_irq_share": share.map(|h| h.predicted),
        },
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
        let (recorded, what) = match batch.take() {
            Some(b) => b,
            None => (inputs.recorded()?, inputs.under(&cond)?),
        };
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
    if (cond.compute_scale - 1.0).abs() > 1e-3 {
        label += &format!(", compute x {:.3}", cond.compute_scale);
        if let Some(h) = share {
            label += &format!(
                " (the hosts' interrupts: {:.1} % of their CPU recorded, {:.1} % predicted)",
                h.recorded * 100.0,
                h.predicted * 100.0
            );
        }
    }
    if cond.progress != crate::predict::ProgressMode::Library {
        label += &format!(", progress {}", cond.progress);
    }
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

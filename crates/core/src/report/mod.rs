//! Reports of a run: `calls.csv` (one row per recorded call, measured vs predicted),
//! `summary.json` (per-call statistics, prediction errors, time lost to contention),
//! `hotspots.json`, and the views `report.html` and `trace.json` (docs/reports.md). The
//! same code runs at MPI_Finalize on rank 0 and in `pmpi-predict analyze`.

pub mod accuracy;
pub mod callagg;
pub mod chrome_trace;
pub mod hotspots;
pub mod html;
pub mod live;
pub mod netagg;
pub mod number;
pub mod stream;
pub mod whatif;

use crate::error::Error;
use crate::predict::{self, CallPrediction, RunPrediction};
use crate::profile::Profile;
use crate::trace::{self, FLAG_NONBLOCKING, NO_RANK, PROC_NULL, Record, RunTrace, UNKNOWN_RANK};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the engine's configuration comes from.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Profile file (`PMPI_PREDICT_PROFILE`, `--profile`); None: the built-in default.
    pub profile: Option<PathBuf>,
    /// Penalty model overriding the profile's (`PMPI_PREDICT_MODEL`, `--model`).
    pub model: Option<String>,
    /// Broadcast strategy assumed instead of the library's decision (Open MPI's or MPICH's) (`PMPI_PREDICT_BCAST`, `--bcast`).
    pub bcast: Option<String>,
    /// Scatter strategy assumed (`PMPI_PREDICT_SCATTER`, `--scatter`).
    pub scatter: Option<String>,
    /// Bad profile or model is an error (CLI) rather than a notice and a fallback (layer).
    pub strict: bool,
    /// Print notices and the hotspot ranking on stderr (off with `PMPI_PREDICT_QUIET=1`).
    pub print_hotspots: bool,
    /// The ranking in at most three lines (the layer at MPI_Finalize) instead of in full.
    pub brief: bool,
}

impl ReportOptions {
    /// The layer's view at MPI_Finalize: `PMPI_PREDICT_PROFILE`, `PMPI_PREDICT_MODEL`,
    /// `PMPI_PREDICT_BCAST`, `PMPI_PREDICT_SCATTER` and `PMPI_PREDICT_QUIET` (see `config`).
    pub fn from_env() -> ReportOptions {
        let (c, _) = crate::config::Config::from_env();
        ReportOptions {
            profile: c.profile,
            model: c.model,
            bcast: c.bcast,
            scatter: c.scatter,
            strict: false,
            print_hotspots: !c.quiet,
            brief: true,
        }
    }

    /// The collective-algorithm assumptions; a bad name is an error when strict, else one
    /// stderr line and the library's decision.
    pub fn assumptions(&self) -> Result<predict::Assumptions, Error> {
        match predict::Assumptions::parse(self.bcast.as_deref(), self.scatter.as_deref()) {
            Ok(a) => Ok(a),
            Err(e) if self.strict => Err(Error::Input(e)),
            Err(e) => {
                crate::say_line!(
                    "pmpi-predict: {e} (PMPI_PREDICT_BCAST/PMPI_PREDICT_SCATTER); assuming the library's algorithms"
                );
                Ok(predict::Assumptions::default())
            }
        }
    }

    /// The profile and model to use; problems are errors when strict, else one stderr
    /// line each and the defaults.
    pub fn resolve(&self) -> Result<(Profile, Option<String>, String), Error> {
        let (profile, source) = match &self.profile {
            Some(p) => match Profile::load(p) {
                Ok(pr) => (pr, p.display().to_string()),
                Err(e) if self.strict => return Err(e),
                Err(e) => {
                    crate::say_line!(
                        "pmpi-predict: {e} (PMPI_PREDICT_PROFILE); using the built-in default profile"
                    );
                    (Profile::builtin_default(), "builtin-default".to_string())
                }
            },
            // The layer's banner at MPI_Init says so (see `banner`).
            None => (Profile::builtin_default(), "builtin-default".to_string()),
        };
        let model = match &self.model {
            Some(m) => match predict::penalty_model(&profile, Some(m)) {
                Ok(_) => Some(m.clone()),
                Err(e) if self.strict => return Err(Error::Input(format!("--model {m}: {e}"))),
                Err(e) => {
                    crate::say_line!(
                        "pmpi-predict: PMPI_PREDICT_MODEL={m:?}: {e}; using the profile's model {}",
                        profile.penalty.model
                    );
                    None
                }
            },
            None => None,
        };
        Ok((profile, model, source))
    }
}

/// Rank 0's line at MPI_Init: version, where the run goes, the model and the profile.
/// Reads the profile (a bad one is said here, at the start, rather than at the end).
pub fn banner_init(opts: &ReportOptions, ranks: i32, dir: &Path) -> String {
    let (profile, src) = match &opts.profile {
        Some(p) => match Profile::load(p) {
            Ok(pr) => (pr, format!("profile {}", p.display())),
            Err(e) => (
                Profile::builtin_default(),
                format!("built-in default profile: {e}"),
            ),
        },
        None => (
            Profile::builtin_default(),
            "built-in default profile (set PMPI_PREDICT_PROFILE to a calibrated one)".into(),
        ),
    };
    let model = opts
        .model
        .clone()
        .unwrap_or_else(|| profile.penalty.model.clone());
    format!(
        "pmpi-predict {}: recording {ranks} ranks into {}; model {model}, {src}",
        env!("CARGO_PKG_VERSION"),
        dir.display()
    )
}

/// Rank 0's lines at MPI_Finalize: what was recorded, how long the analysis took, where
/// the report is, and the model's error against the contention-free baseline.
pub fn banner_finalize(s: &ReportStats, seconds: f64, dir: &Path) -> String {
    let html = dir.join("report.html");
    let report = if html.is_file() {
        html
    } else {
        dir.to_path_buf()
    };
    let a = &s.accuracy;
    let err = if a.task_e_abs_model.is_finite() {
        format!(
            "per-rank error of the prediction {:.1} % (model {}), contention-free baseline {:.1} %",
            a.task_e_abs_model, s.model, a.task_e_abs_free
        )
    } else {
        "no blocking call to compare predictions with".to_string()
    };
    let mut text = format!(
        "pmpi-predict: {} records from {} ranks ({} dropped), analysed in {seconds:.2} s; report in {}\npmpi-predict: {err}",
        s.records,
        s.ranks,
        s.dropped,
        report.display()
    );
    for n in s.notes() {
        text += &format!("\npmpi-predict: note: {n}");
    }
    text
}

impl ReportStats {
    /// What a reader of the predictions should know about the run: ranks that shared
    /// CPUs, TCP's retransmission timeouts, a profile not calibrated as the run was
    /// launched.
    pub fn notes(&self) -> Vec<String> {
        let mut v: Vec<String> = self.cpu_sharing.iter().map(|c| c.text()).collect();
        v.extend(trace::netstat::timeouts_note(&self.network));
        v.extend(self.launch.iter().cloned());
        v
    }
}

/// The files of a report, as `analyze` and rank 0 at MPI_Finalize write them.
pub const REPORT_FILES: [&str; 5] = [
    "calls.csv",
    "summary.json",
    "hotspots.json",
    "report.html",
    "trace.json",
];

/// Whether `name` is a temporary file that a streamed report or replay writes in its
/// directory while it works (sorted runs, spilled E_rel values, trace.json's parts); none
/// stays once it has finished.
pub fn is_temporary_file(name: &str) -> bool {
    name.contains(".sort-") || name.contains(".erel-") || name.contains("trace.json.")
}

/// Columns of `calls.csv`, in order. The first eleven are the stable interface.
pub const CSV_COLUMNS: &[&str] = &[
    "rank",
    "node",
    "call",
    "peer",
    "root",
    "bytes",
    "comm_size",
    "start_s",
    "measured_s",
    "predicted_s",
    "penalty",
    "free_s",
    "thread",
    "tag",
    "comm",
    "bytes_sent",
    "bytes_received",
    "source",
    "nonblocking",
    "wait_kind",
    "wait_s",
    "transfer_s",
    "pred_wait_kind",
    "pred_wait_s",
    "pred_transfer_s",
    "contention_s",
    "reason",
    "tcp_timeout",
];

/// What writing a report produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportStats {
    pub records: usize,
    pub ranks: usize,
    pub complete: bool,
    /// Records the ranks could not keep (full buffers, spool write errors).
    pub dropped: u64,
    /// The run's accuracy figures (per-rank E_abs of the model and of the baseline).
    pub accuracy: accuracy::RunAccuracy,
    /// The penalty model used.
    pub model: String,
    /// Machines whose ranks outnumbered their CPUs.
    pub cpu_sharing: Vec<trace::CpuSharing>,
    /// What each node's transport did (retransmissions, timeouts).
    pub network: Vec<trace::netstat::NodeNet>,
    /// How the profile fits the run's launch ([`crate::profile::Profile::launch_notes`]).
    pub launch: Vec<String>,
}

/// Above this many bytes of spooled records, the report is written as the run is read
/// ([`stream::write_report_streamed`]: memory bounded by what is in flight, about 60-75 MB)
/// rather than from the run loaded whole (about 300 bytes of memory per 72-byte record at
/// the peak: 16 MB of spools, 233,000 records, take about 70 MB either way).
pub const BATCH_MAX_BYTES: u64 = 16 << 20;

/// Bytes of the spool files (`*.spool`) in `dir`.
pub fn spool_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".spool"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Writes the report of the run in `dir` there, configured from the environment (the
/// layer's entry point at MPI_Finalize): from the run loaded whole up to
/// `PMPI_PREDICT_BATCH_MAX_MB` of spools ([`BATCH_MAX_BYTES`] by default), as it is read
/// beyond (which it says once on stderr unless `PMPI_PREDICT_QUIET`): the same files.
pub fn write_report(dir: &Path) -> Result<ReportStats, Error> {
    write_report_sized(dir, &ReportOptions::from_env(), batch_max_bytes())
}

/// Up to how many bytes of spools a run is loaded whole (`PMPI_PREDICT_BATCH_MAX_MB`,
/// [`BATCH_MAX_BYTES`] by default): the rule of `MPI_Finalize`, `analyze` and `replay`.
pub fn batch_max_bytes() -> u64 {
    crate::config::Config::from_env()
        .0
        .batch_max_mb
        .saturating_mul(1 << 20)
}

/// The run in `dir` is too large to load whole ([`batch_max_bytes`]): it is read as it is
/// predicted.
pub fn too_large_to_load(dir: &Path) -> bool {
    spool_bytes(dir) > batch_max_bytes()
}

/// [`write_report`] with the options given and the batch path up to `batch_max` bytes of
/// spools.
pub fn write_report_sized(
    dir: &Path,
    opts: &ReportOptions,
    batch_max: u64,
) -> Result<ReportStats, Error> {
    let bytes = spool_bytes(dir);
    if bytes <= batch_max {
        return write_report_with(dir, opts);
    }
    let s = stream::write_report_streamed(dir, opts)?;
    if opts.print_hotspots {
        crate::say_line!(
            "pmpi-predict: {} MB of records analysed as they were read (bounded memory)",
            bytes >> 20
        );
    }
    Ok(s.stats)
}

/// Loads the run in `dir`, predicts every call and writes `calls.csv`, `summary.json`
/// and `hotspots.json` there.
pub fn write_report_with(dir: &Path, opts: &ReportOptions) -> Result<ReportStats, Error> {
    let mut run = trace::load_run(dir)?;
    let (profile, model, source) = opts.resolve()?;
    let assume = opts.assumptions()?;
    // The records are not in memory during the replays (the peak); the reports read
    // them again.
    let counts: Vec<usize> = run.ranks.iter().map(|r| r.records.len()).collect();
    let pred = predict::predict_run_releasing(&mut run, &profile, model.as_deref(), &assume)?;
    trace::reload_records(dir, &mut run, &counts)?;
    write_calls_csv(&run, &pred.calls, &dir.join("calls.csv"))?;
    let figs = callagg::CallAggregates::of_run(&run, &pred.calls);
    let hs = hotspots::compute_with(&run, &pred, &figs, 10);
    let summary = write_summary_hotspots(dir, &run, &pred, &figs, &hs, &source)?;
    if opts.print_hotspots {
        if opts.brief {
            eprint!("{}", hotspots::brief(&hs));
        } else {
            eprint!("{}", hotspots::text(&hs, 5));
        }
    }
    // report.html and trace.json: a failure there is one stderr line, never the report's.
    let max_mb = crate::config::Config::from_env().0.trace_max_mb;
    html::write_views(dir, &run, &pred, &figs, &summary, &hs, &source, max_mb);
    Ok(ReportStats {
        records: run.ranks.iter().map(|r| r.records.len()).sum(),
        ranks: run.ranks.len(),
        complete: run.complete(),
        dropped: run.ranks.iter().map(|r| r.meta.dropped + r.meta.lost).sum(),
        accuracy: accuracy::of_figures(
            &figs,
            [pred.makespan_measured, pred.makespan, pred.makespan_free],
        ),
        model: pred.model.clone(),
        cpu_sharing: cpu_sharing(&run),
        network: network(&run),
        launch: crate::topo::placement::Placement::from_run(&run).launch_notes(&profile),
    })
}

/// The summary document with its `prediction` section (`source`: where the profile came
/// from).
pub fn summary_with_prediction(run: &RunTrace, pred: &RunPrediction, source: &str) -> Value {
    let figs = callagg::CallAggregates::of_run(run, &pred.calls);
    summary_with_figures(run, pred, &figs, source)
}

/// [`summary_with_prediction`] with the run's per-call figures already found.
pub fn summary_with_figures(
    run: &RunTrace,
    pred: &RunPrediction,
    figs: &callagg::CallFigures,
    source: &str,
) -> Value {
    let mut s = summary(run, figs);
    s["prediction"] = prediction_summary(
        run,
        figs,
        &pred.model,
        source,
        [pred.makespan_measured, pred.makespan, pred.makespan_free],
    );
    s["prediction"]["e_abs_graphs_percent"] = graph_errors(run, pred);
    s
}

/// Writes `summary.json` and `hotspots.json` (`hs`) of the run `run` predicted as `pred`,
/// whose per-call figures are `figs`, into `out` (the run's directory, or a what-if
/// replay's); returns the summary.
pub fn write_summary_hotspots(
    out: &Path,
    run: &RunTrace,
    pred: &RunPrediction,
    figs: &callagg::CallFigures,
    hs: &hotspots::Hotspots,
    source: &str,
) -> Result<Value, Error> {
    let summary = summary_with_figures(run, pred, figs, source);
    write_json(&out.join("summary.json"), &summary)?;
    write_json(
        &out.join("hotspots.json"),
        &serde_json::to_value(hs).map_err(|e| Error::Internal(e.to_string()))?,
    )?;
    Ok(summary)
}

fn write_json(path: &Path, v: &Value) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Error::Internal(e.to_string()))?;
    std::fs::write(path, text + "\n").map_err(|e| Error::write(path, e))
}

/// E_rel of a call in percent: (predicted − measured) / measured · 100.
pub fn e_rel(pred: f64, measured: f64) -> Option<f64> {
    (measured > 0.0).then(|| (pred - measured) / measured * 100.0)
}

/// Message-size class of a call for error statistics.
pub fn size_class(bytes: u64) -> &'static str {
    match bytes {
        0..1024 => "<1KiB",
        1024..65536 => "1KiB-64KiB",
        65536..1048576 => "64KiB-1MiB",
        _ => ">=1MiB",
    }
}

/// A rank's per-task sums (the seeds' S_m and S_p) over its predicted blocking and
/// completion calls: measured, predicted and contention-free seconds. A nonblocking
/// operation's span runs until the application's completion call and holds whatever the
/// application did meanwhile, so the sums leave it out.
pub fn task_sums(rk: &trace::RankTrace, calls: &[CallPrediction]) -> (f64, f64, f64) {
    let mut s = callagg::RankCalls::default();
    for (r, c) in rk.records.iter().zip(calls) {
        s.add(r, c);
    }
    (s.measured_s, s.predicted_s, s.free_s)
}

/// E_rel of a call's prediction, if predicted.
pub fn call_e_rel(r: &Record, c: &CallPrediction) -> Option<f64> {
    prediction_e_rel(c, r.duration_s())
}

/// E_rel of a call's prediction, if predicted, from its measured duration.
pub fn prediction_e_rel(c: &CallPrediction, measured_s: f64) -> Option<f64> {
    c.predicted.and_then(|p| e_rel(p, measured_s))
}

/// The value of `key` in `map`, inserted as the default if missing: the key is copied only
/// then, not once per record.
fn entry<'m, V: Default>(map: &'m mut BTreeMap<String, V>, key: &str) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.to_string(), V::default());
    }
    map.get_mut(key).expect("inserted above")
}

/// summary.json's `prediction.e_abs_graphs_percent` of a batch prediction: per interval
/// of the network, the mean |E_rel| of the calls owning its arcs ([`netagg::GraphAgg`]).
pub(crate) fn graph_errors(run: &RunTrace, pred: &RunPrediction) -> Value {
    let mut g = netagg::GraphAgg::default();
    for iv in &pred.sim.intervals {
        g.known(
            iv.start,
            iv.end,
            pred.sim.arcs_of(iv).iter().map(|&(k, _)| {
                let o = pred.flows.flows[pred.inter[k as usize]].owner;
                let (ri, i) = (o.rank as usize, o.rec as usize);
                call_e_rel(&run.ranks[ri].records[i], &pred.calls[ri][i])
            }),
        );
    }
    g.finish()
}

/// The `prediction` section of summary.json but `e_abs_graphs_percent`, from the run's
/// ranks (`run`: a shell will do, as for [`summary`]), its per-call figures, the penalty
/// model's name, where the profile came from and the makespans (measured, predicted,
/// contention-free).
pub fn prediction_summary(
    run: &RunTrace,
    figs: &callagg::CallFigures,
    model: &str,
    source: &str,
    makespans: [f64; 3],
) -> Value {
    let none = callagg::RankCalls::default();
    let tasks: Vec<Value> = run
        .ranks
        .iter()
        .enumerate()
        .map(|(ri, rk)| {
            let t = figs.ranks.get(ri).unwrap_or(&none);
            let rank = rk.meta.rank;
            let (sm, sp, sf) = (t.measured_s, t.predicted_s, t.free_s);
            json!({
                "rank": rank,
                "measured_s": sm,
                "predicted_s": sp,
                "free_s": sf,
                "e_abs": e_rel(sp, sm).map(f64::abs),
                "e_abs_free": e_rel(sf, sm).map(f64::abs),
            })
        })
        .collect();
    let [measured, predicted, free] = makespans;
    json!({
        "model": model,
        "profile": source,
        "e_rel_percent": figs.e_rel,
        "e_abs_tasks_percent": tasks,
        "contention_loss_s": {"by_rank": figs.lost_rank, "by_node": figs.lost_node, "by_call": figs.lost_call},
        "wait_s": {"measured_by_kind": figs.wait_measured, "predicted_by_kind": figs.wait_predicted, "measured_caused_by_rank": figs.caused},
        "makespan_s": {"measured": measured, "predicted": predicted, "free": free},
        "not_predicted": figs.reasons,
    })
}

/// Which clock the ranks' timestamps came from ("tsc": the CPU's invariant time-stamp
/// counter, converted to CLOCK_MONOTONIC's scale; "clock_gettime"), and the largest drift
/// of the converted counter from CLOCK_MONOTONIC at finalize.
fn timestamps(run: &RunTrace) -> Value {
    let mut sources: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &run.ranks {
        let s = if r.meta.timestamps.is_empty() {
            "clock_gettime"
        } else {
            r.meta.timestamps.as_str()
        };
        *sources.entry(s).or_default() += 1;
    }
    let drift = run
        .ranks
        .iter()
        .filter_map(|r| r.meta.tsc_drift_ns)
        .map(i64::abs)
        .max();
    json!({"ranks_by_source": sources, "max_tsc_drift_ns": drift})
}

/// Every record of the run as (global start ns, rank index, record index), by start time.
pub fn timeline(run: &RunTrace) -> Vec<(i64, usize, usize)> {
    Timeline::new(run).collect()
}

/// The records of a run in [`timeline`] order, merged from the ranks as they are read: a
/// rank whose records are in start order (the usual case) is walked in place, another has
/// its order sorted once (12 bytes a record of that rank), and a heap holds one record per
/// rank. By (start, rank index, record index), as sorting them all would give.
pub struct Timeline<'a> {
    run: &'a RunTrace,
    /// Per rank: its records' order, when not their own (record index, start).
    sorted: Vec<Option<Vec<(i64, u32)>>>,
    /// Per rank: the position of its next record.
    next: Vec<usize>,
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(i64, usize, usize)>>,
}

impl<'a> Timeline<'a> {
    pub fn new(run: &'a RunTrace) -> Timeline<'a> {
        let mut t = Timeline {
            run,
            sorted: Vec::with_capacity(run.ranks.len()),
            next: vec![0; run.ranks.len()],
            heap: Default::default(),
        };
        for rk in &run.ranks {
            let start = |r: &Record| rk.meta.to_global_ns(r.t_start);
            let in_order = rk.records.windows(2).all(|w| start(&w[0]) <= start(&w[1]));
            t.sorted.push((!in_order).then(|| {
                let mut v: Vec<(i64, u32)> = rk
                    .records
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (start(r), i as u32))
                    .collect();
                v.sort_unstable();
                v
            }));
        }
        for ri in 0..run.ranks.len() {
            t.push_next(ri);
        }
        t
    }

    /// Puts rank `ri`'s next record on the heap, if it has one.
    fn push_next(&mut self, ri: usize) {
        let pos = self.next[ri];
        let rk = &self.run.ranks[ri];
        let item = match &self.sorted[ri] {
            Some(v) => v.get(pos).map(|&(s, i)| (s, ri, i as usize)),
            None => rk
                .records
                .get(pos)
                .map(|r| (rk.meta.to_global_ns(r.t_start), ri, pos)),
        };
        if let Some(item) = item {
            self.heap.push(std::cmp::Reverse(item));
            self.next[ri] = pos + 1;
        }
    }
}

impl Iterator for Timeline<'_> {
    type Item = (i64, usize, usize);

    fn next(&mut self) -> Option<(i64, usize, usize)> {
        let std::cmp::Reverse(item) = self.heap.pop()?;
        self.push_next(item.1);
        Some(item)
    }
}

/// Appends a text field of calls.csv: between quotes, quotes doubled, when it holds a
/// comma, a quote or a line break (the csv crate's `QuoteStyle::Necessary`), else as is.
fn csv_text(out: &mut Vec<u8>, s: &str) {
    if s.bytes().any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n')) {
        out.push(b'"');
        for b in s.bytes() {
            if b == b'"' {
                out.push(b'"');
            }
            out.push(b);
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

fn write_calls_csv(
    run: &RunTrace,
    preds: &[Vec<CallPrediction>],
    path: &Path,
) -> Result<(), Error> {
    let mut w = CallsCsv::create(path, run)?;
    for (start, ri, i) in Timeline::new(run) {
        let rk = &run.ranks[ri];
        w.row(&rk.meta, &rk.records[i], start, &preds[ri][i])?;
    }
    w.finish()
}

/// A `calls.csv` being written, a row at a time in [`Timeline`] order: the batch report's
/// and the streamed one's (`stream`) rows, the same bytes from one formatter.
pub struct CallsCsv {
    w: std::io::BufWriter<std::fs::File>,
    path: PathBuf,
    /// The run's origin ([`RunTrace::origin_ns`]): `start_s` counts from it.
    origin: i64,
    /// Each row is formatted into one reused buffer: no allocation per row.
    row: Vec<u8>,
    /// Where TCP's retransmission timeouts fired: the `tcp_timeout` column.
    tcp: TcpWindows,
}

/// Where the nodes' TCP retransmission timeouts fired during a run (summary.json's
/// `network`), on the run's clock: calls.csv's `tcp_timeout` column says which calls one
/// may have held.
#[derive(Debug, Default)]
pub struct TcpWindows {
    /// Per node: its windows, sorted and apart.
    by_node: BTreeMap<String, Vec<(f64, f64)>>,
    /// Every node's windows, overlapping ones merged: for calls with no single peer.
    any: Vec<(f64, f64)>,
    /// Node of each world rank.
    node_of: BTreeMap<i32, String>,
}

impl TcpWindows {
    /// The windows of `run`'s nodes, from its ranks' metadata (its shell will do).
    pub fn of_run(run: &RunTrace) -> TcpWindows {
        let mut t = TcpWindows::default();
        for n in network(run) {
            let mut w: Vec<(f64, f64)> = n.timeouts_at.iter().map(|x| (x.from_s, x.to_s)).collect();
            if w.is_empty() {
                continue;
            }
            w.sort_by(|a, b| a.0.total_cmp(&b.0));
            t.any.extend_from_slice(&w);
            t.by_node.insert(n.node, w);
        }
        t.any.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut merged: Vec<(f64, f64)> = Vec::with_capacity(t.any.len());
        for &(a, b) in &t.any {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        t.any = merged;
        if !t.any.is_empty() {
            t.node_of = run
                .ranks
                .iter()
                .map(|r| (r.meta.rank, r.meta.node.clone()))
                .collect();
        }
        t
    }

    /// True where a timeout fired during `[t0, t1]` (seconds on the run's clock) on
    /// `node`, on the node of rank `peer`, or, for a call with no single peer (a
    /// collective, a completion of several requests: `peer` < 0), on any node.
    pub fn held(&self, node: &str, peer: i32, t0: f64, t1: f64) -> bool {
        if self.any.is_empty() {
            return false;
        }
        let hit = |w: &[(f64, f64)]| {
            // The first window that ends at t0 or later; sorted and apart, so by ends too.
            let i = w.partition_point(|x| x.1 < t0);
            w.get(i).is_some_and(|x| x.0 <= t1)
        };
        if peer < 0 {
            return hit(&self.any);
        }
        let on = |n: &str| self.by_node.get(n).is_some_and(|w| hit(w));
        on(node) || self.node_of.get(&peer).is_some_and(|n| n != node && on(n))
    }

    /// [`TcpWindows::held`] for record `r` of the rank `meta` describes over its measured
    /// span (`clock`: the rank's [`trace::RankMeta::clock`], `origin`: the run's).
    pub fn held_call(
        &self,
        meta: &trace::RankMeta,
        clock: &trace::Clock,
        r: &Record,
        origin: i64,
    ) -> bool {
        if self.any.is_empty() {
            return false;
        }
        let t0 = clock.seconds_since(r.t_start, origin);
        self.held(&meta.node, r.peer, t0, t0 + r.duration_s())
    }
}

impl CallsCsv {
    /// Creates the file at `path` for the rows of `run` (its shell will do) and writes
    /// the header.
    pub fn create(path: &Path, run: &RunTrace) -> Result<CallsCsv, Error> {
        let origin = run.origin_ns();
        use std::io::Write as _;
        let io = |e: std::io::Error| Error::write(path, e);
        let mut w =
            std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(path).map_err(io)?);
        w.write_all(CSV_COLUMNS.join(",").as_bytes()).map_err(io)?;
        w.write_all(b"\n").map_err(io)?;
        Ok(CallsCsv {
            w,
            path: path.to_path_buf(),
            origin,
            row: Vec::with_capacity(512),
            tcp: TcpWindows::of_run(run),
        })
    }

    /// Writes the row of record `r` of the rank `meta` describes, entered at `start` (ns
    /// on rank 0's clock), predicted as `p`.
    pub fn row(
        &mut self,
        meta: &trace::RankMeta,
        r: &Record,
        start: i64,
        p: &CallPrediction,
    ) -> Result<(), Error> {
        use std::io::Write as _;
        let secs = |b: &mut Vec<u8>, x: f64| number::fixed(b, x, 9);
        let opt = |b: &mut Vec<u8>, v: Option<f64>| {
            if let Some(x) = v {
                number::fixed(b, x, 9);
            }
        };
        // A rank field: empty where not applicable.
        let rank = |b: &mut Vec<u8>, r: i32| match r {
            NO_RANK => {}
            PROC_NULL => b.extend_from_slice(b"PROC_NULL"),
            UNKNOWN_RANK => b.extend_from_slice(b"unknown"),
            r => number::int(b, r as i64),
        };
        let name = meta
            .calls
            .get(r.call as usize)
            .map_or_else(|| trace::call_name(r.call), String::as_str);
        let b = &mut self.row;
        b.clear();
        number::int(b, meta.rank as i64);
        b.push(b',');
        csv_text(b, &meta.node);
        b.push(b',');
        csv_text(b, name);
        b.push(b',');
        rank(b, r.peer);
        b.push(b',');
        rank(b, r.root_rank());
        b.push(b',');
        number::uint(b, r.bytes_send + r.bytes_recv);
        b.push(b',');
        number::uint(b, r.comm_size as u64);
        b.push(b',');
        secs(b, start.saturating_sub(self.origin) as f64 * 1e-9);
        b.push(b',');
        secs(b, r.duration_s());
        b.push(b',');
        opt(b, p.predicted);
        b.push(b',');
        if let Some(x) = p.penalty() {
            number::fixed(b, x, 4);
        }
        b.push(b',');
        opt(b, p.free);
        b.push(b',');
        number::uint(b, r.thread as u64);
        b.push(b',');
        number::int(b, r.tag as i64);
        b.push(b',');
        if r.comm != u32::MAX {
            number::uint(b, r.comm as u64);
        }
        b.push(b',');
        number::uint(b, r.bytes_send);
        b.push(b',');
        number::uint(b, r.bytes_recv);
        b.push(b',');
        rank(b, r.peer2);
        b.push(b',');
        b.push(if r.flags & FLAG_NONBLOCKING != 0 {
            b'1'
        } else {
            b'0'
        });
        b.push(b',');
        csv_text(b, p.measured_wait.kind.name());
        b.push(b',');
        secs(b, p.measured_wait.seconds);
        b.push(b',');
        secs(b, (r.duration_s() - p.measured_wait.seconds).max(0.0));
        b.push(b',');
        csv_text(b, p.wait.kind.name());
        b.push(b',');
        secs(b, p.wait.seconds);
        b.push(b',');
        opt(b, p.predicted.map(|x| (x - p.wait.seconds).max(0.0)));
        b.push(b',');
        secs(b, p.contention);
        b.push(b',');
        csv_text(b, p.reason.name());
        b.push(b',');
        let t0 = start.saturating_sub(self.origin) as f64 * 1e-9;
        if self.tcp.held(&meta.node, r.peer, t0, t0 + r.duration_s()) {
            b.push(b'1');
        }
        b.push(b'\n');
        self.w.write_all(b).map_err(|e| Error::write(&self.path, e))
    }

    /// Flushes the file.
    pub fn finish(mut self) -> Result<(), Error> {
        use std::io::Write as _;
        self.w.flush().map_err(|e| Error::write(&self.path, e))
    }
}

/// The summary document but its `prediction` section: the run's metadata from `run`
/// (its records are not read: a run's shell will do, see [`RunTrace`] and
/// `trace::order::RunOrder::shell`), what its calls give from `figs`.
pub fn summary(run: &RunTrace, figs: &callagg::CallFigures) -> Value {
    let mut ranks = Vec::new();
    let mut nodes: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    let none = callagg::RankCalls::default();
    for (ri, rk) in run.ranks.iter().enumerate() {
        let m = &rk.meta;
        nodes.entry(m.node.clone()).or_default().push(m.rank);
        let c = figs.ranks.get(ri).unwrap_or(&none);
        let mpi_ns = m.poll_ns() + c.mpi_ns;
        ranks.push(json!({
            "rank": m.rank,
            "node": m.node,
            "records": c.records,
            "mpi_time_s": mpi_ns as f64 * 1e-9,
            "dropped": m.dropped,
            "lost": m.lost,
            "dropped_requests": m.dropped_requests,
            "finalized": m.finalized,
            "ended_by": m.ended_by,
            "trailing_bytes": rk.trailing_bytes,
            "spool_error": rk.spool_error,
            "clock_offset_ns": m.clock_init.map(|c| c.offset_ns),
            "timestamps": m.timestamps,
            "tsc_drift_ns": m.tsc_drift_ns,
        }));
    }
    let calls = &figs.calls;
    let mut polls: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for rk in &run.ranks {
        for p in &rk.meta.polls {
            let e = polls.entry(p.call.clone()).or_default();
            e.0 += p.count;
            e.1 += p.time_ns;
        }
    }
    let polls: BTreeMap<String, Value> = polls
        .into_iter()
        .map(|(k, (c, t))| (k, json!({"count": c, "time_s": t as f64 * 1e-9})))
        .collect();
    json!({
        "format_version": 1,
        "complete": run.complete(),
        "world_size": run.world_size,
        "ranks_found": run.ranks.len(),
        "missing_ranks": run.missing,
        "records": figs.ranks.iter().map(|r| r.records).sum::<u64>(),
        "dropped": run.ranks.iter().map(|r| r.meta.dropped + r.meta.lost).sum::<u64>(),
        "dropped_requests": run.ranks.iter().map(|r| r.meta.dropped_requests).sum::<u64>(),
        "mpi_library": run.ranks.first().map(|r| r.meta.mpi_library.clone()).unwrap_or_default(),
        "nodes": nodes,
        "calls": calls,
        "unsuccessful_polls": polls,
        "timestamps": timestamps(run),
        "cpu_sharing": cpu_sharing(run),
        "network": network(run),
        "ranks": ranks,
    })
}

/// What each node's transport did during the run ([`trace::netstat::nodes`]).
pub fn network(run: &RunTrace) -> Vec<trace::netstat::NodeNet> {
    trace::netstat::nodes(run.ranks.iter().map(|r| &r.meta), run.origin_ns())
}

/// The machines whose ranks outnumbered their CPUs ([`trace::cpu_sharing`]).
pub fn cpu_sharing(run: &RunTrace) -> Vec<trace::CpuSharing> {
    let metas: Vec<&trace::RankMeta> = run.ranks.iter().map(|r| &r.meta).collect();
    trace::cpu_sharing(&metas)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The merged timeline is the sorted one: ranks in and out of start order, ties across
    /// and within ranks, empty ranks, clock offsets.
    #[test]
    fn merged_timeline_is_the_sorted_one() {
        let rank = |rank: i32, offset_ns: i64, starts: &[u64]| trace::RankTrace {
            meta: trace::RankMeta {
                rank,
                clock_init: Some(trace::ClockSample {
                    offset_ns,
                    ..Default::default()
                }),
                ..Default::default()
            },
            records: starts
                .iter()
                .map(|&t_start| Record {
                    t_start,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let run = RunTrace {
            ranks: vec![
                rank(0, 0, &[5, 5, 7, 9, 9, 20]),
                rank(1, 2, &[3, 5, 5, 7, 18]),
                rank(2, 0, &[]),
                rank(3, -1, &[10, 6, 8, 6, 30, 1]),
                rank(4, 0, &[7, 7, 7]),
            ],
            world_size: 5,
            missing: vec![],
        };
        let mut all = Vec::new();
        for (ri, rk) in run.ranks.iter().enumerate() {
            for (i, r) in rk.records.iter().enumerate() {
                all.push((rk.meta.to_global_ns(r.t_start), ri, i));
            }
        }
        all.sort_unstable();
        assert_eq!(timeline(&run), all);
    }

    #[test]
    fn csv_text_quotes_as_the_csv_crate_does() {
        for s in [
            "n0",
            "",
            "a,b",
            "say \"hi\"",
            "two\nlines",
            "cr\r",
            "é,ü",
            "#x",
        ] {
            let mut w = csv::Writer::from_writer(vec![]);
            w.write_record([s, "x"]).unwrap();
            let theirs = w.into_inner().unwrap();
            let mut ours = Vec::new();
            csv_text(&mut ours, s);
            ours.extend_from_slice(b",x\n");
            assert_eq!(ours, theirs, "{s:?}");
        }
    }

    /// calls.csv's `tcp_timeout`: a call overlapping a window in which a retransmission
    /// timeout fired on its node or its peer's, or on any node for a call with no single
    /// peer; not one that ended before the window or began after it.
    #[test]
    fn a_call_is_held_where_a_timeout_fired_on_its_node_its_peer_s_or_any_without_one() {
        let mut rnd = crate::testing::xorshift(0x7c9_0001);
        let mut run = crate::testing::random_case(&mut rnd, 0, 20, 1);
        crate::testing::add_net_counters(&mut run);
        run.ranks[1].meta.node = "zz-elsewhere".into();
        let node0 = run.ranks[0].meta.node.clone();
        let r1 = run.ranks[1].meta.rank;
        let t = TcpWindows::of_run(&run);
        let w = network(&run)
            .into_iter()
            .find(|n| n.rank == 0)
            .unwrap()
            .timeouts_at;
        assert_eq!(w.len(), 2);
        let (a, b, c) = (w[0].from_s, w[0].to_s, w[1].from_s);
        assert!(t.held(&node0, NO_RANK, a - 1e-3, a + 1e-6));
        assert!(t.held(&node0, r1, a + 1e-6, b - 1e-6));
        assert!(!t.held(&node0, NO_RANK, a - 1e-3, a - 1e-6));
        assert!(!t.held(&node0, NO_RANK, b + 1e-6, c - 1e-6));
        // Elsewhere: held through its peer, rank 0, or with no single peer; not alone.
        assert!(t.held("zz-elsewhere", 0, a, b));
        assert!(t.held("zz-elsewhere", NO_RANK, c, c));
        assert!(!t.held("zz-elsewhere", r1, a, b));
        assert!(!t.held("zz-elsewhere", PROC_NULL, b + 1e-6, c - 1e-6));
        // Without counters nothing is held.
        let plain = crate::testing::random_case(&mut rnd, 0, 20, 1);
        assert!(!TcpWindows::of_run(&plain).held(&node0, NO_RANK, f64::MIN, f64::MAX));
    }
}

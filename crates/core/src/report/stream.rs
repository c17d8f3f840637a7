//! The report written as the run is predicted (`pmpi-predict analyze --stream`, and
//! MPI_Finalize above a size): `calls.csv` the same bytes as the batch report's,
//! `summary.json`, `hotspots.json` and `report.html` the same figures, in memory bounded by
//! what is in flight and fixed buffers, not by the run's length (docs/engine.md, "calls.csv
//! as the run is predicted", "The reports in one pass").
//!
//! The prediction hands records over in the order both replays finish them, and a record
//! can finish long after the later records of its rank (a call forced at the end of a
//! deadlocked replay). Each comes with its row's place in the file, (entry on rank 0's
//! clock, rank index, record number), so the rows are put in order by an external sort:
//! predictions are gathered [`SORT_RUN`] at a time, sorted, and written as one sorted run
//! of fixed-size entries to a temporary file next to `calls.csv`; at the end a k-way
//! merge of the runs (one entry and one read buffer per run) gives the predictions in
//! file order, zipped with a second read of the run in the same order (`RunOrder`, the
//! reader the replays use), which gives each row its record. trace.json counts its
//! windows in that pass and is written in one more over the same rows (the runs merged
//! again, the run read again), so that none of its slices waits on disk. The rows go in
//! batches to threads of their own ([`RowSink`]: calls.csv's, trace.json's count, then
//! its writer), so that formatting and writing go on beside the reading.
//!
//! `pmpi-predict replay` above a size, or with `--stream` ([`replay_streamed`]), runs two
//! predictions (as recorded, and under the what-if conditions), spills each to its own
//! sorted runs, and merges both in lockstep with one more read of the run: replay.json
//! and the new run's summary.json, hotspots.json and report.html, the batch replay's.

use super::CallsCsv;
use super::callagg::{self, CallAggregates, CallFigures};
use super::chrome_trace::{TraceCount, TraceExtent, TraceStats, TraceWriter};
use super::hotspots::{self, Hotspots};
use super::netagg::StreamedNet;
use super::whatif::{Makespans, WhatIf, WhatIfAgg};
use crate::error::Error;
use crate::predict::stream::{StreamStats, predict_stream_under, predict_stream_with};
use crate::predict::{Assumptions, CallPrediction, Conditions};
use crate::profile::Profile;
use crate::replay::Reason;
use crate::replay::wait::{Wait, WaitKind};
use crate::trace::order::{Call, RunOrder};
use crate::trace::{RankMeta, Record};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

/// Predictions sorted in memory at once (about 100 bytes each: 50 MB). A run of 100 M
/// records makes 200 sorted runs, whose merge holds 200 read buffers.
pub const SORT_RUN: usize = 1 << 19;

/// Where a row goes in calls.csv: (entry ns on rank 0's clock, rank index, record
/// number), as `report::Timeline` orders a loaded run.
type Key = (i64, u32, u32);

/// A prediction with its row's key.
type Entry = (Key, CallPrediction);

/// Bytes of one spooled prediction: its key, then the prediction.
const ENTRY: usize = 16 + 1 + 8 + 8 + 2 * (1 + 8 + 4) + 8 + 1;

/// Entries of each hotspot list, as the batch report's.
const TOP: usize = 10;

/// Read buffer of one sorted run during the merge.
const READ_BUFFER: usize = 1 << 16;

/// What writing the report as the run is predicted did.
#[derive(Debug, Clone)]
pub struct StreamedReport {
    /// Rows written.
    pub records: u64,
    pub ranks: usize,
    /// Every rank left its files and reached MPI_Finalize.
    pub complete: bool,
    /// Sorted runs spilled to disk (0: the predictions fitted in one sort buffer).
    pub spilled_runs: usize,
    pub prediction: StreamStats,
    /// What the rows gave the other reports.
    pub figures: CallFigures,
    pub hotspots: Hotspots,
    /// What the finalize banner and `analyze` say (as the batch report's).
    pub stats: super::ReportStats,
}

/// Writes `dir/calls.csv` as [`super::write_report_with`] would (byte for byte),
/// predicting the run as it is read, and from its rows and the replay's network
/// `summary.json`, `hotspots.json` and `report.html` (the batch report's figures).
pub fn write_report_streamed(
    dir: &Path,
    opts: &super::ReportOptions,
) -> Result<StreamedReport, Error> {
    let (profile, model, source) = opts.resolve()?;
    let assume = opts.assumptions()?;
    let sizes = Sizes {
        run_len: SORT_RUN,
        e_rel_held: callagg::IN_MEMORY,
    };
    let trace_max_bytes = crate::config::Config::from_env()
        .0
        .trace_max_mb
        .saturating_mul(1_000_000);
    let r = write_with(
        dir,
        &profile,
        model.as_deref(),
        &source,
        &assume,
        sizes,
        trace_max_bytes,
    )?;
    if opts.print_hotspots {
        if opts.brief {
            eprint!("{}", hotspots::brief(&r.hotspots));
        } else {
            eprint!("{}", hotspots::text(&r.hotspots, 5));
        }
    }
    Ok(r)
}

/// What the streamed path holds in memory before it spills to disk.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// Predictions per sorted run.
    run_len: usize,
    /// E_rel values held ([`CallAggregates::new`]).
    e_rel_held: usize,
}

/// [`write_report_streamed`] with the profile resolved (`source`: where it came from) and
/// trace.json's cap (`PMPI_PREDICT_TRACE_MAX_MB` in bytes; 0: no trace.json).
fn write_with(
    dir: &Path,
    profile: &Profile,
    model: Option<&str>,
    source: &str,
    assume: &Assumptions,
    sizes: Sizes,
    trace_max_bytes: u64,
) -> Result<StreamedReport, Error> {
    // The placement the prediction replays the run on (from the ranks' metadata alone).
    let order = RunOrder::open(dir)?;
    let placement = crate::topo::placement::Placement::from_run(&order.shell());
    let mut net = StreamedNet::new(placement.nodes(), TOP);
    // trace.json's extent, a read of the spools of its own, goes on beside the prediction.
    let early = (trace_max_bytes > 0).then(|| order.loaded_shell(dir));
    drop(order);
    let (predicted, extent) = std::thread::scope(|s| {
        let reading = early.as_ref().map(|shell| {
            std::thread::Builder::new()
                .name("trace.json".into())
                .spawn_scoped(s, move || TraceExtent::read(dir, shell))
                .map_err(|_| shell)
        });
        let predicted = predict_sorted(dir, CALLS_SORT, sizes.run_len, |out| {
            predict_stream_with(dir, profile, model, assume, out, Some(&mut net))
        });
        let extent = reading.map(|r| match r {
            Ok(t) => t.join().unwrap_or_else(|_| {
                Err(Error::Internal(
                    "trace.json's extent: its thread panicked".into(),
                ))
            }),
            // No thread: read here.
            Err(shell) => TraceExtent::read(dir, shell),
        });
        (predicted, extent)
    });
    let (prediction, spill, buf) = predicted?;
    let mut rows = Rows::open(dir, &[(&spill.files, &buf)])?;
    let shell = rows.order.loaded_shell(dir);
    let mut agg = CallAggregates::new(
        shell.ranks.len(),
        Some((dir.to_path_buf(), sizes.e_rel_held)),
    );
    let model_name = prediction.model.clone();
    // trace.json, in two passes over the rows: this one sizes its windows (nothing
    // written), one more at the end writes the kept ones (docs/reports.md). A failure
    // there is one stderr line, never the report's.
    let tj_path = dir.join("trace.json");
    let not_written =
        |e: Error| crate::say_line!("pmpi-predict: {e}; {} not written", tj_path.display());
    let metas = &rows.order.metas;
    // calls.csv and trace.json's count each on a thread of their own (docs/engine.md,
    // "The report at MPI_Finalize made faster"): this one reads the rows and sums them.
    let mut tj = extent.and_then(|e| {
        e.map(|extent| {
            let count = TraceCount::new(&shell, extent);
            RowSink::new("trace.json", CountRows(count, metas.clone()))
        })
        .map_err(not_written)
        .ok()
    });
    let path = dir.join("calls.csv");
    let w = CallsCsv::create(&path, &shell)?;
    let mut csv = RowSink::new("calls.csv", CsvRows(w, metas.clone()));
    let mut records = 0u64;
    Batches::default().each(&mut rows, |batch, metas| {
        for r in batch.iter() {
            agg.add(r.ri, &metas[r.ri], &r.record, &r.pred)?;
        }
        records += batch.len() as u64;
        csv.rows(batch)?;
        if let Some(t) = &mut tj
            && let Err(e) = t.rows(batch)
        {
            not_written(e);
            tj = None;
        }
        Ok(())
    })?;
    csv.finish()?;
    let tj = tj.and_then(|t| t.finish().map_err(not_written).ok());
    let figures = agg.finish()?;
    let hs = write_views(dir, &shell, &placement, &figures, &prediction, net, source)?;
    if let Some(t) = tj {
        let t = std::cell::RefCell::new(Some(t));
        super::html::guarded(&tj_path, &|| {
            let Some(t) = t.borrow_mut().take() else {
                return Ok(());
            };
            let w = t.plan(&model_name, trace_max_bytes).create(&tj_path)?;
            let mut rows = Rows::open(dir, &[(&spill.files, &buf)])?;
            // Its rows written on a thread of their own, beside their reading.
            let mut sink = RowSink::new("trace.json", WriteRows(w, rows.order.metas.clone()));
            Batches::default().each(&mut rows, |batch, _| sink.rows(batch))?;
            sink.finish().map(|_| ())
        });
    }
    let stats = super::ReportStats {
        records: records as usize,
        ranks: shell.ranks.len(),
        complete: shell.complete(),
        dropped: shell
            .ranks
            .iter()
            .map(|r| r.meta.dropped + r.meta.lost)
            .sum(),
        accuracy: super::accuracy::of_figures(&figures, makespans(&prediction)),
        model: model_name,
        cpu_sharing: super::cpu_sharing(&shell),
        network: super::network(&shell),
        launch: placement.launch_notes(profile),
    };
    Ok(StreamedReport {
        records,
        ranks: shell.ranks.len(),
        complete: shell.complete(),
        spilled_runs: spill.files.len(),
        prediction,
        figures,
        hotspots: hs,
        stats,
    })
}

/// Rows handed to a [`RowSink`]'s thread at a time.
const ROW_BATCH: usize = 4096;

/// A row of the report: rank index, record number, record, entry (ns on rank 0's
/// clock), prediction.
#[derive(Debug, Clone, Copy)]
struct Row {
    ri: usize,
    rec: u32,
    record: Record,
    at: i64,
    pred: CallPrediction,
}

/// What a [`RowSink`] does with the rows, each in turn, and at their end.
trait RowWork: Send + 'static {
    type Out: Send + 'static;
    fn row(&mut self, row: &Row) -> Result<(), Error>;
    fn finish(self) -> Result<Self::Out, Error>;
}

/// calls.csv's rows, with the metadata of each rank index.
struct CsvRows(CallsCsv, Vec<RankMeta>);

impl RowWork for CsvRows {
    type Out = ();
    fn row(&mut self, r: &Row) -> Result<(), Error> {
        self.0
            .row(meta_of(&self.1, r.ri)?, &r.record, r.at, &r.pred)
    }
    fn finish(self) -> Result<(), Error> {
        self.0.finish()
    }
}

/// trace.json's first pass over the rows.
struct CountRows(TraceCount, Vec<RankMeta>);

impl RowWork for CountRows {
    type Out = TraceCount;
    fn row(&mut self, r: &Row) -> Result<(), Error> {
        self.0
            .row(r.ri, meta_of(&self.1, r.ri)?, r.rec, &r.record, &r.pred)
    }
    fn finish(self) -> Result<TraceCount, Error> {
        Ok(self.0)
    }
}

/// The batches of rows handed to the sinks, each taken again once no sink holds it: a
/// batch (600 kB) allocated afresh each time cost a fresh mapping and its page faults.
#[derive(Default)]
struct Batches {
    /// Oldest first.
    out: VecDeque<Arc<Vec<Row>>>,
}

impl Batches {
    /// An empty batch, not shared.
    fn take(&mut self) -> Arc<Vec<Row>> {
        if let Some(mut b) = self.out.pop_front() {
            if Arc::get_mut(&mut b).is_some() {
                return b;
            }
            self.out.push_front(b);
        }
        Arc::new(Vec::with_capacity(ROW_BATCH))
    }

    /// `b` goes to the sinks.
    fn sent(&mut self, b: &Arc<Vec<Row>>) {
        self.out.push_back(b.clone());
    }

    /// Reads `rows` to their end a batch at a time, handing each batch (with the ranks'
    /// metadata) to `f` once it is marked as sent.
    fn each(
        mut self,
        rows: &mut Rows,
        mut f: impl FnMut(&Arc<Vec<Row>>, &[RankMeta]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        loop {
            let mut batch = self.take();
            rows.fill(Arc::make_mut(&mut batch))?;
            if batch.is_empty() {
                return Ok(());
            }
            self.sent(&batch);
            f(&batch, &rows.order.metas)?;
        }
    }
}

/// trace.json's second pass over the rows.
struct WriteRows(TraceWriter, Vec<RankMeta>);

impl RowWork for WriteRows {
    type Out = TraceStats;
    fn row(&mut self, r: &Row) -> Result<(), Error> {
        self.0
            .row(r.ri, meta_of(&self.1, r.ri)?, r.rec, &r.record, &r.pred)
    }
    fn finish(self) -> Result<TraceStats, Error> {
        self.0.finish()
    }
}

/// The metadata of rank index `ri`.
fn meta_of(metas: &[RankMeta], ri: usize) -> Result<&RankMeta, Error> {
    metas
        .get(ri)
        .ok_or_else(|| Error::Internal(format!("rank index {ri} of {}", metas.len())))
}

/// A [`RowWork`] on a thread of its own, handed the rows in shared batches, so that the
/// works of the row loop (calls.csv's numbers and its write, trace.json's count) go on
/// side by side; in the calling thread if no thread starts. Each sees the rows in the
/// order given: the same bytes either way.
enum RowSink<W: RowWork> {
    Inline(W),
    Thread(RowThread<W::Out>),
}

/// A sink's thread and the batches going to it.
struct RowThread<T> {
    /// None once the rows are all sent.
    to: Option<SyncSender<Arc<Vec<Row>>>>,
    /// None once joined.
    thread: Option<JoinHandle<Result<T, Error>>>,
}

impl<W: RowWork> RowSink<W> {
    fn new(name: &str, work: W) -> RowSink<W> {
        // Two batches in flight: one being worked on, one waiting.
        let (to, batches) = sync_channel::<Arc<Vec<Row>>>(2);
        // The work goes over once the thread runs, so that it stays here if none starts.
        let (give, take) = channel::<W>();
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let Ok(mut work) = take.recv() else {
                    return Err(Error::Internal("a row thread got no work".into()));
                };
                for batch in batches {
                    for r in batch.iter() {
                        work.row(r)?;
                    }
                }
                work.finish()
            });
        let Ok(thread) = spawned else {
            return RowSink::Inline(work);
        };
        let t = RowThread {
            to: Some(to),
            thread: Some(thread),
        };
        match give.send(work) {
            Ok(()) => RowSink::Thread(t),
            // Not reached (the thread waits for it), but the work is not lost then.
            Err(std::sync::mpsc::SendError(work)) => RowSink::Inline(work),
        }
    }

    /// The next rows; an error of the work (on its thread: once it stopped).
    fn rows(&mut self, batch: &Arc<Vec<Row>>) -> Result<(), Error> {
        match self {
            RowSink::Inline(w) => batch.iter().try_for_each(|r| w.row(r)),
            RowSink::Thread(t) => {
                if t.to
                    .as_ref()
                    .is_some_and(|to| to.send(batch.clone()).is_ok())
                {
                    return Ok(());
                }
                // The thread stopped: its error says why.
                t.join()?;
                Err(Error::Internal("a row thread stopped early".into()))
            }
        }
    }

    /// The end of the rows: what the work gave.
    fn finish(self) -> Result<W::Out, Error> {
        match self {
            RowSink::Inline(w) => w.finish(),
            RowSink::Thread(mut t) => t.join(),
        }
    }
}

impl<T> RowThread<T> {
    /// Ends the rows and waits for the thread: its result.
    fn join(&mut self) -> Result<T, Error> {
        self.to.take();
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(Error::Internal("a row thread panicked".into()))),
            None => Err(Error::Internal("a row thread joined twice".into())),
        }
    }
}

impl<T> Drop for RowThread<T> {
    /// On an error elsewhere: the thread ends with the rows it was given, not after.
    fn drop(&mut self) {
        self.to.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a what-if replay as the run is read ([`replay_streamed`]) gave.
#[derive(Debug, Clone)]
pub struct StreamedReplay {
    /// replay.json's document, the batch replay's ([`super::whatif::build`]) to the bit.
    pub whatif: WhatIf,
    /// The predictions under the recorded conditions and under the new ones.
    pub recorded: StreamStats,
    pub prediction: StreamStats,
    /// Sorted runs spilled to disk, both predictions' (0: each fitted in one buffer).
    pub spilled_runs: usize,
}

/// `pmpi-predict replay` as the run in `dir` is read: predicts it under its recorded
/// conditions and under `cond`, each as it is read, in memory bounded by what is in
/// flight and fixed buffers; writes `out/summary.json`, `out/hotspots.json` and
/// `out/report.html` of the new run (`out` exists; the sorted runs go there too) and
/// returns replay.json's document (`conditions` as given), the same as the batch path's
/// ([`super::whatif::build`] on the run loaded whole), every file and figure to the bit.
#[allow(clippy::too_many_arguments)]
pub fn replay_streamed(
    dir: &Path,
    out: &Path,
    profile: &Profile,
    model: Option<&str>,
    source: &str,
    assume: &Assumptions,
    cond: &Conditions,
    conditions: serde_json::Value,
) -> Result<StreamedReplay, Error> {
    let sizes = Sizes {
        run_len: SORT_RUN,
        e_rel_held: callagg::IN_MEMORY,
    };
    let what = WhatIfRun {
        profile,
        model,
        source,
        assume,
        cond,
    };
    replay_with(dir, out, &what, sizes, conditions)
}

/// What [`replay_with`] replays the run under.
struct WhatIfRun<'a> {
    profile: &'a Profile,
    model: Option<&'a str>,
    /// Where the profile came from.
    source: &'a str,
    assume: &'a Assumptions,
    cond: &'a Conditions,
}

/// [`replay_streamed`] with the sizes of what is held before it is spilled.
fn replay_with(
    dir: &Path,
    out: &Path,
    w: &WhatIfRun,
    sizes: Sizes,
    conditions: serde_json::Value,
) -> Result<StreamedReplay, Error> {
    // Two predictions, each spilled to its own sorted runs by the same keys, then read
    // back in lockstep in one pass over the rows.
    let (recorded, mut rec_spill, mut rec_buf) =
        predict_sorted(out, "replay.recorded.sort-", sizes.run_len, |o| {
            predict_stream_with(dir, w.profile, w.model, w.assume, o, None)
        })?;
    // Its last run goes to disk too, so that one sort buffer is held at a time.
    if !rec_spill.files.is_empty() {
        rec_spill.write_run(&mut rec_buf)?;
        rec_buf = Vec::new();
    }
    let placement = &w.cond.placement;
    let mut net = StreamedNet::new(placement.nodes(), TOP);
    let (prediction, what_spill, what_buf) =
        predict_sorted(out, "replay.whatif.sort-", sizes.run_len, |o| {
            predict_stream_under(dir, w.profile, w.model, w.assume, w.cond, o, Some(&mut net))
        })?;
    let mut rows = Rows::open(
        dir,
        &[(&rec_spill.files, &rec_buf), (&what_spill.files, &what_buf)],
    )?;
    let shell = rows.order.loaded_shell(dir);
    let mut agg = CallAggregates::new(
        shell.ranks.len(),
        Some((out.to_path_buf(), sizes.e_rel_held)),
    );
    let mut sums = WhatIfAgg::new(shell.ranks.len());
    let mut cs = [CallPrediction::default(); 2];
    while let Some((_, ri, call)) = rows.next(&mut cs)? {
        let meta = &rows.order.metas[ri];
        // The new run's per-call figures are its what-if predictions'.
        agg.add(ri, meta, &call.record, &cs[1])?;
        sums.add(ri, meta, &call.record, &cs[0], &cs[1]);
    }
    let figures = agg.finish()?;
    let hs = write_views(out, &shell, placement, &figures, &prediction, net, w.source)?;
    let makespan = Makespans::new(recorded.makespan, makespans(&prediction));
    Ok(StreamedReplay {
        whatif: sums.finish(&shell, placement, makespan, conditions, hs),
        recorded,
        prediction,
        spilled_runs: rec_spill.files.len() + what_spill.files.len(),
    })
}

/// Where the analysis's sorted runs go, beside calls.csv.
const CALLS_SORT: &str = "calls.csv.sort-";

/// The makespans of a streamed prediction as the reports list them: measured, predicted,
/// contention-free.
fn makespans(p: &StreamStats) -> [f64; 3] {
    [p.makespan_measured, p.makespan, p.makespan_free]
}

/// The predictions `predict` hands over (a streamed prediction given its sink), sorted by
/// their row's key: all but the last [`Sizes::run_len`] of them spilled to sorted runs in
/// `dir` (named `prefix` and a number), the last ones returned sorted, in memory.
fn predict_sorted(
    dir: &Path,
    prefix: &'static str,
    run_len: usize,
    predict: impl FnOnce(&mut dyn FnMut(u32, u32, i64, CallPrediction)) -> Result<StreamStats, Error>,
) -> Result<(StreamStats, Spill, Vec<Entry>), Error> {
    let mut spill = Spill {
        dir: dir.to_path_buf(),
        prefix,
        files: Vec::new(),
    };
    let mut buf: Vec<Entry> = Vec::new();
    let mut failed = None;
    let prediction = predict(&mut |ri, rec, at, c| {
        if failed.is_some() {
            return;
        }
        buf.push(((at, ri, rec), c));
        if buf.len() >= run_len
            && let Err(e) = spill.write_run(&mut buf)
        {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    // The last predictions stay in memory: one more source of the merge.
    buf.sort_unstable_by_key(|e| e.0);
    Ok((prediction, spill, buf))
}

/// Writes `out/summary.json`, `out/hotspots.json` and `out/report.html` of the run whose
/// ranks `shell` holds, predicted on `placement` as `prediction` says, from its per-call
/// `figures` and its model replay's network `net`; returns its hotspots. The analysis
/// writes them beside calls.csv, the what-if replay into its own directory.
fn write_views(
    out: &Path,
    shell: &crate::trace::RunTrace,
    placement: &crate::topo::placement::Placement,
    figures: &CallFigures,
    prediction: &StreamStats,
    net: StreamedNet,
    source: &str,
) -> Result<Hotspots, Error> {
    let model_name = &prediction.model;
    let netr = net.agg.finish(&placement.names);
    let mut summary = super::summary(shell, figures);
    summary["prediction"] =
        super::prediction_summary(shell, figures, model_name, source, makespans(prediction));
    summary["prediction"]["e_abs_graphs_percent"] = netr.graphs;
    super::write_json(&out.join("summary.json"), &summary)?;
    let hs = Hotspots {
        model: model_name.clone(),
        intervals: netr.intervals,
        node_pairs: netr.node_pairs,
        nodes: netr.nodes,
        ranks: hotspots::rank_losses(shell, placement, figures, TOP),
        waited_for: hotspots::waited_for(figures, TOP),
    };
    super::write_json(
        &out.join("hotspots.json"),
        &serde_json::to_value(&hs).map_err(|e| Error::Internal(e.to_string()))?,
    )?;
    // The page: a failure there is one stderr line, never the report's.
    let rep = super::html::Replayed {
        placement,
        model: model_name,
        makespans: makespans(prediction),
        matrix: netr.matrix,
    };
    let page = out.join("report.html");
    super::html::guarded(&page, &|| {
        super::html::write_html(&page, shell, &rep, figures, &summary, &hs, source)
    });
    Ok(hs)
}

/// The sorted runs written so far (`dir/PREFIX00000`...); removed when dropped (also on
/// an error).
struct Spill {
    dir: PathBuf,
    prefix: &'static str,
    files: Vec<PathBuf>,
}

impl Spill {
    /// Sorts `buf`, writes it as the next run and empties it.
    fn write_run(&mut self, buf: &mut Vec<(Key, CallPrediction)>) -> Result<(), Error> {
        buf.sort_unstable_by_key(|e| e.0);
        let path = self
            .dir
            .join(format!("{}{:05}", self.prefix, self.files.len()));
        let io = |e: std::io::Error| Error::write(&path, e);
        let file = std::fs::File::create(&path).map_err(io)?;
        self.files.push(path.clone());
        let mut w = BufWriter::with_capacity(READ_BUFFER, file);
        let mut e = [0u8; ENTRY];
        for (k, c) in buf.drain(..) {
            encode(&mut e, k, &c);
            w.write_all(&e).map_err(io)?;
        }
        w.flush().map_err(io)
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        for f in &self.files {
            std::fs::remove_file(f).ok();
        }
    }
}

/// Writes `k` and `c` into `e`, every figure to the bit.
fn encode(e: &mut [u8; ENTRY], k: Key, c: &CallPrediction) {
    let mut at = 0;
    let mut put = |b: &[u8]| {
        e[at..at + b.len()].copy_from_slice(b);
        at += b.len();
    };
    put(&k.0.to_le_bytes());
    put(&k.1.to_le_bytes());
    put(&k.2.to_le_bytes());
    put(&[u8::from(c.predicted.is_some()) | u8::from(c.free.is_some()) << 1]);
    put(&c.predicted.unwrap_or(0.0).to_bits().to_le_bytes());
    put(&c.free.unwrap_or(0.0).to_bits().to_le_bytes());
    for w in [c.wait, c.measured_wait] {
        let kind = WaitKind::ALL.iter().position(|&x| x == w.kind);
        put(&[kind.expect("every kind is in ALL") as u8]);
        put(&w.seconds.to_bits().to_le_bytes());
        put(&w.on.to_le_bytes());
    }
    put(&c.contention.to_bits().to_le_bytes());
    let reason = Reason::ALL.iter().position(|&x| x == c.reason);
    put(&[reason.expect("every reason is in ALL") as u8]);
}

/// The key and prediction [`encode`] wrote into `e`; None if `e` is not such an entry.
fn decode(e: &[u8; ENTRY]) -> Option<(Key, CallPrediction)> {
    let mut at = 0;
    let mut take = |n: usize| {
        at += n;
        &e[at - n..at]
    };
    let u64_at = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    let u32_at = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes"));
    let key = (u64_at(take(8)) as i64, u32_at(take(4)), u32_at(take(4)));
    let some = take(1)[0];
    let predicted = f64::from_bits(u64_at(take(8)));
    let free = f64::from_bits(u64_at(take(8)));
    let mut wait = || -> Option<Wait> {
        let kind = *WaitKind::ALL.get(take(1)[0] as usize)?;
        let seconds = f64::from_bits(u64_at(take(8)));
        let on = u32_at(take(4)) as i32;
        Some(Wait { kind, seconds, on })
    };
    let (wait, measured_wait) = (wait()?, wait()?);
    let contention = f64::from_bits(u64_at(take(8)));
    let reason = *Reason::ALL.get(take(1)[0] as usize)?;
    Some((
        key,
        CallPrediction {
            predicted: (some & 1 != 0).then_some(predicted),
            free: (some & 2 != 0).then_some(free),
            wait,
            measured_wait,
            contention,
            reason,
        },
    ))
}

/// A source of the merge: a sorted run on disk, or the last one, in memory.
enum Source<'a> {
    File(PathBuf, BufReader<std::fs::File>),
    Memory(std::slice::Iter<'a, (Key, CallPrediction)>),
}

impl Source<'_> {
    fn next(&mut self) -> Result<Option<(Key, CallPrediction)>, Error> {
        match self {
            Source::Memory(it) => Ok(it.next().copied()),
            Source::File(path, r) => {
                let mut e = [0u8; ENTRY];
                match r.read_exact(&mut e) {
                    Ok(()) => decode(&e).map(Some).ok_or_else(|| {
                        Error::Internal(format!("{} holds a bad entry", path.display()))
                    }),
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
                    Err(e) => Err(Error::read(path, e)),
                }
            }
        }
    }
}

/// The k-way merge of the sorted runs: one entry per run held, the least key first. The
/// runs are only read, so that they can be merged again (trace.json's second pass).
struct Merge<'a> {
    sources: Vec<Source<'a>>,
    heads: Vec<Option<CallPrediction>>,
    heap: BinaryHeap<Reverse<(Key, usize)>>,
}

impl<'a> Merge<'a> {
    fn open(files: &[PathBuf], last: &'a [(Key, CallPrediction)]) -> Result<Merge<'a>, Error> {
        let mut sources = Vec::with_capacity(files.len() + 1);
        for f in files {
            let file = std::fs::File::open(f).map_err(|e| Error::read(f, e))?;
            sources.push(Source::File(
                f.clone(),
                BufReader::with_capacity(READ_BUFFER, file),
            ));
        }
        sources.push(Source::Memory(last.iter()));
        let mut m = Merge {
            heads: vec![None; sources.len()],
            sources,
            heap: BinaryHeap::new(),
        };
        for s in 0..m.sources.len() {
            m.advance(s)?;
        }
        Ok(m)
    }

    /// Puts source `s`'s next entry on the heap, if it has one.
    fn advance(&mut self, s: usize) -> Result<(), Error> {
        if let Some((k, c)) = self.sources[s].next()? {
            self.heads[s] = Some(c);
            self.heap.push(Reverse((k, s)));
        }
        Ok(())
    }

    fn next(&mut self) -> Result<Option<(Key, CallPrediction)>, Error> {
        let Some(Reverse((k, s))) = self.heap.pop() else {
            return Ok(None);
        };
        let c = self.heads[s]
            .take()
            .expect("a source on the heap has its head");
        self.advance(s)?;
        Ok(Some((k, c)))
    }
}

/// The rows in calls.csv's order: the run read again in time order (`RunOrder`) zipped
/// with one or more merged predictions of it (the what-if replay has two: as recorded and
/// under the new conditions, sorted by the same keys, so their merges advance in
/// lockstep), each checked to be its record's.
struct Rows<'a> {
    order: RunOrder,
    merges: Vec<Merge<'a>>,
}

/// One sorted prediction of a run: its spilled runs and the last one, in memory.
type Sorted<'a> = (&'a [PathBuf], &'a [Entry]);

impl<'a> Rows<'a> {
    fn open(dir: &Path, predictions: &[Sorted<'a>]) -> Result<Rows<'a>, Error> {
        let merges = predictions
            .iter()
            .map(|&(files, last)| Merge::open(files, last))
            .collect::<Result<_, _>>()?;
        Ok(Rows {
            merges,
            order: RunOrder::open(dir)?,
        })
    }

    /// The next rows (at most [`ROW_BATCH`]; none at the end) of a single prediction into
    /// `batch` (emptied first).
    fn fill(&mut self, batch: &mut Vec<Row>) -> Result<(), Error> {
        if self.merges.len() != 1 {
            return Err(Error::Internal(format!(
                "rows of {} predictions read as one's",
                self.merges.len()
            )));
        }
        batch.clear();
        let mut cs = [CallPrediction::default()];
        while batch.len() < ROW_BATCH {
            let Some((at, ri, call)) = self.next(&mut cs)? else {
                break;
            };
            batch.push(Row {
                ri,
                rec: call.rec,
                record: call.record,
                at,
                pred: cs[0],
            });
        }
        Ok(())
    }

    /// The next row: entry on rank 0's clock, rank index, call; its predictions (one per
    /// merge, in the order given to [`Rows::open`]) into `preds`.
    fn next(&mut self, preds: &mut [CallPrediction]) -> Result<Option<(i64, usize, Call)>, Error> {
        let lost = |what: String| Error::Internal(format!("streamed calls.csv: {what}"));
        let Some((at, ri, call)) = self.order.next_call()? else {
            for m in &mut self.merges {
                if let Some((k, _)) = m.next()? {
                    return Err(lost(format!(
                        "prediction of {k:?}, a record not read again"
                    )));
                }
            }
            return Ok(None);
        };
        let key = (at, ri as u32, call.rec);
        for (m, p) in self.merges.iter_mut().zip(preds.iter_mut()) {
            let Some((k, c)) = m.next()? else {
                return Err(lost(format!("no prediction for record {key:?}")));
            };
            if k != key {
                return Err(lost(format!("prediction of {k:?} where {key:?} was due")));
            }
            *p = c;
        }
        Ok(Some((at, ri, call)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{ReportOptions, write_report_with};

    #[test]
    fn entries_keep_every_bit() {
        let mut rnd = crate::testing::xorshift(7);
        for _ in 0..1000 {
            let f = |r: u64| f64::from_bits(r);
            let c = CallPrediction {
                predicted: (rnd(2) == 0).then(|| f(rnd(u64::MAX))),
                free: (rnd(2) == 0).then(|| f(rnd(u64::MAX))),
                wait: Wait {
                    kind: WaitKind::ALL[rnd(7) as usize],
                    seconds: f(rnd(u64::MAX)),
                    on: rnd(u32::MAX as u64) as i32,
                },
                measured_wait: Wait {
                    kind: WaitKind::ALL[rnd(7) as usize],
                    seconds: f(rnd(u64::MAX)),
                    on: -1,
                },
                contention: f(rnd(u64::MAX)),
                reason: Reason::ALL[rnd(4) as usize],
            };
            let k = (rnd(u64::MAX) as i64, rnd(1000) as u32, rnd(1 << 31) as u32);
            let mut e = [0u8; ENTRY];
            encode(&mut e, k, &c);
            let (k2, c2) = decode(&e).unwrap();
            let mut e2 = [0u8; ENTRY];
            encode(&mut e2, k2, &c2);
            assert_eq!((k, e), (k2, e2));
        }
    }

    /// The page's data block of a written report.html.
    fn page_data(dir: &Path) -> serde_json::Value {
        let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
        let from = page.find("id=\"report-data\">").unwrap() + "id=\"report-data\">".len();
        let to = from + page[from..].find("</script>").unwrap();
        serde_json::from_str(&page[from..to]).unwrap()
    }

    /// Random runs (as the streamed prediction's test makes them: clock offsets, long
    /// runs, a rank's spool lost), under `gige` and without a model, with sorted runs of 1
    /// to 3,000 predictions (many spilled runs, one, none) and E_rel values held 3, 50 or 1 M
    /// at a time (spilled and selected from files, or not): the streamed calls.csv and
    /// trace.json are the batch report's, byte for byte; its summary.json, hotspots.json
    /// and page data are the batch ones, every figure to the bit; hotspots.json's `ranks` and
    /// `waited_for` and the page's ranks and call families from its figures are the batch
    /// report's; and no temporary file stays.
    #[test]
    fn the_streamed_report_is_the_batch_one() {
        let mut rnd = crate::testing::xorshift(0x5eed_ca11_5c5f_0001);
        let dir = std::env::temp_dir().join(format!("pmpi-rows-{}", std::process::id()));
        let profile = Profile::builtin_default();
        let assume = Assumptions::default();
        let (mut rows, mut spilled, mut e_rel_spilled) = (0u64, 0usize, 0usize);
        let (mut lost, mut waited) = (0usize, 0usize);
        // The batch report's cap.
        let trace_max_bytes = crate::config::Config::from_env()
            .0
            .trace_max_mb
            .saturating_mul(1_000_000);
        // Every fifth case (all on Open MPI): its sends packed, so that a rendezvous one's
        // head crosses with its request, and small messages that cross pay the exchange's
        // latency, which lengthens their flows in flight: what the network carried and at
        // which lone time, as the two paths see it.
        let mut exchanging = Profile::builtin_default();
        exchanging.exchange = Some(3e-6);
        let exchanging_file = dir.with_extension("profile.json");
        std::fs::write(&exchanging_file, exchanging.to_json()).unwrap();
        // For the Open MPI runs among them, a profile of Open MPI's with a 4 KiB eager limit
        // between nodes: more rendezvous messages, whose packed heads go with their
        // requests (a synchronous send below the limit goes eagerly).
        let mut exchanging_ompi = exchanging.clone();
        exchanging_ompi.mpi_library = Some(crate::testing::OPEN_MPI.into());
        exchanging_ompi.eager = Some(crate::profile::Eager {
            inter: Some(4096),
            intra: None,
            source: crate::profile::EagerSource::MpiT,
        });
        let exchanging_ompi_file = dir.with_extension("ompi.profile.json");
        std::fs::write(&exchanging_ompi_file, exchanging_ompi.to_json()).unwrap();
        let (mut heads, mut extended) = (0usize, 0usize);
        // Rows a TCP timeout may have held (calls.csv's last column; every fifth case has
        // the nodes' counters, `testing::add_net_counters`).
        let mut held = 0usize;
        for case in 0..60 {
            let mut run = crate::testing::random_case(&mut rnd, case, 50, 20);
            let odd = case % 5 == 2;
            if odd {
                for r in run.ranks.iter_mut().flat_map(|rk| rk.records.iter_mut()) {
                    if r.bytes_send > 0 {
                        r.flags |= crate::trace::FLAG_PACKED;
                    }
                }
            }
            crate::testing::write_case(&dir, case, &run);
            let ompi = run
                .ranks
                .first()
                .is_some_and(|rk| rk.meta.mpi_library.starts_with("Open MPI"));
            let (profile, profile_file) = match (odd, ompi) {
                (true, true) => (&exchanging_ompi, &exchanging_ompi_file),
                (true, false) => (&exchanging, &exchanging_file),
                _ => (&profile, &exchanging_file),
            };
            for model in ["gige", "none"] {
                let opts = ReportOptions {
                    model: Some(model.into()),
                    strict: true,
                    profile: odd.then(|| profile_file.clone()),
                    ..Default::default()
                };
                write_report_with(&dir, &opts).unwrap();
                let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
                let json =
                    |f: &str| -> serde_json::Value { serde_json::from_slice(&read(f)).unwrap() };
                let batch = read("calls.csv");
                held += batch
                    .split(|&b| b == b'\n')
                    .filter(|l| l.ends_with(b",1"))
                    .count();
                let batch_summary = json("summary.json");
                let batch_hotspots = json("hotspots.json");
                let batch_page = page_data(&dir);
                let batch_trace = read("trace.json");
                for f in crate::report::REPORT_FILES {
                    std::fs::remove_file(dir.join(f)).unwrap();
                }
                let sizes = Sizes {
                    run_len: [1, 7, 3000][case % 3],
                    e_rel_held: [3, 50, callagg::IN_MEMORY][case / 3 % 3],
                };
                if odd {
                    let loaded = crate::trace::load_run(&dir).unwrap();
                    let pred = crate::predict::predict_run(&loaded, profile, Some(model)).unwrap();
                    heads += pred
                        .inter
                        .iter()
                        .zip(&pred.sim.bytes)
                        .filter(|&(&fi, &b)| b < pred.flows.flows[fi].bytes)
                        .count();
                    extended += pred.sim.tref_changes.len();
                }
                let name = if odd {
                    profile_file.display().to_string()
                } else {
                    "builtin-default".into()
                };
                let s = write_with(
                    &dir,
                    profile,
                    Some(model),
                    &name,
                    &assume,
                    sizes,
                    trace_max_bytes,
                )
                .unwrap();
                let streamed = read("calls.csv");
                assert!(
                    batch == streamed,
                    "case {case}, {model}, {sizes:?}: calls.csv differs"
                );
                let at = format!("case {case}, {model}, {sizes:?}");
                assert_eq!(json("summary.json"), batch_summary, "{at}");
                let hs = json("hotspots.json");
                let page = page_data(&dir);
                assert_eq!(hs, batch_hotspots, "{at}");
                assert_eq!(page, batch_page, "{at}");
                assert!(
                    read("trace.json") == batch_trace,
                    "{at}: trace.json differs"
                );
                let ranks = hs["ranks"].as_array().unwrap();
                let waited_for = hs["waited_for"].as_array().unwrap();
                let figs = &s.figures;
                rows += s.records;
                spilled += s.spilled_runs;
                lost += ranks.len();
                waited += waited_for.len();
                e_rel_spilled += figs.e_rel_spilled;
                let left: Vec<_> = std::fs::read_dir(&dir)
                    .unwrap()
                    .filter_map(|e| e.ok())
                    .filter(|e| crate::report::is_temporary_file(&e.file_name().to_string_lossy()))
                    .collect();
                assert!(left.is_empty(), "case {case}: {left:?} left");
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        std::fs::remove_file(&exchanging_file).ok();
        std::fs::remove_file(&exchanging_ompi_file).ok();
        assert!(
            heads > 0 && extended > 0 && held > 0,
            "{heads} heads, {extended} flows lengthened, {held} rows held by TCP"
        );
        assert!(
            rows > 5_000 && spilled > 1_000 && lost > 20 && waited > 100 && e_rel_spilled > 200,
            "{rows} rows, {spilled} runs, {lost} ranks losing, {waited} waited for, {e_rel_spilled} groups spilled"
        );
    }

    /// The temporary files of a streamed report in `dir`: sorted runs, E_rel values,
    /// anything beside trace.json.
    fn temporary(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| crate::report::is_temporary_file(n))
            .collect()
    }

    /// Random runs (the test above's, some with sorted runs spilled) with trace.json's cap
    /// from everything to nothing kept, passed to the streamed report: its trace.json is
    /// the batch writer's at that cap (`write_trace` on the loaded run and its batch
    /// prediction) byte for byte, sampled at strides above 1, flows cut, nothing kept;
    /// and no temporary file stays.
    #[test]
    fn the_streamed_trace_is_sampled_as_the_batch_one() {
        use crate::predict::predict_run_with;
        use crate::report::chrome_trace::write_trace;
        let mut rnd = crate::testing::xorshift(0x5eed_ca11_5c5f_0002);
        let dir = std::env::temp_dir().join(format!("pmpi-rowscap-{}", std::process::id()));
        let profile = Profile::builtin_default();
        let assume = Assumptions::default();
        let (mut files, mut strided, mut none_kept, mut flows_cut) = (0, 0, 0, 0);
        for case in 0..16 {
            crate::testing::write_random_case(&mut rnd, &dir, case, 8, 10);
            let run = crate::trace::load_run(&dir).unwrap();
            for model in ["gige", "none"] {
                let pred = predict_run_with(&run, &profile, Some(model), &assume).unwrap();
                let path = dir.join("trace.json");
                let whole = write_trace(&path, &run, &pred, u64::MAX).unwrap();
                for cap in [u64::MAX, whole.bytes / 3, whole.bytes / 25, 1] {
                    let batch_stats = write_trace(&path, &run, &pred, cap).unwrap();
                    let batch = std::fs::read(&path).unwrap();
                    std::fs::remove_file(&path).unwrap();
                    let sizes = Sizes {
                        run_len: [5, 3000][case % 2],
                        e_rel_held: callagg::IN_MEMORY,
                    };
                    write_with(
                        &dir,
                        &profile,
                        Some(model),
                        "builtin-default",
                        &assume,
                        sizes,
                        cap,
                    )
                    .unwrap();
                    let at = format!("case {case}, {model}, cap {cap}");
                    assert!(
                        std::fs::read(&path).unwrap() == batch,
                        "{at}: trace.json differs"
                    );
                    assert_eq!(temporary(&dir), Vec::<String>::new(), "{at}");
                    files += 1;
                    strided += usize::from(batch_stats.stride > 1);
                    none_kept += usize::from(batch_stats.kept_calls == 0);
                    flows_cut +=
                        usize::from(batch_stats.flows > 0 && batch_stats.flows < whole.flows);
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        eprintln!(
            "{files} files, {strided} sampled, {none_kept} with nothing kept, {flows_cut} with flows cut"
        );
        assert!(
            files == 128 && strided > 60 && none_kept > 30 && flows_cut > 15,
            "{files} files, {strided} sampled, {none_kept} with nothing kept, {flows_cut} with flows cut"
        );
    }

    /// A streamed report that fails (calls.csv cannot be created: a directory of that
    /// name) after its predictions were spilled leaves no temporary file; one whose
    /// trace.json cannot be written (a directory too) writes the other four files and
    /// leaves none either.
    #[test]
    fn no_temporary_file_stays_on_an_error() {
        let mut rnd = crate::testing::xorshift(0x5eed_ca11_5c5f_0003);
        let dir = std::env::temp_dir().join(format!("pmpi-rowserr-{}", std::process::id()));
        crate::testing::write_random_case(&mut rnd, &dir, 1, 50, 1);
        let profile = Profile::builtin_default();
        let assume = Assumptions::default();
        let sizes = Sizes {
            run_len: 3,
            e_rel_held: 3,
        };
        let write = |cap: u64| {
            write_with(
                &dir,
                &profile,
                Some("gige"),
                "builtin-default",
                &assume,
                sizes,
                cap,
            )
        };
        // Spilled runs and values to select from files, as below.
        let s = write(u64::MAX).unwrap();
        assert!(s.spilled_runs > 10 && s.figures.e_rel_spilled > 0, "{s:?}");
        for f in crate::report::REPORT_FILES {
            std::fs::remove_file(dir.join(f)).unwrap();
        }
        std::fs::create_dir(dir.join("calls.csv")).unwrap();
        assert!(write(u64::MAX).is_err());
        assert_eq!(temporary(&dir), Vec::<String>::new());
        assert!(!dir.join("trace.json").exists());
        std::fs::remove_dir(dir.join("calls.csv")).unwrap();
        std::fs::create_dir(dir.join("trace.json")).unwrap();
        write(u64::MAX).unwrap();
        assert_eq!(temporary(&dir), Vec::<String>::new());
        for f in ["calls.csv", "summary.json", "hotspots.json", "report.html"] {
            assert!(dir.join(f).is_file(), "{f}");
        }
        assert!(dir.join("trace.json").is_dir());
        std::fs::remove_dir_all(&dir).ok();
    }
    /// calls.csv written by its thread onto a full disk (the file a link to /dev/full),
    /// for a run long enough that the row loop is still sending rows when the thread
    /// fails, and for a short one that fails at the end: the report is that write error,
    /// and no temporary file stays; with the link gone the same run is reported.
    #[cfg(target_os = "linux")]
    #[test]
    fn calls_csv_on_a_full_disk_is_its_write_error() {
        let mut rnd = crate::testing::xorshift(0x5eed_ca11_5c5f_0005);
        let dir = std::env::temp_dir().join(format!("pmpi-rowsfull-{}", std::process::id()));
        let profile = Profile::builtin_default();
        let assume = Assumptions::default();
        let sizes = Sizes {
            run_len: 1000,
            e_rel_held: callagg::IN_MEMORY,
        };
        for (case, scale) in [(0, 400), (1, 1)] {
            crate::testing::write_random_case(&mut rnd, &dir, case, 0, scale);
            let csv = dir.join("calls.csv");
            std::fs::remove_file(&csv).ok();
            std::os::unix::fs::symlink("/dev/full", &csv).unwrap();
            let write = || {
                write_with(
                    &dir,
                    &profile,
                    Some("gige"),
                    "builtin-default",
                    &assume,
                    sizes,
                    u64::MAX,
                )
            };
            let e = write().unwrap_err();
            assert!(
                matches!(&e, Error::Io { action: "write", path, .. } if *path == csv),
                "case {case}: {e}"
            );
            assert_eq!(temporary(&dir), Vec::<String>::new(), "case {case}");
            std::fs::remove_file(&csv).unwrap();
            let s = write().unwrap();
            let rows = std::fs::read(&csv)
                .unwrap()
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            assert_eq!(rows as u64, s.records + 1, "case {case}");
            if scale > 1 {
                assert!(
                    s.records > 4 * ROW_BATCH as u64,
                    "case {case}: {} rows",
                    s.records
                );
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The what-if replay: random runs (every other one with its barriers as all-to-alls
    /// of 64 KiB, which the clusters' algorithm times) under random conditions (placements
    /// rrn, rrp and shuffled on fewer, as many or more nodes than ranks; half with two
    /// clusters; the direct and the Local Group all-to-all), under `gige` and without a
    /// model, with sorted runs of 1 to 3,000 predictions and E_rel values held 3 to 1 M:
    /// replay.json from the streamed replay is the batch one's (`whatif::build` on the
    /// loaded run) byte for byte, and so are the new run's summary.json, hotspots.json
    /// and report.html; no temporary file stays in the output directory.
    #[test]
    fn the_streamed_what_if_replay_is_the_batch_one() {
        use crate::predict::{AlltoallAlgo, predict_run_under, predict_run_with};
        let mut rnd = crate::testing::xorshift(0x5eed_ca11_5c5f_0004);
        let base = std::env::temp_dir().join(format!("pmpi-whatifrows-{}", std::process::id()));
        let (dir, batch_out, stream_out) = (base.join("run"), base.join("b"), base.join("s"));
        let profile = Profile::builtin_default();
        let assume = Assumptions::default();
        let (mut rows, mut spilled, mut clustered, mut local_group) = (0, 0, 0, 0);
        let (mut moved, mut contended, mut families) = (0, 0, 0);
        for case in 0..40 {
            let (loaded, cond) = crate::testing::whatif_case(
                &mut rnd,
                &dir,
                case,
                20,
                10,
                crate::trace::call::MPI_Barrier,
                Some(65536),
            );
            clustered += usize::from(cond.clusters.is_some());
            local_group += usize::from(cond.alltoall == AlltoallAlgo::LocalGroup);
            for model in ["gige", "none"] {
                let at = format!(
                    "case {case}, {model}, {:?}, clusters {:?}, {}",
                    cond.placement.node_of_rank,
                    cond.clusters.as_ref().map(|c| &c.cluster_of_node),
                    cond.alltoall
                );
                let conditions = serde_json::json!({"case": case, "model": model});
                for d in [&batch_out, &stream_out] {
                    std::fs::remove_dir_all(d).ok();
                    std::fs::create_dir_all(d).unwrap();
                }
                // The batch replay, as `pmpi-predict replay` writes it.
                let recorded = predict_run_with(&loaded, &profile, Some(model), &assume).unwrap();
                let what =
                    predict_run_under(&loaded, &profile, Some(model), &assume, &cond).unwrap();
                let figs = CallAggregates::of_run(&loaded, &what.calls);
                let batch = crate::report::whatif::build(
                    &loaded,
                    &recorded,
                    &what,
                    &figs,
                    conditions.clone(),
                );
                let summary = crate::report::write_summary_hotspots(
                    &batch_out,
                    &loaded,
                    &what,
                    &figs,
                    &batch.hotspots,
                    "builtin-default",
                )
                .unwrap();
                crate::report::html::write_views(
                    &batch_out,
                    &loaded,
                    &what,
                    &figs,
                    &summary,
                    &batch.hotspots,
                    "builtin-default",
                    0,
                );
                let sizes = Sizes {
                    run_len: [1, 7, 3000][case % 3],
                    e_rel_held: [3, 50, callagg::IN_MEMORY][case / 3 % 3],
                };
                let w = WhatIfRun {
                    profile: &profile,
                    model: Some(model),
                    source: "builtin-default",
                    assume: &assume,
                    cond: &cond,
                };
                let s = replay_with(&dir, &stream_out, &w, sizes, conditions).unwrap();
                let json = |w: &WhatIf| serde_json::to_string_pretty(w).unwrap();
                assert_eq!(json(&s.whatif), json(&batch), "{at}: replay.json differs");
                for f in ["summary.json", "hotspots.json", "report.html"] {
                    let read = |d: &Path| std::fs::read(d.join(f)).unwrap();
                    assert!(read(&stream_out) == read(&batch_out), "{at}: {f} differs");
                }
                assert_eq!(temporary(&stream_out), Vec::<String>::new(), "{at}");
                rows += s.whatif.records;
                spilled += s.spilled_runs;
                families += s.whatif.families.len();
                let m = &s.whatif.makespan;
                moved += usize::from(m.predicted_s != m.replayed_s);
                contended += usize::from(s.whatif.total["predicted"].contention_s > 0.0);
            }
        }
        std::fs::remove_dir_all(&base).ok();
        eprintln!(
            "{rows} rows, {spilled} runs, {clustered} clustered, {local_group} local group, \
             {moved} makespans moved, {contended} contended, {families} families"
        );
        assert!(
            rows > 5_000
                && spilled > 1_000
                && clustered > 10
                && local_group > 10
                && moved > 40
                && contended > 10
                && families > 200,
            "{rows} rows, {spilled} runs, {clustered} clustered, {local_group} local group, \
             {moved} makespans moved, {contended} contended, {families} families"
        );
    }
}

//! `trace.json`: the measured run in Chrome's trace-event format (Perfetto,
//! chrome://tracing). One process per node, one thread per rank (and per extra thread of
//! a rank), every recorded call a complete slice at its measured, clock-corrected time
//! with the prediction in its args, every matched point-to-point message a flow arrow
//! from the send to the call that received it, and per node a bandwidth counter.
//!
//! The file is written in two passes over the calls in time order, the first counting
//! (nothing kept per call), the second writing; above a size cap whole time windows are
//! kept at a stride (so what is shown is complete within each window and every flow keeps
//! both ends) and the sampling is said in `otherData` and on stderr.

use crate::error::Error;
use crate::graph;
use crate::predict::{CallPrediction, RunPrediction};
use crate::replay::matching::{Completions, Fifo};
use crate::replay::{FxMap, Op, Protocol, op_of, own_end, receive_source, record_op, sent_message};
use crate::report::number::{Measure, Text};
use crate::topo::placement::Placement;
use crate::trace::{CallKind, FLAG_NONBLOCKING, RankMeta, Record, RunTrace};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Default size cap of trace.json (`PMPI_PREDICT_TRACE_MAX_MB`).
pub const DEFAULT_MAX_MB: u64 = 64;
/// Time windows the run is cut into for sampling.
const WINDOWS: usize = 1000;
/// Bandwidth counter bin width at least (seconds) and bins per node at most.
const BIN_S: f64 = 0.010;
const MAX_BINS: usize = 2000;
/// Room kept for the header and `otherData`.
const HEADER_RESERVE: u64 = 1024;

/// What writing trace.json did.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStats {
    pub bytes: u64,
    pub total_calls: usize,
    pub kept_calls: usize,
    pub flows: usize,
    /// Every `stride`-th time window was kept (1: everything).
    pub stride: usize,
    pub sampled: bool,
}

/// Which windows to keep so that their bytes fit `budget`: the smallest stride k such
/// that windows 0, k, 2k, ... fit. None when not even window 0 alone fits.
pub fn choose_stride(window_bytes: &[u64], budget: u64) -> Option<usize> {
    let n = window_bytes.len().max(1);
    (1..=n).find(|&k| window_bytes.iter().step_by(k).sum::<u64>() <= budget)
}

/// Spreads `bytes` evenly over `[t0, t1)` (seconds) into bins of `width` seconds.
pub fn spread(bins: &mut [f64], width: f64, t0: f64, t1: f64, bytes: f64) {
    if bins.is_empty() || bytes <= 0.0 || width <= 0.0 || !t0.is_finite() || !t1.is_finite() {
        return;
    }
    let last = bins.len() - 1;
    let bin = |t: f64| ((t / width).floor().max(0.0) as usize).min(last);
    if t1 <= t0 {
        bins[bin(t0)] += bytes;
        return;
    }
    let rate = bytes / (t1 - t0);
    let (b0, b1) = (bin(t0), bin(t1));
    for (b, v) in bins.iter_mut().enumerate().take(b1 + 1).skip(b0) {
        let lo = t0.max(b as f64 * width);
        let hi = if b == last {
            t1
        } else {
            t1.min((b + 1) as f64 * width)
        };
        *v += rate * (hi - lo).max(0.0);
    }
}

/// A JSON number, or null for NaN/infinity.
fn put_num(out: &mut impl Text, x: f64) {
    if x.is_finite() {
        out.fixed(x, 9);
    } else {
        out.bytes(b"null");
    }
}

fn put_opt(out: &mut impl Text, x: Option<f64>) {
    match x {
        Some(x) => put_num(out, x),
        None => out.bytes(b"null"),
    }
}

/// Microseconds with nanosecond digits, from integer nanoseconds.
fn us(ns: i64) -> String {
    let mut s = Vec::new();
    put_us(&mut s, ns);
    String::from_utf8(s).unwrap_or_default()
}

/// `,"pid":P,"tid":T,"ts":TS` of an event (TS in µs from `ns`).
fn put_place(out: &mut impl Text, pid: u64, tid: u64, ns: i64) {
    out.bytes(b",\"pid\":");
    out.uint(pid);
    out.bytes(b",\"tid\":");
    out.uint(tid);
    out.bytes(b",\"ts\":");
    put_us(out, ns);
}

fn put_us(out: &mut impl Text, ns: i64) {
    if ns < 0 {
        out.bytes(b"-");
    }
    let a = ns.unsigned_abs();
    out.uint(a / 1000);
    let f = a % 1000;
    out.bytes(&[
        b'.',
        b'0' + (f / 100) as u8,
        b'0' + (f / 10 % 10) as u8,
        b'0' + (f % 10) as u8,
    ]);
}

fn jstr(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

/// A JSON string: as is between quotes when nothing in it needs escaping (call names),
/// else as serde_json writes it.
fn put_jstr(out: &mut impl Text, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.bytes(b"\"");
        out.bytes(s.as_bytes());
        out.bytes(b"\"");
    } else {
        out.bytes(jstr(s).as_bytes());
    }
}

/// The slice of record `r` of the rank `meta` describes, ns from `origin`: its own call
/// at its measured, clock-corrected time, both ends rounded from one clock so that
/// consecutive slices of a thread never overlap.
fn span(meta: &RankMeta, r: &Record, origin: i64) -> (i64, i64) {
    let m_start = RunTrace::seconds_since(meta, r.t_start, origin);
    let op_dur = own_end(r).saturating_sub(r.t_start) as f64 * 1e-9;
    let s = (m_start * 1e9).round() as i64;
    let e = ((m_start + op_dur) * 1e9).round() as i64;
    (s, e.max(s))
}

/// What trace.json's time axes need of the whole run before its first slice is placed:
/// the windows are fractions of the latest slice end, the counters' bins of the latest
/// record end. The batch writer finds it from the loaded run, the streamed one from a
/// first read of the spools ([`TraceExtent::read`]), one record at a time either way.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TraceExtent {
    /// Call records.
    pub calls: u64,
    /// The latest slice end, ns from the origin (0 before any).
    pub span_end_ns: i64,
    /// The latest record end, seconds from the origin (0 before any).
    pub end_s: f64,
}

impl TraceExtent {
    /// Counts record `r` of the rank `meta` describes (`origin`: the run's).
    pub fn add(&mut self, meta: &RankMeta, r: &Record, origin: i64) {
        self.calls += 1;
        self.span_end_ns = self.span_end_ns.max(span(meta, r, origin).1);
        self.end_s = self
            .end_s
            .max(RunTrace::seconds_since(meta, r.t_end, origin));
    }

    /// The extent of a loaded run.
    pub fn of_run(run: &RunTrace) -> TraceExtent {
        let origin = run.origin_ns();
        let mut x = TraceExtent::default();
        for rk in &run.ranks {
            for r in &rk.records {
                x.add(&rk.meta, r, origin);
            }
        }
        x
    }

    /// The extent of the run in `dir` whose metadata `shell` holds
    /// ([`crate::trace::order::RunOrder::loaded_shell`]), its spools read once in spool
    /// order (the maxima need no other). A spool that cannot be read to its end adds
    /// nothing: the time-ordered reader gives such a rank no calls either.
    pub fn read(dir: &Path, shell: &RunTrace) -> Result<TraceExtent, Error> {
        let origin = shell.origin_ns();
        let mut x = TraceExtent::default();
        for rk in &shell.ranks {
            let mut one = TraceExtent::default();
            let path = crate::trace::spool_path(dir, rk.meta.rank);
            if crate::trace::order::each_call(&path, &mut |r| one.add(&rk.meta, r, origin)).is_ok()
            {
                x.calls += one.calls;
                x.span_end_ns = x.span_end_ns.max(one.span_end_ns);
                x.end_s = x.end_s.max(one.end_s);
            }
        }
        Ok(x)
    }
}

/// Where a run's slices go, fixed before the first: tracks, origin, windows.
struct Frame {
    origin: i64,
    /// Thread `t` of rank `r` is track `r + t · world`.
    world: u64,
    /// Node (pid) of each rank index.
    pid: Vec<u32>,
    /// The latest slice end (ns, at least 1): window `w` starts at `w / WINDOWS` of it.
    t_end: f64,
}

impl Frame {
    fn new(run: &RunTrace, placement: &Placement, extent: &TraceExtent) -> Frame {
        Frame {
            origin: run.origin_ns(),
            world: run
                .world_size
                .max(run.ranks.iter().map(|r| r.meta.rank + 1).max().unwrap_or(0))
                .max(1) as u64,
            pid: run
                .ranks
                .iter()
                .map(|rk| placement.node(rk.meta.rank).unwrap_or(0))
                .collect(),
            t_end: extent.span_end_ns.max(1) as f64,
        }
    }

    /// The window of a slice starting at `start_ns`.
    fn window_at(&self, start_ns: i64) -> usize {
        ((start_ns.max(0) as f64 / self.t_end * WINDOWS as f64) as usize).min(WINDOWS - 1)
    }

    /// Track (pid, tid) of record `r` of rank index `ri`, whose metadata is `meta`.
    fn track(&self, ri: usize, meta: &RankMeta, thread: u16) -> (u32, u64) {
        (
            self.pid.get(ri).copied().unwrap_or(0),
            meta.rank.max(0) as u64 + thread as u64 * self.world,
        )
    }

    /// Record `rec` of rank index `ri`, `r`, as one end of a flow arrow.
    fn end(&self, ri: usize, meta: &RankMeta, r: &Record, rec: u32) -> End {
        let (s, e) = span(meta, r, self.origin);
        let (pid, tid) = self.track(ri, meta, r.thread);
        End {
            id: (ri as u32, rec),
            pid,
            tid,
            mid: s + (e - s) / 2,
            window: self.window_at(s) as u32,
        }
    }

    /// Appends the slice of record `r` of rank index `ri` (metadata `meta`), predicted as
    /// `p`, to `out`; returns its window. The one formatter of both writers.
    fn slice(
        &self,
        ri: usize,
        meta: &RankMeta,
        r: &Record,
        p: &CallPrediction,
        out: &mut impl Text,
    ) -> usize {
        let (start_ns, end_ns) = span(meta, r, self.origin);
        let (pid, tid) = self.track(ri, meta, r.thread);
        let name = meta
            .calls
            .get(r.call as usize)
            .map(String::as_str)
            .unwrap_or_else(|| crate::trace::call_name(r.call));
        let nb = r.flags & FLAG_NONBLOCKING != 0;
        out.bytes(b"{\"ph\":\"X\",\"cat\":\"mpi\",\"name\":");
        put_jstr(out, name);
        put_place(out, pid as u64, tid, start_ns);
        out.bytes(b",\"dur\":");
        put_us(out, end_ns - start_ns);
        out.bytes(b",\"args\":{\"measured_s\":");
        put_num(out, r.duration_s());
        out.bytes(b",\"predicted_s\":");
        put_opt(out, p.predicted);
        out.bytes(b",\"free_s\":");
        put_opt(out, p.free);
        out.bytes(b",\"wait_kind\":");
        put_jstr(out, p.measured_wait.kind.name());
        out.bytes(b",\"wait_s\":");
        put_num(out, p.measured_wait.seconds);
        out.bytes(b",\"pred_wait_s\":");
        put_num(out, p.wait.seconds);
        out.bytes(b",\"contention_s\":");
        put_num(out, p.contention);
        out.bytes(b",\"bytes\":");
        out.uint(r.bytes_send + r.bytes_recv);
        // The peer as a WORLD rank, or null where the call has none.
        out.bytes(b",\"peer\":");
        if r.peer >= 0 {
            out.int(r.peer as i64);
        } else {
            out.bytes(b"null");
        }
        out.bytes(b",\"tag\":");
        out.int(r.tag as i64);
        out.bytes(if nb {
            b",\"nonblocking\":true,\"reason\":"
        } else {
            b",\"nonblocking\":false,\"reason\":"
        });
        put_jstr(out, p.reason.name());
        out.bytes(b"}},\n");
        self.window_at(start_ns)
    }
}

/// Per node, the MPI bytes its ranks sent and received, in bins over the run: bounded by
/// nodes × bins.
struct Counters {
    width: f64,
    /// Per node, per bin; none when the run has no call or no length.
    sent: Vec<Vec<f64>>,
    recv: Vec<Vec<f64>>,
}

impl Counters {
    fn new(extent: &TraceExtent, nodes: usize) -> Counters {
        let t_end = extent.end_s;
        if extent.calls == 0 || t_end <= 0.0 {
            return Counters {
                width: 0.0,
                sent: Vec::new(),
                recv: Vec::new(),
            };
        }
        let width = BIN_S.max(t_end / MAX_BINS as f64);
        let nbins = ((t_end / width).ceil() as usize).clamp(1, MAX_BINS);
        let nodes = nodes.max(1);
        Counters {
            width,
            sent: vec![vec![0.0; nbins]; nodes],
            recv: vec![vec![0.0; nbins]; nodes],
        }
    }

    /// Spreads the bytes of record `r` (of the rank `meta` describes, on node `node`)
    /// evenly over its measured span (a nonblocking one: post to completion).
    fn add(&mut self, node: u32, meta: &RankMeta, r: &Record, origin: i64) {
        let node = node as usize;
        if node >= self.sent.len() {
            return;
        }
        let t0 = RunTrace::seconds_since(meta, r.t_start, origin);
        let t1 = RunTrace::seconds_since(meta, r.t_end, origin);
        spread(
            &mut self.sent[node],
            self.width,
            t0,
            t1,
            r.bytes_send as f64,
        );
        spread(
            &mut self.recv[node],
            self.width,
            t0,
            t1,
            r.bytes_recv as f64,
        );
    }

    /// The counter events, per node in bin order (a bin equal to the one before left
    /// out), each node's closed by a zero.
    fn events(&self, out: &mut String) {
        let width = self.width;
        for (node, (sent, recv)) in self.sent.iter().zip(&self.recv).enumerate() {
            let mut last = (-1.0, -1.0);
            for b in 0..sent.len() {
                let v = (sent[b] / width, recv[b] / width);
                if v == last {
                    continue;
                }
                last = v;
                let ts = (b as f64 * width * 1e9).round() as i64;
                let _ = writeln!(
                    out,
                    "{{\"ph\":\"C\",\"name\":\"MPI bandwidth (B/s)\",\"pid\":{node},\"tid\":0,\"ts\":{},\"args\":{{\"sent\":{:.0},\"received\":{:.0}}}}},",
                    us(ts),
                    v.0,
                    v.1
                );
            }
            let ts = (sent.len() as f64 * width * 1e9).round() as i64;
            let _ = writeln!(
                out,
                "{{\"ph\":\"C\",\"name\":\"MPI bandwidth (B/s)\",\"pid\":{node},\"tid\":0,\"ts\":{},\"args\":{{\"sent\":0,\"received\":0}}}},",
                us(ts)
            );
        }
    }
}

/// The track, in each node's process, of the windows in which TCP's retransmission
/// timeouts fired there (`summary.json`'s `network`).
const TIMEOUT_TID: u64 = 999_999;

/// A slice per window in which a node's retransmission timeouts fired, on a track of the
/// node's own: a call much longer than predicted beside one was held by TCP.
fn timeout_events(run: &RunTrace, placement: &Placement, out: &mut String) {
    for n in super::network(run) {
        let Some(pid) = placement.names.iter().position(|x| *x == n.node) else {
            continue;
        };
        if n.timeouts_at.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{TIMEOUT_TID},\"args\":{{\"name\":\"TCP retransmission timeouts\"}}}},"
        );
        for t in &n.timeouts_at {
            let from = (t.from_s * 1e9).round() as i64;
            let to = (t.to_s * 1e9).round() as i64;
            let _ = writeln!(
                out,
                "{{\"ph\":\"X\",\"name\":\"TCP retransmission timeout x{}\",\"pid\":{pid},\"tid\":{TIMEOUT_TID},\"ts\":{},\"dur\":{},\"args\":{{\"timeouts\":{},\"segments_retransmitted\":{}}}}},",
                t.timeouts,
                us(from),
                us(to - from),
                t.timeouts,
                t.segments_retransmitted
            );
        }
    }
}

/// What both writers gather from the slices as they come in [`super::Timeline`] order:
/// the tracks, the counters, the windows' sizes. Bounded by ranks × threads, nodes ×
/// bins and the windows.
struct Tally {
    /// Per rank index, the threads its calls came from (sorted).
    threads: Vec<Vec<u16>>,
    counters: Counters,
    /// Per window: the bytes of its slices and their number.
    window_len: Vec<u64>,
    window_calls: Vec<u64>,
    /// Per window: what the flows whose sender is in it take (the batch writer's).
    flow_bytes: Vec<u64>,
    calls: usize,
}

impl Tally {
    fn new(run: &RunTrace, placement: &Placement, extent: &TraceExtent) -> Tally {
        Tally {
            threads: vec![Vec::new(); run.ranks.len()],
            counters: Counters::new(extent, placement.nodes()),
            window_len: vec![0; WINDOWS],
            window_calls: vec![0; WINDOWS],
            flow_bytes: vec![0; WINDOWS],
            calls: 0,
        }
    }

    /// Counts the slice of record `r` of rank index `ri`, `len` bytes in window `w`.
    fn add(&mut self, frame: &Frame, ri: usize, meta: &RankMeta, r: &Record, w: usize, len: usize) {
        if let Some(t) = self.threads.get_mut(ri)
            && let Err(k) = t.binary_search(&r.thread)
        {
            t.insert(k, r.thread);
        }
        let node = frame.pid.get(ri).copied().unwrap_or(0);
        self.counters.add(node, meta, r, frame.origin);
        self.window_len[w] += len as u64;
        self.window_calls[w] += 1;
        self.calls += 1;
    }

    /// The metadata and counter events: what comes before the slices, kept whole.
    fn fixed(&self, run: &RunTrace, placement: &Placement, frame: &Frame) -> String {
        let mut out = String::new();
        for (id, name) in placement.names.iter().enumerate() {
            let _ = writeln!(
                out,
                "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{id},\"tid\":0,\"args\":{{\"name\":{}}}}},",
                jstr(&format!("node {name}"))
            );
            let _ = writeln!(
                out,
                "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{id},\"tid\":0,\"args\":{{\"sort_index\":{id}}}}},"
            );
        }
        // One track per (rank, thread) that has calls, and thread 0 of every rank.
        let mut seen = std::collections::BTreeSet::new();
        for (ri, rk) in run.ranks.iter().enumerate() {
            let mut threads = self.threads.get(ri).cloned().unwrap_or_default();
            if let Err(k) = threads.binary_search(&0) {
                threads.insert(k, 0);
            }
            for t in threads {
                let (pid, tid) = frame.track(ri, &rk.meta, t);
                if !seen.insert((pid, tid)) {
                    continue;
                }
                let name = if t == 0 {
                    format!("rank {}", rk.meta.rank)
                } else {
                    format!("rank {} thread {t}", rk.meta.rank)
                };
                let _ = writeln!(
                    out,
                    "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}},",
                    jstr(&name)
                );
                let _ = writeln!(
                    out,
                    "{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"sort_index\":{tid}}}}},"
                );
            }
        }
        self.counters.events(&mut out);
        timeout_events(run, placement, &mut out);
        out
    }

    /// Which windows fit `max_bytes` beside the fixed part (`fixed` bytes).
    fn sampling(&self, fixed: usize, max_bytes: u64) -> Sampling {
        // A slice or flow counts its bytes and one more, as a budget.
        let window_bytes: Vec<u64> = (0..WINDOWS)
            .map(|w| self.window_len[w] + self.window_calls[w] + self.flow_bytes[w])
            .collect();
        let total: u64 = window_bytes.iter().sum();
        let budget = max_bytes.saturating_sub(fixed as u64 + HEADER_RESERVE);
        let stride = if total <= budget {
            Some(1)
        } else {
            choose_stride(&window_bytes, budget)
        };
        let kept_calls = (0..WINDOWS)
            .filter(|&w| stride.is_some_and(|k| w.is_multiple_of(k)))
            .map(|w| self.window_calls[w])
            .sum::<u64>() as usize;
        Sampling {
            stride,
            kept_calls,
            total_calls: self.calls,
            would_be: total + fixed as u64,
        }
    }
}

/// Which windows a trace.json keeps.
struct Sampling {
    /// Every `stride`-th window (None: not even the first fits).
    stride: Option<usize>,
    kept_calls: usize,
    total_calls: usize,
    /// Bytes the whole file would take (about).
    would_be: u64,
}

impl Sampling {
    fn keep(&self, w: usize) -> bool {
        self.stride.is_some_and(|k| w.is_multiple_of(k))
    }

    fn sampled(&self) -> bool {
        self.kept_calls < self.total_calls
    }
}

/// Writes trace.json to `path`, at most about `max_bytes` long: the slices in
/// [`super::Timeline`] order, then the flow arrows in the order [`FlowMatch`] completes
/// them. Two passes over the rows, as the streamed report makes them: [`TraceCount`]
/// sizes every window, [`TraceWriter`] writes the kept ones.
pub fn write_trace(
    path: &Path,
    run: &RunTrace,
    pred: &RunPrediction,
    max_bytes: u64,
) -> Result<TraceStats, Error> {
    let pred_of = |ri: usize, i: usize| -> CallPrediction {
        pred.calls
            .get(ri)
            .and_then(|c| c.get(i))
            .copied()
            .unwrap_or_default()
    };
    let mut count = TraceCount::new(run, TraceExtent::of_run(run));
    for (_, ri, i) in super::Timeline::new(run) {
        let rk = &run.ranks[ri];
        count.row(ri, &rk.meta, i as u32, &rk.records[i], &pred_of(ri, i))?;
    }
    let mut w = count.plan(&pred.model, max_bytes).create(path)?;
    for (_, ri, i) in super::Timeline::new(run) {
        let rk = &run.ranks[ri];
        w.row(ri, &rk.meta, i as u32, &rk.records[i], &pred_of(ri, i))?;
    }
    w.finish()
}

/// A flow's two events (flow `id`), bound to their enclosing slices at the slices'
/// midpoints.
fn flow_events(id: u64, a: End, b: End, out: &mut impl Text) {
    for (head, e) in [
        (
            &b"{\"ph\":\"s\",\"cat\":\"msg\",\"name\":\"message\",\"id\":"[..],
            a,
        ),
        (
            &b"{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"msg\",\"name\":\"message\",\"id\":"[..],
            b,
        ),
    ] {
        out.bytes(head);
        out.uint(id);
        put_place(out, e.pid as u64, e.tid, e.mid);
        out.bytes(b"},\n");
    }
}

/// One end of a flow arrow: its record (rank index, record number), its slice's track
/// and midpoint, its window.
#[derive(Debug, Clone, Copy, PartialEq)]
struct End {
    id: (u32, u32),
    pid: u32,
    tid: u64,
    mid: i64,
    window: u32,
}

/// A message channel: (source, destination, tag), WORLD ranks.
type Channel = (i32, i32, i32);

/// The matched point-to-point messages of a run read one record at a time in
/// [`super::Timeline`] order, as the engine's plan matches them
/// (`RunPrediction::arrows`): the k-th send of a (source, destination, tag) channel with
/// its k-th receive ([`Fifo`]), a nonblocking receive drawn to the completion call of its
/// thread that returned at its end ([`Completions`]), else to itself. Each arrow is told
/// once both its ends are known, so both writers number and order them alike.
///
/// Held: the messages not matched yet, and per thread the completion calls and requests
/// its calls have not passed yet (a thread entering a call after `end` will not enter the
/// completion call that returns at `end`): bounded by what is in flight, not the run.
struct FlowMatch {
    /// Per rank index: its WORLD rank, and the op of each of its call numbers.
    ranks: Vec<(i32, Vec<CallKind>, Vec<Op>)>,
    one_node: bool,
    placement: Placement,
    protocol: Protocol,
    /// Sends waiting for their receive; receives (with the call they are drawn to, once
    /// known) waiting for their send.
    fifo: Fifo<Channel, End, (End, Option<End>)>,
    /// Per rank index.
    completions: Vec<Completions>,
    /// Per (rank index, thread): the completion calls read (by end, in call order), and
    /// the ends of the receives waiting for one.
    calls: FxMap<(u32, u16), VecDeque<(u64, End)>>,
    pending: FxMap<(u32, u16), BinaryHeap<Reverse<u64>>>,
    /// Nonblocking receives waiting for their completion call.
    unresolved: FxMap<(u32, u32), End>,
    /// Receives whose call is known, not matched yet; matched ones whose call is not.
    drawn_to: FxMap<(u32, u32), End>,
    matched: FxMap<(u32, u32), End>,
}

impl FlowMatch {
    fn new(run: &RunTrace, placement: &Placement) -> FlowMatch {
        let ranks = run
            .ranks
            .iter()
            .map(|rk| {
                let kinds = graph::kind_table(&rk.meta.calls);
                let ops = kinds
                    .iter()
                    .enumerate()
                    .map(|(c, &k)| op_of(k, rk.meta.calls.get(c).map_or("", String::as_str)))
                    .collect();
                (rk.meta.rank, kinds, ops)
            })
            .collect();
        FlowMatch {
            ranks,
            one_node: placement.nodes() <= 1,
            placement: placement.clone(),
            // Whether a record sends a message does not depend on the protocol.
            protocol: Protocol::for_library(""),
            fifo: Fifo::default(),
            completions: (0..run.ranks.len())
                .map(|_| Completions::default())
                .collect(),
            calls: FxMap::default(),
            pending: FxMap::default(),
            unresolved: FxMap::default(),
            drawn_to: FxMap::default(),
            matched: FxMap::default(),
        }
    }

    /// Record `r` (its slice `me`), the next in Timeline order; `flow` is told each arrow
    /// (send, receiving call) it completes.
    fn row(&mut self, r: &Record, me: End, flow: &mut dyn FnMut(End, End)) {
        let ri = me.id.0;
        let Some((me_rank, kinds, ops)) = self.ranks.get(ri as usize) else {
            return;
        };
        let me_rank = *me_rank;
        let kind = graph::kind_in(kinds, r.call);
        let op = ops
            .get(r.call as usize)
            .copied()
            .unwrap_or(op_of(CallKind::Unknown, ""));
        // Which flushes replay as local work does not change what is drawn.
        let op = record_op(op, kind, r, self.one_node, false, 0);
        let key = (ri, r.thread);
        // What this thread is past: the completion calls that returned before this call
        // was entered, and the requests no completion call will name.
        if let Some(q) = self.calls.get_mut(&key) {
            while q.front().is_some_and(|&(end, _)| end < r.t_start) {
                let (end, _) = q.pop_front().expect("a front");
                self.completions[ri as usize].forget(r.thread, end);
            }
        }
        if let Some(h) = self.pending.get_mut(&key) {
            let mut gone = Vec::new();
            while let Some(&Reverse(end)) = h.peek()
                && end < r.t_start
            {
                h.pop();
                gone.extend(self.completions[ri as usize].give_up(r.thread, end));
            }
            for rec in gone {
                if let Some(own) = self.unresolved.remove(&(ri, rec)) {
                    self.drawn((ri, rec), own, flow);
                }
            }
        }
        if op == Op::Complete {
            let mut found = Vec::new();
            self.completions[ri as usize].call(r.thread, r.t_end, me.id.1, |o| found.push(o));
            self.calls.entry(key).or_default().push_back((r.t_end, me));
            for rec in found {
                if self.unresolved.remove(&(ri, rec)).is_some() {
                    self.drawn((ri, rec), me, flow);
                }
            }
        }
        let source = receive_source(op, r);
        // The call a receive is drawn to: itself, or a nonblocking one's completion call.
        let to = match source {
            Some(_) if r.flags & FLAG_NONBLOCKING != 0 => {
                match self.completions[ri as usize].operation(r.thread, r.t_end, me.id.1) {
                    Some(c) => self
                        .calls
                        .get(&key)
                        .and_then(|q| {
                            q.iter()
                                .rev()
                                .find(|&&(end, e)| end == r.t_end && e.id.1 == c)
                        })
                        .map_or(Some(me), |&(_, e)| Some(e)),
                    None => {
                        self.unresolved.insert(me.id, me);
                        self.pending.entry(key).or_default().push(Reverse(r.t_end));
                        None
                    }
                }
            }
            _ => Some(me),
        };
        if sent_message(op, me_rank, r, &self.placement, self.protocol).is_some()
            && let Some((recv, to)) = self.fifo.a((me_rank, r.peer, r.tag), me)
        {
            self.matched_pair(me, recv, to, flow);
        }
        if let Some(src) = source
            && let Some(send) = self.fifo.b((src, me_rank, r.recv_tag()), (me, to))
        {
            self.matched_pair(send, me, to, flow);
        }
    }

    /// `send` matched receive `recv`, drawn to `to` if known.
    fn matched_pair(
        &mut self,
        send: End,
        recv: End,
        to: Option<End>,
        flow: &mut dyn FnMut(End, End),
    ) {
        match to.or_else(|| self.drawn_to.remove(&recv.id)) {
            Some(to) => flow(send, to),
            None => {
                self.matched.insert(recv.id, send);
            }
        }
    }

    /// Nonblocking receive `recv` is drawn to `to`.
    fn drawn(&mut self, recv: (u32, u32), to: End, flow: &mut dyn FnMut(End, End)) {
        match self.matched.remove(&recv) {
            Some(send) => flow(send, to),
            None => {
                self.drawn_to.insert(recv, to);
            }
        }
    }

    /// The end of the run: receives no completion call came for are drawn to themselves
    /// (in record order).
    fn finish(&mut self, flow: &mut dyn FnMut(End, End)) {
        let mut left: Vec<((u32, u32), End)> = self.unresolved.drain().collect();
        left.sort_unstable_by_key(|e| e.0);
        for (recv, own) in left {
            self.drawn(recv, own, flow);
        }
    }
}

/// Told each flow a pass completes: its id, its ends, a buffer to format it in.
type TellFlow<'a> = dyn FnMut(u64, End, End, &mut Vec<u8>) + 'a;

/// What both passes over the rows hold: where slices go, the flows matched again (told
/// with their ids, in the order they complete), the window reached.
struct Pass {
    frame: Frame,
    flows: FlowMatch,
    ranks: usize,
    /// Rows and flows seen so far (a flow's id is its number).
    rows: usize,
    flow_count: u64,
    /// The window of the last slice (they must not go back).
    window: usize,
    buf: Vec<u8>,
}

impl Pass {
    fn new(run: &RunTrace, placement: &Placement, extent: &TraceExtent) -> Pass {
        Pass {
            frame: Frame::new(run, placement, extent),
            flows: FlowMatch::new(run, placement),
            ranks: run.ranks.len(),
            rows: 0,
            flow_count: 0,
            window: 0,
            buf: Vec::with_capacity(512),
        }
    }

    /// The window of the slice of record `r` of rank index `ri`, if that row may come
    /// next.
    fn window(&mut self, ri: usize, meta: &RankMeta, r: &Record) -> Result<usize, Error> {
        if ri >= self.ranks {
            return Err(Error::Internal(format!(
                "trace.json: rank index {ri} of {}",
                self.ranks
            )));
        }
        let w = self.frame.window_at(span(meta, r, self.frame.origin).0);
        if w < self.window {
            return Err(Error::Internal(format!(
                "trace.json: a slice of window {w} after window {}: rows out of order",
                self.window
            )));
        }
        self.window = w;
        self.rows += 1;
        Ok(w)
    }

    /// Record number `rec` of rank index `ri` to the flow matcher; `tell` gets each flow
    /// it completes (id, ends) and a buffer to format it in.
    fn flows(&mut self, ri: usize, meta: &RankMeta, rec: u32, r: &Record, tell: &mut TellFlow) {
        let me = self.frame.end(ri, meta, r, rec);
        let (count, buf) = (&mut self.flow_count, &mut self.buf);
        self.flows.row(r, me, &mut |a, b| {
            *count += 1;
            tell(*count, a, b, buf);
        });
    }

    /// The end of the rows: the flows left ([`FlowMatch::finish`]).
    fn finish(&mut self, tell: &mut TellFlow) {
        let (count, buf) = (&mut self.flow_count, &mut self.buf);
        self.flows.finish(&mut |a, b| {
            *count += 1;
            tell(*count, a, b, buf);
        });
    }
}

/// The run's metadata alone (a loaded run's records are not needed for its tracks).
fn shell_of(run: &RunTrace) -> RunTrace {
    RunTrace {
        ranks: run
            .ranks
            .iter()
            .map(|rk| crate::trace::RankTrace {
                meta: rk.meta.clone(),
                ..Default::default()
            })
            .collect(),
        world_size: run.world_size,
        missing: Vec::new(),
    }
}

/// trace.json's first pass: the rows, one at a time in [`super::Timeline`] order (the
/// loaded run's, or `analyze --stream`'s row loop), each slice and flow formatted into one
/// reused buffer and only counted: the tracks, the counters, each window's bytes. Nothing
/// is written; memory bounded by ranks × threads, nodes × bins, the windows and the
/// messages in flight. [`TraceCount::plan`] chooses the windows kept; a second pass over
/// the same rows ([`TraceWriter`]) writes them.
pub struct TraceCount {
    run: RunTrace,
    placement: Placement,
    extent: TraceExtent,
    pass: Pass,
    tally: Tally,
}

impl TraceCount {
    /// For the run whose metadata `shell` holds (a loaded run, or
    /// [`crate::trace::order::RunOrder::loaded_shell`]), of extent `extent`
    /// ([`TraceExtent::of_run`], [`TraceExtent::read`]).
    pub fn new(shell: &RunTrace, extent: TraceExtent) -> TraceCount {
        let run = shell_of(shell);
        let placement = Placement::from_run(&run);
        TraceCount {
            pass: Pass::new(&run, &placement, &extent),
            tally: Tally::new(&run, &placement, &extent),
            run,
            placement,
            extent,
        }
    }

    /// The slice of record number `rec` of rank index `ri`, `r` (its rank's metadata
    /// `meta`), predicted as `p`: the next row in [`super::Timeline`] order.
    pub fn row(
        &mut self,
        ri: usize,
        meta: &RankMeta,
        rec: u32,
        r: &Record,
        p: &CallPrediction,
    ) -> Result<(), Error> {
        let w = self.pass.window(ri, meta, r)?;
        // Measured, not written: the same formatter, without its digits.
        let mut len = Measure::default();
        self.pass.frame.slice(ri, meta, r, p, &mut len);
        self.tally.add(&self.pass.frame, ri, meta, r, w, len.0);
        let bytes = &mut self.tally.flow_bytes;
        self.pass.flows(ri, meta, rec, r, &mut |id, a, b, _| {
            count_flow(bytes, id, a, b)
        });
        Ok(())
    }

    /// Which windows trace.json keeps to stay within about `max_bytes` (the run predicted
    /// under `model`, its name).
    pub fn plan(mut self, model: &str, max_bytes: u64) -> TracePlan {
        let bytes = &mut self.tally.flow_bytes;
        self.pass
            .finish(&mut |id, a, b, _| count_flow(bytes, id, a, b));
        let fixed = self
            .tally
            .fixed(&self.run, &self.placement, &self.pass.frame);
        let sampling = self.tally.sampling(fixed.len(), max_bytes);
        let slice_bytes = (0..WINDOWS)
            .filter(|&w| sampling.keep(w))
            .map(|w| self.tally.window_len[w])
            .sum();
        TracePlan {
            header: header(model, max_bytes, &sampling),
            fixed,
            sampling,
            slice_bytes,
            rows: self.pass.rows,
            flows: self.pass.flow_count,
            max_bytes,
            run: self.run,
            placement: self.placement,
            extent: self.extent,
        }
    }
}

/// Counts flow `id`'s bytes in its sender's window (and one more, as a budget).
fn count_flow(bytes: &mut [u64], id: u64, a: End, b: End) {
    let mut len = Measure::default();
    flow_events(id, a, b, &mut len);
    bytes[a.window as usize] += len.0 as u64 + 1;
}

/// trace.json's first line: how the file was made (`otherData`).
fn header(model: &str, max_bytes: u64, s: &Sampling) -> String {
    format!(
        "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"source\":\"pmpi-predict\",\"model\":{},\"sampled\":{},\"kept_calls\":{},\"total_calls\":{},\"window_stride\":{},\"windows\":{WINDOWS},\"max_bytes\":{max_bytes}}},\"traceEvents\":[\n",
        jstr(model),
        s.sampled(),
        s.kept_calls,
        s.total_calls,
        s.stride.unwrap_or(0),
    )
}

/// What the first pass decided: the file's first line and fixed events, the windows
/// kept and the bytes their slices take, what the second pass must see again.
pub struct TracePlan {
    run: RunTrace,
    placement: Placement,
    extent: TraceExtent,
    header: String,
    fixed: String,
    sampling: Sampling,
    /// The kept slices' bytes: the flows start after them.
    slice_bytes: u64,
    /// Rows and flows the first pass saw.
    rows: usize,
    flows: u64,
    max_bytes: u64,
}

impl TracePlan {
    /// Creates trace.json at `path` and writes its first line and fixed events; the rows
    /// come next ([`TraceWriter::row`]).
    pub fn create(self, path: &Path) -> Result<TraceWriter, Error> {
        let io = |e: std::io::Error| Error::write(path, e);
        let file = std::fs::File::create(path).map_err(io)?;
        let guard = Unfinished(Some(path.to_path_buf()));
        // The kept slices go after the fixed part, the flows after them: two handles on
        // the file, each writing its range in order, so no event waits elsewhere.
        let flows_at = (self.header.len() + self.fixed.len()) as u64 + self.slice_bytes;
        let mut flows = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io)?;
        std::io::Seek::seek(&mut flows, std::io::SeekFrom::Start(flows_at)).map_err(io)?;
        let mut slices = BufWriter::with_capacity(1 << 16, file);
        slices.write_all(self.header.as_bytes()).map_err(io)?;
        slices.write_all(self.fixed.as_bytes()).map_err(io)?;
        Ok(TraceWriter {
            path: path.to_path_buf(),
            pass: Pass::new(&self.run, &self.placement, &self.extent),
            slices,
            flows: BufWriter::with_capacity(1 << 16, flows),
            slices_written: 0,
            flows_written: 0,
            plan: self,
            guard,
        })
    }
}

/// Removes a trace.json left unfinished (an error, or the writer dropped).
struct Unfinished(Option<PathBuf>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            std::fs::remove_file(p).ok();
        }
    }
}

/// trace.json's second pass: the same rows again, in the same order, with the same
/// predictions; the kept windows' slices and the flows both of whose ends are kept are
/// written straight to the file, each at its place. No temporary file; the file goes if
/// the writer fails or is dropped unfinished.
pub struct TraceWriter {
    path: PathBuf,
    plan: TracePlan,
    pass: Pass,
    slices: BufWriter<std::fs::File>,
    flows: BufWriter<std::fs::File>,
    slices_written: u64,
    flows_written: usize,
    /// Last: the handles above are closed before it removes the file.
    guard: Unfinished,
}

impl TraceWriter {
    /// The row [`TraceCount::row`] was given at this place.
    pub fn row(
        &mut self,
        ri: usize,
        meta: &RankMeta,
        rec: u32,
        r: &Record,
        p: &CallPrediction,
    ) -> Result<(), Error> {
        let w = self.pass.window(ri, meta, r)?;
        let io = |e: std::io::Error| Error::write(&self.path, e);
        let s = &self.plan.sampling;
        if s.keep(w) {
            let buf = &mut self.pass.buf;
            buf.clear();
            self.pass.frame.slice(ri, meta, r, p, buf);
            self.slices.write_all(buf).map_err(io)?;
            self.slices_written += buf.len() as u64;
        }
        let mut out = KeptFlows {
            keep: s,
            w: &mut self.flows,
            written: &mut self.flows_written,
            failed: None,
        };
        self.pass.flows(ri, meta, rec, r, &mut |id, a, b, buf| {
            out.flow(id, a, b, buf)
        });
        out.failed.map_or(Ok(()), |e| Err(io(e)))
    }

    /// The flows left, the closing event; says on stderr when it sampled.
    pub fn finish(mut self) -> Result<TraceStats, Error> {
        let path = self.path.clone();
        let io = |e: std::io::Error| Error::write(&path, e);
        let plan = &self.plan;
        let mut out = KeptFlows {
            keep: &plan.sampling,
            w: &mut self.flows,
            written: &mut self.flows_written,
            failed: None,
        };
        self.pass
            .finish(&mut |id, a, b, buf| out.flow(id, a, b, buf));
        if let Some(e) = out.failed {
            return Err(io(e));
        }
        let seen = (self.pass.rows, self.slices_written, self.pass.flow_count);
        let counted = (plan.rows, plan.slice_bytes, plan.flows);
        if seen != counted {
            return Err(Error::Internal(format!(
                "trace.json: the second pass saw {seen:?} (rows, kept slice bytes, flows), the first {counted:?}"
            )));
        }
        self.slices.flush().map_err(io)?;
        // Every event above ends with ",\n"; this one closes the array without a trailing
        // comma.
        self.flows
            .write_all(b"{\"ph\":\"M\",\"name\":\"trace_end\",\"pid\":0,\"tid\":0,\"args\":{}}]}\n")
            .map_err(io)?;
        self.flows.flush().map_err(io)?;
        let bytes = self
            .flows
            .get_ref()
            .metadata()
            .map(|m| m.len())
            .unwrap_or(0);
        self.guard.0 = None;
        let s = &plan.sampling;
        let (n, kept_calls, sampled) = (s.total_calls, s.kept_calls, s.sampled());
        if sampled {
            crate::say_line!(
                "pmpi-predict: trace.json would be {:.1} MB, above the cap of {:.1} MB (PMPI_PREDICT_TRACE_MAX_MB): kept {kept_calls} of {n} calls ({} of {WINDOWS} time windows; see otherData)",
                s.would_be as f64 / 1e6,
                plan.max_bytes as f64 / 1e6,
                s.stride
                    .map_or("none".to_string(), |k| format!("one in {k}")),
            );
        }
        Ok(TraceStats {
            bytes,
            total_calls: n,
            kept_calls,
            flows: self.flows_written,
            stride: s.stride.unwrap_or(0),
            sampled,
        })
    }
}

/// Where the second pass writes each flow [`FlowMatch`] tells, if both its ends are kept.
struct KeptFlows<'a> {
    keep: &'a Sampling,
    w: &'a mut BufWriter<std::fs::File>,
    written: &'a mut usize,
    failed: Option<std::io::Error>,
}

impl KeptFlows<'_> {
    fn flow(&mut self, id: u64, a: End, b: End, buf: &mut Vec<u8>) {
        if self.failed.is_some()
            || !self.keep.keep(a.window as usize)
            || !self.keep.keep(b.window as usize)
        {
            return;
        }
        buf.clear();
        flow_events(id, a, b, buf);
        match self.w.write_all(buf) {
            Ok(()) => *self.written += 1,
            Err(e) => self.failed = Some(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stride_is_the_smallest_that_fits() {
        let w = [10, 10, 10, 10, 10, 10];
        assert_eq!(choose_stride(&w, 60), Some(1));
        assert_eq!(choose_stride(&w, 30), Some(2));
        assert_eq!(choose_stride(&w, 20), Some(3));
        assert_eq!(choose_stride(&w, 10), Some(6));
        assert_eq!(choose_stride(&w, 9), None);
        // A heavy first window: the stride must leave room beside it.
        assert_eq!(choose_stride(&[50, 1, 1, 1, 1, 1], 51), Some(3));
    }

    #[test]
    fn spreading_keeps_the_bytes() {
        let mut b = vec![0.0; 10];
        spread(&mut b, 1.0, 0.5, 2.5, 200.0);
        assert_eq!(b[0], 50.0);
        assert_eq!(b[1], 100.0);
        assert_eq!(b[2], 50.0);
        assert_eq!(b.iter().sum::<f64>(), 200.0);
        // A zero-length call lands in its bin; past the end lands in the last.
        spread(&mut b, 1.0, 3.0, 3.0, 7.0);
        assert_eq!(b[3], 7.0);
        spread(&mut b, 1.0, 9.5, 12.0, 10.0);
        assert_eq!(b[9], 10.0);
        spread(&mut b, 1.0, f64::NAN, 1.0, 10.0);
        assert_eq!(b.iter().sum::<f64>(), 217.0);
    }

    #[test]
    fn microseconds_keep_nanoseconds() {
        assert_eq!(us(1_234_567), "1234.567");
        assert_eq!(us(5), "0.005");
        assert_eq!(us(-1500), "-1.500");
        assert_eq!(us(-1), "-0.001");
        let mut s = Vec::new();
        put_num(&mut s, f64::NAN);
        assert_eq!(s, b"null");
        s.clear();
        put_jstr(&mut s, "MPI_Send");
        put_jstr(&mut s, "a\"b\\c\u{1}é");
        assert_eq!(
            s,
            format!("\"MPI_Send\"{}", jstr("a\"b\\c\u{1}é")).as_bytes()
        );
    }

    /// The rows of `run` (loaded from `dir`) predicted as `pred` to `f`, from the loaded
    /// run in `Timeline` order or from a read of the spools in time order (`RunOrder`, as
    /// `analyze --stream`'s row loop gives them).
    fn each_row(
        dir: &Path,
        run: &RunTrace,
        pred: &RunPrediction,
        from_spools: bool,
        f: &mut dyn FnMut(usize, &RankMeta, u32, &Record, &CallPrediction),
    ) {
        if from_spools {
            let mut order = crate::trace::order::RunOrder::open(dir).unwrap();
            while let Some((_, ri, call)) = order.next_call().unwrap() {
                let p = pred.calls[ri][call.rec as usize];
                f(ri, &order.metas[ri], call.rec, &call.record, &p);
            }
        } else {
            for (_, ri, i) in crate::report::Timeline::new(run) {
                let rk = &run.ranks[ri];
                f(ri, &rk.meta, i as u32, &rk.records[i], &pred.calls[ri][i]);
            }
        }
    }

    /// The streamed writer's two passes ([`TraceCount`], [`TraceWriter`]) fed the rows of
    /// `run` (loaded from `dir`) predicted as `pred` by [`each_row`], the run's metadata
    /// and extent read from `dir` as the streamed report reads them.
    fn write_streamed(
        dir: &Path,
        run: &RunTrace,
        pred: &RunPrediction,
        max_bytes: u64,
        from_spools: bool,
    ) -> TraceStats {
        use crate::trace::order::RunOrder;
        let shell = RunOrder::open(dir).unwrap().loaded_shell(dir);
        let extent = TraceExtent::read(dir, &shell).unwrap();
        assert_eq!(extent, TraceExtent::of_run(run));
        let path = dir.join("trace.json");
        let mut count = TraceCount::new(&shell, extent);
        each_row(dir, run, pred, from_spools, &mut |ri, meta, rec, r, p| {
            count.row(ri, meta, rec, r, p).unwrap()
        });
        let mut w = count.plan(&pred.model, max_bytes).create(&path).unwrap();
        each_row(dir, run, pred, from_spools, &mut |ri, meta, rec, r, p| {
            w.row(ri, meta, rec, r, p).unwrap()
        });
        w.finish().unwrap()
    }

    /// Random runs (the streamed reports' cases) under `gige` and without a model, with
    /// predictions and waits made extreme now and then (NaN, infinite, negative, above
    /// 10^9 s, `None`): every slice and flow event measured ([`Measure`], the first pass)
    /// is as long as the one written (the second), and the writes are not all alike.
    #[test]
    fn measured_events_are_as_long_as_written_ones() {
        use crate::predict::{Assumptions, predict_run_with};
        use crate::profile::Profile;
        let mut rnd = crate::testing::xorshift(0x7ace_5eed_0000_0002);
        let dir = std::env::temp_dir().join(format!("pmpi-tracemeasure-{}", std::process::id()));
        let profile = Profile::builtin_default();
        let odd = [
            f64::NAN,
            f64::INFINITY,
            -2.5e-7,
            3.2e9,
            -0.0,
            999_999_999.999_999_9,
        ];
        let (mut slices, mut flows, mut lengths) = (0, 0, std::collections::BTreeSet::new());
        for case in 0..24 {
            crate::testing::write_random_case(&mut rnd, &dir, case, 20, 10);
            let run = crate::trace::load_run(&dir).unwrap();
            let placement = Placement::from_run(&run);
            let frame = Frame::new(&run, &placement, &TraceExtent::of_run(&run));
            for model in ["gige", "none"] {
                let pred =
                    predict_run_with(&run, &profile, Some(model), &Assumptions::default()).unwrap();
                let mut m = FlowMatch::new(&run, &placement);
                let mut id = 0u64;
                let mut check_flow = |a: End, b: End| {
                    id += 1;
                    let (mut text, mut len) = (Vec::new(), Measure::default());
                    flow_events(id, a, b, &mut text);
                    flow_events(id, a, b, &mut len);
                    assert_eq!(len.0, text.len(), "case {case}: flow {id}");
                    flows += 1;
                };
                for (_, ri, i) in crate::report::Timeline::new(&run) {
                    let rk = &run.ranks[ri];
                    let r = &rk.records[i];
                    let mut p = pred.calls[ri][i];
                    if rnd(4) == 0 {
                        let v: Vec<f64> = (0..5)
                            .map(|_| odd[rnd(odd.len() as u64) as usize])
                            .collect();
                        p.predicted = (rnd(2) == 0).then_some(v[0]);
                        p.free = (rnd(2) == 0).then_some(v[1]);
                        p.wait.seconds = v[2];
                        p.measured_wait.seconds = v[3];
                        p.contention = v[4];
                    }
                    let (mut text, mut len) = (Vec::new(), Measure::default());
                    let w = frame.slice(ri, &rk.meta, r, &p, &mut text);
                    assert_eq!(frame.slice(ri, &rk.meta, r, &p, &mut len), w);
                    assert_eq!(
                        len.0,
                        text.len(),
                        "case {case}: rank index {ri}, record {i}"
                    );
                    lengths.insert(text.len());
                    slices += 1;
                    m.row(r, frame.end(ri, &rk.meta, r, i as u32), &mut check_flow);
                }
                m.finish(&mut check_flow);
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            slices > 2_500 && flows > 300 && lengths.len() > 50,
            "{slices} slices, {flows} flows, {} lengths",
            lengths.len()
        );
    }

    /// The arrows [`FlowMatch`] finds over the rows of `run` in Timeline order, by global
    /// id (as `RunPrediction::arrows`), sorted.
    fn rematched(run: &RunTrace) -> Vec<(u32, u32)> {
        let placement = Placement::from_run(run);
        let frame = Frame::new(run, &placement, &TraceExtent::of_run(run));
        let mut base = Vec::new();
        let mut n = 0u32;
        for rk in &run.ranks {
            base.push(n);
            n += rk.records.len() as u32;
        }
        let mut m = FlowMatch::new(run, &placement);
        let mut found = Vec::new();
        let gid = |e: End| base[e.id.0 as usize] + e.id.1;
        for (_, ri, i) in crate::report::Timeline::new(run) {
            let rk = &run.ranks[ri];
            let r = &rk.records[i];
            m.row(r, frame.end(ri, &rk.meta, r, i as u32), &mut |a, b| {
                found.push((gid(a), gid(b)))
            });
        }
        m.finish(&mut |a, b| found.push((gid(a), gid(b))));
        found.sort_unstable();
        found
    }

    /// Random runs written to spools (the streamed reports' cases: clock offsets, two
    /// threads, nonblocking sends, receives and waits, long runs, a rank's spool lost),
    /// under `gige` and without a model, at caps from none to nothing kept (strides of 1
    /// to the window count): the streamed trace.json is the batch writer's byte for byte,
    /// flows included, fed from the loaded run or from a second read of the spools; the
    /// same stats; its extent, read from the spools, is the loaded run's; the flows
    /// matched again over the rows are the engine's (`RunPrediction::arrows`); every
    /// flow kept has both ends; no temporary file stays.
    /// A node's windows of TCP retransmission timeouts are slices on a track of its own,
    /// where summary.json's network section puts them on the run's clock.
    #[test]
    fn timeouts_are_slices_on_their_node_s_own_track() {
        use crate::predict::{Assumptions, predict_run_with};
        use crate::profile::Profile;
        let mut rnd = crate::testing::xorshift(0x7ace_5eed_0000_0003);
        let mut run = crate::testing::random_case(&mut rnd, 1, 20, 1);
        crate::testing::add_net_counters(&mut run);
        let pred = predict_run_with(
            &run,
            &Profile::builtin_default(),
            Some("gige"),
            &Assumptions::default(),
        )
        .unwrap();
        let path = std::env::temp_dir().join(format!("pmpi-tracetcp-{}.json", std::process::id()));
        write_trace(&path, &run, &pred, 1 << 30).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let on_track: Vec<&serde_json::Value> =
            events.iter().filter(|e| e["tid"] == TIMEOUT_TID).collect();
        let placement = Placement::from_run(&run);
        let node0 = placement
            .names
            .iter()
            .position(|n| *n == run.ranks[0].meta.node)
            .unwrap();
        // The track's name, then one slice per window, in rank 0's node's process.
        assert_eq!(on_track.len(), 3, "{on_track:?}");
        assert!(on_track.iter().all(|e| e["pid"] == node0));
        assert_eq!(on_track[0]["ph"], "M");
        let net = crate::report::network(&run);
        let told = net.iter().find(|n| n.rank == 0).unwrap();
        assert_eq!(told.retransmission_timeouts, 3);
        for (e, t) in on_track[1..].iter().zip(&told.timeouts_at) {
            assert_eq!(e["ph"], "X");
            assert_eq!(e["args"]["timeouts"], t.timeouts);
            let ts = e["ts"].as_f64().unwrap();
            let dur = e["dur"].as_f64().unwrap();
            assert!((ts - t.from_s * 1e6).abs() < 1e-3, "{e} {t:?}");
            assert!((dur - 200.0).abs() < 1e-3, "{e}");
        }
        // The other ranks' nodes saw none: no track.
        assert_eq!(net.iter().filter(|n| !n.timeouts_at.is_empty()).count(), 1);
    }

    #[test]
    fn the_streamed_trace_is_the_batch_one() {
        use crate::predict::{Assumptions, predict_run_with};
        use crate::profile::Profile;
        let mut rnd = crate::testing::xorshift(0x7ace_5eed_0000_0001);
        let dir = std::env::temp_dir().join(format!("pmpi-tracestream-{}", std::process::id()));
        let profile = Profile::builtin_default();
        let (mut files, mut strided, mut none_kept, mut calls) = (0, 0, 0, 0);
        let (mut threads, mut arrows, mut drawn_to_completion, mut flows_cut) = (0, 0, 0, 0);
        for case in 0..30 {
            crate::testing::write_random_case(&mut rnd, &dir, case, 20, 10);
            let run = crate::trace::load_run(&dir).unwrap();
            threads += run
                .ranks
                .iter()
                .filter(|rk| rk.records.iter().any(|r| r.thread != 0))
                .count();
            for model in ["gige", "none"] {
                let pred =
                    predict_run_with(&run, &profile, Some(model), &Assumptions::default()).unwrap();
                let mut engine = pred.arrows.clone();
                engine.sort_unstable();
                assert_eq!(rematched(&run), engine, "case {case}");
                arrows += engine.len();
                // Arrows ending at another record than the receive's: its completion call.
                drawn_to_completion += engine
                    .iter()
                    .filter(|&&(_, b)| {
                        let mut g = b as usize;
                        let rk = run.ranks.iter().find(|rk| {
                            let here = g < rk.records.len();
                            if !here {
                                g -= rk.records.len();
                            }
                            here
                        });
                        rk.is_some_and(|rk| rk.records[g].flags & FLAG_NONBLOCKING == 0)
                            && rk.is_some_and(|rk| {
                                crate::trace::call_name(rk.records[g].call).contains("Wait")
                            })
                    })
                    .count();
                let path = dir.join("trace.json");
                let whole = write_trace(&path, &run, &pred, u64::MAX).unwrap();
                assert_eq!(whole.flows, engine.len());
                for cap in [
                    u64::MAX,
                    whole.bytes / 2,
                    whole.bytes / 7,
                    whole.bytes / 40,
                    2500,
                    0,
                ] {
                    let batch_stats = write_trace(&path, &run, &pred, cap).unwrap();
                    let batch = std::fs::read(&path).unwrap();
                    std::fs::remove_file(&path).unwrap();
                    for from_spools in [false, true] {
                        let stats = write_streamed(&dir, &run, &pred, cap, from_spools);
                        let text = std::fs::read(&path).unwrap();
                        assert!(
                            text == batch,
                            "case {case}, {model}, cap {cap}, from spools {from_spools}: trace.json differs"
                        );
                        assert_eq!(stats, batch_stats);
                        // The file is JSON and holds what it says it kept; every flow
                        // kept has both its ends.
                        let v: serde_json::Value = serde_json::from_slice(&text).unwrap();
                        let events = v["traceEvents"].as_array().unwrap();
                        // Calls' slices; TCP's timeouts have a track of their own.
                        let count = |ph: &str| {
                            events
                                .iter()
                                .filter(|e| e["ph"] == ph && e["tid"] != TIMEOUT_TID)
                                .count()
                        };
                        assert_eq!(count("X"), stats.kept_calls, "case {case}");
                        assert_eq!((count("s"), count("f")), (stats.flows, stats.flows));
                        assert_eq!(stats.bytes, text.len() as u64);
                        std::fs::remove_file(&path).unwrap();
                        let left: Vec<_> = std::fs::read_dir(&dir)
                            .unwrap()
                            .filter_map(|e| e.ok())
                            .filter(|e| e.file_name().to_string_lossy().contains("trace.json"))
                            .collect();
                        assert!(left.is_empty(), "case {case}: {left:?} left");
                        files += 1;
                    }
                    strided += usize::from(batch_stats.stride > 1);
                    none_kept += usize::from(batch_stats.kept_calls == 0);
                    flows_cut +=
                        usize::from(batch_stats.flows > 0 && batch_stats.flows < whole.flows);
                    calls += batch_stats.total_calls;
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        eprintln!(
            "{files} files, {strided} sampled, {none_kept} with nothing kept, {flows_cut} with flows cut, {calls} calls, {threads} ranks with threads, {arrows} arrows, {drawn_to_completion} to a wait"
        );
        assert!(
            files == 720
                && strided > 100
                && none_kept > 10
                && flows_cut > 50
                && calls > 50_000
                && threads > 5
                && arrows > 5_000
                && drawn_to_completion > 100,
            "{files} files, {strided} sampled, {none_kept} with nothing kept, {flows_cut} with flows cut, {calls} calls, {threads} ranks with threads, {arrows} arrows, {drawn_to_completion} to a wait"
        );
    }

    /// Neither pass writes a temporary file; a pass that fails (rows out of order, a rank
    /// index out of range, a second pass that saw other rows than the first, trace.json
    /// not creatable) or a writer dropped unfinished leaves no trace.json, and a whole
    /// second pass leaves one that parses.
    #[test]
    fn the_temporary_file_goes_on_every_path() {
        let mut rnd = crate::testing::xorshift(0x7ace_5eed_0000_0002);
        let dir = std::env::temp_dir().join(format!("pmpi-tracetemp-{}", std::process::id()));
        crate::testing::write_random_case(&mut rnd, &dir, 0, 10, 1);
        let run = crate::trace::load_run(&dir).unwrap();
        let p = CallPrediction::default();
        let extent = TraceExtent::of_run(&run);
        let path = dir.join("trace.json");
        // The names in `dir` that start with "trace.json".
        let traces = || -> Vec<String> {
            let mut v: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("trace.json"))
                .collect();
            v.sort();
            v
        };
        let rows: Vec<(usize, usize)> = crate::report::Timeline::new(&run)
            .map(|(_, ri, i)| (ri, i))
            .collect();
        assert!(rows.len() > 10);
        let (last, first) = (rows[rows.len() - 1], rows[0]);
        let r0 = &run.ranks[0];
        let counted = || {
            let mut c = TraceCount::new(&run, extent);
            for &(ri, i) in &rows {
                let rk = &run.ranks[ri];
                c.row(ri, &rk.meta, i as u32, &rk.records[i], &p).unwrap();
            }
            c.plan("gige", u64::MAX)
        };
        // The first pass: the last row, then the first (out of order), then a rank
        // index out of range; nothing written.
        let mut c = TraceCount::new(&run, extent);
        let rk = &run.ranks[last.0];
        c.row(last.0, &rk.meta, last.1 as u32, &rk.records[last.1], &p)
            .unwrap();
        let rk = &run.ranks[first.0];
        let e = c
            .row(first.0, &rk.meta, first.1 as u32, &rk.records[first.1], &p)
            .unwrap_err();
        assert!(e.to_string().contains("out of order"), "{e}");
        assert!(
            c.row(run.ranks.len(), &r0.meta, 0, &r0.records[0], &p)
                .is_err()
        );
        drop(c);
        assert_eq!(traces(), Vec::<String>::new());
        // The second pass, the same faults: trace.json, being written, goes with it.
        let mut w = counted().create(&path).unwrap();
        assert_eq!(traces(), ["trace.json"]);
        let rk = &run.ranks[last.0];
        w.row(last.0, &rk.meta, last.1 as u32, &rk.records[last.1], &p)
            .unwrap();
        let rk = &run.ranks[first.0];
        let e = w
            .row(first.0, &rk.meta, first.1 as u32, &rk.records[first.1], &p)
            .unwrap_err();
        assert!(e.to_string().contains("out of order"), "{e}");
        assert!(
            w.row(run.ranks.len(), &r0.meta, 0, &r0.records[0], &p)
                .is_err()
        );
        drop(w);
        assert_eq!(traces(), Vec::<String>::new());
        // A second pass given one row less than the first: its finish fails, the file goes.
        let mut w = counted().create(&path).unwrap();
        for &(ri, i) in &rows[1..] {
            let rk = &run.ranks[ri];
            w.row(ri, &rk.meta, i as u32, &rk.records[i], &p).unwrap();
        }
        let e = w.finish().unwrap_err();
        assert!(e.to_string().contains("second pass"), "{e}");
        assert_eq!(traces(), Vec::<String>::new());
        // Every row: the file, JSON, with every slice, and nothing beside it.
        let mut w = counted().create(&path).unwrap();
        for &(ri, i) in &rows {
            let rk = &run.ranks[ri];
            w.row(ri, &rk.meta, i as u32, &rk.records[i], &p).unwrap();
        }
        let s = w.finish().unwrap();
        assert_eq!(traces(), ["trace.json"]);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let slices = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .count();
        assert_eq!((slices, s.kept_calls), (rows.len(), rows.len()));
        std::fs::remove_file(&path).unwrap();
        // trace.json cannot be created (a directory of that name): an error, the
        // directory left as it was.
        std::fs::create_dir(&path).unwrap();
        assert!(counted().create(&path).is_err());
        assert!(path.is_dir());
        assert_eq!(traces(), ["trace.json"]);
        std::fs::remove_dir(&path).unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }

    /// By hand on a recorded run (`PMPI_TRACE_RUN=DIR`, a copy: trace.json and its
    /// streamed twin are written there; `PMPI_TRACE_MAX_MB`, default 64): the streamed
    /// prediction (`predict_stream`) fed to [`TraceCount`] and [`TraceWriter`] from two
    /// more reads of the spools, as `analyze --stream` would, against the batch writer on
    /// the loaded run.
    #[test]
    #[ignore]
    fn streamed_trace_of_a_recorded_run() {
        use crate::predict::stream::predict_stream;
        use crate::predict::{Assumptions, predict_run_with};
        use crate::profile::Profile;
        use crate::trace::order::RunOrder;
        let Some(dir) = std::env::var_os("PMPI_TRACE_RUN").map(std::path::PathBuf::from) else {
            return;
        };
        let cap = std::env::var("PMPI_TRACE_MAX_MB")
            .ok()
            .and_then(|m| m.parse::<u64>().ok())
            .unwrap_or(DEFAULT_MAX_MB)
            * 1_000_000;
        let profile = Profile::builtin_default();
        let assume = Assumptions::default();
        for model in ["gige", "none"] {
            let mut preds = std::collections::HashMap::new();
            predict_stream(
                &dir,
                &profile,
                Some(model),
                &assume,
                &mut |ri, rec, _, c| {
                    preds.insert((ri, rec), c);
                },
            )
            .unwrap();
            let shell = RunOrder::open(&dir).unwrap().loaded_shell(&dir);
            let extent = TraceExtent::read(&dir, &shell).unwrap();
            let streamed = dir.join(format!("trace.streamed-{model}.json"));
            let mut count = TraceCount::new(&shell, extent);
            let mut order = RunOrder::open(&dir).unwrap();
            while let Some((_, ri, call)) = order.next_call().unwrap() {
                let c = preds[&(ri as u32, call.rec)];
                count
                    .row(ri, &order.metas[ri], call.rec, &call.record, &c)
                    .unwrap();
            }
            let mut w = count.plan(model, cap).create(&streamed).unwrap();
            let mut order = RunOrder::open(&dir).unwrap();
            while let Some((_, ri, call)) = order.next_call().unwrap() {
                let c = preds[&(ri as u32, call.rec)];
                w.row(ri, &order.metas[ri], call.rec, &call.record, &c)
                    .unwrap();
            }
            let s = w.finish().unwrap();
            let run = crate::trace::load_run(&dir).unwrap();
            let pred = predict_run_with(&run, &profile, Some(model), &assume).unwrap();
            let batch = dir.join(format!("trace.batch-{model}.json"));
            let b = write_trace(&batch, &run, &pred, cap).unwrap();
            eprintln!("{model}: streamed {s:?}, batch {b:?}");
            assert_eq!(s, b);
            assert!(std::fs::read(&streamed).unwrap() == std::fs::read(&batch).unwrap());
        }
    }

    /// By hand, the streamed writer's own cost on a written run (`PMPI_TRACE_RUN=DIR`):
    /// the extent's read, then two reads in time order, every row counted, then written
    /// with a default prediction (`PMPI_TRACE_ONLY_READ` set: one time-ordered read
    /// alone), to run under `/usr/bin/time`.
    #[test]
    #[ignore]
    fn streamed_trace_cost() {
        use crate::trace::order::RunOrder;
        let Some(dir) = std::env::var_os("PMPI_TRACE_RUN").map(std::path::PathBuf::from) else {
            return;
        };
        let t0 = std::time::Instant::now();
        let mut order = RunOrder::open(&dir).unwrap();
        let shell = order.loaded_shell(&dir);
        let p = CallPrediction::default();
        let mut rows = 0u64;
        if std::env::var_os("PMPI_TRACE_ONLY_READ").is_some() {
            while order.next_call().unwrap().is_some() {
                rows += 1;
            }
            eprintln!("{rows} rows read in {:.2?}", t0.elapsed());
            return;
        }
        let extent = TraceExtent::read(&dir, &shell).unwrap();
        let t1 = t0.elapsed();
        let mut count = TraceCount::new(&shell, extent);
        while let Some((_, ri, call)) = order.next_call().unwrap() {
            count
                .row(ri, &order.metas[ri], call.rec, &call.record, &p)
                .unwrap();
            rows += 1;
        }
        let t2 = t0.elapsed();
        let path = dir.join("trace.cost.json");
        let mut w = count
            .plan("gige", DEFAULT_MAX_MB * 1_000_000)
            .create(&path)
            .unwrap();
        let mut order = RunOrder::open(&dir).unwrap();
        while let Some((_, ri, call)) = order.next_call().unwrap() {
            w.row(ri, &order.metas[ri], call.rec, &call.record, &p)
                .unwrap();
        }
        let s = w.finish().unwrap();
        eprintln!(
            "{rows} rows: extent {t1:.2?}, counted {:.2?}, written {:.2?}; {s:?}",
            t2 - t1,
            t0.elapsed() - t2
        );
    }
}

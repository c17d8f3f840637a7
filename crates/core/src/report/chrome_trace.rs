//! `trace.json`: the measured run in Chrome's trace-event format (Perfetto,
//! chrome://tracing). One process per node, one thread per rank (and per extra thread of
//! a rank), every recorded call a complete slice at its measured, clock-corrected time
//! with the prediction in its args, every matched point-to-point message a flow arrow
//! from the send to the call that received it, and per node a bandwidth counter.
//!
//! The file is streamed; above a size cap whole time windows are kept at a stride (so
//! what is shown is complete within each window and every flow keeps both ends) and the
//! sampling is said in `otherData` and on stderr.

use crate::error::Error;
use crate::predict::{CallPrediction, RunPrediction};
use crate::replay::own_end;
use crate::report::number;
use crate::topo::placement::Placement;
use crate::trace::{FLAG_NONBLOCKING, RunTrace};
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::Path;

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
fn put_num(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        number::fixed(out, x, 9);
    } else {
        out.extend_from_slice(b"null");
    }
}

fn put_opt(out: &mut Vec<u8>, x: Option<f64>) {
    match x {
        Some(x) => put_num(out, x),
        None => out.extend_from_slice(b"null"),
    }
}

/// Microseconds with nanosecond digits, from integer nanoseconds.
fn us(ns: i64) -> String {
    let mut s = Vec::new();
    put_us(&mut s, ns);
    String::from_utf8(s).unwrap_or_default()
}

/// `,"pid":P,"tid":T,"ts":TS` of an event (TS in µs from `ns`).
fn put_place(out: &mut Vec<u8>, pid: u64, tid: u64, ns: i64) {
    out.extend_from_slice(b",\"pid\":");
    number::uint(out, pid);
    out.extend_from_slice(b",\"tid\":");
    number::uint(out, tid);
    out.extend_from_slice(b",\"ts\":");
    put_us(out, ns);
}

fn put_us(out: &mut Vec<u8>, ns: i64) {
    if ns < 0 {
        out.push(b'-');
    }
    let a = ns.unsigned_abs();
    number::uint(out, a / 1000);
    let f = a % 1000;
    out.extend_from_slice(&[
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
fn put_jstr(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(jstr(s).as_bytes());
    }
}

/// Where each call's slice goes, computed from its record when asked (nothing is kept per
/// record). Calls are numbered by global id: the records of the ranks before (in
/// `RunTrace::ranks` order), then the record's index, as the engine numbers them.
struct Slices<'a> {
    run: &'a RunTrace,
    /// Global id of each rank's first record.
    base: Vec<usize>,
    origin: i64,
    /// Thread `t` of rank `r` is track `r + t · world`.
    world: u64,
    /// Node of each rank index.
    pid: Vec<u32>,
}

impl Slices<'_> {
    /// (rank index, record index) of global id `g`.
    fn locate(&self, g: usize) -> (usize, usize) {
        let ri = self.base.partition_point(|&b| b <= g) - 1;
        (ri, g - self.base[ri])
    }

    /// Start and end of the slice of record `i` of rank index `ri`, ns from the origin:
    /// its own call at its measured, clock-corrected time, both rounded from one clock so
    /// that consecutive slices of a thread never overlap.
    fn span(&self, ri: usize, i: usize) -> (i64, i64) {
        let rk = &self.run.ranks[ri];
        let r = &rk.records[i];
        let m_start = RunTrace::seconds_since(&rk.meta, r.t_start, self.origin);
        let op_dur = own_end(r).saturating_sub(r.t_start) as f64 * 1e-9;
        let s = (m_start * 1e9).round() as i64;
        let e = ((m_start + op_dur) * 1e9).round() as i64;
        (s, e.max(s))
    }

    fn span_of(&self, g: usize) -> (i64, i64) {
        let (ri, i) = self.locate(g);
        self.span(ri, i)
    }

    /// Track (pid, tid) of record `i` of rank index `ri`.
    fn track(&self, ri: usize, i: usize) -> (u32, u64) {
        let rk = &self.run.ranks[ri];
        (
            self.pid[ri],
            rk.meta.rank.max(0) as u64 + rk.records[i].thread as u64 * self.world,
        )
    }

    /// Every global id in order, with its rank index and record index.
    fn all(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        self.run.ranks.iter().enumerate().flat_map(move |(ri, rk)| {
            (0..rk.records.len()).map(move |i| (self.base[ri] + i, ri, i))
        })
    }
}

/// Writes trace.json to `path`, at most about `max_bytes` long.
pub fn write_trace(
    path: &Path,
    run: &RunTrace,
    pred: &RunPrediction,
    max_bytes: u64,
) -> Result<TraceStats, Error> {
    let placement = Placement::from_run(run);
    let mut base = Vec::with_capacity(run.ranks.len());
    let mut n = 0;
    for rk in &run.ranks {
        base.push(n);
        n += rk.records.len();
    }
    let world = run
        .world_size
        .max(run.ranks.iter().map(|r| r.meta.rank + 1).max().unwrap_or(0))
        .max(1) as u64;
    let sl = Slices {
        run,
        base,
        origin: run.origin_ns(),
        world,
        pid: run
            .ranks
            .iter()
            .map(|rk| placement.node(rk.meta.rank).unwrap_or(0))
            .collect(),
    };
    let t_end = sl
        .all()
        .map(|(_, ri, i)| sl.span(ri, i).1)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let window_at = |start_ns: i64| {
        ((start_ns.max(0) as f64 / t_end * WINDOWS as f64) as usize).min(WINDOWS - 1)
    };
    let window_of = |g: usize| window_at(sl.span_of(g).0);

    // The flow arrows: sending slice → receiving slice (an Irecv's completion call), as
    // the engine matched them.
    let arrows = &pred.arrows;

    // The fixed part (metadata, counters) is bounded by nodes × bins and ranks.
    let mut fixed = String::new();
    metadata_events(run, &placement, &sl, &mut fixed);
    counter_events(run, &placement, &mut fixed);

    // Sizes of what sampling can leave out, per window of the call (a flow counts in its
    // sender's window).
    let mut window_bytes = vec![0u64; WINDOWS];
    let mut buf: Vec<u8> = Vec::new();
    for (_, ri, i) in sl.all() {
        buf.clear();
        let span = sl.span(ri, i);
        slice_event(run, pred, &sl, ri, i, span, &mut buf);
        window_bytes[window_at(span.0)] += buf.len() as u64 + 1;
    }
    for (i, &(a, b)) in arrows.iter().enumerate() {
        buf.clear();
        flow_events(&sl, i, a, b, &mut buf);
        window_bytes[window_of(a as usize)] += buf.len() as u64 + 1;
    }
    let total: u64 = window_bytes.iter().sum();
    let budget = max_bytes.saturating_sub(fixed.len() as u64 + HEADER_RESERVE);
    let stride = if total <= budget {
        Some(1)
    } else {
        choose_stride(&window_bytes, budget)
    };
    let keep_window = |w: usize| stride.is_some_and(|k| w.is_multiple_of(k));
    let keep = |g: usize| keep_window(window_of(g));
    let kept_calls = sl
        .all()
        .filter(|&(_, ri, i)| keep_window(window_at(sl.span(ri, i).0)))
        .count();
    let sampled = kept_calls < n;

    let file = std::fs::File::create(path).map_err(|e| Error::write(path, e))?;
    let mut w = BufWriter::new(file);
    let io = |e: std::io::Error| Error::write(path, e);
    writeln!(
        w,
        "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"source\":\"pmpi-predict\",\"model\":{},\"sampled\":{sampled},\"kept_calls\":{kept_calls},\"total_calls\":{n},\"window_stride\":{},\"windows\":{WINDOWS},\"max_bytes\":{max_bytes}}},\"traceEvents\":[",
        jstr(&pred.model),
        stride.unwrap_or(0),
    )
    .map_err(io)?;
    w.write_all(fixed.as_bytes()).map_err(io)?;
    for (_, ri, i) in sl.all() {
        let span = sl.span(ri, i);
        if !keep_window(window_at(span.0)) {
            continue;
        }
        buf.clear();
        slice_event(run, pred, &sl, ri, i, span, &mut buf);
        w.write_all(&buf).map_err(io)?;
    }
    let mut flows = 0;
    for (i, &(a, b)) in arrows.iter().enumerate() {
        if keep(a as usize) && keep(b as usize) {
            buf.clear();
            flow_events(&sl, i, a, b, &mut buf);
            w.write_all(&buf).map_err(io)?;
            flows += 1;
        }
    }
    // Every event above ends with ",\n"; this one closes the array without a trailing comma.
    writeln!(
        w,
        "{{\"ph\":\"M\",\"name\":\"trace_end\",\"pid\":0,\"tid\":0,\"args\":{{}}}}]}}"
    )
    .map_err(io)?;
    let file = w.into_inner().map_err(|e| io(e.into_error()))?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    if sampled {
        eprintln!(
            "pmpi-predict: trace.json would be {:.1} MB, above the cap of {:.1} MB (PMPI_PREDICT_TRACE_MAX_MB): kept {kept_calls} of {n} calls ({} of {WINDOWS} time windows; see otherData)",
            (total + fixed.len() as u64) as f64 / 1e6,
            max_bytes as f64 / 1e6,
            stride.map_or("none".to_string(), |k| format!("one in {k}")),
        );
    }
    Ok(TraceStats {
        bytes,
        total_calls: n,
        kept_calls,
        flows,
        stride: stride.unwrap_or(0),
        sampled,
    })
}

fn metadata_events(run: &RunTrace, placement: &Placement, sl: &Slices, out: &mut String) {
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
    // One track per (rank, thread) that has calls; thread 0 of rank r is tid r.
    let mut seen = std::collections::BTreeSet::new();
    for (ri, rk) in run.ranks.iter().enumerate() {
        let pid = sl.pid[ri];
        let mut threads: Vec<u16> = rk.records.iter().map(|r| r.thread).collect();
        threads.push(0);
        threads.sort_unstable();
        threads.dedup();
        for t in threads {
            let tid = match rk.records.iter().position(|r| r.thread == t) {
                Some(i) => sl.track(ri, i).1,
                None => rk.meta.rank.max(0) as u64,
            };
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
}

/// Per node, the MPI bytes its ranks sent and received per second: each call's bytes
/// spread evenly over its measured span (a nonblocking one: post to completion).
fn counter_events(run: &RunTrace, placement: &Placement, out: &mut String) {
    let origin = run.origin_ns();
    let n: usize = run.ranks.iter().map(|rk| rk.records.len()).sum();
    let t_end = run
        .ranks
        .iter()
        .flat_map(|rk| {
            rk.records
                .iter()
                .map(|r| RunTrace::seconds_since(&rk.meta, r.t_end, origin))
        })
        .fold(0.0, f64::max);
    if n == 0 || t_end <= 0.0 {
        return;
    }
    let width = BIN_S.max(t_end / MAX_BINS as f64);
    let nbins = ((t_end / width).ceil() as usize).clamp(1, MAX_BINS);
    let nodes = placement.nodes().max(1);
    let mut sent = vec![vec![0.0; nbins]; nodes];
    let mut recv = vec![vec![0.0; nbins]; nodes];
    for rk in &run.ranks {
        let node = placement.node(rk.meta.rank).unwrap_or(0) as usize;
        if node >= nodes {
            continue;
        }
        for r in &rk.records {
            let t0 = RunTrace::seconds_since(&rk.meta, r.t_start, origin);
            let t1 = RunTrace::seconds_since(&rk.meta, r.t_end, origin);
            spread(&mut sent[node], width, t0, t1, r.bytes_send as f64);
            spread(&mut recv[node], width, t0, t1, r.bytes_recv as f64);
        }
    }
    for node in 0..nodes {
        let mut last = (-1.0, -1.0);
        for b in 0..nbins {
            let v = (sent[node][b] / width, recv[node][b] / width);
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
        let ts = (nbins as f64 * width * 1e9).round() as i64;
        let _ = writeln!(
            out,
            "{{\"ph\":\"C\",\"name\":\"MPI bandwidth (B/s)\",\"pid\":{node},\"tid\":0,\"ts\":{},\"args\":{{\"sent\":0,\"received\":0}}}},",
            us(ts)
        );
    }
}

fn slice_event(
    run: &RunTrace,
    pred: &RunPrediction,
    sl: &Slices,
    ri: usize,
    i: usize,
    (start_ns, end_ns): (i64, i64),
    out: &mut Vec<u8>,
) {
    let rk = &run.ranks[ri];
    let r = &rk.records[i];
    let (pid, tid) = sl.track(ri, i);
    let p: CallPrediction = pred
        .calls
        .get(ri)
        .and_then(|c| c.get(i))
        .copied()
        .unwrap_or_default();
    let name = rk
        .meta
        .calls
        .get(r.call as usize)
        .map(String::as_str)
        .unwrap_or_else(|| crate::trace::call_name(r.call));
    let nb = r.flags & FLAG_NONBLOCKING != 0;
    out.extend_from_slice(b"{\"ph\":\"X\",\"cat\":\"mpi\",\"name\":");
    put_jstr(out, name);
    put_place(out, pid as u64, tid, start_ns);
    out.extend_from_slice(b",\"dur\":");
    put_us(out, end_ns - start_ns);
    out.extend_from_slice(b",\"args\":{\"measured_s\":");
    put_num(out, r.duration_s());
    out.extend_from_slice(b",\"predicted_s\":");
    put_opt(out, p.predicted);
    out.extend_from_slice(b",\"free_s\":");
    put_opt(out, p.free);
    out.extend_from_slice(b",\"wait_kind\":");
    put_jstr(out, p.measured_wait.kind.name());
    out.extend_from_slice(b",\"wait_s\":");
    put_num(out, p.measured_wait.seconds);
    out.extend_from_slice(b",\"pred_wait_s\":");
    put_num(out, p.wait.seconds);
    out.extend_from_slice(b",\"contention_s\":");
    put_num(out, p.contention);
    out.extend_from_slice(b",\"bytes\":");
    number::uint(out, r.bytes_send + r.bytes_recv);
    // The peer as a WORLD rank, or null where the call has none.
    out.extend_from_slice(b",\"peer\":");
    if r.peer >= 0 {
        number::int(out, r.peer as i64);
    } else {
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(b",\"tag\":");
    number::int(out, r.tag as i64);
    out.extend_from_slice(if nb {
        b",\"nonblocking\":true,\"reason\":"
    } else {
        b",\"nonblocking\":false,\"reason\":"
    });
    put_jstr(out, p.reason.name());
    out.extend_from_slice(b"}},\n");
}

/// A flow's two events, bound to their enclosing slices at the slices' midpoints.
fn flow_events(sl: &Slices, i: usize, a: u32, b: u32, out: &mut Vec<u8>) {
    let at = |g: u32| {
        let (ri, i) = sl.locate(g as usize);
        let (s, e) = sl.span(ri, i);
        (sl.track(ri, i), s + (e - s) / 2)
    };
    let id = i as u64 + 1;
    for (head, g) in [
        (
            &b"{\"ph\":\"s\",\"cat\":\"msg\",\"name\":\"message\",\"id\":"[..],
            a,
        ),
        (
            &b"{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"msg\",\"name\":\"message\",\"id\":"[..],
            b,
        ),
    ] {
        let ((pid, tid), mid) = at(g);
        out.extend_from_slice(head);
        number::uint(out, id);
        put_place(out, pid as u64, tid, mid);
        out.extend_from_slice(b"},\n");
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
}

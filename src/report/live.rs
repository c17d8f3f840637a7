//! Snapshots of a running job for `pmpi-predict watch`: per interval of the trace's time,
//! the node-to-node graph of the messages started in it, its links ranked by the penalty
//! model's penalty (with the cause: outgoing or incoming conflict), and the ranks that spent
//! longest blocked in MPI. Pure: it takes the records, the files are the CLI's business.

use super::hotspots::Cause;
use crate::graph;
use crate::model::{CommGraph, Edge, PenaltyModel};
use crate::topo::placement::Placement;
use crate::trace::{FLAG_NONBLOCKING, RankTrace, RunTrace};
use serde::Serialize;
use std::collections::BTreeMap;

/// One node pair of an interval's graph.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Link {
    pub src: String,
    pub dst: String,
    /// Bytes of the messages started in the interval (collectives unfolded as the engine
    /// assumes their algorithm).
    pub bytes: u64,
    pub messages: u64,
    /// The model's penalty of this arc in the interval's graph (1 within a node).
    pub penalty: f64,
    pub cause: Cause,
}

/// A rank's time blocked in MPI calls that began in the interval.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Blocked {
    pub rank: i32,
    pub seconds: f64,
    /// The call it spent most of that time in.
    pub mostly: String,
}

/// One interval.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Snapshot {
    /// Seconds from the run's origin (rank 0's clock).
    pub start_s: f64,
    pub end_s: f64,
    pub records: u64,
    /// Every node pair that exchanged messages, largest first.
    pub graph: Vec<Link>,
    /// Inter-node links with a penalty above 1, most penalised first.
    pub penalised: Vec<Link>,
    /// Ranks by time blocked in MPI, longest first.
    pub blocked: Vec<Blocked>,
}

/// The snapshot of `[start_s, end_s)`: `run` holds every rank's records that start in
/// it (the CLI cuts them), with the ranks' metadata.
pub fn snapshot(
    run: &RunTrace,
    start_s: f64,
    end_s: f64,
    model: Option<&dyn PenaltyModel>,
) -> Snapshot {
    let placement = Placement::from_run(run);
    let flows = graph::build(run, &placement);
    let mut pairs: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
    for f in &flows.flows {
        let e = pairs.entry((f.src_node, f.dst_node)).or_default();
        e.0 += f.bytes;
        e.1 += 1;
    }
    // One arc per communicating node pair: the interval's graph.
    let inter: Vec<(u32, u32, u64)> = pairs
        .iter()
        .filter(|((s, d), _)| s != d)
        .map(|(&(s, d), &(b, _))| (s, d, b))
        .collect();
    let pens: Vec<f64> = match model {
        Some(m) if !inter.is_empty() => m.penalties(&CommGraph {
            edges: inter
                .iter()
                .map(|&(src, dst, bytes)| Edge { src, dst, bytes })
                .collect(),
        }),
        _ => vec![1.0; inter.len()],
    };
    let mut out_deg: BTreeMap<u32, u32> = BTreeMap::new();
    let mut in_deg: BTreeMap<u32, u32> = BTreeMap::new();
    for &(s, d, _) in &inter {
        *out_deg.entry(s).or_default() += 1;
        *in_deg.entry(d).or_default() += 1;
    }
    let name = |n: u32| placement.names.get(n as usize).cloned().unwrap_or_default();
    let mut graph: Vec<Link> = pairs
        .iter()
        .map(|(&(s, d), &(bytes, messages))| {
            let penalty = inter
                .iter()
                .position(|&(a, b, _)| (a, b) == (s, d))
                .and_then(|i| pens.get(i).copied())
                .filter(|p| p.is_finite())
                .unwrap_or(1.0);
            let cause = if s == d {
                Cause::None
            } else {
                Cause::of(
                    out_deg.get(&s).copied().unwrap_or(0),
                    in_deg.get(&d).copied().unwrap_or(0),
                )
            };
            Link {
                src: name(s),
                dst: name(d),
                bytes,
                messages,
                penalty,
                cause,
            }
        })
        .collect();
    graph.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.src.cmp(&b.src)));
    let mut penalised: Vec<Link> = graph
        .iter()
        .filter(|l| l.src != l.dst && l.penalty > 1.0 + 1e-9)
        .cloned()
        .collect();
    penalised.sort_by(|a, b| b.penalty.total_cmp(&a.penalty).then(b.bytes.cmp(&a.bytes)));
    let mut blocked: Vec<Blocked> = run.ranks.iter().filter_map(blocked_of).collect();
    blocked.sort_by(|a, b| b.seconds.total_cmp(&a.seconds).then(a.rank.cmp(&b.rank)));
    Snapshot {
        start_s,
        end_s,
        records: run.ranks.iter().map(|r| r.records.len() as u64).sum(),
        graph,
        penalised,
        blocked,
    }
}

/// Time a rank spent in blocking and completion calls (a nonblocking post is not
/// blocking), and the call it spent most of it in.
fn blocked_of(rk: &RankTrace) -> Option<Blocked> {
    let mut by: BTreeMap<String, f64> = BTreeMap::new();
    for r in rk
        .records
        .iter()
        .filter(|r| r.flags & FLAG_NONBLOCKING == 0)
    {
        let name = rk
            .meta
            .calls
            .get(r.call as usize)
            .cloned()
            .unwrap_or_else(|| crate::trace::call_name(r.call).into());
        *by.entry(name).or_default() += r.duration_s();
    }
    let seconds: f64 = by.values().sum();
    let mostly = by
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(k, _)| k.clone())?;
    (seconds > 0.0).then_some(Blocked {
        rank: rk.meta.rank,
        seconds,
        mostly,
    })
}

/// The snapshot as a few terminal lines.
pub fn text(s: &Snapshot, top: usize) -> String {
    let mut o = format!(
        "interval {:.1}-{:.1} s: {} calls\n",
        s.start_s, s.end_s, s.records
    );
    o += "  node-to-node traffic:\n";
    if s.graph.is_empty() {
        o += "    (no messages started)\n";
    }
    for l in s.graph.iter().take(top) {
        o += &format!(
            "    {:>10} -> {:<10} {:>12} B in {:>6} messages\n",
            l.src, l.dst, l.bytes, l.messages
        );
    }
    o += "  most penalised links:\n";
    if s.penalised.is_empty() {
        o += "    (no link shared)\n";
    }
    for l in s.penalised.iter().take(top) {
        o += &format!(
            "    {:>10} -> {:<10} penalty {:.2}  ({})\n",
            l.src,
            l.dst,
            l.penalty,
            l.cause.text()
        );
    }
    o += "  ranks blocked longest in MPI:\n";
    for b in s.blocked.iter().take(top) {
        o += &format!(
            "    rank {:<5} {:>8.3} s  (mostly {})\n",
            b.rank, b.seconds, b.mostly
        );
    }
    o
}

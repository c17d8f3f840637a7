//! Snapshots of a running job for `pmpi-predict watch`: per interval of the trace's time,
//! the node-to-node graph of the messages started in it, its links ranked by the penalty
//! model's penalty (with the cause: outgoing or incoming conflict), and the ranks that
//! waited longest on others. Pure: it takes the records, the files are the CLI's business.

use super::hotspots::Cause;
use crate::graph;
use crate::model::{CommGraph, Edge, PenaltyModel};
use crate::profile::Profile;
use crate::replay::{self, Plan};
use crate::topo::placement::Placement;
use crate::trace::{FLAG_NONBLOCKING, RunTrace};
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

/// A rank's waiting in the calls that began in the interval.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Waiting {
    pub rank: i32,
    /// Seconds blocked on other ranks (late senders, late receivers, collective entries:
    /// from the partners' timestamps, as calls.csv's wait_s).
    pub wait_s: f64,
    /// The kind of most of that wait.
    pub mostly: String,
    /// The rank it waited for longest (-1: none).
    pub on: i32,
    /// Seconds in blocking and completion calls (waiting and transferring).
    pub mpi_s: f64,
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
    /// Ranks by time waiting on others, longest first.
    pub waiting: Vec<Waiting>,
    /// Windows of the nodes' samples (`net-RANK.csv`) in which TCP retransmission
    /// timeouts fired, each in the interval where it ends (the CLI reads them).
    pub tcp_timeouts: Vec<LiveTimeouts>,
}

/// A window in which a node's retransmission timeouts fired, on the run's clock.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LiveTimeouts {
    pub node: String,
    pub timeouts: u64,
    pub from_s: f64,
    pub to_s: f64,
}

/// The snapshot of `[start_s, end_s)`: `run` holds every rank's records that start in
/// it (the CLI cuts them), with the ranks' metadata. `profile`'s eager limits (for the run's library) decide which sends waited as
/// rendezvous ones.
pub fn snapshot(
    run: &RunTrace,
    start_s: f64,
    end_s: f64,
    model: Option<&dyn PenaltyModel>,
    profile: Option<&Profile>,
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
    let waiting = waiting(run, &placement, profile);
    Snapshot {
        start_s,
        end_s,
        records: run.ranks.iter().map(|r| r.records.len() as u64).sum(),
        graph,
        penalised,
        waiting,
        tcp_timeouts: Vec::new(),
    }
}

/// Per rank: its waits on other ranks, from the partners' timestamps of the calls in the
/// interval (a message whose other end is in another interval is not counted), and its
/// time in blocking and completion calls. Ranks that neither waited nor blocked are left
/// out; the longest waits first.
fn waiting(run: &RunTrace, placement: &Placement, profile: Option<&Profile>) -> Vec<Waiting> {
    let plan = Plan::for_run(run, placement.clone(), profile);
    let waits = replay::measured_waits(&plan);
    struct Acc {
        wait: f64,
        mpi: f64,
        kinds: BTreeMap<&'static str, f64>,
        on: BTreeMap<i32, f64>,
    }
    let mut acc: BTreeMap<i32, Acc> = BTreeMap::new();
    for (g, w) in waits.iter().enumerate() {
        let r = plan.refs[g];
        let rk = &run.ranks[r.rank as usize];
        let rec = &rk.records[r.rec as usize];
        let a = acc.entry(rk.meta.rank).or_insert_with(|| Acc {
            wait: 0.0,
            mpi: 0.0,
            kinds: BTreeMap::new(),
            on: BTreeMap::new(),
        });
        if rec.flags & FLAG_NONBLOCKING == 0 {
            a.mpi += rec.duration_s();
        }
        if w.seconds > 0.0 {
            a.wait += w.seconds;
            *a.kinds.entry(w.kind.name()).or_default() += w.seconds;
            *a.on.entry(w.on).or_default() += w.seconds;
        }
    }
    fn top<K: Copy>(m: &BTreeMap<K, f64>) -> Option<K> {
        m.iter().max_by(|a, b| a.1.total_cmp(b.1)).map(|(k, _)| *k)
    }
    let mut v: Vec<Waiting> = acc
        .into_iter()
        .filter(|(_, a)| a.wait > 0.0 || a.mpi > 0.0)
        .map(|(rank, a)| Waiting {
            rank,
            wait_s: a.wait,
            mostly: top(&a.kinds).unwrap_or("none").to_string(),
            on: top(&a.on).unwrap_or(-1),
            mpi_s: a.mpi,
        })
        .collect();
    v.sort_by(|a, b| {
        b.wait_s
            .total_cmp(&a.wait_s)
            .then(b.mpi_s.total_cmp(&a.mpi_s))
            .then(a.rank.cmp(&b.rank))
    });
    v
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
    if !s.tcp_timeouts.is_empty() {
        let w: Vec<String> = s
            .tcp_timeouts
            .iter()
            .map(|t| {
                format!(
                    "{} {} ({:.2}-{:.2} s)",
                    t.node, t.timeouts, t.from_s, t.to_s
                )
            })
            .collect();
        o += &format!(
            "  TCP retransmission timeouts (each holds a connection 200 ms or more): {}\n",
            w.join(", ")
        );
    }
    o += "  ranks waiting longest on others:\n";
    for w in s.waiting.iter().take(top) {
        let on = if w.on >= 0 {
            format!(", most on rank {}", w.on)
        } else {
            String::new()
        };
        o += &format!(
            "    rank {:<5} {:>8.3} s waiting ({}{on}), {:.3} s in MPI\n",
            w.rank, w.wait_s, w.mostly, w.mpi_s
        );
    }
    o
}

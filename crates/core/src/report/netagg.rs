//! What the reports derive from the replay's network, as accumulators fed by events: an
//! interval of the network closed (its inter-node flows in flight, their penalties and
//! owners), a flow added, a collective operation timed, a call's prediction known. The
//! batch reports feed them from a [`RunPrediction`] ([`feed`]); the streamed prediction
//! feeds them as the replay makes the events (`predict::stream`), so that hotspots.json's
//! intervals, node pairs and nodes, the page's node-to-node matrix and summary.json's
//! `e_abs_graphs_percent` are one rule each, in memory bounded by the nodes, the top
//! lists and what is in flight.

use super::hotspots::{Acc, Cause, IntervalHotspot, NodeHotspot, PairHotspot, Sums, arc_context};
use super::html::Matrix;
use crate::graph::NodePair;
use crate::predict::stream::StreamNet;
use crate::predict::{CallPrediction, CollOp, RunPrediction};
use crate::replay::FxMap;
use crate::replay::net::{InFlight, NetSink};
use serde_json::{Value, json};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// A call by (rank index, record number), as [`crate::trace::load_run`] numbers them.
pub type Owner = (u32, u32);

/// An owner that is none of the run's calls (its arcs count no error).
pub const NO_OWNER: Owner = (u32::MAX, u32::MAX);

/// An inter-node flow in flight during an interval of the network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetArc {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    /// Its contention-free time, seconds.
    pub tref: f64,
    /// Its penalty in the interval.
    pub penalty: f64,
    /// The call that sends it.
    pub owner: Owner,
}

/// What consumes the network's events, in the order the replay makes them.
pub trait NetEvents {
    /// A message put on the network (within a node too).
    fn flow(&mut self, _src: u32, _dst: u32, _bytes: u64) {}
    /// An interval of the network closed, with its inter-node flows (none empty).
    fn interval(&mut self, start: f64, end: f64, arcs: &[NetArc]);
    /// A collective operation timed with its own model, its node pairs by the algorithm
    /// assumed (within a node too). The sums it adds to are taken apart, exact, and added
    /// at the end: operations come in the plan's order on the batch path and as they are
    /// finished on the streamed one, and the figures are the same.
    fn collective(&mut self, _op: &CollOp, _pairs: &[NodePair]) {}
}

/// Feeds `sink` the network events of a batch prediction, in the order the batch
/// reports always read them: the flows, the intervals, then the collective operations
/// in the plan's order.
pub fn feed(pred: &RunPrediction, sink: &mut dyn NetEvents) {
    for f in &pred.flows.flows {
        sink.flow(f.src_node, f.dst_node, f.bytes);
    }
    let mut arcs = Vec::new();
    let changes = pred.sim.tref_index();
    for iv in &pred.sim.intervals {
        arcs.clear();
        arcs.extend(pred.sim.arcs_of(iv).iter().filter_map(|&(k, p)| {
            let fi = *pred.inter.get(k as usize)?;
            let f = pred.flows.flows.get(fi)?;
            let last = pred.tref.get(fi).copied().unwrap_or(0.0);
            Some(NetArc {
                src: f.src_node,
                dst: f.dst_node,
                bytes: pred.sim.bytes.get(k as usize).copied().unwrap_or(f.bytes),
                tref: crate::replay::net::tref_at(&changes, k, iv.start, last),
                penalty: p,
                owner: (f.owner.rank, f.owner.rec),
            })
        }));
        if !arcs.is_empty() {
            sink.interval(iv.start, iv.end, &arcs);
        }
    }
    for (i, op) in pred.collectives.iter().enumerate() {
        sink.collective(op, pred.coll_traffic.of(i));
    }
}

/// Bytes an arc moved in an interval of `dt` seconds at penalty `p`.
fn moved(a: &NetArc, dt: f64) -> f64 {
    a.bytes as f64 * (dt / (a.penalty * a.tref.max(f64::MIN_POSITIVE))).min(1.0)
}

/// An interval ranked among the hotspots: by excess (largest first), then start, then
/// network intervals before collective operations, then `seq` (a network interval's
/// number; an operation's first member, [`CollOp::first`]).
struct Ranked {
    kind: u8,
    seq: u64,
    h: IntervalHotspot,
}

impl Ranked {
    /// Less is ranked first.
    fn rank(&self, o: &Self) -> Ordering {
        o.h.excess_bytes
            .total_cmp(&self.h.excess_bytes)
            .then(self.h.start_s.total_cmp(&o.h.start_s))
            .then(self.kind.cmp(&o.kind))
            .then(self.seq.cmp(&o.seq))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, o: &Self) -> bool {
        self.rank(o) == Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ranked {
    fn cmp(&self, o: &Self) -> Ordering {
        self.rank(o)
    }
}

/// The `top` least of the values pushed (a max-heap of them, the worst on top).
struct TopK<T: Ord> {
    top: usize,
    heap: BinaryHeap<T>,
}

impl<T: Ord> TopK<T> {
    fn new(top: usize) -> Self {
        TopK {
            top,
            heap: BinaryHeap::new(),
        }
    }
    fn push(&mut self, x: T) {
        if self.heap.len() < self.top {
            self.heap.push(x);
        } else if let Some(mut worst) = self.heap.peek_mut()
            && x < *worst
        {
            *worst = x;
        }
    }
    /// The values kept, least first.
    fn into_sorted(self) -> Vec<T> {
        self.heap.into_sorted_vec()
    }
}

/// hotspots.json's `intervals`, `node_pairs` and `nodes`: the top intervals (a bounded
/// heap) and the sums per node pair and node.
pub struct HotspotAgg {
    // Fx-hashed maps: their order never reaches a report (sums per key, lists sorted).
    intervals: TopK<Ranked>,
    seq: u64,
    pairs: FxMap<(u32, u32), Acc>,
    nodes: FxMap<u32, Acc>,
    /// The collective operations' share of the sums, exact (their order differs by path).
    coll_pairs: FxMap<(u32, u32), Sums<ExactSum>>,
    coll_nodes: FxMap<u32, Sums<ExactSum>>,
    out_deg: FxMap<u32, u32>,
    in_deg: FxMap<u32, u32>,
    node_pairs_in: Vec<(u32, u32)>,
}

impl HotspotAgg {
    /// Keeps the `top` of each list.
    pub fn new(top: usize) -> Self {
        HotspotAgg {
            intervals: TopK::new(top),
            seq: 0,
            pairs: FxMap::default(),
            nodes: FxMap::default(),
            coll_pairs: FxMap::default(),
            coll_nodes: FxMap::default(),
            out_deg: FxMap::default(),
            in_deg: FxMap::default(),
            node_pairs_in: Vec::new(),
        }
    }

    /// The degrees of the ports and the sorted node pairs of `pairs`.
    fn degrees(&mut self, pairs: impl Iterator<Item = (u32, u32)> + Clone) {
        self.out_deg.clear();
        self.in_deg.clear();
        for (s, d) in pairs.clone() {
            *self.out_deg.entry(s).or_default() += 1;
            *self.in_deg.entry(d).or_default() += 1;
        }
        self.node_pairs_in.clear();
        self.node_pairs_in.extend(pairs);
        self.node_pairs_in.sort_unstable();
    }

    /// Adds an arc's weighted bytes and excess to the interval's, its pair's and its
    /// nodes' sums (a collective operation's: to their exact share).
    fn arc(&mut self, acc: &mut Acc, s: u32, d: u32, w: f64, x: f64, coll: bool) {
        let (reverse, onward) = arc_context(&self.node_pairs_in, s, d);
        let cause = Cause::of_arc(self.out_deg[&s], self.in_deg[&d], reverse, onward);
        acc.add(w, x, cause);
        if coll {
            self.coll_pairs.entry((s, d)).or_default().add(w, x, cause);
            self.coll_nodes.entry(s).or_default().add(w, x, cause);
            self.coll_nodes.entry(d).or_default().add(w, x, cause);
        } else {
            self.pairs.entry((s, d)).or_default().add(w, x, cause);
            self.nodes.entry(s).or_default().add(w, x, cause);
            self.nodes.entry(d).or_default().add(w, x, cause);
        }
    }

    /// The ranked lists, nodes named by `name`.
    pub fn finish(
        mut self,
        name: impl Fn(u32) -> String,
    ) -> (Vec<IntervalHotspot>, Vec<PairHotspot>, Vec<NodeHotspot>) {
        for (k, c) in &self.coll_pairs {
            let a = self.pairs.entry(*k).or_default();
            *a = a.with(c);
        }
        for (k, c) in &self.coll_nodes {
            let a = self.nodes.entry(*k).or_default();
            *a = a.with(c);
        }
        let top = self.intervals.top;
        let intervals = self
            .intervals
            .into_sorted()
            .into_iter()
            .map(|r| r.h)
            .collect();
        let by_excess = |a: f64, b: f64| b.total_cmp(&a);
        let mut node_pairs: Vec<PairHotspot> = self
            .pairs
            .into_iter()
            .map(|((s, d), a)| PairHotspot {
                src: name(s),
                dst: name(d),
                penalty_weighted_bytes: a.weighted,
                excess_bytes: a.excess,
                cause: a.cause(),
            })
            .collect();
        node_pairs.sort_by(|a, b| {
            by_excess(a.excess_bytes, b.excess_bytes).then((&a.src, &a.dst).cmp(&(&b.src, &b.dst)))
        });
        node_pairs.truncate(top);
        let mut nodes: Vec<NodeHotspot> = self
            .nodes
            .into_iter()
            .map(|(n, a)| NodeHotspot {
                node: name(n),
                penalty_weighted_bytes: a.weighted,
                excess_bytes: a.excess,
                cause: a.cause(),
            })
            .collect();
        nodes.sort_by(|a, b| by_excess(a.excess_bytes, b.excess_bytes).then(a.node.cmp(&b.node)));
        nodes.truncate(top);
        (intervals, node_pairs, nodes)
    }
}

impl NetEvents for HotspotAgg {
    fn interval(&mut self, start: f64, end: f64, arcs: &[NetArc]) {
        self.degrees(arcs.iter().map(|a| (a.src, a.dst)));
        let dt = end - start;
        let mut acc = Acc::default();
        let mut max_p: f64 = 1.0;
        for a in arcs {
            let (p, m) = (a.penalty, moved(a, dt));
            self.arc(&mut acc, a.src, a.dst, p * m, (p - 1.0).max(0.0) * m, false);
            max_p = max_p.max(p);
        }
        self.seq += 1;
        self.intervals.push(Ranked {
            kind: 0,
            seq: self.seq,
            h: IntervalHotspot {
                operation: None,
                start_s: start,
                end_s: end,
                arcs: arcs.len() as u32,
                max_penalty: max_p,
                penalty_weighted_bytes: acc.weighted,
                excess_bytes: acc.excess,
                cause: acc.cause(),
            },
        });
    }

    // Collective operations, timed with their own models: their assumed messages at the
    // operation's penalty, the cause from their pairs' degrees.
    fn collective(&mut self, op: &CollOp, pairs: &[NodePair]) {
        let inter = || pairs.iter().filter(|p| p.0 != p.1);
        let n = inter().count();
        if n == 0 {
            return;
        }
        self.degrees(inter().map(|p| (p.0, p.1)));
        let mut acc = Acc::default();
        for &(s, d, b) in inter() {
            let (w, x) = (op.penalty * b as f64, (op.penalty - 1.0) * b as f64);
            self.arc(&mut acc, s, d, w, x, true);
        }
        self.intervals.push(Ranked {
            kind: 1,
            seq: (op.first.0 as u64) << 32 | op.first.1 as u64,
            h: IntervalHotspot {
                operation: Some(op.call),
                start_s: op.start,
                end_s: op.end,
                arcs: n as u32,
                max_penalty: op.penalty,
                penalty_weighted_bytes: acc.weighted,
                excess_bytes: acc.excess,
                cause: acc.cause(),
            },
        });
    }
}

/// The page's node-to-node matrices over `n` nodes (ids beyond are left out).
pub struct MatrixAgg {
    n: usize,
    m: Matrix,
    /// The collective operations' share of the cells (bytes, contention, excess), exact
    /// (their order differs by path), added at the end.
    coll: FxMap<(u32, u32), [ExactSum; 3]>,
}

impl MatrixAgg {
    pub fn new(n: usize) -> Self {
        MatrixAgg {
            n,
            m: Matrix {
                bytes: vec![vec![0.0; n]; n],
                contention_s: vec![vec![0.0; n]; n],
                excess_bytes: vec![vec![0.0; n]; n],
            },
            coll: FxMap::default(),
        }
    }

    fn ok(&self, s: u32, d: u32) -> bool {
        (s as usize) < self.n && (d as usize) < self.n
    }

    pub fn finish(mut self) -> Matrix {
        for ((s, d), [b, c, x]) in &self.coll {
            let (s, d) = (*s as usize, *d as usize);
            self.m.bytes[s][d] += b.value();
            self.m.contention_s[s][d] += c.value();
            self.m.excess_bytes[s][d] += x.value();
        }
        self.m
    }
}

impl NetEvents for MatrixAgg {
    fn flow(&mut self, src: u32, dst: u32, bytes: u64) {
        if self.ok(src, dst) {
            self.m.bytes[src as usize][dst as usize] += bytes as f64;
        }
    }

    fn interval(&mut self, start: f64, end: f64, arcs: &[NetArc]) {
        let dt = (end - start).max(0.0);
        for a in arcs {
            let p = a.penalty;
            if !self.ok(a.src, a.dst) || p.is_nan() || p <= 1.0 {
                continue;
            }
            let (s, d) = (a.src as usize, a.dst as usize);
            self.m.contention_s[s][d] += dt * (1.0 - 1.0 / p);
            self.m.excess_bytes[s][d] += (p - 1.0) * moved(a, dt);
        }
    }

    // Collectives, which the replay times with their own models: their assumed messages'
    // bytes, and their members' contention shared among their inter-node pairs by bytes.
    fn collective(&mut self, op: &CollOp, pairs: &[NodePair]) {
        let inter = crate::graph::inter_node_bytes(pairs) as f64;
        for &(s, d, b) in pairs {
            if !self.ok(s, d) {
                continue;
            }
            let b = b as f64;
            let [bytes, contention, excess] = self.coll.entry((s, d)).or_default();
            bytes.add(b);
            if s != d && inter > 0.0 {
                contention.add(op.contention_s * b / inter);
                excess.add((op.penalty - 1.0) * b);
            }
        }
    }
}

/// An interval closed whose owners' errors are not all known yet (or one before it's).
struct PendingGraph {
    start: f64,
    end: f64,
    len: u32,
    /// Per arc: its owner's |E_rel| where known and one (in arc order).
    errs: Vec<Option<f64>>,
    missing: u32,
}

/// A graph ranked among the largest: by arcs (most first), then start, then order.
struct Largest {
    len: u32,
    start: f64,
    seq: u64,
    end: f64,
    e: f64,
}

impl Largest {
    fn rank(&self, o: &Self) -> Ordering {
        o.len
            .cmp(&self.len)
            .then(self.start.total_cmp(&o.start))
            .then(self.seq.cmp(&o.seq))
    }
}
impl PartialEq for Largest {
    fn eq(&self, o: &Self) -> bool {
        self.rank(o) == Ordering::Equal
    }
}
impl Eq for Largest {}
impl PartialOrd for Largest {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Largest {
    fn cmp(&self, o: &Self) -> Ordering {
        self.rank(o)
    }
}

/// summary.json's `prediction.e_abs_graphs_percent`: per interval of the network the mean
/// |E_rel| of the calls that own its arcs, the mean over the intervals (summed in their
/// order) and the 100 largest by arcs. An interval waits for its owners' predictions
/// ([`GraphAgg::call`]), and the intervals after it with it, so that the sum keeps the
/// intervals' order: the streamed prediction hands a call over after its message arrived,
/// so the intervals held are those since the oldest message whose sender is not predicted.
pub struct GraphAgg {
    queue: VecDeque<PendingGraph>,
    /// The number of `queue[0]`.
    base: u64,
    /// Per owner not predicted yet: (interval number, arc) of its arcs.
    waiting: FxMap<Owner, Vec<(u64, u32)>>,
    count: usize,
    sum: f64,
    largest: TopK<Largest>,
    seq: u64,
    /// The most intervals held at once.
    pub most_held: usize,
}

/// The largest graphs summary.json lists.
const LARGEST: usize = 100;

impl Default for GraphAgg {
    fn default() -> Self {
        GraphAgg {
            queue: VecDeque::new(),
            base: 0,
            waiting: FxMap::default(),
            count: 0,
            sum: 0.0,
            largest: TopK::new(LARGEST),
            seq: 0,
            most_held: 0,
        }
    }
}

impl GraphAgg {
    /// An interval whose owners' errors are known: `errs`, one per arc.
    pub fn known(&mut self, start: f64, end: f64, errs: impl Iterator<Item = Option<f64>>) {
        let errs: Vec<Option<f64>> = errs.collect();
        self.queue.push_back(PendingGraph {
            start,
            end,
            len: errs.len() as u32,
            errs,
            missing: 0,
        });
        self.drain();
    }

    /// The |E_rel| of call `owner` (None: it has none), known now.
    pub fn call(&mut self, owner: Owner, e: Option<f64>) {
        let Some(arcs) = self.waiting.remove(&owner) else {
            return;
        };
        for (iv, k) in arcs {
            let p = &mut self.queue[(iv - self.base) as usize];
            p.errs[k as usize] = e;
            p.missing -= 1;
        }
        self.drain();
    }

    /// Intervals held (closed, waiting for their owners' predictions or behind one that
    /// does).
    pub fn held(&self) -> usize {
        self.queue.len()
    }

    /// Takes the intervals whose errors are all known, in order.
    fn drain(&mut self) {
        self.most_held = self.most_held.max(self.queue.len());
        while self.queue.front().is_some_and(|p| p.missing == 0) {
            let p = self.queue.pop_front().expect("checked");
            self.base += 1;
            self.take(p);
        }
    }

    fn take(&mut self, p: PendingGraph) {
        let errs: Vec<f64> = p.errs.into_iter().flatten().collect();
        if errs.is_empty() {
            return;
        }
        let e = errs.iter().map(|x| x.abs()).sum::<f64>() / errs.len() as f64;
        self.sum += e;
        self.count += 1;
        self.seq += 1;
        self.largest.push(Largest {
            len: p.len,
            start: p.start,
            seq: self.seq,
            end: p.end,
            e,
        });
    }

    /// The section; owners never predicted count no error.
    pub fn finish(mut self) -> Value {
        self.waiting.clear();
        for p in &mut self.queue {
            p.missing = 0;
        }
        self.drain();
        json!({
            "intervals": self.count,
            "mean": (self.count > 0).then(|| self.sum / self.count as f64),
            "largest": self.largest.into_sorted().iter().map(|g| json!({"start_s": g.start, "end_s": g.end, "arcs": g.len, "e_abs": g.e})).collect::<Vec<_>>(),
        })
    }
}

impl NetEvents for GraphAgg {
    /// An interval whose owners' errors come later, through [`GraphAgg::call`].
    fn interval(&mut self, start: f64, end: f64, arcs: &[NetArc]) {
        let iv = self.base + self.queue.len() as u64;
        let mut missing = 0;
        for (k, a) in arcs.iter().enumerate() {
            if a.owner != NO_OWNER {
                self.waiting
                    .entry(a.owner)
                    .or_default()
                    .push((iv, k as u32));
                missing += 1;
            }
        }
        self.queue.push_back(PendingGraph {
            start,
            end,
            len: arcs.len() as u32,
            errs: vec![None; arcs.len()],
            missing,
        });
        self.drain();
    }
}

/// The figures every report derives from the replay's network, for the streamed
/// prediction: hotspots, matrix and graph errors fed the same events.
pub struct NetAggregates {
    pub hotspots: HotspotAgg,
    pub matrix: MatrixAgg,
    pub graphs: GraphAgg,
}

/// What [`NetAggregates::finish`] gives: hotspots.json's three network lists, the page's
/// matrix and summary.json's `e_abs_graphs_percent`.
#[derive(Debug, Clone, PartialEq)]
pub struct NetReport {
    pub intervals: Vec<IntervalHotspot>,
    pub node_pairs: Vec<PairHotspot>,
    pub nodes: Vec<NodeHotspot>,
    pub matrix: Matrix,
    pub graphs: Value,
}

impl NetAggregates {
    /// Over `nodes` nodes, keeping the `top` of each hotspot list.
    pub fn new(nodes: usize, top: usize) -> Self {
        NetAggregates {
            hotspots: HotspotAgg::new(top),
            matrix: MatrixAgg::new(nodes),
            graphs: GraphAgg::default(),
        }
    }

    /// Call `owner`'s |E_rel| (`report::call_e_rel`), known now.
    pub fn call(&mut self, owner: Owner, e: Option<f64>) {
        self.graphs.call(owner, e);
    }

    /// The figures, nodes named by `names` (`node{n}` beyond).
    pub fn finish(self, names: &[String]) -> NetReport {
        let (intervals, node_pairs, nodes) = self.hotspots.finish(|n| node_name(names, n));
        NetReport {
            intervals,
            node_pairs,
            nodes,
            matrix: self.matrix.finish(),
            graphs: self.graphs.finish(),
        }
    }
}

impl NetEvents for NetAggregates {
    fn flow(&mut self, src: u32, dst: u32, bytes: u64) {
        self.matrix.flow(src, dst, bytes);
    }
    fn interval(&mut self, start: f64, end: f64, arcs: &[NetArc]) {
        self.hotspots.interval(start, end, arcs);
        self.matrix.interval(start, end, arcs);
        self.graphs.interval(start, end, arcs);
    }
    fn collective(&mut self, op: &CollOp, pairs: &[NodePair]) {
        self.hotspots.collective(op, pairs);
        self.matrix.collective(op, pairs);
    }
}

/// [`NetAggregates`] fed by a streamed prediction
/// ([`crate::predict::stream::predict_stream_with`]).
pub struct StreamedNet {
    pub agg: NetAggregates,
    arcs: Vec<NetArc>,
}

impl StreamedNet {
    /// Over `nodes` nodes, keeping the `top` of each hotspot list.
    pub fn new(nodes: usize, top: usize) -> Self {
        StreamedNet {
            agg: NetAggregates::new(nodes, top),
            arcs: Vec::new(),
        }
    }
}

impl NetSink for StreamedNet {
    fn added(&mut self, src: u32, dst: u32, bytes: u64) {
        self.agg.flow(src, dst, bytes);
    }
    fn closed(&mut self, start: f64, end: f64, flows: &[InFlight]) {
        self.arcs.clear();
        self.arcs.extend(flows.iter().map(|f| NetArc {
            src: f.src,
            dst: f.dst,
            bytes: f.bytes,
            tref: f.tref,
            penalty: f.pen,
            owner: match f.owner {
                u64::MAX => NO_OWNER,
                o => ((o >> 32) as u32, o as u32),
            },
        }));
        self.agg.interval(start, end, &self.arcs);
    }
}

impl StreamNet for StreamedNet {
    fn call(&mut self, rank: u32, rec: u32, measured_s: f64, c: &CallPrediction) {
        self.agg
            .call((rank, rec), super::prediction_e_rel(c, measured_s));
    }
    fn collective(&mut self, op: &CollOp, pairs: &[NodePair]) {
        self.agg.collective(op, pairs);
    }
}

/// A sum of `f64` terms kept exact (Shewchuk's non-overlapping partials, as Python's
/// `math.fsum`) and rounded once when read: its value is the correctly rounded sum,
/// whatever the order the terms came in. The terms are assumed far from overflow (a
/// partial that overflows counts as an infinite term).
#[derive(Debug, Clone, Default)]
pub struct ExactSum {
    /// Non-overlapping, by increasing magnitude; their sum is the sum of the finite terms.
    partials: Vec<f64>,
    /// The sum of the non-finite terms (0 without any): NaN or an infinity, whatever the
    /// order.
    special: f64,
}

impl ExactSum {
    pub fn add(&mut self, x: f64) {
        if !x.is_finite() {
            self.special += x;
            return;
        }
        let mut x = x;
        let mut i = 0;
        for k in 0..self.partials.len() {
            let mut y = self.partials[k];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                self.partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        self.partials.truncate(i);
        if x.is_finite() {
            self.partials.push(x);
        } else {
            self.special += x;
        }
    }

    /// The sum, correctly rounded (half to even), as CPython's `math.fsum` rounds it.
    pub fn value(&self) -> f64 {
        if self.special != 0.0 || self.special.is_nan() {
            return self.special;
        }
        let p = &self.partials;
        let Some(mut n) = p.len().checked_sub(1) else {
            return 0.0;
        };
        let mut hi = p[n];
        let mut lo = 0.0;
        // From the top, until the sum becomes inexact.
        while n > 0 {
            n -= 1;
            let (x, y) = (hi, p[n]);
            hi = x + y;
            lo = y - (hi - x);
            if lo != 0.0 {
                break;
            }
        }
        // Half-even rounding across the partials below: they may tip a tie.
        if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            if y == x - hi {
                hi = x;
            }
        }
        hi
    }
}

/// Node `n`'s name.
pub fn node_name(names: &[String], n: u32) -> String {
    names
        .get(n as usize)
        .cloned()
        .unwrap_or_else(|| format!("node{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::stream::{StreamNet, predict_stream_with};
    use crate::predict::{Assumptions, predict_run_with};
    use crate::profile::Profile;
    use crate::trace::RunTrace;

    /// The batch prediction's figures through the accumulators fed as the stream feeds
    /// them (the intervals' owners predicted after them).
    fn batch(run: &RunTrace, pred: &RunPrediction) -> NetReport {
        let mut agg = NetAggregates::new(pred.placement.nodes(), 10);
        feed(pred, &mut agg);
        for (ri, (rk, cs)) in run.ranks.iter().zip(&pred.calls).enumerate() {
            for (i, (r, c)) in rk.records.iter().zip(cs).enumerate() {
                agg.call((ri as u32, i as u32), super::super::call_e_rel(r, c));
            }
        }
        assert_eq!(agg.graphs.held(), 0);
        agg.finish(&pred.placement.names)
    }

    /// Same to the bit: Debug prints each f64's shortest round trip.
    fn same(a: &NetReport, b: &NetReport) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    /// The accumulators fed from a batch prediction (intervals first, owners' predictions
    /// after) give the batch reports' figures: hotspots.json's lists, the page's matrix,
    /// summary.json's graph errors.
    fn check_batch(run: &RunTrace, pred: &RunPrediction, at: &str) {
        let got = batch(run, pred);
        let h = super::super::hotspots::compute(run, pred, 10);
        let want = NetReport {
            intervals: h.intervals,
            node_pairs: h.node_pairs,
            nodes: h.nodes,
            matrix: super::super::html::matrix(pred),
            graphs: super::super::graph_errors(run, pred),
        };
        assert!(same(&got, &want), "{at}:\n got  {got:?}\n want {want:?}");
    }

    /// A [`StreamedNet`] that also keeps the collective operations it is told of.
    struct Told {
        net: StreamedNet,
        ops: Vec<(CollOp, Vec<NodePair>)>,
    }

    impl NetSink for Told {
        fn added(&mut self, src: u32, dst: u32, bytes: u64) {
            self.net.added(src, dst, bytes);
        }
        fn closed(&mut self, start: f64, end: f64, flows: &[InFlight]) {
            self.net.closed(start, end, flows);
        }
    }

    impl StreamNet for Told {
        fn call(&mut self, rank: u32, rec: u32, measured_s: f64, c: &CallPrediction) {
            self.net.call(rank, rec, measured_s, c);
        }
        fn collective(&mut self, op: &CollOp, pairs: &[NodePair]) {
            self.ops.push((*op, pairs.to_vec()));
            self.net.collective(op, pairs);
        }
    }

    /// What [`check_streamed`] saw: intervals, those with graph errors, ranked with
    /// excess bytes, the most graphs held; collective operations, those with inter-node
    /// pairs, with contention, ranked in the top.
    #[derive(Default)]
    struct Counts {
        intervals: usize,
        graphs: u64,
        excess: usize,
        most_held: usize,
        ops: usize,
        inter_ops: usize,
        contended: usize,
        ranked: usize,
    }

    /// Runs `stream` (a streamed prediction of `run` telling the [`Told`] it is given) and
    /// asserts that it tells each collective operation of `pred` (the batch prediction
    /// under the same conditions) once, the same to the bit, and that its network
    /// figures are `pred`'s through the accumulators.
    fn check_streamed(
        run: &RunTrace,
        pred: &RunPrediction,
        at: &str,
        c: &mut Counts,
        stream: impl FnOnce(&mut Told),
    ) {
        check_batch(run, pred, at);
        let want = batch(run, pred);
        let mut told = Told {
            net: StreamedNet::new(pred.placement.nodes(), 10),
            ops: Vec::new(),
        };
        stream(&mut told);
        // Each operation once, as the batch has it (by first member).
        let mut streamed: std::collections::HashMap<(u32, u32), _> = Default::default();
        for (op, pairs) in told.ops {
            let first = op.first;
            assert!(
                streamed.insert(first, (op, pairs)).is_none(),
                "{at}: {first:?} twice"
            );
        }
        assert_eq!(streamed.len(), pred.collectives.len(), "{at}");
        for (i, op) in pred.collectives.iter().enumerate() {
            let pairs = pred.coll_traffic.of(i);
            let got = streamed.get(&op.first).map(|(o, p)| (o, p.as_slice()));
            assert_eq!(
                format!("{got:?}"),
                format!("{:?}", Some((op, pairs))),
                "{at}: operation {i}"
            );
            c.ops += 1;
            c.inter_ops += usize::from(pairs.iter().any(|p| p.0 != p.1));
            c.contended += usize::from(op.contention_s > 0.0);
        }
        let sink = told.net;
        assert_eq!(sink.agg.graphs.held(), 0, "{at}");
        c.most_held = c.most_held.max(sink.agg.graphs.most_held);
        let got = sink.agg.finish(&pred.placement.names);
        assert!(
            same(&got, &want),
            "{at}:\n stream {got:?}\n batch  {want:?}"
        );
        c.intervals += pred.sim.intervals.len();
        c.graphs += got.graphs["intervals"].as_u64().unwrap();
        c.excess += got
            .intervals
            .iter()
            .filter(|i| i.excess_bytes > 0.0)
            .count();
        c.ranked += got
            .intervals
            .iter()
            .filter(|i| i.operation.is_some())
            .count();
    }

    /// The profiles and models the network tests predict under: `gige` with the built-in
    /// profile and a calibrated profile's factors (γ = 2: the all-to-all's model adds to
    /// its contention-free time), and no model.
    fn profiles() -> [(Profile, &'static str); 3] {
        let mut calibrated = crate::testing::calibrated_profile();
        calibrated.alltoall_gamma =
            crate::model::alltoall::GammaTable(vec![(1, 2.0), (1 << 22, 2.0)]);
        [
            (Profile::builtin_default(), "gige"),
            (calibrated, "gige"),
            (Profile::builtin_default(), "none"),
        ]
    }

    /// Random runs written to spools (clock offsets, some long, some with a rank's spool
    /// lost; collectives from random roots, nonblocking barriers), under `gige` with the
    /// built-in profile and a calibrated profile's factors and without a model: the
    /// streamed prediction tells each collective operation of the batch prediction once,
    /// the same (span, penalty, members' contention, node pairs) to the bit, and its
    /// network figures (top intervals, node pairs and nodes, matrix, graph errors) are the
    /// batch ones to the bit; and the batch figures through the accumulators are the
    /// batch reports'.
    #[test]
    fn the_streamed_network_figures_are_the_batch_ones() {
        let mut rnd = crate::testing::xorshift(0x5eed_0f4e_7a66);
        let dir = std::env::temp_dir().join(format!("pmpi-netagg-{}", std::process::id()));
        let assume = Assumptions::default();
        let mut c = Counts::default();
        for case in 0..80 {
            let mut run = crate::testing::write_random_case(&mut rnd, &dir, case, 70, 20);
            // Every other case with its all-reduces as all-to-alls, the one collective whose
            // model (γ = 2 in the calibrated profile) adds to its contention-free time.
            if case % 2 == 0 {
                crate::testing::as_alltoalls(&mut run, crate::trace::call::MPI_Allreduce, None);
                // (No spool is lost in these: `write_random_case` loses one in odd cases.)
                crate::testing::write_run(&dir, &run);
            }
            let loaded = crate::trace::load_run(&dir).unwrap();
            for (profile, model) in &profiles() {
                let at = format!("case {case}, {model}, reverse {}", profile.penalty.reverse);
                let pred = predict_run_with(&loaded, profile, Some(model), &assume).unwrap();
                check_streamed(&loaded, &pred, &at, &mut c, |told| {
                    predict_stream_with(
                        &dir,
                        profile,
                        Some(model),
                        &assume,
                        &mut |_, _, _, _| {},
                        Some(told),
                    )
                    .unwrap();
                });
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        let Counts {
            intervals,
            graphs,
            excess,
            most_held,
            ops,
            inter_ops,
            contended,
            ranked,
        } = c;
        assert!(
            intervals > 5_000 && graphs > 2_000 && excess > 100,
            "{intervals} intervals, {graphs} with errors, {excess} ranked with excess, \
             {most_held} held at most"
        );
        // (An all-to-all of two members on two nodes takes no signature: the random runs
        // of 2 ranks give none with contention.)
        assert!(
            ops > 1_000 && inter_ops > 300 && contended > 25 && ranked > 40,
            "{ops} operations, {inter_ops} between nodes, {contended} with contention, \
             {ranked} ranked"
        );
    }

    /// The network figures of a what-if replay streamed (the network side of the new
    /// run's hotspots): random runs (every other one with its all-reduces as all-to-alls)
    /// under random placements, with and without two clusters, the direct and the Local
    /// Group all-to-all, under the same profiles and models: each collective operation
    /// and the network figures of `predict_stream_under` are `predict_run_under`'s, to the
    /// bit.
    #[test]
    fn the_streamed_what_if_network_figures_are_the_batch_ones() {
        use crate::predict::predict_run_under;
        use crate::predict::stream::predict_stream_under;
        let mut rnd = crate::testing::xorshift(0x0c1a_57e2_5d0e);
        let dir = std::env::temp_dir().join(format!("pmpi-netagg-whatif-{}", std::process::id()));
        let assume = Assumptions::default();
        let mut c = Counts::default();
        let mut clustered = 0;
        for case in 0..80 {
            let (loaded, cond) = crate::testing::whatif_case(
                &mut rnd,
                &dir,
                case,
                70,
                20,
                crate::trace::call::MPI_Allreduce,
                None,
            );
            clustered += usize::from(cond.clusters.is_some());
            for (profile, model) in &profiles() {
                let at = format!(
                    "case {case}, {model}, reverse {}, {:?} clusters {:?} {}",
                    profile.penalty.reverse,
                    cond.placement.node_of_rank,
                    cond.clusters.as_ref().map(|c| &c.cluster_of_node),
                    cond.alltoall
                );
                let pred =
                    predict_run_under(&loaded, profile, Some(model), &assume, &cond).unwrap();
                check_streamed(&loaded, &pred, &at, &mut c, |told| {
                    predict_stream_under(
                        &dir,
                        profile,
                        Some(model),
                        &assume,
                        &cond,
                        &mut |_, _, _, _| {},
                        Some(told),
                    )
                    .unwrap();
                });
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        let Counts {
            intervals,
            excess,
            ops,
            inter_ops,
            contended,
            ranked,
            ..
        } = c;
        assert!(
            clustered > 20
                && intervals > 2_000
                && excess > 50
                && ops > 1_000
                && inter_ops > 300
                && contended > 50
                && ranked > 20,
            "{clustered} clustered, {intervals} intervals, {excess} ranked with excess, \
             {ops} operations, {inter_ops} between nodes, {contended} with contention, \
             {ranked} ranked"
        );
    }

    /// An exact sum's value is the correctly rounded sum of its terms whatever their
    /// order: Python's `math.fsum` figures where plain addition is off, the exact integer
    /// sum of integer terms rounded once, and the same bits over shuffled orders.
    #[test]
    fn an_exact_sum_does_not_depend_on_the_order() {
        let of = |xs: &[f64]| {
            let mut s = ExactSum::default();
            for &x in xs {
                s.add(x);
            }
            s.value()
        };
        assert_eq!(of(&[0.1; 10]), 1.0);
        assert_ne!([0.1f64; 10].iter().sum::<f64>(), 1.0);
        // A tie (1e16 + 1) tipped up by the smallest term, in either order.
        assert_eq!(of(&[1e-16, 1.0, 1e16]), 1.0000000000000002e16);
        assert_eq!(of(&[1e16, 1.0, 1e-16]), 1.0000000000000002e16);
        assert_eq!(of(&[1e100, 1.0, -1e100, 1e-100]), 1.0);
        assert_eq!(of(&[]), 0.0);
        assert_eq!(of(&[1.0, f64::INFINITY, 2.0]), f64::INFINITY);
        assert!(of(&[f64::INFINITY, 1.0, f64::NEG_INFINITY]).is_nan());
        let mut rnd = crate::testing::xorshift(0x0dd_5ca1e);
        for _ in 0..500 {
            let n = 1 + rnd(60) as usize;
            // Integer terms of 30 bits scaled by up to 2^40, either sign: their exact sum
            // fits an i128, whose conversion rounds half to even.
            let mut xs: Vec<f64> = Vec::with_capacity(n);
            let mut exact: i128 = 0;
            for _ in 0..n {
                let m = rnd(1 << 30) as i128 * if rnd(3) == 0 { -1 } else { 1 };
                let t = m << rnd(41);
                exact += t;
                xs.push(t as f64);
            }
            let want = of(&xs);
            assert_eq!(want.to_bits(), (exact as f64).to_bits(), "{xs:?}");
            for _ in 0..4 {
                for k in (1..xs.len()).rev() {
                    xs.swap(k, rnd(k as u64 + 1) as usize);
                }
                assert_eq!(of(&xs).to_bits(), want.to_bits(), "{xs:?}");
            }
        }
    }

    /// A long ring (4 ranks on 4 nodes, 20,000 records): the streamed network figures
    /// are the batch ones, and the intervals held for their owners' predictions stay few.
    #[test]
    fn the_streamed_network_figures_hold_what_is_in_flight() {
        let dir = std::env::temp_dir().join(format!("pmpi-netagg-ring-{}", std::process::id()));
        let run = crate::testing::ring_run(4, 5000);
        crate::testing::write_run(&dir, &run);
        let loaded = crate::trace::load_run(&dir).unwrap();
        let profile = Profile::builtin_default();
        let assume = Assumptions::default();
        let pred = predict_run_with(&loaded, &profile, Some("gige"), &assume).unwrap();
        let want = batch(&loaded, &pred);
        let mut sink = StreamedNet::new(pred.placement.nodes(), 10);
        predict_stream_with(
            &dir,
            &profile,
            Some("gige"),
            &assume,
            &mut |_, _, _, _| {},
            Some(&mut sink),
        )
        .unwrap();
        std::fs::remove_dir_all(&dir).ok();
        let most_held = sink.agg.graphs.most_held;
        let got = sink.agg.finish(&pred.placement.names);
        assert!(same(&got, &want), "stream {got:?}\n batch  {want:?}");
        assert!(
            pred.sim.intervals.len() > 5_000,
            "{}",
            pred.sim.intervals.len()
        );
        assert_eq!(
            got.graphs["intervals"].as_u64(),
            Some(pred.sim.intervals.len() as u64)
        );
        assert!(most_held < 20, "{most_held} intervals held");
    }
}

//! Contention hotspots: where the penalty model says bandwidth sharing cost most. Each
//! interval of the simulation carries its arcs and their penalties; bytes moved by an arc
//! in an interval, weighted by its penalty, measure the load. The *excess*
//! (penalty − 1) × bytes is what sharing added; hotspots are ranked by it.

use super::callagg::{CallAggregates, CallFigures, RankCalls};
use super::netagg::{ExactSum, HotspotAgg, node_name};
use crate::predict::RunPrediction;
use crate::topo::placement::Placement;
use crate::trace::RunTrace;
use serde::Serialize;

/// Why an arc is slowed in an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    OutgoingConflict,
    IncomingConflict,
    Both,
    /// No port carries two of its messages, but a message runs the other way between the
    /// same two nodes (the profile's reverse-flow factor).
    Opposite,
    /// No port carries two of its messages, but its destination sends on to a third node
    /// (the profile's through-flow factor).
    Through,
    None,
}

impl Cause {
    /// The cause of an arc's penalty from its source's out-degree and its destination's
    /// in-degree.
    pub fn of(out_deg: u32, in_deg: u32) -> Cause {
        match (out_deg > 1, in_deg > 1) {
            (true, true) => Cause::Both,
            (true, false) => Cause::OutgoingConflict,
            (false, true) => Cause::IncomingConflict,
            (false, false) => Cause::None,
        }
    }

    /// The cause of an arc's penalty as [`Cause::of`] gives it, or, without a conflict at
    /// either port, [`Cause::Opposite`] when a message runs the other way between the same
    /// nodes (`reverse`) and [`Cause::Through`] when the destination sends on to a third
    /// node (`onward`).
    pub fn of_arc(out_deg: u32, in_deg: u32, reverse: bool, onward: bool) -> Cause {
        match Cause::of(out_deg, in_deg) {
            Cause::None if reverse => Cause::Opposite,
            Cause::None if onward => Cause::Through,
            c => c,
        }
    }

    /// Text for the ranking.
    pub fn text(self) -> &'static str {
        match self {
            Cause::OutgoingConflict => "outgoing conflict",
            Cause::IncomingConflict => "incoming conflict",
            Cause::Both => "outgoing and incoming conflicts",
            Cause::Opposite => "opposite messages between the two nodes",
            Cause::Through => "destination sending on",
            Cause::None => "no conflict",
        }
    }
}

/// A sum taken term by term: a plain `f64`, or an [`ExactSum`] whose value does not
/// depend on the terms' order.
pub(crate) trait Summed: Default {
    fn plus(&mut self, x: f64);
}

impl Summed for f64 {
    fn plus(&mut self, x: f64) {
        *self += x;
    }
}

impl Summed for ExactSum {
    fn plus(&mut self, x: f64) {
        self.add(x);
    }
}

/// Penalty-weighted bytes and excess of arcs, the excess split by cause.
#[derive(Default, Clone, Copy)]
pub(crate) struct Sums<S> {
    pub(crate) weighted: S,
    pub(crate) excess: S,
    out_excess: S,
    in_excess: S,
    opposite_excess: S,
    through_excess: S,
}

/// [`Sums`] in the order the terms come (the network's intervals, in the replay's order).
pub(crate) type Acc = Sums<f64>;

impl<S: Summed> Sums<S> {
    pub(crate) fn add(&mut self, weighted: f64, excess: f64, cause: Cause) {
        self.weighted.plus(weighted);
        self.excess.plus(excess);
        match cause {
            Cause::OutgoingConflict => self.out_excess.plus(excess),
            Cause::IncomingConflict => self.in_excess.plus(excess),
            Cause::Both => {
                self.out_excess.plus(excess / 2.0);
                self.in_excess.plus(excess / 2.0);
            }
            Cause::Opposite => self.opposite_excess.plus(excess),
            Cause::Through => self.through_excess.plus(excess),
            Cause::None => {}
        }
    }
}

impl Acc {
    /// These sums and `exact`'s (each added once, as it stands at the end).
    pub(crate) fn with(&self, exact: &Sums<ExactSum>) -> Acc {
        Acc {
            weighted: self.weighted + exact.weighted.value(),
            excess: self.excess + exact.excess.value(),
            out_excess: self.out_excess + exact.out_excess.value(),
            in_excess: self.in_excess + exact.in_excess.value(),
            opposite_excess: self.opposite_excess + exact.opposite_excess.value(),
            through_excess: self.through_excess + exact.through_excess.value(),
        }
    }

    pub(crate) fn cause(&self) -> Cause {
        let (o, i) = (self.out_excess, self.in_excess);
        let (r, t) = (self.opposite_excess, self.through_excess);
        if o + i < r + t {
            // Mostly factors on lone messages, not ports shared.
            if r >= t {
                Cause::Opposite
            } else {
                Cause::Through
            }
        } else if o <= 0.0 && i <= 0.0 {
            Cause::None
        } else if o > 2.0 * i {
            Cause::OutgoingConflict
        } else if i > 2.0 * o {
            Cause::IncomingConflict
        } else {
            Cause::Both
        }
    }
}

/// One ranked interval: of the replay's network, or a collective operation's span.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct IntervalHotspot {
    /// The collective operation (e.g. `MPI_Alltoall`) the interval is, if it is one:
    /// its first member's start to its last member's end, its node pairs as arcs, its
    /// model's time over its contention-free time as the penalty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<&'static str>,
    pub start_s: f64,
    pub end_s: f64,
    pub arcs: u32,
    pub max_penalty: f64,
    pub penalty_weighted_bytes: f64,
    pub excess_bytes: f64,
    pub cause: Cause,
}

/// A ranked node pair (direction src → dst).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PairHotspot {
    pub src: String,
    pub dst: String,
    pub penalty_weighted_bytes: f64,
    pub excess_bytes: f64,
    pub cause: Cause,
}

/// A ranked node.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NodeHotspot {
    pub node: String,
    pub penalty_weighted_bytes: f64,
    pub excess_bytes: f64,
    pub cause: Cause,
}

/// A rank that lost time to contention.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RankLoss {
    pub rank: i32,
    pub node: String,
    /// Σ predicted contention (transfer under the penalty model minus contention-free
    /// transfer) over its calls, seconds.
    pub lost_s: f64,
}

/// A rank that others waited for.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Waited {
    pub rank: i32,
    /// Measured seconds other ranks spent waiting for it.
    pub caused_s: f64,
    /// The most frequent kind of those waits, by seconds.
    pub kind: String,
}

/// The hotspots document.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hotspots {
    pub model: String,
    pub intervals: Vec<IntervalHotspot>,
    pub node_pairs: Vec<PairHotspot>,
    pub nodes: Vec<NodeHotspot>,
    pub ranks: Vec<RankLoss>,
    /// Ranks that made others wait most (measured).
    pub waited_for: Vec<Waited>,
}

/// Whether the arc `s → d` runs beside its reverse `d → s`, and whether `d` sends on to a
/// node other than `s`, among the sorted node pairs `pairs` in flight with it.
pub(crate) fn arc_context(pairs: &[(u32, u32)], s: u32, d: u32) -> (bool, bool) {
    let reverse = pairs.binary_search(&(d, s)).is_ok();
    let lo = pairs.partition_point(|p| p.0 < d);
    let onward = pairs[lo..]
        .iter()
        .take_while(|p| p.0 == d)
        .any(|p| p.1 != s);
    (reverse, onward)
}

/// Computes the top `top` hotspots of each kind.
pub fn compute(run: &RunTrace, pred: &RunPrediction, top: usize) -> Hotspots {
    compute_with(run, pred, &CallAggregates::of_run(run, &pred.calls), top)
}

/// [`compute`] with the run's per-call figures already found.
pub fn compute_with(
    run: &RunTrace,
    pred: &RunPrediction,
    figs: &CallFigures,
    top: usize,
) -> Hotspots {
    let names = &pred.placement.names;
    let mut net = HotspotAgg::new(top);
    super::netagg::feed(pred, &mut net);
    let (intervals, node_pairs, node_list) = net.finish(|n| node_name(names, n));
    Hotspots {
        model: pred.model.clone(),
        intervals,
        node_pairs,
        nodes: node_list,
        ranks: rank_losses(run, &pred.placement, figs, top),
        waited_for: waited_for(figs, top),
    }
}

/// The `top` ranks that lost most to contention (none that lost nothing), on the node
/// the replay put them (`placement`: another one in a what-if replay); `run`'s ranks
/// (a shell will do) with their figures in `figs`.
pub fn rank_losses(
    run: &RunTrace,
    placement: &Placement,
    figs: &CallFigures,
    top: usize,
) -> Vec<RankLoss> {
    let none = RankCalls::default();
    let mut ranks: Vec<RankLoss> = run
        .ranks
        .iter()
        .enumerate()
        .map(|(ri, rk)| RankLoss {
            rank: rk.meta.rank,
            node: placement
                .node(rk.meta.rank)
                .map_or_else(|| rk.meta.node.clone(), |n| node_name(&placement.names, n)),
            lost_s: figs.ranks.get(ri).unwrap_or(&none).contention_s,
        })
        .collect();
    ranks.sort_by(|a, b| b.lost_s.total_cmp(&a.lost_s).then(a.rank.cmp(&b.rank)));
    ranks.retain(|r| r.lost_s > 0.0);
    ranks.truncate(top);
    ranks
}

/// The `top` ranks others waited for most (measured), with the kind of most of those
/// seconds.
pub fn waited_for(figs: &CallFigures, top: usize) -> Vec<Waited> {
    // By kind name, so that the seconds of a rank's kinds are summed in one order (a hash
    // map's order changed the last digit of `caused_s` from run to run).
    let mut waited_for: Vec<Waited> = figs
        .waited_on
        .iter()
        .map(|(&rank, kinds)| {
            let kind = kinds
                .iter()
                .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
                .map(|(k, _)| k.to_string())
                .unwrap_or_default();
            Waited {
                rank,
                caused_s: kinds.values().sum(),
                kind,
            }
        })
        .collect();
    waited_for.sort_by(|a, b| b.caused_s.total_cmp(&a.caused_s).then(a.rank.cmp(&b.rank)));
    waited_for.truncate(top);
    waited_for
}

fn mb(b: f64) -> String {
    format!("{:.2} MB", b / 1e6)
}

/// At most three lines, each only when there is something to say: the most penalised
/// node and its cause, the rank that lost most to contention, the rank others waited for
/// most. The full ranking is in hotspots.json and `pmpi-predict analyze`.
pub fn brief(h: &Hotspots) -> String {
    let mut s = String::new();
    if let Some(n) = h.nodes.first().filter(|n| n.excess_bytes > 0.0) {
        s += &format!(
            "pmpi-predict: most contended node {} ({}, excess {})\n",
            n.node,
            n.cause.text(),
            mb(n.excess_bytes)
        );
    }
    if let Some(r) = h.ranks.first() {
        s += &format!(
            "pmpi-predict: rank {} on {} lost most to contention: {:.3} s\n",
            r.rank, r.node, r.lost_s
        );
    }
    if let Some(w) = h.waited_for.first() {
        s += &format!(
            "pmpi-predict: others waited longest for rank {}: {:.3} s (mostly {})\n",
            w.rank, w.caused_s, w.kind
        );
    }
    s
}

/// The ranking as text, `n` entries per list.
pub fn text(h: &Hotspots, n: usize) -> String {
    let mut s = format!(
        "contention hotspots (penalty model: {}; excess = (penalty - 1) x bytes)\n",
        h.model
    );
    if h.intervals.iter().all(|i| i.excess_bytes <= 0.0) {
        s += "  no bandwidth sharing between inter-node messages was predicted\n";
    } else {
        s += "  intervals:\n";
        for i in h.intervals.iter().take(n).filter(|i| i.excess_bytes > 0.0) {
            s += &format!(
                "    {:.6}-{:.6} s  {} arcs  max penalty {:.2}  excess {}  ({})\n",
                i.start_s,
                i.end_s,
                i.arcs,
                i.max_penalty,
                mb(i.excess_bytes),
                i.cause.text()
            );
        }
        s += "  node pairs:\n";
        for p in h.node_pairs.iter().take(n).filter(|p| p.excess_bytes > 0.0) {
            s += &format!(
                "    {} -> {}  excess {}  ({})\n",
                p.src,
                p.dst,
                mb(p.excess_bytes),
                p.cause.text()
            );
        }
        s += "  nodes:\n";
        for p in h.nodes.iter().take(n).filter(|p| p.excess_bytes > 0.0) {
            s += &format!(
                "    {}  excess {}  ({})\n",
                p.node,
                mb(p.excess_bytes),
                p.cause.text()
            );
        }
    }
    if h.ranks.is_empty() {
        s += "  no rank lost time to contention (predicted)\n";
    } else {
        s += "  ranks that lost most time to contention (predicted transfer beyond contention-free):\n";
        for r in h.ranks.iter().take(n) {
            s += &format!("    rank {} on {}  {:.6} s\n", r.rank, r.node, r.lost_s);
        }
    }
    if !h.waited_for.is_empty() {
        s += "  ranks that made others wait (measured):\n";
        for w in h.waited_for.iter().take(n) {
            s += &format!(
                "    rank {}  {:.6} s  (mostly {})\n",
                w.rank, w.caused_s, w.kind
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_arc_s_cause_names_the_factor_that_slowed_it() {
        // Port conflicts come first, whatever else runs.
        assert_eq!(Cause::of_arc(2, 1, true, true), Cause::OutgoingConflict);
        assert_eq!(Cause::of_arc(1, 3, true, false), Cause::IncomingConflict);
        assert_eq!(Cause::of_arc(1, 1, true, true), Cause::Opposite);
        assert_eq!(Cause::of_arc(1, 1, false, true), Cause::Through);
        assert_eq!(Cause::of_arc(1, 1, false, false), Cause::None);
        // 0 ⇄ 1 and 1 → 2: arc 0 → 1 has its reverse; 2 → 0 none; 1 → 2's destination
        // sends nothing on; 0 → 1's destination sends on to 2.
        let pairs = [(0, 1), (1, 0), (1, 2)];
        assert_eq!(arc_context(&pairs, 0, 1), (true, true));
        assert_eq!(arc_context(&pairs, 1, 2), (false, false));
        assert_eq!(arc_context(&pairs, 1, 0), (true, false));
    }

    #[test]
    fn a_sum_s_cause_is_the_larger_kind_of_excess() {
        let mut a = Acc::default();
        a.add(2.0, 1.0, Cause::Opposite);
        a.add(2.0, 0.5, Cause::OutgoingConflict);
        assert_eq!(a.cause(), Cause::Opposite);
        a.add(2.0, 1.0, Cause::IncomingConflict);
        assert_eq!(a.cause(), Cause::Both);
        let mut t = Acc::default();
        t.add(1.5, 0.5, Cause::Through);
        assert_eq!(t.cause(), Cause::Through);
        assert_eq!(Acc::default().cause(), Cause::None);
    }
}

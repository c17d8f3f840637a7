//! The network of the replay: an incremental fluid model of the messages in flight.
//!
//! Flows are added at the replay's current time and finish when their work is done. While
//! the set of inter-node flows in flight stays the same (an interval), each progresses at
//! rate `1 / (p · tref)` of its work per second, `p` being its penalty in that interval's
//! graph (the progress rule of the penalty paper's simulator). Intra-node flows never share
//! the network: they take their `tref`. Every interval is logged for the hotspots.
#![forbid(unsafe_code)]

use crate::model::{CommGraph, Edge, PenaltyModel};

/// One interval: flows `arcs[first..first+len]` in flight, each with its penalty.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub start: f64,
    pub end: f64,
    pub first: u32,
    pub len: u32,
}

/// The interval log of a replay's network.
#[derive(Debug, Clone, Default)]
pub struct Sim {
    /// Predicted end of each inter-node flow (by position among the inter-node flows).
    pub end: Vec<f64>,
    pub intervals: Vec<Interval>,
    /// (position of the flow among the inter-node flows, penalty) of every interval, back
    /// to back.
    pub arcs: Vec<(u32, f64)>,
    /// The bytes of each inter-node flow as the network carried them (by position): a
    /// packed message's head goes with its request, the rest as the flow.
    pub bytes: Vec<u64>,
    /// (position, when, lone time before) of every flow whose lone time grew in flight
    /// ([`Net::extend`]), in time order: the intervals before that instant moved its
    /// bytes at the lone time it had then, as a streamed report saw them.
    pub tref_changes: Vec<(u32, f64, f64)>,
}

impl Sim {
    /// The arcs of interval `i`.
    pub fn arcs_of(&self, i: &Interval) -> &[(u32, f64)] {
        &self.arcs[i.first as usize..(i.first + i.len) as usize]
    }

    /// [`Sim::tref_changes`] by flow, then time: what [`tref_at`] looks up.
    pub fn tref_index(&self) -> Vec<(u32, f64, f64)> {
        let mut v = self.tref_changes.clone();
        // Stable: a flow's changes stay in time order.
        v.sort_by_key(|c| c.0);
        v
    }
}

/// The lone time of the flow at `pos` during an interval that starts at `start`, from
/// [`Sim::tref_index`]: the lone time it had before its first change after `start`, else
/// `last` (its final one).
pub fn tref_at(index: &[(u32, f64, f64)], pos: u32, start: f64, last: f64) -> f64 {
    let from = index.partition_point(|c| c.0 < pos);
    index[from..]
        .iter()
        .take_while(|c| c.0 == pos)
        .find(|c| c.1 > start)
        .map_or(last, |c| c.2)
}

/// An inter-node flow in flight during an interval, as a [`NetSink`] sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InFlight {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    pub tref: f64,
    pub pen: f64,
    /// What [`Net::add_owned`] was given (`u64::MAX`: none).
    pub owner: u64,
}

/// Told of the network's flows and intervals as they happen ([`Net::with_sink`]): the
/// interval log's content without the log, for a replay that keeps none.
pub trait NetSink {
    /// A flow was added (within a node too).
    fn added(&mut self, src: u32, dst: u32, bytes: u64);
    /// An interval with inter-node flows in flight closed: the same flows, in the same
    /// order, as the interval log would hold.
    fn closed(&mut self, start: f64, end: f64, flows: &[InFlight]);
}

/// How messages crossing a wide-area backbone at once slow each other: measured
/// (`calibrate --clusters`: k messages at once, their last arrival over a lone one's) or,
/// without measurements, shared equally by a backbone that carries `lanes` messages at
/// full speed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Crossing {
    /// Messages the backbone carries at once at full speed (its bandwidth over one
    /// message's); used where `one_way` is empty.
    pub lanes: f64,
    /// Penalty of k messages crossing in one direction, at index k − 1.
    pub one_way: Vec<f64>,
    /// Penalty of k messages crossing each way at once, at index k − 1 (empty: `one_way`).
    pub both_ways: Vec<f64>,
}

impl Crossing {
    /// Shared equally by `lanes` messages' worth of bandwidth.
    pub fn fair(lanes: f64) -> Crossing {
        Crossing {
            lanes,
            ..Crossing::default()
        }
    }

    /// Penalty of a message crossing with `same` messages in its direction (itself
    /// included) and `back` the other way. Beyond the measured counts the last measured
    /// penalty per message grows linearly with the count (the backbone shared equally).
    pub fn penalty(&self, same: u32, back: u32) -> f64 {
        let k = same.max(1) as usize;
        let t = if back > 0 && !self.both_ways.is_empty() {
            &self.both_ways
        } else {
            &self.one_way
        };
        match t.len() {
            0 => k as f64 / self.lanes.max(1.0),
            n if k <= n => t[k - 1],
            n => t[n - 1] * k as f64 / n as f64,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct NetFlow {
    /// The id [`Net::add`] returned.
    id: u32,
    src: u32,
    dst: u32,
    bytes: u64,
    tref: f64,
    /// Fraction of the work left.
    remaining: f64,
    pen: f64,
    intra: bool,
    /// Position among the inter-node flows (the index the interval log uses).
    inter_pos: u32,
    /// For the sink: see [`Net::add_owned`].
    owner: u64,
    /// What [`Net::advance`] gives back when it finishes ([`Net::add_tagged`]).
    tag: u32,
}

/// Which ranks a message joins and when each posted its side: what decides whether two
/// opposite messages between one pair of ranks move together or one after the other (see
/// [`Net::with_reverse`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Posting {
    pub src_rank: u32,
    pub dst_rank: u32,
    /// When the sender posted the send, and the receiver the receive (NaN: not posted).
    pub send_post: f64,
    pub recv_post: f64,
}

impl Posting {
    /// Unknown: the flow pays the reverse factor against any opposite flow between its
    /// two nodes.
    pub const UNKNOWN: Posting = Posting {
        src_rank: u32::MAX,
        dst_rank: u32::MAX,
        send_post: f64::NAN,
        recv_post: f64::NAN,
    };

    fn known(&self) -> bool {
        self.src_rank != u32::MAX
    }

    /// `self` and its opposite message `back` (between the same two ranks) go one after
    /// the other: each rank posted its receive before (or with) its send.
    fn serialised_with(&self, back: &Posting) -> bool {
        back.recv_post <= self.send_post && self.recv_post <= back.send_post
    }
}

/// The fluid network.
pub struct Net<'m> {
    model: Option<&'m dyn PenaltyModel>,
    now: f64,
    /// Slots of the flows in flight (a finished flow's slot is reused): memory follows
    /// the messages in flight, not the length of the run.
    flows: Vec<NetFlow>,
    free_slots: Vec<u32>,
    next_id: u32,
    /// Slots of the flows in flight, in the order they were added (swap-removed).
    active: Vec<u32>,
    dirty: bool,
    /// [`Net::next_finish`] since the last change (the replay asks more often than the
    /// network changes), and the least time a flow in flight has left.
    finish: Option<(f64, f64)>,
    graph: CommGraph,
    /// Scratch: the slots of the inter-node flows of the current graph.
    graph_slots: Vec<u32>,
    /// Scratch: the model's penalties of the current graph.
    pens: Vec<f64>,
    /// Inter-node flows in flight leaving and entering each node, and how many of these
    /// counts are above 1: while none is, the model's penalties may be known without it
    /// ([`PenaltyModel::disjoint_penalty`]). Counted only for such a model.
    disjoint: Option<f64>,
    out_deg: Vec<u32>,
    in_deg: Vec<u32>,
    shared_ports: u32,
    /// Log the intervals (off for a replay whose network nobody reads).
    logging: bool,
    /// Cluster of each node where clusters share a wide-area link, and how the messages
    /// crossing it at once slow each other.
    backbone: Option<(Vec<u32>, Crossing)>,
    /// Factor on the penalty of a flow of at least `reverse_from` bytes while such a flow
    /// runs the other way between the same two nodes (1: the ports are full duplex, as the
    /// papers assume; calibrated).
    reverse: f64,
    reverse_from: u64,
    /// Factor on the penalty of a flow of at least `reverse_from` bytes while its
    /// destination sends such a flow to a third node (see [`Net::with_through`]).
    through: f64,
    /// Seconds per byte of a lone message and what a port carries in lone messages' worth
    /// (0: ports unbounded): see [`Net::with_ports`].
    port_beta: f64,
    port_capacity: f64,
    /// Quantiles (evenly spaced probabilities, mean 1) of a contended flow's factor; empty:
    /// none (see [`Net::with_dispersion`]).
    dispersion: Vec<f64>,
    /// Scratch: the load of each node's outgoing and incoming port.
    load_out: Vec<f64>,
    load_in: Vec<f64>,
    /// Scratch: (source, destination) of the current graph's flows, sorted.
    pairs: Vec<(u32, u32)>,
    /// Each slot's [`Posting`] (see [`Net::add_tagged`]), and scratch: the slots of the
    /// current graph's flows whose posting is known, by (source rank, destination rank).
    postings: Vec<Posting>,
    by_ranks: Vec<(u32, u32, u32)>,
    /// Flow ids of the inter-node flows, in the order they were added.
    pub inter: Vec<u32>,
    /// Intervals of inter-node flows and their penalties.
    pub log: Sim,
    /// Told of flows and intervals as they happen, and its scratch.
    sink: Option<Box<dyn NetSink + 'm>>,
    in_flight: Vec<InFlight>,
}

/// Whether `q` can serve as a dispersion's quantiles: at least 2, positive, finite and
/// non-decreasing (what [`Net::with_dispersion`] uses and a profile must hold).
pub fn valid_dispersion(q: &[f64]) -> bool {
    q.len() >= 2
        && q.iter().all(|x| x.is_finite() && *x > 0.0)
        && q.windows(2).all(|w| w[0] <= w[1])
}

/// SplitMix64 of `x` (its increment, then its finaliser): the n-th output of a SplitMix64
/// generator seeded with s is `splitmix64(s + (n - 1)·increment)`. A few lines, and the
/// same draws on every platform: the replay's per-flow draws and calibrate's resamples.
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(SPLITMIX_INCREMENT);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64's increment (the golden ratio's fraction in 64 bits).
pub const SPLITMIX_INCREMENT: u64 = 0x9E37_79B9_7F4A_7C15;

/// Relative tolerance under which a flow counts as finished.
const EPS: f64 = 1e-12;

impl<'m> Net<'m> {
    /// An empty network; without a model every penalty is 1.
    pub fn new(model: Option<&'m dyn PenaltyModel>) -> Net<'m> {
        Net {
            model,
            now: 0.0,
            flows: Vec::new(),
            free_slots: Vec::new(),
            next_id: 0,
            active: Vec::new(),
            dirty: false,
            finish: None,
            graph: CommGraph::default(),
            graph_slots: Vec::new(),
            pens: Vec::new(),
            disjoint: model.and_then(|m| m.disjoint_penalty()),
            out_deg: Vec::new(),
            in_deg: Vec::new(),
            shared_ports: 0,
            logging: true,
            backbone: None,
            reverse: 1.0,
            reverse_from: 0,
            through: 1.0,
            port_beta: 0.0,
            port_capacity: 1.0,
            dispersion: Vec::new(),
            load_out: Vec::new(),
            load_in: Vec::new(),
            pairs: Vec::new(),
            postings: Vec::new(),
            by_ranks: Vec::new(),
            inter: Vec::new(),
            log: Sim::default(),
            sink: None,
            in_flight: Vec::new(),
        }
    }

    /// Nodes in different clusters (`cluster_of_node`) talk over one wide-area backbone:
    /// a flow crossing it while k flows cross in its direction (itself included) takes at
    /// least `crossing`'s penalty for k, on top of the model's penalty at the nodes' ports.
    pub fn with_backbone(mut self, cluster_of_node: Vec<u32>, crossing: Crossing) -> Self {
        self.backbone = Some((cluster_of_node, crossing));
        self
    }

    /// A flow of at least `from` bytes whose reverse flow (destination to source, also of
    /// at least `from` bytes) is in flight at the same time has its penalty multiplied by
    /// `factor` (at least 1). Open MPI's TCP transport on a shaped port moves two opposite
    /// rendezvous messages between one pair of hosts at half speed each, where raw TCP
    /// keeps both at full speed and eager messages lose little; `calibrate` measures the
    /// factor, the replay passes the eager limit as `from`. It does so only when both
    /// ranks posted their receives before their sends (`MPI_Sendrecv`, or `MPI_Irecv`
    /// then `MPI_Isend`): posted sends first, the two messages moved together (1.12 lone
    /// times at 1 MiB on the emulated cluster, against 2.02 receives first), and so did
    /// two opposite messages between two other pairs of ranks on the same hosts. Flows
    /// given their [`Posting`] ([`Net::add_tagged`]) follow that; others pay the factor against any opposite
    /// flow between their two nodes.
    pub fn with_reverse(mut self, factor: f64, from: u64) -> Self {
        self.reverse = if factor.is_finite() {
            factor.max(1.0)
        } else {
            1.0
        };
        self.reverse_from = from;
        self
    }

    /// A flow of at least the [`Net::with_reverse`] size whose destination node sends such
    /// a flow to another node at the same time has its penalty multiplied by `factor` (at
    /// least 1; a flow that pays the reverse factor does not pay this one too). Over TCP the
    /// receiver's acknowledgements queue behind its own outgoing data in its port's shaper:
    /// `calibrate` measures it on a ring of the nodes, the mean of its slowest flow
    /// (1.13-1.31 on the emulated 100 Mbit/s cluster); hpcc's ring exchanges of 2 MB moved
    /// at 1.06 at the median.
    pub fn with_through(mut self, factor: f64) -> Self {
        self.through = if factor.is_finite() {
            factor.max(1.0)
        } else {
            1.0
        };
        self
    }

    /// Every node's port carries `capacity` lone messages' worth each way (a lone message
    /// moving at `beta` seconds per byte), and no more: where the model's penalties would
    /// have the flows through a port move more (gige fitted on TCP gives two flows into one
    /// 100 Mbit/s port 1.84 each, where the last of them cannot end before 2), the
    /// penalties of that port's flows are scaled up until it carries exactly its capacity.
    /// The model's penalties are capped, before the reverse and through factors multiply
    /// them: those slow a flow for reasons other than its port's share.
    /// A flow counts for the share of its lone time that is wire time (`beta · bytes /
    /// tref`, at most 1): a small message, whose time is mostly latency, loads the port
    /// little.
    pub fn with_ports(mut self, beta: f64, capacity: f64) -> Self {
        let ok = beta.is_finite() && beta > 0.0 && capacity.is_finite() && capacity > 0.0;
        self.port_beta = if ok { beta } else { 0.0 };
        self.port_capacity = if ok { capacity } else { 1.0 };
        self
    }

    /// A flow of at least the [`Net::with_reverse`] size whose penalty is above 1 (it shares
    /// a port, or pays a factor) has it multiplied by its own factor, at least to 1, drawn
    /// once per flow by a hash of its id from the quantiles `q` (evenly spaced
    /// probabilities from 0 to 1, interpolated linearly, rescaled to a mean of one): the
    /// same replay gives the same draws. TCP shares a shaped port unfairly and which flow
    /// gets ahead changes from one exchange to the next; with every flow at the model's
    /// mean share no rank ever waits for another's unlucky flow, where the run's ranks do
    /// at every dependency after a contended exchange. Quantiles that are not positive,
    /// finite and non-decreasing, or fewer than 2, are ignored.
    pub fn with_dispersion(mut self, q: &[f64]) -> Self {
        if valid_dispersion(q) {
            // The mean of the piecewise-linear inverse distribution function.
            let mean =
                q.windows(2).map(|w| 0.5 * (w[0] + w[1])).sum::<f64>() / (q.len() - 1) as f64;
            self.dispersion = q.iter().map(|x| x / mean).collect();
        }
        self
    }

    /// The dispersion factor of flow `id` (1 without a dispersion).
    fn spread(&self, id: u32) -> f64 {
        let q = &self.dispersion;
        if q.is_empty() {
            return 1.0;
        }
        // Uniform in [0, 1) from the id's hash.
        let u = (splitmix64(id as u64) >> 11) as f64 / (1u64 << 53) as f64;
        let x = u * (q.len() - 1) as f64;
        let k = (x as usize).min(q.len() - 2);
        q[k] + (q[k + 1] - q[k]) * (x - k as f64)
    }

    /// Keeps no interval log and no list of inter-node flows (`log` and `inter` stay
    /// empty): for a replay that only needs the flows' ends.
    pub fn without_log(mut self) -> Self {
        self.logging = false;
        self
    }

    /// Tells `sink` of every flow added and every interval closed.
    pub fn with_sink(mut self, sink: Box<dyn NetSink + 'm>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Current time of the network.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Tells the sink that `bytes` crossed from `src` to `dst` outside any flow (a packed
    /// message's head, sent with its request), as if a flow had been added.
    pub fn carried(&mut self, src: u32, dst: u32, bytes: u64) {
        if bytes > 0
            && let Some(s) = &mut self.sink
        {
            s.added(src, dst, bytes);
        }
    }

    /// Adds a flow at the current time; returns its id (ids count up from 0).
    pub fn add(&mut self, src: u32, dst: u32, bytes: u64, tref: f64) -> u32 {
        self.add_owned(src, dst, bytes, tref, u64::MAX)
    }

    /// [`Net::add`], the sink told `owner` with the flow's intervals.
    pub fn add_owned(&mut self, src: u32, dst: u32, bytes: u64, tref: f64, owner: u64) -> u32 {
        self.add_tagged(src, dst, bytes, tref, owner, self.next_id, Posting::UNKNOWN)
    }

    /// [`Net::add_owned`], [`Net::advance`] giving back `tag` instead of the flow's id when
    /// it finishes (the replay's message: no map from flows to messages), and who posted
    /// the flow and when: with it, the reverse factor holds only between the two messages
    /// of one pair of ranks that each posted its receive first (see [`Net::with_reverse`]).
    #[allow(clippy::too_many_arguments)]
    pub fn add_tagged(
        &mut self,
        src: u32,
        dst: u32,
        bytes: u64,
        tref: f64,
        owner: u64,
        tag: u32,
        posting: Posting,
    ) -> u32 {
        if let Some(s) = &mut self.sink {
            s.added(src, dst, bytes);
        }
        let id = self.next_id;
        self.next_id += 1;
        let intra = src == dst;
        let inter_pos = if intra || !self.logging {
            u32::MAX
        } else {
            self.inter.push(id);
            self.log.bytes.push(bytes);
            (self.inter.len() - 1) as u32
        };
        let flow = NetFlow {
            id,
            src,
            dst,
            bytes,
            tref: if tref.is_finite() { tref.max(0.0) } else { 0.0 },
            remaining: 1.0,
            pen: 1.0,
            intra,
            inter_pos,
            owner,
            tag,
        };
        let slot = match self.free_slots.pop() {
            Some(k) => {
                self.flows[k as usize] = flow;
                self.postings[k as usize] = posting;
                k
            }
            None => {
                self.flows.push(flow);
                self.postings.push(posting);
                (self.flows.len() - 1) as u32
            }
        };
        self.active.push(slot);
        self.finish = None;
        if !intra {
            self.dirty = true;
            if self.disjoint.is_some() {
                self.count_ports(src, dst, true);
            }
        }
        id
    }

    /// Counts an inter-node flow from `src` to `dst` in (`add`) or out of the ports'
    /// degrees, keeping the number of shared ports.
    fn count_ports(&mut self, src: u32, dst: u32, add: bool) {
        let n = src.max(dst) as usize + 1;
        if self.out_deg.len() < n {
            self.out_deg.resize(n, 0);
            self.in_deg.resize(n, 0);
        }
        for d in [
            &mut self.out_deg[src as usize],
            &mut self.in_deg[dst as usize],
        ] {
            // A port is shared while its degree is 2 or more: count the crossings of 1↔2.
            if add {
                *d += 1;
                if *d == 2 {
                    self.shared_ports += 1;
                }
            } else {
                if *d == 2 {
                    self.shared_ports -= 1;
                }
                *d -= 1;
            }
        }
    }

    fn refresh(&mut self) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let Some(m) = self.model else {
            return;
        };
        let mut ids = std::mem::take(&mut self.graph_slots);
        ids.clear();
        ids.extend(
            self.active
                .iter()
                .copied()
                .filter(|&i| !self.flows[i as usize].intra),
        );
        let valid = |p: f64| if p.is_finite() && p > 0.0 { p } else { 1.0 };
        match self.disjoint {
            // No port shared: the model's answer is known without the graph.
            Some(p) if self.shared_ports == 0 => {
                for &i in &ids {
                    self.flows[i as usize].pen = valid(p);
                }
            }
            _ => {
                self.graph.edges.clear();
                self.graph.edges.extend(ids.iter().map(|&i| {
                    let f = &self.flows[i as usize];
                    Edge {
                        src: f.src,
                        dst: f.dst,
                        bytes: f.bytes,
                    }
                }));
                m.penalties_into(&self.graph, &mut self.pens);
                for (&i, &p) in ids.iter().zip(&self.pens) {
                    self.flows[i as usize].pen = valid(p);
                }
            }
        }
        // The port's capacity bounds the model's sharing, before the factors: opposite
        // flows of one pair and flows through a sending node lose that on top (a ring of
        // 4 hosts exchanging 1 MiB both ways with Isend/Irecv moved each message in 3.8
        // lone times, 2 for two flows per port times 1.95 for the opposite flow; gige's
        // 1.51 for two flows, capped only after the factor, left 2.9).
        if self.port_beta > 0.0 {
            self.cap_ports(&ids);
        }
        if self.reverse > 1.0 || self.through > 1.0 {
            self.pairs.clear();
            let from = self.reverse_from;
            self.pairs.extend(ids.iter().filter_map(|&i| {
                let f = &self.flows[i as usize];
                (f.bytes >= from).then_some((f.src, f.dst))
            }));
            self.pairs.sort_unstable();
            self.by_ranks.clear();
            for &i in &ids {
                let (f, p) = (&self.flows[i as usize], &self.postings[i as usize]);
                if f.bytes >= from && p.known() {
                    self.by_ranks.push((p.src_rank, p.dst_rank, i));
                }
            }
            self.by_ranks.sort_unstable();
            for &i in &ids {
                let f = &self.flows[i as usize];
                if f.bytes < from {
                    continue;
                }
                let p = self.postings[i as usize];
                let reversed = if p.known() {
                    // Between one pair of ranks, and only if both posted their receives
                    // first (an Isend before its Irecv lets the two move together).
                    let lo = self
                        .by_ranks
                        .partition_point(|b| (b.0, b.1) < (p.dst_rank, p.src_rank));
                    self.by_ranks[lo..]
                        .iter()
                        .take_while(|b| (b.0, b.1) == (p.dst_rank, p.src_rank))
                        .any(|b| p.serialised_with(&self.postings[b.2 as usize]))
                } else {
                    self.pairs.binary_search(&(f.dst, f.src)).is_ok()
                };
                let f = &mut self.flows[i as usize];
                if reversed {
                    f.pen *= self.reverse;
                } else {
                    // Flows leaving the destination, to a node other than the source.
                    let lo = self.pairs.partition_point(|p| p.0 < f.dst);
                    let onward = self.pairs[lo..]
                        .iter()
                        .take_while(|p| p.0 == f.dst)
                        .any(|p| p.1 != f.src);
                    if onward {
                        f.pen *= self.through;
                    }
                }
            }
        }
        if let Some((cl, table)) = &self.backbone {
            let of = |n: u32| cl.get(n as usize).copied().unwrap_or(0);
            let crossing = |f: &NetFlow| (of(f.src) != of(f.dst)).then(|| (of(f.src), of(f.dst)));
            let mut count: std::collections::HashMap<(u32, u32), u32> = Default::default();
            for &i in &ids {
                if let Some(k) = crossing(&self.flows[i as usize]) {
                    *count.entry(k).or_default() += 1;
                }
            }
            for &i in &ids {
                let f = &mut self.flows[i as usize];
                if let Some((a, b)) = crossing(f) {
                    let back = count.get(&(b, a)).copied().unwrap_or(0);
                    f.pen = f.pen.max(table.penalty(count[&(a, b)], back));
                }
            }
        }
        if !self.dispersion.is_empty() {
            for &i in &ids {
                let f = self.flows[i as usize];
                if f.pen > 1.0 + 1e-9 && f.bytes >= self.reverse_from {
                    self.flows[i as usize].pen = (f.pen * self.spread(f.id)).max(1.0);
                }
            }
        }
        self.graph_slots = ids;
    }

    /// Scales the penalties of the flows `ids` so that no port carries more than its
    /// capacity: a flow's penalty is multiplied by the load of the busier of its two ports
    /// where that is above 1. One pass suffices: every flow of a port whose load was L is
    /// slowed by at least L, so the port's load falls to 1 or below.
    fn cap_ports(&mut self, ids: &[u32]) {
        let beta = self.port_beta;
        let weight = |f: &NetFlow| {
            if f.tref > 0.0 {
                (beta * f.bytes as f64 / f.tref).min(1.0)
            } else {
                0.0
            }
        };
        let nodes = ids
            .iter()
            .map(|&i| {
                let f = &self.flows[i as usize];
                f.src.max(f.dst) as usize + 1
            })
            .max()
            .unwrap_or(0);
        for v in [&mut self.load_out, &mut self.load_in] {
            v.clear();
            v.resize(nodes, 0.0);
        }
        for &i in ids {
            let f = &self.flows[i as usize];
            let w = weight(f) / f.pen;
            self.load_out[f.src as usize] += w;
            self.load_in[f.dst as usize] += w;
        }
        for &i in ids {
            let f = &mut self.flows[i as usize];
            let load = self.load_out[f.src as usize].max(self.load_in[f.dst as usize])
                / self.port_capacity;
            if load > 1.0 + 1e-12 {
                f.pen *= load;
            }
        }
    }

    /// Flow `id`, if still in flight, takes `dt` more seconds alone (its lone time grows
    /// by `dt`, what it has done so far kept): a latency learnt after it left (the
    /// replay's exchanges, [`crate::profile::Profile::exchange`]).
    pub fn extend(&mut self, id: u32, dt: f64) {
        if !(dt.is_finite() && dt > 0.0) {
            return;
        }
        let Some(&i) = self
            .active
            .iter()
            .find(|&&i| self.flows[i as usize].id == id)
        else {
            return;
        };
        let f = &mut self.flows[i as usize];
        if self.logging && !f.intra {
            self.log.tref_changes.push((f.inter_pos, self.now, f.tref));
        }
        let tref = f.tref + dt;
        f.remaining = (f.remaining * f.tref + dt) / tref;
        f.tref = tref;
        self.finish = None;
    }

    fn time_left(&self, i: u32) -> f64 {
        let f = &self.flows[i as usize];
        f.remaining * f.pen * f.tref
    }

    /// When the next flow finishes at the current rates (infinity when none is in flight).
    pub fn next_finish(&mut self) -> f64 {
        if let Some((t, _)) = self.finish {
            return t;
        }
        self.refresh();
        let left = self
            .active
            .iter()
            .map(|&i| self.time_left(i))
            .fold(f64::INFINITY, f64::min);
        let t = self.now + left;
        self.finish = Some((t, left));
        t
    }

    /// Moves time forward to `t` (no later than [`Net::next_finish`]) and returns the flows
    /// that finished at `t` (their ids, or the tags [`Net::add_tagged`] gave them).
    /// (Inlined into the replay's loop for the common case checked first, most events
    /// being at the network's time with nothing finishing.)
    #[inline]
    pub fn advance(&mut self, t: f64, done: &mut Vec<u32>) {
        done.clear();
        // Nothing moves and nothing finishes now (every flow's finish is later, and none is
        // within the 1e-15 s that finishes a flow at once): the pass below would change
        // nothing. The replay asks at every event, most of them at the network's time.
        if let Some((next, left)) = self.finish
            && t == self.now
            && next > t
            && left > 1e-15
        {
            return;
        }
        self.advance_moving(t, done);
    }

    /// [`Net::advance`] when time moves or a flow may finish.
    #[inline(never)]
    fn advance_moving(&mut self, t: f64, done: &mut Vec<u32>) {
        self.refresh();
        let dt = (t - self.now).max(0.0);
        if dt > 0.0 && self.logging {
            let first = self.log.arcs.len() as u32;
            self.log.arcs.extend(
                self.active
                    .iter()
                    .filter(|&&i| !self.flows[i as usize].intra)
                    .map(|&i| {
                        let f = &self.flows[i as usize];
                        (f.inter_pos, f.pen)
                    }),
            );
            let len = self.log.arcs.len() as u32 - first;
            if len > 0 {
                self.log.intervals.push(Interval {
                    start: self.now,
                    end: t,
                    first,
                    len,
                });
            }
        }
        if dt > 0.0
            && let Some(sink) = &mut self.sink
        {
            self.in_flight.clear();
            self.in_flight.extend(
                self.active
                    .iter()
                    .map(|&i| &self.flows[i as usize])
                    .filter(|f| !f.intra)
                    .map(|f| InFlight {
                        src: f.src,
                        dst: f.dst,
                        bytes: f.bytes,
                        tref: f.tref,
                        pen: f.pen,
                        owner: f.owner,
                    }),
            );
            if !self.in_flight.is_empty() {
                sink.closed(self.now, t, &self.in_flight);
            }
        }
        let mut k = 0;
        while k < self.active.len() {
            let i = self.active[k];
            // Compared as the finish time `next_finish` computed, so that the flow it named
            // finishes even when its time left is below the resolution of `now`.
            let left = self.time_left(i);
            if self.now + left <= t || left <= dt * (1.0 + EPS) + 1e-15 {
                self.active.swap_remove(k);
                self.free_slots.push(i);
                let f = self.flows[i as usize];
                // Its slot for now (kept as it is until the next flow is added).
                done.push(i);
                if !f.intra {
                    self.dirty = true;
                    if self.disjoint.is_some() {
                        self.count_ports(f.src, f.dst, false);
                    }
                }
            } else {
                let f = &mut self.flows[i as usize];
                f.remaining -= dt / (f.pen * f.tref);
                k += 1;
            }
        }
        // The flows finished at one instant in the order they were added, given back by
        // their tags. (Most often one flow finishes: nothing to sort.)
        if done.len() > 1 {
            done.sort_unstable_by_key(|&i| self.flows[i as usize].id);
        }
        for x in done.iter_mut() {
            *x = self.flows[*x as usize].tag;
        }
        if dt > 0.0 || !done.is_empty() {
            self.finish = None;
        }
        self.now = self.now.max(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::GigabitEthernet;

    fn run_all(net: &mut Net) -> Vec<(u32, f64)> {
        let mut out = Vec::new();
        let mut done = Vec::new();
        loop {
            let t = net.next_finish();
            if !t.is_finite() {
                break;
            }
            net.advance(t, &mut done);
            out.extend(done.iter().map(|&i| (i, t)));
        }
        out
    }

    /// Flows that finish at one instant come back in the order they were added, as their
    /// tags ([`Net::add_tagged`]) when they have one: the replay's arrivals at an instant
    /// keep the flows' order whatever its messages' numbers.
    #[test]
    fn tagged_flows_finishing_together_come_back_in_their_order() {
        let mut net = Net::new(None);
        // Five equal flows on separate node pairs, tagged in decreasing order, and one
        // untagged (its tag is its id, 5).
        for k in 0..5u32 {
            net.add_tagged(
                2 * k,
                2 * k + 1,
                10,
                1.0,
                u64::MAX,
                100 - k,
                Posting::UNKNOWN,
            );
        }
        net.add(20, 21, 10, 1.0);
        let ends = run_all(&mut net);
        let tags: Vec<u32> = ends.iter().map(|&(t, _)| t).collect();
        assert_eq!(tags, [100, 99, 98, 97, 96, 5]);
        assert!(ends.iter().all(|&(_, t)| t == ends[0].1), "{ends:?}");
    }

    #[test]
    fn measured_crossing_penalties_slow_the_flows_that_cross_together() {
        // Nodes 0, 1 in cluster 0, node 2 in cluster 1. Two flows cross from 0 and 1 to 2
        // (one way, measured penalty 3 for two), a third stays in cluster 0. The model
        // alone gives none of them a penalty (no port is shared but node 2's, 2·0.5 = 1).
        let m = GigabitEthernet::new(0.5, 0.0, 0.0).unwrap();
        let crossing = Crossing {
            lanes: 1.0,
            one_way: vec![1.0, 3.0],
            both_ways: vec![],
        };
        let mut net = Net::new(Some(&m)).with_backbone(vec![0, 0, 1], crossing);
        net.add(0, 2, 10, 1.0);
        net.add(1, 2, 10, 1.0);
        let ends = run_all(&mut net);
        assert_eq!(ends.len(), 2);
        assert!(
            ends.iter().all(|&(_, t)| (t - 3.0).abs() < 1e-12),
            "{ends:?}"
        );
        let fair = Crossing::fair(2.0);
        assert_eq!(fair.penalty(4, 1), 2.0);
        assert_eq!(fair.penalty(1, 0), 0.5);
    }

    /// gige without its shortcut: every interval's penalties from the model.
    struct AlwaysAsk(GigabitEthernet);

    impl PenaltyModel for AlwaysAsk {
        fn name(&self) -> &str {
            "gige-always"
        }
        fn penalties(&self, g: &CommGraph) -> Vec<f64> {
            self.0.penalties(g)
        }
        fn penalties_into(&self, g: &CommGraph, out: &mut Vec<f64>) {
            self.0.penalties_into(g, out)
        }
    }

    #[test]
    fn skipping_the_model_while_no_port_is_shared_changes_no_time() {
        // Random flows among a few nodes, added between finishes, some sharing ports and
        // some not: the network that skips the model while no port is shared gives every
        // flow the same end, to the bit, and logs the same intervals and penalties.
        let gige = GigabitEthernet::default();
        let always = AlwaysAsk(gige);
        let mut rng = fastrand::Rng::with_seed(5);
        let (mut skipped_some, mut shared_some) = (false, false);
        for _ in 0..300 {
            let nodes = rng.u32(2..7);
            let mut fast = Net::new(Some(&gige));
            let mut slow = Net::new(Some(&always));
            let (mut ends_fast, mut ends_slow) = (Vec::new(), Vec::new());
            let mut done = Vec::new();
            for _ in 0..rng.usize(1..30) {
                for _ in 0..rng.usize(0..3) {
                    let src = rng.u32(0..nodes);
                    let dst = rng.u32(0..nodes);
                    let tref = rng.f64() + 1e-3;
                    fast.add(src, dst, 100, tref);
                    slow.add(src, dst, 100, tref);
                }
                fast.refresh();
                skipped_some |= fast.shared_ports == 0 && fast.active.len() > 1;
                shared_some |= fast.shared_ports > 0;
                let t = fast.next_finish();
                assert_eq!(t.to_bits(), slow.next_finish().to_bits());
                if t.is_finite() {
                    fast.advance(t, &mut done);
                    ends_fast.extend(done.iter().map(|&i| (i, t.to_bits())));
                    slow.advance(t, &mut done);
                    ends_slow.extend(done.iter().map(|&i| (i, t.to_bits())));
                }
            }
            ends_fast.extend(
                run_all(&mut fast)
                    .into_iter()
                    .map(|(i, t)| (i, t.to_bits())),
            );
            ends_slow.extend(
                run_all(&mut slow)
                    .into_iter()
                    .map(|(i, t)| (i, t.to_bits())),
            );
            assert_eq!(ends_fast, ends_slow);
            assert_eq!(fast.log.intervals, slow.log.intervals);
            assert_eq!(fast.log.arcs, slow.log.arcs);
            // Everything finished: no port counted any more.
            assert_eq!(fast.shared_ports, 0);
            assert!(fast.out_deg.iter().chain(&fast.in_deg).all(|&d| d == 0));
        }
        assert!(skipped_some && shared_some);
    }

    #[test]
    fn lone_flow_takes_its_tref_and_intra_flows_ignore_the_model() {
        let m = GigabitEthernet::new(0.75, 0.115, 0.036).unwrap();
        let mut net = Net::new(Some(&m));
        net.add(0, 1, 10, 2.0);
        net.add(3, 3, 10, 0.5);
        let ends = run_all(&mut net);
        assert_eq!(ends, vec![(1, 0.5), (0, 2.0)]);
        assert_eq!(net.inter, vec![0]);
        assert_eq!(net.log.intervals.len(), 2);
    }

    #[test]
    fn a_flow_shorter_than_the_clock_resolution_still_finishes() {
        // At t = 20 s a time step of 1e-15 s is below f64's resolution: the flow must
        // finish anyway rather than leave the network stuck at the same instant.
        let m = GigabitEthernet::new(0.75, 0.115, 0.036).unwrap();
        let mut net = Net::new(Some(&m));
        let mut done = Vec::new();
        net.advance(20.0, &mut done);
        net.add(0, 1, 10, 1e-9);
        net.add(0, 2, 10, 3e-9);
        let mut steps = 0;
        let mut finished = 0;
        while net.next_finish().is_finite() {
            let t = net.next_finish();
            net.advance(t, &mut done);
            finished += done.len();
            steps += 1;
            assert!(steps < 10, "stuck at {t}");
        }
        assert_eq!(finished, 2);
    }

    #[test]
    fn opposite_flows_between_two_nodes_pay_the_reverse_factor_while_both_run() {
        // gige gives each lone-degree arc 1; with a reverse factor of 2 both run at half
        // speed until the shorter one ends at 0.5 · 2 = 1.0; the other then has half its
        // bytes left and finishes alone at full speed, at 1.5. Without the factor, or
        // without a model (the contention-free replay), each takes its own time.
        let m = GigabitEthernet::new(0.75, 0.115, 0.036).unwrap();
        let mut net = Net::new(Some(&m)).with_reverse(2.0, 10);
        net.add(0, 1, 10, 1.0);
        net.add(1, 0, 10, 0.5);
        net.add(2, 3, 10, 0.25);
        // One of the two below the size from which the factor applies (an eager
        // message): both as if alone.
        net.add(4, 5, 9, 0.25);
        net.add(5, 4, 10, 0.25);
        assert_eq!(
            run_all(&mut net),
            vec![(2, 0.25), (3, 0.25), (4, 0.25), (1, 1.0), (0, 1.5)]
        );
        let mut plain = Net::new(Some(&m));
        plain.add(0, 1, 10, 1.0);
        plain.add(1, 0, 10, 0.5);
        assert_eq!(run_all(&mut plain), vec![(1, 0.5), (0, 1.0)]);
        let mut free = Net::new(None).with_reverse(2.0, 0);
        free.add(0, 1, 10, 1.0);
        free.add(1, 0, 10, 0.5);
        assert_eq!(run_all(&mut free), vec![(1, 0.5), (0, 1.0)]);
    }

    #[test]
    fn a_flow_into_a_node_that_sends_onward_pays_the_through_factor() {
        // 0 -> 1 while 1 -> 2 (gige gives each arc of a chain 1): the first pays 1.5 (its
        // destination sends on), the second does not (node 2 sends nothing). The second
        // ends at 1.0, when the first has moved 1/1.5 of its bytes; the last third alone
        // ends at 1.0 + 1/3.
        let m = GigabitEthernet::new(0.75, 0.115, 0.036).unwrap();
        let mut net = Net::new(Some(&m)).with_reverse(2.0, 10).with_through(1.5);
        net.add(0, 1, 10, 1.0);
        net.add(1, 2, 10, 1.0);
        // Below the size: no factor either way.
        net.add(3, 4, 9, 0.5);
        net.add(4, 5, 9, 0.5);
        let ends = run_all(&mut net);
        let want = [(2, 0.5), (3, 0.5), (1, 1.0), (0, 1.0 + 1.0 / 3.0)];
        assert_eq!(ends.len(), want.len());
        for ((id, t), (wid, wt)) in ends.iter().zip(want) {
            assert_eq!(*id, wid);
            assert!((t - wt).abs() < 1e-9, "flow {id}: {t} vs {wt}");
        }
        // Opposite flows pay the reverse factor only, not both.
        let mut net = Net::new(Some(&m)).with_reverse(2.0, 10).with_through(1.5);
        net.add(0, 1, 10, 1.0);
        net.add(1, 0, 10, 1.0);
        assert_eq!(run_all(&mut net), vec![(0, 2.0), (1, 2.0)]);
        // Without a model (the contention-free replay) nothing applies.
        let mut free = Net::new(None).with_through(1.5);
        free.add(0, 1, 10, 1.0);
        free.add(1, 2, 10, 1.0);
        assert_eq!(run_all(&mut free), vec![(0, 1.0), (1, 1.0)]);
    }

    #[test]
    fn contended_rendezvous_flows_draw_their_own_factor_from_the_dispersion() {
        // gige with β = 1, γ = 0: two flows out of node 0 take 2 each. Quantiles [1, 3]
        // are rescaled to mean 1: [0.5, 1.5]. Each flow's penalty is 2·u(id); the faster
        // ends at p_min, the other then runs alone (penalty 1, no factor) for what is left.
        let m = GigabitEthernet::new(1.0, 0.0, 0.0).unwrap();
        let build = || {
            let mut net = Net::new(Some(&m))
                .with_reverse(1.0, 100)
                .with_dispersion(&[1.0, 3.0]);
            net.add(0, 1, 1000, 1.0);
            net.add(0, 2, 1000, 1.0);
            net
        };
        let mut net = build();
        let (u0, u1) = (net.spread(0), net.spread(1));
        assert!(
            (0.5..=1.5).contains(&u0) && (0.5..=1.5).contains(&u1),
            "{u0} {u1}"
        );
        assert!((u0 - u1).abs() > 1e-6, "two flows, two draws: {u0} {u1}");
        let (p0, p1) = ((2.0 * u0).max(1.0), (2.0 * u1).max(1.0));
        let (lo, hi) = (p0.min(p1), p0.max(p1));
        let ends = run_all(&mut net);
        let want_last = lo + (1.0 - lo / hi);
        assert!((ends[0].1 - lo).abs() < 1e-12, "{ends:?}");
        assert!(
            (ends[1].1 - want_last).abs() < 1e-12,
            "{ends:?} {want_last}"
        );
        // The same flows, the same draws.
        assert_eq!(run_all(&mut build()), ends);
        // Messages below the rendezvous size keep the model's share (2 each), a lone flow
        // its own time, and bad quantiles are ignored.
        let mut net = Net::new(Some(&m))
            .with_reverse(1.0, 100)
            .with_dispersion(&[1.0, 3.0]);
        net.add(0, 1, 10, 1.0);
        net.add(0, 2, 10, 1.0);
        assert_eq!(run_all(&mut net), vec![(0, 2.0), (1, 2.0)]);
        let mut net = Net::new(Some(&m)).with_dispersion(&[1.0, 3.0]);
        net.add(0, 1, 1000, 1.0);
        assert_eq!(run_all(&mut net), vec![(0, 1.0)]);
        let net = Net::new(Some(&m)).with_dispersion(&[3.0, 1.0]);
        assert_eq!(net.spread(7), 1.0);
    }

    #[test]
    fn two_flows_from_one_node_share_its_port() {
        // gige, two arcs leaving node 0 to distinct nodes: p = 2·β = 1.5 each.
        let m = GigabitEthernet::new(0.75, 0.115, 0.036).unwrap();
        let mut net = Net::new(Some(&m));
        net.add(0, 1, 10, 1.0);
        net.add(0, 2, 10, 1.0);
        let ends = run_all(&mut net);
        assert_eq!(ends.len(), 2);
        for (_, t) in ends {
            assert!((t - 1.5).abs() < 1e-9, "{t}");
        }
    }

    #[test]
    fn opposite_messages_pay_the_reverse_factor_only_if_both_ranks_received_first() {
        // Two opposite 1-s messages between ranks 0 (node 0) and 1 (node 1); each rank
        // posts its receive at `recv` and its send at `send`.
        let m = GigabitEthernet::new(0.75, 0.115, 0.036).unwrap();
        let at = |r0: (f64, f64), r1: (f64, f64)| {
            let mut net = Net::new(Some(&m)).with_reverse(2.0, 10);
            // Message 0: sent by rank 0 at r0.1, received by rank 1 posted at r1.0.
            let posted = |src_rank, dst_rank, send_post, recv_post| Posting {
                src_rank,
                dst_rank,
                send_post,
                recv_post,
            };
            net.add_tagged(0, 1, 10, 1.0, u64::MAX, 0, posted(0, 1, r0.1, r1.0));
            net.add_tagged(1, 0, 10, 1.0, u64::MAX, 1, posted(1, 0, r1.1, r0.0));
            run_all(&mut net)
                .into_iter()
                .map(|(_, t)| t)
                .collect::<Vec<f64>>()
        };
        // (receive, send) posting times: both receive first (or with the send, as
        // MPI_Sendrecv): one after the other; either sends first: together.
        assert_eq!(at((0.0, 1e-6), (0.0, 1e-6)), vec![2.0, 2.0]);
        assert_eq!(at((0.0, 0.0), (0.0, 0.0)), vec![2.0, 2.0]);
        assert_eq!(at((1e-6, 0.0), (1e-6, 0.0)), vec![1.0, 1.0]);
        assert_eq!(at((0.0, 1e-6), (1e-6, 0.0)), vec![1.0, 1.0]);
        // Opposite messages between two other pairs of ranks on the same two nodes, each
        // posted receive first: together.
        let mut net = Net::new(Some(&m)).with_reverse(2.0, 10);
        for (id, src, dst, src_rank, dst_rank) in [(0, 0, 1, 0, 1), (1, 1, 0, 5, 4)] {
            let p = Posting {
                src_rank,
                dst_rank,
                send_post: 1.0,
                recv_post: 0.0,
            };
            net.add_tagged(src, dst, 10, 1.0, u64::MAX, id, p);
        }
        assert_eq!(run_all(&mut net), vec![(0, 1.0), (1, 1.0)]);
        // Without postings (a flow nobody described): any opposite flow between the nodes.
        let mut net = Net::new(Some(&m)).with_reverse(2.0, 10);
        net.add(0, 1, 10, 1.0);
        net.add(1, 0, 10, 1.0);
        assert_eq!(run_all(&mut net), vec![(0, 2.0), (1, 2.0)]);
    }

    #[test]
    fn the_port_caps_the_model_before_the_reverse_factor() {
        // A ring of 4 nodes exchanging both ways: each node sends two flows and receives
        // two, each with its opposite flow in flight. gige with β = 0.75 gives 1.5; the
        // port (each flow's lone time all wire time) carries 2/1.5 = 1.33 times its
        // capacity, so 2; the reverse factor 1.9 on top: 3.8 (measured on the emulated
        // 100 Mbit/s cluster: 3.74-3.78). Capped after the factor, the port would have
        // looked underused at 2/2.85 and left 2.85.
        let m = GigabitEthernet::new(0.75, 0.0, 0.0).unwrap();
        let mut net = Net::new(Some(&m))
            .with_reverse(1.9, 10)
            .with_ports(0.1, 1.0);
        for r in 0..4u32 {
            net.add(r, (r + 1) % 4, 10, 1.0);
            net.add(r, (r + 3) % 4, 10, 1.0);
        }
        let ends = run_all(&mut net);
        assert_eq!(ends.len(), 8);
        for (_, t) in ends {
            assert!((t - 3.8).abs() < 1e-9, "{t}");
        }
    }

    #[test]
    fn a_port_never_carries_more_than_its_capacity() {
        // gige with β = 0.92 gives two arcs into one node 1.84 each: both would end at
        // 1.84 s, the port carrying 2/1.84 = 1.09 times its capacity. With the port's
        // capacity (1 s per 10 bytes: each flow's whole lone time is wire time) both end
        // at 2.0, the lone flow elsewhere keeps its time, and a small flow (a tenth wire
        // time) beside one large one is not slowed.
        let m = GigabitEthernet::new(0.92, 0.115, 0.036).unwrap();
        let mut net = Net::new(Some(&m)).with_ports(0.1, 1.0);
        net.add(1, 0, 10, 1.0);
        net.add(2, 0, 10, 1.0);
        net.add(3, 4, 10, 1.5);
        let ends = run_all(&mut net);
        assert_eq!(ends.len(), 3);
        assert!((ends[0].1 - 1.5).abs() < 1e-9, "{ends:?}");
        assert!((ends[1].1 - 2.0).abs() < 1e-9, "{ends:?}");
        assert!((ends[2].1 - 2.0).abs() < 1e-9, "{ends:?}");
        let mut uncapped = Net::new(Some(&m));
        uncapped.add(1, 0, 10, 1.0);
        uncapped.add(2, 0, 10, 1.0);
        let ends = run_all(&mut uncapped);
        assert!((ends[1].1 - 1.84).abs() < 1e-9, "{ends:?}");
        // A 1-byte flow whose lone time is 1 s (0.1 s of it on the wire) beside a large one.
        let mut small = Net::new(Some(&m)).with_ports(0.1, 1.0);
        small.add(1, 0, 10, 1.0);
        small.add(2, 0, 1, 1.0);
        let ends = run_all(&mut small);
        // 1/1.84 + 0.1/1.84 < 1: the model's penalties stand.
        assert!((ends[0].1 - 1.84).abs() < 1e-9, "{ends:?}");
        // Two flows into node 0, each a lone second of wire time: when each ends.
        let two_in = |mut net: Net| {
            net.add(1, 0, 10, 1.0);
            net.add(2, 0, 10, 1.0);
            run_all(&mut net)
                .into_iter()
                .map(|(_, t)| t)
                .collect::<Vec<f64>>()
        };
        let all_at = |ends: Vec<f64>, t: f64| ends.iter().all(|e| (e - t).abs() < 1e-9);
        // Without a model (the contention-free replay) nothing is capped.
        assert!(all_at(two_in(Net::new(None).with_ports(0.1, 1.0)), 1.0));
        // A port that carries 1.5 lone messages' worth (gige's own 2·0.92 = 1.84 is within
        // it): the model's penalties stand; at 1.05 both end at 2 / 1.05.
        assert!(all_at(
            two_in(Net::new(Some(&m)).with_ports(0.1, 1.5)),
            1.84
        ));
        assert!(all_at(
            two_in(Net::new(Some(&m)).with_ports(0.1, 1.05)),
            2.0 / 1.05
        ));
    }

    #[test]
    fn a_flow_added_later_slows_the_first_only_while_both_run() {
        let m = GigabitEthernet::new(0.75, 0.115, 0.036).unwrap();
        let mut net = Net::new(Some(&m));
        let mut done = Vec::new();
        net.add(0, 1, 10, 1.0);
        net.advance(0.5, &mut done);
        assert!(done.is_empty());
        net.add(0, 2, 10, 1.0);
        // Both at p = 1.5: the first has 0.5 of work left → 0.75 s; then the second has
        // 0.5 left alone → 0.5 s more.
        let ends = run_all(&mut net);
        assert!((ends[0].1 - 1.25).abs() < 1e-9, "{ends:?}");
        assert!((ends[1].1 - 1.75).abs() < 1e-9, "{ends:?}");
    }
}

//! The prediction engine: a causal replay of the recorded run ([`crate::replay`]) under
//! the configured models → a predicted time for every call, split into wait, transfer and
//! contention, beside the same replay without contention (the baseline). Pure (no MPI):
//! the same code runs at MPI_Finalize on rank 0 and in `pmpi-predict analyze`.
//!
//! The network models give point-to-point transfers (Hockney per path, pLogP overheads,
//! the penalty model while messages share ports); collectives take the time of their model
//! once the members they need have entered: MPI_Alltoall the contention signature, MPI_Bcast
//! and MPI_Scatter the pLogP strategy of the algorithm assumed for the library, the others
//! contention-free formulas ([`free_collective`]).

use crate::graph::{self, CollTraffic, Flow, Flows};
use crate::model::{Hockney, PLogP, PenaltyModel, alltoall, bcast, grid, scatter, tree};
use crate::profile::{LibraryFamily, Profile};
pub use crate::replay::Reason;
use crate::replay::net::Sim;
pub use crate::replay::wait::{Wait, WaitKind};
pub use crate::replay::whatif::{AlltoallAlgo, Conditions, HostShare, ProgressMode, host_share};

pub mod stream;
use crate::replay::{
    self, CollCost, Entries, Hot, Instance, Msg, Op, P2p, Partners, Plan, PlanTimes, Times, Timing,
    TreeCost,
};
use crate::topo::placement::Placement;
use crate::trace::{CallKind, RunTrace};

/// Model names accepted by `PMPI_PREDICT_MODEL` and `--model`.
pub const MODELS: &str = "gige, myrinet, infiniband, maxmin, none";

/// Prediction of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CallPrediction {
    /// Predicted seconds (the replay's duration of the call; a nonblocking operation: from
    /// its post to the end of the completion call that finished it).
    pub predicted: Option<f64>,
    /// Contention-free prediction (the replay without penalties), seconds.
    pub free: Option<f64>,
    /// Predicted wait on other ranks (kind and seconds).
    pub wait: Wait,
    /// Measured wait, from the partners' clock-corrected timestamps.
    pub measured_wait: Wait,
    /// Predicted transfer under the penalty model minus contention-free transfer, seconds.
    pub contention: f64,
    /// Why the prediction is (partly) the measured time, if it is.
    pub reason: Reason,
}

impl CallPrediction {
    /// predicted / free (1 where the contention-free time is 0), when both are known.
    pub fn penalty(&self) -> Option<f64> {
        match (self.predicted, self.free) {
            (Some(p), Some(f)) => Some(if f > 0.0 { p / f } else { 1.0 }),
            _ => None,
        }
    }
}

/// Everything the engine computed for a run.
pub struct RunPrediction {
    /// Per rank (index into `RunTrace::ranks`), per record.
    pub calls: Vec<Vec<CallPrediction>>,
    pub placement: Placement,
    /// Every message that crossed the replay's network, at its replayed start.
    pub flows: Flows,
    /// Index into `flows` of each inter-node flow, in the order the network saw them.
    pub inter: Vec<usize>,
    /// The intervals of the replay's network and their penalties.
    pub sim: Sim,
    /// Predicted makespan: the last replayed call's end, seconds from the origin.
    pub makespan: f64,
    /// The same in the contention-free replay.
    pub makespan_free: f64,
    /// Measured: the last recorded call's end.
    pub makespan_measured: f64,
    /// Penalty model name used ("none" for no penalty).
    pub model: String,
    /// Contention-free time of each flow (index into `flows`).
    pub tref: Vec<f64>,
    /// Predicted end of each flow (index into `flows`).
    pub flow_end: Vec<f64>,
    /// Every matched point-to-point message, in matching order: its sending record and
    /// the call that received it (an Irecv's completion call where one was recorded), by
    /// global id (the records of the ranks before, in `RunTrace::ranks` order, plus the
    /// record's index). trace.json draws the same messages as flow arrows, matched again
    /// over its rows (`report::chrome_trace`, which the streamed writer needs).
    pub arrows: Vec<(u32, u32)>,
    /// Each collective operation the replay timed with its own model (not on its
    /// network), in the plan's order: when it ran and what the model added to it.
    pub collectives: Vec<CollOp>,
    /// The node-to-node bytes of those operations, by the algorithm assumed for each.
    pub coll_traffic: CollTraffic,
}

impl RunPrediction {
    /// Bytes the run sent between nodes: its point-to-point messages and its collectives'
    /// node pairs (what the hosts' interrupts serve, [`HostShare`]).
    pub fn inter_node_bytes(&self) -> f64 {
        let p2p: u64 = self
            .flows
            .flows
            .iter()
            .filter(|f| f.src_node != f.dst_node)
            .map(|f| f.bytes)
            .sum();
        (p2p + graph::inter_node_bytes(&self.coll_traffic.pairs)) as f64
    }
}

/// The recorded run's interrupt share ([`crate::trace::irq_share`]) carried onto the
/// replayed network: `cost_src` and `cost_tgt` are the interrupt seconds per byte of the
/// recording's and the replay's profiles, `bytes` and `makespan` (recorded, predicted)
/// the bytes sent between nodes and the makespan of the recorded run and of the replay
/// without scaling. Err: why the compute stays as recorded, for a note (None: nothing to
/// say, the recording has no interrupt figures).
pub fn host_share_of(
    run_metas: &[&crate::trace::RankMeta],
    cost_src: Option<f64>,
    cost_tgt: Option<f64>,
    bytes: (f64, f64),
    makespan: (f64, f64),
) -> Result<HostShare, Option<String>> {
    let Some(recorded) = crate::trace::irq_share(run_metas) else {
        return Err(None);
    };
    let (Some(cs), Some(ct)) = (cost_src, cost_tgt) else {
        return Err(Some(format!(
            "the hosts' interrupts took {:.1} % of their CPU time in the recorded run; the compute is replayed as recorded: {} no measured interrupt cost (calibrate it again)",
            recorded * 100.0,
            match (cost_src, cost_tgt) {
                (None, None) => "neither the recording's profile nor this one has",
                (None, _) => "the recording's profile has",
                _ => "this profile has",
            }
        )));
    };
    host_share(recorded, cs, ct, bytes.0, bytes.1, makespan.0, makespan.1).ok_or_else(|| {
        Some(format!(
            "the hosts' interrupts took {:.1} % of their CPU time in the recorded run; the compute is replayed as recorded (no bytes between nodes, or a share out of range)",
            recorded * 100.0
        ))
    })
}

/// A collective operation as the replay timed it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CollOp {
    /// Its call (`MPI_Alltoall`, ...).
    pub call: &'static str,
    /// Its first member's replayed start and its last member's end, seconds.
    pub start: f64,
    pub end: f64,
    /// Its time under the model over its contention-free time (1: none added).
    pub penalty: f64,
    /// Its members' predicted contention (calls.csv's `contention_s`), summed, seconds.
    pub contention_s: f64,
    /// Its first member (rank index, record number): orders operations that tie in the
    /// rankings, the same on the batch and the streamed paths.
    pub first: (u32, u32),
}

impl CollOp {
    /// The operation of call `call` whose first member is `first`, timed at `cost`
    /// (`model`: under a penalty model), from its members' (replayed start, replayed end,
    /// predicted contention) in member order: the batch and the streamed predictions both
    /// make it here.
    pub(crate) fn of(
        call: &'static str,
        first: (u32, u32),
        cost: &CollCost,
        model: bool,
        members: impl Iterator<Item = (f64, f64, f64)>,
    ) -> CollOp {
        let (mut start, mut end, mut contention_s) = (f64::INFINITY, 0.0f64, 0.0);
        for (s, e, c) in members {
            start = start.min(s);
            end = end.max(e);
            contention_s += c;
        }
        let penalty = if model && cost.free_s > 0.0 {
            (cost.model_s / cost.free_s).max(1.0)
        } else {
            1.0
        };
        CollOp {
            call,
            start: if start.is_finite() { start } else { 0.0 },
            end,
            penalty,
            contention_s,
            first,
        }
    }
}

/// The name reports give a penalty model: its own, "none" without one.
pub fn model_name(model: Option<&dyn PenaltyModel>) -> String {
    model.map_or_else(|| "none".to_string(), |m| m.name().to_string())
}

/// Resolves the penalty model: `override_name` (incl. "none") or the profile's choice.
pub fn penalty_model(
    profile: &Profile,
    override_name: Option<&str>,
) -> Result<Option<Box<dyn PenaltyModel>>, String> {
    let name = override_name.unwrap_or(&profile.penalty.model);
    if name == "none" {
        return Ok(None);
    }
    crate::model::penalty_model_by_name(name, &profile.penalty.params_of(name))
        .map(Some)
        .map_err(|e| format!("{e} (models: {MODELS})"))
}

/// Which collective algorithms the MPI library is assumed to run, where PMPI cannot see.
/// `None` means the library's own decision: Open MPI's tuned fixed decision
/// ([`assumed_bcast`], flat scatter) unless the run was made with MPICH
/// ([`tree::mpich_bcast`], binomial scatter).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Assumptions {
    /// Broadcast strategy for every size (`PMPI_PREDICT_BCAST`, `--bcast`).
    pub bcast: Option<bcast::BcastStrategy>,
    /// Scatter strategy (`PMPI_PREDICT_SCATTER`, `--scatter`).
    pub scatter: Option<scatter::ScatterStrategy>,
    /// The recorded run's MPI library, whose decisions apply where no strategy is given
    /// (set from the run's metadata by the replays: [`Assumptions::for_library`]).
    pub library: Option<LibraryFamily>,
}

/// How a broadcast is costed: Table 1's strategy (its whole time and the bucket's share),
/// the tree its members' ends follow, and MPICH's scatter-allgather where the library
/// runs one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BcastPlan {
    pub strategy: bcast::BcastStrategy,
    pub tree: Option<tree::Tree>,
    pub scatter_allgather: Option<tree::MpichBcast>,
}

impl Assumptions {
    /// Parses strategy names (Table 1 / Table 2 names, e.g. `binomial`, `segmented-chain`).
    pub fn parse(bcast: Option<&str>, scatter: Option<&str>) -> Result<Assumptions, String> {
        Ok(Assumptions {
            bcast: bcast
                .map(bcast::BcastStrategy::from_name)
                .transpose()
                .map_err(|e| e.to_string())?,
            scatter: scatter
                .map(scatter::ScatterStrategy::from_name)
                .transpose()
                .map_err(|e| e.to_string())?,
            library: None,
        })
    }

    /// These assumptions for a run made with `library` (unless one was set already).
    pub fn for_library(&self, library: Option<LibraryFamily>) -> Assumptions {
        Assumptions {
            library: self.library.or(library),
            ..*self
        }
    }

    /// The broadcast of `m` bytes among `p` processes, at most `per_node` on one node: the
    /// assumed strategy's (`flat` is the linear tree, `chain` the pipeline, no tree for a
    /// segmented one), or the library's own decision.
    pub fn bcast_plan(&self, p: u64, m: u64, per_node: u64) -> BcastPlan {
        use bcast::BcastStrategy as B;
        if let Some(strategy) = self.bcast {
            let tree = match strategy {
                B::Flat | B::FlatRendezvous => Some(tree::Tree::Linear),
                B::Chain | B::ChainRendezvous => Some(tree::Tree::Chain),
                B::Binary => Some(tree::Tree::Binary),
                B::Binomial | B::BinomialRendezvous => Some(tree::Tree::Binomial),
                B::SegmentedFlat | B::SegmentedChain | B::SegmentedBinomial => None,
            };
            return BcastPlan {
                strategy,
                tree,
                scatter_allgather: None,
            };
        }
        match self.library {
            Some(LibraryFamily::Mpich) => match tree::mpich_bcast(p, m, per_node) {
                tree::MpichBcast::Tree(t) => BcastPlan {
                    strategy: B::Binomial,
                    tree: Some(t),
                    scatter_allgather: None,
                },
                sa => BcastPlan {
                    // Large blocks: Table 1's strategy only names the bucket's (none).
                    strategy: B::SegmentedBinomial,
                    tree: None,
                    scatter_allgather: Some(sa),
                },
            },
            _ => BcastPlan {
                strategy: assumed_bcast(p, m),
                tree: tree::openmpi_tree(p, m),
                scatter_allgather: None,
            },
        }
    }

    /// The scatter strategy assumed: Open MPI's linear scatter, MPICH's binomial one.
    pub fn scatter_for(&self) -> scatter::ScatterStrategy {
        self.scatter.unwrap_or(match self.library {
            Some(LibraryFamily::Mpich) => scatter::ScatterStrategy::Binomial,
            _ => scatter::ScatterStrategy::Flat,
        })
    }
}

/// Time of MPICH's scatter-allgather broadcast of `m` bytes among `q` members (Thakur,
/// Rabenseifner and Gropp 2005, with Hockney's α and β): a binomial scatter,
/// ⌈log2 q⌉·α + (q−1)/q·m·β, then an allgather by recursive doubling, log2 q·α +
/// (q−1)/q·m·β, or around a ring, (q−1)·α + (q−1)/q·m·β.
pub fn mpich_scatter_allgather(h: &Hockney, q: u64, m: u64, ring: bool) -> f64 {
    if q < 2 {
        return 0.0;
    }
    let (_, lg) = bcast::log2_floor_ceil(q);
    let bytes = (q - 1) as f64 / q as f64 * m as f64 * h.beta;
    let allgather = if ring { (q - 1) as f64 } else { lg };
    (lg + allgather) * h.alpha + 2.0 * bytes
}

/// The broadcast strategy Open MPI 4.1's tuned component picks by its fixed decision
/// (`ompi_coll_tuned_bcast_intra_dec_fixed`: a table by communicator size and message
/// size, no segmentation; [`tree::openmpi_tree`]), as the closest of Table 1's strategies:
/// `basic_linear` is `flat`; the pipeline (the fixed decision's `chain`, fan-out 1 too) is
/// `chain`; `binary_tree` is `binary`, except with fewer than 4 processes, where the
/// root's children are all the others and the tree is `flat`; `binomial` and `knomial`
/// are `binomial`; the split binary tree and `scatter_allgather` (large communicators,
/// large messages) move each byte about twice, as the segmented pipeline does once:
/// `segmented-chain`.
pub fn assumed_bcast(p: u64, m: u64) -> bcast::BcastStrategy {
    use bcast::BcastStrategy::{Binary, Binomial, Chain, Flat, SegmentedChain};
    match tree::openmpi_tree(p, m) {
        None => SegmentedChain,
        Some(tree::Tree::Linear) => Flat,
        Some(tree::Tree::Chain) => Chain,
        // A binary tree of 2 or 3 processes is the root sending to each other one.
        Some(tree::Tree::Binary) if p < 4 => Flat,
        Some(tree::Tree::Binary) => Binary,
        Some(tree::Tree::Binomial | tree::Tree::Knomial(_)) => Binomial,
        // Not Open MPI's.
        Some(tree::Tree::MpichBinomial | tree::Tree::MpichSmp { .. }) => Binomial,
    }
}

/// Contention-free time of a collective without a model of its own: `n` processes,
/// `m` bytes per process block, Hockney `h`. Barrier: ⌈log2 n⌉·α (dissemination);
/// Reduce, Allreduce: ⌈log2 n⌉·(α + β·m) (binomial tree / recursive doubling);
/// Gather(v), Allgather(v), Alltoallv, Alltoallw: (n−1)·(α + β·m) (linear / ring);
/// Reduce_scatter(_block): (n−1)·(α + β·m) (ring, m the block of one rank); Scan, Exscan:
/// ⌈log2 n⌉·(α + β·m) (recursive doubling); neighbourhood collectives: α + β·m with m a
/// member's total bytes sent or received; MPI_Win_fence: ⌈log2 n⌉·α + β·m with m the most
/// bytes a member put or got in the epoch. A nonblocking collective costs what its
/// blocking form does, from its post to its completion.
pub fn free_collective(kind: CallKind, h: &Hockney, n: u64, m: u64) -> Option<f64> {
    if n < 2 {
        return Some(0.0);
    }
    let lg = (64 - (n - 1).leading_zeros()) as f64;
    let step = h.alpha + h.beta * m as f64;
    match kind {
        CallKind::Barrier => Some(lg * h.alpha),
        CallKind::Reduce | CallKind::Allreduce => Some(lg * step),
        CallKind::Gather
        | CallKind::Gatherv
        | CallKind::Allgather
        | CallKind::Allgatherv
        | CallKind::Alltoallv
        | CallKind::Alltoallw => Some((n - 1) as f64 * step),
        // Ring reduce-scatter: n−1 steps of one block each.
        CallKind::ReduceScatter | CallKind::ReduceScatterBlock => Some((n - 1) as f64 * step),
        // Recursive doubling, as Allreduce (Scan, Exscan).
        CallKind::Scan => Some(lg * step),
        // MPI_Win_fence: a barrier, then the epoch's largest transfer.
        CallKind::WinFence => Some(lg * h.alpha + h.beta * m as f64),
        // Neighbourhood collectives: the rank's messages leave back to back over its port
        // (m: the most any member sends or receives in all), their latencies overlap.
        CallKind::NeighborAllgather
        | CallKind::NeighborAllgatherv
        | CallKind::NeighborAlltoall
        | CallKind::NeighborAlltoallv
        | CallKind::NeighborAlltoallw => Some(h.alpha + h.beta * m as f64),
        CallKind::Bcast => Some(lg * step),
        CallKind::Scatter | CallKind::Scatterv => Some((n - 1) as f64 * step),
        CallKind::Alltoall => alltoall::lower_bound(h, n, m).ok(),
        _ => None,
    }
}

/// Bytes of a collective's critical path that a shaped link's token bucket lets through
/// at once (see [`Hockney::lone_bytes`]). The collective is costed as if its ports held
/// full buckets of `h.burst` bytes when it starts (ranks that computed before it); each
/// sender's messages on the path take from its bucket as a lone message does, whole or
/// not at all (a larger one pays for all its bytes and empties it), and between the steps
/// of a stepwise algorithm the bucket refills for one latency. Quantum ESPRESSO's
/// broadcasts of 0.3-2 KB at 4 hosts took 30-90 µs where their bytes at the link's rate
/// come to 130-540 µs (docs/accuracy.md, thirteenth session). The all-to-all, whose
/// signature is measured as it runs, and the segmented strategies (large messages) take
/// none; a link without a bucket (`burst` 0) neither.
pub fn bucket_bytes(
    kind: CallKind,
    bcast_algo: bcast::BcastStrategy,
    scatter_algo: scatter::ScatterStrategy,
    n: u64,
    m: u64,
    h: &Hockney,
) -> f64 {
    use bcast::BcastStrategy as B;
    if n < 2 || m == 0 || h.burst <= 0.0 || h.beta <= 0.0 {
        return 0.0;
    }
    let (lf, lc) = bcast::log2_floor_ceil(n);
    let n1 = (n - 1) as f64;
    let step_refill = h.alpha / h.beta;
    // (messages one sender puts on the path in a row, senders on the path that do so,
    // the bucket's refill between two of one sender's messages)
    let (k, senders, refill) = match kind {
        CallKind::Bcast => match bcast_algo {
            B::Flat | B::FlatRendezvous => (n1, 1.0, 0.0),
            B::Chain | B::ChainRendezvous => (1.0, n1, 0.0),
            B::Binary => (2.0, lc, 0.0),
            B::Binomial | B::BinomialRendezvous => (lf, 1.0, 0.0),
            B::SegmentedFlat | B::SegmentedChain | B::SegmentedBinomial => return 0.0,
        },
        CallKind::Scatter | CallKind::Scatterv => match scatter_algo {
            scatter::ScatterStrategy::Flat => (n1, 1.0, 0.0),
            _ => return 0.0,
        },
        // One message a step through the same port: recursive doubling...
        CallKind::Reduce | CallKind::Allreduce | CallKind::Scan => (lc, 1.0, step_refill),
        // ... a ring, or the root's port taking the others' blocks.
        CallKind::Gather
        | CallKind::Gatherv
        | CallKind::Allgather
        | CallKind::Allgatherv
        | CallKind::ReduceScatter
        | CallKind::ReduceScatterBlock => (n1, 1.0, step_refill),
        _ => return 0.0,
    };
    let m = m as f64;
    let mut held = h.burst;
    let mut passed = 0.0;
    for i in 0..k as u64 {
        if i > 0 {
            held = (held + refill).min(h.burst);
        }
        if m <= held {
            held -= m;
            passed += m;
        } else {
            held = 0.0;
        }
    }
    passed * senders
}

/// Runs the engine on a recorded run, assuming its library's collective algorithms.
pub fn predict_run(
    run: &RunTrace,
    profile: &Profile,
    model_override: Option<&str>,
) -> Result<RunPrediction, String> {
    predict_run_with(run, profile, model_override, &Assumptions::default())
}

/// The extra latency of a two-member collective's step between two nodes where the two
/// send to each other at once (all-reduce, all-gather, all-to-all, reduce-scatter,
/// barrier) and the block crosses in the latency: the profile's exchange
/// ([`Profile::exchange`]; OpenFOAM's 8-byte all-reduces at 2 ranks measured 11 µs where
/// the ping-pong's latency is 8). None where the launch measured its own step, the block
/// is larger, or the run's library is not the profile's.
fn exchange_step(
    profile: &Profile,
    assume: &Assumptions,
    inst: &Instance,
    h: &Hockney,
) -> Option<f64> {
    let x = profile.exchange.filter(|&x| x > 0.0)?;
    let both_ways = matches!(
        inst.kind,
        CallKind::Allreduce
            | CallKind::Allgather
            | CallKind::Allgatherv
            | CallKind::Alltoall
            | CallKind::Alltoallv
            | CallKind::Alltoallw
            | CallKind::ReduceScatter
            | CallKind::ReduceScatterBlock
            | CallKind::Barrier
    );
    (inst.n == 2
        && inst.multi_node
        && both_ways
        && h.in_latency(inst.block as f64)
        && profile.measured_on(assume.library))
    .then_some(x)
}

/// Time of a collective instance under the profile.
pub fn coll_cost(profile: &Profile, assume: &Assumptions, inst: &Instance) -> CollCost {
    let (n, m, kind) = (inst.n, inst.block, inst.kind);
    // The point-to-point parameters as launched: the all-to-all's contention-free time
    // (its signature takes the α its γ were solved with, `h_fit` below).
    let h_sig = profile.hockney_for(!inst.multi_node);
    let mut h = h_sig;
    let mut plogp = if inst.multi_node {
        profile.plogp_or_hockney()
    } else {
        PLogP::from_hockney(&profile.hockney.intra)
    };
    // A collective's steps between nodes at the latency their launch measured for one
    // (every rank sending and receiving at once: [`crate::profile::PlacedLatency::step`]).
    if inst.multi_node
        && let Some(step) = profile.launch_step
    {
        plogp.l = (plogp.l + step - h.alpha).max(0.0);
        h.alpha = step;
    } else if let Some(x) = exchange_step(profile, assume, inst, &h) {
        h.alpha += x;
    }
    let step_s = if n >= 2 { h.time_bytes(m as f64) } else { 0.0 };
    let bplan = assume.bcast_plan(n, m, inst.max_per_node);
    let (bcast_algo, scatter_algo) = (bplan.strategy, assume.scatter_for());
    // The contention-free formula of this collective with blocks of `bytes`.
    let formula = |bytes: u64| {
        match kind {
            CallKind::Bcast if n >= 2 => match bplan.scatter_allgather {
                Some(tree::MpichBcast::ScatterAllgather { members, ring, smp }) => {
                    // Among the node leaders, then a hop within each node.
                    let hop = if smp {
                        profile.hockney.intra.time_bytes(bytes as f64)
                    } else {
                        0.0
                    };
                    Some(mpich_scatter_allgather(&h, members, bytes, ring) + hop)
                }
                _ => bcast::predict(&plogp, bcast_algo, n, bytes)
                    .ok()
                    .map(|x| x.seconds),
            },
            CallKind::Scatter if n >= 2 => scatter::predict(&plogp, scatter_algo, n, bytes)
                .ok()
                .map(|x| x.seconds),
            CallKind::Alltoall | CallKind::Alltoallv | CallKind::Alltoallw => {
                free_collective(kind, &h_sig, n, bytes)
            }
            _ => free_collective(kind, &h, n, bytes),
        }
        .unwrap_or(0.0)
    };
    let free = formula(m);
    // A shaped link's token bucket passes a collective's small messages at once, as it
    // does a lone point-to-point message; never below the same collective of empty
    // messages.
    let free = if inst.multi_node && n >= 2 && m > 0 {
        let passed = bucket_bytes(kind, bcast_algo, scatter_algo, n, m, &h);
        // What the formula charged for those bytes: pLogP's gap above the empty
        // message's for a broadcast or a scatter, the link's β for the others.
        let credit = match kind {
            CallKind::Bcast | CallKind::Scatter => {
                passed / m as f64 * (plogp.gap(m as f64) - plogp.gap(0.0)).max(0.0)
            }
            _ => h.beta * passed,
        };
        (free - credit).max(formula(0).min(free))
    } else {
        free
    };
    // The signature is fitted with one process per node. With k members on one node, that
    // node's port carries k·(n−k) of the exchange's messages instead of n−1: the bandwidth
    // term grows by that ratio (the busiest port sets the pace).
    let port_load = {
        let k = inst.max_per_node.clamp(1, n.max(1));
        if n >= 2 && k > 1 {
            (k * (n - k)) as f64 / (n - 1) as f64
        } else {
            1.0
        }
    };
    let wire = |gamma: f64| (n.saturating_sub(1)) as f64 * h.beta * m as f64 * gamma;
    // The signature with the α its γ were solved with: a γ per size then gives back the
    // time `calibrate` measured at that size (QE's 2 KB blocks at 8 ranks: 7 × 37 µs an
    // exchange too long with the latency as launched).
    let h_fit = if inst.multi_node {
        profile.sig_hockney()
    } else {
        h_sig
    };
    let (free, model) = match kind {
        // Alltoallv, Alltoallw: the signature at the block of the busiest member (its bytes
        // to the others per other, when per-destination bytes were recorded; else the mean).
        CallKind::Alltoall | CallKind::Alltoallv | CallKind::Alltoallw
            if n >= 2 && inst.multi_node =>
        {
            let extra = port_load - 1.0;
            // Measured with this many members and as many per node: as it is.
            let model = match profile.alltoall_placed_at(n, inst.max_per_node.max(1), m) {
                Some(sig) => sig.predict(&h_fit, n, m).ok(),
                // Two members on two nodes: one exchange, each port carrying one block
                // each way, nothing for the signature's γ (measured with more members a
                // port) to add. At 2 ranks on 2 hosts, a core each (docs/accuracy.md,
                // seventeenth session), the γ of 4 ranks had GROMACS's and Quantum
                // ESPRESSO's all-to-alls +64.8 and +39.8 % long, the baseline −6.2 and
                // +0.8 %.
                None if n == 2 => None,
                None => {
                    let sig = profile.alltoall_at(m);
                    sig.predict(&h_fit, n, m)
                        .ok()
                        .map(|t| t + extra * wire(sig.gamma))
                }
            };
            (free + extra * wire(1.0), model)
        }
        _ => (free, None),
    };
    let model = model.unwrap_or(free);
    let serial = match kind {
        CallKind::Bcast => bcast_algo == bcast::BcastStrategy::Flat,
        CallKind::Scatter | CallKind::Scatterv => scatter_algo == scatter::ScatterStrategy::Flat,
        _ => false,
    };
    // A tree broadcast: each member has its data after its own path through the tree,
    // hops within a node at the node's cost, small blocks through a port's bucket.
    let tree = match kind {
        CallKind::Bcast if n >= 2 => bplan.tree.map(|t| {
            let intra = PLogP::from_hockney(&profile.hockney.intra);
            let (inter, burst) = if inst.multi_node {
                (&plogp, h.burst)
            } else {
                (&intra, 0.0)
            };
            TreeCost {
                tree: t,
                hops: tree::Hops {
                    inter_gap: inter.gap(m as f64),
                    inter_lat: inter.l,
                    intra_gap: intra.gap(m as f64),
                    intra_lat: intra.l,
                    inter_gap0: inter.gap(0.0),
                    bytes: m as f64,
                    burst,
                    beta: h.beta,
                    // The replay knows the protocol.
                    rendezvous: false,
                },
            }
        }),
        _ => None,
    };
    CollCost {
        model_s: model,
        free_s: free,
        step_s,
        serial,
        tree,
    }
}

/// Time of a collective instance under what-if conditions. An instance whose members span
/// two clusters: MPI_Alltoall(v) by the grid paper's Eq. 6 (direct) or Eq. 7 (Local Group),
/// the clusters' sizes counted in members, and no less than the time the backbone needs for
/// the n1·n2 blocks that cross it each way; the other collectives take their usual formula
/// with the wide-area link's parameters (their algorithms cross it at every step, at
/// worst). Otherwise [`coll_cost`].
pub fn coll_cost_under(
    profile: &Profile,
    assume: &Assumptions,
    plan: &Plan,
    inst: &Instance,
    cond: &Conditions,
) -> CollCost {
    let ranks = inst.members.iter().map(|&g| plan.rank_of(g));
    coll_cost_of_ranks(
        profile,
        assume,
        inst,
        ranks,
        cond,
        plan.protocol.eager_inter,
    )
}

/// [`coll_cost_under`] of an instance whose members' WORLD ranks are `ranks` (the batch
/// path's from its plan, the streamed one's from its window).
pub(crate) fn coll_cost_of_ranks(
    profile: &Profile,
    assume: &Assumptions,
    inst: &Instance,
    ranks: impl Iterator<Item = i32>,
    cond: &Conditions,
    eager_inter: u64,
) -> CollCost {
    let Some(cl) = &cond.clusters else {
        return coll_cost(profile, assume, inst);
    };
    let mut per: std::collections::BTreeMap<u32, u64> = Default::default();
    for rank in ranks {
        if let Some(n) = cond.placement.node(rank) {
            *per.entry(cl.of(n)).or_default() += 1;
        }
    }
    if per.len() < 2 {
        return coll_cost(profile, assume, inst);
    }
    let (n, m) = (inst.n, inst.block);
    let wan = cl.wan;
    let step_s = wan.time_bytes(m as f64);
    let free_other = free_collective(inst.kind, &wan, n, m).unwrap_or(0.0);
    if !matches!(
        inst.kind,
        CallKind::Alltoall | CallKind::Alltoallv | CallKind::Alltoallw
    ) || per.len() != 2
    {
        return CollCost {
            model_s: free_other,
            free_s: free_other,
            step_s,
            serial: false,
            tree: None,
        };
    }
    let mut sizes: Vec<u64> = per.values().copied().collect();
    sizes.sort_unstable();
    // The clusters' own all-to-all signature, with the α its γ were solved with.
    let lan = profile.sig_hockney();
    // Both algorithms move n1·n2 blocks across the backbone in each direction; Eq. 6 and
    // Eq. 7 assume it carries them in parallel at full speed. A backbone slower than that
    // (one shared link) bounds the exchange from below: direct sends the n1·n2 blocks at
    // once; Local Group's n1 members of the smaller cluster each send n2 blocks, one
    // combined message per step, n1 messages at once.
    let (flows, crossing_bytes) = match cond.alltoall {
        AlltoallAlgo::Direct => (sizes[0] * sizes[1], m),
        AlltoallAlgo::LocalGroup => (sizes[0], sizes[1] * m),
    };
    let crossing = cl.crossing_s(flows, crossing_bytes as f64);
    // A message by rendezvous (at or above the run's eager limit between nodes) crosses
    // after its request and its grant have: one more round trip of the backbone, the
    // blocks' handshakes overlapping (64 KiB blocks over a 2 ms backbone: measured
    // 0.175 s, 0.157 s without it).
    let handshake = if crossing_bytes >= eager_inter {
        2.0 * wan.alpha
    } else {
        0.0
    };
    let two = |sig: alltoall::Signature| {
        grid::TwoClusters::new(sizes[0], sizes[1], lan, sig, wan)
            .ok()
            .map(|c| {
                let local = c.eq6_direct(m) - c.n1.max(c.n2) as f64 * wan.time_bytes(m as f64);
                let eq = match cond.alltoall {
                    AlltoallAlgo::Direct => c.eq6_direct(m),
                    AlltoallAlgo::LocalGroup => c.eq7_local_group(m),
                };
                eq.max(local + wan.alpha + handshake + crossing)
            })
    };
    let model_s = two(profile.alltoall_at(m)).unwrap_or(free_other);
    let no_contention = alltoall::Signature {
        gamma: 1.0,
        delta: 0.0,
        threshold: u64::MAX,
    };
    let free_s = two(no_contention).unwrap_or(free_other);
    CollCost {
        model_s,
        free_s,
        step_s,
        serial: false,
        tree: None,
    }
}

/// Runs the engine on a recorded run with the given collective-algorithm assumptions.
pub fn predict_run_with(
    run: &RunTrace,
    profile: &Profile,
    model_override: Option<&str>,
    assume: &Assumptions,
) -> Result<RunPrediction, String> {
    let cond = Conditions {
        placement: Placement::from_run(run),
        clusters: None,
        alltoall: AlltoallAlgo::Direct,
        compute_scale: 1.0,
        progress: ProgressMode::Library,
        cpus_per_node: None,
    };
    predict_run_under(run, profile, model_override, assume, &cond)
}

/// Runs the engine on a recorded run under other conditions (what-if replay): the
/// recorded compute gaps and call order, another placement, network or clusters.
pub fn predict_run_under(
    run: &RunTrace,
    profile: &Profile,
    model_override: Option<&str>,
    assume: &Assumptions,
    cond: &Conditions,
) -> Result<RunPrediction, String> {
    let model = penalty_model(profile, model_override)?;
    let mut plan = Plan::for_run(run, cond.placement.clone(), Some(profile));
    if let Some(c) = cond.cpus_per_node {
        let mut metas: Vec<_> = run.ranks.iter().map(|r| r.meta.clone()).collect();
        crate::replay::cpus::place_on_nodes(&mut metas, &cond.placement, c);
        plan.cpus = crate::replay::cpus::shared_cpus(metas.iter());
    }
    let lens: Vec<usize> = run.ranks.iter().map(|r| r.records.len()).collect();
    let traffic = coll_traffic(run, &plan);
    Ok(predict_plan(
        plan, &lens, traffic, profile, model, assume, cond,
    ))
}

/// [`predict_run_with`], releasing every rank's records once the plan is made (the replay
/// needs the plan alone), so that the records of a long run are not in memory beside the
/// replays: afterwards `run` has its metadata and no records (the report reads them again
/// with [`crate::trace::reload_records`]).
pub fn predict_run_releasing(
    run: &mut RunTrace,
    profile: &Profile,
    model_override: Option<&str>,
    assume: &Assumptions,
) -> Result<RunPrediction, String> {
    let model = penalty_model(profile, model_override)?;
    let cond = Conditions {
        placement: Placement::from_run(run),
        clusters: None,
        alltoall: AlltoallAlgo::Direct,
        compute_scale: 1.0,
        progress: ProgressMode::Library,
        cpus_per_node: None,
    };
    let plan = Plan::for_run(run, cond.placement.clone(), Some(profile));
    let lens: Vec<usize> = run.ranks.iter().map(|r| r.records.len()).collect();
    let traffic = coll_traffic(run, &plan);
    for rk in &mut run.ranks {
        rk.records = Vec::new();
    }
    Ok(predict_plan(
        plan, &lens, traffic, profile, model, assume, &cond,
    ))
}

/// The node-to-node bytes of the plan's collective operations.
fn coll_traffic(run: &RunTrace, plan: &Plan) -> CollTraffic {
    graph::collective_traffic(run, &plan.placement, plan.instances.len(), |ri, rec| {
        let g = plan.base.get(ri)? + rec as u32;
        plan.hot
            .get(g as usize)
            .map(|h| h.inst_of)
            .filter(|&i| i != u32::MAX)
    })
}

/// The replays of a planned run (`lens`: each rank's number of records).
fn predict_plan(
    mut plan: Plan,
    lens: &[usize],
    coll_traffic: CollTraffic,
    profile: &Profile,
    model: Option<Box<dyn PenaltyModel>>,
    assume: &Assumptions,
    cond: &Conditions,
) -> RunPrediction {
    let model_name = model_name(model.as_deref());
    // The latency measured as the run was launched, where the profile has it.
    let launched = plan.placement.profile(profile);
    let profile: &Profile = &launched;
    // The recorded library's collective algorithms.
    let assume = &assume.for_library(plan.protocol.library);
    let costs: Vec<CollCost> = plan
        .instances
        .iter()
        .map(|i| coll_cost_under(profile, assume, &plan, i, cond))
        .collect();
    let p2p = P2p::under(profile, cond, plan.protocol.library);
    // Without a penalty model ("none") nothing is contended, collectives included.
    let last = |v: &[f64]| {
        v.iter()
            .copied()
            .filter(|x| x.is_finite())
            .fold(0.0, f64::max)
    };
    // The contention-free replay first, kept only as each call's duration (in the per-call
    // figures, which the model's replay completes) and the makespan, so that both replays
    // are never in memory together; its arrays then hold the model's replay (no second set
    // of fresh pages to fault in). Without a model the prediction is that replay itself.
    let mut spare = replay::Timing::default();
    let mut calls: Vec<Vec<CallPrediction>> = Vec::new();
    let mut makespan_free = None;
    if model.is_some() {
        let f = replay::replay(&plan, &p2p, None, &costs, false, false);
        calls = per_rank(lens, &plan.base, |g| CallPrediction {
            free: Some(duration(&plan, &f, g)),
            ..Default::default()
        });
        makespan_free = Some(last(&f.end));
        spare = f;
    }
    let mut pred = replay::replay_reusing(
        &plan,
        &p2p,
        model.as_deref(),
        &costs,
        model.is_some(),
        true,
        spare,
    );
    // What the reports need of the network first (the interval log moved, not copied),
    // so that it is never in memory beside a copy while the per-call figures are built.
    let flows = Flows {
        flows: pred
            .flow_msg
            .iter()
            .map(|&m| {
                let msg = &plan.msgs[m as usize];
                Flow {
                    src_node: msg.src_node,
                    dst_node: msg.dst_node,
                    src_rank: msg.src_rank,
                    dst_rank: msg.dst_rank,
                    bytes: msg.bytes,
                    start: pred.flow_start[m as usize],
                    owner: plan.refs[msg.send as usize],
                }
            })
            .collect(),
    };
    let tref: Vec<f64> = pred
        .flow_msg
        .iter()
        .map(|&m| pred.tref[m as usize])
        .collect();
    let flow_end: Vec<f64> = pred
        .flow_msg
        .iter()
        .map(|&m| pred.arrive[m as usize])
        .collect();
    let arrows = plan
        .msgs
        .iter()
        .filter(|m| m.recv != u32::MAX)
        .map(|m| match plan.done_by[m.recv as usize] {
            u32::MAX => (m.send, m.recv),
            c => (m.send, c),
        })
        .collect();
    let mut sim = std::mem::take(&mut pred.log);
    sim.end = pred.inter.iter().map(|&f| flow_end[f as usize]).collect();
    let inter = pred.inter.iter().map(|&f| f as usize).collect();
    // What only the replays read, released before the per-call figures are built (the
    // peak): the streams, the matching times.
    plan.streams = Vec::new();
    pred.matched = Vec::new();
    let measured_times = Times::measured(&plan);
    let pred_times = Times::new(
        &plan,
        &pred.start,
        &pred.end,
        &pred.send_post,
        &pred.recv_post,
    );
    let predicted_view = Replayed {
        times: PlanTimes {
            plan: &plan,
            t: &pred_times,
        },
        timing: &pred,
    };
    let measured_view = PlanTimes {
        plan: &plan,
        t: &measured_times,
    };
    let figures = |g: usize, free: Option<f64>| {
        figures_of(
            &predicted_view,
            &measured_view,
            g as u32,
            duration(&plan, &pred, g),
            free,
            pred.reason[g],
        )
    };
    if calls.is_empty() {
        calls = per_rank(lens, &plan.base, |g| figures(g, None));
    } else {
        for (rank, &b) in calls.iter_mut().zip(&plan.base) {
            for (k, c) in rank.iter_mut().enumerate() {
                *c = figures(b as usize + k, c.free);
            }
        }
    }
    let makespan = last(&pred.end);
    let makespan_free = makespan_free.unwrap_or(makespan);
    let rank_index = |g: u32| plan.base.partition_point(|&b| b <= g).saturating_sub(1);
    let collectives = plan
        .instances
        .iter()
        .zip(&costs)
        .enumerate()
        .map(|(i, (inst, c))| {
            let at = |g: u32| {
                let ri = rank_index(g);
                (ri, (g - plan.base[ri]) as usize)
            };
            let first = inst.members.first().map_or((u32::MAX, u32::MAX), |&g| {
                let (ri, rec) = at(g);
                (ri as u32, rec as u32)
            });
            let members = inst.members.iter().map(|&g| {
                let (ri, rec) = at(g);
                let contention = calls
                    .get(ri)
                    .and_then(|r| r.get(rec))
                    .map_or(0.0, |c| c.contention);
                (pred.start[g as usize], pred.end[g as usize], contention)
            });
            let call = coll_traffic.calls.get(i).copied().unwrap_or("?");
            CollOp::of(call, first, c, model.is_some(), members)
        })
        .collect();
    RunPrediction {
        calls,
        placement: plan.placement.clone(),
        flows,
        inter,
        sim,
        makespan,
        makespan_free,
        makespan_measured: last(&plan.m_end),
        model: model_name,
        tref,
        flow_end,
        arrows,
        collectives,
        coll_traffic,
    }
}

/// One value per record, by rank (`lens`: each rank's number of records, `base`: the global
/// id of its first): each rank's records have consecutive global ids, so its values are
/// written once, in order.
fn per_rank<T>(lens: &[usize], base: &[u32], f: impl Fn(usize) -> T) -> Vec<Vec<T>> {
    lens.iter()
        .zip(base)
        .map(|(&n, &b)| (b as usize..b as usize + n).map(&f).collect())
        .collect()
}

/// A record's figures from its replayed duration (`predicted`), the replay's timeline
/// (`pred`) and the recorded one (`measured`): the batch and the streamed predictions
/// both make them here.
pub(crate) fn figures_of(
    pred: &impl Contended,
    measured: &impl Partners,
    g: u32,
    predicted: f64,
    free: Option<f64>,
    reason: Reason,
) -> CallPrediction {
    let wait = replay::wait_in(pred, g);
    let contention = contention(pred, g, pred.hot(g))
        .min((predicted - wait.seconds).max(0.0))
        .max(0.0);
    CallPrediction {
        predicted: Some(predicted),
        free: free.or(Some(predicted)),
        wait,
        measured_wait: replay::wait_in(measured, g),
        contention,
        reason,
    }
}

/// Replayed duration of record `g`: a nonblocking operation runs from its post to the end
/// of the completion call that finished it (to its request's completion where that call was
/// not recorded).
fn duration(plan: &Plan, t: &Timing, g: usize) -> f64 {
    let done_end = match plan.done_by[g] {
        u32::MAX => None,
        c => Some(t.end[c as usize]),
    };
    duration_of(
        plan.hot[g],
        done_end,
        plan.m_end[g] - plan.m_start[g],
        t.start[g],
        t.end[g],
        t.req_done[g],
    )
}

/// [`duration`] of a record from its [`Hot`], the end of the completion call that
/// finished it (None: none was recorded), its measured duration and its replayed times.
pub(crate) fn duration_of(
    h: Hot,
    done_end: Option<f64>,
    measured: f64,
    start: f64,
    end: f64,
    req_done: f64,
) -> f64 {
    let end = match (h.op, done_end) {
        (Op::Isend { .. } | Op::Irecv | Op::ICol, Some(e)) => e,
        (Op::Isend { .. } | Op::Irecv | Op::ICol, None) if measured > h.op_dur => req_done.max(end),
        _ => end,
    };
    (end - start).max(0.0)
}

/// What the per-call contention reads of a replay beyond its timeline.
pub(crate) trait Contended: Partners {
    /// [`Timing::msg_contention`].
    fn msg_contention(&self, m: u32) -> f64;
    /// [`Timing::coll_contention`] of collective operation `i`.
    fn coll_contention(&self, i: u32) -> f64;
}

/// The batch replay's timeline and timing.
struct Replayed<'a, 'b> {
    times: PlanTimes<'a, 'b>,
    timing: &'a Timing,
}

impl Partners for Replayed<'_, '_> {
    fn hot(&self, g: u32) -> Hot {
        self.times.hot(g)
    }
    fn completed(&self, g: u32, k: usize) -> Option<(Hot, bool)> {
        self.times.completed(g, k)
    }
    fn is_root(&self, g: u32) -> bool {
        self.times.is_root(g)
    }
    fn probe_msg(&self, g: u32) -> u32 {
        self.times.probe_msg(g)
    }
    fn msg(&self, m: u32) -> Msg {
        self.times.msg(m)
    }
    fn post(&self, m: u32, send: bool) -> f64 {
        self.times.post(m, send)
    }
    fn start(&self, g: u32) -> f64 {
        self.times.start(g)
    }
    fn end(&self, g: u32) -> f64 {
        self.times.end(g)
    }
    fn entries(&self, i: u32) -> Entries {
        self.times.entries(i)
    }
}

impl Contended for Replayed<'_, '_> {
    fn msg_contention(&self, m: u32) -> f64 {
        self.timing.msg_contention(m)
    }
    fn coll_contention(&self, i: u32) -> f64 {
        self.timing.coll_contention[i as usize]
    }
}

/// Contention of the transfers record `g` (its [`Hot`] `h`) waited for (before bounding
/// by its duration).
fn contention(v: &impl Contended, g: u32, h: Hot) -> f64 {
    let rdv = |m: u32| m != u32::MAX && v.msg(m).rendezvous;
    let msg = |m: u32| {
        if m == u32::MAX {
            0.0
        } else {
            v.msg_contention(m)
        }
    };
    match h.op {
        Op::Recv | Op::Irecv | Op::Probe => msg(h.msg_in),
        Op::Send { .. } | Op::Isend { .. } if rdv(h.msg_out) => msg(h.msg_out),
        Op::SendRecv => {
            let out = if rdv(h.msg_out) { msg(h.msg_out) } else { 0.0 };
            out.max(msg(h.msg_in))
        }
        Op::Complete => {
            // The operations it completes (none of them a completion call).
            let mut c = 0.0f64;
            let mut k = 0;
            while let Some((nb, _)) = v.completed(g, k) {
                c = c.max(contention(v, u32::MAX, nb));
                k += 1;
            }
            c
        }
        Op::Coll | Op::ICol => {
            let i = h.inst_of;
            if i == u32::MAX {
                0.0
            } else {
                v.coll_contention(i)
            }
        }
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpich_s_scatter_allgather_costs_its_latencies_and_twice_the_bytes() {
        let lat = Hockney {
            alpha: 1.0,
            beta: 0.0,
            burst: 0.0,
            burst_gamma: 0.0,
        };
        // 4 members: scatter 2 steps, then recursive doubling 2 or a ring 3.
        assert_eq!(mpich_scatter_allgather(&lat, 4, 100, false), 4.0);
        assert_eq!(mpich_scatter_allgather(&lat, 4, 100, true), 5.0);
        // 5 members: ⌈log2 5⌉ = 3 scatter steps.
        assert_eq!(mpich_scatter_allgather(&lat, 5, 100, true), 7.0);
        // Bytes: (q−1)/q of the block, twice.
        let bw = Hockney {
            alpha: 0.0,
            beta: 1.0,
            burst: 0.0,
            burst_gamma: 0.0,
        };
        assert_eq!(mpich_scatter_allgather(&bw, 4, 400, false), 600.0);
        assert_eq!(mpich_scatter_allgather(&bw, 1, 400, false), 0.0);
    }
    use bcast::BcastStrategy::{Binary, Binomial, Chain, Flat, SegmentedChain};

    #[test]
    fn the_assumed_broadcast_follows_open_mpi_4_1_s_table() {
        // Two members (CP2K's row broadcasts): the root sends the block itself.
        assert_eq!(assumed_bcast(2, 16384), Flat);
        assert_eq!(assumed_bcast(2, 65536), Flat);
        assert_eq!(assumed_bcast(3, 200_000), Chain);
        assert_eq!(assumed_bcast(2, 700_000), Binomial);
        assert_eq!(assumed_bcast(2, 8), Chain);
        // Four members: binary tree for tiny, linear from 8 KiB to 1 MiB, chain beyond.
        assert_eq!(assumed_bcast(4, 16), Binary);
        assert_eq!(assumed_bcast(4, 4096), Binomial);
        assert_eq!(assumed_bcast(4, 262_144), Flat);
        assert_eq!(assumed_bcast(4, 1_048_575), Flat);
        assert_eq!(assumed_bcast(4, 1_048_576), Chain);
        assert_eq!(assumed_bcast(8, 32768), Flat);
        assert_eq!(assumed_bcast(8, 8192), Binary);
        assert_eq!(assumed_bcast(16, 4 << 20), SegmentedChain);
        assert_eq!(assumed_bcast(512, 4 << 20), Binomial);
        assert_eq!(assumed_bcast(1024, 300_000), Binomial);
        assert_eq!(assumed_bcast(2048, 300_000), SegmentedChain);
    }

    /// An all-to-all whose member count and ranks per node were measured takes the
    /// measured γ as it is; any other placement the per-size γ with the port-load scaling.
    #[test]
    fn a_measured_placement_replaces_the_port_load_scaling() {
        let mut p = Profile::builtin_default();
        p.hockney.inter = Hockney {
            alpha: 1e-5,
            beta: 1e-8,
            burst: 0.0,
            burst_gamma: 0.0,
        };
        p.alltoall_gamma = alltoall::GammaTable(vec![(4096, 1.5), (1 << 20, 1.5)]);
        p.alltoall_placed = vec![crate::profile::PlacedGamma {
            procs: 8,
            per_node: 2,
            gamma: alltoall::GammaTable(vec![(4096, 3.0), (1 << 20, 3.0)]),
        }];
        let inst = |per_node: u64| Instance {
            kind: CallKind::Alltoall,
            members: (0..8).collect(),
            root: None,
            n: 8,
            block: 65536,
            multi_node: true,
            max_per_node: per_node,
        };
        let wire = 65536.0 * 1e-8;
        let c = coll_cost(&p, &Assumptions::default(), &inst(2));
        assert!(
            (c.model_s - 7.0 * (1e-5 + wire * 3.0)).abs() < 1e-12,
            "{c:?}"
        );
        // Three per node: not measured, so γ 1.5 with the busiest port's load 3·5/7.
        let c = coll_cost(&p, &Assumptions::default(), &inst(3));
        let scaled = 7.0 * (1e-5 + wire * 1.5) + (15.0 / 7.0 - 1.0) * 7.0 * wire * 1.5;
        assert!((c.model_s - scaled).abs() < 1e-12, "{c:?} {scaled}");
    }

    /// A train of small messages on one connection (Meep's halo exchange): each message
    /// after the first adds at least its headers' time on the wire, the calibrated gaps'
    /// header bytes at β, not only its payload's; without a pLogP measurement in the
    /// profile, as before.
    #[test]
    fn each_message_of_a_train_adds_its_headers() {
        use crate::trace::{NO_RANK, Record, RunTrace, call};
        let (alpha, beta, header, k) = (10e-6, 8e-8, 100.0, 10u64);
        let gap0 = header * beta;
        // Rank 0 (node n0) sends k messages of 8 B to rank 1 (node n1) 100 ns apart;
        // rank 1 is already in its receives.
        let rec = |call, peer, t: u64, dur: u64| Record {
            t_start: t,
            t_end: t + dur,
            t_posted: t + dur,
            peer,
            peer2: NO_RANK,
            root: NO_RANK,
            bytes_send: if call == call::MPI_Send { 8 } else { 0 },
            bytes_recv: if call == call::MPI_Recv { 8 } else { 0 },
            comm_size: 2,
            call,
            ..Default::default()
        };
        let sends = (0..k)
            .map(|i| rec(call::MPI_Send, 1, 1_000 + 100 * i, 50))
            .collect();
        let recvs = (0..k).map(|i| rec(call::MPI_Recv, 0, i, 1)).collect();
        let run = RunTrace {
            world_size: 2,
            missing: vec![],
            ranks: vec![
                crate::testing::spooled_rank(0, 2, 2, sends),
                crate::testing::spooled_rank(1, 2, 2, recvs),
            ],
        };
        let mut p = Profile::builtin_default();
        p.hockney.inter = Hockney::new(alpha, beta).unwrap();
        let durations = |p: &Profile| {
            let pred = predict_run_with(&run, p, Some("none"), &Assumptions::default()).unwrap();
            pred.calls[1]
                .iter()
                .map(|c| c.predicted.unwrap())
                .collect::<Vec<_>>()
        };
        // The send and receive overheads are the Hockney-derived ones either way; only
        // the gap differs.
        let mut plogp = crate::model::plogp::PLogP::from_hockney(&p.hockney.inter);
        let without = durations(&p);
        // Gaps of a stream: 1 and 16 KiB at the wire's pace with 100 bytes of headers.
        plogp.g = crate::model::plogp::PiecewiseLinear {
            points: vec![
                (0.0, 9e-6),
                (1024.0, beta * (1024.0 + header)),
                (16384.0, beta * (16384.0 + header)),
            ],
        };
        assert!((plogp.header_bytes() - header).abs() < 1e-6);
        p.plogp = Some(plogp);
        let with = durations(&p);
        // Every receive after the first waits for one more message: its latency hidden
        // behind the one before, its bytes and the gap not.
        for (i, (&w, &wo)) in with.iter().zip(&without).enumerate().skip(1) {
            assert!(
                (w - (gap0 + beta * 8.0)).abs() < 1e-12,
                "receive {i}: {with:?}"
            );
            assert!(wo < 3e-6, "receive {i} without the gap: {without:?}");
        }
    }

    #[test]
    fn a_collective_s_small_messages_cross_a_shaped_link_s_bucket() {
        let (alpha, beta) = (25e-6, 8e-8);
        let mut p = Profile::builtin_default();
        p.hockney.inter = Hockney::new(alpha, beta).unwrap();
        let inst = |kind, n: u64, block| Instance {
            kind,
            members: (0..n as u32).collect(),
            root: Some(0),
            n,
            block,
            multi_node: true,
            max_per_node: 1,
        };
        let cost = |p: &Profile, kind, n, m| {
            coll_cost(p, &Assumptions::default(), &inst(kind, n, m)).free_s
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // A link that serializes every byte: recursive doubling's two steps of α + β·m.
        assert!(close(
            cost(&p, CallKind::Allreduce, 4, 1000),
            2.0 * (alpha + beta * 1000.0)
        ));
        p.hockney.inter = p.hockney.inter.with_burst(2100.0).unwrap();
        // Both steps' 1000 B fit the bucket (1100 B left, refilled by α/β = 312.5 B): the
        // latencies alone.
        assert!(close(cost(&p, CallKind::Allreduce, 4, 1000), 2.0 * alpha));
        // 2000 B: the first step fits, the second finds 100 + 312.5 B and pays.
        assert!(close(
            cost(&p, CallKind::Allreduce, 4, 2000),
            2.0 * alpha + beta * 2000.0
        ));
        // Larger than the bucket: every byte paid, as a lone message.
        assert!(close(
            cost(&p, CallKind::Allreduce, 4, 3000),
            2.0 * (alpha + beta * 3000.0)
        ));
        assert_eq!(
            bucket_bytes(
                CallKind::Alltoall,
                bcast::BcastStrategy::Flat,
                scatter::ScatterStrategy::Flat,
                4,
                1000,
                &p.hockney.inter
            ),
            0.0
        );
        // A linear broadcast's root sends 3 x 700 B back to back: all three fit 2100 B.
        let flat = Assumptions {
            bcast: Some(bcast::BcastStrategy::Flat),
            ..Assumptions::default()
        };
        let b = coll_cost(&p, &flat, &inst(CallKind::Bcast, 4, 700)).free_s;
        let empty = bcast::predict(&p.plogp_or_hockney(), bcast::BcastStrategy::Flat, 4, 0)
            .unwrap()
            .seconds;
        assert!(close(b, empty), "{b} {empty}");
        // Within one node (no shaper) nothing changes.
        let mut one = inst(CallKind::Allreduce, 4, 1000);
        one.multi_node = false;
        let h = p.hockney.intra;
        let c = coll_cost(&p, &Assumptions::default(), &one).free_s;
        assert!(close(c, 2.0 * (h.alpha + h.beta * 1000.0)), "{c}");
    }

    #[test]
    fn a_two_member_collective_that_exchanges_takes_the_exchange_s_latency() {
        let (alpha, beta, x) = (8e-6, 8e-8, 3e-6);
        let mut p = Profile::builtin_default();
        p.hockney.inter = Hockney::new(alpha, beta).unwrap();
        p.exchange = Some(x);
        let inst = |kind, n: u64, block, multi_node| Instance {
            kind,
            members: (0..n as u32).collect(),
            root: (kind == CallKind::Bcast).then_some(0),
            n,
            block,
            multi_node,
            max_per_node: if multi_node { 1 } else { n },
        };
        let free = |p: &Profile, i: &Instance| coll_cost(p, &Assumptions::default(), i).free_s;
        // Two members on two nodes send each other 8 bytes at once: α + x + β·m.
        let c = free(&p, &inst(CallKind::Allreduce, 2, 8, true));
        assert!((c - (alpha + x + beta * 8.0)).abs() < 1e-15, "{c}");
        let mut none = p.clone();
        none.exchange = None;
        let c0 = free(&none, &inst(CallKind::Allreduce, 2, 8, true));
        assert!((c0 - (alpha + beta * 8.0)).abs() < 1e-15, "{c0}");
        // A broadcast goes one way; a larger block crosses in its bytes' time; more
        // members, one node, or a launch with its own step: as before.
        for i in [
            inst(CallKind::Bcast, 2, 8, true),
            inst(CallKind::Allreduce, 2, 4096, true),
            inst(CallKind::Allreduce, 4, 8, true),
            inst(CallKind::Allreduce, 2, 8, false),
        ] {
            assert_eq!(free(&p, &i), free(&none, &i), "{:?}", i.kind);
        }
        let mut stepped = p.clone();
        stepped.launch_step = Some(20e-6);
        let c = free(&stepped, &inst(CallKind::Allreduce, 2, 8, true));
        assert!((c - (20e-6 + beta * 8.0)).abs() < 1e-15, "{c}");
        // Measured on another library family than the run's: not taken.
        p.mpi_library = Some("MPICH Version: 4.0".into());
        let openmpi = Assumptions {
            library: Some(LibraryFamily::OpenMpi),
            ..Assumptions::default()
        };
        let c = coll_cost(&p, &openmpi, &inst(CallKind::Allreduce, 2, 8, true)).free_s;
        assert!((c - (alpha + beta * 8.0)).abs() < 1e-15, "{c}");
    }

    #[test]
    fn a_collective_s_steps_take_the_step_latency_of_their_launch() {
        let (alpha, beta) = (25e-6, 8e-8);
        let mut p = Profile::builtin_default();
        p.hockney.inter = Hockney::new(alpha, beta).unwrap();
        p.latency_placed = vec![crate::profile::PlacedLatency {
            procs: 8,
            per_node: 2,
            alpha: 36e-6,
            step: Some(57e-6),
        }];
        let inst = |kind, block| Instance {
            kind,
            members: (0..8).collect(),
            root: None,
            n: 8,
            block,
            multi_node: true,
            max_per_node: 2,
        };
        let launched = p.for_launch(8, 2);
        let free =
            |p: &Profile, kind, m| coll_cost(p, &Assumptions::default(), &inst(kind, m)).free_s;
        // Three recursive-doubling steps at 57 µs, where the ping-pong's 36 µs was taken
        // before.
        let c = free(&launched, CallKind::Allreduce, 8);
        assert!((c - 3.0 * (57e-6 + beta * 8.0)).abs() < 1e-12, "{c}");
        // The all-to-all keeps the point-to-point latency of its launch.
        let a = free(&launched, CallKind::Alltoall, 65536);
        let mut no_step = launched.clone().into_owned();
        no_step.launch_step = None;
        assert_eq!(a, free(&no_step, CallKind::Alltoall, 65536));
        assert!(free(&no_step, CallKind::Allreduce, 8) < c);
        // Another launch: the profile's own α.
        let other = p.for_launch(4, 1);
        let c = free(&other, CallKind::Allreduce, 8);
        assert!((c - 3.0 * (alpha + beta * 8.0)).abs() < 1e-12, "{c}");
        // The signature measured as launched gives back calibrate's time: its γ were
        // solved with the two-rank α (25 µs), not the launch's 36 µs.
        let mut p = p.clone();
        p.alltoall_placed = vec![crate::profile::PlacedGamma {
            procs: 8,
            per_node: 2,
            gamma: alltoall::GammaTable(vec![(2048, 1.8), (1 << 20, 1.8)]),
        }];
        let launched = p.for_launch(8, 2);
        let model = coll_cost(
            &launched,
            &Assumptions::default(),
            &inst(CallKind::Alltoall, 2048),
        );
        let want = 7.0 * (alpha + beta * 2048.0 * 1.8);
        assert!(
            (model.model_s - want).abs() < 1e-12,
            "{} {want}",
            model.model_s
        );
        // The contention-free baseline keeps the launch's latency.
        let want = 7.0 * (36e-6 + beta * 2048.0) + (2.0 * 6.0 / 7.0 - 1.0) * 7.0 * beta * 2048.0;
        assert!(
            (model.free_s - want).abs() < 1e-12,
            "{} {want}",
            model.free_s
        );
    }

    #[test]
    fn a_two_member_broadcast_costs_one_message() {
        // One send of m: no tree to climb, so no more than the pLogP gap and latency.
        let h = Hockney {
            alpha: 1e-4,
            beta: 8e-8,
            burst: 0.0,
            burst_gamma: 0.0,
        };
        let pl = PLogP::from_hockney(&h);
        let t = bcast::predict(&pl, assumed_bcast(2, 16384), 2, 16384)
            .unwrap()
            .seconds;
        assert!((t - (pl.gap(16384.0) + pl.l)).abs() < 1e-12, "{t}");
    }
}

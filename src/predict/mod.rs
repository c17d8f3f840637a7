//! The prediction engine: records → flows → fluid simulation under the penalty model →
//! a predicted time for every call. Pure (no MPI): the same code runs at MPI_Finalize on
//! rank 0 and in `pmpi-predict analyze`.
//!
//! Per call:
//! - point-to-point sends: contention-free time (Hockney, inter- or intra-node) stretched
//!   by the fluid simulation; receives take the prediction of the send they match (FIFO per
//!   sender/receiver pair);
//! - MPI_Alltoall: the contention-signature model (`predicted_s`) and the graph-based
//!   time of its flows (`graph_s`);
//! - MPI_Bcast, MPI_Scatter: the pLogP strategy model of the algorithm assumed for Open MPI
//!   (binomial broadcast, flat scatter), times the slowdown other traffic causes to the
//!   operation's flows (their span among all flows over their span alone);
//! - other collectives: contention-free formulas (see [`free_collective`]);
//! - completions, probes and calls that move no data: no prediction.

pub mod sim;

use crate::graph::{self, CallClass, Flows};
use crate::model::{Hockney, PenaltyModel, alltoall, bcast, scatter};
use crate::profile::Profile;
use crate::topo::placement::Placement;
use crate::trace::RunTrace;
use sim::{Sim, SimFlow};
use std::collections::{HashMap, VecDeque};

/// Messages from this size on are assumed to use a rendezvous protocol: the send waits for
/// the matching receive to be posted (Open MPI's TCP eager limit is 64 KiB).
pub const RENDEZVOUS_BYTES: u64 = 64 * 1024;

/// Model names accepted by `PMPI_PREDICT_MODEL` and `--model`.
pub const MODELS: &str = "gige, myrinet, infiniband, maxmin, none";

/// Prediction of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CallPrediction {
    /// Predicted seconds.
    pub predicted: Option<f64>,
    /// Contention-free prediction, seconds.
    pub free: Option<f64>,
    /// predicted / free.
    pub penalty: Option<f64>,
    /// Graph-based prediction of a collective (its flows under the penalty model).
    pub graph: Option<f64>,
}

/// Everything the engine computed for a run.
pub struct RunPrediction {
    /// Per rank (index into `RunTrace::ranks`), per record.
    pub calls: Vec<Vec<CallPrediction>>,
    pub placement: Placement,
    pub flows: Flows,
    /// Index into `flows` of each simulated (inter-node) flow, in simulation order.
    pub inter: Vec<usize>,
    pub sim: Sim,
    /// Penalty model name used ("none" for no penalty).
    pub model: String,
    /// Contention-free time of each flow (index into `flows`).
    pub tref: Vec<f64>,
    /// Predicted end of each flow (index into `flows`).
    pub flow_end: Vec<f64>,
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
/// `None` means the Open MPI tuned fixed decision ([`assumed_bcast`], flat scatter).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Assumptions {
    /// Broadcast strategy for every size (`PMPI_PREDICT_BCAST`, `--bcast`).
    pub bcast: Option<bcast::BcastStrategy>,
    /// Scatter strategy (`PMPI_PREDICT_SCATTER`, `--scatter`).
    pub scatter: Option<scatter::ScatterStrategy>,
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
        })
    }

    fn bcast_for(&self, p: u64, m: u64) -> bcast::BcastStrategy {
        self.bcast.unwrap_or_else(|| assumed_bcast(p, m))
    }

    fn scatter_for(&self) -> scatter::ScatterStrategy {
        self.scatter.unwrap_or(scatter::ScatterStrategy::Flat)
    }
}

/// The broadcast strategy Open MPI's tuned component picks by its fixed decision: binomial
/// below 2 KiB; a split binary tree with segments ("binary" here) up to 362 KiB, and for
/// fewer than 13 processes at any size; a segmented pipeline ("segmented-chain") beyond.
pub fn assumed_bcast(p: u64, m: u64) -> bcast::BcastStrategy {
    if m < 2048 {
        bcast::BcastStrategy::Binomial
    } else if m < 370_728 || p < 13 {
        bcast::BcastStrategy::Binary
    } else {
        bcast::BcastStrategy::SegmentedChain
    }
}

/// Contention-free time of a collective without a model of its own: `n` processes,
/// `m` bytes per process block, Hockney `h`. Barrier: ⌈log2 n⌉·α (dissemination);
/// Reduce, Allreduce: ⌈log2 n⌉·(α + β·m) (binomial tree / recursive doubling);
/// Gather(v), Allgather(v), Alltoallv: (n−1)·(α + β·m) (linear / ring).
pub fn free_collective(kind: &str, h: &Hockney, n: u64, m: u64) -> Option<f64> {
    if n < 2 {
        return Some(0.0);
    }
    let lg = (64 - (n - 1).leading_zeros()) as f64;
    let step = h.alpha + h.beta * m as f64;
    match kind {
        "barrier" => Some(lg * h.alpha),
        "reduce" | "allreduce" => Some(lg * step),
        "gather" | "gatherv" | "allgather" | "allgatherv" | "alltoallv" => {
            Some((n - 1) as f64 * step)
        }
        "bcast" => Some(lg * step),
        "scatter" | "scatterv" => Some((n - 1) as f64 * step),
        "alltoall" => alltoall::lower_bound(h, n, m).ok(),
        _ => None,
    }
}

/// Flow indices of every call, as compressed rows: rank → record → flows.
struct CallFlows {
    /// Per rank, offsets into `ids` (one more than the rank's records).
    start: Vec<Vec<u32>>,
    ids: Vec<Vec<u32>>,
}

impl CallFlows {
    fn new(run: &RunTrace, flows: &Flows) -> CallFlows {
        let mut count: Vec<Vec<u32>> = run
            .ranks
            .iter()
            .map(|r| vec![0; r.records.len() + 1])
            .collect();
        for f in &flows.flows {
            count[f.owner.rank as usize][f.owner.rec as usize + 1] += 1;
        }
        for c in count.iter_mut() {
            for k in 1..c.len() {
                c[k] += c[k - 1];
            }
        }
        let mut fill = count.clone();
        let mut ids: Vec<Vec<u32>> = count
            .iter()
            .map(|c| vec![0; *c.last().unwrap_or(&0) as usize])
            .collect();
        for (i, f) in flows.flows.iter().enumerate() {
            let (r, k) = (f.owner.rank as usize, f.owner.rec as usize);
            ids[r][fill[r][k] as usize] = i as u32;
            fill[r][k] += 1;
        }
        CallFlows { start: count, ids }
    }

    fn of(&self, rank: u32, rec: u32) -> &[u32] {
        let s = &self.start[rank as usize];
        &self.ids[rank as usize][s[rec as usize] as usize..s[rec as usize + 1] as usize]
    }
}

/// Runs the engine on a recorded run, assuming Open MPI's collective algorithms.
pub fn predict_run(
    run: &RunTrace,
    profile: &Profile,
    model_override: Option<&str>,
) -> Result<RunPrediction, String> {
    predict_run_with(run, profile, model_override, &Assumptions::default())
}

/// Runs the engine on a recorded run with the given collective-algorithm assumptions.
pub fn predict_run_with(
    run: &RunTrace,
    profile: &Profile,
    model_override: Option<&str>,
    assume: &Assumptions,
) -> Result<RunPrediction, String> {
    let model = penalty_model(profile, model_override)?;
    let model_name = model
        .as_ref()
        .map_or("none".to_string(), |m| m.name().to_string());
    let placement = Placement::from_run(run);
    let mut flows = graph::build(run, &placement);

    let mut calls: Vec<Vec<CallPrediction>> = run
        .ranks
        .iter()
        .map(|r| vec![CallPrediction::default(); r.records.len()])
        .collect();
    let kinds: Vec<Vec<&'static str>> = run
        .ranks
        .iter()
        .map(|r| graph::kind_table(&r.meta.calls))
        .collect();
    // Flows of each call (compressed rows: per rank, per record), and of each
    // point-to-point (src, dst) pair in send order.
    let call_flows = CallFlows::new(run, &flows);
    // Point-to-point sends in start order per (source, destination, tag): MPI does not let
    // messages with the same envelope overtake each other.
    let mut pair_queue: HashMap<(i32, i32, i32), VecDeque<usize>> = HashMap::new();
    for (i, f) in flows.flows.iter().enumerate() {
        let r = &run.ranks[f.owner.rank as usize].records[f.owner.rec as usize];
        if matches!(
            graph::class_of(graph::kind_in(&kinds[f.owner.rank as usize], r.call)),
            CallClass::Send | CallClass::SendRecv
        ) {
            pair_queue
                .entry((f.src_rank, f.dst_rank, r.tag))
                .or_default()
                .push_back(i);
        }
    }
    // Receives match sends FIFO per envelope (the recorded tag is the one that matched), in
    // the order the receives were posted. Communicators are not compared: their ids are
    // numbered per rank.
    let origin = run.origin_ns();
    let start_of = |ri: usize, r: &crate::trace::Record| {
        RunTrace::seconds_since(&run.ranks[ri].meta, r.t_start, origin)
    };
    let mut recv_match: Vec<Vec<u32>> = run
        .ranks
        .iter()
        .map(|r| vec![u32::MAX; r.records.len()])
        .collect();
    let mut flow_recv_start = vec![f64::NAN; flows.flows.len()];
    for (ri, rk) in run.ranks.iter().enumerate() {
        // Receives, and the receive halves of MPI_Sendrecv (source in `peer2`; its recorded
        // tag is the send tag, which exchanges use for both halves).
        let mut recvs: Vec<(f64, usize, i32)> = rk
            .records
            .iter()
            .enumerate()
            .filter_map(
                |(i, r)| match graph::class_of(graph::kind_in(&kinds[ri], r.call)) {
                    CallClass::Recv if r.peer >= 0 => Some((start_of(ri, r), i, r.peer)),
                    CallClass::SendRecv if r.peer2 >= 0 => Some((start_of(ri, r), i, r.peer2)),
                    _ => None,
                },
            )
            .collect();
        recvs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for (t, i, src) in recvs {
            let r = &rk.records[i];
            if let Some(f) = pair_queue
                .get_mut(&(src, rk.meta.rank, r.tag))
                .and_then(VecDeque::pop_front)
            {
                if r.peer2 < 0
                    || graph::class_of(graph::kind_in(&kinds[ri], r.call)) == CallClass::Recv
                {
                    recv_match[ri][i] = f as u32;
                }
                flow_recv_start[f] = t;
            }
        }
    }
    // A rendezvous message crosses the network only once its receive is posted. A match
    // whose receive was posted after the send had already returned cannot be right (the
    // envelope matching ignores communicators): such flows keep their start.
    for (f, fl) in flows.flows.iter_mut().enumerate() {
        let (rk, rec) = (
            &run.ranks[fl.owner.rank as usize],
            &run.ranks[fl.owner.rank as usize].records[fl.owner.rec as usize],
        );
        let send_end = RunTrace::seconds_since(&rk.meta, rec.t_end, origin);
        if fl.bytes >= RENDEZVOUS_BYTES
            && flow_recv_start[f] > fl.start
            && flow_recv_start[f] <= send_end
        {
            fl.start = flow_recv_start[f];
        }
    }
    let flows = flows;
    let tref: Vec<f64> = flows
        .flows
        .iter()
        .map(|f| profile.reference_time(f.intra_node(), f.bytes))
        .collect();

    // Inter-node flows go through the simulation; intra-node ones take their tref.
    let mut inter: Vec<usize> = (0..flows.flows.len())
        .filter(|&i| !flows.flows[i].intra_node())
        .collect();
    inter.sort_by(|&x, &y| {
        flows.flows[x]
            .start
            .total_cmp(&flows.flows[y].start)
            .then(x.cmp(&y))
    });
    let sim_flow = |i: usize| {
        let f = &flows.flows[i];
        SimFlow {
            src: f.src_node,
            dst: f.dst_node,
            bytes: f.bytes,
            start: f.start,
            tref: tref[i],
        }
    };
    let sim_flows: Vec<SimFlow> = inter.iter().map(|&i| sim_flow(i)).collect();
    let sim = sim::simulate(&sim_flows, model.as_deref());
    let mut flow_end: Vec<f64> = flows
        .flows
        .iter()
        .zip(&tref)
        .map(|(f, t)| f.start + t)
        .collect();
    for (k, &i) in inter.iter().enumerate() {
        flow_end[i] = sim.end[k];
    }
    let plogp_inter = profile.plogp_or_hockney();
    let plogp_intra = crate::model::PLogP::from_hockney(&profile.hockney.intra);
    let span = |ids: &[u32]| -> (f64, f64) {
        let d = ids
            .iter()
            .map(|&i| flow_end[i as usize] - flows.flows[i as usize].start)
            .fold(0.0, f64::max);
        let t = ids.iter().map(|&i| tref[i as usize]).fold(0.0, f64::max);
        (d, t)
    };
    let multi_node = placement.nodes() > 1;
    let h_coll = profile.hockney_for(!multi_node);
    let plogp = if multi_node {
        profile.plogp_or_hockney()
    } else {
        crate::model::PLogP::from_hockney(&profile.hockney.intra)
    };

    // Collective instances: the k-th collective on a communicator is the same operation on
    // all its members (MPI orders collectives on a communicator identically). Ranks number
    // communicators differently, so one is known across ranks by its member list, and by
    // its rank among same-member communicators (MPI_COMM_WORLD, then its duplicates).
    let mut instance_of: Vec<Vec<u32>> = Vec::with_capacity(run.ranks.len());
    let mut instances: Vec<Vec<(u32, u32)>> = Vec::new();
    let mut instance_index: HashMap<(u64, usize, usize), u32> = HashMap::new();
    let world_n = run.world_size.max(0) as usize;
    let identity: Vec<i32> = (0..world_n as i32).collect();
    let fingerprint = |m: &[i32]| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        m.hash(&mut h);
        h.finish()
    };
    for (ri, rk) in run.ranks.iter().enumerate() {
        // comm id → (fingerprint, ordinal among same-member communicators)
        let mut ident: HashMap<u32, (u64, usize)> = HashMap::new();
        let mut seen: HashMap<u64, usize> = HashMap::new();
        let wf = fingerprint(&identity);
        ident.insert(0, (wf, 0));
        seen.insert(wf, 1);
        for c in &rk.meta.comms {
            let f = fingerprint(&c.world);
            let n = seen.entry(f).or_insert(0);
            ident.insert(c.id, (f, *n));
            *n += 1;
        }
        let mut counters: HashMap<u32, usize> = HashMap::new();
        let mut ids = vec![u32::MAX; rk.records.len()];
        for (i, r) in rk.records.iter().enumerate() {
            if graph::class_of(graph::kind_in(&kinds[ri], r.call)) != CallClass::Collective {
                continue;
            }
            let known = if r.comm == 0 {
                r.comm_size as usize == world_n
            } else {
                graph::members_of(&rk.meta, r.comm, r.comm_size).is_some()
            };
            let Some(&(f, ord)) = ident.get(&r.comm).filter(|_| known) else {
                continue;
            };
            let k = counters.entry(r.comm).or_insert(0);
            let next = instances.len() as u32;
            let idx = *instance_index.entry((f, ord, *k)).or_insert(next);
            if idx == next {
                instances.push(Vec::new());
            }
            *k += 1;
            instances[idx as usize].push((ri as u32, i as u32));
            ids[i] = idx;
        }
        instance_of.push(ids);
    }
    // Slowdown and graph span of each instance. The strategy models already account for
    // the operation's own messages (a flat scatter's root sends them one after another),
    // so the slowdown is that of its flows among all traffic against its flows alone.
    let inst_stats: Vec<(f64, Option<f64>)> = instances
        .iter()
        .map(|members| {
            let mut t0 = f64::INFINITY;
            let mut own: Vec<usize> = Vec::new();
            for m in members {
                let rk = &run.ranks[m.0 as usize];
                let r = &rk.records[m.1 as usize];
                t0 = f64::min(t0, RunTrace::seconds_since(&rk.meta, r.t_start, origin));
                own.extend(call_flows.of(m.0, m.1).iter().map(|&i| i as usize));
            }
            if own.is_empty() {
                return (1.0, None);
            }
            own.sort_unstable();
            let t1 = own
                .iter()
                .map(|&i| flow_end[i])
                .fold(f64::NEG_INFINITY, f64::max);
            let span = (t1 > t0).then_some(t1 - t0);
            // Only broadcasts and scatters use the slowdown: skip the second simulation
            // for the others.
            let (ri, rec) = members[0];
            let kind = graph::kind_in(
                &kinds[ri as usize],
                run.ranks[ri as usize].records[rec as usize].call,
            );
            if !matches!(kind, "bcast" | "scatter") {
                return (1.0, span);
            }
            let mut alone: Vec<SimFlow> = own
                .iter()
                .filter(|&&i| !flows.flows[i].intra_node())
                .map(|&i| sim_flow(i))
                .collect();
            alone.sort_by(|a, b| a.start.total_cmp(&b.start));
            let t1_alone = sim::simulate(&alone, model.as_deref())
                .end
                .into_iter()
                .chain(
                    own.iter()
                        .filter(|&&i| flows.flows[i].intra_node())
                        .map(|&i| flow_end[i]),
                )
                .fold(f64::NEG_INFINITY, f64::max);
            let slowdown = if t1_alone > t0 {
                ((t1 - t0) / (t1_alone - t0)).max(1.0)
            } else {
                1.0
            };
            (slowdown, span)
        })
        .collect();

    for (ri, rk) in run.ranks.iter().enumerate() {
        for (i, r) in rk.records.iter().enumerate() {
            let kind = graph::kind_in(&kinds[ri], r.call);
            let p = &mut calls[ri][i];
            match graph::class_of(kind) {
                CallClass::Send | CallClass::SendRecv => {
                    let ids = call_flows.of(ri as u32, i as u32);
                    if !ids.is_empty() {
                        let (d, t) = span(ids);
                        if kind == "send" && r.bytes_send < RENDEZVOUS_BYTES {
                            // An eager blocking send returns once its data is buffered:
                            // the pLogP send overhead os(m).
                            let f = &flows.flows[ids[0] as usize];
                            let pl = if f.intra_node() {
                                &plogp_intra
                            } else {
                                &plogp_inter
                            };
                            let os = pl.send_overhead(r.bytes_send as f64);
                            *p = CallPrediction {
                                predicted: Some(os),
                                free: Some(os),
                                ..Default::default()
                            };
                        } else {
                            // From the call's start: a rendezvous send also waits for its
                            // receive to be posted (its flow starts then).
                            let wait = ids
                                .iter()
                                .map(|&f| flows.flows[f as usize].start - start_of(ri, r))
                                .fold(0.0, f64::max);
                            *p = CallPrediction {
                                predicted: Some(wait + d),
                                free: Some(wait + t),
                                penalty: None,
                                graph: None,
                            };
                        }
                    } else if r.bytes_send == 0 && r.bytes_recv == 0 {
                        *p = CallPrediction {
                            predicted: Some(0.0),
                            free: Some(0.0),
                            ..Default::default()
                        };
                    }
                }
                CallClass::Recv => {
                    if r.peer >= 0 {
                        let m = recv_match[ri][i];
                        if m != u32::MAX {
                            let f = m as usize;
                            // The receive ends when the message has arrived (the sender's
                            // start is taken from the trace: a late sender is waited for),
                            // and no sooner than the receive overhead or(m) after it began.
                            let fl = &flows.flows[f];
                            let pl = if fl.intra_node() {
                                &plogp_intra
                            } else {
                                &plogp_inter
                            };
                            let or = pl.recv_overhead(r.bytes_recv as f64);
                            let since = fl.start - start_of(ri, r);
                            let d = flow_end[f] - fl.start;
                            *p = CallPrediction {
                                predicted: Some((since + d).max(or)),
                                free: Some((since + tref[f]).max(or)),
                                ..Default::default()
                            };
                        }
                    } else if r.bytes_recv == 0 {
                        *p = CallPrediction {
                            predicted: Some(0.0),
                            free: Some(0.0),
                            ..Default::default()
                        };
                    }
                }
                CallClass::Collective => {
                    let n = r.comm_size as u64;
                    let block = match kind {
                        "alltoall" | "scatter" => {
                            if n > 0 {
                                r.bytes_send.max(r.bytes_recv) / n.max(1)
                            } else {
                                0
                            }
                        }
                        "bcast" | "reduce" | "allreduce" => r.bytes_send.max(r.bytes_recv),
                        _ => r.bytes_send,
                    };
                    let block = if kind == "scatter" {
                        r.bytes_recv.max(r.bytes_send / n.max(1))
                    } else {
                        block
                    };
                    let inst = instance_of[ri][i];
                    let (pen, graph_t) = if inst == u32::MAX {
                        (1.0, None)
                    } else {
                        inst_stats[inst as usize]
                    };
                    let free = free_collective(kind, &h_coll, n, block);
                    let predicted = match kind {
                        "alltoall" if n >= 2 => {
                            if multi_node {
                                profile.alltoall.predict(&h_coll, n, block).ok()
                            } else {
                                free
                            }
                        }
                        "bcast" if n >= 2 => {
                            bcast::predict(&plogp, assume.bcast_for(n, block), n, block)
                                .ok()
                                .map(|x| x.seconds * pen)
                        }
                        "scatter" if n >= 2 => {
                            scatter::predict(&plogp, assume.scatter_for(), n, block)
                                .ok()
                                .map(|x| x.seconds * pen)
                        }
                        _ => free,
                    };
                    let free = match kind {
                        "bcast" if n >= 2 => {
                            bcast::predict(&plogp, assume.bcast_for(n, block), n, block)
                                .ok()
                                .map(|x| x.seconds)
                        }
                        "scatter" if n >= 2 => {
                            scatter::predict(&plogp, assume.scatter_for(), n, block)
                                .ok()
                                .map(|x| x.seconds)
                        }
                        _ => free,
                    };
                    *p = CallPrediction {
                        predicted,
                        free,
                        penalty: None,
                        graph: graph_t.filter(|_| kind == "alltoall"),
                    };
                }
                CallClass::Other => {}
            }
            if let (Some(pr), Some(fr)) = (p.predicted, p.free) {
                p.penalty = Some(if fr > 0.0 { pr / fr } else { 1.0 });
            }
        }
    }
    Ok(RunPrediction {
        calls,
        placement,
        flows,
        inter,
        sim,
        model: model_name,
        tref,
        flow_end,
    })
}

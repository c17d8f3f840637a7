//! Causal replay of a recorded run: the prediction engine's core (pure; no MPI).
//!
//! Each thread of each rank is a stream of MPI calls separated by compute gaps. The gaps
//! are kept as measured; every call is re-timed: a call starts when its stream reaches it
//! in the replay and cannot end before what it depends on (the matching message has
//! arrived, a rendezvous receive was posted, the participants a collective needs have
//! entered). Messages cross a fluid network ([`net`]) under the penalty model, so an
//! over-estimated transfer delays what follows instead of piling up against recorded start
//! times. The contention-free baseline is the same replay without penalties.
//!
//! [`Plan`] holds what the recorded run fixes (streams, which send each receive matched,
//! collective instances); [`replay`] times it; [`Timeline`] and [`waits`] turn a timing,
//! measured or replayed, into per-call waits by kind.
#![forbid(unsafe_code)]

pub mod cpus;
pub mod matching;
pub mod net;
pub mod online;
pub mod wait;
pub mod whatif;
pub mod window;

use crate::graph::{self, CallClass, CallRef};
use crate::model::plogp::PiecewiseLinear;
use crate::model::{Hockney, PLogP, PenaltyModel, tree};
use crate::profile::{LibraryFamily, Profile};
use crate::topo::placement::Placement;
use crate::trace::{
    CallArcs, CallKind, FLAG_GAP_POLLS, FLAG_NONBLOCKING, RankMeta, Record, RunTrace,
};
use net::Net;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use wait::{Wait, WaitKind};

/// TCP/IP/Ethernet headers of a segment (14 + 20 + 32 bytes, TCP with timestamps), which
/// a message that leaves alone puts on a shaped link besides its own; a corked one shares
/// them with the messages before it.
pub const LONE_FRAME_HEADER: f64 = 66.0;

/// Payload of a full TCP segment on a 1,500-byte Ethernet MTU (with timestamps).
pub const SEGMENT_BYTES: f64 = 1448.0;

/// An acknowledgement segment's bytes on the wire; TCP acknowledges every second
/// segment (delayed ACK).
pub const ACK_BYTES: f64 = 66.0;

/// "None" in the u32 index arrays.
const NONE: u32 = u32::MAX;

/// Eager limits per path: messages below go out at once and a blocking send returns after
/// a local copy; from the limit on (and for synchronous sends) the transfer waits for the
/// receive to be posted (rendezvous).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Protocol {
    /// Between nodes (Open MPI: `btl_tcp_eager_limit`).
    pub eager_inter: u64,
    /// Within a node (Open MPI: `btl_vader_eager_limit`).
    pub eager_intra: u64,
    /// The library's family, if known (what a profile measured of another family's
    /// transport does not hold: [`P2p::from_profile`]).
    pub library: Option<LibraryFamily>,
}

impl Protocol {
    /// The defaults of the MPI library named in the run's metadata: Open MPI 4.1's TCP and
    /// shared-memory eager limits (64 KiB, 4 KiB), MPICH's CH3/CH4 eager limit (128 KiB).
    pub fn for_library(library: &str) -> Protocol {
        let family = LibraryFamily::of(library);
        if family == Some(LibraryFamily::Mpich) {
            Protocol {
                eager_inter: 128 * 1024,
                eager_intra: 128 * 1024,
                library: family,
            }
        } else {
            Protocol {
                eager_inter: 64 * 1024,
                eager_intra: 4 * 1024,
                library: family,
            }
        }
    }

    /// The protocol of a run on `library`: its defaults ([`Protocol::for_library`]), with
    /// the limits `profile` gives for that library ([`Profile::eager_for`]: calibrated on
    /// the same library family) in their place.
    pub fn for_library_with(library: &str, profile: Option<&Profile>) -> Protocol {
        let mut p = Protocol::for_library(library);
        if let Some(e) = profile.and_then(|pr| pr.eager_for(library)) {
            p.eager_inter = e.inter.unwrap_or(p.eager_inter);
            p.eager_intra = e.intra.unwrap_or(p.eager_intra);
        }
        p
    }
}

/// Linux's default maximum TCP send buffer (`net.ipv4.tcp_wmem`), which both libraries'
/// TCP transports leave to the kernel by default: the socket buffer of a profile that does
/// not give the one `calibrate` measured.
pub const SOCKET_BUFFER: u64 = 4 * 1024 * 1024;

/// What a call does in the replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Blocking send (`sync`: MPI_Ssend; `buffered`: MPI_Bsend).
    Send {
        sync: bool,
        buffered: bool,
    },
    /// Nonblocking send; its row spans post to completion.
    Isend {
        sync: bool,
        buffered: bool,
    },
    Recv,
    Irecv,
    SendRecv,
    /// Wait*/Test*: completes the nonblocking operations recorded with its end time.
    Complete,
    /// Probe, successful Iprobe: ends when the probed message's envelope arrives.
    Probe,
    Coll,
    /// Nonblocking collective: its row spans post to completion; the completion call
    /// ends when the collective would have.
    ICol,
    /// One-sided transfer (MPI_Put, ...): the local post; the transfer is charged to the
    /// synchronisation that completes it.
    Rma,
    /// Window synchronisation other than MPI_Win_fence: one latency, plus the transfer
    /// of the bytes it completes (Hockney on the path to its target).
    RmaSync,
    /// A window flush (MPI_Win_flush*), as `op_of` names it: in the plan of a job on one
    /// node, one that completes no bytes of this thread's is `Local` (nothing
    /// outstanding, no network: its measured time; NWChem's ARMCI flushes after every
    /// operation, 3.7 µs each on one node, where one latency each predicted 13 times its
    /// MPI time); any other is an `RmaSync`: between nodes even an empty flush may wait
    /// for its targets (Open MPI's `osc pt2pt` asks each for an acknowledgement).
    RmaFlush,
    /// A local flush (MPI_Win_flush_local*): the origin's buffers reusable, which its puts
    /// and accumulates below the eager limit are once copied out, and its gets once their
    /// data is back (`record_op`).
    RmaFlushLocal,
    /// A collective the library completes without communication: a broadcast or
    /// reduction of zero elements (Open MPI's and MPICH's bindings return before the
    /// algorithm; measured: well under a microsecond). Its measured duration, no
    /// dependency on the other members.
    Local,
    /// No model: the measured duration is kept.
    Other,
}

/// Collective families, by what a member waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollShape {
    /// Every member needs every other (barrier, all-to-all, allreduce, allgather).
    All,
    /// One to all: a member needs the root (bcast, scatter).
    FromRoot,
    /// All to one: the root needs the others (reduce, gather).
    ToRoot,
}

/// Shape of collective `kind`.
pub fn coll_shape(kind: CallKind) -> CollShape {
    match kind {
        CallKind::Bcast | CallKind::Scatter | CallKind::Scatterv => CollShape::FromRoot,
        CallKind::Reduce | CallKind::Gather | CallKind::Gatherv => CollShape::ToRoot,
        _ => CollShape::All,
    }
}

/// One point-to-point message of the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Msg {
    /// The sending record (global id).
    pub send: u32,
    /// The receiving record (global id), `u32::MAX` if no receive matched.
    pub recv: u32,
    pub bytes: u64,
    pub src_rank: i32,
    pub dst_rank: i32,
    pub src_node: u32,
    pub dst_node: u32,
    /// The transfer waits for the receive to be posted.
    pub rendezvous: bool,
    /// Sent from a datatype not contiguous in memory ([`crate::trace::FLAG_PACKED`]). A
    /// rendezvous one is packed by the library: MPICH's sender is done once the receiver
    /// matched it and the data is copied, whatever its size; Open MPI's TCP transport
    /// sends its first eager-limit bytes with the request and the rest once the receiver
    /// matched it ([`Engine::packed_head`]).
    pub packed: bool,
    /// Connection (source rank, destination rank) number: messages on one leave in order.
    pub conn: u32,
}

impl Msg {
    /// Message `m`, sent by record `send` on connection `conn`, before any receive matched.
    pub fn of(m: online::Message, send: u32, conn: u32) -> Msg {
        Msg {
            send,
            recv: NONE,
            bytes: m.bytes,
            src_rank: m.src_rank,
            dst_rank: m.dst_rank,
            src_node: m.src_node,
            dst_node: m.dst_node,
            rendezvous: m.rendezvous,
            packed: m.packed,
            conn,
        }
    }

    /// What its send fixed of it.
    pub fn message(&self) -> online::Message {
        online::Message {
            bytes: self.bytes,
            src_rank: self.src_rank,
            dst_rank: self.dst_rank,
            src_node: self.src_node,
            dst_node: self.dst_node,
            rendezvous: self.rendezvous,
            packed: self.packed,
        }
    }
}

/// The message record `r` of WORLD rank `me` sends as `op`, if it sends one between
/// placed ranks: by rendezvous, unless buffered, from the eager limit of its path (within
/// a node or between nodes). A synchronous send below the limit goes eagerly too: Open
/// MPI's ob1 and MPICH send its data at once with the match header and complete the send
/// when the receiver's acknowledgement of the match comes back
/// ([`Engine::eager_send_done`]).
pub(crate) fn sent_message(
    op: Op,
    me: i32,
    r: &Record,
    placement: &Placement,
    protocol: Protocol,
) -> Option<online::Message> {
    let buffered = match op {
        Op::Send { buffered, .. } | Op::Isend { buffered, .. } => buffered,
        Op::SendRecv => false,
        _ => return None,
    };
    let (sn, dn) = (placement.node(me)?, placement.node(r.peer)?);
    let eager = if sn == dn {
        protocol.eager_intra
    } else {
        protocol.eager_inter
    };
    Some(online::Message {
        bytes: r.bytes_send,
        src_rank: me,
        dst_rank: r.peer,
        src_node: sn,
        dst_node: dn,
        rendezvous: !buffered && r.bytes_send >= eager,
        packed: r.flags & crate::trace::FLAG_PACKED != 0,
    })
}

/// One collective operation across its members.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub kind: CallKind,
    /// Members' records (global ids).
    pub members: Vec<u32>,
    /// Index into `members` of the root's record, if rooted and found.
    pub root: Option<usize>,
    /// Communicator size.
    pub n: u64,
    /// Bytes per block (the size the collective models take).
    pub block: u64,
    /// Spans more than one node.
    pub multi_node: bool,
    /// Most members on one node (their traffic shares that node's port).
    pub max_per_node: u64,
}

/// What the recorded run fixes: streams, matches, completions, collective instances.
pub struct Plan {
    /// Global id of rank index `ri`'s first record.
    pub base: Vec<u32>,
    /// (rank index, record index) of every global id.
    pub refs: Vec<CallRef>,
    /// What the replay reads of each record at each step, in one place.
    pub hot: Vec<Hot>,
    /// Streams (one per thread of each rank): global ids in call order.
    pub streams: Vec<Vec<u32>>,
    /// Measured, clock-corrected start and end of each record (seconds from the origin).
    pub m_start: Vec<f64>,
    pub m_end: Vec<f64>,
    /// WORLD rank of each rank index ([`Plan::rank_of`]: of a record).
    pub world_ranks: Vec<i32>,
    /// The recorded peer of the records whose replay asks for it ([`Plan::peer_of`]), not
    /// of every record (8 bytes a record saved).
    peers: FxMap<u32, i32>,
    pub msgs: Vec<Msg>,
    /// Completion record of each nonblocking record (NONE: completed in its post).
    pub done_by: Vec<u32>,
    /// Nonblocking records each completion record completes (compressed rows).
    pub completes_start: Vec<u32>,
    pub completes: Vec<u32>,
    /// The message a probe waits for.
    /// Empty when the run has no probe (most do not: 4 bytes a record saved).
    pub probe_msg: Vec<u32>,
    pub instances: Vec<Instance>,
    pub placement: Placement,
    pub protocol: Protocol,
    /// Number of connections among the messages.
    pub connections: usize,
    /// Bytes a window synchronisation (Op::RmaSync) completes, by global id.
    pub rma_bytes: HashMap<u32, u64>,
    /// By WORLD rank: how it runs the progress engine where its records do not show it
    /// ([`unseen_progress`]).
    pub unseen: Vec<UnseenProgress>,
    /// By WORLD rank: the machine whose CPUs it shared with more ranks
    /// ([`cpus::shared_cpus`]).
    pub cpus: Vec<Option<cpus::SharedCpus>>,
}

impl Plan {
    /// Global id of a record.
    pub fn id(&self, rank_index: usize, rec: usize) -> u32 {
        self.base[rank_index] + rec as u32
    }

    /// WORLD rank of record `g`'s rank.
    pub fn rank_of(&self, g: u32) -> i32 {
        self.world_ranks[self.refs[g as usize].rank as usize]
    }

    /// Recorded peer of record `g` where the replay needs it: a receive or probe that
    /// matched no message (MPI_Sendrecv: its source), a blocking send that made none, a
    /// window synchronisation's target;
    /// [`crate::trace::NO_RANK`] for any other record.
    pub fn peer_of(&self, g: u32) -> i32 {
        self.peers.get(&g).copied().unwrap_or(crate::trace::NO_RANK)
    }

    /// Nonblocking records completed by completion record `g`.
    pub fn completed_by(&self, g: u32) -> &[u32] {
        let s = self.completes_start[g as usize] as usize;
        let e = self.completes_start[g as usize + 1] as usize;
        &self.completes[s..e]
    }

    /// The plan of `run` under `placement`, with the protocol of the MPI library it ran on:
    /// its default eager limits, or those of `profile` where it has them for that library
    /// ([`Protocol::for_library_with`]).
    pub fn for_run(run: &RunTrace, placement: Placement, profile: Option<&Profile>) -> Plan {
        let library = run
            .ranks
            .first()
            .map(|r| r.meta.mpi_library.as_str())
            .unwrap_or("");
        Plan::new(run, placement, Protocol::for_library_with(library, profile))
    }

    /// Builds the plan of a run.
    pub fn new(run: &RunTrace, placement: Placement, protocol: Protocol) -> Plan {
        let mut base = Vec::with_capacity(run.ranks.len());
        let mut total = 0u32;
        for rk in &run.ranks {
            base.push(total);
            total += rk.records.len() as u32;
        }
        let n = total as usize;
        let origin = run.origin_ns();
        let mut refs = Vec::with_capacity(n);
        let mut kinds = Vec::with_capacity(n);
        // Each record's replay fields, filled in place as the plan finds them (one array
        // instead of one per field, each a fresh allocation to fault in and copy).
        let mut hot: Vec<Hot> = Vec::with_capacity(n);
        let mut m_start = Vec::with_capacity(n);
        let mut m_end = Vec::with_capacity(n);
        let mut rma_bytes = HashMap::new();
        let one_node = placement.nodes() <= 1;
        let mpich = protocol.library == Some(LibraryFamily::Mpich);
        // Each rank's records in call order (by entry): matching and collective instances
        // follow it.
        let mut order: Vec<Vec<u32>> = Vec::with_capacity(run.ranks.len());
        for (ri, rk) in run.ranks.iter().enumerate() {
            let table = graph::kind_table(&rk.meta.calls);
            // The kind and op of each call number of the rank, looked up once.
            let ops_of: Vec<Op> = table
                .iter()
                .enumerate()
                .map(|(c, &kind)| {
                    let name = rk.meta.calls.get(c).map(String::as_str).unwrap_or("");
                    op_of(kind, name)
                })
                .collect();
            let unknown = op_of(CallKind::Unknown, "");
            for (i, r) in rk.records.iter().enumerate() {
                refs.push(CallRef {
                    rank: ri as u32,
                    rec: i as u32,
                });
                let kind = graph::kind_in(&table, r.call);
                kinds.push(kind);
                let op = ops_of.get(r.call as usize).copied().unwrap_or(unknown);
                let bytes = r.bytes_send + r.bytes_recv;
                if op == Op::RmaSync || matches!(op, Op::RmaFlush | Op::RmaFlushLocal) && bytes > 0
                {
                    rma_bytes.insert(refs.len() as u32 - 1, bytes);
                }
                hot.push(Hot {
                    gap: 0.0,
                    op_dur: own_end(r).saturating_sub(r.t_start) as f64 * 1e-9,
                    msg_out: NONE,
                    msg_in: NONE,
                    inst_of: NONE,
                    op: record_op(op, kind, r, one_node, mpich, protocol.eager_inter),
                    polled_before: r.flags & FLAG_GAP_POLLS != 0,
                });
                m_start.push(RunTrace::seconds_since(&rk.meta, r.t_start, origin));
                m_end.push(RunTrace::seconds_since(&rk.meta, r.t_end, origin));
            }
            order.push(call_order(&rk.records, base[ri]));
        }
        // Completions: a nonblocking record ends when the completion call on its thread
        // that returned at the same instant returned.
        let mut done_by = vec![NONE; n];
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for (ri, rk) in run.ranks.iter().enumerate() {
            if rk.records.iter().all(|r| r.flags & FLAG_NONBLOCKING == 0) {
                continue;
            }
            // The completion calls first, so that the last of two with the same end wins.
            let mut found = matching::Completions::default();
            for (i, r) in rk.records.iter().enumerate() {
                let c = base[ri] + i as u32;
                if hot[c as usize].op == Op::Complete {
                    found.call(r.thread, r.t_end, c, |g| {
                        done_by[g as usize] = c;
                        pairs.push((c, g));
                    });
                }
            }
            for (i, r) in rk.records.iter().enumerate() {
                if r.flags & FLAG_NONBLOCKING == 0 {
                    continue;
                }
                let g = base[ri] + i as u32;
                if let Some(c) = found.operation(r.thread, r.t_end, g) {
                    done_by[g as usize] = c;
                    pairs.push((c, g));
                }
            }
        }
        pairs.sort_unstable();
        let mut completes_start = vec![0u32; n + 1];
        for &(c, _) in &pairs {
            completes_start[c as usize + 1] += 1;
        }
        for k in 1..=n {
            completes_start[k] += completes_start[k - 1];
        }
        let completes: Vec<u32> = pairs.iter().map(|p| p.1).collect();

        // Messages: sends in call order per (source, destination, tag) — MPI keeps that
        // order — matched FIFO by the receives in the order they were posted.
        let mut messages = Messages::default();
        for (ri, rk) in run.ranks.iter().enumerate() {
            for &g in &order[ri] {
                let r = &rk.records[(g - base[ri]) as usize];
                messages.send(rk.meta.rank, r, g, &mut hot, &placement, protocol);
            }
        }
        for (ri, rk) in run.ranks.iter().enumerate() {
            let mut recvs: Vec<(f64, u32, i32)> = (0..rk.records.len())
                .filter_map(|i| {
                    let g = base[ri] + i as u32;
                    receive_source(hot[g as usize].op, &rk.records[i])
                        .map(|src| (m_start[g as usize], g, src))
                })
                .collect();
            recvs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for (_, g, src) in recvs {
                let tag = rk.records[(g - base[ri]) as usize].recv_tag();
                messages.recv(rk.meta.rank, src, tag, g, &mut hot);
            }
        }
        let connections = messages.conns.len();
        let msgs = messages.msgs;
        let instances =
            collective_instances(run, &base, &order, &refs, &kinds, &mut hot, &placement);
        // The kinds served matching and instances only: not kept.
        drop(kinds);
        // Streams: each thread's records in call order, and the gaps between them. A rank
        // of one thread is one stream: its call order, moved rather than copied.
        let mut streams: Vec<Vec<u32>> = Vec::new();
        for (ri, (rk, mut ids)) in run.ranks.iter().zip(order).enumerate() {
            let rec = |g: u32| &rk.records[(g - base[ri]) as usize];
            // Threads in number order, each in call order (the sort is stable).
            let threads = rk.records.windows(2).any(|w| w[0].thread != w[1].thread);
            if threads {
                ids.sort_by_key(|&g| rec(g).thread);
            }
            for one in ids.chunk_by(|&a, &b| rec(a).thread == rec(b).thread) {
                for w in one.windows(2) {
                    let (a, b) = (rec(w[0]), rec(w[1]));
                    hot[w[1] as usize].gap = b.t_start.saturating_sub(own_end(a)) as f64 * 1e-9;
                }
                if threads {
                    streams.push(one.to_vec());
                }
            }
            if !threads && !ids.is_empty() {
                streams.push(ids);
            }
        }
        // A probe waits for the message that the next receive on its stream from the same
        // source and tag gets.
        let mut probe_msg = Vec::new();
        if hot.iter().any(|h| h.op == Op::Probe) {
            probe_msg = vec![NONE; n];
            let mut probes = matching::Probes::default();
            for (si, s) in streams.iter().enumerate() {
                for &g in s {
                    let CallRef { rank, rec } = refs[g as usize];
                    let r = &run.ranks[rank as usize].records[rec as usize];
                    match hot[g as usize].op {
                        Op::Probe => probes.probe(si as u32, g, r.peer, r.tag),
                        Op::Recv | Op::Irecv => {
                            let m = hot[g as usize].msg_in;
                            probes.recv(si as u32, r.peer, r.tag, |p| probe_msg[p as usize] = m);
                        }
                        _ => {}
                    }
                }
            }
        }
        let mut peers = FxMap::default();
        for (g, h) in hot.iter().enumerate() {
            let peer = match h.op {
                Op::Recv | Op::SendRecv if h.msg_in == NONE => true,
                // A send to another MPI world (UNKNOWN_RANK) has no message.
                Op::Send { .. } => h.msg_out == NONE,
                Op::Probe => probe_msg[g] == NONE,
                // A one-sided operation's target decides its synchronisation's path.
                Op::RmaSync | Op::Rma => true,
                _ => false,
            };
            if peer {
                let CallRef { rank, rec } = refs[g];
                let r = &run.ranks[rank as usize].records[rec as usize];
                let p = if h.op == Op::SendRecv {
                    r.peer2
                } else {
                    r.peer
                };
                peers.insert(g as u32, p);
            }
        }
        Plan {
            base,
            refs,
            hot,
            streams,
            m_start,
            m_end,
            world_ranks: run.ranks.iter().map(|r| r.meta.rank).collect(),
            peers,
            msgs,
            done_by,
            completes_start,
            completes,
            probe_msg,
            instances,
            placement,
            protocol,
            connections,
            rma_bytes,
            unseen: unseen_progress(run.ranks.iter().map(|r| &r.meta)),
            cpus: cpus::shared_cpus(run.ranks.iter().map(|r| &r.meta)),
        }
    }
}

/// How a rank runs the library's progress engine where its records do not show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnseenProgress {
    /// It made unsuccessful `MPI_Test*`/`MPI_Iprobe` calls that the layer counted rather
    /// than recorded (polls outside a tight loop, between other work) in a recording
    /// that does not say where ([`RankMeta::gap_polls`]): it may have run the progress
    /// engine anywhere between its recorded calls (HPL's broadcasts test between chunks
    /// of the update).
    pub polls: bool,
    /// The library progressed on a thread of its own ([`RankMeta::progress_thread`]):
    /// throughout, and it granted a request as soon as it came in.
    pub thread: bool,
}

/// [`UnseenProgress`] by WORLD rank: such a rank's rendezvous handshakes do not wait for
/// its next recorded call ([`Engine::handshake_done`]).
pub fn unseen_progress<'a>(metas: impl Iterator<Item = &'a RankMeta>) -> Vec<UnseenProgress> {
    let mut by_rank = Vec::new();
    for m in metas {
        let Ok(r) = usize::try_from(m.rank) else {
            continue;
        };
        if by_rank.len() <= r {
            by_rank.resize(r + 1, UnseenProgress::default());
        }
        let u = &mut by_rank[r];
        u.polls |= !m.gap_polls && m.polls.iter().any(|p| p.count > 0);
        u.thread |= m.progress_thread;
    }
    by_rank
}

/// Global ids of a rank's records (the first is `base`) in call order: by entry, then by
/// record number.
fn call_order(records: &[Record], base: u32) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..records.len() as u32).map(|i| base + i).collect();
    if records.windows(2).any(|w| w[1].t_start < w[0].t_start) {
        ids.sort_by_key(|&g| (records[(g - base) as usize].t_start, g));
    }
    ids
}

/// The source a receiving record receives from, if it receives a message: a receive's
/// peer, an `MPI_Sendrecv`'s second peer (not `MPI_ANY_SOURCE` left unresolved, nor
/// `MPI_PROC_NULL`: negative).
pub(crate) fn receive_source(op: Op, r: &Record) -> Option<i32> {
    match op {
        Op::Recv | Op::Irecv if r.peer >= 0 => Some(r.peer),
        Op::SendRecv if r.peer2 >= 0 => Some(r.peer2),
        _ => None,
    }
}

/// The messages of a run, matched as their records come ([`matching::Fifo`] per (source,
/// destination, tag)): each rank's sends in call order and its receives in the order they
/// were posted, the two sides and the ranks interleaved in any way.
#[derive(Default)]
struct Messages {
    fifo: matching::Fifo<(i32, i32, i32), u32, u32>,
    /// The messages, numbered as their sends come.
    msgs: Vec<Msg>,
    /// Connection number of each (source rank, destination rank).
    conns: FxMap<(i32, i32), u32>,
    /// The channels of the last send and the last receive
    /// ([`matching::Fifo::channel_after`]: the plan matches a rank's sends, then its
    /// receives, rank after rank).
    last: [matching::LastChannel<(i32, i32, i32)>; 2],
}

impl Messages {
    /// Record `g` of WORLD rank `me`: a message if it sends one (its `msg_out` in `hot`)
    /// between placed ranks, matched with the receive that waits for it, if one does.
    fn send(
        &mut self,
        me: i32,
        r: &Record,
        g: u32,
        hot: &mut [Hot],
        placement: &Placement,
        protocol: Protocol,
    ) {
        let Some(msg) = sent_message(hot[g as usize].op, me, r, placement, protocol) else {
            return;
        };
        let m = self.msgs.len() as u32;
        hot[g as usize].msg_out = m;
        let next_conn = self.conns.len() as u32;
        let conn = *self.conns.entry((me, r.peer)).or_insert(next_conn);
        self.msgs.push(Msg::of(msg, g, conn));
        let c = self
            .fifo
            .channel_after(&mut self.last[0], (me, r.peer, r.tag));
        if let Some(rg) = self.fifo.a_in(c, m) {
            self.link(m, rg, hot);
        }
    }

    /// Receive `g` of WORLD rank `me` from `src` with tag `tag`: matched with the message
    /// that waits for it, if one does.
    fn recv(&mut self, me: i32, src: i32, tag: i32, g: u32, hot: &mut [Hot]) {
        let c = self.fifo.channel_after(&mut self.last[1], (src, me, tag));
        if let Some(m) = self.fifo.b_in(c, g) {
            self.link(m, g, hot);
        }
    }

    fn link(&mut self, m: u32, g: u32, hot: &mut [Hot]) {
        hot[g as usize].msg_in = m;
        self.msgs[m as usize].recv = g;
    }
}

/// A hash map with a cheap hasher (FxHash, as rustc's): the plan's keys are a few
/// integers, not attacker-controlled, and SipHash dominated building it.
pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[derive(Default)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(b as u64);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64);
    }
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.hash
    }
}

impl FxHasher {
    #[inline]
    fn add(&mut self, x: u64) {
        self.hash = (self.hash.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// Whether a blocking collective moves no data and synchronises nobody: a broadcast,
/// reduction or all-reduce of zero bytes (every member passes the same count).
fn communicates_nothing(kind: CallKind, r: &Record) -> bool {
    matches!(
        kind,
        CallKind::Bcast | CallKind::Reduce | CallKind::Allreduce
    ) && r.bytes_send == 0
        && r.bytes_recv == 0
}

/// Local end of a record's own call: a nonblocking operation's post returns at `t_posted`.
pub(crate) fn own_end(r: &Record) -> u64 {
    if r.flags & FLAG_NONBLOCKING != 0 {
        r.t_posted
    } else {
        r.t_end
    }
}

/// What record `r` of a call whose op is `op` (`op_of`) replays as, in a job on one node
/// (`one_node`) or more, on MPICH (`mpich`) or not, with `eager` the eager limit between
/// nodes: a nonblocking collective, one that communicates nothing, a flush that completes
/// nothing (see [`Op::RmaFlush`]), a local flush of puts and accumulates alone.
///
/// A flush that completes none of this thread's bytes takes its measured time (nothing
/// outstanding) in a job on one node, and on MPICH anywhere: its flush returns at once
/// when nothing is outstanding (NWChem over ARMCI-MPI, 2 ranks on 2 hosts: 194,328
/// `MPI_Win_flush_all` of nothing, 0.45 µs each, and 1.66 million
/// `MPI_Win_flush_local_all` of nothing, 1.1 µs each, where one latency each had been
/// predicted). A local flush of puts and accumulates below the eager limit takes its
/// measured time too: by MPI's local completion, their data only had to be copied out,
/// which an eager transfer does as it is posted (reasoned, not yet measured: that run's
/// local flushes with bytes completed gets). One that completes gets waits for their
/// data, as a flush does.
pub(crate) fn record_op(
    op: Op,
    kind: CallKind,
    r: &Record,
    one_node: bool,
    mpich: bool,
    eager: u64,
) -> Op {
    let nothing = r.bytes_send + r.bytes_recv == 0;
    match op {
        Op::Coll if r.flags & FLAG_NONBLOCKING != 0 => Op::ICol,
        Op::Coll if communicates_nothing(kind, r) => Op::Local,
        Op::RmaFlush | Op::RmaFlushLocal if nothing && (one_node || mpich) => Op::Local,
        Op::RmaFlushLocal if !nothing && r.bytes_recv == 0 && r.bytes_send < eager => Op::Local,
        Op::RmaFlush | Op::RmaFlushLocal => Op::RmaSync,
        _ => op,
    }
}

pub(crate) fn op_of(kind: CallKind, name: &str) -> Op {
    let sync = name.starts_with("MPI_Ss") || name.starts_with("MPI_Iss");
    let buffered = name.starts_with("MPI_Bs") || name.starts_with("MPI_Ibs");
    match kind {
        CallKind::Send => Op::Send { sync, buffered },
        // A start of a persistent request (recorded under its *_init call) is a
        // nonblocking send or receive.
        CallKind::Isend | CallKind::SendInit => Op::Isend { sync, buffered },
        CallKind::Recv | CallKind::Mrecv => Op::Recv,
        CallKind::Irecv | CallKind::RecvInit | CallKind::Imrecv => Op::Irecv,
        CallKind::Sendrecv => Op::SendRecv,
        CallKind::Wait
        | CallKind::Waitall
        | CallKind::Waitany
        | CallKind::Waitsome
        | CallKind::Test
        | CallKind::Testall
        | CallKind::Testany
        | CallKind::Testsome => Op::Complete,
        CallKind::Probe | CallKind::Iprobe | CallKind::Mprobe | CallKind::Improbe => Op::Probe,
        CallKind::RmaPut | CallKind::RmaGet | CallKind::RmaGetAcc => Op::Rma,
        CallKind::WinDone | CallKind::WinDoneRank if name.starts_with("MPI_Win_flush_local") => {
            Op::RmaFlushLocal
        }
        CallKind::WinDone | CallKind::WinDoneRank if name.starts_with("MPI_Win_flush") => {
            Op::RmaFlush
        }
        CallKind::WinOpen | CallKind::WinOpenRank | CallKind::WinDone | CallKind::WinDoneRank => {
            Op::RmaSync
        }
        k if graph::class_of(k) == CallClass::Collective => Op::Coll,
        _ => Op::Other,
    }
}

/// Groups collective records into operations across ranks. The k-th collective on a
/// communicator is the same operation on all its members (MPI orders collectives on a
/// communicator identically); ranks number communicators differently, so one is known by
/// its member list and its rank among same-member communicators (MPI_COMM_WORLD first).
/// Operations with members missing from the trace are left out (their calls keep no
/// dependency on other ranks). Sets each member's `inst_of` in `hot`.
fn collective_instances(
    run: &RunTrace,
    base: &[u32],
    order: &[Vec<u32>],
    refs: &[CallRef],
    kinds: &[CallKind],
    hot: &mut [Hot],
    placement: &Placement,
) -> Vec<Instance> {
    // Operations keyed by (member list, rank among same-member communicators, collective
    // number on it), each complete once the communicator's members (both groups of an
    // intercommunicator) have joined; numbered in the order they were first joined.
    let mut groups: matching::Groups<(u32, usize, usize)> = matching::Groups::default();
    let mut complete: Vec<(u32, Vec<u32>)> = Vec::new();
    // Member lists, numbered once.
    let mut lists: FxMap<(&[i32], bool), u32> = FxMap::default();
    let world: Vec<i32> = (0..run.world_size.max(0)).collect();
    for (ri, rk) in run.ranks.iter().enumerate() {
        // Which call numbers of the rank are collectives (as `kinds` says).
        let is_coll: Vec<bool> = graph::kind_table(&rk.meta.calls)
            .into_iter()
            .map(|k| graph::class_of(k) == CallClass::Collective)
            .collect();
        // An intercommunicator is known by both its groups (sorted) and kept apart from an
        // intracommunicator of the same ranks.
        let mut ident: FxMap<u32, (&[i32], usize, bool)> = FxMap::default();
        let mut seen: FxMap<(&[i32], bool), usize> = FxMap::default();
        ident.insert(0, (&world, 0, false));
        seen.insert((&world, false), 1);
        for c in &rk.meta.comms {
            let k = seen.entry((&c.world, c.inter)).or_insert(0);
            ident.insert(c.id, (&c.world, *k, c.inter));
            *k += 1;
        }
        let mut counters: FxMap<u32, usize> = FxMap::default();
        // Collectives match in the order they were called; a nonblocking one is recorded at
        // its completion, so order by entry.
        for &g in &order[ri] {
            let r = &rk.records[(g - base[ri]) as usize];
            debug_assert_eq!(
                is_coll.get(r.call as usize).copied().unwrap_or(false),
                graph::class_of(kinds[g as usize]) == CallClass::Collective
            );
            // A zero-count broadcast or reduction is no operation of the communicator's:
            // the library returns before counting it.
            if !is_coll.get(r.call as usize).copied().unwrap_or(false)
                || hot[g as usize].op == Op::Local
            {
                continue;
            }
            // (An intercommunicator's records carry the remote group's size.)
            let Some(&(members, ord, inter)) = ident
                .get(&r.comm)
                .filter(|(m, _, inter)| *inter || m.len() == r.comm_size as usize)
            else {
                continue;
            };
            let list = {
                let next = lists.len() as u32;
                *lists.entry((members, inter)).or_insert(next)
            };
            let k = counters.entry(r.comm).or_insert(0);
            let key = (list, ord, *k);
            *k += 1;
            if members.is_empty() {
                continue;
            }
            if let Some(done) = groups.join(key, g, members.len() as u64) {
                complete.push(done);
            }
        }
    }
    // Operations some member never joined (not in the trace) are left out.
    complete.sort_unstable_by_key(|c| c.0);
    let rec = |g: u32| {
        let CallRef { rank, rec } = refs[g as usize];
        (
            &run.ranks[rank as usize],
            &run.ranks[rank as usize].records[rec as usize],
        )
    };
    let mut instances = Vec::new();
    for (_, members) in complete {
        let n = members.len() as u64;
        let kind = kinds[members[0] as usize];
        let root = members.iter().position(|&g| {
            let (rk, r) = rec(g);
            r.root >= 0 && rk.meta.rank == r.root
        });
        let block = members
            .iter()
            .map(|&g| {
                let (rk, r) = rec(g);
                let arcs = if rk.arcs.is_empty() {
                    None
                } else {
                    rk.arcs_of(refs[g as usize].rec as usize)
                };
                block_of_call(kind, r, arcs, rk.meta.rank)
            })
            .max()
            .unwrap_or(0);
        let mut nodes: Vec<u32> = members
            .iter()
            .filter_map(|&g| placement.node(rec(g).0.meta.rank))
            .collect();
        nodes.sort_unstable();
        let max_per_node = nodes
            .chunk_by(|a, b| a == b)
            .map(|c| c.len() as u64)
            .max()
            .unwrap_or(1);
        nodes.dedup();
        let id = instances.len() as u32;
        for &g in &members {
            hot[g as usize].inst_of = id;
        }
        instances.push(Instance {
            kind,
            members,
            root,
            n,
            block,
            multi_node: nodes.len() > 1,
            max_per_node,
        });
    }
    instances
}

/// Bytes per block of a collective call: [`block_of`]; for an all-to-all, gather or scatter
/// whose per-peer bytes were recorded (`arcs`, of the call of WORLD rank `me`), the bytes it
/// exchanges with the other members per other member, in its busier direction (its own
/// block never crosses a link, and the linear exchange the models assume takes n−1 steps);
/// for a neighbourhood collective with its arcs, the bytes to or from its neighbours other
/// than itself, in its busier direction (a distributed graph may list the rank among its
/// own neighbours: DOLFINx's 32 MB `MPI_Neighbor_alltoallv`s at 2 ranks moved 0.2 MB
/// between them).
pub fn block_of_call(kind: CallKind, r: &Record, arcs: Option<&CallArcs>, me: i32) -> u64 {
    let n = r.comm_size as u64;
    let others = |v: &Option<Vec<(i32, u64)>>| {
        v.as_ref()
            .map(|v| v.iter().filter(|p| p.0 != me).map(|p| p.1).sum::<u64>())
    };
    match (kind, arcs) {
        (
            CallKind::Alltoallv | CallKind::Alltoallw | CallKind::Gatherv | CallKind::Scatterv,
            Some(a),
        ) if n >= 2 => match others(&a.send).into_iter().chain(others(&a.recv)).max() {
            Some(b) => b / (n - 1),
            None => block_of(kind, r),
        },
        (
            CallKind::NeighborAllgather
            | CallKind::NeighborAllgatherv
            | CallKind::NeighborAlltoall
            | CallKind::NeighborAlltoallv
            | CallKind::NeighborAlltoallw,
            Some(a),
        ) => match (others(&a.send), others(&a.recv)) {
            (None, None) => block_of(kind, r),
            // A direction whose arcs were not recorded keeps its total.
            (s, v) => s.unwrap_or(r.bytes_send).max(v.unwrap_or(r.bytes_recv)),
        },
        _ => block_of(kind, r),
    }
}

/// Bytes per block of a collective call, as the collective models take it.
pub fn block_of(kind: CallKind, r: &Record) -> u64 {
    let n = (r.comm_size as u64).max(1);
    match kind {
        CallKind::Alltoall | CallKind::Alltoallv | CallKind::Alltoallw => {
            r.bytes_send.max(r.bytes_recv) / n
        }
        CallKind::ReduceScatter | CallKind::ReduceScatterBlock => {
            r.bytes_recv.max(r.bytes_send / n)
        }
        CallKind::Scatter | CallKind::Scatterv => r.bytes_recv.max(r.bytes_send / n),
        CallKind::Gather | CallKind::Gatherv => r.bytes_send.max(r.bytes_recv / n),
        CallKind::Allgather | CallKind::Allgatherv => r.bytes_send,
        _ => r.bytes_send.max(r.bytes_recv),
    }
}

/// Time of one collective operation: with the contention its own model includes
/// (`model_s`), without (`free_s`), and one step of it (a non-root member's share of an
/// all-to-one operation).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CollCost {
    pub model_s: f64,
    pub free_s: f64,
    pub step_s: f64,
    /// The root serves the other members one after another in rank order (Open MPI's
    /// linear broadcast and scatter): the j-th of the n−1 has its data after j/(n−1) of
    /// the time, not all of it.
    pub serial: bool,
    /// A broadcast along a tree: each member has its data after its own path through it
    /// ([`TreeCost`]), not after the whole time.
    pub tree: Option<TreeCost>,
}

/// The tree a broadcast runs along and its hops' costs ([`tree::schedule`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeCost {
    pub tree: tree::Tree,
    pub hops: tree::Hops,
}

/// Point-to-point costs per path.
#[derive(Debug, Clone)]
pub struct P2p {
    pub inter: Hockney,
    pub intra: Hockney,
    pub plogp_inter: PLogP,
    pub plogp_intra: PLogP,
    /// Clusters joined by a wide-area link (what-if replay): messages between clusters
    /// take its parameters.
    pub wan: Option<whatif::Clusters>,
    /// Between nodes, a rendezvous send returns once the receiver has matched and all but
    /// this many bytes have left (TCP: the rest waits in the kernel's socket buffer).
    pub socket_buffer: u64,
    /// The same by message size ([`Profile::socket_buffer_by_size`]).
    pub socket_buffer_by_size: Vec<[u64; 2]>,
    /// Penalty factor of a flow while its reverse flow runs (see [`Net::with_reverse`]).
    pub reverse: f64,
    /// Penalty factor of a flow while its destination sends onward (see [`Net::with_through`]).
    pub through: f64,
    /// What a node's port carries, in lone messages' worth (see [`Net::with_ports`]).
    pub port_capacity: Option<f64>,
    /// Quantiles of a contended flow's time over the model's (see [`Net::with_dispersion`]).
    pub dispersion: Option<Vec<f64>>,
    /// Factor on every recorded compute gap (what-if replay: the hosts' CPU that the
    /// recorded network's interrupts took and the new one's take; 1: as recorded).
    pub compute: f64,
    /// The library's progress engine runs on a thread of its own (what-if replay,
    /// `--progress async`): no handshake waits for a rank's call ([`Engine::handshake_done`]).
    pub async_progress: bool,
    /// A small message's extra latency between nodes while the reverse one is under way
    /// ([`Profile::exchange`], [`Engine::exchange`]); 0 on another library family than
    /// the profile's.
    pub exchange: f64,
    /// Bytes each message puts on the wire between nodes besides its payload, from the
    /// calibrated pLogP gaps ([`PLogP::header_bytes`]; 0 where the profile has no pLogP
    /// measurement): a message following another on its connection adds at least their
    /// time at β to the train, however small, and takes them from a shaper's bucket
    /// besides its own bytes ([`Engine::lone_time`]).
    pub wire_header: f64,
    /// What a blocking call between nodes costs beyond its model after time outside MPI
    /// ([`Profile::cold_curve`]; none: nothing).
    pub cold_call: Option<PiecewiseLinear>,
}

impl P2p {
    /// Bytes a blocking rendezvous send of `bytes` between nodes leaves in the socket
    /// buffer when it returns: the entry of the smallest size measured at least `bytes`,
    /// else [`P2p::socket_buffer`].
    pub fn socket_buffer_for(&self, bytes: u64) -> u64 {
        self.socket_buffer_by_size
            .iter()
            .find(|e| e[0] >= bytes)
            .map_or(self.socket_buffer, |e| e[1])
    }

    /// The point-to-point parameters of `profile` for a run on a library of family `library`,
    /// with the wide-area link of `wan`. The reverse and through factors are the library's
    /// transport, not the network's: on the emulated cluster Open MPI's TCP transport moved
    /// two opposite messages between one pair of ranks one after the other (back to back,
    /// 19-21 exchanges of 21), MPICH's on the same hosts together (0-4 of 21), so they
    /// hold only for a run on the library family the profile was calibrated with
    /// ([`Profile::measured_on`]); otherwise 1.
    pub fn from_profile(
        profile: &Profile,
        wan: Option<whatif::Clusters>,
        library: Option<LibraryFamily>,
    ) -> P2p {
        let (reverse, through, exchange) = if profile.measured_on(library) {
            (
                profile.penalty.reverse,
                profile.penalty.through,
                profile.exchange.unwrap_or(0.0),
            )
        } else {
            (1.0, 1.0, 0.0)
        };
        P2p {
            inter: profile.hockney.inter,
            intra: profile.hockney.intra,
            plogp_inter: profile.plogp_or_hockney(),
            plogp_intra: PLogP::from_hockney(&profile.hockney.intra),
            wan,
            socket_buffer: profile.socket_buffer.unwrap_or(SOCKET_BUFFER),
            socket_buffer_by_size: profile.socket_buffer_by_size.clone(),
            reverse,
            through,
            port_capacity: profile.penalty.port_capacity,
            dispersion: profile.penalty.dispersion.clone(),
            compute: 1.0,
            async_progress: false,
            exchange,
            wire_header: profile.plogp.as_ref().map_or(0.0, PLogP::header_bytes),
            cold_call: profile.cold_curve(),
        }
    }

    /// [`P2p::from_profile`] under a what-if replay's conditions: their clusters, every
    /// compute gap multiplied by their factor, and with a progress thread (a rendezvous
    /// message moves once both sides are posted) where they ask for one.
    pub fn under(
        profile: &Profile,
        cond: &whatif::Conditions,
        library: Option<LibraryFamily>,
    ) -> P2p {
        let f = cond.compute_scale;
        P2p {
            compute: if f.is_finite() && f > 0.0 { f } else { 1.0 },
            async_progress: cond.progress == whatif::ProgressMode::Async,
            ..P2p::from_profile(profile, cond.clusters.clone(), library)
        }
    }

    /// The point-to-point parameters between two nodes.
    fn hockney(&self, src_node: u32, dst_node: u32) -> &Hockney {
        match &self.wan {
            Some(c) if c.crosses(src_node, dst_node) => &c.wan,
            _ if src_node == dst_node => &self.intra,
            _ => &self.inter,
        }
    }
    /// Local cost of sending (`send`) or receiving a message once the network is not in the
    /// way: pLogP's os(m)/or(m) within a node; between nodes the fixed part os(0)/or(0) plus a
    /// copy at memory speed (intra-node β) to or from the socket buffer. Calibrated os(m) and
    /// or(m) on TCP include the wire time of the message, which the replay's network adds.
    fn overhead(&self, msg: &Msg, send: bool) -> f64 {
        self.local_cost(msg.bytes, msg.src_node == msg.dst_node, send)
    }

    /// [`P2p::overhead`] of a message of `bytes` within a node (`intra`) or between nodes.
    fn local_cost(&self, bytes: u64, intra: bool, send: bool) -> f64 {
        let pl = if intra {
            &self.plogp_intra
        } else {
            &self.plogp_inter
        };
        let at = |m: f64| {
            if send {
                pl.send_overhead(m)
            } else {
                pl.recv_overhead(m)
            }
        };
        if intra {
            at(bytes as f64)
        } else {
            at(0.0) + self.intra.beta * bytes as f64
        }
    }
}

/// Why a call's time is not (wholly) a prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Reason {
    /// Predicted.
    #[default]
    None,
    /// No model for this call (communicator management, lifecycle): measured time kept.
    NoModel,
    /// A receive, probe or collective whose partner is not in the trace: measured time kept.
    Unmatched,
    /// A dependency that the replay could never satisfy (an incomplete trace): measured
    /// time kept.
    Unresolved,
}

impl Reason {
    /// Every reason (a reason's index here is its code in a spooled prediction).
    pub const ALL: [Reason; 4] = [
        Reason::None,
        Reason::NoModel,
        Reason::Unmatched,
        Reason::Unresolved,
    ];

    /// The name in `calls.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Reason::None => "",
            Reason::NoModel => "no-model",
            Reason::Unmatched => "unmatched",
            Reason::Unresolved => "unresolved",
        }
    }
}

/// The replayed timing of a run.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    /// Replayed start and end of each record's own call.
    pub start: Vec<f64>,
    pub end: Vec<f64>,
    pub reason: Vec<Reason>,
    /// When each nonblocking operation's request completed (NaN for other calls).
    pub req_done: Vec<f64>,
    /// Per message: when the sender and receiver posted, when both had (the message could
    /// go), when the data started to move and arrived, its contention-free time, its flow in
    /// the network (NONE: none).
    pub send_post: Vec<f64>,
    pub recv_post: Vec<f64>,
    pub matched: Vec<f64>,
    pub flow_start: Vec<f64>,
    pub arrive: Vec<f64>,
    pub tref: Vec<f64>,
    /// The message stays within a node (never shares the network).
    pub intra: Vec<bool>,
    pub flow: Vec<u32>,
    /// Message of each network flow.
    pub flow_msg: Vec<u32>,
    /// Inter-node flows (network ids) and the interval log of the network.
    pub inter: Vec<u32>,
    pub log: net::Sim,
    /// Per collective instance: time with contention minus without (0 in the baseline).
    pub coll_contention: Vec<f64>,
}

/// `v` cleared and filled with `n` copies of `x`, keeping its allocation.
fn refill<T: Copy>(mut v: Vec<T>, n: usize, x: T) -> Vec<T> {
    v.clear();
    v.resize(n, x);
    v
}

impl Timing {
    /// A blank timing for `plan`, in the arrays of `spare` (another replay's timing that is
    /// no longer needed): memory already faulted in costs no page faults, and a fresh
    /// array's pages cost the kernel as much as the replay itself spends on them.
    fn blank(plan: &Plan, spare: Timing) -> Timing {
        let (n, nm) = (plan.hot.len(), plan.msgs.len());
        let mut intra = spare.intra;
        intra.clear();
        intra.extend(plan.msgs.iter().map(|m| m.src_node == m.dst_node));
        let mut flow_msg = spare.flow_msg;
        flow_msg.clear();
        let mut inter = spare.inter;
        inter.clear();
        Timing {
            start: refill(spare.start, n, f64::NAN),
            end: refill(spare.end, n, f64::NAN),
            reason: refill(spare.reason, n, Reason::None),
            req_done: refill(spare.req_done, n, f64::NAN),
            send_post: refill(spare.send_post, nm, f64::NAN),
            recv_post: refill(spare.recv_post, nm, f64::NAN),
            matched: refill(spare.matched, nm, f64::NAN),
            flow_start: refill(spare.flow_start, nm, f64::NAN),
            arrive: refill(spare.arrive, nm, f64::NAN),
            tref: refill(spare.tref, nm, 0.0),
            intra,
            flow: refill(spare.flow, nm, NONE),
            flow_msg,
            inter,
            log: Default::default(),
            coll_contention: refill(spare.coll_contention, plan.instances.len(), 0.0),
        }
    }

    /// Contention of message `m`: its transfer beyond its contention-free time.
    pub fn msg_contention(&self, m: u32) -> f64 {
        let m = m as usize;
        if self.flow[m] == NONE || self.intra[m] {
            return 0.0;
        }
        transfer_contention(self.arrive[m], self.flow_start[m], self.tref[m])
    }
}

/// Contention of an inter-node message that entered the network at `flow_start` and
/// arrived at `arrive`, `tref` its time alone.
pub(crate) fn transfer_contention(arrive: f64, flow_start: f64, tref: f64) -> f64 {
    let c = (arrive - flow_start) - tref;
    // Below the rounding of the times it was computed from, it is none.
    if c > 1e-9 * tref + 1e-12 { c } else { 0.0 }
}

#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    pos: usize,
    started: bool,
    t_op: f64,
    done: bool,
    /// The current call waits on something the trace never provides: it keeps its
    /// measured time.
    forced: bool,
    /// The current call's record and [`Hot`], found once when the previous call ended and
    /// kept here for its start and end (reading `Plan::hot` again there missed the cache
    /// in profiles, about 3 % of the whole prediction; asking the windowed store for the
    /// record again at each step, about 3 % of the streamed one).
    hot: Option<(u32, Hot)>,
    /// When the current call started in the recorded run.
    rec: f64,
    /// When its last call ended in the replay (it computes from there to `t_op`).
    last_end: f64,
    /// What the current call pays for the time its rank spent outside MPI before it
    /// ([`Engine::cold`]): its work starts at `t_op`, this much after its entry.
    cold: f64,
    /// The current call has waited for another rank (or a message) at least once: it ends
    /// when the rank gets a CPU to see that ([`Engine::cpu_wait`]).
    blocked: bool,
}

/// What the replay reads of a record at each step, in one place (one cache line holds
/// two records; per-field vectors would cost a miss per field).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hot {
    /// Measured gap before the record on its stream (seconds; the first: 0).
    pub gap: f64,
    /// Measured duration of the record's own call (a nonblocking one: its post).
    pub op_dur: f64,
    /// The message it sends and the one it receives (`u32::MAX`: none).
    pub msg_out: u32,
    pub msg_in: u32,
    /// Its collective instance (`u32::MAX`: none).
    pub inst_of: u32,
    pub op: Op,
    /// Unseen polls ran in the gap before it ([`crate::trace::FLAG_GAP_POLLS`]).
    pub polled_before: bool,
}

impl Hot {
    /// A slot's contents before any record is in it.
    pub const BLANK: Hot = Hot {
        gap: 0.0,
        op_dur: 0.0,
        msg_out: NONE,
        msg_in: NONE,
        inst_of: NONE,
        op: Op::Other,
        polled_before: false,
    };
}

/// A time key for the heap: times are ≥ 0, so their bit patterns order like the values.
fn key(t: f64) -> u64 {
    t.max(0.0).to_bits()
}

/// A queued event of stream `s` at time key `k`, the `seq`-th queued: ordered by time,
/// then by queueing order.
fn event(k: u64, seq: u32, s: u32) -> u128 {
    (k as u128) << 64 | (seq as u128) << 32 | s as u128
}

/// The time key of a queued event.
fn event_key(e: u128) -> u64 {
    (e >> 64) as u64
}

/// Numbers the queued events again from 0 in their order, which it keeps, once the
/// queueing count would overflow its 32 bits; returns the last number given.
fn renumber(heap: &mut BinaryHeap<Reverse<u128>>) -> u32 {
    let mut v: Vec<u128> = std::mem::take(heap)
        .into_iter()
        .map(|Reverse(e)| e)
        .collect();
    v.sort_unstable();
    for (i, e) in v.iter_mut().enumerate() {
        *e = event(event_key(*e), i as u32, *e as u32);
    }
    let last = v.len() as u32;
    *heap = v.into_iter().map(Reverse).collect();
    last
}

/// The replay's queued stream events: each leaves by its time, then in the order it was
/// queued. Most are queued at the time of the event being handled (a message arrives, a
/// call enters: the streams it wakes), and those wait in a FIFO beside the heap instead
/// of in it: they leave after the heap's events of that time or earlier, which were
/// queued before them, and before any later one, as from the heap, without its work. (An
/// event may be queued before the current time: a call entered at its own time, earlier
/// than the event that let it go on, wakes its partners at its entry. The heap keeps it,
/// and it leaves first.)
struct Queue {
    /// Events queued at other times than the FIFO's, packed as [`event`] does (16 bytes; a
    /// tuple took 24 and its comparisons three steps), and the events queued so far (ties
    /// in time leave in this order).
    heap: BinaryHeap<Reverse<u128>>,
    seq: u32,
    /// The current time's key (`u64::MAX`, no time's, before the first event), and the
    /// streams queued at it, from `head` on. It changes only while the FIFO is empty: an
    /// event queued at that time later has a later place than every event in the heap.
    now: u64,
    fifo: Vec<u32>,
    head: usize,
}

impl Default for Queue {
    fn default() -> Queue {
        Queue {
            heap: BinaryHeap::new(),
            seq: 0,
            now: u64::MAX,
            fifo: Vec::new(),
            head: 0,
        }
    }
}

impl Queue {
    /// Queues stream `s` at time key `k`. (Forced inline: out of line, the replay ran 1 %
    /// more instructions.)
    #[inline(always)]
    fn push(&mut self, k: u64, s: u32) {
        if k == self.now {
            self.fifo.push(s);
            return;
        }
        if self.seq == u32::MAX {
            self.seq = renumber(&mut self.heap);
        }
        self.seq += 1;
        self.heap.push(Reverse(event(k, self.seq, s)));
    }

    /// The time key of the next event (`u64::MAX` when none is queued: above every
    /// time's key), and whether it is the FIFO's (the heap's events of the FIFO's time or
    /// earlier were queued before it).
    #[inline]
    fn next(&self) -> (u64, bool) {
        let top = self
            .heap
            .peek()
            .map_or(u64::MAX, |Reverse(e)| event_key(*e));
        if self.head < self.fifo.len() && top > self.now {
            (self.now, true)
        } else {
            (top, false)
        }
    }

    /// The time key of the next event ([`Queue::next`]).
    #[inline]
    fn next_key(&self) -> u64 {
        self.next().0
    }

    /// Takes the next event's stream, the FIFO's if `fifo` ([`Queue::next`] says which).
    #[inline]
    fn take(&mut self, fifo: bool) -> Option<u32> {
        if fifo {
            let s = *self.fifo.get(self.head)?;
            self.head += 1;
            if self.head == self.fifo.len() {
                self.fifo.clear();
                self.head = 0;
            }
            return Some(s);
        }
        let Reverse(e) = self.heap.pop()?;
        if self.head == self.fifo.len() {
            self.now = event_key(e);
        }
        Some(e as u32)
    }

    /// Takes the next event's stream.
    #[cfg(test)]
    fn pop(&mut self) -> Option<u32> {
        let (_, fifo) = self.next();
        self.take(fifo)
    }

    /// Time moves on to key `k`, no later than the next event (the network's next finish,
    /// or a stream's next call taken at once): the current time, unless the FIFO holds
    /// events of another.
    #[inline]
    fn now_at(&mut self, k: u64) {
        debug_assert!(self.next_key() >= k);
        if self.head == self.fifo.len() {
            self.now = k;
        }
    }
}

/// A message's times the replay keeps (see [`Timing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MsgTime {
    SendPost,
    RecvPost,
    Matched,
    FlowStart,
    Arrive,
    Tref,
}

/// What the engine reads of a collective operation (see [`Instance`]).
#[derive(Debug, Clone, Copy)]
struct InstInfo {
    kind: CallKind,
    members: usize,
    /// Index of the root among the members (in rank order) and its record.
    root: Option<usize>,
    root_g: Option<u32>,
    n: u64,
    block: u64,
    multi_node: bool,
}

/// A tree broadcast's schedule in the replay: by member, when each has its data and when
/// its sends are done (empty until the engine computes it), and how many members had
/// entered when it was computed (entries change it only as members enter).
#[derive(Debug, Clone, Default)]
struct TreeTimes {
    by_member: Vec<(f64, f64)>,
    entered: u32,
}

/// The replay's state of a collective operation: members entered so far, latest entry,
/// and for a buffered linear rooted collective ([`Engine::buffered_linear`]) when its
/// data starts to leave the root's node.
#[derive(Debug, Clone, Copy)]
struct InstState {
    entered: u32,
    last: f64,
    data: f64,
}

impl Default for InstState {
    fn default() -> Self {
        InstState {
            entered: 0,
            last: f64::NEG_INFINITY,
            data: f64::NAN,
        }
    }
}

/// Where the engine finds records, messages and collective operations and keeps their
/// replayed times: the whole plan's arrays (the batch replay), or slots reused once a
/// record is finished, filled by a reader as the streams need records
/// ([`window`]). One engine steps both, so both give the same times.
trait Store {
    /// Streams, and the number of records of stream `s`.
    fn streams(&self) -> usize;
    fn stream_len(&self, s: u32) -> usize;
    /// Measured start of stream `s`'s first record.
    fn stream_start(&self, s: u32) -> f64;
    /// The WORLD rank of stream `s`.
    fn stream_rank(&self, s: u32) -> i32;
    /// The record at position `pos` of stream `s` (the windowed store reads until it is
    /// read and what it depends on is known); None: the stream ended before (a run that
    /// could not be read to its end).
    fn stream_record(&mut self, s: u32, pos: usize) -> Option<u32>;
    fn hot(&self, g: u32) -> Hot;
    fn rank_of(&self, g: u32) -> i32;
    fn peer_of(&self, g: u32) -> i32;
    /// Bytes a window synchronisation completes.
    fn rma_bytes(&self, g: u32) -> u64;
    /// The `k`-th nonblocking record completion record `g` completes.
    fn completed(&self, g: u32, k: usize) -> Option<u32>;
    fn probe_msg(&self, g: u32) -> u32;
    fn start(&self, g: u32) -> f64;
    fn set_start(&mut self, g: u32, t: f64);
    fn end(&self, g: u32) -> f64;
    /// Record `g` ended at `t` (the windowed store may let it go).
    fn set_end(&mut self, g: u32, t: f64);
    fn set_reason(&mut self, g: u32, r: Reason);
    fn msg(&self, m: u32) -> Msg;
    /// A receive matched message `m`.
    fn has_recv(&self, m: u32) -> bool;
    fn msg_time(&self, m: u32, f: MsgTime) -> f64;
    fn set_msg_time(&mut self, m: u32, f: MsgTime, t: f64);
    /// Streams blocked on message `m`: at most its sender's and its receiver's.
    fn msg_waiters(&mut self, m: u32) -> &mut [u32; 2];
    /// Message `m` is network flow `f`.
    fn set_flow(&mut self, m: u32, f: u32);
    /// What the network's sink is told owns message `m`'s flow ([`Net::add_owned`]).
    fn flow_owner(&self, _m: u32) -> u64 {
        u64::MAX
    }
    fn inst(&self, i: u32) -> InstInfo;
    /// Index of member record `g` among instance `i`'s members (in rank order).
    fn member_index(&self, i: u32, g: u32) -> Option<usize>;
    /// WORLD rank of instance `i`'s `k`-th member.
    fn member_rank(&self, i: u32, k: usize) -> i32;
    /// When instance `i`'s `k`-th member entered in the replay (NaN: not yet).
    fn member_start(&self, i: u32, k: usize) -> f64;
    /// Instance `i`'s members' times in a tree broadcast ([`TreeTimes`]).
    fn tree_times(&mut self, i: u32) -> &mut TreeTimes;
    fn coll_cost(&self, i: u32) -> Option<CollCost>;
    fn inst_state(&self, i: u32) -> InstState;
    /// A member of instance `i` entered at `t`.
    fn enter_inst(&mut self, i: u32, t: f64);
    fn set_inst_data(&mut self, i: u32, t: f64);
    /// When instance `i`'s root entered (NaN: not yet).
    fn root_start(&self, i: u32) -> f64;
    fn set_coll_contention(&mut self, i: u32, c: f64);
    /// A nonblocking record whose request may now be final (the windowed store's
    /// [`Engine::settle`]); none in the batch replay, which finds them all at the end.
    fn next_check(&mut self) -> Option<u32> {
        None
    }
    /// Whether nonblocking record `g` is finished and its request's completion final.
    fn op_ready(&self, _g: u32) -> bool {
        false
    }
    /// Nonblocking record `g`'s request completed at `req_done`: it is finished.
    fn retire_op(&mut self, _g: u32, _req_done: f64) {}
    /// The replay should stop here for now (a windowed replay read too far ahead of
    /// another one sharing its reader); the batch replay never does.
    fn pause(&self) -> bool {
        false
    }
}

/// The batch replay's store: the plan's arrays, the timing's arrays.
struct Batch<'a> {
    plan: &'a Plan,
    costs: &'a [CollCost],
    t: Timing,
    msg_waiters: Vec<[u32; 2]>,
    inst: Vec<InstState>,
    trees: Vec<TreeTimes>,
}

impl Store for Batch<'_> {
    fn streams(&self) -> usize {
        self.plan.streams.len()
    }
    fn stream_len(&self, s: u32) -> usize {
        self.plan.streams[s as usize].len()
    }
    fn stream_start(&self, s: u32) -> f64 {
        self.plan.m_start[self.plan.streams[s as usize][0] as usize]
    }
    fn stream_rank(&self, s: u32) -> i32 {
        self.plan.rank_of(self.plan.streams[s as usize][0])
    }
    #[inline]
    fn stream_record(&mut self, s: u32, pos: usize) -> Option<u32> {
        self.plan.streams[s as usize].get(pos).copied()
    }
    #[inline]
    fn hot(&self, g: u32) -> Hot {
        self.plan.hot[g as usize]
    }
    fn rank_of(&self, g: u32) -> i32 {
        self.plan.rank_of(g)
    }
    fn peer_of(&self, g: u32) -> i32 {
        self.plan.peer_of(g)
    }
    fn rma_bytes(&self, g: u32) -> u64 {
        self.plan.rma_bytes.get(&g).copied().unwrap_or(0)
    }
    #[inline]
    fn completed(&self, g: u32, k: usize) -> Option<u32> {
        self.plan.completed_by(g).get(k).copied()
    }
    fn probe_msg(&self, g: u32) -> u32 {
        self.plan.probe_msg[g as usize]
    }
    #[inline]
    fn start(&self, g: u32) -> f64 {
        self.t.start[g as usize]
    }
    #[inline]
    fn set_start(&mut self, g: u32, t: f64) {
        self.t.start[g as usize] = t;
    }
    fn end(&self, g: u32) -> f64 {
        self.t.end[g as usize]
    }
    #[inline]
    fn set_end(&mut self, g: u32, t: f64) {
        self.t.end[g as usize] = t;
    }
    fn set_reason(&mut self, g: u32, r: Reason) {
        self.t.reason[g as usize] = r;
    }
    #[inline]
    fn msg(&self, m: u32) -> Msg {
        self.plan.msgs[m as usize]
    }
    fn has_recv(&self, m: u32) -> bool {
        self.plan.msgs[m as usize].recv != NONE
    }
    #[inline]
    fn msg_time(&self, m: u32, f: MsgTime) -> f64 {
        let t = &self.t;
        let v = match f {
            MsgTime::SendPost => &t.send_post,
            MsgTime::RecvPost => &t.recv_post,
            MsgTime::Matched => &t.matched,
            MsgTime::FlowStart => &t.flow_start,
            MsgTime::Arrive => &t.arrive,
            MsgTime::Tref => &t.tref,
        };
        v[m as usize]
    }
    #[inline]
    fn set_msg_time(&mut self, m: u32, f: MsgTime, x: f64) {
        let t = &mut self.t;
        let v = match f {
            MsgTime::SendPost => &mut t.send_post,
            MsgTime::RecvPost => &mut t.recv_post,
            MsgTime::Matched => &mut t.matched,
            MsgTime::FlowStart => &mut t.flow_start,
            MsgTime::Arrive => &mut t.arrive,
            MsgTime::Tref => &mut t.tref,
        };
        v[m as usize] = x;
    }
    #[inline]
    fn msg_waiters(&mut self, m: u32) -> &mut [u32; 2] {
        &mut self.msg_waiters[m as usize]
    }
    fn set_flow(&mut self, m: u32, f: u32) {
        debug_assert_eq!(f as usize, self.t.flow_msg.len());
        self.t.flow_msg.push(m);
        self.t.flow[m as usize] = f;
    }
    fn inst(&self, i: u32) -> InstInfo {
        let inst = &self.plan.instances[i as usize];
        InstInfo {
            kind: inst.kind,
            members: inst.members.len(),
            root: inst.root,
            root_g: inst.root.map(|k| inst.members[k]),
            n: inst.n,
            block: inst.block,
            multi_node: inst.multi_node,
        }
    }
    fn member_index(&self, i: u32, g: u32) -> Option<usize> {
        self.plan.instances[i as usize]
            .members
            .binary_search(&g)
            .ok()
    }
    fn member_rank(&self, i: u32, k: usize) -> i32 {
        self.plan
            .rank_of(self.plan.instances[i as usize].members[k])
    }
    fn member_start(&self, i: u32, k: usize) -> f64 {
        self.t.start[self.plan.instances[i as usize].members[k] as usize]
    }
    fn tree_times(&mut self, i: u32) -> &mut TreeTimes {
        &mut self.trees[i as usize]
    }
    fn coll_cost(&self, i: u32) -> Option<CollCost> {
        self.costs.get(i as usize).copied()
    }
    fn inst_state(&self, i: u32) -> InstState {
        self.inst[i as usize]
    }
    fn enter_inst(&mut self, i: u32, t: f64) {
        let s = &mut self.inst[i as usize];
        s.entered += 1;
        s.last = s.last.max(t);
    }
    fn set_inst_data(&mut self, i: u32, t: f64) {
        self.inst[i as usize].data = t;
    }
    fn root_start(&self, i: u32) -> f64 {
        let inst = &self.plan.instances[i as usize];
        inst.root
            .map_or(f64::NAN, |k| self.t.start[inst.members[k] as usize])
    }
    fn set_coll_contention(&mut self, i: u32, c: f64) {
        self.t.coll_contention[i as usize] = c;
    }
}

struct Engine<'a, S: Store> {
    p2p: &'a P2p,
    contention: bool,
    net: Net<'a>,
    placement: &'a Placement,
    protocol: Protocol,
    s: S,
    cur: Vec<Cursor>,
    /// Queued stream events.
    queue: Queue,
    /// Streams blocked on a message beyond its sender's and its receiver's.
    more_waiters: Vec<(u32, u32)>,
    /// Matched messages per connection (source rank, destination rank), in order; the
    /// first is on the network.
    conns: Vec<VecDeque<u32>>,
    inst_waiters: HashMap<u32, Vec<u32>>,
    /// Per node: when the data of the buffered linear collectives it rooted has left it.
    port_free: Vec<f64>,
    /// Open MPI's grant rule holds (see [`Engine::held_behind`]).
    grant: bool,
    /// Inter-node rendezvous messages matched and not yet arrived, by (source rank,
    /// destination rank), in the order they matched (their connection's).
    in_flight: FxMap<(i32, i32), VecDeque<u32>>,
    /// Messages held until another arrives: (the one on the wire, the held one).
    held: Vec<(u32, u32)>,
    /// Per inter-node rendezvous message not yet arrived: its posts in the recorded run.
    recorded: FxMap<u32, RecordedPosts>,
    /// Per node, its port's token buckets (out, in) where the inter-node link has a burst
    /// allowance (see [`Engine::lone_time`]): when each was last empty.
    bucket_empty: Vec<(f64, f64)>,
    /// Scratch space of [`Engine::tree_time`].
    tree_nodes: Vec<u32>,
    tree_entry: Vec<f64>,
    tree_times: Vec<(f64, f64)>,
    tree_scratch: tree::Scratch,
    /// Per stream: when its first one-sided operation since its last window
    /// synchronisation started (NaN: none; their data moves from there), and whether one
    /// of them targeted another node.
    rma_post: Vec<(f64, bool)>,
    /// Per two-member exchange collective in progress ([`Engine::pair_exchange`]): its
    /// members' entries in the recorded run.
    pair_rec: FxMap<u32, PairRec>,
    /// The progress engine by WORLD rank, in the replay and in the recorded run
    /// ([`Progress`]).
    progress: Vec<Progress>,
    /// Handshakes whose receiver has matched, not yet seen by their sender: when.
    rdv_matched: FxMap<u32, f64>,
    /// The last message between nodes that crosses in the latency put on the network,
    /// by (source rank, destination rank), while it has not arrived
    /// ([`Engine::exchange`]).
    small_flight: FxMap<(i32, i32), SmallFlight>,
    /// By machine shared by more ranks than its CPUs ([`cpus::SharedCpus::machine`]): its
    /// CPUs and time slice.
    machines: Vec<(u32, f64)>,
    /// By stream: its machine among those (`NONE`: not shared).
    stream_cpu: Vec<u32>,
    /// Scratch space of [`Engine::cpu_wait`].
    computing: Vec<f64>,
}

/// A message that crosses in the latency, on the network ([`Engine::exchange`]).
#[derive(Debug, Clone, Copy)]
struct SmallFlight {
    msg: u32,
    flow: u32,
    /// It took the exchange's latency.
    exchanged: bool,
}

/// A two-member exchange's members in the recorded run ([`Engine::pair_end`]): their
/// entries and when each had last run the progress engine by its entry (NaN: not yet
/// entered), and which have ended.
#[derive(Debug, Clone, Copy)]
struct PairRec {
    entry: [f64; 2],
    seen: [f64; 2],
    ended: u8,
}

impl Default for PairRec {
    fn default() -> Self {
        PairRec {
            entry: [f64::NAN; 2],
            seen: [f64::NAN; 2],
            ended: 0,
        }
    }
}

/// A rank's progress engine. In the replay ([`Engine::handshake_done`]): how many of its
/// streams are in a call that runs it (`active`), when the last such call that ended did
/// (`until`; infinite once a stream of the rank has ended: MPI_Finalize progresses), and
/// the rendezvous messages whose handshake waits for it to run (`pending`). In the
/// recorded run (the grant order, [`Engine::held_behind`]): when its last such call
/// ended (`recorded`). And how it progresses outside its records (`unseen`).
#[derive(Debug, Clone, Default)]
struct Progress {
    active: u32,
    until: f64,
    pending: Vec<u32>,
    recorded: f64,
    unseen: UnseenProgress,
}

/// When a message's send and receive were posted in the recorded run (NaN: not yet), and
/// when its sender had last run the progress engine by its send.
#[derive(Debug, Clone, Copy)]
struct RecordedPosts {
    send: f64,
    seen: f64,
    recv: f64,
}

impl Default for RecordedPosts {
    fn default() -> Self {
        RecordedPosts {
            send: f64::NAN,
            seen: f64::NAN,
            recv: f64::NAN,
        }
    }
}

/// Replays `plan`. `model` is the penalty model of the network (None: contention-free);
/// `costs` gives each collective instance's time; with `contention` false collectives take
/// their contention-free time. With `log` false the timing's `inter` and `log` stay empty
/// (a baseline whose network nobody inspects).
pub fn replay(
    plan: &Plan,
    p2p: &P2p,
    model: Option<&dyn PenaltyModel>,
    costs: &[CollCost],
    contention: bool,
    log: bool,
) -> Timing {
    replay_reusing(plan, p2p, model, costs, contention, log, Timing::default())
}

/// Whether a call of kind `op` runs the library's progress engine (blocking calls and
/// completions do; posting a nonblocking operation does not).
fn progresses(op: Op) -> bool {
    matches!(
        op,
        Op::Send { .. }
            | Op::Recv
            | Op::SendRecv
            | Op::Complete
            | Op::Probe
            | Op::Coll
            | Op::RmaSync
            | Op::RmaFlush
            | Op::RmaFlushLocal
    )
}

/// Whether Open MPI's grant rule holds (see [`Engine::held_behind`]): on runs on Open MPI,
/// whose TCP transport showed it (MPICH's moved opposite messages together in every order).
fn grant_rule(protocol: Protocol) -> bool {
    protocol.library == Some(LibraryFamily::OpenMpi)
}

/// The network of a replay under `model` (None: contention-free) with `p2p`'s factors,
/// for a job on `nodes` nodes. On an Open MPI run the grant rule orders the opposite
/// messages one rank's lead decides ([`Engine::held_behind`]); the reverse factor stays
/// for those whose ranks posted together, which Open MPI's TCP transport moved one after
/// the other at random in jobs on 4 hosts (pair_orders, a barrier apart: 40-75 % of the
/// exchanges) and together in jobs on 2 (pair_skew 9 %; LAMMPS' 88 KB exchanges posted
/// within 25 µs: 1.02 lone times), so an Open MPI run on 2 nodes takes none.
fn network<'a>(
    p2p: &'a P2p,
    model: Option<&'a dyn PenaltyModel>,
    protocol: Protocol,
    nodes: usize,
    log: bool,
) -> Net<'a> {
    let reverse = if grant_rule(protocol) && nodes <= 2 {
        1.0
    } else {
        p2p.reverse
    };
    let net = match (&p2p.wan, model) {
        (Some(c), Some(m)) => {
            Net::new(Some(m)).with_backbone(c.cluster_of_node.clone(), c.crossing.clone())
        }
        _ => Net::new(model),
    }
    .with_reverse(reverse, protocol.eager_inter)
    .with_through(p2p.through);
    let net = match p2p.port_capacity {
        Some(c) => net.with_ports(p2p.inter.beta, c),
        None => net,
    };
    let net = match &p2p.dispersion {
        Some(q) => net.with_dispersion(q),
        None => net,
    };
    if log { net } else { net.without_log() }
}

/// [`replay`] into the arrays of `spare`, a timing its caller no longer needs (of this
/// plan or another): the second replay of a prediction reuses the first's memory.
pub fn replay_reusing(
    plan: &Plan,
    p2p: &P2p,
    model: Option<&dyn PenaltyModel>,
    costs: &[CollCost],
    contention: bool,
    log: bool,
    spare: Timing,
) -> Timing {
    let n = plan.hot.len();
    let nm = plan.msgs.len();
    let store = Batch {
        plan,
        costs,
        t: Timing::blank(plan, spare),
        msg_waiters: vec![[NONE; 2]; nm],
        inst: vec![InstState::default(); plan.instances.len()],
        trees: vec![TreeTimes::default(); plan.instances.len()],
    };
    let mut e = Engine::new(
        store,
        p2p,
        network(p2p, model, plan.protocol, plan.placement.nodes(), log),
        &plan.placement,
        plan.protocol,
        contention,
        (&plan.unseen, &plan.cpus),
    );
    e.conns = vec![VecDeque::new(); plan.connections];
    e.run_all();
    // Nonblocking operations' requests, for those whose completion call was not recorded.
    for g in 0..n {
        if matches!(plan.hot[g].op, Op::Isend { .. } | Op::Irecv | Op::ICol)
            && !e.s.t.start[g].is_nan()
        {
            e.s.t.req_done[g] = e.request_done(g as u32).unwrap_or(e.s.t.end[g]);
        }
    }
    e.s.t.inter = std::mem::take(&mut e.net.inter);
    e.s.t.log = std::mem::take(&mut e.net.log);
    e.s.t
}

/// By WORLD rank, what the replay knows of each from its metadata: how it progresses
/// unseen, and the machine whose CPUs it shares.
type RankTraits<'b> = (&'b [UnseenProgress], &'b [Option<cpus::SharedCpus>]);

impl<'a, S: Store> Engine<'a, S> {
    fn new(
        s: S,
        p2p: &'a P2p,
        net: Net<'a>,
        placement: &'a Placement,
        protocol: Protocol,
        contention: bool,
        ranks: RankTraits,
    ) -> Engine<'a, S> {
        let (unseen, shared) = ranks;
        let streams = s.streams();
        let progress = unseen
            .iter()
            .map(|&unseen| Progress {
                until: f64::NEG_INFINITY,
                recorded: f64::NEG_INFINITY,
                unseen,
                ..Progress::default()
            })
            .collect();
        let mut e = Engine {
            p2p,
            contention,
            net,
            placement,
            protocol,
            s,
            cur: vec![Cursor::default(); streams],
            queue: Queue::default(),
            more_waiters: Vec::new(),
            conns: Vec::new(),
            inst_waiters: HashMap::new(),
            port_free: Vec::new(),
            grant: grant_rule(protocol),
            in_flight: FxMap::default(),
            held: Vec::new(),
            recorded: FxMap::default(),
            pair_rec: FxMap::default(),
            bucket_empty: Vec::new(),
            tree_nodes: Vec::new(),
            tree_entry: Vec::new(),
            tree_times: Vec::new(),
            tree_scratch: tree::Scratch::default(),
            rma_post: vec![(f64::NAN, false); streams],
            progress,
            rdv_matched: FxMap::default(),
            small_flight: FxMap::default(),
            machines: Vec::new(),
            stream_cpu: Vec::new(),
            computing: Vec::new(),
        };
        for c in shared.iter().flatten() {
            let k = c.machine as usize;
            if e.machines.len() <= k {
                e.machines.resize(k + 1, (0, 0.0));
            }
            e.machines[k] = (c.cpus, c.slice);
        }
        e.stream_cpu = (0..streams as u32)
            .map(|s| {
                let r = usize::try_from(e.s.stream_rank(s)).ok();
                r.and_then(|r| shared.get(r).copied().flatten())
                    .map_or(NONE, |c| c.machine)
            })
            .collect();
        for s in 0..streams as u32 {
            if e.s.stream_len(s) == 0 {
                e.cur[s as usize].done = true;
                continue;
            }
            // Its first record is read when the stream first steps (a thread that starts
            // late is not read ahead for).
            e.cur[s as usize].t_op = e.s.stream_start(s).max(0.0);
            e.cur[s as usize].rec = e.s.stream_start(s);
            e.push(e.cur[s as usize].t_op, s);
        }
        e
    }

    /// Replays every stream to its end.
    fn run_all(&mut self) {
        while !self.resume() {}
    }

    /// Replays until the store asks to pause (false) or every stream is at its end (true).
    fn resume(&mut self) -> bool {
        let mut done = Vec::new();
        loop {
            if !self.run(&mut done) {
                return false;
            }
            // Streams still blocked wait on something the trace never provides (a killed
            // run): the earliest one keeps its measured time and the replay goes on.
            let stuck = (0..self.cur.len())
                .filter(|&s| !self.cur[s].done)
                .min_by(|&a, &b| self.cur[a].t_op.total_cmp(&self.cur[b].t_op));
            let Some(s) = stuck else { break };
            self.cur[s].forced = true;
            let t = self.cur[s].t_op.max(self.net.now());
            self.push(t, s as u32);
        }
        self.settle();
        true
    }

    /// Lets the store finish the nonblocking records whose requests are final. (Inlined:
    /// the replay asks at every event, and there is rarely any.)
    #[inline(always)]
    fn settle(&mut self) {
        while let Some(g) = self.s.next_check() {
            self.settle_one(g);
        }
    }

    #[inline(never)]
    fn settle_one(&mut self, g: u32) {
        if self.s.op_ready(g) {
            let r = self.request_done(g).unwrap_or(self.s.end(g));
            self.s.retire_op(g, r);
        }
    }

    fn push(&mut self, t: f64, s: u32) {
        self.queue.push(key(t), s);
    }

    /// Replays until nothing is queued (true) or the store asks to pause (false).
    fn run(&mut self, done: &mut Vec<u32>) -> bool {
        loop {
            self.settle();
            if self.s.pause() {
                return false;
            }
            let tf = self.net.next_finish();
            let (next, fifo) = self.queue.next();
            let ts = match next {
                u64::MAX => f64::INFINITY,
                k => f64::from_bits(k),
            };
            if tf.is_infinite() && ts.is_infinite() {
                return true;
            }
            if tf <= ts {
                // Time moves to `tf` (no stream event is queued before it).
                self.queue.now_at(key(tf));
                self.net.advance(tf, done);
                for &m in done.iter() {
                    self.arrived(m, tf);
                }
                continue;
            }
            let Some(s) = self.queue.take(fifo) else {
                return true;
            };
            let mut now = ts;
            loop {
                self.net.advance(now, done);
                for &m in done.iter() {
                    self.arrived(m, now);
                }
                let Some(t) = self.step(s, now) else { break };
                // The stream's next call comes strictly before every queued event and the
                // network's next finish: it is the event the heap would return next, so it
                // is taken at once instead of pushed and popped (the same order).
                let k = key(t);
                let tn = f64::from_bits(k);
                let first = k < self.queue.next_key();
                if first && tn < self.net.next_finish() {
                    now = tn;
                    self.queue.now_at(k);
                } else {
                    self.push(t, s);
                    break;
                }
            }
        }
    }

    fn wake_msg(&mut self, m: u32, t: f64) {
        let ws = std::mem::replace(self.s.msg_waiters(m), [NONE; 2]);
        for s in ws {
            if s != NONE {
                self.push(t, s);
            }
        }
        if !self.more_waiters.is_empty() {
            let mut k = 0;
            while k < self.more_waiters.len() {
                if self.more_waiters[k].0 == m {
                    let (_, s) = self.more_waiters.swap_remove(k);
                    self.push(t, s);
                } else {
                    k += 1;
                }
            }
        }
    }

    fn wake_inst(&mut self, i: u32, t: f64) {
        if let Some(ws) = self.inst_waiters.remove(&i) {
            for s in ws {
                self.push(t, s);
            }
        }
    }

    /// Starts message `m`'s transfer now if both sides allow it.
    fn maybe_start(&mut self, m: u32) {
        if !self.s.msg_time(m, MsgTime::Matched).is_nan()
            || self.s.msg_time(m, MsgTime::SendPost).is_nan()
        {
            return;
        }
        let msg = self.s.msg(m);
        if msg.rendezvous && self.s.has_recv(m) && self.s.msg_time(m, MsgTime::RecvPost).is_nan() {
            return;
        }
        if self.grant && msg.rendezvous && self.s.has_recv(m) && !self.handshake_done(m, &msg) {
            return;
        }
        self.s.set_msg_time(m, MsgTime::Matched, self.net.now());
        // Messages between two ranks share one connection and leave in order: a message
        // enters the network when the one before it on its connection has arrived.
        let c = msg.conn as usize;
        if self.conns.len() <= c {
            self.conns.resize(c + 1, VecDeque::new());
        }
        let hold = self.held_behind(m, &msg);
        if let Some(m1) = hold {
            self.held.push((m1, m));
        }
        if self.grant_kind(&msg) {
            let q = self
                .in_flight
                .entry((msg.src_rank, msg.dst_rank))
                .or_default();
            q.push_back(m);
        }
        let q = &mut self.conns[c];
        q.push_back(m);
        if q.len() == 1 && hold.is_none() {
            self.launch(m);
        }
        self.wake_msg(m, self.net.now());
    }

    /// Whether rendezvous message `m` of an Open MPI run, both sides posted, has its
    /// handshake done now; if not, it waits in the list of the rank whose progress
    /// engine it needs ([`Engine::pump`] retries it). Open MPI's TCP transport moves a rendezvous message
    /// only while its ranks run the progress engine (a blocking call or a completion;
    /// posting a nonblocking operation does not): the receiver reads the request and
    /// grants it in the first such call it makes after the send's post, the sender reads
    /// the grant and writes the data in the first it makes after that. Two ranks that
    /// post an `MPI_Irecv` and an `MPI_Isend` of 72 KB and compute 20 ms before
    /// `MPI_Waitall` spend one transfer in it, 6.1 ms, at 32 KB (eager) 0.14 ms
    /// (`examples/progress_rdv.c`); PETSc's 70 KB halo messages in DOLFINx likewise.
    /// Within a node the shared-memory transport copies the message when the receiver
    /// matches it, in the progress engine too (4 MiB: 0.70 ms in the wait). Each
    /// step is taken at the replay's time, the latencies left to the transfer's. A rank
    /// that progresses where its records do not show it ([`UnseenProgress`]: polls the
    /// trace does not place, a progress thread) counts as progressing throughout, and a
    /// what-if with a progress thread (`async_progress`) lets every message go.
    fn handshake_done(&mut self, m: u32, msg: &Msg) -> bool {
        if self.p2p.async_progress {
            return true;
        }
        let now = self.net.now();
        if !self.rdv_matched.contains_key(&m) {
            let posted = self.s.msg_time(m, MsgTime::SendPost);
            if !self.progressed_since(msg.dst_rank, posted) {
                self.wait_progress(msg.dst_rank, m);
                return false;
            }
            self.rdv_matched.insert(m, now);
        }
        if !self.progressed_since(msg.src_rank, now) {
            self.wait_progress(msg.src_rank, m);
            return false;
        }
        self.rdv_matched.remove(&m);
        true
    }

    /// Rank `r` ran the progress engine at some time from `t` to now (or is in a call
    /// that runs it, or polls unseen).
    fn progressed_since(&self, r: i32, t: f64) -> bool {
        self.rank_index(r).is_none_or(|i| {
            let p = &self.progress[i];
            p.unseen.polls || p.unseen.thread || p.active > 0 || p.until >= t
        })
    }

    fn wait_progress(&mut self, r: i32, m: u32) {
        if let Some(i) = self.rank_index(r) {
            self.progress[i].pending.push(m);
        }
    }

    /// WORLD rank `r`'s index in [`Engine::progress`], if it has one.
    fn rank_index(&self, r: i32) -> Option<usize> {
        usize::try_from(r).ok().filter(|&i| i < self.progress.len())
    }

    /// Rank `r` runs the progress engine now: the handshakes waiting for it go on.
    fn pump(&mut self, r: usize) {
        let Some(p) = self.progress.get_mut(r) else {
            return;
        };
        if p.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut p.pending);
        for &m in &pending {
            self.maybe_start(m);
        }
        // The list's allocation back, for the next (what waits again is in the new one).
        let mut pending = pending;
        pending.clear();
        let p = &mut self.progress[r];
        if p.pending.is_empty() {
            p.pending = pending;
        }
    }

    /// The opposite message whose arrival rendezvous message `m` waits for. Open MPI's TCP
    /// transport sends a rendezvous message's request (no data), the receiver grants it once
    /// (a put request) and the sender then writes the whole message as one fragment; a
    /// connection writes its fragments strictly in order, a grant queued behind the data
    /// before it; and a rank reads a request only while it runs the progress engine (in a
    /// blocking call or a completion) — ob1 and the TCP BTL of Open MPI 4.1
    /// (docs/accuracy.md, ninth session). So `m`, from B to A, waits for the last of A's
    /// messages to B in flight that B granted before sending its own request: B posted its
    /// receive before its send, and had run the progress engine after A's request could
    /// have arrived (A's post plus a latency) and before its send. Those leave A first, in
    /// order, and A's grant for `m` behind them (hpcc's ring at 2 ranks, two messages each
    /// way back to back: 4.0 lone times a step, `tests/programs/pair_two.c`). Decided on
    /// the recorded run's times: in the replay's own, two ranks that finish an exchange
    /// together start the next together and one that leads keeps leading, so it would
    /// settle into one way or the other whatever the run did (three recordings of LAMMPS
    /// at 2 ranks: exchanges posted 26 µs apart, median, all together; 4-5 ms apart, one
    /// after the other).
    fn held_behind(&self, m: u32, msg: &Msg) -> Option<u32> {
        if !self.grant_kind(msg) {
            return None;
        }
        let mine = *self.recorded.get(&m)?;
        let alpha = self.p2p.hockney(msg.dst_node, msg.src_node).alpha;
        let granted = |a: &u32| {
            self.recorded
                .get(a)
                .is_some_and(|back| back.recv <= mine.send && mine.seen > back.send + alpha)
        };
        self.in_flight
            .get(&(msg.dst_rank, msg.src_rank))?
            .iter()
            .rev()
            .find(|a| granted(a))
            .copied()
    }

    /// Whether the grant rule follows message `msg`: an inter-node rendezvous message of
    /// a run the rule holds for.
    fn grant_kind(&self, msg: &Msg) -> bool {
        self.grant && msg.rendezvous && msg.src_node != msg.dst_node
    }

    /// Bytes Open MPI's TCP transport sends with the request of packed rendezvous message
    /// `msg` between nodes, before the receiver matched it: its first eager-limit bytes
    /// (ob1 sends a datatype not contiguous as a rendezvous whose first fragment carries
    /// data; a contiguous one as a request alone, then the whole by RDMA-style puts). The
    /// same 196,608-byte vector between two emulated hosts at 100 Mbit/s, the receive
    /// posted 20 ms late: received 31.2 ms after the send's entry, where as bytes 36.6
    /// (11 ms of its 16.5 after the match); its send returns at 5.5 ms when the receive
    /// is posted at once (the head's 64 KiB on the wire, then the acknowledgement).
    fn packed_head(&self, msg: &Msg) -> Option<u64> {
        (msg.packed
            && msg.rendezvous
            && self.grant
            && msg.src_node != msg.dst_node
            && msg.src_rank >= 0)
            .then(|| self.protocol.eager_inter.min(msg.bytes))
    }

    /// Puts message `m` on the network now.
    fn launch(&mut self, m: u32) {
        let mut msg = self.s.msg(m);
        if let Some(head) = self.packed_head(&msg) {
            // The head went with the request, alone on the wire (an approximation: it
            // shares no port), as far as the time since the send's post allowed.
            let h = self.p2p.hockney(msg.src_node, msg.dst_node);
            let since = self.net.now() - self.s.msg_time(m, MsgTime::SendPost) - h.alpha;
            let sent = if h.beta > 0.0 {
                (since / h.beta).clamp(0.0, head as f64) as u64
            } else {
                head
            };
            let full = msg.bytes;
            msg.bytes = (full - sent).max(1);
            // Its bytes crossed too: the traffic reported counts the whole message.
            self.net
                .carried(msg.src_node, msg.dst_node, full.saturating_sub(msg.bytes));
        }
        // A message that waited for another on its connection is corked into its segments.
        let corked = self.net.now() > self.s.msg_time(m, MsgTime::Matched);
        let mut tref = self.lone_time(&msg, corked);
        if !msg.rendezvous {
            // Queued behind the message before it on its connection, an eager message
            // could leave as soon as that one's bytes had: its latency overlaps the other's
            // (TCP pipelines a train of small messages; ABySS sends them 7 µs apart, a
            // latency of 14 µs). A rendezvous message's data waits for its handshake.
            // Not its headers' time on the wire, though: each message of a train adds
            // at least that (Meep's 15 messages of 8 to 2,224 bytes a step from one rank
            // to the next; a train of 15 such messages at 100 Mbit/s, a core a rank, was
            // predicted 6.0 % short without it, 1.9 % with it).
            let queued = self.net.now() - self.s.msg_time(m, MsgTime::Matched);
            let h = self.p2p.hockney(msg.src_node, msg.dst_node);
            let gap = if msg.src_node == msg.dst_node {
                0.0
            } else {
                self.p2p.wire_header * h.beta
            };
            tref -= queued.clamp(0.0, (h.alpha - gap).max(0.0));
        }
        let small = self.small(&msg);
        let exchanged = small && self.exchange(&msg);
        if exchanged {
            tref += self.p2p.exchange;
        }
        self.s.set_msg_time(m, MsgTime::Tref, tref);
        self.s.set_msg_time(m, MsgTime::FlowStart, self.net.now());
        let owner = self.s.flow_owner(m);
        let posting = if msg.src_rank >= 0 && msg.dst_rank >= 0 {
            net::Posting {
                src_rank: msg.src_rank as u32,
                dst_rank: msg.dst_rank as u32,
                send_post: self.s.msg_time(m, MsgTime::SendPost),
                recv_post: self.s.msg_time(m, MsgTime::RecvPost),
            }
        } else {
            net::Posting::UNKNOWN
        };
        // The network gives the message back when the flow finishes.
        let f = self.net.add_tagged(
            msg.src_node,
            msg.dst_node,
            msg.bytes,
            tref,
            owner,
            m,
            posting,
        );
        self.s.set_flow(m, f);
        if small {
            self.small_flight.insert(
                (msg.src_rank, msg.dst_rank),
                SmallFlight {
                    msg: m,
                    flow: f,
                    exchanged,
                },
            );
        }
    }

    /// Whether message `msg` is one [`Engine::exchange`] looks at: eager, between nodes,
    /// crossing in the latency, where the profile measured an exchange's extra latency.
    fn small(&self, msg: &Msg) -> bool {
        self.p2p.exchange > 0.0
            && !msg.rendezvous
            && msg.src_node != msg.dst_node
            && msg.src_rank != msg.dst_rank
            && self
                .p2p
                .hockney(msg.src_node, msg.dst_node)
                .in_latency(msg.bytes as f64)
    }

    /// Whether message `msg`, leaving now and crossing in the latency ([`Engine::small`]),
    /// crosses the reverse message between the same two ranks on the network (an entry
    /// of `small_flight`, which [`Engine::arrived`] removes): then both take the
    /// exchange's extra latency ([`Profile::exchange`]), the one already under way from
    /// now. Two ranks of the
    /// emulated cluster that send each other 8 bytes at once take 10.3-10.7 µs, where one
    /// message alone takes 7.2-7.8 (medians; `MPI_Sendrecv` against a ping-pong's half
    /// round trip): OpenFOAM's halo exchanges and two-member all-reduces measured 11-14 µs
    /// at 2 ranks, ExaML's one-way reductions and broadcasts the ping-pong's latency.
    fn exchange(&mut self, msg: &Msg) -> bool {
        let Some(back) = self.small_flight.get_mut(&(msg.dst_rank, msg.src_rank)) else {
            return false;
        };
        if !back.exchanged {
            back.exchanged = true;
            let (m, flow) = (back.msg, back.flow);
            let x = self.p2p.exchange;
            self.net.extend(flow, x);
            // Its time alone grows as much: the latency is not contention.
            let tref = self.s.msg_time(m, MsgTime::Tref);
            self.s.set_msg_time(m, MsgTime::Tref, tref + x);
        }
        true
    }

    /// Time of message `msg` alone on its path, leaving now. Where the link has a burst
    /// allowance (a shaper's token bucket, [`Hockney::lone_bytes`]), the source's out
    /// bucket and the destination's in bucket refill at the link's rate from when they
    /// were last empty; a message that fits in what both hold crosses in the latency
    /// alone and takes its bytes from them; a larger one takes what they hold at the
    /// machine's pace (`burst_gamma`) and pays β for the rest, and leaves them empty when
    /// its last byte has left. Messages that follow each other closely drain the buckets:
    /// ABYSS's 61-byte messages, 7 µs apart, pay β for some, and so does the answer of an
    /// exchange sent as soon as the request arrived (its bucket emptied by its previous
    /// answer's last bytes: LIGGGHTS's 1,856 bytes took 130-155 µs, not α). A message
    /// takes its headers from the buckets besides its bytes: a corked one
    /// [`P2p::wire_header`], one that leaves alone TCP/IP/Ethernet's too
    /// ([`LONE_FRAME_HEADER`]); and the segments it is cut into are acknowledged on the
    /// reverse path ([`ACK_BYTES`] every two), which takes from the destination's out
    /// bucket and the source's in bucket (Meep's trains both ways at 2 ranks).
    fn lone_time(&mut self, msg: &Msg, corked: bool) -> f64 {
        let h = self.p2p.hockney(msg.src_node, msg.dst_node);
        let bytes = msg.bytes as f64;
        if h.burst <= 0.0 || msg.src_node == msg.dst_node || h.beta <= 0.0 {
            return h.time_bytes(bytes);
        }
        let (src, dst) = (msg.src_node as usize, msg.dst_node as usize);
        let need = src.max(dst) + 1;
        if self.bucket_empty.len() < need {
            self.bucket_empty
                .resize(need, (f64::NEG_INFINITY, f64::NEG_INFINITY));
        }
        let now = self.net.now();
        let (out, inn) = (self.bucket_empty[src].0, self.bucket_empty[dst].1);
        let held = |empty: f64| ((now - empty) / h.beta).clamp(0.0, h.burst);
        let (held_out, held_in) = (held(out), held(inn));
        let mut wire = bytes + self.p2p.wire_header;
        if !corked {
            wire += LONE_FRAME_HEADER;
        }
        let held_both = held_out.min(held_in);
        let fits = wire <= held_both;
        let (free, drained) = if fits { (wire, 0.0) } else { (0.0, wire) };
        // A bucket is empty again once the bytes paid for have left, less what it keeps.
        let after =
            |empty: f64, held: f64| empty.max(now) + h.beta * drained - (held - free) * h.beta;
        self.bucket_empty[src].0 = after(out, held_out);
        self.bucket_empty[dst].1 = after(inn, held_in);
        // The acknowledgements, on the reverse path: a bucket in debt stays so.
        let acks = ACK_BYTES * (wire / (2.0 * SEGMENT_BYTES)).ceil();
        let ack = |empty: f64| empty.max(now - h.burst * h.beta) + acks * h.beta;
        self.bucket_empty[dst].0 = ack(self.bucket_empty[dst].0);
        self.bucket_empty[src].1 = ack(self.bucket_empty[src].1);
        // (A lone message's headers are in α, as the ping-pong measured it.)
        if fits {
            h.alpha
        } else {
            h.alpha + h.burst_gamma * held_both.min(bytes) + h.beta * (bytes - held_both).max(0.0)
        }
    }

    /// Message `m` arrived at `t`: wake who waits for it, start the next on its connection.
    fn arrived(&mut self, m: u32, t: f64) {
        let msg = self.s.msg(m);
        self.s.set_msg_time(m, MsgTime::Arrive, t);
        if let Some(f) = self.small_flight.get(&(msg.src_rank, msg.dst_rank))
            && f.msg == m
        {
            self.small_flight.remove(&(msg.src_rank, msg.dst_rank));
        }
        let q = &mut self.conns[msg.conn as usize];
        q.pop_front();
        let next = q.front().copied();
        if self.grant_kind(&msg) {
            if let Some(q) = self.in_flight.get_mut(&(msg.src_rank, msg.dst_rank))
                && let Some(k) = q.iter().position(|&a| a == m)
            {
                q.remove(k);
            }
            self.recorded.remove(&m);
        }
        let mut k = 0;
        while k < self.held.len() {
            if self.held[k].0 == m {
                // Granted now: the held message's send returns from here (see
                // `rendezvous_send_done`), its data leaves when its connection is free.
                let (_, h) = self.held.swap_remove(k);
                self.s.set_msg_time(h, MsgTime::Matched, t);
                let c = self.s.msg(h).conn as usize;
                if self.conns[c].front() == Some(&h) {
                    self.launch(h);
                }
                self.wake_msg(h, t);
            } else {
                k += 1;
            }
        }
        if let Some(n) = next
            && !self.held.iter().any(|&(_, h)| h == n)
        {
            self.launch(n);
        }
        self.wake_msg(m, t);
    }

    /// Steps stream `s` at `now`; returns when its next call is due if it finished the
    /// current one (the caller queues it).
    fn step(&mut self, s: u32, now: f64) -> Option<f64> {
        let c = self.cur[s as usize];
        // A stale wake-up (from a wait the stream left when it was forced on) is early: the
        // stream's own event at `t_op` comes later.
        if c.done || (!c.started && now < c.t_op) {
            return None;
        }
        let (g, h) = match c.hot {
            Some(x) => x,
            None => {
                let Some(g) = self.s.stream_record(s, c.pos) else {
                    self.cur[s as usize].done = true;
                    return None;
                };
                (g, self.s.hot(g))
            }
        };
        if !c.started {
            self.cur[s as usize].started = true;
            // Its work starts at `t_op`, `cold` after it was entered.
            self.begin(g, h, c.t_op, c.t_op - c.cold, c.rec);
        }
        let end = if c.forced {
            self.s.set_reason(g, Reason::Unresolved);
            Some(c.t_op - c.cold + h.op_dur)
        } else {
            match self.finish_time(s, g, h, c.t_op) {
                Ok(e) => Some(e),
                Err(Block::Msg(m)) => {
                    self.cur[s as usize].blocked = true;
                    let w = self.s.msg_waiters(m);
                    if !w.contains(&s) {
                        // The sender's and the receiver's streams; any other (threads
                        // sharing a request) waits in the overflow list.
                        match w.iter().position(|&x| x == NONE) {
                            Some(k) => w[k] = s,
                            None => self.more_waiters.push((m, s)),
                        }
                    }
                    None
                }
                Err(Block::Inst(i)) => {
                    self.cur[s as usize].blocked = true;
                    self.inst_waiters.entry(i).or_default().push(s);
                    None
                }
            }
        };
        let end = end?;
        let mut end = end.max(c.t_op);
        if self.cur[s as usize].blocked && !c.forced && self.stream_cpu[s as usize] != NONE {
            end += self.cpu_wait(s, end);
        }
        self.s.set_end(g, end);
        match h.op {
            Op::Rma => {
                let (me, peer) = (self.s.rank_of(g), self.s.peer_of(g));
                let remote = peer < 0 || self.placement.node(me) != self.placement.node(peer);
                let p = &mut self.rma_post[s as usize];
                if p.0.is_nan() {
                    p.0 = c.t_op;
                }
                p.1 |= remote;
            }
            Op::RmaSync | Op::RmaFlush | Op::RmaFlushLocal => {
                self.rma_post[s as usize] = (f64::NAN, false);
            }
            _ => {}
        }
        if self.grant
            && progresses(h.op)
            && let Some(i) = self.rank_index(self.s.rank_of(g))
        {
            let p = &mut self.progress[i];
            p.recorded = p.recorded.max(c.rec + h.op_dur);
            p.active = p.active.saturating_sub(1);
            p.until = p.until.max(end);
        }
        let len = self.s.stream_len(s);
        let cur = &mut self.cur[s as usize];
        cur.pos += 1;
        cur.started = false;
        cur.forced = false;
        cur.blocked = false;
        cur.last_end = end;
        if cur.pos >= len {
            cur.done = true;
            self.stream_ended(g);
            return None;
        }
        let pos = cur.pos;
        let Some(ng) = self.s.stream_record(s, pos) else {
            self.cur[s as usize].done = true;
            self.stream_ended(g);
            return None;
        };
        let next = self.s.hot(ng);
        let cur = &mut self.cur[s as usize];
        cur.hot = Some((ng, next));
        cur.t_op = end + next.gap * self.p2p.compute;
        cur.rec = c.rec + h.op_dur + next.gap;
        let cold = self.cold(ng, next);
        let cur = &mut self.cur[s as usize];
        cur.cold = cold;
        cur.t_op += cold;
        let (t_op, rec_next) = (cur.t_op, cur.rec);
        if self.grant && next.polled_before {
            // It polled in the gap: progressing throughout, as far as the replay knows
            // (and the recorded run's grant order, up to the next call's entry).
            if let Some(i) = self.rank_index(self.s.rank_of(g)) {
                let p = &mut self.progress[i];
                p.recorded = p.recorded.max(rec_next);
                p.until = p.until.max(t_op);
                self.pump(i);
            }
        }
        Some(t_op.max(now))
    }

    /// How long stream `s`, whose call waited for another rank and could end at `t`, then
    /// waits for a CPU of its machine: the other streams there that compute at `t` keep
    /// theirs until they enter MPI, or a time slice ([`cpus::cpu_wait`]).
    fn cpu_wait(&mut self, s: u32, t: f64) -> f64 {
        let m = self.stream_cpu[s as usize];
        self.computing.clear();
        for (k, c) in self.cur.iter().enumerate() {
            if k != s as usize
                && self.stream_cpu[k] == m
                && !c.done
                && !c.started
                && c.last_end <= t
                && c.t_op > t
            {
                self.computing.push(c.t_op - t);
            }
        }
        let (c, slice) = self.machines[m as usize];
        cpus::cpu_wait(&mut self.computing, c, slice)
    }

    /// When rank `r` had last run the progress engine, in the recorded run, by its call
    /// entered at `rec`: the end of its last blocking or completion call (or a gap it
    /// polled through), or `rec` itself where the library progressed on a thread.
    fn seen_by(&self, r: i32, rec: f64) -> f64 {
        match self.rank_index(r).map(|i| &self.progress[i]) {
            Some(p) if p.unseen.thread => rec,
            Some(p) => p.recorded,
            None => f64::NEG_INFINITY,
        }
    }

    /// The stream of record `g`, its last, has ended: its rank's handshakes go on
    /// (`MPI_Finalize` runs the progress engine, and nothing it posted waits for more).
    fn stream_ended(&mut self, g: u32) {
        if let Some(i) = self.rank_index(self.s.rank_of(g)) {
            self.progress[i].until = f64::INFINITY;
            self.pump(i);
        }
    }

    /// What blocking call `g` pays beyond its model for the time its rank spent outside
    /// MPI before it ([`Profile::cold_curve`] at its recorded gap): a call whose work
    /// crosses nodes, after a gap in which the rank did not poll. A nonblocking post's
    /// measured time has it already, and shared memory pays little (one node, 50 ms
    /// outside MPI: a send 0.2 -> 5.3 µs, where TCP between hosts paid 50-80).
    fn cold(&self, g: u32, h: Hot) -> f64 {
        let Some(curve) = &self.p2p.cold_call else {
            return 0.0;
        };
        if h.gap <= 0.0 || h.polled_before {
            return 0.0;
        }
        let inter = |m: u32| {
            m != NONE && {
                let msg = self.s.msg(m);
                msg.src_node != msg.dst_node
            }
        };
        let crosses = |x: Hot| {
            inter(x.msg_out)
                || inter(x.msg_in)
                || (x.inst_of != NONE && self.s.inst(x.inst_of).multi_node)
        };
        let remote = match h.op {
            Op::Send { .. } | Op::Recv | Op::SendRecv | Op::Coll => crosses(h),
            Op::Probe => inter(self.s.probe_msg(g)),
            Op::Complete => {
                let mut k = 0;
                let mut any = false;
                while let Some(nb) = self.s.completed(g, k) {
                    any |= crosses(self.s.hot(nb));
                    k += 1;
                }
                any
            }
            _ => false,
        };
        if remote {
            curve.eval(h.gap * self.p2p.compute)
        } else {
            0.0
        }
    }

    /// Side effects of entering call `g` at `entered`, its work starting at `t`: posts and
    /// collective entries. (The start it records, which wait attribution and the
    /// collectives' entry orders read, is `entered`: the time it was called.)
    fn begin(&mut self, g: u32, h: Hot, t: f64, entered: f64, rec: f64) {
        self.s.set_start(g, entered);
        if self.grant
            && progresses(h.op)
            && let Some(i) = self.rank_index(self.s.rank_of(g))
        {
            self.progress[i].active += 1;
            self.pump(i);
        }
        let (out, inn) = (h.msg_out, h.msg_in);
        if out != NONE {
            self.s.set_msg_time(out, MsgTime::SendPost, t);
            let msg = self.s.msg(out);
            if self.grant_kind(&msg) {
                let seen = self.seen_by(msg.src_rank, rec);
                let p = self.recorded.entry(out).or_default();
                (p.send, p.seen) = (rec, seen);
            }
            self.maybe_start(out);
            self.wake_msg(out, t);
        }
        if inn != NONE {
            self.s.set_msg_time(inn, MsgTime::RecvPost, t);
            let msg = self.s.msg(inn);
            // A synchronous sender of an eager message may wait for this post
            // ([`Engine::eager_send_done`]).
            if !msg.rendezvous {
                self.wake_msg(inn, t);
            }
            if self.grant_kind(&msg) {
                self.recorded.entry(inn).or_default().recv = rec;
            }
            self.maybe_start(inn);
        }
        let i = h.inst_of;
        if i != NONE {
            self.s.enter_inst(i, t);
            if self.pair_exchange(i)
                && let Some(k) = self.s.member_index(i, g).filter(|&k| k < 2)
            {
                let seen = self.seen_by(self.s.rank_of(g), rec);
                let p = self.pair_rec.entry(i).or_default();
                p.entry[k] = rec;
                p.seen[k] = seen;
            }
            if self.root_of(i) == Some(g) && self.buffered_linear(i) {
                // The root's data leaves after what its earlier such collectives left
                // in the kernel (the port is FIFO across them).
                let node = self.placement.node(self.s.rank_of(g)).unwrap_or(0) as usize;
                if self.port_free.len() <= node {
                    self.port_free.resize(node + 1, f64::NEG_INFINITY);
                }
                let start = t.max(self.port_free[node]);
                self.s.set_inst_data(i, start);
                self.port_free[node] = start + self.cost(i).0;
            }
            self.wake_inst(i, t);
        }
    }

    /// The root's record of instance `i`, if it is rooted and the root was found.
    fn root_of(&self, i: u32) -> Option<u32> {
        self.s.inst(i).root_g
    }

    /// Instance `i` is a linear broadcast or scatter between nodes whose blocks go by
    /// rendezvous and fit in the socket buffer. Open MPI's linear broadcast posts all its
    /// sends at once and its linear scatter's blocking sends each return once their data
    /// is in the kernel, so the flows share the root's port and end together, and the root
    /// returns once the last member has matched, while its data is still leaving (the
    /// demo's 256 KiB broadcast at 4 hosts: members measured 60–66 ms, all at the port's
    /// time for the three blocks; the root 0.5 ms).
    fn buffered_linear(&self, i: u32) -> bool {
        let inst = self.s.inst(i);
        coll_shape(inst.kind) == CollShape::FromRoot
            && inst.root.is_some()
            && inst.multi_node
            && inst.n >= 2
            && inst.block >= self.protocol.eager_inter
            && inst.block <= self.p2p.socket_buffer
            && self.s.coll_cost(i).is_some_and(|c| c.serial)
    }

    /// Instance `i` is an exchange between two members on two nodes whose blocks go by
    /// rendezvous on a run the grant rule holds for: Open MPI 4.1's all-gathers and
    /// all-to-alls of two processes, its all-reduce and reduce-scatter (recursive
    /// doubling, or a ring of two) exchange by `MPI_Sendrecv`'s receive-then-send, its
    /// all-to-allv posts both receives, then both sends. Each member's request reaches
    /// the other, which grants it when it runs the progress engine; a grant queued
    /// behind its own data leaves after it ([`Engine::held_behind`], the same rule for
    /// point-to-point messages). So where the later member (in the recorded run) had run
    /// the progress engine after the earlier's request came in (its entry plus a
    /// latency) and before its own entry (in a blocking call or a completion, or polling
    /// in the gap), it granted the earlier's block first: it has that block after one
    /// exchange's time, while its own leaves after it (its send returns once the data is
    /// in the socket buffer), and the earlier member has its block after both. Otherwise
    /// (it computed until it entered) both blocks move at once. DOLFINx at 2 ranks on 2
    /// hosts, 470 KB `MPI_Allgatherv`s: the later member 0.040 s, the earlier 0.079 s
    /// after the later's entry, one lone message 0.0396 s. At 2 ranks on 2 hosts
    /// (docs/accuracy.md, eighteenth session), from 64 KB: GROMACS's `MPI_Alltoall`s
    /// one after the other in 43 of 49 exchanges where the later member had seen the
    /// request, together in 941 of 953 where not; CP2K's `MPI_Alltoallv`s 77 of 114 and
    /// 384 of 422 (from 1 MB: 56 of 56 and 195 of 199 with a 60 µs latency); DOLFINx's
    /// `MPI_Allgatherv`s 40 of 40.
    fn pair_exchange(&self, i: u32) -> bool {
        let inst = self.s.inst(i);
        self.grant
            && inst.members == 2
            && inst.multi_node
            && inst.block >= self.protocol.eager_inter
            && matches!(
                inst.kind,
                CallKind::Allgather
                    | CallKind::Allgatherv
                    | CallKind::Allreduce
                    | CallKind::ReduceScatter
                    | CallKind::ReduceScatterBlock
                    | CallKind::Alltoall
                    | CallKind::Alltoallv
            )
    }

    /// End of member `g` of two-member exchange `i` ([`Engine::pair_exchange`]) once
    /// both have entered, the last at `last`, the exchange taking `total`.
    fn pair_end(&mut self, i: u32, g: u32, last: f64, total: f64) -> f64 {
        let Some(k) = self.s.member_index(i, g).filter(|&k| k < 2) else {
            return last + total;
        };
        let Some(e) = self.pair_rec.get_mut(&i) else {
            return last + total;
        };
        let (rec, other) = (e.entry[k], e.entry[1 - k]);
        let (seen, other_seen) = (e.seen[k], e.seen[1 - k]);
        e.ended |= 1 << k;
        if e.ended == 3 {
            self.pair_rec.remove(&i);
        }
        let alpha = self.p2p.inter.alpha;
        let block = self.s.inst(i).block;
        if rec < other && other_seen > rec + alpha {
            // Entered first: its block waits behind its own.
            last + 2.0 * total
        } else if other < rec && seen > other + alpha {
            // Entered last: the other's block first; its own send returns once all but
            // a socket buffer's worth has left.
            let unbuffered = block.saturating_sub(self.p2p.socket_buffer) as f64;
            last + total + self.p2p.inter.beta * unbuffered
        } else {
            // Together: both blocks move at once (as opposite messages posted together
            // between two nodes do).
            last + total
        }
    }

    /// Instance `i` is a scan or an exclusive scan that Open MPI runs as a chain (its
    /// `basic` component's linear algorithm, and libnbc's for the nonblocking ones): each
    /// member receives the prefix from the one before it, adds its own and sends it on,
    /// so a member waits only for those before it. DOLFINx at 2 ranks: rank 0's
    /// `MPI_Exscan` returned in 0.1 ms while rank 1 entered 22 ms later; the replay had
    /// it wait for rank 1. Eager blocks only (a rendezvous block would wait for the next
    /// member too), and up to [`TREE_WITH_ENTRIES`] members (each member reads the
    /// entries before it). MPICH runs recursive doubling, where every member waits for all.
    fn linear_prefix(&self, i: u32, eager: bool) -> bool {
        let inst = self.s.inst(i);
        self.grant
            && eager
            && inst.kind == CallKind::Scan
            && inst.members >= 2
            && inst.members <= TREE_WITH_ENTRIES
    }

    /// End of member `g` (entered at `t0`) of a chained scan ([`Engine::linear_prefix`]):
    /// member j has the prefix at `max(its entry, member j−1's + step)`, member 0 at its
    /// entry; then it sends on (`send` a local send, the last member `recv` a copy).
    fn prefix_end(
        &self,
        i: u32,
        g: u32,
        t0: f64,
        step: f64,
        send: f64,
        recv: f64,
    ) -> Result<f64, Block> {
        let inst = self.s.inst(i);
        let Some(k) = self.s.member_index(i, g) else {
            return Err(Block::Inst(i));
        };
        // (Before member 0, nothing: −∞ + step stays −∞.)
        let mut have = f64::NEG_INFINITY;
        for j in 0..k {
            let e = self.s.member_start(i, j);
            if e.is_nan() {
                return Err(Block::Inst(i));
            }
            have = e.max(have + step);
        }
        let have = t0.max(have + step);
        Ok(have + if k + 1 < inst.members { send } else { recv })
    }

    fn cost(&self, i: u32) -> (f64, f64) {
        let c = self.s.coll_cost(i).unwrap_or_default();
        let total = if self.contention { c.model_s } else { c.free_s };
        (total, c.step_s)
    }

    /// When call `g`, entered at `t0`, ends; or what it is blocked on.
    fn finish_time(&mut self, s: u32, g: u32, h: Hot, t0: f64) -> Result<f64, Block> {
        let arrived = |m: u32| -> Result<f64, Block> {
            let a = self.s.msg_time(m, MsgTime::Arrive);
            if a.is_nan() {
                Err(Block::Msg(m))
            } else {
                Ok(a)
            }
        };
        match h.op {
            Op::Send { .. } => {
                let m = h.msg_out;
                if m == NONE {
                    // To a process of another MPI world (a spawned or connected one, over
                    // an intercommunicator): no model of its side; measured time kept.
                    if self.s.peer_of(g) == crate::trace::UNKNOWN_RANK {
                        self.s.set_reason(g, Reason::Unmatched);
                        return Ok(t0 + h.op_dur);
                    }
                    return Ok(t0);
                }
                let msg = self.s.msg(m);
                if msg.rendezvous {
                    self.rendezvous_send_done(m, t0)
                } else {
                    self.eager_send_done(h.op, m, t0 + self.send_overhead(m))
                }
            }
            Op::Isend { .. } | Op::Irecv | Op::ICol | Op::Rma => Ok(t0 + h.op_dur),
            Op::RmaSync | Op::RmaFlush | Op::RmaFlushLocal => {
                let bytes = self.s.rma_bytes(g);
                let (me, peer) = (self.s.rank_of(g), self.s.peer_of(g));
                let placement = self.placement;
                // Without a target (MPI_Win_flush_all, MPI_Win_unlock_all...), the worst
                // path from this rank's node: to another node where the job has one,
                // within the node on one node.
                let other = |a: u32| {
                    if placement.nodes() > 1 {
                        u32::from(a == 0)
                    } else {
                        a
                    }
                };
                // A synchronisation without a target whose operations all went to this
                // rank's node: within the node (NWChem's task counter on rank 0, read by
                // rank 0 itself, then `MPI_Win_flush_local_all`).
                let (post, remote) = self.rma_post[s as usize];
                let (a, b) = match (placement.node(me), placement.node(peer)) {
                    (Some(a), Some(b)) if peer >= 0 => (a, b),
                    (Some(a), _) if !post.is_nan() && !remote => (a, a),
                    (Some(a), _) => (a, other(a)),
                    _ => (0, other(0)),
                };
                // The operations' data moves from their first post, as a nonblocking
                // send's does: MPICH completes a `MPI_Get_accumulate` within its own call
                // (a round trip, in that call's time), and the flush after it has nothing
                // left to wait for (NWChem under MPICH: 0.56 µs measured, a transfer
                // predicted before).
                // (NaN, no operation since the last synchronisation: from `t0`.)
                let from = post.min(t0);
                Ok((from + self.p2p.hockney(a, b).time_bytes(bytes as f64)).max(t0))
            }
            Op::Recv => {
                let m = h.msg_in;
                if m == NONE {
                    // (A source of another MPI world, or MPI_ANY_SOURCE the layer could
                    // not resolve, is UNKNOWN_RANK: unmatched too.)
                    let peer = self.s.peer_of(g);
                    if peer >= 0 || peer == crate::trace::UNKNOWN_RANK {
                        self.s.set_reason(g, Reason::Unmatched);
                        return Ok(t0 + h.op_dur);
                    }
                    return Ok(t0);
                }
                let a = arrived(m)?;
                let msg = self.s.msg(m);
                if !msg.rendezvous && a <= t0 {
                    // Already there: the receive copies it out. Its fixed overhead was paid
                    // by the call that found it (Ray's `MPI_Iprobe`: 0.1 µs receives after
                    // the probe, predicted at 5.5 µs each before).
                    let fixed = self.p2p.local_cost(0, msg.src_node == msg.dst_node, false);
                    return Ok(t0 + (self.recv_overhead(m) - fixed).max(0.0));
                }
                Ok(a.max(t0 + self.recv_overhead(m)))
            }
            Op::SendRecv => {
                let mut end = t0;
                let out = h.msg_out;
                if out != NONE && self.s.msg(out).rendezvous {
                    end = end.max(arrived(out)?);
                }
                let inn = h.msg_in;
                if inn != NONE {
                    end = end.max(arrived(inn)?.max(t0 + self.recv_overhead(inn)));
                } else if self.s.peer_of(g) >= 0 {
                    self.s.set_reason(g, Reason::Unmatched);
                    end = end.max(t0 + h.op_dur);
                }
                Ok(end)
            }
            Op::Complete => {
                let mut end = t0;
                let mut k = 0;
                while let Some(nb) = self.s.completed(g, k) {
                    end = end.max(self.request_done(nb)?);
                    k += 1;
                }
                Ok(end)
            }
            Op::Probe => {
                let m = self.s.probe_msg(g);
                if m == NONE {
                    // A probe of MPI_PROC_NULL returns at once: nothing to wait for.
                    if self.s.peer_of(g) == crate::trace::PROC_NULL {
                        return Ok(t0);
                    }
                    self.s.set_reason(g, Reason::Unmatched);
                    return Ok(t0 + h.op_dur);
                }
                let msg = self.s.msg(m);
                if msg.rendezvous {
                    // The envelope arrives one latency after the send was posted.
                    let sp = self.s.msg_time(m, MsgTime::SendPost);
                    if sp.is_nan() {
                        return Err(Block::Msg(m));
                    }
                    let a = self.p2p.hockney(msg.src_node, msg.dst_node).alpha;
                    Ok(t0.max(sp + a))
                } else {
                    Ok(t0.max(arrived(m)?))
                }
            }
            Op::Coll => {
                let i = h.inst_of;
                if i == NONE {
                    // Members unknown: the operation's time alone, no dependency.
                    self.s.set_reason(g, Reason::Unmatched);
                    return Ok(t0 + h.op_dur);
                }
                self.coll_end(i, g, t0)
            }
            Op::Local => Ok(t0 + h.op_dur),
            Op::Other => {
                self.s.set_reason(g, Reason::NoModel);
                Ok(t0 + h.op_dur)
            }
        }
    }

    fn recv_overhead(&self, m: u32) -> f64 {
        self.p2p.overhead(&self.s.msg(m), false)
    }

    fn send_overhead(&self, m: u32) -> f64 {
        self.p2p.overhead(&self.s.msg(m), true)
    }

    /// When the sender of rendezvous message `m` is done, no sooner than `floor`. Within a
    /// node (the receiver copies), when the data has arrived. Between nodes, one latency
    /// after the receiver matched plus the copy into the socket buffer (memory speed: the
    /// intra-node β); and when the message is larger than the socket buffer, not before
    /// all but its last `socket_buffer` bytes have left: the arrival less that tail's share
    /// of the message's time on the network.
    fn rendezvous_send_done(&self, m: u32, floor: f64) -> Result<f64, Block> {
        let msg = self.s.msg(m);
        let arrived = || {
            let a = self.s.msg_time(m, MsgTime::Arrive);
            if a.is_nan() {
                Err(Block::Msg(m))
            } else {
                Ok(a)
            }
        };
        if msg.src_node == msg.dst_node {
            return Ok(arrived()?.max(floor));
        }
        let mut matched = self.s.msg_time(m, MsgTime::Matched);
        // A message the grant rule holds is granted when the one it waits behind arrives.
        if matched.is_nan() || (self.grant && self.held.iter().any(|&(_, h)| h == m)) {
            return Err(Block::Msg(m));
        }
        let h = self.p2p.hockney(msg.src_node, msg.dst_node);
        // Open MPI's receiver matches a packed message once its head has arrived.
        if let Some(head) = self.packed_head(&msg) {
            matched =
                matched.max(self.s.msg_time(m, MsgTime::SendPost) + h.time_bytes(head as f64));
        }
        // A message MPICH packs is all in its buffer once copied there.
        let buffer = if msg.packed && self.protocol.library == Some(LibraryFamily::Mpich) {
            u64::MAX
        } else {
            self.p2p.socket_buffer_for(msg.bytes)
        };
        let copy = self.p2p.intra.beta * msg.bytes.min(buffer) as f64;
        let handshake = floor.max(matched + h.alpha + copy);
        if msg.bytes <= buffer {
            return Ok(handshake);
        }
        let a = arrived()?;
        let flow_start = self.s.msg_time(m, MsgTime::FlowStart);
        let tail = buffer as f64 / msg.bytes as f64 * (a - flow_start).max(0.0);
        Ok(handshake.max(a - tail))
    }

    /// When the sender of eager message `m`, sent by `op`, is done, its own part done at
    /// `done`: then, unless the send is synchronous. A synchronous one's data went at once,
    /// the receiver matches it once both the data has arrived and the receive is posted,
    /// and its acknowledgement takes the path's latency back (Open MPI's ob1 and MPICH
    /// alike). GPAW's `MPI_Ssend`s of
    /// 27 KB to rank 0 at 4 ranks took 6.2-6.9 ms, the three senders' data sharing rank 0's
    /// port before it posted two of the receives, where the replay, taking them for
    /// rendezvous, returned the matched one after its handshake (22 µs) and started the
    /// others' transfers at their receives.
    fn eager_send_done(&self, op: Op, m: u32, done: f64) -> Result<f64, Block> {
        if !matches!(
            op,
            Op::Send { sync: true, .. } | Op::Isend { sync: true, .. }
        ) {
            return Ok(done);
        }
        let arrived = self.s.msg_time(m, MsgTime::Arrive);
        let posted = self.s.msg_time(m, MsgTime::RecvPost);
        if arrived.is_nan() || posted.is_nan() {
            return Err(Block::Msg(m));
        }
        let msg = self.s.msg(m);
        let back = self.p2p.hockney(msg.src_node, msg.dst_node).alpha;
        Ok(done.max(arrived.max(posted) + back))
    }

    /// When nonblocking record `nb` completed in the replay.
    fn request_done(&mut self, nb: u32) -> Result<f64, Block> {
        let start = self.s.start(nb);
        let h = self.s.hot(nb);
        let posted = start + h.op_dur;
        match h.op {
            Op::Isend { .. } => {
                let m = h.msg_out;
                if m == NONE {
                    return Ok(posted);
                }
                let msg = self.s.msg(m);
                if msg.rendezvous {
                    self.rendezvous_send_done(m, posted)
                } else {
                    // The local send cost was paid in the post, whose measured time the
                    // replay keeps: an eager message is out when the post returns.
                    self.eager_send_done(h.op, m, posted)
                }
            }
            Op::Irecv => {
                let m = h.msg_in;
                if m == NONE {
                    return Ok(posted);
                }
                let a = self.s.msg_time(m, MsgTime::Arrive);
                if a.is_nan() {
                    Err(Block::Msg(m))
                } else {
                    Ok(a.max(posted))
                }
            }
            // The collective entered at its post, done when the blocking one would be.
            Op::ICol => match h.inst_of {
                NONE => {
                    self.s.set_reason(nb, Reason::Unmatched);
                    Ok(posted)
                }
                k => Ok(self.coll_end(k, nb, start)?.max(posted)),
            },
            _ => Ok(posted),
        }
    }

    /// When member `g` of tree broadcast `i` has its data (`done` false) or its children
    /// have theirs too, after the root entered ([`tree::schedule`], with the replay's
    /// placement of the members); None when `i` is not a tree broadcast; blocked until
    /// the members on its path have entered.
    fn tree_time(&mut self, i: u32, g: u32, done: bool) -> Result<Option<f64>, Block> {
        let Some(mut c) = self.s.coll_cost(i).and_then(|c| c.tree) else {
            return Ok(None);
        };
        // Blocks by rendezvous: along the tree, each send waits for its child's receive
        // (`done`, as the caller asks, is the rendezvous case).
        c.hops.rendezvous = done;
        let inst = self.s.inst(i);
        let (Some(root), n) = (inst.root, inst.members) else {
            return Ok(None);
        };
        let Some(k) = self.s.member_index(i, g) else {
            return Ok(None);
        };
        if n < 2 || n as u64 != inst.n {
            return Ok(None);
        }
        let rt = self.s.root_start(i);
        if rt.is_nan() {
            return Err(Block::Inst(i));
        }
        // Up to this many members, the schedule takes the members' entries as they are
        // known (one that has not entered sends nothing yet), recomputed when one more
        // has entered; a larger broadcast's is computed once, every member entering with
        // the root (at most n schedules of n log n an instance, not n²).
        let exact = n <= TREE_WITH_ENTRIES;
        let entered = self.s.inst_state(i).entered;
        let stale = {
            let t = self.s.tree_times(i);
            t.by_member.is_empty() || (exact && t.entered != entered)
        };
        if stale {
            // Virtual rank v is member (v + root) mod n; a member whose rank has no node
            // is a node of its own.
            let mut nodes = std::mem::take(&mut self.tree_nodes);
            let mut entry = std::mem::take(&mut self.tree_entry);
            nodes.clear();
            entry.clear();
            for v in 0..n {
                let m = (v + root) % n;
                let rank = self.s.member_rank(i, m);
                nodes.push(self.placement.node(rank).unwrap_or(u32::MAX - m as u32));
                if exact {
                    entry.push(self.s.member_start(i, m) - rt);
                }
            }
            let mut by_v = std::mem::take(&mut self.tree_times);
            let mut scratch = std::mem::take(&mut self.tree_scratch);
            tree::schedule(
                c.tree,
                root as u64,
                &nodes,
                &entry,
                &c.hops,
                &mut scratch,
                &mut by_v,
            );
            let times = self.s.tree_times(i);
            times.by_member.clear();
            times
                .by_member
                .extend((0..n).map(|m| by_v[(m + n - root) % n]));
            times.entered = entered;
            self.tree_nodes = nodes;
            self.tree_entry = entry;
            self.tree_times = by_v;
            self.tree_scratch = scratch;
        }
        let (a, d) = self.s.tree_times(i).by_member[k];
        match if done { d } else { a } {
            // Its path through the tree (or its children, for `done`) has not all entered.
            t if t.is_nan() => Err(Block::Inst(i)),
            t => Ok(Some(t)),
        }
    }

    /// End of member `g` of collective instance `i` entered at `t0`.
    fn coll_end(&mut self, i: u32, g: u32, t0: f64) -> Result<f64, Block> {
        let inst = self.s.inst(i);
        let (total, step) = self.cost(i);
        if self.contention {
            let c = self.s.coll_cost(i).unwrap_or_default();
            self.s
                .set_coll_contention(i, (c.model_s - c.free_s).max(0.0));
        }
        let state = self.s.inst_state(i);
        let all_in = state.entered as usize >= inst.members;
        let root_g = inst.root_g;
        // Below the eager limit of its path, a rooted collective's messages go out at once:
        // a sender returns after its local send costs, and a receiver that enters after the
        // data arrived only copies it out (as for point-to-point messages).
        let limit = if inst.multi_node {
            self.protocol.eager_inter
        } else {
            self.protocol.eager_intra
        };
        let eager = inst.block < limit;
        let intra = !inst.multi_node;
        let local = |send: bool| self.p2p.local_cost(inst.block, intra, send);
        match coll_shape(inst.kind) {
            CollShape::All if self.linear_prefix(i, eager) => {
                self.prefix_end(i, g, t0, step, local(true), local(false))
            }
            CollShape::All => {
                if !all_in {
                    Err(Block::Inst(i))
                } else if self.pair_exchange(i) {
                    Ok(self.pair_end(i, g, state.last, total))
                } else {
                    Ok(state.last + total)
                }
            }
            CollShape::FromRoot if self.buffered_linear(i) => match root_g {
                Some(r) if r == g => {
                    if all_in {
                        let blocks = inst.block * (inst.n - 1);
                        let copy = self.p2p.intra.beta * blocks as f64;
                        let alpha = self.p2p.inter.alpha;
                        Ok(t0.max(state.last) + alpha + copy)
                    } else {
                        Err(Block::Inst(i))
                    }
                }
                // A member entering after the others' data has left gets its block alone.
                _ => match state.data {
                    d if d.is_nan() => Err(Block::Inst(i)),
                    d => Ok((t0 + step).max(d + total)),
                },
            },
            CollShape::FromRoot => match root_g {
                // The root sends to its children in a binomial tree.
                Some(r) if r == g && eager => {
                    let children = (inst.n.max(2) as f64).log2().ceil();
                    Ok(t0 + children * local(true))
                }
                // By rendezvous, the root returns once its children have the data.
                Some(r) if r == g => Ok(t0 + self.tree_time(i, g, true)?.unwrap_or(total)),
                Some(_) => {
                    // Entry times are set when a stream enters a call.
                    let rt = self.s.root_start(i);
                    // Along a tree (which waits for the root's entry), eager, a member
                    // returns once it has the data and has posted its sends; by
                    // rendezvous, once its children have the data too.
                    // (By rendezvous the schedule has each send wait for its child's entry:
                    // `t0.max(rt) + d` counted a late member's lag twice, and a run of
                    // broadcasts with one member behind doubled it each time: NWChem
                    // under MPICH, 32 KiB at 2 ranks, 0.08 → 1.2 s.)
                    if let Some(d) = self.tree_time(i, g, !eager)? {
                        return Ok(if eager {
                            (t0 + local(false)).max(rt + d)
                        } else if inst.members <= TREE_WITH_ENTRIES {
                            (rt + d).max(t0)
                        } else {
                            t0.max(rt) + d
                        });
                    }
                    let serial = self.s.coll_cost(i).is_some_and(|c| c.serial);
                    let share = match (serial, self.s.member_index(i, g), inst.root) {
                        (true, Some(k), Some(root)) if inst.n >= 2 => {
                            // Members are in rank order; the root skips itself.
                            let j = if k < root { k + 1 } else { k };
                            j as f64 / (inst.n - 1) as f64
                        }
                        _ => 1.0,
                    };
                    if rt.is_nan() {
                        Err(Block::Inst(i))
                    } else if eager {
                        Ok((t0 + local(false)).max(rt + total * share))
                    } else {
                        Ok(t0.max(rt) + total * share)
                    }
                }
                None => Ok(t0 + total),
            },
            CollShape::ToRoot => match root_g {
                Some(r) if r == g => {
                    if all_in {
                        Ok((t0 + total).max(state.last + step))
                    } else {
                        Err(Block::Inst(i))
                    }
                }
                _ if eager => Ok(t0 + local(true)),
                _ => Ok(t0 + step),
            },
        }
    }
}

/// Up to this many members, a tree broadcast's schedule takes the members' replayed
/// entries ([`Engine::tree_time`]); a larger one is scheduled as if every member entered
/// with the root.
const TREE_WITH_ENTRIES: usize = 64;

enum Block {
    Msg(u32),
    Inst(u32),
}

/// One timing of a run, measured or replayed: each record's call start and end, and when
/// each message's sender and receiver posted.
pub struct Times<'a> {
    pub start: &'a [f64],
    pub end: &'a [f64],
    /// When each message's sender and receiver posted; `None`: at the entries of its
    /// sending and receiving records, as in the recorded run (no arrays to build).
    posts: Option<(&'a [f64], &'a [f64])>,
    /// Per collective instance: the member that entered last, and the member other than
    /// the root that entered first (found once per instance, not once per member: a
    /// collective of n members would otherwise cost n² to attribute).
    entries: Vec<(u32, u32)>,
}

impl<'a> Times<'a> {
    /// The timing given by these arrays (indexed by record, and by message for the posts).
    pub fn new(
        plan: &Plan,
        start: &'a [f64],
        end: &'a [f64],
        send_post: &'a [f64],
        recv_post: &'a [f64],
    ) -> Times<'a> {
        Times::with_posts(plan, start, end, Some((send_post, recv_post)))
    }

    /// The recorded run's timing: each message posted at the measured entries of its send
    /// and receive ([`measured_posts`], read where needed instead of copied).
    pub fn measured(plan: &'a Plan) -> Times<'a> {
        Times::with_posts(plan, &plan.m_start, &plan.m_end, None)
    }

    fn with_posts(
        plan: &Plan,
        start: &'a [f64],
        end: &'a [f64],
        posts: Option<(&'a [f64], &'a [f64])>,
    ) -> Times<'a> {
        let entries = plan
            .instances
            .iter()
            .map(|inst| {
                let (last, first) = entry_order(inst.members.len(), inst.root, |k| {
                    start[inst.members[k] as usize]
                });
                let at = |k: usize| inst.members.get(k).copied().unwrap_or(NONE);
                (at(last), at(first))
            })
            .collect();
        Times {
            start,
            end,
            posts,
            entries,
        }
    }
}

/// Of `n` members entered at `start(k)` (in rank order): the index of the one that
/// entered last (the last of equal ones) and of the one other than `root` that entered
/// first (the first of equal ones); `usize::MAX`: none.
pub(crate) fn entry_order(
    n: usize,
    root: Option<usize>,
    start: impl Fn(usize) -> f64,
) -> (usize, usize) {
    let by_start = |a: &usize, b: &usize| start(*a).total_cmp(&start(*b));
    let last = (0..n).max_by(by_start).unwrap_or(usize::MAX);
    let first = (0..n)
        .filter(|&k| Some(k) != root)
        .min_by(by_start)
        .unwrap_or(usize::MAX);
    (last, first)
}

/// The measured wait of every record, from the partners' clock-corrected timestamps.
pub fn measured_waits(plan: &Plan) -> Vec<Wait> {
    waits(plan, &Times::measured(plan))
}

/// Measured posts of every message (the clock-corrected entries of its send and receive),
/// for the [`Times`] of the recorded run.
pub fn measured_posts(plan: &Plan) -> (Vec<f64>, Vec<f64>) {
    let at = |g: u32| {
        if g == NONE {
            f64::NAN
        } else {
            plan.m_start[g as usize]
        }
    };
    (
        plan.msgs.iter().map(|m| at(m.send)).collect(),
        plan.msgs.iter().map(|m| at(m.recv)).collect(),
    )
}

/// The wait of every record under a timing (the rules of `docs/engine.md`). A nonblocking
/// operation's wait is charged to the completion call that waited for it.
pub fn waits(plan: &Plan, t: &Times) -> Vec<Wait> {
    (0..plan.hot.len()).map(|g| wait_of(plan, t, g)).collect()
}

/// A collective operation's entries as the wait rules read them, each (entry, WORLD
/// rank): its root's, its last member's, its first member other than the root.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entries {
    pub kind: CallKind,
    pub root: Option<(f64, i32)>,
    pub last: Option<(f64, i32)>,
    pub first: Option<(f64, i32)>,
}

/// What the wait rules read of a timing and of the records' matches: the plan's and a
/// timing's arrays (the batch path), or a windowed replay's slots, so that both paths
/// apply the same rules.
pub(crate) trait Partners {
    fn hot(&self, g: u32) -> Hot;
    /// The `k`-th nonblocking record completion record `g` completes: its [`Hot`] and
    /// whether it is its collective operation's root.
    fn completed(&self, g: u32, k: usize) -> Option<(Hot, bool)>;
    /// Whether record `g` is its collective operation's root.
    fn is_root(&self, g: u32) -> bool;
    fn probe_msg(&self, g: u32) -> u32;
    fn msg(&self, m: u32) -> Msg;
    /// When message `m`'s sender (`send`) or receiver posted (NaN: never).
    fn post(&self, m: u32, send: bool) -> f64;
    fn start(&self, g: u32) -> f64;
    fn end(&self, g: u32) -> f64;
    fn entries(&self, i: u32) -> Entries;
}

/// A [`Times`] of a [`Plan`], as the wait rules read it.
pub(crate) struct PlanTimes<'a, 'b> {
    pub plan: &'a Plan,
    pub t: &'a Times<'b>,
}

impl PlanTimes<'_, '_> {
    fn root_of(&self, i: u32) -> Option<u32> {
        let inst = &self.plan.instances[i as usize];
        inst.root.map(|k| inst.members[k])
    }
}

impl Partners for PlanTimes<'_, '_> {
    fn hot(&self, g: u32) -> Hot {
        self.plan.hot[g as usize]
    }
    fn completed(&self, g: u32, k: usize) -> Option<(Hot, bool)> {
        let nb = *self.plan.completed_by(g).get(k)?;
        Some((self.hot(nb), self.is_root(nb)))
    }
    fn is_root(&self, g: u32) -> bool {
        match self.plan.hot[g as usize].inst_of {
            NONE => false,
            i => self.root_of(i) == Some(g),
        }
    }
    fn probe_msg(&self, g: u32) -> u32 {
        self.plan.probe_msg[g as usize]
    }
    fn msg(&self, m: u32) -> Msg {
        self.plan.msgs[m as usize]
    }
    fn post(&self, m: u32, send: bool) -> f64 {
        match self.t.posts {
            Some((s, _)) if send => s[m as usize],
            Some((_, r)) => r[m as usize],
            None => {
                let msg = &self.plan.msgs[m as usize];
                match if send { msg.send } else { msg.recv } {
                    NONE => f64::NAN,
                    rec => self.t.start[rec as usize],
                }
            }
        }
    }
    fn start(&self, g: u32) -> f64 {
        self.t.start[g as usize]
    }
    fn end(&self, g: u32) -> f64 {
        self.t.end[g as usize]
    }
    fn entries(&self, i: u32) -> Entries {
        let at = |g: u32| (g != NONE).then(|| (self.t.start[g as usize], self.plan.rank_of(g)));
        let (last, first) = self.t.entries[i as usize];
        Entries {
            kind: self.plan.instances[i as usize].kind,
            root: self.root_of(i).and_then(at),
            last: at(last),
            first: at(first),
        }
    }
}

/// The wait of record `g` under a timing (see [`waits`]).
pub fn wait_of(plan: &Plan, t: &Times, g: usize) -> Wait {
    wait_in(&PlanTimes { plan, t }, g as u32)
}

/// [`wait_of`] on what `v` gives.
pub(crate) fn wait_in(v: &impl Partners, g: u32) -> Wait {
    // Call `g` waiting, as `kind`, for message `m`'s post by its sender (`send`) or its
    // receiver, `partner`.
    let (start, end) = (v.start(g), v.end(g));
    let on = |kind: WaitKind, m: u32, send: bool, partner: i32| {
        Wait::of(kind, start, v.post(m, send), end - start, partner)
    };
    let late_sender = |m: u32| {
        if m == NONE {
            return Wait::default();
        }
        on(WaitKind::LateSender, m, true, v.msg(m).src_rank)
    };
    // A rendezvous message's send, and a synchronous one's at any size, waits for the
    // receive's post.
    let late_receiver = |m: u32, sync: bool| {
        if m == NONE {
            return Wait::default();
        }
        let msg = v.msg(m);
        if msg.rendezvous || sync {
            on(WaitKind::LateReceiver, m, false, msg.dst_rank)
        } else {
            Wait::default()
        }
    };
    let h = v.hot(g);
    match h.op {
        Op::Send { sync, .. } => late_receiver(h.msg_out, sync),
        Op::Recv => late_sender(h.msg_in),
        Op::SendRecv => late_sender(h.msg_in).max(late_receiver(h.msg_out, false)),
        Op::Probe => late_sender(v.probe_msg(g)),
        Op::Complete => {
            let mut w = Wait::default();
            let mut k = 0;
            while let Some((nb, root)) = v.completed(g, k) {
                w = w.max(match nb.op {
                    Op::Irecv => late_sender(nb.msg_in),
                    Op::Isend { sync, .. } => late_receiver(nb.msg_out, sync),
                    Op::ICol => coll_wait(v, g, nb.inst_of, root),
                    _ => Wait::default(),
                });
                k += 1;
            }
            w
        }
        Op::Coll => coll_wait(v, g, h.inst_of, v.is_root(g)),
        Op::Isend { .. }
        | Op::Irecv
        | Op::ICol
        | Op::Rma
        | Op::RmaSync
        | Op::RmaFlush
        | Op::RmaFlushLocal
        | Op::Local
        | Op::Other => Wait::default(),
    }
}

/// The wait of call `g` at collective operation `i` of a member record (`g` itself for a
/// blocking collective, the nonblocking post for the completion call `g` that completed
/// it; `me_root`: that member is the root). For the last member's entry (all-to-all
/// shapes), the root's (one-to-all), the first other member's at the root (all-to-one),
/// from `g`'s entry.
fn coll_wait(v: &impl Partners, g: u32, i: u32, me_root: bool) -> Wait {
    if i == NONE {
        return Wait::default();
    }
    let e = v.entries(i);
    let (start, dur) = (v.start(g), v.end(g) - v.start(g));
    match coll_shape(e.kind) {
        CollShape::All => {
            let kind = if e.kind == CallKind::Barrier {
                WaitKind::Barrier
            } else {
                WaitKind::NxN
            };
            // Never none: the member itself is one.
            match e.last {
                Some((t, r)) => Wait::of(kind, start, t, dur, r),
                None => Wait::default(),
            }
        }
        CollShape::FromRoot => match e.root {
            Some((t, r)) if !me_root => Wait::of(WaitKind::LateBroadcast, start, t, dur, r),
            _ => Wait::default(),
        },
        CollShape::ToRoot => match (e.root, e.first) {
            (Some(_), Some((t, r))) if me_root => Wait::of(WaitKind::EarlyReduce, start, t, dur, r),
            _ => Wait::default(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::call;
    use std::collections::BTreeMap;

    /// A random run of point-to-point records: blocking, synchronous and nonblocking
    /// sends and receives and send-receives, tags 0 and 1, on 2 to 5 ranks on 1 to 3
    /// nodes, some to a rank outside the run.
    fn random_p2p_run(rnd: &mut impl FnMut(u64) -> u64) -> RunTrace {
        let n = 2 + rnd(4) as i32;
        let nodes = 1 + rnd(3) as i32;
        let calls = [
            call::MPI_Send,
            call::MPI_Ssend,
            call::MPI_Isend,
            call::MPI_Recv,
            call::MPI_Irecv,
            call::MPI_Sendrecv,
        ];
        let ranks = (0..n)
            .map(|r| {
                let mut t = 1_000u64;
                let records: Vec<Record> = (0..rnd(40))
                    .map(|_| {
                        let c = calls[rnd(calls.len() as u64) as usize];
                        let nb = c == call::MPI_Isend || c == call::MPI_Irecv;
                        let dur = 1 + rnd(5_000);
                        let bytes = 1 << rnd(20);
                        let recv = c == call::MPI_Recv || c == call::MPI_Irecv;
                        let rec = Record {
                            t_start: t,
                            t_end: t + dur,
                            t_posted: if nb { t + 1 } else { t + dur },
                            bytes_send: if recv { 0 } else { bytes },
                            bytes_recv: if recv || c == call::MPI_Sendrecv {
                                bytes
                            } else {
                                0
                            },
                            // n: a rank outside the run (not placed).
                            peer: rnd(n as u64 + 1) as i32,
                            peer2: if c == call::MPI_Sendrecv {
                                rnd(n as u64) as i32
                            } else {
                                crate::trace::NO_RANK
                            },
                            root: crate::trace::NO_RANK,
                            tag: rnd(2) as i32,
                            comm_size: n as u32,
                            call: c,
                            flags: if nb { FLAG_NONBLOCKING } else { 0 },
                            ..Default::default()
                        };
                        // Nonblocking operations overlap what follows.
                        t += if nb { 1 + rnd(3) } else { dur + rnd(100) };
                        rec
                    })
                    .collect();
                crate::testing::spooled_rank(r, n, nodes, records)
            })
            .collect();
        RunTrace {
            ranks,
            world_size: n,
            missing: vec![],
        }
    }

    /// Message matching read online, as a reader of spools in time order would feed it (each
    /// rank's sends in call order and receives in posting order, ranks and sides
    /// interleaved at random), finds the plan's messages: the same send matched with the
    /// same receive, the same protocol, whatever the interleaving.
    #[test]
    fn messages_matched_in_any_interleaving_are_the_plans() {
        let mut rnd = crate::testing::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut matched = 0;
        for _case in 0..300 {
            let run = random_p2p_run(&mut rnd);
            let placement = Placement::from_run(&run);
            let protocol = Protocol::for_library("");
            let plan = Plan::new(&run, placement.clone(), protocol);
            let by_send = |msgs: &[Msg]| -> BTreeMap<u32, (u32, bool, u64, i32, i32)> {
                msgs.iter()
                    .map(|m| {
                        (
                            m.send,
                            (m.recv, m.rendezvous, m.bytes, m.src_rank, m.dst_rank),
                        )
                    })
                    .collect()
            };
            let batch = by_send(&plan.msgs);
            matched += plan.msgs.iter().filter(|m| m.recv != NONE).count();
            // Per rank: its sends in call order, its receives in posting order.
            let mut queues: Vec<VecDeque<(bool, u32)>> = Vec::new();
            for (ri, rk) in run.ranks.iter().enumerate() {
                let order = call_order(&rk.records, plan.base[ri]);
                queues.push(order.iter().map(|&g| (true, g)).collect());
                let mut recvs: Vec<(f64, u32)> = order
                    .iter()
                    .filter(|&&g| {
                        let r = &rk.records[(g - plan.base[ri]) as usize];
                        receive_source(plan.hot[g as usize].op, r).is_some()
                    })
                    .map(|&g| (plan.m_start[g as usize], g))
                    .collect();
                recvs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                queues.push(recvs.into_iter().map(|(_, g)| (false, g)).collect());
            }
            let mut hot: Vec<Hot> = plan
                .hot
                .iter()
                .map(|h| Hot {
                    msg_out: NONE,
                    msg_in: NONE,
                    ..*h
                })
                .collect();
            let mut online = Messages::default();
            loop {
                let open: Vec<usize> = (0..queues.len())
                    .filter(|&q| !queues[q].is_empty())
                    .collect();
                if open.is_empty() {
                    break;
                }
                let q = open[rnd(open.len() as u64) as usize];
                let (is_send, g) = queues[q].pop_front().unwrap();
                let CallRef { rank, rec } = plan.refs[g as usize];
                let rk = &run.ranks[rank as usize];
                let r = &rk.records[rec as usize];
                if is_send {
                    online.send(rk.meta.rank, r, g, &mut hot, &placement, protocol);
                } else {
                    let src = receive_source(hot[g as usize].op, r).unwrap();
                    online.recv(rk.meta.rank, src, r.recv_tag(), g, &mut hot);
                }
            }
            assert_eq!(by_send(&online.msgs), batch);
            // Each record names its messages as the plan's do.
            let send_of = |msgs: &[Msg], m: u32| (m != NONE).then(|| msgs[m as usize].send);
            for (a, b) in hot.iter().zip(&plan.hot) {
                assert_eq!(
                    send_of(&online.msgs, a.msg_out),
                    send_of(&plan.msgs, b.msg_out)
                );
                assert_eq!(
                    send_of(&online.msgs, a.msg_in),
                    send_of(&plan.msgs, b.msg_in)
                );
            }
            // What is left waiting is only what never matched.
            let unmatched_sends = plan.msgs.iter().filter(|m| m.recv == NONE).count();
            assert!(online.fifo.waiting() >= unmatched_sends);
        }
        // The traces match messages, not only leave them unmatched.
        assert!(matched > 1000, "{matched}");
    }

    /// The queue gives the events in the order of one heap of (time, order queued), with
    /// most of them queued at the current time (through its FIFO), some before it, and
    /// time moved between them as the replay moves it (by an event taken, by the network,
    /// by a stream's next call taken at once).
    #[test]
    fn the_queue_gives_events_by_time_then_order_queued() {
        let mut rnd = crate::testing::xorshift(0x2545_f491_4f6c_dd1d);
        let (mut through_fifo, mut popped) = (0, 0);
        for case in 0..200 {
            let mut q = Queue::default();
            // The order one heap gives: (time key, number queued, stream).
            let mut want: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
            let (mut now, mut n) = (0u64, 0u64);
            for _ in 0..400 {
                match rnd(10) {
                    // Queued at the current time (most), a little later, or earlier (a
                    // call's partners woken at its entry).
                    0..=5 => {
                        let k = match rnd(6) {
                            0 | 1 => now + rnd(4),
                            2 => now.saturating_sub(rnd(3)),
                            _ => now,
                        };
                        let s = rnd(16) as u32;
                        through_fifo += usize::from(k == q.now);
                        q.push(k, s);
                        want.push(Reverse((k, n, s)));
                        n += 1;
                    }
                    // Time moves to no later than the next event (the network's next
                    // finish, or a stream's next call taken at once), maybe back.
                    6 => {
                        let next = want.peek().map_or(now + 3, |Reverse(e)| e.0);
                        now = now.saturating_sub(2) + rnd(3);
                        now = now.min(next);
                        q.now_at(now);
                    }
                    _ => {
                        let got = q.pop();
                        let Some(Reverse((k, _, s))) = want.pop() else {
                            assert_eq!(got, None, "case {case}");
                            continue;
                        };
                        assert_eq!(got, Some(s), "case {case}");
                        now = k;
                        popped += 1;
                    }
                }
            }
        }
        assert!(
            through_fifo > 20_000 && popped > 20_000,
            "{through_fifo} {popped}"
        );
    }

    /// Events leave by time, then in the order they were queued; renumbering them when
    /// the count runs out keeps that order.
    #[test]
    fn queued_events_keep_their_order_through_a_renumbering() {
        let mut heap = BinaryHeap::new();
        let times = [3.0, 1.0, 3.0, 0.5, 1.0, 3.0];
        for (i, &t) in times.iter().enumerate() {
            // Late numbers, as just before the count overflows.
            heap.push(Reverse(event(key(t), u32::MAX - 10 + i as u32, i as u32)));
        }
        let order = |mut h: BinaryHeap<Reverse<u128>>| {
            std::iter::from_fn(|| h.pop().map(|Reverse(e)| e as u32)).collect::<Vec<u32>>()
        };
        let before = order(heap.clone());
        assert_eq!(before, vec![3, 1, 4, 0, 2, 5]);
        let last = renumber(&mut heap);
        assert_eq!(last, times.len() as u32);
        heap.push(Reverse(event(key(1.0), last + 1, 6)));
        assert_eq!(order(heap), vec![3, 1, 4, 6, 0, 2, 5]);
    }
}

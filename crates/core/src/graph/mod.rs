//! The concurrent-communication graph: every message of a recorded run as a flow between
//! nodes, on rank 0's clock. The prediction engine cuts the timeline into intervals
//! wherever the set of in-flight inter-node flows changes and evaluates the penalty model
//! on each interval's node-level graph (see `predict`).
//!
//! Point-to-point messages come from the send side (`MPI_Send`, `MPI_Isend`, the send
//! half of `MPI_Sendrecv`, ...). PMPI does not see inside collectives, so a collective
//! contributes the messages of the algorithm assumed for it ([`collectives`]), among the
//! members of its communicator (recorded in each rank's metadata); a collective whose
//! per-destination bytes were recorded (`trace::arcs`: the v/w and neighbourhood ones)
//! contributes those arcs.

pub mod collectives;

use crate::topo::placement::Placement;
use crate::trace::{self, CallKind, RunTrace};

/// Which record a flow belongs to: indices into `RunTrace::ranks` and its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallRef {
    pub rank: u32,
    pub rec: u32,
}

/// One message between two nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flow {
    pub src_node: u32,
    pub dst_node: u32,
    pub src_rank: i32,
    pub dst_rank: i32,
    pub bytes: u64,
    /// Start on rank 0's clock, seconds from the run's origin.
    pub start: f64,
    /// The call that sends it.
    pub owner: CallRef,
}

impl Flow {
    /// True for a message between ranks on the same node (no network penalty).
    pub fn intra_node(&self) -> bool {
        self.src_node == self.dst_node
    }
}

/// What kind of work a call is, for the graph and the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallClass {
    /// Sends a point-to-point message (blocking or not, or Sendrecv's send half).
    Send,
    /// Receives a point-to-point message.
    Recv,
    /// Both (MPI_Sendrecv).
    SendRecv,
    /// A collective operation.
    Collective,
    /// Completion, probe and other calls that move no data of their own.
    Other,
}

/// Class of a call from its kind (see `wrapspec::KINDS`).
pub fn class_of(kind: CallKind) -> CallClass {
    use CallKind as K;
    match kind {
        // A persistent request's start is recorded under its *_init call.
        K::Send | K::Isend | K::SendInit => CallClass::Send,
        K::Recv | K::Irecv | K::RecvInit | K::Mrecv | K::Imrecv => CallClass::Recv,
        K::Sendrecv => CallClass::SendRecv,
        // Nonblocking collectives share their blocking call's kind.
        K::Alltoall
        | K::Alltoallv
        | K::Alltoallw
        | K::Allgather
        | K::Allgatherv
        | K::Gather
        | K::Gatherv
        | K::Scatter
        | K::Scatterv
        | K::Bcast
        | K::Reduce
        | K::Allreduce
        | K::Barrier
        | K::ReduceScatter
        | K::ReduceScatterBlock
        | K::Scan
        | K::NeighborAllgather
        | K::NeighborAllgatherv
        | K::NeighborAlltoall
        | K::NeighborAlltoallv
        | K::NeighborAlltoallw
        | K::WinFence => CallClass::Collective,
        _ => CallClass::Other,
    }
}

/// Kind of call `call` of a rank, via the rank's own call table (spools of another build
/// may number calls differently).
pub fn kind_of(names: &[String], call: u16) -> CallKind {
    let name = names
        .get(call as usize)
        .map(String::as_str)
        .unwrap_or_else(|| trace::call_name(call));
    trace::call_id(name)
        .map(trace::call_kind)
        .unwrap_or(CallKind::Unknown)
}

/// The kind of every call number of a rank's call table, looked up once per rank.
pub fn kind_table(names: &[String]) -> Vec<CallKind> {
    (0..names.len().max(trace::CALL_NAMES.len()))
        .map(|i| kind_of(names, i as u16))
        .collect()
}

/// Kind of `call` from a table built by [`kind_table`].
#[inline]
pub fn kind_in(table: &[CallKind], call: u16) -> CallKind {
    table
        .get(call as usize)
        .copied()
        .unwrap_or(CallKind::Unknown)
}

/// Members (WORLD ranks by local rank) of communicator `comm` of a rank, if its metadata
/// lists it with `size` members.
pub fn members_of(meta: &trace::RankMeta, comm: u32, size: u32) -> Option<&[i32]> {
    meta.comms_with_id(comm)
        .find(|c| !c.inter && c.world.len() == size as usize)
        .map(|c| c.world.as_slice())
}

/// All flows of a run, sorted by start time.
#[derive(Debug, Clone, Default)]
pub struct Flows {
    pub flows: Vec<Flow>,
}

/// Builds the flows of a run.
pub fn build(run: &RunTrace, placement: &Placement) -> Flows {
    let origin = run.origin_ns();
    let world = run.world_size.max(0) as u32;
    let mut flows = Vec::new();
    for (ri, rk) in run.ranks.iter().enumerate() {
        let me = rk.meta.rank;
        let Some(my_node) = placement.node(me) else {
            continue;
        };
        let kinds = kind_table(&rk.meta.calls);
        for (i, r) in rk.records.iter().enumerate() {
            let owner = CallRef {
                rank: ri as u32,
                rec: i as u32,
            };
            let start = RunTrace::seconds_since(&rk.meta, r.t_start, origin);
            let kind = kind_in(&kinds, r.call);
            record_messages(rk, i, kind, world, |dst, bytes| {
                if let Some(dn) = placement.node(dst) {
                    flows.push(Flow {
                        src_node: my_node,
                        dst_node: dn,
                        src_rank: me,
                        dst_rank: dst,
                        bytes,
                        start,
                        owner,
                    });
                }
            });
        }
    }
    flows.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.owner.cmp(&b.owner)));
    Flows { flows }
}

/// The messages `(destination WORLD rank, bytes)` record `i` of rank `rk` sends
/// ([`call_messages`]).
fn record_messages(
    rk: &trace::RankTrace,
    i: usize,
    kind: CallKind,
    world: u32,
    push: impl FnMut(i32, u64),
) {
    let arcs = if rk.arcs.is_empty() {
        None
    } else {
        rk.arcs_of(i)
    };
    call_messages(&rk.records[i], &rk.meta, arcs, kind, world, push);
}

/// The messages `(destination WORLD rank, bytes)` a record `r` of the rank of `meta` (of
/// kind `kind`, its per-peer bytes `arcs` where recorded, in a run of `world` ranks)
/// sends: a send's message, or a collective's by its recorded per-destination bytes where
/// they were recorded, else by the algorithm assumed for it among its communicator's
/// members. One record and its rank's metadata are enough, so that a run read in time
/// order finds what the loaded run does.
pub fn call_messages(
    r: &trace::Record,
    meta: &trace::RankMeta,
    arcs: Option<&trace::CallArcs>,
    kind: CallKind,
    world: u32,
    mut push: impl FnMut(i32, u64),
) {
    let me = meta.rank;
    // A collective whose per-destination bytes were recorded: its arcs as recorded (to
    // WORLD ranks) instead of the assumed algorithm's spread.
    let sent = match class_of(kind) {
        CallClass::Collective => arcs.and_then(|a| a.send.as_deref()),
        _ => None,
    };
    if let Some(sent) = sent {
        for &(dst, bytes) in sent {
            if dst >= 0 && dst != me && bytes > 0 {
                push(dst, bytes);
            }
        }
        return;
    }
    match class_of(kind) {
        CallClass::Send | CallClass::SendRecv if r.bytes_send > 0 && r.peer >= 0 => {
            push(r.peer, r.bytes_send)
        }
        CallClass::Collective if r.comm == 0 && r.comm_size == world => {
            for (dst, bytes) in collectives::messages(kind, me, world, r) {
                push(dst, bytes);
            }
        }
        CallClass::Collective => {
            if let Some(members) = members_of(meta, r.comm, r.comm_size) {
                for (dst, bytes) in collectives::messages_in(kind, me, members, r) {
                    push(dst, bytes);
                }
            }
        }
        _ => {}
    }
}

/// A collective operation's messages between two nodes: (source node, destination node,
/// bytes).
pub type NodePair = (u32, u32, u64);

/// The bytes of `pairs` that cross between nodes.
pub fn inter_node_bytes(pairs: &[NodePair]) -> u64 {
    pairs.iter().filter(|p| p.0 != p.1).map(|p| p.2).sum()
}

/// What one member of a collective operation gives its operation's [`CollTraffic`]: its
/// messages as (source node, destination node, bytes) pushed to `pairs`, and its call's
/// name (None where its rank's call table names no known call). An operation's call is
/// its last member's (in rank order) that has one.
pub fn member_traffic(
    r: &trace::Record,
    meta: &trace::RankMeta,
    arcs: Option<&trace::CallArcs>,
    kind: CallKind,
    world: u32,
    placement: &Placement,
    pairs: &mut Vec<NodePair>,
) -> Option<&'static str> {
    if let Some(my_node) = placement.node(meta.rank) {
        call_messages(r, meta, arcs, kind, world, |dst, bytes| {
            if let Some(dn) = placement.node(dst) {
                pairs.push((my_node, dn, bytes));
            }
        });
    }
    let name = meta.calls.get(r.call as usize).map(String::as_str);
    name.and_then(trace::call_id).map(trace::call_name)
}

/// An operation's messages (source node, destination node, bytes) as its node pairs:
/// sorted by pair, the bytes of a pair summed.
pub fn merge_pairs(pairs: &mut Vec<NodePair>) {
    pairs.sort_unstable_by_key(|&(s, d, _)| (s, d));
    pairs.dedup_by(|b, a| {
        let same = (a.0, a.1) == (b.0, b.1);
        if same {
            a.2 += b.2;
        }
        same
    });
}

/// Node-to-node bytes of each collective operation, by the algorithm assumed for it
/// ([`collectives`]) or its recorded per-destination bytes: the traffic the replay times
/// with the operation's own model rather than on its network, which the reports need to
/// say between which nodes collectives move their data and where their contention falls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CollTraffic {
    /// Operation `i`'s pairs are `pairs[offsets[i]..offsets[i + 1]]`.
    pub offsets: Vec<u32>,
    /// (source node, destination node, bytes), one per node pair of an operation, within
    /// a node too.
    pub pairs: Vec<NodePair>,
    /// Each operation's call (`MPI_Alltoall`, ...; `?` where no member was recorded).
    pub calls: Vec<&'static str>,
}

impl CollTraffic {
    /// The node pairs of operation `i` (none for an operation out of range).
    pub fn of(&self, i: usize) -> &[NodePair] {
        match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.pairs[a as usize..b as usize],
            _ => &[],
        }
    }
}

/// The [`CollTraffic`] of `ops` collective operations: `op_of(rank index, record)` gives a
/// record's operation, if it is a member of one.
pub fn collective_traffic(
    run: &RunTrace,
    placement: &Placement,
    ops: usize,
    op_of: impl Fn(usize, usize) -> Option<u32>,
) -> CollTraffic {
    let world = run.world_size.max(0) as u32;
    let mut all: Vec<(u32, NodePair)> = Vec::new();
    let mut calls = vec!["?"; ops];
    let mut mine = Vec::new();
    for (ri, rk) in run.ranks.iter().enumerate() {
        let kinds = kind_table(&rk.meta.calls);
        for (i, r) in rk.records.iter().enumerate() {
            let kind = kind_in(&kinds, r.call);
            if class_of(kind) != CallClass::Collective {
                continue;
            }
            let Some(op) = op_of(ri, i).filter(|&o| (o as usize) < ops) else {
                continue;
            };
            let arcs = if rk.arcs.is_empty() {
                None
            } else {
                rk.arcs_of(i)
            };
            mine.clear();
            // Ranks in order: the last member's name stays.
            if let Some(name) = member_traffic(r, &rk.meta, arcs, kind, world, placement, &mut mine)
            {
                calls[op as usize] = name;
            }
            all.extend(mine.iter().map(|&p| (op, p)));
        }
    }
    all.sort_by_key(|&(op, _)| op);
    let mut t = CollTraffic {
        offsets: Vec::with_capacity(ops + 1),
        pairs: Vec::new(),
        calls,
    };
    let mut k = 0;
    for op in 0..ops as u32 {
        t.offsets.push(t.pairs.len() as u32);
        mine.clear();
        while k < all.len() && all[k].0 == op {
            mine.push(all[k].1);
            k += 1;
        }
        merge_pairs(&mut mine);
        t.pairs.extend_from_slice(&mine);
    }
    t.offsets.push(t.pairs.len() as u32);
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{CommMembers, RankMeta, RankTrace, Record, call};

    /// Two all-to-alls at once on the sub-communicators {0, 1} and {2, 3} (4 ranks on 4
    /// nodes): each operation's traffic is its pair of nodes, both ways, once.
    #[test]
    fn collective_traffic_is_per_operation_among_its_members() {
        let block = 5000u64;
        let rank = |r: i32| {
            let group = if r < 2 { vec![0, 1] } else { vec![2, 3] };
            RankTrace {
                meta: RankMeta {
                    rank: r,
                    world_size: 4,
                    node: format!("n{r}"),
                    calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
                    comms: vec![CommMembers {
                        id: 7,
                        world: group,
                        inter: false,
                    }],
                    ..Default::default()
                },
                records: vec![
                    Record {
                        bytes_send: 2 * block,
                        bytes_recv: 2 * block,
                        comm: 7,
                        comm_size: 2,
                        peer: trace::NO_RANK,
                        root: trace::NO_RANK,
                        call: call::MPI_Alltoall,
                        ..Default::default()
                    },
                    // A send is not a collective: not in any operation's traffic.
                    Record {
                        bytes_send: 99,
                        peer: (r + 1) % 4,
                        call: call::MPI_Send,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }
        };
        let run = RunTrace {
            ranks: (0..4).map(rank).collect(),
            world_size: 4,
            missing: vec![],
        };
        let placement = Placement::from_run(&run);
        let t = collective_traffic(&run, &placement, 3, |ri, rec| {
            (rec == 0).then_some(if ri < 2 { 0 } else { 1 })
        });
        assert_eq!(t.of(0), &[(0, 1, block), (1, 0, block)]);
        assert_eq!(t.of(1), &[(2, 3, block), (3, 2, block)]);
        assert_eq!(t.of(2), &[]);
        assert_eq!(t.of(3), &[]);
        assert_eq!(t.calls, ["MPI_Alltoall", "MPI_Alltoall", "?"]);
    }
}

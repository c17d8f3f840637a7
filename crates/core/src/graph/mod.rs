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
    meta.comms
        .iter()
        .rev()
        .find(|c| c.id == comm && !c.inter && c.world.len() == size as usize)
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
            let mut push = |dst: i32, bytes: u64| {
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
            };
            // A collective whose per-destination bytes were recorded: its arcs as
            // recorded (to WORLD ranks) instead of the assumed algorithm's spread.
            let sent = match class_of(kind) {
                CallClass::Collective if !rk.arcs.is_empty() => {
                    rk.arcs_of(i).and_then(|a| a.send.as_deref())
                }
                _ => None,
            };
            if let Some(sent) = sent {
                for &(dst, bytes) in sent {
                    if dst >= 0 && dst != me && bytes > 0 {
                        push(dst, bytes);
                    }
                }
                continue;
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
                    if let Some(members) = members_of(&rk.meta, r.comm, r.comm_size) {
                        for (dst, bytes) in collectives::messages_in(kind, me, members, r) {
                            push(dst, bytes);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    flows.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.owner.cmp(&b.owner)));
    Flows { flows }
}

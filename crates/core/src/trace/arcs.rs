//! Per-peer bytes of the v/w collectives (MPI_Alltoallv, MPI_Gatherv, MPI_Neighbor_alltoallv,
//! ...) and the uniform neighbourhood ones (MPI_Neighbor_allgather, MPI_Neighbor_alltoall):
//! continuation records in the spool stream.
//!
//! A call record holds one total per direction; the graph needs each arc. The layer writes,
//! beside the call's record, continuation records (`call == ARC_CALL`) that carry up to
//! [`ARC_PAIRS`] (WORLD rank, bytes) pairs each, only for the pairs with bytes. A
//! continuation names its call by the call's thread, entry time and call number (a
//! nonblocking call's record is written at its completion, its continuations at its post),
//! and says where its pairs sit among the call's pairs of that direction and how many there
//! are, so that a set cut short by a full buffer is recognised and dropped: the call then
//! keeps its totals, as do calls of spools written before continuations existed.

use super::{NO_RANK, Record};
use std::collections::HashMap;

/// Call number of a continuation record (no wrapped call has it).
pub const ARC_CALL: u16 = u16::MAX;
/// Continuation flag: its pairs are sources and the bytes received from them (else
/// destinations and the bytes sent to them).
pub const ARC_RECV: u16 = 1;
/// (peer, bytes) pairs in one continuation record.
pub const ARC_PAIRS: usize = 4;
/// Most pairs per direction of one call; beyond, the call keeps its totals only and is
/// flagged `FLAG_ARCS_CAPPED` (the buffers must not fill with one large all-to-all).
pub const MAX_ARCS: usize = 256;

/// Field use of a continuation record: `call` = [`ARC_CALL`]; `thread`, `t_start` and
/// `reserved` = the call's thread, entry time and call number; `flags` = [`ARC_RECV`] or
/// 0; `tag` = index of the first pair among the call's pairs of that direction; `peer2` =
/// number of those pairs; peers in `peer`, `root`, `comm`, `comm_size` and their bytes in
/// `t_end`, `t_posted`, `bytes_send`, `bytes_recv` (an unused slot: `NO_RANK`, 0).
pub fn continuation(
    owner: &Record,
    recv: bool,
    first: u32,
    total: u32,
    pairs: &[(i32, u64)],
) -> Record {
    let mut p = [(NO_RANK, 0u64); ARC_PAIRS];
    for (slot, &pair) in p.iter_mut().zip(pairs) {
        *slot = pair;
    }
    Record {
        t_start: owner.t_start,
        t_end: p[0].1,
        t_posted: p[1].1,
        bytes_send: p[2].1,
        bytes_recv: p[3].1,
        peer: p[0].0,
        root: p[1].0,
        comm: p[2].0 as u32,
        comm_size: p[3].0 as u32,
        tag: first as i32,
        thread: owner.thread,
        call: ARC_CALL,
        flags: if recv { ARC_RECV } else { 0 },
        reserved: owner.call,
        peer2: total as i32,
    }
}

impl Record {
    /// True for a continuation record (see [`continuation`]).
    #[inline]
    pub fn is_continuation(&self) -> bool {
        self.call == ARC_CALL
    }

    /// The (peer, bytes) pairs of a continuation record, unused slots left out.
    pub fn arc_pairs(&self) -> impl Iterator<Item = (i32, u64)> {
        [
            (self.peer, self.t_end),
            (self.root, self.t_posted),
            (self.comm as i32, self.bytes_send),
            (self.comm_size as i32, self.bytes_recv),
        ]
        .into_iter()
        .filter(|&(p, _)| p != NO_RANK)
    }
}

/// Per-peer bytes of one call of a rank.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallArcs {
    /// Index of the call's record among the rank's records.
    pub rec: u32,
    /// (destination WORLD rank, bytes sent), as recorded; None when not recorded.
    pub send: Option<Vec<(i32, u64)>>,
    /// (source WORLD rank, bytes received); None when not recorded.
    pub recv: Option<Vec<(i32, u64)>>,
}

/// Separates a rank's continuation records from its call records: the calls in spool
/// order, and the per-peer bytes of those that have complete continuations, by record
/// index. A spool without continuations is returned as it came (no copy).
pub fn split(records: Vec<Record>) -> (Vec<Record>, Vec<CallArcs>) {
    if !records.iter().any(Record::is_continuation) {
        return (records, Vec::new());
    }
    // Continuations by (thread, entry, call): a call's key is unique on its thread.
    let mut conts: HashMap<(u16, u64, u16), Vec<Record>> = HashMap::new();
    let mut calls = Vec::with_capacity(records.len());
    for r in records {
        if r.is_continuation() {
            conts
                .entry((r.thread, r.t_start, r.reserved))
                .or_default()
                .push(r);
        } else {
            calls.push(r);
        }
    }
    let mut arcs = Vec::new();
    for (i, r) in calls.iter().enumerate() {
        if conts.is_empty() {
            break;
        }
        let Some(c) = conts.remove(&(r.thread, r.t_start, r.call)) else {
            continue;
        };
        let send = direction(&c, false);
        let recv = direction(&c, true);
        if send.is_some() || recv.is_some() {
            arcs.push(CallArcs {
                rec: i as u32,
                send,
                recv,
            });
        }
    }
    (calls, arcs)
}

/// The pairs of one direction, if its continuations are all there: each says how many
/// pairs there are and where its own start, so a lost one leaves a gap.
pub(super) fn direction(conts: &[Record], recv: bool) -> Option<Vec<(i32, u64)>> {
    let mut mine: Vec<&Record> = conts
        .iter()
        .filter(|r| (r.flags & ARC_RECV != 0) == recv)
        .collect();
    let total = usize::try_from(mine.first()?.peer2).ok()?;
    mine.sort_by_key(|r| r.tag);
    let mut out = Vec::with_capacity(total);
    for r in mine {
        if r.peer2 as usize != total || r.tag as usize != out.len() {
            return None;
        }
        out.extend(r.arc_pairs());
    }
    (out.len() == total).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(thread: u16, t_start: u64, call: u16) -> Record {
        Record {
            t_start,
            thread,
            call,
            ..Default::default()
        }
    }

    /// Continuations before or after their call, on another thread's stream between
    /// them, attach to their call; the calls keep their order and indices.
    #[test]
    fn continuations_attach_to_their_call() {
        let a = call(0, 100, 7);
        let b = call(1, 100, 7);
        let pairs: Vec<(i32, u64)> = (0..6).map(|i| (i, 10 * i as u64 + 1)).collect();
        let recs = vec![
            continuation(&b, true, 0, 1, &[(3, 9)]),
            a,
            continuation(&a, false, 4, 6, &pairs[4..]),
            b,
            continuation(&a, false, 0, 6, &pairs[..4]),
        ];
        let (calls, arcs) = split(recs);
        assert_eq!(calls, vec![a, b]);
        assert_eq!(
            arcs,
            vec![
                CallArcs {
                    rec: 0,
                    send: Some(pairs.clone()),
                    recv: None,
                },
                CallArcs {
                    rec: 1,
                    send: None,
                    recv: Some(vec![(3, 9)]),
                },
            ]
        );
    }

    /// A set missing a continuation (a full buffer) gives no pairs for that direction; a
    /// continuation whose call was lost attaches to nothing.
    #[test]
    fn incomplete_sets_are_dropped() {
        let a = call(0, 5, 2);
        let pairs: Vec<(i32, u64)> = (0..6).map(|i| (i, 1)).collect();
        let recs = vec![
            a,
            continuation(&a, false, 4, 6, &pairs[4..]),
            continuation(&a, true, 0, 2, &pairs[..2]),
            continuation(&call(0, 6, 2), true, 0, 1, &pairs[..1]),
        ];
        let (calls, arcs) = split(recs);
        assert_eq!(calls, vec![a]);
        assert_eq!(
            arcs,
            vec![CallArcs {
                rec: 0,
                send: None,
                recv: Some(pairs[..2].to_vec()),
            }]
        );
        let plain = vec![a, call(0, 9, 3)];
        assert_eq!(split(plain.clone()), (plain, vec![]));
    }
}

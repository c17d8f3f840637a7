//! The plan found as a run is read in time order ([`crate::trace::order::RunOrder`]):
//! what [`super::Plan::new`] finds by looking at the whole run, told as events while
//! holding only what waits for a match ([`super::matching`]).
//!
//! Each record, when read, gets at once what it alone fixes ([`OnlinePlan::record`]
//! returns its [`Planned`]: gap, duration, op, the message it sends with its protocol,
//! its collective operation); what depends on other records comes as an [`Event`] once
//! they are read: a message matched with its receive, a nonblocking operation with its
//! completion call, a probe with the receive it probes for, a collective operation with
//! its last member. A window synchronisation's bytes and target, and the peer of a
//! receive or probe that matched nothing, are the record's own fields.
//! Records are known by (rank index, record number) and by the slot the caller gives each
//! as it is read ([`Slots`]); a message by its sending record and the slot the caller gives
//! it; a collective operation by the order in which it was first joined. (With the slots
//! in its events, a replay holding records and messages by slot finds them without a
//! lookup.)

use super::matching::{Completions, Fifo, Groups, LastChannel, Probes};
use super::{
    FxMap, Hot, NONE, Op, Protocol, block_of_call, op_of, own_end, receive_source, record_op,
    sent_message,
};
use crate::graph::{self, CallClass};
use crate::topo::placement::Placement;
use crate::trace::order::Call;
use crate::trace::{CallKind, FLAG_NONBLOCKING, RankMeta};

/// A record: (rank index, record number).
pub type Id = (u32, u32);

/// A record and its slot ([`Slots::rec`]).
pub type Named = (Id, u32);

/// The caller's numbers for a record read: its slot, and the slot of the message it sends
/// (used only where it sends one, [`Planned::msg`]). Events name them beside the ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slots {
    pub rec: u32,
    pub msg: u32,
}

/// What the plan learns once other records are read.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The message sent by `send`, in message slot `msg`, is received by `recv`.
    Message { send: Id, msg: u32, recv: Named },
    /// Nonblocking operation `op` completed in completion call `by`.
    Completion { op: Named, by: Named },
    /// Probe `probe` waits for the message that receive `recv` gets.
    Probe { probe: Named, recv: Named },
    /// Collective operation `op` (its number) is complete: its kind (its first member's),
    /// its members by (rank index, record number) with their slots, the index among them
    /// of its root (if
    /// rooted and found), its size and block, whether it spans nodes and the most members
    /// on one node.
    Instance {
        op: u32,
        kind: CallKind,
        members: Vec<Named>,
        root: Option<usize>,
        n: u64,
        block: u64,
        multi_node: bool,
        max_per_node: u64,
    },
}

/// The message a record sends, as its send fixes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Message {
    pub bytes: u64,
    pub src_rank: i32,
    pub dst_rank: i32,
    pub src_node: u32,
    pub dst_node: u32,
    /// The transfer waits for the receive to be posted (see [`super::Msg`]).
    pub rendezvous: bool,
    /// The library packs it into a buffer of its own (see [`super::Msg`]).
    pub packed: bool,
}

/// What a record fixes alone, when read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Planned {
    /// Its replay fields: `msg_out` 0 when it sends a message (known by this record),
    /// `msg_in` left to [`Event::Message`], `inst_of` its collective operation's number.
    pub hot: Hot,
    /// The message it sends, if any.
    pub msg: Option<Message>,
}

/// Per rank: what classifying its records needs.
struct Rank {
    me: i32,
    ops: Vec<Op>,
    kinds: Vec<CallKind>,
    /// Communicator id → (member list number, rank among same-member communicators,
    /// intercommunicator, members).
    ident: FxMap<u32, (u32, usize, bool, usize)>,
    /// Collectives called so far per communicator.
    counters: FxMap<u32, usize>,
    /// Per thread (by number: numbered from 0 in their order of first call, so an array
    /// rather than a map): the end of its previous call (for the next one's gap).
    last_end: Vec<Option<u64>>,
    /// (record number, slot) of the calls and operations.
    completions: Completions<(u32, u32)>,
    /// The message channels of its last send and its last receive
    /// ([`Fifo::channel_after`]).
    last_send: LastChannel<(i32, i32, i32)>,
    last_recv: LastChannel<(i32, i32, i32)>,
}

/// A collective operation some member has not joined yet.
#[derive(Default)]
struct Open {
    /// The first member (in rank order) and its kind.
    first: Option<(Id, CallKind)>,
    block: u64,
    root: Option<Id>,
    nodes: Vec<u32>,
}

/// The plan of a run read in time order.
pub struct OnlinePlan {
    ranks: Vec<Rank>,
    placement: Placement,
    protocol: Protocol,
    /// Sends as (record, message slot), receives as (record, slot).
    messages: Fifo<(i32, i32, i32), (Id, u32), Named>,
    groups: Groups<(u32, usize, usize), Named>,
    open: FxMap<u32, Open>,
    /// Operation number of each open key (the number `groups` gives at completion is the
    /// same; it is needed at once, for the joining record's `inst_of`).
    numbers: FxMap<(u32, usize, usize), u32>,
    next_number: u32,
    /// (record number, slot) of the probes.
    probes: Probes<(u32, u32)>,
}

impl OnlinePlan {
    /// The plan of the run of `metas` (by rank index) under `placement`, with `protocol`.
    pub fn new(metas: &[RankMeta], placement: Placement, protocol: Protocol) -> OnlinePlan {
        let world_size = metas.iter().map(|m| m.world_size).max().unwrap_or(0).max(0);
        let world: Vec<i32> = (0..world_size).collect();
        let mut lists: FxMap<(Vec<i32>, bool), u32> = FxMap::default();
        let ranks = metas
            .iter()
            .map(|m| {
                let kinds = graph::kind_table(&m.calls);
                let ops = kinds
                    .iter()
                    .enumerate()
                    .map(|(c, &k)| op_of(k, m.calls.get(c).map(String::as_str).unwrap_or("")))
                    .collect();
                let mut ident = FxMap::default();
                let mut seen: FxMap<(Vec<i32>, bool), usize> = FxMap::default();
                let mut list = |w: &Vec<i32>, inter: bool| {
                    let next = lists.len() as u32;
                    *lists.entry((w.clone(), inter)).or_insert(next)
                };
                ident.insert(0, (list(&world, false), 0, false, world.len()));
                seen.insert((world.clone(), false), 1);
                for c in &m.comms {
                    let k = seen.entry((c.world.clone(), c.inter)).or_insert(0);
                    ident.insert(c.id, (list(&c.world, c.inter), *k, c.inter, c.world.len()));
                    *k += 1;
                }
                Rank {
                    me: m.rank,
                    ops,
                    kinds,
                    ident,
                    counters: FxMap::default(),
                    last_end: Vec::new(),
                    completions: Completions::default(),
                    last_send: None,
                    last_recv: None,
                }
            })
            .collect();
        OnlinePlan {
            ranks,
            placement,
            protocol,
            messages: Fifo::default(),
            groups: Groups::default(),
            open: FxMap::default(),
            numbers: FxMap::default(),
            next_number: 0,
            probes: Probes::default(),
        }
    }

    /// Reads call `c` of rank index `ri` (each rank's calls in call order), held by the
    /// caller in `slots`: what it fixes alone, and the events it completes, through `event`.
    pub fn record(
        &mut self,
        ri: usize,
        c: &Call,
        slots: Slots,
        mut event: impl FnMut(Event),
    ) -> Planned {
        let id = (ri as u32, c.rec);
        let me_named = (id, slots.rec);
        let r = &c.record;
        let rk = &mut self.ranks[ri];
        let kind = graph::kind_in(&rk.kinds, r.call);
        let op = rk
            .ops
            .get(r.call as usize)
            .copied()
            .unwrap_or(op_of(CallKind::Unknown, ""));
        let op = record_op(
            op,
            kind,
            r,
            self.placement.nodes() <= 1,
            self.protocol.library == Some(crate::profile::LibraryFamily::Mpich),
            self.protocol.eager_inter,
        );
        let t = r.thread as usize;
        if rk.last_end.len() <= t {
            rk.last_end.resize(t + 1, None);
        }
        let gap = match rk.last_end[t].replace(own_end(r)) {
            Some(prev) => r.t_start.saturating_sub(prev) as f64 * 1e-9,
            None => 0.0,
        };
        let mut hot = Hot {
            gap,
            op_dur: own_end(r).saturating_sub(r.t_start) as f64 * 1e-9,
            msg_out: NONE,
            msg_in: NONE,
            inst_of: NONE,
            op,
            polled_before: r.flags & crate::trace::FLAG_GAP_POLLS != 0,
        };
        let me = rk.me;
        // Completions: the operation comes first in call order and waits for its call.
        if op == Op::Complete {
            rk.completions
                .call(r.thread, r.t_end, (id.1, slots.rec), |(o, og)| {
                    event(Event::Completion {
                        op: ((id.0, o), og),
                        by: me_named,
                    })
                });
        }
        if r.flags & FLAG_NONBLOCKING != 0
            && let Some((by, bg)) = rk
                .completions
                .operation(r.thread, r.t_end, (id.1, slots.rec))
        {
            event(Event::Completion {
                op: me_named,
                by: ((id.0, by), bg),
            });
        }
        // Messages: between placed ranks, eager below the limit of their path.
        let msg = sent_message(op, me, r, &self.placement, self.protocol);
        if msg.is_some() {
            hot.msg_out = 0;
            let last = &mut self.ranks[ri].last_send;
            let c = self.messages.channel_after(last, (me, r.peer, r.tag));
            if let Some(recv) = self.messages.a_in(c, (id, slots.msg)) {
                event(Event::Message {
                    send: id,
                    msg: slots.msg,
                    recv,
                });
            }
        }
        if let Some(src) = receive_source(op, r)
            && let Some((send, msg)) = {
                let last = &mut self.ranks[ri].last_recv;
                let c = self.messages.channel_after(last, (src, me, r.recv_tag()));
                self.messages.b_in(c, me_named)
            }
        {
            event(Event::Message {
                send,
                msg,
                recv: me_named,
            });
        }
        // Probes, per stream (rank, thread).
        let stream = (ri as u32) << 16 | r.thread as u32;
        match op {
            Op::Probe => self.probes.probe(stream, (id.1, slots.rec), r.peer, r.tag),
            Op::Recv | Op::Irecv => self.probes.recv(stream, r.peer, r.tag, |(p, pg)| {
                event(Event::Probe {
                    probe: ((id.0, p), pg),
                    recv: me_named,
                })
            }),
            _ => {}
        }
        // Collective operations.
        let rk = &mut self.ranks[ri];
        let is_coll = graph::class_of(kind) == CallClass::Collective;
        if is_coll
            && op != Op::Local
            && let Some(&(list, ord, inter, size)) = rk.ident.get(&r.comm)
            && (inter || size == r.comm_size as usize)
        {
            let k = rk.counters.entry(r.comm).or_insert(0);
            let key = (list, ord, *k);
            *k += 1;
            if size > 0 {
                let next = self.next_number;
                let number = *self.numbers.entry(key).or_insert(next);
                if number == next {
                    self.next_number += 1;
                }
                hot.inst_of = number;
                let o = self.open.entry(number).or_default();
                if o.first.is_none_or(|(f, _)| id < f) {
                    o.first = Some((id, kind));
                }
                o.block = o.block.max(block_of_call(kind, r, c.arcs.as_deref(), me));
                if r.root >= 0 && me == r.root {
                    o.root = Some(id);
                }
                if let Some(n) = self.placement.node(me) {
                    o.nodes.push(n);
                }
                if let Some((_, mut members)) = self.groups.join(key, me_named, size as u64) {
                    self.numbers.remove(&key);
                    let o = self.open.remove(&number).unwrap_or_default();
                    // In rank order, as the plan has them (an id is one record: its slot
                    // never decides).
                    members.sort_unstable();
                    let mut nodes = o.nodes;
                    nodes.sort_unstable();
                    let max_per_node = nodes
                        .chunk_by(|a, b| a == b)
                        .map(|c| c.len() as u64)
                        .max()
                        .unwrap_or(1);
                    nodes.dedup();
                    event(Event::Instance {
                        op: number,
                        kind: o.first.map_or(kind, |f| f.1),
                        root: o.root.and_then(|r| members.iter().position(|m| m.0 == r)),
                        n: members.len() as u64,
                        members,
                        block: o.block,
                        multi_node: nodes.len() > 1,
                        max_per_node,
                    });
                }
            }
        }
        Planned { hot, msg }
    }

    /// What waits for a match: messages, requests, collective operations, probes.
    pub fn waiting(&self) -> usize {
        self.messages.waiting()
            + self.groups.open()
            + self.probes.waiting()
            + self
                .ranks
                .iter()
                .map(|r| r.completions.waiting())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::Plan;
    use std::collections::{BTreeMap, BTreeSet};

    /// The plan found online, ranks interleaved at random and each in call order, is the
    /// plan of the whole run: every record's replay fields, every message, completion,
    /// probe and collective operation; every event names each record with the slot it was
    /// read with, and a message with its send's message slot; and nothing waits once every
    /// record is read but what never matched.
    #[test]
    fn the_plan_found_online_is_the_plan_of_the_whole_run() {
        let mut rnd = crate::testing::xorshift(0x5851_f42d_4c95_7f2d);
        let (mut messages, mut operations, mut completions, mut probes) = (0, 0, 0, 0);
        for case in 0..300 {
            let run = crate::testing::random_run(&mut rnd);
            let placement = Placement::from_run(&run);
            let protocol = Protocol::for_library("");
            let plan = Plan::new(&run, placement.clone(), protocol);
            let id_of = |g: u32| {
                let r = plan.refs[g as usize];
                (r.rank, r.rec)
            };
            let metas: Vec<RankMeta> = run.ranks.iter().map(|r| r.meta.clone()).collect();
            let mut online = OnlinePlan::new(&metas, placement, protocol);
            let mut order: Vec<std::collections::VecDeque<u32>> = run
                .ranks
                .iter()
                .map(|rk| super::super::call_order(&rk.records, 0).into())
                .collect();
            let mut hot: BTreeMap<Id, Planned> = BTreeMap::new();
            let mut events = Vec::new();
            // Slots as a reader gives them: arbitrary numbers, here a scramble of the
            // reading order (record slots) and of the sends (message slots).
            let mut slot_of: BTreeMap<Id, Slots> = BTreeMap::new();
            let mut read = 0u32;
            loop {
                let open: Vec<usize> = (0..order.len()).filter(|&r| !order[r].is_empty()).collect();
                if open.is_empty() {
                    break;
                }
                let ri = open[rnd(open.len() as u64) as usize];
                let rec = order[ri].pop_front().unwrap();
                let c = Call {
                    rec,
                    record: run.ranks[ri].records[rec as usize],
                    arcs: None,
                };
                let slots = Slots {
                    rec: read.wrapping_mul(0x9e37_79b9),
                    msg: read.wrapping_mul(0x85eb_ca6b) ^ 7,
                };
                read += 1;
                let h = online.record(ri, &c, slots, |e| events.push(e));
                hot.insert((ri as u32, rec), h);
                slot_of.insert((ri as u32, rec), slots);
            }
            let mut recv_of: BTreeMap<Id, Id> = BTreeMap::new();
            let mut by: BTreeMap<Id, Id> = BTreeMap::new();
            let mut probe_recv: BTreeMap<Id, Id> = BTreeMap::new();
            let mut insts: BTreeMap<u32, Event> = BTreeMap::new();
            let named = |(id, g): Named| {
                assert_eq!(g, slot_of[&id].rec, "case {case}, record {id:?}'s slot");
                id
            };
            for e in events {
                match &e {
                    Event::Message { send, msg, recv } => {
                        assert_eq!(*msg, slot_of[send].msg, "case {case}, {send:?}'s message");
                        recv_of.insert(named(*recv), *send);
                    }
                    Event::Completion { op, by: c } => {
                        by.insert(named(*op), named(*c));
                    }
                    Event::Probe { probe, recv } => {
                        probe_recv.insert(named(*probe), named(*recv));
                    }
                    Event::Instance { op, members, .. } => {
                        members.iter().for_each(|&m| {
                            named(m);
                        });
                        insts.insert(*op, e.clone());
                    }
                }
            }
            messages += recv_of.len();
            operations += insts.len();
            completions += by.len();
            probes += probe_recv.len();
            let send_of = |m: u32| (m != NONE).then(|| id_of(plan.msgs[m as usize].send));
            for (g, p) in plan.hot.iter().enumerate() {
                let id = id_of(g as u32);
                let Planned { hot: o, msg } = hot[&id];
                let at = format!("case {case}, record {id:?}");
                assert_eq!((o.gap, o.op_dur, o.op), (p.gap, p.op_dur, p.op), "{at}");
                assert_eq!(o.msg_out != NONE, p.msg_out != NONE, "{at}");
                let plan_msg = (p.msg_out != NONE).then(|| plan.msgs[p.msg_out as usize].message());
                assert_eq!(msg, plan_msg, "{at}");
                assert_eq!(recv_of.get(&id).copied(), send_of(p.msg_in), "{at}");
                let done = plan.done_by[g];
                assert_eq!(
                    by.get(&id).copied(),
                    (done != NONE).then(|| id_of(done)),
                    "{at}"
                );
                if !plan.probe_msg.is_empty() && p.op == Op::Probe {
                    let online_msg = probe_recv.get(&id).and_then(|r| recv_of.get(r)).copied();
                    assert_eq!(online_msg, send_of(plan.probe_msg[g]), "{at}");
                }
                // The operation: the same members and figures, or none in both.
                let online_inst = insts.get(&o.inst_of);
                match (p.inst_of, online_inst) {
                    (NONE, None) => {}
                    (
                        i,
                        Some(Event::Instance {
                            kind,
                            members,
                            root,
                            n,
                            block,
                            multi_node,
                            max_per_node,
                            ..
                        }),
                    ) if i != NONE => {
                        let b = &plan.instances[i as usize];
                        let bm: Vec<Id> = b.members.iter().map(|&m| id_of(m)).collect();
                        let members: Vec<Id> = members.iter().map(|m| m.0).collect();
                        assert_eq!(
                            (
                                &bm,
                                b.root,
                                b.n,
                                b.block,
                                b.multi_node,
                                b.max_per_node,
                                b.kind
                            ),
                            (
                                &members,
                                *root,
                                *n,
                                *block,
                                *multi_node,
                                *max_per_node,
                                *kind
                            ),
                            "{at}"
                        );
                    }
                    (i, x) => panic!("{at}: plan {i}, online {x:?}"),
                }
            }
            let unmatched: BTreeSet<Id> = plan
                .msgs
                .iter()
                .filter(|m| m.recv == NONE)
                .map(|m| id_of(m.send))
                .collect();
            assert!(online.waiting() >= unmatched.len(), "case {case}");
        }
        // The runs exercise every kind of match.
        assert!(
            messages > 500 && operations > 200,
            "{messages} {operations}"
        );
        assert!(completions > 500 && probes > 50, "{completions} {probes}");
    }
}

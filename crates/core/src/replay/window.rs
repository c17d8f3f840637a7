//! The replay of a run read in time order ([`RunOrder`]) with its plan found online
//! ([`OnlinePlan`]), records and messages held in slots reused once finished: memory
//! follows what is in flight, not the run's length (docs/engine.md, "Replaying in a
//! window").
//!
//! The engine is the batch replay's ([`super::Engine`], its rules written once); only its
//! store differs. When a stream needs a record, the store reads the run until that record
//! and what its replay depends on are known: the message it receives, the receive of a
//! rendezvous message it sends, its collective operation's other members, the receive a
//! probe waits for. Reading changes no replayed time, so the times are the batch replay's,
//! to the bit. A dependency that never comes (a receive that matched nothing, an operation
//! some member never joined) is known only at the end of the run, and the reader reads to
//! the end for it. A record is let go, its times handed to the caller, once it has ended
//! and nothing refers to it: a nonblocking operation once its completion call has ended
//! (or none can come any more: its rank's calls entered after its end are read, or its
//! thread is read to the end) and its request's completion is final.
//!
//! Several replays can run side by side over one read ([`replay_windows`]: the model's and
//! the contention-free one, for `predict::stream`), each call read and planned once. A
//! replay asked for the figures (`predict::figures_of`) keeps what they read of records
//! that may go first (posts, collective entries, the operations a completion call
//! completed) in the slots of messages and operations, and hands a record over once those
//! are known too (docs/engine.md, "Both replays over one read").

use super::net::NetSink;
use super::online::{Event, Id, Named, OnlinePlan, Planned, Slots};
use super::{
    CollCost, Engine, Entries, FxMap, Hot, InstInfo, InstState, Instance, Msg, MsgTime, NONE, Op,
    P2p, Partners, Reason, Store, TreeTimes, entry_order, network, receive_source,
    transfer_contention,
};
use crate::error::Error;
use crate::graph::{self, NodePair};
use crate::model::PenaltyModel;
use crate::predict::{CallPrediction, CollOp, Contended, duration_of, figures_of};
use crate::topo::placement::Placement;
use crate::trace::order::{Call, Peeked, RunOrder};
use crate::trace::{FLAG_NONBLOCKING, NO_RANK, RunTrace};
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::rc::Rc;

/// A record the windowed replay has finished: its rank index and record number (as
/// [`crate::trace::load_run`] numbers them) and its replayed times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Finished {
    pub rank: u32,
    pub rec: u32,
    /// Its slot, shared by the replays over one read ([`replay_windows`]): the same
    /// record has the same slot in each, and no other record takes it until every replay
    /// has handed this one over (a dense index for joining their results).
    pub slot: u32,
    /// Its measured entry on rank 0's clock (ns): with (rank, rec), where the run's
    /// timeline (`report::Timeline`) puts it.
    pub entry_ns: i64,
    pub start: f64,
    pub end: f64,
    /// When a nonblocking operation's request completed (NaN for other calls).
    pub req_done: f64,
    pub reason: Reason,
    /// Its measured, clock-corrected end (seconds from the origin).
    pub measured_end: f64,
    /// Its measured duration as the reports take it (`Record::duration_s`).
    pub measured_s: f64,
    /// Its replayed duration (a nonblocking operation's: from its post to the end of the
    /// completion call that finished it), as `predict` gives it.
    pub duration: f64,
    /// Its figures, where the replay was asked for them ([`Side::figures`]; `free` is the
    /// predicted duration: the other replay has it).
    pub prediction: Option<CallPrediction>,
}

/// What a windowed replay held: records read, and the most records, messages and
/// collective operations live at once; and the message slots the shared reader made
/// (each reused once every replay has let its message go).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub records: u64,
    pub most_records: usize,
    pub most_messages: usize,
    pub most_operations: usize,
    pub message_slots: usize,
}

/// Replays the run `order` reads under `model` (None: contention-free) with `placement`'s
/// nodes and `protocol`'s eager limits, each collective operation taking the time `cost`
/// gives it (with its contention when `contention`); hands each record to `finished` once
/// it is finished. The times are [`super::replay`]'s on the loaded run.
#[allow(clippy::too_many_arguments)]
pub fn replay_window(
    order: RunOrder,
    placement: &Placement,
    protocol: super::Protocol,
    p2p: &P2p,
    model: Option<&dyn PenaltyModel>,
    cost: &dyn Fn(&Instance) -> CollCost,
    contention: bool,
    finished: &mut dyn FnMut(Finished),
) -> Result<Stats, Error> {
    let side = Side {
        model,
        contention,
        figures: false,
        finished,
        net: None,
        collectives: None,
    };
    let cost = |i: &Instance, _: &[i32]| cost(i);
    Ok(replay_windows(order, placement, protocol, p2p, &cost, vec![side])?[0])
}

/// The time of a collective operation, from its [`Instance`] and its members' WORLD ranks
/// in member order (the instance's `members` are the window's slots, not global ids).
pub type CostFn<'a> = &'a dyn Fn(&Instance, &[i32]) -> CollCost;

/// One of the replays [`replay_windows`] runs over one read of the run.
pub struct Side<'a> {
    /// The penalty model (None: contention-free), and whether collectives take their
    /// contention.
    pub model: Option<&'a dyn PenaltyModel>,
    pub contention: bool,
    /// Each record's [`Finished::prediction`] wanted: a record is then handed over once
    /// what its figures read of others is known too (the arrival of a rendezvous message
    /// it sent, for its contention), and records whose replay was forced (a killed run)
    /// at the end.
    pub figures: bool,
    pub finished: &'a mut dyn FnMut(Finished),
    /// Told of the replay's network as it runs (flows added, intervals closed, each
    /// inter-node flow's owner as `rank index << 32 | record`); with [`Side::figures`], a
    /// record that sends an inter-node message is then handed over once the message
    /// arrived, after every interval that names it.
    pub net: Option<Box<dyn NetSink + 'a>>,
    /// Told of each collective operation (as [`crate::predict::RunPrediction`]'s
    /// `collectives` and `coll_traffic` give it: its span, penalty, members' contention
    /// and node pairs) once all its members' figures are made (just before the last is
    /// handed over); with [`Side::figures`], whose contention it sums.
    pub collectives: Option<CollSink<'a>>,
}

/// Where [`Side::collectives`] are told: an operation and its node pairs.
pub type CollSink<'a> = &'a mut dyn FnMut(&CollOp, &[NodePair]);

/// A collective operation's node pairs and call, as its members are read (for
/// [`Side::collectives`]).
struct CollMembers {
    placement: Placement,
    /// As `RunTrace::world_size` of the loaded run.
    world: u32,
    model: bool,
    /// Per record slot of a member whose operation is not complete yet: its call's name
    /// and its messages (source node, destination node, bytes).
    members: FxMap<u32, (Option<&'static str>, Vec<NodePair>)>,
}

/// Calls one replay may read ahead of the slowest other before it pauses for it: the
/// calls read and not yet taken by every replay are held. (A few in the unit tests, so
/// that their short runs pause often.)
const LEAD: u64 = if cfg!(test) { 3 } else { 256 };

/// Calls every replay has taken that the reader lets go at once ([`Reader::took`]).
const LET_GO: u64 = if cfg!(test) { 2 } else { 32 };

/// [`replay_window`] for several replays side by side over one read of the run (each
/// call read and planned once, held until every replay has taken it): each pauses when it
/// has read `LEAD` calls beyond the slowest other, so the calls held stay bounded.
pub fn replay_windows(
    order: RunOrder,
    placement: &Placement,
    protocol: super::Protocol,
    p2p: &P2p,
    cost: CostFn,
    sides: Vec<Side>,
) -> Result<Vec<Stats>, Error> {
    let n = sides.len();
    let reader = Rc::new(RefCell::new(Reader::new(
        order,
        placement.clone(),
        protocol,
        n,
    )));
    // (Read before the engines: `take` reads the reader's metadata too.)
    let unseen = super::unseen_progress(reader.borrow().order.metas.iter());
    let shared = super::cpus::shared_cpus(reader.borrow().order.metas.iter());
    let mut engines: Vec<_> = sides
        .into_iter()
        .enumerate()
        .map(|(k, side)| {
            let mut store = Window::new(reader.clone(), k, cost, side.figures, side.finished);
            if let Some(sink) = side.collectives {
                let world = reader
                    .borrow()
                    .order
                    .metas
                    .iter()
                    .map(|m| m.world_size)
                    .max();
                store.colls = Some((
                    sink,
                    CollMembers {
                        placement: placement.clone(),
                        world: world.unwrap_or(0).max(0) as u32,
                        model: side.model.is_some(),
                        members: FxMap::default(),
                    },
                ));
            }
            // (`take` reads the reader's metadata for the collectives: not while it reads.)
            store.direct = n == 1 && store.colls.is_none();
            let mut net = network(p2p, side.model, protocol, placement.nodes(), false);
            if let Some(sink) = side.net {
                store.hold_senders = true;
                net = net.with_sink(sink);
            }
            Engine::new(
                store,
                p2p,
                net,
                placement,
                protocol,
                side.contention,
                (&unseen, &shared),
            )
        })
        .collect();
    let mut done = vec![false; n];
    while done.contains(&false) {
        for (k, e) in engines.iter_mut().enumerate() {
            if done[k] || !e.resume() {
                continue;
            }
            // What is left: nonblocking operations whose request never became final (a
            // message that never arrived), finished as the batch replay finishes them at
            // its end; then the records whose figures waited for the end.
            e.s.finish_all();
            e.settle();
            e.s.emit_rest();
            reader.borrow_mut().leave(k);
            done[k] = true;
        }
    }
    if let Some(err) = reader.borrow_mut().err.take() {
        return Err(err);
    }
    let mut stats = Vec::with_capacity(n);
    let message_slots = reader.borrow().msg_slots.len();
    for e in &mut engines {
        if let Some(err) = e.s.err.take() {
            return Err(err);
        }
        stats.push(Stats {
            message_slots,
            ..e.s.stats
        });
    }
    Ok(stats)
}

/// A call read and planned, held until every replay has taken it.
struct Read {
    call: Call,
    planned: Planned,
    fixed: Fixed,
}

/// What every replay takes of a call alike, found once when it is read.
#[derive(Debug, Clone, Copy)]
struct Fixed {
    /// Its rank index, its stream (NONE: a thread the first pass did not see), its entry
    /// on rank 0's clock (ns), its measured start and end (seconds from the origin), the
    /// connection of the message it sends (NONE: none).
    ri: usize,
    stream: u32,
    entry_ns: i64,
    m_start: f64,
    m_end: f64,
    conn: u32,
    /// Its events: the reader's `ev_from..ev_from + events`, numbered as made. (One queue
    /// for every held call's events: most calls make one or none, and a `Vec` each was an
    /// allocation per message.)
    ev_from: u64,
    events: u32,
    /// Its record slot, the same in every replay ([`Finished::slot`]), and the slot of
    /// the message it sends (NONE: none), likewise.
    slot: u32,
    msg_slot: u32,
}

/// The calls held, in a ring of entries reused in place: [`Held::push`] gives the next
/// entry to write, field by field.
#[derive(Default)]
struct Held {
    ring: Vec<Read>,
    head: usize,
    len: usize,
}

impl Held {
    fn len(&self) -> usize {
        self.len
    }

    /// Held call `at` (0: the first).
    #[inline]
    fn get(&self, at: usize) -> &Read {
        debug_assert!(at < self.len);
        &self.ring[(self.head + at) & (self.ring.len() - 1)]
    }

    /// A new last entry, holding what a call let go left there.
    #[inline]
    fn push(&mut self) -> &mut Read {
        if self.len == self.ring.len() {
            self.grow();
        }
        let i = (self.head + self.len) & (self.ring.len() - 1);
        self.len += 1;
        &mut self.ring[i]
    }

    /// Lets the first call go; its number of events.
    #[inline]
    fn pop_front(&mut self) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let mask = self.ring.len() - 1;
        let r = &mut self.ring[self.head];
        // Its per-peer bytes go now, not when the entry is written again.
        r.call.arcs = None;
        let events = r.fixed.events;
        self.head = (self.head + 1) & mask;
        self.len -= 1;
        Some(events)
    }

    /// Twice the entries (a power of two), the calls held first.
    #[cold]
    fn grow(&mut self) {
        let n = (self.ring.len() * 2).max(16);
        let mut ring: Vec<Read> = (0..n).map(|_| Read::blank()).collect();
        for (k, x) in ring.iter_mut().take(self.len).enumerate() {
            let i = (self.head + k) & (self.ring.len() - 1);
            std::mem::swap(x, &mut self.ring[i]);
        }
        self.ring = ring;
        self.head = 0;
    }
}

impl Read {
    fn blank() -> Read {
        Read {
            call: Call {
                rec: 0,
                record: Default::default(),
                arcs: None,
            },
            planned: Planned {
                hot: Hot::BLANK,
                msg: None,
            },
            fixed: Fixed {
                ri: 0,
                stream: NONE,
                entry_ns: 0,
                m_start: 0.0,
                m_end: 0.0,
                conn: NONE,
                ev_from: 0,
                events: 0,
                slot: NONE,
                msg_slot: NONE,
            },
        }
    }
}

/// The run read once for the replays side by side.
struct Reader {
    order: RunOrder,
    online: OnlinePlan,
    /// As `RunTrace::origin_ns` of the loaded run.
    origin: i64,
    /// Per rank: (thread, stream) of its threads; per stream: its calls and its first
    /// call's measured start (seconds from the origin).
    rank_streams: Vec<Vec<(u16, u32)>>,
    lens: Vec<usize>,
    starts: Vec<f64>,
    /// Per stream: its WORLD rank.
    stream_ranks: Vec<i32>,
    /// Connections (messages from one rank to another) numbered as first seen.
    conns: Conns,
    /// Calls read that some replay has not taken, the first numbered `base`.
    held: Held,
    base: u64,
    /// The events of the held calls, in their order, from `events[ev_head]` on (those
    /// before it are of calls every replay has taken, let go in batches: a call's events
    /// are then one slice, which iterates faster than a range of a `VecDeque`); `ev_end`:
    /// the number of events made so far.
    events: Vec<Event>,
    ev_head: usize,
    ev_end: u64,
    /// The events of the call read last, when its replay takes it at once.
    made: Vec<Event>,
    /// Per replay: the number of the next call it takes; whether it still reads.
    pos: Vec<u64>,
    active: Vec<bool>,
    eof: bool,
    err: Option<Error>,
    /// Record slots: a call read takes one for every replay (each holds its record in
    /// that slot of its own), so the replays need no free list each and their results
    /// join by slot.
    rec_slots: SharedSlots,
    /// Message slots alike: the online plan's events name a message by its slot, so a
    /// replay finds it without a map from sending records to messages.
    msg_slots: SharedSlots,
}

/// Connections (messages from one rank to another) numbered as first seen.
#[derive(Default)]
struct Conns {
    map: FxMap<(i32, i32), u32>,
    /// Per WORLD rank: the destination and number of its last connection looked up.
    last: Vec<(i32, u32)>,
}

impl Conns {
    /// The number of the connection from WORLD rank `src` to `dst`. A rank's last one is
    /// looked up first: most messages of a rank go to the peer its previous one went to
    /// (a ring, an exchange), and the map costs a hash.
    #[inline]
    fn of(&mut self, src: i32, dst: i32) -> u32 {
        let s = usize::try_from(src).ok();
        if let Some((d, c)) = s.and_then(|s| self.last.get(s)).copied()
            && d == dst
            && c != NONE
        {
            return c;
        }
        let next = self.map.len() as u32;
        let c = *self.map.entry((src, dst)).or_insert(next);
        if let Some(s) = s {
            if self.last.len() <= s {
                self.last.resize(s + 1, (NO_RANK, NONE));
            }
            self.last[s] = (dst, c);
        }
        c
    }
}

/// Slots every replay holds until it lets go: per slot, the replays that have not let it
/// go yet, and the free slots.
#[derive(Default)]
struct SharedSlots {
    refs: Vec<u32>,
    free: Vec<u32>,
}

impl SharedSlots {
    /// The slot [`SharedSlots::take`] gives next.
    fn next(&self) -> u32 {
        self.free.last().copied().unwrap_or(self.refs.len() as u32)
    }

    /// A free slot, held by `holders` replays.
    fn take(&mut self, holders: usize) -> u32 {
        let g = self.free.pop().unwrap_or_else(|| {
            self.refs.push(0);
            self.refs.len() as u32 - 1
        });
        self.refs[g as usize] = holders as u32;
        g
    }

    /// A replay let go of slot `g`: free once every holder has.
    fn release(&mut self, g: u32) {
        let refs = &mut self.refs[g as usize];
        *refs -= 1;
        if *refs == 0 {
            self.free.push(g);
        }
    }

    /// How many slots there have been at most.
    fn len(&self) -> usize {
        self.refs.len()
    }
}

impl Reader {
    fn new(order: RunOrder, placement: Placement, protocol: super::Protocol, n: usize) -> Reader {
        let online = OnlinePlan::new(&order.metas, placement, protocol);
        let metas = &order.metas;
        let origin = metas
            .iter()
            .map(|m| m.to_global_ns(m.init_ns))
            .min()
            .unwrap_or(0);
        let (mut rank_streams, mut lens, mut starts) = (Vec::new(), Vec::new(), Vec::new());
        let mut stream_ranks = Vec::new();
        // Streams as the batch plan numbers them: by rank, then thread.
        for (ri, threads) in order.threads().into_iter().enumerate() {
            let mut mine = Vec::new();
            for t in threads {
                mine.push((t.thread, lens.len() as u32));
                lens.push(t.calls as usize);
                stream_ranks.push(metas[ri].rank);
                starts.push(RunTrace::seconds_since(&metas[ri], t.first_start, origin));
            }
            rank_streams.push(mine);
        }
        Reader {
            order,
            online,
            origin,
            rank_streams,
            lens,
            starts,
            stream_ranks,
            conns: Conns::default(),
            held: Held::default(),
            base: 0,
            events: Vec::new(),
            ev_head: 0,
            made: Vec::new(),
            ev_end: 0,
            pos: vec![0; n],
            active: vec![true; n],
            eof: false,
            err: None,
            rec_slots: SharedSlots::default(),
            msg_slots: SharedSlots::default(),
        }
    }

    /// The next call for replay `k` (its index in `held`); None at the end of the run (or
    /// at a read error, kept in `err`).
    fn next(&mut self, k: usize) -> Option<usize> {
        let at = (self.pos[k] - self.base) as usize;
        if at == self.held.len() {
            let holders = self.pos.len();
            self.read(holders, false, |held, _, call, planned, fixed| {
                // Written in place, field by field (a `Read` built and moved in was a
                // copy through the stack, and the call's another).
                let h = held.push();
                h.call.rec = call.rec;
                h.call.record = call.record;
                h.call.arcs = call.arcs.take();
                h.planned = *planned;
                h.fixed = *fixed;
            })?;
        }
        Some(at)
    }

    /// Reads and plans the next call of the run, held by `holders` replays, and gives it to
    /// `keep` where the run's reader holds it, with the held calls; its events go to the
    /// held calls' queue, or, for a replay that takes the call at once (`direct`), to
    /// `keep` (a slice, not queued and let go again); None at the end of the run (or at a
    /// read error, kept in `err`).
    #[inline(always)]
    fn read<R>(
        &mut self,
        holders: usize,
        direct: bool,
        keep: impl FnOnce(&mut Held, &[Event], &mut Call, &Planned, &Fixed) -> R,
    ) -> Option<R> {
        if self.eof {
            return None;
        }
        match self.order.peek() {
            Ok(Some(Peeked {
                at: entry_ns,
                ri,
                call,
                clock,
                ..
            })) => {
                let slot = self.rec_slots.take(holders);
                let slots = Slots {
                    rec: slot,
                    msg: self.msg_slots.next(),
                };
                let events = &mut self.events;
                let made = &mut self.made;
                made.clear();
                let before = events.len();
                let planned = if direct {
                    self.online.record(ri, call, slots, |e| made.push(e))
                } else {
                    self.online.record(ri, call, slots, |e| events.push(e))
                };
                let n = events.len() - before;
                let msg_slot = if planned.msg.is_some() {
                    self.msg_slots.take(holders)
                } else {
                    NONE
                };
                self.ev_end += n as u64;
                let r = &call.record;
                let stream = self.rank_streams[ri]
                    .iter()
                    .find(|t| t.0 == r.thread)
                    .map_or(NONE, |t| t.1);
                let conn = planned
                    .msg
                    .map_or(NONE, |m| self.conns.of(m.src_rank, m.dst_rank));
                let fixed = Fixed {
                    ri,
                    stream,
                    entry_ns,
                    m_start: RunTrace::seconds_from(entry_ns, self.origin),
                    m_end: clock.seconds_since(r.t_end, self.origin),
                    conn,
                    ev_from: self.ev_end - n as u64,
                    events: n as u32,
                    slot,
                    msg_slot,
                };
                let kept = keep(&mut self.held, &self.made, call, &planned, &fixed);
                self.order.advance();
                Some(kept)
            }
            Ok(None) => {
                self.eof = true;
                None
            }
            Err(e) => {
                self.eof = true;
                self.err = Some(e);
                None
            }
        }
    }

    /// The events of held call `at` (its index in `held`), in order.
    fn events_of(&self, at: usize) -> &[Event] {
        let r = self.held.get(at);
        self.events_at(&r.fixed)
    }

    /// The events of a call read, `f` its [`Fixed`], in order.
    fn events_at(&self, f: &Fixed) -> &[Event] {
        let from = (f.ev_from - (self.ev_end - self.events.len() as u64)) as usize;
        &self.events[from..from + f.events as usize]
    }

    /// Replay `k` took its next call.
    #[inline]
    fn took(&mut self, k: usize) {
        self.pos[k] += 1;
        // The calls every replay has taken go [`LET_GO`] at a time: once a call, the
        // look over every replay's position cost about 100 instructions a record. (Only
        // `drop_taken` moves `base`, to the slowest position: the slowest replay reaches
        // `base + LET_GO` before any call held has to go.)
        if self.pos[k] == self.base + LET_GO {
            self.drop_taken();
        }
    }

    /// Replay `k`, the only one, took the call it read itself (never held).
    fn took_direct(&mut self, k: usize) {
        self.pos[k] += 1;
        self.base += 1;
    }

    /// Replay `k` reads no more.
    fn leave(&mut self, k: usize) {
        self.active[k] = false;
        self.drop_taken();
    }

    fn drop_taken(&mut self) {
        let low = (0..self.pos.len())
            .filter(|&k| self.active[k])
            .map(|k| self.pos[k])
            .min()
            .unwrap_or(u64::MAX);
        while self.base < low
            && let Some(events) = self.held.pop_front()
        {
            self.ev_head += events as usize;
            self.base += 1;
        }
        // The events let go leave once they are all the events or half of them (each is
        // moved at most once a time as many events have been made).
        let_go(&mut self.events, &mut self.ev_head, 1024);
    }

    /// Replay `k` has read [`LEAD`] calls beyond another that still reads.
    #[inline]
    fn ahead(&self, k: usize) -> bool {
        let me = self.pos[k];
        // Every replay that still reads is at `base` or beyond: within `LEAD` of it, none
        // is passed by `LEAD` (asked once a call: the look over the others is skipped).
        if me <= self.base + LEAD {
            return false;
        }
        (0..self.pos.len()).any(|o| o != k && self.active[o] && me > self.pos[o] + LEAD)
    }
}

/// Drops the items of `v` before `head` (those taken) once they are all of them, or at
/// least `min` and half of them: each item is moved at most once per as many pushed.
#[inline]
fn let_go<T>(v: &mut Vec<T>, head: &mut usize, min: usize) {
    if *head == v.len() {
        v.clear();
        *head = 0;
    } else if *head >= min && 2 * *head >= v.len() {
        v.drain(..*head);
        *head = 0;
    }
}

/// A queue of slots in a `Vec` from index `head` on: read at its front without a
/// `VecDeque`'s wrap-around (a stream's records read and not reached are read there at
/// every step); the slots taken leave in batches, once they are all or half of them.
#[derive(Debug, Clone, Default)]
struct Line {
    v: Vec<u32>,
    head: usize,
}

impl Line {
    #[inline]
    fn push(&mut self, g: u32) {
        let_go(&mut self.v, &mut self.head, 64);
        self.v.push(g);
    }

    #[inline]
    fn front(&self) -> Option<&u32> {
        self.v.get(self.head)
    }

    #[inline]
    fn pop_front(&mut self) {
        self.head = (self.head + 1).min(self.v.len());
    }

    fn iter(&self) -> std::slice::Iter<'_, u32> {
        self.v[self.head..].iter()
    }
}

/// Whether a nonblocking operation's completion call is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Completer {
    /// Not a nonblocking operation.
    NotOp,
    /// Not read yet (it may never be).
    Unknown,
    /// Read, not ended.
    Pending,
    /// Ended, or there is none.
    Done,
}

/// A receive's match, or a rendezvous message's receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    Pending,
    Yes,
    No,
}

/// A record's slot.
#[derive(Debug, Clone)]
struct Rec {
    id: Id,
    stream: u32,
    hot: Hot,
    start: f64,
    end: f64,
    reason: Reason,
    /// The recorded peer (an `MPI_Sendrecv`'s source), read where it matched nothing.
    peer: i32,
    /// Bytes of a window synchronisation.
    bytes: u64,
    /// A receive whose message is not known yet.
    recv_pending: bool,
    /// The WORLD rank it receives from.
    src: i32,
    /// A collective member whose operation is not complete yet (`hot.inst_of` is then
    /// the operation's number, not its slot).
    inst_pending: bool,
    /// A probe whose receive is not read yet, and that receive.
    probe_pending: bool,
    probe_recv: u32,
    /// The nonblocking records a completion call completes, by record number (the batch
    /// plan's order).
    completes: Vec<(u32, u32)>,
    completer: Completer,
    /// Index among its operation's members, and whether it is the root.
    member: u32,
    root: bool,
    ended: bool,
    /// Its slot is in use; `gone`: the replay has finished it (its figures may wait).
    live: bool,
    gone: bool,
    /// Measured, clock-corrected start and end (seconds from the origin).
    m_start: f64,
    m_end: f64,
    m_dur: f64,
    entry_ns: i64,
    /// A completion call finished it (`done_end`: that call's end), and when its request
    /// completed.
    has_done_by: bool,
    done_end: f64,
    req_done: f64,
    /// What its figures read of other records, kept when it is finished (they may go
    /// first): the operations a completion call completed (their [`Hot`], whether root),
    /// the message a probe waited for; and the rendezvous messages whose arrival its
    /// contention still waits for.
    ops: Vec<(Hot, bool)>,
    probe_m: u32,
    fig_pending: u32,
    /// A record an event may name later (a receive, probe, completion call, nonblocking
    /// operation or collective member), until it is finished: only such a record is
    /// found by the slot an event names ([`Window::slot_of`]).
    named: bool,
}

/// A message's slot.
#[derive(Debug, Clone, Copy)]
struct MsgSlot {
    msg: Msg,
    recv: Match,
    times: [f64; 6],
    waiters: [u32; 2],
    flow: u32,
    /// Its nonblocking send and receive records (NONE: blocking, or not matched).
    send_op: u32,
    recv_op: u32,
    /// Held by its send record, its receive record (or the wait for one), and the
    /// network until it arrives (and by the records whose figures read it).
    refs: u32,
    /// Measured posts: its send's and its receive's entries (NaN: none).
    m_posts: [f64; 2],
    /// The record whose figures wait for its arrival.
    fig_waiter: u32,
    /// Its sending record, for the network's sink; and that record while its hand-over
    /// waits for the arrival (`Window::hold_senders`).
    owner: Id,
    owner_waiter: u32,
}

/// A collective operation's slot.
#[derive(Debug, Clone)]
struct InstSlot {
    info: InstInfo,
    cost: CollCost,
    state: InstState,
    root_start: f64,
    members: Vec<u32>,
    /// Held by its members' records.
    refs: u32,
    /// Its members' replayed and measured entries and WORLD ranks, by member (their
    /// records may go first), and the last and the first other than the root to enter of
    /// each (see [`entry_order`]; the replayed ones once all have entered).
    starts: Vec<f64>,
    m_starts: Vec<f64>,
    ranks: Vec<i32>,
    entries: Option<(usize, usize)>,
    m_entries: (usize, usize),
    /// Members' records that ended before every member entered (a scan's chain), whose
    /// figures wait for the last entry (the batch path reads it).
    fig_waiters: Vec<u32>,
    /// Its contention (`Store::set_coll_contention`).
    contention: f64,
    /// Its members' times in a tree broadcast (`Store::tree_times`).
    tree: TreeTimes,
    /// For [`Side::collectives`]: its call, node pairs and first member, and its members'
    /// (start, end, contention) as they are handed over, and how many were.
    call: &'static str,
    pairs: Vec<NodePair>,
    first: Id,
    spans: Vec<(f64, f64, f64)>,
    handed: u32,
}

struct Window<'a> {
    reader: Rc<RefCell<Reader>>,
    /// Its number among the replays sharing the reader.
    side: usize,
    figures: bool,
    world_ranks: Vec<i32>,
    cost: CostFn<'a>,
    finished: &'a mut dyn FnMut(Finished),
    err: Option<Error>,
    eof: bool,
    lens: Vec<usize>,
    starts: Vec<f64>,
    /// Per stream: its records read and not yet reached, the position of the first, and
    /// how many are read.
    queue: Vec<Line>,
    head: Vec<usize>,
    read: Vec<usize>,
    /// Per stream: nonblocking records whose completion call is not read yet (and some
    /// whose is: pruned as it grows).
    awaiting: Vec<Vec<u32>>,
    /// Per rank index: its threads not read to the end; per WORLD rank: whether it has
    /// calls not read yet.
    streams_left: Vec<usize>,
    world_open: Vec<bool>,
    /// Per rank: the same records by their end (rank clock): a completion call returns at
    /// its operation's end and is entered no later, so once the rank's calls entered after
    /// that end are read, an operation whose call is not read has none (a request freed,
    /// not waited for, is let go then instead of at its thread's end).
    awaiting_end: Vec<BinaryHeap<Reverse<(u64, u32, Id)>>>,
    /// By the reader's record and message slots ([`Read::slot`], [`Read::msg_slot`]); a
    /// message whose receive is not read yet is one whose `recv` is pending.
    recs: Vec<Rec>,
    msgs: Vec<MsgSlot>,
    /// Message slots this replay let go, given back to the reader at its next read (it
    /// may be borrowed when they are let go).
    msgs_let_go: Vec<u32>,
    /// The record being taken and its slot, while its events are handled.
    taking: (Id, u32),
    insts: Vec<InstSlot>,
    free_insts: Vec<u32>,
    /// Nonblocking records whose request may have become final.
    checks: Vec<u32>,
    /// The run is replayed: every nonblocking record left is finished as it stands.
    final_pass: bool,
    /// Records whose figures no longer wait.
    fig_ready: Vec<u32>,
    /// A record that sends an inter-node message is handed over once it arrived (for a
    /// network sink, whose intervals then all come before the record).
    hold_senders: bool,
    /// Where collective operations are told of ([`Side::collectives`]).
    colls: Option<(CollSink<'a>, CollMembers)>,
    live: (usize, usize, usize),
    stats: Stats,
    /// [`Reader::ahead`] when last asked: false until this replay reads again.
    ahead: Cell<bool>,
    /// The only replay of the read, told of no collective operation: it takes each call
    /// from the run's reader directly ([`Window::pull`]).
    direct: bool,
}

fn is_op(op: Op) -> bool {
    matches!(op, Op::Isend { .. } | Op::Irecv | Op::ICol)
}

impl<'a> Window<'a> {
    fn new(
        reader: Rc<RefCell<Reader>>,
        side: usize,
        cost: CostFn<'a>,
        figures: bool,
        finished: &'a mut dyn FnMut(Finished),
    ) -> Window<'a> {
        let rd = reader.borrow();
        let metas = &rd.order.metas;
        let (lens, starts) = (rd.lens.clone(), rd.starts.clone());
        let n = lens.len();
        let streams_left: Vec<usize> = rd.rank_streams.iter().map(Vec::len).collect();
        let world = metas
            .iter()
            .map(|m| m.world_size.max(m.rank + 1))
            .max()
            .unwrap_or(0)
            .max(0) as usize;
        let mut world_open = vec![false; world];
        for (m, &left) in metas.iter().zip(&streams_left) {
            if let Ok(w) = usize::try_from(m.rank) {
                world_open[w] = left > 0;
            }
        }
        let world_ranks = metas.iter().map(|m| m.rank).collect();
        drop(rd);
        Window {
            world_ranks,
            reader,
            side,
            figures,
            cost,
            finished,
            err: None,
            eof: false,
            lens,
            starts,
            queue: vec![Line::default(); n],
            head: vec![0; n],
            read: vec![0; n],
            awaiting: vec![Vec::new(); n],
            awaiting_end: Vec::new(),
            streams_left,
            world_open,
            recs: Vec::new(),
            msgs: Vec::new(),
            msgs_let_go: Vec::new(),
            taking: ((u32::MAX, u32::MAX), NONE),
            insts: Vec::new(),
            free_insts: Vec::new(),
            checks: Vec::new(),
            final_pass: false,
            fig_ready: Vec::new(),
            hold_senders: false,
            colls: None,
            live: (0, 0, 0),
            stats: Stats::default(),
            ahead: Cell::new(false),
            direct: false,
        }
    }

    /// Whether what record `g`'s replay reads of other records is known.
    #[inline]
    fn resolved(&self, g: u32) -> bool {
        let r = &self.recs[g as usize];
        if r.recv_pending || r.inst_pending || r.probe_pending {
            return false;
        }
        if r.probe_recv != NONE && self.recs[r.probe_recv as usize].recv_pending {
            return false;
        }
        let m = r.hot.msg_out;
        !(m != NONE && {
            let s = &self.msgs[m as usize];
            s.msg.rendezvous && s.recv == Match::Pending
        })
    }

    /// Whether this replay is still [`Reader::ahead`] (the others may have caught up).
    #[inline(never)]
    fn still_ahead(&self) -> bool {
        let a = self.reader.borrow().ahead(self.side);
        self.ahead.set(a);
        a
    }

    /// Reads the next call of the run; false at its end.
    fn pull(&mut self) -> bool {
        if self.eof {
            return false;
        }
        let reader = self.reader.clone();
        let mut rd = reader.borrow_mut();
        // (Most calls let no message go: the drain is skipped.)
        if !self.msgs_let_go.is_empty() {
            for m in self.msgs_let_go.drain(..) {
                rd.msg_slots.release(m);
            }
        }
        if self.direct {
            // The only replay: it takes the call where the run's reader holds it, not
            // through the held calls (a copy of each call, and its events queued and let go
            // again, for no other replay to take).
            let taken = rd.read(1, true, |_, events, call, planned, fixed| {
                self.take(call, planned, fixed, events.iter())
            });
            let Some(more) = taken else {
                drop(rd);
                self.end_of_run();
                return false;
            };
            rd.took_direct(self.side);
            return more;
        }
        let at = rd.next(self.side);
        drop(rd);
        let Some(at) = at else {
            self.end_of_run();
            return false;
        };
        let more = {
            let rd = reader.borrow();
            let h = rd.held.get(at);
            self.take(&h.call, &h.planned, &h.fixed, rd.events_of(at).iter())
        };
        let mut rd = reader.borrow_mut();
        rd.took(self.side);
        // Only its own reading puts a replay ahead (the others' only brings them closer):
        // asked here, once a call, and again at each event only while it is ahead.
        self.ahead.set(rd.ahead(self.side));
        more
    }

    /// Takes call `c`, planned as `planned`, with what `read` fixed of it and its
    /// `events`; false if it ends the run (an error). (Inlined at both its callers: out of
    /// line, the replay that takes its calls at once ran 1.5 % more instructions.)
    #[inline(always)]
    fn take<'e>(
        &mut self,
        c: &Call,
        planned: &Planned,
        read: &Fixed,
        events: impl Iterator<Item = &'e Event>,
    ) -> bool {
        let (ri, stream) = (read.ri, read.stream);
        if stream == NONE {
            // The spool changed since the first pass (a run still being written).
            self.err = Some(Error::Input(format!(
                "rank {}'s spool changed while it was read (a thread the first pass did not see)",
                self.world_ranks[ri]
            )));
            self.end_of_run();
            return false;
        };
        self.stats.records += 1;
        let id = (ri as u32, c.rec);
        let r = &c.record;
        let g = self.alloc_rec(read.slot);
        let mut hot = planned.hot;
        let (m_start, m_end, entry_ns) = (read.m_start, read.m_end, read.entry_ns);
        if let Some(m) = planned.msg {
            let conn = read.conn;
            let ms = self.alloc_msg(read.msg_slot);
            // Written in place, field by field (a slot built and moved in was a copy).
            let s = &mut self.msgs[ms as usize];
            s.msg = Msg::of(m, g, conn);
            s.recv = Match::Pending;
            s.times = [f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN, 0.0];
            s.waiters = [NONE; 2];
            s.flow = NONE;
            s.send_op = if matches!(hot.op, Op::Isend { .. }) {
                g
            } else {
                NONE
            };
            s.recv_op = NONE;
            s.refs = 3;
            s.m_posts = [m_start, f64::NAN];
            s.fig_waiter = NONE;
            s.owner = id;
            s.owner_waiter = NONE;
            hot.msg_out = ms;
        }
        if let Some(h) = self.awaiting_end.get_mut(ri) {
            while let Some(&Reverse((end, o, oid))) = h.peek()
                && end < r.t_start
            {
                h.pop();
                let x = &mut self.recs[o as usize];
                if x.live && x.id == oid && x.completer == Completer::Unknown {
                    x.completer = Completer::Done;
                    self.checks.push(o);
                }
            }
        }
        let op = hot.op;
        let completer = if !is_op(op) {
            Completer::NotOp
        } else if r.flags & FLAG_NONBLOCKING != 0 {
            Completer::Unknown
        } else {
            Completer::Done
        };
        let slot = &mut self.recs[g as usize];
        slot.id = id;
        slot.stream = stream;
        slot.hot = hot;
        slot.start = f64::NAN;
        slot.end = f64::NAN;
        slot.reason = Reason::None;
        slot.peer = if op == Op::SendRecv { r.peer2 } else { r.peer };
        slot.bytes = r.bytes_send + r.bytes_recv;
        let src = receive_source(op, r);
        slot.recv_pending = src.is_some();
        slot.src = src.unwrap_or(NO_RANK);
        slot.inst_pending = hot.inst_of != NONE;
        slot.probe_pending = op == Op::Probe;
        slot.probe_recv = NONE;
        slot.completes.clear();
        slot.completer = completer;
        slot.member = NONE;
        slot.root = false;
        slot.ended = false;
        slot.live = true;
        slot.gone = false;
        slot.m_start = m_start;
        slot.m_end = m_end;
        slot.m_dur = r.duration_s();
        slot.entry_ns = entry_ns;
        slot.has_done_by = false;
        slot.done_end = f64::NAN;
        slot.req_done = f64::NAN;
        slot.ops.clear();
        slot.probe_m = NONE;
        slot.fig_pending = 0;
        let s = stream as usize;
        self.queue[s].push(g);
        self.read[s] += 1;
        if completer == Completer::Unknown {
            self.await_completer(s, g);
            if self.awaiting_end.len() <= ri {
                self.awaiting_end.resize_with(ri + 1, BinaryHeap::new);
            }
            self.awaiting_end[ri].push(Reverse((r.t_end, g, id)));
        }
        if let Some((_, t)) = &mut self.colls
            && hot.inst_of != NONE
        {
            let rd = self.reader.borrow();
            let meta = &rd.order.metas[ri];
            let kind = graph::kind_of(&meta.calls, c.record.call);
            let mut msgs = Vec::new();
            let arcs = c.arcs.as_deref();
            let name = graph::member_traffic(
                &c.record,
                meta,
                arcs,
                kind,
                t.world,
                &t.placement,
                &mut msgs,
            );
            t.members.insert(g, (name, msgs));
        }
        // Its own events find it before it is marked `named` (most receives are matched as
        // they are read, when their send was read first).
        self.taking = (id, g);
        for e in events {
            self.event(e);
        }
        self.taking = ((u32::MAX, u32::MAX), NONE);
        // A receive from a rank whose calls are all read, a rendezvous message to one,
        // match nothing.
        let r = &self.recs[g as usize];
        if r.recv_pending && self.world_done(r.src) {
            self.recs[g as usize].recv_pending = false;
        }
        let m = self.recs[g as usize].hot.msg_out;
        if m != NONE
            && self.msgs[m as usize].recv == Match::Pending
            && self.world_done(self.msgs[m as usize].msg.dst_rank)
        {
            self.no_receive(m);
        }
        // Only the records a later event may name are found by their slot: a receive not
        // matched yet, a collective member whose operation is not complete, a nonblocking
        // operation whose completion call is not read, a probe (its receive comes later),
        // a completion call (an operation entered at its instant may come after it). A
        // blocking send never is: its message is named by its own slot.
        let r = &mut self.recs[g as usize];
        r.named = r.recv_pending
            || r.inst_pending
            || r.completer == Completer::Unknown
            || matches!(op, Op::Probe | Op::Complete);
        if self.read[s] == self.lens[s] {
            // The thread is read: an operation whose completion call is not read has none,
            // a probe no receive followed has none to wait for.
            for g in std::mem::take(&mut self.awaiting[s]) {
                let r = &mut self.recs[g as usize];
                if r.live && r.stream == stream && r.completer == Completer::Unknown {
                    r.completer = Completer::Done;
                    self.checks.push(g);
                }
            }
            for &g in self.queue[s].iter() {
                self.recs[g as usize].probe_pending = false;
            }
            self.streams_left[ri] -= 1;
            if self.streams_left[ri] == 0 {
                self.rank_read(self.world_ranks[ri]);
            }
        }
        true
    }

    /// Whether every call of WORLD rank `w` is read (a rank outside the run, or without a
    /// spool, has none).
    fn world_done(&self, w: i32) -> bool {
        usize::try_from(w)
            .ok()
            .and_then(|w| self.world_open.get(w))
            .is_none_or(|open| !open)
    }

    /// Every call of WORLD rank `w` is read: receives from it and rendezvous messages to
    /// it that wait for a match have none.
    fn rank_read(&mut self, w: i32) {
        if let Some(open) = usize::try_from(w)
            .ok()
            .and_then(|w| self.world_open.get_mut(w))
        {
            *open = false;
        }
        for r in self.recs.iter_mut() {
            if r.live && r.recv_pending && r.src == w {
                r.recv_pending = false;
            }
        }
        for m in 0..self.msgs.len() as u32 {
            let s = &self.msgs[m as usize];
            if s.refs > 0 && s.recv == Match::Pending && s.msg.dst_rank == w {
                self.no_receive(m);
            }
        }
    }

    /// Message `m` is received by no record.
    fn no_receive(&mut self, m: u32) {
        self.msgs[m as usize].recv = Match::No;
        self.unref_msg(m);
    }

    fn await_completer(&mut self, s: usize, g: u32) {
        let list = &mut self.awaiting[s];
        list.push(g);
        if list.len() >= 64 && list.len().is_power_of_two() {
            let recs = &self.recs;
            list.retain(|&o| {
                let r = &recs[o as usize];
                r.live && r.stream == s as u32 && r.completer == Completer::Unknown
            });
        }
    }

    /// The slot of record `id` named in slot `g`, if held and an event may name it (the
    /// slot may hold another record by now: the reader reuses it once every replay has
    /// handed the first over).
    #[inline]
    fn slot_of(&self, (id, g): Named) -> Option<u32> {
        if id == self.taking.0 {
            return Some(self.taking.1);
        }
        let r = self.recs.get(g as usize)?;
        (r.named && r.live && !r.gone && r.id == id).then_some(g)
    }

    fn event(&mut self, e: &Event) {
        match *e {
            Event::Message { msg: m, recv, .. } => {
                // Its send was read before its receive or with it: its slot holds it, its
                // receive not known yet (nothing lets it go before: see `rank_read`).
                let pending = self
                    .msgs
                    .get(m as usize)
                    .is_some_and(|s| s.refs > 0 && s.recv == Match::Pending);
                let (true, Some(rg)) = (pending, self.slot_of(recv)) else {
                    return;
                };
                let r = &mut self.recs[rg as usize];
                r.hot.msg_in = m;
                r.recv_pending = false;
                let irecv = r.hot.op == Op::Irecv;
                let m_post = r.m_start;
                let ms = &mut self.msgs[m as usize];
                ms.recv = Match::Yes;
                ms.msg.recv = rg;
                ms.m_posts[1] = m_post;
                if irecv {
                    ms.recv_op = rg;
                }
            }
            Event::Completion { op, by } => {
                let (Some(og), Some(bg)) = (self.slot_of(op), self.slot_of(by)) else {
                    return;
                };
                let o = &mut self.recs[og as usize];
                o.completer = Completer::Pending;
                o.has_done_by = true;
                let list = &mut self.recs[bg as usize].completes;
                let at = list.partition_point(|x| x.0 < op.0.1);
                list.insert(at, (op.0.1, og));
            }
            Event::Probe { probe, recv } => {
                let (Some(pg), Some(rg)) = (self.slot_of(probe), self.slot_of(recv)) else {
                    return;
                };
                let p = &mut self.recs[pg as usize];
                p.probe_recv = rg;
                p.probe_pending = false;
            }
            Event::Instance {
                kind,
                ref members,
                root,
                n,
                block,
                multi_node,
                max_per_node,
                ..
            } => {
                let i = match self.free_insts.pop() {
                    Some(i) => i,
                    None => {
                        self.insts.push(InstSlot {
                            info: InstInfo {
                                kind,
                                members: 0,
                                root: None,
                                root_g: None,
                                n: 0,
                                block: 0,
                                multi_node: false,
                            },
                            cost: CollCost::default(),
                            state: InstState::default(),
                            root_start: f64::NAN,
                            members: Vec::new(),
                            refs: 0,
                            starts: Vec::new(),
                            m_starts: Vec::new(),
                            ranks: Vec::new(),
                            entries: None,
                            m_entries: (usize::MAX, usize::MAX),
                            fig_waiters: Vec::new(),
                            contention: 0.0,
                            tree: TreeTimes::default(),
                            call: "?",
                            pairs: Vec::new(),
                            first: (0, 0),
                            spans: Vec::new(),
                            handed: 0,
                        });
                        self.insts.len() as u32 - 1
                    }
                };
                self.live.2 += 1;
                self.stats.most_operations = self.stats.most_operations.max(self.live.2);
                let mut slots = std::mem::take(&mut self.insts[i as usize].members);
                slots.clear();
                slots.extend(members.iter().map(|&m| {
                    self.slot_of(m)
                        .expect("a collective member is held until its operation is complete")
                }));
                for (k, &m) in slots.iter().enumerate() {
                    let r = &mut self.recs[m as usize];
                    r.hot.inst_of = i;
                    r.inst_pending = false;
                    r.member = k as u32;
                    r.root = root == Some(k);
                }
                let instance = Instance {
                    kind,
                    members: slots,
                    root,
                    n,
                    block,
                    multi_node,
                    max_per_node,
                };
                let recs = &self.recs;
                let world = &self.world_ranks;
                let slot = &mut self.insts[i as usize];
                let at = |k: usize| &recs[instance.members[k] as usize];
                let count = instance.members.len();
                // The members' WORLD ranks first: the cost under other conditions counts
                // them by cluster.
                slot.ranks.clear();
                slot.ranks
                    .extend((0..count).map(|k| world[at(k).id.0 as usize]));
                let cost = (self.cost)(&instance, &slot.ranks);
                slot.starts.clear();
                slot.starts.resize(count, f64::NAN);
                slot.m_starts.clear();
                slot.m_starts.extend((0..count).map(|k| at(k).m_start));
                let m_starts = &slot.m_starts;
                slot.m_entries = entry_order(count, root, |k| m_starts[k]);
                slot.entries = None;
                slot.fig_waiters.clear();
                slot.contention = 0.0;
                slot.tree.by_member.clear();
                slot.info = InstInfo {
                    kind,
                    members: instance.members.len(),
                    root,
                    root_g: root.map(|k| instance.members[k]),
                    n,
                    block,
                    multi_node,
                };
                slot.cost = cost;
                slot.state = InstState::default();
                slot.root_start = f64::NAN;
                slot.refs = instance.members.len() as u32;
                slot.members = instance.members;
                if let Some((_, t)) = &mut self.colls {
                    // Its members' traffic, in member (rank) order: the last name stays.
                    slot.call = "?";
                    slot.pairs.clear();
                    for m in &slot.members {
                        if let Some((name, msgs)) = t.members.remove(m) {
                            slot.call = name.unwrap_or(slot.call);
                            slot.pairs.extend(msgs);
                        }
                    }
                    graph::merge_pairs(&mut slot.pairs);
                    slot.first = members.first().map_or((0, 0), |m| m.0);
                    slot.spans.clear();
                    slot.spans.resize(count, (f64::NAN, f64::NAN, 0.0));
                    slot.handed = 0;
                }
            }
        }
    }

    /// The run is read to its end: what was waiting for a match has none.
    fn end_of_run(&mut self) {
        self.eof = true;
        for r in self.recs.iter_mut().filter(|r| r.live) {
            r.recv_pending = false;
            r.probe_pending = false;
            if r.inst_pending {
                r.inst_pending = false;
                r.hot.inst_of = NONE;
            }
        }
        for m in 0..self.msgs.len() as u32 {
            let s = &self.msgs[m as usize];
            if s.refs > 0 && s.recv == Match::Pending {
                self.no_receive(m);
            }
        }
        for s in 0..self.awaiting.len() {
            for g in std::mem::take(&mut self.awaiting[s]) {
                let r = &mut self.recs[g as usize];
                if r.live && r.completer == Completer::Unknown {
                    r.completer = Completer::Done;
                    self.checks.push(g);
                }
            }
        }
    }

    /// Every nonblocking record left is finished as it stands.
    fn finish_all(&mut self) {
        self.final_pass = true;
        for (g, r) in self.recs.iter().enumerate() {
            if r.live && !r.gone && is_op(r.hot.op) {
                self.checks.push(g as u32);
            }
        }
    }

    /// Takes the reader's slot `g` for a record.
    fn alloc_rec(&mut self, g: u32) -> u32 {
        self.live.0 += 1;
        self.stats.most_records = self.stats.most_records.max(self.live.0);
        if self.recs.len() <= g as usize {
            self.grow_recs(g);
        }
        g
    }

    /// Slots up to `g` (the reader's slots grow as the records held do).
    #[cold]
    #[inline(never)]
    fn grow_recs(&mut self, g: u32) {
        while self.recs.len() <= g as usize {
            self.recs.push(Rec {
                id: (0, 0),
                stream: 0,
                hot: Hot::BLANK,
                start: f64::NAN,
                end: f64::NAN,
                reason: Reason::None,
                peer: 0,
                bytes: 0,
                recv_pending: false,
                src: NO_RANK,
                inst_pending: false,
                probe_pending: false,
                probe_recv: NONE,
                completes: Vec::new(),
                completer: Completer::NotOp,
                member: NONE,
                root: false,
                ended: false,
                live: false,
                gone: false,
                m_start: f64::NAN,
                m_end: f64::NAN,
                m_dur: f64::NAN,
                entry_ns: 0,
                has_done_by: false,
                done_end: f64::NAN,
                req_done: f64::NAN,
                ops: Vec::new(),
                probe_m: NONE,
                fig_pending: 0,
                named: false,
            });
        }
    }

    /// Takes the reader's message slot `k` (its fields are the caller's to write).
    #[inline]
    fn alloc_msg(&mut self, k: u32) -> u32 {
        self.live.1 += 1;
        self.stats.most_messages = self.stats.most_messages.max(self.live.1);
        if self.msgs.len() <= k as usize {
            self.grow_msgs(k);
        }
        k
    }

    /// Slots up to `k` (the reader's grow as the messages held do); a slot not in use
    /// holds no reference.
    #[cold]
    #[inline(never)]
    fn grow_msgs(&mut self, k: u32) {
        self.msgs.resize(
            k as usize + 1,
            MsgSlot {
                msg: Msg::of(
                    super::online::Message {
                        bytes: 0,
                        src_rank: NO_RANK,
                        dst_rank: NO_RANK,
                        src_node: 0,
                        dst_node: 0,
                        rendezvous: false,
                        packed: false,
                    },
                    NONE,
                    NONE,
                ),
                recv: Match::No,
                times: [f64::NAN; 6],
                waiters: [NONE; 2],
                flow: NONE,
                send_op: NONE,
                recv_op: NONE,
                refs: 0,
                m_posts: [f64::NAN; 2],
                fig_waiter: NONE,
                owner: (0, 0),
                owner_waiter: NONE,
            },
        );
    }

    #[inline]
    fn unref_msg(&mut self, m: u32) {
        let s = &mut self.msgs[m as usize];
        s.refs -= 1;
        if s.refs == 0 {
            self.msgs_let_go.push(m);
            self.live.1 -= 1;
        }
    }

    /// Record `g` is finished: its times go to the caller and its slot is free, or, where
    /// its figures are wanted, once what they read is known.
    fn retire(&mut self, g: u32, req_done: f64) {
        let r = &mut self.recs[g as usize];
        r.gone = true;
        r.req_done = req_done;
        if !self.figures {
            return self.emit(g);
        }
        // What the figures read of records that may go first, kept (and the messages and
        // operations it names held) until they are made.
        let (h, reason) = (r.hot, r.reason);
        if h.op == Op::Complete {
            let list = std::mem::take(&mut r.completes);
            let mut ops = std::mem::take(&mut r.ops);
            for &(_, o) in &list {
                let x = &self.recs[o as usize];
                ops.push((x.hot, x.root));
                self.hold(x.hot, true);
            }
            let r = &mut self.recs[g as usize];
            r.completes = list;
            r.ops = ops;
        } else if h.op == Op::Probe {
            let m = self.probe_msg(g);
            self.recs[g as usize].probe_m = m;
            if m != NONE {
                self.msgs[m as usize].refs += 1;
            }
        }
        // A forced call's partners may come later: its figures at the end, as the batch
        // path makes them.
        if reason == Reason::Unresolved {
            return;
        }
        // The contention of a rendezvous message it sent (or completed) needs its
        // arrival, which may come after its sender returned.
        let mut pending = 0;
        let mut wait_for = |msgs: &mut Vec<MsgSlot>, m: u32| {
            if m != NONE {
                let s = &mut msgs[m as usize];
                if s.msg.rendezvous && s.times[MsgTime::Arrive as usize].is_nan() {
                    // Its sender or the completion call of its send, never both.
                    debug_assert_eq!(s.fig_waiter, NONE);
                    s.fig_waiter = g;
                    pending += 1;
                }
            }
        };
        match h.op {
            Op::Send { .. } | Op::SendRecv => wait_for(&mut self.msgs, h.msg_out),
            Op::Complete => {
                for &(o, _) in &self.recs[g as usize].ops {
                    if matches!(o.op, Op::Isend { .. }) {
                        wait_for(&mut self.msgs, o.msg_out);
                    }
                }
            }
            _ => {}
        }
        if self.hold_senders && matches!(h.op, Op::Send { .. } | Op::SendRecv | Op::Isend { .. }) {
            let m = h.msg_out;
            if m != NONE {
                let s = &mut self.msgs[m as usize];
                if s.msg.src_node != s.msg.dst_node && s.times[MsgTime::Arrive as usize].is_nan() {
                    s.owner_waiter = g;
                    pending += 1;
                }
            }
        }
        // A member that ended before the last one entered (a scan's chain): its wait
        // reads the last entry.
        let i = h.inst_of;
        if self.figures && i != NONE && self.insts[i as usize].entries.is_none() {
            self.insts[i as usize].fig_waiters.push(g);
            pending += 1;
        }
        if pending == 0 {
            self.emit(g);
        } else {
            self.recs[g as usize].fig_pending = pending;
        }
    }

    /// Takes (`take`) or gives back a hold on the messages and collective operation of a
    /// record with [`Hot`] `h`.
    #[inline]
    fn hold(&mut self, h: Hot, take: bool) {
        for m in [h.msg_out, h.msg_in] {
            if m != NONE {
                if take {
                    self.msgs[m as usize].refs += 1;
                } else {
                    self.unref_msg(m);
                }
            }
        }
        if h.inst_of != NONE {
            if take {
                self.insts[h.inst_of as usize].refs += 1;
            } else {
                self.unref_inst(h.inst_of);
            }
        }
    }

    fn unref_inst(&mut self, i: u32) {
        let s = &mut self.insts[i as usize];
        s.refs -= 1;
        if s.refs == 0 {
            self.free_insts.push(i);
            self.live.2 -= 1;
        }
    }

    /// Record `g`'s times (and figures) go to the caller; its slot is free.
    fn emit(&mut self, g: u32) {
        let r = &self.recs[g as usize];
        let duration = duration_of(
            r.hot,
            r.has_done_by.then_some(r.done_end),
            r.m_end - r.m_start,
            r.start,
            r.end,
            r.req_done,
        );
        let prediction = self.figures.then(|| {
            let pred = View::<false> { w: self };
            let measured = View::<true> { w: self };
            figures_of(&pred, &measured, g, duration, None, r.reason)
        });
        if let Some((sink, t)) = &mut self.colls {
            // A member whose operation never completed has its traffic still here.
            t.members.remove(&g);
            let i = r.hot.inst_of;
            if i != NONE && r.member != NONE {
                let slot = &mut self.insts[i as usize];
                let contention = prediction.map_or(0.0, |p| p.contention);
                slot.spans[r.member as usize] = (r.start, r.end, contention);
                slot.handed += 1;
                if slot.handed as usize == slot.members.len() {
                    let op = CollOp::of(
                        slot.call,
                        slot.first,
                        &slot.cost,
                        t.model,
                        slot.spans.iter().copied(),
                    );
                    sink(&op, &slot.pairs);
                }
            }
        }
        let r = &mut self.recs[g as usize];
        r.live = false;
        let (id, h) = (r.id, r.hot);
        (self.finished)(Finished {
            rank: id.0,
            rec: id.1,
            slot: g,
            entry_ns: r.entry_ns,
            start: r.start,
            end: r.end,
            req_done: r.req_done,
            reason: r.reason,
            measured_end: r.m_end,
            measured_s: r.m_dur,
            duration,
            prediction,
        });
        let probe_m = std::mem::replace(&mut r.probe_m, NONE);
        // (Most records completed no operation: their list is not taken and put back.)
        if !r.ops.is_empty() {
            let ops = std::mem::take(&mut r.ops);
            for &(o, _) in &ops {
                self.hold(o, false);
            }
            self.recs[g as usize].ops = ops;
        }
        if probe_m != NONE {
            self.unref_msg(probe_m);
        }
        self.hold(h, false);
        self.reader.borrow_mut().rec_slots.release(g);
        self.live.0 -= 1;
    }

    /// [`Store::stream_record`] when the record is not the stream's current one, read and
    /// resolved: steps the stream's queue to it and reads on until it is.
    #[inline(never)]
    fn stream_record_reading(&mut self, s: u32, pos: usize) -> Option<u32> {
        let si = s as usize;
        while self.head[si] < pos {
            self.queue[si].pop_front();
            self.head[si] += 1;
        }
        loop {
            if let Some(&g) = self.queue[si].front()
                && self.resolved(g)
            {
                return Some(g);
            }
            if !self.pull() {
                // At the end of the run everything read is resolved; a stream shorter than
                // the first pass found (a read error, a spool that changed) ends here.
                return self.queue[si].front().copied();
            }
        }
    }

    /// The records whose figures no longer wait go to the caller.
    #[inline(never)]
    fn emit_ready(&mut self) {
        while let Some(g) = self.fig_ready.pop() {
            self.emit(g);
        }
    }

    /// The run is replayed: the records whose figures waited go to the caller.
    fn emit_rest(&mut self) {
        for g in 0..self.recs.len() as u32 {
            let r = &self.recs[g as usize];
            if r.live && r.gone {
                self.emit(g);
            }
        }
    }
}

/// A windowed replay's timeline (`MEASURED`: the recorded one) as the figures read it.
/// (Which one is a type, not a field: each accessor chose at every call.)
struct View<'w, 'a, const MEASURED: bool> {
    w: &'w Window<'a>,
}

impl<const MEASURED: bool> Partners for View<'_, '_, MEASURED> {
    fn hot(&self, g: u32) -> Hot {
        self.w.recs[g as usize].hot
    }
    fn completed(&self, g: u32, k: usize) -> Option<(Hot, bool)> {
        self.w.recs[g as usize].ops.get(k).copied()
    }
    fn is_root(&self, g: u32) -> bool {
        self.w.recs[g as usize].root
    }
    fn probe_msg(&self, g: u32) -> u32 {
        self.w.recs[g as usize].probe_m
    }
    fn msg(&self, m: u32) -> Msg {
        self.w.msgs[m as usize].msg
    }
    fn post(&self, m: u32, send: bool) -> f64 {
        let s = &self.w.msgs[m as usize];
        match (MEASURED, send) {
            (true, _) => s.m_posts[usize::from(!send)],
            (false, true) => s.times[MsgTime::SendPost as usize],
            (false, false) => s.times[MsgTime::RecvPost as usize],
        }
    }
    fn start(&self, g: u32) -> f64 {
        let r = &self.w.recs[g as usize];
        if MEASURED { r.m_start } else { r.start }
    }
    fn end(&self, g: u32) -> f64 {
        let r = &self.w.recs[g as usize];
        if MEASURED { r.m_end } else { r.end }
    }
    fn entries(&self, i: u32) -> Entries {
        let s = &self.w.insts[i as usize];
        let starts = if MEASURED { &s.m_starts } else { &s.starts };
        let (last, first) = match (MEASURED, s.entries) {
            (true, _) => s.m_entries,
            (false, Some(e)) => e,
            // Not every member entered (a forced call's figures at the end).
            (false, None) => entry_order(starts.len(), s.info.root, |k| starts[k]),
        };
        let at = |k: usize| (k < starts.len()).then(|| (starts[k], s.ranks[k]));
        Entries {
            kind: s.info.kind,
            root: s.info.root.and_then(at),
            last: at(last),
            first: at(first),
        }
    }
}

impl Contended for View<'_, '_, false> {
    fn msg_contention(&self, m: u32) -> f64 {
        let s = &self.w.msgs[m as usize];
        if s.flow == NONE || s.msg.src_node == s.msg.dst_node {
            return 0.0;
        }
        let t = |f: MsgTime| s.times[f as usize];
        transfer_contention(t(MsgTime::Arrive), t(MsgTime::FlowStart), t(MsgTime::Tref))
    }
    fn coll_contention(&self, i: u32) -> f64 {
        self.w.insts[i as usize].contention
    }
}

impl Store for Window<'_> {
    fn streams(&self) -> usize {
        self.lens.len()
    }
    fn stream_len(&self, s: u32) -> usize {
        self.lens[s as usize]
    }
    fn stream_start(&self, s: u32) -> f64 {
        self.starts[s as usize]
    }
    fn stream_rank(&self, s: u32) -> i32 {
        self.reader.borrow().stream_ranks[s as usize]
    }
    #[inline]
    fn stream_record(&mut self, s: u32, pos: usize) -> Option<u32> {
        // Most often the stream's current record, read and resolved: found inline.
        let si = s as usize;
        if self.head[si] == pos
            && let Some(&g) = self.queue[si].front()
            && self.resolved(g)
        {
            return Some(g);
        }
        self.stream_record_reading(s, pos)
    }
    fn hot(&self, g: u32) -> Hot {
        self.recs[g as usize].hot
    }
    fn rank_of(&self, g: u32) -> i32 {
        self.world_ranks[self.recs[g as usize].id.0 as usize]
    }
    fn peer_of(&self, g: u32) -> i32 {
        self.recs[g as usize].peer
    }
    fn rma_bytes(&self, g: u32) -> u64 {
        self.recs[g as usize].bytes
    }
    fn completed(&self, g: u32, k: usize) -> Option<u32> {
        self.recs[g as usize].completes.get(k).map(|x| x.1)
    }
    fn probe_msg(&self, g: u32) -> u32 {
        match self.recs[g as usize].probe_recv {
            NONE => NONE,
            r => self.recs[r as usize].hot.msg_in,
        }
    }
    fn start(&self, g: u32) -> f64 {
        self.recs[g as usize].start
    }
    fn set_start(&mut self, g: u32, t: f64) {
        let r = &mut self.recs[g as usize];
        r.start = t;
        if r.hot.inst_of != NONE {
            let i = &mut self.insts[r.hot.inst_of as usize];
            if r.root {
                i.root_start = t;
            }
            if let Some(x) = i.starts.get_mut(r.member as usize) {
                *x = t;
            }
        }
    }
    fn end(&self, g: u32) -> f64 {
        self.recs[g as usize].end
    }
    fn set_end(&mut self, g: u32, t: f64) {
        let r = &mut self.recs[g as usize];
        r.end = t;
        r.ended = true;
        if is_op(r.hot.op) {
            self.checks.push(g);
            return;
        }
        if r.hot.op == Op::Complete {
            let list = std::mem::take(&mut r.completes);
            for &(_, o) in &list {
                let x = &mut self.recs[o as usize];
                x.completer = Completer::Done;
                x.done_end = t;
                self.checks.push(o);
            }
            self.recs[g as usize].completes = list;
        }
        self.retire(g, f64::NAN);
    }
    fn set_reason(&mut self, g: u32, r: Reason) {
        self.recs[g as usize].reason = r;
    }
    fn msg(&self, m: u32) -> Msg {
        self.msgs[m as usize].msg
    }
    fn has_recv(&self, m: u32) -> bool {
        self.msgs[m as usize].recv == Match::Yes
    }
    fn msg_time(&self, m: u32, f: MsgTime) -> f64 {
        self.msgs[m as usize].times[f as usize]
    }
    fn set_msg_time(&mut self, m: u32, f: MsgTime, t: f64) {
        let s = &mut self.msgs[m as usize];
        s.times[f as usize] = t;
        if f == MsgTime::Arrive {
            let (a, b) = (s.send_op, s.recv_op);
            let w = std::mem::replace(&mut s.fig_waiter, NONE);
            let o = std::mem::replace(&mut s.owner_waiter, NONE);
            for w in [w, o] {
                if w != NONE {
                    let r = &mut self.recs[w as usize];
                    r.fig_pending -= 1;
                    if r.fig_pending == 0 {
                        self.fig_ready.push(w);
                    }
                }
            }
            self.checks
                .extend([a, b].into_iter().filter(|&x| x != NONE));
            self.unref_msg(m);
        }
    }
    fn msg_waiters(&mut self, m: u32) -> &mut [u32; 2] {
        &mut self.msgs[m as usize].waiters
    }
    fn set_flow(&mut self, m: u32, f: u32) {
        self.msgs[m as usize].flow = f;
    }
    fn flow_owner(&self, m: u32) -> u64 {
        let (ri, rec) = self.msgs[m as usize].owner;
        (ri as u64) << 32 | rec as u64
    }
    fn inst(&self, i: u32) -> InstInfo {
        self.insts[i as usize].info
    }
    fn member_index(&self, _i: u32, g: u32) -> Option<usize> {
        match self.recs[g as usize].member {
            NONE => None,
            k => Some(k as usize),
        }
    }
    fn member_rank(&self, i: u32, k: usize) -> i32 {
        self.insts[i as usize].ranks[k]
    }
    fn member_start(&self, i: u32, k: usize) -> f64 {
        self.insts[i as usize].starts[k]
    }
    fn tree_times(&mut self, i: u32) -> &mut TreeTimes {
        &mut self.insts[i as usize].tree
    }
    fn coll_cost(&self, i: u32) -> Option<CollCost> {
        Some(self.insts[i as usize].cost)
    }
    fn inst_state(&self, i: u32) -> InstState {
        self.insts[i as usize].state
    }
    fn enter_inst(&mut self, i: u32, t: f64) {
        let slot = &mut self.insts[i as usize];
        slot.state.entered += 1;
        slot.state.last = slot.state.last.max(t);
        if slot.state.entered as usize == slot.members.len() {
            let starts = &slot.starts;
            slot.entries = Some(entry_order(starts.len(), slot.info.root, |k| starts[k]));
            for w in slot.fig_waiters.drain(..) {
                let r = &mut self.recs[w as usize];
                r.fig_pending -= 1;
                if r.fig_pending == 0 {
                    self.fig_ready.push(w);
                }
            }
            // Its nonblocking members' requests are final now.
            let recs = &self.recs;
            self.checks.extend(
                slot.members
                    .iter()
                    .copied()
                    .filter(|&m| recs[m as usize].hot.op == Op::ICol),
            );
        }
    }
    fn set_inst_data(&mut self, i: u32, t: f64) {
        self.insts[i as usize].state.data = t;
    }
    fn root_start(&self, i: u32) -> f64 {
        self.insts[i as usize].root_start
    }
    fn set_coll_contention(&mut self, i: u32, c: f64) {
        self.insts[i as usize].contention = c;
    }
    #[inline]
    fn next_check(&mut self) -> Option<u32> {
        // Records whose figures no longer wait go first (not from within the engine's
        // step, which may still read their messages).
        if !self.fig_ready.is_empty() {
            self.emit_ready();
        }
        self.checks.pop()
    }
    #[inline]
    fn pause(&self) -> bool {
        self.ahead.get() && self.still_ahead()
    }
    fn op_ready(&self, g: u32) -> bool {
        let r = &self.recs[g as usize];
        if !r.live || r.gone || !r.ended || !is_op(r.hot.op) {
            return false;
        }
        if self.final_pass {
            return true;
        }
        if r.completer != Completer::Done {
            return false;
        }
        let arrived =
            |m: u32| m == NONE || !self.msgs[m as usize].times[MsgTime::Arrive as usize].is_nan();
        match r.hot.op {
            Op::Isend { .. } => arrived(r.hot.msg_out),
            Op::Irecv => arrived(r.hot.msg_in),
            _ => match r.hot.inst_of {
                NONE => true,
                i => {
                    let s = &self.insts[i as usize];
                    s.state.entered as usize >= s.members.len()
                }
            },
        }
    }
    fn retire_op(&mut self, g: u32, req_done: f64) {
        self.retire(g, req_done);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::{Assumptions, coll_cost, penalty_model};
    use crate::profile::Profile;
    use crate::replay::{Plan, Protocol, replay};

    use crate::testing::write_run;
    use std::cell::Cell;

    /// Times are the same when their bits are (any NaN is the same as any NaN).
    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// Random runs (point-to-point calls of every kind, waits of one to three requests,
    /// probes, two threads, collectives from random roots, nonblocking barriers), written
    /// to spools and replayed in a window as they are read back: every record's start,
    /// end, request completion and reason are the batch replay's of the loaded run, to
    /// the bit, under a penalty model (with a calibrated profile's factors and without)
    /// and without one; every third run on Open MPI.
    #[test]
    fn the_windowed_replay_is_the_batch_replay() {
        let mut rnd = crate::testing::xorshift(0x2545_f491_4f6c_dd1d);
        let dir = std::env::temp_dir().join(format!("pmpi-window-{}", std::process::id()));
        let profile = Profile::builtin_default();
        let p2p = P2p::from_profile(&profile, None, None);
        // As a calibrated profile: opposite and onward flows slower, ports capped, each
        // contended flow drawn its own factor (from its flow number: the same flows).
        let mut calibrated = p2p.clone();
        calibrated.reverse = 2.0;
        calibrated.inter.alpha = 1e-7;
        calibrated.through = 1.2;
        calibrated.port_capacity = Some(1.0);
        calibrated.dispersion = Some(vec![0.6, 0.9, 1.1, 1.4]);
        let gige = penalty_model(&profile, Some("gige")).unwrap();
        let assume = Assumptions::default();
        let cost = |i: &Instance| coll_cost(&profile, &assume, i);
        let (mut records, mut nonblocking) = (0usize, 0usize);
        // Held at most in the long runs, and their lengths.
        let (mut held, mut long) = (0usize, 0usize);
        for case in 0..320 {
            // The last twenty up to forty times as long: slots reused many times over.
            let scale = if case < 300 { 1 } else { 40 };
            let mut run = crate::testing::random_run_of(&mut rnd, scale);
            // Every other case with clock offsets (ranks read in corrected time order).
            if case % 2 == 1 {
                crate::testing::offset_clocks(&mut run, &mut rnd);
            }
            write_run(&dir, &run);
            let loaded = crate::trace::load_run(&dir).unwrap();
            let placement = Placement::from_run(&loaded);
            // Every third case on Open MPI (the grant rule, no reverse factor on 2 nodes).
            let library = if case % 3 == 2 {
                crate::testing::OPEN_MPI
            } else {
                ""
            };
            let protocol = Protocol::for_library(library);
            let plan = Plan::new(&loaded, placement.clone(), protocol);
            let costs: Vec<CollCost> = plan.instances.iter().map(cost).collect();
            for (model, contention, p2p) in [
                (gige.as_deref(), true, &p2p),
                (gige.as_deref(), true, &calibrated),
                (None, false, &p2p),
            ] {
                let batch = replay(&plan, p2p, model, &costs, contention, false);
                let mut got: Vec<Option<Finished>> = vec![None; plan.hot.len()];
                let order = RunOrder::open(&dir).unwrap();
                let stats = replay_window(
                    order,
                    &placement,
                    protocol,
                    p2p,
                    model,
                    &cost,
                    contention,
                    &mut |f| {
                        let g = plan.id(f.rank as usize, f.rec as usize) as usize;
                        assert!(got[g].is_none(), "case {case}: record {g} finished twice");
                        got[g] = Some(f);
                    },
                )
                .unwrap();
                for (g, f) in got.iter().enumerate() {
                    let at = format!(
                        "case {case}, contention {contention}, reverse {}, record {g}",
                        p2p.reverse
                    );
                    let f = f.unwrap_or_else(|| panic!("{at}: never finished"));
                    assert!(
                        same(f.start, batch.start[g]),
                        "{at}: start {f:?} {}",
                        batch.start[g]
                    );
                    assert!(
                        same(f.end, batch.end[g]),
                        "{at}: end {f:?} {}",
                        batch.end[g]
                    );
                    assert!(
                        same(f.req_done, batch.req_done[g]),
                        "{at}: request {f:?} {}",
                        batch.req_done[g]
                    );
                    assert_eq!(f.reason, batch.reason[g], "{at}");
                }
                records += got.len();
                if scale > 1 {
                    held += stats.most_records;
                    long += got.len();
                }
                nonblocking += batch.req_done.iter().filter(|x| !x.is_nan()).count();
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(
            records > 10_000 && nonblocking > 1_000,
            "{records} {nonblocking}"
        );
        // Slots were reused (how many depends on how far the replayed ranks drift apart
        // in the measured time the reader follows: far, with these runs' measured
        // durations of microseconds against transfers of milliseconds).
        assert!(held < long, "{held} of {long}");
    }

    /// A long ring (each rank sends to the next and receives from the one before, some
    /// sends nonblocking and never waited for, one receive from a rank outside the run;
    /// 20,000 records on 4 ranks): the window holds the records and messages in flight, not
    /// the run.
    /// The replays over one read number each record alike ([`Finished::slot`]), and a
    /// slot goes to another record only once both have handed the first over: the second
    /// hand-over of every record finds its slot held by it alone (random runs, which hold
    /// most of their records, and a long ring, whose slots are reused).
    #[test]
    fn replays_over_one_read_share_record_slots() {
        let mut rnd = crate::testing::xorshift(0x9e6c_63d0_676a_9a99);
        let dir = std::env::temp_dir().join(format!("pmpi-window-slots-{}", std::process::id()));
        let profile = Profile::builtin_default();
        let p2p = P2p::from_profile(&profile, None, None);
        let gige = penalty_model(&profile, Some("gige")).unwrap();
        let assume = Assumptions::default();
        let cost = |i: &Instance, _: &[i32]| coll_cost(&profile, &assume, i);
        let mut records = 0;
        for case in 0..=60 {
            let scale = if case < 50 { 1 } else { 20 };
            let run = if case < 60 {
                crate::testing::random_run_of(&mut rnd, scale)
            } else {
                crate::testing::ring_run(4, 5000)
            };
            write_run(&dir, &run);
            let loaded = crate::trace::load_run(&dir).unwrap();
            let placement = Placement::from_run(&loaded);
            // Per slot, the record one replay handed over and the other not yet.
            let open: RefCell<FxMap<u32, (u32, u32)>> = RefCell::default();
            let (seen, most) = (Cell::new(0usize), Cell::new(0u32));
            let hand = |f: Finished| {
                seen.set(seen.get() + 1);
                most.set(most.get().max(f.slot + 1));
                let mut open = open.borrow_mut();
                match open.remove(&f.slot) {
                    Some(first) => {
                        assert_eq!(first, (f.rank, f.rec), "case {case}: slot {}", f.slot)
                    }
                    None => assert!(open.insert(f.slot, (f.rank, f.rec)).is_none()),
                }
            };
            let (mut model_side, mut free_side) = (hand, hand);
            let sides = vec![
                Side {
                    model: gige.as_deref(),
                    contention: true,
                    figures: true,
                    finished: &mut model_side,
                    net: None,
                    collectives: None,
                },
                Side {
                    model: None,
                    contention: false,
                    figures: false,
                    finished: &mut free_side,
                    net: None,
                    collectives: None,
                },
            ];
            let order = RunOrder::open(&dir).unwrap();
            let protocol = Protocol::for_library("");
            let stats = replay_windows(order, &placement, protocol, &p2p, &cost, sides).unwrap();
            let n: usize = loaded.ranks.iter().map(|r| r.records.len()).sum();
            assert_eq!(
                seen.get(),
                2 * n,
                "case {case}: every record handed over twice"
            );
            assert!(open.borrow().is_empty(), "case {case}: {:?}", open.borrow());
            records += n;
            if case == 60 {
                assert!(
                    most.get() < 100,
                    "{} slots for the ring's {n} records",
                    most.get()
                );
                // Message slots are let go by both replays and reused too: the ring's
                // 10,000 messages in a few (9 when written).
                let slots = stats[0].message_slots;
                assert!(
                    (8..100).contains(&slots) && stats[1].message_slots == slots,
                    "{slots} message slots for the ring's {n} records"
                );
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        assert!(records > 30_000, "{records}");
    }

    /// A stream's queue of slots gives what a `VecDeque` gives, front and items, through
    /// pushes and pops at random (runs of pushes, runs of pops, emptied and not), and lets
    /// the slots taken go: after a push it holds at most twice its items and 65.
    #[test]
    fn a_line_is_a_fifo_that_lets_its_taken_slots_go() {
        let mut rnd = crate::testing::xorshift(0x51ab_c0de_7e57_1234);
        let (mut line, mut model) = (Line::default(), std::collections::VecDeque::new());
        let (mut pushed, mut emptied, mut most) = (0u32, 0, 0);
        for round in 0..2_000 {
            // Pushes ahead of pops for a while, then pops ahead, so that it grows and empties.
            let (push, pop) = if round / 100 % 2 == 0 {
                (rnd(40), rnd(30))
            } else {
                (rnd(30), rnd(45))
            };
            for _ in 0..push {
                line.push(pushed);
                model.push_back(pushed);
                pushed += 1;
            }
            // (Slots taken leave at a push: bounded after one.)
            if push > 0 {
                assert!(line.v.len() <= 2 * model.len() + 65);
            }
            for _ in 0..pop {
                line.pop_front();
                model.pop_front();
            }
            assert_eq!(line.front(), model.front());
            assert!(line.iter().eq(model.iter()));
            emptied += model.is_empty() as u32;
            most = most.max(model.len());
        }
        assert!(
            emptied > 10 && most > 300,
            "emptied {emptied} times, at most {most}"
        );
    }

    #[test]
    fn the_window_holds_what_is_in_flight() {
        let run = crate::testing::ring_run(4, 5000);
        let dir = std::env::temp_dir().join(format!("pmpi-window-ring-{}", std::process::id()));
        write_run(&dir, &run);
        let profile = Profile::builtin_default();
        let p2p = P2p::from_profile(&profile, None, None);
        let placement = Placement::from_run(&run);
        let mut finished = 0;
        let stats = replay_window(
            RunOrder::open(&dir).unwrap(),
            &placement,
            Protocol::for_library(""),
            &p2p,
            None,
            &|_| CollCost::default(),
            false,
            &mut |_| finished += 1,
        )
        .unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!((finished, stats.records), (20_000, 20_000));
        assert!(
            stats.most_records < 40 && stats.most_messages < 20,
            "{stats:?}"
        );
    }

    /// A spool rewritten between the reader's first pass and its reading (a thread the
    /// first pass did not see): the replay ends with an error, not a panic, after
    /// finishing what it read.
    #[test]
    fn a_spool_changed_while_read_is_an_error() {
        use crate::trace::{NO_RANK, RankMeta, Record, call};
        let dir = std::env::temp_dir().join(format!("pmpi-window-changed-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).unwrap();
        let spool = |r: i32, thread: u16| -> Vec<Record> {
            (0..4000u64)
                .map(|k| {
                    let send = (k + r as u64).is_multiple_of(2);
                    Record {
                        t_start: 1000 + k * 10_000,
                        t_end: 3000 + k * 10_000,
                        t_posted: 3000 + k * 10_000,
                        peer: 1 - r,
                        peer2: NO_RANK,
                        root: NO_RANK,
                        bytes_send: if send { 64 } else { 0 },
                        bytes_recv: if send { 0 } else { 64 },
                        comm_size: 2,
                        thread,
                        call: if send { call::MPI_Send } else { call::MPI_Recv },
                        ..Default::default()
                    }
                })
                .collect()
        };
        let mut metas = Vec::new();
        for r in 0..2 {
            let meta = RankMeta {
                rank: r,
                world_size: 2,
                node: format!("n{r}"),
                calls: crate::trace::CALL_NAMES
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                ..Default::default()
            };
            crate::trace::write_spool(&dir, r, &spool(r, 0)).unwrap();
            crate::trace::write_meta(&dir, &meta).unwrap();
            metas.push(meta);
        }
        let order = RunOrder::open(&dir).unwrap();
        // Rewritten in place: the reader's open file reads on into the new records.
        crate::trace::write_spool(&dir, 1, &spool(1, 7)).unwrap();
        let placement = Placement::from_run(&RunTrace {
            ranks: metas
                .into_iter()
                .map(|meta| crate::trace::RankTrace {
                    meta,
                    ..Default::default()
                })
                .collect(),
            world_size: 2,
            missing: vec![],
        });
        let profile = Profile::builtin_default();
        let mut finished = 0;
        let got = replay_window(
            order,
            &placement,
            Protocol::for_library(""),
            &P2p::from_profile(&profile, None, None),
            None,
            &|_| CollCost::default(),
            false,
            &mut |_| finished += 1,
        );
        std::fs::remove_dir_all(&dir).ok();
        assert!(got.is_err(), "{got:?}");
        assert!(finished > 0 && finished < 8000, "{finished}");
    }
}

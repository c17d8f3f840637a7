//! A rank's records in call order (by entry, then record number), read from its spool a
//! block at a time: what a reader of a run in time order needs (docs/engine.md, "Toward
//! memory bounded by the messages in flight").
//!
//! A spool holds each record when its call completed, so a nonblocking operation comes
//! after the calls its thread made while it was in flight, and nothing in the spool says
//! how many those are before the operation is read: a reorder buffer of fixed size cannot
//! be trusted. So [`CallOrder::open`] first finds, reading the spool's entry times only,
//! the smallest buffer (1,024 records, then four times more at each try) that puts every
//! record back in place, and the reader holds that many records: the most the spool
//! displaces one, not its length. A call's continuation records (its per-peer bytes,
//! [`super::arcs`]) carry its entry and sort just before it, so the same buffer brings
//! them to it; the calls are numbered and their arcs attached as [`super::load_run`] does.

use super::arcs::{self, CallArcs};
use super::{Clock, RECORD_SIZE, RankMeta, Record, SPOOL_HEADER};
use crate::error::Error;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The smallest reorder buffer tried (records).
const FIRST_WINDOW: usize = 1024;

/// Where a record of the spool goes in call order: by entry, continuations before the
/// calls of the same entry, calls by record number (continuations by their number among
/// continuations: any order among themselves will do).
type Key = (u64, bool, u32);

/// A spool's call records in call order, with their per-peer bytes.
pub struct CallOrder {
    records: Records,
    /// Buffered records by [`Key`].
    heap: Reorder<Record>,
    window: usize,
    /// The spool's records were in call order when the first pass read them: they are
    /// given as read, not through the buffer (a record out of order after all, a spool
    /// still being written, turns the buffer on from there), and the last one's key.
    direct: bool,
    last: Option<Key>,
    /// Continuations out of the buffer whose call has not come out yet, by the call's
    /// (entry, thread, call number).
    conts: BTreeMap<(u64, u16, u16), Vec<Record>>,
    threads: Vec<Thread>,
}

/// A thread of a spool, as the reader's first pass finds it: a stream of the replay,
/// known before its records are read (how many there are, when the first is entered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thread {
    pub thread: u16,
    /// Its call records.
    pub calls: u32,
    /// Entry of its first call (the rank's clock).
    pub first_start: u64,
}

/// One call record as [`CallOrder`] gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Its number among the spool's call records.
    pub rec: u32,
    pub record: Record,
    /// Its per-peer bytes, when a complete set of continuations gave them.
    /// (Boxed: a call is moved through the reader's queues, and most have none.)
    pub arcs: Option<Box<CallArcs>>,
}

impl CallOrder {
    /// Opens the spool at `path` (checking its header) and sizes the reorder buffer.
    pub fn open(path: &Path) -> Result<CallOrder, Error> {
        let mut window = FIRST_WINDOW;
        let mut threads = Vec::new();
        let mut in_order = true;
        while !fits(
            &mut Records::open(path)?,
            window,
            &mut threads,
            &mut in_order,
        )? {
            window *= 4;
        }
        Ok(CallOrder {
            records: Records::open(path)?,
            heap: Reorder::with_capacity(if in_order { 0 } else { window + 1 }),
            window,
            direct: in_order,
            last: None,
            conts: BTreeMap::new(),
            threads,
        })
    }

    /// The spool's threads, by number.
    pub fn threads(&self) -> &[Thread] {
        &self.threads
    }

    /// Records the reader holds at most.
    pub fn window(&self) -> usize {
        self.window
    }

    /// The next call in call order, or None at the end.
    #[inline]
    pub fn next_call(&mut self) -> Result<Option<Call>, Error> {
        let mut c = Call::blank();
        Ok(self.next_call_into(&mut c)?.then_some(c))
    }

    /// [`CallOrder::next_call`] written into `out` (false at the end: `out` is then
    /// unspecified). A spool in order has each record parsed where the caller keeps it:
    /// a call returned through the stack was copied there in pieces and read back whole,
    /// which the processor cannot forward.
    #[inline]
    pub fn next_call_into(&mut self, out: &mut Call) -> Result<bool, Error> {
        loop {
            let (_, call, n) = if self.direct {
                match self.records.next_into(&mut out.record)? {
                    Some(k) if self.last.is_some_and(|l| k < l) => {
                        self.direct = false;
                        self.heap.push(k, out.record);
                        continue;
                    }
                    Some(k) => {
                        self.last = Some(k);
                        k
                    }
                    None => return Ok(false),
                }
            } else {
                while self.heap.len() <= self.window {
                    let Some((k, r)) = self.records.next()? else {
                        break;
                    };
                    self.heap.push(k, r);
                }
                let Some((k, r)) = self.heap.pop() else {
                    return Ok(false);
                };
                out.record = r;
                k
            };
            let r = &out.record;
            if !call {
                let key = (r.t_start, r.thread, r.reserved);
                self.conts.entry(key).or_default().push(*r);
                continue;
            }
            out.rec = n;
            // Continuations of earlier entries never had their call: dropped, as the
            // loader drops them.
            if self.conts.is_empty() {
                out.arcs = None;
                return Ok(true);
            }
            self.conts = self.conts.split_off(&(r.t_start, 0, 0));
            out.arcs = self
                .conts
                .remove(&(r.t_start, r.thread, r.call))
                .and_then(|c| {
                    let send = arcs::direction(&c, false);
                    let recv = arcs::direction(&c, true);
                    (send.is_some() || recv.is_some())
                        .then(|| Box::new(CallArcs { rec: n, send, recv }))
                });
            return Ok(true);
        }
    }
}

impl Call {
    /// A call of no record (a slot to be written).
    pub fn blank() -> Call {
        Call {
            rec: 0,
            record: Record::default(),
            arcs: None,
        }
    }
}

/// The calls of a run in the order of their clock-corrected entries across ranks: by
/// (entry on rank 0's clock, rank index, record number), as `report::Timeline` orders a
/// loaded run, read from the spools a block at a time (one [`CallOrder`] per rank). A rank
/// whose spool is missing or unreadable has no calls here, as it has none loaded.
pub struct RunOrder {
    /// Every rank's metadata, by rank (with the clocks the loader gives them).
    pub metas: Vec<RankMeta>,
    /// Their clocks ([`RankMeta::clock`]).
    clocks: Vec<Clock>,
    readers: Vec<Option<CallOrder>>,
    /// Per rank: its calls read ahead, in a block ([`Ahead`]).
    ahead: Vec<Ahead>,
    /// The next instant of each rank with calls ready, as [`instant`] packs it.
    merge: Merge,
    /// A rank's read error, given after the calls read before it.
    failed: Option<Error>,
}

/// Calls a rank reads ahead at a time: the merge takes them from a block instead of
/// asking its reader once a call through a queue of one instant and a call after it.
const BLOCK: usize = 32;

/// A rank's calls read ahead, with their entries on rank 0's clock (the clock correction
/// can give two entries one instant: those of one instant are put by record number).
#[derive(Default)]
struct Ahead {
    /// `calls[head..len]` (a `Vec` read from its head: a `VecDeque`'s wrap-around cost
    /// at every call; those taken are written again when the next block is read, in
    /// place: the entries from `len` on are spare).
    calls: Vec<(i64, Call)>,
    head: usize,
    len: usize,
    /// The first `ready` calls are final: those before the last instant read, whose later
    /// calls may come in the next block (all, at the end of the spool).
    ready: usize,
    /// The reader is at its end, or failed (its error).
    done: bool,
    err: Option<Error>,
}

impl Ahead {
    /// Reads on from `reader` until a call is ready or the spool ends (called when none
    /// is: the calls held are those of one instant, left open).
    fn fill(&mut self, reader: &mut CallOrder, clock: &Clock) {
        // The calls left go to the front, the entries taken after them, to be written.
        let left = self.len - self.head;
        for k in 0..left {
            self.calls.swap(k, self.head + k);
        }
        (self.head, self.len) = (0, left);
        while self.ready == 0 && !self.done {
            for _ in 0..BLOCK {
                if self.len == self.calls.len() {
                    self.calls.push((0, Call::blank()));
                }
                let (at, c) = &mut self.calls[self.len];
                match reader.next_call_into(c) {
                    Ok(true) => {
                        *at = clock.to_global_ns(c.record.t_start);
                        self.len += 1;
                    }
                    Ok(false) => {
                        self.done = true;
                        break;
                    }
                    Err(e) => {
                        self.done = true;
                        self.err = Some(e);
                        break;
                    }
                }
            }
            let n = self.len;
            self.ready = if self.done || n == 0 {
                n
            } else {
                // Up to the last instant read.
                let last = self.calls[n - 1].0;
                let mut k = n - 1;
                while k > 0 && self.calls[k - 1].0 == last {
                    k -= 1;
                }
                k
            };
        }
        // The instants made final, each by record number (most hold one call).
        let mut k = 0;
        while k + 1 < self.ready {
            let at = self.calls[k].0;
            if self.calls[k + 1].0 != at {
                k += 1;
                continue;
            }
            let mut j = k + 2;
            while j < self.ready && self.calls[j].0 == at {
                j += 1;
            }
            self.calls[k..j].sort_by_key(|c| c.1.rec);
            k = j;
        }
    }

    /// The instant of its next ready call.
    fn next_at(&self) -> Option<i64> {
        (self.ready > 0).then(|| self.calls[self.head].0)
    }

    /// The next ready call.
    #[inline]
    fn front_mut(&mut self) -> Option<&mut (i64, Call)> {
        self.calls[..self.len].get_mut(self.head)
    }

    /// Takes the next ready call out (its entry left blank).
    fn pop_front(&mut self) -> Option<(i64, Call)> {
        let c = std::mem::replace(
            self.calls[..self.len].get_mut(self.head)?,
            (0, Call::blank()),
        );
        self.head += 1;
        Some(c)
    }

    /// Lets the next ready call go.
    #[inline]
    fn skip(&mut self) {
        self.head = (self.head + 1).min(self.len);
    }
}

/// The next call of a run as [`RunOrder::peek`] gives it: its entry (ns on rank 0's
/// clock), its rank's index and metadata, and the call (its arcs may be taken).
pub struct Peeked<'a> {
    pub at: i64,
    pub ri: usize,
    pub call: &'a mut Call,
    pub meta: &'a RankMeta,
    /// The rank's clock ([`RankMeta::clock`]).
    pub clock: &'a Clock,
}

/// A rank's next instant `at` and its index `ri` as one key ordered as the pair (one
/// comparison in the merge's heap instead of a tuple's two).
fn instant(at: i64, ri: usize) -> u128 {
    // The sign bit flipped: i64 order as u64 order.
    ((at as u64 ^ 1 << 63) as u128) << 64 | ri as u128
}

/// The (instant, rank index) of a key made by [`instant`].
fn instant_of(k: u128) -> (i64, usize) {
    (((k >> 64) as u64 ^ 1 << 63) as i64, k as u64 as usize)
}

/// The ranks' next instants merged in a tournament tree of losers: the smallest key wins,
/// and a rank whose key changes (always the winner's: the merge takes from it) replays
/// only its path to the root, one comparison a level with the loser kept there (a binary
/// heap's sift down made two a level). Keys are unique ([`instant`] holds the rank index).
struct Merge {
    /// Per leaf (rank index, padded to a power of two with [`Merge::NONE`]): its key, read
    /// only by [`Merge::build`].
    keys: Vec<u128>,
    /// `nodes[i]`, `i >= 1`: the key and leaf that lost at inner node `i` (its children
    /// `2i` and `2i + 1`; leaf `j` is node `leaves + j`); `win`: the winner's.
    nodes: Vec<(u128, u32)>,
    win: (u128, u32),
}

impl Merge {
    /// The key of a rank without calls ready: above every [`instant`] (whose low word is a
    /// rank index).
    const NONE: u128 = u128::MAX;

    /// `n` leaves, every key [`Merge::NONE`] until set in `keys` and [`Merge::build`] is
    /// called.
    fn new(n: usize) -> Merge {
        let leaves = n.max(1).next_power_of_two();
        Merge {
            keys: vec![Merge::NONE; leaves],
            nodes: vec![(Merge::NONE, 0); leaves],
            win: (Merge::NONE, 0),
        }
    }

    /// Plays every match from `keys`.
    fn build(&mut self) {
        self.win = self.winner(1);
    }

    /// The winner below node `i`, the losers kept on the way.
    fn winner(&mut self, i: usize) -> (u128, u32) {
        let leaves = self.keys.len();
        if i >= leaves {
            return (self.keys[i - leaves], (i - leaves) as u32);
        }
        let (a, b) = (self.winner(2 * i), self.winner(2 * i + 1));
        let (w, l) = if a.0 <= b.0 { (a, b) } else { (b, a) };
        self.nodes[i] = l;
        w
    }

    /// The smallest key, if any rank has calls ready.
    #[inline]
    fn top(&self) -> Option<u128> {
        (self.win.0 != Merge::NONE).then_some(self.win.0)
    }

    /// Leaf `j`, the winner, now has key `k`.
    #[inline]
    fn replace(&mut self, j: usize, k: u128) {
        debug_assert_eq!(self.win.1 as usize, j);
        let nodes = &mut self.nodes[..];
        let mut w = (k, j as u32);
        let mut i = (nodes.len() + j) / 2;
        while i > 0 {
            let n = &mut nodes[i];
            if n.0 < w.0 {
                std::mem::swap(n, &mut w);
            }
            i /= 2;
        }
        self.win = w;
    }
}

impl RunOrder {
    /// Opens the run in `dir`.
    pub fn open(dir: &Path) -> Result<RunOrder, Error> {
        let metas = super::run_metas(dir)?;
        let readers = metas
            .iter()
            .map(|m| CallOrder::open(&super::spool_path(dir, m.rank)).ok())
            .collect();
        let n = metas.len();
        let mut o = RunOrder {
            clocks: metas.iter().map(RankMeta::clock).collect(),
            metas,
            readers,
            ahead: (0..n).map(|_| Ahead::default()).collect(),
            merge: Merge::new(n),
            failed: None,
        };
        for ri in 0..n {
            let a = &mut o.ahead[ri];
            match o.readers[ri].as_mut() {
                Some(reader) => a.fill(reader, &o.clocks[ri]),
                None => a.done = true,
            }
            match a.next_at() {
                Some(at) => o.merge.keys[ri] = instant(at, ri),
                None => {
                    if let Some(e) = a.err.take() {
                        return Err(e);
                    }
                }
            }
        }
        o.merge.build();
        Ok(o)
    }

    /// The run as its metadata alone gives it (no records): what a placement or a
    /// protocol is found from before the calls are read.
    pub fn shell(&self) -> super::RunTrace {
        super::shell_of(&self.metas)
    }

    /// The run as [`super::load_run`] gives it, without its records: [`RunOrder::shell`]
    /// with the ranks that left no metadata and what each spool in `dir` (the run's
    /// directory) says before its records are read ([`super::spool_state`]).
    pub fn loaded_shell(&self, dir: &Path) -> super::RunTrace {
        let mut run = self.shell();
        run.missing = super::missing_of(&self.metas, run.world_size);
        for rk in &mut run.ranks {
            (rk.trailing_bytes, rk.spool_error) =
                super::spool_state(&super::spool_path(dir, rk.meta.rank));
        }
        run
    }

    /// Every rank's threads (by rank index; none for a rank without a spool).
    pub fn threads(&self) -> Vec<&[Thread]> {
        self.readers
            .iter()
            .map(|r| r.as_ref().map_or(&[][..], |r| r.threads()))
            .collect()
    }

    /// The next call of the run: its entry (ns on rank 0's clock), its rank's index in
    /// [`RunOrder::metas`] and the call; None at the end (a rank's read error after the
    /// calls read before it).
    #[inline]
    pub fn next_call(&mut self) -> Result<Option<(i64, usize, Call)>, Error> {
        let Some(Peeked { at, ri, .. }) = self.peek()? else {
            return Ok(None);
        };
        let (_, c) = self.ahead[ri]
            .pop_front()
            .expect("a rank at the top of the merge has calls ready");
        self.step(at, ri);
        Ok(Some((at, ri, c)))
    }

    /// [`RunOrder::next_call`] without taking the call: the caller copies what it keeps
    /// (the call stays where its block holds it instead of being returned through the
    /// stack), then calls [`RunOrder::advance`].
    /// With the call, its rank's metadata.
    #[inline]
    pub fn peek(&mut self) -> Result<Option<Peeked<'_>>, Error> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let Some(k) = self.merge.top() else {
            return Ok(None);
        };
        let (at, ri) = instant_of(k);
        let call = &mut self.ahead[ri]
            .front_mut()
            .expect("a rank at the top of the merge has calls ready")
            .1;
        Ok(Some(Peeked {
            at,
            ri,
            call,
            meta: &self.metas[ri],
            clock: &self.clocks[ri],
        }))
    }

    /// Lets the call [`RunOrder::peek`] gave go.
    #[inline]
    pub fn advance(&mut self) {
        let Some(k) = self.merge.top() else {
            return;
        };
        let (at, ri) = instant_of(k);
        self.ahead[ri].skip();
        self.step(at, ri);
    }

    /// Rank `ri`'s call of instant `at` was taken: its next one, read on when its block
    /// has no other ready.
    #[inline]
    fn step(&mut self, at: i64, ri: usize) {
        let a = &mut self.ahead[ri];
        a.ready -= 1;
        if a.ready == 0
            && let Some(reader) = self.readers[ri].as_mut()
        {
            a.fill(reader, &self.clocks[ri]);
        }
        // The rank stays at the top while its instant has calls ready; then its next
        // instant takes its place there (one replay of its path in the tree).
        match a.next_at() {
            Some(t) if t == at => {}
            Some(t) => self.merge.replace(ri, instant(t, ri)),
            None => {
                self.merge.replace(ri, Merge::NONE);
                self.failed = a.err.take();
            }
        }
    }
}

/// Calls `f` with each call record of the spool at `path` in spool order, settled as
/// loaded, continuations left out: for a pass that needs every record but not their order
/// (a [`CallOrder`] reads the spool twice to put them in order).
pub fn each_call(path: &Path, f: &mut dyn FnMut(&Record)) -> Result<(), Error> {
    let mut records = Records::open(path)?;
    while let Some(((_, call, _), r)) = records.next()? {
        if call {
            f(&r);
        }
    }
    Ok(())
}

/// Whether a reorder buffer of `window` records gives `records` in call order: replays the
/// buffer on their keys alone. When it does, `threads` holds the spool's threads (it read
/// them all) and `in_order` whether every record came after the one before it.
fn fits(
    records: &mut Records,
    window: usize,
    threads: &mut Vec<Thread>,
    in_order: &mut bool,
) -> Result<bool, Error> {
    threads.clear();
    let mut counted = 0;
    // While the records come in order, the buffer holds their last `window` keys and gives
    // each back unchanged: they are kept in a ring instead (most spools are in order to
    // the end; the buffer's work was half of this pass), and the buffer is built from the
    // ring only if a record comes out of order.
    debug_assert!(window.is_power_of_two());
    let mut ring: Vec<Key> = vec![(0, false, 0); window];
    let (mut n, mut prev, mut last) = (0usize, None::<Key>, None::<Key>);
    let first = loop {
        let Some((k, r)) = records.next()? else {
            return Ok(true);
        };
        if k.1 {
            count_thread(threads, &mut counted, &r);
        }
        if prev.is_some_and(|p| k < p) {
            break (k, r);
        }
        prev = Some(k);
        // The key `window` places back leaves the buffer now (the original `pop`).
        let slot = &mut ring[n & (window - 1)];
        if n >= window {
            last = Some(*slot);
        }
        *slot = k;
        n += 1;
    };
    *in_order = false;
    let mut heap: Reorder<()> = Reorder::default();
    for j in n.saturating_sub(window)..n {
        heap.push(ring[j & (window - 1)], ());
    }
    drop(ring);
    let mut more = Some(first);
    loop {
        if let Some((k, _)) = more {
            heap.push(k, ());
            if heap.len() <= window {
                more = next_counted(records, threads, &mut counted)?;
                continue;
            }
        }
        let Some((k, ())) = heap.pop() else {
            return Ok(true);
        };
        if last.is_some_and(|l| k < l) {
            return Ok(false);
        }
        last = Some(k);
        if more.is_some() {
            more = next_counted(records, threads, &mut counted)?;
        }
    }
}

/// The next record of `records`, its thread counted if it is a call.
fn next_counted(
    records: &mut Records,
    threads: &mut Vec<Thread>,
    counted: &mut usize,
) -> Result<Option<(Key, Record)>, Error> {
    let more = records.next()?;
    if let Some((k, r)) = &more
        && k.1
    {
        count_thread(threads, counted, r);
    }
    Ok(more)
}

/// Counts call record `r` in its thread's entry of `threads` (by number); `at`: the entry
/// last counted, most often the same thread's.
#[inline]
fn count_thread(threads: &mut Vec<Thread>, at: &mut usize, r: &Record) {
    if let Some(t) = threads.get_mut(*at)
        && t.thread == r.thread
    {
        t.calls += 1;
        t.first_start = t.first_start.min(r.t_start);
        return;
    }
    match threads.binary_search_by_key(&r.thread, |t| t.thread) {
        Ok(i) => {
            let t = &mut threads[i];
            t.calls += 1;
            t.first_start = t.first_start.min(r.t_start);
            *at = i;
        }
        Err(i) => {
            threads.insert(
                i,
                Thread {
                    thread: r.thread,
                    calls: 1,
                    first_start: r.t_start,
                },
            );
            *at = i;
        }
    }
}

/// A reorder buffer for items that come nearly in key order: those in order queue at the
/// back of a run (no heap work: most records of a spool), the others wait in a heap; the
/// smaller of the two fronts leaves, so items leave smallest first, as from one heap. (The
/// items are held in it, not in slots beside it: a record is moved once in and once out.)
struct Reorder<T> {
    run: VecDeque<(Key, T)>,
    late: BinaryHeap<Reverse<ByKey<T>>>,
}

/// An item ordered by its key alone (a spool's keys are distinct).
struct ByKey<T>(Key, T);

impl<T> PartialEq for ByKey<T> {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}

impl<T> Eq for ByKey<T> {}

impl<T> PartialOrd for ByKey<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl<T> Ord for ByKey<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.cmp(&o.0)
    }
}

impl<T> Reorder<T> {
    /// For `n` items in order without growing (a run of the spool's records: as much
    /// memory as the buffer holds, not the next power of two).
    fn with_capacity(n: usize) -> Self {
        Reorder {
            run: VecDeque::with_capacity(n),
            late: BinaryHeap::new(),
        }
    }
}

impl<T> Default for Reorder<T> {
    fn default() -> Self {
        Reorder {
            run: VecDeque::new(),
            late: BinaryHeap::new(),
        }
    }
}

impl<T> Reorder<T> {
    fn push(&mut self, k: Key, t: T) {
        if self.run.back().is_none_or(|b| b.0 <= k) {
            self.run.push_back((k, t));
        } else {
            self.late.push(Reverse(ByKey(k, t)));
        }
    }

    fn pop(&mut self) -> Option<(Key, T)> {
        let late_first = match (self.run.front(), self.late.peek()) {
            (Some(a), Some(Reverse(b))) => b.0 < a.0,
            (None, _) => true,
            (Some(_), None) => false,
        };
        if late_first {
            self.late.pop().map(|Reverse(ByKey(k, t))| (k, t))
        } else {
            self.run.pop_front()
        }
    }

    fn len(&self) -> usize {
        self.run.len() + self.late.len()
    }
}

/// A spool's records in spool order, settled and keyed, read a block at a time.
struct Records {
    path: PathBuf,
    file: std::fs::File,
    /// Bytes read and not yet taken: `buf[at..len]` (whole records are parsed in place,
    /// not copied out one by one through a `BufReader`). 18 KB: a reader is open per rank.
    buf: Box<[u8]>,
    at: usize,
    len: usize,
    /// Call and continuation records read so far (the next ones' numbers).
    calls: u32,
    conts: u32,
}

impl Records {
    fn open(path: &Path) -> Result<Records, Error> {
        Records::with_buffer(path, 256 * RECORD_SIZE)
    }

    /// [`Records::open`] with a buffer of `bytes` (at least a record).
    fn with_buffer(path: &Path, bytes: usize) -> Result<Records, Error> {
        let mut file = std::fs::File::open(path).map_err(|e| Error::read(path, e))?;
        let mut head = [0u8; SPOOL_HEADER];
        file.read_exact(&mut head)
            .map_err(|e| Error::read(path, e))?;
        super::parse_spool(&head).map_err(|e| e.in_file(path))?;
        Ok(Records {
            path: path.to_path_buf(),
            file,
            buf: vec![0; bytes.max(RECORD_SIZE)].into_boxed_slice(),
            at: 0,
            len: 0,
            calls: 0,
            conts: 0,
        })
    }

    /// The next record (settled, as a loaded spool's) and its key; None at the end (a
    /// final record cut short included).
    #[inline]
    fn next(&mut self) -> Result<Option<(Key, Record)>, Error> {
        let mut r = Record::default();
        Ok(self.next_into(&mut r)?.map(|k| (k, r)))
    }

    /// [`Records::next`] parsed into `r` (left unspecified at the end); its key.
    #[inline]
    fn next_into(&mut self, r: &mut Record) -> Result<Option<Key>, Error> {
        if self.len - self.at < RECORD_SIZE && !self.fill()? {
            return Ok(None);
        }
        let b = self.buf[self.at..self.at + RECORD_SIZE]
            .try_into()
            .expect("a whole record");
        self.at += RECORD_SIZE;
        *r = Record::from_bytes(b);
        r.settle_in_place();
        let call = !r.is_continuation();
        let n = if call {
            &mut self.calls
        } else {
            &mut self.conts
        };
        *n += 1;
        Ok(Some((r.t_start, call, *n - 1)))
    }

    /// Reads on until the buffer holds a whole record; false at the end of the file (a
    /// final record cut short left unread).
    #[inline(never)]
    fn fill(&mut self) -> Result<bool, Error> {
        self.buf.copy_within(self.at..self.len, 0);
        self.len -= self.at;
        self.at = 0;
        while self.len < RECORD_SIZE {
            match self.file.read(&mut self.buf[self.len..]) {
                Ok(0) => return Ok(false),
                Ok(n) => self.len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::read(&self.path, e)),
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{FLAG_ARCS, FLAG_NONBLOCKING};

    /// The tournament tree gives the smallest key at every step as a heap of the same keys
    /// does, ranks replaced at the top with later keys or taken out, for 1 to 40 ranks.
    #[test]
    fn the_merge_gives_the_smallest_key_as_a_heap_does() {
        let mut rnd = crate::testing::xorshift(0x2545_f491_4f6c_dd1d);
        for case in 0..400 {
            let n = 1 + case % 40;
            let mut m = Merge::new(n);
            let mut heap = BinaryHeap::new();
            for ri in 0..n {
                // Some ranks start without calls.
                if rnd(5) != 0 {
                    let k = instant(rnd(1000) as i64 - 500, ri);
                    m.keys[ri] = k;
                    heap.push(Reverse(k));
                }
            }
            m.build();
            let mut steps = 0;
            loop {
                let want = heap.peek().map(|r: &Reverse<u128>| r.0);
                assert_eq!(m.top(), want, "case {case}, step {steps}");
                let Some(k) = want else { break };
                let (at, ri) = instant_of(k);
                heap.pop();
                // Later instants (at times the same one), or no more calls.
                if rnd(8) != 0 {
                    let k = instant(at + rnd(3) as i64, ri);
                    m.replace(ri, k);
                    heap.push(Reverse(k));
                } else {
                    m.replace(ri, Merge::NONE);
                }
                steps += 1;
            }
        }
    }

    /// The merge's packed keys order as (instant, rank index) pairs and give them back,
    /// negative instants and the extremes included.
    #[test]
    fn packed_instants_order_as_pairs() {
        let ats = [
            i64::MIN,
            i64::MIN + 1,
            -5_000,
            -1,
            0,
            1,
            7,
            1 << 40,
            i64::MAX - 1,
            i64::MAX,
        ];
        let ris = [0usize, 1, 2, 15, 4095, u32::MAX as usize];
        let pairs: Vec<(i64, usize)> = ats
            .iter()
            .flat_map(|&a| ris.iter().map(move |&r| (a, r)))
            .collect();
        for &p in &pairs {
            assert_eq!(instant_of(instant(p.0, p.1)), p);
            for &q in &pairs {
                assert_eq!(
                    instant(p.0, p.1).cmp(&instant(q.0, q.1)),
                    p.cmp(&q),
                    "{p:?} {q:?}"
                );
            }
        }
    }

    /// A spool of 2,500 records with a final record cut short (a killed writer), read with
    /// buffers of whole records and of parts of them (records split across reads): every
    /// whole record, settled, in spool order, as the loader reads them, and not the cut one.
    #[test]
    fn a_spool_is_read_whole_records_whatever_the_buffer() {
        let dir = std::env::temp_dir().join(format!("pmpi-records-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let recs: Vec<Record> = (0..2500u64)
            .map(|i| Record {
                t_start: 1_000 + i * 10,
                t_end: 1_005 + i * 10,
                t_posted: if i % 7 == 0 {
                    990 + i * 10
                } else {
                    1_005 + i * 10
                },
                thread: (i % 3) as u16,
                call: 3,
                flags: if i % 7 == 0 {
                    crate::trace::FLAG_POLLED
                } else {
                    0
                },
                tag: i as i32,
                ..Default::default()
            })
            .collect();
        crate::trace::write_spool(&dir, 0, &recs).unwrap();
        let path = crate::trace::spool_path(&dir, 0);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&[0xab; RECORD_SIZE - 30]);
        std::fs::write(&path, &bytes).unwrap();
        let want = crate::trace::read_spool(std::fs::File::open(&path).unwrap(), &path).unwrap();
        assert_eq!(want.records.len(), recs.len());
        assert!(want.records.iter().any(|r| r.t_start != r.t_posted));
        for buffer in [RECORD_SIZE, 100, 1000, 7 * RECORD_SIZE, 1024 * RECORD_SIZE] {
            let mut r = Records::with_buffer(&path, buffer).unwrap();
            let mut got = Vec::new();
            while let Some(((t, call, n), rec)) = r.next().unwrap() {
                assert_eq!((t, call, n as usize), (rec.t_start, true, got.len()));
                got.push(rec);
            }
            assert_eq!(got, want.records, "a buffer of {buffer} bytes");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A run of four ranks written to spools (requests in flight, clock offsets, entries
    /// at one instant across ranks, a rank without a spool), read back across ranks: the
    /// order and records of `report::timeline` on the loaded run.
    #[test]
    fn a_run_read_in_time_order_is_the_loaded_runs_timeline() {
        let mut rnd = crate::testing::xorshift(0x0dd_ba11_5eed);
        let dir = std::env::temp_dir().join(format!("pmpi-runorder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for rank in 0..4 {
            let mut recs = Vec::new();
            let mut t = 10_000u64;
            for _ in 0..3000 {
                let nb = rnd(10) == 0;
                // Entries on a grid of 1 µs: ranks often enter at one instant.
                let end = if nb {
                    t + 1 + rnd(400) * 1000
                } else {
                    t + 1 + rnd(3) * 1000
                };
                recs.push(entered(t, end, nb));
                t = if nb {
                    t + 1000
                } else {
                    end - 1 + 1000 * rnd(3)
                };
            }
            recs.sort_by_key(|r| r.t_end);
            let meta = RankMeta {
                rank,
                world_size: 5,
                node: format!("n{}", rank / 2),
                clock_init: Some(crate::trace::ClockSample {
                    at_ns: 0,
                    offset_ns: 1000 * rank as i64,
                    rtt_ns: 1,
                }),
                ..Default::default()
            };
            crate::trace::write_meta(&dir, &meta).unwrap();
            if rank != 3 {
                crate::trace::write_spool(&dir, rank, &recs).unwrap();
            }
        }
        let want = timeline_of(&dir);
        let mut order = RunOrder::open(&dir).unwrap();
        let mut got = Vec::new();
        while let Some((at, ri, c)) = order.next_call().unwrap() {
            got.push((at, ri, c.record));
        }
        assert_eq!(got.len(), 9000);
        assert!(got == want, "not the timeline's order");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A call entered at `t` that ended at `end`, nonblocking (posted at once) or not.
    fn entered(t: u64, end: u64, nb: bool) -> Record {
        Record {
            t_start: t,
            t_end: end,
            t_posted: if nb { t + 1 } else { end },
            call: 3,
            flags: if nb { FLAG_NONBLOCKING } else { 0 },
            ..Default::default()
        }
    }

    /// The calls of the run in `dir` in `report::timeline`'s order, with their records:
    /// what reading it in time order must give.
    fn timeline_of(dir: &std::path::Path) -> Vec<(i64, usize, Record)> {
        let run = crate::trace::load_run(dir).unwrap();
        crate::report::timeline(&run)
            .into_iter()
            .map(|(at, ri, i)| (at, ri, run.ranks[ri].records[i]))
            .collect()
    }

    /// Ranks whose clock runs at half speed against rank 0's (a drift the loader applies:
    /// neighbouring entries share an instant on rank 0's clock, out of call order at
    /// times) and entries held by up to 100 calls at once (more than a block), read across
    /// ranks: the order and records of `report::timeline` on the loaded run, every instant's
    /// calls by record number.
    #[test]
    fn instants_shared_within_a_rank_are_put_by_record_number() {
        let mut rnd = crate::testing::xorshift(0x005e_ed0f_b10c);
        let dir = std::env::temp_dir().join(format!("pmpi-instants-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut shared = 0;
        for rank in 0..3 {
            let mut recs = Vec::new();
            let mut t = 1_000_000u64;
            for _ in 0..2000 {
                // A run of calls entered at one instant (a thread's calls recorded
                // together), or one call; entries 1 or 2 ns apart.
                let same = if rnd(40) == 0 { 1 + rnd(100) } else { 1 };
                for _ in 0..same {
                    let nb = rnd(8) == 0;
                    let end = t + if nb { 1 + rnd(300) } else { 1 };
                    recs.push(Record {
                        tag: recs.len() as i32,
                        ..entered(t, end, nb)
                    });
                }
                t += 1 + rnd(2);
            }
            recs.sort_by_key(|r| r.t_end);
            let sample = |at_ns: u64, offset_ns: i64| crate::trace::ClockSample {
                at_ns,
                offset_ns,
                rtt_ns: 1,
            };
            let meta = RankMeta {
                rank,
                world_size: 3,
                node: format!("n{rank}"),
                clock_init: Some(sample(0, 0)),
                clock_finalize: (rank > 0).then(|| sample(2_000_000, -1_000_000 * rank as i64 / 2)),
                ..Default::default()
            };
            crate::trace::write_meta(&dir, &meta).unwrap();
            crate::trace::write_spool(&dir, rank, &recs).unwrap();
        }
        let want = timeline_of(&dir);
        let mut order = RunOrder::open(&dir).unwrap();
        let mut got = Vec::new();
        while let Some((at, ri, c)) = order.next_call().unwrap() {
            if got
                .last()
                .is_some_and(|&(a, r, _): &(i64, usize, Record)| a == at && r == ri)
            {
                shared += 1;
            }
            got.push((at, ri, c.record));
        }
        assert_eq!(got.len(), want.len());
        // Calls of one rank at one instant: from runs and from the drift, many.
        assert!(shared > 5000, "{shared} calls share an instant");
        if let Some(k) = (0..got.len()).find(|&k| got[k] != want[k]) {
            panic!("at {k}: {:?} != {:?}", got[k], want[k]);
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A spool in call order, read without the buffer, that grows after it was opened (a
    /// run still being written) with records out of order: every record comes out once,
    /// those read before the first out of order as read, the later ones through the buffer
    /// turned on there (in order among themselves).
    /// The buffer replayed on every record's key (the first pass before its ring): whether
    /// a buffer of `window` records gives the spool in call order, its threads, and
    /// whether every record came after the one before it.
    fn fits_by_buffer(path: &Path, window: usize) -> (bool, Vec<Thread>, bool) {
        let mut records = Records::open(path).unwrap();
        let (mut heap, mut last, mut threads, mut in_order) =
            (Reorder::<()>::default(), None, Vec::new(), true);
        let mut at = usize::MAX;
        loop {
            let more = records.next().unwrap();
            if let Some((k, r)) = &more
                && k.1
            {
                count_thread(&mut threads, &mut at, r);
            }
            if let Some((k, _)) = more {
                in_order &= heap.run.back().is_none_or(|b| b.0 <= k) && heap.late.is_empty();
                heap.push(k, ());
                if heap.len() <= window {
                    continue;
                }
            }
            let Some((k, ())) = heap.pop() else {
                return (true, threads, in_order);
            };
            if last.is_some_and(|l| k < l) {
                return (false, threads, in_order);
            }
            last = Some(k);
        }
    }

    /// The first pass's ring (records in order kept as keys, the buffer built only when
    /// one comes out of order) decides as the buffer replayed on every record: spools in
    /// order, and out of order first at record 0 to 3,000 (before, at and after a window of
    /// 1,024), displaced by less than, about and more than the window, two threads and
    /// continuations among the calls.
    #[test]
    fn the_first_pass_decides_as_the_buffer_replayed_on_every_record() {
        let dir = std::env::temp_dir().join(format!("pmpi-fits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = crate::trace::spool_path(&dir, 0);
        let mut seed = 0x5eed_u64;
        let mut rnd = |n: u64| {
            seed = crate::replay::net::splitmix64(seed);
            seed % n
        };
        let (mut failed, mut in_order, mut cases) = (0, 0, 0);
        let mut check = |recs: &[Record]| {
            crate::trace::write_spool(&dir, 0, recs).unwrap();
            for window in [1024, 4096] {
                let want = fits_by_buffer(&path, window);
                let (mut threads, mut order) = (Vec::new(), true);
                let got = fits(
                    &mut Records::open(&path).unwrap(),
                    window,
                    &mut threads,
                    &mut order,
                )
                .unwrap();
                assert_eq!((got, threads, order), want, "window {window}");
                failed += !got as u32;
                in_order += order as u32;
                cases += 1;
            }
        };
        for first_late in [
            None,
            Some(0),
            Some(1),
            Some(1023),
            Some(1024),
            Some(1025),
            Some(3000),
        ] {
            for shift in [1u64, 500, 1100, 4000] {
                let n = 3_500 + rnd(500);
                let mut recs: Vec<Record> = (0..n)
                    .map(|i| Record {
                        t_start: 1_000 + i * 10,
                        t_end: 1_005 + i * 10,
                        t_posted: 1_005 + i * 10,
                        thread: (rnd(5) == 0) as u16,
                        call: if rnd(9) == 0 {
                            crate::trace::arcs::ARC_CALL
                        } else {
                            3
                        },
                        ..Default::default()
                    })
                    .collect();
                if let Some(at) = first_late {
                    // Records from `at` on entered up to `shift` records earlier, at random.
                    for r in recs.iter_mut().skip(at as usize) {
                        if rnd(3) == 0 {
                            r.t_start = r.t_start.saturating_sub(10 * rnd(shift + 1)).max(1);
                        }
                    }
                    if at > 0 {
                        recs[at as usize].t_start = recs[at as usize - 1].t_start - 1;
                    }
                }
                check(&recs);
            }
        }
        // One record displaced by exactly the window and by one more: the first fits a
        // buffer of 1,024, the second does not (the key the buffer let go last decides).
        for d in [1024usize, 1025] {
            let mut recs: Vec<Record> = (0..3000u64)
                .map(|i| Record {
                    t_start: 1_000 + i * 10,
                    call: 3,
                    ..Default::default()
                })
                .collect();
            recs[2000].t_start = recs[2000 - d].t_start - 1;
            check(&recs);
        }
        // Both answers, and spools in and out of order, were met.
        assert!(
            failed > 0 && failed < cases,
            "{failed} of {cases} did not fit"
        );
        assert!(
            in_order > 0 && in_order < cases,
            "{in_order} of {cases} in order"
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_spool_in_order_that_grows_out_of_order_turns_the_buffer_on() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("pmpi-grows-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rec = |t: u64| Record {
            t_start: t,
            t_end: t + 5,
            t_posted: t + 5,
            call: 3,
            ..Default::default()
        };
        let first: Vec<Record> = (0..100).map(|i| rec(1_000 + 10 * i)).collect();
        crate::trace::write_spool(&dir, 0, &first).unwrap();
        let path = crate::trace::spool_path(&dir, 0);
        let mut reader = CallOrder::open(&path).unwrap();
        assert!(reader.direct);
        let later = [5_000u64, 1_500, 6_000, 900, 7_000];
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        for &t in &later {
            file.write_all(bytemuck::bytes_of(&rec(t))).unwrap();
        }
        drop(file);
        let mut got = Vec::new();
        while let Some(c) = reader.next_call().unwrap() {
            got.push((c.rec, c.record.t_start));
        }
        assert!(!reader.direct);
        let mut want: Vec<(u32, u64)> = (0..100).map(|i| (i, 1_000 + 10 * i as u64)).collect();
        // Read as they come up to 5,000; then the rest by entry.
        want.push((100, 5_000));
        want.extend([(103, 900), (101, 1_500), (102, 6_000), (104, 7_000)]);
        assert_eq!(got, want);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Records of three threads as a spool holds them (each when its call completed):
    /// nonblocking operations in flight across up to `span` calls, some calls with per-peer
    /// bytes in continuations, written at the post (a nonblocking call's) or after the
    /// call, and some continuations whose call was lost. Read back in call order, they are
    /// the loaded spool's records sorted by (entry, number), with the loader's numbers and
    /// arcs.
    #[test]
    fn a_spool_read_in_call_order_is_the_loaded_records_sorted() {
        let mut rnd = crate::testing::xorshift(0x1234_5678_9abc_def1);
        let dir = std::env::temp_dir().join(format!("pmpi-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (case, span) in [0u64, 10, 3000, 9000].into_iter().enumerate() {
            // (when written, record): a call when it completed, a continuation at its
            // call's post (nonblocking) or end.
            let mut spool: Vec<(u64, Record)> = Vec::new();
            for thread in 0..3u16 {
                let mut t = 1_000u64;
                for _ in 0..4000 {
                    let nb = span > 0 && rnd(20) == 0;
                    let dur = 1 + rnd(1000);
                    // A nonblocking operation completes up to `span` calls' time later.
                    let end = if nb { t + 1 + rnd(span) * 600 } else { t + dur };
                    let with_arcs = rnd(30) == 0;
                    let r = Record {
                        t_start: t,
                        t_end: end,
                        t_posted: if nb { t + 1 } else { end },
                        thread,
                        call: 3 + rnd(2) as u16,
                        flags: if nb { FLAG_NONBLOCKING } else { 0 }
                            | if with_arcs { FLAG_ARCS } else { 0 },
                        ..Default::default()
                    };
                    if with_arcs || rnd(200) == 0 {
                        let pairs: Vec<(i32, u64)> = (0..6).map(|i| (i, 1 + i as u64)).collect();
                        let at = if nb { t + 1 } else { end };
                        spool.push((at, arcs::continuation(&r, false, 0, 6, &pairs[..4])));
                        spool.push((at, arcs::continuation(&r, false, 4, 6, &pairs[4..])));
                        spool.push((at, arcs::continuation(&r, true, 0, 1, &pairs[..1])));
                    }
                    // A continuation whose call was lost (a full buffer).
                    if !with_arcs && rnd(100) == 0 {
                        spool.push((end, arcs::continuation(&r, true, 0, 1, &[(9, 9)])));
                    } else {
                        spool.push((end, r));
                    }
                    t += if nb { 2 } else { dur + rnd(200) };
                }
            }
            spool.sort_by_key(|&(at, _)| at);
            let recs: Vec<Record> = spool.into_iter().map(|(_, r)| r).collect();
            crate::trace::write_spool(&dir, case as i32, &recs).unwrap();
            let path = crate::trace::spool_path(&dir, case as i32);
            let (calls, loaded) = arcs::split(recs);
            let mut want: Vec<Call> = calls
                .into_iter()
                .enumerate()
                .map(|(i, r)| Call {
                    rec: i as u32,
                    record: r,
                    arcs: loaded
                        .iter()
                        .find(|a| a.rec == i as u32)
                        .cloned()
                        .map(Box::new),
                })
                .collect();
            want.sort_by_key(|c| (c.record.t_start, c.rec));
            assert!(want.iter().filter(|c| c.arcs.is_some()).count() > 100);
            let mut reader = CallOrder::open(&path).unwrap();
            let mut got = Vec::new();
            while let Some(x) = reader.next_call().unwrap() {
                got.push(x);
            }
            assert_eq!(got.len(), want.len(), "span {span}");
            if let Some(k) = (0..got.len()).find(|&k| got[k] != want[k]) {
                panic!("span {span}: at {k}: {:?} != {:?}", got[k], want[k]);
            }
            // The first pass found each thread's calls and first entry.
            let mut threads: Vec<Thread> = Vec::new();
            for c in &want {
                match threads.iter_mut().find(|t| t.thread == c.record.thread) {
                    Some(t) => t.calls += 1,
                    None => threads.push(Thread {
                        thread: c.record.thread,
                        calls: 1,
                        first_start: c.record.t_start,
                    }),
                }
            }
            threads.sort_by_key(|t| t.thread);
            assert_eq!(reader.threads(), &threads[..], "span {span}");
            // The buffer is the displacement's, not the spool's length.
            if span <= 10 {
                assert_eq!(reader.window(), FIRST_WINDOW, "span {span}");
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}

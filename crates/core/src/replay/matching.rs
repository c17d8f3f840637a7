//! Matching as records are read: which receive gets which send, which completion call
//! finished which nonblocking operation, which records of the ranks are one collective
//! operation, which receive's message a probe waits for.
//!
//! [`super::Plan::new`] feeds these the whole run; a reader of spools in time order can feed
//! them record by record (docs/engine.md, "Toward memory bounded by the messages in
//! flight"). Every match depends only on the order of each rank's (or stream's) own
//! records, never on how the ranks are interleaved, and each holds only what is not
//! matched yet: the unmatched messages, the requests whose completion call is not read
//! yet, the collective operations some member has not entered, the probes whose receive
//! is not read yet.

use super::FxMap;
use std::collections::VecDeque;
use std::hash::Hash;

/// A caller's last channel and its number ([`Fifo::channel_after`]).
pub type LastChannel<K> = Option<(K, u32)>;

/// First-in first-out matching per channel: the k-th item of side A on a channel gets the
/// k-th item of side B (MPI's non-overtaking rule: sends and receives per (source,
/// destination, tag)), whichever side comes first.
pub struct Fifo<K, A, B> {
    /// Per channel, its number in `chans`. Channels are kept once seen: they are bounded
    /// by the ranks and tags, not by the run's length, and dropping an empty one would
    /// cost a queue allocation per message.
    index: FxMap<K, u32>,
    /// Per channel number, the items of the side that came first and are not matched yet
    /// (the other side's queue is empty). (Numbered, so that a caller who knows the
    /// channel a record uses, as most records use their rank's previous one, skips the
    /// hash: [`Fifo::channel`], [`Fifo::a_in`], [`Fifo::b_in`].)
    chans: Vec<(VecDeque<A>, VecDeque<B>)>,
}

impl<K, A, B> Default for Fifo<K, A, B> {
    fn default() -> Self {
        Fifo {
            index: FxMap::default(),
            chans: Vec::new(),
        }
    }
}

impl<K: Hash + Eq, A, B> Fifo<K, A, B> {
    /// The number of channel `k` (made when first seen; numbers never change).
    #[inline(never)]
    pub fn channel(&mut self, k: K) -> u32 {
        let next = self.chans.len() as u32;
        let c = *self.index.entry(k).or_insert(next);
        if c == next {
            self.chans.push((VecDeque::new(), VecDeque::new()));
        }
        c
    }

    /// [`Fifo::channel`], `last` (the caller's last channel, of a rank say: most of a
    /// rank's messages use the channel its previous one did, a ring, an exchange) checked
    /// first, without a hash, and kept. (Forced inline: out of line, the windowed replay
    /// ran 1.3 % more instructions.)
    #[inline(always)]
    pub fn channel_after(&mut self, last: &mut LastChannel<K>, k: K) -> u32
    where
        K: Copy,
    {
        match *last {
            Some((lk, c)) if lk == k => c,
            _ => {
                let c = self.channel(k);
                *last = Some((k, c));
                c
            }
        }
    }

    /// Item `a` of side A on channel `k`: the B it matches, if one waits; else `a` waits.
    pub fn a(&mut self, k: K, a: A) -> Option<B> {
        let c = self.channel(k);
        self.a_in(c, a)
    }

    /// Item `b` of side B on channel `k`: the A it matches, if one waits; else `b` waits.
    pub fn b(&mut self, k: K, b: B) -> Option<A> {
        let c = self.channel(k);
        self.b_in(c, b)
    }

    /// [`Fifo::a`] on the channel numbered `c` ([`Fifo::channel`]).
    #[inline]
    pub fn a_in(&mut self, c: u32, a: A) -> Option<B> {
        let (qa, qb) = &mut self.chans[c as usize];
        let b = qb.pop_front();
        if b.is_none() {
            qa.push_back(a);
        }
        b
    }

    /// [`Fifo::b`] on the channel numbered `c` ([`Fifo::channel`]).
    #[inline]
    pub fn b_in(&mut self, c: u32, b: B) -> Option<A> {
        let (qa, qb) = &mut self.chans[c as usize];
        let a = qa.pop_front();
        if a.is_none() {
            qb.push_back(b);
        }
        a
    }

    /// Items waiting for their match (what the matching holds).
    pub fn waiting(&self) -> usize {
        self.chans.iter().map(|(a, b)| a.len() + b.len()).sum()
    }
}

/// Collective operations across ranks: each member's record joins its operation's key
/// (the caller's: communicator and collective number on it); the operation is complete,
/// and leaves, when its `n` members have joined.
pub struct Groups<K, M = u32> {
    /// Open operations: the order in which each was first joined, and its members so far.
    open: FxMap<K, (u32, Vec<M>)>,
    /// Operations opened so far.
    opened: u32,
}

impl<K, M> Default for Groups<K, M> {
    fn default() -> Self {
        Groups {
            open: FxMap::default(),
            opened: 0,
        }
    }
}

impl<K: Hash + Eq, M> Groups<K, M> {
    /// Record `g` joins operation `k` of `n` members. When `g` is its last member: the
    /// operation's number in the order operations were first joined, and its members in
    /// the order they joined.
    pub fn join(&mut self, k: K, g: M, n: u64) -> Option<(u32, Vec<M>)> {
        use std::collections::hash_map::Entry;
        match self.open.entry(k) {
            Entry::Occupied(mut e) => {
                e.get_mut().1.push(g);
                if e.get().1.len() as u64 >= n {
                    return Some(e.remove());
                }
                None
            }
            Entry::Vacant(e) => {
                let next = self.opened;
                self.opened += 1;
                if n <= 1 {
                    return Some((next, vec![g]));
                }
                e.insert((next, vec![g]));
                None
            }
        }
    }

    /// Operations some member has not joined (what the grouping holds).
    pub fn open(&self) -> usize {
        self.open.len()
    }
}

/// Nonblocking operations and the completion calls that finished them: on one thread, the
/// completion call that returned at the instant the operation's record says its request
/// completed, whichever of the two is read first. Read in call order, an operation (entered
/// at its post) always comes before its completion call and waits here until it: the
/// requests in flight.
pub struct Completions<T = u32> {
    /// Completion calls read, by (thread, end); a later one with the same key replaces it.
    calls: FxMap<(u16, u64), T>,
    /// Operations read before their completion call, by (thread, end).
    pending: FxMap<(u16, u64), Vec<T>>,
}

impl<T> Default for Completions<T> {
    fn default() -> Self {
        Completions {
            calls: FxMap::default(),
            pending: FxMap::default(),
        }
    }
}

impl<T: Copy> Completions<T> {
    /// Completion call `c` of `thread` returned at `end`: calls `found` with each
    /// operation that waited for it.
    pub fn call(&mut self, thread: u16, end: u64, c: T, mut found: impl FnMut(T)) {
        self.calls.insert((thread, end), c);
        for op in self.pending.remove(&(thread, end)).into_iter().flatten() {
            found(op);
        }
    }

    /// Operation `op` of `thread` completed at `end`: its completion call, if read; else
    /// `op` waits for it.
    pub fn operation(&mut self, thread: u16, end: u64, op: T) -> Option<T> {
        let c = self.calls.get(&(thread, end)).copied();
        if c.is_none() {
            self.pending.entry((thread, end)).or_default().push(op);
        }
        c
    }

    /// Forgets the completion call of `thread` that returned at `end`: a reader in call order
    /// is past it, so no operation read later names it.
    pub fn forget(&mut self, thread: u16, end: u64) {
        self.calls.remove(&(thread, end));
    }

    /// Takes the operations of `thread` that completed at `end` and wait for their
    /// completion call: a reader in call order past `end` on that thread knows none comes.
    pub fn give_up(&mut self, thread: u16, end: u64) -> Vec<T> {
        self.pending.remove(&(thread, end)).unwrap_or_default()
    }

    /// Operations waiting for their completion call.
    pub fn waiting(&self) -> usize {
        self.pending.values().map(Vec::len).sum()
    }
}

/// Probes waiting for the receive whose message they probe: the next receive on their
/// stream from the same source with the same tag (any tag for a probe of `MPI_ANY_TAG`,
/// recorded negative).
pub struct Probes<P = u32> {
    /// Per stream: (probe, source, tag) in call order.
    waiting: FxMap<u32, Vec<(P, i32, i32)>>,
}

impl<P> Default for Probes<P> {
    fn default() -> Self {
        Probes {
            waiting: FxMap::default(),
        }
    }
}

impl<P: Copy> Probes<P> {
    /// Probe `p` on stream `s` of source `peer` and tag `tag`.
    pub fn probe(&mut self, s: u32, p: P, peer: i32, tag: i32) {
        self.waiting.entry(s).or_default().push((p, peer, tag));
    }

    /// A receive on stream `s` from `peer` with tag `tag`: calls `found` with each waiting
    /// probe it answers, in call order, and forgets them.
    #[inline]
    pub fn recv(&mut self, s: u32, peer: i32, tag: i32, mut found: impl FnMut(P)) {
        // Most runs probe rarely: no hash while none waits.
        if self.waiting.is_empty() {
            return;
        }
        let Some(w) = self.waiting.get_mut(&s) else {
            return;
        };
        w.retain(|&(p, pp, pt)| {
            let hit = pp == peer && (pt < 0 || pt == tag);
            if hit {
                found(p);
            }
            !hit
        });
        if w.is_empty() {
            self.waiting.remove(&s);
        }
    }

    /// Probes still waiting for their receive.
    pub fn waiting(&self) -> usize {
        self.waiting.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kth_of_one_side_matches_the_kth_of_the_other_whichever_comes_first() {
        let mut f: Fifo<u8, u32, u32> = Fifo::default();
        // Channel 1: two sends, then two receives; channel 2: a receive first.
        assert_eq!(f.a(1, 10), None);
        assert_eq!(f.b(2, 200), None);
        assert_eq!(f.a(1, 11), None);
        assert_eq!(f.waiting(), 3);
        assert_eq!(f.b(1, 100), Some(10));
        assert_eq!(f.a(2, 20), Some(200));
        assert_eq!(f.b(1, 101), Some(11));
        assert_eq!(f.b(1, 102), None);
        assert_eq!(f.waiting(), 1);
    }

    /// Channels found through a caller's last one ([`Fifo::channel_after`]) match as the
    /// keyed calls do, the last channel changing at random (runs of one key, then others).
    #[test]
    fn a_last_channel_matches_as_the_keyed_calls() {
        let mut rnd = crate::testing::xorshift(0x9e37_79b9_7f4a_7c15);
        type Pairs = Fifo<(i32, i32), u32, u32>;
        let (mut keyed, mut cached) = (Pairs::default(), Pairs::default());
        let (mut last_a, mut last_b) = (None, None);
        let (mut key, mut matched) = ((0, 0), 0);
        for item in 0..20_000u32 {
            if rnd(8) == 0 {
                key = (rnd(4) as i32, rnd(3) as i32);
            }
            let (want, got) = if rnd(2) == 0 {
                let c = cached.channel_after(&mut last_a, key);
                (keyed.a(key, item), cached.a_in(c, item))
            } else {
                let c = cached.channel_after(&mut last_b, key);
                (keyed.b(key, item), cached.b_in(c, item))
            };
            assert_eq!(got, want, "item {item}");
            matched += want.is_some() as u32;
            assert_eq!(cached.waiting(), keyed.waiting());
        }
        assert!(matched > 5_000, "{matched}");
    }

    #[test]
    fn an_operation_leaves_when_its_last_member_joins() {
        let mut g: Groups<(u8, u8)> = Groups::default();
        assert_eq!(g.join((0, 0), 5, 3), None);
        assert_eq!(g.join((0, 1), 6, 2), None);
        assert_eq!(g.join((0, 0), 7, 3), None);
        assert_eq!(g.join((0, 1), 8, 2), Some((1, vec![6, 8])));
        assert_eq!(g.open(), 1);
        assert_eq!(g.join((0, 0), 9, 3), Some((0, vec![5, 7, 9])));
        assert_eq!(g.join((1, 0), 4, 1), Some((2, vec![4])));
        assert_eq!(g.open(), 0);
    }

    #[test]
    fn an_operation_completes_at_the_call_of_its_thread_that_returned_with_it() {
        let mut c = Completions::default();
        // Read in call order: the operations first, then their completion call.
        assert_eq!(c.operation(0, 50, 1), None);
        assert_eq!(c.operation(0, 50, 2), None);
        assert_eq!(c.operation(1, 50, 3), None);
        let mut got = Vec::new();
        c.call(0, 50, 9, |op| got.push(op));
        assert_eq!(got, vec![1, 2]);
        assert_eq!(c.waiting(), 1);
        // A call read first (as the plan reads them) names the operations that come after.
        c.call(1, 60, 10, |_| unreachable!());
        assert_eq!(c.operation(1, 60, 4), Some(10));
        c.forget(1, 60);
        assert_eq!(c.operation(1, 60, 5), None);
    }

    #[test]
    fn a_probe_takes_the_next_receive_of_its_source_and_tag_on_its_stream() {
        let mut p = Probes::default();
        p.probe(0, 1, 3, 7);
        p.probe(0, 2, 3, -1);
        p.probe(1, 3, 3, 7);
        let mut got = Vec::new();
        // Another tag answers only the any-tag probe; another stream's receive none here.
        p.recv(0, 3, 8, |x| got.push(x));
        assert_eq!(got, vec![2]);
        p.recv(0, 3, 7, |x| got.push(x));
        assert_eq!(got, vec![2, 1]);
        assert_eq!(p.waiting(), 1);
    }
}

//! The calibration measurements, run under MPI on every rank: node discovery, ping-pong
//! over a size grid (inter- and intra-node), Kielmann's pLogP measurements, the
//! bandwidth-sharing penalty schemes (Fig. 2 of the penalty paper), all-to-all sample
//! runs, and the LOM round trips, one-to-two experiments and scatter/gather rows.
//!
//! Every function is collective over WORLD (all ranks call it with the same arguments, in
//! the same order) and returns the same values on every rank: each measuring rank fills
//! its entries and an element-wise MAX all-reduce shares them. Times are taken with a
//! monotonic clock by the rank that can see the whole operation (the sender, which waits
//! for the receiver's empty acknowledgement, so buffering in the MPI library or the TCP
//! stack never shortens a measurement).

use std::time::Instant;

use super::fit::{LomMeasurements, PLogPPoint};
use super::mpi::{Comm, Mpi, Request, touch};

const TAG_DATA: i32 = 1000;
const TAG_ACK: i32 = 30000;

/// Longest node name exchanged (longer names are cut).
const NAME_MAX: usize = 256;

/// Ranks, nodes, and one leader rank per node (its lowest rank).
pub struct Ctx<'a> {
    pub mpi: &'a Mpi,
    /// Node names, indexed by node id (in order of their lowest rank).
    pub nodes: Vec<String>,
    /// Node id of every WORLD rank.
    pub node_of: Vec<usize>,
    /// Lowest WORLD rank of every node.
    pub leaders: Vec<i32>,
    /// Node leaders only (None on other ranks); leader of node k has rank k in it.
    pub leader_comm: Option<Comm>,
}

/// The exact median of repeats (mean of the middle two for an even count; 0 for none),
/// by statrs's selection in place.
pub fn median(v: &mut [f64]) -> f64 {
    use statrs::statistics::{Data, OrderStatistics};
    if v.is_empty() {
        return 0.0;
    }
    Data::new(v).median()
}

impl<'a> Ctx<'a> {
    /// Exchanges node names (`name` is this rank's) and builds the node map.
    pub fn discover(mpi: &'a Mpi, name: &str) -> Ctx<'a> {
        let mut mine = [0u8; NAME_MAX];
        let b = name.as_bytes();
        let n = b.len().min(NAME_MAX - 1);
        mine[..n].copy_from_slice(&b[..n]);
        let all = mpi.allgather_bytes(&mine, mpi.world, mpi.size as usize);
        let mut nodes: Vec<String> = Vec::new();
        let mut node_of = Vec::new();
        let mut leaders = Vec::new();
        for (r, chunk) in all.chunks(NAME_MAX).enumerate() {
            let end = chunk.iter().position(|&c| c == 0).unwrap_or(NAME_MAX);
            let s = String::from_utf8_lossy(&chunk[..end]).into_owned();
            let id = match nodes.iter().position(|x| *x == s) {
                Some(i) => i,
                None => {
                    nodes.push(s);
                    leaders.push(r as i32);
                    nodes.len() - 1
                }
            };
            node_of.push(id);
        }
        let is_leader = leaders.contains(&mpi.rank);
        let key = node_of[mpi.rank as usize] as i32;
        let leader_comm = mpi.split(mpi.world, is_leader.then_some(0), key);
        Ctx {
            mpi,
            nodes,
            node_of,
            leaders,
            leader_comm,
        }
    }

    /// Two ranks on one node, if any node has two.
    pub fn intra_pair(&self) -> Option<(i32, i32)> {
        (0..self.nodes.len()).find_map(|k| {
            let mut r = (0..self.node_of.len()).filter(|&r| self.node_of[r] == k);
            Some((r.next()? as i32, r.next()? as i32))
        })
    }

    /// Every pair of node leaders exchanges one byte both ways, so that connection setup
    /// (TCP connect in Open MPI's tcp BTL, done lazily) is not measured later.
    pub fn warm_up(&self) {
        let m = self.mpi;
        let l = &self.leaders;
        let mut b = [0u8; 1];
        for i in 0..l.len() {
            for j in (i + 1)..l.len() {
                round_trip(m, &mut b, l[i], l[j], 1);
            }
        }
        m.barrier(m.world);
    }

    /// Agreed elapsed time: rank 0's clock, broadcast (so every rank takes the same
    /// budget decisions).
    pub fn agreed(&self, v: f64) -> f64 {
        let mut x = [v];
        self.mpi.bcast_f64(&mut x, 0, self.mpi.world);
        x[0]
    }

    fn share(&self, v: &mut [f64]) {
        // Ranks that took no part in the measurement sleep in the barrier, not spin in the
        // reduction, while the others measure.
        self.mpi.barrier(self.mpi.world);
        self.mpi.allreduce_max(v, self.mpi.world);
    }
}

/// One round trip of `buf` between WORLD ranks `a` (sends first) and `b`, with `tag`; a
/// rank that is neither does nothing.
fn round_trip(m: &Mpi, buf: &mut [u8], a: i32, b: i32, tag: i32) {
    if m.rank == a {
        m.send(buf, b, tag, m.world);
        m.recv(buf, b, tag, m.world);
    } else if m.rank == b {
        m.recv(buf, a, tag, m.world);
        m.send(buf, a, tag, m.world);
    }
}

/// Empty round trips [`ping_pong`] makes before it measures.
pub const WARM_ROUND_TRIPS: u32 = 200;

/// Ping-pong between WORLD ranks `a` and `b`: for each size, the smallest round trip over
/// `reps` (after [`WARM_ROUND_TRIPS`] empty ones, and one of the size), halved: one-way
/// seconds per size. The sizes are measured largest first: measured first, right after
/// the step's line went out through the launcher, the empty message's smallest of 64
/// round trips came out 7.8-10.6 µs in three calibrations, last 6.0-6.8.
pub fn ping_pong(ctx: &Ctx, a: i32, b: i32, sizes: &[usize], reps: &[u32]) -> Vec<f64> {
    let m = ctx.mpi;
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut buf = vec![0u8; max];
    let mut out = vec![0.0; sizes.len()];
    // Empty round trips first, so that the first size is not measured on hosts still
    // waking from idle.
    for _ in 0..WARM_ROUND_TRIPS {
        round_trip(m, &mut buf[..0], a, b, 2);
    }
    for (i, &s) in sizes.iter().enumerate().rev() {
        let reps = reps.get(i).copied().unwrap_or(3).max(1);
        let best = best_round_trip(m, &mut buf[..s], a, b, 2, reps, None);
        if m.rank == a {
            out[i] = best / 2.0;
        }
    }
    ctx.share(&mut out);
    out
}

/// The smallest of `reps` timed round trips of `buf` (after one untimed), rank `a`
/// spinning `pause` before each where given (spinning keeps its core awake).
fn best_round_trip(
    m: &Mpi,
    buf: &mut [u8],
    a: i32,
    b: i32,
    tag: i32,
    reps: u32,
    pause: Option<std::time::Duration>,
) -> f64 {
    let mut best = f64::INFINITY;
    for r in 0..=reps {
        if let Some(p) = pause
            && m.rank == a
        {
            let end = Instant::now() + p;
            while Instant::now() < end {
                std::hint::spin_loop();
            }
        }
        let t = Instant::now();
        round_trip(m, buf, a, b, tag);
        if r > 0 {
            best = best.min(t.elapsed().as_secs_f64());
        }
    }
    best
}

/// Round trips between WORLD ranks `a` and `b` with the links idle before each: rank `a`
/// spins `pause` seconds before every round trip,
/// so that a shaper's token buckets are full when each message leaves, as for a message
/// an application sends after computing. For each size the smallest of `reps`, halved.
/// A back-to-back ping-pong drains the buckets with its small messages: its 1 KiB message
/// took 15-30 µs one way in seven calibrations on the emulated 100 Mbit/s ports, 10-13 µs
/// after a pause, like every size up to 2,560 B (`bench/bucket.c`).
pub fn paused_ping_pong(
    ctx: &Ctx,
    a: i32,
    b: i32,
    sizes: &[usize],
    reps: u32,
    pause: f64,
) -> Vec<f64> {
    let m = ctx.mpi;
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut buf = vec![0u8; max];
    let mut out = vec![0.0; sizes.len()];
    let pause = std::time::Duration::from_secs_f64(pause.max(0.0));
    for (i, &s) in sizes.iter().enumerate() {
        let best = best_round_trip(m, &mut buf[..s], a, b, 3, reps.max(1), Some(pause));
        if m.rank == a {
            out[i] = best / 2.0;
        }
    }
    ctx.share(&mut out);
    out
}

/// Bytes of [`small_exchange`]'s messages: an 8-byte reduction's.
pub const EXCHANGE_BYTES: usize = 8;

/// What a small message costs when the reverse one crosses at the same time: between WORLD
/// ranks `a` and `b`, `blocks` blocks of [`EXCHANGE_BYTES`]-byte messages, each block
/// `per_block` ping-pong round trips (each timed, halved) then as many exchanges (each
/// rank posts its receive, sends, and waits for both: an 8-byte all-reduce's or a halo
/// exchange's step; each timed at `a`), the two kinds taking turns so that both see the
/// same state of the hosts. Returns the medians (one-way, exchange), in seconds.
pub fn small_exchange(ctx: &Ctx, a: i32, b: i32, blocks: u32, per_block: u32) -> (f64, f64) {
    let m = ctx.mpi;
    let mut one_way = Vec::new();
    let mut both = Vec::new();
    let mut buf = [0u8; EXCHANGE_BYTES];
    let mut got = [0u8; EXCHANGE_BYTES];
    if m.rank == a || m.rank == b {
        let other = if m.rank == a { b } else { a };
        for _ in 0..blocks {
            for r in 0..=per_block {
                let t = Instant::now();
                round_trip(m, &mut buf, a, b, 4);
                if r > 0 {
                    one_way.push(t.elapsed().as_secs_f64() / 2.0);
                }
            }
            for r in 0..=per_block {
                let t = Instant::now();
                let mut reqs = [
                    m.irecv(&mut got, other, 5, m.world),
                    m.isend(&buf, other, 5, m.world),
                ];
                m.wait_all(&mut reqs);
                if r > 0 {
                    both.push(t.elapsed().as_secs_f64());
                }
            }
        }
    }
    let mut out = [0.0; 2];
    if m.rank == a {
        out = [median(&mut one_way), median(&mut both)];
    }
    ctx.share(&mut out);
    (out[0], out[1])
}

/// Repetitions of pLogP's send/receive-overhead exchange per repetition of its streams.
pub const OR_REPS: u32 = 4;

/// Rounds through every size that pLogP's send/receive-overhead exchanges are spread over.
pub const OR_ROUNDS: u32 = 4;

/// Kielmann's pLogP measurements between `a` and `b` for each size: `os` = time of the
/// send call; `or` = time of the receive call when the message has had time to arrive
/// (the receiver waits twice the measured one-way time first, `one_way[i]`); streams of
/// `k1 = 1` and `k2` back-to-back messages closed by an empty reply, `k2` large enough
/// (4 to 256 messages, at least 256 KiB) that the stream outlasts any burst allowance of
/// the network and `g` is the sustained gap. Returns the empty round trip and one point
/// per size (the streams the minimum over `reps`; `os` and `or` the median over [`OR_REPS`] times as many).
pub fn plogp(
    ctx: &Ctx,
    a: i32,
    b: i32,
    sizes: &[usize],
    one_way: &[f64],
    reps: u32,
) -> (f64, Vec<PLogPPoint>) {
    const K1: u32 = 1;
    let k2_of = |s: usize| ((256 * 1024) / s.max(1)).clamp(4, 256) as u32;
    let m = ctx.mpi;
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut buf = vec![0u8; max];
    let mut ack = [0u8; 0];
    // Per size: os, or, t1, t2; plus the empty round trip at the end.
    let mut v = vec![0.0; sizes.len() * 4 + 1];
    let mut rtt0 = f64::INFINITY;
    for _ in 0..=reps {
        if m.rank == a {
            let t = Instant::now();
            m.send(&ack, b, 3, m.world);
            m.recv(&mut ack, b, 3, m.world);
            rtt0 = rtt0.min(t.elapsed().as_secs_f64());
        } else if m.rank == b {
            m.recv(&mut ack, a, 3, m.world);
            m.send(&ack, a, 3, m.world);
        }
    }
    // os and or: OR_REPS times as many exchanges as the streams' repetitions, spread over
    // OR_ROUNDS rounds through every size (largest first, as the ping-pong), and their
    // medians: what a run's send and receive calls typically take (ExaML's 8-byte sends
    // took 6.1-7.0 µs in its run where the smallest of 32 sends was 4.2-5.7). Measured
    // one size after the other, a disturbance of the machine for a tenth of a second
    // doubled every small size's figures in one calibration of three (o_s(0) 12.1 µs,
    // 6.9 and 7.6 in the others).
    let total = OR_REPS * reps.max(1);
    let rounds = OR_ROUNDS.min(total);
    let mut os_all = vec![Vec::new(); sizes.len()];
    let mut or_all = vec![Vec::new(); sizes.len()];
    for round in 0..rounds {
        let n = total / rounds + u32::from(round < total % rounds);
        for (i, &s) in sizes.iter().enumerate().rev() {
            let buf = &mut buf[..s];
            // The receiver waits a millisecond beyond twice the one-way time: where ranks
            // share CPUs a sender descheduled past a shorter wait made o_r(0) 142 us in
            // one calibration of 14 (5-25 us in the others), and each small receive of a
            // run was predicted that much too long.
            let wait = 2.0 * one_way.get(i).copied().unwrap_or(0.0) + 1e-3;
            for _ in 0..n {
                // os and or in one exchange: a times its send, b waits, then times its
                // receive.
                if m.rank == a {
                    let t = Instant::now();
                    m.send(buf, b, 4, m.world);
                    os_all[i].push(t.elapsed().as_secs_f64());
                    m.recv(&mut ack, b, 4, m.world);
                } else if m.rank == b {
                    let t = Instant::now();
                    while t.elapsed().as_secs_f64() < wait {
                        std::hint::spin_loop();
                    }
                    let t = Instant::now();
                    m.recv(buf, a, 4, m.world);
                    or_all[i].push(t.elapsed().as_secs_f64());
                    m.send(&ack, a, 4, m.world);
                }
            }
        }
    }
    for (i, &s) in sizes.iter().enumerate().rev() {
        let buf = &mut buf[..s];
        let (mut t1, mut t2) = (0.0, 0.0);
        let mut s1 = f64::INFINITY;
        let mut s2 = f64::INFINITY;
        for _ in 0..reps.max(1) {
            for (k, best) in [(K1, &mut s1), (k2_of(s), &mut s2)] {
                if m.rank == a {
                    let t = Instant::now();
                    for _ in 0..k {
                        m.send(buf, b, 5, m.world);
                    }
                    m.recv(&mut ack, b, 5, m.world);
                    *best = best.min(t.elapsed().as_secs_f64());
                } else if m.rank == b {
                    for _ in 0..k {
                        m.recv(buf, a, 5, m.world);
                    }
                    m.send(&ack, a, 5, m.world);
                }
            }
        }
        if m.rank == a {
            t1 = s1;
            t2 = s2;
        }
        v[i * 4] = if m.rank == a {
            median(&mut os_all[i])
        } else {
            0.0
        };
        v[i * 4 + 1] = if m.rank == b {
            median(&mut or_all[i])
        } else {
            0.0
        };
        v[i * 4 + 2] = t1;
        v[i * 4 + 3] = t2;
    }
    let last = v.len() - 1;
    v[last] = if m.rank == a { rtt0 } else { 0.0 };
    ctx.share(&mut v);
    let pts = sizes
        .iter()
        .enumerate()
        .map(|(i, &s)| PLogPPoint {
            bytes: s as f64,
            os: v[i * 4],
            or: v[i * 4 + 1],
            k1: K1,
            t1: v[i * 4 + 2],
            k2: k2_of(s),
            t2: v[i * 4 + 3],
        })
        .collect();
    (v[last], pts)
}

enum Slot {
    DataIn(usize),
    AckIn(usize),
    DataOut,
}

/// One penalty scheme: every arc `(src node, dst node)` sends `bytes` bytes at once (after
/// a barrier) from the source node's leader to the destination node's leader, which
/// answers each message with an empty acknowledgement. An arc's time runs from the
/// barrier to the acknowledgement's arrival at its sender. Returns every repetition's
/// times, one value per arc.
pub fn scheme(ctx: &Ctx, arcs: &[(usize, usize)], bytes: usize, reps: u32) -> Vec<Vec<f64>> {
    let m = ctx.mpi;
    let l = &ctx.leaders;
    let sendbuf = vec![1u8; bytes];
    let incoming: Vec<usize> = (0..arcs.len())
        .filter(|&i| l[arcs[i].1] == m.rank)
        .collect();
    let mut recvbufs: Vec<Vec<u8>> = incoming.iter().map(|_| vec![0u8; bytes]).collect();
    let mut acks: Vec<[u8; 0]> = vec![[]; arcs.len()];
    let mut per_rep: Vec<Vec<f64>> = Vec::new();
    for _ in 0..reps.max(1) {
        let mut times = vec![0.0; arcs.len()];
        m.barrier(m.world);
        let t0 = Instant::now();
        let mut reqs: Vec<Request> = Vec::new();
        let mut slots: Vec<Slot> = Vec::new();
        for (buf, &i) in recvbufs.iter_mut().zip(&incoming) {
            reqs.push(m.irecv(buf, l[arcs[i].0], TAG_DATA + i as i32, m.world));
            slots.push(Slot::DataIn(i));
        }
        for (i, ack) in acks.iter_mut().enumerate() {
            if l[arcs[i].0] == m.rank {
                reqs.push(m.irecv(ack, l[arcs[i].1], TAG_ACK + i as i32, m.world));
                slots.push(Slot::AckIn(i));
            }
        }
        for (i, &(_, d)) in arcs.iter().enumerate() {
            if l[arcs[i].0] == m.rank {
                reqs.push(m.isend(&sendbuf, l[d], TAG_DATA + i as i32, m.world));
                slots.push(Slot::DataOut);
            }
        }
        while let Some(k) = m.wait_any(&mut reqs) {
            match slots[k] {
                Slot::DataIn(i) => m.send(&[], l[arcs[i].0], TAG_ACK + i as i32, m.world),
                Slot::AckIn(i) => times[i] = t0.elapsed().as_secs_f64(),
                Slot::DataOut => {}
            }
        }
        ctx.share(&mut times);
        per_rep.push(times);
    }
    recvbufs.iter().for_each(|b| touch(b));
    per_rep
}

/// Pairs of WORLD ranks on different nodes, each rank in one pair at most: in rank order,
/// each rank not yet paired with the next one on another node (`node_of`: node of every
/// rank). 4 ranks one per node: (0, 1), (2, 3); 8 by slot on 4 nodes: (0, 2), (1, 3),
/// (4, 6), (5, 7).
pub fn cross_pairs(node_of: &[usize]) -> Vec<(i32, i32)> {
    let mut taken = vec![false; node_of.len()];
    let mut pairs = Vec::new();
    for r in 0..node_of.len() {
        if taken[r] {
            continue;
        }
        if let Some(s) = (r + 1..node_of.len()).find(|&s| !taken[s] && node_of[s] != node_of[r]) {
            taken[r] = true;
            taken[s] = true;
            pairs.push((r as i32, s as i32));
        }
    }
    pairs
}

/// Every pair of `pairs` ping-pongs empty messages at once, `reps` round trips after ten
/// to warm up: per pair, the median round trip halved (what a small message costs while
/// every rank of the launch communicates; ranks in no pair wait in the barrier).
pub fn pairs_ping_pong(ctx: &Ctx, pairs: &[(i32, i32)], reps: u32) -> Vec<f64> {
    let m = ctx.mpi;
    let mut out = vec![0.0; pairs.len()];
    let mut buf = [0u8; 0];
    m.barrier(m.world);
    for (k, &(a, b)) in pairs.iter().enumerate() {
        if m.rank == a {
            let mut rtt = Vec::with_capacity(reps as usize);
            for r in 0..reps + 10 {
                let t = Instant::now();
                m.send(&buf, b, 3, m.world);
                m.recv(&mut buf, b, 3, m.world);
                if r >= 10 {
                    rtt.push(t.elapsed().as_secs_f64());
                }
            }
            out[k] = median(&mut rtt) / 2.0;
        } else if m.rank == b {
            for _ in 0..reps + 10 {
                m.recv(&mut buf, a, 3, m.world);
                m.send(&buf, a, 3, m.world);
            }
        }
    }
    ctx.share(&mut out);
    out
}

/// Time of an 8-byte `MPI_Allreduce` of every rank, as rank 0 timed it: the small
/// collective every rank of the launch takes part in. After 10 to warm up, five batches
/// of `reps / 5` (at least 10), each's mean per call; the median batch, so that a batch
/// the scheduler stalled does not set it. Every rank returns rank 0's figure.
pub fn allreduce_small(ctx: &Ctx, reps: u32) -> f64 {
    let m = ctx.mpi;
    let mut v = [0.0f64];
    for _ in 0..10 {
        m.allreduce_max(&mut v, m.world);
    }
    let per = (reps / 5).max(10);
    let mut batches = Vec::with_capacity(5);
    for _ in 0..5 {
        m.barrier(m.world);
        let t = Instant::now();
        for _ in 0..per {
            m.allreduce_max(&mut v, m.world);
        }
        batches.push(t.elapsed().as_secs_f64() / per as f64);
    }
    let mut out = [median(&mut batches)];
    m.bcast_f64(&mut out, 0, m.world);
    out[0]
}

/// Opposite messages between the leaders of nodes `a` and `b`, back to back: after one
/// exchange that lines the pair up, `2·reps` exchanges of `bytes` each way (Irecv, Isend,
/// Waitall), as lockstep codes exchange halos. Under Open MPI over TCP the two directions
/// then move one after the other (measured on the emulated cluster: 2.0 x a lone message
/// per exchange, where exchanges started a barrier apart, 50–1000 µs out of step, mostly
/// moved together). Each exchange's time on `a`'s leader runs from the previous one's
/// end, and the two messages' shares alternate between exchanges, so a repetition is the
/// mean of two consecutive exchanges. Returns every repetition's time, once per arc (the
/// shape of [`scheme`]).
pub fn exchange(ctx: &Ctx, a: usize, b: usize, bytes: usize, reps: u32) -> Vec<Vec<f64>> {
    let m = ctx.mpi;
    let (la, lb) = (ctx.leaders[a], ctx.leaders[b]);
    let sendbuf = vec![1u8; bytes];
    let mut recvbuf = vec![0u8; bytes];
    let reps = reps.max(1) as usize;
    let mut per_rep = vec![vec![0.0; 2]; reps];
    m.barrier(m.world);
    if m.rank == la || m.rank == lb {
        let peer = if m.rank == la { lb } else { la };
        let mut once = || {
            let mut q = vec![
                m.irecv(&mut recvbuf, peer, TAG_DATA, m.world),
                m.isend(&sendbuf, peer, TAG_DATA, m.world),
            ];
            m.wait_all(&mut q);
        };
        once();
        let mut t = Instant::now();
        let mut times = Vec::with_capacity(2 * reps);
        for _ in 0..2 * reps {
            once();
            times.push(t.elapsed().as_secs_f64());
            t = Instant::now();
        }
        if m.rank == la {
            for (k, r) in per_rep.iter_mut().enumerate() {
                let x = (times[2 * k] + times[2 * k + 1]) / 2.0;
                *r = vec![x, x];
            }
        }
    }
    for r in per_rep.iter_mut() {
        ctx.share(r);
    }
    touch(&recvbuf);
    per_rep
}

/// All-to-all sample runs among the node leaders (one process per node): for each size
/// `sizes[i]`, the slowest process's time of each of its `reps[i]` repetitions. The sizes
/// take turns (one repetition of each per round), so that a slow spell of the link or the
/// state TCP keeps between runs to the same peer does not fall on one size's repetitions
/// only. Non-leaders wait.
pub fn alltoall(ctx: &Ctx, sizes: &[usize], reps: &[u32]) -> Vec<Vec<f64>> {
    let m = ctx.mpi;
    let r: Vec<usize> = sizes
        .iter()
        .enumerate()
        .map(|(i, _)| reps.get(i).copied().unwrap_or(1).max(1) as usize)
        .collect();
    let first: Vec<usize> = r
        .iter()
        .scan(0, |at, &n| {
            let f = *at;
            *at += n;
            Some(f)
        })
        .collect();
    // Every repetition of every size, flat, so that one reduction shares them.
    let mut out = vec![0.0; r.iter().sum()];
    if let Some(c) = ctx.leader_comm {
        let n = m.comm_size(c);
        let max = sizes.iter().copied().max().unwrap_or(0);
        let send = vec![1u8; max * n];
        let mut recv = vec![0u8; max * n];
        // One warm-up run at the smallest size.
        if let Some(&s) = sizes.first() {
            m.alltoall(&send, &mut recv, s, c);
        }
        let rounds = r.iter().copied().max().unwrap_or(0);
        for k in 0..rounds {
            for (i, &s) in sizes.iter().enumerate() {
                if k >= r[i] {
                    continue;
                }
                m.barrier(c);
                let t = Instant::now();
                m.alltoall(&send, &mut recv, s, c);
                let mut x = [t.elapsed().as_secs_f64()];
                m.allreduce_max(&mut x, c);
                out[first[i] + k] = x[0];
            }
        }
        touch(&recv);
    }
    ctx.share(&mut out);
    first
        .iter()
        .zip(&r)
        .map(|(&f, &n)| out[f..f + n].to_vec())
        .collect()
}

/// What an all-to-all size's runs at or above the eager limit reduce to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typical {
    /// The median: one rank a node, where about one run in 40 stalls on a retransmission
    /// timeout (0-6 of the 74 runs from 64 KiB in each of 30 calibrations of the emulated
    /// cluster) and one such run moves the mean of 5 or 21 by 10-60 % (γ at 256 KiB over
    /// those calibrations: 1.68-2.88 by the mean, 1.71-2.02 by the median).
    Median,
    /// The mean, stalls included: several ranks a node, where a third of the runs stall
    /// and a run of many all-to-alls pays them.
    Mean,
}

/// One all-to-all size's time from its runs: below the eager limit `eager` (its messages
/// leave at once) the best run, as the ping-pong takes its best round trip — what slows a
/// run there is a rank waiting for a core, not the network (at 4 KiB one calibration's
/// runs spread over 1.0-2.6 ms, γ 1.73 by their trimmed mean, 1.03-1.07 in the next two),
/// and applications' small all-to-alls took about their contention-free time (Quantum
/// ESPRESSO's FFTs, hpcc's); at or above it, or where the limit is not known, the
/// `typical` statistic of every run.
pub fn alltoall_time(m: usize, eager: Option<u64>, runs: &[f64], typical: Typical) -> f64 {
    match eager {
        Some(e) if (m as u64) < e && !runs.is_empty() => {
            runs.iter().copied().fold(f64::INFINITY, f64::min)
        }
        _ => match typical {
            Typical::Mean => mean(runs),
            Typical::Median => median(&mut runs.to_vec()),
        },
    }
}

/// The mean of `v` (0 for none).
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// All-to-all over every rank of WORLD, as launched (several ranks per node): the slowest
/// rank's time of each repetition, all repetitions kept, for every size; the same on every
/// rank. Where a node's ranks share its port, TCP stalls on a dropped packet in some
/// repetitions, and the mean of the slowest rank's time is what a run of many such
/// exchanges pays on average (the others wait for that rank at the next collective).
/// `reps[i]` repetitions of `sizes[i]`.
pub fn alltoall_world(ctx: &Ctx, sizes: &[usize], reps: &[u32]) -> Vec<Vec<f64>> {
    let m = ctx.mpi;
    let n = m.size as usize;
    let max = sizes.iter().copied().max().unwrap_or(0);
    let send = vec![1u8; max * n];
    let mut recv = vec![0u8; max * n];
    if let Some(&s) = sizes.first() {
        m.alltoall(&send, &mut recv, s, m.world);
    }
    let mut out = Vec::with_capacity(sizes.len());
    for (&s, &r) in sizes.iter().zip(reps) {
        let mut v = Vec::with_capacity(r as usize);
        for _ in 0..r.max(1) {
            m.barrier(m.world);
            let t = Instant::now();
            m.alltoall(&send, &mut recv, s, m.world);
            let mut x = [t.elapsed().as_secs_f64()];
            m.allreduce_max(&mut x, m.world);
            v.push(x[0]);
        }
        out.push(v);
    }
    touch(&recv);
    out
}

/// LOM experiments between node leaders: empty round trips and round trips of `bytes`
/// bytes with empty replies for every pair, and one-to-two experiments for every root and
/// pair of destinations; medians over `reps`. Experiments run one at a time (a barrier
/// separates them) so that they never share a port.
pub fn lom(ctx: &Ctx, bytes: usize, reps: u32) -> LomMeasurements {
    let m = ctx.mpi;
    let l = &ctx.leaders;
    let n = l.len();
    let buf = vec![1u8; bytes];
    let mut rbuf = vec![0u8; bytes];
    let mut ack = [0u8; 0];
    let mut run = |root: usize, dests: &[usize], size: usize| -> f64 {
        let mut v = Vec::new();
        for _ in 0..reps.max(1) {
            m.barrier(m.world);
            let mut t = 0.0;
            if m.rank == l[root] {
                let t0 = Instant::now();
                let mut reqs: Vec<Request> = dests
                    .iter()
                    .map(|&d| m.isend(&buf[..size], l[d], 7, m.world))
                    .collect();
                m.wait_all(&mut reqs);
                for &d in dests {
                    m.recv(&mut ack, l[d], 8, m.world);
                }
                t = t0.elapsed().as_secs_f64();
            } else if dests.iter().any(|&d| l[d] == m.rank) {
                m.recv(&mut rbuf[..size], l[root], 7, m.world);
                m.send(&ack, l[root], 8, m.world);
            }
            let mut x = [t];
            m.allreduce_max(&mut x, m.world);
            v.push(x[0]);
        }
        median(&mut v)
    };
    let mut rt0 = vec![vec![0.0; n]; n];
    let mut rtm = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in (i + 1)..n {
            rt0[i][j] = run(i, &[j], 0);
            rtm[i][j] = run(i, &[j], bytes);
        }
    }
    let mut one_to_two = Vec::new();
    for i in 0..n {
        for j in 0..n {
            for k in (j + 1)..n {
                if j != i && k != i {
                    one_to_two.push((i, j, k, run(i, &[j, k], bytes)));
                }
            }
        }
    }
    touch(&rbuf);
    LomMeasurements {
        n,
        bytes: bytes as f64,
        rt0,
        rtm,
        one_to_two,
    }
}

/// A data row of `(bytes, seconds)`.
pub type Row = Vec<(f64, f64)>;

/// Linear scatter and gather rows from node 0's leader to the other leaders: for each
/// size, the median over `reps` of the slowest process's time. Returns `(scatter,
/// gather)` as `(bytes, seconds)` rows.
pub fn scatter_gather(ctx: &Ctx, sizes: &[usize], reps: u32) -> (Row, Row) {
    let m = ctx.mpi;
    let mut v = vec![0.0; sizes.len() * 2];
    if let Some(c) = ctx.leader_comm {
        let n = m.comm_size(c);
        let max = sizes.iter().copied().max().unwrap_or(0);
        let big = vec![1u8; max * n];
        let mut bigr = vec![0u8; max * n];
        let mut small = vec![0u8; max];
        for (i, &s) in sizes.iter().enumerate() {
            for (op, slot) in [(0, i * 2), (1, i * 2 + 1)] {
                let mut xs = Vec::new();
                for _ in 0..reps.max(1) {
                    m.barrier(c);
                    let t = Instant::now();
                    if op == 0 {
                        m.scatter(&big, &mut small, s, 0, c);
                    } else {
                        m.gather(&big[..max], &mut bigr, s, 0, c);
                    }
                    let mut x = [t.elapsed().as_secs_f64()];
                    m.allreduce_max(&mut x, c);
                    xs.push(x[0]);
                }
                v[slot] = median(&mut xs);
            }
        }
        touch(&small);
        touch(&bigr);
    }
    ctx.share(&mut v);
    let row = |k: usize| -> Row {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| (s as f64, v[i * 2 + k]))
            .collect()
    };
    (row(0), row(1))
}

/// How long a blocking send from `a` to `b` takes against the receive it feeds, the
/// receive posted first: for each size, the medians over `reps` of the send's time and of
/// the receive's (both from the end of one barrier). Between nodes the send returns once
/// all but the socket buffer's worth has left, so the receive outlasts it by that tail.
pub fn send_return(ctx: &Ctx, a: i32, b: i32, sizes: &[usize], reps: u32) -> Vec<(f64, f64)> {
    let m = ctx.mpi;
    let max = sizes.iter().copied().max().unwrap_or(0);
    let mut buf = vec![0u8; max];
    let mut v = vec![0.0; 2 * sizes.len()];
    for (i, &s) in sizes.iter().enumerate() {
        let buf = &mut buf[..s];
        let mut send = Vec::new();
        let mut recv = Vec::new();
        for _ in 0..reps.max(1) {
            let mut req = (m.rank == b).then(|| m.irecv(buf, a, 3, m.world));
            m.barrier(m.world);
            let t = Instant::now();
            if m.rank == a {
                m.send(buf, b, 3, m.world);
                send.push(t.elapsed().as_secs_f64());
            }
            if let Some(r) = req.as_mut() {
                m.wait_all(std::slice::from_mut(r));
                recv.push(t.elapsed().as_secs_f64());
            }
        }
        v[2 * i] = median(&mut send);
        v[2 * i + 1] = median(&mut recv);
    }
    ctx.share(&mut v);
    v.chunks(2).map(|p| (p[0], p[1])).collect()
}

/// Gaps before [`cold_send`]'s sends (seconds): the profile's `cold_call` table.
pub const COLD_GAPS: [f64; 7] = [0.1e-3, 0.5e-3, 1e-3, 2e-3, 5e-3, 10e-3, 20e-3];

/// The bytes [`cold_send`]'s sender reads in its gaps: four times the core's private
/// (level 2) cache where Linux says its size, else 4 MiB.
pub fn cold_bytes() -> usize {
    let l2 = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index2/size")
        .ok()
        .and_then(|v| {
            let v = v.trim();
            let (n, unit) = v.split_at(v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len()));
            let n: usize = n.parse().ok()?;
            Some(match unit {
                "K" => n << 10,
                "M" => n << 20,
                _ => n,
            })
        })
        .filter(|&b| b >= 64 << 10)
        .unwrap_or(1 << 20);
    4 * l2
}

/// What a call pays for time outside MPI: `reps` rounds of 8-byte blocking sends from WORLD
/// rank `a` to `b` (which waits in its receive), one back to back after a barrier and one
/// after `a` spent each of `gaps` seconds reading `bytes` of memory over and over (a
/// program computing on its data between calls: the core's caches hold the program's
/// data, not the MPI library's and the kernel's), the gaps taking turns within a round so
/// that a slow spell of the hosts falls on all of them. Returns the medians (back to back,
/// after each gap), in seconds. On the emulated cluster an 8 B send took 6.9 µs back to
/// back, 11.0 after reading 4 MiB (no time spent), 18 after 5 ms spinning, 34-57 after 20
/// ms (`bench/cold_calls.c`, every kind of call alike).
pub fn cold_send(
    ctx: &Ctx,
    a: i32,
    b: i32,
    gaps: &[f64],
    bytes: usize,
    reps: u32,
) -> (f64, Vec<f64>) {
    let m = ctx.mpi;
    let mut buf = [0u8; 8];
    let data = if m.rank == a {
        vec![1u8; bytes.max(64)]
    } else {
        Vec::new()
    };
    let mut sum = 0u64;
    let mut times = vec![Vec::new(); gaps.len() + 1];
    for _ in 0..reps.max(1) {
        for (k, t) in times.iter_mut().enumerate() {
            m.barrier(m.world);
            if m.rank == a {
                if k > 0 {
                    let end = Instant::now() + std::time::Duration::from_secs_f64(gaps[k - 1]);
                    // At least one pass, however short the gap.
                    loop {
                        sum = data.iter().step_by(64).fold(sum, |s, &x| s + u64::from(x));
                        if Instant::now() >= end {
                            break;
                        }
                    }
                }
                let t0 = Instant::now();
                m.send(&buf, b, 7, m.world);
                t.push(t0.elapsed().as_secs_f64());
            } else if m.rank == b {
                m.recv(&mut buf, a, 7, m.world);
            }
        }
    }
    std::hint::black_box(sum);
    let mut v: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
    ctx.share(&mut v);
    (v[0], v[1..].to_vec())
}

/// How long the receiver of the late-receiver probe waits before posting its receive.
pub const LATE_RECEIVER: std::time::Duration = std::time::Duration::from_millis(20);

/// Late-receiver probe: does a blocking send of `bytes` from WORLD rank `a` to `b` return
/// before `b` posts its receive? `b` sleeps [`LATE_RECEIVER`] after a barrier both leave
/// together; a send that returned within half of it went eagerly (buffered by the
/// library), one that waited for the receive is a rendezvous. The majority of 3 trials,
/// agreed by every rank (collective over WORLD).
pub fn returns_early(ctx: &Ctx, a: i32, b: i32, bytes: usize) -> bool {
    let m = ctx.mpi;
    let mut buf = vec![0u8; bytes.max(1)];
    let buf = &mut buf[..bytes];
    let mut early = 0u32;
    let mut trials = 0u32;
    while trials < 3 && early < 2 && trials - early < 2 {
        m.barrier(m.world);
        if m.rank == a {
            let t = Instant::now();
            m.send(buf, b, 5, m.world);
            early += u32::from(t.elapsed() < LATE_RECEIVER / 2);
        } else if m.rank == b {
            std::thread::sleep(LATE_RECEIVER);
            m.recv(buf, a, 5, m.world);
        }
        trials += 1;
        // Every rank takes the same branch of the loop: the sender's count, shared.
        let mut v = [f64::from(early)];
        m.bcast_f64(&mut v, a, m.world);
        early = v[0] as u32;
    }
    early >= 2
}

#[cfg(test)]
mod tests {
    #[test]
    fn pairs_cross_nodes_and_take_each_rank_once() {
        use super::cross_pairs;
        assert_eq!(cross_pairs(&[0, 1, 2, 3]), [(0, 1), (2, 3)]);
        assert_eq!(
            cross_pairs(&[0, 1, 2, 3, 0, 1, 2, 3]),
            [(0, 1), (2, 3), (4, 5), (6, 7)]
        );
        assert_eq!(
            cross_pairs(&[0, 0, 1, 1, 2, 2, 3, 3]),
            [(0, 2), (1, 3), (4, 6), (5, 7)]
        );
        // Three ranks: one left out; one node: no pair.
        assert_eq!(cross_pairs(&[0, 1, 2]), [(0, 1)]);
        assert!(cross_pairs(&[0, 0, 0]).is_empty());
        // A node with most ranks: its extra ranks find no partner.
        assert_eq!(cross_pairs(&[0, 0, 0, 1]), [(0, 3)]);
    }
    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(super::median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(super::median(&mut []), 0.0);
        // Exact, not interpolated: one value, two, repeats, and values whose mean rounds.
        assert_eq!(super::median(&mut [7.25]), 7.25);
        assert_eq!(super::median(&mut [2e-6, 1e-6]), 1.5e-6);
        assert_eq!(super::median(&mut [0.1, 0.3, 0.3, 0.2, 0.3]), 0.3);
        assert_eq!(super::median(&mut [0.1, 0.2, 0.7, 0.4]), (0.2 + 0.4) / 2.0);
    }

    #[test]
    fn small_all_to_alls_take_their_best_run_and_large_ones_the_statistic() {
        let runs = [2.0, 1.0, 3.0, 1.5, 9.0];
        use super::Typical::{Mean, Median};
        for t in [Mean, Median] {
            assert_eq!(super::alltoall_time(4096, Some(65536), &runs, t), 1.0);
        }
        assert_eq!(super::alltoall_time(65536, Some(65536), &runs, Mean), 3.3);
        assert_eq!(super::alltoall_time(4096, None, &runs, Mean), 3.3);
        // One stalled run of five moves the mean by half, not the median.
        assert_eq!(super::alltoall_time(65536, Some(65536), &runs, Median), 2.0);
        assert_eq!(super::alltoall_time(4096, None, &runs, Median), 2.0);
        assert_eq!(super::mean(&[]), 0.0);
    }
}

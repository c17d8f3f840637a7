//! The record ring's hot path side by side with the crates that could replace it
//! (issue 13, item 4): `rtrb` (an SPSC ring with zero-copy chunk reads) and crossbeam's
//! `ArrayQueue` (a bounded MPMC queue). Each run pushes the same records through each
//! ring in turn, alternating the order, and prints the median ns per push of each.
//!
//! - `alone`: one thread pushes a ring's capacity, then drains it to `io::sink` (the
//!   push's own cost, no cache line shared with another core).
//! - `drained`: one thread pushes while another drains every 100 µs, as the layer's
//!   drainer does under a fast producer; drops (a full ring) are counted, never waited for.
//!
//! `cargo bench --bench ring [ROUNDS]` (default 15). Prints figures; asserts nothing.

// The ring is the layer's own module, compiled into this bench (the layer is a cdylib).
#[path = "../src/record/ring.rs"]
#[allow(dead_code, unused_imports)]
mod ring;
mod trace {
    pub use pmpi_core::trace::*;
}

use pmpi_core::trace::Record;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const CAP: usize = 1 << 17; // the layer's default PMPI_PREDICT_BUFFER
const PUSHES: u64 = 1 << 22;

fn record(i: u64) -> Record {
    Record {
        t_start: i,
        t_end: i + 1,
        peer: (i & 7) as i32,
        bytes_send: i,
        ..Default::default()
    }
}

/// One ring under test: a producer half and a consumer half.
trait Under: Send + 'static {
    type P: Send + 'static;
    type C: Send + 'static;
    fn make() -> (Self::P, Self::C);
    /// Pushes; false when full (a drop).
    fn push(p: &mut Self::P, r: Record) -> bool;
    /// Drops in all, given the pushes that returned false.
    fn dropped(_: &Self::P, counted: u64) -> u64 {
        counted
    }
    /// Writes every queued record to `w` as bytes; returns how many.
    fn drain(c: &mut Self::C, w: &mut dyn Write, scratch: &mut Vec<u8>) -> usize;
}

struct Ours;
impl Under for Ours {
    type P = Arc<ring::Ring>;
    type C = Arc<ring::Ring>;
    fn make() -> (Self::P, Self::C) {
        let r = Arc::new(ring::Ring::new(CAP, 0));
        (r.clone(), r)
    }
    /// The layer's push as the hooks make it: a full ring counts its own drop.
    #[inline]
    fn push(p: &mut Self::P, r: Record) -> bool {
        p.push(r);
        true
    }
    fn dropped(p: &Self::P, _: u64) -> u64 {
        p.dropped()
    }
    fn drain(c: &mut Self::C, w: &mut dyn Write, _: &mut Vec<u8>) -> usize {
        c.drain_to(w).0
    }
}

struct Rtrb;
impl Under for Rtrb {
    type P = rtrb::Producer<Record>;
    type C = rtrb::Consumer<Record>;
    fn make() -> (Self::P, Self::C) {
        rtrb::RingBuffer::new(CAP)
    }
    #[inline]
    fn push(p: &mut Self::P, r: Record) -> bool {
        p.push(r).is_ok()
    }
    fn drain(c: &mut Self::C, w: &mut dyn Write, _: &mut Vec<u8>) -> usize {
        let n = c.slots();
        let Ok(chunk) = c.read_chunk(n) else { return 0 };
        let (a, b) = chunk.as_slices();
        let _ = w.write_all(bytemuck::cast_slice(a));
        let _ = w.write_all(bytemuck::cast_slice(b));
        chunk.commit_all();
        n
    }
}

struct Crossbeam;
impl Under for Crossbeam {
    type P = Arc<crossbeam_queue::ArrayQueue<Record>>;
    type C = Arc<crossbeam_queue::ArrayQueue<Record>>;
    fn make() -> (Self::P, Self::C) {
        let q = Arc::new(crossbeam_queue::ArrayQueue::new(CAP));
        (q.clone(), q)
    }
    #[inline]
    fn push(p: &mut Self::P, r: Record) -> bool {
        p.push(r).is_ok()
    }
    fn drain(c: &mut Self::C, w: &mut dyn Write, scratch: &mut Vec<u8>) -> usize {
        // No view of the queue's memory: records are popped one by one into a buffer.
        scratch.clear();
        let mut n = 0;
        while let Some(r) = c.pop() {
            scratch.extend_from_slice(r.as_bytes());
            n += 1;
        }
        let _ = w.write_all(scratch);
        n
    }
}

/// ns per push with no concurrent consumer: fill, drain, repeat.
fn alone<U: Under>() -> f64 {
    let (mut p, mut c) = U::make();
    let mut scratch = Vec::with_capacity(CAP * std::mem::size_of::<Record>());
    let mut sink = std::io::sink();
    let mut spent = Duration::ZERO;
    let mut i = 0;
    while i < PUSHES {
        let t = Instant::now();
        for _ in 0..CAP {
            U::push(&mut p, std::hint::black_box(record(i)));
            i += 1;
        }
        spent += t.elapsed();
        U::drain(&mut c, &mut sink, &mut scratch);
    }
    spent.as_nanos() as f64 / PUSHES as f64
}

/// ns per push with a drainer thread, and the fraction dropped.
fn drained<U: Under>() -> (f64, f64) {
    let (mut p, mut c) = U::make();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let drainer = std::thread::spawn(move || {
        let mut scratch = Vec::with_capacity(CAP * std::mem::size_of::<Record>());
        let mut sink = std::io::sink();
        let mut n = 0usize;
        while !s2.load(Ordering::Acquire) {
            n += U::drain(&mut c, &mut sink, &mut scratch);
            std::thread::sleep(Duration::from_micros(100));
        }
        n + U::drain(&mut c, &mut sink, &mut scratch)
    });
    let mut dropped = 0u64;
    let t = Instant::now();
    for i in 0..PUSHES {
        if !U::push(&mut p, std::hint::black_box(record(i))) {
            dropped += 1;
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / PUSHES as f64;
    let dropped = U::dropped(&p, dropped);
    stop.store(true, Ordering::Release);
    let got = drainer.join().unwrap_or(0);
    assert_eq!(
        got as u64 + dropped,
        PUSHES,
        "every push is drained or dropped"
    );
    (ns, dropped as f64 / PUSHES as f64)
}

fn median(v: &mut [f64]) -> f64 {
    use statrs::statistics::{Data, OrderStatistics};
    Data::new(v).median()
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(15);
    let names = ["ours (src/record/ring.rs)", "rtrb", "crossbeam ArrayQueue"];
    let mut a: [Vec<f64>; 3] = Default::default();
    let mut d: [Vec<f64>; 3] = Default::default();
    let mut drop: [Vec<f64>; 3] = Default::default();
    for round in 0..rounds {
        // Rotate the order each round so that no ring always runs first or last.
        for k in 0..3 {
            match (k + round) % 3 {
                0 => {
                    a[0].push(alone::<Ours>());
                    let (ns, f) = drained::<Ours>();
                    d[0].push(ns);
                    drop[0].push(f);
                }
                1 => {
                    a[1].push(alone::<Rtrb>());
                    let (ns, f) = drained::<Rtrb>();
                    d[1].push(ns);
                    drop[1].push(f);
                }
                _ => {
                    a[2].push(alone::<Crossbeam>());
                    let (ns, f) = drained::<Crossbeam>();
                    d[2].push(ns);
                    drop[2].push(f);
                }
            }
        }
    }
    println!(
        "{} records of {} bytes, ring of {CAP}, {rounds} rounds in rotating order; medians:",
        PUSHES,
        std::mem::size_of::<Record>()
    );
    for k in 0..3 {
        println!(
            "  {:<26} alone {:6.2} ns/push   drained {:6.2} ns/push, {:5.2}% dropped",
            names[k],
            median(&mut a[k]),
            median(&mut d[k]),
            median(&mut drop[k]) * 100.0
        );
    }
}

//! Per-thread preallocated record buffers (single producer: the thread; single
//! consumer: the drainer) and the registry the drainer walks.

use crate::trace::Record;
use std::cell::UnsafeCell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A bounded SPSC ring of records. `push` never blocks: a full ring counts a drop.
pub struct Ring {
    buf: Box<[UnsafeCell<Record>]>,
    mask: usize,
    head: AtomicUsize,
    tail: AtomicUsize,
    dropped: AtomicU64,
    /// Thread number stamped into this ring's records.
    pub thread: u16,
}

// SAFETY: the producer writes only slots in [head, tail+cap) before publishing head with
// Release; the consumer reads only [tail, head) after an Acquire of head, then releases
// them by storing tail. A slot is never accessed by both at once.
unsafe impl Sync for Ring {}

impl Ring {
    /// A ring holding `capacity` records (rounded up to a power of two).
    pub fn new(capacity: usize, thread: u16) -> Ring {
        let cap = capacity.max(2).next_power_of_two();
        Ring {
            buf: (0..cap)
                .map(|_| UnsafeCell::new(Record::default()))
                .collect(),
            mask: cap - 1,
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            thread,
        }
    }

    /// Appends a record; must only be called by the ring's owning thread.
    #[inline]
    pub fn push(&self, r: Record) {
        let h = self.head.load(Ordering::Relaxed);
        let t = self.tail.load(Ordering::Acquire);
        if h.wrapping_sub(t) > self.mask {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // SAFETY: slot h is outside [tail, head), so the consumer does not touch it.
        unsafe { *self.buf[h & self.mask].get() = r };
        self.head.store(h.wrapping_add(1), Ordering::Release);
    }

    /// Writes every published record to `w` (as spool bytes) straight from the ring's
    /// memory, and releases them; only the drainer calls this. Returns how many records
    /// were taken, and the write's result (on an error they are lost, not retried: the
    /// program must never wait for the disk).
    pub fn drain_to(&self, w: &mut dyn std::io::Write) -> (usize, std::io::Result<()>) {
        let t = self.tail.load(Ordering::Relaxed);
        let h = self.head.load(Ordering::Acquire);
        let n = h.wrapping_sub(t);
        if n == 0 {
            return (0, Ok(()));
        }
        let start = t & self.mask;
        let first = n.min(self.mask + 1 - start);
        let res = self.write_slots(w, start, first).and_then(|()| {
            if n > first {
                self.write_slots(w, 0, n - first)
            } else {
                Ok(())
            }
        });
        self.tail.store(h, Ordering::Release);
        (n, res)
    }

    fn write_slots(
        &self,
        w: &mut dyn std::io::Write,
        start: usize,
        len: usize,
    ) -> std::io::Result<()> {
        // SAFETY: slots [start, start + len) lie in [tail, head): published by the producer
        // and not rewritten until tail moves past them. UnsafeCell<Record> has Record's
        // layout, and Record is repr(C) without padding, so the slots are len * RECORD_SIZE
        // contiguous, initialised bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                self.buf.as_ptr().add(start) as *const u8,
                len * std::mem::size_of::<Record>(),
            )
        };
        w.write_all(bytes)
    }

    /// Moves every published record to `out` (as spool bytes).
    #[cfg(test)]
    pub fn drain_into(&self, out: &mut Vec<u8>) -> usize {
        self.drain_to(out).0
    }

    /// Records lost because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Records waiting to be drained.
    pub fn len(&self) -> usize {
        self.head
            .load(Ordering::Acquire)
            .wrapping_sub(self.tail.load(Ordering::Acquire))
    }

    /// Capacity in records.
    pub fn capacity(&self) -> usize {
        self.mask + 1
    }
}

/// Every ring ever handed out; rings live for the whole process so that records of
/// exited threads are still drained.
pub struct Registry {
    rings: Mutex<Vec<&'static Ring>>,
    /// Threads that could not get a ring (limit reached).
    pub refused: AtomicU64,
    capacity: usize,
    max_threads: usize,
}

impl Registry {
    /// A registry giving each thread a ring of `capacity` records, up to `max_threads`.
    pub const fn new(capacity: usize, max_threads: usize) -> Registry {
        Registry {
            rings: Mutex::new(Vec::new()),
            refused: AtomicU64::new(0),
            capacity,
            max_threads,
        }
    }

    /// A new ring for the calling thread (cold path: once per thread).
    pub fn register(&self, capacity: Option<usize>) -> Option<&'static Ring> {
        let mut rings = self.rings.lock().unwrap_or_else(|e| e.into_inner());
        if rings.len() >= self.max_threads {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let ring: &'static Ring = Box::leak(Box::new(Ring::new(
            capacity.unwrap_or(self.capacity),
            rings.len() as u16,
        )));
        rings.push(ring);
        Some(ring)
    }

    /// A snapshot of the rings, for the drainer.
    pub fn rings(&self) -> Vec<&'static Ring> {
        self.rings.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Sum of drops over all rings.
    pub fn dropped(&self) -> u64 {
        self.rings().iter().map(|r| r.dropped()).sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::RECORD_SIZE;

    #[test]
    fn full_ring_counts_drops_and_keeps_order() {
        let r = Ring::new(4, 0);
        for i in 0..6u64 {
            r.push(Record {
                t_start: i,
                ..Default::default()
            });
        }
        assert_eq!(r.dropped(), 2);
        let mut out = Vec::new();
        assert_eq!(r.drain_into(&mut out), 4);
        let starts: Vec<u64> = out
            .chunks_exact(RECORD_SIZE)
            .map(|c| Record::from_bytes(c.try_into().unwrap()).t_start)
            .collect();
        assert_eq!(starts, vec![0, 1, 2, 3]);
        r.push(Record {
            t_start: 9,
            ..Default::default()
        });
        out.clear();
        assert_eq!(r.drain_into(&mut out), 1);
    }

    #[test]
    fn concurrent_producer_and_drainer_lose_nothing_when_drained() {
        let r: &'static Ring = Box::leak(Box::new(Ring::new(1024, 0)));
        let n = 200_000u64;
        let prod = std::thread::spawn(move || {
            for i in 0..n {
                // Spin until there is room so that this test counts exact delivery.
                loop {
                    let before = r.dropped();
                    r.push(Record {
                        t_start: i,
                        ..Default::default()
                    });
                    if r.dropped() == before {
                        break;
                    }
                    std::thread::yield_now();
                }
            }
        });
        let mut seen = Vec::new();
        let mut out = Vec::new();
        while (seen.len() as u64) < n {
            out.clear();
            r.drain_into(&mut out);
            seen.extend(
                out.chunks_exact(RECORD_SIZE)
                    .map(|c| Record::from_bytes(c.try_into().unwrap()).t_start),
            );
        }
        prod.join().unwrap();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn registry_limits_threads() {
        let reg = Registry::new(8, 2);
        assert_eq!(reg.register(None).unwrap().thread, 0);
        assert_eq!(reg.register(None).unwrap().thread, 1);
        assert!(reg.register(None).is_none());
        assert_eq!(reg.refused.load(Ordering::Relaxed), 1);
    }
}

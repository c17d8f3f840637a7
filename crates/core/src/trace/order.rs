//! A rank's records in call order (by entry, then record number), read from its spool a
//! block at a time: what a reader of a run in time order needs (docs/engine.md, "Toward
//! memory bounded by the messages in flight").
//!
//! A spool holds each record when its call completed, so a nonblocking operation comes
//! after the calls its thread made while it was in flight, and nothing in the spool says
//! how many those are before the operation is read: a reorder buffer of fixed size cannot
//! be trusted. So [`CallOrder::open`] first finds, reading the spool's entry times only,
//! the smallest buffer (a power of two) that puts every record back in place, and the
//! reader holds that many records: the most the spool displaces one, not its length.
//! Continuation records (per-peer bytes, [`super::arcs`]) are skipped: the records are
//! numbered as [`super::load_run`] numbers them, and their arcs are not read here.

use super::{RECORD_SIZE, Record, SPOOL_HEADER};
use crate::error::Error;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The smallest reorder buffer tried (records).
const FIRST_WINDOW: usize = 1024;

/// A spool's call records in call order.
pub struct CallOrder {
    path: PathBuf,
    records: Records,
    /// Buffered records by (entry, record number), with their slot in `slots`.
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    slots: Vec<Record>,
    free: Vec<u32>,
    window: usize,
}

impl CallOrder {
    /// Opens the spool at `path` (checking its header) and sizes the reorder buffer.
    pub fn open(path: &Path) -> Result<CallOrder, Error> {
        let mut window = FIRST_WINDOW;
        while !fits(&mut Records::open(path)?, window)? {
            window *= 4;
        }
        Ok(CallOrder {
            path: path.to_path_buf(),
            records: Records::open(path)?,
            heap: BinaryHeap::with_capacity(window + 1),
            slots: Vec::with_capacity(window + 1),
            free: Vec::new(),
            window,
        })
    }

    /// Records the reader holds at most.
    pub fn window(&self) -> usize {
        self.window
    }

    /// The next record in call order and its record number, or None at the end.
    pub fn next_record(&mut self) -> Result<Option<(u32, Record)>, Error> {
        while self.heap.len() <= self.window {
            let Some((i, r)) = self.records.next_call()? else {
                break;
            };
            let slot = match self.free.pop() {
                Some(s) => {
                    self.slots[s as usize] = r;
                    s
                }
                None => {
                    self.slots.push(r);
                    self.slots.len() as u32 - 1
                }
            };
            self.heap.push(Reverse((r.t_start, i, slot)));
        }
        let Some(Reverse((_, i, slot))) = self.heap.pop() else {
            return Ok(None);
        };
        self.free.push(slot);
        Ok(Some((i, self.slots[slot as usize])))
    }

    /// The spool read.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether a reorder buffer of `window` records gives `records` in call order: replays the
/// buffer on the entry times alone.
fn fits(records: &mut Records, window: usize) -> Result<bool, Error> {
    let mut heap: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::with_capacity(window + 1);
    let mut last = None;
    loop {
        let more = records.next_call()?;
        if let Some((i, r)) = more {
            heap.push(Reverse((r.t_start, i)));
            if heap.len() <= window {
                continue;
            }
        }
        let Some(Reverse(k)) = heap.pop() else {
            return Ok(true);
        };
        if last.is_some_and(|l| k < l) {
            return Ok(false);
        }
        last = Some(k);
    }
}

/// A spool's call records in spool order, numbered, read a block at a time.
struct Records {
    path: PathBuf,
    file: BufReader<std::fs::File>,
    /// Call records read so far (the next one's number).
    calls: u32,
}

impl Records {
    fn open(path: &Path) -> Result<Records, Error> {
        let f = std::fs::File::open(path).map_err(|e| Error::read(path, e))?;
        let mut file = BufReader::with_capacity(256 * RECORD_SIZE, f);
        let mut head = [0u8; SPOOL_HEADER];
        file.read_exact(&mut head)
            .map_err(|e| Error::read(path, e))?;
        super::parse_spool(&head).map_err(|e| e.in_file(path))?;
        Ok(Records {
            path: path.to_path_buf(),
            file,
            calls: 0,
        })
    }

    /// The next call record (settled, as a loaded spool's) and its number; None at the end
    /// (a final record cut short included).
    fn next_call(&mut self) -> Result<Option<(u32, Record)>, Error> {
        let mut b = [0u8; RECORD_SIZE];
        loop {
            match self.file.read_exact(&mut b) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
                Err(e) => return Err(Error::read(&self.path, e)),
            }
            let r = Record::from_bytes(&b).settle();
            if r.is_continuation() {
                continue;
            }
            self.calls += 1;
            return Ok(Some((self.calls - 1, r)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{FLAG_NONBLOCKING, arcs};

    /// Records of three threads as a spool holds them (each when its call completed):
    /// nonblocking operations in flight across up to `span` calls, continuations between.
    /// Read back in call order, they are the loaded spool's records sorted by (entry,
    /// number), with the numbers the loader gives them.
    #[test]
    fn a_spool_read_in_call_order_is_the_loaded_records_sorted() {
        let mut seed: u64 = 0x1234_5678_9abc_def1;
        let mut rnd = |k: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % k.max(1)
        };
        let dir = std::env::temp_dir().join(format!("pmpi-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (case, span) in [0u64, 10, 3000, 9000].into_iter().enumerate() {
            let mut recs: Vec<Record> = Vec::new();
            for thread in 0..3u16 {
                let mut t = 1_000u64;
                for _ in 0..4000 {
                    let nb = span > 0 && rnd(20) == 0;
                    let dur = 1 + rnd(1000);
                    // A nonblocking operation completes up to `span` calls' time later.
                    let end = if nb { t + 1 + rnd(span) * 600 } else { t + dur };
                    recs.push(Record {
                        t_start: t,
                        t_end: end,
                        t_posted: if nb { t + 1 } else { end },
                        thread,
                        call: 3,
                        flags: if nb { FLAG_NONBLOCKING } else { 0 },
                        ..Default::default()
                    });
                    if rnd(50) == 0 {
                        recs.push(arcs::continuation(
                            &recs[recs.len() - 1],
                            false,
                            0,
                            1,
                            &[(1, 5)],
                        ));
                    }
                    t += if nb { 2 } else { dur + rnd(200) };
                }
            }
            // Written when they completed (a continuation carries bytes where a call's
            // end is, so it moves too: the reader skips it wherever it is).
            recs.sort_by_key(|r| r.t_end);
            crate::trace::write_spool(&dir, case as i32, &recs).unwrap();
            let path = crate::trace::spool_path(&dir, case as i32);
            let (calls, _) = arcs::split(recs);
            let mut want: Vec<(u32, Record)> = calls
                .into_iter()
                .enumerate()
                .map(|(i, r)| (i as u32, r))
                .collect();
            want.sort_by_key(|&(i, r)| (r.t_start, i));
            let mut reader = CallOrder::open(&path).unwrap();
            let mut got = Vec::new();
            while let Some(x) = reader.next_record().unwrap() {
                got.push(x);
            }
            assert_eq!(got.len(), want.len(), "span {span}");
            assert!(got == want, "span {span}: not in call order");
            // The buffer is the displacement's, not the spool's length.
            if span <= 10 {
                assert_eq!(reader.window(), FIRST_WINDOW, "span {span}");
            }
            assert!(
                reader.window() < 12_000 * 4,
                "span {span}: {}",
                reader.window()
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}

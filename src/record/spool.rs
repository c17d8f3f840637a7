//! The drainer: a background thread that moves records from every thread's ring to the
//! rank's spool file, at least once per flush interval, so that memory stays bounded and
//! a killed job leaves its records on disk.

use super::ring::Registry;
use crate::trace::write_spool_header;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A terminating signal caught by the layer's handler (0: none). The handler only stores
/// here (async-signal-safe); the drainer notices within [`SIGNAL_POLL`], drains every
/// ring, syncs the file and calls [`Spooler::start`]'s `on_signal` with the number.
pub static PENDING_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// How often the drainer looks at [`PENDING_SIGNAL`] between flushes.
pub const SIGNAL_POLL: Duration = Duration::from_millis(10);

/// Poll interval while some thread produces records fast.
const BUSY_POLL: Duration = Duration::from_millis(1);

/// Counters shared between the drainer and the layer.
#[derive(Default, Debug)]
pub struct SpoolStats {
    pub records_written: AtomicU64,
    /// Records drained but lost because the file could not be written (disk full...).
    pub records_lost: AtomicU64,
    pub write_failed: AtomicBool,
}

/// A running drainer.
pub struct Spooler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    pub stats: Arc<SpoolStats>,
}

impl Spooler {
    /// Creates the spool file (with its header) and starts draining `registry` into it.
    /// `on_signal` runs on the drainer thread once everything recorded before a caught
    /// signal is on disk.
    pub fn start(
        path: &Path,
        registry: &'static Registry,
        every: Duration,
        on_signal: fn(i32),
    ) -> Result<Spooler, String> {
        let mut file = File::create(path)
            .map_err(|e| format!("cannot create spool {}: {e}", path.display()))?;
        write_spool_header(&mut file)
            .map_err(|e| format!("cannot write spool {}: {e}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(SpoolStats::default());
        let (stop2, stats2) = (stop.clone(), stats.clone());
        let shown = path.display().to_string();
        let handle = std::thread::Builder::new()
            .name("pmpi-predict-spool".into())
            .spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    drain_loop(file, registry, every, &stop2, &stats2, &shown, on_signal)
                }));
                if r.is_err() {
                    crate::interpose::say(
                        "internal error in the spool thread; records after this point are lost",
                    );
                }
            })
            .map_err(|e| format!("cannot start the spool thread: {e}"))?;
        Ok(Spooler {
            stop,
            handle: Some(handle),
            stats,
        })
    }

    /// Drains what is left, closes the file and joins the thread.
    pub fn finish(mut self) -> Arc<SpoolStats> {
        self.shutdown();
        self.stats.clone()
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl Drop for Spooler {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn drain_loop(
    mut file: File,
    registry: &Registry,
    every: Duration,
    stop: &AtomicBool,
    stats: &SpoolStats,
    path: &str,
    on_signal: fn(i32),
) {
    let mut signalled = false;
    loop {
        let last = stop.load(Ordering::Acquire);
        let sig = PENDING_SIGNAL.load(Ordering::Acquire);
        // A ring found a quarter full means a fast producer: poll every millisecond until
        // the pace drops, so that its buffer does not fill up between two drains.
        let mut busy = false;
        for ring in registry.rings() {
            busy |= ring.len() * 4 >= ring.capacity();
            if stats.write_failed.load(Ordering::Relaxed) {
                let (n, _) = ring.drain_to(&mut std::io::sink());
                stats.records_lost.fetch_add(n as u64, Ordering::Relaxed);
                continue;
            }
            let (n, res) = ring.drain_to(&mut file);
            match res {
                Ok(()) => {
                    stats.records_written.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) => {
                    // Keep draining so the program never blocks; count what is lost.
                    crate::interpose::say(&format!(
                        "cannot write spool {path}: {e}; further records are lost"
                    ));
                    stats.write_failed.store(true, Ordering::Relaxed);
                    stats.records_lost.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
        }
        if last {
            let _ = file.sync_data();
            return;
        }
        if sig != 0 && !signalled {
            signalled = true;
            let _ = file.sync_data();
            on_signal(sig);
        }
        // Sleep in short slices so that a caught signal is handled promptly and a filling
        // buffer is drained early; `finish` unparks the thread.
        let until = std::time::Instant::now() + every;
        let slice = if busy { BUSY_POLL } else { SIGNAL_POLL };
        loop {
            let now = std::time::Instant::now();
            if now >= until
                || stop.load(Ordering::Acquire)
                || (!signalled && PENDING_SIGNAL.load(Ordering::Relaxed) != 0)
                || registry.rings().iter().any(|r| r.len() * 8 >= r.capacity())
            {
                break;
            }
            std::thread::park_timeout((until - now).min(slice));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Record, read_spool};

    #[test]
    fn drains_rings_to_file_and_finishes() {
        let reg: &'static Registry = Box::leak(Box::new(Registry::new(64, 4)));
        let dir = std::env::temp_dir().join(format!("pmpi-spool-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.spool");
        let sp = Spooler::start(&path, reg, Duration::from_millis(10), |_| {}).unwrap();
        let ring = reg.register(None).unwrap();
        for i in 0..50 {
            ring.push(Record {
                t_start: i,
                thread: ring.thread,
                ..Default::default()
            });
        }
        std::thread::sleep(Duration::from_millis(50));
        // Written before finish: the periodic flush put it on disk.
        let mid = read_spool(File::open(&path).unwrap(), &path).unwrap();
        assert_eq!(mid.records.len(), 50);
        for i in 50..60 {
            ring.push(Record {
                t_start: i,
                ..Default::default()
            });
        }
        let stats = sp.finish();
        assert_eq!(stats.records_written.load(Ordering::Relaxed), 60);
        let all = read_spool(File::open(&path).unwrap(), &path).unwrap();
        assert_eq!(
            all.records.iter().map(|r| r.t_start).collect::<Vec<_>>(),
            (0..60).collect::<Vec<_>>()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unwritable_spool_path_is_an_error() {
        let reg: &'static Registry = Box::leak(Box::new(Registry::new(64, 4)));
        let e = Spooler::start(
            Path::new("/nonexistent-dir/x.spool"),
            reg,
            Duration::from_millis(10),
            |_| {},
        )
        .err()
        .unwrap();
        assert!(e.contains("/nonexistent-dir/x.spool"), "{e}");
    }
}

//! The network sampler: on the lowest rank of each node, a background thread that reads
//! the node's TCP and interface counters every `PMPI_PREDICT_NET_MS` into `net-RANK.csv`
//! and keeps the windows in which retransmission timeouts fired
//! (`pmpi_core::trace::netstat`). It never touches MPI or the recorded calls.

use crate::trace::netstat::{self, Episode, NetCounters};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running sampler.
pub struct NetSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Option<NetCounters>>>,
    episodes: Arc<Mutex<Vec<Episode>>>,
}

impl NetSampler {
    /// Writes `first` (the reading at init) as the file's first sample and samples every
    /// `every` from then on; `now` is the layer's clock.
    pub fn start(
        path: &Path,
        every: Duration,
        first: NetCounters,
        now: fn() -> u64,
    ) -> Result<NetSampler, String> {
        let mut file =
            File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        file.write_all(
            format!(
                "{}\n{}",
                netstat::SAMPLE_HEADER,
                netstat::sample_line(&first)
            )
            .as_bytes(),
        )
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let episodes = Arc::new(Mutex::new(Vec::new()));
        let (stop2, episodes2) = (stop.clone(), episodes.clone());
        let handle = std::thread::Builder::new()
            .name("pmpi-predict-net".into())
            .spawn(move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    sample_loop(file, every, first, now, &stop2, &episodes2)
                }));
                r.unwrap_or_else(|_| {
                    crate::interpose::say(
                        "internal error in the network sampler; the node's TCP counters are not sampled from here on",
                    );
                    None
                })
            })
            .map_err(|e| format!("cannot start the network sampler: {e}"))?;
        Ok(NetSampler {
            stop,
            handle: Some(handle),
            episodes,
        })
    }

    /// The windows with timeouts so far.
    pub fn episodes(&self) -> Vec<Episode> {
        self.episodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Takes a last sample, stops the thread and returns that sample (None if the
    /// counters could not be read) and the windows with timeouts.
    pub fn finish(mut self) -> (Option<NetCounters>, Vec<Episode>) {
        let last = self.shutdown();
        (last, self.episodes())
    }

    fn shutdown(&mut self) -> Option<NetCounters> {
        self.stop.store(true, Ordering::Release);
        let h = self.handle.take()?;
        h.thread().unpark();
        h.join().ok().flatten()
    }
}

impl Drop for NetSampler {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn sample_loop(
    mut file: File,
    every: Duration,
    first: NetCounters,
    now: fn() -> u64,
    stop: &AtomicBool,
    episodes: &Mutex<Vec<Episode>>,
) -> Option<NetCounters> {
    let mut prev = first;
    let mut writing = true;
    loop {
        let until = std::time::Instant::now() + every;
        while !stop.load(Ordering::Acquire) {
            let t = std::time::Instant::now();
            if t >= until {
                break;
            }
            std::thread::park_timeout(until - t);
        }
        let last = stop.load(Ordering::Acquire);
        let Some(c) = netstat::read_counters(now()) else {
            return last.then_some(prev);
        };
        if writing && file.write_all(netstat::sample_line(&c).as_bytes()).is_err() {
            // The windows are still kept; the file stops where it could not be written.
            writing = false;
        }
        netstat::add_window(
            &mut episodes.lock().unwrap_or_else(|e| e.into_inner()),
            &prev,
            &c,
        );
        prev = c;
        if last {
            return Some(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> u64 {
        crate::topo::clock::now_ns()
    }

    #[test]
    fn samples_until_finished_and_ends_with_the_last_reading() {
        let Some(first) = netstat::read_counters(now()) else {
            eprintln!("skipped: /proc/net/snmp cannot be read here");
            return;
        };
        let dir = std::env::temp_dir().join(format!("pmpi-netsample-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = netstat::samples_path(&dir, 3);
        let s = NetSampler::start(&path, Duration::from_millis(10), first, now).unwrap();
        std::thread::sleep(Duration::from_millis(120));
        let (last, episodes) = s.finish();
        let last = last.expect("a last reading");
        let samples = netstat::read_samples(&dir, 3);
        // The first reading, several periodic ones, and the last one.
        assert!(samples.len() >= 4, "{} samples", samples.len());
        assert_eq!(samples[0], first);
        assert_eq!(*samples.last().unwrap(), last);
        assert!(samples.windows(2).all(|w| w[1].at_ns > w[0].at_ns));
        assert!(samples.windows(2).all(|w| w[1].out_segs >= w[0].out_segs));
        assert_eq!(episodes, netstat::timeout_episodes(&samples));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(netstat::SAMPLE_HEADER));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! `pmpi-predict watch DIR`: follows the spools of a running job (the ranks flush them
//! every PMPI_PREDICT_FLUSH_MS, 200 ms by default) and shows, each interval, the
//! node-to-node graph, the most penalised links and the ranks blocked longest, and where
//! TCP's retransmission timeouts fired (the nodes' `net-RANK.csv`). It only reads the
//! files: the job is never asked anything and never waits for it.

use super::{CliError, exit_status};
use crate::error::Error;
use crate::report::live;
use crate::trace::{self, RankMeta, RankTrace, Record, RunTrace};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Arguments of `watch`.
#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// Output directory of the running job (PMPI_PREDICT_OUT).
    pub dir: PathBuf,
    /// One JSON snapshot per interval on stdout, one per line, instead of the screen.
    #[arg(long)]
    pub json: bool,
    /// Interval length in seconds of the job's time.
    #[arg(long, default_value_t = 1.0)]
    pub interval: f64,
    /// Seconds to wait for DIR and its first rank to appear.
    #[arg(long, default_value_t = 60.0)]
    pub wait: f64,
    /// Lines per list on the screen.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    #[command(flatten)]
    pub engine: super::EngineArgs,
}

/// Runs `watch`.
pub fn run(a: WatchArgs) -> i32 {
    exit_status(watch(&a))
}

/// What is known of one rank's files.
struct Follow {
    meta: RankMeta,
    /// Bytes of the spool consumed (header included).
    offset: u64,
    /// Bytes of a record not yet complete.
    partial: Vec<u8>,
    /// Records read and not yet shown, with their start on rank 0's clock (ns).
    pending: Vec<(i64, Record)>,
    /// Latest end seen, on rank 0's clock (ns).
    latest_ns: i64,
    /// Its node's TCP samples, where it takes them (`net-RANK.csv`).
    net: NetFollow,
}

/// What is known of a rank's `net-RANK.csv`.
#[derive(Default)]
struct NetFollow {
    offset: u64,
    partial: Vec<u8>,
    prev: Option<trace::netstat::NetCounters>,
    /// Windows with timeouts not yet shown: (from, to) on rank 0's clock (ns), how many.
    windows: Vec<(i64, i64, u64)>,
}

/// Reads what is new in `f`'s rank's node samples, keeping the windows in which timeouts
/// fired. A file not there (not a node's lowest rank, or not yet) is nothing new.
fn read_net_new(dir: &Path, f: &mut Follow) {
    let Ok(mut file) = std::fs::File::open(trace::netstat::samples_path(dir, f.meta.rank)) else {
        return;
    };
    let n = &mut f.net;
    if file.seek(SeekFrom::Start(n.offset)).is_err() {
        return;
    }
    let mut buf = Vec::new();
    if file.read_to_end(&mut buf).is_err() {
        return;
    }
    n.offset += buf.len() as u64;
    n.partial.extend_from_slice(&buf);
    // Whole lines only: the sampler may be writing the next one.
    let Some(cut) = n.partial.iter().rposition(|&b| b == b'\n') else {
        return;
    };
    let lines: Vec<u8> = n.partial.drain(..=cut).collect();
    let clock = f.meta.clock();
    for c in trace::netstat::parse_samples(&String::from_utf8_lossy(&lines)) {
        if let Some(p) = n.prev
            && c.timeouts > p.timeouts
        {
            n.windows.push((
                clock.to_global_ns(p.at_ns),
                clock.to_global_ns(c.at_ns),
                c.timeouts - p.timeouts,
            ));
        }
        n.prev = Some(c);
    }
}

/// Reads what is new in `rank`'s spool.
/// A spool whose header is not a spool's is bad input; a failed read is I/O.
fn read_new(dir: &Path, f: &mut Follow) -> Result<(), Error> {
    let path = trace::spool_path(dir, f.meta.rank);
    let Ok(mut file) = std::fs::File::open(&path) else {
        return Ok(()); // not created yet
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len <= f.offset {
        return Ok(());
    }
    file.seek(SeekFrom::Start(f.offset))
        .map_err(|e| Error::read(&path, e))?;
    let mut buf = Vec::with_capacity((len - f.offset) as usize);
    file.take(len - f.offset)
        .read_to_end(&mut buf)
        .map_err(|e| Error::read(&path, e))?;
    f.offset += buf.len() as u64;
    let mut data = std::mem::take(&mut f.partial);
    data.extend_from_slice(&buf);
    let mut body: &[u8] = &data;
    if f.offset as usize - buf.len() == 0 {
        // The header: checked once, by parsing it with no records.
        if data.len() < trace::SPOOL_HEADER {
            f.offset = 0;
            return Ok(());
        }
        trace::parse_spool(&data[..trace::SPOOL_HEADER]).map_err(|e| e.in_file(&path))?;
        body = &data[trace::SPOOL_HEADER..];
    }
    let whole = body.len() / trace::RECORD_SIZE * trace::RECORD_SIZE;
    for c in body[..whole].chunks_exact(trace::RECORD_SIZE) {
        let r = Record::from_bytes(c.try_into().unwrap_or(&[0; trace::RECORD_SIZE]));
        let start = f.meta.to_global_ns(r.t_start);
        // (A continuation's t_end holds bytes, not a time.)
        if !r.is_continuation() {
            f.latest_ns = f.latest_ns.max(f.meta.to_global_ns(r.t_end));
        }
        f.pending.push((start, r));
    }
    f.partial = body[whole..].to_vec();
    Ok(())
}

/// The rank metadata files in `dir`, by rank.
fn metas(dir: &Path) -> BTreeMap<i32, RankMeta> {
    let mut m = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.filter_map(Result::ok) {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("rank-")
                && name.ends_with(".json")
                && let Ok(meta) = trace::read_meta(&e.path())
            {
                m.insert(meta.rank, meta);
            }
        }
    }
    m
}

fn watch(a: &WatchArgs) -> Result<(), CliError> {
    if !(a.interval.is_finite() && a.interval >= 0.01) {
        return Err(CliError::input("--interval must be at least 0.01 s"));
    }
    let opts = a.engine.options(false);
    let (profile, model_name, _) = opts.resolve()?;
    let model =
        crate::predict::penalty_model(&profile, model_name.as_deref()).map_err(CliError::input)?;
    let step_ns = (a.interval * 1e9) as i64;
    // Records of other ranks may still be in their buffers: an interval is shown once
    // the newest record seen is this much past its end (five flush periods).
    let grace_ns = 1_000_000_000i64;
    let t0 = Instant::now();
    let mut said_waiting = false;
    let mut ranks: BTreeMap<i32, Follow> = BTreeMap::new();
    let mut next_k: i64 = 0;
    let mut origin: Option<i64> = None;
    let (mut seen_bytes, mut last_growth) = (0u64, Instant::now());
    let mut out = std::io::stdout().lock();
    let screen = !a.json && std::io::stdout().is_terminal();
    loop {
        for (r, meta) in metas(&a.dir) {
            match ranks.get_mut(&r) {
                Some(f) => f.meta = meta,
                None => {
                    ranks.insert(
                        r,
                        Follow {
                            meta,
                            offset: 0,
                            partial: Vec::new(),
                            pending: Vec::new(),
                            latest_ns: i64::MIN,
                            net: NetFollow::default(),
                        },
                    );
                }
            }
        }
        if ranks.is_empty() {
            if t0.elapsed().as_secs_f64() > a.wait {
                return Err(CliError::input(format!(
                    "{}: no rank of a run appeared within {} s (is PMPI_PREDICT_OUT this directory?)",
                    a.dir.display(),
                    a.wait
                )));
            }
            if !said_waiting {
                eprintln!("pmpi-predict: waiting for a run in {}", a.dir.display());
                said_waiting = true;
            }
            std::thread::sleep(Duration::from_millis(200));
            continue;
        }
        for f in ranks.values_mut() {
            read_new(&a.dir, f)?;
            read_net_new(&a.dir, f);
        }
        let o = *origin.get_or_insert_with(|| {
            ranks
                .values()
                .map(|f| f.meta.to_global_ns(f.meta.init_ns))
                .min()
                .unwrap_or(0)
        });
        let world = ranks.values().map(|f| f.meta.world_size).max().unwrap_or(0);
        let total: u64 = ranks.values().map(|f| f.offset).sum();
        if total != seen_bytes {
            seen_bytes = total;
            last_growth = Instant::now();
        }
        // Ended: every rank finished; or those that wrote files finished and nothing has
        // come for 5 s (a rank that never started the layer writes nothing).
        let ended = ranks
            .values()
            .all(|f| f.meta.finalized || f.meta.ended_by.is_some())
            && (ranks.len() as i32 >= world || last_growth.elapsed() > Duration::from_secs(5));
        if ended {
            // Written after the last flush: read what is left.
            for f in ranks.values_mut() {
                read_new(&a.dir, f)?;
                read_net_new(&a.dir, f);
            }
        }
        let latest = ranks
            .values()
            .map(|f| f.latest_ns)
            .max()
            .unwrap_or(i64::MIN);
        let last_k = if latest == i64::MIN {
            -1
        } else {
            (latest - o).div_euclid(step_ns)
        };
        loop {
            let end = o + (next_k + 1) * step_ns;
            let ready = if ended {
                next_k <= last_k
            } else {
                latest != i64::MIN && end + grace_ns <= latest
            };
            if !ready {
                break;
            }
            let start = end - step_ns;
            let mut run = RunTrace {
                ranks: Vec::new(),
                world_size: world,
                missing: vec![],
            };
            for f in ranks.values_mut() {
                let (now, later): (Vec<_>, Vec<_>) =
                    f.pending.drain(..).partition(|&(s, _)| s < end);
                f.pending = later;
                // A continuation shares its call's entry time, so both fall in one window.
                let (records, arcs) = trace::arcs::split(now.into_iter().map(|(_, r)| r).collect());
                run.ranks.push(RankTrace {
                    meta: f.meta.clone(),
                    records,
                    arcs,
                    ..Default::default()
                });
            }
            let mut s = live::snapshot(
                &run,
                (start - o) as f64 * 1e-9,
                (end - o) as f64 * 1e-9,
                model.as_deref(),
                Some(&profile),
            );
            // The windows that end in this interval (all that are left at the last).
            let last = ended && next_k >= last_k;
            for f in ranks.values_mut() {
                let (now, later): (Vec<_>, Vec<_>) = f
                    .net
                    .windows
                    .drain(..)
                    .partition(|&(_, to, _)| to < end || last);
                f.net.windows = later;
                s.tcp_timeouts
                    .extend(now.into_iter().map(|(from, to, n)| live::LiveTimeouts {
                        node: f.meta.node.clone(),
                        timeouts: n,
                        from_s: (from - o) as f64 * 1e-9,
                        to_s: (to - o) as f64 * 1e-9,
                    }));
            }
            let res = if a.json {
                serde_json::to_string(&s)
                    .map_err(|e| e.to_string())
                    .and_then(|j| writeln!(out, "{j}").map_err(|e| e.to_string()))
            } else {
                let clear = if screen { "\x1b[2J\x1b[H" } else { "" };
                write!(
                    out,
                    "{clear}pmpi-predict watch {}: {} ranks{}\n{}",
                    a.dir.display(),
                    ranks.len(),
                    if ended { ", job finished" } else { "" },
                    live::text(&s, a.top)
                )
                .map_err(|e| e.to_string())
            };
            // A closed pipe (`watch --json | head`) ends the watch, quietly.
            if res.is_err() || out.flush().is_err() {
                return Ok(());
            }
            next_k += 1;
        }
        if ended {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

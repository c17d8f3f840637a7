//! Reports of a run: `calls.csv` (one row per recorded call) and `summary.json`
//! (per-call statistics, per-rank MPI time, losses). The same code runs at
//! MPI_Finalize on rank 0 and in `pmpi-predict analyze`.

use crate::trace::{self, FLAG_NONBLOCKING, NO_RANK, PROC_NULL, Record, RunTrace, UNKNOWN_RANK};
use hdrhistogram::Histogram;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

/// Columns of `calls.csv`, in order. The first eleven are the stable interface.
pub const CSV_COLUMNS: &[&str] = &[
    "rank",
    "node",
    "call",
    "peer",
    "root",
    "bytes",
    "comm_size",
    "start_s",
    "measured_s",
    "predicted_s",
    "penalty",
    "free_s",
    "thread",
    "tag",
    "comm",
    "bytes_sent",
    "bytes_received",
    "source",
    "nonblocking",
];

/// What writing a report produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportStats {
    pub records: usize,
    pub ranks: usize,
    pub complete: bool,
}

/// Renders a rank field: empty where not applicable.
fn rank_field(r: i32) -> String {
    match r {
        NO_RANK => String::new(),
        PROC_NULL => "PROC_NULL".into(),
        UNKNOWN_RANK => "unknown".into(),
        r => r.to_string(),
    }
}

/// Time of MPI a record accounts for on its rank: a nonblocking operation counts only
/// its post (its wait is a record of its own).
fn mpi_time_ns(r: &Record) -> u64 {
    if r.flags & FLAG_NONBLOCKING != 0 {
        r.t_posted.saturating_sub(r.t_start)
    } else {
        r.t_end.saturating_sub(r.t_start)
    }
}

/// Loads the run in `dir` and writes `calls.csv` and `summary.json` there.
pub fn write_report(dir: &Path) -> Result<ReportStats, String> {
    let run = trace::load_run(dir)?;
    write_calls_csv(&run, &dir.join("calls.csv"))?;
    let summary = summary(&run);
    let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("summary.json"), text + "\n")
        .map_err(|e| format!("cannot write {}: {e}", dir.join("summary.json").display()))?;
    Ok(ReportStats {
        records: run.ranks.iter().map(|r| r.records.len()).sum(),
        ranks: run.ranks.len(),
        complete: run.complete(),
    })
}

/// Every record of the run as (global start ns, rank index, record index), by start time.
pub fn timeline(run: &RunTrace) -> Vec<(i64, usize, usize)> {
    let mut rows: Vec<(i64, usize, usize)> =
        Vec::with_capacity(run.ranks.iter().map(|r| r.records.len()).sum());
    for (ri, rk) in run.ranks.iter().enumerate() {
        for (i, rec) in rk.records.iter().enumerate() {
            rows.push((rk.meta.to_global_ns(rec.t_start), ri, i));
        }
    }
    rows.sort_unstable();
    rows
}

fn write_calls_csv(run: &RunTrace, path: &Path) -> Result<(), String> {
    let err = |e: csv::Error| format!("cannot write {}: {e}", path.display());
    let mut w = csv::Writer::from_path(path).map_err(err)?;
    w.write_record(CSV_COLUMNS).map_err(err)?;
    let origin = run.origin_ns();
    for (start, ri, i) in timeline(run) {
        let rk = &run.ranks[ri];
        let r = &rk.records[i];
        let row = [
            rk.meta.rank.to_string(),
            rk.meta.node.clone(),
            rk.meta
                .calls
                .get(r.call as usize)
                .cloned()
                .unwrap_or_else(|| trace::call_name(r.call).into()),
            rank_field(r.peer),
            rank_field(r.root),
            (r.bytes_send + r.bytes_recv).to_string(),
            r.comm_size.to_string(),
            format!("{:.9}", (start - origin) as f64 * 1e-9),
            format!("{:.9}", r.duration_s()),
            String::new(),
            String::new(),
            String::new(),
            r.thread.to_string(),
            r.tag.to_string(),
            if r.comm == u32::MAX {
                String::new()
            } else {
                r.comm.to_string()
            },
            r.bytes_send.to_string(),
            r.bytes_recv.to_string(),
            rank_field(r.peer2),
            ((r.flags & FLAG_NONBLOCKING != 0) as u8).to_string(),
        ];
        w.write_record(&row).map_err(err)?;
    }
    w.flush()
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[derive(Default)]
struct CallAgg {
    count: u64,
    bytes: u64,
    time_ns: u64,
    hist: Option<Histogram<u64>>,
}

/// The summary document.
pub fn summary(run: &RunTrace) -> Value {
    let mut calls: BTreeMap<String, CallAgg> = BTreeMap::new();
    let mut ranks = Vec::new();
    let mut nodes: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for rk in &run.ranks {
        let m = &rk.meta;
        nodes.entry(m.node.clone()).or_default().push(m.rank);
        let mut mpi_ns: u64 = m.polls.iter().map(|p| p.time_ns).sum();
        for r in &rk.records {
            let name = m
                .calls
                .get(r.call as usize)
                .cloned()
                .unwrap_or_else(|| trace::call_name(r.call).into());
            let a = calls.entry(name).or_default();
            let d = r.t_end.saturating_sub(r.t_start);
            a.count += 1;
            a.bytes += r.bytes_send + r.bytes_recv;
            a.time_ns += d;
            // 1 ns to 3 hours at 3 significant digits; longer calls saturate.
            let h = a.hist.get_or_insert_with(|| {
                Histogram::new_with_bounds(1, 3 * 3600 * 1_000_000_000, 3).expect("valid bounds")
            });
            h.saturating_record(d.max(1));
            mpi_ns += mpi_time_ns(r);
        }
        ranks.push(json!({
            "rank": m.rank,
            "node": m.node,
            "records": rk.records.len(),
            "mpi_time_s": mpi_ns as f64 * 1e-9,
            "dropped": m.dropped,
            "lost": m.lost,
            "dropped_requests": m.dropped_requests,
            "finalized": m.finalized,
            "ended_by": m.ended_by,
            "trailing_bytes": rk.trailing_bytes,
            "spool_error": rk.spool_error,
            "clock_offset_ns": m.clock_init.map(|c| c.offset_ns),
        }));
    }
    let calls: BTreeMap<String, Value> = calls
        .into_iter()
        .map(|(k, a)| {
            let q = |p: f64| a.hist.as_ref().map_or(0.0, |h| h.value_at_quantile(p) as f64 * 1e-9);
            (
                k,
                json!({
                    "count": a.count,
                    "bytes": a.bytes,
                    "time_s": a.time_ns as f64 * 1e-9,
                    "mean_s": if a.count > 0 { a.time_ns as f64 * 1e-9 / a.count as f64 } else { 0.0 },
                    "p50_s": q(0.5),
                    "p90_s": q(0.9),
                    "p99_s": q(0.99),
                    "max_s": a.hist.as_ref().map_or(0.0, |h| h.max() as f64 * 1e-9),
                }),
            )
        })
        .collect();
    let mut polls: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for rk in &run.ranks {
        for p in &rk.meta.polls {
            let e = polls.entry(p.call.clone()).or_default();
            e.0 += p.count;
            e.1 += p.time_ns;
        }
    }
    let polls: BTreeMap<String, Value> = polls
        .into_iter()
        .map(|(k, (c, t))| (k, json!({"count": c, "time_s": t as f64 * 1e-9})))
        .collect();
    json!({
        "format_version": 1,
        "complete": run.complete(),
        "world_size": run.world_size,
        "ranks_found": run.ranks.len(),
        "missing_ranks": run.missing,
        "records": run.ranks.iter().map(|r| r.records.len()).sum::<usize>(),
        "dropped": run.ranks.iter().map(|r| r.meta.dropped + r.meta.lost).sum::<u64>(),
        "dropped_requests": run.ranks.iter().map(|r| r.meta.dropped_requests).sum::<u64>(),
        "mpi_library": run.ranks.first().map(|r| r.meta.mpi_library.clone()).unwrap_or_default(),
        "nodes": nodes,
        "calls": calls,
        "unsuccessful_polls": polls,
        "ranks": ranks,
    })
}

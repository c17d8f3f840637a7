//! `report.html`: one self-contained page (styles, script and data inlined; a CSP that
//! forbids any network access) that shows the run, where each rank's time went, the
//! node-to-node traffic, how well the model predicts each call family and the hotspots.
//!
//! The data block is built here and bounded by ranks, nodes² and call families × size
//! classes, never by the number of records; the page's script (`report.js`) draws it as
//! SVG and tables.

use super::callagg::{CallAggregates, CallFigures, RankCalls};
use super::hotspots::Hotspots;
use crate::error::Error;
use crate::predict::RunPrediction;
use crate::topo::placement::Placement;
use crate::trace::{self, RunTrace};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// Node-to-node totals, `[src][dst]` by node id.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Bytes of every message (point-to-point and the assumed collective algorithms'),
    /// within a node on the diagonal.
    pub bytes: Vec<Vec<f64>>,
    /// Seconds messages were slowed by sharing: Σ over the replay's intervals and the
    /// messages in flight of `dt·(1 − 1/p)`; plus each collective operation's members'
    /// contention, shared among its inter-node pairs by their bytes.
    pub contention_s: Vec<Vec<f64>>,
    /// Penalty-weighted excess bytes `(p − 1)·bytes moved` (as in hotspots.json); a
    /// collective's pairs with its operation's penalty.
    pub excess_bytes: Vec<Vec<f64>>,
}

/// The node-to-node matrices of a prediction.
pub fn matrix(pred: &RunPrediction) -> Matrix {
    let mut m = super::netagg::MatrixAgg::new(pred.placement.nodes());
    super::netagg::feed(pred, &mut m);
    m.finish()
}

/// Where a rank's time went (seconds), measured and predicted. Measured: its span from
/// the start of recording to its last call's end, split into compute (span − MPI time),
/// wait (calls.csv's `wait_s`) and transfer (the rest of its MPI time). Predicted: the
/// same compute (the replay keeps the gaps), predicted wait (`pred_wait_s`) and transfer,
/// of which `contention_s` (calls.csv's `contention_s`) is due to bandwidth sharing.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RankTime {
    pub span_s: f64,
    pub mpi_s: f64,
    pub compute_s: f64,
    pub wait_s: f64,
    pub transfer_s: f64,
    pub pred_mpi_s: f64,
    pub pred_wait_s: f64,
    pub pred_transfer_s: f64,
    pub contention_s: f64,
}

/// Splits a rank's time; `mpi_s` is its MPI time as summary.json reports it (a
/// nonblocking operation counts its post; unsuccessful polls count).
pub fn rank_time(
    rk: &trace::RankTrace,
    calls: &[crate::predict::CallPrediction],
    mpi_s: f64,
) -> RankTime {
    let mut c = RankCalls::default();
    for (r, p) in rk.records.iter().zip(calls) {
        c.add(r, p);
    }
    rank_time_of(&c, rk.meta.init_ns, mpi_s)
}

/// [`rank_time`] from a rank's sums over its calls and its start of recording
/// (`init_ns`, the rank's clock).
pub fn rank_time_of(c: &RankCalls, init_ns: u64, mpi_s: f64) -> RankTime {
    let last = c.last_end.unwrap_or(init_ns);
    let first = c.first_start.unwrap_or(last);
    let begin = if init_ns > 0 && init_ns <= first {
        init_ns
    } else {
        first
    };
    let span = last.saturating_sub(begin) as f64 * 1e-9;
    let mpi = mpi_s.max(0.0);
    let delta = c.predicted_s - c.measured_s;
    let wait = c.wait_s.min(mpi);
    let pred_mpi = (mpi + delta).max(0.0);
    let pred_wait = c.pred_wait_s.min(pred_mpi);
    let pred_transfer = (pred_mpi - pred_wait).max(0.0);
    RankTime {
        span_s: span.max(mpi),
        mpi_s: mpi,
        compute_s: (span - mpi).max(0.0),
        wait_s: wait,
        transfer_s: (mpi - wait).max(0.0),
        pred_mpi_s: pred_mpi,
        pred_wait_s: pred_wait,
        pred_transfer_s: pred_transfer,
        contention_s: c.contention_s.min(pred_transfer),
    }
}

/// One point of the measured-vs-predicted plot: a call family and size class.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyPoint {
    pub call: String,
    pub size_class: &'static str,
    pub count: u64,
    pub measured_s: f64,
    pub predicted_s: f64,
    pub free_s: f64,
}

/// Mean measured, predicted and contention-free seconds per (call, size class), over the
/// predicted calls.
pub fn family_points(run: &RunTrace, pred: &RunPrediction) -> Vec<FamilyPoint> {
    CallAggregates::of_run(run, &pred.calls).families
}

/// The node a rank is on in the prediction: the replay's placement (another one in a
/// what-if replay), else the recorded node.
fn node_of<'a>(placement: &'a Placement, meta: &'a trace::RankMeta) -> &'a str {
    placement
        .node(meta.rank)
        .and_then(|n| placement.names.get(n as usize))
        .map_or(meta.node.as_str(), String::as_str)
}

/// Ranks as compact ranges: `0-3, 8, 10-11`.
pub fn ranges(r: &[i32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < r.len() {
        let mut j = i;
        while j + 1 < r.len() && r[j + 1] == r[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", r[i], r[j])
        } else {
            r[i].to_string()
        });
        i = j + 1;
    }
    out.join(", ")
}

/// The page's rows of ranks: where each rank's time went, measured and predicted, and
/// its per-task sums; `run`'s ranks (a shell will do) on the nodes of `placement`, their
/// figures in `figs`, their MPI time from `summary`.
pub fn page_ranks(
    run: &RunTrace,
    placement: &Placement,
    figs: &CallFigures,
    summary: &Value,
) -> Vec<Value> {
    let mpi_of: BTreeMap<i64, f64> = summary["ranks"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| Some((r["rank"].as_i64()?, r["mpi_time_s"].as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    let none = RankCalls::default();
    let mut ranks = Vec::new();
    for (ri, rk) in run.ranks.iter().enumerate() {
        let m = &rk.meta;
        let c = figs.ranks.get(ri).unwrap_or(&none);
        // summary.json's definition: a nonblocking operation counts only its post.
        let mpi = mpi_of
            .get(&(m.rank as i64))
            .copied()
            .unwrap_or(c.mpi_ns as f64 * 1e-9);
        let t = rank_time_of(c, m.init_ns, mpi);
        // Unsuccessful polls are MPI time in no row (a loop folded into its row is not
        // among them): waiting in all but name, drawn apart from the transfer they are
        // otherwise counted in (Ray: 37 s a rank of unsuccessful MPI_Iprobe calls).
        let polls = m.poll_ns() as f64 * 1e-9;
        let poll = polls
            .min(t.transfer_s)
            .min((t.pred_transfer_s - t.contention_s).max(0.0));
        ranks.push(json!({
            "rank": m.rank,
            "node": node_of(placement, m),
            "records": c.records,
            "dropped": m.dropped + m.lost,
            "span_s": t.span_s,
            "mpi_s": t.mpi_s,
            "compute_s": t.compute_s,
            "wait_s": t.wait_s,
            "poll_s": poll,
            "transfer_s": t.transfer_s - poll,
            "pred_mpi_s": t.pred_mpi_s,
            "pred_wait_s": t.pred_wait_s,
            "pred_transfer_s": t.pred_transfer_s - poll,
            "contention_s": t.contention_s,
            "task_measured_s": c.measured_s,
            "task_predicted_s": c.predicted_s,
            "task_free_s": c.free_s,
        }));
    }
    ranks
}

/// The page's points of call families (see [`CallFigures::families`]).
pub fn page_families(figs: &CallFigures) -> Vec<Value> {
    figs.families
        .iter()
        .map(|f| {
            json!({
                "call": f.call, "size_class": f.size_class, "count": f.count,
                "measured_s": f.measured_s, "predicted_s": f.predicted_s, "free_s": f.free_s,
            })
        })
        .collect()
}

/// What the page shows of a prediction beside the per-call figures: where the replay put
/// the ranks, its model, the makespans and the node-to-node matrix. The batch report takes
/// them from its [`RunPrediction`], the streamed one from its accumulators.
pub struct Replayed<'a> {
    pub placement: &'a Placement,
    pub model: &'a str,
    /// Measured, predicted, contention-free (seconds).
    pub makespans: [f64; 3],
    pub matrix: Matrix,
}

impl<'a> Replayed<'a> {
    pub fn of(pred: &'a RunPrediction) -> Replayed<'a> {
        Replayed {
            placement: &pred.placement,
            model: &pred.model,
            makespans: [pred.makespan_measured, pred.makespan, pred.makespan_free],
            matrix: matrix(pred),
        }
    }
}

/// The page's data block.
pub fn report_data(
    run: &RunTrace,
    rep: &Replayed,
    figs: &CallFigures,
    summary: &Value,
    hotspots: &Hotspots,
    source: &str,
) -> Value {
    let ranks = page_ranks(run, rep.placement, figs, summary);
    let (mut dropped, mut lost, mut dropped_req) = (0u64, 0u64, 0u64);
    let mut ended: Vec<Value> = Vec::new();
    for rk in &run.ranks {
        let m = &rk.meta;
        dropped += m.dropped;
        lost += m.lost;
        dropped_req += m.dropped_requests;
        if !m.finalized {
            ended.push(json!({"rank": m.rank, "ended_by": m.ended_by}));
        }
    }
    let mut by_node: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for rk in &run.ranks {
        by_node
            .entry(node_of(rep.placement, &rk.meta))
            .or_default()
            .push(rk.meta.rank);
    }
    let placement: Vec<Value> = rep
        .placement
        .names
        .iter()
        .map(|n| {
            let r = by_node.get(n.as_str()).cloned().unwrap_or_default();
            json!({"node": n, "ranks": ranges(&r), "count": r.len()})
        })
        .collect();
    let mx = &rep.matrix;
    let [measured, predicted, free] = rep.makespans;
    let families = page_families(figs);
    let p = &summary["prediction"];
    json!({
        "run": {
            "ranks": run.ranks.len(),
            "world_size": run.world_size,
            "missing_ranks": run.missing,
            "nodes": rep.placement.nodes(),
            "placement": placement,
            "model": rep.model,
            "profile": source,
            "mpi_library": summary["mpi_library"],
            "complete": run.complete(),
            "ended": ended,
            "records": figs.ranks.iter().map(|r| r.records).sum::<u64>(),
            "dropped": dropped,
            "lost": lost,
            "dropped_requests": dropped_req,
            "makespan_s": {
                "measured": measured,
                "predicted": predicted,
                "free": free,
            },
            "not_predicted": p["not_predicted"],
            "cpu_sharing": summary["cpu_sharing"],
            "network": summary["network"],
        },
        "ranks": ranks,
        "matrix": {
            "nodes": rep.placement.names,
            "bytes": mx.bytes,
            "contention_s": mx.contention_s,
            "excess_bytes": mx.excess_bytes,
        },
        "families": families,
        "e_rel": p["e_rel_percent"],
        "waits": p["wait_s"],
        "contention_loss": p["contention_loss_s"],
        "hotspots": serde_json::to_value(hotspots).unwrap_or(Value::Null),
    })
}

/// JSON safe inside a `<script>` element: no `<` (so no `</script>` or `<!--`).
fn script_json(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_else(|_| "null".into())
        .replace('<', "\\u003c")
}

/// The whole page.
pub fn render(data: &Value) -> String {
    let mut s = String::with_capacity(CSS.len() + JS.len() + 4096);
    s += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    s += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n";
    s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    s += "<title>pmpi-predict report</title>\n<style>\n";
    s += CSS;
    s += "</style>\n</head>\n<body>\n";
    s += "<noscript><p class=\"note\">This report draws its plots with inline JavaScript; the data is in the JSON block of this file, and in summary.json and hotspots.json.</p></noscript>\n";
    s += "<main id=\"report\"></main>\n";
    s += "<script type=\"application/json\" id=\"report-data\">";
    s += &script_json(data);
    s += "</script>\n<script>\n";
    s += JS;
    s += "</script>\n</body>\n</html>\n";
    s
}

/// Writes report.html for a predicted run.
pub fn write_html(
    path: &Path,
    run: &RunTrace,
    rep: &Replayed,
    figs: &CallFigures,
    summary: &Value,
    hotspots: &Hotspots,
    source: &str,
) -> Result<(), Error> {
    let page = render(&report_data(run, rep, figs, summary, hotspots, source));
    std::fs::write(path, page).map_err(|e| Error::write(path, e))
}

/// Runs `f`, which writes the view `what`: a failure, even a panic, is one stderr line and
/// never the report's (views are written inside MPI_Finalize).
pub fn guarded(what: &Path, f: &dyn Fn() -> Result<(), Error>) {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => crate::say_line!("pmpi-predict: {e}; {} not written", what.display()),
        Err(_) => crate::say_line!(
            "pmpi-predict: internal error while writing {}; the rest of the report is written",
            what.display()
        ),
    }
}

/// Writes `report.html` and `trace.json` (unless `trace_max_mb` is 0) into `dir`. Runs
/// inside MPI_Finalize: a failure, even a panic, is one stderr line per file and never
/// stops the rest of the report or the program.
// The views read everything the report found; a struct of them would only rename these.
#[allow(clippy::too_many_arguments)]
pub fn write_views(
    dir: &Path,
    run: &RunTrace,
    pred: &RunPrediction,
    figs: &CallFigures,
    summary: &Value,
    hotspots: &Hotspots,
    source: &str,
    trace_max_mb: u64,
) {
    let page = dir.join("report.html");
    guarded(&page, &|| {
        write_html(
            &page,
            run,
            &Replayed::of(pred),
            figs,
            summary,
            hotspots,
            source,
        )
    });
    if trace_max_mb > 0 {
        let tj = dir.join("trace.json");
        guarded(&tj, &|| {
            super::chrome_trace::write_trace(&tj, run, pred, trace_max_mb.saturating_mul(1_000_000))
                .map(|_| ())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_ranges_are_compact() {
        assert_eq!(ranges(&[0, 1, 2, 3, 8, 10, 11]), "0-3, 8, 10-11");
        assert_eq!(ranges(&[5]), "5");
        assert_eq!(ranges(&[]), "");
    }

    #[test]
    fn data_cannot_close_the_script_element() {
        let s = script_json(&json!({"node": "</script><script>alert(1)</script>"}));
        assert!(!s.contains('<'), "{s}");
        let back: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back["node"], "</script><script>alert(1)</script>");
    }

    /// Ranks 0 and 2 on node a each send 60 kB (eager) to rank 1 on node b at once: the
    /// messages share the ports, so a → b has bytes and contention, and nothing else does.
    /// A point-to-point call on WORLD of `size` ranks from 1 ms to 200 ms.
    fn p2p(call: u16, peer: i32, send: u64, recv: u64, size: u32) -> trace::Record {
        trace::Record {
            t_start: 1_000_000,
            t_end: 200_000_000,
            t_posted: 200_000_000,
            peer,
            root: trace::NO_RANK,
            peer2: trace::NO_RANK,
            bytes_send: send,
            bytes_recv: recv,
            comm_size: size,
            call,
            ..Default::default()
        }
    }

    /// Rank `r` of `world` on `node`, finalized, with `records`.
    fn rank_on(r: i32, world: i32, node: &str, records: Vec<trace::Record>) -> trace::RankTrace {
        trace::RankTrace {
            meta: trace::RankMeta {
                rank: r,
                world_size: world,
                node: node.into(),
                calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
                finalized: true,
                ..Default::default()
            },
            records,
            ..Default::default()
        }
    }

    #[test]
    fn matrix_has_the_bytes_and_the_slowdown_of_each_pair() {
        use crate::trace::{Record, call};
        let rec = |call: u16, peer: i32, send: u64, recv: u64| p2p(call, peer, send, recv, 3);
        let rank = |r: i32, node: &str, records: Vec<Record>| rank_on(r, 3, node, records);
        let bytes = 60_000;
        let run = RunTrace {
            ranks: vec![
                rank(0, "a", vec![rec(call::MPI_Send, 1, bytes, 0)]),
                rank(
                    1,
                    "b",
                    vec![
                        rec(call::MPI_Recv, 0, 0, bytes),
                        Record {
                            t_start: 200_000_001,
                            t_end: 300_000_000,
                            t_posted: 300_000_000,
                            ..rec(call::MPI_Recv, 2, 0, bytes)
                        },
                    ],
                ),
                rank(2, "a", vec![rec(call::MPI_Send, 1, bytes, 0)]),
            ],
            world_size: 3,
            missing: vec![],
        };
        let profile = crate::profile::Profile::builtin_default();
        let pred = crate::predict::predict_run(&run, &profile, Some("gige")).unwrap();
        let m = matrix(&pred);
        assert_eq!(pred.placement.names, ["a", "b"]);
        assert_eq!(m.bytes, vec![vec![0.0, 120_000.0], vec![0.0, 0.0]]);
        assert!(m.contention_s[0][1] > 0.0, "{:?}", m.contention_s);
        assert!(m.excess_bytes[0][1] > 0.0);
        assert_eq!(
            m.contention_s[0][0] + m.contention_s[1][0] + m.contention_s[1][1],
            0.0
        );
        // The slowdown of a pair is at most the time its messages were in flight.
        assert!(m.contention_s[0][1] < pred.makespan * 2.0);
    }

    /// A rank's unsuccessful polls (MPI time in no row) are drawn as polling, taken out of
    /// its transfer, measured and predicted alike.
    #[test]
    fn unsuccessful_polls_are_drawn_apart_from_transfer() {
        use crate::trace::{PollStat, Record, call};
        let rec = |call: u16, peer: i32, send: u64, recv: u64| p2p(call, peer, send, recv, 2);
        let rank = |r: i32, node: &str, records: Vec<Record>, poll_ns: u64| {
            let mut rk = rank_on(r, 2, node, records);
            rk.meta.polls = vec![PollStat {
                call: "MPI_Iprobe".into(),
                count: 10,
                time_ns: poll_ns,
            }];
            rk
        };
        let run = RunTrace {
            ranks: vec![
                rank(0, "a", vec![rec(call::MPI_Send, 1, 1000, 0)], 0),
                rank(1, "b", vec![rec(call::MPI_Recv, 0, 0, 1000)], 50_000_000),
            ],
            world_size: 2,
            missing: vec![],
        };
        let profile = crate::profile::Profile::builtin_default();
        let pred = crate::predict::predict_run(&run, &profile, Some("gige")).unwrap();
        let figs = CallAggregates::of_run(&run, &pred.calls);
        let summary = super::super::summary(&run, &figs);
        let ranks = page_ranks(&run, &pred.placement, &figs, &summary);
        let f = |r: usize, k: &str| ranks[r][k].as_f64().unwrap();
        assert_eq!(f(0, "poll_s"), 0.0);
        assert!((f(1, "poll_s") - 0.05).abs() < 1e-12, "{}", ranks[1]);
        // Rank 1's MPI time is its receive (0.199 s) and the polls: the bar's parts add up
        // to it, measured and predicted.
        let mpi = f(1, "mpi_s");
        assert!((mpi - 0.249).abs() < 1e-9, "{}", ranks[1]);
        assert!((f(1, "wait_s") + f(1, "poll_s") + f(1, "transfer_s") - mpi).abs() < 1e-9);
        let pred_mpi = f(1, "pred_mpi_s");
        assert!(
            (f(1, "pred_wait_s") + f(1, "poll_s") + f(1, "pred_transfer_s") - pred_mpi).abs()
                < 1e-9,
            "{}",
            ranks[1]
        );
    }

    /// Four ranks on four nodes in one MPI_Alltoall of 1 MB blocks, which the replay times
    /// with its own model: every pair of nodes carries one block, and the members'
    /// contention is shared equally among the twelve pairs; the hotspots name the
    /// operation.
    #[test]
    fn matrix_and_hotspots_have_the_collectives_traffic() {
        use crate::trace::{Record, call};
        let block = 1_000_000u64;
        let rank = |r: i32| {
            let all = Record {
                t_end: 900_000_000,
                t_posted: 900_000_000,
                ..p2p(call::MPI_Alltoall, trace::NO_RANK, 4 * block, 4 * block, 4)
            };
            rank_on(r, 4, &format!("n{r}"), vec![all])
        };
        let run = RunTrace {
            ranks: (0..4).map(rank).collect(),
            world_size: 4,
            missing: vec![],
        };
        let mut profile = crate::profile::Profile::builtin_default();
        profile.alltoall_gamma =
            crate::model::alltoall::GammaTable(vec![(4096, 2.0), (1 << 22, 2.0)]);
        let pred = crate::predict::predict_run(&run, &profile, Some("gige")).unwrap();
        assert_eq!(pred.collectives.len(), 1);
        let op = pred.collectives[0];
        assert_eq!(op.call, "MPI_Alltoall");
        assert!(op.penalty > 1.5, "{op:?}");
        let members: f64 = pred.calls.iter().map(|c| c[0].contention).sum();
        assert!(members > 0.0);
        assert!((op.contention_s - members).abs() < 1e-12);
        let m = matrix(&pred);
        for s in 0..4 {
            for d in 0..4 {
                if s == d {
                    assert_eq!(
                        (m.bytes[s][d], m.contention_s[s][d], m.excess_bytes[s][d]),
                        (0.0, 0.0, 0.0)
                    );
                } else {
                    assert_eq!(m.bytes[s][d], block as f64);
                    assert!((m.contention_s[s][d] - members / 12.0).abs() < 1e-9);
                    assert!(
                        (m.excess_bytes[s][d] - (op.penalty - 1.0) * block as f64).abs() < 1e-3
                    );
                }
            }
        }
        let h = super::super::hotspots::compute(&run, &pred, 10);
        assert_eq!(h.intervals.len(), 1);
        let iv = &h.intervals[0];
        assert_eq!(iv.operation, Some("MPI_Alltoall"));
        assert_eq!(iv.arcs, 12);
        assert_eq!(iv.cause, super::super::hotspots::Cause::Both);
        assert!((iv.excess_bytes - 12.0 * (op.penalty - 1.0) * block as f64).abs() < 1e-2);
        assert_eq!(h.node_pairs.len(), 10);
        assert_eq!(h.nodes.len(), 4);
    }

    #[test]
    fn rank_time_adds_up_to_the_span() {
        use crate::predict::{CallPrediction, Wait, WaitKind};
        let rk = trace::RankTrace {
            meta: trace::RankMeta {
                init_ns: 1_000_000_000,
                ..Default::default()
            },
            records: vec![trace::Record {
                t_start: 2_000_000_000,
                t_end: 3_000_000_000,
                t_posted: 3_000_000_000,
                ..Default::default()
            }],
            ..Default::default()
        };
        let c = CallPrediction {
            predicted: Some(1.5),
            measured_wait: Wait {
                kind: WaitKind::LateSender,
                seconds: 0.25,
                on: 1,
            },
            wait: Wait {
                kind: WaitKind::LateSender,
                seconds: 0.5,
                on: 1,
            },
            contention: 5.0,
            ..Default::default()
        };
        let t = rank_time(&rk, &[c], 1.0);
        assert_eq!(t.span_s, 2.0);
        assert_eq!(t.compute_s, 1.0);
        assert_eq!(t.wait_s, 0.25);
        assert_eq!(t.transfer_s, 0.75);
        assert_eq!(t.compute_s + t.wait_s + t.transfer_s, t.span_s);
        // Predicted: the call takes 1.5 s instead of 1 s, 0.5 s of it waiting.
        assert_eq!(t.pred_mpi_s, 1.5);
        assert_eq!(t.pred_wait_s, 0.5);
        assert_eq!(t.pred_transfer_s, 1.0);
        // Contention is shown within the predicted transfer, never beyond.
        assert_eq!(t.contention_s, 1.0);
    }
}

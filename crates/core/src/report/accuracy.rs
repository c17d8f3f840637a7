//! Accuracy tables: measured against predicted (and against the contention-free
//! baseline) per group of like calls, for the accuracy benchmark and for users who want
//! to know how far to trust a profile.
//!
//! A collective on MPI_COMM_WORLD is one *operation* across ranks: its measured time is the
//! longest of its ranks' calls (the time until every rank has its result). Point-to-point
//! calls count one by one. Groups are (call, processes, bytes per message, tag).

use crate::graph;
use crate::predict::RunPrediction;
use crate::trace::{CallKind, FLAG_NONBLOCKING, RunTrace};
use serde::Serialize;
use std::collections::BTreeMap;

/// One group of like calls.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Group {
    pub call: String,
    pub procs: u32,
    /// Bytes per message (per pair for an all-to-all, per destination for a scatter).
    pub bytes: u64,
    pub tag: i32,
    pub count: usize,
    pub measured_s: f64,
    pub predicted_s: f64,
    pub free_s: f64,
    /// Median E_rel (%) of the model.
    pub e_rel: f64,
    /// Median E_rel (%) of the contention-free baseline.
    pub e_rel_free: f64,
    /// Samples a TCP retransmission timeout may have held (calls.csv's `tcp_timeout`; an
    /// operation's if any member's was): longer than predicted for a cause no model has.
    pub tcp_held: usize,
}

/// Summary of a set of groups: median |E_rel| of the model and of the baseline over all
/// samples.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Family {
    pub samples: usize,
    pub median_abs_e_rel: f64,
    pub median_abs_e_rel_free: f64,
}

/// The exact median (the mean of the middle two for an even count, NaN for none), by
/// statrs's selection in place.
fn median(v: &mut [f64]) -> f64 {
    use statrs::statistics::{Data, OrderStatistics};
    Data::new(v).median()
}

#[derive(Default)]
struct Samples {
    measured: Vec<f64>,
    predicted: Vec<f64>,
    free: Vec<f64>,
    held: usize,
}

/// Measured/predicted samples of the calls named in `calls` (all predicted calls if empty).
/// With `classes`, point-to-point calls are grouped by size class (the group's `bytes` is
/// the class's lower bound) and not by tag.
fn samples(
    run: &RunTrace,
    pred: &RunPrediction,
    calls: &[String],
    classes: bool,
) -> BTreeMap<(String, u32, u64, i32), Samples> {
    let mut out: BTreeMap<(String, u32, u64, i32), Samples> = BTreeMap::new();
    // Collective operations on WORLD: k-th collective of each rank, longest call wins.
    type Op = (String, u32, u64, f64, f64, f64, bool);
    let mut ops: BTreeMap<usize, Op> = BTreeMap::new();
    let tcp = super::TcpWindows::of_run(run);
    let origin = run.origin_ns();
    for (ri, rk) in run.ranks.iter().enumerate() {
        let clock = rk.meta.clock();
        let kinds = graph::kind_table(&rk.meta.calls);
        let mut k = 0usize;
        for (i, r) in rk.records.iter().enumerate() {
            let name = rk
                .meta
                .calls
                .get(r.call as usize)
                .cloned()
                .unwrap_or_default();
            let kind = graph::kind_in(&kinds, r.call);
            let class = graph::class_of(kind);
            let is_op = class == graph::CallClass::Collective && r.comm == 0;
            let this_k = k;
            if is_op {
                k += 1;
            }
            if !calls.is_empty() && !calls.contains(&name) {
                continue;
            }
            let p = pred.calls[ri][i];
            let (Some(pr), Some(fr)) = (p.predicted, p.free) else {
                continue;
            };
            let m = r.duration_s();
            let held = tcp.held_call(&rk.meta, &clock, r, origin);
            if is_op {
                let n = r.comm_size.max(1) as u64;
                let bytes = match kind {
                    CallKind::Alltoall => r.bytes_send.max(r.bytes_recv) / n,
                    CallKind::Scatter => r.bytes_recv.max(r.bytes_send / n),
                    _ => r.bytes_send.max(r.bytes_recv),
                };
                // The operation takes as long as its slowest member, measured and
                // predicted alike (a rooted one's root returns first).
                let e =
                    ops.entry(this_k)
                        .or_insert((name, r.comm_size, bytes, 0.0, 0.0, 0.0, false));
                e.3 = e.3.max(m);
                e.4 = e.4.max(pr);
                e.5 = e.5.max(fr);
                e.6 |= held;
            } else {
                let b = r.bytes_send.max(r.bytes_recv);
                let key = if classes {
                    (name, r.comm_size, class_floor(b), -1)
                } else {
                    (name, r.comm_size, b, r.tag)
                };
                let s = out.entry(key).or_default();
                s.measured.push(m);
                s.predicted.push(pr);
                s.free.push(fr);
                s.held += usize::from(held);
            }
        }
    }
    for (_, (name, n, bytes, m, p, f, held)) in ops {
        let s = out.entry((name, n, bytes, 0)).or_default();
        s.measured.push(m);
        s.predicted.push(p);
        s.free.push(f);
        s.held += usize::from(held);
    }
    out
}

/// Lower bound of the size class of `b` bytes: 0, 1 KiB, 64 KiB, 1 MiB.
fn class_floor(b: u64) -> u64 {
    match b {
        0..1024 => 0,
        1024..65536 => 1024,
        65536..1048576 => 65536,
        _ => 1048576,
    }
}

/// Groups of like calls with their medians and errors.
pub fn groups(
    run: &RunTrace,
    pred: &RunPrediction,
    calls: &[String],
    classes: bool,
) -> (Vec<Group>, Family) {
    let mut all_e = Vec::new();
    let mut all_f = Vec::new();
    let mut groups = Vec::new();
    for ((call, procs, bytes, tag), mut s) in samples(run, pred, calls, classes) {
        let errors = |pred: &[f64]| -> Vec<f64> {
            s.measured
                .iter()
                .zip(pred)
                .filter_map(|(&m, &p)| super::e_rel(p, m))
                .collect()
        };
        let mut e = errors(&s.predicted);
        let mut ef = errors(&s.free);
        all_e.extend(e.iter().map(|x| x.abs()));
        all_f.extend(ef.iter().map(|x| x.abs()));
        groups.push(Group {
            call,
            procs,
            bytes,
            tag,
            count: s.measured.len(),
            measured_s: median(&mut s.measured),
            predicted_s: median(&mut s.predicted),
            free_s: median(&mut s.free),
            tcp_held: s.held,
            e_rel: median(&mut e),
            e_rel_free: median(&mut ef),
        });
    }
    let fam = Family {
        samples: all_e.len(),
        median_abs_e_rel: median(&mut all_e),
        median_abs_e_rel_free: median(&mut all_f),
    };
    (groups, fam)
}

/// The table as text; with a last column `tcp` (samples a TCP retransmission timeout may
/// have held) where any group has one.
pub fn table(groups: &[Group], fam: &Family) -> String {
    let tcp = groups.iter().any(|g| g.tcp_held > 0);
    let mut s = format!(
        "{:<14} {:>5} {:>10} {:>5} {:>5} {:>12} {:>12} {:>12} {:>9} {:>9}{}\n",
        "call",
        "procs",
        "bytes",
        "tag",
        "n",
        "measured_s",
        "predicted_s",
        "free_s",
        "E_rel%",
        "E_free%",
        if tcp { "    tcp" } else { "" }
    );
    for g in groups {
        s += &format!(
            "{:<14} {:>5} {:>10} {:>5} {:>5} {:>12.6} {:>12.6} {:>12.6} {:>9.1} {:>9.1}{}\n",
            g.call,
            g.procs,
            g.bytes,
            g.tag,
            g.count,
            g.measured_s,
            g.predicted_s,
            g.free_s,
            g.e_rel,
            g.e_rel_free,
            if tcp {
                format!(" {:>6}", g.tcp_held)
            } else {
                String::new()
            }
        );
    }
    if tcp {
        s += "tcp: samples a TCP retransmission timeout may have held (calls.csv's tcp_timeout)\n";
    }
    s += &format!(
        "median |E_rel| over {} samples: model {:.1} %, contention-free baseline {:.1} %\n",
        fam.samples, fam.median_abs_e_rel, fam.median_abs_e_rel_free
    );
    s
}

/// The blocking calls a TCP retransmission timeout may have held (calls.csv's
/// `tcp_timeout`), and their measured and predicted time.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HeldCalls {
    pub calls: u64,
    pub measured_s: f64,
    pub predicted_s: f64,
}

/// [`HeldCalls`] of `run` predicted as `pred` (a call without a prediction counts its
/// measured time).
pub fn tcp_held_calls(run: &RunTrace, pred: &RunPrediction) -> HeldCalls {
    let tcp = super::TcpWindows::of_run(run);
    let origin = run.origin_ns();
    let mut h = HeldCalls::default();
    for (rk, calls) in run.ranks.iter().zip(&pred.calls) {
        let clock = rk.meta.clock();
        for (r, p) in rk.records.iter().zip(calls) {
            if r.flags & FLAG_NONBLOCKING == 0 && tcp.held_call(&rk.meta, &clock, r, origin) {
                h.calls += 1;
                h.measured_s += r.duration_s();
                h.predicted_s += p.predicted.unwrap_or(r.duration_s());
            }
        }
    }
    h
}

/// Whole-run accuracy: the per-rank sums of blocking and completion calls and the makespan,
/// model against contention-free baseline.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunAccuracy {
    /// Median over ranks of E_abs(t_i), percent: model and contention-free baseline.
    pub task_e_abs_model: f64,
    pub task_e_abs_free: f64,
    pub makespan_measured_s: f64,
    pub makespan_predicted_s: f64,
    pub makespan_free_s: f64,
    /// Rows whose measured time was kept (no model, unmatched, unresolved).
    pub rows_not_predicted: usize,
    pub rows: usize,
}

/// Computes [`RunAccuracy`].
pub fn run_accuracy(run: &RunTrace, pred: &RunPrediction) -> RunAccuracy {
    let figs = super::callagg::CallAggregates::of_run(run, &pred.calls);
    of_figures(
        &figs,
        [pred.makespan_measured, pred.makespan, pred.makespan_free],
    )
}

/// [`RunAccuracy`] from a run's per-call figures and its makespans (measured, predicted,
/// contention-free): the batch and the streamed reports' one rule.
pub fn of_figures(figs: &super::callagg::CallFigures, makespans: [f64; 3]) -> RunAccuracy {
    let mut em = Vec::new();
    let mut ef = Vec::new();
    for t in &figs.ranks {
        let (sm, sp, sf) = (t.measured_s, t.predicted_s, t.free_s);
        if let (Some(a), Some(b)) = (super::e_rel(sp, sm), super::e_rel(sf, sm)) {
            em.push(a.abs());
            ef.push(b.abs());
        }
    }
    let [measured, predicted, free] = makespans;
    RunAccuracy {
        task_e_abs_model: median(&mut em),
        task_e_abs_free: median(&mut ef),
        makespan_measured_s: measured,
        makespan_predicted_s: predicted,
        makespan_free_s: free,
        rows_not_predicted: figs.reasons.values().sum::<u64>() as usize,
        rows: figs.ranks.iter().map(|r| r.records as usize).sum(),
    }
}

/// One line per figure of [`RunAccuracy`].
pub fn run_text(a: &RunAccuracy) -> String {
    format!(
        "per-rank E_abs (sum of blocking and completion calls), median over ranks: model {:.1} %, contention-free baseline {:.1} %\n\
         makespan: measured {:.6} s, predicted {:.6} s ({:+.1} %), contention-free {:.6} s ({:+.1} %)\n\
         rows not predicted: {} of {}\n",
        a.task_e_abs_model,
        a.task_e_abs_free,
        a.makespan_measured_s,
        a.makespan_predicted_s,
        super::e_rel(a.makespan_predicted_s, a.makespan_measured_s).unwrap_or(f64::NAN),
        a.makespan_free_s,
        super::e_rel(a.makespan_free_s, a.makespan_measured_s).unwrap_or(f64::NAN),
        a.rows_not_predicted,
        a.rows
    )
}

#[cfg(test)]
mod tests {
    /// statrs's median is the exact one of a sorted copy: the middle value, the mean of
    /// the middle two, NaN for none (a group without errors).
    #[test]
    fn median_is_exact_on_small_samples() {
        assert_eq!(super::median(&mut [3.0, -1.0, 2.0]), 2.0);
        assert_eq!(super::median(&mut [0.1, 0.2, 0.7, 0.4]), (0.2 + 0.4) / 2.0);
        assert_eq!(super::median(&mut [5.5]), 5.5);
        assert_eq!(super::median(&mut [-0.5, 12.0, -0.5, 3.0, 40.0]), 3.0);
        assert!(super::median(&mut []).is_nan());
    }

    /// The groups count the samples a TCP timeout may have held, and the table shows the
    /// column only where some group has one: a run without counters prints as before.
    #[test]
    fn groups_count_the_samples_tcp_may_have_held() {
        use crate::predict::{Assumptions, predict_run_with};
        use crate::profile::Profile;
        let mut rnd = crate::testing::xorshift(0xacc_7c9);
        let (mut with, mut without, mut tried) = (0, 0, 0);
        for case in 0..8 {
            let mut run = crate::testing::random_case(&mut rnd, case, 20, 1);
            let plain = run.clone();
            crate::testing::add_net_counters(&mut run);
            // One window over rank 0's first call.
            let Some(first) = run.ranks[0].records.first().copied() else {
                continue;
            };
            run.ranks[0].meta.net_timeouts[0].from_ns = first.t_start;
            run.ranks[0].meta.net_timeouts[0].to_ns = first.t_end;
            run.ranks[0].meta.net_timeouts.truncate(1);
            tried += 1;
            // Every call of rank 0 that overlaps a window, as calls.csv marks it.
            let tcp = super::super::TcpWindows::of_run(&run);
            let origin = run.origin_ns();
            let rk = &run.ranks[0];
            let clock = rk.meta.clock();
            let marked = rk
                .records
                .iter()
                .filter(|r| tcp.held_call(&rk.meta, &clock, r, origin))
                .count();
            for (r, counted) in [(&run, &mut with), (&plain, &mut without)] {
                let p = predict_run_with(
                    r,
                    &Profile::builtin_default(),
                    Some("gige"),
                    &Assumptions::default(),
                )
                .unwrap();
                let (g, fam) = super::groups(r, &p, &[], false);
                let held: usize = g.iter().map(|g| g.tcp_held).sum();
                *counted += held;
                let t = super::table(&g, &fam);
                assert_eq!(t.lines().next().unwrap().ends_with("tcp"), held > 0, "{t}");
            }
            // A marked call of rank 0 is counted (an operation once for all its members).
            assert!(
                marked > 0 && with > 0,
                "case {case}: {marked} marked, {with} counted"
            );
        }
        assert_eq!(without, 0);
        assert!(tried >= 4, "{tried} cases with calls");
    }
}

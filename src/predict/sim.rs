//! Fluid simulation of concurrent inter-node flows under a penalty model.
//!
//! Each flow starts at its recorded start and needs `tref` seconds alone. While the set of
//! flows in flight stays the same (an interval), each progresses at rate
//! `1 / (p · tref)` of its work per second, where `p` is its penalty in that interval's
//! graph; the set changes when a flow starts or finishes, and penalties are re-evaluated
//! then. This is the progress rule of the penalty paper's simulator and of a fluid model.

use crate::model::{CommGraph, Edge, PenaltyModel};

/// A flow as the simulator sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimFlow {
    pub src: u32,
    pub dst: u32,
    pub bytes: u64,
    /// Seconds from the origin.
    pub start: f64,
    /// Contention-free duration, seconds.
    pub tref: f64,
}

/// One interval: flows `arcs[first..first+len]` in flight, each with its penalty.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub start: f64,
    pub end: f64,
    pub first: u32,
    pub len: u32,
}

/// What the simulation found.
#[derive(Debug, Clone, Default)]
pub struct Sim {
    /// Predicted end of each flow (input order).
    pub end: Vec<f64>,
    pub intervals: Vec<Interval>,
    /// (flow index, penalty) of every interval, back to back.
    pub arcs: Vec<(u32, f64)>,
}

impl Sim {
    /// The arcs of interval `i`.
    pub fn arcs_of(&self, i: &Interval) -> &[(u32, f64)] {
        &self.arcs[i.first as usize..(i.first + i.len) as usize]
    }
}

/// Runs the simulation. `flows` must be sorted by start. Without a model every penalty is 1
/// (each flow takes its `tref`).
pub fn simulate(flows: &[SimFlow], model: Option<&dyn PenaltyModel>) -> Sim {
    let n = flows.len();
    let mut end = vec![f64::NAN; n];
    let mut remaining = vec![1.0f64; n];
    let mut active: Vec<usize> = Vec::new();
    let mut pen: Vec<f64> = Vec::new();
    let mut graph = CommGraph::default();
    let mut sim = Sim::default();
    let mut next = 0usize;
    let mut t = flows.first().map_or(0.0, |f| f.start);
    loop {
        while next < n && flows[next].start <= t {
            let f = &flows[next];
            if f.tref > 0.0 {
                active.push(next);
            } else {
                end[next] = f.start;
            }
            next += 1;
        }
        if active.is_empty() {
            if next >= n {
                break;
            }
            t = flows[next].start;
            continue;
        }
        graph.edges.clear();
        graph.edges.extend(active.iter().map(|&i| Edge {
            src: flows[i].src,
            dst: flows[i].dst,
            bytes: flows[i].bytes,
        }));
        pen.clear();
        match model {
            Some(m) => pen.extend(
                m.penalties(&graph)
                    .into_iter()
                    .map(|p| if p.is_finite() && p > 0.0 { p } else { 1.0 }),
            ),
            None => pen.resize(active.len(), 1.0),
        }
        let finish_in = |k: usize| remaining[active[k]] * pen[k] * flows[active[k]].tref;
        let dt_finish = (0..active.len())
            .map(finish_in)
            .fold(f64::INFINITY, f64::min);
        let dt_start = if next < n {
            flows[next].start - t
        } else {
            f64::INFINITY
        };
        let dt = dt_finish.min(dt_start).max(0.0);
        if dt > 0.0 {
            let first = sim.arcs.len() as u32;
            sim.arcs
                .extend(active.iter().zip(&pen).map(|(&i, &p)| (i as u32, p)));
            sim.intervals.push(Interval {
                start: t,
                end: t + dt,
                first,
                len: active.len() as u32,
            });
        }
        // Flows whose finish falls at the end of this step complete exactly then.
        let finishing = dt_finish <= dt_start;
        let mut k = 0;
        let t_next = t + dt;
        while k < active.len() {
            let i = active[k];
            let done =
                finishing && remaining[i] * pen[k] * flows[i].tref <= dt * (1.0 + 1e-12) + 1e-15;
            if done {
                end[i] = t_next;
                active.swap_remove(k);
                pen.swap_remove(k);
            } else {
                remaining[i] -= dt / (pen[k] * flows[i].tref);
                k += 1;
            }
        }
        t = t_next;
    }
    sim.end = end;
    sim
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::GigabitEthernet;

    fn f(src: u32, dst: u32, start: f64, tref: f64) -> SimFlow {
        SimFlow {
            src,
            dst,
            bytes: 1000,
            start,
            tref,
        }
    }

    #[test]
    fn lone_flow_takes_tref() {
        let s = simulate(&[f(0, 1, 1.0, 2.0)], Some(&GigabitEthernet::default()));
        assert_eq!(s.end, vec![3.0]);
        assert_eq!(s.intervals.len(), 1);
    }

    #[test]
    fn two_messages_from_one_node_overlapping_half_their_time() {
        // A alone for 1 s (half its work), then A and B share node 0's output: penalty
        // 2·β = 1.5 each. A's remaining half takes 1.5 s → ends at 2.5; B did 1.5/3 = 0.5
        // of its work by then, finishes alone in 1 s → 3.5.
        let s = simulate(
            &[f(0, 1, 0.0, 2.0), f(0, 2, 1.0, 2.0)],
            Some(&GigabitEthernet::default()),
        );
        assert!((s.end[0] - 2.5).abs() < 1e-12, "{:?}", s.end);
        assert!((s.end[1] - 3.5).abs() < 1e-12, "{:?}", s.end);
        assert_eq!(s.intervals.len(), 3);
        let mid = &s.intervals[1];
        assert_eq!((mid.start, mid.end), (1.0, 2.5));
        assert!(s.arcs_of(mid).iter().all(|&(_, p)| (p - 1.5).abs() < 1e-12));
    }

    #[test]
    fn three_arc_outgoing_conflict() {
        // Three arcs leave node 0 together: penalty 3·β = 2.25 each, so tref 1 → 2.25.
        let s = simulate(
            &[f(0, 1, 0.0, 1.0), f(0, 2, 0.0, 1.0), f(0, 3, 0.0, 1.0)],
            Some(&GigabitEthernet::default()),
        );
        for e in &s.end {
            assert!((e - 2.25).abs() < 1e-12, "{:?}", s.end);
        }
    }

    #[test]
    fn no_model_means_no_penalty_and_zero_tref_ends_at_start() {
        let s = simulate(
            &[f(0, 1, 0.0, 1.0), f(0, 2, 0.5, 0.0), f(0, 2, 0.5, 1.0)],
            None,
        );
        assert_eq!(s.end, vec![1.0, 0.5, 1.5]);
    }
}

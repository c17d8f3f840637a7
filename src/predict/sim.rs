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
///
/// Penalties depend only on the connected component of the graph an arc is in (true of
/// every model here), so after a start or an end only the components of the nodes it
/// touched are re-evaluated; `simulate_reference` re-evaluates the whole graph and is the
/// oracle of the tests.
pub fn simulate(flows: &[SimFlow], model: Option<&dyn PenaltyModel>) -> Sim {
    let n = flows.len();
    let nodes = flows
        .iter()
        .map(|f| f.src.max(f.dst) as usize + 1)
        .max()
        .unwrap_or(0);
    let mut end = vec![f64::NAN; n];
    let mut remaining = vec![1.0f64; n];
    let mut pen = vec![1.0f64; n];
    let mut active: Vec<u32> = Vec::new();
    let mut pos = vec![u32::MAX; n];
    let mut at_node: Vec<Vec<u32>> = vec![Vec::new(); nodes];
    let mut dirty: Vec<u32> = Vec::new();
    let mut seen_node = vec![false; nodes];
    let mut seen_flow = vec![false; n];
    let mut comp: Vec<u32> = Vec::new();
    let mut stack: Vec<u32> = Vec::new();
    let mut graph = CommGraph::default();
    let mut sim = Sim::default();
    let mut next = 0usize;
    let mut t = flows.first().map_or(0.0, |f| f.start);
    loop {
        while next < n && flows[next].start <= t {
            let f = &flows[next];
            if f.tref > 0.0 {
                pos[next] = active.len() as u32;
                active.push(next as u32);
                at_node[f.src as usize].push(next as u32);
                if f.dst != f.src {
                    at_node[f.dst as usize].push(next as u32);
                }
                dirty.extend([f.src, f.dst]);
            } else {
                end[next] = f.start;
            }
            next += 1;
        }
        if active.is_empty() {
            dirty.clear();
            if next >= n {
                break;
            }
            t = flows[next].start;
            continue;
        }
        if let Some(m) = model.filter(|_| !dirty.is_empty()) {
            // The components of the touched nodes.
            comp.clear();
            stack.clear();
            for &d in &dirty {
                if !seen_node[d as usize] {
                    seen_node[d as usize] = true;
                    stack.push(d);
                }
            }
            let mut touched: Vec<u32> = stack.clone();
            while let Some(v) = stack.pop() {
                for &fi in &at_node[v as usize] {
                    if seen_flow[fi as usize] {
                        continue;
                    }
                    seen_flow[fi as usize] = true;
                    comp.push(fi);
                    let f = &flows[fi as usize];
                    for w in [f.src, f.dst] {
                        if !seen_node[w as usize] {
                            seen_node[w as usize] = true;
                            touched.push(w);
                            stack.push(w);
                        }
                    }
                }
            }
            graph.edges.clear();
            graph.edges.extend(comp.iter().map(|&i| {
                let f = &flows[i as usize];
                Edge {
                    src: f.src,
                    dst: f.dst,
                    bytes: f.bytes,
                }
            }));
            for (&i, p) in comp.iter().zip(m.penalties(&graph)) {
                pen[i as usize] = if p.is_finite() && p > 0.0 { p } else { 1.0 };
                seen_flow[i as usize] = false;
            }
            for v in touched {
                seen_node[v as usize] = false;
            }
        }
        dirty.clear();
        let finish_in = |i: u32| remaining[i as usize] * pen[i as usize] * flows[i as usize].tref;
        let dt_finish = active
            .iter()
            .map(|&i| finish_in(i))
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
                .extend(active.iter().map(|&i| (i, pen[i as usize])));
            sim.intervals.push(Interval {
                start: t,
                end: t + dt,
                first,
                len: active.len() as u32,
            });
        }
        // Flows whose finish falls at the end of this step complete exactly then.
        let finishing = dt_finish <= dt_start;
        let t_next = t + dt;
        let mut k = 0;
        while k < active.len() {
            let i = active[k] as usize;
            let done =
                finishing && remaining[i] * pen[i] * flows[i].tref <= dt * (1.0 + 1e-12) + 1e-15;
            if done {
                end[i] = t_next;
                active.swap_remove(k);
                if k < active.len() {
                    pos[active[k] as usize] = k as u32;
                }
                pos[i] = u32::MAX;
                let f = &flows[i];
                for v in [f.src, f.dst] {
                    let list = &mut at_node[v as usize];
                    if let Some(j) = list.iter().position(|&x| x as usize == i) {
                        list.swap_remove(j);
                    }
                }
                dirty.extend([f.src, f.dst]);
            } else {
                remaining[i] -= dt / (pen[i] * flows[i].tref);
                k += 1;
            }
        }
        t = t_next;
    }
    sim.end = end;
    sim
}

/// The obviously-correct version of [`simulate`]: re-evaluates the penalties of the whole
/// graph at every step. Slow; the oracle of the tests.
pub fn simulate_reference(flows: &[SimFlow], model: Option<&dyn PenaltyModel>) -> Sim {
    let n = flows.len();
    let mut end = vec![f64::NAN; n];
    let mut remaining = vec![1.0f64; n];
    let mut active: Vec<usize> = Vec::new();
    let mut sim = Sim::default();
    let mut next = 0usize;
    let mut t = flows.first().map_or(0.0, |f| f.start);
    loop {
        while next < n && flows[next].start <= t {
            if flows[next].tref > 0.0 {
                active.push(next);
            } else {
                end[next] = flows[next].start;
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
        let graph = CommGraph {
            edges: active
                .iter()
                .map(|&i| Edge {
                    src: flows[i].src,
                    dst: flows[i].dst,
                    bytes: flows[i].bytes,
                })
                .collect(),
        };
        let pen: Vec<f64> = match model {
            Some(m) => m.penalties(&graph),
            None => vec![1.0; active.len()],
        };
        let fin: Vec<f64> = active
            .iter()
            .zip(&pen)
            .map(|(&i, p)| remaining[i] * p * flows[i].tref)
            .collect();
        let dt_finish = fin.iter().copied().fold(f64::INFINITY, f64::min);
        let dt_start = if next < n {
            flows[next].start - t
        } else {
            f64::INFINITY
        };
        let dt = dt_finish.min(dt_start).max(0.0);
        let mut still = Vec::new();
        for (k, &i) in active.iter().enumerate() {
            if dt_finish <= dt_start && fin[k] <= dt * (1.0 + 1e-12) + 1e-15 {
                end[i] = t + dt;
            } else {
                remaining[i] -= dt / (pen[k] * flows[i].tref);
                still.push(i);
            }
        }
        active = still;
        t += dt;
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
    fn component_local_evaluation_matches_the_whole_graph_reference() {
        use crate::model::{InfiniBand, MaxMinFair, Myrinet};
        // A small deterministic generator: flows on 6 nodes with random starts and sizes.
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let models: Vec<Box<dyn PenaltyModel>> = vec![
            Box::new(GigabitEthernet::default()),
            Box::new(InfiniBand::default()),
            Box::new(MaxMinFair),
            Box::new(Myrinet::default()),
        ];
        for round in 0..40 {
            let mut flows: Vec<SimFlow> = (0..30)
                .map(|_| {
                    let src = rnd(6) as u32;
                    let dst = (src + 1 + rnd(5) as u32) % 6;
                    f(
                        src,
                        dst,
                        rnd(100) as f64 * 0.05,
                        0.1 + rnd(50) as f64 * 0.02,
                    )
                })
                .collect();
            flows.sort_by(|a, b| a.start.total_cmp(&b.start));
            for m in &models {
                let fast = simulate(&flows, Some(m.as_ref()));
                let slow = simulate_reference(&flows, Some(m.as_ref()));
                for (a, b) in fast.end.iter().zip(&slow.end) {
                    assert!(
                        (a - b).abs() < 1e-9,
                        "round {round} model {}: {a} vs {b}",
                        m.name()
                    );
                }
            }
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

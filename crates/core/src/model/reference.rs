//! Slow, obviously correct versions of the penalty models: test oracles only.
//! Each follows the paper's wording literally, arc by arc, with no shared bookkeeping.

use super::{CommGraph, GigabitEthernet, InfiniBand};

/// Gigabit Ethernet, O(arcs²): every set is rebuilt for every arc.
pub fn gige(m: &GigabitEthernet, g: &CommGraph) -> Vec<f64> {
    let e = &g.edges;
    let out_deg = |n: u32| e.iter().filter(|x| x.src == n).count();
    let in_deg = |n: u32| e.iter().filter(|x| x.dst == n).count();
    e.iter()
        .map(|c| {
            let c_o: Vec<_> = e.iter().filter(|x| x.src == c.src).collect();
            let c_i: Vec<_> = e.iter().filter(|x| x.dst == c.dst).collect();
            let max_in = c_o.iter().map(|x| in_deg(x.dst)).max().unwrap_or(0);
            let max_out = c_i.iter().map(|x| out_deg(x.src)).max().unwrap_or(0);
            let card_o = c_o.iter().filter(|x| in_deg(x.dst) == max_in).count();
            let card_i = c_i.iter().filter(|x| out_deg(x.src) == max_out).count();
            let po = m.side(c_o.len(), in_deg(c.dst) == max_in, card_o, m.gamma_o);
            let pi = m.side(c_i.len(), out_deg(c.src) == max_out, card_i, m.gamma_i);
            po.max(pi)
        })
        .collect()
}

/// InfiniBand, O(arcs²), straight from the rule in docs/design.md.
pub fn infiniband(m: &InfiniBand, g: &CommGraph) -> Vec<f64> {
    let e = &g.edges;
    let in_deg = |n: u32| e.iter().filter(|x| x.dst == n).count();
    let p_out_arc = |c: &super::Edge| {
        let k = e.iter().filter(|x| x.src == c.src).count() as f64;
        if in_deg(c.dst) > 2 {
            k * m.beta_s * m.gamma_r
        } else {
            k * m.beta_s
        }
    };
    e.iter()
        .map(|c| {
            let k = e.iter().filter(|x| x.src == c.src).count();
            let p_out = if k > 1 {
                e.iter()
                    .filter(|x| x.src == c.src)
                    .map(p_out_arc)
                    .fold(f64::NEG_INFINITY, f64::max)
            } else {
                1.0
            };
            let p_in = if in_deg(c.dst) > 1 {
                let same = e
                    .iter()
                    .filter(|x| x.src == c.src && x.dst == c.dst)
                    .count();
                let mut senders: Vec<u32> =
                    e.iter().filter(|x| x.dst == c.dst).map(|x| x.src).collect();
                senders.sort_unstable();
                senders.dedup();
                same as f64 * m.beta_e * senders.len() as f64
            } else {
                1.0
            };
            p_in.max(p_out)
        })
        .collect()
}

/// Max-min fairness by the textbook water-filling loop: raise every unfrozen arc by the
/// largest common increment no port can refuse, freeze the arcs of saturated ports, repeat.
pub fn maxmin_rates(g: &CommGraph) -> Vec<f64> {
    let e = &g.edges;
    let mut rate = vec![0.0f64; e.len()];
    let mut frozen = vec![false; e.len()];
    // Ports as (is_send, node).
    let mut ports: Vec<(bool, u32)> = e
        .iter()
        .flat_map(|x| [(true, x.src), (false, x.dst)])
        .collect();
    ports.sort_unstable();
    ports.dedup();
    let uses = |a: usize, p: (bool, u32)| {
        if p.0 {
            e[a].src == p.1
        } else {
            e[a].dst == p.1
        }
    };
    while frozen.iter().any(|f| !f) {
        let mut inc = f64::INFINITY;
        for &p in &ports {
            let used: f64 = (0..e.len()).filter(|&a| uses(a, p)).map(|a| rate[a]).sum();
            let active = (0..e.len()).filter(|&a| uses(a, p) && !frozen[a]).count();
            if active > 0 {
                inc = inc.min((1.0 - used) / active as f64);
            }
        }
        for a in 0..e.len() {
            if !frozen[a] {
                rate[a] += inc;
            }
        }
        for &p in &ports {
            let used: f64 = (0..e.len()).filter(|&a| uses(a, p)).map(|a| rate[a]).sum();
            if used >= 1.0 - 1e-12 {
                for (a, f) in frozen.iter_mut().enumerate() {
                    if uses(a, p) {
                        *f = true;
                    }
                }
            }
        }
    }
    rate
}

/// Max-min fair penalties: 1 / rate.
pub fn maxmin(g: &CommGraph) -> Vec<f64> {
    maxmin_rates(g).into_iter().map(|r| 1.0 / r).collect()
}

/// The maximal non-conflicting ("send") sets of the whole graph, by trying every subset.
/// Exponential: only for graphs of at most 20 arcs (returns None above that).
pub fn myrinet_states(g: &CommGraph) -> Option<Vec<Vec<usize>>> {
    let e = &g.edges;
    let n = e.len();
    if n > 20 {
        return None;
    }
    let conflict = |a: usize, b: usize| e[a].src == e[b].src || e[a].dst == e[b].dst;
    let independent = |s: u32| {
        (0..n).all(|a| {
            (0..n).all(|b| a == b || s >> a & 1 == 0 || s >> b & 1 == 0 || !conflict(a, b))
        })
    };
    let mut states = Vec::new();
    for s in 0u32..(1u32 << n) {
        if !independent(s) {
            continue;
        }
        let maximal = (0..n).all(|a| s >> a & 1 == 1 || !independent(s | 1 << a));
        if maximal {
            states.push((0..n).filter(|&a| s >> a & 1 == 1).collect());
        }
    }
    Some(states)
}

/// Myrinet penalties from [`myrinet_states`] on the whole graph (no decomposition).
pub fn myrinet(g: &CommGraph) -> Option<Vec<f64>> {
    let states = myrinet_states(g)?;
    let e = &g.edges;
    let coef: Vec<usize> = (0..e.len())
        .map(|a| states.iter().filter(|s| s.contains(&a)).count())
        .collect();
    Some(
        (0..e.len())
            .map(|a| {
                let min = (0..e.len())
                    .filter(|&b| e[b].src == e[a].src)
                    .map(|b| coef[b])
                    .min()
                    .unwrap_or(1);
                states.len() as f64 / min as f64
            })
            .collect(),
    )
}

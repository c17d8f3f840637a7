//! Max-min fair sharing (fluid model), a baseline any network can use: each node has a send
//! port and a receive port of capacity 1 (the rate of a lone message); each arc uses its
//! source's send port and its destination's receive port; rates are the max-min fair
//! allocation found by progressive filling. Penalty = 1 / rate.

use super::{CommGraph, PenaltyModel};

/// Max-min fair sharing on per-node send and receive ports. No parameters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MaxMinFair;

impl MaxMinFair {
    /// Max-min fair rates (share of a lone message's rate), one per arc, in input order.
    ///
    /// Progressive filling: all unfrozen arcs share one rising level; the next port to
    /// saturate is the one with the smallest `(1 − frozen rate through it) / unfrozen arcs`;
    /// its unfrozen arcs freeze at that level. O(ports² + arcs).
    pub fn rates(g: &CommGraph) -> Vec<f64> {
        let d = g.dense();
        let ports = 2 * d.nodes;
        // Port of arc: send port = node, receive port = nodes + node.
        let mut arcs_of: Vec<Vec<usize>> = vec![Vec::new(); ports];
        for (i, &(s, t)) in d.arcs.iter().enumerate() {
            arcs_of[s].push(i);
            arcs_of[d.nodes + t].push(i);
        }
        let mut frozen_sum = vec![0.0f64; ports];
        let mut unfrozen: Vec<usize> = arcs_of.iter().map(Vec::len).collect();
        let mut rate: Vec<Option<f64>> = vec![None; d.arcs.len()];
        loop {
            let mut best: Option<(f64, usize)> = None;
            for p in 0..ports {
                if unfrozen[p] > 0 {
                    let level = (1.0 - frozen_sum[p]).max(0.0) / unfrozen[p] as f64;
                    if best.is_none_or(|(b, _)| level < b) {
                        best = Some((level, p));
                    }
                }
            }
            let Some((level, p)) = best else { break };
            // The port is saturated after this, so its arc list is no longer needed.
            for a in std::mem::take(&mut arcs_of[p]) {
                if rate[a].is_some() {
                    continue;
                }
                rate[a] = Some(level);
                let (s, t) = d.arcs[a];
                for q in [s, d.nodes + t] {
                    frozen_sum[q] += level;
                    unfrozen[q] -= 1;
                }
            }
        }
        rate.into_iter().map(|r| r.unwrap_or(1.0)).collect()
    }
}

impl PenaltyModel for MaxMinFair {
    fn name(&self) -> &str {
        "maxmin"
    }
    fn penalties(&self, g: &CommGraph) -> Vec<f64> {
        // Rates are ≥ 1/(largest degree) > 0, so the division is finite.
        MaxMinFair::rates(g).into_iter().map(|r| 1.0 / r).collect()
    }
}

//! InfiniBand penalty model: the paper gives measurements only (its Fig. 2); the model is
//! Vienne's (thesis, 2010), the one SimGrid implements as its IB network model, read as in
//! docs/design.md. For a node s with k > 1 outgoing arcs, each outgoing arc's `p_out = k·βs·γr` if
//! its destination has more than 2 incoming arcs, else `k·βs`, and all arcs of s take the
//! largest of those. For arc s→d with d receiving more than one arc,
//! `p_in = (arcs from s to d)·βe·(distinct nodes sending to d)`. Otherwise each side is 1.
//! `p = max(p_in, p_out)`.

use std::collections::HashMap;

use super::{CommGraph, ModelError, PenaltyModel, positive};

/// Factors βe, βs, γr. Defaults are SimGrid's `0.965;0.925;1.35`, measured on one cluster.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InfiniBand {
    pub beta_e: f64,
    pub beta_s: f64,
    pub gamma_r: f64,
}

impl Default for InfiniBand {
    fn default() -> Self {
        InfiniBand {
            beta_e: 0.965,
            beta_s: 0.925,
            gamma_r: 1.35,
        }
    }
}

impl InfiniBand {
    /// All three factors must be finite and > 0.
    pub fn new(beta_e: f64, beta_s: f64, gamma_r: f64) -> Result<Self, ModelError> {
        Ok(InfiniBand {
            beta_e: positive("beta_e", beta_e)?,
            beta_s: positive("beta_s", beta_s)?,
            gamma_r: positive("gamma_r", gamma_r)?,
        })
    }
}

impl PenaltyModel for InfiniBand {
    fn name(&self) -> &str {
        "infiniband"
    }

    /// O(arcs) with hash maps for the (s, d) multiplicities and distinct senders.
    fn penalties(&self, g: &CommGraph) -> Vec<f64> {
        let d = g.dense();
        let mut pair: HashMap<(usize, usize), usize> = HashMap::new();
        for &a in &d.arcs {
            *pair.entry(a).or_insert(0) += 1;
        }
        // Each distinct pair contributes one distinct sender to its destination.
        let mut senders = vec![0usize; d.nodes];
        for &(_, t) in pair.keys() {
            senders[t] += 1;
        }
        // Largest p_out over each node's outgoing arcs; None for nodes with k <= 1.
        let mut out_node: Vec<Option<f64>> = vec![None; d.nodes];
        for &(s, t) in &d.arcs {
            let k = d.out_deg[s];
            if k > 1 {
                let p = if d.in_deg[t] > 2 {
                    k as f64 * self.beta_s * self.gamma_r
                } else {
                    k as f64 * self.beta_s
                };
                out_node[s] = Some(out_node[s].map_or(p, |q| q.max(p)));
            }
        }
        d.arcs
            .iter()
            .map(|&(s, t)| {
                let p_in = if d.in_deg[t] > 1 {
                    pair[&(s, t)] as f64 * self.beta_e * senders[t] as f64
                } else {
                    1.0
                };
                p_in.max(out_node[s].unwrap_or(1.0))
            })
            .collect()
    }
}

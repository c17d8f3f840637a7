//! Gigabit Ethernet (TCP) penalty model of the bandwidth-sharing paper, section V-A.
//!
//! For arc c = (s→d): Δo = out-degree of s, Δi = in-degree of d. Among the arcs leaving s
//! (C_o), those whose destination has the largest in-degree form C_o^m; among the arcs
//! entering d (C_i), those whose source has the largest out-degree form C_i^m.
//! `p_o = 1` if Δo = 1, else `Δo·β·(1 + γo·(Δo − |C_o^m|))` for c ∈ C_o^m and
//! `Δo·β·(1 − γo/|C_o^m|)` otherwise; `p_i` likewise with Δi, γi and C_i^m (the paper prints
//! |C_o^m| in p_i's last branch; like docs/design.md we read it as |C_i^m|). `p = max(p_o, p_i)`.

use super::{CommGraph, ModelError, PenaltyModel, non_negative, positive};

/// Parameters β, γo, γi. Defaults are the paper's (β = 1.5/2 = 2.25/3 = 0.75 from Fig. 2,
/// γo = 0.115 and γi = 0.036 from Fig. 4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GigabitEthernet {
    pub beta: f64,
    pub gamma_o: f64,
    pub gamma_i: f64,
}

impl Default for GigabitEthernet {
    fn default() -> Self {
        GigabitEthernet {
            beta: 0.75,
            gamma_o: 0.115,
            gamma_i: 0.036,
        }
    }
}

impl GigabitEthernet {
    /// β > 0; 0 ≤ γ < 1, so the `1 − γ/|C^m|` branch stays positive.
    pub fn new(beta: f64, gamma_o: f64, gamma_i: f64) -> Result<Self, ModelError> {
        positive("beta", beta)?;
        for (n, g) in [("gamma_o", gamma_o), ("gamma_i", gamma_i)] {
            non_negative(n, g)?;
            if g >= 1.0 {
                return Err(ModelError::BadParam {
                    name: n.into(),
                    value: g,
                    why: "must be < 1",
                });
            }
        }
        Ok(GigabitEthernet {
            beta,
            gamma_o,
            gamma_i,
        })
    }

    /// One side's penalty: degree Δ, whether the arc is in C^m, |C^m|, γ.
    pub(crate) fn side(&self, delta: usize, in_max: bool, card_max: usize, gamma: f64) -> f64 {
        if delta <= 1 {
            return 1.0;
        }
        let d = delta as f64;
        let k = card_max as f64;
        if in_max {
            d * self.beta * (1.0 + gamma * (d - k))
        } else {
            d * self.beta * (1.0 - gamma / k)
        }
    }
}

impl PenaltyModel for GigabitEthernet {
    fn name(&self) -> &str {
        "gige"
    }

    /// O(arcs): two passes compute, per source, the largest destination in-degree and how
    /// many arcs reach it, and per destination the same for source out-degrees.
    fn penalties(&self, g: &CommGraph) -> Vec<f64> {
        let d = g.dense();
        let mut out_max = vec![0usize; d.nodes];
        let mut out_cnt = vec![0usize; d.nodes];
        let mut in_max = vec![0usize; d.nodes];
        let mut in_cnt = vec![0usize; d.nodes];
        for &(s, t) in &d.arcs {
            let di = d.in_deg[t];
            if di > out_max[s] {
                out_max[s] = di;
                out_cnt[s] = 0;
            }
            if di == out_max[s] {
                out_cnt[s] += 1;
            }
            let dout = d.out_deg[s];
            if dout > in_max[t] {
                in_max[t] = dout;
                in_cnt[t] = 0;
            }
            if dout == in_max[t] {
                in_cnt[t] += 1;
            }
        }
        d.arcs
            .iter()
            .map(|&(s, t)| {
                let po = self.side(
                    d.out_deg[s],
                    d.in_deg[t] == out_max[s],
                    out_cnt[s],
                    self.gamma_o,
                );
                let pi = self.side(
                    d.in_deg[t],
                    d.out_deg[s] == in_max[t],
                    in_cnt[t],
                    self.gamma_i,
                );
                po.max(pi)
            })
            .collect()
    }
}

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

    /// Graphs of up to [`SMALL`] arcs (the replay's usual intervals) by direct counting,
    /// without renumbering the nodes: the same integer degrees and counts, so the same
    /// values as [`GigabitEthernet::penalties`].
    fn penalties_into(&self, g: &CommGraph, out: &mut Vec<f64>) {
        out.clear();
        let e = &g.edges;
        if e.len() > SMALL {
            out.extend(self.penalties(g));
            return;
        }
        let mut out_deg = [0usize; SMALL];
        let mut in_deg = [0usize; SMALL];
        for (i, a) in e.iter().enumerate() {
            for b in e {
                out_deg[i] += (b.src == a.src) as usize;
                in_deg[i] += (b.dst == a.dst) as usize;
            }
        }
        for (i, a) in e.iter().enumerate() {
            // Over the arcs leaving a's source: the largest in-degree of their destinations
            // and how many reach it; over the arcs entering a's destination, likewise.
            let (mut out_max, mut out_cnt, mut in_max, mut in_cnt) = (0, 0, 0, 0);
            for (j, b) in e.iter().enumerate() {
                if b.src == a.src {
                    if in_deg[j] > out_max {
                        out_max = in_deg[j];
                        out_cnt = 0;
                    }
                    if in_deg[j] == out_max {
                        out_cnt += 1;
                    }
                }
                if b.dst == a.dst {
                    if out_deg[j] > in_max {
                        in_max = out_deg[j];
                        in_cnt = 0;
                    }
                    if out_deg[j] == in_max {
                        in_cnt += 1;
                    }
                }
            }
            let po = self.side(out_deg[i], in_deg[i] == out_max, out_cnt, self.gamma_o);
            let pi = self.side(in_deg[i], out_deg[i] == in_max, in_cnt, self.gamma_i);
            out.push(po.max(pi));
        }
    }

    /// Every degree is 1, so both sides are 1 (`side`'s first branch).
    fn disjoint_penalty(&self) -> Option<f64> {
        Some(1.0)
    }
}

/// Largest graph [`GigabitEthernet::penalties_into`] counts directly.
const SMALL: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Edge;

    #[test]
    fn small_graphs_by_counting_equal_the_general_path() {
        let m = GigabitEthernet::default();
        let mut rng = fastrand::Rng::with_seed(7);
        let mut out = Vec::new();
        for _ in 0..2000 {
            let arcs = rng.usize(0..=SMALL + 2);
            let nodes = rng.u32(2..8);
            let g = CommGraph {
                edges: (0..arcs)
                    .map(|_| {
                        let src = rng.u32(0..nodes);
                        let dst = (src + rng.u32(1..nodes)) % nodes;
                        Edge { src, dst, bytes: 1 }
                    })
                    .collect(),
            };
            m.penalties_into(&g, &mut out);
            let want = m.penalties(&g);
            assert_eq!(
                out.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                "{g:?}"
            );
        }
    }

    #[test]
    fn graphs_without_a_shared_port_get_the_disjoint_penalty() {
        let m = GigabitEthernet::default();
        let want = m.disjoint_penalty().unwrap();
        let mut rng = fastrand::Rng::with_seed(11);
        let mut out = Vec::new();
        for _ in 0..500 {
            // A permutation of the nodes without fixed points gives arcs of distinct
            // sources and distinct destinations; keep a random prefix of them.
            let nodes = rng.u32(2..40);
            let shift = rng.u32(1..nodes);
            let mut srcs: Vec<u32> = (0..nodes).collect();
            rng.shuffle(&mut srcs);
            let keep = rng.usize(0..=nodes as usize);
            let g = CommGraph {
                edges: srcs[..keep]
                    .iter()
                    .map(|&src| Edge {
                        src,
                        dst: (src + shift) % nodes,
                        bytes: 1,
                    })
                    .collect(),
            };
            m.penalties_into(&g, &mut out);
            assert_eq!(out.len(), keep);
            assert!(
                out.iter().all(|p| p.to_bits() == want.to_bits()),
                "{g:?}: {out:?}"
            );
            assert_eq!(m.penalties(&g), out);
        }
    }
}

//! LOM heterogeneous point-to-point model (Lastovetsky et al., heterogeneous-model-estimation):
//! `T_ij(M) = C_i + t_i·M + C_j + t_j·M + M/β_ij`, with per-node fixed delays `C_i` (s),
//! per-node per-byte delays `t_i` (s/byte) and per-link rates `β_ij` (bytes/s). Also the
//! paper's one-to-many (scatter, threshold `S`) and many-to-one (gather, thresholds `M1`,
//! `M2`, slope corrections `κ1`, `κ2`) estimates. Parameter estimation (roundtrips,
//! one-to-two experiments, Bai–Perron break points) belongs to calibration, not here.

use serde::{Deserialize, Serialize};

use super::{ModelError, PointToPoint, non_negative, positive};

/// LOM parameters for nodes `0..n`. `rate[i][j]` is β_ij in bytes/s (i ≠ j; the diagonal is
/// ignored). Collective thresholds are optional: absent, scatter and gather use the
/// small-message (parallel) branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lom {
    pub c: Vec<f64>,
    pub t: Vec<f64>,
    pub rate: Vec<Vec<f64>>,
    #[serde(default)]
    pub scatter_threshold: Option<f64>,
    #[serde(default)]
    pub gather_m1: Option<f64>,
    #[serde(default)]
    pub gather_m2: Option<f64>,
    #[serde(default)]
    pub kappa1: f64,
    #[serde(default)]
    pub kappa2: f64,
}

impl Lom {
    /// Builds and validates a model without collective thresholds.
    pub fn new(c: Vec<f64>, t: Vec<f64>, rate: Vec<Vec<f64>>) -> Result<Self, ModelError> {
        let l = Lom {
            c,
            t,
            rate,
            scatter_threshold: None,
            gather_m1: None,
            gather_m2: None,
            kappa1: 0.0,
            kappa2: 0.0,
        };
        l.validate()?;
        Ok(l)
    }

    /// Checks sizes (n values of C and t, an n×n rate matrix) and ranges.
    pub fn validate(&self) -> Result<(), ModelError> {
        let n = self.c.len();
        let table = |why: String| ModelError::BadTable {
            name: "lom".into(),
            why,
        };
        if n == 0 {
            return Err(table("has no nodes".into()));
        }
        if self.t.len() != n || self.rate.len() != n || self.rate.iter().any(|r| r.len() != n) {
            return Err(table(format!(
                "c has {n} nodes: t needs {n} values and rate an {n}x{n} matrix"
            )));
        }
        for i in 0..n {
            non_negative(&format!("c[{i}]"), self.c[i])?;
            non_negative(&format!("t[{i}]"), self.t[i])?;
            for j in 0..n {
                if i != j {
                    positive(&format!("rate[{i}][{j}]"), self.rate[i][j])?;
                }
            }
        }
        for (name, v) in [
            ("scatter_threshold", self.scatter_threshold),
            ("gather_m1", self.gather_m1),
            ("gather_m2", self.gather_m2),
        ] {
            if let Some(v) = v {
                non_negative(name, v)?;
            }
        }
        // Slope corrections may be negative (they correct a fit), but must be finite.
        for (name, v) in [("kappa1", self.kappa1), ("kappa2", self.kappa2)] {
            if !v.is_finite() {
                return Err(ModelError::BadParam {
                    name: name.into(),
                    value: v,
                    why: "must be finite",
                });
            }
        }
        Ok(())
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.c.len()
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len().max(1) as f64
    }

    /// (C_i, t_i), or the means over all nodes for a node the model does not know.
    fn node(&self, i: u32) -> (f64, f64) {
        match (self.c.get(i as usize), self.t.get(i as usize)) {
            (Some(&c), Some(&t)) => (c, t),
            _ => (Self::mean(&self.c), Self::mean(&self.t)),
        }
    }

    /// β_ij, or the mean off-diagonal rate for a pair the model does not know.
    fn link_rate(&self, i: u32, j: u32) -> f64 {
        let (i, j) = (i as usize, j as usize);
        let n = self.nodes();
        if i < n && j < n && i != j {
            return self.rate[i][j];
        }
        let mut sum = 0.0;
        let mut k = 0usize;
        for a in 0..n {
            for b in 0..n {
                if a != b {
                    sum += self.rate[a][b];
                    k += 1;
                }
            }
        }
        // One node has no links: any rate is a guess, so take an infinitely fast link.
        if k == 0 {
            f64::INFINITY
        } else {
            sum / k as f64
        }
    }

    /// `C_j + t_j·M + M/β_0j`: the receiver-side part of a message from `root`.
    fn leg(&self, root: u32, j: u32, m: f64) -> f64 {
        let (cj, tj) = self.node(j);
        cj + tj * m + m / self.link_rate(root, j)
    }

    /// Scatter of `m` bytes from `root` to each of `dests`: the root's `n·(C_0 + t_0·M)`
    /// plus the maximum leg if `M ≤ S` (parallel), the sum of legs if `M > S` (serialised).
    pub fn scatter(&self, root: u32, dests: &[u32], m: f64) -> f64 {
        let (c0, t0) = self.node(root);
        let base = dests.len() as f64 * (c0 + t0 * m);
        let legs = dests.iter().map(|&j| self.leg(root, j, m));
        match self.scatter_threshold {
            Some(s) if m > s => base + legs.sum::<f64>(),
            _ => base + legs.fold(0.0, f64::max),
        }
    }

    /// Gather of `m` bytes from each of `srcs` to `root`: small messages (`M < M1`) take the
    /// maximum leg plus `κ1·M`; large ones (`M > M2`) the sum of legs plus `κ2·M`. The paper
    /// only observes discrete escalation levels in between; this model returns the large
    /// message estimate there, an upper estimate.
    pub fn gather(&self, root: u32, srcs: &[u32], m: f64) -> f64 {
        let (c0, t0) = self.node(root);
        let base = srcs.len() as f64 * (c0 + t0 * m);
        let legs = srcs.iter().map(|&j| self.leg(root, j, m));
        match self.gather_m1 {
            Some(m1) if m >= m1 => base + legs.sum::<f64>() + self.kappa2 * m,
            _ => base + legs.fold(0.0, f64::max) + self.kappa1 * m,
        }
    }
}

impl PointToPoint for Lom {
    fn name(&self) -> &str {
        "lom"
    }
    /// Nodes outside `0..n` take the mean node parameters and the mean link rate.
    fn time(&self, src: u32, dst: u32, bytes: u64) -> f64 {
        let m = bytes as f64;
        let (ci, ti) = self.node(src);
        let (cj, tj) = self.node(dst);
        ci + ti * m + cj + tj * m + m / self.link_rate(src, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Lom {
        Lom::new(
            vec![1e-5, 2e-5, 3e-5],
            vec![1e-9, 2e-9, 3e-9],
            vec![
                vec![0.0, 1e8, 2e8],
                vec![1e8, 0.0, 1e8],
                vec![2e8, 1e8, 0.0],
            ],
        )
        .unwrap()
    }

    #[test]
    fn formula() {
        let l = two();
        let m = 1000.0;
        let want = 1e-5 + 1e-9 * m + 3e-5 + 3e-9 * m + m / 2e8;
        assert!((l.time(0, 2, 1000) - want).abs() < 1e-15);
        // Unknown node: means, no panic.
        assert!(l.time(0, 99, 1000).is_finite());
    }

    #[test]
    fn scatter_branches() {
        let mut l = two();
        let par = l.scatter(0, &[1, 2], 1000.0);
        l.scatter_threshold = Some(10.0);
        let ser = l.scatter(0, &[1, 2], 1000.0);
        assert!(ser > par);
    }

    #[test]
    fn bad_shapes() {
        assert!(Lom::new(vec![0.0], vec![], vec![vec![0.0]]).is_err());
        assert!(Lom::new(vec![0.0, 0.0], vec![0.0, 0.0], vec![vec![0.0, 0.0]; 2]).is_err());
    }
}

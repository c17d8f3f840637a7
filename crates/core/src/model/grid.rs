//! Two clusters joined by a wide-area backbone (alltoall-clusters-and-grids.txt): Eq. 6 for
//! the direct all-to-all and Eq. 7 for the Local Group (LG) algorithm (its Algorithm 1),
//! with the LG schedule exposed so that tests and reports can follow each message.
//!
//! Nodes are numbered `0..n1` on cluster C1 and `n1..n1+n2` on C2, with `n1 ≤ n2`.

use super::alltoall::Signature;
use super::{Hockney, ModelError};

/// Two clusters: sizes, each cluster's point-to-point model and contention signature (one
/// pair is used for both clusters, as in the paper's homogeneous Grid'5000 sites), and the
/// wide-area latency/inverse bandwidth (αw, βw).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TwoClusters {
    pub n1: u64,
    pub n2: u64,
    pub lan: Hockney,
    pub signature: Signature,
    pub wan: Hockney,
}

impl TwoClusters {
    /// Validates: `1 ≤ n1 ≤ n2`.
    pub fn new(
        n1: u64,
        n2: u64,
        lan: Hockney,
        signature: Signature,
        wan: Hockney,
    ) -> Result<Self, ModelError> {
        if n1 == 0 || n1 > n2 {
            return Err(ModelError::BadParam {
                name: "n1".into(),
                value: n1 as f64,
                why: "clusters need 1 <= n1 <= n2",
            });
        }
        super::check_procs(n1 + n2)?;
        Ok(TwoClusters {
            n1,
            n2,
            lan,
            signature,
            wan,
        })
    }

    /// T_Cn: Eq. 5 (the contention signature) on one cluster; a one-node cluster has no
    /// local exchange.
    fn local(&self, n: u64, m: u64) -> f64 {
        if n < 2 {
            0.0
        } else {
            self.signature.predict(&self.lan, n, m).unwrap_or(0.0)
        }
    }

    /// Eq. 6 (direct algorithm): `max(T_C1, T_C2) + max(n1, n2)·(αw + βw·m)`.
    pub fn eq6_direct(&self, m: u64) -> f64 {
        self.local(self.n1, m).max(self.local(self.n2, m))
            + self.n1.max(self.n2) as f64 * self.wan.time_bytes(m as f64)
    }

    /// Eq. 7 (Local Group): `max(T_C1, T_C2) + ⌈n2/n1⌉·(αw + βw·m·n1)`.
    pub fn eq7_local_group(&self, m: u64) -> f64 {
        self.local(self.n1, m).max(self.local(self.n2, m))
            + self.n2.div_ceil(self.n1) as f64 * self.wan.time_bytes(m as f64 * self.n1 as f64)
    }
}

/// Where one inter-cluster message `M(src, dst)` travels under LG: stored on `stage` in the
/// local phase, then sent from `stage` across the backbone during inter-cluster step `step`
/// (1-based) — to `dst` itself when going C2→C1, to `dst` as well when going C1→C2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LgRoute {
    pub src: u64,
    pub dst: u64,
    pub stage: u64,
    pub step: u64,
}

/// The LG inter-cluster steps: step `s` (1-based, `1..=⌈n2/n1⌉`) pairs node `i` of C1 with
/// `j = i + s·n1` of C2 when `j < n1 + n2`. The paper's Algorithm 1 loops `i` from 1, but
/// its worked example (n1 = 3: nodes 0 and 3 exchange in step 1) starts at 0; we follow the
/// example.
pub fn lg_steps(n1: u64, n2: u64) -> Vec<Vec<(u64, u64)>> {
    if n1 == 0 {
        return Vec::new();
    }
    (1..=n2.div_ceil(n1))
        .map(|s| {
            (0..n1)
                .map(|i| (i, i + s * n1))
                .filter(|&(_, j)| j < n1 + n2)
                .collect()
        })
        .collect()
}

/// The LG route of message `M(src, dst)`, or None when both ends are on the same cluster
/// (local phase only), a node is out of range, or `n1` is 0 or larger than `n2`.
///
/// C1→C2: staged on `dst mod n1`, sent in step `⌊dst/n1⌋`. C2→C1: staged on
/// `⌊src/n1⌋·n1 + dst`, sent in step `⌊src/n1⌋`. When `n2` is not a multiple of `n1`, that
/// staging node may not exist (e.g. n1 = 3, n2 = 7: `M(9, 1)` would go to node 10); the
/// paper does not say what happens then, and we keep such a message on its sender, which
/// sends it directly in the same step.
pub fn lg_route(n1: u64, n2: u64, src: u64, dst: u64) -> Option<LgRoute> {
    let total = n1.checked_add(n2)?;
    if n1 == 0 || n1 > n2 || src >= total || dst >= total {
        return None;
    }
    match (src < n1, dst < n1) {
        (true, false) => Some(LgRoute {
            src,
            dst,
            stage: dst % n1,
            step: dst / n1,
        }),
        (false, true) => {
            let stage = (src / n1) * n1 + dst;
            Some(LgRoute {
                src,
                dst,
                stage: if stage < total { stage } else { src },
                step: src / n1,
            })
        }
        _ => None,
    }
}

/// Every inter-cluster route of an LG all-to-all.
pub fn lg_schedule(n1: u64, n2: u64) -> Vec<LgRoute> {
    let total = n1.saturating_add(n2);
    let mut v = Vec::new();
    for i in 0..total {
        for j in 0..total {
            if let Some(r) = lg_route(n1, n2, i, j) {
                v.push(r);
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_pair_is_cross_cluster() {
        for s in lg_steps(3, 7) {
            for (i, j) in s {
                assert!(i < 3 && (3..10).contains(&j));
            }
        }
        // Each inter-cluster message crosses exactly once: 2·n1·n2 routes.
        assert_eq!(lg_schedule(3, 7).len(), 2 * 3 * 7);
    }
}

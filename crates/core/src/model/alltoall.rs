//! All-to-all (total exchange) models: the contention-free bounds (Proposition 1, Claim 3)
//! and the contention signature of alltoall-contention-signature.txt (γ, δ, M), plus the
//! Upper/Lower ratio model of the intra-cluster pLogP paper (its Table 3).

use serde::{Deserialize, Serialize};

use super::{Hockney, ModelError, PLogP, check_procs, non_negative};

/// Proposition 1: a total exchange of `m`-byte messages among `n` processes takes at least
/// `(n−1)·α + (n−1)·β·m` (one process must send n−1 messages through one port).
pub fn lower_bound(h: &Hockney, n: u64, m: u64) -> Result<f64, ModelError> {
    check_procs(n)?;
    let k = (n - 1) as f64;
    Ok(k * h.alpha + k * h.beta * m as f64)
}

/// Claim 3 for a general message-exchange digraph (Alltoallv): `w[i][j]` bytes from `i` to
/// `j`; an arc exists where `w[i][j] > 0`, `i ≠ j` (the diagonal is a local copy and is
/// ignored). Bound: `max(Δs, Δr)·α + max(t_s, t_r)` with Δs/Δr the largest out/in-degree and
/// t_s/t_r the largest per-process byte total sent/received, times β. The matrix must be
/// square with at least 2 processes.
// i and j index both rows and columns of `w`, which iterators would obscure.
#[allow(clippy::needless_range_loop)]
pub fn claim3_bound(h: &Hockney, w: &[Vec<u64>]) -> Result<f64, ModelError> {
    let n = w.len();
    check_procs(n as u64)?;
    if let Some((i, row)) = w.iter().enumerate().find(|(_, r)| r.len() != n) {
        return Err(ModelError::BadTable {
            name: "alltoallv bytes".into(),
            why: format!("row {i} has {} entries, expected {n}", row.len()),
        });
    }
    let (mut ds, mut dr, mut ts, mut tr) = (0usize, 0usize, 0f64, 0f64);
    for i in 0..n {
        let off = |j: &usize| *j != i;
        ds = ds.max((0..n).filter(off).filter(|&j| w[i][j] > 0).count());
        dr = dr.max((0..n).filter(off).filter(|&j| w[j][i] > 0).count());
        ts = ts.max((0..n).filter(off).map(|j| w[i][j] as f64).sum::<f64>());
        tr = tr.max((0..n).filter(off).map(|j| w[j][i] as f64).sum::<f64>());
    }
    Ok(ds.max(dr) as f64 * h.alpha + ts.max(tr) * h.beta)
}

/// A network's all-to-all contention signature: `T = (n−1)(α + m·β·γ)` if `m < M`,
/// `(n−1)(α + m·β·γ + δ)` if `m ≥ M`. `delta` in seconds, `threshold` (M) in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    pub gamma: f64,
    pub delta: f64,
    pub threshold: u64,
}

impl Signature {
    /// Any finite γ ≥ 0 and δ ≥ 0 are accepted.
    pub fn new(gamma: f64, delta: f64, threshold: u64) -> Result<Self, ModelError> {
        Ok(Signature {
            gamma: non_negative("gamma", gamma)?,
            delta: non_negative("delta", delta)?,
            threshold,
        })
    }

    /// Checks a deserialised value.
    pub fn validate(&self) -> Result<(), ModelError> {
        Signature::new(self.gamma, self.delta, self.threshold).map(|_| ())
    }

    /// Predicted all-to-all time for `n` processes and `m` bytes per message.
    pub fn predict(&self, h: &Hockney, n: u64, m: u64) -> Result<f64, ModelError> {
        check_procs(n)?;
        let mut per = h.alpha + m as f64 * h.beta * self.gamma;
        if m >= self.threshold {
            per += self.delta;
        }
        Ok((n - 1) as f64 * per)
    }

    /// Least-squares fit of γ and δ from one sample run with `n` processes: `samples` are
    /// `(m, measured seconds)`. Per message, `T/(n−1) − α = γ·(β·m) + δ·[m ≥ M]`, a linear
    /// regression without intercept. With no sample at or above `M`, δ = 0. Needs at least 2
    /// samples (the paper recommends ≥ 4); negative fitted values are clamped to 0.
    pub fn fit(
        h: &Hockney,
        n: u64,
        samples: &[(u64, f64)],
        threshold: u64,
    ) -> Result<Self, ModelError> {
        check_procs(n)?;
        if samples.len() < 2 {
            return Err(ModelError::BadTable {
                name: "alltoall samples".into(),
                why: "need at least 2 (m, seconds) samples".into(),
            });
        }
        let k = (n - 1) as f64;
        let (mut sxx, mut sxz, mut szz, mut sxy, mut szy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(m, t) in samples {
            let x = h.beta * m as f64;
            let z = if m >= threshold { 1.0 } else { 0.0 };
            let y = t / k - h.alpha;
            sxx += x * x;
            sxz += x * z;
            szz += z * z;
            sxy += x * y;
            szy += z * y;
        }
        let det = sxx * szz - sxz * sxz;
        let (gamma, delta) = if szz == 0.0 || det.abs() < 1e-300 {
            (if sxx > 0.0 { sxy / sxx } else { 0.0 }, 0.0)
        } else {
            ((sxy * szz - szy * sxz) / det, (sxx * szy - sxz * sxy) / det)
        };
        Signature::new(gamma.max(0.0), delta.max(0.0), threshold)
    }
}

/// Table 3 bounds `(upper, lower)` for `p` processes and `m` bytes:
/// Upper = `(P−1)·g(m) + (P−1)·or(m) + L`, Lower = `(P−1)·os(m) + (P−1)·or(m) + L`.
pub fn upper_lower_bounds(pl: &PLogP, p: u64, m: u64) -> Result<(f64, f64), ModelError> {
    check_procs(p)?;
    let k = (p - 1) as f64;
    let m = m as f64;
    let upper = k * pl.gap(m) + k * pl.recv_overhead(m) + pl.l;
    let lower = k * pl.send_overhead(m) + k * pl.recv_overhead(m) + pl.l;
    Ok((upper, lower))
}

/// The intra-cluster paper's prediction `T = Lower + (Upper − Lower)·γ`.
pub fn upper_lower_ratio(pl: &PLogP, p: u64, m: u64, gamma: f64) -> Result<f64, ModelError> {
    non_negative("gamma", gamma)?;
    let (u, l) = upper_lower_bounds(pl, p, m)?;
    Ok(l + (u - l) * gamma)
}

/// The signature's γ measured at each message size (`[bytes, γ]`, sizes increasing), for a
/// network where one γ does not fit every size. Measured on TCP at 100 Mbit/s among 4 hosts:
/// γ ≈ 1 below the eager limit (the exchange runs at the ports' speed) and 1.6–2.5 above it,
/// where one fitted γ (1.87) predicted hpcc's 8 KiB all-to-alls at twice their time. Between
/// two sizes γ is interpolated linearly in log m; outside, the nearest size's γ holds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GammaTable(pub Vec<(u64, f64)>);

impl GammaTable {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sizes strictly increasing, every γ finite and > 0.
    pub fn validate(&self) -> Result<(), ModelError> {
        let bad = |why: String| ModelError::BadTable {
            name: "alltoall_gamma".into(),
            why,
        };
        for w in self.0.windows(2) {
            if w[1].0 <= w[0].0 {
                return Err(bad(format!(
                    "sizes must increase ({} after {})",
                    w[1].0, w[0].0
                )));
            }
        }
        match self.0.iter().find(|&&(_, g)| !(g.is_finite() && g > 0.0)) {
            Some(&(m, g)) => Err(bad(format!(
                "gamma {g} at {m} bytes must be finite and > 0"
            ))),
            None => Ok(()),
        }
    }

    /// γ at `m` bytes; None for an empty table.
    pub fn at(&self, m: u64) -> Option<f64> {
        let t = &self.0;
        let (first, last) = (t.first()?, t.last()?);
        if m <= first.0 {
            return Some(first.1);
        }
        if m >= last.0 {
            return Some(last.1);
        }
        let k = t.partition_point(|&(b, _)| b <= m);
        let ((m0, g0), (m1, g1)) = (t[k - 1], t[k]);
        // m0 < m < m1 here, so m0 ≥ 1 and the logarithms are finite.
        let x = ((m as f64).ln() - (m0 as f64).ln()) / ((m1 as f64).ln() - (m0 as f64).ln());
        Some(g0 + (g1 - g0) * x)
    }

    /// Each size in KiB and its γ, as `calibrate` and `profile show` print them
    /// ("4 KiB 1.07, 16 KiB 1.10").
    pub fn per_size(&self) -> String {
        self.0
            .iter()
            .map(|&(m, g)| format!("{} KiB {g:.2}", m / 1024))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The γ of each sample of an all-to-all among `n` processes (`(m, seconds)`, one per
    /// size): `(T/(n−1) − α) / (β·m)`, the signature solved for γ at that size (δ = 0).
    /// Sizes of 0 bytes, and samples at or below the latency (γ ≤ 0), say nothing about γ
    /// and are left out; repeated sizes keep the first. A size that took longer than a
    /// larger one stalled (TCP waiting on a retransmission timeout in most repetitions):
    /// it is left out too and returned second, so that one stall does not become the γ of
    /// every size near it.
    pub fn from_samples(h: &Hockney, n: u64, samples: &[(u64, f64)]) -> (GammaTable, Vec<u64>) {
        let mut out: Vec<(u64, f64)> = Vec::new();
        let mut stalled = Vec::new();
        if n < 2 || h.beta.is_nan() || h.beta <= 0.0 {
            return (GammaTable(out), stalled);
        }
        let mut sorted: Vec<(u64, f64)> = samples.iter().copied().filter(|s| s.0 > 0).collect();
        sorted.sort_by_key(|s| s.0);
        sorted.dedup_by_key(|s| s.0);
        // The fastest time of any larger size, from the largest down.
        let mut faster_above = vec![f64::INFINITY; sorted.len()];
        for k in (0..sorted.len().saturating_sub(1)).rev() {
            faster_above[k] = faster_above[k + 1].min(sorted[k + 1].1);
        }
        for (&(m, t), &above) in sorted.iter().zip(&faster_above) {
            if t > above {
                stalled.push(m);
                continue;
            }
            let g = (t / (n - 1) as f64 - h.alpha) / (h.beta * m as f64);
            if g.is_finite() && g > 0.0 {
                out.push((m, g));
            }
        }
        (GammaTable(out), stalled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_parameters() {
        let h = Hockney::new(60e-6, 8e-9).unwrap();
        let truth = Signature::new(4.3628, 4.93e-3, 8192).unwrap();
        let s: Vec<(u64, f64)> = [1024u64, 4096, 8192, 65536, 262144, 1 << 20]
            .iter()
            .map(|&m| (m, truth.predict(&h, 40, m).unwrap()))
            .collect();
        let f = Signature::fit(&h, 40, &s, 8192).unwrap();
        assert!((f.gamma - truth.gamma).abs() < 1e-9);
        assert!((f.delta - truth.delta).abs() < 1e-12);
    }

    #[test]
    fn claim3_matches_prop1_on_uniform() {
        let h = Hockney::new(1e-5, 1e-9).unwrap();
        let n = 5;
        let w: Vec<Vec<u64>> = (0..n).map(|_| vec![1000; n]).collect();
        let a = claim3_bound(&h, &w).unwrap();
        let b = lower_bound(&h, n as u64, 1000).unwrap();
        assert!((a - b).abs() < 1e-15);
        assert!(claim3_bound(&h, &[vec![1, 2], vec![1]]).is_err());
    }

    #[test]
    fn gamma_table_interpolates_in_log_size_and_holds_its_ends() {
        let t = GammaTable(vec![(4096, 1.0), (65536, 3.0)]);
        assert_eq!(t.at(0), Some(1.0));
        assert_eq!(t.at(4096), Some(1.0));
        // 16384 is half-way between 4096 and 65536 in log m.
        assert!((t.at(16384).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(t.at(65536), Some(3.0));
        assert_eq!(t.at(1 << 30), Some(3.0));
        assert_eq!(GammaTable::default().at(10), None);
    }

    #[test]
    fn gamma_table_from_samples_solves_the_signature_per_size() {
        let h = Hockney {
            alpha: 1e-5,
            beta: 1e-8,
            burst: 0.0,
            burst_gamma: 0.0,
        };
        // n = 4: T = 3·(α + β·m·γ) with γ = 1 at 4 KiB and 2 at 64 KiB; a 0-byte sample
        // and one faster than the latency are left out.
        let t = |m: u64, g: f64| 3.0 * (1e-5 + 1e-8 * m as f64 * g);
        let s = [
            (65536, t(65536, 2.0)),
            (0, 3e-5),
            (4096, t(4096, 1.0)),
            (1024, 1e-6),
        ];
        let (tab, stalled) = GammaTable::from_samples(&h, 4, &s);
        assert!(stalled.is_empty());
        assert_eq!(tab.0.len(), 2);
        assert_eq!(tab.0[0].0, 4096);
        assert!((tab.0[0].1 - 1.0).abs() < 1e-9);
        assert_eq!(tab.0[1].0, 65536);
        assert!((tab.0[1].1 - 2.0).abs() < 1e-9);
        assert!(tab.validate().is_ok());
        assert!(GammaTable(vec![(2, 1.0), (1, 1.0)]).validate().is_err());
        // A size that took longer than a larger one stalled: left out, named.
        let s = [
            (16384, 0.005),
            (65536, 0.04),
            (262144, 0.28),
            (524288, 0.21),
        ];
        let (tab, stalled) = GammaTable::from_samples(&h, 4, &s);
        assert_eq!(stalled, vec![262144]);
        let sizes: Vec<u64> = tab.0.iter().map(|p| p.0).collect();
        assert_eq!(sizes, vec![16384, 65536, 524288]);
        assert!(GammaTable(vec![(1, 0.0)]).validate().is_err());
    }
}

//! Scatter strategies of the intra-cluster pLogP paper, Table 2: flat, chain, binomial.

use super::bcast::{Prediction, log2_floor_ceil};
use super::{ModelError, PLogP, check_procs};

/// One of the three scatter strategies of Table 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScatterStrategy {
    Flat,
    Chain,
    Binomial,
}

/// Every scatter strategy, in Table 2 order.
pub const SCATTER_STRATEGIES: [ScatterStrategy; 3] = [
    ScatterStrategy::Flat,
    ScatterStrategy::Chain,
    ScatterStrategy::Binomial,
];

impl ScatterStrategy {
    /// Name used by the CLI.
    pub fn name(self) -> &'static str {
        match self {
            ScatterStrategy::Flat => "flat",
            ScatterStrategy::Chain => "chain",
            ScatterStrategy::Binomial => "binomial",
        }
    }

    /// Parses a name from [`ScatterStrategy::name`].
    pub fn from_name(s: &str) -> Result<Self, ModelError> {
        SCATTER_STRATEGIES
            .iter()
            .copied()
            .find(|x| x.name() == s)
            .ok_or_else(|| ModelError::UnknownStrategy {
                op: "scatter",
                name: s.to_string(),
                known: SCATTER_STRATEGIES.map(|x| x.name()).join(", "),
            })
    }
}

/// Predicted time of `strategy` scattering `m` bytes to each of `p` processes (p ≥ 2).
/// Flat: `(P−1)·g(m) + L`; chain: `Σ_{j=1}^{P−1} g(j·m) + (P−1)·L` (each hop forwards the
/// data of all processes further down); binomial: `Σ_{j=0}^{⌈log2 P⌉−1} g(2^j·m) + ⌈log2 P⌉·L`.
pub fn predict(
    pl: &PLogP,
    strategy: ScatterStrategy,
    p: u64,
    m: u64,
) -> Result<Prediction, ModelError> {
    check_procs(p)?;
    let m = m as f64;
    let l = pl.l;
    let (_, lc) = log2_floor_ceil(p);
    let seconds = match strategy {
        ScatterStrategy::Flat => (p - 1) as f64 * pl.gap(m) + l,
        ScatterStrategy::Chain => {
            (1..p).map(|j| pl.gap(j as f64 * m)).sum::<f64>() + (p - 1) as f64 * l
        }
        ScatterStrategy::Binomial => {
            (0..lc as i32)
                .map(|j| pl.gap(2f64.powi(j) * m))
                .sum::<f64>()
                + lc * l
        }
    };
    Ok(Prediction {
        strategy: strategy.name(),
        seconds,
        segment_bytes: None,
    })
}

/// The three strategies, fastest first.
pub fn rank(pl: &PLogP, p: u64, m: u64) -> Result<Vec<Prediction>, ModelError> {
    let mut v = SCATTER_STRATEGIES
        .iter()
        .map(|&s| predict(pl, s, p, m))
        .collect::<Result<Vec<_>, _>>()?;
    v.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    Ok(v)
}

//! Broadcast strategies of the intra-cluster pLogP paper, Table 1, and their ranking.
//! Segmented strategies search the segment size over `s = m/2^i` (integer division),
//! `i = 0..⌊log2 m⌋`, with `k = ⌈m/s⌉` segments, and keep the fastest.

use serde::Serialize;

use super::{ModelError, PLogP, check_procs};

/// One of the ten broadcast strategies of Table 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BcastStrategy {
    Flat,
    FlatRendezvous,
    SegmentedFlat,
    Chain,
    ChainRendezvous,
    SegmentedChain,
    Binary,
    Binomial,
    BinomialRendezvous,
    SegmentedBinomial,
}

/// Every broadcast strategy, in Table 1 order.
pub const BCAST_STRATEGIES: [BcastStrategy; 10] = [
    BcastStrategy::Flat,
    BcastStrategy::FlatRendezvous,
    BcastStrategy::SegmentedFlat,
    BcastStrategy::Chain,
    BcastStrategy::ChainRendezvous,
    BcastStrategy::SegmentedChain,
    BcastStrategy::Binary,
    BcastStrategy::Binomial,
    BcastStrategy::BinomialRendezvous,
    BcastStrategy::SegmentedBinomial,
];

impl BcastStrategy {
    /// Kebab-case name used by the CLI and profiles.
    pub fn name(self) -> &'static str {
        match self {
            BcastStrategy::Flat => "flat",
            BcastStrategy::FlatRendezvous => "flat-rendezvous",
            BcastStrategy::SegmentedFlat => "segmented-flat",
            BcastStrategy::Chain => "chain",
            BcastStrategy::ChainRendezvous => "chain-rendezvous",
            BcastStrategy::SegmentedChain => "segmented-chain",
            BcastStrategy::Binary => "binary",
            BcastStrategy::Binomial => "binomial",
            BcastStrategy::BinomialRendezvous => "binomial-rendezvous",
            BcastStrategy::SegmentedBinomial => "segmented-binomial",
        }
    }

    /// Parses a name from [`BcastStrategy::name`].
    pub fn from_name(s: &str) -> Result<Self, ModelError> {
        BCAST_STRATEGIES
            .iter()
            .copied()
            .find(|x| x.name() == s)
            .ok_or_else(|| ModelError::UnknownStrategy {
                op: "bcast",
                name: s.to_string(),
                known: BCAST_STRATEGIES.map(|x| x.name()).join(", "),
            })
    }
}

/// A predicted collective time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub strategy: &'static str,
    pub seconds: f64,
    /// The chosen segment size, for segmented strategies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment_bytes: Option<u64>,
}

/// ⌊log2 p⌋ and ⌈log2 p⌉ for p ≥ 1.
pub(crate) fn log2_floor_ceil(p: u64) -> (f64, f64) {
    let f = 63 - p.leading_zeros() as u64;
    let c = if p.is_power_of_two() { f } else { f + 1 };
    (f as f64, c as f64)
}

/// Candidate `(s, k)` pairs: `s = m >> i`, `k = ⌈m/s⌉`. A 0-byte message is one segment.
pub(crate) fn segment_candidates(m: u64) -> Vec<(u64, u64)> {
    if m == 0 {
        return vec![(0, 1)];
    }
    let top = 63 - m.leading_zeros();
    (0..=top)
        .map(|i| {
            let s = m >> i;
            (s, m.div_ceil(s))
        })
        .collect()
}

/// Predicted time of `strategy` broadcasting `m` bytes to `p` processes (p ≥ 2).
pub fn predict(
    pl: &PLogP,
    strategy: BcastStrategy,
    p: u64,
    m: u64,
) -> Result<Prediction, ModelError> {
    check_procs(p)?;
    let g = |b: f64| pl.gap(b);
    let l = pl.l;
    let n1 = (p - 1) as f64;
    let (lf, lc) = log2_floor_ceil(p);
    let gm = g(m as f64);
    let rdv = 2.0 * g(1.0) + 3.0 * l;
    let segmented = |f: &dyn Fn(f64, f64) -> f64| {
        segment_candidates(m)
            .into_iter()
            .map(|(s, k)| (f(g(s as f64), k as f64), s))
            .fold((f64::INFINITY, 0), |a, b| if b.0 < a.0 { b } else { a })
    };
    let (seconds, seg) = match strategy {
        BcastStrategy::Flat => (n1 * gm + l, None),
        BcastStrategy::FlatRendezvous => (n1 * gm + rdv, None),
        BcastStrategy::SegmentedFlat => {
            let (t, s) = segmented(&|gs, k| n1 * (gs * k) + l);
            (t, Some(s))
        }
        BcastStrategy::Chain => (n1 * (gm + l), None),
        BcastStrategy::ChainRendezvous => (n1 * (gm + rdv), None),
        BcastStrategy::SegmentedChain => {
            let (t, s) = segmented(&|gs, k| n1 * (gs + l) + gs * (k - 1.0));
            (t, Some(s))
        }
        // Table 1 gives an upper bound for the binary tree; it is used as the prediction.
        BcastStrategy::Binary => (lc * (2.0 * gm + l), None),
        BcastStrategy::Binomial => (lf * gm + lc * l, None),
        BcastStrategy::BinomialRendezvous => (lf * gm + lc * rdv, None),
        BcastStrategy::SegmentedBinomial => {
            let (t, s) = segmented(&|gs, k| lf * gs * k + lc * l);
            (t, Some(s))
        }
    };
    Ok(Prediction {
        strategy: strategy.name(),
        seconds,
        segment_bytes: seg,
    })
}

/// All ten strategies, fastest first (ties keep Table 1 order).
pub fn rank(pl: &PLogP, p: u64, m: u64) -> Result<Vec<Prediction>, ModelError> {
    let mut v = BCAST_STRATEGIES
        .iter()
        .map(|&s| predict(pl, s, p, m))
        .collect::<Result<Vec<_>, _>>()?;
    v.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs() {
        assert_eq!(log2_floor_ceil(2), (1.0, 1.0));
        assert_eq!(log2_floor_ceil(5), (2.0, 3.0));
        assert_eq!(log2_floor_ceil(8), (3.0, 3.0));
    }

    #[test]
    fn segments() {
        assert_eq!(segment_candidates(5), vec![(5, 1), (2, 3), (1, 5)]);
        assert_eq!(segment_candidates(0), vec![(0, 1)]);
    }

    #[test]
    fn names_round_trip() {
        for s in BCAST_STRATEGIES {
            assert_eq!(BcastStrategy::from_name(s.name()).unwrap(), s);
        }
        assert!(BcastStrategy::from_name("star").is_err());
    }
}

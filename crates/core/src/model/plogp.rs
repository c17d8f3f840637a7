//! pLogP point-to-point model (Kielmann et al., as used by the intra-cluster collectives
//! paper): latency `L` and the gap `g(m)`, send overhead `os(m)` and receive overhead `or(m)`
//! as piecewise-linear functions of the message size taken from calibration tables.
//! A message costs `T = L + g(m)`.

use serde::{Deserialize, Serialize};

use super::{Hockney, ModelError, PointToPoint, non_negative};

/// A function of the message size given by `(bytes, seconds)` points with strictly increasing
/// sizes. Between points it interpolates linearly; below the first point it takes the first
/// value (calibrations start at 0 or 1 byte, so this is the small-message plateau); above the
/// last point it extends the last segment's slope, because gaps of large messages grow
/// linearly with size. A one-point table is a constant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PiecewiseLinear {
    pub points: Vec<(f64, f64)>,
}

impl PiecewiseLinear {
    /// Builds and validates a table named `name` (the name appears in errors).
    pub fn new(name: &str, points: Vec<(f64, f64)>) -> Result<Self, ModelError> {
        let p = PiecewiseLinear { points };
        p.validate(name)?;
        Ok(p)
    }

    /// A straight line `a + b·m` as a two-point table.
    pub fn linear(a: f64, b: f64) -> Self {
        PiecewiseLinear {
            points: vec![(0.0, a), (1.0e6, a + b * 1.0e6)],
        }
    }

    /// Checks: non-empty, finite, sizes ≥ 0 and strictly increasing, values ≥ 0.
    pub fn validate(&self, name: &str) -> Result<(), ModelError> {
        let bad = |why: String| ModelError::BadTable {
            name: name.to_string(),
            why,
        };
        if self.points.is_empty() {
            return Err(bad("has no points".into()));
        }
        for (i, &(m, t)) in self.points.iter().enumerate() {
            if !(m.is_finite() && m >= 0.0 && t.is_finite() && t >= 0.0) {
                return Err(bad(format!(
                    "point #{i} ({m}, {t}) must have finite, non-negative size and time"
                )));
            }
            if i > 0 && m <= self.points[i - 1].0 {
                return Err(bad(format!("point #{i}: sizes must strictly increase")));
            }
        }
        Ok(())
    }

    /// Value at `bytes` (never negative: extrapolation is clamped at 0).
    pub fn eval(&self, bytes: f64) -> f64 {
        let p = &self.points;
        let Some(&(m0, t0)) = p.first() else {
            return 0.0;
        };
        if p.len() == 1 || bytes <= m0 {
            return t0;
        }
        // First index whose size is ≥ bytes; the segment ending there contains `bytes`.
        let i = p.partition_point(|&(m, _)| m < bytes).clamp(1, p.len() - 1);
        let (ma, ta) = p[i - 1];
        let (mb, tb) = p[i];
        (ta + (tb - ta) * (bytes - ma) / (mb - ma)).max(0.0)
    }
}

/// pLogP parameters. `l` in seconds; tables in seconds per message of the given size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PLogP {
    pub l: f64,
    pub g: PiecewiseLinear,
    pub os: PiecewiseLinear,
    pub or: PiecewiseLinear,
}

impl PLogP {
    /// Builds and validates.
    pub fn new(
        l: f64,
        g: PiecewiseLinear,
        os: PiecewiseLinear,
        or: PiecewiseLinear,
    ) -> Result<Self, ModelError> {
        let p = PLogP { l, g, os, or };
        p.validate()?;
        Ok(p)
    }

    /// Checks a deserialised value.
    pub fn validate(&self) -> Result<(), ModelError> {
        non_negative("L", self.l)?;
        self.g.validate("g")?;
        self.os.validate("os")?;
        self.or.validate("or")
    }

    /// A pLogP view of a Hockney model, for profiles calibrated without pLogP tables. It keeps
    /// `L + g(m) = α + β·m` and splits the latency so every message, and so every segment,
    /// pays a gap: `L = α/2`, `g(m) = α/2 + β·m`. The overheads are a stated guess, half of
    /// the gap on each side: `os(m) = or(m) = α/4 + β·m/2`, which keeps the Upper bound of
    /// the all-to-all Table 3 above its Lower bound.
    pub fn from_hockney(h: &Hockney) -> Self {
        PLogP {
            l: h.alpha / 2.0,
            g: PiecewiseLinear::linear(h.alpha / 2.0, h.beta),
            os: PiecewiseLinear::linear(h.alpha / 4.0, h.beta / 2.0),
            or: PiecewiseLinear::linear(h.alpha / 4.0, h.beta / 2.0),
        }
    }

    /// g(m).
    pub fn gap(&self, bytes: f64) -> f64 {
        self.g.eval(bytes)
    }

    /// Bytes a message puts on the wire besides its payload in a stream of back-to-back
    /// messages: where the stream's pace is the wire's, `g(m) = β_g·(m + h)`, so `h` from
    /// the gap table's first two sizes above 0 (`β_g` their slope), at most what the empty
    /// message's gap is worth at `β_g`. 0 without two such sizes, or where their gaps are
    /// the sender's rather than the wire's (1 Gbit/s on the emulated cluster: `g(1 KiB)`
    /// no more than `g(0)`). On its 100 Mbit/s ports 20-31 bytes: Open MPI's headers, TCP's
    /// shared by the messages Linux corks into one segment while earlier ones wait in the
    /// shaper's queue.
    pub fn header_bytes(&self) -> f64 {
        let mut above = self.g.points.iter().filter(|p| p.0 > 0.0);
        let (Some(&(m1, g1)), Some(&(m2, g2))) = (above.next(), above.next()) else {
            return 0.0;
        };
        let slope = (g2 - g1) / (m2 - m1);
        if !(slope > 0.0 && slope.is_finite()) {
            return 0.0;
        }
        (g1 / slope - m1).clamp(0.0, (self.gap(0.0) / slope).max(0.0))
    }

    /// os(m).
    pub fn send_overhead(&self, bytes: f64) -> f64 {
        self.os.eval(bytes)
    }
    /// or(m).
    pub fn recv_overhead(&self, bytes: f64) -> f64 {
        self.or.eval(bytes)
    }
}

impl PointToPoint for PLogP {
    fn name(&self) -> &str {
        "plogp"
    }
    fn time(&self, _src: u32, _dst: u32, bytes: u64) -> f64 {
        self.l + self.gap(bytes as f64)
    }
}

#[cfg(test)]
mod tests {
    /// Header bytes from two calibrations' gap tables (`pmpi-predict calibrate` on the
    /// emulated cluster, 2026-11-28): 100 Mbit/s ports, the stream at the wire's pace; 1
    /// Gbit/s, 1 KiB at the sender's pace (no more than the empty message); a table made
    /// from Hockney's line (no measurement): none.
    #[test]
    fn header_bytes_come_from_the_wire_paced_gaps() {
        let plogp = |g: Vec<(f64, f64)>| {
            let mut p = PLogP::from_hockney(&Hockney::new(1e-5, 8e-8).unwrap());
            p.g = PiecewiseLinear { points: g };
            p
        };
        let at_100m = plogp(vec![
            (0.0, 8.83e-6),
            (1024.0, 87.76e-6),
            (16384.0, 1376.14e-6),
            (65536.0, 5494.78e-6),
        ]);
        let h = at_100m.header_bytes();
        assert!((h - 22.3).abs() < 0.5, "{h}");
        let at_1g = plogp(vec![
            (0.0, 7.83e-6),
            (1024.0, 8.45e-6),
            (16384.0, 139.72e-6),
        ]);
        assert_eq!(at_1g.header_bytes(), 0.0);
        let none = PLogP::from_hockney(&Hockney::new(1e-5, 8e-8).unwrap());
        assert_eq!(none.header_bytes(), 0.0);
        // Never more than the empty message's gap is worth.
        let capped = plogp(vec![(0.0, 1e-6), (1024.0, 200e-6), (2048.0, 280e-6)]);
        // (Their slope: 78.125 ns a byte.)
        assert!((capped.header_bytes() - 12.8).abs() < 1e-9);
    }

    use super::*;

    #[test]
    fn interpolation_and_extrapolation() {
        let g = PiecewiseLinear::new("g", vec![(1.0, 1.0), (3.0, 2.0), (5.0, 4.0)]).unwrap();
        assert_eq!(g.eval(0.0), 1.0);
        assert_eq!(g.eval(2.0), 1.5);
        assert_eq!(g.eval(3.0), 2.0);
        assert_eq!(g.eval(4.0), 3.0);
        assert_eq!(g.eval(7.0), 6.0);
        let one = PiecewiseLinear::new("g", vec![(0.0, 2.0)]).unwrap();
        assert_eq!(one.eval(1e9), 2.0);
    }

    #[test]
    fn bad_tables() {
        assert!(PiecewiseLinear::new("g", vec![]).is_err());
        assert!(PiecewiseLinear::new("g", vec![(2.0, 1.0), (1.0, 1.0)]).is_err());
        assert!(PiecewiseLinear::new("g", vec![(0.0, -1.0)]).is_err());
    }

    #[test]
    fn time_is_l_plus_g() {
        let p = PLogP::new(
            1e-5,
            PiecewiseLinear::linear(1e-6, 1e-8),
            PiecewiseLinear::linear(0.0, 0.0),
            PiecewiseLinear::linear(0.0, 0.0),
        )
        .unwrap();
        assert!((p.time(0, 1, 1000) - (1e-5 + 1e-6 + 1e-5)).abs() < 1e-15);
    }
}

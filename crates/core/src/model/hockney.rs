//! Hockney point-to-point model: `T = α + β·m`.

use serde::{Deserialize, Serialize};

use super::{ModelError, PointToPoint, non_negative};

/// Latency `alpha` (s) and inverse bandwidth `beta` (s/byte).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hockney {
    pub alpha: f64,
    pub beta: f64,
}

impl Hockney {
    /// Builds the model; both parameters must be finite and ≥ 0.
    pub fn new(alpha: f64, beta: f64) -> Result<Self, ModelError> {
        Ok(Hockney {
            alpha: non_negative("alpha", alpha)?,
            beta: non_negative("beta", beta)?,
        })
    }

    /// Checks a deserialised value (serde bypasses [`Hockney::new`]).
    pub fn validate(&self) -> Result<(), ModelError> {
        Hockney::new(self.alpha, self.beta).map(|_| ())
    }

    /// `α + β·m`.
    pub fn time_bytes(&self, bytes: f64) -> f64 {
        self.alpha + self.beta * bytes
    }
}

impl PointToPoint for Hockney {
    fn name(&self) -> &str {
        "hockney"
    }
    fn time(&self, _src: u32, _dst: u32, bytes: u64) -> f64 {
        self.time_bytes(bytes as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear() {
        let h = Hockney::new(50e-6, 8e-8).unwrap();
        assert!((h.time(0, 1, 1_000_000) - (50e-6 + 0.08)).abs() < 1e-12);
        assert!(Hockney::new(-1.0, 0.0).is_err());
        assert!(Hockney::new(0.0, f64::NAN).is_err());
    }
}

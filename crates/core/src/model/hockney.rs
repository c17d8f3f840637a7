//! Hockney point-to-point model: `T = α + β·m`.

use serde::{Deserialize, Serialize};

use super::{ModelError, PointToPoint, non_negative};

/// Latency `alpha` (s) and inverse bandwidth `beta` (s/byte); `burst` (bytes) is the
/// token bucket of a shaped link: a message that fits in it crosses in the latency alone
/// (`calibrate` measures it from the ping-pong's small messages; 0 on a link that
/// serializes every byte at its rate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hockney {
    pub alpha: f64,
    pub beta: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub burst: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Hockney {
    /// Builds the model; both parameters must be finite and ≥ 0.
    pub fn new(alpha: f64, beta: f64) -> Result<Self, ModelError> {
        Ok(Hockney {
            alpha: non_negative("alpha", alpha)?,
            beta: non_negative("beta", beta)?,
            burst: 0.0,
        })
    }

    /// The same with a burst allowance of `bytes` (finite, ≥ 0).
    pub fn with_burst(self, bytes: f64) -> Result<Self, ModelError> {
        Ok(Hockney {
            burst: non_negative("burst", bytes)?,
            ..self
        })
    }

    /// Checks a deserialised value (serde bypasses [`Hockney::new`]).
    pub fn validate(&self) -> Result<(), ModelError> {
        Hockney::new(self.alpha, self.beta)?
            .with_burst(self.burst)
            .map(|_| ())
    }

    /// `α + β·m`: the time per message where messages follow each other (a collective's
    /// steps, a saturated port), which leaves no burst allowance.
    pub fn time_bytes(&self, bytes: f64) -> f64 {
        self.alpha + self.beta * bytes
    }

    /// A message alone on its link, its buckets full: `α` if it fits in the burst
    /// allowance, else `α + β·m`. A tbf shaper lets the first `burst` bytes of a larger
    /// message through at once too, but the applications measured did not gain that:
    /// hpcc's and LAMMPS's messages of 4 KiB to 2 MiB on the emulated cluster took
    /// `α + β·m`, their per-rank error 7.4 and 4.6 % against 11.7 and 6.3 % with the
    /// bucket's bytes taken off (2 ranks, 2 hosts, 100 Mbit/s; docs/accuracy.md).
    pub fn lone_bytes(&self, bytes: f64) -> f64 {
        if bytes <= self.burst {
            self.alpha
        } else {
            self.time_bytes(bytes)
        }
    }
}

impl Hockney {
    /// Whether a message of `bytes` crosses in the latency: it fits in the burst
    /// allowance, or its bytes take no longer than the latency.
    pub fn in_latency(&self, bytes: f64) -> bool {
        bytes <= self.burst || self.beta * bytes <= self.alpha
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
    fn a_message_within_the_burst_pays_the_latency_alone() {
        let h = Hockney::new(10e-6, 1e-7)
            .unwrap()
            .with_burst(2000.0)
            .unwrap();
        assert_eq!(h.lone_bytes(0.0), 10e-6);
        assert_eq!(h.lone_bytes(2000.0), 10e-6);
        assert_eq!(h.lone_bytes(2001.0), h.time_bytes(2001.0));
        assert!(h.in_latency(2000.0) && !h.in_latency(2001.0));
        // Without a bucket: while the bytes take no longer than the latency (100 B here).
        let plain = Hockney::new(10e-6, 1e-7).unwrap();
        assert!(plain.in_latency(99.0) && !plain.in_latency(101.0));
        assert!(h.with_burst(-1.0).is_err());
        let json = serde_json::to_string(&Hockney::new(1.0, 2.0).unwrap()).unwrap();
        assert!(!json.contains("burst"), "{json}");
        let back: Hockney = serde_json::from_str(&serde_json::to_string(&h).unwrap()).unwrap();
        assert_eq!(back, h);
    }

    #[test]
    fn linear() {
        let h = Hockney::new(50e-6, 8e-8).unwrap();
        assert!((h.time(0, 1, 1_000_000) - (50e-6 + 0.08)).abs() < 1e-12);
        assert!(Hockney::new(-1.0, 0.0).is_err());
        assert!(Hockney::new(0.0, f64::NAN).is_err());
    }
}

//! Hockney point-to-point model: `T = α + β·m`.

use serde::{Deserialize, Serialize};

use super::{ModelError, PointToPoint, non_negative};

/// Latency `alpha` (s) and inverse bandwidth `beta` (s/byte); `burst` (bytes) is the
/// token bucket of a shaped link: a message that fits in it crosses in the latency alone
/// (`calibrate` measures it from the ping-pong's small messages; 0 on a link that
/// serializes every byte at its rate). `burst_gamma` (s/byte) is what the bucket's bytes
/// cost when a larger message takes them: they pass the shaper at once, but at the
/// machine's own pace (copies, TCP, the shaper's work), the slope of the ping-pong's
/// messages within the bucket (0: unknown, taken as free).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hockney {
    pub alpha: f64,
    pub beta: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub burst: f64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub burst_gamma: f64,
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
            burst_gamma: 0.0,
        })
    }

    /// The same with a burst allowance of `bytes` (finite, ≥ 0).
    pub fn with_burst(self, bytes: f64) -> Result<Self, ModelError> {
        Ok(Hockney {
            burst: non_negative("burst", bytes)?,
            ..self
        })
    }

    /// The same with the bucket's bytes costing `gamma` s/byte (finite, ≥ 0).
    pub fn with_burst_gamma(self, gamma: f64) -> Result<Self, ModelError> {
        Ok(Hockney {
            burst_gamma: non_negative("burst_gamma", gamma)?,
            ..self
        })
    }

    /// Checks a deserialised value (serde bypasses [`Hockney::new`]).
    pub fn validate(&self) -> Result<(), ModelError> {
        Hockney::new(self.alpha, self.beta)?
            .with_burst(self.burst)?
            .with_burst_gamma(self.burst_gamma)
            .map(|_| ())
    }

    /// `α + β·m`: the time per message where messages follow each other (a collective's
    /// steps, a saturated port), which leaves no burst allowance.
    pub fn time_bytes(&self, bytes: f64) -> f64 {
        self.alpha + self.beta * bytes
    }

    /// A message alone on its link, its buckets full: `α` if it fits in the burst
    /// allowance, else `α + γ·b + β·(m − b)`, as a tbf shaper passes it: the bucket's
    /// `b` bytes at once (at the machine's pace `γ`, [`Hockney::burst_gamma`]), the rest at
    /// the link's rate. On the emulated cluster's 100 Mbit/s ports (a 3,028 B bucket) a
    /// message of 3,136, 4,096 and 8,192 bytes sent after an idle 300 µs took 55, 133 and
    /// 475 µs one way (medians of 3,000), where this gives 64, 144 and 487 µs and `α + β·m`
    /// 273, 353 and 696 (`bench/bucket.c`; docs/accuracy.md, twenty-seventh session).
    pub fn lone_bytes(&self, bytes: f64) -> f64 {
        if bytes <= self.burst {
            self.alpha
        } else {
            self.alpha + self.burst_gamma * self.burst + self.beta * (bytes - self.burst)
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
        // Beyond it the bucket's bytes pass at once (free without a γ), the rest at β.
        assert!((h.lone_bytes(3000.0) - (10e-6 + 1000.0 * 1e-7)).abs() < 1e-15);
        let g = h.with_burst_gamma(1e-8).unwrap();
        assert!((g.lone_bytes(3000.0) - (10e-6 + 2000.0 * 1e-8 + 1000.0 * 1e-7)).abs() < 1e-15);
        assert_eq!(g.lone_bytes(2000.0), 10e-6);
        assert!(h.with_burst_gamma(-1.0).is_err());
        assert!(h.in_latency(2000.0) && !h.in_latency(2001.0));
        // Without a bucket: while the bytes take no longer than the latency (100 B here).
        let plain = Hockney::new(10e-6, 1e-7).unwrap();
        assert!(plain.in_latency(99.0) && !plain.in_latency(101.0));
        assert!(h.with_burst(-1.0).is_err());
        let json = serde_json::to_string(&Hockney::new(1.0, 2.0).unwrap()).unwrap();
        assert!(!json.contains("burst"), "{json}");
        assert!(!json.contains("burst_gamma"), "{json}");
        let back: Hockney = serde_json::from_str(&serde_json::to_string(&g).unwrap()).unwrap();
        assert_eq!(back, g);
    }

    #[test]
    fn linear() {
        let h = Hockney::new(50e-6, 8e-8).unwrap();
        assert!((h.time(0, 1, 1_000_000) - (50e-6 + 0.08)).abs() < 1e-12);
        assert!(Hockney::new(-1.0, 0.0).is_err());
        assert!(Hockney::new(0.0, f64::NAN).is_err());
    }
}

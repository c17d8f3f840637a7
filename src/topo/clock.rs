//! Timestamps and clock offsets between ranks.

use crate::trace::ClockSample;

/// Monotonic time in ns (vDSO clock_gettime: no system call on Linux).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One ping-pong seen from rank 0: it sent at `t0` (rank-0 clock), the peer stamped
/// `tr` (peer clock) on receipt, and rank 0 got the answer at `t1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PingPong {
    pub t0: u64,
    pub tr: u64,
    pub t1: u64,
}

/// Offset of the peer's clock from rank 0's (`rank0 = peer + offset`), from the
/// ping-pong with the smallest round trip, where the midpoint assumption errs least.
pub fn estimate_offset(samples: &[PingPong]) -> Option<ClockSample> {
    let best = samples
        .iter()
        .filter(|s| s.t1 >= s.t0)
        .min_by_key(|s| s.t1 - s.t0)?;
    let mid = best.t0 as i128 + ((best.t1 - best.t0) / 2) as i128;
    Some(ClockSample {
        at_ns: best.tr,
        offset_ns: (mid - best.tr as i128) as i64,
        rtt_ns: best.t1 - best.t0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_rtt_sample_wins() {
        // Peer clock runs 1000 ns behind rank 0. The slow sample would say otherwise.
        let s = [
            PingPong {
                t0: 10_000,
                tr: 9_000 + 500,
                t1: 11_000 + 4_000,
            },
            PingPong {
                t0: 20_000,
                tr: 19_000 + 100,
                t1: 20_200,
            },
        ];
        let c = estimate_offset(&s).unwrap();
        assert_eq!(c.rtt_ns, 200);
        assert_eq!(c.offset_ns, 1000);
        assert_eq!(c.at_ns, 19_100);
        assert!(estimate_offset(&[]).is_none());
    }

    #[test]
    fn clock_is_monotonic() {
        let a = now_ns();
        let b = now_ns();
        assert!(b >= a);
    }
}

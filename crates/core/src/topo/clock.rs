//! Timestamps and clock offsets between ranks.
//!
//! Timestamps are nanoseconds of CLOCK_MONOTONIC. Where the CPU's time-stamp counter is
//! invariant (x86-64 `constant_tsc` and `nonstop_tsc`), [`use_tsc`] switches [`now_ns`] to
//! reading it and converting with a frequency measured against CLOCK_MONOTONIC: the same
//! time scale at a fraction of the cost of clock_gettime. [`check_tsc`] measures at
//! finalize how far the two drifted apart.

use crate::trace::ClockSample;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// CLOCK_MONOTONIC in ns (vDSO clock_gettime: no system call on Linux).
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

static TSC_ON: AtomicBool = AtomicBool::new(false);
/// Counter and CLOCK_MONOTONIC read together, and ns per tick in 32.32 fixed point.
static TSC_BASE: AtomicU64 = AtomicU64::new(0);
static NS_BASE: AtomicU64 = AtomicU64::new(0);
static NS_PER_TICK_32: AtomicU64 = AtomicU64::new(0);

#[cfg(target_arch = "x86_64")]
#[inline]
fn ticks() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64; it only reads the counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn ticks() -> u64 {
    0
}

/// Monotonic time in ns: the time-stamp counter converted, once [`use_tsc`] succeeded,
/// else CLOCK_MONOTONIC.
#[inline]
pub fn now_ns() -> u64 {
    if TSC_ON.load(Ordering::Relaxed) {
        let d = ticks().saturating_sub(TSC_BASE.load(Ordering::Relaxed));
        let ns = (d as u128 * NS_PER_TICK_32.load(Ordering::Relaxed) as u128) >> 32;
        NS_BASE.load(Ordering::Relaxed) + ns as u64
    } else {
        monotonic_ns()
    }
}

/// Whether the CPU's time-stamp counter runs at a constant rate through frequency and
/// sleep states, from `/proc/cpuinfo`'s flags.
pub fn tsc_is_invariant(cpuinfo: &str) -> bool {
    cfg!(target_arch = "x86_64")
        && cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.contains(&"constant_tsc") && f.contains(&"nonstop_tsc")
            })
}

/// Counter and CLOCK_MONOTONIC read as close together as possible: the pair with the
/// shortest bracketing of a few tries.
fn paired() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..5 {
        let a = ticks();
        let ns = monotonic_ns();
        let b = ticks();
        if b.wrapping_sub(a) < best.0 {
            best = (b.wrapping_sub(a), a / 2 + b / 2, ns);
        }
    }
    (best.1, best.2)
}

/// Switches [`now_ns`] to the time-stamp counter when it is invariant, after measuring its
/// frequency against CLOCK_MONOTONIC over `window`. Returns the clock in use: "tsc" or
/// "clock_gettime". Call before any timestamp is taken.
pub fn use_tsc(window: std::time::Duration) -> &'static str {
    let invariant = std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| tsc_is_invariant(&c));
    if !invariant {
        return "clock_gettime";
    }
    let (t0, n0) = paired();
    std::thread::sleep(window);
    let (t1, n1) = paired();
    if t1 <= t0 || n1 <= n0 {
        return "clock_gettime";
    }
    let per = ((n1 - n0) as u128) << 32;
    let mult = (per / (t1 - t0) as u128) as u64;
    if mult == 0 {
        return "clock_gettime";
    }
    TSC_BASE.store(t1, Ordering::Relaxed);
    NS_BASE.store(n1, Ordering::Relaxed);
    NS_PER_TICK_32.store(mult, Ordering::Relaxed);
    TSC_ON.store(true, Ordering::Release);
    "tsc"
}

/// The counter's time minus CLOCK_MONOTONIC now, in ns (0 when the counter is not in use):
/// how far the converted counter drifted since [`use_tsc`].
pub fn check_tsc() -> i64 {
    if !TSC_ON.load(Ordering::Relaxed) {
        return 0;
    }
    let a = now_ns();
    let m = monotonic_ns();
    let b = now_ns();
    (a / 2 + b / 2) as i64 - m as i64
}

/// Local wall-clock time as `YYYYmmdd-HHMMSS`, for naming output directories.
pub fn local_stamp() -> String {
    let mut t: libc::time_t = 0;
    // SAFETY: libc time and localtime_r write into locals we own.
    let tm = unsafe {
        libc::time(&mut t);
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        tm
    };
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
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
    fn invariant_tsc_needs_both_flags() {
        let both = "processor : 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\n";
        let one = "flags\t\t: fpu tsc constant_tsc\n";
        assert_eq!(tsc_is_invariant(both), cfg!(target_arch = "x86_64"));
        assert!(!tsc_is_invariant(one));
        assert!(!tsc_is_invariant(""));
    }

    #[test]
    fn the_counter_keeps_monotonic_time() {
        // Process-wide switch: harmless for other tests (same time scale).
        let src = use_tsc(std::time::Duration::from_millis(20));
        let before = now_ns();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let after = now_ns();
        let drift = check_tsc();
        assert!(after > before);
        if src == "tsc" {
            // Converted counter and CLOCK_MONOTONIC agree within 1 ms after 70 ms (a wrong
            // conversion is off by far more).
            assert!(drift.abs() < 1_000_000, "drift {drift} ns");
        } else {
            assert_eq!(drift, 0);
        }
    }

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

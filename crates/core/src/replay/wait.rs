//! Wait states: the part of a call spent blocked on another rank, by kind (the catalogue in
//! `docs/engine.md`). The same rules give the measured waits (on clock-corrected recorded
//! times) and the predicted ones (on the replayed times).
#![forbid(unsafe_code)]

use std::fmt;
use std::str::FromStr;

/// Why a call waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum WaitKind {
    /// No wait.
    #[default]
    None,
    /// A receive (or its completion) entered before the matching send was posted.
    LateSender,
    /// A rendezvous or synchronous send entered before its receive was posted.
    LateReceiver,
    /// MPI_Barrier: waiting for the last rank to enter.
    Barrier,
    /// All-to-all-like collectives: waiting for the last rank to enter.
    NxN,
    /// Bcast, Scatter(v) on a non-root rank: the root entered later.
    LateBroadcast,
    /// Reduce, Gather(v) on the root: the others entered later.
    EarlyReduce,
}

impl WaitKind {
    /// Every kind, in report order.
    pub const ALL: [WaitKind; 7] = [
        WaitKind::None,
        WaitKind::LateSender,
        WaitKind::LateReceiver,
        WaitKind::Barrier,
        WaitKind::NxN,
        WaitKind::LateBroadcast,
        WaitKind::EarlyReduce,
    ];

    /// The name used in `calls.csv` and the reports.
    pub fn name(self) -> &'static str {
        match self {
            WaitKind::None => "",
            WaitKind::LateSender => "late-sender",
            WaitKind::LateReceiver => "late-receiver",
            WaitKind::Barrier => "wait-at-barrier",
            WaitKind::NxN => "wait-at-nxn",
            WaitKind::LateBroadcast => "late-broadcast",
            WaitKind::EarlyReduce => "early-reduce",
        }
    }
}

impl fmt::Display for WaitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WaitKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        WaitKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown wait kind '{s}'"))
    }
}

/// A wait: its kind, seconds, and the WORLD rank waited for (0 s, kind `None` and rank
/// -1 when the call did not wait).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wait {
    pub kind: WaitKind,
    pub seconds: f64,
    pub on: i32,
}

impl Default for Wait {
    fn default() -> Wait {
        Wait {
            kind: WaitKind::None,
            seconds: 0.0,
            on: -1,
        }
    }
}

impl Wait {
    /// `max(0, partner − own)` bounded by the call's duration, of kind `kind`, on rank
    /// `on`, the partner.
    pub fn of(kind: WaitKind, own_enter: f64, partner: f64, duration: f64, on: i32) -> Wait {
        let s = (partner - own_enter).min(duration).max(0.0);
        if s > 0.0 && s.is_finite() {
            Wait {
                kind,
                seconds: s,
                on,
            }
        } else {
            Wait::default()
        }
    }

    /// The longer of two waits.
    pub fn max(self, other: Wait) -> Wait {
        if other.seconds > self.seconds {
            other
        } else {
            self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in WaitKind::ALL {
            assert_eq!(k.name().parse::<WaitKind>().unwrap(), k);
        }
        assert!("late".parse::<WaitKind>().is_err());
    }

    #[test]
    fn wait_is_bounded_by_the_call() {
        assert_eq!(
            Wait::of(WaitKind::LateSender, 1.0, 3.0, 1.5, 4),
            Wait {
                kind: WaitKind::LateSender,
                seconds: 1.5,
                on: 4
            }
        );
        assert_eq!(
            Wait::of(WaitKind::LateSender, 3.0, 1.0, 1.5, 4),
            Wait::default()
        );
    }
}

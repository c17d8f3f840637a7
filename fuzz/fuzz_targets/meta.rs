//! `RankMeta` from JSON, then `to_global_ns` (clock offset interpolation) on timestamps
//! derived from the input: no panic, including no arithmetic-overflow panic in debug
//! builds. The same arithmetic is also driven directly from the raw bytes (two clock
//! samples and a timestamp), so extreme values are reached without well-formed JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmpi_core::trace::{ClockSample, RankMeta};

fn u64_at(data: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    for (k, x) in b.iter_mut().enumerate() {
        *x = data.get(i * 8 + k).copied().unwrap_or(0);
    }
    u64::from_le_bytes(b)
}

fn exercise(m: &RankMeta, extra: &[u64]) {
    let mut ts = vec![0, 1, u64::MAX, i64::MAX as u64, (i64::MAX as u64) + 1, m.init_ns];
    for c in [m.clock_init, m.clock_finalize].into_iter().flatten() {
        ts.extend([c.at_ns, c.at_ns.wrapping_add(1), c.at_ns.wrapping_sub(1)]);
    }
    ts.extend_from_slice(extra);
    for t in ts {
        let _ = m.to_global_ns(t);
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = serde_json::from_slice::<RankMeta>(data) {
        exercise(&m, &[u64_at(data, 0), data.len() as u64]);
    }
    // Raw-bytes view: which samples are present, then the samples and a timestamp.
    let flags = data.first().copied().unwrap_or(0);
    let rest = data.get(1..).unwrap_or(&[]);
    let sample = |k: usize| ClockSample {
        at_ns: u64_at(rest, 3 * k),
        offset_ns: u64_at(rest, 3 * k + 1) as i64,
        rtt_ns: u64_at(rest, 3 * k + 2),
    };
    let m = RankMeta {
        clock_init: (flags & 1 != 0).then(|| sample(0)),
        clock_finalize: (flags & 2 != 0).then(|| sample(1)),
        ..Default::default()
    };
    exercise(&m, &[u64_at(rest, 6), u64_at(rest, 7)]);
});

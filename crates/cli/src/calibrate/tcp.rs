//! What TCP did during the calibration: each node's lowest rank reads the node's counters
//! (`trace::netstat`) at the start and the end, and rank 0 says how many retransmission
//! timeouts fired on which node. Each one held a measurement's message for 200 ms or more
//! (the penalty schemes' stalled repetitions, the all-to-all's slow runs).

use super::bench::Ctx;
use crate::trace::netstat::NetCounters;
use serde_json::{Value, json};

const WIRE: usize = 4 * 8;

fn encode(d: Option<&NetCounters>) -> [u8; WIRE] {
    let mut b = [0u8; WIRE];
    if let Some(d) = d {
        for (k, x) in [1, d.timeouts, d.retrans_segs, d.out_segs]
            .iter()
            .enumerate()
        {
            b[8 * k..8 * k + 8].copy_from_slice(&x.to_le_bytes());
        }
    }
    b
}

fn decode(b: &[u8]) -> Option<(u64, u64, u64)> {
    let x = |k: usize| u64::from_le_bytes(b[8 * k..8 * k + 8].try_into().unwrap_or_default());
    (b.len() >= WIRE && x(0) == 1).then(|| (x(1), x(2), x(3)))
}

/// The counters of this rank's node now (None where they cannot be read).
pub fn start() -> Option<NetCounters> {
    crate::trace::netstat::read_counters(0)
}

/// Collective over the world: every node leader's counters since `before` gathered; on
/// rank 0, the raw section (`{node: {timeouts, segments_retransmitted, segments_sent}}`)
/// and the line to print, None elsewhere or where no leader could read its counters.
pub fn finish(ctx: &Ctx, before: Option<NetCounters>) -> Option<(Value, String)> {
    let mpi = ctx.mpi;
    let mine = before.and_then(|b| start().map(|a| a.since(&b)));
    let all = mpi.allgather_bytes(&encode(mine.as_ref()), mpi.world, mpi.size as usize);
    if mpi.rank != 0 {
        return None;
    }
    let mut raw = serde_json::Map::new();
    let mut hit = Vec::new();
    let mut total = 0;
    for (k, &leader) in ctx.leaders.iter().enumerate() {
        let Some((timeouts, retrans, sent)) =
            all.chunks(WIRE).nth(leader as usize).and_then(decode)
        else {
            continue;
        };
        let node = &ctx.nodes[k];
        raw.insert(
            node.clone(),
            json!({"timeouts": timeouts, "segments_retransmitted": retrans, "segments_sent": sent}),
        );
        total += timeouts;
        if timeouts > 0 {
            hit.push(format!("{node} {timeouts}"));
        }
    }
    if raw.is_empty() {
        return None;
    }
    Some((Value::Object(raw), line(total, &hit)))
}

fn line(total: u64, hit: &[String]) -> String {
    if total == 0 {
        "no TCP retransmission timeout during the calibration".into()
    } else {
        format!(
            "TCP retransmission timeouts during the calibration: {total} ({}); each held a \
             measurement's message for 200 ms or more (per node in raw.tcp)",
            hit.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_crosses_the_wire_and_none_is_told_apart() {
        let d = NetCounters {
            timeouts: 3,
            retrans_segs: 40,
            out_segs: 5000,
            ..Default::default()
        };
        assert_eq!(decode(&encode(Some(&d))), Some((3, 40, 5000)));
        assert_eq!(decode(&encode(None)), None);
        assert_eq!(decode(&[1, 0, 0]), None);
        assert!(line(0, &[]).starts_with("no TCP"));
        let l = line(3, &["h1 2".into(), "h3 1".into()]);
        assert!(l.contains(": 3 (h1 2, h3 1)"), "{l}");
    }
}

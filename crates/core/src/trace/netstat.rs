//! What the transport did during a run, from the counters of a node's network stack
//! (`/proc/net/snmp`, `/proc/net/netstat`, `/proc/net/dev`, per network namespace): TCP
//! segments retransmitted and retransmission timeouts, and the bytes and drops of the
//! node's interfaces. No model predicts a retransmission timeout (at least 200 ms on
//! Linux, against microseconds to milliseconds for a message), and one explains a transfer
//! far longer than predicted: the report shows them beside the predictions.
//!
//! The layer reads them at init and finalize on every rank (`RankMeta::net_init`,
//! `net_end`), and the lowest rank of each node also every `PMPI_PREDICT_NET_MS` into
//! `net-RANK.csv` ([`SAMPLE_HEADER`]), which places the timeouts in time.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A reading of a node's counters; `at_ns` is the reading rank's clock (as its records').
/// Counters only grow; a difference of two readings is [`NetCounters::since`].
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct NetCounters {
    pub at_ns: u64,
    /// TCP segments sent (`Tcp: OutSegs`), retransmissions included.
    pub out_segs: u64,
    /// TCP segments retransmitted (`Tcp: RetransSegs`).
    pub retrans_segs: u64,
    /// Retransmission timeouts that fired (`TcpExt: TCPTimeouts`): each held a
    /// connection's data for the timeout.
    pub timeouts: u64,
    /// Fast retransmits (`TcpExt: TCPFastRetrans`): losses repaired without a timeout.
    pub fast_retrans: u64,
    /// Tail-loss probes (`TcpExt: TCPLossProbes`).
    pub loss_probes: u64,
    /// Bytes and drops of the node's interfaces, loopback excepted (`/proc/net/dev`).
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    /// InfiniBand ports of the node (`/sys/class/infiniband/*/ports/*`), 0 where none:
    /// their counters summed. MPI over InfiniBand does not use TCP; there the ports say
    /// what the fabric did.
    #[serde(default)]
    pub ib_ports: u64,
    /// Bytes the ports sent and received (`port_xmit_data`, `port_rcv_data`: in 4-byte
    /// words, here times 4).
    #[serde(default)]
    pub ib_xmit_bytes: u64,
    #[serde(default)]
    pub ib_rcv_bytes: u64,
    /// Ticks in which a port had data to send and could not (`port_xmit_wait`): the
    /// fabric's congestion, as the ports count it.
    #[serde(default)]
    pub ib_xmit_wait: u64,
    /// Packets a port discarded (`port_xmit_discards`).
    #[serde(default)]
    pub ib_xmit_discards: u64,
}

/// Values a sample has ([`SAMPLE_HEADER`]).
const FIELDS: usize = 15;

impl NetCounters {
    /// What happened from `earlier` to this reading; `at_ns` is the time between them.
    /// Saturates at 0 (a counter that went back: another namespace, a wrapped counter).
    pub fn since(&self, earlier: &NetCounters) -> NetCounters {
        NetCounters {
            at_ns: self.at_ns.saturating_sub(earlier.at_ns),
            out_segs: self.out_segs.saturating_sub(earlier.out_segs),
            retrans_segs: self.retrans_segs.saturating_sub(earlier.retrans_segs),
            timeouts: self.timeouts.saturating_sub(earlier.timeouts),
            fast_retrans: self.fast_retrans.saturating_sub(earlier.fast_retrans),
            loss_probes: self.loss_probes.saturating_sub(earlier.loss_probes),
            rx_bytes: self.rx_bytes.saturating_sub(earlier.rx_bytes),
            tx_bytes: self.tx_bytes.saturating_sub(earlier.tx_bytes),
            rx_dropped: self.rx_dropped.saturating_sub(earlier.rx_dropped),
            tx_dropped: self.tx_dropped.saturating_sub(earlier.tx_dropped),
            ib_ports: self.ib_ports,
            ib_xmit_bytes: self.ib_xmit_bytes.saturating_sub(earlier.ib_xmit_bytes),
            ib_rcv_bytes: self.ib_rcv_bytes.saturating_sub(earlier.ib_rcv_bytes),
            ib_xmit_wait: self.ib_xmit_wait.saturating_sub(earlier.ib_xmit_wait),
            ib_xmit_discards: self
                .ib_xmit_discards
                .saturating_sub(earlier.ib_xmit_discards),
        }
    }

    /// The counters as `net-RANK.csv` lists them, [`SAMPLE_HEADER`]'s order.
    fn fields(&self) -> [u64; FIELDS] {
        [
            self.at_ns,
            self.out_segs,
            self.retrans_segs,
            self.timeouts,
            self.fast_retrans,
            self.loss_probes,
            self.rx_bytes,
            self.tx_bytes,
            self.rx_dropped,
            self.tx_dropped,
            self.ib_ports,
            self.ib_xmit_bytes,
            self.ib_rcv_bytes,
            self.ib_xmit_wait,
            self.ib_xmit_discards,
        ]
    }

    fn from_fields(v: &[u64; FIELDS]) -> NetCounters {
        NetCounters {
            at_ns: v[0],
            out_segs: v[1],
            retrans_segs: v[2],
            timeouts: v[3],
            fast_retrans: v[4],
            loss_probes: v[5],
            rx_bytes: v[6],
            tx_bytes: v[7],
            rx_dropped: v[8],
            tx_dropped: v[9],
            ib_ports: v[10],
            ib_xmit_bytes: v[11],
            ib_rcv_bytes: v[12],
            ib_xmit_wait: v[13],
            ib_xmit_discards: v[14],
        }
    }
}

/// The first line of `net-RANK.csv`.
pub const SAMPLE_HEADER: &str = "t_ns,out_segs,retrans_segs,timeouts,fast_retrans,loss_probes,rx_bytes,tx_bytes,rx_dropped,tx_dropped,ib_ports,ib_xmit_bytes,ib_rcv_bytes,ib_xmit_wait,ib_xmit_discards";

/// The samples file of `rank` in `dir`.
pub fn samples_path(dir: &Path, rank: i32) -> PathBuf {
    dir.join(format!("net-{rank:05}.csv"))
}

/// One line of `net-RANK.csv`, newline included.
pub fn sample_line(c: &NetCounters) -> String {
    let f = c.fields();
    let mut s = String::with_capacity(96);
    for (i, v) in f.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s += &v.to_string();
    }
    s.push('\n');
    s
}

/// The samples of a `net-RANK.csv` text, in file order; a line that does not hold
/// [`SAMPLE_HEADER`]'s numbers (the header, a last line cut short by a killed job) is
/// skipped.
pub fn parse_samples(text: &str) -> Vec<NetCounters> {
    text.lines()
        .filter_map(|l| {
            let mut v = [0u64; FIELDS];
            let mut n = 0;
            for x in l.split(',') {
                if n == FIELDS {
                    return None;
                }
                v[n] = x.trim().parse().ok()?;
                n += 1;
            }
            (n == FIELDS).then(|| NetCounters::from_fields(&v))
        })
        .collect()
}

/// The samples of `rank` in `dir`; empty where there are none.
pub fn read_samples(dir: &Path, rank: i32) -> Vec<NetCounters> {
    std::fs::read_to_string(samples_path(dir, rank))
        .map(|t| parse_samples(&t))
        .unwrap_or_default()
}

/// The named values of a `/proc/net/snmp` or `/proc/net/netstat` section: a line of names
/// after `prefix` (`"Tcp:"`) and the next line with the same prefix holding the values.
fn section<'a>(text: &'a str, prefix: &str) -> Vec<(&'a str, i64)> {
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return Vec::new();
    };
    names
        .split_whitespace()
        .skip(1)
        .zip(values.split_whitespace().skip(1))
        .filter_map(|(n, v)| Some((n, v.parse().ok()?)))
        .collect()
}

fn value(sec: &[(&str, i64)], name: &str) -> Option<u64> {
    sec.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| (*v).max(0) as u64)
}

/// Byte and drop totals of `/proc/net/dev`'s interfaces, loopback excepted:
/// (rx_bytes, tx_bytes, rx_dropped, tx_dropped).
fn interfaces(text: &str) -> (u64, u64, u64, u64) {
    let mut t = (0, 0, 0, 0);
    for l in text.lines() {
        let Some((name, rest)) = l.split_once(':') else {
            continue;
        };
        if name.trim() == "lo" {
            continue;
        }
        let v: Vec<u64> = rest
            .split_whitespace()
            .map_while(|x| x.parse().ok())
            .collect();
        // receive: bytes packets errs drop fifo frame compressed multicast; transmit:
        // bytes packets errs drop ...
        if v.len() >= 12 {
            t.0 += v[0];
            t.1 += v[8];
            t.2 += v[3];
            t.3 += v[11];
        }
    }
    t
}

/// The InfiniBand ports under `root` (`/sys/class/infiniband`: `DEV/ports/N/counters/`),
/// their counters summed: (ports, xmit bytes, rcv bytes, xmit wait, xmit discards). A
/// counter that cannot be read counts 0.
pub fn read_infiniband(root: &Path) -> (u64, u64, u64, u64, u64) {
    let mut t = (0, 0, 0, 0, 0);
    let Ok(devs) = std::fs::read_dir(root) else {
        return t;
    };
    for dev in devs.flatten() {
        let Ok(ports) = std::fs::read_dir(dev.path().join("ports")) else {
            continue;
        };
        for port in ports.flatten() {
            let c = port.path().join("counters");
            if !c.is_dir() {
                continue;
            }
            let get = |name: &str| -> u64 {
                std::fs::read_to_string(c.join(name))
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0)
            };
            t.0 += 1;
            t.1 += get("port_xmit_data").saturating_mul(4);
            t.2 += get("port_rcv_data").saturating_mul(4);
            t.3 += get("port_xmit_wait");
            t.4 += get("port_xmit_discards");
        }
    }
    t
}

/// Counters from the texts of `/proc/net/snmp`, `/proc/net/netstat` and `/proc/net/dev`;
/// None where the first holds no TCP section (no TCP/IP stack to read).
pub fn parse_counters(snmp: &str, netstat: &str, dev: &str, at_ns: u64) -> Option<NetCounters> {
    let tcp = section(snmp, "Tcp:");
    let out_segs = value(&tcp, "OutSegs")?;
    let retrans_segs = value(&tcp, "RetransSegs")?;
    let ext = section(netstat, "TcpExt:");
    let (rx_bytes, tx_bytes, rx_dropped, tx_dropped) = interfaces(dev);
    Some(NetCounters {
        at_ns,
        out_segs,
        retrans_segs,
        timeouts: value(&ext, "TCPTimeouts").unwrap_or(0),
        fast_retrans: value(&ext, "TCPFastRetrans").unwrap_or(0),
        loss_probes: value(&ext, "TCPLossProbes").unwrap_or(0),
        rx_bytes,
        tx_bytes,
        rx_dropped,
        tx_dropped,
        ..Default::default()
    })
}

/// This process's network namespace's counters now, and the machine's InfiniBand ports',
/// stamped `at_ns`; None where `/proc/net` cannot be read.
pub fn read_counters(at_ns: u64) -> Option<NetCounters> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let netstat = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
    let dev = std::fs::read_to_string("/proc/net/dev").unwrap_or_default();
    let mut c = parse_counters(&snmp, &netstat, &dev, at_ns)?;
    let ib = read_infiniband(Path::new("/sys/class/infiniband"));
    (
        c.ib_ports,
        c.ib_xmit_bytes,
        c.ib_rcv_bytes,
        c.ib_xmit_wait,
        c.ib_xmit_discards,
    ) = ib;
    Some(c)
}

/// Where a node's retransmission timeouts fired: between two samples (local times of the
/// sampling rank), and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Episode {
    pub from_ns: u64,
    pub to_ns: u64,
    pub timeouts: u64,
    pub retrans_segs: u64,
}

/// At most this many windows are kept ([`add_window`]): the totals count every timeout.
pub const MAX_EPISODES: usize = 4096;

/// The windows in which `samples` saw timeouts fire, neighbouring windows merged.
pub fn timeout_episodes(samples: &[NetCounters]) -> Vec<Episode> {
    let mut out = Vec::new();
    for w in samples.windows(2) {
        add_window(&mut out, &w[0], &w[1]);
    }
    out
}

/// Adds to `episodes` the window from sample `a` to the next one, `b`, if timeouts fired
/// in it: merged with the last window where that one ended at `a`, left out past
/// [`MAX_EPISODES`].
pub fn add_window(episodes: &mut Vec<Episode>, a: &NetCounters, b: &NetCounters) {
    let d = b.since(a);
    if d.timeouts == 0 {
        return;
    }
    let full = episodes.len() >= MAX_EPISODES;
    match episodes.last_mut() {
        Some(e) if e.to_ns == a.at_ns => {
            e.to_ns = b.at_ns;
            e.timeouts += d.timeouts;
            e.retrans_segs += d.retrans_segs;
        }
        _ if full => {}
        _ => episodes.push(Episode {
            from_ns: a.at_ns,
            to_ns: b.at_ns,
            timeouts: d.timeouts,
            retrans_segs: d.retrans_segs,
        }),
    }
}

/// What a node's transport did during the run, from the lowest of its ranks that read
/// the counters at both ends.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeNet {
    pub node: String,
    /// The rank whose readings these are.
    pub rank: i32,
    /// Seconds between its two readings.
    pub seconds: f64,
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    pub retransmission_timeouts: u64,
    pub fast_retransmits: u64,
    pub loss_probes: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    /// The node's InfiniBand ports over the run, where it has some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub infiniband: Option<Infiniband>,
    /// Where the timeouts fired, on the run's clock (seconds from its origin), where the
    /// node's counters were sampled during the run.
    pub timeouts_at: Vec<TimeoutsAt>,
}

/// What a node's InfiniBand ports counted during the run ([`NetCounters`]'s `ib_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Infiniband {
    pub ports: u64,
    pub xmit_bytes: u64,
    pub rcv_bytes: u64,
    /// Ticks in which a port had data to send and could not: congestion.
    pub xmit_wait: u64,
    pub xmit_discards: u64,
}

/// A window in which a node's retransmission timeouts fired ([`Episode`]) on the run's
/// clock.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TimeoutsAt {
    pub from_s: f64,
    pub to_s: f64,
    pub timeouts: u64,
    pub segments_retransmitted: u64,
}

/// Every node's [`NodeNet`], by node name; `origin` is the run's
/// ([`crate::trace::RunTrace::origin_ns`]). Nodes none of whose ranks read the counters
/// at both ends (older recordings, no `/proc/net`) are left out.
pub fn nodes<'a>(
    metas: impl IntoIterator<Item = &'a crate::trace::RankMeta>,
    origin: i64,
) -> Vec<NodeNet> {
    type Read<'m> = (&'m crate::trace::RankMeta, NetCounters, NetCounters);
    let mut by_node: std::collections::BTreeMap<&str, Read> = Default::default();
    for m in metas {
        let (Some(a), Some(b)) = (m.net_init, m.net_end) else {
            continue;
        };
        let e = by_node.entry(m.node.as_str()).or_insert((m, a, b));
        // The sampling rank has the timeouts' times; else the lowest.
        if (m.net_samples, -m.rank) > (e.0.net_samples, -e.0.rank) {
            *e = (m, a, b);
        }
    }
    by_node
        .into_iter()
        .map(|(node, (m, a, b))| {
            let d = b.since(&a);
            let clock = m.clock();
            NodeNet {
                node: node.to_string(),
                rank: m.rank,
                seconds: d.at_ns as f64 * 1e-9,
                segments_sent: d.out_segs,
                segments_retransmitted: d.retrans_segs,
                retransmission_timeouts: d.timeouts,
                fast_retransmits: d.fast_retrans,
                loss_probes: d.loss_probes,
                rx_bytes: d.rx_bytes,
                tx_bytes: d.tx_bytes,
                rx_dropped: d.rx_dropped,
                tx_dropped: d.tx_dropped,
                infiniband: (d.ib_ports > 0).then_some(Infiniband {
                    ports: d.ib_ports,
                    xmit_bytes: d.ib_xmit_bytes,
                    rcv_bytes: d.ib_rcv_bytes,
                    xmit_wait: d.ib_xmit_wait,
                    xmit_discards: d.ib_xmit_discards,
                }),
                timeouts_at: m
                    .net_timeouts
                    .iter()
                    .map(|e| TimeoutsAt {
                        from_s: clock.seconds_since(e.from_ns, origin),
                        to_s: clock.seconds_since(e.to_ns, origin),
                        timeouts: e.timeouts,
                        segments_retransmitted: e.retrans_segs,
                    })
                    .collect(),
            }
        })
        .collect()
}

/// One line for stderr and the reports where the transport hit retransmission timeouts
/// during the run; None where it did not.
pub fn timeouts_note(nodes: &[NodeNet]) -> Option<String> {
    let hit: Vec<&NodeNet> = nodes
        .iter()
        .filter(|n| n.retransmission_timeouts > 0)
        .collect();
    if hit.is_empty() {
        return None;
    }
    let total: u64 = hit.iter().map(|n| n.retransmission_timeouts).sum();
    let each: Vec<String> = hit
        .iter()
        .map(|n| {
            let at: Vec<String> = n
                .timeouts_at
                .iter()
                .take(3)
                .map(|t| format!("{:.2}-{:.2} s", t.from_s, t.to_s))
                .collect();
            let more = n.timeouts_at.len().saturating_sub(3);
            format!(
                "{} {}{}",
                n.node,
                n.retransmission_timeouts,
                if at.is_empty() {
                    String::new()
                } else {
                    format!(
                        " at {}{}",
                        at.join(", "),
                        if more > 0 {
                            format!(" and {more} more")
                        } else {
                            String::new()
                        }
                    )
                }
            )
        })
        .collect();
    Some(format!(
        "TCP retransmission timeouts during the run: {total} ({}). Each held a connection's \
         data for at least the timeout (200 ms on Linux), which no model predicts: the calls \
         whose messages it held took longer than predicted (losses at a congested port; see \
         summary.json's network section)",
        each.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL InReceives\nIp: 1 64 11538\n\
        Icmp: InMsgs InErrors\nIcmp: 0 0\n\
        Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n\
        Tcp: 1 200 120000 -1 32 2 10 2 0 11493 6677 41 0 28 0\n\
        Udp: InDatagrams NoPorts\nUdp: 5 0\n";
    const NETSTAT: &str = "TcpExt: SyncookiesSent TW TCPLossProbes TCPTimeouts TCPFastRetrans\n\
        TcpExt: 0 11 7 3 12\n\
        IpExt: InNoRoutes InOctets\nIpExt: 0 606167384\n";
    const DEV: &str = "Inter-|   Receive                                                |  Transmit\n \
        face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
        lo: 5000 50 0 0 0 0 0 0 5000 50 0 0 0 0 0 0\n  \
        eth0: 1000 10 0 2 0 0 0 0 3000 30 0 4 0 0 0 0\n  \
        eth1: 100 1 0 1 0 0 0 0 300 3 0 0 0 0 0 0\n";

    #[test]
    fn counters_are_read_by_name_from_the_three_files() {
        let c = parse_counters(SNMP, NETSTAT, DEV, 99).unwrap();
        assert_eq!(c.at_ns, 99);
        assert_eq!((c.out_segs, c.retrans_segs), (6677, 41));
        assert_eq!((c.timeouts, c.fast_retrans, c.loss_probes), (3, 12, 7));
        // Loopback left out; eth0 and eth1 summed.
        assert_eq!(
            (c.rx_bytes, c.tx_bytes, c.rx_dropped, c.tx_dropped),
            (1100, 3300, 3, 4)
        );
        // No TCP section: nothing to say.
        assert_eq!(parse_counters("Ip: a\nIp: 1\n", NETSTAT, DEV, 0), None);
        // No TcpExt section (an old kernel): the TCP counters still.
        let c = parse_counters(SNMP, "", "", 0).unwrap();
        assert_eq!((c.retrans_segs, c.timeouts, c.rx_bytes), (41, 0, 0));
    }

    #[test]
    fn this_machine_has_counters_that_only_grow() {
        let Some(a) = read_counters(1) else {
            eprintln!("skipped: /proc/net/snmp cannot be read here");
            return;
        };
        let b = read_counters(2).unwrap();
        assert!(b.out_segs >= a.out_segs && b.retrans_segs >= a.retrans_segs);
        assert_eq!(b.since(&a).at_ns, 1);
    }

    #[test]
    fn samples_round_trip_and_a_cut_line_is_skipped() {
        let a = parse_counters(SNMP, NETSTAT, DEV, 10).unwrap();
        let b = NetCounters {
            at_ns: 20,
            timeouts: 5,
            ..a
        };
        let mut text = format!("{SAMPLE_HEADER}\n");
        text += &sample_line(&a);
        text += &sample_line(&b);
        text += "30,1,2";
        assert_eq!(parse_samples(&text), vec![a, b]);
        assert_eq!(SAMPLE_HEADER.split(',').count(), FIELDS);
        assert!(parse_samples("1,2,3,4,5,6,7,8,9,10\n").is_empty());
        assert!(parse_samples(&format!("{}\n", ["1"; FIELDS + 1].join(","))).is_empty());
        assert_eq!(
            parse_samples(&format!("{}\n", ["7"; FIELDS].join(","))).len(),
            1
        );
    }

    #[test]
    fn episodes_are_the_windows_where_timeouts_fired_merged_when_adjacent() {
        let s = |at_ns, timeouts, retrans_segs| NetCounters {
            at_ns,
            timeouts,
            retrans_segs,
            ..Default::default()
        };
        let samples = [
            s(0, 0, 0),
            s(100, 0, 5),
            s(200, 1, 9),
            s(300, 3, 12),
            s(400, 3, 12),
            s(500, 4, 20),
        ];
        assert_eq!(
            timeout_episodes(&samples),
            vec![
                Episode {
                    from_ns: 100,
                    to_ns: 300,
                    timeouts: 3,
                    retrans_segs: 7
                },
                Episode {
                    from_ns: 400,
                    to_ns: 500,
                    timeouts: 1,
                    retrans_segs: 8
                },
            ]
        );
        assert!(timeout_episodes(&samples[..2]).is_empty());
        assert!(timeout_episodes(&[]).is_empty());
    }

    #[test]
    fn a_counter_that_went_back_counts_nothing() {
        let a = NetCounters {
            at_ns: 5,
            retrans_segs: 10,
            ..Default::default()
        };
        let b = NetCounters {
            at_ns: 9,
            retrans_segs: 4,
            ..Default::default()
        };
        assert_eq!(b.since(&a).retrans_segs, 0);
        assert_eq!(a.since(&b).at_ns, 0);
    }

    #[test]
    fn a_node_is_told_by_its_sampling_rank_or_else_its_lowest() {
        use crate::trace::{ClockSample, RankMeta};
        let c = |at_ns, retrans_segs, timeouts| NetCounters {
            at_ns,
            out_segs: 1000 + retrans_segs,
            retrans_segs,
            timeouts,
            ..Default::default()
        };
        let m = |rank: i32, node: &str, sampled: bool, end: Option<NetCounters>| RankMeta {
            rank,
            node: node.into(),
            net_init: Some(c(1_000_000_000, 10, 1)),
            net_end: end,
            net_samples: sampled,
            net_timeouts: if sampled {
                vec![Episode {
                    from_ns: 1_500_000_000,
                    to_ns: 1_700_000_000,
                    timeouts: 2,
                    retrans_segs: 6,
                }]
            } else {
                Vec::new()
            },
            // Rank 1's clock runs 0.25 s behind rank 0's.
            clock_init: Some(ClockSample {
                at_ns: 1_000_000_000,
                offset_ns: 250_000_000 * rank as i64,
                rtt_ns: 10,
            }),
            ..Default::default()
        };
        let metas = [
            m(0, "a", false, Some(c(3_000_000_000, 10, 1))),
            m(3, "b", false, Some(c(3_000_000_000, 40, 3))),
            m(1, "b", true, Some(c(3_000_000_000, 30, 4))),
            // No reading at the end (killed): not told.
            m(2, "c", true, None),
        ];
        let n = nodes(&metas, 1_000_000_000);
        assert_eq!(n.len(), 2, "{n:?}");
        assert_eq!((n[0].node.as_str(), n[0].rank), ("a", 0));
        assert_eq!(
            (n[0].segments_retransmitted, n[0].retransmission_timeouts),
            (0, 0)
        );
        assert_eq!((n[1].node.as_str(), n[1].rank), ("b", 1));
        assert_eq!(
            (n[1].segments_retransmitted, n[1].retransmission_timeouts),
            (20, 3)
        );
        assert_eq!(n[1].seconds, 2.0);
        assert_eq!(n[1].timeouts_at.len(), 1);
        let t = n[1].timeouts_at[0];
        assert!(
            (t.from_s - 0.75).abs() < 1e-9 && (t.to_s - 0.95).abs() < 1e-9,
            "{t:?}"
        );
        assert_eq!((t.timeouts, t.segments_retransmitted), (2, 6));
        let note = timeouts_note(&n).unwrap();
        assert!(note.contains(": 3 (b 3 at 0.75-0.95 s)"), "{note}");
        assert_eq!(timeouts_note(&n[..1]), None);
    }

    #[test]
    fn infiniband_ports_are_summed_in_bytes_and_a_node_without_them_has_none() {
        let root = std::env::temp_dir().join(format!("pmpi-ib-{}", std::process::id()));
        let port = |dev: &str, p: u32, vals: &[(&str, &str)]| {
            let c = root
                .join(dev)
                .join("ports")
                .join(p.to_string())
                .join("counters");
            std::fs::create_dir_all(&c).unwrap();
            for (k, v) in vals {
                std::fs::write(c.join(k), format!("{v}\n")).unwrap();
            }
        };
        port(
            "mlx5_0",
            1,
            &[
                ("port_xmit_data", "100"),
                ("port_rcv_data", "50"),
                ("port_xmit_wait", "7"),
                ("port_xmit_discards", "1"),
            ],
        );
        // A second device, its wait counter unreadable: counts 0.
        port(
            "mlx5_1",
            1,
            &[("port_xmit_data", "10"), ("port_xmit_wait", "many")],
        );
        // A port directory without counters is no port.
        std::fs::create_dir_all(root.join("mlx5_1/ports/2")).unwrap();
        assert_eq!(read_infiniband(&root), (2, 440, 200, 7, 1));
        assert_eq!(read_infiniband(&root.join("none")), (0, 0, 0, 0, 0));
        std::fs::remove_dir_all(&root).unwrap();

        let at = |ib_xmit_wait, ib_ports| NetCounters {
            ib_ports,
            ib_xmit_wait,
            ..Default::default()
        };
        let m = |init, end| crate::trace::RankMeta {
            node: "n".into(),
            net_init: Some(init),
            net_end: Some(end),
            ..Default::default()
        };
        let n = nodes(&[m(at(5, 2), at(12, 2))], 0);
        assert_eq!(
            n[0].infiniband.map(|i| (i.ports, i.xmit_wait)),
            Some((2, 7))
        );
        assert_eq!(nodes(&[m(at(0, 0), at(0, 0))], 0)[0].infiniband, None);
    }
}

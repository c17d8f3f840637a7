//! The nodes' TCP and interface counters (`trace::netstat`): every rank reads them at init
//! and at the end, the lowest rank of each node samples them into `net-RANK.csv`, and the
//! report's `network` section tells each node's retransmissions and timeouts. On one node
//! (4 ranks); on the emulated cluster (root, network namespaces), an incast into
//! a port with a small queue, whose losses TCP must repair.

mod common;

use common::emu::{emu, skip_reason, up_with};
use pmpi_core::trace::{self, netstat};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// `exe` on 4 ranks of this host under the layer, recording into `dir/name` with
/// `PMPI_PREDICT_NET_MS=net_ms`.
fn record(dir: &Path, exe: &Path, name: &str, net_ms: &str) -> PathBuf {
    let out = dir.join(name);
    let out_s = out.display().to_string();
    let o = common::mpirun(
        4,
        exe,
        &[],
        Some(&[
            ("PMPI_PREDICT_OUT", &out_s),
            ("PMPI_PREDICT_QUIET", "1"),
            ("PMPI_PREDICT_NET_MS", net_ms),
        ]),
        dir,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn the_lowest_rank_of_a_node_samples_its_counters_and_every_rank_reads_them() {
    let dir = scratch("netstat_one_node");
    let exe = common::build_program("basic", &dir);
    let out = record(&dir, &exe, "out", "10");
    let m0 = trace::read_meta(&trace::meta_path(&out, 0)).unwrap();
    if m0.net_init.is_none() {
        eprintln!("skipped: /proc/net/snmp cannot be read here");
        return;
    }
    // Every rank read the counters at both ends; only rank 0 sampled them.
    assert!(m0.net_samples);
    assert!(out.join("net-00000.csv").is_file());
    for r in 1..4 {
        let m = trace::read_meta(&trace::meta_path(&out, r)).unwrap();
        assert!(!m.net_samples && m.net_init.is_some() && m.net_end.is_some());
        assert!(!out.join(format!("net-{r:05}.csv")).exists());
    }
    // The samples run from the reading at init to the one at the end.
    let s = netstat::read_samples(&out, 0);
    assert!(s.len() >= 2, "{s:?}");
    assert_eq!(Some(s[0]), m0.net_init);
    assert_eq!(s.last().copied(), m0.net_end);
    assert!(s.windows(2).all(|w| w[1].at_ns > w[0].at_ns));
    // One node in the report, told by rank 0, its counters the difference of the two.
    let net = &summary(&out)["network"];
    assert_eq!(net.as_array().map(Vec::len), Some(1), "{net}");
    assert_eq!(net[0]["rank"], 0);
    assert_eq!(net[0]["node"].as_str(), Some(m0.node.as_str()));
    let (a, b) = (m0.net_init.unwrap(), m0.net_end.unwrap());
    assert_eq!(net[0]["segments_sent"], b.out_segs - a.out_segs);
    assert_eq!(
        net[0]["retransmission_timeouts"].as_u64(),
        Some(b.timeouts - a.timeouts)
    );

    // Off: nothing read, nothing sampled, no network section entries.
    let out2 = record(&dir, &exe, "off", "0");
    let m0 = trace::read_meta(&trace::meta_path(&out2, 0)).unwrap();
    assert!(m0.net_init.is_none() && m0.net_end.is_none() && !m0.net_samples);
    assert!(!out2.join("net-00000.csv").exists());
    assert_eq!(summary(&out2)["network"], serde_json::json!([]));
}

#[test]
#[ignore = "needs root and network namespaces (an emulated cluster): scripts/test runs it with --include-ignored where they exist"]
fn an_incast_into_a_small_queue_is_repaired_by_retransmissions_the_report_counts() {
    if let Some(why) = skip_reason() {
        panic!("cannot run here: {why} (this test is ignored unless asked for)");
    }
    let dir = scratch("netstat_emu");
    let exe = common::build_program("incast", &dir);
    let out = dir.join("out");
    // A 16 KB queue at the switch's ports: three senders' windows into one port overflow it.
    let _cluster = up_with(&["--queue", "16384"]);
    const REPS: u64 = 2;
    const BYTES: u64 = 1 << 20;
    let o = emu(&[
        "run",
        "--",
        "-np",
        "4",
        "--map-by",
        "node",
        "-x",
        &format!("LD_PRELOAD={}", common::layer().display()),
        "-x",
        &format!("PMPI_PREDICT_OUT={}", out.display()),
        "-x",
        "PMPI_PREDICT_QUIET=1",
        exe.to_str().unwrap(),
        &REPS.to_string(),
        &BYTES.to_string(),
    ]);
    assert!(
        o.status.success(),
        "incast failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let net = summary(&out)["network"].clone();
    println!("{}", serde_json::to_string_pretty(&net).unwrap());
    let nodes = net.as_array().expect("a network section");
    let names: Vec<&str> = nodes.iter().filter_map(|n| n["node"].as_str()).collect();
    assert_eq!(names, ["h0", "h1", "h2", "h3"]);
    let u = |n: &Value, k: &str| n[k].as_u64().unwrap_or_else(|| panic!("{k} in {n}"));
    for (i, n) in nodes.iter().enumerate() {
        // One rank a node: each told by its own rank, which sampled it.
        assert_eq!(u(n, "rank"), i as u64);
        assert!(out.join(format!("net-{i:05}.csv")).is_file());
        // Every timeout is in one of the sampled windows: the samples begin and end
        // with the two readings the totals come from.
        let at: u64 = n["timeouts_at"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| u(t, "timeouts"))
            .sum();
        assert_eq!(at, u(n, "retransmission_timeouts"), "{n}");
        assert!(u(n, "segments_sent") > 0);
    }
    // Ranks 1..k send BYTES to rank 0, k = 1, 2, 3, REPS times each: h1 sends in all
    // three, h2 in two, h3 in one; h0 receives them all. Frames carry more than the
    // payload (headers, retransmissions), never less.
    assert!(u(&nodes[0], "rx_bytes") >= 6 * REPS * BYTES);
    for (i, times) in [(1, 3), (2, 2), (3, 1)] {
        assert!(
            u(&nodes[i], "tx_bytes") >= times * REPS * BYTES,
            "{}",
            nodes[i]
        );
    }
    // The port's 16 KB queue drops what three senders push into it: TCP repaired it.
    let retrans: u64 = nodes[1..]
        .iter()
        .map(|n| u(n, "segments_retransmitted"))
        .sum();
    assert!(retrans > 0, "no retransmission at all: {net}");
    // A window with timeouts lasts a sample (200 ms) and some call of the job is always
    // in progress (rank 0 waits, then all reduce): calls.csv marks those it overlaps.
    let windows: usize = nodes
        .iter()
        .map(|n| n["timeouts_at"].as_array().unwrap().len())
        .sum();
    let rows = common::read_calls(&out);
    let held = rows.iter().filter(|r| r["tcp_timeout"] == "1").count();
    assert!(
        rows.iter()
            .all(|r| r["tcp_timeout"].is_empty() || r["tcp_timeout"] == "1")
    );
    assert_eq!(windows > 0, held > 0, "{windows} windows, {held} rows held");
}

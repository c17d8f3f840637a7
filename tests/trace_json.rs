//! trace.json (Chrome trace-event format) written by `pmpi-predict analyze` on synthetic
//! runs: valid JSON, one track per rank, every flow with both ends bound to the right
//! slices, slice args, bandwidth counters, and the size cap with its sampling note.

mod common;

use pmpi_core::trace::{self, ClockSample, FLAG_NONBLOCKING, NO_RANK, RankMeta, Record, call};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RANKS: i32 = 4;

/// `RANKS` ranks on two nodes; each step: compute 1 ms, Irecv from the left, Isend 100 kB
/// to the right (rank 0 300 µs late), Waitall, Allreduce. Every rank's clock is rank 0's.
fn make_run(name: &str, steps: u64) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for rank in 0..RANKS {
        let (left, right) = ((rank + RANKS - 1) % RANKS, (rank + 1) % RANKS);
        let base = Record {
            root: NO_RANK,
            peer2: NO_RANK,
            comm_size: RANKS as u32,
            ..Default::default()
        };
        let mut recs = Vec::new();
        let mut t = 1_000_000u64;
        for _ in 0..steps {
            t += 1_000_000;
            let wait_end = t + 900_000;
            recs.push(Record {
                t_start: t,
                t_posted: t + 2_000,
                t_end: wait_end,
                peer: left,
                tag: 1,
                bytes_recv: 100_000,
                call: call::MPI_Irecv,
                flags: FLAG_NONBLOCKING,
                ..base
            });
            // Rank 0 sends late: rank 1's Waitall waits for it.
            let late = if rank == 0 { 300_000 } else { 0 };
            recs.push(Record {
                t_start: t + 3_000 + late,
                t_posted: t + 5_000 + late,
                t_end: wait_end,
                peer: right,
                tag: 1,
                bytes_send: 100_000,
                call: call::MPI_Isend,
                flags: FLAG_NONBLOCKING,
                ..base
            });
            recs.push(Record {
                t_start: t + 6_000 + late,
                t_posted: wait_end,
                t_end: wait_end,
                peer: NO_RANK,
                call: call::MPI_Waitall,
                ..base
            });
            t = wait_end + 10_000;
            recs.push(Record {
                t_start: t,
                t_posted: t + 50_000,
                t_end: t + 50_000,
                peer: NO_RANK,
                bytes_send: 8,
                bytes_recv: 8,
                call: call::MPI_Allreduce,
                ..base
            });
            t += 50_000;
        }
        let meta = RankMeta {
            rank,
            world_size: RANKS,
            node: format!("n{}", rank / 2),
            calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
            clock_init: Some(ClockSample::default()),
            finalized: true,
            init_ns: 1_000_000,
            ..Default::default()
        };
        trace::write_meta(&dir, &meta).unwrap();
        trace::write_spool(&dir, rank, &recs).unwrap();
    }
    dir
}

fn analyze(dir: &Path, env: &[(&str, &str)]) -> Output {
    let out = Command::new(common::cli_path())
        .arg("analyze")
        .arg(dir)
        .arg("--quiet")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn load(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("trace.json")).expect("trace.json written");
    serde_json::from_str(&text).expect("trace.json is valid JSON")
}

fn events<'a>(t: &'a Value, ph: &str) -> Vec<&'a Value> {
    t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == ph)
        .collect()
}

fn ts(e: &Value) -> f64 {
    e["ts"].as_f64().unwrap()
}

/// Checks that every flow id has exactly one start and one end, each inside a complete
/// slice of its track; returns the number of flows and the slices' names at (start, end).
fn check_flows(t: &Value) -> (usize, BTreeSet<(String, String)>) {
    // (pid, tid) → (start, end, name) of its slices.
    type Track = Vec<(f64, f64, String)>;
    let mut slices: BTreeMap<(i64, i64), Track> = BTreeMap::new();
    for e in events(t, "X") {
        slices
            .entry((e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap()))
            .or_default()
            .push((
                ts(e),
                ts(e) + e["dur"].as_f64().unwrap(),
                e["name"].as_str().unwrap().to_string(),
            ));
    }
    let enclosing = |e: &Value| -> String {
        let track = (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap());
        let x = ts(e);
        slices
            .get(&track)
            .and_then(|v| v.iter().find(|(a, b, _)| *a <= x && x <= *b))
            .map(|s| s.2.clone())
            .unwrap_or_else(|| panic!("flow event without an enclosing slice: {e}"))
    };
    let mut ends: BTreeMap<i64, (Vec<&Value>, Vec<&Value>)> = BTreeMap::new();
    for e in events(t, "s") {
        ends.entry(e["id"].as_i64().unwrap()).or_default().0.push(e);
    }
    for e in events(t, "f") {
        assert_eq!(e["bp"], "e", "{e}");
        ends.entry(e["id"].as_i64().unwrap()).or_default().1.push(e);
    }
    // Slices of one track follow each other (Perfetto needs them nested, never crossing).
    for (track, v) in &slices {
        let mut v = v.clone();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in v.windows(2) {
            assert!(
                w[1].0 >= w[0].1,
                "track {track:?}: {:?} overlaps {:?}",
                w[0],
                w[1]
            );
        }
    }
    let mut kinds = BTreeSet::new();
    for (id, (s, f)) in &ends {
        assert_eq!((s.len(), f.len()), (1, 1), "flow {id}");
        kinds.insert((enclosing(s[0]), enclosing(f[0])));
    }
    (ends.len(), kinds)
}

#[test]
fn trace_has_a_track_per_rank_flows_with_both_ends_and_args() {
    let steps = 50;
    let dir = make_run("trace-json-small", steps);
    analyze(&dir, &[]);
    let t = load(&dir);
    assert_eq!(t["otherData"]["sampled"], false);
    assert_eq!(t["otherData"]["total_calls"], (steps * 4 * RANKS as u64));
    let names: BTreeMap<String, (i64, i64)> = events(&t, "M")
        .into_iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (
                e["args"]["name"].as_str().unwrap().to_string(),
                (e["pid"].as_i64().unwrap(), e["tid"].as_i64().unwrap()),
            )
        })
        .collect();
    let want: BTreeMap<String, (i64, i64)> = (0..RANKS as i64)
        .map(|r| (format!("rank {r}"), (r / 2, r)))
        .collect();
    assert_eq!(names, want, "one track per rank: pid = node, tid = rank");
    let procs: Vec<&str> = events(&t, "M")
        .into_iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(procs, ["node n0", "node n1"]);

    let x = events(&t, "X");
    assert_eq!(x.len() as u64, steps * 4 * RANKS as u64);
    for e in &x {
        for k in [
            "measured_s",
            "predicted_s",
            "free_s",
            "wait_kind",
            "wait_s",
            "bytes",
            "peer",
        ] {
            assert!(e["args"].get(k).is_some(), "{k} missing in {e}");
        }
        assert!(e["dur"].as_f64().unwrap() >= 0.0);
    }
    // The Isend slice is its post (2 µs), measured_s its whole span to the Waitall.
    let isend = x
        .iter()
        .find(|e| e["name"] == "MPI_Isend" && e["tid"] == 1)
        .unwrap();
    assert_eq!(isend["dur"].as_f64().unwrap(), 2.0);
    assert!((isend["args"]["measured_s"].as_f64().unwrap() - 0.000897).abs() < 1e-12);
    assert_eq!(isend["args"]["bytes"], 100_000);
    assert!(x.iter().any(|e| e["name"] == "MPI_Waitall"
        && e["tid"] == 1
        && e["args"]["wait_kind"] == "late-sender"
        && e["args"]["wait_s"].as_f64().unwrap() > 0.0002));

    // One message per Isend; each arrow from the Isend post to the receiver's Waitall.
    let (flows, kinds) = check_flows(&t);
    assert_eq!(flows as u64, steps * RANKS as u64);
    assert_eq!(
        kinds,
        BTreeSet::from([("MPI_Isend".to_string(), "MPI_Waitall".to_string())])
    );

    // Bandwidth counters on both nodes; 100 kB per ms per rank moves through each node.
    let c = events(&t, "C");
    let pids: BTreeSet<i64> = c.iter().map(|e| e["pid"].as_i64().unwrap()).collect();
    assert_eq!(pids, BTreeSet::from([0, 1]));
    assert!(
        c.iter().any(|e| e["args"]["sent"].as_f64().unwrap() > 1e7),
        "a node sends 2 × 100 kB per ~1 ms"
    );
}

#[test]
fn size_cap_samples_whole_windows_and_says_so() {
    // 48,000 calls: about 20 MB of trace uncapped.
    let steps = 3000;
    let dir = make_run("trace-json-capped", steps);
    let out = analyze(&dir, &[("PMPI_PREDICT_TRACE_MAX_MB", "2")]);
    let size = std::fs::metadata(dir.join("trace.json")).unwrap().len();
    assert!(size <= 2_000_000, "trace.json is {size} bytes, cap 2 MB");
    assert!(size > 1_000_000, "the cap is used, not undershot: {size}");
    let t = load(&dir);
    let od = &t["otherData"];
    assert_eq!(od["sampled"], true);
    assert_eq!(od["total_calls"], steps * 4 * RANKS as u64);
    let kept = od["kept_calls"].as_u64().unwrap();
    assert!(kept > 0 && kept < steps * 16, "{od}");
    assert_eq!(events(&t, "X").len() as u64, kept);
    // A flow is kept only with both ends.
    check_flows(&t);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("trace.json would be"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("PMPI_PREDICT_TRACE_MAX_MB"), "{stderr}");
    assert!(
        lines[0].contains(&format!("kept {kept} of {}", steps * 16)),
        "{stderr}"
    );

    // 0 turns trace.json off; the other files are still written.
    std::fs::remove_file(dir.join("trace.json")).unwrap();
    analyze(&dir, &[("PMPI_PREDICT_TRACE_MAX_MB", "0")]);
    assert!(!dir.join("trace.json").exists());
    assert!(dir.join("report.html").exists());
}

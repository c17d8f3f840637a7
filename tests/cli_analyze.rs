//! `pmpi-predict analyze` and `accuracy` on a synthetic run directory (no MPI): reports
//! for complete and incomplete runs, and bad input answered with exit status 2.

mod common;

use pmpi_core::trace::{self, ClockSample, NO_RANK, RankMeta, Record, call};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(common::cli_path())
}

/// Two ranks on two nodes; rank 0 sends 1 MB to rank 1. `finalized` for rank 1 as given.
fn make_run(name: &str, finalized: bool) -> PathBuf {
    make_pairs(name, &["n0", "n1"], finalized)
}

/// A rank on each of `nodes` (rank r on `nodes[r]`); each rank of the first half sends 1
/// MB to its partner half the ranks on. `finalized` for the last rank as given.
fn make_pairs(name: &str, nodes: &[&str], finalized: bool) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (n, half) = (nodes.len() as i32, nodes.len() as i32 / 2);
    let send = Record {
        t_start: 1_000_000,
        t_end: 90_000_000,
        t_posted: 90_000_000,
        root: NO_RANK,
        peer2: NO_RANK,
        bytes_send: 1_000_000,
        comm_size: n as u32,
        call: call::MPI_Send,
        tag: 5,
        ..Default::default()
    };
    for (rank, node) in (0..n).zip(nodes) {
        let rec = if rank < half {
            Record {
                peer: rank + half,
                ..send
            }
        } else {
            Record {
                peer: rank - half,
                bytes_send: 0,
                bytes_recv: 1_000_000,
                call: call::MPI_Recv,
                ..send
            }
        };
        let last = rank == n - 1;
        let meta = RankMeta {
            rank,
            world_size: n,
            node: node.to_string(),
            calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
            clock_init: Some(ClockSample::default()),
            finalized: !last || finalized,
            ended_by: (last && !finalized).then(|| "signal 9".to_string()),
            ..Default::default()
        };
        trace::write_meta(&dir, &meta).unwrap();
        trace::write_spool(&dir, rank, &[rec]).unwrap();
    }
    dir
}

/// `pmpi-predict analyze DIR --quiet`.
fn analyze_quiet(dir: &Path) -> Output {
    bin()
        .arg("analyze")
        .arg(dir)
        .arg("--quiet")
        .output()
        .unwrap()
}

#[test]
fn analyze_writes_the_report_with_predictions() {
    let dir = make_run("cli-analyze-complete", true);
    let out = analyze_quiet(&dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("2 records from 2 ranks; wrote"));
    let csv = std::fs::read_to_string(dir.join("calls.csv")).unwrap();
    let predicted = |call: &str| -> f64 {
        let row = csv.lines().find(|l| l.contains(call)).unwrap();
        row.split(',').nth(9).unwrap().parse().unwrap()
    };
    // Built-in profile: 1 MB between nodes, a rendezvous message that fits the socket
    // buffer. The send returns one latency after the receive is posted (at the same
    // instant), plus a memory-speed copy: 50 µs + 1e6 × 2e-10 s. The receive waits for the
    // transfer, α + β·m = 50 µs + 0.08 s.
    assert!((predicted("MPI_Send") - 0.00025).abs() < 1e-9, "{csv}");
    assert!((predicted("MPI_Recv") - 0.08005).abs() < 1e-6, "{csv}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["complete"], true);
    assert_eq!(summary["prediction"]["profile"], "builtin-default");
    assert!(dir.join("hotspots.json").exists());
}

#[test]
fn without_profile_the_runs_own_profile_is_taken() {
    // The layer recorded the profile it predicted with in rank 0's metadata: a faster
    // network (β 1e-9 s/B) than the built-in profile's, so the 1 MB receive's prediction
    // says which one analyze and accuracy took.
    let dir = make_run("cli-analyze-own-profile", true);
    let prof_path = dir.join("cluster.json");
    let mut prof = pmpi_core::profile::Profile::builtin_default();
    prof.hockney.inter.beta = 1e-9;
    std::fs::write(&prof_path, prof.to_json()).unwrap();
    let mut meta = trace::read_meta(&trace::meta_path(&dir, 0)).unwrap();
    meta.profile = Some(prof_path.display().to_string());
    trace::write_meta(&dir, &meta).unwrap();
    let recv_predicted = || -> f64 {
        let csv = std::fs::read_to_string(dir.join("calls.csv")).unwrap();
        let row = csv.lines().find(|l| l.contains("MPI_Recv")).unwrap();
        row.split(',').nth(9).unwrap().parse().unwrap()
    };
    let out = analyze_quiet(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("as the run was recorded with"), "{err}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["prediction"]["profile"],
        prof_path.display().to_string()
    );
    // α + β·m = 50 µs + 1 ms.
    assert!(
        (recv_predicted() - 0.00105).abs() < 1e-6,
        "{}",
        recv_predicted()
    );
    // --profile wins; a recorded profile that is gone: the built-in one, said.
    let other = dir.join("default.json");
    std::fs::write(
        &other,
        pmpi_core::profile::Profile::builtin_default().to_json(),
    )
    .unwrap();
    let out = bin()
        .args(["analyze", "--quiet", "--profile"])
        .arg(&other)
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("recorded with"), "{err}");
    assert!(
        (recv_predicted() - 0.08005).abs() < 1e-6,
        "{}",
        recv_predicted()
    );
    std::fs::remove_file(&prof_path).unwrap();
    let out = analyze_quiet(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("which is not there any more"), "{err}");
    assert!(
        (recv_predicted() - 0.08005).abs() < 1e-6,
        "{}",
        recv_predicted()
    );
}

#[test]
fn analyze_marks_an_incomplete_run() {
    let dir = make_run("cli-analyze-incomplete", false);
    let out = analyze_quiet(&dir);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("INCOMPLETE run"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["complete"], false);
    assert_eq!(summary["ranks"][1]["ended_by"], "signal 9");
}

/// A run whose rank 1 left no files (or only its metadata): analyze names the rank.
#[test]
fn analyze_names_missing_ranks() {
    let dir = make_run("cli-analyze-missing", true);
    std::fs::remove_file(trace::meta_path(&dir, 1)).unwrap();
    std::fs::remove_file(trace::spool_path(&dir, 1)).unwrap();
    let out = analyze_quiet(&dir);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("pmpi-predict: 1 of 2 ranks left no files (rank 1): their calls are missing from the report;"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("INCOMPLETE run"));

    let dir = make_run("cli-analyze-nospool", true);
    std::fs::remove_file(trace::spool_path(&dir, 0)).unwrap();
    let out = analyze_quiet(&dir);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "pmpi-predict: rank 0 left metadata but no spool file: its calls are missing from the report\n"
    );

    // No rank at all: the run never got through MPI_Init under the layer.
    let empty = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-analyze-empty");
    let _ = std::fs::remove_dir_all(&empty);
    std::fs::create_dir_all(&empty).unwrap();
    let out = bin().arg("analyze").arg(&empty).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no rank of the run got through MPI_Init under the layer"),
        "{err}"
    );
}

#[test]
fn bad_input_exits_2_with_a_message() {
    let dir = make_run("cli-analyze-bad", true);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["analyze".into(), "/nonexistent/run".into()],
            "is not a directory",
        ),
        (
            vec![
                "analyze".into(),
                dir.display().to_string(),
                "--model".into(),
                "ethernet".into(),
            ],
            "ethernet",
        ),
        (
            vec![
                "analyze".into(),
                dir.display().to_string(),
                "--profile".into(),
                "/nonexistent.json".into(),
            ],
            "/nonexistent.json",
        ),
        (
            vec![
                "analyze".into(),
                dir.display().to_string(),
                "--bcast".into(),
                "tree".into(),
            ],
            "unknown bcast strategy 'tree'",
        ),
        (
            vec![
                "accuracy".into(),
                dir.display().to_string(),
                "--calls".into(),
                "MPI_Sned".into(),
            ],
            "MPI_Sned",
        ),
        (
            vec!["analyze".into(), std::env::temp_dir().display().to_string()],
            "not a pmpi-predict output directory",
        ),
    ];
    for (args, needle) in cases {
        let out = bin().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn accuracy_groups_the_send_and_the_receive() {
    let dir = make_run("cli-accuracy", true);
    let out = bin()
        .arg("accuracy")
        .arg(&dir)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert!(
        groups
            .iter()
            .any(|g| g["call"] == "MPI_Recv" && g["count"] == 1)
    );
}

#[test]
fn a_reader_that_stops_early_ends_the_tool_quietly() {
    // `pmpi-predict accuracy RUN | head -1`: the tool dies of SIGPIPE as any filter does,
    // never with a Rust panic on stderr.
    let dir = make_run("cli-accuracy-pipe", true);
    let mut child = bin()
        .arg("accuracy")
        .arg(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        out.status.code() == Some(0) || out.status.signal() == Some(libc::SIGPIPE),
        "{:?}: {err}",
        out.status
    );
}

#[test]
fn analyze_merges_directories_copied_from_each_node() {
    let whole = make_run("cli-analyze-merge-src", true);
    let a = whole.with_file_name("cli-analyze-merge-a");
    let b = whole.with_file_name("cli-analyze-merge-b");
    for (d, r) in [(&a, 0), (&b, 1)] {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).unwrap();
        for ext in ["json", "spool"] {
            let f = format!("rank-{r:05}.{ext}");
            std::fs::copy(whole.join(&f), d.join(&f)).unwrap();
        }
    }
    let out = bin().arg("analyze").arg(&a).arg(&b).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("merged 1 ranks"), "{err}");
    assert!(!err.contains("left no files"), "{err}");
    let csv = std::fs::read_to_string(a.join("calls.csv")).unwrap();
    let ranks: std::collections::BTreeSet<&str> = csv
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .collect();
    assert_eq!(ranks.into_iter().collect::<Vec<_>>(), ["0", "1"]);
    // A directory that is not a run is bad input.
    let empty = whole.with_file_name("cli-analyze-merge-empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = bin().arg("analyze").arg(&a).arg(&empty).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Exit status by kind of failure: a report that cannot be written is an I/O error (74),
/// not bad input (2); a missing run directory is bad input.
#[test]
fn an_unwritable_report_exits_74_and_a_missing_run_exits_2() {
    let dir = make_run("cli-analyze-unwritable", true);
    // A directory where calls.csv goes: creating the file fails as it would on a full
    // disk (root ignores permissions).
    std::fs::create_dir(dir.join("calls.csv")).unwrap();
    let out = analyze_quiet(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{err}");
    assert!(
        err.contains("cannot write") && err.contains("calls.csv"),
        "{err}"
    );

    let out = bin()
        .arg("analyze")
        .arg(dir.join("no-such-run"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    // replay's output directory cannot be made where a file stands.
    let _ = std::fs::remove_dir(dir.join("calls.csv"));
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = bin()
        .arg("replay")
        .arg(&dir)
        .arg("-o")
        .arg(file.join("sub"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{err}");
}

/// A profile that is not JSON is bad input (2) named with its file and the line of the
/// fault; a profile path that cannot be read as a file (a directory) is I/O (74), for
/// `analyze` and `profile show` alike.
#[test]
fn a_malformed_profile_exits_2_and_an_unreadable_one_74() {
    let dir = make_run("cli-analyze-profile-errors", true);
    let garbled = dir.join("garbled.json");
    std::fs::write(&garbled, "{\"version\": 1,\n  oops\n}\n").unwrap();
    let folder = dir.join("profile-dir");
    std::fs::create_dir(&folder).unwrap();
    for cmd in [
        vec!["analyze", dir.to_str().unwrap(), "--profile"],
        vec!["profile", "show"],
    ] {
        let out = bin().args(&cmd).arg(&garbled).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(
            err.contains(&format!("profile {}: ", garbled.display())) && err.contains("line 2"),
            "{cmd:?}: {err}"
        );
        let out = bin().args(&cmd).arg(&folder).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(74), "{cmd:?}: {err}");
        assert!(
            err.contains(&format!("cannot read profile {}: ", folder.display())),
            "{cmd:?}: {err}"
        );
    }
}

/// `watch` on a finished run whose spool is not a spool: bad input (2) that names the
/// spool file, not an I/O failure.
#[test]
fn watch_on_a_spool_with_a_bad_header_exits_2() {
    let dir = make_run("cli-watch-bad-spool", true);
    let spool = trace::spool_path(&dir, 1);
    std::fs::write(&spool, [b'X'; 64]).unwrap();
    let out = bin()
        .args(["watch", "--json", "--wait", "5"])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{}: not a pmpi-predict spool file",
            spool.display()
        )),
        "{err}"
    );
}

/// `watch` shows where a node's TCP retransmission timeouts fired, from the node's
/// samples (`net-RANK.csv`, here rank 1's, with a line still being written at its end),
/// once, in the interval where their window ends.
#[test]
fn watch_shows_tcp_timeouts_in_the_interval_where_they_fired() {
    use pmpi_core::trace::netstat::{self, NetCounters};
    let dir = make_run("cli-watch-tcp", true);
    let s = |ms: u64, timeouts| NetCounters {
        at_ns: ms * 1_000_000,
        out_segs: 10 * ms,
        timeouts,
        ..Default::default()
    };
    let mut text = format!("{}\n", netstat::SAMPLE_HEADER);
    for c in [s(0, 0), s(20, 0), s(40, 2), s(60, 2), s(80, 3)] {
        text += &netstat::sample_line(&c);
    }
    text += "100,5";
    std::fs::write(netstat::samples_path(&dir, 1), text).unwrap();
    let out = bin()
        .args(["watch", "--json", "--wait", "5", "--interval", "0.05"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snaps: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(snaps.len(), 2, "{snaps:?}");
    let t = |k: usize| snaps[k]["tcp_timeouts"].as_array().unwrap().clone();
    let (a, b) = (t(0), t(1));
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(
        (a[0]["node"].as_str(), a[0]["timeouts"].as_u64()),
        (Some("n1"), Some(2))
    );
    assert!((a[0]["from_s"].as_f64().unwrap() - 0.02).abs() < 1e-9);
    assert!((a[0]["to_s"].as_f64().unwrap() - 0.04).abs() < 1e-9);
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0]["timeouts"].as_u64(), Some(1));
    assert!((b[0]["to_s"].as_f64().unwrap() - 0.08).abs() < 1e-9);
}

/// `analyze --stream`, and `analyze` above `PMPI_PREDICT_BATCH_MAX_MB` of spools, write
/// the batch report's five files, byte for byte; an incomplete run is marked as the batch
/// path marks it; no temporary file stays.
#[test]
fn analyze_stream_writes_the_batch_report() {
    for (name, finalized, flag) in [
        ("cli-analyze-stream", true, true),
        ("cli-analyze-stream-inc", false, true),
        ("cli-analyze-stream-env", true, false),
    ] {
        let dir = make_run(name, finalized);
        let out = analyze_quiet(&dir);
        assert_eq!(out.status.code(), Some(0));
        let files = pmpi_core::report::REPORT_FILES;
        let batch: Vec<Vec<u8>> = files
            .iter()
            .map(|f| std::fs::read(dir.join(f)).unwrap())
            .collect();
        for f in files {
            std::fs::remove_file(dir.join(f)).unwrap();
        }
        let mut cmd = bin();
        cmd.arg("analyze").arg(&dir).arg("--quiet");
        if flag {
            cmd.arg("--stream");
        } else {
            // Any run is above 0 MB: the rule of MPI_Finalize.
            cmd.env("PMPI_PREDICT_BATCH_MAX_MB", "0");
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with("2 records from 2 ranks"), "{stdout}");
        assert!(
            stdout.contains("(predicted as the run was read)"),
            "{stdout}"
        );
        assert_eq!(stdout.contains("INCOMPLETE"), !finalized, "{stdout}");
        assert!(
            stdout.contains(
                "wrote calls.csv, summary.json, hotspots.json, report.html and trace.json in"
            ),
            "{stdout}"
        );
        for (f, b) in files.iter().zip(&batch) {
            assert!(
                std::fs::read(dir.join(f)).unwrap() == *b,
                "{name}: the streamed {f} differs from the batch one"
            );
        }
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.contains(".sort-")
                && !n.contains(".erel-")
                && !n.ends_with(".slices")
                && !n.ends_with(".flows")),
            "{names:?}"
        );
    }
}

#[test]
fn a_profile_calibrated_for_another_launch_is_named_in_notes() {
    // Four ranks two a node (0, 1 on n0; 2, 3 on n1), 0 → 2 and 1 → 3 sending 1 MB,
    // analysed with a profile calibrated at 4 ranks one a node: the latency of that
    // launch is taken and said, and the path within a node is the default's.
    let dir = make_pairs("cli-analyze-launch-notes", &["n0", "n0", "n1", "n1"], true);
    let mut p = pmpi_core::profile::Profile::builtin_default();
    p.latency_placed = vec![pmpi_core::profile::PlacedLatency {
        procs: 4,
        per_node: 1,
        alpha: 3e-5,
        step: None,
    }];
    p.raw = Some(serde_json::json!({"skipped": []}));
    let prof = dir.join("p.json");
    std::fs::write(&prof, p.to_json()).unwrap();
    let latency = "no latency measured as launched with 4 ranks, 2 a node: the one with 4 ranks, 1 a node is taken";
    for stream in [false, true] {
        let mut cmd = bin();
        cmd.args(["analyze", "--quiet", "--profile"])
            .arg(&prof)
            .arg(&dir);
        if stream {
            cmd.arg("--stream");
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(latency), "{err}");
        assert!(err.contains("built-in default path"), "{err}");
    }
    let out = bin()
        .args(["accuracy", "--profile"])
        .arg(&prof)
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("note: the profile has {latency}")),
        "{text}"
    );
    // Calibrated so launched: no note.
    p.latency_placed[0].per_node = 2;
    p.hockney.intra = pmpi_core::model::hockney::Hockney::new(2e-5, 1e-9).unwrap();
    std::fs::write(&prof, p.to_json()).unwrap();
    let out = bin()
        .args(["analyze", "--quiet", "--profile"])
        .arg(&prof)
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("note:"));
}

//! `pmpi-predict replay` on a synthetic recorded run (no MPI): every flag, the fields of
//! replay.json, and bad input answered with exit status 2.

mod common;

use pmpi_core::profile::Profile;
use pmpi_core::trace::{self, ClockSample, NO_RANK, RankMeta, Record, call};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Four ranks on four nodes: 0 → 1 and 2 → 3 send 1 MB, then all four do an all-to-all.
fn make_run(name: &str) -> PathBuf {
    let dir = tmp(name);
    let ms = 1_000_000u64;
    let p2p = Record {
        t_start: ms,
        t_end: 90 * ms,
        t_posted: 90 * ms,
        root: NO_RANK,
        peer2: NO_RANK,
        comm_size: 4,
        tag: 5,
        ..Default::default()
    };
    let a2a = Record {
        t_start: 100 * ms,
        t_end: 200 * ms,
        t_posted: 200 * ms,
        peer: NO_RANK,
        root: NO_RANK,
        peer2: NO_RANK,
        bytes_send: 400_000,
        bytes_recv: 400_000,
        comm_size: 4,
        call: call::MPI_Alltoall,
        ..Default::default()
    };
    for rank in 0..4 {
        let first = if rank % 2 == 0 {
            Record {
                peer: rank + 1,
                bytes_send: 1_000_000,
                call: call::MPI_Send,
                ..p2p
            }
        } else {
            Record {
                peer: rank - 1,
                bytes_recv: 1_000_000,
                call: call::MPI_Recv,
                ..p2p
            }
        };
        let meta = RankMeta {
            rank,
            world_size: 4,
            node: format!("n{rank}"),
            calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
            clock_init: Some(ClockSample::default()),
            finalized: true,
            ..Default::default()
        };
        trace::write_meta(&dir, &meta).unwrap();
        trace::write_spool(&dir, rank, &[first, a2a]).unwrap();
    }
    dir
}

fn replay(dir: &Path, args: &[&str]) -> Output {
    Command::new(common::cli_path())
        .arg("replay")
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
}

/// Runs replay into `out` and returns replay.json.
fn ok(dir: &Path, out: &Path, args: &[&str]) -> Value {
    let o = replay(dir, &[&["-o", out.to_str().unwrap()], args].concat());
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(out.join("replay.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn bad(dir: &Path, args: &[&str], says: &str) {
    let o = replay(dir, args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err:?} lacks {says:?}");
}

fn nodes(v: &Value) -> Vec<String> {
    v["conditions"]["node_of_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn as_recorded_the_replay_equals_the_self_replay() {
    let dir = make_run("replay-as-recorded");
    let out = dir.join("out");
    let o = replay(&dir, &["-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("makespan") && text.contains("replayed as recorded"),
        "{text}"
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("replay.json")).unwrap()).unwrap();
    assert_eq!(v["ranks_n"], 4);
    assert_eq!(v["records"], 8);
    assert_eq!(nodes(&v), ["n0", "n1", "n2", "n3"]);
    let m = &v["makespan"];
    assert_eq!(num(&m["predicted_s"]), num(&m["replayed_s"]));
    assert!(num(&m["measured_s"]) > 0.19 && num(&m["measured_s"]) < 0.21);
    let ranks = v["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 4);
    for (i, r) in ranks.iter().enumerate() {
        assert_eq!(r["rank"], i as i64);
        assert_eq!(r["node"], format!("n{i}"));
        for k in ["measured", "replayed", "predicted"] {
            let s = &r[k];
            let parts = num(&s["wait_s"]) + num(&s["transfer_s"]) + num(&s["contention_s"]);
            assert!((parts - num(&s["mpi_s"])).abs() < 1e-9, "{k}: {s}");
        }
    }
    let fams: Vec<&str> = v["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["call"].as_str().unwrap())
        .collect();
    assert!(
        fams.contains(&"MPI_Alltoall") && fams.contains(&"MPI_Recv"),
        "{fams:?}"
    );
    assert!(v["hotspots"]["model"].is_string());
    // Default output directory: DIR/replay.
    let o = replay(&dir, &["--quiet"]);
    assert!(o.status.success());
    assert!(dir.join("replay/replay.json").is_file());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().count(),
        1,
        "--quiet prints only where the report is"
    );
}

#[test]
fn placements_rrn_rrp_random_and_file() {
    let dir = make_run("replay-placements");
    let out = dir.join("out");
    let v = ok(&dir, &out, &["--placement", "rrp", "--nodes", "2"]);
    assert_eq!(nodes(&v), ["node0", "node0", "node1", "node1"]);
    assert_eq!(v["ranks"][2]["node"], "node1");
    assert_eq!(v["ranks"][2]["recorded_node"], "n2");
    // --nodes alone means rrp.
    assert_eq!(nodes(&ok(&dir, &out, &["--nodes", "2"])), nodes(&v));
    let v = ok(
        &dir,
        &out,
        &[
            "--placement",
            "rrn",
            "--nodes",
            "2",
            "--cores-per-node",
            "2",
        ],
    );
    assert_eq!(nodes(&v), ["node0", "node1", "node0", "node1"]);
    // Both sends now stay within a node: no contention on the network.
    let v = ok(
        &dir,
        &out,
        &["--placement", "rrp", "--nodes", "2", "--model", "none"],
    );
    let m = &v["makespan"];
    assert_eq!(num(&m["predicted_s"]), num(&m["predicted_free_s"]));
    let mut a = nodes(&ok(
        &dir,
        &out,
        &["--placement", "random:3", "--cores-per-node", "1"],
    ));
    let b = nodes(&ok(
        &dir,
        &out,
        &["--placement", "random:3", "--cores-per-node", "1"],
    ));
    assert_eq!(a, b, "the same seed gives the same placement");
    a.sort();
    assert_eq!(a, ["node0", "node1", "node2", "node3"]);
    let map = dir.join("map.txt");
    std::fs::write(&map, "# rank node\n0 left\n1 left\n2 right\n3 right\n").unwrap();
    let v = ok(&dir, &out, &["--placement", map.to_str().unwrap()]);
    assert_eq!(nodes(&v), ["left", "left", "right", "right"]);
    assert!(
        v["conditions"]["placement"]
            .as_str()
            .unwrap()
            .contains("map.txt")
    );
}

#[test]
fn two_clusters_and_the_all_to_all_algorithm() {
    let dir = make_run("replay-clusters");
    let out = dir.join("out");
    let cl = dir.join("clusters.json");
    std::fs::write(
        &cl,
        r#"{"clusters": {"A": ["n0", "n2"], "B": ["n1", "n3"]}, "wan": {"alpha": 0.005, "beta": 1e-7}}"#,
    )
    .unwrap();
    let direct = ok(&dir, &out, &["--clusters", cl.to_str().unwrap()]);
    let c = &direct["conditions"];
    assert_eq!(c["alltoall"], "direct");
    assert_eq!(c["clusters"]["names"], serde_json::json!(["A", "B"]));
    assert_eq!(
        c["clusters"]["cluster_of_node"],
        serde_json::json!([0, 1, 0, 1])
    );
    let lg = ok(
        &dir,
        &out,
        &[
            "--clusters",
            cl.to_str().unwrap(),
            "--alltoall",
            "local-group",
        ],
    );
    assert_eq!(lg["conditions"]["alltoall"], "local-group");
    let family = |v: &Value, call: &str| {
        v["families"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["call"] == call)
            .map(|f| num(&f["predicted"]["mpi_s"]))
            .unwrap()
    };
    // One shared link: both algorithms need the time of the n1·n2 = 4 blocks each way.
    assert_eq!(family(&direct, "MPI_Alltoall"), family(&lg, "MPI_Alltoall"));
    // A backbone 10× faster than one message: n1 = n2 = 2, Eq. 6 pays max(n1, n2) = 2
    // wide-area latencies, Eq. 7 one: with 5 ms of latency, Local Group is faster.
    let fat = dir.join("fat.json");
    std::fs::write(
        &fat,
        r#"{"clusters": {"A": ["n0", "n2"], "B": ["n1", "n3"]}, "wan": {"alpha": 0.005, "beta": 1e-7, "backbone_beta": 1e-8}}"#,
    )
    .unwrap();
    let fd = ok(&dir, &out, &["--clusters", fat.to_str().unwrap()]);
    let fl = ok(
        &dir,
        &out,
        &[
            "--clusters",
            fat.to_str().unwrap(),
            "--alltoall",
            "local-group",
        ],
    );
    assert!(family(&fl, "MPI_Alltoall") < family(&fd, "MPI_Alltoall"));
    // The sends now cross the wide-area link (1 MB at 10 MB/s): the receives take longer.
    let plain = ok(&dir, &out, &[]);
    assert!(family(&direct, "MPI_Recv") > family(&plain, "MPI_Recv") + 0.05);
}

#[test]
fn profile_and_model_flags() {
    let dir = make_run("replay-profile");
    let out = dir.join("out");
    let prof = dir.join("profile.json");
    std::fs::write(
        &prof,
        serde_json::to_string(&Profile::builtin_default()).unwrap(),
    )
    .unwrap();
    let v = ok(
        &dir,
        &out,
        &["--profile", prof.to_str().unwrap(), "--model", "maxmin"],
    );
    assert_eq!(v["conditions"]["model"], "maxmin");
    assert!(
        v["conditions"]["profile"]
            .as_str()
            .unwrap()
            .contains("profile.json")
    );
}

#[test]
fn a_placement_the_profile_was_not_calibrated_for_is_replayed_with_a_note() {
    // Calibrated with 4 ranks two a node: the run, one a node, is replayed with that
    // launch's latency and says so; replayed two a node, it says that the path within a
    // node is the default's.
    let dir = make_run("replay-launch-notes");
    let out = dir.join("out");
    let mut p = Profile::builtin_default();
    p.latency_placed = vec![pmpi_core::profile::PlacedLatency {
        procs: 4,
        per_node: 2,
        alpha: 2e-3,
        step: None,
    }];
    p.raw = Some(serde_json::json!({"skipped": []}));
    let prof = dir.join("profile.json");
    std::fs::write(&prof, p.to_json()).unwrap();
    p.latency_placed.clear();
    let plain = dir.join("plain.json");
    std::fs::write(&plain, p.to_json()).unwrap();
    let run = |profile: &Path, more: &[&str]| {
        let o = replay(
            &dir,
            &[
                &[
                    "-o",
                    out.to_str().unwrap(),
                    "--profile",
                    profile.to_str().unwrap(),
                ],
                more,
            ]
            .concat(),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("replay.json")).unwrap())
                .unwrap();
        (
            String::from_utf8_lossy(&o.stderr).to_string(),
            num(&v["makespan"]["predicted_s"]),
        )
    };
    let (err, with) = run(&prof, &[]);
    assert!(
        err.contains("no latency measured as launched with 4 ranks, 1 a node: the one with 4 ranks, 2 a node is taken"),
        "{err}"
    );
    assert!(!err.contains("default path"), "{err}");
    // Its 2 ms latency is in the replay's messages between nodes.
    let (err, without) = run(&plain, &[]);
    assert!(!err.contains("note:"), "{err}");
    assert!(with > without + 1e-3, "{with} {without}");
    let (err, _) = run(
        &prof,
        &[
            "--placement",
            "rrp",
            "--nodes",
            "4",
            "--cores-per-node",
            "2",
        ],
    );
    assert!(!err.contains("as launched"), "{err}");
    assert!(err.contains("built-in default path"), "{err}");
}

#[test]
fn bad_input_is_exit_status_2() {
    let dir = make_run("replay-bad");
    bad(&dir.join("nope"), &[], "is not a directory");
    bad(
        &dir,
        &["--nodes", "1", "--cores-per-node", "2"],
        "do not fit",
    );
    bad(&dir, &["--model", "ethernet"], "ethernet");
    bad(&dir, &["--placement", "random:x"], "seed");
    bad(&dir, &["--alltoall", "ring"], "ring");
    bad(&dir, &["--nodes", "0"], "at least 1");
    bad(&dir, &["--cpus-per-node", "0"], "--cpus-per-node");
    bad(&dir, &["--cpus-per-node", "two"], "--cpus-per-node");
    let map = dir.join("short.txt");
    std::fs::write(&map, "0 a\n1 a\n2 b\n").unwrap();
    bad(
        &dir,
        &["--placement", map.to_str().unwrap()],
        "rank(s) 3 missing",
    );
    std::fs::write(&map, "0 a\n1 a\n2 a\n3 b\n").unwrap();
    bad(
        &dir,
        &[
            "--placement",
            map.to_str().unwrap(),
            "--cores-per-node",
            "2",
        ],
        "holds 3 ranks",
    );
    bad(
        &dir,
        &["--placement", "/no/such/map"],
        "cannot read placement",
    );
    let cl = dir.join("clusters.json");
    std::fs::write(
        &cl,
        r#"{"clusters": {"A": ["n0"], "B": ["nx"]}, "wan": {"alpha": 0.005, "beta": 1e-7}}"#,
    )
    .unwrap();
    bad(
        &dir,
        &["--clusters", cl.to_str().unwrap()],
        "\"nx\" is not in the placement",
    );
    std::fs::write(&cl, r#"{"clusters": {"A": ["n0"]}, "wan": {}}"#).unwrap();
    bad(&dir, &["--clusters", cl.to_str().unwrap()], "clusters.json");
    bad(&dir, &["--profile", "/no/such/profile.json"], "profile");
    // Into the recorded run's own directory: its report would be replaced.
    let before = std::fs::read_dir(&dir).unwrap().count();
    bad(
        &dir,
        &["-o", dir.to_str().unwrap()],
        "that is the recorded run's directory",
    );
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), before);
}

/// A placement map or clusters file with a bad line is bad input (2) naming the file and
/// the line; one that is a directory is I/O (74).
#[test]
fn bad_map_lines_exit_2_and_unreadable_files_74() {
    let dir = make_run("replay-file-errors");
    for (flag, name, text, says) in [
        (
            "--placement",
            "map.txt",
            "0 a\n1 a b\n2 b\n3 b\n",
            "line 2: expected `RANK NODE`",
        ),
        (
            "--clusters",
            "clusters.json",
            "{\"clusters\":\n  [1, 2]}",
            "expected a map at line 2",
        ),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let named = format!("{}: ", file.display());
        let o = replay(&dir, &[flag, file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(&named) && err.contains(says), "{flag}: {err}");
    }
    let folder = dir.join("a-dir");
    std::fs::create_dir(&folder).unwrap();
    for (flag, says) in [
        ("--placement", "cannot read placement"),
        ("--clusters", "cannot read clusters file"),
    ] {
        let o = replay(&dir, &[flag, folder.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(74), "{flag}: {err}");
        assert!(
            err.contains(&format!("{says} {}: ", folder.display())),
            "{flag}: {err}"
        );
    }
}

/// `replay --stream`, and `replay` above `PMPI_PREDICT_BATCH_MAX_MB` of spools, replay
/// the run as it is read and write the batch replay's replay.json, summary.json,
/// hotspots.json and report.html byte for byte, as recorded, under another placement and
/// across two clusters with either all-to-all algorithm; no temporary file stays.
#[test]
fn the_streamed_replay_writes_the_batch_files() {
    let dir = make_run("replay-stream");
    let cl = dir.join("clusters.json");
    std::fs::write(
        &cl,
        r#"{"clusters": {"A": ["n0", "n2"], "B": ["n1", "n3"]}, "wan": {"alpha": 0.005, "beta": 1e-7}}"#,
    )
    .unwrap();
    let cl = cl.to_str().unwrap();
    let files = [
        "replay.json",
        "summary.json",
        "hotspots.json",
        "report.html",
    ];
    for args in [
        &[][..],
        &["--placement", "rrn", "--nodes", "2"],
        &["--clusters", cl],
        &[
            "--clusters",
            cl,
            "--alltoall",
            "local-group",
            "--model",
            "none",
        ],
    ] {
        let (batch, streamed, limited) = (dir.join("b"), dir.join("s"), dir.join("l"));
        let b = replay(&dir, &[&["-o", batch.to_str().unwrap()], args].concat());
        let s = replay(
            &dir,
            &[&["-o", streamed.to_str().unwrap(), "--stream"], args].concat(),
        );
        let l = Command::new(common::cli_path())
            .env("PMPI_PREDICT_BATCH_MAX_MB", "0")
            .arg("replay")
            .arg(&dir)
            .args([&["-o", limited.to_str().unwrap()], args].concat())
            .output()
            .unwrap();
        for (o, streamed) in [(&b, false), (&s, true), (&l, true)] {
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(
                o.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            assert_eq!(
                out.contains("(replayed as the run was read)"),
                streamed,
                "{args:?}: {out}"
            );
        }
        // The same comparison printed, the output directory aside.
        let printed = |o: &Output| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| !l.starts_with("wrote "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(printed(&s), printed(&b), "{args:?}");
        assert!(printed(&b).contains("makespan"), "{args:?}");
        for f in files {
            let want = std::fs::read(batch.join(f)).unwrap();
            for d in [&streamed, &limited] {
                assert!(
                    std::fs::read(d.join(f)).unwrap() == want,
                    "{args:?}: {f} in {} differs from the batch one",
                    d.display()
                );
            }
        }
        let mut left: Vec<String> = std::fs::read_dir(&streamed)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "hotspots.json",
                "replay.json",
                "report.html",
                "summary.json"
            ]
        );
        for d in [&batch, &streamed, &limited] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}

/// [`make_run`] with each rank's machine CPU readings (interrupts 10 % of its time, the
/// four node names on one machine) and the recording's profile named in its metadata.
fn make_run_with_host(name: &str, recorded_profile: &Path) -> PathBuf {
    let dir = make_run(name);
    for rank in 0..4 {
        let path = trace::meta_path(&dir, rank);
        let mut meta = trace::read_meta(&path).unwrap();
        meta.boot_id = "machine-a".into();
        meta.host_cpu_init = Some(trace::CpuTicks {
            total: 10_000,
            irq: 500,
            cpus: 2,
        });
        meta.host_cpu_end = Some(trace::CpuTicks {
            total: 11_000 + rank as u64,
            irq: 600,
            cpus: 2,
        });
        meta.profile = Some(recorded_profile.display().to_string());
        trace::write_meta(&dir, &meta).unwrap();
    }
    dir
}

fn profile_with_host(path: &Path, irq_s_per_byte: Option<f64>) {
    let mut p = Profile::builtin_default();
    p.host = irq_s_per_byte.map(|c| pmpi_core::profile::HostCost {
        irq_s_per_byte: c,
        bytes: 1_000_000,
    });
    std::fs::write(path, serde_json::to_string(&p).unwrap()).unwrap();
}

#[test]
fn the_compute_is_scaled_by_a_factor_or_for_the_hosts_interrupts() {
    let base = tmp("replay-compute-profiles");
    let (slow, fast, bare) = (
        base.join("slow.json"),
        base.join("fast.json"),
        base.join("bare.json"),
    );
    profile_with_host(&slow, Some(1e-8));
    profile_with_host(&fast, Some(1e-8 / 40.0));
    profile_with_host(&bare, None);
    let dir = make_run_with_host("replay-compute", &slow);
    let out = dir.join("out");
    // A factor: each rank's 10 ms between its two calls takes 5 ms, so the all-to-all,
    // and the run, end 5 ms sooner than replayed as recorded.
    let v = ok(
        &dir,
        &out,
        &["--profile", slow.to_str().unwrap(), "--compute", "0.5"],
    );
    let m = &v["makespan"];
    assert!(
        (num(&m["predicted_s"]) - (num(&m["replayed_s"]) - 0.005)).abs() < 1e-9,
        "{m}"
    );
    assert_eq!(num(&v["conditions"]["compute"]["scale"]), 0.5);
    assert!(v["conditions"]["compute"]["recorded_irq_share"].is_null());
    // Auto, onto a network whose bytes cost the hosts 40 times less: the recorded 10 %
    // leaves the compute, and 10 % / 40 x (recorded / replayed makespan) comes in.
    let one = ok(
        &dir,
        &out,
        &["--profile", fast.to_str().unwrap(), "--compute", "1"],
    );
    let t_new = num(&one["makespan"]["predicted_s"]);
    let t_rec = num(&one["makespan"]["measured_s"]);
    let replay_with = |p: &Path| {
        replay(
            &dir,
            &[
                "-o",
                out.to_str().unwrap(),
                "--profile",
                p.to_str().unwrap(),
                "--compute",
                "auto",
            ],
        )
    };
    let o = replay_with(&fast);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("the hosts' interrupts: 10.0 % of their CPU recorded"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("replay.json")).unwrap()).unwrap();
    let c = &v["conditions"]["compute"];
    let predicted = 0.1 / 40.0 * t_rec / t_new;
    assert!((num(&c["recorded_irq_share"]) - 0.1).abs() < 1e-12, "{c}");
    assert!(
        (num(&c["predicted_irq_share"]) - predicted).abs() < 1e-12,
        "{c}"
    );
    assert!(
        (num(&c["scale"]) - 0.9 / (1.0 - predicted)).abs() < 1e-12,
        "{c}"
    );
    // 10 ms of compute scaled: the run ends that much sooner than with the factor 1.
    let shorter = 0.010 * (1.0 - num(&c["scale"]));
    assert!(
        (num(&v["makespan"]["predicted_s"]) - (t_new - shorter)).abs() < 1e-9,
        "{} against {t_new} - {shorter}",
        v["makespan"]
    );
    // The streamed replay finds the same factor.
    let streamed = ok(
        &dir,
        &dir.join("out-s"),
        &[
            "--profile",
            fast.to_str().unwrap(),
            "--stream",
            "--compute",
            "auto",
        ],
    );
    assert_eq!(
        streamed["conditions"]["compute"],
        v["conditions"]["compute"]
    );
    assert_eq!(streamed["makespan"], v["makespan"]);
    // The same profile as recorded: the share follows the makespan alone.
    let t_self = num(&ok(
        &dir,
        &out,
        &["--profile", slow.to_str().unwrap(), "--compute", "1"],
    )["makespan"]["predicted_s"]);
    let same = ok(
        &dir,
        &out,
        &["--profile", slow.to_str().unwrap(), "--compute", "auto"],
    );
    // Without --compute: as recorded.
    let default = ok(&dir, &out, &["--profile", fast.to_str().unwrap()]);
    assert_eq!(num(&default["conditions"]["compute"]["scale"]), 1.0);
    assert_eq!(
        default["makespan"]["predicted_s"],
        one["makespan"]["predicted_s"]
    );
    let expect = 0.9 / (1.0 - 0.1 * t_rec / t_self);
    assert!(
        (num(&same["conditions"]["compute"]["scale"]) - expect).abs() < 1e-12,
        "{same}"
    );
    // A profile without the cost: as recorded, and a note says why.
    let o = replay_with(&bare);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("10.0 % of their CPU time")
            && err.contains("this profile has no measured interrupt cost"),
        "{err}"
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("replay.json")).unwrap()).unwrap();
    assert_eq!(num(&v["conditions"]["compute"]["scale"]), 1.0);
    // Bad factors.
    bad(&dir, &["--compute", "0"], "positive factor");
    bad(&dir, &["--compute", "fast"], "positive factor");
}

/// Two Open MPI ranks on two nodes post an `MPI_Irecv` and an `MPI_Isend` of 1 MB to each
/// other, compute 200 ms, then `MPI_Waitall`. As recorded (`--progress library`, the
/// default) the messages move once both ranks are in the wait; with a progress thread
/// (`--progress async`) during the computation: the makespan is shorter by about a
/// transfer, and replay.json says which was replayed. An unknown mode is exit status 2.
#[test]
fn a_progress_thread_moves_rendezvous_messages_during_the_computation() {
    let dir = tmp("replay-progress");
    let ms = 1_000_000u64;
    let base = Record {
        root: NO_RANK,
        peer2: NO_RANK,
        comm_size: 2,
        ..Default::default()
    };
    for rank in 0..2 {
        let peer = 1 - rank;
        let nb = |call: u16, send: bool| Record {
            t_start: ms,
            t_posted: ms,
            t_end: 290 * ms,
            peer,
            flags: trace::FLAG_NONBLOCKING,
            bytes_send: if send { 1_000_000 } else { 0 },
            bytes_recv: if send { 0 } else { 1_000_000 },
            call,
            ..base
        };
        let wait = Record {
            t_start: 201 * ms,
            t_posted: 290 * ms,
            t_end: 290 * ms,
            peer: NO_RANK,
            comm: u32::MAX,
            comm_size: 0,
            call: call::MPI_Waitall,
            ..base
        };
        let meta = RankMeta {
            rank,
            world_size: 2,
            node: format!("n{rank}"),
            mpi_library: "Open MPI v4.1.4".into(),
            calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
            clock_init: Some(ClockSample::default()),
            finalized: true,
            gap_polls: true,
            ..Default::default()
        };
        trace::write_meta(&dir, &meta).unwrap();
        let recs = [nb(call::MPI_Irecv, false), nb(call::MPI_Isend, true), wait];
        trace::write_spool(&dir, rank, &recs).unwrap();
    }
    let lib = ok(&dir, &dir.join("lib"), &[]);
    let thr = ok(&dir, &dir.join("thr"), &["--progress", "async"]);
    assert_eq!(lib["conditions"]["progress"], "library");
    assert!(lib["conditions"]["cpus_per_node"].is_null());
    assert_eq!(thr["conditions"]["progress"], "async");
    let (a, b) = (
        num(&lib["makespan"]["predicted_s"]),
        num(&thr["makespan"]["predicted_s"]),
    );
    // The built-in profile moves 1 MB between nodes in well under the 200 ms of
    // computation: the threaded replay ends with the computation, the other a transfer
    // later.
    assert!((b - 0.201).abs() < 1e-3, "async {b} s");
    assert!(a > b + 1e-3, "library {a} s, async {b} s");
    bad(&dir, &["--progress", "thread"], "thread");
}

/// `--cpus-per-node` is recorded in replay.json's conditions, and the replay runs with
/// every rank's row predicted (the waits it moves: the engine test
/// `a_what_if_on_nodes_of_given_cpus_moves_the_waits_for_a_cpu`).
#[test]
fn cpus_per_node_is_a_condition_of_the_replay() {
    let dir = make_run("replay-cpus");
    let out = tmp("replay-cpus-out");
    let v = ok(&dir, &out, &["--nodes", "1", "--cpus-per-node", "1"]);
    assert_eq!(v["conditions"]["cpus_per_node"], 1);
    assert_eq!(nodes(&v).len(), 4);
    let m = &v["makespan"];
    assert!(m["predicted_s"].as_f64().unwrap() > 0.0, "{m}");
}

//! `pmpi-predict calibrate` argument checks and `profile show`, without a network; plus
//! small real MPI runs on this machine (skipped without `mpirun`): two ranks on one node
//! (intra-node only) and four ranks posing as four nodes through `PMPI_PREDICT_NODE`.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use pmpi_core::profile::{Eager, EagerSource, Profile};

fn bin() -> Command {
    let mut c = Command::new(common::cli_path());
    // Not under a launcher, whatever the environment of the test run.
    for v in [
        "OMPI_COMM_WORLD_SIZE",
        "PMIX_RANK",
        "PMI_RANK",
        "PMI_SIZE",
        "MPI_LOCALNRANKS",
        "SLURM_PROCID",
    ] {
        c.env_remove(v);
    }
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_arguments_exit_2() {
    let dir = common::scratch("calibrate_cli_bad");
    let p = dir.join("p.json");
    let p = p.to_str().unwrap();
    for (args, needle) in [
        (vec!["calibrate"], "--output"),
        (
            vec!["calibrate", "-o", "/nonexistent-dir/p.json"],
            "does not exist",
        ),
        (vec!["calibrate", "-o", p, "--budget", "0"], "--budget"),
        (vec!["calibrate", "-o", p, "--budget=-5"], "--budget"),
        (vec!["calibrate", "-o", p, "--budget", "soon"], "soon"),
        (
            vec!["calibrate", "-o", p, "--penalty-bytes", "10"],
            "--penalty-bytes",
        ),
        (vec!["calibrate", "-o", p, "--frobnicate"], "frobnicate"),
        (vec!["calibrate", "-o", dir.to_str().unwrap()], "file name"),
        (
            vec!["calibrate", "-o", p, "--clusters", "/nonexistent.json"],
            "--clusters /nonexistent.json: no such file",
        ),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    assert!(!Path::new(p).exists());
}

#[test]
fn singleton_explains_what_it_needs() {
    let dir = common::scratch("calibrate_cli_singleton");
    let p = dir.join("p.json");
    let o = run(&["calibrate", "-o", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("at least 2 MPI ranks on at least 2 nodes"),
        "{e}"
    );
    assert!(e.contains("mpirun -np"), "{e}");
    assert!(!p.exists());
}

#[test]
fn profile_show_default_and_errors() {
    let o = run(&["profile", "show", "--default"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "built-in default",
        "inter-node",
        "8.0000e-8",
        "* gige",
        "gamma = 1.0195",
    ] {
        assert!(out.contains(needle), "{needle}: {out}");
    }
    let o = run(&["profile", "show"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["profile", "show", "/nonexistent/p.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/p.json"), "{}", stderr(&o));
    let dir = common::scratch("calibrate_cli_show");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"version\": 1, \"hockney\": ").unwrap();
    let o = run(&["profile", "show", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.json"), "{}", stderr(&o));
}

#[test]
fn profile_show_calibrated_file() {
    let mut p = Profile::builtin_default();
    p.nodes = vec!["a".into(), "b".into(), "c".into()];
    p.penalty.gige.beta = 0.97;
    p.exchange = Some(2.9e-6);
    p.cold_call = vec![[1e-3, 1.5e-6], [2e-2, 4.8e-5]];
    p.eager = Some(Eager {
        inter: Some(32768),
        intra: None,
        source: EagerSource::MpiT,
    });
    p.raw = Some(serde_json::json!({
        "penalty": {"bytes": 983040, "t_ref_s": 0.085, "schemes": [
            {"name": "lone", "arcs": [[0, 1]], "penalties": [1.0]},
            {"name": "out2", "arcs": [[0, 1], [0, 2]], "penalties": [1.94, 1.97]}]},
        "skipped": ["lom: --quick"],
        "wall_s": 4.2
    }));
    p.residuals = Some(serde_json::json!({
        "hockney_inter": {"rms_rel": 0.031},
        "penalty": {"mean_abs_rel_error_pct": {"gige": 3.5, "infiniband": 6.0}},
        "alltoall": {"rms_rel": 0.05}
    }));
    let dir = common::scratch("calibrate_cli_show2");
    let f = dir.join("p.json");
    std::fs::write(&f, p.to_json()).unwrap();
    let o = run(&["profile", "show", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "beta=0.9700",
        "3.5%",
        "0->1 0->2",
        "1.94 1.97",
        "3.1%",
        "lom: --quick",
        "wall time: 4.2 s",
        "nodes:       a b c",
        "eager limit: rendezvous from 32768 B between nodes, library default within a node (read through MPI_T)",
        "inter-node exchange: a small message that crosses the reverse one takes 2.90 us more",
        "a blocking call between nodes after time outside MPI takes more: 1 ms +1.5 us, 20 ms +48.0 us",
    ] {
        assert!(out.contains(needle), "{needle}: {out}");
    }
}

/// `pmpi-predict profile refit IN -o OUT`.
fn refit(input: &str, output: &str) -> Output {
    run(&["profile", "refit", input, "-o", output])
}

#[test]
fn profile_refit_fits_the_bucket_from_the_kept_ping_pong() {
    // A 1 Gbit/s calibration of the emulated cluster (31,250-byte buckets) whose bucket
    // was fitted by an older rule: refit writes this build's, keeps everything else.
    let mut p = Profile::builtin_default();
    p.hockney.inter = p.hockney.inter.with_burst(23995.0).unwrap();
    p.hockney.inter.beta = 9.359e-9;
    p.exchange = Some(3.4e-6);
    p.raw = Some(serde_json::json!({
        "pingpong_inter": {"ranks": [0, 1],
            "bytes": [0, 1024, 4096, 16384, 65536, 262144, 1048576],
            "one_way_s": [10.4e-6, 11.2e-6, 16.3e-6, 49.1e-6, 399.2e-6, 2129.8e-6, 9778.8e-6],
            "attempts": 1},
        "wall_s": 4.2
    }));
    let dir = common::scratch("calibrate_cli_refit");
    let f = dir.join("p.json");
    std::fs::write(&f, p.to_json()).unwrap();
    let out = dir.join("q.json");
    let o = refit(f.to_str().unwrap(), out.to_str().unwrap());
    assert!(o.status.success(), "{}", stderr(&o));
    let q = Profile::load(&out).unwrap();
    let b = q.hockney.inter.burst;
    assert!((28_125.0..=34_375.0).contains(&b), "{b}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("23995 -> {b:.0} B")),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // And what the bucket's bytes cost: the slope of the messages within it (1.9-2.0
    // ns/B here).
    let g = q.hockney.inter.burst_gamma;
    assert!((1.5e-9..2.5e-9).contains(&g), "{g}");
    let mut same = q.clone();
    same.hockney.inter.burst = 23995.0;
    same.hockney.inter.burst_gamma = 0.0;
    assert_eq!(same, p);
    // A calibration that probed the bucket with full buckets: refit takes the probe's
    // (a 3,028 B port passing 2,640 B of payload at once, then 84 ns/B).
    let mut probed = p.clone();
    let t = |m: f64| 12e-6 + 8.4e-8 * (m - 2640.0).max(0.0);
    let sizes = [0.0, 792.0, 1584.0, 4760.0, 6352.0, 9528.0];
    probed.raw.as_mut().unwrap()["bucket_probe"] = serde_json::json!({
        "ranks": [0, 1], "bytes": sizes, "one_way_s": sizes.map(t), "pause_s": 0.001,
        "reps": 16, "ping_pong_burst": 3175.0});
    probed.hockney.inter.beta = 8.4e-8;
    std::fs::write(&f, probed.to_json()).unwrap();
    let o = refit(f.to_str().unwrap(), out.to_str().unwrap());
    assert!(o.status.success(), "{}", stderr(&o));
    let q = Profile::load(&out).unwrap();
    assert!(
        (q.hockney.inter.burst - 2640.0).abs() <= 1.0 && q.hockney.inter.burst_gamma == 0.0,
        "{:?}",
        q.hockney.inter
    );
    // Bad input: no kept ping-pong, a missing file, a missing -o; nothing written.
    let mut none = p.clone();
    none.raw = None;
    std::fs::write(&f, none.to_json()).unwrap();
    let out2 = dir.join("r.json");
    let o = refit(f.to_str().unwrap(), out2.to_str().unwrap());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("raw.pingpong_inter"), "{}", stderr(&o));
    assert!(!out2.exists());
    let o = refit("/nonexistent/p.json", out2.to_str().unwrap());
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["profile", "refit", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!out2.exists());
}

/// Fails the test when no MPI launcher runs (scripts/setup installs them).
fn require_mpirun() {
    let ok = Command::new(common::launcher())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "no MPI launcher ({}): scripts/setup installs Open MPI and MPICH",
        common::launcher()
    );
}

#[test]
fn two_ranks_one_node_fit_intra_only() {
    require_mpirun();
    let dir = common::scratch("calibrate_mpi_intra");
    let p = dir.join("p.json");
    let exe = common::cli_path();
    let o = common::mpirun(
        2,
        &exe,
        &["calibrate", "--quick", "-o", p.to_str().unwrap()],
        None,
        &dir,
    );
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(e.contains("only intra-node parameters"), "{e}");
    let prof = Profile::load(&p).unwrap();
    let d = Profile::builtin_default();
    assert_eq!(prof.hockney.inter, d.hockney.inter);
    assert_ne!(prof.hockney.intra, d.hockney.intra);
    assert_eq!(prof.nodes.len(), 1);
    assert!(prof.mpi_library.is_some() && prof.date.is_some());
}

#[test]
fn eager_limits_come_from_the_librarys_control_variables() {
    require_mpirun();
    let dir = common::scratch("calibrate_mpi_eager");
    let p = dir.join("p.json");
    let exe = common::cli_path();
    // Limits other than the defaults, set the way a user would: the library's own
    // environment variables, read back through MPI_T.
    let o = common::mpirun_with_env(
        2,
        &exe,
        &["calibrate", "--quick", "-o", p.to_str().unwrap()],
        &[
            ("OMPI_MCA_btl_tcp_eager_limit", "32768"),
            ("OMPI_MCA_btl_vader_eager_limit", "2048"),
            ("MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE", "50000"),
        ],
        &dir,
    );
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    let prof = Profile::load(&p).unwrap();
    let library = prof.mpi_library.clone().unwrap();
    let raw = &prof.raw.as_ref().unwrap()["eager_cvars"];
    // One node: the limit between nodes is MPI_T's (nothing to measure it on); the one
    // within the node is measured by the late-receiver probe, MPI_T's value kept beside it.
    let knee = &prof.raw.as_ref().unwrap()["eager_knee"];
    assert!(knee["inter"].is_null(), "{knee}");
    assert!(knee["intra"].is_string(), "{knee}");
    assert!(e.contains("eager between nodes: not measured"), "{e}");
    if library.contains("Open MPI") {
        let got = prof.eager.expect("eager limits written");
        assert_eq!(got.inter, Some(32768), "{e}");
        assert_eq!(got.source, EagerSource::Measured, "{e}");
        // vader's sends above its fast-box size wait for the receiver to enter MPI:
        // measured 256 B here, below the 2048 B its eager limit says.
        let intra = got.intra.expect("intra limit measured");
        assert!((1..=2049).contains(&intra), "{intra}: {e}");
        assert_eq!(knee["mpi_t"]["intra"], 2048, "{knee}");
        assert!(
            e.contains("eager limits from MPI_T: between nodes 32768 B (btl_tcp_eager_limit), within a node 2048 B"),
            "{e}"
        );
        assert_eq!(raw["read"]["btl_tcp_eager_limit"], 32768);
    } else if library.contains("Device:\tch3") {
        assert_eq!(prof.eager.and_then(|x| x.inter), Some(50000), "{e}");
    } else {
        // MPICH's ch4 devices: the CH3 variable is listed but does not apply.
        assert_eq!(prof.eager.and_then(|x| x.inter), None, "{e}");
        assert!(e.contains("eager limits not read"), "{e}");
    }
}

/// A wrapper script in `dir` that makes each rank pose as its own node (node0, node1...).
fn as_node_wrapper(dir: &std::path::Path) -> std::path::PathBuf {
    node_wrapper(dir, "$r")
}

/// A wrapper that names each rank's node `node` + `expr`, a shell expression of the rank
/// `$r`.
fn node_wrapper(dir: &std::path::Path, expr: &str) -> std::path::PathBuf {
    let wrap = dir.join("as-node.sh");
    std::fs::write(
        &wrap,
        format!(
            "#!/bin/sh\nr=${{OMPI_COMM_WORLD_RANK:-$PMI_RANK}}\nexport PMPI_PREDICT_NODE=node{expr}\nexec \"$@\"\n"
        ),
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&wrap).status().unwrap();
    wrap
}

/// `calibrate --quick` on `np` ranks through `wrap`, its penalty schemes at `bytes`:
/// the launcher's output and the profile's path.
fn quick_calibration(
    np: u32,
    wrap: &std::path::Path,
    dir: &std::path::Path,
    bytes: &str,
) -> (Output, std::path::PathBuf) {
    let p = dir.join("p.json");
    let exe = common::cli_path();
    let o = common::mpirun(
        np,
        wrap,
        &[
            exe.to_str().unwrap(),
            "calibrate",
            "--quick",
            "--penalty-bytes",
            bytes,
            "-o",
            p.to_str().unwrap(),
        ],
        None,
        dir,
    );
    (o, p)
}

#[test]
fn two_ranks_posing_as_two_nodes_measure_the_tcp_eager_knee() {
    require_mpirun();
    let dir = common::scratch("calibrate_mpi_knee");
    let wrap = as_node_wrapper(&dir);
    let p = dir.join("p.json");
    let exe = common::cli_path();
    // Both "nodes" talk over TCP (Open MPI: the shared-memory BTL left out).
    let (l, mut prefix, _) = common::launch_prefix(2);
    for a in &mut prefix {
        if a == "self,vader,tcp" {
            *a = "self,tcp".to_string();
        }
    }
    let o = Command::new(l)
        .args(&prefix)
        .arg(&wrap)
        .args([
            exe.to_str().unwrap(),
            "calibrate",
            "--quick",
            "--penalty-bytes",
            "262144",
            "-o",
            p.to_str().unwrap(),
        ])
        .current_dir(&dir)
        .env("OMPI_MCA_btl_tcp_eager_limit", "32768")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("launcher runs");
    common::remove_session_base(&prefix);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(
        e.contains("[7/7] eager limits (late-receiver probe, 64 B - 4 MiB)"),
        "{e}"
    );
    let prof = Profile::load(&p).unwrap();
    let library = prof.mpi_library.clone().unwrap();
    if !library.contains("Open MPI") {
        println!("skipped: the TCP knee is checked under Open MPI only (this is {library})");
        return;
    }
    // Open MPI's limit counts its match header: the largest eager payload is a little
    // below 32768 (32712 B here), the smallest rendezvous one byte above it, so at most
    // the limit itself.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(json["eager"]["source"], "measured", "{json}");
    let got = prof.eager.expect("eager limits written");
    assert_eq!(got.source, EagerSource::Measured, "{e}");
    let inter = got.inter.expect("inter limit measured");
    assert!((32000..=32768).contains(&inter), "{inter}: {e}");
    let knee = &prof.raw.as_ref().unwrap()["eager_knee"];
    assert_eq!(knee["mpi_t"]["inter"], 32768, "{knee}");
    assert!(
        e.contains(&format!(
            "eager between nodes: up to {} B measured (MPI_T btl_tcp_eager_limit 32768)",
            inter - 1
        )),
        "{e}"
    );
    let show = run(&["profile", "show", p.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&show.stdout);
    assert!(
        out.contains(&format!(
            "eager limit: rendezvous from {inter} B between nodes"
        )) && out.contains("measured by a late-receiver probe; MPI_T: 32768 B between nodes"),
        "{out}"
    );
}

#[test]
fn four_ranks_measure_the_link_between_two_clusters() {
    require_mpirun();
    let dir = common::scratch("calibrate_mpi_clusters");
    let wrap = as_node_wrapper(&dir);
    let exe = common::cli_path();
    let calibrate = |clusters: &str| {
        let f = dir.join("clusters.json");
        std::fs::write(&f, clusters).unwrap();
        let out = dir.join("wan.json");
        let _ = std::fs::remove_file(&out);
        let o = common::mpirun(
            4,
            &wrap,
            &[
                exe.to_str().unwrap(),
                "calibrate",
                "--quick",
                "--clusters",
                f.to_str().unwrap(),
                "--penalty-bytes",
                "262144",
                "-o",
                out.to_str().unwrap(),
            ],
            None,
            &dir,
        );
        (o, out)
    };
    // A node the job does not have: every rank stops before measuring, status 2.
    let (o, out) = calibrate(r#"{"clusters": {"A": ["node0", "node1"], "B": ["node2", "nodeX"]}}"#);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("\"nodeX\" has no rank"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());

    let (o, out) = calibrate(r#"{"clusters": {"A": ["node0", "node1"], "B": ["node2", "node3"]}}"#);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    for phase in [
        "wide-area ping-pong node0 <-> node2",
        "crossing messages (1-4 at once",
    ] {
        assert!(e.contains(phase), "{phase}: {e}");
    }
    let w: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(w["clusters"]["B"][1], "node3");
    let wan = &w["wan"];
    assert!(wan["alpha"].as_f64().unwrap() >= 0.0 && wan["beta"].as_f64().unwrap() > 0.0);
    assert_eq!(wan["crossing"]["bytes"], 262144);
    for t in ["one_way", "both_ways"] {
        let p: Vec<f64> = wan["crossing"][t]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(p.len(), 4, "{t}: {p:?}");
        // Positive, and never smaller with one message more (calibrate enforces it).
        assert!(
            p[0] > 0.0 && p.windows(2).all(|w| w[1] >= w[0]),
            "{t}: {p:?}"
        );
    }
    let c = &w["calibration"]["crossing"];
    assert_eq!(c["pairs"][1], serde_json::json!(["node1", "node3"]));
    assert_eq!(c["one_way_reps_s"][0].as_array().unwrap().len(), 8);
    assert_eq!(c["both_ways_reps_s"][3][0].as_array().unwrap().len(), 8);
    // The replay reads the file as written.
    let names: Vec<String> = (0..4).map(|i| format!("node{i}")).collect();
    let placement = pmpi_core::topo::placement::Placement::from_names(&names);
    let cl = pmpi_core::replay::whatif::load_clusters(&out, &placement).unwrap();
    assert_eq!(cl.cluster_of_node, vec![0, 0, 1, 1]);
    assert_eq!(cl.crossing_bytes, 262144);
}

#[test]
fn four_ranks_posing_as_four_nodes() {
    require_mpirun();
    let dir = common::scratch("calibrate_mpi_fake4");
    let wrap = as_node_wrapper(&dir);
    let (o, p) = quick_calibration(4, &wrap, &dir, "1048576");
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    for phase in [
        "[2/8] inter-node ping-pong",
        "[3/8] latency with all 4 ranks at once (2 pairs across nodes)",
        "penalty schemes",
        "all-to-all",
        "pLogP",
    ] {
        assert!(e.contains(phase), "{phase}: {e}");
    }
    let prof = Profile::load(&p).unwrap();
    assert_eq!(prof.nodes, ["node0", "node1", "node2", "node3"]);
    // The latency with both pairs ping-ponging at once, for this launch.
    assert_eq!(prof.latency_placed.len(), 1);
    assert_eq!(
        (
            prof.latency_placed[0].procs,
            prof.latency_placed[0].per_node
        ),
        (4, 1)
    );
    let raw = prof.raw.as_ref().unwrap();
    // TCP's counters over the calibration, one entry per node (its leader's reading),
    // and a line on stderr saying whether timeouts fired.
    if std::path::Path::new("/proc/net/snmp").exists() {
        let tcp = raw["tcp"].as_object().expect("raw.tcp");
        let nodes: Vec<&str> = tcp.keys().map(String::as_str).collect();
        assert_eq!(nodes, ["node0", "node1", "node2", "node3"]);
        assert!(tcp.values().all(|v| v["timeouts"].is_u64()));
        let any = tcp.values().any(|v| v["timeouts"].as_u64() > Some(0));
        assert_eq!(
            e.contains("calibrate: TCP retransmission timeouts during the calibration"),
            any,
            "{e}"
        );
        assert_eq!(
            e.contains("calibrate: no TCP retransmission timeout"),
            !any,
            "{e}"
        );
    }
    let schemes = raw["penalty"]["schemes"].as_array().unwrap();
    assert_eq!(schemes.len(), 10);
    assert_eq!(raw["penalty"]["bytes"], 1048576);
    // The reverse-flow factor is the bidirectional scheme's mean penalty over its
    // repetitions, never below 1.
    let bidir = schemes
        .iter()
        .find(|s| s["name"] == "bidirectional")
        .unwrap();
    // Each repetition's per-arc seconds, and its last arrival.
    let reps_of = |scheme: &serde_json::Value| -> Vec<Vec<f64>> {
        scheme["reps_s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect()
            })
            .collect()
    };
    let lasts = |scheme: &serde_json::Value| -> Vec<f64> {
        reps_of(scheme)
            .iter()
            .map(|r| r.iter().copied().fold(0.0, f64::max))
            .collect()
    };
    let t_ref = raw["penalty"]["t_ref_s"].as_f64().unwrap();
    // The median of the repetitions (the mean of the middle two for an even count).
    let median = |mut v: Vec<f64>| -> f64 {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            0.5 * (v[n / 2 - 1] + v[n / 2])
        }
    };
    let reps = lasts(bidir);
    let med = median(reps) / t_ref;
    assert!(
        (prof.penalty.reverse - med.max(1.0)).abs() < 1e-9,
        "{} vs {med}",
        prof.penalty.reverse
    );
    // The ports' capacity: over the fan schemes (all arcs from one node or into one),
    // N over the best repetition's last arrival, at least 1.
    let fans = ["out2", "out3", "in2", "in3"];
    let capacity = schemes
        .iter()
        .filter(|s| fans.contains(&s["name"].as_str().unwrap()))
        .map(|s| {
            let n = s["arcs"].as_array().unwrap().len() as f64;
            let best = lasts(s).into_iter().fold(f64::INFINITY, f64::min);
            n / (best / t_ref)
        })
        .fold(1.0, f64::max);
    let got = prof.penalty.port_capacity.expect("port_capacity written");
    assert!((got - capacity).abs() < 1e-9, "{got} vs {capacity}");
    assert!(prof.plogp.is_some());
    let res = prof.residuals.as_ref().unwrap();
    assert!(res["penalty"]["mean_abs_rel_error_pct"]["gige"].is_number());
    // Each arc's penalty: its mean over the scheme's repetitions whose last arrival is
    // within 1.25 x the best one's, over T_ref.
    for s in schemes.iter().filter(|s| s["name"] != "bidirectional") {
        let reps = reps_of(s);
        let last = lasts(s);
        let best = last.iter().copied().fold(f64::INFINITY, f64::min);
        let keep: Vec<&Vec<f64>> = reps
            .iter()
            .zip(&last)
            .filter(|(_, l)| **l <= 1.25 * best)
            .map(|(r, _)| r)
            .collect();
        let got = s["penalties"].as_array().unwrap();
        assert_eq!(got.len(), reps[0].len(), "{s}");
        for (a, p) in got.iter().enumerate() {
            let want = keep.iter().map(|r| r[a]).sum::<f64>() / keep.len() as f64 / t_ref;
            assert!((p.as_f64().unwrap() - want).abs() < 1e-9, "{s}: arc {a}");
        }
    }
    // The model written is the one most of the 20 resamples of the repetitions chose.
    let boot = &res["penalty"]["bootstrap"];
    assert_eq!(boot["resamples"], 20);
    let wins: Vec<(String, u64)> = boot["wins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w[0].as_str().unwrap().to_string(), w[1].as_u64().unwrap()))
        .collect();
    assert_eq!(wins.iter().map(|w| w.1).sum::<u64>(), 20, "{boot}");
    let most = wins.iter().map(|w| w.1).max().unwrap();
    if res["penalty"]["written"] == true {
        let chosen = wins.iter().find(|w| w.1 == most).unwrap();
        assert_eq!(prof.penalty.model, chosen.0, "{boot}");
    }
    assert_eq!(boot["ranges"].as_array().unwrap().len(), 6, "{boot}");
    // Contended flows' time over their arc's mean: 11 quantiles, the least at most 1 and
    // the greatest at least 1 (ratios to a mean straddle it).
    let q = prof
        .penalty
        .dispersion
        .as_ref()
        .expect("dispersion written");
    assert_eq!(q.len(), 11, "{q:?}");
    assert!(q.windows(2).all(|w| w[0] <= w[1]) && q[0] > 0.0, "{q:?}");
    assert!(q[0] <= 1.0 + 1e-12 && q[10] >= 1.0 - 1e-12, "{q:?}");
    // The leaders' all-to-all: every run kept, and each size's time its best run below
    // the eager limit read through MPI_T (`eager_limit`), else the median of its runs.
    let a2a = &prof.raw.as_ref().unwrap()["alltoall"];
    let secs = a2a["seconds"].as_array().unwrap();
    let runs = a2a["runs_s"].as_array().unwrap();
    let sizes = a2a["bytes"].as_array().unwrap();
    let limit = a2a["eager_limit"].as_u64();
    assert_eq!(secs.len(), runs.len());
    for ((t, r), m) in secs.iter().zip(runs).zip(sizes) {
        let mut r: Vec<f64> = r
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        r.sort_by(f64::total_cmp);
        let want = if limit.is_some_and(|e| m.as_u64().unwrap() < e) {
            r[0]
        } else {
            // The median (one rank a node): a stalled run does not move it.
            let n = r.len();
            if n % 2 == 1 {
                r[n / 2]
            } else {
                (r[n / 2 - 1] + r[n / 2]) / 2.0
            }
        };
        assert!(
            (t.as_f64().unwrap() - want).abs() < 1e-12,
            "{m}: {t} vs {want}"
        );
    }
    // The through-flow factor: the median over the repetitions of the ring (each node
    // sends to the next) of its last arrival, over T_ref, at least 1 (as the reverse
    // factor).
    let ring = schemes.iter().find(|s| s["name"] == "ring").unwrap();
    assert_eq!(
        ring["arcs"],
        serde_json::json!([[0, 1], [1, 2], [2, 3], [3, 0]])
    );
    let reps = lasts(ring);
    assert!(!reps.is_empty());
    let want = (median(reps) / t_ref).max(1.0);
    assert!(
        (prof.penalty.through - want).abs() < 1e-9,
        "{} vs {want}",
        prof.penalty.through
    );
}

/// Four ranks posing as two nodes of two ranks: besides the node leaders' measurements,
/// the all-to-all is measured over all four as launched, and the profile keeps its γ per
/// size (from the mean of the slowest rank's time) for 4 members with 2 per node.
#[test]
fn two_ranks_per_node_measure_the_all_to_all_as_launched() {
    require_mpirun();
    let dir = common::scratch("calibrate_mpi_placed");
    let wrap = node_wrapper(&dir, "$((r % 2))");
    let (o, p) = quick_calibration(4, &wrap, &dir, "262144");
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    // Seven phases between nodes, the latency as launched, the intra-node ping-pong and
    // this one: counted from the first line.
    assert!(e.contains("calibrate [1/10] warm-up"), "{e}");
    assert!(
        e.contains("all-to-all with all 4 ranks, 2 per node (5 sizes, mean of "),
        "{e}"
    );
    let prof = Profile::load(&p).unwrap();
    assert_eq!(prof.nodes, ["node0", "node1"]);
    assert_eq!(prof.alltoall_placed.len(), 1, "{:?}", prof.alltoall_placed);
    // Ranks 0 and 2 on node0, 1 and 3 on node1: pairs (0, 1) and (2, 3).
    assert_eq!(
        (
            prof.latency_placed[0].procs,
            prof.latency_placed[0].per_node
        ),
        (4, 2)
    );
    assert_eq!(
        prof.raw.as_ref().unwrap()["latency_placed"]["pairs"],
        serde_json::json!([[0, 1], [2, 3]])
    );
    let placed = &prof.alltoall_placed[0];
    assert_eq!((placed.procs, placed.per_node), (4, 2));
    let raw = &prof.raw.as_ref().unwrap()["alltoall_placed"];
    let bytes: Vec<u64> = raw["bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    assert_eq!(bytes, [1024, 16384, 65536, 262144, 524288]);
    let seconds = raw["seconds"].as_array().unwrap();
    assert_eq!(seconds.len(), 5);
    // Quick: 5 repetitions a size, up to 15 where they are short; never more for a
    // larger size.
    let counts: Vec<usize> = seconds
        .iter()
        .map(|s| s.as_array().unwrap().len())
        .collect();
    assert!(counts.iter().all(|c| (5..=15).contains(c)), "{counts:?}");
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{counts:?}");
    // Each size's γ is the signature solved at the mean of its repetitions (their best
    // below the eager limit read through MPI_T).
    let h = prof.hockney.inter;
    let limit = raw["eager_limit"].as_u64();
    for &(m, g) in &placed.gamma.0 {
        let k = bytes.iter().position(|&b| b == m).unwrap();
        let reps: Vec<f64> = seconds[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(reps.len(), counts[k]);
        let mean = if limit.is_some_and(|e| m < e) {
            reps.iter().copied().fold(f64::INFINITY, f64::min)
        } else {
            reps.iter().sum::<f64>() / reps.len() as f64
        };
        let want = (mean / 3.0 - h.alpha) / (h.beta * m as f64);
        assert!(
            (g - want).abs() < 1e-9 * want.abs().max(1.0),
            "{m}: {g} vs {want}"
        );
    }
}

//! The layer under real `mpirun` launches: exact records, translated peers, bytes, and
//! programs whose output is byte-identical with and without it.

mod common;
use common::*;
use std::collections::HashMap;

fn expected_basic() -> HashMap<(u32, String), usize> {
    let mut m = HashMap::new();
    let common = [
        ("MPI_Irecv", 2),
        ("MPI_Isend", 2),
        ("MPI_Waitall", 1),
        ("MPI_Bcast", 2),
        ("MPI_Alltoall", 1),
        ("MPI_Scatter", 1),
        ("MPI_Reduce", 1),
        ("MPI_Allreduce", 1),
        ("MPI_Barrier", 1),
        ("MPI_Gather", 1),
    ];
    let own: [&[(&str, usize)]; 4] = [
        &[("MPI_Send", 1), ("MPI_Recv", 5)],
        &[("MPI_Send", 2), ("MPI_Recv", 2)],
        &[
            ("MPI_Send", 3),
            ("MPI_Recv", 1),
            ("MPI_Irecv", 3),
            ("MPI_Wait", 1),
        ],
        &[("MPI_Send", 4), ("MPI_Recv", 1)],
    ];
    for rank in 0..4u32 {
        for (c, n) in common {
            m.insert((rank, c.to_string()), n);
        }
        for (c, n) in own[rank as usize] {
            m.insert((rank, c.to_string()), *n);
        }
    }
    m
}

#[test]
fn basic_program_exact_records_and_identical_output() {
    let dir = scratch("basic");
    let exe = build_program("basic", &dir);
    let plain = mpirun(4, &exe, &[], None, &dir);
    assert!(
        plain.status.success(),
        "plain run failed: {}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let with = mpirun(4, &exe, &[], Some(&[("PMPI_PREDICT_OUT", &out_s)]), &dir);
    assert_eq!(with.status.code(), plain.status.code());
    assert_eq!(
        String::from_utf8_lossy(&with.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    assert_eq!(String::from_utf8_lossy(&plain.stdout).lines().count(), 4);

    let rows = read_calls(&out);
    let got = counts(&rows);
    assert_eq!(got, expected_basic(), "records per (rank, call)");

    let find = |rank: &str, call: &str, tag: &str| -> Vec<&HashMap<String, String>> {
        rows.iter()
            .filter(|r| r["rank"] == rank && r["call"] == call && r["tag"] == tag)
            .collect()
    };
    // Ring: 100 ints to the next rank.
    for r in ["0", "1", "2", "3"] {
        let s = find(r, "MPI_Send", "7");
        assert_eq!(s.len(), 1);
        assert_eq!(s[0]["bytes"], "400");
        let next = (r.parse::<u32>().unwrap() + 1) % 4;
        assert_eq!(s[0]["peer"], next.to_string());
    }
    // ANY_SOURCE receives record the real sources.
    let mut srcs: Vec<String> = find("0", "MPI_Recv", "11")
        .iter()
        .map(|r| r["peer"].clone())
        .collect();
    srcs.sort();
    assert_eq!(srcs, vec!["1", "2", "3"]);
    assert!(
        find("0", "MPI_Recv", "11")
            .iter()
            .all(|r| r["bytes"] == "80")
    );
    let any = find("2", "MPI_Irecv", "31");
    assert_eq!(any.len(), 1);
    assert_eq!(any[0]["peer"], "3");
    assert_eq!(any[0]["bytes"], "4");
    assert_eq!(any[0]["nonblocking"], "1");
    // Split communicator with reversed keys: local rank 0 is WORLD 2 (or 3), local 1 is 0 (or 1).
    let s2 = find("2", "MPI_Send", "41");
    assert_eq!(
        (s2[0]["peer"].as_str(), s2[0]["comm_size"].as_str()),
        ("0", "2")
    );
    let s3 = find("3", "MPI_Send", "41");
    assert_eq!(s3[0]["peer"], "1");
    let r0 = find("0", "MPI_Recv", "41");
    assert_eq!(r0[0]["peer"], "2");
    // Bcast in the sub-communicator from local root 1 = WORLD 0 and WORLD 1.
    let bc = |rank: &str| {
        rows.iter()
            .find(|r| r["rank"] == rank && r["call"] == "MPI_Bcast" && r["comm_size"] == "2")
            .unwrap()
    };
    assert_eq!(
        (bc("0")["root"].as_str(), bc("0")["bytes_sent"].as_str()),
        ("0", "256")
    );
    assert_eq!(
        (bc("2")["root"].as_str(), bc("2")["bytes_received"].as_str()),
        ("0", "256")
    );
    assert_eq!(bc("3")["root"], "1");
    // Collective bytes.
    for r in &rows {
        match r["call"].as_str() {
            "MPI_Alltoall" => assert_eq!(
                (r["bytes_sent"].as_str(), r["bytes_received"].as_str()),
                ("4000", "4000")
            ),
            "MPI_Scatter" if r["rank"] == "0" => assert_eq!(r["bytes_sent"], "128"),
            "MPI_Scatter" => assert_eq!(
                (r["bytes_sent"].as_str(), r["bytes_received"].as_str()),
                ("0", "32")
            ),
            "MPI_Bcast" if r["comm_size"] == "4" => {
                assert_eq!(r["root"], "0");
                let moved: u64 = r["bytes"].parse().unwrap();
                assert_eq!(moved, 16384);
            }
            _ => {}
        }
    }
    // Nonblocking receives span from their post to the Waitall that completed them.
    for rank in ["0", "1", "2", "3"] {
        let wa = rows
            .iter()
            .find(|r| r["rank"] == rank && r["call"] == "MPI_Waitall")
            .unwrap();
        let (ws, we) = (f(wa, "start_s"), f(wa, "start_s") + f(wa, "measured_s"));
        for tag in ["21", "22"] {
            let ir = find(rank, "MPI_Irecv", tag);
            assert_eq!(ir.len(), 1);
            let (s, e) = (
                f(ir[0], "start_s"),
                f(ir[0], "start_s") + f(ir[0], "measured_s"),
            );
            assert!(
                s < ws,
                "rank {rank} Irecv tag {tag} posted at {s}, Waitall began {ws}"
            );
            assert!(
                e >= ws && e <= we + 1e-6,
                "rank {rank} Irecv ended {e}, Waitall {ws}..{we}"
            );
        }
    }
    // Summary agrees with the rows.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["complete"], true);
    assert_eq!(summary["dropped"], 0);
    assert_eq!(summary["records"].as_u64().unwrap() as usize, rows.len());
    assert_eq!(summary["calls"]["MPI_Send"]["count"], 10);
    assert_eq!(summary["calls"]["MPI_Barrier"]["count"], 4);
    assert_eq!(summary["calls"]["MPI_Gather"]["bytes"], 8 * 4 + 8 * 4);
    assert_eq!(summary["ranks"].as_array().unwrap().len(), 4);
    // The split communicator's members, in local-rank order, are in the rank's metadata.
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("rank-00000.json")).unwrap())
            .unwrap();
    let comms = meta["comms"].as_array().unwrap();
    assert!(
        comms
            .iter()
            .any(|c| c["world"] == serde_json::json!([2, 0])),
        "{comms:?}"
    );
}

#[test]
fn analyze_rebuilds_the_same_calls_csv() {
    let dir = scratch("analyze");
    let exe = build_program("basic", &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    // A profile of its own (slower within a node than the built-in one), named relative
    // to the ranks' working directory: analyze must take it from the run, not the
    // built-in one, to rebuild the same predictions.
    let mut prof = pmpi_core::profile::Profile::builtin_default();
    prof.hockney.intra.alpha = 5e-6;
    prof.hockney.intra.beta = 1e-9;
    std::fs::write(dir.join("own.json"), prof.to_json()).unwrap();
    let with = mpirun(
        4,
        &exe,
        &[],
        Some(&[
            ("PMPI_PREDICT_OUT", &out_s),
            ("PMPI_PREDICT_PROFILE", "own.json"),
        ]),
        &dir,
    );
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    let meta = pmpi_core::trace::read_meta(&pmpi_core::trace::meta_path(&out, 0)).unwrap();
    let own = std::fs::canonicalize(dir.join("own.json")).unwrap();
    assert_eq!(meta.profile.as_deref(), Some(own.to_str().unwrap()));
    let first = std::fs::read_to_string(out.join("calls.csv")).unwrap();
    std::fs::remove_file(out.join("calls.csv")).unwrap();
    let a = std::process::Command::new(common::cli_path())
        .arg("analyze")
        .arg(&out)
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(
        std::fs::read_to_string(out.join("calls.csv")).unwrap(),
        first
    );
    assert!(String::from_utf8_lossy(&a.stdout).contains("73 records from 4 ranks"));
    // Predicted as it is read (`--stream`), the same calls.csv.
    std::fs::remove_file(out.join("calls.csv")).unwrap();
    let s = std::process::Command::new(common::cli_path())
        .args(["analyze", "--quiet", "--stream"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    assert_eq!(
        std::fs::read_to_string(out.join("calls.csv")).unwrap(),
        first
    );

    // The ranks recorded which machine's CPUs they shared: 4 ranks on this machine share
    // its CPUs, so summary.json and analyze say so exactly when they outnumber them.
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert!(!meta.boot_id.is_empty());
    assert_eq!(meta.cpus as usize, cpus);
    // Unbound (`--bind-to none`), a rank may run on every CPU it was given.
    let list = pmpi_core::trace::parse_cpu_list(&meta.cpu_list).unwrap();
    assert!(list.len() >= cpus, "{list:?}");
    // And the machine's CPU time at init and at the end: it only grows, on every CPU of
    // the machine (/proc/stat's cpuN lines; at least the ones the rank could use).
    let (a0, a1) = (meta.host_cpu_init.unwrap(), meta.host_cpu_end.unwrap());
    assert!(a1.total >= a0.total && a1.irq >= a0.irq, "{a0:?} {a1:?}");
    assert!(
        a0.cpus as usize >= cpus && a0.cpus == a1.cpus,
        "{a0:?} {a1:?}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let sharing = summary["cpu_sharing"].as_array().unwrap();
    let noted = String::from_utf8_lossy(&a.stderr).contains("4 ranks shared");
    if cpus < 4 {
        assert_eq!(sharing.len(), 1, "{sharing:?}");
        assert_eq!(sharing[0]["ranks"], 4);
        assert_eq!(sharing[0]["cpus"], cpus as u64);
        assert!(
            sharing[0]["time_slice_s"].as_f64().unwrap() > 0.0,
            "{sharing:?}"
        );
        assert!(noted, "{}", String::from_utf8_lossy(&a.stderr));
    } else {
        assert!(sharing.is_empty() && !noted, "{sharing:?}");
    }
}

#[test]
fn disabled_layer_writes_nothing_and_changes_nothing() {
    let dir = scratch("disabled");
    let exe = build_program("basic", &dir);
    let plain = mpirun(4, &exe, &[], None, &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let with = mpirun(
        4,
        &exe,
        &[],
        Some(&[("PMPI_PREDICT_OUT", &out_s), ("PMPI_PREDICT_DISABLE", "1")]),
        &dir,
    );
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert_eq!(with.stdout, plain.stdout);
    assert!(!out.exists(), "disabled layer created {}", out.display());
}

#[test]
fn default_output_directory_is_named_by_date_and_pid() {
    let dir = scratch("defaultdir");
    let exe = build_program("basic", &dir);
    let with = mpirun(4, &exe, &[], Some(&[("PMPI_PREDICT_QUIET", "1")]), &dir);
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    let made: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("pmpi-predict."))
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    let parts: Vec<&str> = made[0].split('.').collect();
    assert_eq!(parts.len(), 3, "{}", made[0]);
    let (date, pid) = (parts[1], parts[2]);
    assert_eq!(date.len(), 15);
    assert_eq!(&date[8..9], "-");
    assert!(
        date.chars()
            .filter(|c| *c != '-')
            .all(|c| c.is_ascii_digit())
    );
    assert!(pid.parse::<u32>().is_ok());
    assert!(dir.join(&made[0]).join("calls.csv").exists());
}

#[test]
fn a_trace_above_the_report_limit_is_left_for_analyze() {
    let dir = scratch("report-limit");
    let exe = build_program("basic", &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let with = mpirun(
        4,
        &exe,
        &[],
        Some(&[
            ("PMPI_PREDICT_OUT", &out_s),
            ("PMPI_PREDICT_REPORT_MAX_MB", "0"),
        ]),
        &dir,
    );
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    let err = String::from_utf8_lossy(&with.stderr);
    assert_eq!(
        err.matches("exceed PMPI_PREDICT_REPORT_MAX_MB=0").count(),
        1,
        "{err}"
    );
    assert!(!out.join("calls.csv").exists());
    assert!(out.join("rank-00003.spool").exists());
    let a = std::process::Command::new(common::cli_path())
        .arg("analyze")
        .arg(&out)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(a.status.success());
    assert!(out.join("calls.csv").exists());
}

/// Above PMPI_PREDICT_BATCH_MAX_MB of spools (0 here), rank 0 writes the report at
/// MPI_Finalize as the run is read: calls.csv, summary.json, hotspots.json, report.html
/// and trace.json the same bytes as the batch `analyze` writes afterwards, and one line
/// saying so.
#[test]
fn above_the_batch_size_the_finalize_report_is_streamed() {
    let dir = scratch("report-streamed");
    let exe = build_program("basic", &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let with = mpirun(
        4,
        &exe,
        &[],
        Some(&[
            ("PMPI_PREDICT_OUT", &out_s),
            ("PMPI_PREDICT_BATCH_MAX_MB", "0"),
        ]),
        &dir,
    );
    let err = String::from_utf8_lossy(&with.stderr);
    assert!(with.status.success(), "{err}");
    assert_eq!(
        err.matches("analysed as they were read (bounded memory)")
            .count(),
        1,
        "{err}"
    );
    let files = pmpi_core::report::REPORT_FILES;
    let streamed: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(out.join(f)).unwrap())
        .collect();
    let a = std::process::Command::new(common::cli_path())
        .arg("analyze")
        .arg(&out)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    for (f, s) in files.iter().zip(&streamed) {
        assert!(
            std::fs::read(out.join(f)).unwrap() == *s,
            "{f} of the streamed finalize report differs from analyze's"
        );
    }
}

#[test]
fn banner_at_init_and_finalize_unless_quiet() {
    let dir = scratch("banner");
    let exe = build_program("basic", &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let r = mpirun(4, &exe, &[], Some(&[("PMPI_PREDICT_OUT", &out_s)]), &dir);
    assert!(r.status.success());
    let err = String::from_utf8_lossy(&r.stderr);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("pmpi-predict"))
        .collect();
    let init = format!("recording 4 ranks into {out_s}; model gige, built-in default profile");
    assert_eq!(
        lines.iter().filter(|l| l.contains(&init)).count(),
        1,
        "one init banner, from rank 0: {lines:?}"
    );
    assert!(
        lines.iter().any(
            |l| l.contains("73 records from 4 ranks (0 dropped), analysed in")
                && l.contains(&format!("report in {out_s}"))
        ),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("per-rank error of the prediction")
                && l.contains("contention-free baseline")),
        "{lines:?}"
    );
    let q = mpirun(
        4,
        &exe,
        &[],
        Some(&[
            ("PMPI_PREDICT_OUT", &format!("{out_s}-quiet")),
            ("PMPI_PREDICT_QUIET", "1"),
        ]),
        &dir,
    );
    assert!(q.status.success());
    let qerr = String::from_utf8_lossy(&q.stderr);
    assert!(!qerr.contains("pmpi-predict"), "{qerr}");
}

#[test]
fn ranks_bound_to_their_own_cores_share_no_cpu() {
    // Open MPI binds each rank to a core of its own (`--bind-to core`, its default at 2
    // ranks; Slurm does as much): each may use one CPU, yet none waits for another's.
    let (l, mut prefix, ompi) = common::launch_prefix(2);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !ompi || cores < 2 {
        eprintln!("skipped: needs Open MPI's mpirun and 2 cores (have {cores})");
        return;
    }
    let dir = scratch("bound");
    let exe = build_program("steady", &dir);
    let out = dir.join("out");
    let k = prefix.iter().position(|a| a == "--bind-to").unwrap();
    prefix[k + 1] = "core".into();
    prefix.splice(k..k, ["--map-by".to_string(), "core".to_string()]);
    let out_s = out.display().to_string();
    let o = common::mpirun_as(
        (l, prefix, ompi),
        &exe,
        &["20", "1024", "1"],
        Some(&[("PMPI_PREDICT_OUT", &out_s)]),
        &dir,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lists: Vec<Vec<u32>> = (0..2)
        .map(|rank| {
            let meta =
                pmpi_core::trace::read_meta(&pmpi_core::trace::meta_path(&out, rank)).unwrap();
            assert_eq!(meta.cpus, 1, "rank {rank}: {meta:?}");
            pmpi_core::trace::parse_cpu_list(&meta.cpu_list).unwrap()
        })
        .collect();
    assert_eq!(lists[0].len(), 1, "{lists:?}");
    assert_eq!(lists[1].len(), 1, "{lists:?}");
    assert_ne!(lists[0], lists[1]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["cpu_sharing"].as_array().map_or(0, Vec::len),
        0,
        "{summary}"
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains("ranks shared"));
}

/// Open MPI's progress thread, asked for in the ranks' environment
/// (`OMPI_MCA_btl_tcp_progress_thread`, as `mpirun --mca` sets it), is recorded in every
/// rank's metadata; without it, not.
#[test]
fn open_mpi_s_progress_thread_is_recorded() {
    let dir = scratch("progress-thread");
    let exe = build_program("basic", &dir);
    for (value, on) in [("1", true), ("0", false)] {
        let out = dir.join(format!("out{value}"));
        let out_s = out.display().to_string();
        let o = mpirun(
            4,
            &exe,
            &[],
            Some(&[
                ("PMPI_PREDICT_OUT", &out_s),
                ("PMPI_PREDICT_QUIET", "1"),
                ("OMPI_MCA_btl_tcp_progress_thread", value),
            ]),
            &dir,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        for rank in 0..4 {
            let meta =
                pmpi_core::trace::read_meta(&pmpi_core::trace::meta_path(&out, rank)).unwrap();
            assert_eq!(meta.progress_thread, on, "rank {rank}, value {value}");
        }
    }
}

//! A small version of the accuracy benchmark (scripts/bench-accuracy --quick: 4 emulated
//! hosts, 3 sizes) end to end: every stage must produce complete, well-formed output.
//! Accuracy figures are printed, not asserted. Ignored by default: it needs network
//! namespaces (root, `ip netns`), and fails, rather than passing, where they are missing.

mod common;

use std::path::Path;
use std::process::Command;

fn can_make_namespaces() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    let ok = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err("`ip netns` is not available".into())
    }
}

#[test]
#[ignore = "needs root and network namespaces (an emulated cluster): scripts/test runs it with --include-ignored where they exist"]
fn quick_accuracy_pipeline_produces_complete_output() {
    if let Err(why) = can_make_namespaces() {
        panic!("cannot run here: {why} (this test is ignored unless asked for)");
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("accuracy-quick");
    let _ = std::fs::remove_dir_all(&out);
    let root = env!("CARGO_MANIFEST_DIR");
    let run = Command::new("scripts/bench-accuracy")
        .args(["--quick", "--no-results", "--out"])
        .arg(&out)
        .current_dir(root)
        .output()
        .expect("bench-accuracy runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "bench-accuracy --quick failed");

    // Calibration wrote a valid profile.
    let profile = pmpi_core::profile::Profile::load(out.join("profile.json"))
        .expect("calibrate wrote profile.json");
    assert!(profile.hockney.inter.beta > 0.0);
    // Every workload ran to MPI_Finalize and has predictions for the calls it measures.
    for (dir, call) in [
        ("alltoall-n4", "MPI_Alltoall"),
        ("coll-n4", "MPI_Bcast"),
        ("coll-n4", "MPI_Scatter"),
        ("conflicts", "MPI_Irecv"),
    ] {
        let d = out.join(dir);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["complete"], true, "{dir} incomplete");
        assert_eq!(summary["dropped"], 0, "{dir} dropped records");
        let mut r = csv::Reader::from_path(d.join("calls.csv")).unwrap();
        let h = r.headers().unwrap().clone();
        let ci = h.iter().position(|x| x == "call").unwrap();
        let pi = h.iter().position(|x| x == "predicted_s").unwrap();
        let rows: Vec<csv::StringRecord> = r
            .records()
            .map(Result::unwrap)
            .filter(|x| &x[ci] == call)
            .collect();
        assert!(!rows.is_empty(), "{dir}: no {call} rows");
        for row in &rows {
            let p: f64 = row[pi]
                .parse()
                .unwrap_or_else(|_| panic!("{dir}: {call} without prediction"));
            assert!(p.is_finite() && p > 0.0, "{dir}: {call} predicted {p}");
        }
        let hot: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("hotspots.json")).unwrap())
                .unwrap();
        assert!(
            hot["intervals"].is_array() && hot["waited_for"].is_array(),
            "{dir}: hotspots"
        );
        // Only ranks that lost time to contention are listed, at most the 4 of the run.
        let ranks = hot["ranks"].as_array().unwrap();
        assert!(ranks.len() <= 4, "{dir}: {ranks:?}");
        for r in ranks {
            assert!(r["lost_s"].as_f64().unwrap() > 0.0, "{dir}: {r}");
        }
    }
    // The accuracy tables have one group per size (3) and the six conflict schemes.
    let groups = |f: &str| -> usize {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(f)).unwrap()).unwrap();
        v["groups"].as_array().unwrap().len()
    };
    assert_eq!(groups("alltoall-n4/accuracy-alltoall.json"), 3);
    assert_eq!(groups("coll-n4/accuracy-bcast.json"), 3);
    assert_eq!(groups("coll-n4/accuracy-scatter.json"), 3);
    assert_eq!(groups("conflicts/accuracy-conflicts.json"), 6);
    // `analyze` on the spools reproduces the predictions written at MPI_Finalize.
    let copy = out.join("alltoall-n4-analyze");
    std::fs::create_dir_all(&copy).unwrap();
    for e in std::fs::read_dir(out.join("alltoall-n4")).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("rank-") {
            std::fs::copy(e.path(), copy.join(&name)).unwrap();
        }
    }
    let a = Command::new(common::cli_path())
        .arg("analyze")
        .arg(&copy)
        .arg("--quiet")
        .arg("--profile")
        .arg(out.join("profile.json"))
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(
        std::fs::read_to_string(copy.join("calls.csv")).unwrap(),
        std::fs::read_to_string(out.join("alltoall-n4/calls.csv")).unwrap(),
        "analyze and MPI_Finalize disagree"
    );
    // One summary line per family.
    for fam in ["alltoall", "bcast", "scatter", "conflicts"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(fam) && l.contains("median |E_rel| model")),
            "no summary line for {fam}"
        );
    }
}

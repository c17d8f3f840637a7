//! Debian's HPC Challenge (HPL and the other kernels) under the layer: it completes,
//! reports the same pass/fail verdicts as without, and its MPI traffic is recorded.

mod common;
use common::*;
use std::path::Path;

const INPUT: &str = "/usr/share/doc/hpcc/examples/_hpccinf.txt";

/// Lines of hpccoutf.txt that carry a verdict, with the timings and rates removed.
fn verdicts(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("hpccoutf.txt")).expect("hpcc wrote hpccoutf.txt");
    text.lines()
        .filter(|l| {
            let u = l.to_ascii_uppercase();
            u.contains("PASSED") || u.contains("FAILED") || u.contains("ERRORS IN")
        })
        .map(|l| {
            let u = l.to_ascii_uppercase();
            let verdict = if u.contains("FAILED") && !u.contains("0 TESTS COMPLETED AND FAILED") {
                "FAILED"
            } else {
                "PASSED"
            };
            // Keep the kind of check (first word) and its verdict only: numbers vary per run.
            format!("{} {verdict}", l.split_whitespace().next().unwrap_or(""))
        })
        .collect()
}

fn prepare(dir: &Path) {
    let input = std::fs::read_to_string(INPUT).expect("hpcc installed (apt-get install hpcc)");
    // A small problem: N = 500 on a 2 x 2 grid.
    let small = input.replacen("1000         Ns", "500          Ns", 1);
    assert_ne!(small, input, "unexpected hpcc example input");
    std::fs::write(dir.join("hpccinf.txt"), small).unwrap();
}

#[test]
fn hpcc_runs_under_the_layer_with_the_same_verdicts() {
    let hpcc = Path::new("/usr/bin/hpcc");
    assert!(hpcc.exists(), "hpcc is not installed: apt-get install hpcc");
    // Debian's hpcc is built against Open MPI: this file is not an `mpi_*` test, so
    // scripts/test-mpich does not run it under MPICH's launcher.
    let plain_dir = scratch("hpcc-plain");
    let layer_dir = scratch("hpcc-layer");
    prepare(&plain_dir);
    prepare(&layer_dir);
    let plain = mpirun(4, hpcc, &[], None, &plain_dir);
    assert!(
        plain.status.success(),
        "hpcc without the layer: {}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let out = layer_dir.join("out");
    let out_s = out.display().to_string();
    let with = mpirun(
        4,
        hpcc,
        &[],
        Some(&[("PMPI_PREDICT_OUT", &out_s)]),
        &layer_dir,
    );
    assert_eq!(
        with.status.code(),
        plain.status.code(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );

    let (v0, v1) = (verdicts(&plain_dir), verdicts(&layer_dir));
    assert!(v0.len() >= 5, "too few verdicts in hpccoutf.txt: {v0:?}");
    assert!(v0.iter().all(|v| v.ends_with("PASSED")), "{v0:?}");
    assert!(v1.iter().all(|v| v.ends_with("PASSED")), "{v1:?}");
    // PTRANS prints a `CPU` row only when its CPU time is above the clock's resolution,
    // which varies run to run (seen: one of five missing, with or without the layer):
    // every other verdict must be the same, in the same order.
    let no_cpu = |v: &[String]| -> Vec<String> {
        v.iter()
            .filter(|x| !x.starts_with("CPU "))
            .cloned()
            .collect()
    };
    assert_eq!(no_cpu(&v0), no_cpu(&v1));

    let rows = read_calls(&out);
    for call in [
        "MPI_Send",
        "MPI_Recv",
        "MPI_Isend",
        "MPI_Irecv",
        "MPI_Alltoall",
        "MPI_Bcast",
    ] {
        let n = rows.iter().filter(|r| r["call"] == call).count();
        assert!(n > 0, "no {call} records in hpcc's calls.csv");
        for rank in 0..4 {
            let k = rows
                .iter()
                .filter(|r| r["call"] == call && r["rank"] == rank.to_string())
                .count();
            assert!(
                k > 0 || call == "MPI_Send" || call == "MPI_Recv",
                "rank {rank} has no {call}"
            );
        }
    }
    // Point-to-point peers are WORLD ranks of the 4-rank job.
    assert!(
        rows.iter()
            .filter(|r| r["call"] == "MPI_Isend")
            .all(|r| ["0", "1", "2", "3"].contains(&r["peer"].as_str()))
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["complete"], true);
    assert_eq!(summary["dropped"], 0);
}

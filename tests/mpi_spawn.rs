//! A world started by `MPI_Comm_spawn` inherits the launch's environment, so the layer
//! and PMPI_PREDICT_OUT: it records into `spawned-K` of that directory (K = 1, 2, ... in
//! the order the worlds start), never over the files of the world that spawned it.

mod common;
use common::*;
use std::path::Path;

/// The calls.csv rows of `call`: (peer, measured_s, predicted_s, reason).
fn cells(dir: &Path, call: &str) -> Vec<(String, String, String, String)> {
    read_calls(dir)
        .into_iter()
        .filter(|r| r["call"] == call)
        .map(|r| {
            let c = |k: &str| r[k].clone();
            (c("peer"), c("measured_s"), c("predicted_s"), c("reason"))
        })
        .collect()
}

/// Rows of calls.csv, and of them the calls named `call`.
fn rows(dir: &Path, call: &str) -> (usize, usize) {
    let rows = read_calls(dir);
    let named = rows.iter().filter(|r| r["call"] == call).count();
    (rows.len(), named)
}

fn world_size(dir: &Path, rank: u32) -> u64 {
    let meta = std::fs::read_to_string(dir.join(format!("rank-{rank:05}.json"))).unwrap();
    let v: serde_json::Value = serde_json::from_str(&meta).unwrap();
    v["world_size"].as_u64().unwrap()
}

#[test]
fn spawned_worlds_record_beside_their_parent() {
    let dir = scratch("spawn");
    let exe = build_program("spawn", &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let plain = mpirun(2, &exe, &[], None, &dir);
    // MPICH's ch4 from Debian, launched with HYDRA_LAUNCHER=fork (scripts/test-mpich),
    // fails MPI_Comm_spawn without the layer ("Error in spawn call"): nothing to compare.
    if !plain.status.success() && String::from_utf8_lossy(&plain.stderr).contains("Comm_spawn") {
        eprintln!(
            "skipped: MPI_Comm_spawn fails here without the layer: {}",
            String::from_utf8_lossy(&plain.stderr)
        );
        return;
    }
    assert!(plain.status.success(), "{:?}", plain);
    let want = sorted_lines(&plain.stdout);
    assert_eq!(
        want,
        [
            "child 0 of 2 got 41 sum 41",
            "child 0 of 2 got 42 sum 42",
            "child 1 of 2 got 41 sum 41",
            "child 1 of 2 got 42 sum 42",
            "parent 0 of 2 sum 99",
            "parent 1 of 2 sum 99",
        ]
    );

    let with = mpirun(2, &exe, &[], Some(&[("PMPI_PREDICT_OUT", &out_s)]), &dir);
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    // The program's results are its own.
    assert_eq!(sorted_lines(&with.stdout), want);
    // The parent world: 2 ranks, 2 x 50 all-reduces each, rank 0's four sends.
    assert_eq!(world_size(&out, 0), 2);
    assert_eq!(rows(&out, "MPI_Allreduce"), (204, 200));
    // Its sends to the spawned worlds: a peer outside WORLD, no model of the other
    // side, so the measured time is kept and the row says why.
    let sends = cells(&out, "MPI_Send");
    assert_eq!(sends.len(), 4);
    for (peer, measured, predicted, reason) in &sends {
        assert_eq!(
            (peer.as_str(), predicted, reason.as_str()),
            ("unknown", measured, "unmatched")
        );
    }
    // Each spawned world: 2 ranks, one receive and 50 all-reduces each, in its own
    // directory with its own report.
    for k in 1..=2 {
        let sub = out.join(format!("spawned-{k}"));
        assert_eq!(world_size(&sub, 0), 2, "{}", sub.display());
        assert_eq!(world_size(&sub, 1), 2, "{}", sub.display());
        assert_eq!(rows(&sub, "MPI_Allreduce"), (102, 100), "{}", sub.display());
        let recvs = cells(&sub, "MPI_Recv");
        assert_eq!(recvs.len(), 2, "{}", sub.display());
        for (peer, measured, predicted, reason) in &recvs {
            assert_eq!(
                (peer.as_str(), predicted, reason.as_str()),
                ("unknown", measured, "unmatched")
            );
        }
        assert!(sub.join("summary.json").exists());
    }
    assert!(!out.join("spawned-3").exists());
}

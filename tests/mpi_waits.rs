//! Wait states on real `mpirun` launches with known causes (tests/programs/waits.c): the
//! kind is asserted, and that the wait is above half the injected sleep, never a tight time.

mod common;
use common::*;

#[test]
fn late_sender_and_barrier_waits_are_measured_and_predicted_and_one_node_has_no_contention() {
    let dir = scratch("waits");
    let exe = build_program("waits", &dir);
    let (out, run) = mpirun_recorded(4, &exe, &[], &dir);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let rows = read_calls(&out);
    // A rank's last call of its kind: the program's first barrier only lines the ranks up.
    let row = |rank: &str, call: &str| {
        rows.iter()
            .filter(|r| r["rank"] == rank && r["call"] == call)
            .max_by(|a, b| f(a, "start_s").total_cmp(&f(b, "start_s")))
            .unwrap_or_else(|| panic!("no {call} on rank {rank}"))
    };
    // Rank 0's receive waited for rank 1's sleep: measured and, since the replay keeps
    // rank 1's compute gap, predicted.
    let recv = row("0", "MPI_Recv");
    assert_eq!(recv["wait_kind"], "late-sender", "{recv:?}");
    assert!(f(recv, "wait_s") > 0.1, "{recv:?}");
    assert_eq!(recv["pred_wait_kind"], "late-sender", "{recv:?}");
    assert!(f(recv, "pred_wait_s") > 0.1, "{recv:?}");
    // Rank 0 polled with MPI_Test while rank 3 slept: one row for the loop, from its first
    // unsuccessful test, a late sender measured and predicted.
    let mut tests: Vec<_> = rows
        .iter()
        .filter(|r| r["rank"] == "0" && r["call"] == "MPI_Test")
        .collect();
    tests.sort_by(|a, b| f(a, "start_s").total_cmp(&f(b, "start_s")));
    assert_eq!(tests.len(), 3, "{tests:?}");
    // Then a loop alternating between two late messages: neither test that succeeded is
    // charged with the 200 ms the loop waited on both.
    for t in &tests[1..] {
        assert!(f(t, "measured_s") < 0.1, "{t:?}");
    }
    let t = tests[0];
    // The spools: the tight loop's polls are in its successful test (FLAG_POLLED); the
    // alternating loop's are not, so the record after them says polls ran before it
    // (FLAG_GAP_POLLS: the progress engine ran in that gap). No other rank polled.
    use pmpi_core::trace::{FLAG_GAP_POLLS, FLAG_POLLED, call};
    let run = pmpi_core::trace::load_run(&out).unwrap();
    for rk in &run.ranks {
        assert!(rk.meta.gap_polls, "rank {}", rk.meta.rank);
        let gap: Vec<_> = rk
            .records
            .iter()
            .filter(|r| r.flags & FLAG_GAP_POLLS != 0)
            .collect();
        if rk.meta.rank != 0 {
            assert!(gap.is_empty(), "rank {}: {gap:?}", rk.meta.rank);
            continue;
        }
        let mut t0: Vec<_> = rk
            .records
            .iter()
            .filter(|r| r.call == call::MPI_Test)
            .collect();
        t0.sort_by_key(|r| r.t_start);
        assert_eq!(t0.len(), 3, "{t0:?}");
        assert_eq!(t0[0].flags & (FLAG_POLLED | FLAG_GAP_POLLS), FLAG_POLLED);
        assert!(
            !gap.is_empty() && gap.iter().all(|r| r.call == call::MPI_Test),
            "{gap:?}"
        );
    }
    assert!(f(t, "measured_s") > 0.1, "{t:?}");
    assert_eq!(t["wait_kind"], "late-sender", "{t:?}");
    assert!(f(t, "wait_s") > 0.1, "{t:?}");
    assert_eq!(t["pred_wait_kind"], "late-sender", "{t:?}");
    assert!(f(t, "pred_wait_s") > 0.1, "{t:?}");
    // The barrier: everyone waited for rank 2's longer sleep.
    let b = row("3", "MPI_Barrier");
    assert_eq!(b["wait_kind"], "wait-at-barrier", "{b:?}");
    assert!(f(b, "wait_s") > 0.1, "{b:?}");
    assert_eq!(b["pred_wait_kind"], "wait-at-barrier", "{b:?}");
    assert!(f(b, "pred_wait_s") > 0.1, "{b:?}");
    assert!(f(row("2", "MPI_Barrier"), "wait_s") < f(b, "wait_s") / 2.0);
    // Every row predicted; one node: no time lost to contention anywhere.
    for r in &rows {
        assert_eq!(r["reason"], "", "{r:?}");
        assert!(r["predicted_s"].parse::<f64>().is_ok(), "{r:?}");
        assert_eq!(f(r, "contention_s"), 0.0, "{r:?}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The tight loop's unsuccessful tests are in its row, not counted again among the
    // rank's polls: rank 0's MPI time fits in the span of its calls.
    let r0: Vec<_> = rows.iter().filter(|r| r["rank"] == "0").collect();
    let first = r0
        .iter()
        .map(|r| f(r, "start_s"))
        .fold(f64::INFINITY, f64::min);
    let last = r0
        .iter()
        .map(|r| f(r, "start_s") + f(r, "measured_s"))
        .fold(0.0, f64::max);
    let mpi0 = summary["ranks"][0]["mpi_time_s"].as_f64().unwrap();
    assert!(
        mpi0 <= last - first + 1e-3,
        "{mpi0} s of MPI in {} s",
        last - first
    );
    let p = &summary["prediction"];
    assert_eq!(p["contention_loss_s"]["by_rank"], serde_json::json!({}));
    assert!(
        p["wait_s"]["measured_by_kind"]["late-sender"]
            .as_f64()
            .unwrap()
            > 0.1
    );
    assert!(
        p["wait_s"]["measured_caused_by_rank"]["1"]
            .as_f64()
            .unwrap()
            > 0.1
    );
    assert!(
        p["wait_s"]["measured_caused_by_rank"]["2"]
            .as_f64()
            .unwrap()
            > 0.1
    );
    assert_eq!(p["not_predicted"], serde_json::json!({}));
    let hot: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("hotspots.json")).unwrap()).unwrap();
    assert_eq!(hot["ranks"], serde_json::json!([]));
    // Ranks 1 and 2 made others wait; how long the first barrier's latecomer (whoever left
    // MPI_Init last) made them wait is the launcher's business, so no order is asserted.
    let waited: Vec<(i64, f64)> = hot["waited_for"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["rank"].as_i64().unwrap(), w["caused_s"].as_f64().unwrap()))
        .collect();
    for rank in [1, 2] {
        assert!(
            waited.iter().any(|&(r, s)| r == rank && s > 0.1),
            "{waited:?}"
        );
    }
}

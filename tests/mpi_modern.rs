//! The calls modern codes make (tests/programs/modern_calls.c) under real launches:
//! nonblocking collectives, persistent requests, Reduce_scatter(_block), Scan, Exscan,
//! Alltoallw, Sendrecv_replace, matched probes and one-sided transfers (MPI_Put ... and the
//! request-based MPI_Rput, MPI_Rget, MPI_Raccumulate, MPI_Rget_accumulate, and
//! MPI_Fetch_and_op, MPI_Compare_and_swap). The program writes what the layer should
//! record; the census of calls.csv must equal it exactly, record for record (call, peer,
//! root, bytes each way, communicator size, nonblocking, source), and every row must be
//! predicted. Its v/w variants (blocking and not, neighbourhood ones on a Cartesian ring
//! and a distributed-graph star) have unequal counts per peer, and its uniform
//! neighbourhood collectives (on the ring, the star, a graph and a non-periodic Cartesian
//! line, whose MPI_PROC_NULL ends move nothing) equal ones: the per-peer bytes the spools
//! hold must be the program's, peer for peer.

mod common;
use common::*;
use std::collections::HashMap;

/// One record as the program expects it and as calls.csv has it ("-" for an empty field).
type Key = (u32, String, String, String, u64, u64, u32, u8, String);

fn dash(s: &str) -> String {
    if s.is_empty() { "-".into() } else { s.into() }
}

fn tally<K: std::hash::Hash + Eq, I: IntoIterator<Item = K>>(it: I) -> HashMap<K, usize> {
    let mut m = HashMap::new();
    for k in it {
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

/// The keys on which two tallies differ, with each side's count, sorted.
fn differences<'a, K: Ord + std::hash::Hash>(
    got: &'a HashMap<K, usize>,
    want: &'a HashMap<K, usize>,
) -> Vec<(&'a K, Option<&'a usize>, Option<&'a usize>)> {
    let mut d: Vec<_> = got
        .keys()
        .chain(want.keys())
        .filter(|k| got.get(*k) != want.get(*k))
        .map(|k| (k, got.get(k), want.get(k)))
        .collect();
    d.sort();
    d.dedup();
    d
}

#[test]
fn modern_calls_census_matches_the_program_and_every_row_is_predicted() {
    let dir = scratch("modern");
    let exe = build_program("modern_calls", &dir);
    let plain = mpirun(4, &exe, &[], None, &dir);
    assert!(
        plain.status.success(),
        "plain run failed: {}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let (out, with) = mpirun_recorded(4, &exe, &[], &dir);
    assert_eq!(
        with.status.code(),
        plain.status.code(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    // Same results with and without the layer (ranks print in any order).
    assert_eq!(sorted_lines(&with.stdout), sorted_lines(&plain.stdout));
    assert_eq!(sorted_lines(&plain.stdout).len(), 4);

    // What the program says it did.
    let mut expected: Vec<Key> = Vec::new();
    let mut expected_arcs = Vec::new();
    let mut own_counts: HashMap<(u32, String), usize> = HashMap::new();
    for rank in 0..4u32 {
        let text = std::fs::read_to_string(dir.join(format!("modern-{rank}.txt"))).unwrap();
        for line in text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            match w[0] {
                "ROW" => expected.push((
                    rank,
                    w[1].to_string(),
                    w[2].to_string(),
                    w[3].to_string(),
                    w[4].parse().unwrap(),
                    w[5].parse().unwrap(),
                    w[6].parse().unwrap(),
                    w[7].parse().unwrap(),
                    w[8].to_string(),
                )),
                "ARC" => expected_arcs.push((
                    rank,
                    w[1].to_string(),
                    w[2].to_string(),
                    w[3].parse::<i32>().unwrap(),
                    w[4].parse::<u64>().unwrap(),
                )),
                "COUNT" => {
                    own_counts.insert((rank, w[1].to_string()), w[2].parse().unwrap());
                }
                _ => panic!("unexpected line {line:?}"),
            }
        }
    }
    assert!(
        expected.len() > 250,
        "the program describes {} records",
        expected.len()
    );

    let rows = read_calls(&out);
    // The census per call name and rank: exactly the program's own counts.
    let census = counts(&rows);
    // The request-based and atomic one-sided calls, once per rank each.
    for rank in 0..4u32 {
        for call in [
            "MPI_Rput",
            "MPI_Rget",
            "MPI_Raccumulate",
            "MPI_Rget_accumulate",
            "MPI_Fetch_and_op",
            "MPI_Compare_and_swap",
        ] {
            assert_eq!(
                census.get(&(rank, call.to_string())),
                Some(&1),
                "{rank} {call}"
            );
        }
    }
    let differ = differences(&census, &own_counts);
    assert!(
        differ.is_empty(),
        "(rank, call): recorded, counted by the program: {differ:?}"
    );
    // Record for record: peers, roots and sources as WORLD ranks (also on the split
    // communicator), bytes each way, communicator size, nonblocking.
    let got = tally(rows.iter().map(|r| {
        (
            r["rank"].parse().unwrap(),
            r["call"].clone(),
            dash(&r["peer"]),
            dash(&r["root"]),
            r["bytes_sent"].parse().unwrap(),
            r["bytes_received"].parse().unwrap(),
            r["comm_size"].parse().unwrap(),
            r["nonblocking"].parse().unwrap(),
            dash(&r["source"]),
        )
    }));
    let want = tally(expected);
    let mut missing: Vec<_> = want
        .iter()
        .filter(|(k, n)| got.get(*k) != Some(n))
        .collect();
    missing.sort();
    let mut extra: Vec<_> = got
        .iter()
        .filter(|(k, n)| want.get(*k) != Some(n))
        .collect();
    extra.sort();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "expected but not recorded (or another number of times): {missing:#?}\nrecorded but not expected: {extra:#?}"
    );

    // Per-peer bytes of the v/w variants and the neighbourhood collectives, as the spools'
    // continuation records hold them:
    // (rank, call, S or R, WORLD peer, bytes), each exactly as often as the program says.
    let run = pmpi_core::trace::load_run(&out).unwrap();
    let mut arcs = Vec::new();
    for rk in &run.ranks {
        for a in &rk.arcs {
            let r = &rk.records[a.rec as usize];
            assert_ne!(r.flags & pmpi_core::trace::FLAG_ARCS, 0, "{r:?}");
            let call = pmpi_core::trace::call_name(r.call).to_string();
            for (dir, pairs) in [("S", &a.send), ("R", &a.recv)] {
                for &(peer, bytes) in pairs.iter().flatten() {
                    arcs.push((
                        rk.meta.rank as u32,
                        call.clone(),
                        dir.to_string(),
                        peer,
                        bytes,
                    ));
                }
            }
        }
        // Every call that says continuations follow has them, whole.
        let flagged = rk
            .records
            .iter()
            .filter(|r| r.flags & pmpi_core::trace::FLAG_ARCS != 0)
            .count();
        assert_eq!(flagged, rk.arcs.len(), "rank {}", rk.meta.rank);
    }
    let (got_arcs, want_arcs) = (tally(arcs), tally(expected_arcs));
    let differ = differences(&got_arcs, &want_arcs);
    assert!(
        want_arcs.len() > 100 && differ.is_empty(),
        "(rank, call, dir, peer, bytes): recorded, expected: {differ:#?}"
    );
    // The uniform neighbourhood collectives among them, both ways at every rank; none to
    // or from MPI_PROC_NULL (the line's ends).
    for rank in 0..4u32 {
        for call in [
            "MPI_Neighbor_allgather",
            "MPI_Neighbor_alltoall",
            "MPI_Ineighbor_allgather",
            "MPI_Ineighbor_alltoall",
        ] {
            for dir in ["S", "R"] {
                assert!(
                    got_arcs
                        .keys()
                        .any(|k| (k.0, k.1.as_str(), k.2.as_str()) == (rank, call, dir)),
                    "no {dir} arcs of {call} at rank {rank}"
                );
            }
        }
    }
    assert!(got_arcs.keys().all(|k| k.3 >= 0), "{got_arcs:?}");

    // A nonblocking collective's row spans from its post to the completion call that
    // finished it: the two gathers completed in the reverse order of their posts.
    for rank in ["0", "1", "2", "3"] {
        let row = |call: &str| {
            rows.iter()
                .find(|r| r["rank"] == rank && r["call"] == call)
                .unwrap()
        };
        let end = |r: &HashMap<String, String>| f(r, "start_s") + f(r, "measured_s");
        let (g, gv) = (row("MPI_Igather"), row("MPI_Igatherv"));
        assert!(f(g, "start_s") < f(gv, "start_s"), "{g:?} {gv:?}");
        assert!(end(g) >= end(gv) - 1e-6, "{g:?} {gv:?}");
    }

    // Every row predicted.
    for r in &rows {
        assert_eq!(r["reason"], "", "{r:?}");
        assert!(r["predicted_s"].parse::<f64>().is_ok(), "{r:?}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["complete"], true);
    assert_eq!(summary["dropped"], 0);
    assert_eq!(summary["records"].as_u64().unwrap() as usize, rows.len());
    assert_eq!(
        summary["prediction"]["not_predicted"],
        serde_json::json!({})
    );
}

#[test]
fn modern_calls_from_fortran_are_recorded_once_under_their_c_names() {
    let dir = scratch("modern-fortran");
    let exe = build_fortran("f_modern", &dir);
    let (out, run) = mpirun_recorded(2, &exe, &[], &dir);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let rows = read_calls(&out);
    let mut want: HashMap<(u32, String), usize> = HashMap::new();
    for (rank, call, n) in [
        (0, "MPI_Ibcast", 1),
        (1, "MPI_Ibcast", 1),
        (0, "MPI_Wait", 3),
        (1, "MPI_Wait", 3),
        (0, "MPI_Send_init", 2),
        (1, "MPI_Recv_init", 2),
        (0, "MPI_Send", 1),
        (1, "MPI_Mprobe", 1),
        (1, "MPI_Mrecv", 1),
    ] {
        want.insert((rank, call.to_string()), n);
    }
    assert_eq!(counts(&rows), want);
    for r in &rows {
        assert_eq!(r["reason"], "", "{r:?}");
        match r["call"].as_str() {
            "MPI_Ibcast" => assert_eq!((r["root"].as_str(), r["bytes"].as_str()), ("0", "16")),
            "MPI_Send_init" => assert_eq!((r["peer"].as_str(), r["bytes"].as_str()), ("1", "16")),
            "MPI_Recv_init" => assert_eq!((r["peer"].as_str(), r["bytes"].as_str()), ("0", "16")),
            "MPI_Mprobe" => assert_eq!(r["peer"], "0"),
            "MPI_Mrecv" => assert_eq!((r["peer"].as_str(), r["bytes"].as_str()), ("0", "8")),
            _ => {}
        }
    }
}

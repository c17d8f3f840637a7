//! The prediction engine on synthetic event streams with hand-computed expectations.

use pmpi_predict::model::Hockney;
use pmpi_predict::predict::predict_run;
use pmpi_predict::profile::Profile;
use pmpi_predict::trace::{
    self, ClockSample, NO_RANK, RankMeta, RankTrace, Record, RunTrace, call,
};

const S: u64 = 1_000_000_000;

/// A profile where a message of `2e8` bytes takes exactly 2 s alone between nodes.
fn profile() -> Profile {
    let mut p = Profile::builtin_default();
    p.hockney.inter = Hockney {
        alpha: 0.0,
        beta: 1e-8,
    };
    p
}

fn rank(r: i32, node: &str, offset_ns: i64, records: Vec<Record>, world: i32) -> RankTrace {
    RankTrace {
        meta: RankMeta {
            rank: r,
            world_size: world,
            node: node.into(),
            calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
            clock_init: Some(ClockSample {
                at_ns: 0,
                offset_ns,
                rtt_ns: 1,
            }),
            init_ns: 0,
            finalized: true,
            ..Default::default()
        },
        records,
        ..Default::default()
    }
}

fn send(call: u16, peer: i32, bytes: u64, t0: u64, t1: u64) -> Record {
    Record {
        t_start: t0,
        t_end: t1,
        t_posted: t1,
        peer,
        root: NO_RANK,
        peer2: NO_RANK,
        bytes_send: bytes,
        comm: 0,
        comm_size: 4,
        call,
        ..Default::default()
    }
}

fn run(ranks: Vec<RankTrace>) -> RunTrace {
    let world = ranks.len() as i32;
    RunTrace {
        ranks,
        world_size: world,
        missing: vec![],
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn two_messages_that_overlap_half_their_time() {
    // Rank 0 (node a) sends 2 s of data to b at t = 0 and another to c at t = 1 s.
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![
                send(call::MPI_Isend, 1, 200_000_000, 0, 3 * S),
                send(call::MPI_Isend, 2, 200_000_000, S, 4 * S),
            ],
            3,
        ),
        rank(1, "b", 0, vec![], 3),
        rank(2, "c", 0, vec![], 3),
    ]);
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    let (a, b) = (p.calls[0][0], p.calls[0][1]);
    // A runs alone for 1 s (half done), then both share node a's output at penalty 2·β =
    // 1.5: A's other half takes 1.5 s, ending at 2.5 s. B has done 1.5/3 = half by then and
    // finishes alone 1 s later, at 3.5 s: it took 2.5 s.
    assert!(close(a.predicted.unwrap(), 2.5), "{a:?}");
    assert!(close(b.predicted.unwrap(), 2.5), "{b:?}");
    assert!(close(a.free.unwrap(), 2.0));
    assert!(close(a.penalty.unwrap(), 1.25));
    // Without a penalty model each takes its contention-free time.
    let q = predict_run(&r, &profile(), Some("none")).unwrap();
    assert!(close(q.calls[0][0].predicted.unwrap(), 2.0));
}

#[test]
fn three_arc_outgoing_conflict() {
    let sends = (1..=3)
        .map(|d| send(call::MPI_Isend, d, 100_000_000, 0, 3 * S))
        .collect();
    let r = run(vec![
        rank(0, "n0", 0, sends, 4),
        rank(1, "n1", 0, vec![], 4),
        rank(2, "n2", 0, vec![], 4),
        rank(3, "n3", 0, vec![], 4),
    ]);
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    for c in &p.calls[0] {
        // 3 · β = 2.25 on a 1 s message.
        assert!(close(c.predicted.unwrap(), 2.25), "{c:?}");
        assert!(close(c.penalty.unwrap(), 2.25));
    }
    // The intervals: one, with three arcs at 2.25.
    assert_eq!(p.sim.intervals.len(), 1);
    assert_eq!(p.sim.intervals[0].len, 3);
}

#[test]
fn an_all_to_all_round() {
    let m: u64 = 10_000_000; // 0.1 s per message alone
    let ranks = (0..4)
        .map(|r| {
            let rec = Record {
                t_start: S,
                t_end: 2 * S,
                t_posted: 2 * S,
                peer: NO_RANK,
                root: NO_RANK,
                peer2: NO_RANK,
                bytes_send: 4 * m,
                bytes_recv: 4 * m,
                comm: 0,
                comm_size: 4,
                call: call::MPI_Alltoall,
                ..Default::default()
            };
            rank(r, &format!("n{r}"), 0, vec![rec], 4)
        })
        .collect();
    let prof = profile();
    let p = predict_run(&run(ranks), &prof, Some("gige")).unwrap();
    for r in 0..4 {
        let c = p.calls[r][0];
        // Signature: (n−1)(α + m·β·γ + δ) with the profile's γ, δ (m ≥ M).
        let sig = 3.0 * (m as f64 * 1e-8 * prof.alltoall.gamma + prof.alltoall.delta);
        assert!(close(c.predicted.unwrap(), sig), "{c:?} vs {sig}");
        // Lower bound (n−1)·β·m.
        assert!(close(c.free.unwrap(), 0.3));
        // Graph: 12 arcs, every node sends 3 and receives 3; gige gives 3·β = 2.25 to every
        // arc, all start together, so the round takes 2.25 × 0.1 s.
        assert!(close(c.graph.unwrap(), 0.225), "{c:?}");
    }
    assert_eq!(p.flows.flows.len(), 12);
}

#[test]
fn clock_offsets_change_which_messages_overlap() {
    // Ranks 0 and 2 share node a and each send 2 s of data to another node, both at 1 s
    // on their own clocks. With rank 2's clock 10 s behind rank 0's they do not overlap.
    let build = |offset: i64| {
        run(vec![
            rank(
                0,
                "a",
                0,
                vec![send(call::MPI_Send, 1, 200_000_000, S, 3 * S)],
                4,
            ),
            rank(1, "b", 0, vec![], 4),
            rank(
                2,
                "a",
                offset,
                vec![send(call::MPI_Send, 3, 200_000_000, S, 3 * S)],
                4,
            ),
            rank(3, "c", 0, vec![], 4),
        ])
    };
    let apart = predict_run(&build(10 * S as i64), &profile(), Some("gige")).unwrap();
    assert!(close(apart.calls[0][0].predicted.unwrap(), 2.0));
    assert!(close(apart.calls[2][0].predicted.unwrap(), 2.0));
    let together = predict_run(&build(0), &profile(), Some("gige")).unwrap();
    assert!(
        close(together.calls[0][0].predicted.unwrap(), 3.0),
        "{:?}",
        together.calls[0][0]
    );
    assert!(close(together.calls[2][0].predicted.unwrap(), 3.0));
}

#[test]
fn intra_node_messages_take_intra_parameters_and_no_penalty() {
    let prof = profile();
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![
                send(call::MPI_Send, 1, 1000, 0, S),
                send(call::MPI_Send, 2, 1000, 0, S),
            ],
            3,
        ),
        rank(1, "a", 0, vec![], 3),
        rank(2, "a", 0, vec![], 3),
    ]);
    let p = predict_run(&r, &prof, Some("gige")).unwrap();
    let expect = prof.hockney.intra.time_bytes(1000.0);
    for c in &p.calls[0] {
        assert!(close(c.predicted.unwrap(), expect));
        assert!(close(c.penalty.unwrap(), 1.0));
    }
    assert!(p.sim.intervals.is_empty());
}

#[test]
fn receives_take_the_prediction_of_the_send_they_match() {
    let recv = Record {
        t_start: 0,
        t_end: 5 * S,
        t_posted: 5 * S,
        peer: 0,
        root: NO_RANK,
        peer2: NO_RANK,
        bytes_recv: 200_000_000,
        comm: 0,
        comm_size: 2,
        call: call::MPI_Recv,
        ..Default::default()
    };
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![send(call::MPI_Send, 1, 200_000_000, 0, 2 * S)],
            2,
        ),
        rank(1, "b", 0, vec![recv], 2),
    ]);
    let p = predict_run(&r, &profile(), None).unwrap();
    assert!(close(p.calls[1][0].predicted.unwrap(), 2.0));
    assert!(close(p.calls[1][0].free.unwrap(), 2.0));
}

#[test]
fn unknown_model_is_an_error_naming_it() {
    let r = run(vec![rank(0, "a", 0, vec![], 1)]);
    let e = predict_run(&r, &profile(), Some("ethernet")).err().unwrap();
    assert!(e.contains("ethernet"), "{e}");
}

#[test]
fn late_senders_and_late_receivers_are_part_of_the_call() {
    // Rank 1 posts its receive at 0; rank 0 sends 2 s of data at 3 s: the receive takes
    // 3 s of waiting plus 2 s of transfer.
    let recv = Record {
        t_start: 0,
        t_end: 5 * S,
        t_posted: 5 * S,
        peer: 0,
        root: NO_RANK,
        peer2: NO_RANK,
        bytes_recv: 200_000_000,
        comm: 0,
        comm_size: 2,
        call: call::MPI_Recv,
        ..Default::default()
    };
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![send(call::MPI_Send, 1, 200_000_000, 3 * S, 5 * S)],
            2,
        ),
        rank(1, "b", 0, vec![recv], 2),
    ]);
    let p = predict_run(&r, &profile(), None).unwrap();
    assert!(
        close(p.calls[1][0].predicted.unwrap(), 5.0),
        "{:?}",
        p.calls[1][0]
    );
    assert!(close(p.calls[1][0].free.unwrap(), 5.0));
    assert!(close(p.calls[0][0].predicted.unwrap(), 2.0));
    // The other way round: a rendezvous-size send posted 1 s before its receive waits.
    let late_recv = Record {
        t_start: 4 * S,
        t_end: 6 * S,
        t_posted: 6 * S,
        ..recv
    };
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![send(call::MPI_Send, 1, 200_000_000, 3 * S, 6 * S)],
            2,
        ),
        rank(1, "b", 0, vec![late_recv], 2),
    ]);
    let p = predict_run(&r, &profile(), None).unwrap();
    assert!(
        close(p.calls[0][0].predicted.unwrap(), 3.0),
        "{:?}",
        p.calls[0][0]
    );
    assert!(close(p.calls[1][0].predicted.unwrap(), 2.0));
}

#[test]
fn collectives_on_sub_communicators_use_their_members() {
    use pmpi_predict::trace::CommMembers;
    // Communicator {WORLD 2, WORLD 0} (local ranks 0, 1), id 7 on rank 2 and id 3 on rank 0:
    // a broadcast of 1e8 bytes from WORLD 2 while rank 2 also sends 1e8 bytes to rank 1.
    let bcast = |rank_root: bool| Record {
        t_start: 0,
        t_end: 3 * S,
        t_posted: 3 * S,
        peer: NO_RANK,
        root: 2,
        peer2: NO_RANK,
        bytes_send: if rank_root { 100_000_000 } else { 0 },
        bytes_recv: if rank_root { 0 } else { 100_000_000 },
        comm_size: 2,
        call: call::MPI_Bcast,
        ..Default::default()
    };
    let mut r2 = rank(
        2,
        "n2",
        0,
        vec![
            Record {
                comm: 7,
                ..bcast(true)
            },
            send(call::MPI_Isend, 1, 100_000_000, 0, 3 * S),
        ],
        4,
    );
    r2.meta.comms = vec![CommMembers {
        id: 7,
        world: vec![2, 0],
    }];
    let mut r0 = rank(
        0,
        "n0",
        0,
        vec![Record {
            comm: 3,
            ..bcast(false)
        }],
        4,
    );
    r0.meta.comms = vec![CommMembers {
        id: 3,
        world: vec![2, 0],
    }];
    let r = run(vec![
        r0,
        rank(1, "n1", 0, vec![], 4),
        r2,
        rank(3, "n3", 0, vec![], 4),
    ]);
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    // The broadcast's one message, WORLD 2 → 0, is a flow beside the send.
    assert!(
        p.flows
            .flows
            .iter()
            .any(|f| f.src_rank == 2 && f.dst_rank == 0 && f.bytes == 100_000_000)
    );
    assert_eq!(p.flows.flows.len(), 2);
    // Both ranks' calls are one operation: same prediction, slowed by the concurrent send
    // (two arcs out of node n2: 1.5 × 1 s instead of 1 s).
    let (a, b) = (p.calls[0][0], p.calls[2][0]);
    assert!(close(a.predicted.unwrap(), b.predicted.unwrap()));
    assert!(close(a.penalty.unwrap(), 1.5), "{a:?}");
}

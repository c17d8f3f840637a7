//! The prediction engine on synthetic event streams with hand-computed expectations.

use pmpi_core::model::Hockney;
use pmpi_core::model::grid::TwoClusters;
use pmpi_core::predict::{
    AlltoallAlgo, Assumptions, Conditions, ProgressMode, Reason, WaitKind, predict_run,
    predict_run_under,
};
use pmpi_core::profile::{Eager, EagerSource, Profile};
use pmpi_core::replay::{Plan, whatif};
use pmpi_core::topo::placement::Placement;
use pmpi_core::trace::{self, ClockSample, NO_RANK, RankMeta, RankTrace, Record, RunTrace, call};

const S: u64 = 1_000_000_000;

/// A profile where a message of `2e8` bytes takes exactly 2 s alone between nodes, and
/// where sockets buffer nothing: a rendezvous send between nodes returns when its data has
/// arrived (the tests of the socket buffer set one).
fn profile() -> Profile {
    let mut p = Profile::builtin_default();
    p.hockney.inter = Hockney {
        alpha: 0.0,
        beta: 1e-8,
        burst: 0.0,
        burst_gamma: 0.0,
    };
    p.socket_buffer = Some(0);
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

/// A nonblocking send posted (in no time) at `t0` whose request the trace shows complete at
/// `t1` without a completion record.
fn isend(peer: i32, bytes: u64, t0: u64, t1: u64) -> Record {
    Record {
        t_posted: t0,
        flags: trace::FLAG_NONBLOCKING,
        ..send(call::MPI_Isend, peer, bytes, t0, t1)
    }
}

/// A nonblocking receive posted (in no time) at `t0` whose request the trace shows complete
/// at `t1` without a completion record.
fn irecv(peer: i32, bytes: u64, t0: u64, t1: u64) -> Record {
    Record {
        t_posted: t0,
        flags: trace::FLAG_NONBLOCKING,
        ..recv_rec(call::MPI_Irecv, peer, bytes, t0, t1)
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

/// Eager limits as MPI_T gives them: `inter` bytes between nodes, 4 KiB within one.
fn eager_limits(inter: u64) -> Option<Eager> {
    Some(Eager {
        inter: Some(inter),
        intra: Some(4096),
        source: EagerSource::MpiT,
    })
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
                isend(1, 200_000_000, 0, 3 * S),
                isend(2, 200_000_000, S, 4 * S),
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
    assert!(close(a.penalty().unwrap(), 1.25));
    // Without a penalty model each takes its contention-free time.
    let q = predict_run(&r, &profile(), Some("none")).unwrap();
    assert!(close(q.calls[0][0].predicted.unwrap(), 2.0));
}

#[test]
fn three_arc_outgoing_conflict() {
    let sends = (1..=3).map(|d| isend(d, 100_000_000, 0, 3 * S)).collect();
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
        assert!(close(c.penalty().unwrap(), 2.25));
    }
    // The intervals: one, with three arcs at 2.25.
    assert_eq!(p.sim.intervals.len(), 1);
    assert_eq!(p.sim.intervals[0].len, 3);
}

#[test]
fn an_all_to_all_round() {
    // MPI_Alltoallv takes the signature at its mean block.
    for call in [call::MPI_Alltoall, call::MPI_Alltoallv] {
        all_to_all_round(call);
    }
}

/// With γ measured per size, an all-to-all takes the γ of its block (interpolated in log
/// size between the measured sizes), not the fitted signature's γ and δ.
#[test]
fn an_all_to_all_takes_the_gamma_measured_at_its_size() {
    let m: u64 = 10_000_000;
    let mut prof = profile();
    // 10 MB lies half-way between 1 MB and 100 MB in log size: γ = (1 + 3)/2 = 2.
    prof.alltoall_gamma =
        pmpi_core::model::alltoall::GammaTable(vec![(1_000_000, 1.0), (100_000_000, 3.0)]);
    let p = predict_run(
        &run(alltoall_ranks(call::MPI_Alltoall, m)),
        &prof,
        Some("gige"),
    )
    .unwrap();
    for r in 0..4 {
        let c = p.calls[r][0];
        // (n−1)·β·m·γ = 3 · 0.1 · 2, no δ.
        assert!(close(c.predicted.unwrap(), 0.6), "{c:?}");
        assert!(close(c.free.unwrap(), 0.3));
    }
}

/// Two members on two nodes: one exchange, a block each way through each port; the
/// signature's γ (measured with more members a port) does not apply, so the model gives
/// the contention-free time, β·m. (GROMACS's all-to-alls at 2 ranks on 2 hosts: +64.8 %
/// with the γ of 4 ranks, −6.2 % without.)
#[test]
fn an_all_to_all_of_two_members_on_two_nodes_takes_no_gamma() {
    let m: u64 = 10_000_000;
    let mut prof = profile();
    prof.alltoall_gamma =
        pmpi_core::model::alltoall::GammaTable(vec![(1_000_000, 2.0), (100_000_000, 2.0)]);
    let ranks = alltoall_ranks(call::MPI_Alltoall, m)
        .into_iter()
        .take(2)
        .map(|mut rk| {
            rk.meta.world_size = 2;
            for rec in &mut rk.records {
                rec.comm_size = 2;
                rec.bytes_send = 2 * m;
                rec.bytes_recv = 2 * m;
            }
            rk
        })
        .collect();
    let p = predict_run(&run(ranks), &prof, Some("gige")).unwrap();
    for r in 0..2 {
        let c = p.calls[r][0];
        assert!(close(c.predicted.unwrap(), 0.1), "{c:?}");
        assert!(close(c.free.unwrap(), 0.1), "{c:?}");
    }
}

fn all_to_all_round(call: u16) {
    let m: u64 = 10_000_000; // 0.1 s per message alone
    let prof = profile();
    let p = predict_run(&run(alltoall_ranks(call, m)), &prof, Some("gige")).unwrap();
    for r in 0..4 {
        let c = p.calls[r][0];
        // Signature: (n−1)(α + m·β·γ + δ) with the profile's γ, δ (m ≥ M).
        let sig = 3.0 * (m as f64 * 1e-8 * prof.alltoall.gamma + prof.alltoall.delta);
        assert!(close(c.predicted.unwrap(), sig), "{c:?} vs {sig}");
        // Lower bound (n−1)·β·m.
        assert!(close(c.free.unwrap(), 0.3));
    }
}

/// Four ranks on four nodes, each entering one all-to-all `call` of `m` bytes per block at 1 s.
fn alltoall_ranks(call: u16, m: u64) -> Vec<RankTrace> {
    (0..4)
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
                call,
                ..Default::default()
            };
            rank(r, &format!("n{r}"), 0, vec![rec], 4)
        })
        .collect()
}

/// An MPI_Alltoallv of unequal counts whose per-destination bytes were recorded (as the
/// layer writes them: continuation records in the spools): each arc is a transfer of its
/// own size, and the exchange takes the block of its busiest member.
#[test]
fn an_alltoallv_with_recorded_arcs_moves_each_arcs_bytes() {
    const M: u64 = 1_000_000;
    // sent[r][q]: bytes rank r sends rank q (its own block and an empty arc included).
    let sent = [[5 * M, M, 3 * M], [2 * M, M, 0], [4 * M, 6 * M, 0]];
    let dir = std::env::temp_dir().join(format!("pmpi-engine-arcs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (r, row) in sent.iter().enumerate() {
        let out: Vec<(i32, u64)> = (0..3)
            .map(|q| (q as i32, row[q]))
            .filter(|p| p.1 > 0)
            .collect();
        let inn: Vec<(i32, u64)> = (0..3)
            .map(|q| (q as i32, sent[q][r]))
            .filter(|p| p.1 > 0)
            .collect();
        let rec = Record {
            bytes_send: out.iter().map(|p| p.1).sum(),
            bytes_recv: inn.iter().map(|p| p.1).sum(),
            flags: trace::FLAG_ARCS,
            ..coll(call::MPI_Alltoallv, 3, S, 2 * S)
        };
        // The receive side before its call, as a nonblocking call's would be.
        let recs = vec![
            trace::arcs::continuation(&rec, true, 0, inn.len() as u32, &inn),
            rec,
            trace::arcs::continuation(&rec, false, 0, out.len() as u32, &out),
        ];
        trace::write_spool(&dir, r as i32, &recs).unwrap();
        trace::write_meta(&dir, &rank(r as i32, &format!("n{r}"), 0, vec![], 3).meta).unwrap();
    }
    let loaded = trace::load_run(&dir).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(loaded.ranks.iter().all(|rk| rk.records.len() == 1));
    let flows = pmpi_core::graph::build(&loaded, &Placement::from_run(&loaded));
    let mut arcs: Vec<(i32, i32, u64)> = flows
        .flows
        .iter()
        .map(|f| (f.src_rank, f.dst_rank, f.bytes))
        .collect();
    arcs.sort_unstable();
    assert_eq!(
        arcs,
        vec![
            (0, 1, M),
            (0, 2, 3 * M),
            (1, 0, 2 * M),
            (2, 0, 4 * M),
            (2, 1, 6 * M)
        ]
    );
    // Busiest member: rank 2 sends 10 MB to the others, a block of 5 MB per other; the
    // linear exchange takes (n−1)·β·m = 2 · 1e-8 · 5e6 = 0.1 s for everyone.
    let p = predict_run(&loaded, &profile(), Some("none")).unwrap();
    for r in 0..3 {
        let c = p.calls[r][0];
        assert!(close(c.predicted.unwrap(), 0.1), "rank {r}: {c:?}");
    }
    // The same calls without their arcs (an older spool): the total spread evenly, the
    // mean block of the largest total, 11 MB / 3.
    let mut totals = loaded.clone();
    for rk in &mut totals.ranks {
        rk.arcs.clear();
    }
    let q = predict_run(&totals, &profile(), Some("none")).unwrap();
    let mean = 2.0 * 1e-8 * (11 * M / 3) as f64;
    assert!(
        close(q.calls[0][0].predicted.unwrap(), mean),
        "{:?}",
        q.calls[0][0]
    );
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
        assert!(close(c.penalty().unwrap(), 1.0));
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
    use pmpi_core::trace::CommMembers;
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
            isend(1, 100_000_000, 0, 3 * S),
        ],
        4,
    );
    r2.meta.comms = vec![CommMembers {
        id: 7,
        world: vec![2, 0],
        ..Default::default()
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
        ..Default::default()
    }];
    let r = run(vec![
        r0,
        rank(1, "n1", 0, vec![], 4),
        r2,
        rank(3, "n3", 0, vec![], 4),
    ]);
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    // Both ranks' calls are one operation: the same broadcast, which neither waits for
    // (both enter at 0), so both take the strategy's time.
    let (a, b) = (p.calls[0][0], p.calls[2][0]);
    assert!(
        close(a.predicted.unwrap(), b.predicted.unwrap()),
        "{a:?} {b:?}"
    );
    assert_eq!(a.wait.seconds, 0.0);
    // The root entering 2 s late makes the other member wait for it (late broadcast).
    let mut late = r.clone();
    late.ranks[2].records[0].t_start = 2 * S;
    late.ranks[2].records[0].t_end = 3 * S;
    late.ranks[2].records[0].t_posted = 3 * S;
    let p = predict_run(&late, &profile(), Some("gige")).unwrap();
    let a = p.calls[0][0];
    assert_eq!(a.wait.kind, WaitKind::LateBroadcast, "{a:?}");
    assert!(close(a.wait.seconds, 2.0), "{a:?}");
    assert_eq!(a.wait.on, 2);
    assert_eq!(a.measured_wait.kind, WaitKind::LateBroadcast);
    assert!(close(a.measured_wait.seconds, 2.0));
}

fn recv_rec(call: u16, peer: i32, bytes: u64, t0: u64, t1: u64) -> Record {
    Record {
        bytes_recv: bytes,
        comm_size: 2,
        ..send(call, peer, 0, t0, t1)
    }
}

fn coll(call: u16, n: u32, t0: u64, t1: u64) -> Record {
    Record {
        comm_size: n,
        ..send(call, NO_RANK, 0, t0, t1)
    }
}

/// An MPI_Bcast of `bytes` from WORLD rank 0 on a communicator of `n`, as `root` or not.
fn bcast_from_0(n: u32, bytes: u64, root: bool, t0: u64, t1: u64) -> Record {
    Record {
        root: 0,
        bytes_send: if root { bytes } else { 0 },
        bytes_recv: if root { 0 } else { bytes },
        ..coll(call::MPI_Bcast, n, t0, t1)
    }
}

#[test]
fn compute_gaps_are_kept_and_an_over_estimate_delays_what_follows() {
    // Rank 0: Send 1 s of data, compute 1 s, Send again. Rank 1 receives both as soon as
    // it can. Recorded: the first transfer took 0.5 s. With a profile that makes it 1 s,
    // the second send starts 1 s + 1 s after the start, not at its recorded 1.5 s.
    let m = 100_000_000; // 1 s at β = 1e-8 (rendezvous: the send waits for the transfer)
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![
                send(call::MPI_Send, 1, m, 0, S / 2),
                send(call::MPI_Send, 1, m, 3 * S / 2, 2 * S),
            ],
            2,
        ),
        rank(
            1,
            "b",
            0,
            vec![
                recv_rec(call::MPI_Recv, 0, m, 0, S / 2),
                recv_rec(call::MPI_Recv, 0, m, S / 2, 2 * S),
            ],
            2,
        ),
    ]);
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    for c in &p.calls[0] {
        assert!(close(c.predicted.unwrap(), 1.0), "{c:?}");
        assert_eq!(c.reason, Reason::None);
    }
    // The second receive is posted at 1 s (its recorded gap is 0) and waits for the
    // sender, which starts at 2 s: 1 s of late-sender wait, then 1 s of transfer.
    let c = p.calls[1][1];
    assert!(close(c.predicted.unwrap(), 2.0), "{c:?}");
    assert_eq!(c.wait.kind, WaitKind::LateSender);
    assert!(close(c.wait.seconds, 1.0), "{c:?}");
    assert_eq!(c.wait.on, 0);
    // Measured: posted at 0.5 s, the send entered at 1.5 s.
    assert_eq!(c.measured_wait.kind, WaitKind::LateSender);
    assert!(close(c.measured_wait.seconds, 1.0));
    assert!(close(p.makespan, 3.0), "{}", p.makespan);
    assert!(close(p.makespan_measured, 2.0));
}

#[test]
fn eager_sends_return_after_the_local_copy_and_rendezvous_sends_wait_for_the_receiver() {
    let prof = profile();
    let small = 1000; // below the 64 KiB eager limit
    let big = 100_000_000;
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![
                send(call::MPI_Send, 1, small, 0, S / 10),
                send(call::MPI_Send, 1, big, S, 4 * S),
            ],
            2,
        ),
        rank(
            1,
            "b",
            0,
            vec![
                recv_rec(call::MPI_Recv, 0, small, 2 * S, 2 * S + S / 10),
                recv_rec(call::MPI_Recv, 0, big, 3 * S, 4 * S),
            ],
            2,
        ),
    ]);
    let p = predict_run(&r, &prof, Some("none")).unwrap();
    // The local copy: os(0) and the bytes at memory speed (between nodes the wire time is
    // the network's).
    let os = prof.plogp_or_hockney().send_overhead(0.0) + prof.hockney.intra.beta * small as f64;
    let eager = p.calls[0][0];
    assert!(close(eager.predicted.unwrap(), os), "{eager:?}");
    assert_eq!(eager.wait.kind, WaitKind::None);
    // The eager message arrived long before its receive was posted: the receive costs
    // only its overhead.
    let r0 = p.calls[1][0];
    assert!(r0.predicted.unwrap() < 1e-3, "{r0:?}");
    // The rendezvous send enters at 1 s (gap kept), its receive at 3 s: it waits 2 s
    // for the receiver, then 1 s of transfer.
    let rdv = p.calls[0][1];
    assert_eq!(rdv.wait.kind, WaitKind::LateReceiver, "{rdv:?}");
    assert!((rdv.wait.seconds - (2.0 - os)).abs() < 1e-3, "{rdv:?}");
    assert!(
        (rdv.predicted.unwrap() - (3.0 - os)).abs() < 1e-3,
        "{rdv:?}"
    );
    assert_eq!(rdv.measured_wait.kind, WaitKind::LateReceiver);
    assert!(close(rdv.measured_wait.seconds, 2.0));
}

/// Rank 0 on node a sends 40 KiB then 16 KiB to rank 1 on node b, each 0.5 s before its
/// receive is posted, and 3000 bytes to rank 2 on node a; the run's library is `library`.
fn three_sizes(library: &str) -> RunTrace {
    let mut r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![
                send(call::MPI_Send, 1, 40 * 1024, 0, S),
                send(call::MPI_Send, 1, 16 * 1024, 2 * S, 3 * S),
                send(call::MPI_Send, 2, 3000, 4 * S, 5 * S),
            ],
            3,
        ),
        rank(
            1,
            "b",
            0,
            vec![
                recv_rec(call::MPI_Recv, 0, 40 * 1024, S / 2, S),
                recv_rec(call::MPI_Recv, 0, 16 * 1024, 2 * S + S / 2, 3 * S),
            ],
            3,
        ),
        rank(
            2,
            "a",
            0,
            vec![recv_rec(call::MPI_Recv, 0, 3000, 4 * S, 5 * S)],
            3,
        ),
    ]);
    for rk in &mut r.ranks {
        rk.meta.mpi_library = library.into();
    }
    r
}

/// Which of [`three_sizes`]'s messages go rendezvous under `profile`.
fn rendezvous(r: &RunTrace, profile: Option<&Profile>) -> Vec<(u64, bool)> {
    let plan = Plan::for_run(r, Placement::from_run(r), profile);
    plan.msgs.iter().map(|m| (m.bytes, m.rendezvous)).collect()
}

#[test]
fn the_profiles_eager_limits_replace_the_librarys_defaults_for_the_same_library() {
    let ompi = "Open MPI v4.1.2, package: Debian OpenMPI";
    let mut prof = profile();
    prof.mpi_library = Some("Open MPI v4.1.6".into());
    prof.eager = Some(Eager {
        inter: Some(32 * 1024),
        intra: Some(2048),
        source: EagerSource::MpiT,
    });
    // Open MPI's defaults (64 KiB between nodes, 4 KiB within): all three eager.
    let r = three_sizes(ompi);
    let defaults = vec![(40 * 1024, false), (16 * 1024, false), (3000, false)];
    assert_eq!(rendezvous(&r, None), defaults);
    // The profile's 32 KiB between nodes: 40 KiB goes rendezvous, 16 KiB stays eager;
    // its 2 KiB within a node: 3000 bytes go rendezvous.
    assert_eq!(
        rendezvous(&r, Some(&prof)),
        vec![(40 * 1024, true), (16 * 1024, false), (3000, true)]
    );
    // A limit the profile does not give keeps the default.
    prof.eager.as_mut().unwrap().intra = None;
    assert_eq!(
        rendezvous(&r, Some(&prof)),
        vec![(40 * 1024, true), (16 * 1024, false), (3000, false)]
    );
    // The prediction follows: the rendezvous send waited 0.5 s for its receive, the eager
    // one did not.
    let p = predict_run(&r, &prof, Some("none")).unwrap();
    let w = p.calls[0][0].measured_wait;
    assert_eq!(w.kind, WaitKind::LateReceiver);
    assert!(close(w.seconds, 0.5), "{w:?}");
    assert_eq!(p.calls[0][1].measured_wait.kind, WaitKind::None);
    // A profile of another library says nothing about this one: MPICH's run keeps
    // MPICH's 128 KiB, and this Open MPI run keeps its defaults under an MPICH profile.
    let mpich = three_sizes("MPICH Version:\t4.0.2\nMPICH Device:\tch4:ucx");
    assert_eq!(rendezvous(&mpich, Some(&prof)), defaults);
    prof.mpi_library = Some("MPICH Version:\t4.0.2".into());
    assert_eq!(rendezvous(&r, Some(&prof)), defaults);
    assert_eq!(
        rendezvous(&mpich, Some(&prof)),
        vec![(40 * 1024, true), (16 * 1024, false), (3000, false)]
    );
}

#[test]
fn a_wait_completes_its_irecv_when_the_message_arrives() {
    // Rank 1 posts an Irecv at 0, computes 1 s, waits. Rank 0 sends 1 s of data at 2 s.
    let m = 100_000_000;
    let irecv = Record {
        t_posted: 0,
        flags: trace::FLAG_NONBLOCKING,
        ..recv_rec(call::MPI_Irecv, 0, m, 0, 3 * S)
    };
    let wait = coll(call::MPI_Wait, 0, S, 3 * S);
    let r = run(vec![
        rank(0, "a", 0, vec![send(call::MPI_Send, 1, m, 2 * S, 3 * S)], 2),
        rank(
            1,
            "b",
            0,
            vec![
                irecv,
                Record {
                    comm: u32::MAX,
                    ..wait
                },
            ],
            2,
        ),
    ]);
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    let (ir, w) = (p.calls[1][0], p.calls[1][1]);
    assert!(close(ir.predicted.unwrap(), 3.0), "{ir:?}");
    assert!(close(w.predicted.unwrap(), 2.0), "{w:?}");
    assert_eq!(w.wait.kind, WaitKind::LateSender);
    assert!(close(w.wait.seconds, 1.0), "{w:?}");
    assert_eq!(w.measured_wait.kind, WaitKind::LateSender);
    assert!(close(w.measured_wait.seconds, 1.0));
    // The Irecv's own row carries no wait: it is charged to the Wait.
    assert_eq!(ir.wait.kind, WaitKind::None);
}

#[test]
fn with_a_dispersion_the_ranks_whose_flows_won_wait_for_the_others() {
    // Rank 0 sends 1 s of data to each of ranks 1-3 at once (gige: 2.25 each) and enters
    // a barrier at once; each receiver enters it when its receive ends. With every flow at
    // the model's share the three receives end together and no receiver waits; with
    // contended flows drawn from a dispersion they end apart, and the receivers whose
    // flows won wait at the barrier for the last.
    let m: u64 = 100_000_000;
    let t1 = 3 * S;
    let mut sends: Vec<Record> = (1..=3).map(|d| isend(d, m, 0, 1000)).collect();
    sends.push(coll(call::MPI_Barrier, 4, 1000, t1 + 1000));
    let mut ranks = vec![rank(0, "n0", 0, sends, 4)];
    for r in 1..=3 {
        ranks.push(rank(
            r,
            &format!("n{r}"),
            0,
            vec![
                recv_rec(call::MPI_Recv, 0, m, 0, t1),
                coll(call::MPI_Barrier, 4, t1, t1 + 1000),
            ],
            4,
        ));
    }
    let r = run(ranks);
    let mut prof = profile();
    let even = predict_run(&r, &prof, Some("gige")).unwrap();
    for k in 1..=3 {
        assert!(close(even.calls[k][0].predicted.unwrap(), 2.25));
        assert!(
            even.calls[k][1].wait.seconds < 1e-9,
            "{:?}",
            even.calls[k][1]
        );
    }
    prof.penalty.dispersion = Some(vec![0.6, 1.0, 1.4]);
    let drawn = predict_run(&r, &prof, Some("gige")).unwrap();
    let ends: Vec<f64> = (1..=3)
        .map(|k| drawn.calls[k][0].predicted.unwrap())
        .collect();
    let last = ends.iter().copied().fold(0.0, f64::max);
    let first = ends.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(last - first > 0.01, "{ends:?}");
    let waits: Vec<f64> = (1..=3).map(|k| drawn.calls[k][1].wait.seconds).collect();
    // One release, when the last receive ends: each receiver waits from its own end.
    for (e, w) in ends.iter().zip(&waits) {
        assert!((e + w - last).abs() < 1e-6, "{ends:?} {waits:?}");
    }
    assert_eq!(waits.iter().filter(|w| **w > 0.01).count(), 2, "{waits:?}");
    // The same run replayed again draws the same shares; the contention-free figures do
    // not draw at all.
    let again = predict_run(&r, &prof, Some("gige")).unwrap();
    for k in 1..=3 {
        assert_eq!(again.calls[k][0].predicted, drawn.calls[k][0].predicted);
        assert_eq!(drawn.calls[k][0].free, even.calls[k][0].free);
    }
}

#[test]
fn a_late_rank_makes_the_others_wait_at_the_barrier() {
    let ranks = (0..3)
        .map(|r| {
            let t0 = if r == 2 { 2 * S } else { 0 };
            rank(
                r,
                &format!("n{r}"),
                0,
                vec![coll(call::MPI_Barrier, 3, t0, 2 * S + 1000)],
                3,
            )
        })
        .collect();
    let p = predict_run(&run(ranks), &profile(), Some("gige")).unwrap();
    for r in 0..2 {
        let c = p.calls[r][0];
        assert_eq!(c.wait.kind, WaitKind::Barrier, "{c:?}");
        assert!(close(c.wait.seconds, 2.0), "{c:?}");
        assert_eq!(c.wait.on, 2);
        assert_eq!(c.measured_wait.kind, WaitKind::Barrier);
        assert_eq!(c.contention, 0.0);
    }
    assert_eq!(p.calls[2][0].wait.kind, WaitKind::None);
}

#[test]
fn a_zero_count_broadcast_waits_for_nobody() {
    // The root reaches both broadcasts 2 s after the others. The zero-count one returns at
    // once on every rank (the library does not communicate): its measured microsecond,
    // predicted, no wait. The 8-byte one after it is the communicator's first operation
    // on every rank and waits for the root.
    let bcast = |bytes, root, t0, t1| bcast_from_0(3, bytes, root, t0, t1);
    let ranks = (0..3)
        .map(|r| {
            let records = if r == 0 {
                vec![
                    bcast(0, true, 2 * S, 2 * S + 1000),
                    bcast(8, true, 2 * S + 2000, 2 * S + 3000),
                ]
            } else {
                vec![
                    bcast(0, false, 0, 1000),
                    bcast(8, false, 2000, 2 * S + 3000),
                ]
            };
            rank(r, &format!("n{r}"), 0, records, 3)
        })
        .collect();
    let p = predict_run(&run(ranks), &profile(), Some("gige")).unwrap();
    for r in 0..3 {
        let zero = p.calls[r][0];
        assert_eq!(zero.reason, Reason::None, "{zero:?}");
        assert!(close(zero.predicted.unwrap(), 1e-6), "{zero:?}");
        assert_eq!(zero.wait.kind, WaitKind::None, "{zero:?}");
    }
    for r in 1..3 {
        let eight = p.calls[r][1];
        assert_eq!(eight.wait.kind, WaitKind::LateBroadcast, "{eight:?}");
        assert!(eight.wait.seconds > 1.9, "{eight:?}");
        assert_eq!(eight.wait.on, 0);
    }
}

/// Below the eager limit a broadcast's root returns after its local send and a member that
/// enters after the data arrived only copies it out; from the limit on the member waits
/// for the root and then the broadcast's time, as before.
#[test]
fn an_eager_broadcast_returns_at_the_root_and_waits_for_nothing_late() {
    let bcast = |bytes, root, t0, t1| bcast_from_0(2, bytes, root, t0, t1);
    // The root enters at 1 s, the other member at 3 s; 8 KiB (eager between nodes under
    // Open MPI's 64 KiB limit), then 1 MB (rendezvous) at 5 s and 7 s.
    let ranks = vec![
        rank(
            0,
            "n0",
            0,
            vec![
                bcast(8192, true, S, S + 1000),
                bcast(1_000_000, true, 5 * S, 5 * S + 1000),
            ],
            2,
        ),
        rank(
            1,
            "n1",
            0,
            vec![
                bcast(8192, false, 3 * S, 3 * S + 1000),
                bcast(1_000_000, false, 7 * S, 7 * S + 1000),
            ],
            2,
        ),
    ];
    let p = predict_run(&run(ranks), &profile(), Some("gige")).unwrap();
    let (root, leaf) = (p.calls[0][0], p.calls[1][0]);
    // Local costs only: microseconds, where the broadcast's time of 8 KiB at β = 1e-8 is
    // 82 µs.
    assert!(root.predicted.unwrap() < 1e-5, "{root:?}");
    assert!(leaf.predicted.unwrap() < 1e-5, "{leaf:?}");
    assert_eq!(leaf.wait.kind, WaitKind::None, "{leaf:?}");
    // Rendezvous: the root takes the broadcast's time (1 MB at β = 1e-8: 10 ms, to the
    // rounding of the clock), and so does the member entering 2 s later.
    let (root, leaf) = (p.calls[0][1], p.calls[1][1]);
    assert!(root.predicted.unwrap() >= 0.01 - 1e-9, "{root:?}");
    assert!(leaf.predicted.unwrap() >= 0.01 - 1e-9, "{leaf:?}");
}

#[test]
fn a_single_node_run_has_no_contention() {
    // Four ranks on one node exchange large messages at once: no network, no penalty.
    let m = 10_000_000;
    let ranks = (0..4)
        .map(|r| {
            let to = (r + 1) % 4;
            let from = (r + 3) % 4;
            let rec = Record {
                peer2: from,
                bytes_recv: m,
                call: call::MPI_Sendrecv,
                ..send(call::MPI_Sendrecv, to, m, 0, S)
            };
            rank(r, "one", 0, vec![rec], 4)
        })
        .collect();
    let p = predict_run(&run(ranks), &profile(), Some("gige")).unwrap();
    for cs in &p.calls {
        assert_eq!(cs[0].contention, 0.0, "{:?}", cs[0]);
        assert!(close(cs[0].penalty().unwrap(), 1.0));
        assert_eq!(cs[0].reason, Reason::None);
    }
    assert!(p.sim.intervals.is_empty());
}

#[test]
fn random_traces_replay_to_bounded_predictions() {
    // Random ring exchanges and collectives on random placements: every call predicted, the
    // makespan finite, and no transfer slower than its contention-free time times the
    // number of messages in flight times the model's worst factor on a 4-node graph times
    // the reverse-flow factor (1 or 2: opposite messages on a two-node ring pay it) times
    // the largest dispersion factor (its greatest quantile over the quantiles' mean, where
    // the profile draws contended flows' shares from one).
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = |k: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % k
    };
    for _case in 0..60 {
        let n = 2 + rnd(5) as i32;
        let steps = 1 + rnd(6);
        let nodes = 1 + rnd(4);
        let mut recs: Vec<Vec<Record>> = vec![Vec::new(); n as usize];
        let mut t = vec![0u64; n as usize];
        for _ in 0..steps {
            let bytes = 1 + rnd(20_000_000);
            if rnd(3) == 0 {
                for (r, rs) in recs.iter_mut().enumerate() {
                    let t0 = t[r] + rnd(S / 10);
                    rs.push(Record {
                        bytes_send: bytes,
                        bytes_recv: bytes,
                        ..coll(call::MPI_Allreduce, n as u32, t0, t0 + S / 5)
                    });
                    t[r] = t0 + S / 5;
                }
                continue;
            }
            for r in 0..n {
                let to = (r + 1) % n;
                let from = (r + n - 1) % n;
                let t0 = t[r as usize] + rnd(S / 10);
                let t1 = t0 + rnd(S) + 1;
                recs[r as usize].push(Record {
                    peer2: from,
                    bytes_recv: bytes,
                    comm_size: n as u32,
                    ..send(call::MPI_Sendrecv, to, bytes, t0, t1)
                });
                t[r as usize] = t1;
            }
        }
        let ranks = recs
            .into_iter()
            .enumerate()
            .map(|(r, rs)| rank(r as i32, &format!("n{}", r as u64 % nodes), 0, rs, n))
            .collect();
        let r = run(ranks);
        let mut prof = profile();
        prof.penalty.reverse = 1.0 + rnd(2) as f64;
        let mut spread = 1.0;
        if rnd(2) == 0 {
            // Quantiles from 0.5 to up to 3; the replay rescales them to a mean of one.
            let top = 1.0 + rnd(20) as f64 / 10.0;
            let q: Vec<f64> = (0..=10)
                .map(|i| 0.5 + (top - 0.5) * i as f64 / 10.0)
                .collect();
            let mean = q.windows(2).map(|w| 0.5 * (w[0] + w[1])).sum::<f64>() / 10.0;
            spread = q[10] / mean;
            prof.penalty.dispersion = Some(q);
        }
        for model in ["gige", "maxmin", "infiniband", "none"] {
            let p = predict_run(&r, &prof, Some(model)).unwrap();
            assert!(p.makespan.is_finite() && p.makespan >= 0.0, "{model}");
            for cs in &p.calls {
                for c in cs {
                    assert!(c.predicted.unwrap().is_finite(), "{model} {c:?}");
                    assert_eq!(c.reason, Reason::None, "{model} {c:?}");
                }
            }
            let worst = (n as f64) * 3.0 * prof.penalty.reverse * spread;
            for (k, &f) in p.inter.iter().enumerate() {
                let d = p.sim.end[k] - p.flows.flows[f].start;
                assert!(
                    d <= p.tref[f] * worst + 1e-9,
                    "{model}: {d} vs {}",
                    p.tref[f]
                );
            }
        }
    }
}

#[test]
fn a_rendezvous_send_that_fits_the_socket_buffer_returns_after_the_handshake() {
    // 1 MB between nodes (above the eager limit, below the 4 MiB socket buffer): the send
    // ends one latency after the receive is posted (plus a memory-speed copy); the receive
    // waits for the transfer (0.01 s at β = 1e-8).
    let mut prof = profile();
    prof.hockney.inter.alpha = 1e-3;
    prof.socket_buffer = Some(4 << 20);
    let m = 1_000_000;
    let r = run(vec![
        rank(0, "a", 0, vec![send(call::MPI_Send, 1, m, 0, S / 100)], 2),
        rank(
            1,
            "b",
            0,
            vec![recv_rec(call::MPI_Recv, 0, m, S, S + S / 100)],
            2,
        ),
    ]);
    let p = predict_run(&r, &prof, Some("gige")).unwrap();
    let copy = prof.hockney.intra.beta * m as f64;
    let s0 = p.calls[0][0];
    assert!(close(s0.predicted.unwrap(), 1.0 + 1e-3 + copy), "{s0:?}");
    assert_eq!(s0.wait.kind, WaitKind::LateReceiver);
    let r0 = p.calls[1][0];
    assert!(close(r0.predicted.unwrap(), 1e-3 + 0.01), "{r0:?}");
}

#[test]
fn a_rendezvous_send_larger_than_the_socket_buffer_returns_when_all_but_it_has_left() {
    // 100 MB (1 s at β = 1e-8) through a 10 MB socket buffer, both ranks ready at 0: the
    // receive ends at the arrival, 1 s; the send when all but the last tenth has left,
    // 0.9 s. A blocking send and a nonblocking one's request alike.
    let mut prof = profile();
    prof.socket_buffer = Some(10_000_000);
    let m = 100_000_000;
    for sender in [
        vec![send(call::MPI_Send, 1, m, 0, S)],
        vec![isend(1, m, 0, S)],
    ] {
        let r = run(vec![
            rank(0, "a", 0, sender, 2),
            rank(1, "b", 0, vec![recv_rec(call::MPI_Recv, 0, m, 0, S)], 2),
        ]);
        let p = predict_run(&r, &prof, Some("gige")).unwrap();
        let done = p.calls[0].last().unwrap();
        assert!((done.predicted.unwrap() - 0.9).abs() < 1e-3, "{done:?}");
        let r0 = p.calls[1][0];
        assert!((r0.predicted.unwrap() - 1.0).abs() < 1e-3, "{r0:?}");
    }
    // Measured per size: the entry of the smallest size at least the message's (here
    // 200 MB left 50 MB), above them all the single figure (10 MB).
    for (table, want) in [
        (vec![[200_000_000, 50_000_000]], 0.5),
        (vec![[1_000, 1_000], [50_000_000, 0]], 0.9),
        (vec![[100_000_000, 0], [200_000_000, 200_000_000]], 1.0),
    ] {
        prof.socket_buffer_by_size = table;
        let r = run(vec![
            rank(0, "a", 0, vec![send(call::MPI_Send, 1, m, 0, S)], 2),
            rank(1, "b", 0, vec![recv_rec(call::MPI_Recv, 0, m, 0, S)], 2),
        ]);
        let p = predict_run(&r, &prof, Some("gige")).unwrap();
        let done = p.calls[0][0].predicted.unwrap();
        assert!(
            (done - want).abs() < 1e-3,
            "{:?}: {done}",
            prof.socket_buffer_by_size
        );
    }
}

/// A rendezvous send of a datatype not contiguous (flagged by the layer, 100 MB: 1 s on
/// the wire). On MPICH it returns once the receiver matched it and the data is copied into
/// the library's buffer, while a contiguous one waits for its transfer (the profile's
/// socket buffer, here none). On Open MPI its first eager-limit bytes (64 KiB) go with the
/// request: a receive posted late finds them arrived and waits for the rest only, and with
/// a socket buffer that holds the message the send returns once the head has arrived
/// (the receiver matches it then) plus the acknowledgement's latency and the copy.
#[test]
fn packed_sends_on_mpich_and_open_mpi() {
    let mut prof = profile();
    prof.hockney.inter.alpha = 1e-3;
    let m = 100_000_000;
    let copy = prof.hockney.intra.beta * m as f64;
    let head = 1e-3 + 65536.0 * 1e-8;
    let mpich = "MPICH Version:\t4.0.2";
    let ompi = "Open MPI v4.1.6";
    // (library, flags, blocking, receive posted at, socket buffer, send done, receive's time)
    for (library, flags, blocking, recv_at, buffer, send_done, recv_time) in [
        (
            mpich,
            trace::FLAG_PACKED,
            true,
            0.5,
            0,
            0.5 + 1e-3 + copy,
            1.001,
        ),
        (
            mpich,
            trace::FLAG_PACKED,
            false,
            0.5,
            0,
            0.5 + 1e-3 + copy,
            1.001,
        ),
        (mpich, 0, true, 0.5, 0, 1.501, 1.001),
        // The head arrived before the receive: the rest, 1 s less 64 KiB.
        (
            ompi,
            trace::FLAG_PACKED,
            true,
            0.5,
            0,
            1.501 - 65536e-8,
            1.001 - 65536e-8,
        ),
        (ompi, 0, true, 0.5, 0, 1.501, 1.001),
        // Posted at once, a buffer for the whole: matched when the head arrived.
        (
            ompi,
            trace::FLAG_PACKED,
            true,
            0.0,
            1 << 30,
            head + 1e-3 + copy,
            1.001,
        ),
        (ompi, 0, true, 0.0, 1 << 30, 1e-3 + copy, 1.001),
    ] {
        let mut prof = prof.clone();
        prof.socket_buffer = Some(buffer);
        let mut s = if blocking {
            send(call::MPI_Send, 1, m, 0, S)
        } else {
            isend(1, m, 0, S)
        };
        s.flags |= flags;
        let t = (recv_at * S as f64) as u64;
        let mut r = run(vec![
            rank(0, "a", 0, vec![s], 2),
            rank(1, "b", 0, vec![recv_rec(call::MPI_Recv, 0, m, t, 2 * S)], 2),
        ]);
        for rk in &mut r.ranks {
            rk.meta.mpi_library = library.into();
        }
        let p = predict_run(&r, &prof, Some("gige")).unwrap();
        let case = format!("{library} flags {flags} blocking {blocking} receive at {recv_at}");
        let done = p.calls[0][0];
        assert!(
            (done.predicted.unwrap() - send_done).abs() < 1e-6,
            "{case}: {done:?}"
        );
        let r0 = p.calls[1][0];
        assert!(
            (r0.predicted.unwrap() - recv_time).abs() < 1e-6,
            "{case}: {r0:?}"
        );
    }
}

#[test]
fn messages_on_one_connection_leave_in_order_and_do_not_share_the_port() {
    // Two 1 s messages from rank 0 to rank 1 posted together go one after the other: the
    // first arrives at 1 s, the second at 2 s, with no penalty (one connection). Sent to
    // two different ranks on other nodes they would share node a's port instead.
    let m = 100_000_000;
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![isend(1, m, 0, 3 * S), isend(1, m, 0, 3 * S)],
            2,
        ),
        rank(1, "b", 0, vec![], 2),
    ]);
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    let (a, b) = (p.calls[0][0], p.calls[0][1]);
    assert!(close(a.predicted.unwrap(), 1.0), "{a:?}");
    assert!(close(b.predicted.unwrap(), 2.0), "{b:?}");
    assert_eq!(b.contention, 0.0);
    assert!(p.sim.arcs.iter().all(|&(_, pen)| close(pen, 1.0)));
}

#[test]
fn a_train_of_eager_messages_overlaps_its_latencies_on_one_connection() {
    // α = 1 s, β = 1 ms/B: a 100-B message alone takes 1.1 s. Three sent 0.2 s apart on
    // one connection each leave when the one before has left (0.1 s of bytes), not when
    // it has arrived: they arrive at 1.1, 1.3 and 1.5 s, where queued for whole lone
    // times they would arrive at 1.1, 2.2 and 3.3 s. Above the eager limit the
    // handshake keeps them whole.
    let ms = S / 1000;
    let sender = vec![
        isend(1, 100, 0, 0),
        isend(1, 100, 200 * ms, 200 * ms),
        isend(1, 100, 400 * ms, 400 * ms),
    ];
    let receiver = vec![
        recv_rec(call::MPI_Recv, 0, 100, 0, 1100 * ms),
        recv_rec(call::MPI_Recv, 0, 100, 1100 * ms, 1300 * ms),
        recv_rec(call::MPI_Recv, 0, 100, 1300 * ms, 1500 * ms),
    ];
    let r = run(vec![
        rank(0, "a", 0, sender, 2),
        rank(1, "b", 0, receiver, 2),
    ]);
    let mut prof = profile();
    prof.hockney.inter = Hockney::new(1.0, 1e-3).unwrap();
    for (eager, want) in [(65536, [1.1, 1.3, 1.5]), (64, [1.1, 2.2, 3.3])] {
        prof.eager = eager_limits(eager);
        for model in [None, Some("none")] {
            let p = predict_run(&r, &prof, model).unwrap();
            let mut got: Vec<f64> = p.inter.iter().map(|&f| p.flow_end[f]).collect();
            got.sort_by(f64::total_cmp);
            assert_eq!(got.len(), 3, "{got:?}");
            assert!(
                got.iter().zip(want).all(|(&g, w)| (g - w).abs() < 1e-6),
                "eager limit {eager}, {model:?}: {got:?}"
            );
            assert!(
                p.calls[1].iter().all(|c| c.contention == 0.0),
                "{:?}",
                p.calls[1]
            );
        }
    }
}

#[test]
fn small_messages_crossing_each_other_take_the_exchange_s_latency() {
    // α = 1 s, β = 1 ms/B, exchange 0.5 s: 8 B alone take 1.008 s. Rank 0 sends at 0,
    // rank 1 at `back` s. Sent 0.2 s after, while the first is on the network, both take
    // 0.5 s more (the first from when the second leaves); sent at 1.2 s, after the first
    // arrived, neither does; without the profile's exchange, neither.
    let ms = S / 1000;
    let pair = |back: u64| {
        run(vec![
            rank(
                0,
                "a",
                0,
                vec![isend(1, 8, 0, 0), recv_rec(call::MPI_Recv, 1, 8, 0, 3 * S)],
                2,
            ),
            rank(
                1,
                "b",
                0,
                vec![
                    isend(0, 8, back * ms, back * ms),
                    recv_rec(call::MPI_Recv, 0, 8, back * ms, 3 * S),
                ],
                2,
            ),
        ])
    };
    let mut prof = profile();
    prof.hockney.inter = Hockney::new(1.0, 1e-3).unwrap();
    let mut without = prof.clone();
    prof.exchange = Some(0.5);
    without.exchange = None;
    for (p, back, want) in [
        (&prof, 200, [1.508, 1.708]),
        (&prof, 1200, [1.008, 2.208]),
        (&without, 200, [1.008, 1.208]),
    ] {
        let got = predict_run(&pair(back), p, None).unwrap();
        let mut ends: Vec<f64> = got.inter.iter().map(|&f| got.flow_end[f]).collect();
        ends.sort_by(f64::total_cmp);
        assert_eq!(ends.len(), 2, "{ends:?}");
        assert!(
            ends.iter().zip(want).all(|(&g, w)| (g - w).abs() < 1e-6),
            "back at {back} ms, exchange {:?}: {ends:?}",
            p.exchange
        );
        // Rank 0's receive, entered at 0, ends when rank 1's message arrives; the
        // exchange's latency is no contention.
        let r0 = got.calls[0][1].predicted.unwrap();
        assert!((r0 - want[1]).abs() < 1e-6, "{r0} {ends:?}");
        assert!(
            got.calls.iter().flatten().all(|c| c.contention == 0.0),
            "{:?}",
            got.calls
        );
    }
}

#[test]
fn a_receive_entered_after_its_eager_message_arrived_only_copies_it() {
    // α = 1 s: a 100-B message sent at 0 arrives at 1.1 s; the receive overhead from
    // Hockney is α/4 = 0.25 s. Entered at 0.5 s, the receive ends at the arrival (0.6 s);
    // entered at 3 s, after it, it copies 100 B at memory speed (intra-node β) instead of
    // paying the overhead again: the call that found the message had paid it.
    let ms = S / 1000;
    let mut prof = profile();
    prof.hockney.inter = Hockney::new(1.0, 1e-3).unwrap();
    prof.eager = eager_limits(65536);
    let copy = 100.0 * prof.hockney.intra.beta;
    for (entry, want) in [(500 * ms, 0.6), (3000 * ms, copy)] {
        let r = run(vec![
            rank(0, "a", 0, vec![isend(1, 100, 0, 0)], 2),
            rank(
                1,
                "b",
                0,
                vec![recv_rec(call::MPI_Recv, 0, 100, entry, entry + ms)],
                2,
            ),
        ]);
        let p = predict_run(&r, &prof, None).unwrap();
        let got = p.calls[1][0].predicted.unwrap();
        assert!((got - want).abs() < 1e-9, "entered at {entry} ns: {got}");
    }
}

// What-if replay: the same trace under other conditions.

fn conditions(names: &[&str]) -> Conditions {
    Conditions {
        placement: Placement::from_names(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        clusters: None,
        alltoall: AlltoallAlgo::Direct,
        compute_scale: 1.0,
        progress: Default::default(),
        cpus_per_node: None,
    }
}

/// Rank 0 sends `m` bytes to each other rank at t = 0 (nonblocking, so that the messages
/// overlap), recorded on one node per rank.
fn fan_out(world: i32, m: u64) -> RunTrace {
    let mut ranks = vec![rank(
        0,
        "n0",
        0,
        (1..world).map(|d| isend(d, m, 0, 3 * S)).collect(),
        world,
    )];
    for r in 1..world {
        ranks.push(rank(r, &format!("n{r}"), 0, vec![], world));
    }
    run(ranks)
}

#[test]
fn another_placement_moves_messages_between_paths() {
    let mut prof = profile();
    prof.hockney.intra = Hockney {
        alpha: 0.0,
        beta: 1e-9,
        burst: 0.0,
        burst_gamma: 0.0,
    };
    let r = fan_out(3, 100_000_000);
    let a = Assumptions::default();
    // Recorded: three nodes, both messages between nodes (1 s each alone).
    let rec =
        predict_run_under(&r, &prof, Some("gige"), &a, &conditions(&["x", "y", "z"])).unwrap();
    assert_eq!(rec.inter.len(), 2);
    assert!(rec.tref.iter().all(|&t| close(t, 1.0)), "{:?}", rec.tref);
    // Rank 1 moved onto rank 0's node: its message takes the intra-node path (0.1 s) and
    // leaves the network; the other still crosses it.
    let what =
        predict_run_under(&r, &prof, Some("gige"), &a, &conditions(&["x", "x", "z"])).unwrap();
    assert_eq!(what.inter.len(), 1);
    let to = |p: &pmpi_core::predict::RunPrediction, d: i32| {
        let i = p.flows.flows.iter().position(|f| f.dst_rank == d).unwrap();
        (
            p.flows.flows[i].src_node == p.flows.flows[i].dst_node,
            p.tref[i],
        )
    };
    let (intra, t) = to(&what, 1);
    assert!(intra && close(t, 0.1), "{intra} {t}");
    let (intra, t) = to(&what, 2);
    assert!(!intra && close(t, 1.0), "{intra} {t}");
    // No longer sharing node x's port, the remaining inter-node send is not penalised.
    assert!(close(what.calls[0][1].contention, 0.0));
    assert!(rec.calls[0][1].contention > 0.0);
}

#[test]
fn two_clusters_put_messages_on_the_wide_area_link() {
    let prof = profile();
    let r = fan_out(4, 10_000_000);
    let mut c = conditions(&["a0", "a1", "b0", "b1"]);
    let pl = c.placement.clone();
    c.clusters = Some(
        whatif::parse_clusters(
            r#"{"clusters": {"A": ["a0", "a1"], "B": ["b0", "b1"]},
                "wan": {"alpha": 0.01, "beta": 1e-7}}"#,
            &pl,
        )
        .unwrap(),
    );
    let a = Assumptions::default();
    let p = predict_run_under(&r, &prof, Some("none"), &a, &c).unwrap();
    // Rank 0 (cluster A) → 1 stays in A (LAN: 0.1 s); → 2, 3 cross (WAN: 0.01 + 1 s).
    for (i, f) in p.flows.flows.iter().enumerate() {
        let want = if f.dst_rank == 1 { 0.1 } else { 1.01 };
        assert!(close(p.tref[i], want), "to {}: {}", f.dst_rank, p.tref[i]);
    }
    // With a model, the two crossing flows in the same direction share the backbone:
    // each is penalised at least 2×.
    let q = predict_run_under(&r, &prof, Some("gige"), &a, &c).unwrap();
    let iv = &q.sim.intervals[0];
    let crossing: Vec<f64> = q
        .sim
        .arcs_of(iv)
        .iter()
        .filter(|&&(k, _)| q.flows.flows[q.inter[k as usize]].dst_rank >= 2)
        .map(|&(_, pen)| pen)
        .collect();
    assert_eq!(crossing.len(), 2);
    assert!(crossing.iter().all(|&p| p >= 2.0), "{crossing:?}");
}

#[test]
fn model_none_is_the_contention_free_baseline() {
    let r = fan_out(4, 100_000_000);
    let p = predict_run_under(
        &r,
        &profile(),
        Some("none"),
        &Assumptions::default(),
        &conditions(&["a", "b", "c", "d"]),
    )
    .unwrap();
    for c in &p.calls[0] {
        assert_eq!(c.predicted, c.free);
        assert_eq!(c.contention, 0.0);
    }
    assert!(close(p.makespan, p.makespan_free));
}

#[test]
fn all_to_all_across_two_clusters_follows_eq6_and_eq7() {
    // The grid paper's shape: n1 = 3 nodes on C1, n2 = 7 on C2, one process each; small
    // blocks, where the wide-area latency dominates.
    let m: u64 = 10_000;
    let world = 10;
    let ranks = (0..world)
        .map(|r| {
            let rec = Record {
                bytes_send: world as u64 * m,
                bytes_recv: world as u64 * m,
                ..coll(call::MPI_Alltoall, world as u32, S, 2 * S)
            };
            rank(r, &format!("n{r}"), 0, vec![rec], world)
        })
        .collect();
    let r = run(ranks);
    // Eager messages, as the paper's model has them (Local Group's combined 70,000 B would
    // go by rendezvous at a 64 KiB limit, a handshake more across the backbone).
    let mut prof = profile();
    prof.eager = eager_limits(1 << 20);
    let names: Vec<String> = (0..world).map(|i| format!("n{i}")).collect();
    let mut c = conditions(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let pl = c.placement.clone();
    c.clusters = Some(
        whatif::parse_clusters(
            r#"{"clusters": {"C1": ["n0", "n1", "n2"],
                             "C2": ["n3", "n4", "n5", "n6", "n7", "n8", "n9"]},
                "wan": {"alpha": 0.01, "beta": 1e-7}}"#,
            &pl,
        )
        .unwrap(),
    );
    let wan = Hockney {
        alpha: 0.01,
        beta: 1e-7,
        burst: 0.0,
        burst_gamma: 0.0,
    };
    let two = TwoClusters::new(3, 7, prof.hockney.inter, prof.alltoall, wan).unwrap();
    let a = Assumptions::default();
    for (algo, want) in [
        (AlltoallAlgo::Direct, two.eq6_direct(m)),
        (AlltoallAlgo::LocalGroup, two.eq7_local_group(m)),
    ] {
        c.alltoall = algo;
        let p = predict_run_under(&r, &prof, Some("gige"), &a, &c).unwrap();
        // Every member enters at the same time: the call takes the model's time.
        for rk in 0..world as usize {
            let got = p.calls[rk][0].predicted.unwrap();
            assert!(close(got, want), "{algo}: rank {rk}: {got} vs {want}");
        }
    }
    // Local Group pays ⌈7/3⌉ = 3 wide-area latencies instead of 7: faster here.
    assert!(two.eq7_local_group(m) < two.eq6_direct(m));
}

#[test]
fn sharing_a_node_loads_its_port_in_an_all_to_all() {
    // 4 ranks, block 0.1 s alone: one per node the signature's wire term is 3·γ·0.1 s;
    // two per node, each node's port carries 2·2 = 4 of the messages instead of 3.
    let m: u64 = 10_000_000;
    let ranks: Vec<RankTrace> = (0..4)
        .map(|r| {
            let rec = Record {
                bytes_send: 4 * m,
                bytes_recv: 4 * m,
                ..coll(call::MPI_Alltoall, 4, S, 2 * S)
            };
            rank(r, &format!("n{r}"), 0, vec![rec], 4)
        })
        .collect();
    let r = run(ranks);
    let prof = profile();
    let a = Assumptions::default();
    let one = predict_run_under(
        &r,
        &prof,
        Some("gige"),
        &a,
        &conditions(&["a", "b", "c", "d"]),
    )
    .unwrap();
    let two = predict_run_under(
        &r,
        &prof,
        Some("gige"),
        &a,
        &conditions(&["a", "a", "b", "b"]),
    )
    .unwrap();
    let wire = 3.0 * 0.1 * prof.alltoall.gamma;
    let d = two.calls[0][0].predicted.unwrap() - one.calls[0][0].predicted.unwrap();
    assert!(close(d, wire * (4.0 / 3.0 - 1.0)), "{d} vs {}", wire / 3.0);
    assert!(close(two.calls[0][0].free.unwrap(), 0.4));
}

/// One `MPI_Alltoall` of `m`-byte blocks by 4 ranks on nodes n0..n3.
fn alltoall_of_four(m: u64) -> RunTrace {
    let ranks = (0..4)
        .map(|r| {
            let rec = Record {
                bytes_send: 4 * m,
                bytes_recv: 4 * m,
                ..coll(call::MPI_Alltoall, 4, S, 2 * S)
            };
            rank(r, &format!("n{r}"), 0, vec![rec], 4)
        })
        .collect();
    run(ranks)
}

/// Nodes n0..n3 as clusters A (n0, n1) and B (n2, n3) joined by the `wan` JSON object's
/// link, the all-to-all by `algo`.
fn two_clusters_of_two(wan: &str, algo: AlltoallAlgo) -> Conditions {
    let mut c = conditions(&["n0", "n1", "n2", "n3"]);
    let pl = c.placement.clone();
    c.alltoall = algo;
    c.clusters = Some(
        whatif::parse_clusters(
            &format!(r#"{{"clusters": {{"A": ["n0", "n1"], "B": ["n2", "n3"]}}, "wan": {wan}}}"#),
            &pl,
        )
        .unwrap(),
    );
    c
}

#[test]
fn blocks_by_rendezvous_cross_the_backbone_after_a_round_trip() {
    // 2 + 2 members over a single-link backbone of latency 1 ms: the n1·n2 = 4 blocks
    // each way cross after its latency; by rendezvous (64 KiB at a 64 KiB eager limit)
    // after a request and a grant too, 2 ms more. Eager (a 1 MiB limit): not.
    let r = alltoall_of_four(65_536);
    let (bw, wa) = (4e-7, 1e-3);
    let predicted = |limit: u64| {
        let mut prof = profile();
        prof.eager = eager_limits(limit);
        let c = two_clusters_of_two(
            &format!(r#"{{"alpha": {wa}, "beta": {bw}}}"#),
            AlltoallAlgo::Direct,
        );
        let p = predict_run_under(&r, &prof, Some("gige"), &Assumptions::default(), &c).unwrap();
        p.calls[0][0].predicted.unwrap()
    };
    let (rdv, eager) = (predicted(65_536), predicted(1 << 20));
    assert!(close(rdv - eager, 2.0 * wa), "{rdv} {eager}");
}

#[test]
fn a_single_link_backbone_bounds_the_all_to_all() {
    // 2 + 2 members, 64 KiB blocks, a 20 Mbit/s backbone with no latency: Eq. 6 and Eq. 7
    // give the local exchange + 2·βw·m, but the single link must carry n1·n2 = 4 blocks
    // each way: local + 4·βw·m. With "backbone_beta" 4× faster than one message, Eq. 6
    // holds again.
    let m: u64 = 65_536;
    let r = alltoall_of_four(m);
    let prof = profile();
    let bw = 4e-7;
    let two = TwoClusters::new(
        2,
        2,
        prof.hockney.inter,
        prof.alltoall,
        Hockney {
            alpha: 0.0,
            beta: bw,
            burst: 0.0,
            burst_gamma: 0.0,
        },
    )
    .unwrap();
    let local = two.eq6_direct(m) - 2.0 * bw * m as f64;
    // The all-to-all's prediction with `wan` ending in `extra`, by `algo`.
    let predicted = |extra: &str, algo: AlltoallAlgo| {
        let c = two_clusters_of_two(&format!(r#"{{"alpha": 0, "beta": {bw}{extra}}}"#), algo);
        let p = predict_run_under(&r, &prof, Some("gige"), &Assumptions::default(), &c).unwrap();
        p.calls[0][0].predicted.unwrap()
    };
    for (backbone, want) in [
        ("", local + 4.0 * bw * m as f64),
        (", \"backbone_beta\": 1e-7", two.eq6_direct(m)),
    ] {
        let got = predicted(backbone, AlltoallAlgo::Direct);
        assert!(close(got, want), "{backbone}: {got} vs {want}");
    }
    // Measured crossing penalties: 4 blocks at once each way cost 6 lone ones (direct:
    // local + 6·βw·m); Local Group's 2 combined messages of 2 blocks each cost 2.2 lone
    // ones of their size (local + 2.2·βw·2m = 4.4·βw·m), where Eq. 7 gives less.
    let crossing =
        r#", "crossing": {"bytes": 65536, "one_way": [1, 2, 3, 4], "both_ways": [1, 2.2, 3.5, 6]}"#;
    for (algo, want) in [
        (AlltoallAlgo::Direct, local + 6.0 * bw * m as f64),
        (AlltoallAlgo::LocalGroup, local + 4.4 * bw * m as f64),
    ] {
        let got = predicted(crossing, algo);
        assert!(close(got, want), "{algo:?}: {got} vs {want}");
    }
}

#[test]
fn a_live_snapshot_names_who_waits_and_on_whom() {
    // Rank 1 posts its receive at 0 and the message leaves rank 0 at 1 s: 1 s of
    // late-sender wait on rank 0, in a graph of one inter-node link.
    let m = 1_000_000;
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![send(call::MPI_Send, 1, m, S, S + S / 100)],
            2,
        ),
        rank(
            1,
            "b",
            0,
            vec![recv_rec(call::MPI_Recv, 0, m, 0, S + S / 50)],
            2,
        ),
    ]);
    let s = pmpi_core::report::live::snapshot(&r, 0.0, 2.0, None, None);
    assert_eq!(s.graph.len(), 1);
    assert_eq!(
        (s.graph[0].src.as_str(), s.graph[0].dst.as_str()),
        ("a", "b")
    );
    assert_eq!(s.graph[0].bytes, m);
    let w = &s.waiting[0];
    assert_eq!((w.rank, w.on, w.mostly.as_str()), (1, 0, "late-sender"));
    assert!(close(w.wait_s, 1.0), "{w:?}");
}

/// A completion call (MPI_Wait) from `t0` to `t1`.
fn wait_rec(t0: u64, t1: u64) -> Record {
    Record {
        comm: u32::MAX,
        ..coll(call::MPI_Wait, 0, t0, t1)
    }
}

/// An eager `MPI_Isend`'s local send cost is paid in its post, whose measured time the
/// replay keeps: the `MPI_Wait` right after it does not wait out the profile's send
/// overhead again (ScaLAPACK tests its 8-byte sends at once: 0.14 µs measured a call,
/// 4 µs predicted before).
#[test]
fn an_eager_isend_is_done_when_its_post_returns() {
    let mut prof = profile();
    prof.hockney.inter.alpha = 1e-3;
    let os = prof.plogp_or_hockney().send_overhead(0.0);
    assert!(
        os > 1e-4,
        "the test needs a send overhead well above the post's 10 µs: {os}"
    );
    let us = S / 1_000_000;
    let mut post = isend(1, 8, 0, 20 * us);
    post.t_posted = 10 * us;
    let r = run(vec![
        rank(0, "a", 0, vec![post, wait_rec(10 * us, 20 * us)], 2),
        rank(1, "b", 0, vec![recv_rec(call::MPI_Recv, 0, 8, 0, 2 * S)], 2),
    ]);
    let p = predict_run(&r, &prof, Some("gige")).unwrap();
    let (isend_row, wait) = (p.calls[0][0], p.calls[0][1]);
    // Done when its post returned, 10 µs after it started.
    assert!(close(isend_row.predicted.unwrap(), 10e-6), "{isend_row:?}");
    // The wait finds it done.
    assert!(wait.predicted.unwrap() < 1e-6, "{wait:?}");
}

#[test]
fn an_ibcast_completes_at_its_wait_when_the_blocking_bcast_would_end() {
    // Root 0 on node a, rank 1 on node b, 2e8 bytes. Blocking: both enter at 1 s.
    let m = 200_000_000;
    let bcast = |call: u16, r: i32, t1: u64| Record {
        root: 0,
        bytes_send: if r == 0 { m } else { 0 },
        bytes_recv: if r == 0 { 0 } else { m },
        ..coll(call, 2, S, t1)
    };
    let blocking = run(vec![
        rank(0, "a", 0, vec![bcast(call::MPI_Bcast, 0, 4 * S)], 2),
        rank(1, "b", 0, vec![bcast(call::MPI_Bcast, 1, 4 * S)], 2),
    ]);
    let pb = predict_run(&blocking, &profile(), Some("gige")).unwrap();
    let d = pb.calls[1][0].predicted.unwrap();
    assert!(
        d > 1.0,
        "the broadcast takes more than the 1 s of compute: {d}"
    );
    // Nonblocking: posted at 1 s (returns at once), 1 s of compute, then MPI_Wait.
    let ib = |r: i32| Record {
        t_posted: S,
        flags: trace::FLAG_NONBLOCKING,
        ..bcast(call::MPI_Ibcast, r, 4 * S)
    };
    let nb = run(vec![
        rank(0, "a", 0, vec![ib(0), wait_rec(2 * S, 4 * S)], 2),
        rank(1, "b", 0, vec![ib(1), wait_rec(2 * S, 4 * S)], 2),
    ]);
    let p = predict_run(&nb, &profile(), Some("gige")).unwrap();
    let (row, w) = (p.calls[1][0], p.calls[1][1]);
    for c in p.calls.iter().flatten() {
        assert_eq!(c.reason, Reason::None, "{c:?}");
    }
    // The Ibcast spans its post to the end of its Wait: the blocking call's time; the
    // Wait, what was left of it after the compute.
    assert!(close(row.predicted.unwrap(), d), "{row:?} vs {d}");
    assert!(close(w.predicted.unwrap(), d - 1.0), "{w:?} vs {d}");
    // A root that posts 2 s late makes rank 1's Wait (entered at 2 s) wait 1 s for it.
    let late_root = Record {
        t_start: 3 * S,
        t_posted: 3 * S,
        ..ib(0)
    };
    let nb = run(vec![
        rank(0, "a", 0, vec![late_root, wait_rec(3 * S, 4 * S)], 2),
        rank(1, "b", 0, vec![ib(1), wait_rec(2 * S, 4 * S)], 2),
    ]);
    let p = predict_run(&nb, &profile(), Some("gige")).unwrap();
    let w = p.calls[1][1];
    assert_eq!(w.wait.kind, WaitKind::LateBroadcast, "{w:?}");
    assert!(close(w.wait.seconds, 1.0), "{w:?}");
    assert_eq!(w.wait.on, 0);
    assert_eq!(w.measured_wait.kind, WaitKind::LateBroadcast, "{w:?}");
}

#[test]
fn a_persistent_send_and_receive_start_at_their_start_and_complete_at_their_wait() {
    // Each start of a persistent request is recorded under its *_init call, from the
    // MPI_Start (0 s) to the MPI_Wait (1 s .. 3 s): 2 s of data from node a to node b.
    let m = 200_000_000;
    let start = |r: Record| Record {
        t_posted: 0,
        flags: trace::FLAG_NONBLOCKING,
        ..r
    };
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![
                start(send(call::MPI_Send_init, 1, m, 0, 3 * S)),
                wait_rec(S, 3 * S),
            ],
            2,
        ),
        rank(
            1,
            "b",
            0,
            vec![
                start(recv_rec(call::MPI_Recv_init, 0, m, 0, 3 * S)),
                wait_rec(S, 3 * S),
            ],
            2,
        ),
    ]);
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    for c in p.calls.iter().flatten() {
        assert_eq!(c.reason, Reason::None, "{c:?}");
    }
    // The message is on the network from 0 to 2 s: both requests complete then, and both
    // Waits (entered at 1 s) take 1 s.
    for rk in 0..2 {
        let (req, w) = (p.calls[rk][0], p.calls[rk][1]);
        assert!(close(req.predicted.unwrap(), 2.0), "rank {rk}: {req:?}");
        assert!(close(w.predicted.unwrap(), 1.0), "rank {rk}: {w:?}");
    }
}

#[test]
fn an_mrecv_receives_the_message_its_mprobe_matched() {
    // Rank 0 sends 0.1 s of data at 1 s; rank 1 probes from 0 s, then receives it.
    let m = 10_000_000;
    let probe = Record {
        comm_size: 2,
        ..send(call::MPI_Mprobe, 0, 0, 0, S + S / 100)
    };
    let r = run(vec![
        rank(0, "a", 0, vec![send(call::MPI_Send, 1, m, S, S + S / 5)], 2),
        rank(
            1,
            "b",
            0,
            vec![
                probe,
                recv_rec(call::MPI_Mrecv, 0, m, S + S / 100, S + S / 5),
            ],
            2,
        ),
    ]);
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    for c in p.calls.iter().flatten() {
        assert_eq!(c.reason, Reason::None, "{c:?}");
    }
    let (pr, mr) = (p.calls[1][0], p.calls[1][1]);
    // The probe waits for the sender (rendezvous: its envelope, α = 0, at 1 s); the
    // Mrecv for the 0.1 s transfer.
    assert!(close(pr.predicted.unwrap(), 1.0), "{pr:?}");
    assert_eq!(pr.wait.kind, WaitKind::LateSender);
    let t = mr.predicted.unwrap();
    assert!((0.1..0.11).contains(&t), "{mr:?}");
}

#[test]
fn a_fence_takes_the_largest_transfer_of_its_epoch_and_an_unlock_its_own() {
    // Two ranks on two nodes: fence, Put of 1 s of data to the other, fence; then a lock,
    // Put and unlock to the other.
    let m = 100_000_000;
    let ms = S / 1000;
    let fence = |t0: u64, bytes: u64| Record {
        bytes_send: bytes,
        ..coll(call::MPI_Win_fence, 2, t0, t0 + ms)
    };
    let to = |call: u16, peer: i32, bytes: u64, t0: u64| Record {
        comm_size: 2,
        ..send(call, peer, bytes, t0, t0 + ms)
    };
    let ranks = (0..2)
        .map(|r| {
            let other = 1 - r;
            rank(
                r,
                if r == 0 { "a" } else { "b" },
                0,
                vec![
                    fence(0, 0),
                    to(call::MPI_Put, other, m, 2 * ms),
                    fence(4 * ms, m),
                    to(call::MPI_Win_lock, other, 0, 2 * S),
                    to(call::MPI_Put, other, m, 2 * S + 2 * ms),
                    to(call::MPI_Win_unlock, other, m, 2 * S + 4 * ms),
                ],
                2,
            )
        })
        .collect();
    let p = predict_run(&run(ranks), &profile(), Some("gige")).unwrap();
    for c in p.calls.iter().flatten() {
        assert_eq!(c.reason, Reason::None, "{c:?}");
    }
    for rk in 0..2 {
        let c = &p.calls[rk];
        // The Put: its measured call; the fence: ⌈log2 2⌉·α + β·m = 1 s (α = 0).
        assert!(close(c[1].predicted.unwrap(), 0.001), "{:?}", c[1]);
        assert!(close(c[2].predicted.unwrap(), 1.0), "{:?}", c[2]);
        // The unlock completes its 1 s Put: α + β·m between nodes, from the Put's post (2
        // ms before the unlock), as a nonblocking send's data moves from its post.
        assert!(close(c[5].predicted.unwrap(), 0.998), "{:?}", c[5]);
    }
}

#[test]
fn an_empty_flush_on_one_node_takes_its_own_time_and_between_nodes_a_latency() {
    // Each rank: MPI_Win_flush_all completing nothing (5 µs measured), then one
    // completing 1 MB it put. On one node the empty flush has no network to wait for: its
    // measured time; the full one moves its bytes within the node. On two nodes both are
    // window synchronisations over the network (α = 2 ms here): even an empty flush may
    // wait for its targets' acknowledgements.
    let us = S / 1_000_000;
    let m = 1_000_000;
    let flush = |bytes: u64, t0: u64| Record {
        bytes_send: bytes,
        comm_size: 2,
        ..send(call::MPI_Win_flush_all, NO_RANK, 0, t0, t0 + 5 * us)
    };
    let mut prof = profile();
    prof.hockney.inter.alpha = 0.002;
    for (nodes, empty, full) in [
        (["a", "a"], 5e-6, prof.hockney.intra.time_bytes(m as f64)),
        (["a", "b"], 0.002, prof.hockney.inter.time_bytes(m as f64)),
    ] {
        let ranks = (0..2)
            .map(|r| rank(r, nodes[r as usize], 0, vec![flush(0, 0), flush(m, S)], 2))
            .collect();
        let p = predict_run(&run(ranks), &prof, Some("gige")).unwrap();
        for c in &p.calls {
            assert_eq!(c[0].reason, Reason::None, "{c:?}");
            assert!(
                close(c[0].predicted.unwrap(), empty),
                "{nodes:?}: {:?}",
                c[0]
            );
            assert!(
                close(c[1].predicted.unwrap(), full),
                "{nodes:?}: {:?}",
                c[1]
            );
        }
    }
}

/// Between nodes, an empty flush on MPICH takes its own time (nothing outstanding: its
/// flush returns at once), where on Open MPI it waits a latency; a local flush of a put
/// below the eager limit takes its own time on either (the data was copied out at the
/// post), and one that completes a get waits for the data.
#[test]
fn local_flushes_of_puts_and_mpich_s_empty_flushes_take_their_own_time() {
    let us = S / 1_000_000;
    let win = |c: u16, put: u64, get: u64, t0: u64| Record {
        bytes_send: put,
        bytes_recv: get,
        comm_size: 2,
        ..send(c, NO_RANK, 0, t0, t0 + 5 * us)
    };
    let mut prof = profile();
    prof.hockney.inter.alpha = 0.002;
    let m = 1000;
    let lat = 0.002;
    let get = prof.hockney.inter.time_bytes(m as f64);
    for (library, empty) in [("Open MPI v4.1.6", lat), ("MPICH Version:\t4.0.2", 5e-6)] {
        let ranks = (0..2)
            .map(|r| {
                let recs = vec![
                    win(call::MPI_Win_flush_all, 0, 0, 0),
                    win(call::MPI_Win_flush_local_all, m, 0, S),
                    win(call::MPI_Win_flush_local_all, 0, m, 2 * S),
                ];
                rank(r, ["a", "b"][r as usize], 0, recs, 2)
            })
            .collect();
        let mut r = run(ranks);
        for rk in &mut r.ranks {
            rk.meta.mpi_library = library.into();
        }
        let p = predict_run(&r, &prof, Some("gige")).unwrap();
        for c in &p.calls {
            let d = |k: usize| c[k].predicted.unwrap();
            assert!(close(d(0), empty), "{library}: {:?}", c[0]);
            assert!(close(d(1), 5e-6), "{library}: {:?}", c[1]);
            assert!(close(d(2), get), "{library}: {:?}", c[2]);
        }
    }
}

/// A window synchronisation's transfer moves from its operations' first post, and one
/// without a target whose operations all went to the rank's own node takes the path
/// within the node: rank 0 reads from itself, rank 1 from rank 0 on the other node, each
/// with a `MPI_Get_accumulate` of 1 ms, then an `MPI_Win_flush_local_all` completing its
/// 1,000 bytes.
#[test]
fn a_flush_s_transfer_moves_from_its_operations_post_along_their_path() {
    let us = S / 1_000_000;
    let m = 1000;
    let recs = |target: i32| {
        vec![
            Record {
                bytes_send: 8,
                bytes_recv: m,
                comm_size: 2,
                ..send(call::MPI_Get_accumulate, target, 0, S, S + 1000 * us)
            },
            Record {
                bytes_recv: m,
                comm_size: 2,
                ..send(
                    call::MPI_Win_flush_local_all,
                    NO_RANK,
                    0,
                    S + 1000 * us,
                    S + 1005 * us,
                )
            },
        ]
    };
    let mut prof = profile();
    prof.hockney.inter.alpha = 0.002;
    let r = run(vec![
        rank(0, "a", 0, recs(0), 2),
        rank(1, "b", 0, recs(0), 2),
    ]);
    let p = predict_run(&r, &prof, Some("gige")).unwrap();
    let within = prof.hockney.intra.time_bytes(m as f64);
    let between = prof.hockney.inter.time_bytes(m as f64);
    // Rank 0: its data within the node, long back when the get returned: the flush ends
    // as it starts.
    assert!(within < 0.001, "{within}");
    assert!(
        close(p.calls[0][1].predicted.unwrap(), 0.0),
        "{:?}",
        p.calls[0][1]
    );
    // Rank 1: between nodes, from the get's post, 1 ms before the flush.
    assert!(
        close(p.calls[1][1].predicted.unwrap(), between - 0.001),
        "{:?}",
        p.calls[1][1]
    );
}

#[test]
fn an_ireduce_root_waits_for_the_first_contribution_at_its_wait() {
    // Root 0 posts an MPI_Ireduce at 1 s and waits at 1 s; rank 1 posts only at 3 s: the
    // root's Wait waits 2 s for it (early reduce), as a blocking reduce's root would.
    let ir = |r: i32, t: u64| Record {
        t_start: t,
        t_posted: t,
        root: 0,
        bytes_send: 8,
        bytes_recv: if r == 0 { 8 } else { 0 },
        flags: trace::FLAG_NONBLOCKING,
        ..coll(call::MPI_Ireduce, 2, t, 4 * S)
    };
    let r = run(vec![
        rank(0, "a", 0, vec![ir(0, S), wait_rec(S, 4 * S)], 2),
        rank(1, "b", 0, vec![ir(1, 3 * S), wait_rec(3 * S, 4 * S)], 2),
    ]);
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    let w = p.calls[0][1];
    assert_eq!(w.measured_wait.kind, WaitKind::EarlyReduce, "{w:?}");
    assert!(close(w.measured_wait.seconds, 2.0), "{w:?}");
    assert_eq!(w.measured_wait.on, 1);
    // The contributor's Wait does not wait for the root.
    assert_eq!(p.calls[1][1].measured_wait.kind, WaitKind::None);
}

/// mpi4py's matched-probe tests: an MPI_Iprobe with MPI_ANY_TAG (recorded as the tag it
/// asked for) is matched to the receive that takes the message, and a probe of
/// MPI_PROC_NULL returns at once; neither is left unpredicted.
#[test]
fn probes_with_any_tag_match_and_probes_of_proc_null_return_at_once() {
    let probe = |call: u16, peer: i32, tag: i32, t0: u64, t1: u64| Record {
        tag,
        ..recv_rec(call, peer, 0, t0, t1)
    };
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![Record {
                tag: 7,
                ..send(call::MPI_Send, 1, 1000, S, S + 1000)
            }],
            2,
        ),
        rank(
            1,
            "b",
            0,
            vec![
                probe(call::MPI_Mprobe, trace::PROC_NULL, 0, 0, 1000),
                probe(call::MPI_Iprobe, 0, -1, 2 * S, 2 * S + 500),
                Record {
                    tag: 7,
                    ..recv_rec(call::MPI_Recv, 0, 1000, 2 * S + 1000, 2 * S + 2000)
                },
            ],
            2,
        ),
    ]);
    let p = predict_run(&r, &profile(), None).unwrap();
    let rows = &p.calls[1];
    for (i, c) in rows.iter().enumerate() {
        assert_eq!(c.reason, Reason::None, "row {i}");
        assert!(c.predicted.is_some(), "row {i}");
    }
    assert_eq!(rows[0].predicted.unwrap(), 0.0);
}

/// mpi4py's intercommunicator tests: a broadcast on an intercommunicator (each rank's
/// record carries the remote group's size, 1 here) is one operation of both groups, kept
/// apart from a broadcast on an intracommunicator of the same two ranks.
#[test]
fn collectives_on_an_intercommunicator_are_one_operation_of_both_groups() {
    let bc = |comm: u32, root: i32, t0: u64| Record {
        comm,
        root,
        bytes_send: 8,
        bytes_recv: 8,
        ..coll(call::MPI_Bcast, 1, t0, t0 + 1000)
    };
    let mut r0 = rank(0, "a", 0, vec![bc(5, trace::NO_RANK, 0)], 2);
    r0.meta.comms = vec![trace::CommMembers {
        id: 5,
        world: vec![0, 1],
        inter: true,
    }];
    let mut r1 = rank(1, "b", 0, vec![bc(9, 0, S)], 2);
    r1.meta.comms = vec![trace::CommMembers {
        id: 9,
        world: vec![0, 1],
        inter: true,
    }];
    let p = predict_run(&run(vec![r0, r1]), &profile(), Some("gige")).unwrap();
    for r in 0..2 {
        let c = p.calls[r][0];
        assert_eq!(c.reason, Reason::None, "rank {r}: {c:?}");
        assert!(c.predicted.is_some(), "rank {r}");
    }
    // The receiving group's member entered 1 s after the root: it does not wait; the root's
    // group does not wait for it either beyond the broadcast itself.
    assert!(p.calls[1][0].predicted.unwrap() < 0.5);
}

/// Open MPI's linear broadcast (4 members, 8 KiB to 1 MiB) sends to the others one after
/// another in rank order: the first has its data after a third of the broadcast's time,
/// the last after all of it. Rooted at 1, the order is 0, 2, 3.
#[test]
fn a_linear_broadcast_serves_the_members_in_rank_order() {
    let bcast_run = |root: i32| {
        let ranks = (0..4)
            .map(|r| {
                let rec = Record {
                    root,
                    ..bcast_from_0(4, 16384, r == root, S, S + 1000)
                };
                rank(r, &format!("n{r}"), 0, vec![rec], 4)
            })
            .collect();
        let r = run(ranks);
        let p = predict_run(&r, &profile(), Some("gige")).unwrap();
        (r, p)
    };
    let ends = |root: i32| {
        let (_, p) = bcast_run(root);
        (0..4)
            .map(|r| p.calls[r][0].predicted.unwrap())
            .collect::<Vec<f64>>()
    };
    let e = ends(0);
    // Non-roots: in the ratio 1 : 2 : 3, the last one the whole broadcast.
    assert!(e[1] > 0.0 && e[0] < e[1], "{e:?}");
    assert!((e[2] / e[1] - 2.0).abs() < 1e-6, "{e:?}");
    assert!((e[3] / e[1] - 3.0).abs() < 1e-6, "{e:?}");
    let e = ends(1);
    assert!((e[2] / e[0] - 2.0).abs() < 1e-6, "{e:?}");
    assert!((e[3] / e[0] - 3.0).abs() < 1e-6, "{e:?}");
    // `accuracy` compares the operation's slowest member, measured and predicted: the
    // last served member's prediction, not the root's (which returns first).
    let (r, p) = bcast_run(0);
    let (groups, _) = pmpi_core::report::accuracy::groups(&r, &p, &[], false);
    assert_eq!(groups.len(), 1);
    let last = p.calls[3][0].predicted.unwrap();
    assert_eq!(groups[0].predicted_s, last);
    assert!(last > p.calls[0][0].predicted.unwrap());
}

/// Open MPI's binary tree (8 members, 8 KiB), 8 ranks on 4 nodes by node (0 and 4 on one,
/// 1 and 5 on the next...): each member has its data after its own path through the tree,
/// a hop within a node almost at once, the root's two sends one after the other through
/// its port (docs/accuracy.md: measured 1 and 5 after one message time, 2, 3, 6, 7 after
/// two, 4 after three). A member that enters late holds back its subtree, and only it.
#[test]
fn a_tree_broadcast_ends_member_by_member_along_its_paths() {
    let ends = |late: u64| {
        let ranks = (0..8)
            .map(|r| {
                let t0 = if r == 1 { S + late } else { S };
                let rec = bcast_from_0(8, 8192, r == 0, t0, t0 + 1000);
                rank(r, &format!("n{}", r % 4), 0, vec![rec], 8)
            })
            .collect();
        let p = predict_run(&run(ranks), &profile(), Some("gige")).unwrap();
        (0..8)
            .map(|r| p.calls[r][0].predicted.unwrap())
            .collect::<Vec<f64>>()
    };
    let e = ends(0);
    // One message between nodes: 8 KiB at 1e-8 s a byte, no latency.
    let g = 8192e-8;
    assert!(close(e[1], g), "{e:?}");
    for (r, hops) in [(2, 2.0), (3, 2.0), (4, 3.0)] {
        assert!(close(e[r], hops * g), "rank {r}: {e:?}");
    }
    // 5, 6, 7 from their parent on their node (1, 2, 3): a shared-memory hop later.
    for (r, parent) in [(5, 1), (6, 2), (7, 3)] {
        let hop = e[r] - e[parent];
        assert!(hop > 0.0 && hop < g / 10.0, "rank {r}: {e:?}");
    }
    // Table 1's bound, which every member took before: 3 levels of two sends.
    assert!(
        e.iter().all(|&t| t <= 3.0 * g + 1e-9 && t < 6.0 * g),
        "{e:?}"
    );
    // Rank 1 enters 1 ms late: its children (3, and 5 on its node) wait for it; the
    // others do not. Rank 1 itself has its data on entry and returns after posting.
    let late = ends(1_000_000);
    assert!(close(late[3], 1e-3 + g), "{late:?}");
    assert!(late[5] > 1e-3 && late[5] < 1e-3 + g / 10.0, "{late:?}");
    for r in [2, 4, 6] {
        assert!(close(late[r], e[r]), "rank {r}: {late:?} vs {e:?}");
    }
    assert!(late[1] < g / 10.0, "{late:?}");
}

/// A run made with MPICH replays its broadcasts along MPICH's trees, not Open MPI's: at 8
/// KiB, a rank a node, the binomial tree that sends to the farthest rank first (0 to 2,
/// then 1; 2 to 3), where Open MPI's linear tree serves 1, 2, 3 in turn; two ranks a
/// node, the node-aware tree (the leaders 0-3 along the same binomial tree, each handing
/// the block to its node's other rank at once), where Open MPI's binary tree reaches
/// rank 4, on the root's node, after three messages.
#[test]
fn an_mpich_run_s_broadcasts_follow_mpich_s_trees() {
    let ends = |n: i32, library: &str| {
        let ranks = (0..n)
            .map(|r| {
                let rec = bcast_from_0(n as u32, 8192, r == 0, S, S + 1000);
                rank(r, &format!("n{}", r % 4), 0, vec![rec], n)
            })
            .collect();
        let mut r = run(ranks);
        for rk in &mut r.ranks {
            rk.meta.mpi_library = library.into();
        }
        let p = predict_run(&r, &profile(), Some("gige")).unwrap();
        (0..n as usize)
            .map(|k| p.calls[k][0].predicted.unwrap())
            .collect::<Vec<f64>>()
    };
    let g = 8192e-8;
    let mpich = "MPICH Version:\t4.0.2";
    let e = ends(4, mpich);
    for (r, hops) in [(1, 2.0), (2, 1.0), (3, 2.0)] {
        assert!(close(e[r], hops * g), "rank {r}: {e:?}");
    }
    let o = ends(4, "Open MPI v4.1.6");
    for (r, hops) in [(1, 1.0), (2, 2.0), (3, 3.0)] {
        assert!(close(o[r], hops * g), "rank {r}: {o:?}");
    }
    let e = ends(8, mpich);
    for (r, hops) in [(1, 2.0), (2, 1.0), (3, 2.0)] {
        assert!(close(e[r], hops * g), "rank {r}: {e:?}");
    }
    // (The root has its block at 0; it returns once its sends are posted.)
    assert!(e[4] > 0.0 && e[4] < g / 10.0, "{e:?}");
    for (r, leader) in [(5, 1), (6, 2), (7, 3)] {
        let hop = e[r] - e[leader];
        assert!(hop > 0.0 && hop < g / 10.0, "rank {r}: {e:?}");
    }
    let o = ends(8, "Open MPI v4.1.6");
    assert!(close(o[4], 3.0 * g), "{o:?}");
}

/// Broadcasts by rendezvous along a tree, a member entering the first 10 ms after the
/// root: the send waits for its child's receive, so the root returns once the member has
/// the block (10 ms + one block) and the member one block after its entry, every time.
/// (The member's lag had been counted twice, and doubled from one broadcast to the next.)
#[test]
fn a_late_member_of_rendezvous_broadcasts_is_not_charged_its_lag() {
    let ms = S / 1000;
    let m = 32768;
    let ranks = (0..2u64)
        .map(|r| {
            let recs = (0..6u64)
                .map(|k| {
                    let t0 = S + k * 50 * ms + r * 10 * ms;
                    bcast_from_0(2, m, r == 0, t0, t0 + ms)
                })
                .collect();
            rank(r as i32, ["a", "b"][r as usize], 0, recs, 2)
        })
        .collect();
    let mut r = run(ranks);
    let mpich = "MPICH Version:\t4.0.2";
    for rk in &mut r.ranks {
        rk.meta.mpi_library = mpich.into();
    }
    let mut prof = profile();
    prof.mpi_library = Some(mpich.into());
    prof.eager = Some(Eager {
        inter: Some(16384),
        intra: None,
        source: EagerSource::Measured,
    });
    let p = predict_run(&r, &prof, Some("gige")).unwrap();
    let block = m as f64 * 1e-8;
    for k in 0..6 {
        let (root, member) = (
            p.calls[0][k].predicted.unwrap(),
            p.calls[1][k].predicted.unwrap(),
        );
        assert!(close(member, block), "{k}: member {member}");
        // The root's first wait delays what follows it by as much: from the second on,
        // both enter together.
        let wait = if k == 0 { 0.010 } else { 0.0 };
        assert!(close(root, wait + block), "{k}: root {root}");
    }
}

/// A linear broadcast between nodes whose blocks go by rendezvous and fit in the socket
/// buffer: the root posts every send, its data shares its port, so every member ends when
/// all three blocks have left and the root returns once the last member matched. A second
/// broadcast from the same root right after queues behind the first's data.
#[test]
fn a_buffered_linear_broadcast_ends_together_and_queues_behind_the_last() {
    let m = 1_000_000; // rendezvous (Open MPI's 64 KiB), linear at 4 members, 10 ms a block
    let ranks = (0..4)
        .map(|r| {
            let recs = vec![
                bcast_from_0(4, m, r == 0, S, S + 1000),
                bcast_from_0(4, m, r == 0, S + 1000, S + 2000),
            ];
            rank(r, &format!("n{r}"), 0, recs, 4)
        })
        .collect();
    let mut prof = profile();
    prof.socket_buffer = Some(4 << 20);
    let r = run(ranks);
    let p = predict_run(&r, &prof, Some("gige")).unwrap();
    let d = |rank: usize, k: usize| p.calls[rank][k].predicted.unwrap();
    // Three blocks of 10 ms through the root's port: every member at 30 ms.
    for rank in 1..4 {
        assert!(
            (d(rank, 0) - 0.03).abs() < 1e-6,
            "rank {rank}: {}",
            d(rank, 0)
        );
    }
    // The root copies 3 MB into the kernel (the intra-node β) and returns.
    assert!(d(0, 0) < 0.01, "root {}", d(0, 0));
    // The second broadcast's data leaves after the first's: 30 ms more for every member
    // (a lone block would take 10 ms).
    for rank in 1..4 {
        assert!(
            (d(rank, 1) - 0.03).abs() < 1e-6,
            "rank {rank}: {}",
            d(rank, 1)
        );
    }
    // With a socket buffer smaller than a block, the members are served one after another.
    prof.socket_buffer = Some(0);
    let p = predict_run(&r, &prof, Some("gige")).unwrap();
    let d = |rank: usize| p.calls[rank][0].predicted.unwrap();
    assert!((d(3) / d(1) - 3.0).abs() < 1e-6, "{} {}", d(1), d(3));
}

#[test]
fn a_synchronous_send_below_the_eager_limit_moves_its_data_at_once_and_ends_at_the_match() {
    // Rank 0 (node a) MPI_Ssends 60 KB (below Open MPI's 64 KiB limit; 0.6 ms at β) to rank
    // 1 (node b), which posts its receive at 10 ms: the data arrives at 0.6 ms, the receive
    // finds it there, and the send ends when the receive matches it, 10 ms (α 0).
    let ms = 1_000_000;
    let m = 60_000;
    let ssend = |peer: i32| Record {
        comm_size: 4,
        ..send(call::MPI_Ssend, peer, m, 0, ms / 100)
    };
    let r = run(vec![
        rank(0, "a", 0, vec![ssend(1)], 2),
        rank(
            1,
            "b",
            0,
            vec![recv_rec(call::MPI_Recv, 0, m, 10 * ms, 10 * ms + ms / 100)],
            2,
        ),
    ]);
    let p = predict_run(&r, &profile(), Some("none")).unwrap();
    let (s0, r1) = (p.calls[0][0], p.calls[1][0]);
    assert!(close(s0.predicted.unwrap(), 0.010), "{s0:?} {r1:?}");
    // It waited for the receiver all along.
    assert_eq!(s0.wait.kind, WaitKind::LateReceiver, "{s0:?}");
    assert!(close(s0.wait.seconds, 0.010), "{s0:?}");
    // (The receive's own cost only, 12 µs, not the 0.6 ms transfer.)
    assert!(r1.predicted.unwrap() < 1e-4, "{r1:?}");
    // Three senders on nodes b, c, d to rank 0 on node a, which receives from 1, then 2,
    // then 3: all three messages move at once, so rank 0's second and third receives find
    // their data there, and each sender is done when its receive matched.
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![
                recv_rec(call::MPI_Recv, 1, m, 0, ms),
                recv_rec(call::MPI_Recv, 2, m, ms, ms + ms / 100),
                recv_rec(call::MPI_Recv, 3, m, ms + ms / 100, ms + ms / 50),
            ],
            4,
        ),
        rank(1, "b", 0, vec![ssend(0)], 4),
        rank(2, "c", 0, vec![ssend(0)], 4),
        rank(3, "d", 0, vec![ssend(0)], 4),
    ]);
    let p = predict_run(&r, &profile(), Some("none")).unwrap();
    let d = |rank: usize, k: usize| p.calls[rank][k].predicted.unwrap();
    assert!(close(d(0, 0), 0.0006), "first receive {}", d(0, 0));
    assert!(d(0, 1) < 1e-4 && d(0, 2) < 1e-4, "{} {}", d(0, 1), d(0, 2));
    assert!(close(d(1, 0), 0.0006), "sender 1 {}", d(1, 0));
    // Sender 2 at its data's arrival (its receive posted then), sender 3 at its receive's
    // post, after the second receive's own cost.
    assert!(close(d(2, 0), 0.0006), "sender 2 {}", d(2, 0));
    assert!(close(d(3, 0), 0.0006 + d(0, 1)), "sender 3 {}", d(3, 0));
}

#[test]
fn a_sendrecv_receives_the_message_sent_under_its_receive_tag() {
    // FFTW's transposes (MPB): rank r sends to p under tag 2r + p and receives from p under
    // tag 2p + r. The layer keeps the receive's tag in `root`; spools written before it
    // have NO_RANK there, and such a send-receive matches under its send tag, as it did.
    let m: u64 = 1_000_000;
    let sendrecv = |r: i32, recv_tag: i32| Record {
        peer2: 1 - r,
        bytes_recv: m,
        comm_size: 2,
        tag: 2 * r + (1 - r),
        root: recv_tag,
        ..send(call::MPI_Sendrecv, 1 - r, m, 0, S)
    };
    let reasons = |recv_tag: &dyn Fn(i32) -> i32| {
        let r = run(vec![
            rank(0, "a", 0, vec![sendrecv(0, recv_tag(0))], 2),
            rank(1, "b", 0, vec![sendrecv(1, recv_tag(1))], 2),
        ]);
        let p = predict_run(&r, &profile(), Some("none")).unwrap();
        (
            p.calls.iter().map(|c| c[0].reason).collect::<Vec<_>>(),
            p.inter.len(),
        )
    };
    // The receive's own tag: both messages found, both calls predicted.
    assert_eq!(
        reasons(&|r| 2 * (1 - r) + r),
        (vec![Reason::None, Reason::None], 2)
    );
    // No receive tag (an older spool): the send's tag, which no message carries here.
    let (old, _) = reasons(&|_| NO_RANK);
    assert_eq!(old, vec![Reason::Unmatched, Reason::Unmatched]);
}

#[test]
fn opposite_messages_move_one_after_the_other_only_if_both_ranks_received_first() {
    // Ranks 0 (node a) and 1 (node b) exchange 1 s of data each way, with a reverse-flow
    // factor of 2. By MPI_Sendrecv (the receive posted with the send) or by Irecv then
    // Isend, each transfer takes 2 s; by Isend then Irecv, or between two other pairs
    // of ranks on the same nodes, 1 s.
    let m: u64 = 100_000_000;
    let irecv = |peer: i32, t0: u64| irecv(peer, m, t0, 3 * S);
    let transfers = |ranks: Vec<RankTrace>| {
        let r = run(ranks);
        let mut prof = profile();
        prof.penalty.reverse = 2.0;
        let p = predict_run(&r, &prof, Some("gige")).unwrap();
        let mut d: Vec<f64> = p
            .inter
            .iter()
            .enumerate()
            .map(|(k, &f)| p.sim.end[k] - p.flows.flows[f].start)
            .collect();
        d.sort_by(f64::total_cmp);
        d
    };
    let sendrecv = |r: i32| Record {
        peer2: 1 - r,
        bytes_recv: m,
        comm_size: 2,
        ..send(call::MPI_Sendrecv, 1 - r, m, 0, 3 * S)
    };
    let d = transfers(vec![
        rank(0, "a", 0, vec![sendrecv(0)], 2),
        rank(1, "b", 0, vec![sendrecv(1)], 2),
    ]);
    assert_eq!(d.len(), 2);
    assert!(d.iter().all(|&t| close(t, 2.0)), "sendrecv {d:?}");
    let recv_first = |r: i32| vec![irecv(1 - r, 0), isend(1 - r, m, 1000, 3 * S)];
    let d = transfers(vec![
        rank(0, "a", 0, recv_first(0), 2),
        rank(1, "b", 0, recv_first(1), 2),
    ]);
    assert!(d.iter().all(|&t| close(t, 2.0)), "receives first {d:?}");
    let send_first = |r: i32| vec![isend(1 - r, m, 0, 3 * S), irecv(1 - r, 1000)];
    let d = transfers(vec![
        rank(0, "a", 0, send_first(0), 2),
        rank(1, "b", 0, send_first(1), 2),
    ]);
    assert_eq!(d.len(), 2);
    assert!(d.iter().all(|&t| close(t, 1.0)), "sends first {d:?}");
    // One rank receives first, the other sends first: together.
    let d = transfers(vec![
        rank(0, "a", 0, recv_first(0), 2),
        rank(1, "b", 0, send_first(1), 2),
    ]);
    assert!(d.iter().all(|&t| close(t, 1.0)), "mixed {d:?}");
    // Ranks 0 -> 1 and 3 -> 2, ranks 0 and 2 on node a, 1 and 3 on node b, each receiving
    // first: two pairs of ranks, together.
    let d = transfers(vec![
        rank(0, "a", 0, vec![isend(1, m, 1000, 3 * S)], 4),
        rank(1, "b", 0, vec![irecv(0, 0)], 4),
        rank(2, "a", 0, vec![irecv(3, 0)], 4),
        rank(3, "b", 0, vec![isend(2, m, 1000, 3 * S)], 4),
    ]);
    assert_eq!(d.len(), 2);
    assert!(d.iter().all(|&t| close(t, 1.0)), "two pairs {d:?}");
}

#[test]
fn the_reverse_factor_holds_only_on_the_library_the_profile_measured() {
    // Ranks 0 (node a) and 1 (node b) exchange 1 s of data each way by MPI_Sendrecv under
    // a reverse-flow factor of 2, in a job on 3 nodes (rank 2 on node c). Open MPI's TCP
    // transport moved such messages one after the other on the emulated cluster, MPICH's
    // together: a profile calibrated with Open MPI gives 2 s to a run on Open MPI and 1 s
    // to a run on MPICH; a profile naming no library gives 2 s to both.
    let m: u64 = 100_000_000;
    let sendrecv = |r: i32| Record {
        peer2: 1 - r,
        bytes_recv: m,
        comm_size: 2,
        ..send(call::MPI_Sendrecv, 1 - r, m, 0, 3 * S)
    };
    let transfers = |run_library: &str, profile_library: Option<&str>| {
        let mut r = run(vec![
            rank(0, "a", 0, vec![sendrecv(0)], 3),
            rank(1, "b", 0, vec![sendrecv(1)], 3),
            rank(2, "c", 0, vec![], 3),
        ]);
        for rk in &mut r.ranks {
            rk.meta.mpi_library = run_library.into();
        }
        let mut prof = profile();
        prof.penalty.reverse = 2.0;
        prof.mpi_library = profile_library.map(String::from);
        let p = predict_run(&r, &prof, Some("gige")).unwrap();
        let d: Vec<f64> = p
            .inter
            .iter()
            .enumerate()
            .map(|(k, &f)| p.sim.end[k] - p.flows.flows[f].start)
            .collect();
        assert_eq!(d.len(), 2, "{run_library} under {profile_library:?}");
        d
    };
    let ompi = "Open MPI v4.1.4, package: Debian OpenMPI";
    let mpich = "MPICH Version:\t4.0.2";
    let d = transfers(ompi, Some(ompi));
    assert!(d.iter().all(|&t| close(t, 2.0)), "Open MPI run {d:?}");
    let d = transfers(mpich, Some(ompi));
    assert!(d.iter().all(|&t| close(t, 1.0)), "MPICH run {d:?}");
    let d = transfers(mpich, Some(mpich));
    assert!(
        d.iter().all(|&t| close(t, 2.0)),
        "MPICH run, MPICH profile {d:?}"
    );
    for lib in [ompi, mpich] {
        let d = transfers(lib, None);
        assert!(
            d.iter().all(|&t| close(t, 2.0)),
            "{lib} under a profile naming none {d:?}"
        );
    }
}

#[test]
fn an_open_mpi_rank_that_granted_the_other_s_message_before_sending_its_own_goes_second() {
    // Ranks 0 (node a) and 1 (node b) exchange 1 s of data each way, receives first, under
    // a reverse-flow factor of 2. Rank 0 posts at 0; rank 1 posts at 0.6 s. Where rank 1
    // was in MPI_Wait until 0.5 s (the recorded run), it ran the progress engine after
    // rank 0's request came in and granted rank 0's message before sending its own
    // request: on Open MPI, rank 1's message leaves when rank 0's has arrived. Without
    // that wait, or on MPICH, the two move together: 1 s each on 2 nodes (an Open MPI job
    // on 2 nodes takes no reverse factor), 2 s each on 3 nodes.
    let m: u64 = 100_000_000;
    let ompi = "Open MPI v4.1.4, package: Debian OpenMPI";
    let irecv = |peer: i32, t0: u64| irecv(peer, m, t0, 3 * S);
    let flows = |library: &str, waited: bool, nodes: usize| {
        let t1 = 6 * S / 10;
        let mut late = vec![irecv(0, t1), isend(0, m, t1, 3 * S)];
        if waited {
            late.insert(0, wait_rec(0, S / 2));
        }
        let world = nodes as i32;
        let mut ranks = vec![
            rank(0, "a", 0, vec![irecv(1, 0), isend(1, m, 0, 3 * S)], world),
            rank(1, "b", 0, late, world),
        ];
        if nodes == 3 {
            ranks.push(rank(2, "c", 0, vec![], world));
        }
        let mut r = run(ranks);
        for rk in &mut r.ranks {
            rk.meta.mpi_library = library.into();
        }
        let mut prof = profile();
        prof.penalty.reverse = 2.0;
        prof.mpi_library = None;
        let p = predict_run(&r, &prof, Some("gige")).unwrap();
        let mut d: Vec<(f64, f64)> = p
            .inter
            .iter()
            .enumerate()
            .map(|(k, &f)| {
                let start = p.flows.flows[f].start;
                (start, p.sim.end[k] - start)
            })
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(d.len(), 2, "{library} waited {waited} on {nodes} nodes");
        d
    };
    // Rank 1's wait took no time in the replay: it posts at 0.1 s, after its 0.1 s gap.
    let ok = |d: &[(f64, f64)], want: [(f64, f64); 2]| {
        d.iter()
            .zip(want)
            .all(|(a, b)| close(a.0, b.0) && close(a.1, b.1))
    };
    let d = flows(ompi, true, 2);
    assert!(ok(&d, [(0.1, 1.0), (1.1, 1.0)]), "held, 2 nodes {d:?}");
    let d = flows(ompi, true, 3);
    assert!(ok(&d, [(0.1, 1.0), (1.1, 1.0)]), "held, 3 nodes {d:?}");
    let d = flows(ompi, false, 2);
    assert!(ok(&d, [(0.6, 1.0), (0.6, 1.0)]), "together, 2 nodes {d:?}");
    let d = flows(ompi, false, 3);
    assert!(ok(&d, [(0.6, 2.0), (0.6, 2.0)]), "together, 3 nodes {d:?}");
    let d = flows("MPICH Version:\t4.0.2", true, 2);
    assert!(ok(&d, [(0.1, 2.0), (0.1, 2.0)]), "MPICH {d:?}");
}

#[test]
fn an_open_mpi_rank_s_message_waits_behind_every_message_it_granted_first() {
    // Rank 0 (node a) posts two receives and two 1 s sends to rank 1 (node b) at 0; rank 1
    // was in MPI_Wait until 0.5 s (it saw both requests), then posts two receives and one
    // send at 0.6 s. Rank 0's connection is FIFO: its two messages, granted before rank
    // 1's request left, go first, one after the other, and rank 1's after both (hpcc's
    // ring at 2 ranks: 4 lone times a step for two messages each way).
    let m: u64 = 100_000_000;
    let irecv = |peer: i32, t0: u64| irecv(peer, m, t0, 4 * S);
    let t1 = 6 * S / 10;
    let mut r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![irecv(1, 0), isend(1, m, 0, 4 * S), isend(1, m, 0, 4 * S)],
            2,
        ),
        rank(
            1,
            "b",
            0,
            vec![
                wait_rec(0, S / 2),
                irecv(0, t1),
                irecv(0, t1),
                isend(0, m, t1, 4 * S),
            ],
            2,
        ),
    ]);
    for rk in &mut r.ranks {
        rk.meta.mpi_library = "Open MPI v4.1.4".into();
    }
    let p = predict_run(&r, &profile(), Some("gige")).unwrap();
    let mut d: Vec<(f64, f64, _)> = p
        .inter
        .iter()
        .enumerate()
        .map(|(k, &f)| {
            let fl = &p.flows.flows[f];
            (fl.start, p.sim.end[k], fl.src_node)
        })
        .collect();
    d.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(d.len(), 3, "{d:?}");
    let want = [(0.1, 1.1), (1.1, 2.1), (2.1, 3.1)];
    assert!(
        d.iter()
            .zip(want)
            .all(|(a, b)| close(a.0, b.0) && close(a.1, b.1)),
        "{d:?}"
    );
    // The last to go is rank 1's.
    assert_ne!(d[2].2, d[0].2, "{d:?}");
}

#[test]
fn a_small_message_crosses_a_shaped_link_at_once_when_its_buckets_hold_it() {
    // β = 1 ms/B, bucket 1500 B: 1000 B and the 66 B of TCP/IP headers of a message that
    // leaves alone fit a full bucket (latency alone, 0 here); sent 0.1 s later the next
    // finds 434 + 100 B, which pass at once (free without a `burst_gamma`), and pays β
    // for its other 466 B (0.466 s: the receive posted at 0 ends at 0.566 s); its 1066
    // bytes have left at 0.632 s, and after the pause until 5 s the bucket is full again
    // (the last receive, from 0.566 s, ends at 5 s).
    let mut prof = profile();
    prof.hockney.inter = Hockney::new(0.0, 1e-3).unwrap().with_burst(1500.0).unwrap();
    prof.eager = eager_limits(65536);
    let ms = S / 1000;
    let sender = vec![
        send(call::MPI_Send, 1, 1000, 0, 0),
        send(call::MPI_Send, 1, 1000, 100 * ms, 100 * ms),
        send(call::MPI_Send, 1, 1000, 5 * S, 5 * S),
    ];
    let receiver = vec![
        recv_rec(call::MPI_Recv, 0, 1000, 0, 10 * ms),
        recv_rec(call::MPI_Recv, 0, 1000, 10 * ms, 1200 * ms),
        recv_rec(call::MPI_Recv, 0, 1000, 1200 * ms, 5100 * ms),
    ];
    let r = run(vec![
        rank(0, "a", 0, sender, 2),
        rank(1, "b", 0, receiver, 2),
    ]);
    for model in [None, Some("none")] {
        let p = predict_run(&r, &prof, model).unwrap();
        let got: Vec<f64> = p.calls[1].iter().map(|c| c.predicted.unwrap()).collect();
        let want = [0.0, 0.566, 5.0 - 0.566];
        assert!(
            got.iter().zip(want).all(|(&g, w)| (g - w).abs() < 1e-6),
            "{model:?}: {got:?}"
        );
    }
    // The bucket's 534 bytes at the machine's 0.1 ms/B: 53.4 ms more.
    prof.hockney.inter.burst_gamma = 1e-4;
    let p = predict_run(&r, &prof, None).unwrap();
    let got: Vec<f64> = p.calls[1].iter().map(|c| c.predicted.unwrap()).collect();
    let want = [0.0, 0.6194, 5.0 - 0.6194];
    assert!(
        got.iter().zip(want).all(|(&g, w)| (g - w).abs() < 1e-6),
        "{got:?}"
    );
    // Without the bucket every message pays its second, the second one queued behind
    // the first on their connection.
    prof.hockney.inter.burst = 0.0;
    let p = predict_run(&r, &prof, None).unwrap();
    let got: Vec<f64> = p.calls[1].iter().map(|c| c.predicted.unwrap()).collect();
    assert!(
        got.iter()
            .zip([1.0, 1.0, 4.0])
            .all(|(&g, w)| (g - w).abs() < 1e-4),
        "{got:?}"
    );
}

#[test]
fn a_message_s_acknowledgements_take_from_the_reverse_path_s_buckets() {
    // β = 1 ms/B, buckets of 1500 B, latency 0. Rank 0 sends 1000 B at 0 (they fit); TCP
    // acknowledges them with a 66-byte segment from b to a, which takes from b's out
    // bucket and a's in bucket. Rank 1 then answers 2000 B at 1 ms: its buckets hold
    // 1434 + 1 B, which pass at once; the other 565 B take 0.565 s: the answer arrives at
    // 0.566 s (0.501 s if acknowledgements took nothing).
    let mut prof = profile();
    prof.hockney.inter = Hockney::new(0.0, 1e-3).unwrap().with_burst(1500.0).unwrap();
    prof.eager = eager_limits(65536);
    let ms = S / 1000;
    let r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![
                send(call::MPI_Send, 1, 1000, 0, 0),
                recv_rec(call::MPI_Recv, 1, 2000, 0, 600 * ms),
            ],
            2,
        ),
        rank(
            1,
            "b",
            0,
            vec![
                recv_rec(call::MPI_Recv, 0, 1000, 0, 0),
                send(call::MPI_Send, 0, 2000, ms, ms),
            ],
            2,
        ),
    ]);
    for model in [None, Some("none")] {
        let p = predict_run(&r, &prof, model).unwrap();
        let answer = p.calls[0][1].predicted.unwrap();
        assert!((answer - 0.566).abs() < 1e-6, "{model:?}: {answer}");
    }
}

#[test]
fn the_latency_measured_as_launched_replaces_alpha_for_a_run_launched_so() {
    // α 0.5 s and β 1 ms/B: 1000 B arrive 1.5 s after the send. Measured with every rank
    // of a 2-rank launch active, one per node, α was 2 s: 3 s.
    let mut prof = profile();
    prof.hockney.inter = Hockney::new(0.5, 1e-3).unwrap();
    prof.eager = eager_limits(65536);
    let r = run(vec![
        rank(0, "a", 0, vec![send(call::MPI_Send, 1, 1000, 0, 0)], 2),
        rank(1, "b", 0, vec![recv_rec(call::MPI_Recv, 0, 1000, 0, S)], 2),
    ]);
    let recv = |p: &Profile| {
        predict_run(&r, p, None).unwrap().calls[1][0]
            .predicted
            .unwrap()
    };
    assert!(close(recv(&prof), 1.5), "{}", recv(&prof));
    prof.latency_placed = vec![pmpi_core::profile::PlacedLatency {
        procs: 2,
        per_node: 1,
        alpha: 2.0,
        step: None,
    }];
    assert!(close(recv(&prof), 3.0), "{}", recv(&prof));
    // Measured at another size or placement: the ping-pong's α.
    for (procs, per_node) in [(4, 1), (2, 2)] {
        prof.latency_placed[0].procs = procs;
        prof.latency_placed[0].per_node = per_node;
        assert!(
            close(recv(&prof), 1.5),
            "{procs} {per_node}: {}",
            recv(&prof)
        );
    }
    // The same run replayed onto one node: no message crosses nodes, α within a node.
    prof.latency_placed = vec![pmpi_core::profile::PlacedLatency {
        procs: 2,
        per_node: 2,
        alpha: 2.0,
        step: None,
    }];
    let one = conditions(&["a", "a"]);
    let p = predict_run_under(&r, &prof, None, &Assumptions::default(), &one).unwrap();
    assert!(
        p.calls[1][0].predicted.unwrap() < 0.1,
        "{:?}",
        p.calls[1][0]
    );
}

/// An MPI_Neighbor_alltoallv on a distributed graph that lists each rank among its own
/// neighbours (as DOLFINx's do): the bytes a rank sends itself cross no link, so the call
/// takes the bytes to and from the other rank (α + β·m, m = 1 MB: 10 ms), not its totals
/// (11 MB: 110 ms; DOLFINx's 32 MB calls at 2 ranks, 0.2 MB between them, measured 0.31
/// s and were predicted 2.7 s).
#[test]
fn a_neighbourhood_collective_s_bytes_to_itself_cross_no_link() {
    const M: u64 = 1_000_000;
    let dir = std::env::temp_dir().join(format!("pmpi-engine-nbr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for r in 0..2i32 {
        let arcs = vec![(r, 10 * M), (1 - r, M)];
        let rec = Record {
            bytes_send: 11 * M,
            bytes_recv: 11 * M,
            flags: trace::FLAG_ARCS,
            ..coll(call::MPI_Neighbor_alltoallv, 2, S, 2 * S)
        };
        let recs = vec![
            trace::arcs::continuation(&rec, true, 0, 2, &arcs),
            rec,
            trace::arcs::continuation(&rec, false, 0, 2, &arcs),
        ];
        trace::write_spool(&dir, r, &recs).unwrap();
        trace::write_meta(&dir, &rank(r, ["a", "b"][r as usize], 0, vec![], 2).meta).unwrap();
    }
    let loaded = trace::load_run(&dir).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let p = predict_run(&loaded, &profile(), Some("none")).unwrap();
    for r in 0..2 {
        let c = p.calls[r][0];
        assert!(close(c.predicted.unwrap(), 0.01), "rank {r}: {c:?}");
    }
    // Without its arcs (an older spool), the call keeps its totals.
    let mut totals = loaded.clone();
    for rk in &mut totals.ranks {
        rk.arcs.clear();
    }
    let q = predict_run(&totals, &profile(), Some("none")).unwrap();
    assert!(
        close(q.calls[0][0].predicted.unwrap(), 0.11),
        "{:?}",
        q.calls[0][0]
    );
}

/// Two members on nodes a and b all-gather 1 MB blocks (10 ms alone each), rank 1
/// entering 10 ms after rank 0 in the recorded run. Where rank 1 was in `MPI_Wait` (for
/// an 8-byte message rank 0 sent as it entered) while rank 0's request came in, it
/// granted rank 0's block first on Open MPI: rank 1 has it after one exchange and returns
/// (its own block is in the socket buffer), rank 0 has rank 1's after both. In the
/// replay the wait ends when the small message arrives, so both enter together: 20 ms
/// and 10 ms. Where rank 1 computed until it entered, both blocks move at once, after
/// rank 1's entry: 20 ms (10 waiting) and 10 ms. Entered together, on MPICH, or with
/// eager blocks, at once too.
#[test]
fn two_ranks_all_gathering_by_rendezvous_under_open_mpi_go_one_after_the_other() {
    let ends = |lag_ms: u64, m: u64, library: &str, buffer: u64, waited: bool| {
        let ranks = (0..2i32)
            .map(|r| {
                let t0 = S + r as u64 * lag_ms * S / 1000;
                let rec = Record {
                    bytes_send: m,
                    bytes_recv: 2 * m,
                    ..coll(call::MPI_Allgatherv, 2, t0, t0 + S / 10)
                };
                let recs = match (waited, r) {
                    (false, _) => vec![rec],
                    (true, 0) => vec![isend(1, 8, S, S), rec],
                    (true, _) => vec![irecv(0, 8, S / 2, t0), wait_rec(S / 2, t0), rec],
                };
                let mut rk = rank(r, ["a", "b"][r as usize], 0, recs, 2);
                rk.meta.mpi_library = library.into();
                rk
            })
            .collect();
        let mut prof = profile();
        prof.mpi_library = Some(library.into());
        prof.eager = eager_limits(65536);
        prof.socket_buffer = Some(buffer);
        let p = predict_run(&run(ranks), &prof, Some("gige")).unwrap();
        [0, 1].map(|r| p.calls[r].last().unwrap().predicted.unwrap())
    };
    let near = |e: [f64; 2], want: [f64; 2]| (0..2).all(|k| (e[k] - want[k]).abs() < 1e-4);
    let (ompi, buf) = ("Open MPI v4.1.6", 4 << 20);
    let e = ends(10, 1_000_000, ompi, buf, true);
    assert!(near(e, [0.02, 0.01]), "{e:?}");
    // Without a socket buffer, rank 1's send returns once its block has left.
    let e = ends(10, 1_000_000, ompi, 0, true);
    assert!(near(e, [0.02, 0.02]), "{e:?}");
    // Rank 1 computed until it entered: it had not seen rank 0's request.
    let e = ends(10, 1_000_000, ompi, buf, false);
    assert!(near(e, [0.02, 0.01]), "{e:?}");
    let e = ends(0, 1_000_000, ompi, buf, false);
    assert!(near(e, [0.01, 0.01]), "{e:?}");
    let e = ends(10, 1_000_000, "MPICH Version:\t4.0.2", buf, true);
    assert!(near(e, [0.01, 0.01]), "{e:?}");
    // 32 KB blocks, eager: 0.32 ms after the last entry.
    let e = ends(10, 32_000, ompi, buf, true);
    assert!(near(e, [0.00032, 0.00032]), "{e:?}");
}

/// An exclusive scan of 8 bytes on three ranks on three nodes, rank 1 entering 10 ms
/// after rank 0 and rank 2 5 ms after it. Open MPI chains it (rank 0 sends its value to
/// rank 1 and returns; rank 1 adds its own and sends it on): rank 0 and rank 1 return at
/// once, rank 2 waits 5 ms for rank 1. MPICH runs recursive doubling: every rank waits
/// for the last (rank 0 10 ms, rank 2 5 ms).
#[test]
fn open_mpi_s_scans_are_a_chain_where_a_rank_waits_only_for_those_before_it() {
    let ends = |library: &str| {
        let ranks = (0..3i32)
            .map(|r| {
                let t0 = S + [0, 10, 5][r as usize] * S / 1000;
                let rec = Record {
                    bytes_send: 8,
                    bytes_recv: 8,
                    ..coll(call::MPI_Exscan, 3, t0, t0 + S / 1000)
                };
                let mut rk = rank(r, ["a", "b", "c"][r as usize], 0, vec![rec], 3);
                rk.meta.mpi_library = library.into();
                rk
            })
            .collect();
        let mut prof = profile();
        prof.mpi_library = Some(library.into());
        let p = predict_run(&run(ranks), &prof, Some("gige")).unwrap();
        [0, 1, 2].map(|r| p.calls[r][0].predicted.unwrap())
    };
    let e = ends("Open MPI v4.1.6");
    assert!(e[0] < 1e-4 && e[1] < 1e-4, "{e:?}");
    assert!(e[2] > 0.005 && e[2] < 0.0051, "{e:?}");
    let e = ends("MPICH Version:\t4.0.2");
    assert!(e[0] > 0.01 && e[0] < 0.0101, "{e:?}");
    assert!(e[1] < 1e-4, "{e:?}");
    assert!(e[2] > 0.005 && e[2] < 0.0051, "{e:?}");
}

/// Two ranks on two nodes each post an `MPI_Irecv` and an `MPI_Isend` of 1 s of data to
/// the other at 0, compute 2 s, then `MPI_Waitall` (recorded 2 s to 3 s). Open MPI's TCP
/// transport moves a rendezvous message only while both ranks run the progress engine:
/// the data leaves once both are in `MPI_Waitall`, which takes the whole transfer, 1 s
/// (`examples/progress_rdv.c`: 72 KB, 6.1 ms in the wait after 20 ms of computation).
/// MPICH, an eager message, or ranks that polled during the computation (the layer flags
/// the record after such polls; an older recording only counts them) move the data
/// during it: the wait takes nothing. One rank polling is not enough: each message needs
/// its receiver to grant it and its sender to see the grant. A run recorded with Open
/// MPI's progress thread (`btl_tcp_progress_thread`), or a what-if replay with one
/// (`--progress async`), moves it during the computation too.
#[test]
fn an_open_mpi_rendezvous_message_moves_only_while_both_ranks_run_the_progress_engine() {
    // `async_`: the what-if of a progress thread; `thread`: a run recorded with one.
    let under = |library: &str,
                 m: u64,
                 polled: [bool; 2],
                 counted_only: bool,
                 async_: bool,
                 thread: bool| {
        let ranks = (0..2i32)
            .map(|r| {
                let peer = 1 - r;
                let mut wait = Record {
                    comm: u32::MAX,
                    ..coll(call::MPI_Waitall, 0, 2 * S, 3 * S)
                };
                if polled[r as usize] && !counted_only {
                    wait.flags |= trace::FLAG_GAP_POLLS;
                }
                let recs = vec![irecv(peer, m, 0, 3 * S), isend(peer, m, 0, 3 * S), wait];
                let mut rk = rank(r, ["a", "b"][r as usize], 0, recs, 2);
                rk.meta.mpi_library = library.into();
                rk.meta.gap_polls = !counted_only;
                rk.meta.progress_thread = thread;
                if polled[r as usize] {
                    rk.meta.polls = vec![trace::PollStat {
                        call: "MPI_Testall".into(),
                        count: 40,
                        time_ns: 40_000,
                    }];
                }
                rk
            })
            .collect();
        let mut prof = profile();
        prof.mpi_library = Some(library.into());
        prof.eager = eager_limits(65536);
        prof.penalty.reverse = 1.0;
        let cond = Conditions {
            progress: if async_ {
                ProgressMode::Async
            } else {
                ProgressMode::Library
            },
            ..conditions(&["a", "b"])
        };
        let a = Assumptions::default();
        let p = predict_run_under(&run(ranks), &prof, Some("gige"), &a, &cond).unwrap();
        [0, 1].map(|r| p.calls[r][2].predicted.unwrap())
    };
    let waitall = |library: &str, m: u64, polled: [bool; 2], counted_only: bool| {
        under(library, m, polled, counted_only, false, false)
    };
    let ompi = "Open MPI v4.1.6";
    let mpich = "MPICH Version:\t4.0.2";
    let big = 100_000_000;
    let w = waitall(ompi, big, [false; 2], false);
    assert!(close(w[0], 1.0) && close(w[1], 1.0), "Open MPI {w:?}");
    let w = waitall(ompi, big, [true, false], false);
    assert!(
        close(w[0], 1.0) && close(w[1], 1.0),
        "one rank polled {w:?}"
    );
    let w = waitall(ompi, big, [true; 2], false);
    assert!(w[0] < 1e-6 && w[1] < 1e-6, "both polled {w:?}");
    let w = waitall(ompi, big, [true; 2], true);
    assert!(w[0] < 1e-6 && w[1] < 1e-6, "polls counted only {w:?}");
    let w = waitall(mpich, big, [false; 2], false);
    assert!(w[0] < 1e-6 && w[1] < 1e-6, "MPICH {w:?}");
    let w = waitall(ompi, 32_000, [false; 2], false);
    assert!(w[0] < 1e-6 && w[1] < 1e-6, "eager {w:?}");
    let w = under(ompi, big, [false; 2], false, true, false);
    assert!(w[0] < 1e-6 && w[1] < 1e-6, "a progress thread {w:?}");
    let w = under(ompi, big, [false; 2], false, false, true);
    assert!(
        w[0] < 1e-6 && w[1] < 1e-6,
        "recorded with a progress thread {w:?}"
    );
}

/// The same within a node: Open MPI's shared-memory transport copies a rendezvous
/// message (single copy) when the receiver matches it in the progress engine, so two
/// ranks of one node that post, compute 2 s and then `MPI_Waitall` copy in the wait: the
/// intra-node time of 1e8 bytes (`progress_rdv` at 4 MiB on one host: 0.70 ms measured,
/// 0.84 ms predicted, none before). MPICH's copy happens during the computation.
#[test]
fn within_a_node_an_open_mpi_rendezvous_message_is_copied_in_the_wait() {
    let waitall = |library: &str| {
        let m = 100_000_000;
        let ranks = (0..2i32)
            .map(|r| {
                let peer = 1 - r;
                let wait = Record {
                    comm: u32::MAX,
                    ..coll(call::MPI_Waitall, 0, 2 * S, 3 * S)
                };
                let recs = vec![irecv(peer, m, 0, 3 * S), isend(peer, m, 0, 3 * S), wait];
                let mut rk = rank(r, "a", 0, recs, 2);
                rk.meta.mpi_library = library.into();
                rk.meta.gap_polls = true;
                rk
            })
            .collect();
        let mut prof = profile();
        prof.mpi_library = Some(library.into());
        prof.eager = eager_limits(65536);
        prof.hockney.intra = Hockney {
            alpha: 0.0,
            beta: 1e-10,
            burst: 0.0,
            burst_gamma: 0.0,
        };
        let p = predict_run(&run(ranks), &prof, Some("gige")).unwrap();
        [0, 1].map(|r| p.calls[r][2].predicted.unwrap())
    };
    let w = waitall("Open MPI v4.1.6");
    assert!(close(w[0], 0.01) && close(w[1], 0.01), "Open MPI {w:?}");
    let w = waitall("MPICH Version:\t4.0.2");
    assert!(w[0] < 1e-6 && w[1] < 1e-6, "MPICH {w:?}");
}

/// Four ranks on four nodes of one machine with 2 CPUs: rank 1 sends 8 bytes to rank 0,
/// which waits in `MPI_Recv` from 0; ranks 2 and 3 compute until `t2` and `t3`, then
/// exchange a message. With `shared`, the ranks' metadata say they share the machine.
fn four_on_two_cpus(t2: u64, t3: u64, shared: bool) -> RunTrace {
    let ms = S / 1000;
    let us = S / 1_000_000;
    let mut r = run(vec![
        rank(
            0,
            "a",
            0,
            vec![recv_rec(call::MPI_Recv, 1, 8, 0, 5 * ms + 50 * us)],
            4,
        ),
        rank(
            1,
            "b",
            0,
            vec![send(call::MPI_Send, 0, 8, 5 * ms, 5 * ms + us)],
            4,
        ),
        rank(2, "c", 0, vec![send(call::MPI_Send, 3, 8, t2, t2 + us)], 4),
        rank(
            3,
            "d",
            0,
            vec![recv_rec(call::MPI_Recv, 2, 8, t3, t3 + us)],
            4,
        ),
    ]);
    if shared {
        for rk in &mut r.ranks {
            rk.meta.boot_id = "one-machine".into();
            rk.meta.cpus = 2;
        }
    }
    r
}

/// A rank whose call could end while every CPU of its machine runs a rank that computes
/// gets one when the first of them enters MPI, or after the kernel's time slice (1.5 ms on
/// 2 CPUs); with a CPU free, or ranks that do not outnumber the CPUs, it does not wait.
#[test]
fn a_rank_that_shares_too_few_cpus_waits_for_one() {
    let ms = S / 1000;
    let prof = profile();
    let end_of_recv = |r: &RunTrace| {
        let p = predict_run(r, &prof, Some("gige")).unwrap();
        let c = p.calls[0][0];
        assert_eq!(c.reason, Reason::None, "{c:?}");
        c.predicted.unwrap()
    };
    // Unshared: the receive ends when the message has come, shortly after 5 ms.
    let free = end_of_recv(&four_on_two_cpus(5 * ms + 300_000, 6 * ms, false));
    assert!(free > 5e-3 && free < 5.1e-3, "{free}");
    // Ranks 2 and 3 compute on both CPUs until 5.3 and 6 ms: rank 0 runs at 5.3 ms.
    let got = end_of_recv(&four_on_two_cpus(5 * ms + 300_000, 6 * ms, true));
    assert!(close(got, 5.3e-3), "{got}");
    // They compute until 9 ms: rank 0 waits a time slice.
    let got = end_of_recv(&four_on_two_cpus(9 * ms, 9 * ms, true));
    assert!(close(got, free + 1.5e-3), "{got} vs {free}");
    // Rank 2 entered MPI at 1 ms (its send), so one CPU is free at 5 ms: no wait.
    let got = end_of_recv(&four_on_two_cpus(ms, 9 * ms, true));
    assert!(close(got, free), "{got} vs {free}");
    // The same ranks on a machine of 4 CPUs share nothing.
    let mut r = four_on_two_cpus(9 * ms, 9 * ms, true);
    for rk in &mut r.ranks {
        rk.meta.cpus = 4;
    }
    let got = end_of_recv(&r);
    assert!(close(got, free), "{got} vs {free}");
}

/// The what-if replay's `--cpus-per-node`: the run recorded with four ranks on one machine
/// of 2 CPUs, replayed on its four nodes of 2 CPUs each, waits for no CPU; unshared when
/// recorded, replayed with its four ranks on one node of 2 CPUs, it waits as if recorded
/// so (rank 0 runs when rank 2 enters MPI at 5.3 ms).
#[test]
fn a_what_if_on_nodes_of_given_cpus_moves_the_waits_for_a_cpu() {
    let ms = S / 1000;
    let prof = profile();
    let a = Assumptions::default();
    let end_of_recv = |r: &RunTrace, cond: &Conditions| {
        let p = predict_run_under(r, &prof, Some("gige"), &a, cond).unwrap();
        p.calls[0][0].predicted.unwrap()
    };
    let four = conditions(&["a", "b", "c", "d"]);
    let shared = four_on_two_cpus(5 * ms + 300_000, 6 * ms, true);
    let unshared = four_on_two_cpus(5 * ms + 300_000, 6 * ms, false);
    let free = end_of_recv(&unshared, &four);
    assert!(free < 5.1e-3, "{free}");
    // As recorded: the machine's 2 CPUs are shared by the four ranks.
    assert!(close(end_of_recv(&shared, &four), 5.3e-3));
    // Each node a machine of 2 CPUs: nothing shared.
    let spread = Conditions {
        cpus_per_node: Some(2),
        ..four.clone()
    };
    let got = end_of_recv(&shared, &spread);
    assert!(close(got, free), "{got} vs {free}");
    // All four on one node of 2 CPUs (the message now within the node).
    let one = conditions(&["a", "a", "a", "a"]);
    let alone = end_of_recv(&unshared, &one);
    assert!(alone < 5.3e-3, "{alone}");
    let packed = Conditions {
        cpus_per_node: Some(2),
        ..one
    };
    let got = end_of_recv(&unshared, &packed);
    assert!(close(got, 5.3e-3), "{got}");
}

#[test]
fn a_blocking_call_between_nodes_after_time_outside_mpi_pays_the_profiles_cold_cost() {
    // Rank 0 (node a) sends 1000 B eagerly to rank 1 (node b) back to back, again after
    // 10 ms outside MPI, then to rank 2 on its own node after 10 ms more. The profile's
    // table: 100 µs after 1 ms, 1 ms after 20 ms, so 10 ms costs 100 + 9/19 x 900 µs. Only
    // the second send pays it, and its receive, posted long before, gets the data that
    // much later; a gap in which the rank polled costs nothing.
    let ms = S / 1000;
    let us = S / 1_000_000;
    let trace = |polled: bool| {
        let mut second = send(call::MPI_Send, 1, 1000, 10 * ms + us, 10 * ms + 2 * us);
        if polled {
            second.flags |= trace::FLAG_GAP_POLLS;
        }
        run(vec![
            rank(
                0,
                "a",
                0,
                vec![
                    send(call::MPI_Send, 1, 1000, 0, us),
                    second,
                    send(call::MPI_Send, 2, 1000, 20 * ms + 2 * us, 20 * ms + 3 * us),
                ],
                3,
            ),
            rank(
                1,
                "b",
                0,
                vec![
                    recv_rec(call::MPI_Recv, 0, 1000, 0, 20 * us),
                    recv_rec(call::MPI_Recv, 0, 1000, ms, 10 * ms + 20 * us),
                ],
                3,
            ),
            rank(
                2,
                "a",
                0,
                vec![recv_rec(call::MPI_Recv, 0, 1000, 0, 20 * ms + 5 * us)],
                3,
            ),
        ])
    };
    let plain = profile();
    let mut cold = plain.clone();
    cold.cold_call = vec![[1e-3, 1e-4], [2e-2, 1e-3]];
    let extra = 1e-4 + 9.0 / 19.0 * 9e-4;
    let base = predict_run(&trace(false), &plain, Some("none")).unwrap();
    let got = predict_run(&trace(false), &cold, Some("none")).unwrap();
    let polled = predict_run(&trace(true), &cold, Some("none")).unwrap();
    let d = |r: usize, k: usize, p: &pmpi_core::predict::RunPrediction| {
        p.calls[r][k].predicted.unwrap() - base.calls[r][k].predicted.unwrap()
    };
    assert!(close(d(0, 0, &got), 0.0), "{:?}", got.calls[0]);
    assert!(close(d(0, 1, &got), extra), "{:?}", got.calls[0]);
    assert!(close(d(0, 2, &got), 0.0), "{:?}", got.calls[0]);
    assert!(
        close(d(1, 1, &got), extra),
        "{:?} {:?}",
        got.calls[1],
        base.calls[1]
    );
    for (r, k) in [(0, 1), (1, 1)] {
        assert!(close(d(r, k, &polled), 0.0), "{:?}", polled.calls[r]);
    }
}

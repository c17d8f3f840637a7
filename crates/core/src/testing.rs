//! Helpers shared by the unit tests.

use crate::trace::{FLAG_NONBLOCKING, NO_RANK, RankMeta, RankTrace, Record, RunTrace, call};

/// A xorshift generator from `seed` (nonzero): each call gives a number below `k` (0 for
/// `k` = 0), the same sequence for the same seed, so random test cases repeat.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |k| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % k.max(1)
    }
}

/// The built-in profile with a calibrated profile's factors: opposite and onward flows
/// slower, ports capped, each contended flow drawn its own factor, a train's messages
/// spaced by a gap.
pub(crate) fn calibrated_profile() -> crate::profile::Profile {
    let mut p = crate::profile::Profile::builtin_default();
    // A latency below the random runs' gaps (µs): on Open MPI their receivers see requests
    // before they send (the grant rule holds messages).
    p.hockney.inter.alpha = 1e-7;
    p.penalty.reverse = 2.0;
    p.penalty.through = 1.2;
    p.penalty.port_capacity = Some(1.0);
    p.penalty.dispersion = Some(vec![0.6, 0.9, 1.1, 1.4]);
    // Measured gaps that put 40 bytes of headers on each message of a train.
    let mut plogp = crate::model::plogp::PLogP::from_hockney(&p.hockney.inter);
    let b = p.hockney.inter.beta;
    plogp.g = crate::model::plogp::PiecewiseLinear {
        points: vec![(0.0, 3e-6), (1024.0, b * 1064.0), (16384.0, b * 16424.0)],
    };
    p.plogp = Some(plogp);
    // A cold-call cost on the random runs' microsecond gaps.
    p.cold_call = vec![[5e-7, 1e-7], [2e-5, 5e-7]];
    p
}

/// Writes `run`'s spools and metadata to `dir`, emptied first (a run the reader can read).
pub(crate) fn write_run(dir: &std::path::Path, run: &RunTrace) {
    std::fs::remove_dir_all(dir).ok();
    std::fs::create_dir_all(dir).unwrap();
    for rk in &run.ranks {
        crate::trace::write_spool(dir, rk.meta.rank, &rk.records).unwrap();
        crate::trace::write_meta(dir, &rk.meta).unwrap();
    }
}

/// A random run: blocking, synchronous and nonblocking sends and receives, waits that
/// complete one to three requests, probes (some of any tag), send-receives, and the
/// same collectives on every rank (barriers, all-reduces, broadcasts and reductions
/// from a random root, nonblocking barriers), blocking point-to-point calls on two
/// threads, records in spool order (by end).
/// Rank `me` of `n` on node `n{me % nodes}`, its records as a spool has them: each
/// written when its call completed.
pub(crate) fn spooled_rank(me: i32, n: i32, nodes: i32, mut records: Vec<Record>) -> RankTrace {
    records.sort_by_key(|r| r.t_end);
    RankTrace {
        meta: RankMeta {
            rank: me,
            world_size: n,
            node: format!("n{}", me % nodes),
            calls: crate::trace::CALL_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            ..Default::default()
        },
        records,
        ..Default::default()
    }
}

/// Case `case` of a random-run test, written to `dir` as a run's files: from case
/// `long_from` on `scale` times as long, every other case with clock offsets, and every
/// tenth (the fourth, fourteenth, ...) with rank 1's spool lost (its metadata kept).
pub(crate) fn write_random_case(
    rnd: &mut impl FnMut(u64) -> u64,
    dir: &std::path::Path,
    case: usize,
    long_from: usize,
    scale: u64,
) -> RunTrace {
    let run = random_case(rnd, case, long_from, scale);
    write_case(dir, case, &run);
    run
}

/// The run of [`write_random_case`], not written yet (a test may change its calls first).
pub(crate) fn random_case(
    rnd: &mut impl FnMut(u64) -> u64,
    case: usize,
    long_from: usize,
    scale: u64,
) -> RunTrace {
    let mut run = random_run_of(rnd, if case < long_from { 1 } else { scale });
    if case % 2 == 1 {
        offset_clocks(&mut run, rnd);
    }
    // Every third case on Open MPI: the replay's grant rule and its 2-node factor.
    if case % 3 == 2 {
        for rk in &mut run.ranks {
            rk.meta.mpi_library = OPEN_MPI.into();
        }
    }
    // Every fourth case on one machine of 1 or 2 CPUs, fewer than its ranks at times: the
    // replay's waits for a CPU (`replay::cpus`).
    if case % 4 == 1 {
        for rk in &mut run.ranks {
            rk.meta.boot_id = "one-machine".into();
            rk.meta.cpus = 1 + u32::from(case % 8 == 5);
        }
    }
    // Every fifth case, the nodes' TCP counters, rank 0's with two windows of timeouts:
    // the reports' network section, the page's row and trace.json's track.
    if case % 5 == 3 {
        add_net_counters(&mut run);
    }
    run
}

/// Gives every rank TCP counters at both ends (1 s apart from its init) and rank 0 the
/// samples' windows of 3 timeouts.
pub(crate) fn add_net_counters(run: &mut RunTrace) {
    use crate::trace::netstat::{Episode, NetCounters};
    for rk in &mut run.ranks {
        let m = &mut rk.meta;
        let t0 = m.clock_init.map_or(m.init_ns, |c| c.at_ns);
        let at = |dt: u64, out_segs, retrans_segs, timeouts| NetCounters {
            at_ns: t0 + dt,
            out_segs,
            retrans_segs,
            timeouts,
            rx_bytes: 10 * out_segs,
            tx_bytes: 20 * out_segs,
            ..Default::default()
        };
        m.net_init = Some(at(0, 100, 1, 0));
        m.net_end = Some(at(1_000_000_000, 900, 7, if m.rank == 0 { 3 } else { 0 }));
        if m.rank == 0 {
            m.net_samples = true;
            m.net_timeouts = vec![
                Episode {
                    from_ns: t0 + 100_000,
                    to_ns: t0 + 300_000,
                    timeouts: 1,
                    retrans_segs: 2,
                },
                Episode {
                    from_ns: t0 + 500_000,
                    to_ns: t0 + 700_000,
                    timeouts: 2,
                    retrans_segs: 4,
                },
            ];
        }
    }
}

/// An Open MPI library string as `MPI_Get_library_version` gives it.
pub(crate) const OPEN_MPI: &str = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4";

/// Writes case `case`'s run to `dir` as [`write_random_case`] does.
pub(crate) fn write_case(dir: &std::path::Path, case: usize, run: &RunTrace) {
    write_run(dir, run);
    if case % 10 == 3 {
        std::fs::remove_file(crate::trace::spool_path(dir, 1)).unwrap();
    }
}

/// Turns every `call` of `run` into an all-to-all of `block` bytes a member (unchanged
/// sizes if `block` is `None`): random runs whose collectives exercise the all-to-all's
/// costs under what-if conditions.
pub(crate) fn as_alltoalls(run: &mut RunTrace, call: u16, block: Option<u64>) {
    for r in run.ranks.iter_mut().flat_map(|rk| rk.records.iter_mut()) {
        if r.call == call {
            r.call = crate::trace::call::MPI_Alltoall;
            if let Some(b) = block {
                r.bytes_send = b * u64::from(r.comm_size);
                r.bytes_recv = r.bytes_send;
            }
        }
    }
}

/// Case `case` of a what-if test: a random run ([`random_case`] with `long_from` and
/// `scale`), its `call`s made all-to-alls of `block` bytes in every other case
/// ([`as_alltoalls`]), written to `dir` ([`write_case`]) and loaded back, with random
/// conditions for it ([`random_conditions`]), its world size from the run as written.
pub(crate) fn whatif_case(
    rnd: &mut impl FnMut(u64) -> u64,
    dir: &std::path::Path,
    case: usize,
    long_from: usize,
    scale: u64,
    call: u16,
    block: Option<u64>,
) -> (RunTrace, crate::predict::Conditions) {
    let mut run = random_case(rnd, case, long_from, scale);
    if case.is_multiple_of(2) {
        as_alltoalls(&mut run, call, block);
    }
    write_case(dir, case, &run);
    let loaded = crate::trace::load_run(dir).unwrap();
    let world = crate::topo::placement::Placement::from_run(&loaded)
        .node_of_rank
        .len();
    let cond = random_conditions(rnd, world);
    (loaded, cond)
}

/// Gives every rank of `run` a clock offset within ±2 µs, so that its ranks are read in
/// corrected time order, not as recorded.
pub(crate) fn offset_clocks(run: &mut RunTrace, rnd: &mut impl FnMut(u64) -> u64) {
    for rk in &mut run.ranks {
        rk.meta.clock_init = Some(crate::trace::ClockSample {
            at_ns: 0,
            offset_ns: rnd(4000) as i64 - 2000,
            rtt_ns: 1,
        });
    }
}

pub(crate) fn random_run(rnd: &mut impl FnMut(u64) -> u64) -> RunTrace {
    random_run_of(rnd, 1)
}

/// [`random_run`] `scale` times as long: up to `scale` times as many steps per rank and
/// collectives; longer, its ranks take as many steps and their point-to-point calls keep
/// to a ring (what waits for a match to the end of the run is little).
pub(crate) fn random_run_of(rnd: &mut impl FnMut(u64) -> u64, scale: u64) -> RunTrace {
    let n = 2 + rnd(4) as i32;
    let nodes = 1 + rnd(3) as i32;
    let colls: Vec<(u16, i32)> = (0..rnd(6 * scale))
        .map(|_| {
            let c = [
                call::MPI_Barrier,
                call::MPI_Allreduce,
                call::MPI_Bcast,
                call::MPI_Reduce,
                call::MPI_Ibarrier,
            ][rnd(5) as usize];
            (c, rnd(n as u64) as i32)
        })
        .collect();
    let ranks = (0..n)
        .map(|me| {
            let mut recs: Vec<Record> = Vec::new();
            let mut t = 1_000u64;
            let mut pending: Vec<usize> = Vec::new();
            let mut next_coll = 0;
            let base = Record {
                peer: NO_RANK,
                root: NO_RANK,
                peer2: NO_RANK,
                comm_size: n as u32,
                ..Default::default()
            };
            let steps = 5 + rnd(30 * scale);
            // A longer run gives every rank as many steps, more than its collectives need:
            // each operation is complete.
            let steps = if scale > 1 { 30 * scale } else { steps };
            for step in 0..=steps {
                let dur = 1 + rnd(3_000);
                let at = t;
                t += dur + 1 + rnd(500);
                let bytes = 1 << rnd(20);
                let peer = rnd(n as u64 + 1) as i32;
                let tag = rnd(2) as i32;
                // A longer run keeps to a ring (sends to the next rank, receives from the
                // one before), so that its messages match but at the ends of channels.
                let (to, from) = if scale > 1 {
                    ((me + 1) % n, (me + n - 1) % n)
                } else {
                    (peer, peer)
                };
                let last = step == steps;
                if next_coll < colls.len() && (last || rnd(4) == 0) {
                    let (c, root) = colls[next_coll];
                    next_coll += 1;
                    let nb = c == call::MPI_Ibarrier;
                    recs.push(Record {
                        t_start: at,
                        t_end: at + dur,
                        t_posted: if nb { at + 1 } else { at + dur },
                        bytes_send: if c == call::MPI_Allreduce { bytes } else { 0 },
                        bytes_recv: if c == call::MPI_Bcast { bytes } else { 0 },
                        root: if matches!(c, call::MPI_Bcast | call::MPI_Reduce) {
                            root
                        } else {
                            NO_RANK
                        },
                        call: c,
                        flags: if nb { FLAG_NONBLOCKING } else { 0 },
                        ..base
                    });
                    if nb {
                        pending.push(recs.len() - 1);
                    }
                    continue;
                }
                let what = if last { 9 } else { rnd(10) };
                match what {
                    // Nonblocking send or receive: completed by a later wait.
                    0 | 1 => {
                        let send = what == 0;
                        recs.push(Record {
                            t_start: at,
                            t_end: at + 1,
                            t_posted: at + 1,
                            peer: if send { to } else { from },
                            tag,
                            bytes_send: if send { bytes } else { 0 },
                            bytes_recv: if send { 0 } else { bytes },
                            call: if send {
                                call::MPI_Isend
                            } else {
                                call::MPI_Irecv
                            },
                            flags: FLAG_NONBLOCKING,
                            ..base
                        });
                        pending.push(recs.len() - 1);
                    }
                    // A wait for one to three requests, or all at the end.
                    2 | 9 => {
                        if pending.is_empty() {
                            continue;
                        }
                        let k = if last {
                            pending.len()
                        } else {
                            1 + rnd(3) as usize
                        };
                        let end = at + dur;
                        for i in pending.drain(..k.min(pending.len())) {
                            recs[i].t_end = end;
                        }
                        recs.push(Record {
                            t_start: at,
                            t_end: end,
                            t_posted: end,
                            call: call::MPI_Waitall,
                            ..base
                        });
                    }
                    3 => recs.push(Record {
                        t_start: at,
                        t_end: at + dur,
                        t_posted: at + dur,
                        peer: from,
                        tag: if rnd(3) == 0 { -1 } else { tag },
                        call: call::MPI_Probe,
                        ..base
                    }),
                    _ => {
                        let c = [
                            call::MPI_Send,
                            call::MPI_Ssend,
                            call::MPI_Recv,
                            call::MPI_Sendrecv,
                        ][rnd(4) as usize];
                        let recv = c == call::MPI_Recv;
                        recs.push(Record {
                            t_start: at,
                            t_end: at + dur,
                            t_posted: at + dur,
                            peer: if recv { from } else { to },
                            tag,
                            // A send-receive's receive tag, now and then another than its
                            // send's (FFTW's transposes), or none (an older layer's spool).
                            root: if c == call::MPI_Sendrecv {
                                // (Not drawn: the other draws, and the traces the tests
                                // were tuned on, stay as they were.)
                                [tag, tag + 1, NO_RANK][recs.len() % 3]
                            } else {
                                NO_RANK
                            },
                            peer2: if c == call::MPI_Sendrecv {
                                let p = rnd(n as u64) as i32;
                                if scale > 1 { from } else { p }
                            } else {
                                NO_RANK
                            },
                            bytes_send: if recv { 0 } else { bytes },
                            bytes_recv: if recv || c == call::MPI_Sendrecv {
                                bytes
                            } else {
                                0
                            },
                            thread: rnd(2) as u16,
                            call: c,
                            ..base
                        });
                    }
                }
            }
            spooled_rank(me, n, nodes, recs)
        })
        .collect();
    RunTrace {
        ranks,
        world_size: n,
        missing: vec![],
    }
}

/// A long ring of `n` ranks on `n` nodes, `per_rank` records each: each rank sends 1 KiB to
/// the next and receives from the one before, in turn, some sends nonblocking and never
/// waited for (requests freed), and rank 0's second call a receive from a rank outside the
/// run (matching nothing).
pub(crate) fn ring_run(n: i32, per_rank: u64) -> RunTrace {
    RunTrace {
        world_size: n,
        missing: vec![],
        ranks: (0..n)
            .map(|r| {
                let records = (0..per_rank)
                    .map(|k| {
                        let send = (k + r as u64).is_multiple_of(2);
                        let freed = send && k % 8 < 2;
                        let t = 1000 + k * 10_000;
                        Record {
                            t_start: t,
                            t_end: t + 2_000,
                            t_posted: if freed { t + 100 } else { t + 2_000 },
                            flags: if freed { FLAG_NONBLOCKING } else { 0 },
                            peer: match (send, r, k) {
                                (true, ..) => (r + 1) % n,
                                (false, 0, 1) => n + 5,
                                _ => (r + n - 1) % n,
                            },
                            peer2: NO_RANK,
                            root: NO_RANK,
                            bytes_send: if send { 1024 } else { 0 },
                            bytes_recv: if send { 0 } else { 1024 },
                            comm_size: n as u32,
                            call: match (send, freed) {
                                (true, true) => call::MPI_Isend,
                                (true, false) => call::MPI_Send,
                                _ => call::MPI_Recv,
                            },
                            ..Default::default()
                        }
                    })
                    .collect();
                spooled_rank(r, n, n, records)
            })
            .collect(),
    }
}

/// A random placement of `world` ranks (rrn, rrp or shuffled, on fewer nodes than
/// ranks, as many, or more) and, every other time where it has two nodes or more, two
/// clusters (its first nodes and the others) joined by a slow wide-area link: shared
/// equally, on a faster backbone, or with measured crossing penalties.
pub(crate) fn random_conditions(
    rnd: &mut impl FnMut(u64) -> u64,
    world: usize,
) -> crate::predict::Conditions {
    use crate::replay::whatif::{PlacementSpec, parse_clusters, place};
    let spec = match rnd(3) {
        0 => PlacementSpec::Rrn,
        1 => PlacementSpec::Rrp,
        _ => PlacementSpec::Random(rnd(1000)),
    };
    let nodes = 1 + rnd(world as u64 + 1) as usize;
    let cores = world.div_ceil(nodes).max(1);
    let placement = place(&spec, world, nodes, cores).unwrap();
    let clusters = (placement.nodes() >= 2 && rnd(2) == 0).then(|| {
        let cut = 1 + rnd(placement.nodes() as u64 - 1) as usize;
        let names = |ns: &[String]| {
            ns.iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let wan = match rnd(3) {
            0 => "",
            1 => r#", "backbone_beta": 2.5e-8"#,
            _ => r#", "crossing": {"bytes": 65536, "one_way": [1.0, 1.8, 2.9], "both_ways": [1.2, 2.5]}"#,
        };
        let spec = format!(
            r#"{{"clusters": {{"A": [{}], "B": [{}]}}, "wan": {{"alpha": 0.002, "beta": 1e-7{wan}}}}}"#,
            names(&placement.names[..cut]),
            names(&placement.names[cut..]),
        );
        parse_clusters(&spec, &placement).unwrap()
    });
    let alltoall = if rnd(2) == 0 {
        crate::predict::AlltoallAlgo::Direct
    } else {
        crate::predict::AlltoallAlgo::LocalGroup
    };
    // On an even number of nodes the compute scaled as onto another network (no draw of
    // its own: the cases the draws make stay the same).
    let compute_scale = if nodes.is_multiple_of(2) { 0.9 } else { 1.0 };
    // On a multiple of three nodes, with a progress thread (likewise).
    let progress = if nodes.is_multiple_of(3) {
        crate::predict::ProgressMode::Async
    } else {
        crate::predict::ProgressMode::Library
    };
    // With several ranks a node and an even world, each node a machine of 1 CPU (the
    // replay's waits for a CPU on the new placement; likewise no draw).
    let cpus_per_node = (cores >= 2 && world.is_multiple_of(2)).then_some(1);
    crate::predict::Conditions {
        placement,
        clusters,
        alltoall,
        compute_scale,
        progress,
        cpus_per_node,
    }
}

//! Engine throughput: records per second per core on a synthetic trace of 10 million
//! records (16 ranks on 16 nodes: a ring of 1 KiB blocking sends and receives at 2/3 of the
//! link capacity of the default profile, with an
//! MPI_Alltoall every 1,000 steps). Prints the figures; run with
//! `cargo bench --bench engine` (pass a record count to change the size; with
//! `--write=DIR` it writes the trace as a run directory for `pmpi-predict analyze`; with
//! `--profile-replay` it runs only the replay under gige, ten times, for `perf record`;
//! with `--profile-prediction`, the whole prediction under gige, once, as a fresh process
//! of `pmpi-predict analyze` runs it, with its CPU time and peak memory; with `--matching`,
//! the same records matched online as they are made, never held; with `--read=DIR`, a
//! written run read back from its spools in time order and planned online; with
//! `--window=DIR`, a written run replayed in a window as it is read, under gige and without
//! a model, with a digest of every record's replayed times; with `--window=DIR --batch`,
//! the batch replay of the same run loaded whole, with the same digest; with
//! `--stream=DIR`, a written run predicted as it is read (`predict::stream`: both replays
//! side by side, every record's figures), under gige and without a model (`--model=NAME`:
//! that one only), with a digest of every record's prediction; with `--stream=DIR
//! --batch`, `predict_run_with` on the run loaded whole, with the same digest (with
//! `--net`, also the network's figures the reports derive, `report::netagg`, fed as the
//! run is predicted, collective operations included, and a digest of them; with
//! `--nodes=N [--two-clusters]`, under what-if conditions: `predict_stream_under` and
//! `predict_run_under`, see [`whatif_arg`]); `--profile=FILE` takes a calibrated profile instead of the built-in one).

use pmpi_core::predict::{Assumptions, RunPrediction, coll_cost, penalty_model, predict_run};
use pmpi_core::profile::Profile;
use pmpi_core::replay::{self, P2p, Plan};
use pmpi_core::topo::placement::Placement;
use pmpi_core::trace::{self, ClockSample, NO_RANK, RankMeta, RankTrace, Record, RunTrace, call};
use std::time::Instant;

fn main() {
    let total: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000_000);
    let ranks = 16usize;
    let per_rank = total / ranks;
    // `--matching`: the same records matched online as they are made, never held.
    if std::env::args().any(|a| a == "--matching") {
        return matching(ranks, per_rank);
    }
    // `--read=DIR`: a written run read back in time order and matched online.
    if let Some(dir) = std::env::args().find_map(|a| a.strip_prefix("--read=").map(String::from)) {
        return read_run(std::path::Path::new(&dir));
    }
    // `--stream=DIR`: a written run predicted as it is read (both replays, every
    // record's figures).
    if let Some(dir) = std::env::args().find_map(|a| a.strip_prefix("--stream=").map(String::from))
    {
        return stream(std::path::Path::new(&dir));
    }
    // `--window=DIR`: a written run replayed in a window as it is read.
    if let Some(dir) = std::env::args().find_map(|a| a.strip_prefix("--window=").map(String::from))
    {
        return window(std::path::Path::new(&dir));
    }
    let t0 = Instant::now();
    let mut run = RunTrace {
        ranks: Vec::new(),
        world_size: ranks as i32,
        missing: vec![],
    };
    for r in 0..ranks {
        let mut recs = Vec::with_capacity(per_rank);
        let mut t: u64 = 1_000;
        let mut step = 0u64;
        while recs.len() < per_rank {
            step += 1;
            let base = Record {
                peer: NO_RANK,
                root: NO_RANK,
                peer2: NO_RANK,
                comm: 0,
                comm_size: ranks as u32,
                ..Default::default()
            };
            if step.is_multiple_of(1000) {
                recs.push(Record {
                    t_start: t,
                    t_end: t + 50_000,
                    t_posted: t + 50_000,
                    bytes_send: 16 * 4096,
                    bytes_recv: 16 * 4096,
                    call: call::MPI_Alltoall,
                    ..base
                });
            } else if (step + r as u64).is_multiple_of(2) {
                recs.push(Record {
                    t_start: t,
                    t_end: t + 20_000,
                    t_posted: t + 20_000,
                    peer: ((r + 1) % ranks) as i32,
                    bytes_send: 1024,
                    call: call::MPI_Send,
                    ..base
                });
            } else {
                recs.push(Record {
                    t_start: t,
                    t_end: t + 20_000,
                    t_posted: t + 20_000,
                    peer: ((r + ranks - 1) % ranks) as i32,
                    bytes_recv: 1024,
                    call: call::MPI_Recv,
                    ..base
                });
            }
            t += 100_000;
        }
        let meta = RankMeta {
            rank: r as i32,
            world_size: ranks as i32,
            node: format!("n{r}"),
            calls: trace::CALL_NAMES.iter().map(|s| s.to_string()).collect(),
            clock_init: Some(ClockSample::default()),
            finalized: true,
            ..Default::default()
        };
        run.ranks.push(RankTrace {
            meta,
            records: recs,
            ..Default::default()
        });
    }
    let n: usize = run.ranks.iter().map(|r| r.records.len()).sum();
    // `--write=DIR`: the trace as a run directory instead (for `pmpi-predict analyze`).
    if let Some(dir) = std::env::args().find_map(|a| a.strip_prefix("--write=").map(String::from)) {
        let dir = std::path::Path::new(&dir);
        std::fs::create_dir_all(dir).expect("output directory");
        for rk in &run.ranks {
            trace::write_spool(dir, rk.meta.rank, &rk.records).expect("spool written");
            trace::write_meta(dir, &rk.meta).expect("metadata written");
        }
        println!("wrote {n} records of {ranks} ranks to {}", dir.display());
        return;
    }
    println!(
        "synthetic trace: {n} records, {ranks} ranks on {ranks} nodes (built in {:.2} s)",
        t0.elapsed().as_secs_f64()
    );
    let profile = Profile::builtin_default();
    if std::env::args().any(|a| a == "--profile-replay") {
        return stages(&run, &profile, n);
    }
    // `--profile-prediction`: only the whole prediction under gige (for `perf record`).
    if std::env::args().any(|a| a == "--profile-prediction") {
        let (c0, f0) = (cpu_ns(), minor_faults());
        drop(predict_run(&run, &profile, Some("gige")).expect("engine runs"));
        let cpu = (cpu_ns() - c0) as f64 * 1e-9;
        println!(
            "whole prediction gige: {cpu:.3} s of CPU ({:.2} M records/s), {} page faults, peak resident {} MB (the trace's records included)",
            n as f64 / cpu / 1e6,
            minor_faults() - f0,
            peak_rss() >> 20
        );
        return;
    }
    for model in ["gige", "none"] {
        let t = Instant::now();
        let p = predict_run(&run, &profile, Some(model)).expect("engine runs");
        let dt = t.elapsed().as_secs_f64();
        println!(
            "model {model:<5} {:>8.2} s  {:>12.0} records/s (one core)  {} flows  {} intervals  digest {:016x}",
            dt,
            n as f64 / dt,
            p.flows.flows.len(),
            p.sim.intervals.len(),
            digest(&p)
        );
    }
    stages(&run, &profile, n);
}

/// Where the time goes: the plan and each replay alone, each the best of three runs (the
/// machine may be shared; the best run is the one least disturbed).
fn stages(run: &RunTrace, profile: &Profile, n: usize) {
    let best = |f: &mut dyn FnMut()| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let placement = Placement::from_run(run);
    let dt_plan = best(&mut || drop(Plan::for_run(run, placement.clone(), Some(profile))));
    let plan = Plan::for_run(run, placement.clone(), Some(profile));
    let costs: Vec<_> = plan
        .instances
        .iter()
        .map(|i| coll_cost(profile, &Assumptions::default(), i))
        .collect();
    let p2p = P2p::from_profile(profile, None, plan.protocol.library);
    let model = penalty_model(profile, Some("gige")).expect("gige model");
    let gige = || replay::replay(&plan, &p2p, model.as_deref(), &costs, true, true);
    // `--profile-replay`: only the gige replay, ten times (for `perf record`).
    if std::env::args().any(|a| a == "--profile-replay") {
        for _ in 0..10 {
            drop(gige());
        }
        return;
    }
    let dt_gige = best(&mut || drop(gige()));
    let dt_free = best(&mut || drop(replay::replay(&plan, &p2p, None, &costs, false, false)));
    let dt_all = best(&mut || drop(predict_run(run, profile, Some("gige")).expect("engine runs")));
    let rate = |dt: f64| n as f64 / dt / 1e6;
    println!(
        "best of 3: plan {dt_plan:.3} s ({:.1} M/s), replay gige {dt_gige:.3} s ({:.1} M/s), replay free {dt_free:.3} s ({:.1} M/s), whole prediction gige {dt_all:.3} s ({:.2} M/s)",
        rate(dt_plan),
        rate(dt_gige),
        rate(dt_free),
        rate(dt_all)
    );
}

/// The synthetic trace's records matched online (messages, collective operations) as they
/// are made, rank by rank at each step as a reader in time order would see them: the
/// matching's throughput, and its state (what waits for a match), which stays that of the
/// records in flight however long the run.
fn matching(ranks: usize, per_rank: usize) {
    use pmpi_core::replay::matching::{Fifo, Groups};
    let (c0, mut most) = (cpu_ns(), 0usize);
    let mut fifo: Fifo<(usize, usize, i32), u64, u64> = Fifo::default();
    let mut groups: Groups<u64> = Groups::default();
    let (mut id, mut messages, mut operations, mut collectives) = (0u64, 0u64, 0u64, 0u64);
    let mut waiting = 0usize;
    for step in 1..=per_rank as u64 {
        for r in 0..ranks {
            if step.is_multiple_of(1000) {
                if groups.join(collectives, id as u32, ranks as u64).is_some() {
                    operations += 1;
                }
            } else {
                let hit = if (step + r as u64).is_multiple_of(2) {
                    fifo.a((r, (r + 1) % ranks, 0), id).is_some()
                } else {
                    fifo.b(((r + ranks - 1) % ranks, r, 0), id).is_some()
                };
                messages += hit as u64;
                // A match takes one waiting record away; else this one waits.
                waiting = if hit { waiting - 1 } else { waiting + 1 };
            }
            most = most.max(waiting + groups.open());
            id += 1;
        }
        collectives += step.is_multiple_of(1000) as u64;
    }
    let cpu = (cpu_ns() - c0) as f64 * 1e-9;
    println!(
        "online matching: {id} records, {messages} messages and {operations} collective operations matched, {cpu:.3} s of CPU ({:.1} M records/s), at most {most} records waiting, {} left unmatched, peak resident {} MB",
        id as f64 / cpu / 1e6,
        fifo.waiting(),
        peak_rss() >> 20
    );
}

/// A run's spools read in time order across ranks (`trace::order::RunOrder`) and its plan
/// found online (`replay::online::OnlinePlan`: each record's replay fields, its messages,
/// completions and collective operations), as a streaming engine's front end reads them:
/// throughput, and the memory, which is the readers' buffers and what waits for a match,
/// not the run's length.
fn read_run(dir: &std::path::Path) {
    use pmpi_core::replay::online::{Event, OnlinePlan, Slots};
    use pmpi_core::trace::order::RunOrder;
    let c0 = cpu_ns();
    let mut order = RunOrder::open(dir).expect("run readable");
    let ranks = order.shell();
    let library = order.metas.first().map_or("", |m| m.mpi_library.as_str());
    let protocol = replay::Protocol::for_library(library);
    let mut plan = OnlinePlan::new(&order.metas, Placement::from_run(&ranks), protocol);
    let (mut n, mut messages, mut operations, mut most) = (0u64, 0u64, 0u64, 0usize);
    let mut gaps = 0.0;
    while let Some((_, ri, c)) = order.next_call().expect("spool readable") {
        // The slots a replay would hold the record and its message in: none here.
        let slots = Slots { rec: 0, msg: 0 };
        let planned = plan.record(ri, &c, slots, |e| match e {
            Event::Message { .. } => messages += 1,
            Event::Instance { .. } => operations += 1,
            _ => {}
        });
        gaps += planned.hot.gap;
        n += 1;
        // Not at a multiple of the ranks: the synthetic ring is matched at each step's end.
        if n.is_multiple_of(1021) {
            most = most.max(plan.waiting());
        }
    }
    let cpu = (cpu_ns() - c0) as f64 * 1e-9;
    println!(
        "read in time order and planned online: {n} records of {} ranks, {messages} messages and {operations} collective operations matched, {gaps:.3} s of compute gaps, {cpu:.2} s of CPU ({:.1} M records/s), at most {most} waiting for a match (sampled), peak resident {} MB",
        ranks.ranks.len(),
        n as f64 / cpu / 1e6,
        peak_rss() >> 20
    );
}

/// `--profile=FILE`: a calibrated profile (its reverse, through, port and dispersion
/// factors) instead of the built-in one.
fn profile_arg() -> Profile {
    match std::env::args().find_map(|a| a.strip_prefix("--profile=").map(String::from)) {
        Some(f) => Profile::load(&f).expect("profile readable"),
        None => Profile::builtin_default(),
    }
}

/// A written run replayed in a window as it is read (`replay::window`), under gige and
/// without a model: CPU time, peak resident memory, the most records, messages and
/// collective operations live at once, and a digest of every record's replayed start, end,
/// request completion and reason (independent of the order records finish in). With
/// `--batch`, the batch replay of the run loaded whole instead, with the same digest.
fn window(dir: &std::path::Path) {
    use pmpi_core::replay::window::{Finished, replay_window};
    use pmpi_core::trace::order::RunOrder;
    let profile = profile_arg();
    // The run's library from its metadata alone, as the streamed path finds it.
    let shell = trace::load_shell(dir).expect("run readable");
    let library = shell
        .ranks
        .first()
        .map_or("", |r| r.meta.mpi_library.as_str());
    let family = pmpi_core::profile::LibraryFamily::of(library);
    let p2p = P2p::from_profile(&profile, None, family);
    let assume = Assumptions::default();
    let batch = std::env::args().any(|a| a == "--batch");
    // Each record's figures mixed (splitmix64's finaliser, word by word) and summed: the
    // same sum whatever order the records finish in.
    let eat = |sum: &mut u64, rank: u32, rec: u32, t: [f64; 3], reason: u64| {
        let mut h: u64 = 0;
        for x in [
            (rank as u64) << 32 | rec as u64,
            t[0].to_bits(),
            t[1].to_bits(),
            t[2].to_bits(),
            reason,
        ] {
            h = replay::net::splitmix64(h ^ x);
        }
        *sum = sum.wrapping_add(h);
    };
    // The loaded run (batch), read once for both models.
    let loaded = batch.then(|| {
        let c0 = cpu_ns();
        let run = trace::load_run(dir).expect("run readable");
        let placement = Placement::from_run(&run);
        let plan = Plan::for_run(&run, placement, Some(&profile));
        println!(
            "batch: loaded and planned {} records in {:.2} s of CPU",
            plan.hot.len(),
            (cpu_ns() - c0) as f64 * 1e-9
        );
        (run, plan)
    });
    for model_name in ["gige", "none"] {
        let model = penalty_model(&profile, Some(model_name)).expect("model");
        let contention = model_name != "none";
        let c0 = cpu_ns();
        let mut sum = 0u64;
        let mut n = 0u64;
        if let Some((run, plan)) = &loaded {
            let costs: Vec<_> = plan
                .instances
                .iter()
                .map(|i| coll_cost(&profile, &assume, i))
                .collect();
            let t = replay::replay(plan, &p2p, model.as_deref(), &costs, contention, false);
            for (ri, rk) in run.ranks.iter().enumerate() {
                for rec in 0..rk.records.len() {
                    let g = plan.id(ri, rec) as usize;
                    let times = [t.start[g], t.end[g], t.req_done[g]];
                    eat(&mut sum, ri as u32, rec as u32, times, t.reason[g] as u64);
                    n += 1;
                }
            }
            let cpu = (cpu_ns() - c0) as f64 * 1e-9;
            println!(
                "batch replay {model_name:<4}: {n} records, {cpu:.2} s of CPU ({:.2} M records/s), peak resident {} MB, digest {sum:016x}",
                n as f64 / cpu / 1e6,
                peak_rss() >> 20
            );
            continue;
        }
        let order = RunOrder::open(dir).expect("run readable");
        let shell = order.shell();
        let library = order.metas.first().map_or("", |m| m.mpi_library.as_str());
        let protocol = replay::Protocol::for_library_with(library, Some(&profile));
        let placement = Placement::from_run(&shell);
        let stats = replay_window(
            order,
            &placement,
            protocol,
            &p2p,
            model.as_deref(),
            &|i| coll_cost(&profile, &assume, i),
            contention,
            &mut |f: Finished| {
                eat(
                    &mut sum,
                    f.rank,
                    f.rec,
                    [f.start, f.end, f.req_done],
                    f.reason as u64,
                );
                n += 1;
            },
        )
        .expect("run replayed");
        let cpu = (cpu_ns() - c0) as f64 * 1e-9;
        println!(
            "windowed replay {model_name:<4}: {n} records, {cpu:.2} s of CPU ({:.2} M records/s), at most {} records, {} messages and {} collective operations live, peak resident {} MB, digest {sum:016x}",
            n as f64 / cpu / 1e6,
            stats.most_records,
            stats.most_messages,
            stats.most_operations,
            peak_rss() >> 20
        );
    }
}

/// A written run predicted as it is read (`predict::stream::predict_stream`), or with
/// `--batch` loaded whole (`predict_run_with`): CPU time, peak resident memory and a digest
/// of every record's prediction (the same whatever order they come in), under gige and
/// without a model, or under `--model=NAME` alone.
fn stream(dir: &std::path::Path) {
    use pmpi_core::predict::stream::{predict_stream_under, predict_stream_with};
    use pmpi_core::predict::{CallPrediction, predict_run_under, predict_run_with};
    use pmpi_core::report::netagg::{self, NetAggregates, StreamedNet};
    use std::hash::{Hash, Hasher};
    let profile = profile_arg();
    let assume = Assumptions::default();
    let batch = std::env::args().any(|a| a == "--batch");
    let with_net = std::env::args().any(|a| a == "--net");
    // The figures printed to the bit (Debug: each f64's shortest round trip), hashed.
    let net_digest = |r: &netagg::NetReport| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        format!("{r:?}").hash(&mut h);
        format!(
            "network figures digest {:016x} ({} ranked intervals, {} of them collective operations, {} graphs)",
            h.finish(),
            r.intervals.len(),
            r.intervals.iter().filter(|i| i.operation.is_some()).count(),
            r.graphs["intervals"]
        )
    };
    let models: Vec<String> =
        match std::env::args().find_map(|a| a.strip_prefix("--model=").map(String::from)) {
            Some(m) => vec![m],
            None => vec!["gige".into(), "none".into()],
        };
    // Each record's figures mixed (splitmix64's finaliser, word by word) and summed.
    let eat = |sum: &mut u64, rank: u32, rec: u32, c: &CallPrediction| {
        let opt = |x: Option<f64>| x.map_or(u64::MAX, f64::to_bits);
        let mut h: u64 = 0;
        for x in [
            (rank as u64) << 32 | rec as u64,
            opt(c.predicted),
            opt(c.free),
            c.wait.kind as u64,
            c.wait.seconds.to_bits(),
            c.wait.on as u64,
            c.measured_wait.kind as u64,
            c.measured_wait.seconds.to_bits(),
            c.measured_wait.on as u64,
            c.contention.to_bits(),
            c.reason as u64,
        ] {
            h = replay::net::splitmix64(h ^ x);
        }
        *sum = sum.wrapping_add(h);
    };
    // The conditions, and the run's nodes as the streamed prediction places them, found
    // before the clock starts (each opens the run: a pass over every spool).
    let cond = whatif_arg(dir);
    let placement = (!batch).then(|| match &cond {
        Some(c) => c.placement.clone(),
        None => {
            let order = trace::order::RunOrder::open(dir).expect("run readable");
            Placement::from_run(&order.shell())
        }
    });
    for model in &models {
        let c0 = cpu_ns();
        let (mut sum, mut n) = (0u64, 0u64);
        if batch {
            let run = trace::load_run(dir).expect("run readable");
            let p = match &cond {
                Some(cond) => predict_run_under(&run, &profile, Some(model), &assume, cond),
                None => predict_run_with(&run, &profile, Some(model), &assume),
            }
            .expect("predicted");
            for (ri, calls) in p.calls.iter().enumerate() {
                for (rec, c) in calls.iter().enumerate() {
                    eat(&mut sum, ri as u32, rec as u32, c);
                    n += 1;
                }
            }
            let cpu = (cpu_ns() - c0) as f64 * 1e-9;
            println!(
                "batch prediction {model:<4}: {n} records, {cpu:.2} s of CPU ({:.2} M records/s), peak resident {} MB, digest {sum:016x}",
                n as f64 / cpu / 1e6,
                peak_rss() >> 20
            );
            if with_net {
                let mut agg = NetAggregates::new(p.placement.nodes(), 10);
                netagg::feed(&p, &mut agg);
                for (ri, (rk, cs)) in run.ranks.iter().zip(&p.calls).enumerate() {
                    for (i, (r, c)) in rk.records.iter().zip(cs).enumerate() {
                        agg.call((ri as u32, i as u32), pmpi_core::report::call_e_rel(r, c));
                    }
                }
                println!("  {}", net_digest(&agg.finish(&p.placement.names)));
            }
            continue;
        }
        let placement = placement.as_ref().expect("found for the streamed path");
        let mut net = with_net.then(|| StreamedNet::new(placement.nodes(), 10));
        let mut out = |ri, rec, _, c| {
            eat(&mut sum, ri, rec, &c);
            n += 1;
        };
        let sink = net
            .as_mut()
            .map(|s| s as &mut dyn pmpi_core::predict::stream::StreamNet);
        let stats = match &cond {
            Some(cond) => {
                predict_stream_under(dir, &profile, Some(model), &assume, cond, &mut out, sink)
            }
            None => predict_stream_with(dir, &profile, Some(model), &assume, &mut out, sink),
        }
        .expect("run predicted");
        let cpu = (cpu_ns() - c0) as f64 * 1e-9;
        let most =
            |f: fn(&replay::window::Stats) -> usize| stats.replays.iter().map(f).max().unwrap_or(0);
        println!(
            "streamed prediction {model:<4}: {n} records, {cpu:.2} s of CPU ({:.2} M records/s), at most {} records, {} messages and {} collective operations live in a replay, {} records finished by one replay only, peak resident {} MB, digest {sum:016x}",
            n as f64 / cpu / 1e6,
            most(|s| s.most_records),
            most(|s| s.most_messages),
            most(|s| s.most_operations),
            stats.most_joined,
            peak_rss() >> 20
        );
        if let Some(net) = net {
            let held = net.agg.graphs.most_held;
            println!(
                "  {}, at most {held} intervals held for their owners' predictions",
                net_digest(&net.agg.finish(&placement.names))
            );
        }
    }
}

/// Peak resident memory of the process so far, bytes (Linux's VmHWM; 0 elsewhere).
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb << 10)
}

/// CPU time this thread has run, ns (Linux; 0 elsewhere): on a shared machine the wall
/// time of a low-priority run says more about the others than about the engine.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Minor page faults of the process so far (Linux; 0 elsewhere): each is a page of fresh
/// memory the kernel zeroed, a large part of the engine's time.
fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let after = &s[s.rfind(')')? + 2..];
            after.split_whitespace().nth(7)?.parse().ok()
        })
        .unwrap_or(0)
}

/// FNV-1a over every figure the engine produced: two builds that print the same digest
/// predicted the same thing, to the bit.
fn digest(p: &RunPrediction) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    let opt = |x: Option<f64>| x.map_or(u64::MAX, f64::to_bits);
    for c in p.calls.iter().flatten() {
        for x in [c.predicted, c.free, c.penalty()] {
            eat(opt(x));
        }
        for w in [c.wait, c.measured_wait] {
            eat(w.kind as u64);
            eat(w.seconds.to_bits());
            eat(w.on as u64);
        }
        eat(c.contention.to_bits());
        eat(c.reason as u64);
    }
    for f in &p.flows.flows {
        eat(f.start.to_bits());
        eat(((f.src_node as u64) << 32) | f.dst_node as u64);
        eat(((f.owner.rank as u64) << 32) | f.owner.rec as u64);
    }
    for x in p.tref.iter().chain(&p.flow_end).chain(&p.sim.end) {
        eat(x.to_bits());
    }
    for i in &p.sim.intervals {
        eat(i.start.to_bits());
        eat(i.end.to_bits());
        for &(k, pen) in p.sim.arcs_of(i) {
            eat(k as u64);
            eat(pen.to_bits());
        }
    }
    eat(p.inter.len() as u64);
    for x in [p.makespan, p.makespan_free, p.makespan_measured] {
        eat(x.to_bits());
    }
    h
}

/// The what-if conditions of `--stream=DIR`: with `--nodes=N`, the run's ranks round-robin
/// on N nodes (`rrn`), and with `--two-clusters` those nodes split in two halves joined by
/// a wide-area link (2 ms, 10 MB/s).
fn whatif_arg(dir: &std::path::Path) -> Option<pmpi_core::predict::Conditions> {
    use pmpi_core::replay::whatif::{PlacementSpec, parse_clusters, place};
    let nodes: usize = std::env::args()
        .find_map(|a| a.strip_prefix("--nodes=").map(String::from))?
        .parse()
        .expect("--nodes=N: a number");
    let order = trace::order::RunOrder::open(dir).expect("run readable");
    let world = Placement::from_run(&order.shell()).node_of_rank.len();
    let placement = place(
        &PlacementSpec::Rrn,
        world,
        nodes,
        world.div_ceil(nodes).max(1),
    )
    .expect("placed");
    let clusters = std::env::args().any(|a| a == "--two-clusters").then(|| {
        let half = placement.nodes().div_ceil(2);
        let names = |ns: &[String]| {
            ns.iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let spec = format!(
            r#"{{"clusters": {{"A": [{}], "B": [{}]}}, "wan": {{"alpha": 0.002, "beta": 1e-7}}}}"#,
            names(&placement.names[..half]),
            names(&placement.names[half..])
        );
        parse_clusters(&spec, &placement).expect("clusters")
    });
    Some(pmpi_core::predict::Conditions {
        placement,
        clusters,
        alltoall: Default::default(),
        compute_scale: 1.0,
        progress: Default::default(),
        cpus_per_node: None,
    })
}

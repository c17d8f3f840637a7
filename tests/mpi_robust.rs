//! Robustness of the layer: threads, fork, runs that never reach MPI_Finalize (signals,
//! MPI_Abort, exit, SIGKILL) and bad input (environment, output directory, full disk).

mod common;
mod reliability;
use common::*;
use reliability::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

#[test]
fn thread_multiple_records_every_thread_exactly() {
    let n = 300;
    let dir = scratch("tx_threads");
    let exe = build_program("tx_threads", &dir);
    let n_s = n.to_string();
    let plain = mpirun(2, &exe, &[&n_s], None, &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let with = mpirun(
        2,
        &exe,
        &[&n_s],
        Some(&[("PMPI_PREDICT_OUT", &out_s)]),
        &dir,
    );
    assert_identical("tx_threads", &plain, &with);
    let text = String::from_utf8_lossy(&plain.stdout);
    assert!(
        !text.contains("no MPI_THREAD_MULTIPLE"),
        "this MPI does not provide MPI_THREAD_MULTIPLE"
    );
    let rows = read_calls(&out);
    for (rank, call) in [(0, "MPI_Send"), (1, "MPI_Recv")] {
        // thread -> (tags seen, bytes seen, count), for the messages of the worker threads.
        let mut per: BTreeMap<String, (BTreeSet<String>, BTreeSet<String>, usize)> =
            BTreeMap::new();
        for r in rows_of(&rows, rank, call) {
            let tag: i32 = r["tag"].parse().unwrap();
            if !(100..104).contains(&tag) {
                continue;
            }
            let e = per.entry(r["thread"].clone()).or_default();
            e.0.insert(r["tag"].clone());
            e.1.insert(r["bytes"].clone());
            e.2 += 1;
            assert_eq!(r["peer"], (1 - rank).to_string());
        }
        assert_eq!(per.len(), 4, "rank {rank}: 4 worker threads, got {per:?}");
        let mut tags = BTreeSet::new();
        for (th, (tg, by, c)) in &per {
            assert_eq!(*c, n, "rank {rank} thread {th}: records");
            assert_eq!(tg.len(), 1, "rank {rank} thread {th}: one tag per thread");
            let t: u64 = tg.iter().next().unwrap().parse::<u64>().unwrap() - 100;
            assert_eq!(
                by.iter().cloned().collect::<Vec<_>>(),
                [(4 * (t + 1)).to_string()],
                "rank {rank} thread {th}: bytes"
            );
            tags.extend(tg.iter().cloned());
        }
        assert_eq!(tags.len(), 4);
    }
    // No corrupted record anywhere: valid call names, peers within the world.
    let names: BTreeSet<&str> = pmpi_core::trace::CALL_NAMES.iter().copied().collect();
    for r in &rows {
        assert!(
            names.contains(r["call"].as_str()),
            "bad call {:?}",
            r["call"]
        );
        assert!(
            ["", "0", "1"].contains(&r["peer"].as_str()),
            "bad peer {:?}",
            r["peer"]
        );
    }
    assert_eq!(
        rows.len(),
        2 * 4 * n + 2 + 2,
        "sends, receives, 2 Reduce, 1 Send + 1 Recv"
    );
}

#[test]
fn fork_and_system_children_write_nothing() {
    let p = run_pair("tx_fork", 2, &[]);
    let mut files: Vec<String> = std::fs::read_dir(&p.out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "calls.csv",
            "hotspots.json",
            // The node's TCP counters, sampled by its lowest rank (the parent).
            "net-00000.csv",
            "rank-00000.json",
            "rank-00000.spool",
            "rank-00001.json",
            "rank-00001.spool",
            "report.html",
            "summary.json",
            "trace.json"
        ]
    );
    let run = pmpi_core::trace::load_run(&p.out).unwrap();
    for rk in &run.ranks {
        // Exactly the parent's 3 Sendrecv + 1 Allreduce, and a clean spool.
        assert_eq!(rk.records.len(), 4, "rank {}", rk.meta.rank);
        assert_eq!(rk.trailing_bytes, 0);
        assert!(rk.meta.finalized);
    }
    assert!(
        String::from_utf8_lossy(&p.plain.stdout)
            .contains("fork child exit sum 6, system exit sum 10")
    );
}

/// Runs tx_die in `mode` without and with the layer; returns the output directory.
fn die(mode: &str) -> std::path::PathBuf {
    let dir = scratch(&format!("tx_die_{mode}"));
    let exe = build_program("tx_die", &dir);
    let plain = mpirun(2, &exe, &[mode], None, &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let with = mpirun(
        2,
        &exe,
        &[mode],
        Some(&[("PMPI_PREDICT_OUT", &out_s)]),
        &dir,
    );
    // The launcher's own messages name PIDs, and whether rank 0's line gets out before the
    // launcher kills it is a race of the launcher (MPICH's hydra): compare the exit status
    // and the program's lines that did get out. (Exit without finalize: Open MPI fails
    // the job, the layer changes nothing of that.) MPICH's hydra, when rank 1 exits(0)
    // without finalize and it kills rank 0, returns either rank's status: 0 or 9
    // (SIGKILL), and 1 where rank 0 saw the connection close first; without the layer
    // too (0 and 9 in two launches of one test run, 2026-11-25). There the layer's status
    // must be one of those, as the plain launch's is: not a crash of its own at exit.
    let (_, _, ompi) = launch_prefix(2);
    if mode == "exit" && !ompi {
        for o in [&plain, &with] {
            assert!(
                matches!(o.status.code(), Some(0 | 1 | 9)),
                "{mode}: exit status {:?}:\n{}",
                o.status.code(),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    } else {
        assert_eq!(
            with.status.code(),
            plain.status.code(),
            "{mode}: exit status; without the layer:\n{}\nwith it:\n{}",
            String::from_utf8_lossy(&plain.stderr),
            String::from_utf8_lossy(&with.stderr)
        );
    }
    // The program's lines that start with `prefix`.
    let prog = |o: &std::process::Output, prefix: &str| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.starts_with(prefix))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    for o in [&plain, &with] {
        for l in prog(o, "rank 0 received") {
            assert_eq!(l, "rank 0 received 50", "{mode}");
        }
        // The program's own SIGTERM handler ran and reset itself, with and without the
        // layer.
        if mode == "own" {
            assert_eq!(
                prog(o, "rank 1 handled"),
                ["rank 1 handled signal 15, reset to default 1"],
                "{mode}"
            );
        }
    }
    out
}

/// True unless the tests run under MPICH's launcher, which ends the other ranks of a
/// failed job with SIGKILL rather than SIGTERM.
fn openmpi() -> bool {
    !launcher().contains("mpich")
}

fn meta_ended(out: &Path, rank: i32) -> (bool, Option<String>, usize) {
    let run = pmpi_core::trace::load_run(out).unwrap();
    let rk = run.ranks.iter().find(|r| r.meta.rank == rank).unwrap();
    (
        rk.meta.finalized,
        rk.meta.ended_by.clone(),
        rk.records.len(),
    )
}

#[test]
fn sigterm_flushes_and_dies_by_the_signal() {
    let out = die("term");
    assert_eq!(meta_ended(&out, 1), (false, Some("signal 15".into()), 50));
    // Open MPI's mpirun then stops rank 0 with SIGTERM too: its 50 receives are on disk.
    // (MPICH's hydra cleans up with SIGKILL: rank 0 keeps only what the drainer wrote.)
    if openmpi() {
        assert_eq!(meta_ended(&out, 0), (false, Some("signal 15".into()), 50));
    }
    let a = cli(&["analyze", out.to_str().unwrap()]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(summary(&out)["complete"], false);
}

/// A program's own SIGTERM handler, installed before MPI_Init, is left as the program set
/// it: it runs, its one-shot flag (SA_RESETHAND) still resets the action, and the run goes
/// on to MPI_Finalize and exit status 0 as without the layer.
#[test]
fn a_programs_own_sigterm_handler_is_left_untouched() {
    let out = die("own");
    assert_eq!(meta_ended(&out, 1), (true, None, 51));
    assert!(meta_ended(&out, 0).0);
}

#[test]
fn mpi_abort_flushes_and_marks_the_rank() {
    let out = die("abort");
    assert_eq!(
        meta_ended(&out, 1),
        (false, Some("MPI_Abort(7)".into()), 50)
    );
    let (fin, _, n0) = meta_ended(&out, 0);
    assert!(!fin);
    if openmpi() {
        assert_eq!(n0, 50);
    }
}

#[test]
fn exit_without_finalize_flushes_at_exit() {
    let out = die("exit");
    // 50 sends, the Isend never completed and the receive after it.
    assert_eq!(
        meta_ended(&out, 1),
        (false, Some("exit without MPI_Finalize".into()), 52)
    );
    // The Isend is recorded all the same, flagged incomplete: rank 0 received its message.
    let run = pmpi_core::trace::load_run(&out).unwrap();
    let r1 = run.ranks.iter().find(|r| r.meta.rank == 1).unwrap();
    let isends: Vec<_> = r1
        .records
        .iter()
        .filter(|r| r.call == pmpi_core::trace::call::MPI_Isend)
        .map(|r| {
            (
                r.peer,
                r.tag,
                r.bytes_send,
                r.flags & pmpi_core::trace::FLAG_INCOMPLETE != 0,
            )
        })
        .collect();
    assert_eq!(isends, [(0, 3, 2048, true)]);
    let a = cli(&["analyze", out.to_str().unwrap()]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(summary(&out)["complete"], false);
}

fn progress(dir: &Path) -> Option<(u64, i32)> {
    let t = std::fs::read_to_string(dir.join("progress")).ok()?;
    let mut it = t.split_whitespace();
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

#[test]
fn sigkill_loses_at_most_the_last_flush_interval() {
    let dir = scratch("tx_die_kill");
    let exe = build_program("tx_die", &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let exe2 = exe.clone();
    let dir2 = dir.clone();
    let job = std::thread::spawn(move || {
        mpirun(
            2,
            &exe2,
            &["loop"],
            Some(&[("PMPI_PREDICT_OUT", &out_s)]),
            &dir2,
        )
    });
    let t0 = Instant::now();
    let (before, pid) = loop {
        if let Some((k, pid)) = progress(&dir).filter(|p| p.0 >= 2000) {
            break (k, pid);
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(1000));
    let at_kill = progress(&dir).unwrap().0;
    // SAFETY: signals the rank process the program reported (a child of this test).
    let rc = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(rc, 0);
    let res = job.join().unwrap();
    assert!(!res.status.success());
    let run = pmpi_core::trace::load_run(&out).unwrap();
    let r0 = run.ranks.iter().find(|r| r.meta.rank == 0).unwrap();
    let sends = r0.records.len() as u64;
    eprintln!(
        "SIGKILL: {before} sends done 1 s before the kill, {at_kill} at the last progress \
         mark before it, {sends} on disk"
    );
    assert!(
        sends >= before,
        "{sends} records < {before} done 1 s before"
    );
    assert!(!r0.meta.finalized && r0.meta.ended_by.is_none());
    let a = cli(&["analyze", out.to_str().unwrap()]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(summary(&out)["complete"], false);
}

fn stderr_lines(o: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains("pmpi-predict"))
        .map(str::to_string)
        .collect()
}

#[test]
fn bad_environment_values_warn_once_and_change_nothing() {
    let p = run_pair(
        "tx_inplace",
        4,
        &[
            ("PMPI_PREDICT_FLUSH_MS", "fast"),
            ("PMPI_PREDICT_QUIET", "1"),
        ],
    );
    assert_eq!(
        stderr_lines(&p.with),
        ["pmpi-predict: PMPI_PREDICT_FLUSH_MS=\"fast\" is not a number; using 200"]
    );
    let p = run_pair(
        "tx_inplace",
        4,
        &[
            ("PMPI_PREDICT_BUFFER", "99999999999"),
            ("PMPI_PREDICT_QUIET", "1"),
        ],
    );
    let l = stderr_lines(&p.with);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(l[0].starts_with("pmpi-predict: PMPI_PREDICT_BUFFER=99999999999 is out of range"));
    assert_eq!(read_calls(&p.out).len(), 28);
}

#[test]
fn uncreatable_output_directory_is_reported_once() {
    let p = run_pair(
        "tx_inplace",
        4,
        &[("PMPI_PREDICT_OUT", "/proc/forbidden/x")],
    );
    let l = stderr_lines(&p.with);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(
        l[0].starts_with("pmpi-predict: cannot create output directory /proc/forbidden/x"),
        "{}",
        l[0]
    );
    assert!(l[0].ends_with("recording stopped, MPI calls pass through unchanged"));
}

#[test]
fn full_disk_keeps_the_program_running() {
    let dir = scratch("diskfull");
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let m = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .output();
    if !m.as_ref().is_ok_and(|m| m.status.success()) {
        eprintln!("skipped: cannot mount a tmpfs (needs root)");
        return;
    }
    let exe = build_program("tx_threads", &dir);
    let plain = mpirun(2, &exe, &["2000"], None, &dir);
    let out_s = mnt.join("out").display().to_string();
    let with = mpirun(
        2,
        &exe,
        &["2000"],
        Some(&[("PMPI_PREDICT_OUT", &out_s)]),
        &dir,
    );
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    assert_identical("diskfull", &plain, &with);
    let l = stderr_lines(&with);
    eprintln!("{l:#?}");
    assert!(
        l.iter()
            .any(|l| l.contains("cannot write spool") && l.contains("No space left")),
        "{l:?}"
    );
}

//! A real application's own test suite under the layer: mpi4py (Debian's python3-mpi4py,
//! built against Open MPI) runs its 1,300-odd unit tests on 2 ranks, which between them
//! call most of the MPI API — point to point, matched probes, persistent requests,
//! nonblocking and neighbourhood collectives, intercommunicators, one-sided, I/O,
//! error handlers. With the layer preloaded the suite must give the same verdicts and exit
//! status, and the layer must record both ranks. `scripts/setup` installs python3-mpi4py
//! and fetches the suite (the source release of the installed version) from PyPI.
//! Dynamic-process tests (spawn) are left out: they need free slots the test machine lacks.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The interpreter Debian's mpi4py is built for (not a virtualenv's or pyenv's).
const PYTHON: &str = "/usr/bin/python3";

fn suite_dir() -> PathBuf {
    let v = Command::new(PYTHON)
        .args(["-c", "import mpi4py; print(mpi4py.__version__)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let v = v.expect("python3-mpi4py is not installed: scripts/setup installs it");
    let cache = std::env::var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache"));
    let d = cache.join(format!("pmpi-predict/mpi4py-{v}"));
    assert!(
        d.join("test/runtests.py").exists(),
        "mpi4py {v}'s test suite is not in {}: scripts/setup fetches it from PyPI",
        d.display()
    );
    d
}

/// Runs the suite on 2 ranks (with the layer when `env` is Some) and returns the launcher's
/// output and the unittest verdict lines of every rank ("Ran N tests", "OK (skipped=K)"
/// or "FAILED (...)"), sorted. Each rank's stderr is read from its own file
/// (`--output-filename`): in the launcher's merged stream one rank's output can split the
/// other's lines.
fn run_suite(suite: &Path, env: Option<&[(&str, &str)]>, files: &Path) -> (Output, Vec<String>) {
    let (l, prefix, _) = common::launch_prefix(2);
    let mut c = Command::new(l);
    c.args(&prefix).arg("--output-filename").arg(files);
    if let Some(env) = env {
        c.arg("-x")
            .arg(format!("LD_PRELOAD={}", common::layer().display()));
        for (k, v) in env {
            c.arg("-x").arg(format!("{k}={v}"));
        }
    }
    c.arg(PYTHON).args([
        "test/runtests.py",
        "--no-builddir",
        "-q",
        "-e",
        "spawn",
        "-e",
        "dynproc",
    ]);
    c.current_dir(suite)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let _ = std::fs::remove_dir_all(files);
    let out = c.output().expect("launcher runs");
    common::remove_session_base(&prefix);
    let mut v = Vec::new();
    for rank in 0..2 {
        let f = files.join(format!("1/rank.{rank}/stderr"));
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        v.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| l.starts_with("Ran ") || l.starts_with("OK") || l.starts_with("FAILED"))
                // "Ran 1358 tests in 4.4s": the time is not a verdict.
                .map(|l| l.find(" in ").map_or(l, |i| &l[..i]).to_string()),
        );
    }
    v.sort();
    (out, v)
}

#[test]
fn mpi4py_test_suite_gives_the_same_verdicts_with_the_layer() {
    assert!(
        common::launch_prefix(2).2,
        "mpi4py is built against Open MPI; {} is not Open MPI's launcher",
        common::launcher()
    );
    let suite = suite_dir();
    let dir = common::scratch("mpi4py_suite");
    let out = dir.join("out");
    let (plain, vp) = run_suite(&suite, None, &dir.join("plain"));
    let (with, vw) = run_suite(
        &suite,
        Some(&[
            ("PMPI_PREDICT_OUT", out.to_str().unwrap()),
            ("PMPI_PREDICT_TRACE_MAX_MB", "1"),
        ]),
        &dir.join("with"),
    );
    assert_eq!(
        vp.iter().filter(|l| l.starts_with("Ran ")).count(),
        2,
        "both ranks report a verdict without the layer: {}",
        String::from_utf8_lossy(&plain.stderr)
    );
    assert!(
        vp.iter().any(|l| l.starts_with("Ran ") && l.len() > 8),
        "{vp:?}"
    );
    assert_eq!(vp, vw, "{}", String::from_utf8_lossy(&with.stderr));
    assert_eq!(plain.status.code(), with.status.code());

    // Both ranks recorded; every row predicted: probes with ANY_TAG or of PROC_NULL,
    // matched probes, collectives on intercommunicators.
    let rows = common::read_calls(&out);
    for r in 0..2 {
        let n = rows.iter().filter(|x| x["rank"] == r.to_string()).count();
        assert!(n > 10_000, "rank {r} has {n} rows");
    }
    let unpredicted: Vec<String> = rows
        .iter()
        .filter(|x| !x["reason"].is_empty())
        .map(|x| format!("{} {}", x["call"], x["reason"]))
        .take(5)
        .collect();
    assert!(unpredicted.is_empty(), "{unpredicted:?}");
}

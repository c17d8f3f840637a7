//! `pmpi-predict run -- LAUNCHER ...` with the MPI the tests use (Open MPI's mpirun, or
//! MPICH's mpiexec under scripts/test-mpich): the same records as a manual LD_PRELOAD
//! launch, and the job's exit status passed through.

mod common;

use std::path::Path;
use std::process::{Command, Output};

/// `pmpi-predict run --out OUT -- LAUNCHER -np N EXE ARGS`.
fn run(out: &Path, np: u32, exe: &Path, args: &[&str], cwd: &Path) -> Output {
    common::layer(); // built beside the CLI, where `run` finds it
    let (l, prefix, _) = common::launch_prefix(np);
    Command::new(common::cli_path())
        .arg("run")
        .arg("--out")
        .arg(out)
        .arg("--")
        .arg(l)
        .args(prefix)
        .arg(exe)
        .args(args)
        .current_dir(cwd)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("PMPI_PREDICT_QUIET", "1")
        .output()
        .expect("pmpi-predict runs")
}

#[test]
fn run_records_what_a_manual_preload_records() {
    let dir = common::scratch("run-basic");
    let exe = common::build_program("basic", &dir);
    let via_run = dir.join("via-run");
    let o = run(&via_run, 4, &exe, &[], &dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("report in"), "{err}");
    let manual = dir.join("manual");
    let m = common::mpirun(
        4,
        &exe,
        &[],
        Some(&[
            ("PMPI_PREDICT_OUT", manual.to_str().unwrap()),
            ("PMPI_PREDICT_QUIET", "1"),
        ]),
        &dir,
    );
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    let a = common::counts(&common::read_calls(&via_run));
    let b = common::counts(&common::read_calls(&manual));
    assert!(!a.is_empty());
    assert_eq!(a, b, "records per (rank, call): run vs manual LD_PRELOAD");
}

#[test]
fn run_passes_the_exit_status_through() {
    let dir = common::scratch("run-exit");
    let exe = common::build_program("exit_status", &dir);
    let o = run(&dir.join("out3"), 2, &exe, &["3"], &dir);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The run itself was recorded and reported.
    assert!(dir.join("out3/summary.json").is_file());
    let o = run(&dir.join("out0"), 2, &exe, &["0"], &dir);
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn run_without_a_launcher_or_with_a_bad_layer_is_bad_input() {
    let bin = common::cli_path();
    let o = Command::new(&bin).arg("run").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = Command::new(&bin)
        .args(["run", "--", "no-such-launcher-xyz", "-np", "2", "a.out"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not found"));
    let (l, _, _) = common::launch_prefix(1);
    let o = Command::new(&bin)
        .args(["run", "--lib", "/no/such/layer.so", "--", &l, "true"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/no/such/layer.so"));
}

/// A program that is not an MPI program (Debian's mrbayes-mpi 3.2.7a-6 is one: its
/// `mb-mpi` links no MPI library) records nothing: `run` says so, and why, instead of
/// sending the user to analyze spools that do not exist.
#[test]
fn run_of_a_program_without_mpi_says_nothing_was_recorded() {
    let dir = common::scratch("run-no-mpi");
    let out = dir.join("out");
    let (l, prefix, _) = common::launch_prefix(2);
    let o = Command::new(common::cli_path())
        .arg("run")
        .arg("--lib")
        .arg(common::layer())
        .arg("--out")
        .arg(&out)
        .arg("--")
        .arg(l)
        .args(&prefix)
        .args(["/bin/sh", "-c", "echo ran"])
        .current_dir(&dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("pmpi-predict runs");
    common::remove_session_base(&prefix);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ran\nran\n");
    assert!(err.contains("no rank recorded anything in"), "{err}");
    assert!(!err.contains("builds it from the spools"), "{err}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

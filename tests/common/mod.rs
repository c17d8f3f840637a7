//! Shared helpers for tests that launch real MPI programs under the layer.
#![allow(dead_code)]

pub mod emu;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace's build products (the layer and the CLI) beside this test binary, built
/// once per test binary: `cargo test` builds neither the cdylib nor another package's
/// binary.
fn built(file: &str) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        // target/<profile>/deps/<test>: the products are in target/<profile>.
        let dir = exe.parent().and_then(Path::parent).unwrap().to_path_buf();
        let release = dir.file_name().is_some_and(|n| n == "release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut c = Command::new(cargo);
        c.args(["build", "-p", "pmpi-predict", "-p", "pmpi-predict-cli"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if release {
            c.arg("--release");
        }
        let st = c.status().expect("cargo runs");
        assert!(st.success(), "cargo build of the layer and the CLI failed");
        dir
    });
    let p = dir.join(file);
    assert!(p.exists(), "{} was not built", p.display());
    p
}

/// The layer, `libpmpi_predict.so`.
pub fn layer() -> PathBuf {
    built("libpmpi_predict.so")
}

/// The `pmpi-predict` command-line tool.
pub fn cli_path() -> PathBuf {
    built("pmpi-predict")
}

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles tests/programs/NAME.c with mpicc into `dir`.
pub fn build_program(name: &str, dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(format!("{name}.c"));
    let exe = dir.join(name);
    let out = Command::new(mpicc())
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(["-lpthread"])
        .output()
        .expect("mpicc runs");
    assert!(
        out.status.success(),
        "mpicc {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

pub fn mpicc() -> String {
    std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into())
}

/// The Fortran wrapper compiler of the MPI in use: PMPI_PREDICT_TEST_MPIFORT, else the
/// `mpifort` beside `mpicc` (MPICC=mpicc.mpich gives mpifort.mpich).
pub fn mpifort() -> String {
    if let Ok(f) = std::env::var("PMPI_PREDICT_TEST_MPIFORT") {
        return f;
    }
    let cc = mpicc();
    match cc.rfind("mpicc") {
        Some(i) => format!("{}mpifort{}", &cc[..i], &cc[i + 5..]),
        None => "mpifort".into(),
    }
}

/// Which MPI library a wrapper compiler links (`-show` works for Open MPI's and
/// MPICH's wrappers): "mpich" or "openmpi".
pub fn wrapper_family(wrapper: &str) -> String {
    let out = Command::new(wrapper)
        .arg("-show")
        .output()
        .unwrap_or_else(|e| panic!("{wrapper} -show: {e}"));
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    if line.contains("-lmpich") {
        "mpich".into()
    } else if line.contains("-lmpi") {
        "openmpi".into()
    } else {
        panic!("{wrapper} -show names no MPI library: {line}")
    }
}

/// Compiles tests/programs/NAME.f90 with the Fortran wrapper compiler into `dir`, after
/// checking that it belongs to the same MPI as `mpicc` (the layer's).
pub fn build_fortran(name: &str, dir: &Path) -> PathBuf {
    let fc = mpifort();
    assert_eq!(
        wrapper_family(&fc),
        wrapper_family(&mpicc()),
        "{fc} and {} link different MPI libraries",
        mpicc()
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(format!("{name}.f90"));
    let exe = dir.join(name);
    // mpif.h declares no interfaces: gfortran >= 10 needs this to pass buffers of
    // different types to one routine (MPICH's wrapper adds it, Open MPI's does not).
    let out = Command::new(&fc)
        .args(["-O1", "-fallow-argument-mismatch", "-o"])
        .arg(&exe)
        .arg(&src)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{fc} runs: {e}"));
    assert!(
        out.status.success(),
        "{fc} {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Which MPI launcher the tests use (`mpirun` of Open MPI unless PMPI_PREDICT_TEST_MPIEXEC
/// names another, e.g. MPICH's `mpiexec.mpich`).
pub fn launcher() -> String {
    std::env::var("PMPI_PREDICT_TEST_MPIEXEC").unwrap_or_else(|_| "mpirun".into())
}

fn is_openmpi(l: &str) -> bool {
    let out = Command::new(l).arg("--version").output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).contains("Open MPI"))
        .unwrap_or(false)
}

/// The launcher and its options for `np` ranks on this machine (before any variables).
pub fn launch_prefix(np: u32) -> (String, Vec<String>, bool) {
    let l = launcher();
    let ompi = is_openmpi(&l);
    let args = if ompi {
        // Each launch gets its own session-directory base: two mpiruns started at the same
        // instant (tests run two at a time) race to create /tmp/ompi.HOST.UID, and the loser
        // fails in orte_init ("A call to mkdir was unable to create the desired directory:
        // File exists"; CI failed once on it).
        static LAUNCHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = std::env::temp_dir()
            .join("pmpi-predict-tests")
            .join(format!("{}-{n}", std::process::id()));
        let _ = std::fs::create_dir_all(&base);
        [
            "--allow-run-as-root",
            "--oversubscribe",
            "--bind-to",
            "none",
            "--mca",
            "btl",
            "self,vader,tcp",
            "--mca",
            "orte_tmpdir_base",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([
            base.display().to_string(),
            "-np".to_string(),
            np.to_string(),
        ])
        .collect()
    } else {
        vec!["-n".to_string(), np.to_string()]
    };
    (l, args, ompi)
}

/// Runs `exe args` on `np` ranks, with the layer when `env` is Some (its variables are
/// passed to every rank).
pub fn mpirun(
    np: u32,
    exe: &Path,
    args: &[&str],
    env: Option<&[(&str, &str)]>,
    cwd: &Path,
) -> Output {
    mpirun_as(launch_prefix(np), exe, args, env, cwd)
}

/// [`mpirun`] with the launcher and options of `launch` ([`launch_prefix`]'s, changed:
/// another binding, say).
pub fn mpirun_as(
    launch: (String, Vec<String>, bool),
    exe: &Path,
    args: &[&str],
    env: Option<&[(&str, &str)]>,
    cwd: &Path,
) -> Output {
    let prefix = launch.1.clone();
    let out = mpirun_command(launch, exe, args, env, cwd)
        .output()
        .expect("launcher runs");
    remove_session_base(&prefix);
    out
}

/// The command [`mpirun_as`] runs, for a test that starts it and goes on (then calls
/// [`remove_session_base`] with `launch.1` when it has ended).
pub fn mpirun_command(
    launch: (String, Vec<String>, bool),
    exe: &Path,
    args: &[&str],
    env: Option<&[(&str, &str)]>,
    cwd: &Path,
) -> Command {
    let (l, prefix, ompi) = launch;
    let mut c = Command::new(&l);
    c.args(&prefix);
    let mut vars: Vec<(String, String)> = Vec::new();
    if let Some(env) = env {
        vars.push(("LD_PRELOAD".into(), layer().display().to_string()));
        vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    }
    for (k, v) in &vars {
        if ompi {
            c.arg("-x").arg(format!("{k}={v}"));
        } else {
            c.arg("-genv").arg(k).arg(v);
        }
    }
    c.arg(exe).args(args).current_dir(cwd);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

/// Removes the session-directory base [`launch_prefix`] made for a launch that ended.
pub fn remove_session_base(prefix: &[String]) {
    if let Some(i) = prefix.iter().position(|a| a == "orte_tmpdir_base") {
        let _ = std::fs::remove_dir_all(&prefix[i + 1]);
    }
}

/// Runs `exe args` on `np` ranks without the layer, the launcher's environment extended
/// with `env` (both launchers pass it on to the ranks: Hydra all of it, Open MPI's
/// `mpirun` its `OMPI_MCA_*` variables).
pub fn mpirun_with_env(
    np: u32,
    exe: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    cwd: &Path,
) -> Output {
    let (l, prefix, _) = launch_prefix(np);
    let mut c = Command::new(&l);
    c.args(&prefix).arg(exe).args(args).current_dir(cwd);
    c.envs(env.iter().copied())
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    let out = c.output().expect("launcher runs");
    remove_session_base(&prefix);
    out
}

/// Runs `exe args` on `np` ranks under the layer, quiet, recording into `dir/out`;
/// returns that directory and the launcher's output.
pub fn mpirun_recorded(np: u32, exe: &Path, args: &[&str], dir: &Path) -> (PathBuf, Output) {
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let o = mpirun(
        np,
        exe,
        args,
        Some(&[("PMPI_PREDICT_OUT", &out_s), ("PMPI_PREDICT_QUIET", "1")]),
        dir,
    );
    (out, o)
}

/// A program's output lines, sorted (ranks print in any order).
pub fn sorted_lines(b: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(b)
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// calls.csv as a list of column-name → value maps.
pub fn read_calls(dir: &Path) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(dir.join("calls.csv")).expect("calls.csv exists");
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// Number of rows per (rank, call).
pub fn counts(rows: &[HashMap<String, String>]) -> HashMap<(u32, String), usize> {
    let mut m = HashMap::new();
    for r in rows {
        *m.entry((r["rank"].parse().unwrap(), r["call"].clone()))
            .or_insert(0) += 1;
    }
    m
}

pub fn f(r: &HashMap<String, String>, k: &str) -> f64 {
    r[k].parse()
        .unwrap_or_else(|_| panic!("{k}={:?} is not a number", r[k]))
}

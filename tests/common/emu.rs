//! The emulated cluster (scripts/emucluster) for the tests that need one: whether it can
//! run here, and one cluster at a time, taken down by whoever brought it up.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn emu(args: &[&str]) -> std::process::Output {
    Command::new(root().join("scripts/emucluster"))
        .args(args)
        .output()
        .expect("scripts/emucluster runs")
}

pub fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid != 0 {
        return Some("not root (network namespaces need CAP_SYS_ADMIN)".into());
    }
    let ns = Command::new("ip").args(["netns", "list"]).output();
    if !ns.is_ok_and(|o| o.status.success()) {
        return Some("`ip netns` is not available".into());
    }
    let mpirun = Command::new("mpirun").arg("--version").output();
    if !mpirun.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("Open MPI")) {
        return Some("Open MPI's mpirun is not installed".into());
    }
    None
}

/// Takes the cluster down when dropped (only built after our own `up` succeeded).
pub struct Cluster;

impl Drop for Cluster {
    fn drop(&mut self) {
        let o = emu(&["down"]);
        eprintln!("emucluster down: {}", o.status);
    }
}

/// Brings up 4 hosts at 100 Mbit/s, waiting while someone else's cluster is up.
pub fn up() -> Cluster {
    up_with(&[])
}

/// [`up`] with more options of `emucluster up` (`--queue`, `--slots`...).
pub fn up_with(extra: &[&str]) -> Cluster {
    let start = Instant::now();
    let mut args = vec!["up", "4", "--rate", "100mbit"];
    args.extend_from_slice(extra);
    loop {
        if !emu(&["status"]).status.success() {
            let o = emu(&args);
            if o.status.success() {
                return Cluster;
            }
            // Someone else may have won the race; otherwise it is a real failure.
            if !emu(&["status"]).status.success() {
                panic!(
                    "emucluster up failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "an emulated cluster stayed up for 10 minutes; giving up"
        );
        eprintln!("emulated cluster busy (another user); waiting 10 s");
        std::thread::sleep(Duration::from_secs(10));
    }
}

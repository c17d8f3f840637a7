//! The emulated multi-host cluster (scripts/emucluster) end to end: runs
//! tests/emucluster.sh, which skips with a clear message where namespaces are not
//! available (not root, no `ip netns`) and asserts host names, shaped bandwidth and
//! conflict ratios where they are.

use std::process::Command;

#[test]
fn emulated_cluster_up_run_down() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash")
        .arg("tests/emucluster.sh")
        .current_dir(root)
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "tests/emucluster.sh failed");
    if let Some(skip) = stdout.lines().find(|l| l.starts_with("SKIP")) {
        eprintln!("{skip}");
        return;
    }
    // The script asserts bandwidth and conflict ratios itself; it ends with one PASS line.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("PASS tests/emucluster.sh")),
        "no PASS line"
    );
}

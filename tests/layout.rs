//! The floors point one way: the core depends on neither MPI nor the layer, and the CLI
//! (which links MPI for `calibrate`) defines no `MPI_*`/`PMPI_*` symbol of its own.

mod common;

use std::process::Command;

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// The normal (non-dev, non-build) dependency tree of a workspace package, one crate name
/// per line.
fn deps(package: &str) -> Vec<String> {
    let o = cargo()
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .output()
        .expect("cargo tree runs");
    assert!(
        o.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn core_depends_on_neither_mpi_nor_the_layer() {
    let core = deps("pmpi-core");
    assert!(core.iter().any(|d| d == "serde_json"), "{core:?}");
    for banned in ["mpi-sys", "pmpi-predict", "pmpi-predict-cli", "clap"] {
        assert!(
            !core.iter().any(|d| d == banned),
            "pmpi-core depends on {banned}: {core:?}"
        );
    }
    // The CLI links MPI (calibrate) and the core, never the layer.
    let cli = deps("pmpi-predict-cli");
    assert!(cli.iter().any(|d| d == "pmpi-core") && cli.iter().any(|d| d == "mpi-sys"));
    assert!(!cli.iter().any(|d| d == "pmpi-predict"), "{cli:?}");
}

/// Names of the symbols an object defines (`nm --defined-only`; `-D`: dynamic table only).
fn defined(path: &std::path::Path, dynamic: bool) -> Vec<String> {
    let mut c = Command::new("nm");
    c.arg("--defined-only");
    if dynamic {
        c.arg("-D");
    }
    let o = c.arg(path).output().expect("nm runs (binutils)");
    assert!(o.status.success(), "nm {}", path.display());
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect()
}

#[test]
fn cli_defines_no_mpi_symbols_and_the_layer_exports_them() {
    let cli = defined(&common::cli_path(), false);
    let mpi: Vec<_> = cli
        .iter()
        .filter(|s| s.starts_with("MPI_") || s.starts_with("PMPI_"))
        .collect();
    assert!(mpi.is_empty(), "the CLI defines {mpi:?}");
    let so = defined(&common::layer(), true);
    for s in [
        "MPI_Send",
        "PMPI_Send",
        "MPI_Alltoall",
        "pmpi_predict_inert",
    ] {
        assert!(so.iter().any(|d| d == s), "the layer does not export {s}");
    }
}

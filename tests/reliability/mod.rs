//! Helpers shared by the reliability tests (tests/mpi_tx.rs, tests/mpi_robust.rs): runs a
//! program with and without the layer and checks that nothing the program sees changed.
#![allow(dead_code)]

use crate::common::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A program run twice, without and with the layer.
pub struct Pair {
    pub dir: PathBuf,
    pub out: PathBuf,
    pub plain: Output,
    pub with: Output,
}

/// Builds tests/programs/NAME.c, runs it on `np` ranks without and with the layer
/// (extra layer variables in `env`), and asserts identical stdout and exit status.
pub fn run_pair(name: &str, np: u32, env: &[(&str, &str)]) -> Pair {
    let dir = scratch(name);
    let exe = build_program(name, &dir);
    let plain = mpirun(np, &exe, &[], None, &dir);
    let out = dir.join("out");
    let out_s = out.display().to_string();
    let mut vars = vec![("PMPI_PREDICT_OUT", out_s.as_str())];
    vars.extend_from_slice(env);
    let with = mpirun(np, &exe, &[], Some(&vars), &dir);
    assert_identical(name, &plain, &with);
    Pair {
        dir,
        out,
        plain,
        with,
    }
}

/// Same stdout (byte for byte) and exit status.
pub fn assert_identical(name: &str, plain: &Output, with: &Output) {
    assert_eq!(
        String::from_utf8_lossy(&with.stdout),
        String::from_utf8_lossy(&plain.stdout),
        "{name}: stdout differs with the layer; stderr with:\n{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert_eq!(
        with.status.code(),
        plain.status.code(),
        "{name}: exit status"
    );
    assert!(
        !plain.stdout.is_empty(),
        "{name} printed nothing: {}",
        String::from_utf8_lossy(&plain.stderr)
    );
}

/// Rows of one rank and call.
pub fn rows_of<'a>(
    rows: &'a [HashMap<String, String>],
    rank: u32,
    call: &str,
) -> Vec<&'a HashMap<String, String>> {
    rows.iter()
        .filter(|r| r["rank"] == rank.to_string() && r["call"] == call)
        .collect()
}

/// The selected columns of rows, for compact assertions.
pub fn cols(rows: &[&HashMap<String, String>], keys: &[&str]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| keys.iter().map(|k| r[*k].clone()).collect())
        .collect()
}

/// Runs the CLI.
pub fn cli(args: &[&str]) -> Output {
    std::process::Command::new(crate::common::cli_path())
        .args(args)
        .output()
        .expect("pmpi-predict runs")
}

/// summary.json of a run directory.
pub fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

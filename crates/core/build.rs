//! Generates the call table (call numbers, names and kinds) from the repository's
//! `wrappers/*.wrap`, the list the layer's interposers are generated from too.

#[path = "src/wrapspec.rs"]
#[allow(dead_code)]
mod wrapspec;

use std::path::{Path, PathBuf};

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wrappers");
    println!("cargo:rerun-if-changed={}", dir.display());
    println!("cargo:rerun-if-changed=src/wrapspec.rs");
    let wraps = wrapspec::load_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("calls.rs"), wrapspec::calls_rs(&wraps)).unwrap();
}

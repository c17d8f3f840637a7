//! pmpi-core: the pure part of pmpi-predict — the trace format, the interconnect and
//! collective models, the graph of concurrent communications, the causal replay engine
//! and the reports. No MPI and no preload state: the layer (the `pmpi-predict` cdylib)
//! calls into it once at MPI_Finalize, the CLI for `analyze`, `replay` and `watch`.
//! See docs/architecture.md.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod config;
pub mod error;
pub mod graph;
pub mod model;
pub mod predict;
pub mod profile;
pub mod replay;
pub mod report;
pub mod topo;
pub mod trace;
pub mod wrapspec;

#[cfg(test)]
mod testing;

/// Writes one line to stderr in a single `write` (`eprintln!` writes the text and its
/// newline separately, and `mpirun` interleaves what its ranks write between the two:
/// Ray's output landed in the middle of the layer's banner).
#[doc(hidden)]
pub fn stderr_line(msg: std::fmt::Arguments) {
    use std::io::Write;
    let mut s = msg.to_string();
    s.push('\n');
    let _ = std::io::stderr().write_all(s.as_bytes());
}

/// [`eprintln!`] as one write: see [`stderr_line`].
#[macro_export]
macro_rules! say_line {
    ($($arg:tt)*) => {
        $crate::stderr_line(format_args!($($arg)*))
    };
}

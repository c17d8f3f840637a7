//! `pmpi-predict analyze DIR`.

/// Arguments of `analyze`.
#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// Output directory of a run.
    pub dir: std::path::PathBuf,
}

/// Runs `analyze`.
pub fn run(_a: AnalyzeArgs) -> i32 {
    1
}

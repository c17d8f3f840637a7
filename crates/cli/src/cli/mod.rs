//! Command-line interface: argument parsing and dispatch to one module per subcommand.

use clap::{Parser, Subcommand};

pub mod accuracy;
pub mod analyze;
pub mod calibrate;
pub mod model;
pub mod profile_cmd;
pub mod replay;
pub mod run;
pub mod watch;

/// Profile MPI programs, and predict their communication time under contention models.
#[derive(Parser, Debug)]
#[command(name = "pmpi-predict", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Evaluate a model on given input (penalties on a graph, collective times).
    #[command(subcommand)]
    Model(model::ModelCmd),
    /// Rebuild calls.csv, summary.json and hotspots.json from a run's spool files, without MPI.
    Analyze(analyze::AnalyzeArgs),
    /// Follow a running job's spools: each interval's node-to-node graph, most penalised
    /// links and ranks blocked longest (`--json`: one snapshot per line).
    Watch(watch::WatchArgs),
    /// Run an MPI job under the layer: `pmpi-predict run -- mpirun -np 4 ./a.out`.
    Run(run::RunArgs),
    /// Replay a recorded run under other conditions (placement, network, two clusters)
    /// and compare it with the recorded run.
    Replay(replay::ReplayArgs),
    /// Measured against predicted (and the contention-free baseline) per group of like calls.
    Accuracy(accuracy::AccuracyArgs),
    /// Measure the network under an MPI launcher and write a calibration profile
    /// (`mpirun -np N pmpi-predict calibrate -o PROFILE.json`).
    Calibrate(calibrate::CalibrateArgs),
    /// Inspect calibration profiles.
    #[command(subcommand)]
    Profile(profile_cmd::ProfileCmd),
}

/// Runs the CLI and returns the process exit status: 0 on success, 2 on bad input,
/// 1 on other failures.
pub fn main() -> i32 {
    silence_preloaded_layer();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match cli.cmd {
        Cmd::Model(m) => model::run(m),
        Cmd::Analyze(a) => analyze::run(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Watch(a) => watch::run(a),
        Cmd::Replay(a) => replay::run(a),
        Cmd::Accuracy(a) => accuracy::run(a),
        Cmd::Calibrate(a) => calibrate::run(a),
        Cmd::Profile(p) => profile_cmd::run(p),
    }
}

/// Options that configure the prediction engine, shared by `analyze` and `accuracy`.
#[derive(clap::Args, Debug, Clone)]
pub struct EngineArgs {
    /// Calibration profile (default: the one the run was recorded with, else the built-in
    /// profile).
    #[arg(long)]
    pub profile: Option<std::path::PathBuf>,
    /// Penalty model overriding the profile's: gige, myrinet, infiniband, maxmin, none.
    #[arg(long)]
    pub model: Option<String>,
    /// Broadcast strategy to assume for every MPI_Bcast instead of the library's decision (Open MPI's or MPICH's)
    /// (flat, flat-rendezvous, segmented-flat, chain, chain-rendezvous, segmented-chain,
    /// binary, binomial, binomial-rendezvous, segmented-binomial).
    #[arg(long)]
    pub bcast: Option<String>,
    /// Scatter strategy to assume (flat, chain, binomial).
    #[arg(long)]
    pub scatter: Option<String>,
}

impl EngineArgs {
    /// Report options for the run in `dir`: without `--profile`, the profile the layer
    /// predicted with at the run's MPI_Finalize (recorded in rank 0's metadata), so that
    /// re-analysing a run gives the figures its report gave; said on stderr.
    pub fn options_for(
        &self,
        dir: &std::path::Path,
        print_hotspots: bool,
    ) -> crate::report::ReportOptions {
        let mut o = self.options(print_hotspots);
        if o.profile.is_none()
            && let Ok(m) = crate::trace::read_meta(&crate::trace::meta_path(dir, 0))
            && let Some(p) = m.profile
        {
            let path = std::path::PathBuf::from(&p);
            if path.is_file() {
                eprintln!(
                    "pmpi-predict: profile {p}, as the run was recorded with (--profile to choose another)"
                );
                o.profile = Some(path);
            } else {
                eprintln!(
                    "pmpi-predict: the run was recorded with profile {p}, which is not there any more: the built-in profile instead (--profile to choose one)"
                );
            }
        }
        o
    }

    /// Report options from these arguments: bad values are errors (exit status 2).
    pub fn options(&self, print_hotspots: bool) -> crate::report::ReportOptions {
        crate::report::ReportOptions {
            profile: self.profile.clone(),
            model: self.model.clone(),
            bcast: self.bcast.clone(),
            scatter: self.scatter.clone(),
            strict: true,
            print_hotspots,
            brief: false,
        }
    }
}

/// An error the CLI reports on stderr; its kind decides the exit status (README, "Exit
/// status").
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad input from the user: exit status 2.
    #[error("{0}")]
    Input(String),
    /// Reading or writing failed for a reason that is not the input's fault (a full disk,
    /// permissions): exit status 74 (`EX_IOERR`).
    #[error("{0}")]
    Io(String),
    /// MPI could not be started or failed: exit status 69 (`EX_UNAVAILABLE`).
    #[error("{0}")]
    Mpi(String),
    /// A bug: exit status 70 (`EX_SOFTWARE`).
    #[error("internal error: {0}")]
    Internal(String),
}

/// Exit status of a bad input.
pub const EXIT_INPUT: i32 = 2;
/// Exit status of an I/O failure (`EX_IOERR`).
pub const EXIT_IO: i32 = 74;
/// Exit status of an MPI failure (`EX_UNAVAILABLE`).
pub const EXIT_MPI: i32 = 69;
/// Exit status of an internal error (`EX_SOFTWARE`).
pub const EXIT_INTERNAL: i32 = 70;

impl CliError {
    /// Bad input from the user.
    pub fn input(message: impl Into<String>) -> Self {
        CliError::Input(message.into())
    }
    /// An I/O failure.
    pub fn io(message: impl Into<String>) -> Self {
        CliError::Io(message.into())
    }
    /// A bug.
    pub fn internal(message: impl Into<String>) -> Self {
        CliError::Internal(message.into())
    }
    /// The process exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Input(_) => EXIT_INPUT,
            CliError::Io(_) => EXIT_IO,
            CliError::Mpi(_) => EXIT_MPI,
            CliError::Internal(_) => EXIT_INTERNAL,
        }
    }
    /// Prints the message and returns the exit status for it.
    pub fn report(&self) -> i32 {
        eprintln!("pmpi-predict: {self}");
        self.exit_code()
    }
}

impl From<pmpi_core::error::Error> for CliError {
    fn from(e: pmpi_core::error::Error) -> Self {
        use pmpi_core::error::Error as E;
        match e {
            E::Input(m) => CliError::Input(m),
            e @ E::Io { .. } => CliError::Io(e.to_string()),
            E::Internal(m) => CliError::Internal(m),
        }
    }
}

/// Turns a subcommand result into an exit status.
pub fn exit_status(r: Result<(), CliError>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => e.report(),
    }
}

/// If the layer is preloaded into this tool (an `LD_PRELOAD` exported for a whole job
/// script), makes it inert: `calibrate`'s own MPI calls must not be recorded.
fn silence_preloaded_layer() {
    // SAFETY: dlsym with a NUL-terminated name; the symbol, when present, is the layer's
    // `extern "C" fn()` of that name, which takes nothing and only stores two flags.
    unsafe {
        let f = libc::dlsym(libc::RTLD_DEFAULT, c"pmpi_predict_inert".as_ptr());
        if !f.is_null() {
            let f: extern "C" fn() = std::mem::transmute(f);
            f();
        }
    }
}

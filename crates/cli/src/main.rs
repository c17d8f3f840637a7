//! `pmpi-predict` command-line tool: a thin shell over `pmpi_predict_cli::cli`.

fn main() {
    // A closed pipe (`pmpi-predict accuracy RUN | head`) ends the tool quietly, as it does
    // any Unix filter, instead of a panic in `println!` (Rust ignores SIGPIPE by default).
    // SAFETY: restoring the default disposition of a signal before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(pmpi_predict_cli::cli::main());
}

//! `pmpi-predict` command-line tool: a thin shell over `pmpi_predict_cli::cli`.

fn main() {
    std::process::exit(pmpi_predict_cli::cli::main());
}

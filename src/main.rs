//! `pmpi-predict` command-line tool: a thin shell over `pmpi_predict::cli`.

fn main() {
    std::process::exit(pmpi_predict::cli::main());
}

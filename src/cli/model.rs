//! `pmpi-predict model ...`: evaluate models from the command line.
//! (Filled in by the model library work; see issue 3.)

use clap::Subcommand;

/// Model subcommands.
#[derive(Subcommand, Debug)]
pub enum ModelCmd {}

/// Runs a model subcommand.
pub fn run(cmd: ModelCmd) -> i32 {
    match cmd {}
}

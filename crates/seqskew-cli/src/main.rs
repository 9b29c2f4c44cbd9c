//! `seqskew`: find out why a distributed training job straggles.

mod input;
mod inspect;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "seqskew",
    version,
    about = "Find out why a distributed training job straggles, and whether sequence-length imbalance is the cause."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show what each input file holds: format, workers, steps, sequence information, problems.
    Inspect {
        /// Trace files or directories (searched recursively).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect { paths, json } => inspect::run(&paths, json),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("seqskew: {message}");
            ExitCode::from(2)
        }
    }
}

//! `seqskew-bench`: how fast seqskew reads traces and analyses jobs, natively, on inputs the
//! simulator generates (nothing is downloaded).
//!
//! `seqskew-bench run [--quick] [--out DIR]` generates the inputs (cached under DIR/data),
//! measures each several times in a fresh child process (so peak memory is the measurement's
//! own), and writes DIR/native.json; `scripts/bench` adds HTA and the browser and prints the
//! table. `seqskew-bench ingest PATH` and `seqskew-bench analyze WORKERS STEPS` are the
//! measurements themselves (one line of JSON each).

mod generate;
mod measure;

use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: seqskew-bench run [--quick] [--out DIR]\n       seqskew-bench ingest PATH...\n       seqskew-bench analyze WORKERS STEPS"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ingest") if args.len() >= 2 => measure::ingest(&args[1..].iter().map(PathBuf::from).collect::<Vec<_>>()),
        Some("analyze") if args.len() == 3 => match (args[1].parse(), args[2].parse()) {
            (Ok(w), Ok(s)) => measure::analyze(w, s),
            _ => return usage(),
        },
        Some("run") => {
            let quick = args.iter().any(|a| a == "--quick");
            let out = args
                .iter()
                .position(|a| a == "--out")
                .and_then(|i| args.get(i + 1))
                .map_or_else(|| PathBuf::from("target/bench"), PathBuf::from);
            measure::run_all(&out, quick)
        }
        _ => return usage(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seqskew-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

//! `seqskew-bench`: how fast seqskew reads traces and analyses jobs, natively, on inputs the
//! simulator generates (nothing is downloaded).
//!
//! `seqskew-bench run [--quick] [--out DIR] [--hta PYTHON SCRIPT]` generates the inputs
//! (cached under DIR/data), measures each several times in a fresh child process (so peak
//! memory is the measurement's own), times HTA on the Kineto inputs with `PYTHON SCRIPT DIR`,
//! and writes DIR/native.json. `seqskew-bench table DIR` turns DIR/native.json and the browser
//! run's DIR/browser.json into the Markdown table (DIR/bench.md). `seqskew-bench ingest PATH`
//! and `seqskew-bench analyze WORKERS STEPS` are the measurements themselves (one line of JSON
//! each). `scripts/bench` runs it all.

mod generate;
mod measure;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: seqskew-bench run [--quick] [--out DIR] [--hta PYTHON SCRIPT]\n       seqskew-bench table DIR\n       seqskew-bench ingest PATH...\n       seqskew-bench analyze WORKERS STEPS"
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
            let after = |flag: &str, n: usize| args.iter().position(|a| a == flag).and_then(|i| args.get(i + n));
            let plan = measure::Plan {
                out: after("--out", 1).map_or_else(|| PathBuf::from("target/bench"), PathBuf::from),
                quick: args.iter().any(|a| a == "--quick"),
                hta: after("--hta", 1).zip(after("--hta", 2)).map(|(p, s)| (PathBuf::from(p), PathBuf::from(s))),
            };
            measure::run_all(&plan)
        }
        Some("table") if args.len() == 2 => table::write(&PathBuf::from(&args[1])),
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

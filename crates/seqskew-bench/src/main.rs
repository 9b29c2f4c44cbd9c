//! `seqskew-bench`: how fast seqskew reads traces and analyses jobs, natively, on inputs the
//! simulator generates (nothing is downloaded).
//!
//! `seqskew-bench run [--quick] [--out DIR] [--hta PYTHON SCRIPT]` generates the inputs
//! (cached under DIR/data), measures each several times in a fresh child process (so peak
//! memory is the measurement's own), times HTA on the Kineto inputs with `PYTHON SCRIPT DIR`,
//! and writes DIR/native.json. `seqskew-bench table DIR` turns DIR/native.json and the browser
//! run's DIR/browser.json into the Markdown table (DIR/bench.md). `seqskew-bench ingest PATH`
//! and `seqskew-bench analyze WORKERS STEPS [REPEAT]` are the measurements themselves (one line
//! of JSON each). `scripts/bench` runs it all.
//!
//! For comparing two builds: `seqskew-bench generate [--quick] [--out DIR]` writes (or finds)
//! the inputs and prints their paths, and `seqskew-bench parse PATH...` times only the import
//! of files already read into memory (the parser's speed, without the reads), and
//! `seqskew-bench fingerprint [--jobs N]` prints a digest of the whole analysis of each job of
//! the labelled corpus and of a few large ones (two builds that print the same diagnose alike).

mod fingerprint;
mod generate;
mod measure;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: seqskew-bench run [--quick] [--out DIR] [--hta PYTHON SCRIPT]\n       seqskew-bench table DIR\n       seqskew-bench ingest PATH...\n       seqskew-bench parse PATH...\n       seqskew-bench generate [--quick] [--out DIR]\n       seqskew-bench fingerprint [--jobs N]\n       seqskew-bench analyze WORKERS STEPS [REPEAT]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let after = |flag: &str, n: usize| args.iter().position(|a| a == flag).and_then(|i| args.get(i + n));
    let out_dir = || after("--out", 1).map_or_else(|| PathBuf::from("target/bench"), PathBuf::from);
    let quick = args.iter().any(|a| a == "--quick");
    let result = match args.first().map(String::as_str) {
        Some("ingest") if args.len() >= 2 => measure::ingest(&args[1..].iter().map(PathBuf::from).collect::<Vec<_>>()),
        Some("analyze") if (3..=4).contains(&args.len()) => {
            match (args[1].parse(), args[2].parse(), args.get(3).map_or(Ok(1), |r| r.parse())) {
                (Ok(w), Ok(s), Ok(repeat)) => measure::analyze(w, s, repeat),
                _ => return usage(),
            }
        }
        Some("parse") if args.len() >= 2 => measure::parse(&args[1..].iter().map(PathBuf::from).collect::<Vec<_>>()),
        Some("generate") => measure::generate(&out_dir(), quick),
        Some("fingerprint") => fingerprint::run(after("--jobs", 1).and_then(|n| n.parse().ok())),
        Some("run") => {
            let plan = measure::Plan {
                out: out_dir(),
                quick,
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

//! `seqskew-bench`: how fast seqskew reads traces and analyses jobs, natively, on inputs the
//! simulator generates (nothing is downloaded).
//!
//! `seqskew-bench run [--quick] [--out DIR] [--hta PYTHON SCRIPT]` generates the inputs
//! (cached under DIR/data), measures each several times in a fresh child process (so peak
//! memory is the measurement's own), times HTA on the Kineto inputs with `PYTHON SCRIPT DIR`,
//! and writes DIR/native.json. `seqskew-bench table DIR` turns DIR/native.json and the browser
//! run's DIR/browser.json into the Markdown table (DIR/bench.md). `seqskew-bench ingest PATH`
//! and `seqskew-bench analyze WORKERS STEPS [REPEAT]` are the measurements themselves (one line
//! of JSON each), and so are `seqskew-bench failure-log PATH` (a training log read, assembled
//! and its failure diagnosed) and `seqskew-bench flight-recorder RANKS ENTRIES` (that many
//! Flight Recorder dumps generated in memory, then imported and diagnosed; `--write DIR` writes
//! them out instead); `seqskew-bench failures [--quick] [--log-mb N]` runs only those rows, as
//! `run` does. `scripts/bench` runs it all.
//!
//! For comparing two builds: `seqskew-bench generate [--quick] [--out DIR]` writes (or finds)
//! the inputs and prints their paths, and `seqskew-bench parse PATH...` times only the import
//! of files already read into memory (the parser's speed, without the reads), and
//! `seqskew-bench fingerprint [--jobs N]` prints a digest of the whole analysis of each job of
//! the labelled corpus and of a few large ones (two builds that print the same diagnose alike).

mod failure;
mod fingerprint;
mod generate;
mod measure;
mod pickle;
mod results;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: seqskew-bench run [--quick] [--out DIR] [--hta PYTHON SCRIPT] [--log-mb N]\n       seqskew-bench table DIR\n       seqskew-bench ingest PATH...\n       seqskew-bench parse PATH...\n       seqskew-bench generate [--quick] [--out DIR] [--log-mb N]\n       seqskew-bench failures [--quick] [--out DIR] [--log-mb N]\n       seqskew-bench failure-log PATH\n       seqskew-bench flight-recorder RANKS ENTRIES [--write DIR]\n       seqskew-bench fingerprint [--jobs N]\n       seqskew-bench analyze WORKERS STEPS [REPEAT]\n       seqskew-bench model WORKERS STEPS | PATH..."
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let after = |flag: &str, n: usize| args.iter().position(|a| a == flag).and_then(|i| args.get(i + n));
    let out_dir = || after("--out", 1).map_or_else(|| PathBuf::from("target/bench"), PathBuf::from);
    let quick = args.iter().any(|a| a == "--quick");
    let log_mb = after("--log-mb", 1).and_then(|n| n.parse().ok());
    let result = match args.first().map(String::as_str) {
        Some("ingest") if args.len() >= 2 => measure::ingest(&args[1..].iter().map(PathBuf::from).collect::<Vec<_>>()),
        Some("analyze") if (3..=4).contains(&args.len()) => {
            match (args[1].parse(), args[2].parse(), args.get(3).map_or(Ok(1), |r| r.parse())) {
                (Ok(w), Ok(s), Ok(repeat)) => measure::analyze(w, s, repeat),
                _ => return usage(),
            }
        }
        Some("model") if args.len() >= 2 => match (args.len(), args[1].parse(), args.get(2).map(|s| s.parse())) {
            (3, Ok(w), Some(Ok(s))) => measure::model(measure::ModelOf::Simulated(w, s)),
            _ => measure::model(measure::ModelOf::Files(args[1..].iter().map(PathBuf::from).collect())),
        },
        Some("parse") if args.len() >= 2 => measure::parse(&args[1..].iter().map(PathBuf::from).collect::<Vec<_>>()),
        Some("generate") => measure::generate(&out_dir(), quick, log_mb),
        Some("failure-log") if args.len() == 2 => failure::measure_log(&PathBuf::from(&args[1])),
        Some("flight-recorder") if args.len() == 3 || args.len() == 5 => {
            let write = after("--write", 1).map(PathBuf::from);
            match (args[1].parse(), args[2].parse()) {
                (Ok(ranks), Ok(entries)) if args.len() == 3 || write.is_some() => {
                    failure::measure_flight(ranks, entries, write.as_deref())
                }
                _ => return usage(),
            }
        }
        Some("fingerprint") => fingerprint::run(after("--jobs", 1).and_then(|n| n.parse().ok())),
        Some(command @ ("run" | "failures")) => {
            let plan = measure::Plan {
                out: out_dir(),
                quick,
                hta: after("--hta", 1).zip(after("--hta", 2)).map(|(p, s)| (PathBuf::from(p), PathBuf::from(s))),
                log_mb,
            };
            if command == "run" { measure::run_all(&plan) } else { measure::failures_only(&plan) }
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

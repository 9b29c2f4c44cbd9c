//! `seqskew`: find out why a distributed training job straggles.

mod analyze;
mod check;
mod eval;
mod input;
mod inspect;
mod progress;
mod synth;

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
    /// Print no progress on standard error (it is drawn only on a terminal, for runs over a
    /// second).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show what each input file holds: format, workers, steps, sequence information, problems.
    Inspect {
        /// Traces, step logs, logs, error files and Flight Recorder dumps, or directories of them
        /// (searched recursively); `-` reads standard input (a terminal paste).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Diagnose why the job straggles or failed: verdict, evidence, slowdown, what-ifs, the
    /// failed job's initiating ranks, and the fix.
    Analyze {
        /// Traces, step logs, logs, error files and Flight Recorder dumps, or directories of them
        /// (searched recursively); `-` reads standard input (a terminal paste).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print the report as JSON (schema seqskew.report/1).
        #[arg(long, conflicts_with_all = ["markdown", "html"])]
        json: bool,
        /// Print the report as Markdown (for a wiki page or an issue).
        #[arg(long, conflicts_with = "html")]
        markdown: bool,
        /// Print the report as one self-contained HTML page (no scripts, no requests).
        #[arg(long)]
        html: bool,
    },
    /// Exit 0 when the job's slowdown is within the bound and no log or dump shows a failure, 1
    /// when it straggles beyond the bound or failed, 2 when the input cannot be analysed (for CI).
    Check {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The largest acceptable slowdown S (actual / ideal step time).
        #[arg(long, default_value_t = 1.10)]
        max_slowdown: f64,
        #[arg(long)]
        json: bool,
    },
    /// Compare a run before and after a fix: step time, slowdown, and which symptoms went away.
    Compare {
        /// Traces of the run before the fix (file or directory).
        before: PathBuf,
        /// Traces of the run after the fix (file or directory).
        after: PathBuf,
        #[arg(long, default_value_t = 1.10)]
        max_slowdown: f64,
        #[arg(long)]
        json: bool,
    },
    /// Write the step-log form of any input (all the analysis needs), e.g. to load a job too big
    /// for one browser: summarise where the traces are, then open the summaries.
    Summarize {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Output file: .jsonl or .csv, optionally .gz; - for standard output.
        #[arg(short, long)]
        out: PathBuf,
    },
    /// Write a synthetic job with a known cause: a preset or a configuration file.
    Synth {
        /// A named preset (seqlen-imbalance, seqlen-balanced, slow-worker, stage-imbalance,
        /// comm-bound, gc-stalls, balanced, mixed).
        #[arg(long, conflicts_with = "config")]
        preset: Option<String>,
        /// A JSON configuration (see docs/simulator.md).
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long)]
        seed: Option<u64>,
        /// Number of steps (overrides the preset's).
        #[arg(long)]
        steps: Option<u32>,
        /// Output directory.
        #[arg(short, long)]
        out: PathBuf,
        /// Formats to write: kineto (one file per rank), chrome (one merged trace), jsonl, csv.
        #[arg(long, value_delimiter = ',', default_values_t = ["kineto".to_string(), "chrome".to_string(), "jsonl".to_string()])]
        format: Vec<String>,
        /// Gzip the files.
        #[arg(long)]
        gzip: bool,
    },
    /// Generate the labelled corpus, diagnose every job, print the confusion matrix and accuracy.
    Eval {
        /// Number of jobs.
        #[arg(long, default_value_t = 540)]
        jobs: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Score this many seeds (--seed, --seed + 1, ...) and print each one's accuracy per
        /// cause and per family side by side, with the worst.
        #[arg(long, default_value_t = 1)]
        seeds: u64,
        /// Also write the summary and every outcome as JSON (of the first seed).
        #[arg(long)]
        json: Option<PathBuf>,
        /// Print each job's result as it finishes.
        #[arg(short, long)]
        verbose: bool,
        /// Score only the jobs of these families (scenarios, comma-separated, e.g.
        /// `sliding-window,slow-node`), of the same corpus.
        #[arg(long, value_delimiter = ',')]
        family: Vec<String>,
        /// Instead of scoring, write case N's files and truth to --dump DIR.
        #[arg(long, requires = "dump")]
        case: Option<usize>,
        #[arg(long, requires = "case")]
        dump: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    progress::set_quiet(cli.quiet);
    let result = match cli.command {
        Command::Inspect { paths, json } => inspect::run(&paths, json),
        Command::Analyze { paths, json, markdown, html } => {
            let output = if json {
                analyze::Output::Json
            } else if markdown {
                analyze::Output::Markdown
            } else if html {
                analyze::Output::Html
            } else {
                analyze::Output::Text
            };
            analyze::run(&paths, output)
        }
        Command::Check { paths, max_slowdown, json } => check::check(&paths, max_slowdown, json),
        Command::Compare { before, after, max_slowdown, json } => {
            check::compare_runs(&before, &after, max_slowdown, json)
        }
        Command::Summarize { paths, out } => check::summarize(&paths, &out),
        Command::Synth { preset, config, seed, steps, out, format, gzip } => {
            synth::run(&synth::Options { preset, config, seed, steps, out, formats: format, gzip })
        }
        Command::Eval { jobs, seed, seeds, json, verbose, family, case, dump } => match (case, dump) {
            (Some(id), Some(dir)) => eval::dump(jobs, seed, id, &dir),
            _ => eval::run(jobs, seed..seed.saturating_add(seeds.max(1)), &family, json.as_deref(), verbose),
        },
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("seqskew: {message}");
            ExitCode::from(2)
        }
    }
}

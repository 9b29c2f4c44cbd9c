//! `seqskew analyze`: the verdict, its evidence, the slowdown, the what-ifs and the fix.

use std::path::PathBuf;
use std::process::ExitCode;

use seqskew_core::analysis::diagnose;
use seqskew_core::report::Report;
use seqskew_core::text;

use crate::input;

/// How to print the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Text,
    Json,
    Markdown,
    Html,
}

/// Reads and analyses the inputs. `Err` when nothing in them can be analysed.
pub fn load(paths: &[PathBuf]) -> Result<Report, String> {
    let files = input::expand(paths)?;
    if files.is_empty() {
        return Err("no input files found (looked for traces and step logs: .json, .jsonl, .csv; logs: .log, .txt, \
                    .out, .err; Flight Recorder dumps: nccl_trace_rank_N, .pkl; each optionally .gz)"
            .into());
    }
    let (summaries, assembled, progress) = input::read(&files);
    if assembled.job.workers.is_empty() && assembled.failures.is_empty() {
        let problems: Vec<String> =
            summaries.iter().flat_map(|s| s.diagnostics.iter().map(ToString::to_string)).collect();
        return Err(format!("nothing to analyse:\n  {}", problems.join("\n  ")));
    }
    progress.then(format!("analysing {}", text::count(assembled.job.workers.len(), "worker")));
    let report = diagnose(&assembled, &summaries);
    drop(progress);
    input::free_in_background(assembled);
    Ok(report)
}

pub fn run(paths: &[PathBuf], output: Output) -> Result<ExitCode, String> {
    let report = load(paths)?;
    match output {
        Output::Json => println!("{}", report.to_json()),
        Output::Markdown | Output::Text => print!("{}", report.to_markdown()),
        Output::Html => print!("{}", report.to_html()),
    }
    Ok(ExitCode::SUCCESS)
}

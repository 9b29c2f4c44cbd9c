//! `seqskew inspect`: what each file holds.

use std::path::PathBuf;
use std::process::ExitCode;

use seqskew_core::analysis::frame;
use seqskew_core::diag::Severity;
use seqskew_core::import::FileSummary;
use seqskew_core::text;

use crate::input;

#[derive(serde::Serialize)]
struct Output {
    files: Vec<FileSummary>,
    job: JobSummary,
}

#[derive(serde::Serialize)]
struct JobSummary {
    workers: usize,
    steps: usize,
    /// The layout the analysis will use: data-parallel width and pipeline stages.
    dp: usize,
    pp: usize,
    diagnostics: Vec<seqskew_core::diag::Diagnostic>,
}

pub fn run(paths: &[PathBuf], json: bool) -> Result<ExitCode, String> {
    let files = input::expand(paths)?;
    let (summaries, mut assembled, progress) = input::read(&files);
    drop(progress);
    let (dp, pp) = frame::layout(&frame::slots(&assembled.job));
    let out = Output {
        files: summaries,
        job: JobSummary {
            workers: assembled.job.workers.len(),
            steps: assembled.job.steps().len(),
            dp,
            pp,
            diagnostics: std::mem::take(&mut assembled.diagnostics),
        },
    };
    input::free_in_background(assembled);
    if json {
        let text = serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        for f in &out.files {
            let format = f.format.map_or("unrecognised", |x| x.describe());
            println!("{}  [{}{}]", f.path, format, if f.compressed { ", gzip" } else { "" });
            if f.format.is_some() {
                let steps = match (f.first_step, f.last_step) {
                    (Some(a), Some(b)) => format!("{} ({a}..{b})", text::count(f.steps, "step")),
                    _ => "no steps".to_owned(),
                };
                let micro_batches = match f.micro_batches {
                    0 => String::new(),
                    n => format!(", micro-batches: up to {n} a step"),
                };
                println!(
                    "  {}, {steps}, {} events kept, {} skipped, sequences: {}{micro_batches}",
                    workers_and_ranks(f.workers, &f.ranks),
                    f.spans.kept,
                    f.spans.skipped,
                    f.sequences.name()
                );
            }
            for d in &f.diagnostics {
                println!("  {}", d);
            }
        }
        let job = &out.job;
        println!(
            "job: {} (dp {} × pp {}), {}",
            text::count(job.workers, "worker"),
            job.dp,
            job.pp,
            text::count(job.steps, "step")
        );
        for d in &out.job.diagnostics {
            println!("  {d}");
        }
    }
    let unusable =
        out.files.iter().all(|f| f.diagnostics.iter().any(|d| d.severity == Severity::Error) && f.workers == 0);
    Ok(if unusable { ExitCode::from(2) } else { ExitCode::SUCCESS })
}

/// "1 worker (rank 3)", "16 workers (ranks 0-15)"; without ranks, "1 worker", "0 workers".
fn workers_and_ranks(workers: usize, ranks: &[u32]) -> String {
    let ranks_text = text::compact_ranges(&ranks.iter().map(|&r| u64::from(r)).collect::<Vec<_>>());
    match ranks {
        [] => text::count(workers, "worker"),
        [_] => format!("{} (rank {ranks_text})", text::count(workers, "worker")),
        _ => format!("{} (ranks {ranks_text})", text::count(workers, "worker")),
    }
}

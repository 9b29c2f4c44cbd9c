//! `seqskew check`, `seqskew compare` and `seqskew summarize`: the commands that gate CI,
//! verify a fix, and hand big jobs to the browser as step logs.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use flate2::Compression;
use flate2::write::GzEncoder;
use seqskew_core::compare::compare;
use seqskew_core::export::{write_steplog_csv, write_steplog_jsonl};
use seqskew_core::text;

use crate::analyze::load;
use crate::input;

/// Exit codes of `check`.
const OK: u8 = 0;
/// The job straggles beyond the bound, or its logs or dumps show a failure.
const STRAGGLING: u8 = 1;
const UNUSABLE: u8 = 2;

/// `seqskew check --json` (`seqskew.check/1`).
#[derive(serde::Serialize)]
struct CheckOutput<'a> {
    schema: &'static str,
    ok: bool,
    slowdown: f64,
    max_slowdown: f64,
    primary: &'a str,
    headline: &'a str,
    /// What would make the verdict firmer (the report's `verdict.to_confirm`), when anything
    /// would: e.g. a pipeline whose micro-batches the traces do not name, which S cannot see.
    to_confirm: Option<&'a str>,
    /// The failure the logs or dumps show (the report's `failure`, in short), or `null`; added
    /// within `/1`. A failure makes `ok` false.
    failure: Option<CheckFailure<'a>>,
}

#[derive(serde::Serialize)]
struct CheckFailure<'a> {
    cause: &'a str,
    initiating_ranks: &'a [u32],
    collateral_ranks: &'a [u32],
    headline: &'a str,
}

/// Gates CI: 0 when the slowdown is within the bound and no log or dump shows a failure, 1
/// when the job straggles beyond it or failed, 2 when the input cannot be analysed.
pub fn check(paths: &[PathBuf], max_slowdown: f64, json: bool) -> Result<ExitCode, String> {
    let r = match load(paths) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("seqskew check: {e}");
            return Ok(ExitCode::from(UNUSABLE));
        }
    };
    let failure = r.failure.as_ref();
    let ok = r.slowdown.factor <= max_slowdown && failure.is_none();
    if json {
        let out = CheckOutput {
            schema: "seqskew.check/1",
            ok,
            slowdown: r.slowdown.factor,
            max_slowdown,
            primary: &r.verdict.primary,
            headline: &r.verdict.headline,
            to_confirm: r.verdict.to_confirm.as_deref(),
            failure: failure.map(|f| CheckFailure {
                cause: &f.cause,
                initiating_ranks: &f.initiating_ranks,
                collateral_ranks: &f.collateral_ranks,
                headline: &f.headline,
            }),
        };
        println!("{}", serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?);
    } else {
        if let Some(f) = failure {
            println!("FAILED ({}): {}", f.cause, f.headline);
        }
        if r.job.workers == 0 {
            // Logs and dumps only: there is no step to measure a slowdown on.
            if failure.is_none() {
                println!("ok: no failure found (and no training steps, so no straggler check)");
            }
        } else {
            let word = if r.slowdown.factor <= max_slowdown { "ok" } else { "STRAGGLING" };
            println!("{word}: S = {:.2} (bound {max_slowdown:.2}); {}", r.slowdown.factor, r.verdict.headline);
            if let Some(more) = &r.verdict.to_confirm {
                println!("note: {more}");
            }
        }
    }
    Ok(ExitCode::from(if ok { OK } else { STRAGGLING }))
}

pub fn compare_runs(before: &Path, after: &Path, max_slowdown: f64, json: bool) -> Result<ExitCode, String> {
    let b = load(&[before.to_path_buf()])?;
    let a = load(&[after.to_path_buf()])?;
    let c = compare(&b, &a, max_slowdown);
    if json {
        println!("{}", serde_json::to_string_pretty(&c).map_err(|e| e.to_string())?);
    } else {
        print!("{}", c.to_markdown());
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes the step-log form of the inputs: CSV when `out` ends in `.csv` (or `.csv.gz`), else JSON
/// Lines; gzipped when it ends in `.gz`; `-` for standard output.
pub fn summarize(paths: &[PathBuf], out: &Path) -> Result<ExitCode, String> {
    let files = input::expand(paths)?;
    let (summaries, assembled, progress) = input::read(&files);
    progress.suspend(|| {
        for d in summaries.iter().flat_map(|s| &s.diagnostics) {
            eprintln!("{d}");
        }
    });
    if assembled.job.workers.is_empty() {
        return Err("nothing to summarise: no file held training steps".into());
    }
    progress.then(format!("writing {}", out.display()));
    let name = out.to_string_lossy();
    let gz = name.ends_with(".gz");
    let csv = name.trim_end_matches(".gz").ends_with(".csv");
    let sink: Box<dyn Write> = if name == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(BufWriter::new(File::create(out).map_err(|e| format!("{}: {e}", out.display()))?))
    };
    let mut sink: Box<dyn Write> = if gz { Box::new(GzEncoder::new(sink, Compression::default())) } else { sink };
    let written =
        if csv { write_steplog_csv(&assembled.job, &mut sink) } else { write_steplog_jsonl(&assembled.job, &mut sink) };
    written.and_then(|()| sink.flush()).map_err(|e| format!("{}: {e}", out.display()))?;
    drop(sink);
    drop(progress);
    eprintln!(
        "summarised {}, {} into {}",
        text::count(assembled.job.workers.len(), "worker"),
        text::count(assembled.job.steps().len(), "step"),
        out.display()
    );
    input::free_in_background(assembled);
    Ok(ExitCode::SUCCESS)
}

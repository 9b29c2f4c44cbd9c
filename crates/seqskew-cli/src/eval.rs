//! `seqskew eval`: the labelled corpus, diagnosed; prints the confusion matrix and accuracy.

use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use seqskew_sim::eval::{Outcome, SCENARIOS, across_seeds, corpus, run_case, summarize};

/// Writes one case's files and truth to `dir`, to reproduce and inspect it.
pub fn dump(jobs: usize, seed: u64, id: usize, dir: &std::path::Path) -> Result<ExitCode, String> {
    let cases = corpus(jobs.max(id + 1), seed);
    let case = cases.get(id).ok_or_else(|| format!("no case {id}"))?;
    let steps: Vec<seqskew_sim::SimStep> = seqskew_sim::Simulation::new(case.config.clone(), true).collect();
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, bytes) in seqskew_sim::eval::write_files(case, &steps) {
        std::fs::write(dir.join(&name), bytes).map_err(|e| format!("{name}: {e}"))?;
    }
    let truth = seqskew_sim::truth(&case.config, &steps);
    let text = serde_json::to_string_pretty(&truth).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("truth.json"), text).map_err(|e| e.to_string())?;
    eprintln!(
        "case {id} ({}, {:?}): truth {} S = {:.3}; written to {}",
        case.scenario,
        case.format,
        truth.primary,
        truth.slowdown,
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Scores the corpus of each seed; with more than one, their summaries side by side too.
pub fn run(
    jobs: usize,
    seeds: std::ops::Range<u64>,
    families: &[String],
    json: Option<&std::path::Path>,
    verbose: bool,
) -> Result<ExitCode, String> {
    if let Some(unknown) = families.iter().find(|f| !SCENARIOS.contains(&f.as_str())) {
        return Err(format!("--family {unknown}: no such family (the corpus's: {})", SCENARIOS.join(", ")));
    }
    let mut runs = Vec::new();
    for seed in seeds.clone() {
        if seeds.end - seeds.start > 1 {
            println!("== seed {seed}");
        }
        let outcomes = outcomes(jobs, seed, families, verbose)?;
        let summary = summarize(&outcomes);
        print!("{}", summary.to_text());
        if let (Some(path), true) = (json, seed == seeds.start) {
            let text = serde_json::to_string_pretty(&(&summary, &outcomes)).map_err(|e| e.to_string())?;
            std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        runs.push((seed, summary));
    }
    if runs.len() > 1 {
        print!("\n{}", across_seeds(&runs));
    }
    Ok(ExitCode::SUCCESS)
}

/// Every case of the seed's corpus (of `families`, if any are named) diagnosed, on every core,
/// in case order.
fn outcomes(jobs: usize, seed: u64, families: &[String], verbose: bool) -> Result<Vec<Outcome>, String> {
    let mut cases = corpus(jobs, seed);
    if !families.is_empty() {
        cases.retain(|c| families.contains(&c.scenario));
    }
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Outcome>> = Mutex::new(Vec::with_capacity(cases.len()));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while let Some(case) = cases.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let o = run_case(case);
                    if verbose {
                        eprintln!(
                            "{:>4} {:<24} {:>5}w {:<12} truth {:<26} got {:<26} S {:.2}/{:.2}",
                            o.id,
                            o.scenario,
                            o.workers,
                            format!("{:?}", o.format),
                            o.truth,
                            o.predicted,
                            o.true_slowdown,
                            o.estimated_slowdown
                        );
                    }
                    if let Ok(mut v) = outcomes.lock() {
                        v.push(o);
                    }
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().map_err(|e| e.to_string())?;
    outcomes.sort_by_key(|o| o.id);
    Ok(outcomes)
}

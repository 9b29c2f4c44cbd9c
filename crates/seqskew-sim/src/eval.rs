//! The labelled corpus: synthetic jobs across causes, mixtures, scales, noise levels and input
//! formats, each written to the files a real job writes, imported, and diagnosed. The truth
//! comes from the simulator's counterfactual replays; the score is how often the diagnosis
//! names the truth's primary cause, and how close its slowdown S is to the true one.

use std::collections::BTreeMap;

use seqskew_core::analysis::diagnose;
use seqskew_core::export::{write_steplog_csv, write_steplog_jsonl};
use seqskew_core::import::{FileImport, assemble, import_bytes};
use serde::{Deserialize, Serialize};

use crate::config::{Batching, Comm, Config, Experts, LengthDist, Lengths, Packing, SlowWorker, Stalls};
use crate::engine::{Cause, Simulation};
use crate::job::to_job;
use crate::rng::Rng;
use crate::truth::truth;
use crate::write::chrome::ChromeWriter;
use crate::write::kineto::KinetoWriter;

/// The file format a case is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileFormat {
    /// One Kineto trace per rank, as Megatron-LM's look (no pipeline pass annotations).
    Kineto,
    /// The same traces as `torch.distributed.pipelining` writes them, each pass annotated
    /// ([`KinetoWriter::annotating_passes`]). The corpus does not pick it: its Kineto pipeline
    /// jobs stay the harder case, micro-batches unnamed.
    KinetoPipelining,
    Chrome,
    StepLogJsonl,
    StepLogCsv,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub id: usize,
    /// What was injected, for reading the results.
    pub scenario: String,
    pub config: Config,
    pub format: FileFormat,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub id: usize,
    pub scenario: String,
    pub format: FileFormat,
    pub workers: u32,
    pub reveal: Lengths,
    /// The verdict that is right: the truth's primary cause as the diagnosis names it
    /// ([`right_verdict`]).
    pub truth: String,
    /// The truth's second largest cause (or `balanced` near the bound), for ambiguous cases.
    pub runner_up: Option<String>,
    pub predicted: String,
    pub confidence: String,
    pub true_slowdown: f64,
    pub estimated_slowdown: f64,
    /// |estimated ideal − true ideal| / true ideal.
    pub ideal_error: f64,
    /// Lengths were revealed, so the what-ifs could run; the speedup the recommended balancer predicts.
    pub predicted_speedup: Option<f64>,
    /// The truth has no clear label: its two largest causes are within [`TIE`] of each other, or
    /// its slowdown is within [`NEAR_BOUND`] of the straggling bound.
    pub ambiguous: bool,
}

/// Causes whose shares differ by less than this are a tie.
pub const TIE: f64 = 0.10;
/// Slowdowns this close to the straggling bound could go either way.
pub const NEAR_BOUND: f64 = 0.02;

pub const SCENARIOS: [&str; 14] = [
    "seqlen-imbalance",
    "seqlen-imbalance-padded",
    "slow-worker",
    "stage-imbalance",
    "comm-jitter",
    "gc-stalls",
    "balanced",
    "mixed-imbalance-slow",
    "mixed-imbalance-stalls",
    "slow-workers",
    "slow-node",
    "sliding-window",
    "gpipe",
    "moe-expert-load",
];

/// `n` cases, deterministic for `seed`, cycling through the scenarios with varied scale,
/// noise, data, what the files reveal and their format.
pub fn corpus(n: usize, seed: u64) -> Vec<Case> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|id| {
            let scenario = SCENARIOS.get(id % SCENARIOS.len()).copied().unwrap_or("balanced");
            let mut r = rng.fork(id as u64);
            let config = case_config(scenario, &mut r, id as u64 ^ seed);
            let workers = config.workers();
            // Kineto traces (one file per rank) for the small jobs; a pipeline's stages come from
            // their send/recv calls' process groups.
            let format = match r.below(4) {
                0 if workers <= 16 => FileFormat::Kineto,
                0 | 1 => FileFormat::Chrome,
                2 => FileFormat::StepLogJsonl,
                _ => FileFormat::StepLogCsv,
            };
            // Large jobs go through step logs (what `seqskew summarize` would hand the analysis).
            let format = if workers > 256 { FileFormat::StepLogJsonl } else { format };
            Case { id, scenario: scenario.to_owned(), config, format }
        })
        .collect()
}

fn pick<T: Copy>(r: &mut Rng, items: &[T]) -> T {
    let i = r.below(items.len() as u64) as usize;
    items.get(i).or(items.first()).copied().unwrap_or_else(|| unreachable!("pick from an empty list"))
}

fn case_config(scenario: &str, r: &mut Rng, seed: u64) -> Config {
    // Scale: mostly small and medium jobs, a few very large ones.
    let dp = pick(r, &[2, 4, 8, 8, 16, 16, 32, 64, 128, 256, 1024]);
    let pp = if matches!(scenario, "stage-imbalance" | "gpipe") {
        pick(r, &[2, 4, 8])
    } else {
        pick(r, &[1, 1, 1, 2, 4, 8])
    };
    let dp = if dp * pp > 2048 { 2048 / pp } else { dp };
    let noise = if dp >= 256 { pick(r, &[0.01, 0.02]) } else { pick(r, &[0.01, 0.02, 0.04]) };
    let lengths = pick(
        r,
        &[
            LengthDist::LogNormal { mu: 6.0, sigma: 1.2 },
            LengthDist::LogNormal { mu: 6.5, sigma: 1.0 },
            LengthDist::Zipf { alpha: 1.8, min: 64.0 },
            LengthDist::Bimodal { short: 300.0, long: 6000.0, p_long: 0.04 },
        ],
    );
    let reveal = pick(r, &[Lengths::Exact, Lengths::Exact, Lengths::Shapes, Lengths::Hidden]);
    let micro_batches = if pp > 1 { 2 * pp } else { pick(r, &[1, 2, 4]) };
    let steps = if dp * pp >= 512 { 12 } else { pick(r, &[16, 24, 30]) };
    let balanced_data = pick(r, &[Batching::CostKk, Batching::CostLpt]);
    let base = Config {
        seed,
        dp,
        pp,
        steps,
        micro_batches,
        lengths,
        reveal,
        cost: crate::config::Cost { noise, ..crate::config::Cost::default() },
        batching: balanced_data,
        ..Config::default()
    };
    let slow = |r: &mut Rng| SlowWorker {
        dp: r.below(u64::from(dp)) as u32,
        pp: r.below(u64::from(pp)) as u32,
        factor: pick(r, &[1.3, 1.5, 1.8]),
    };
    match scenario {
        "seqlen-imbalance" => Config { batching: Batching::Random, ..base },
        "seqlen-imbalance-padded" => {
            Config { batching: Batching::Random, packing: Packing::Padded, docs_per_micro_batch: 8, ..base }
        }
        "slow-worker" => Config { slow_workers: vec![slow(r)], ..base },
        "stage-imbalance" => Config { last_stage_factor: pick(r, &[1.5, 1.8, 2.2]), ..base },
        "comm-jitter" => Config {
            comm: Comm { allreduce_ns: pick(r, &[60e6, 120e6]), jitter: pick(r, &[0.7, 1.0]), ..Comm::default() },
            ..base
        },
        "gc-stalls" => Config {
            stalls: Stalls {
                gc_probability: pick(r, &[0.5, 0.8]),
                gc_fraction: pick(r, &[0.5, 0.8]),
                ..Stalls::default()
            },
            ..base
        },
        "mixed-imbalance-slow" => Config { batching: Batching::Random, slow_workers: vec![slow(r)], ..base },
        // Several slow GPUs (two to four, anywhere), or a whole slow node: eight ranks in a row
        // of one stage, all as slow. Either is at most a quarter of the job (of the stage for a
        // node): slow is relative to healthy peers, and with half the workers slow the healthy
        // level is a guess (docs/simulator.md).
        "slow-workers" => {
            let count = (2 + r.below(3) as u32).min((dp * pp / 4).max(1));
            let mut workers: Vec<SlowWorker> = (0..count).map(|_| slow(r)).collect();
            workers.sort_by_key(|w| (w.pp, w.dp));
            workers.dedup_by_key(|w| (w.pp, w.dp));
            Config { slow_workers: workers, ..base }
        }
        "slow-node" => {
            let size = (dp / 4).clamp(1, 8);
            let first = r.below(u64::from(dp / size)) as u32 * size;
            let SlowWorker { pp, factor, .. } = slow(r);
            let workers = (first..first + size).map(|dp| SlowWorker { dp, pp, factor }).collect();
            Config { slow_workers: workers, ..base }
        }
        // Out of the diagnosis's model: attention over a sliding window, so a document's cost is
        // not a·L + b·L² (docs/simulator.md); the data dealt at random.
        "sliding-window" => {
            let cost = crate::config::Cost { attention_window: Some(pick(r, &[512, 1024, 2048])), ..base.cost.clone() };
            Config { batching: Batching::Random, cost, ..base }
        }
        // Out of the diagnosis's model: pipelines run GPipe, timed by the simulator's own code
        // (`schedule::gpipe`), with data dealt at random, a heavy last stage, a slow worker, or
        // nothing.
        "gpipe" => {
            let base = Config { schedule: crate::config::Schedule::Gpipe, ..base };
            match r.below(4) {
                0 => Config { batching: Batching::Random, ..base },
                1 => Config { last_stage_factor: pick(r, &[1.5, 1.8, 2.2]), ..base },
                2 => Config { slow_workers: vec![slow(r)], ..base },
                _ => base,
            }
        }
        // Out of the diagnosis's model: mixture-of-experts layers whose router sends 1.5 to 3
        // times an even share of the tokens to one expert, another each step (the data
        // cost-balanced): what a rank computes follows the routing, not its lengths. The files
        // list every length: with none, a rotating straggler is what uneven lengths would make
        // too (the report says so), and the family would test nothing the files could show.
        "moe-expert-load" => {
            let experts = Experts { share_of_tokens_cost: pick(r, &[0.5, 0.7]), hot_load: pick(r, &[1.5, 2.0, 3.0]) };
            let cost = crate::config::Cost { experts: Some(experts), ..base.cost.clone() };
            Config { cost, reveal: Lengths::Exact, ..base }
        }
        "mixed-imbalance-stalls" => Config {
            batching: Batching::Random,
            stalls: Stalls { gc_probability: 0.5, gc_fraction: 0.4, ..Stalls::default() },
            ..base
        },
        _ => base,
    }
}

/// Writes the case's files in memory.
pub fn write_files(case: &Case, steps: &[crate::engine::SimStep]) -> Vec<(String, Vec<u8>)> {
    let c = &case.config;
    match case.format {
        FileFormat::Chrome => {
            let out = ChromeWriter::new(c, Vec::new()).and_then(|mut w| {
                for s in steps {
                    w.step(s)?;
                }
                w.finish()
            });
            vec![("job.trace.json".into(), out.unwrap_or_default())]
        }
        FileFormat::Kineto | FileFormat::KinetoPipelining => {
            let writer = KinetoWriter::new(c, vec![Vec::new(); c.workers() as usize]);
            let annotated = case.format == FileFormat::KinetoPipelining;
            let writer = writer.map(|w| if annotated { w.annotating_passes() } else { w });
            let outs = writer.and_then(|mut w| {
                for s in steps {
                    w.step(s)?;
                }
                w.finish()
            });
            outs.unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(r, b)| (format!("rank{r}.pt.trace.json"), b))
                .collect()
        }
        FileFormat::StepLogJsonl | FileFormat::StepLogCsv => {
            let job = to_job(c, steps);
            let mut out = Vec::new();
            let written = if case.format == FileFormat::StepLogCsv {
                write_steplog_csv(&job, &mut out)
            } else {
                write_steplog_jsonl(&job, &mut out)
            };
            let name = if case.format == FileFormat::StepLogCsv { "steps.csv" } else { "steps.jsonl" };
            written.map(|()| vec![(name.to_owned(), out)]).unwrap_or_default()
        }
    }
}

/// The verdict that is right for a cause of the truth: the diagnosis's name for it, or
/// `inconclusive` for a cause it has no name for (a hot expert: the report is to say that
/// compute varies with something other than the lengths, and what to record).
pub fn right_verdict(cause: &str) -> &str {
    if cause == Cause::ExpertLoad.name() { "inconclusive" } else { cause }
}

/// Simulates, writes, imports and diagnoses one case.
pub fn run_case(case: &Case) -> Outcome {
    let steps: Vec<crate::engine::SimStep> = Simulation::new(case.config.clone(), true).collect();
    let t = truth(&case.config, &steps);
    let files = write_files(case, &steps);
    let imports: Vec<FileImport> = files.iter().map(|(n, b)| import_bytes(n, b)).collect();
    let assembled = assemble(&imports);
    let summaries: Vec<_> = imports.iter().map(FileImport::summary).collect();
    let r = &diagnose(&assembled, &summaries);
    let ideal_error =
        if t.ideal_step_s > 0.0 { (r.slowdown.ideal_step_s - t.ideal_step_s).abs() / t.ideal_step_s } else { 0.0 };
    let predicted_speedup =
        r.whatif.iter().find(|w| w.method == "karmarkar_karp" || w.method == "lpt").map(|w| w.speedup);
    let near_bound = (t.slowdown - crate::truth::STRAGGLING).abs() < NEAR_BOUND;
    let tie = matches!((t.causes.first(), t.causes.get(1)), (Some(a), Some(b)) if a.share - b.share < TIE);
    let ambiguous = near_bound || (tie && t.slowdown >= crate::truth::STRAGGLING);
    Outcome {
        id: case.id,
        scenario: case.scenario.clone(),
        format: case.format,
        workers: case.config.workers(),
        reveal: case.config.reveal,
        runner_up: if near_bound {
            Some(if t.primary == "balanced" {
                t.causes.first().map_or_else(|| "balanced".to_owned(), |c| c.cause.clone())
            } else {
                "balanced".to_owned()
            })
        } else {
            t.causes.get(1).map(|c| right_verdict(&c.cause).to_owned())
        },
        truth: right_verdict(&t.primary).to_owned(),
        predicted: r.verdict.primary.clone(),
        confidence: r.verdict.confidence.clone(),
        true_slowdown: t.slowdown,
        estimated_slowdown: r.slowdown.factor,
        ideal_error,
        predicted_speedup,
        ambiguous,
    }
}

/// Scores over the outcomes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub cases: usize,
    /// Cases whose truth has a clear label (see [`Outcome::ambiguous`]); the accuracies, the
    /// per-cause counts and the confusion matrix are over these.
    pub clear: usize,
    pub accuracy: f64,
    /// Over every case, ambiguous ones included.
    pub accuracy_all: f64,
    /// Share of ambiguous cases whose diagnosis names one of the truth's two largest causes.
    pub ambiguous_top_two: f64,
    /// Per true cause: (cases, correctly diagnosed).
    pub per_cause: BTreeMap<String, (usize, usize)>,
    /// Per family (the scenario a case was made from): (cases, correctly diagnosed).
    #[serde(default)]
    pub per_family: BTreeMap<String, (usize, usize)>,
    /// (true, predicted) → count.
    pub confusion: BTreeMap<String, BTreeMap<String, usize>>,
    /// Share of the clearly labelled cases whose ideal step is within 10% of the truth's.
    pub ideal_within_10pct: f64,
    /// The median of their ideal step's error.
    pub ideal_error_median: f64,
}

pub fn summarize(outcomes: &[Outcome]) -> Summary {
    let mut s = Summary { cases: outcomes.len(), ..Summary::default() };
    let mut correct = 0;
    let mut errors: Vec<f64> = Vec::new();
    let all_correct = outcomes.iter().filter(|o| o.truth == o.predicted).count();
    s.accuracy_all = all_correct as f64 / outcomes.len().max(1) as f64;
    let ambiguous: Vec<&Outcome> = outcomes.iter().filter(|o| o.ambiguous).collect();
    s.ambiguous_top_two = ambiguous
        .iter()
        .filter(|o| o.truth == o.predicted || o.runner_up.as_deref() == Some(o.predicted.as_str()))
        .count() as f64
        / ambiguous.len().max(1) as f64;
    for o in outcomes.iter().filter(|o| !o.ambiguous) {
        s.clear += 1;
        let ok = o.truth == o.predicted;
        correct += usize::from(ok);
        for e in [s.per_cause.entry(o.truth.clone()).or_default(), s.per_family.entry(o.scenario.clone()).or_default()]
        {
            e.0 += 1;
            e.1 += usize::from(ok);
        }
        *s.confusion.entry(o.truth.clone()).or_default().entry(o.predicted.clone()).or_default() += 1;
        errors.push(o.ideal_error);
    }
    s.accuracy = correct as f64 / s.clear.max(1) as f64;
    s.ideal_within_10pct = errors.iter().filter(|&&e| e <= 0.10).count() as f64 / errors.len().max(1) as f64;
    errors.sort_by(f64::total_cmp);
    s.ideal_error_median = errors.get(errors.len() / 2).copied().unwrap_or(0.0);
    s
}

fn share(correct: usize, cases: usize) -> f64 {
    correct as f64 / cases.max(1) as f64
}

/// Several seeds' summaries side by side: overall, per cause and per family, each seed's
/// accuracy and the worst of them, and the worst cause and family over every seed.
pub fn across_seeds(runs: &[(u64, Summary)]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let seeds: Vec<String> = runs.iter().map(|(seed, _)| format!("seed {seed}")).collect();
    let _ = writeln!(o, "accuracy over jobs with a clear label, {} seeds", runs.len());
    let _ = writeln!(o, "{:>28}  {}   worst", "", seeds.iter().map(|s| format!("{s:>8}")).collect::<String>());
    let mut worst_row: Option<(f64, String)> = None;
    let mut row = |o: &mut String, name: &str, cells: Vec<Option<(usize, usize)>>, rank: bool| {
        let shares: Vec<f64> = cells.iter().flatten().map(|&(n, ok)| share(ok, n)).collect();
        let worst = shares.iter().copied().fold(f64::INFINITY, f64::min);
        let text: String = cells
            .iter()
            .map(|c| c.map_or(format!("{:>8}", "-"), |(n, ok)| format!("{:>7.1}%", share(ok, n) * 100.0)))
            .collect();
        let _ = writeln!(o, "{name:>28}  {text}  {:>6.1}%", worst * 100.0);
        if rank && worst.is_finite() && worst_row.as_ref().is_none_or(|w| worst < w.0) {
            worst_row = Some((worst, name.to_owned()));
        }
    };
    row(
        &mut o,
        "all",
        runs.iter().map(|(_, s)| Some((s.clear, (s.accuracy * s.clear as f64).round() as usize))).collect(),
        false,
    );
    for (title, pick) in [
        ("per cause", (|s: &Summary| &s.per_cause) as fn(&Summary) -> &BTreeMap<String, (usize, usize)>),
        ("per family", |s: &Summary| &s.per_family),
    ] {
        let _ = writeln!(o, "{title}:");
        let mut names: Vec<&String> = runs.iter().flat_map(|(_, s)| pick(s).keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            row(&mut o, name, runs.iter().map(|(_, s)| pick(s).get(name).copied()).collect(), true);
        }
    }
    if let Some((worst, name)) = worst_row {
        let _ = writeln!(o, "worst: {name} at {:.1}%", worst * 100.0);
    }
    o
}

impl Summary {
    /// The confusion matrix and per-cause accuracy as text.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let mut names: Vec<&String> =
            self.confusion.keys().chain(self.confusion.values().flat_map(|m| m.keys())).collect();
        names.sort();
        names.dedup();
        let short = |n: &str| -> String { n.split('_').map(|w| w.chars().next().unwrap_or('?')).collect() };
        let _ = writeln!(o, "confusion over jobs with a clear label (rows: truth, columns: diagnosis)");
        let _ = write!(o, "{:>28}", "");
        for n in &names {
            let _ = write!(o, "{:>6}", short(n));
        }
        let _ = writeln!(o);
        for t in &names {
            let _ = write!(o, "{t:>28}");
            for p in &names {
                let c = self.confusion.get(*t).and_then(|m| m.get(*p)).copied().unwrap_or(0);
                let _ = write!(o, "{c:>6}");
            }
            let _ = writeln!(o);
        }
        for (title, table) in [("cause: truth", &self.per_cause), ("family: scenario", &self.per_family)] {
            let _ = writeln!(o, "\nper {title} → correct / cases");
            for (name, &(n, ok)) in table {
                let _ = writeln!(o, "{name:>28}  {ok:>4} / {n:<4} {:5.1}%", share(ok, n) * 100.0);
            }
        }
        let _ = writeln!(
            o,
            "\nprimary-cause accuracy {:.1}% over the {} jobs with a clear label ({:.1}% over all {}; the {} ambiguous ones, near-ties or at the bound, name one of the truth's top two causes in {:.1}%)",
            self.accuracy * 100.0,
            self.clear,
            self.accuracy_all * 100.0,
            self.cases,
            self.cases - self.clear,
            self.ambiguous_top_two * 100.0
        );
        let _ = writeln!(
            o,
            "ideal step within 10% of the truth in {:.1}% of the jobs with a clear label (median error {:.1}%)",
            self.ideal_within_10pct * 100.0,
            self.ideal_error_median * 100.0
        );
        o
    }
}

//! The diagnosis: from a job model to a verdict with its evidence, the slowdown and what the
//! fix would win. Pure; the CLI and the browser run the same code.
//!
//! table ([`frame`]) → replay and attribution ([`replay`]) → cost model ([`costmodel`]) →
//! signals ([`signals`]) → what-ifs ([`whatif`]) → verdict and fix ([`verdict`]) → report, plus
//! the series the app plots ([`views`]).

pub mod costmodel;
pub mod frame;
#[cfg(feature = "failure")]
pub mod logged;
pub mod par;
pub mod pipeline_order;
pub mod replay;
pub mod samples;
pub mod signals;
pub mod slots;
pub mod slow_workers;
pub mod stats;
pub mod verdict;
pub mod views;
pub mod whatif;

use crate::import::{Assembled, FileSummary};
use crate::model::{Job, SequenceKnowledge};
use crate::report::{
    self, CostModel, Initiators, Input, JobInfo, Report, SlowWorker, Slowdown, Straggler, WhatIf, round,
};

/// The report and what the views plot.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Analysis {
    pub report: Report,
    pub views: views::Views,
}

fn cost_model(fit: &costmodel::Fit) -> CostModel {
    CostModel {
        c0_s: round(fit.c0 / 1e9, 4),
        per_doc_s: round(fit.per_doc / 1e9, 4),
        per_token_s: round(fit.per_token / 1e9, 4),
        per_token_sq_s: round(fit.per_token_sq / 1e9, 4),
        r2: round(fit.r2, 4),
        quadratic_share: round(fit.quadratic_share, 4),
        samples: fit.samples,
        micro_batch: None,
    }
}

/// The command that verifies a fix, given what was analysed.
fn verify_command(inputs: &[FileSummary]) -> String {
    let before = match inputs {
        [one] => one.path.clone(),
        _ => common_directory(inputs).unwrap_or_else(|| "BEFORE/".into()),
    };
    format!("seqskew compare {before} AFTER/ && seqskew check AFTER/ --max-slowdown {:.2}", verdict::STRAGGLING)
}

fn common_directory(inputs: &[FileSummary]) -> Option<String> {
    let dirs: Vec<&str> = inputs.iter().map(|i| i.path.rsplit_once('/').map_or(".", |(d, _)| d)).collect();
    let first = *dirs.first()?;
    dirs.iter().all(|d| *d == first).then(|| format!("{first}/"))
}

/// [`report::peers_missing`] of the job: the loaded workers against the ranks the traces say
/// the job had.
pub fn peers_missing(job: &Job) -> Option<String> {
    report::peers_missing(job.workers.len(), job.world_size())
}

/// What the logs and dumps say about a failure (none in a build without their readers).
fn failure_of(assembled: &Assembled) -> Option<report::Failure> {
    #[cfg(feature = "failure")]
    return crate::failure::diagnose(&assembled.failures);
    #[cfg(not(feature = "failure"))]
    {
        let _ = assembled;
        None
    }
}

/// Without per-rank times (a training log, a step log of lengths and step times only), the
/// report as step times alone can make it ([`logged`]). Part of the `failure` feature (the
/// log readers): the browser's analysis worker leaves it to the failure worker.
fn from_step_times(report: &Report, assembled: &Assembled) -> Option<Report> {
    #[cfg(feature = "failure")]
    return logged::step_times(&assembled.job, &assembled.failures)
        .map(|times| logged::report(report.clone(), &assembled.job, &times));
    #[cfg(not(feature = "failure"))]
    {
        let _ = (report, assembled);
        None
    }
}

/// The report of inputs with no training steps (logs and dumps only): no straggler verdict,
/// and a verification command from the failure diagnosis when there is one.
fn without_steps(report: Report) -> Report {
    let headline = match &report.failure {
        Some(_) => {
            "No training steps in the inputs (logs and dumps only): no straggler verdict; the failure is diagnosed above"
        }
        None => "No training steps in the inputs: no straggler verdict, and the logs show no failure",
    };
    let verify_command = report.failure.as_ref().map(|f| f.verify_command.clone()).unwrap_or_default();
    Report {
        verdict: report::Verdict {
            primary: "inconclusive".into(),
            confidence: "low".into(),
            headline: headline.into(),
            to_confirm: Some(
                "a profiler trace or a step log of the job (see docs/capture.md) gives the straggler verdict".into(),
            ),
            ..report::Verdict::default()
        },
        signals: Vec::new(),
        fix: report::Fix { summary: "See the failure's fix.".into(), ..report::Fix::default() },
        verify_command,
        ..report
    }
}

/// Analyses an assembled job: the report, and the views the app plots. `inputs` are the files
/// it came from (for the report).
pub fn analyze(assembled: &Assembled, inputs: &[FileSummary]) -> Analysis {
    run(assembled, inputs, Wanted::ReportAndViews)
}

/// The report alone, as [`analyze`] makes it: what the command line prints. The views, which
/// only the app plots, are a pass over the whole table of their own, left out.
pub fn diagnose(assembled: &Assembled, inputs: &[FileSummary]) -> Report {
    run(assembled, inputs, Wanted::Report).report
}

/// What an analysis makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wanted {
    ReportAndViews,
    Report,
}

fn run(assembled: &Assembled, inputs: &[FileSummary], wanted: Wanted) -> Analysis {
    let job = &assembled.job;
    let frame = frame::build(job);
    let samples = samples::take(&frame);
    // The two fits are independent and each runs on one core: side by side.
    let mut fits =
        par::map(2, 1, |i| costmodel::fit(if i == 0 { &samples.cell_costs } else { &samples.micro_batch_costs }));
    let (mb_fit, ws_fit) = (fits.pop().flatten(), fits.pop().flatten());
    let steps = slots::FromFrame::new(&frame, ws_fit.as_ref(), mb_fit.as_ref());
    let factors = replay::factors(&steps);
    let attribution = replay::attribute(&steps, &factors);
    let initiators = signals::initiators(&frame);

    // With a cost model, the sequence share is what the data alone would cost (noise excluded).
    let gains = &attribution.gains;
    let sequence = gains.data_compute.unwrap_or(gains.residual_compute);
    let deltas = [gains.stage, gains.worker, sequence, gains.residual_stalls, gains.transfers];
    let total: f64 = deltas.iter().sum();
    let shares = deltas.map(|d| if total > 0.0 { d / total } else { 0.0 });
    let slowdown = if attribution.ideal > 0.0 { attribution.actual / attribution.ideal } else { 1.0 };
    let replay_fidelity = if attribution.measured > 0.0 { attribution.actual / attribution.measured } else { 1.0 };
    let median_ops_factor = (attribution.median_ops > 0.0).then(|| attribution.actual / attribution.median_ops);

    let lengths_known = frame.knowledge > SequenceKnowledge::Unknown;
    let peers_missing = peers_missing(job);
    let signals = signals::all(&signals::Inputs {
        frame: &frame,
        samples: &samples,
        attribution: &attribution,
        factors: &factors,
        fit: ws_fit.as_ref(),
        initiators: &initiators,
        shares,
        slowdown,
        peers_missing: peers_missing.as_deref(),
    });

    // Rebalancing what-ifs need every document's length and a usable cost model.
    let predictive = mb_fit.filter(costmodel::Fit::usable).or(ws_fit.filter(costmodel::Fit::usable));
    let whatifs = match (frame.knowledge >= SequenceKnowledge::DenseShapes, predictive.as_ref()) {
        (true, Some(fit)) => whatif::what_ifs(job, &frame, &steps, &mb_fit.filter(|f| f.usable()).unwrap_or(*fit)),
        _ => whatif::WhatIfs::default(),
    };

    let top = stats::tally(initiators.iter().map(|i| i.worker));
    let dominance = top.first().map_or(0.0, |t| t.1 as f64 / initiators.len().max(1) as f64);
    let label = |w: usize| frame.slots.get(w).map_or_else(String::new, |s| s.label.clone());
    let slowest_worker = factors
        .worker
        .iter()
        .enumerate()
        .flat_map(|(p, row)| row.iter().enumerate().map(move |(d, &f)| (p, d, f)))
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .and_then(|(p, d, f)| frame.slots.iter().position(|s| s.stage == p && s.dp == d).map(|w| (label(w), f)));
    let slowest_worker = top
        .first()
        .filter(|_| dominance >= 0.5)
        .map(|&(w, _)| {
            let f = frame
                .slots
                .get(w)
                .and_then(|s| factors.worker.get(s.stage).and_then(|r| r.get(s.dp)))
                .copied()
                .unwrap_or(1.0);
            // A worker slow by stalls has a compute factor near 1: express its slowness as work.
            let works: Vec<f64> = initiators.iter().filter(|i| i.worker == w).map(|i| i.excess).collect();
            // One pass over the work columns (as `Iterator::sum`, from negative zero).
            let (total, count) = frame.works().fold((-0.0, 0usize), |(t, n), w| (t + w as f64, n + 1));
            let mean_work = total / count.max(1) as f64;
            let by_work = if mean_work > 0.0 { 1.0 + stats::median(&works) / mean_work } else { 1.0 };
            (label(w), f.max(by_work))
        })
        .or(slowest_worker);
    let slow = slow_workers::find(&frame, &factors, job);
    // The share of steps a slow worker led (one of two equally slow GPUs leads about half).
    let slow_ranks: Vec<u32> = slow.iter().map(|w| w.rank).collect();
    let led_by_slow =
        initiators.iter().filter(|i| frame.slots.get(i.worker).is_some_and(|s| slow_ranks.contains(&s.rank))).count()
            as f64
            / initiators.len().max(1) as f64;
    let heaviest_stage = factors.stage.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(p, &g)| (p, g));
    let placed = || job.workers.iter().zip(&frame.slots).map(|(w, slot)| (w, slot.stage));
    let heaviest_stage_chunks =
        heaviest_stage.map(|(p, _)| pipeline_order::chunks_of_stage(placed(), p)).unwrap_or_default();
    let facts = verdict::Facts {
        slowdown,
        shares,
        signals: &signals,
        lengths_known,
        stages: frame.stages,
        top_initiator: top.first().map(|&(w, _)| (label(w), dominance)),
        distinct_initiators: top.len(),
        slowest_worker,
        slow_workers: slow_workers::describe(&slow, job).map(|named| (named, led_by_slow)),
        heaviest_stage,
        heaviest_stage_chunks,
        fit: ws_fit.as_ref().or(mb_fit.as_ref()),
        whatifs: &whatifs,
        peers_missing: peers_missing.as_deref(),
        unseen_micro_batches: (frame.stages > 1 && !frame.has_micro_batches()).then_some(replay_fidelity),
        unknown_placement: frame.unknown_placement.then_some(replay_fidelity),
        ranks_not_loaded: report::larger_world(job.workers.len(), job.world_size()).is_some(),
        data_explains: match (gains.data_compute, gains.unexplained_compute) {
            (Some(d), Some(u)) if d + u > 0.0 => Some(d / (d + u)),
            _ => None,
        },
        unexplained_compute: gains.unexplained_compute.map_or(0.0, |u| if total > 0.0 { u / total } else { 0.0 }),
    };
    let verdict = verdict::decide(&facts);
    let fix = verdict::fix(&verdict, &facts);

    let n_steps = frame.steps.len().max(1) as f64;
    let actual_step = attribution.measured / n_steps / 1e9;
    let ideal_step = actual_step / slowdown.max(1e-9);
    let by_cause = if slowdown > 1.0 {
        let mut v: Vec<report::CauseShare> = verdict::RESTORATIONS
            .iter()
            .zip(shares)
            .filter(|&(c, sh)| sh > 0.005 && (*c != "pipeline_stage_imbalance" || frame.stages > 1))
            .map(|(&c, sh)| report::CauseShare { cause: c.into(), share: round(sh, 3) })
            .collect();
        v.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.cause.cmp(&b.cause)));
        v
    } else {
        Vec::new()
    };
    let current = whatifs.predictions.first().map_or(0.0, |p| p.total);
    let whatif = whatifs
        .predictions
        .iter()
        .map(|p| WhatIf {
            method: p.method.into(),
            predicted_step_s: round(
                p.total / whatifs.steps.max(1) as f64 / 1e9 * (attribution.measured / attribution.actual.max(1.0)),
                4,
            ),
            speedup: round(if p.total > 0.0 { current / p.total } else { 1.0 }, 4),
            imbalance: round(p.imbalance, 4),
        })
        .collect();
    let mut cost = ws_fit.as_ref().map(cost_model);
    if let (Some(c), Some(m)) = (cost.as_mut(), mb_fit.as_ref()) {
        c.micro_batch = Some(Box::new(cost_model(m)));
    }
    let report = Report {
        schema: report::SCHEMA.into(),
        tool: report::Tool { name: "seqskew".into(), version: env!("CARGO_PKG_VERSION").into() },
        inputs: inputs
            .iter()
            .map(|i| Input {
                path: i.path.clone(),
                format: i.format.map(|f| f.name().to_owned()),
                workers: i.workers,
                steps: i.steps,
                diagnostics: i.diagnostics.clone(),
            })
            .collect(),
        job: JobInfo {
            workers: job.workers.len(),
            steps: frame.steps.len(),
            dp: frame.dp_size,
            pp: frame.stages,
            has_sequence_lengths: lengths_known,
            sequence_knowledge: frame.knowledge.name().into(),
            world_size: job.world_size(),
            first_step: frame.steps.first().copied(),
            last_step: frame.steps.last().copied(),
            diagnostics: assembled.diagnostics.clone(),
            step_times: None,
        },
        slowdown: Slowdown {
            actual_step_s: round(actual_step, 5),
            ideal_step_s: round(ideal_step, 5),
            factor: round(slowdown, 4),
            time_lost_s: round((actual_step - ideal_step).max(0.0) * n_steps, 4),
            by_cause,
            replay_fidelity: round(replay_fidelity, 4),
            median_ops_factor: median_ops_factor.map(|m| round(m, 4)),
        },
        signals: signals.clone(),
        cost_model: cost,
        whatif,
        stragglers: initiators
            .iter()
            .map(|i| Straggler {
                step: i.step,
                worker: frame.slots.get(i.worker).map_or(0, |s| s.rank),
                excess_s: round(i.excess / 1e9, 4),
            })
            .collect(),
        initiators: Initiators {
            dominance: round(dominance, 4),
            distinct: top.len(),
            top: top.iter().take(5).map(|&(w, c)| (frame.slots.get(w).map_or(0, |s| s.rank), c)).collect(),
        },
        slow_workers: slow.into_iter().map(|w| SlowWorker { factor: round(w.factor, 3), ..w }).collect(),
        verdict,
        fix,
        verify_command: verify_command(inputs),
        failure: failure_of(assembled),
    };
    let mut report = match from_step_times(&report, assembled) {
        Some(report) => report,
        None if job.workers.is_empty() => without_steps(report),
        None => report,
    };
    // The views say where a failing rank stopped: built for the report too when it has a failure.
    if wanted == Wanted::Report && (report.failure.is_none() || job.workers.is_empty()) {
        return Analysis { report, views: views::Views::default() };
    }
    let ideal_per_step: Vec<f64> = attribution
        .per_step
        .iter()
        .map(|s| if s.actual > 0.0 { s.measured * s.ideal / s.actual } else { 0.0 })
        .collect();
    let views = views::build(&frame, &ideal_per_step, ws_fit.as_ref(), &initiators);
    if let Some(failure) = report.failure.as_mut() {
        failure.in_job = crate::failure::in_job::in_job(failure, &views);
    }
    if wanted == Wanted::Report {
        return Analysis { report, views: views::Views::default() };
    }
    Analysis { report, views }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Worker;

    #[test]
    fn collectives_cannot_be_split_without_every_rank() {
        let job = |ranks: &[u32], world: Option<u32>| Job {
            workers: ranks.iter().map(|&rank| Worker { rank, world_size: world, ..Worker::default() }).collect(),
        };
        let cases = [
            (job(&[3], Some(4)), Some("only 1 of the job's 4 ranks is loaded")),
            (job(&[0, 2], Some(4)), Some("only 2 of the job's 4 ranks are loaded")),
            (job(&[0], None), Some("only one rank is loaded")),
            (job(&[0, 1], Some(2)), None),
            (job(&[0, 1], None), None),
            // Rank 1 is not loaded, but as many ranks as the job had are: the traces disagree
            // about the job, and the report (which knows only the counts) says nothing missing.
            (job(&[0, 5], Some(2)), None),
        ];
        for (job, expected) in cases {
            assert_eq!(
                peers_missing(&job).as_deref(),
                expected,
                "{:?}",
                job.workers.iter().map(|w| w.rank).collect::<Vec<_>>()
            );
        }
    }
}

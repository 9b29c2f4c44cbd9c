//! Verdicts from step times alone: a training log's iteration lines (or a step log with the
//! job's step time and no per-rank compute), joined by step number with a record of the
//! lengths each rank drew.
//!
//! A log has the job's step time, not each rank's compute, so no replay can run. What the
//! data can still tell: whether the step time follows the costliest shard (a fit of step time
//! ≈ c₀ + the heaviest shard's a·tokens + b·Σ L²), what the same documents would take dealt
//! evenly by that cost, whether the costliest shard moves from rank to rank, and (from
//! Megatron-LM's straggler lines) whether one rank is the slowest interval after interval.
//! Confidence is never high: a rank slow for another reason would look the same in a log.

pub mod fit;
pub mod times;

use std::collections::BTreeMap;

use super::signals::{not_applicable, signal};
use super::stats::tally;
use super::verdict::{self, STRAGGLING};
use crate::diag::{Diagnostic, Severity};
use crate::model::Job;
use crate::report::{CauseShare, Fix, Initiators, Report, Signal, SlowWorker, Slowdown, Straggler, Verdict, round};
use times::{Source, StepTimes};

/// At least this many intervals name their slowest rank before one is called persistent.
const MIN_EXTREMES: usize = 3;
/// A rank slowest in at least this share of the intervals is persistently slow.
const PERSISTENT: f64 = 0.6;
/// The fit explains the step time well enough to weigh its predictions.
const GOOD_FIT: f64 = 0.5;
/// At most this share of the measured step is put down to the data (a fit extrapolating
/// beyond it would make the ideal step vanish).
const MAX_LOST: f64 = 0.9;
/// How much better a fit must explain the step time for another numbering to be named.
const CLEARLY_BETTER: f64 = 0.2;

/// What a log cannot tell, said with every verdict drawn from one.
const WHAT_A_LOG_CANNOT_TELL: &str = "A log has the job's step time, not each rank's compute: a profiler trace of 5–10 steps on every rank (docs/capture.md) shows which rank computed longest and confirms the cause.";

/// The step times to judge the job by, when the job has no per-rank time breakdown (no
/// traces): the logs' iteration lines, else the step log's own step times (possibly none).
pub fn step_times(job: &Job, evidence: &[crate::failure::evidence::FileEvidence]) -> Option<StepTimes> {
    if job.workers.iter().any(crate::model::Worker::has_breakdown) {
        return None;
    }
    times::from_logs(evidence).or_else(|| times::from_job(job))
}

/// The report's verdict, slowdown, signals and fix from step times alone (the rest of
/// `report`, its inputs and job, is kept).
pub fn report(report: Report, job: &Job, times: &StepTimes) -> Report {
    let shards = fit::shards(job);
    let found = Found {
        times,
        lengths: !shards.is_empty(),
        ranks_with_lengths: job.workers.iter().filter(|w| w.steps.iter().any(|s| s.sequences.is_known())).count(),
        step_fit: fit::fit(&times.intervals, &shards).filter(|d| d.fit.usable()),
        rank_fit: fit::rank_fit(&times.extremes, &shards),
        bound: fit::data_imbalance_bound(&shards),
        slowest: Slowest::of(times),
    };
    let slowdown = found.slowdown(&shards);
    let (verdict, fix) = decide(&found, &slowdown, found.signals(), &shards);
    let steps = times::covered_steps(&times.intervals);
    let stragglers = times
        .extremes
        .iter()
        .filter_map(|e| {
            let excess = e.slowest.1.saturating_sub(e.fastest.1);
            Some(Straggler { step: e.steps?.1, worker: e.slowest.0, excess_s: round(excess as f64 / 1e9, 4) })
        })
        .collect();
    let slow_workers = match (&found.slowest, verdict.primary.as_str()) {
        (Some(s), "slow_worker") => vec![SlowWorker { rank: s.rank, factor: round(s.ratio, 3), host: None }],
        _ => Vec::new(),
    };
    let mut job_info = report.job;
    job_info.diagnostics.extend(join_problem(times, &shards));
    job_info.steps = usize::try_from(steps).unwrap_or(usize::MAX);
    job_info.first_step = times.intervals.first().map(|i| i.first);
    job_info.last_step = times.intervals.iter().map(|i| i.last).max();
    job_info.step_times = Some(times.source.name().to_owned());
    Report {
        job: job_info,
        slowdown,
        signals: verdict.evidence.clone(),
        cost_model: None,
        whatif: Vec::new(),
        stragglers,
        initiators: found.slowest.as_ref().map(Slowest::initiators).unwrap_or_default(),
        slow_workers,
        verdict,
        fix,
        ..report
    }
}

/// What the step times and the lengths show.
struct Found<'a> {
    times: &'a StepTimes,
    /// Whether two or more ranks' lengths were given for some step.
    lengths: bool,
    /// How many ranks' lengths were given at all.
    ranks_with_lengths: usize,
    /// Step time against the heaviest shard's cost, when usable.
    step_fit: Option<fit::DataFit>,
    /// The straggler lines' ranks against what they drew, when usable.
    rank_fit: Option<fit::RankFit>,
    /// The most the lengths could make one rank take over the mean ([`fit::data_imbalance_bound`]).
    bound: Option<f64>,
    slowest: Option<Slowest>,
}

/// What is wrong with the join of the log and the lengths by step number, when something is:
/// most logged steps have no lengths, or the step time follows the lengths clearly better with
/// one side's numbers moved by one (one side counts from 0, the other from 1). Said, not
/// corrected: the verdict keeps the numbers as given.
fn join_problem(times: &StepTimes, shards: &BTreeMap<u64, Vec<fit::Shard>>) -> Option<Diagnostic> {
    if times.source != Source::TrainingLog {
        return None;
    }
    let (Some(&first), Some(&last)) = (shards.keys().next(), shards.keys().next_back()) else { return None };
    let logged: Vec<u64> = times.intervals.iter().flat_map(|i| i.first..=i.last).take(1 << 20).collect();
    let (Some(&low), Some(&high)) = (logged.iter().min(), logged.iter().max()) else { return None };
    let covered = logged.iter().filter(|s| shards.contains_key(s)).count() as f64 / logged.len() as f64;
    if covered < 0.5 {
        return Some(Diagnostic::new(
            Severity::Warning,
            "",
            None,
            format!(
                "the log's steps {low}–{high} and the lengths' steps {first}–{last} share only {:.0}% of the logged steps: the two are joined by step number",
                covered * 100.0
            ),
        ));
    }
    // The lengths' step k taken as the log's k + shift: the log's steps moved by −shift.
    let r2 = |shift: i64| {
        let moved: Vec<times::Interval> = times
            .intervals
            .iter()
            .filter_map(|i| {
                let first = i.first.checked_add_signed(-shift)?;
                Some(times::Interval { first, last: i.last.checked_add_signed(-shift)?, ..*i })
            })
            .collect();
        fit::fit(&moved, shards).filter(|d| d.fit.usable()).map_or(0.0, |d| d.fit.r2)
    };
    let here = r2(0);
    let (shift, better) = [-1i64, 1].into_iter().map(|s| (s, r2(s))).max_by(|a, b| a.1.total_cmp(&b.1))?;
    (better >= GOOD_FIT && better >= here + CLEARLY_BETTER).then(|| {
        Diagnostic::new(
            Severity::Warning,
            "",
            None,
            format!(
                "the step time follows the lengths far better when the lengths' step k is taken as the log's step k{shift:+} (R² = {better:.2}, against {here:.2} as numbered): one side likely counts from 0 and the other from 1; renumber the lengths record and analyse again"
            ),
        )
    })
}

/// The slowest rank of the intervals, from the straggler lines.
struct Slowest {
    rank: u32,
    led: usize,
    intervals: usize,
    distinct: usize,
    /// The median over the intervals of the slowest rank's time over the fastest's.
    ratio: f64,
    counts: Vec<(u32, usize)>,
}

impl Slowest {
    fn of(times: &StepTimes) -> Option<Slowest> {
        let counts = tally(times.extremes.iter().map(|e| e.slowest.0));
        let &(rank, led) = counts.first()?;
        let ratios: Vec<f64> = times.extremes.iter().map(times::Extremes::ratio).collect();
        Some(Slowest {
            rank,
            led,
            intervals: times.extremes.len(),
            distinct: counts.len(),
            ratio: super::stats::median(&ratios),
            counts,
        })
    }

    fn dominance(&self) -> f64 {
        self.led as f64 / self.intervals.max(1) as f64
    }

    fn persistent(&self) -> bool {
        self.intervals >= MIN_EXTREMES && self.dominance() >= PERSISTENT && self.ratio >= STRAGGLING
    }

    fn initiators(&self) -> Initiators {
        Initiators {
            dominance: round(self.dominance(), 4),
            distinct: self.distinct,
            top: self.counts.iter().take(5).copied().collect(),
        }
    }
}

impl Found<'_> {
    /// The mean step, and with a usable fit the step the same data would take dealt evenly by
    /// cost: by the step-time fit, else by the per-rank fit.
    fn slowdown(&self, shards: &BTreeMap<u64, Vec<fit::Shard>>) -> Slowdown {
        // (time per step, steps) pairs → the mean time per step.
        let mean = |pairs: &mut dyn Iterator<Item = (f64, f64)>| {
            let (total, steps) = pairs.fold((0.0, 0.0), |(t, n), (value, steps)| (t + value * steps, n + steps));
            if steps > 0.0 { (total / steps, steps) } else { (0.0, 0.0) }
        };
        let ((actual, steps), lost) = match (&self.step_fit, &self.rank_fit) {
            (Some(d), _) => {
                let actual = mean(&mut d.per_interval.iter().map(|c| (c.interval.step_ns, c.interval.steps() as f64)));
                // Noise the fit does not explain is not put down to the data.
                let excess = |c: &fit::IntervalCosts| (c.predicted - c.balanced).max(0.0);
                let lost = mean(&mut d.per_interval.iter().map(|c| (excess(c), c.interval.steps() as f64))).0;
                (actual, lost.min(actual.0 * MAX_LOST))
            }
            (None, Some(r)) => {
                let with_lengths =
                    self.times.intervals.iter().filter(|i| shards.range(i.first..=i.last).next().is_some());
                let actual = mean(&mut with_lengths.map(|i| (i.step_ns, i.steps() as f64)));
                let lost = super::stats::mean(&r.lost_per_step.values().copied().collect::<Vec<f64>>());
                (actual, lost.min(actual.0 * MAX_LOST))
            }
            (None, None) => (mean(&mut self.times.intervals.iter().map(|i| (i.step_ns, i.steps() as f64))), 0.0),
        };
        let ideal = actual - lost;
        let factor = if ideal > 0.0 { actual / ideal } else { 1.0 };
        Slowdown {
            actual_step_s: round(actual / 1e9, 5),
            ideal_step_s: round(ideal / 1e9, 5),
            factor: round(factor, 4),
            time_lost_s: round(lost * steps / 1e9, 4),
            by_cause: if lost > 0.0 {
                vec![CauseShare { cause: "sequence_length_imbalance".into(), share: 1.0 }]
            } else {
                Vec::new()
            },
            replay_fidelity: 1.0,
            median_ops_factor: None,
        }
    }

    fn signals(&self) -> Vec<Signal> {
        let no_data = if self.lengths {
            "Fewer than four log intervals have the lengths of their steps, or the step time does not vary with them."
        } else {
            "No lengths were given with the log (a step log of each rank's lengths per step, joined by step number)."
        };
        let data = self.step_fit.as_ref();
        let mut out = Vec::new();
        out.push(match data {
            Some(d) => {
                let (max, mean) = (d.rho_max.unwrap_or(0.0), d.rho_mean.unwrap_or(0.0));
                let mut s = signal(
                    "log_max_vs_mean",
                    "Step time tracks the heaviest shard",
                    max,
                    0.5,
                    max >= 0.5 && max > mean,
                    format!(
                        "The logged step time follows the cost of the heaviest shard (ρ = {max:.2}) {} the mean shard (ρ = {mean:.2}), over {} log intervals (R² = {:.2}).",
                        if max > mean { "more than" } else { "no more than" },
                        d.fit.samples,
                        d.fit.r2
                    ),
                );
                s.detail = vec![("mean_rho".into(), round(mean, 4)), ("r2".into(), round(d.fit.r2, 4))];
                s
            }
            None => not_applicable("log_max_vs_mean", "Step time tracks the heaviest shard", 0.5, no_data),
        });
        out.push(match &self.rank_fit {
            Some(r) => {
                let (drew, judged) = r.slowest_drew_most;
                let share = drew as f64 / judged.max(1) as f64;
                signal(
                    "log_slowest_drew_most",
                    "The slowest rank drew the costliest data",
                    share,
                    PERSISTENT,
                    share >= PERSISTENT,
                    format!(
                        "In {drew} of {judged} log intervals the slowest rank (Megatron-LM's straggler lines) drew the costliest documents; a rank's timed regions ≈ {:.3e} s·tokens + {:.3e} s·Σ L² (R² = {:.2}).",
                        r.fit.per_token / 1e9,
                        r.fit.per_token_sq / 1e9,
                        r.fit.r2
                    ),
                )
            }
            None => not_applicable(
                "log_slowest_drew_most",
                "The slowest rank drew the costliest data",
                PERSISTENT,
                "Needs straggler lines (Megatron-LM's --log-straggler) and the lengths of their intervals' steps.",
            ),
        });
        out.push(match data.and_then(|d| rotation(&d.heaviest)) {
            Some((rank, held, steps, distinct)) => {
                let share = held as f64 / steps.max(1) as f64;
                signal(
                    "log_heaviest_rotates",
                    "The heaviest shard moves between ranks",
                    1.0 - share,
                    1.0 - PERSISTENT,
                    share < PERSISTENT,
                    format!(
                        "The costliest shard fell on {distinct} different ranks over {steps} steps (rank {rank} held it most, in {held})."
                    ),
                )
            }
            None => {
                not_applicable("log_heaviest_rotates", "The heaviest shard moves between ranks", 1.0 - PERSISTENT, no_data)
            }
        });
        out.push(match self.slowest.as_ref().filter(|s| s.intervals >= MIN_EXTREMES) {
            Some(s) => signal(
                "log_slowest_rank",
                "One rank is the slowest interval after interval",
                s.dominance(),
                PERSISTENT,
                s.persistent(),
                format!(
                    "Megatron-LM's straggler lines name rank {} the slowest in {} of {} intervals ({} distinct ranks); the slowest rank took {:.2}× the fastest's time in the median interval.",
                    s.rank, s.led, s.intervals, s.distinct, s.ratio
                ),
            ),
            None => not_applicable(
                "log_slowest_rank",
                "One rank is the slowest interval after interval",
                PERSISTENT,
                "Fewer than three straggler lines (Megatron-LM's --log-straggler) name the slowest rank of an interval.",
            ),
        });
        out
    }

    /// Whether the slowest rank of the straggler lines is explained by what it drew: it held
    /// the costliest data in most of its intervals.
    fn slowest_explained_by_data(&self) -> bool {
        self.rank_fit.as_ref().is_some_and(|r| {
            let (drew, judged) = r.slowest_drew_most;
            judged > 0 && drew as f64 >= PERSISTENT * judged as f64
        })
    }
}

/// The rank that held the costliest shard most often, how often, over how many steps, and how
/// many ranks held it.
fn rotation(heaviest: &[(u64, u32)]) -> Option<(u32, usize, usize, usize)> {
    let counts = tally(heaviest.iter().map(|&(_, rank)| rank));
    let &(rank, held) = counts.first()?;
    Some((rank, held, heaviest.len(), counts.len()))
}

/// The verdict and its fix, from what a log can show.
fn decide(
    found: &Found<'_>,
    slowdown: &Slowdown,
    evidence: Vec<Signal>,
    shards: &BTreeMap<u64, Vec<fit::Shard>>,
) -> (Verdict, Fix) {
    let source = match found.times.source {
        Source::TrainingLog => "the training log's step times",
        Source::JobLevel => "the job's step times (no per-rank compute in the inputs)",
    };
    let verdict = |primary: &str, confidence: &str, headline: String, to_confirm: String| Verdict {
        primary: primary.into(),
        contributing: Vec::new(),
        confidence: confidence.into(),
        headline,
        evidence: evidence.clone(),
        to_confirm: Some(to_confirm),
    };
    // A rank slowest interval after interval that does not draw the costliest data.
    if let Some(s) = found.slowest.as_ref().filter(|s| s.persistent() && !found.slowest_explained_by_data()) {
        let headline = format!(
            "Rank {} was the slowest in {} of {} log intervals, at {:.2}× the fastest rank's time: a slow worker, whatever it drew (from {source} and Megatron-LM's straggler lines).",
            s.rank, s.led, s.intervals, s.ratio
        );
        return (
            verdict("slow_worker", "medium", headline, WHAT_A_LOG_CANNOT_TELL.into()),
            verdict::slow_hardware_fix(&format!("rank {} is", s.rank)),
        );
    }
    let fitted =
        found.step_fit.as_ref().map(|d| (d.fit, d.fit.r2)).or(found.rank_fit.as_ref().map(|r| (r.fit, r.fit.r2)));
    if let Some((cost, r2)) = fitted {
        if slowdown.factor >= STRAGGLING {
            // Two independent views agreeing: the step time follows the heaviest shard and the
            // heaviest moves, or the straggler lines' slowest rank is the one that drew most.
            let step_view = found.step_fit.as_ref().is_some_and(|d| {
                d.fit.r2 >= GOOD_FIT
                    && d.rho_max.unwrap_or(0.0) >= 0.5
                    && d.rho_max > d.rho_mean
                    && rotation(&d.heaviest)
                        .is_some_and(|(_, held, steps, _)| (held as f64) < PERSISTENT * steps as f64)
            });
            let confidence = if step_view || found.slowest_explained_by_data() { "medium" } else { "low" };
            let how = if found.step_fit.is_some() {
                format!("each step waits for the rank with the costliest shard (R² = {r2:.2})")
            } else {
                format!(
                    "the slowest rank of each interval is the one that drew the costliest documents (R² = {r2:.2} per rank)"
                )
            };
            let headline = format!(
                "Sequence-length imbalance: by {source} joined with the lengths, steps take {:.2}× what the same documents would take dealt evenly by cost: {how}.",
                slowdown.factor
            );
            let (count, steps, longest) = fit::outliers(shards, &cost);
            let limits = (count > 0).then(|| {
                format!(
                    "In {count} of {steps} steps one document (up to {longest:.0} tokens) alone costs more than a rank's fair share: dealing cannot even those steps out. Split such documents across context-parallel ranks, or hold outliers back and spread them over later batches."
                )
            });
            let fix = verdict::balancing_fix(Some(&cost), false, limits);
            return (verdict("sequence_length_imbalance", confidence, headline, WHAT_A_LOG_CANNOT_TELL.into()), fix);
        }
        let data = format!(
            "steps take {:.2}× what the same documents would take dealt evenly by cost, below the {STRAGGLING:.2} bound, by {source} joined with the lengths",
            slowdown.factor
        );
        return not_the_data(found, &data, &verdict);
    }
    // No cost model: the lengths can still bound what the data could cost.
    if let Some(bound) = found.bound.filter(|&b| b < STRAGGLING && !found.times.intervals.is_empty()) {
        let data = format!(
            "every rank drew about the same work each step (the heaviest within {:.0}% of the mean in tokens and in Σ L², whatever attention costs), so uneven lengths cannot make ranks wait",
            (bound - 1.0) * 100.0
        );
        return not_the_data(found, &data, &verdict);
    }
    let why = inconclusive_reason(found);
    let headline = format!("No verdict from {source}: {why}.");
    let to_confirm = if found.lengths && found.times.intervals.is_empty() {
        format!(
            "Give the training log of the same run with these lengths (its iteration lines, joined by step number; docs/formats.md), or add `step_s` to the step log. {WHAT_A_LOG_CANNOT_TELL}"
        )
    } else {
        format!(
            "Record each rank's document lengths per step as a step log (docs/formats.md: `step`, `rank`, `lengths`) and give it with the log; with Megatron-LM, run with --log-straggler. {WHAT_A_LOG_CANNOT_TELL}"
        )
    };
    let fix = Fix { summary: to_confirm.clone(), ..Fix::default() };
    (verdict("inconclusive", "low", headline, to_confirm), fix)
}

/// The verdict when the data does not make ranks wait (`data` says why): `balanced` only when
/// the straggler lines also show no rank slow interval after interval; else no verdict, as a
/// rank slow whatever it draws does not show in step times alone.
fn not_the_data(
    found: &Found<'_>,
    data: &str,
    verdict: &dyn Fn(&str, &str, String, String) -> Verdict,
) -> (Verdict, Fix) {
    let fix = Fix { summary: "Nothing to fix in how the data is dealt.".into(), ..Fix::default() };
    match found.slowest.as_ref().filter(|s| s.intervals >= MIN_EXTREMES) {
        Some(s) => {
            let headline = format!(
                "No significant straggling: {data}, and no rank was the slowest in most log intervals (rank {}, the most often, in {} of {}).",
                s.rank, s.led, s.intervals
            );
            (verdict("balanced", "low", headline, WHAT_A_LOG_CANNOT_TELL.into()), fix)
        }
        None => {
            let headline = format!(
                "No verdict: the data is not the cause ({data}); a rank slow whatever it draws would not show in step times alone."
            );
            let to_confirm = format!(
                "Run Megatron-LM with --log-straggler (the slowest rank of each log interval), or capture a trace. {WHAT_A_LOG_CANNOT_TELL}"
            );
            (verdict("inconclusive", "low", headline, to_confirm.clone()), Fix { summary: to_confirm, ..fix })
        }
    }
}

/// Why no verdict could be drawn, in words.
fn inconclusive_reason(found: &Found<'_>) -> String {
    if found.lengths && found.times.intervals.is_empty() {
        return "the inputs have each rank's lengths but no step times: add the training log of the same run (the iteration lines of Megatron-LM, torchtitan or DeepSpeed, or a progress bar), or step times to the step log".into();
    }
    if found.times.intervals.len() == 1 && found.slowest.is_none() {
        return "the log gives one mean step time for all its steps (as Hugging Face's run summary, `train_runtime`), not each step's: keep the progress bar (`disable_tqdm=False`) or log every few steps".into();
    }
    if found.ranks_with_lengths == 1 && !found.lengths {
        return "the lengths are of one rank only, and straggling is between ranks: give every rank's lengths (or, for a job of one process, there is nothing to straggle)".into();
    }
    if let Some(bound) = found.bound {
        return format!(
            "the lengths put up to {bound:.2}× the mean work on one rank in a step, but the step time does not vary with it (the costliest shard costs about the same every step, or something else sets the pace), so a log cannot tell what it costs"
        );
    }
    match found.slowest.as_ref().filter(|s| s.intervals >= MIN_EXTREMES) {
        Some(s) if s.ratio >= STRAGGLING => format!(
            "the slowest rank changes from interval to interval ({} ranks over {} intervals, {:.2}× the fastest in the median one), as when ranks draw uneven documents; without the lengths each rank drew, that cannot be confirmed",
            s.distinct, s.intervals, s.ratio
        ),
        Some(s) => format!(
            "the ranks' timed regions are within {:.0}% of each other in the median interval; the log does not show the rest of each step",
            (s.ratio - 1.0) * 100.0
        ),
        None => "a log alone gives the job's step time, not who made it long".into(),
    }
}

//! The job's step times as a log reports them: runs of steps with their mean time per step,
//! and the slowest and fastest rank of each log interval (Megatron-LM's straggler lines).

use std::collections::BTreeMap;

use crate::analysis::stats::median;
use crate::failure::evidence::{FileEvidence, Iteration, TrainingLog};
use crate::model::Job;

/// Steps `first..=last` took `step_ns` each on average.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    pub first: u64,
    pub last: u64,
    pub step_ns: f64,
}

impl Interval {
    /// How many steps the interval holds.
    pub fn steps(&self) -> u64 {
        self.last.saturating_sub(self.first).saturating_add(1)
    }
}

/// Of one log interval, the slowest and fastest rank and their time per iteration in the
/// regions the straggler detector times (Megatron-LM: the forward pass).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Extremes {
    /// The interval's steps (first, last), when an iteration line says which.
    pub steps: Option<(u64, u64)>,
    pub slowest: (u32, u64),
    pub fastest: (u32, u64),
}

impl Extremes {
    /// The slowest rank's time over the fastest's.
    pub fn ratio(&self) -> f64 {
        self.slowest.1 as f64 / self.fastest.1.max(1) as f64
    }
}

/// Where the step times come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Iteration lines of a training log.
    TrainingLog,
    /// The step times of a step log (or trace) that has no per-rank compute.
    JobLevel,
}

impl Source {
    /// The report's name of the source (`job.step_times`).
    pub fn name(self) -> &'static str {
        match self {
            Source::TrainingLog => "training_log",
            Source::JobLevel => "job_level",
        }
    }
}

/// The step times the inputs give, and each interval's slowest rank.
#[derive(Clone, Debug, PartialEq)]
pub struct StepTimes {
    /// Sorted by (first, last); distinct.
    pub intervals: Vec<Interval>,
    /// In line order, those with a time for the fastest rank.
    pub extremes: Vec<Extremes>,
    pub source: Source,
}

/// The step times the logs' iteration lines give, or `None` when they have none. Several
/// sources of the same interval (ranks, files) give their median. A run's summary (one mean
/// over the whole run) counts only when no line times steps of their own.
pub fn from_logs(evidence: &[FileEvidence]) -> Option<StepTimes> {
    let mut by_range: BTreeMap<(u64, u64), Vec<f64>> = BTreeMap::new();
    let mut summaries: BTreeMap<(u64, u64), Vec<f64>> = BTreeMap::new();
    let mut extremes = Vec::new();
    for file in evidence {
        // A source is one rank's lines of one form: a log may hold several forms whose
        // counts differ (DeepSpeed's timer lines every step, its pipeline lines every few).
        let mut by_source: BTreeMap<(Option<u32>, TrainingLog), Vec<&Iteration>> = BTreeMap::new();
        for iteration in &file.iterations {
            by_source.entry((iteration.rank, iteration.form)).or_default().push(iteration);
        }
        for iterations in by_source.values() {
            // A line that says which steps it covers from (a run's summary) times them all.
            let summary = iterations.iter().any(|i| i.covers_from.is_some());
            let into = if summary { &mut summaries } else { &mut by_range };
            for interval in intervals(iterations) {
                into.entry((interval.first, interval.last)).or_default().push(interval.step_ns);
            }
        }
        extremes.extend(extremes_of(file));
    }
    if by_range.is_empty() {
        by_range = summaries;
    }
    let intervals: Vec<Interval> =
        by_range.into_iter().map(|((first, last), times)| Interval { first, last, step_ns: median(&times) }).collect();
    (!intervals.is_empty() || !extremes.is_empty()).then_some(StepTimes {
        intervals,
        extremes,
        source: Source::TrainingLog,
    })
}

/// A file's straggler lines with the steps each covers. The detector reports once a log
/// interval, on the iterations that are a multiple of it; its lines and the iteration lines
/// come from different ranks, whose output a console interleaves in any order, so they are
/// paired in turn when they are as many, else each with the iteration line before it.
fn extremes_of(file: &FileEvidence) -> Vec<Extremes> {
    let all: Vec<&Iteration> = file.iterations.iter().filter(|i| i.form == TrainingLog::Megatron).collect();
    let spacing = spacing(&all);
    let reported: Vec<&Iteration> = all.iter().copied().filter(|i| i.step % spacing == 0).collect();
    let interval = |i: &Iteration| (first_of_spacing(i.step, spacing), i.step);
    let lines = file.rank_extremes.iter().filter(|e| e.fastest_ns > 0);
    let mut before = all.iter().peekable();
    let mut last = None;
    lines
        .enumerate()
        .map(|(k, e)| {
            let steps = if reported.len() == file.rank_extremes.len() {
                reported.get(k).map(|i| interval(i))
            } else {
                while let Some(i) = before.next_if(|i| i.line < e.line) {
                    last = Some(interval(i));
                }
                last
            };
            Extremes { steps, slowest: (e.slowest_rank, e.slowest_ns), fastest: (e.fastest_rank, e.fastest_ns) }
        })
        .collect()
}

/// The first step a line at `step` covers when no earlier line says: as many steps as the
/// lines are usually apart (`spacing`), from step 1 on.
fn first_of_spacing(step: u64, spacing: u64) -> u64 {
    step.saturating_add(1).saturating_sub(spacing).max(1).min(step)
}

/// How many steps apart a source's lines usually are (1 when it cannot tell).
fn spacing(lines: &[&Iteration]) -> u64 {
    let mut gaps: BTreeMap<u64, usize> = BTreeMap::new();
    for pair in lines.windows(2) {
        if let [a, b] = pair
            && b.step > a.step
        {
            *gaps.entry(b.step - a.step).or_default() += 1;
        }
    }
    gaps.iter().max_by_key(|&(gap, count)| (*count, std::cmp::Reverse(*gap))).map_or(1, |(&gap, _)| gap)
}

/// One source's intervals (its lines in line order). Each line's time covers the steps it says
/// (a run's summary), else those since the source's previous line; the first line's, as many
/// steps as the lines are usually apart. A line without a time of its own (torchtitan) times
/// the steps since the previous line by their time stamps.
fn intervals(lines: &[&Iteration]) -> Vec<Interval> {
    let spacing = spacing(lines);
    let mut out = Vec::new();
    let mut previous: Option<&Iteration> = None;
    for &line in lines {
        // A progress bar redrawn at the same count says nothing new.
        if previous.is_some_and(|p| p.step == line.step) {
            continue;
        }
        let after = previous.filter(|p| p.step < line.step);
        previous = Some(line);
        let step_ns = match (line.step_ns, after) {
            (Some(ns), _) => ns as f64,
            (None, Some(p)) => match (p.time_ns, line.time_ns) {
                (Some(t0), Some(t1)) if t1 > t0 => (t1 - t0) as f64 / (line.step - p.step) as f64,
                _ => continue,
            },
            (None, None) => continue,
        };
        let first = line
            .covers_from
            .filter(|&from| from <= line.step)
            .unwrap_or_else(|| after.map_or_else(|| first_of_spacing(line.step, spacing), |p| p.step + 1));
        out.push(Interval { first, last: line.step, step_ns });
    }
    out
}

/// How many distinct steps the intervals cover (sources may overlap).
pub fn covered_steps(intervals: &[Interval]) -> u64 {
    let mut covered = 0u64;
    let mut next = 0u64;
    // Sorted by their first step: count each step once.
    for i in intervals {
        let from = i.first.max(next);
        if i.last >= from {
            covered = covered.saturating_add(i.last - from).saturating_add(1);
        }
        next = next.max(i.last.saturating_add(1));
    }
    covered
}

/// The step times of a job without a breakdown: each step's longest duration over the ranks
/// (none when its steps carry lengths only), or `None` for a job without workers.
pub fn from_job(job: &Job) -> Option<StepTimes> {
    if job.workers.is_empty() {
        return None;
    }
    let mut longest: BTreeMap<u64, i64> = BTreeMap::new();
    for step in job.workers.iter().flat_map(|w| &w.steps) {
        let entry = longest.entry(step.step).or_default();
        *entry = (*entry).max(step.duration);
    }
    let intervals = longest
        .into_iter()
        .filter(|&(_, ns)| ns > 0)
        .map(|(step, ns)| Interval { first: step, last: step, step_ns: ns as f64 })
        .collect();
    Some(StepTimes { intervals, extremes: Vec::new(), source: Source::JobLevel })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::evidence::RankExtremes;

    fn line(line: u64, rank: Option<u32>, step: u64, time_s: Option<i64>, step_ms: Option<u64>) -> Iteration {
        Iteration {
            line,
            rank,
            form: TrainingLog::Megatron,
            step,
            time_ns: time_s.map(|s| s * 1_000_000_000),
            step_ns: step_ms.map(|ms| ms * 1_000_000),
            covers_from: None,
        }
    }

    #[test]
    fn intervals_from_each_kind_of_line() {
        let megatron = FileEvidence {
            iterations: vec![
                line(10, None, 4, None, Some(100)),
                line(20, None, 8, None, Some(120)),
                line(30, None, 12, None, Some(110)),
            ],
            rank_extremes: vec![RankExtremes {
                line: 21,
                time_ns: None,
                fastest_rank: 0,
                fastest_ns: 50,
                slowest_rank: 3,
                slowest_ns: 75,
            }],
            ..FileEvidence::default()
        };
        // Two ranks' torchtitan lines, timed by their stamps (the first line times nothing).
        let titan = FileEvidence {
            iterations: vec![
                line(1, Some(0), 1, Some(100), None),
                line(2, Some(1), 1, Some(100), None),
                line(3, Some(0), 3, Some(104), None),
                line(4, Some(1), 3, Some(106), None),
            ],
            ..FileEvidence::default()
        };
        let times = from_logs(&[megatron, titan]).expect("times");
        let ms = |ms: u64| (ms * 1_000_000) as f64;
        assert_eq!(
            times.intervals,
            vec![
                Interval { first: 1, last: 4, step_ns: ms(100) },
                Interval { first: 2, last: 3, step_ns: ms(2500) },
                Interval { first: 5, last: 8, step_ns: ms(120) },
                Interval { first: 9, last: 12, step_ns: ms(110) },
            ]
        );
        // One straggler line, not one per interval: it covers the interval before it.
        assert_eq!(times.extremes, vec![Extremes { steps: Some((5, 8)), slowest: (3, 75), fastest: (0, 50) }]);
        assert_eq!(from_logs(&[FileEvidence::default()]), None);
    }

    #[test]
    fn each_form_in_a_file_is_its_own_source_and_a_run_summary_covers_the_run() {
        let ms = |ms: u64| (ms * 1_000_000) as f64;
        // DeepSpeed's timer lines every step and its pipeline lines every two, interleaved.
        let timers =
            |l, step, ms| Iteration { form: TrainingLog::DeepSpeedTimers, ..line(l, None, step, None, Some(ms)) };
        let deepspeed = FileEvidence {
            iterations: vec![
                timers(1, 1, 100),
                timers(2, 2, 300),
                line(3, None, 2, None, Some(200)),
                timers(4, 3, 100),
                timers(5, 4, 100),
                line(6, None, 4, None, Some(100)),
            ],
            ..FileEvidence::default()
        };
        let times = from_logs(&[deepspeed]).expect("times");
        let got: Vec<(u64, u64, f64)> = times.intervals.iter().map(|i| (i.first, i.last, i.step_ns)).collect();
        assert_eq!(
            got,
            vec![(1, 1, ms(100)), (1, 2, ms(200)), (2, 2, ms(300)), (3, 3, ms(100)), (3, 4, ms(100)), (4, 4, ms(100)),]
        );
        let summary =
            Iteration { form: TrainingLog::HfTrainer, covers_from: Some(1), ..line(9, None, 40, None, Some(96)) };
        let alone = FileEvidence { iterations: vec![summary.clone()], ..FileEvidence::default() };
        let run = from_logs(&[alone]).expect("times");
        assert_eq!(run.intervals, vec![Interval { first: 1, last: 40, step_ns: ms(96) }]);
        // Beside lines that time steps of their own, the summary adds nothing.
        let with_bar = FileEvidence {
            iterations: vec![
                Iteration { form: TrainingLog::Tqdm, ..line(1, None, 20, None, Some(90)) },
                Iteration { form: TrainingLog::Tqdm, ..line(2, None, 40, None, Some(100)) },
                summary,
            ],
            ..FileEvidence::default()
        };
        let ranges: Vec<(u64, u64)> =
            from_logs(&[with_bar]).expect("times").intervals.iter().map(|i| (i.first, i.last)).collect();
        assert_eq!(ranges, vec![(1, 20), (21, 40)]);
    }
}

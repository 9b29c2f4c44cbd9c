//! The seven signals. Each is a number, a threshold, pass/fail and one plain sentence; with
//! sequence lengths the first three test lengths directly, without them the timing signature.

use super::costmodel::Fit;
use super::frame::{Cell, Frame, MicroBatchCell, SeqFeatures};
use super::par;
use super::replay::{Attribution, Factors};
use super::samples::Samples;
use super::stats::{Mean, cv, median, spearman};
use crate::model::Nanos;
use crate::report::{Signal, round};

/// Per step: the worker the others waited for.
#[derive(Clone, Debug, PartialEq)]
pub struct Initiator {
    pub step: u64,
    pub worker: usize,
    /// Its work minus the step's mean work (ns).
    pub excess: f64,
    /// The part of the excess that was compute (the rest is stalls and other host time).
    pub compute_excess: f64,
}

/// The initiating worker of every step: the one with the most work (compute and stalls).
pub fn initiators(frame: &Frame) -> Vec<Initiator> {
    // Each step alone, on every core.
    par::map(frame.steps.len(), par::min_rows(frame.slots.len()), |si| {
        let step = frame.steps.get(si).copied()?;
        // One pass, nothing collected: this runs over every worker of every step.
        let (mut works, mut computes) = (Mean::default(), Mean::default());
        // The most work; the lowest worker index among equals.
        let mut busiest: Option<(usize, Cell)> = None;
        for (w, cell) in frame.step_cells(si) {
            works.add(cell.work() as f64);
            computes.add((cell.compute + cell.optimizer) as f64);
            if busiest.is_none_or(|(_, b)| cell.work() > b.work()) {
                busiest = Some((w, cell));
            }
        }
        let (w, cell) = busiest.filter(|_| works.count() >= 2)?;
        let excess = cell.work() as f64 - works.get();
        let compute_excess = (cell.compute + cell.optimizer) as f64 - computes.get();
        Some(Initiator { step, worker: w, excess, compute_excess })
    })
    .into_iter()
    .flatten()
    .collect()
}

/// Everything the signals look at.
pub struct Inputs<'a> {
    pub frame: &'a Frame,
    pub samples: &'a Samples,
    pub attribution: &'a Attribution,
    pub factors: &'a Factors,
    pub fit: Option<&'a Fit>,
    pub initiators: &'a [Initiator],
    /// Share of the slowdown per restoration: (stage, worker, residual compute, stalls, transfers).
    pub shares: [f64; 5],
    /// The slowdown S.
    pub slowdown: f64,
    /// Why time in collectives cannot be split into transfer and waiting, when it cannot
    /// ([`super::peers_missing`]).
    pub peers_missing: Option<&'a str>,
}

pub(super) fn signal(id: &str, name: &str, value: f64, threshold: f64, passed: bool, sentence: String) -> Signal {
    Signal {
        id: id.to_owned(),
        name: name.to_owned(),
        value: round(value, 4),
        threshold,
        passed,
        applicable: true,
        sentence,
        detail: Vec::new(),
    }
}

pub(super) fn not_applicable(id: &str, name: &str, threshold: f64, why: &str) -> Signal {
    Signal {
        id: id.to_owned(),
        name: name.to_owned(),
        value: 0.0,
        threshold,
        passed: false,
        applicable: false,
        sentence: why.to_owned(),
        detail: Vec::new(),
    }
}

/// The shard cost of a worker-step: the fitted model's prediction, else Σ L², else (timing
/// only) its compute.
fn shard_cost(fit: Option<&Fit>, c: &Cell) -> f64 {
    match fit.filter(|f| f.usable()) {
        Some(f) if c.seq.known => f.predict(&c.seq),
        _ if c.seq.known => c.seq.sum_sq,
        _ => c.compute as f64,
    }
}

pub fn all(i: &Inputs<'_>) -> Vec<Signal> {
    let with_lengths = i.frame.lengths_known;
    let costs = step_costs(i.frame, i.fit, with_lengths);
    vec![
        max_vs_mean(&costs, with_lengths),
        attention_on_longest(i),
        compute_tracks_cost(i),
        rotation(i, &costs),
        stage_band(i),
        communication_bound(i),
        host_stalls(i),
    ]
}

/// One step's shards as signals 1 and 4 compare them: the workers whose lengths are known
/// (every worker when no step knows lengths).
struct StepCosts {
    shards: usize,
    /// The longest of their step times.
    longest: Option<Nanos>,
    /// The largest and the mean shard cost ([`shard_cost`]).
    max: f64,
    mean: f64,
    /// The worker with the costliest shard (the first of equals), when lengths are known.
    costliest: Option<usize>,
}

/// Every step's shard costs, in one pass over the table.
fn step_costs(frame: &Frame, fit: Option<&Fit>, with_lengths: bool) -> Vec<StepCosts> {
    let step = |si: usize| {
        let (mut shards, mut longest, mut max, mut mean) = (0, None::<Nanos>, 0.0f64, Mean::default());
        let mut costliest: Option<(usize, f64)> = None;
        for (w, cell) in frame.step_cells(si).filter(|(_, c)| !with_lengths || c.seq.known) {
            let cost = shard_cost(fit, &cell);
            shards += 1;
            longest = Some(longest.map_or(cell.duration, |l| l.max(cell.duration)));
            max = max.max(cost);
            mean.add(cost);
            if costliest.is_none_or(|(_, most)| cost.total_cmp(&most).is_gt()) {
                costliest = Some((w, cost));
            }
        }
        let costliest = costliest.filter(|_| with_lengths).map(|(w, _)| w);
        StepCosts { shards, longest, max, mean: mean.get(), costliest }
    };
    par::map(frame.steps.len(), par::min_rows(frame.slots.len()), step)
}

/// 1. Step time follows the max of the per-shard cost over the global batch, not the mean.
fn max_vs_mean(costs: &[StepCosts], with_lengths: bool) -> Signal {
    const ID: &str = "max_vs_mean";
    const NAME: &str = "Step time tracks the max shard cost";
    let (mut y, mut xmax, mut xmean) = (Vec::new(), Vec::new(), Vec::new());
    for c in costs.iter().filter(|c| c.shards >= 2) {
        y.push(c.longest.unwrap_or(0) as f64);
        xmax.push(c.max);
        xmean.push(c.mean);
    }
    if y.len() < 5 {
        return not_applicable(ID, NAME, 0.5, "Needs at least 5 steps with two or more workers.");
    }
    let (Some(cmax), cmean) = (spearman(&xmax, &y), spearman(&xmean, &y)) else {
        return not_applicable(ID, NAME, 0.5, "Step times or shard costs do not vary.");
    };
    let rmean = cmean.map_or(0.0, |c| c.r);
    let passed = cmax.r >= 0.5 && cmax.r > rmean;
    let what = if with_lengths {
        "cost of the heaviest shard (from its sequence lengths)"
    } else {
        "compute of the busiest worker"
    };
    let sentence = if passed {
        format!(
            "Step time follows the {what} (ρ = {:.2}) more than the mean shard (ρ = {rmean:.2}): each step waits for its heaviest shard.",
            cmax.r
        )
    } else {
        format!("Step time does not follow the {what} more than the mean (ρ = {:.2} vs {rmean:.2}).", cmax.r)
    };
    let mut s = signal(ID, NAME, cmax.r, 0.5, passed, sentence);
    s.detail = vec![
        ("rho_max_low".into(), round(cmax.low, 3)),
        ("rho_max_high".into(), round(cmax.high, 3)),
        ("rho_mean".into(), round(rmean, 3)),
        ("rho_mean_low".into(), round(cmean.map_or(0.0, |c| c.low), 3)),
        ("rho_mean_high".into(), round(cmean.map_or(0.0, |c| c.high), 3)),
        ("steps".into(), y.len() as f64),
    ];
    s
}

/// 2. Attention compute peaks where the longest documents are.
fn attention_on_longest(i: &Inputs<'_>) -> Signal {
    const ID: &str = "attention_on_longest";
    const NAME: &str = "Attention peaks on the longest documents";
    // Micro-batch level where micro-batches carry lengths and times; else worker-step level.
    let mut pairs: Vec<(f64, f64)> = i
        .samples
        .known_micro_batches
        .iter()
        .map(|m| (m.attention.unwrap_or_else(|| m.compute()) as f64, m.seq.max_len))
        .collect();
    let level = if pairs.len() >= 8 { "micro-batches" } else { "worker-steps" };
    if pairs.len() < 8 {
        pairs = i
            .samples
            .known_cells
            .iter()
            .map(|c| (if c.attention > 0 { c.attention } else { c.compute } as f64, c.seq.max_len))
            .collect();
    }
    if pairs.len() >= 8 {
        let (t, l): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let Some(c) = spearman(&l, &t) else {
            return not_applicable(ID, NAME, 0.5, "Lengths or attention times do not vary.");
        };
        let passed = c.r >= 0.5;
        let sentence = if passed {
            format!("Across {level}, attention time rises with the longest document held (ρ = {:.2}).", c.r)
        } else {
            format!("Across {level}, attention time does not follow the longest document (ρ = {:.2}).", c.r)
        };
        let mut s = signal(ID, NAME, c.r, 0.5, passed, sentence);
        s.detail =
            vec![("low".into(), round(c.low, 3)), ("high".into(), round(c.high, 3)), ("samples".into(), c.n as f64)];
        return s;
    }
    // Timing signature: how unequal the micro-batches of one worker-step are.
    let cells: Vec<Vec<MicroBatchCell>> = i
        .frame
        .cells()
        .filter(|c| c.micro_batches.len() >= 2)
        .map(|c| i.frame.micro_batches_of(&c).collect())
        .collect();
    let dispersion: Vec<f64> =
        cells.iter().map(|mbs| cv(&mbs.iter().map(|m| m.compute() as f64).collect::<Vec<_>>())).collect();
    if dispersion.is_empty() {
        return not_applicable(ID, NAME, 0.5, "No sequence lengths and no micro-batch timings to test this.");
    }
    // Micro-batches of one step hold the same tokens (packing) or documents (padding): their
    // compute differs by their data, and by noise (contention, caches, allocation), which real
    // traces show at 20% and more. Data makes a micro-batch costly in both its passes; noise
    // does not repeat between them: so the micro-batches must also rank alike by forward and by
    // backward time (each over its worker-step's mean).
    let value = median(&dispersion);
    let shared = passes_agree(&cells);
    let passed = value >= 0.06 && shared.is_none_or(|r| r >= 0.5);
    let agreement = match shared {
        Some(r) => format!("; forward and backward agree on it at ρ = {r:.2}"),
        None => String::new(),
    };
    let sentence = format!(
        "No lengths recorded; micro-batches of one worker-step differ by a median CV of {value:.2}{agreement} ({}).",
        if passed { "the data, beyond noise" } else { "no more than noise" }
    );
    let mut s = signal(ID, "Micro-batch compute dispersion (timing only)", value, 0.06, passed, sentence);
    if let Some(r) = shared {
        s.detail = vec![("forward_backward_rho".into(), round(r, 3))];
    }
    s
}

/// How alike the micro-batches rank by forward and by backward time, each over its
/// worker-step's mean (Spearman's ρ over all of them), when at least 8 have both passes timed.
fn passes_agree(cells: &[Vec<MicroBatchCell>]) -> Option<f64> {
    let mut forward = Vec::new();
    let mut backward = Vec::new();
    for mbs in cells {
        let n = mbs.len() as f64;
        let mean_forward = mbs.iter().map(|m| m.forward as f64).sum::<f64>() / n;
        let mean_backward = mbs.iter().map(|m| m.backward as f64).sum::<f64>() / n;
        if mean_forward > 0.0 && mean_backward > 0.0 {
            for m in mbs {
                forward.push(m.forward as f64 / mean_forward);
                backward.push(m.backward as f64 / mean_backward);
            }
        }
    }
    (forward.len() >= 8).then(|| spearman(&forward, &backward).map_or(0.0, |c| c.r))
}

/// 3. Per-worker compute tracks the shard's cost (Σ L² and the rest of the fitted model).
fn compute_tracks_cost(i: &Inputs<'_>) -> Signal {
    const ID: &str = "compute_tracks_cost";
    match i.fit {
        Some(fit) => {
            let (sq, compute): (Vec<f64>, Vec<f64>) =
                i.samples.known_cells.iter().map(|c| (c.seq.sum_sq, c.compute as f64)).unzip();
            let rho = spearman(&sq, &compute).map_or(0.0, |c| c.r);
            let passed = fit.r2 >= 0.5 && fit.usable();
            let sentence = if passed {
                format!(
                    "Per-worker compute is explained by its shard's sequences (R² = {:.2}; attention's L² term is {:.0}% of compute; ρ with Σ L² = {rho:.2}).",
                    fit.r2,
                    fit.quadratic_share * 100.0
                )
            } else {
                format!(
                    "Per-worker compute is not explained by its sequences (R² = {:.2}, ρ with Σ L² = {rho:.2}).",
                    fit.r2
                )
            };
            let mut s = signal(ID, "Compute tracks shard cost", fit.r2, 0.5, passed, sentence);
            s.detail =
                vec![("rho_sum_sq".into(), round(rho, 3)), ("quadratic_share".into(), round(fit.quadratic_share, 3))];
            s
        }
        None if i.frame.lengths_known => not_applicable(
            ID,
            "Compute tracks shard cost",
            0.5,
            "Too few worker-steps with lengths to fit the cost model.",
        ),
        None => {
            // Timing signature: do workers' compute times differ far more than run-to-run noise?
            let f = i.frame;
            let spreads: Vec<f64> = (0..f.steps.len())
                .filter_map(|si| {
                    let c: Vec<f64> = f.step_cells(si).map(|(_, c)| c.compute as f64).collect();
                    (c.len() >= 2).then(|| cv(&c))
                })
                .collect();
            if spreads.is_empty() {
                return not_applicable(
                    ID,
                    "Compute differs across workers (timing only)",
                    0.08,
                    "Needs two or more workers.",
                );
            }
            let value = median(&spreads);
            let total: f64 = i.initiators.iter().map(|x| x.excess.max(0.0)).sum();
            let compute: f64 = i.initiators.iter().map(|x| x.compute_excess.clamp(0.0, x.excess.max(0.0))).sum();
            let compute_share = if total > 0.0 { compute / total } else { 0.0 };
            let passed = value >= 0.08;
            let sentence = format!(
                "No lengths recorded; in a typical step the workers' compute differs by a CV of {value:.2} ({}), and {:.0}% of the initiating workers' excess is compute.",
                if passed {
                    "far more than run-to-run noise, as when they draw different data"
                } else {
                    "about run-to-run noise"
                },
                compute_share * 100.0
            );
            let mut s = signal(ID, "Compute differs across workers (timing only)", value, 0.08, passed, sentence);
            s.detail = vec![("compute_share_of_excess".into(), round(compute_share, 3))];
            s
        }
    }
}

/// 4. Does the initiating worker rotate with the data, or stay put (hardware)?
fn rotation(i: &Inputs<'_>, costs: &[StepCosts]) -> Signal {
    const ID: &str = "rotation";
    let n = i.initiators.len();
    if n < 3 {
        return not_applicable(
            ID,
            "Initiating worker rotates",
            0.5,
            "Needs at least 3 steps with two or more workers.",
        );
    }
    let mut counts: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
    for x in i.initiators {
        *counts.entry(x.worker).or_default() += 1;
    }
    let (top, top_count) =
        counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(&w, &c)| (w, c)).unwrap_or((0, 0));
    let dominance = top_count as f64 / n as f64;
    let label = i.frame.slots.get(top).map_or_else(String::new, |s| s.label.clone());
    // With lengths: does the initiator hold the step's costliest shard?
    let f = i.frame;
    let mut matched = 0usize;
    let mut judged = 0usize;
    for x in i.initiators {
        let Ok(si) = f.steps.binary_search(&x.step) else { continue };
        let costliest = costs.get(si).and_then(|c| c.costliest);
        if let Some(w) = costliest {
            judged += 1;
            let same_slot =
                f.slots.get(w).zip(f.slots.get(x.worker)).is_some_and(|(a, b)| a.dp == b.dp && a.stage == b.stage);
            if same_slot {
                matched += 1;
            }
        }
    }
    let mut s = if judged * 2 >= n {
        let follows = matched as f64 / judged as f64;
        let passed = follows >= 0.6 && counts.len() > 1;
        let sentence = if passed {
            format!(
                "In {matched} of {judged} steps the initiating worker was the one holding the costliest shard; {} different workers led: the straggler moves with the data.",
                counts.len()
            )
        } else if counts.len() == 1 {
            format!("{label} initiated every step, whatever the data: a persistent hotspot.")
        } else {
            format!(
                "The initiating worker held the costliest shard in only {matched} of {judged} steps; {label} led {:.0}% of them.",
                dominance * 100.0
            )
        };
        signal(ID, "Initiator follows the data", follows, 0.6, passed, sentence)
    } else {
        // Rotation: the share of steps not led by the most frequent initiator.
        let rotation = 1.0 - dominance;
        let passed = rotation >= 0.5;
        let sentence = if passed {
            format!(
                "{} different workers initiated the {n} steps; the most frequent ({label}) only {:.0}% of them: the straggler moves.",
                counts.len(),
                dominance * 100.0
            )
        } else {
            format!("{label} initiated {:.0}% of the {n} steps: a persistent hotspot, not the data.", dominance * 100.0)
        };
        signal(ID, "Initiating worker rotates", rotation, 0.5, passed, sentence)
    };
    s.detail.extend([
        ("dominance".into(), round(dominance, 3)),
        ("distinct".into(), counts.len() as f64),
        ("steps".into(), n as f64),
    ]);
    s
}

/// 5. A pipeline stage persistently heavier than the others.
fn stage_band(i: &Inputs<'_>) -> Signal {
    const ID: &str = "stage_band";
    const NAME: &str = "A pipeline stage is persistently heavier";
    if i.frame.stages < 2 {
        return not_applicable(ID, NAME, 1.15, "Single pipeline stage.");
    }
    let (stage, value) =
        i.factors.stage.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(p, &g)| (p, g)).unwrap_or((0, 1.0));
    let passed = value >= 1.15;
    let sentence = if passed {
        format!("Stage {stage} computes {value:.2}× the mean stage in a typical step: the pipeline waits for it.")
    } else {
        format!("Stages are even (the heaviest, stage {stage}, at {value:.2}× the mean).")
    };
    signal(ID, NAME, value, 1.15, passed, sentence)
}

/// 6. Communication-bound: transfers (not waiting) take a large part of the step.
fn communication_bound(i: &Inputs<'_>) -> Signal {
    const ID: &str = "communication_bound";
    if let Some(why) = i.peers_missing {
        let sentence = format!(
            "Time in collectives cannot be split into transfer and waiting: {why}, and that time may be spent waiting for the others."
        );
        return not_applicable(ID, "Communication-bound", 0.25, &sentence);
    }
    let transfer = median(&i.factors.transfer);
    let steps = i.attribution.per_step.len().max(1) as f64;
    let step = i.attribution.measured / steps;
    // Stages reduce their gradients at the same time, so one stage's transfer is the step's.
    let fraction = if step > 0.0 { (transfer / step).min(1.0) } else { 0.0 };
    let share = i.shares[4];
    // Jitter matters when it costs a noticeable part of the ideal step (5%), not just a large
    // share of a negligible slowdown.
    let jitter_cost = share * (i.slowdown - 1.0).max(0.0);
    let passed = fraction >= 0.25 || jitter_cost >= 0.05;
    let sentence = format!(
        "Transfers (time in collectives beyond waiting for the last rank) take {:.0}% of a step; their jitter accounts for {:.0}% of the slowdown.",
        fraction * 100.0,
        share * 100.0
    );
    let mut s = signal(ID, "Communication-bound", fraction, 0.25, passed, sentence);
    s.detail = vec![("jitter_share".into(), round(share, 3)), ("jitter_cost".into(), round(jitter_cost, 3))];
    s
}

/// 7. Host stalls: idle gaps (GC, data loading) on the initiating workers.
fn host_stalls(i: &Inputs<'_>) -> Signal {
    const ID: &str = "host_stalls";
    let f = i.frame;
    // Each initiator's excess and the part of it that is stall (against its step's typical
    // stall), on every core; summed in order.
    let parts = par::map(i.initiators.len(), par::min_rows(f.slots.len()), |k| {
        let x = i.initiators.get(k)?;
        let si = f.steps.binary_search(&x.step).ok()?;
        let stalls: Vec<f64> = f.step_cells(si).map(|(_, c)| c.stall as f64).collect();
        let typical = median(&stalls);
        let own = f.cell(si, x.worker).map_or(0.0, |c| c.stall as f64);
        Some((x.excess.max(0.0), (own - typical).clamp(0.0, x.excess.max(0.0))))
    });
    let mut total = 0.0;
    let mut stalled = 0.0;
    for (excess, stall) in parts.into_iter().flatten() {
        total += excess;
        stalled += stall;
    }
    if total <= 0.0 {
        return not_applicable(ID, "Host stalls on initiators", 0.3, "No worker does more work than the others.");
    }
    let value = stalled / total;
    let passed = value >= 0.3;
    let sentence = format!(
        "{:.0}% of the initiating workers' excess is idle time with nothing running (GC, data loading, host-side stalls).",
        value * 100.0
    );
    signal(ID, "Host stalls on initiators", value, 0.3, passed, sentence)
}

/// The features of a set of document lengths.
pub fn features_of(lengths: &[u32]) -> SeqFeatures {
    let mut sums = LengthSums::new();
    lengths.iter().for_each(|&l| sums.add(l));
    sums.features()
}

/// Document lengths summed as they come: [`features_of`] of them, none of them kept.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LengthSums {
    documents: usize,
    tokens: f64,
    max_len: u32,
    sum_sq: f64,
}

impl LengthSums {
    /// No documents. Float sums start at negative zero, as `Iterator::sum` does.
    pub fn new() -> Self {
        LengthSums { documents: 0, tokens: -0.0, max_len: 0, sum_sq: -0.0 }
    }

    pub fn add(&mut self, length: u32) {
        let l = f64::from(length);
        self.documents += 1;
        self.tokens += l;
        self.max_len = self.max_len.max(length);
        self.sum_sq += l * l;
    }

    pub fn features(&self) -> SeqFeatures {
        SeqFeatures {
            known: true,
            documents: self.documents as f64,
            tokens: self.tokens,
            max_len: f64::from(self.max_len),
            sum_sq: self.sum_sq,
            quadratic: self.sum_sq,
        }
    }
}

impl Default for LengthSums {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Job, KindTotals, SpanKind, Worker, WorkerStep};

    #[test]
    fn the_initiator_does_the_most_work_and_the_first_of_equals_wins() {
        // Per step, each worker's (compute, stall) in ms; a step one worker lacks is not judged.
        let work = [[(10, 0), (30, 5), (35, 0)], [(20, 0), (20, 0), (10, 0)], [(5, 0), (9, 0), (0, 0)]];
        let workers = (0..3)
            .map(|w| Worker {
                rank: w as u32,
                steps: work
                    .iter()
                    .enumerate()
                    .filter(|&(s, _)| !(s == 2 && w > 0))
                    .map(|(s, row)| {
                        let (compute, stall) = row[w];
                        let mut totals = KindTotals::default();
                        totals.add(SpanKind::Compute, compute * 1_000_000);
                        totals.add(SpanKind::HostStall, stall * 1_000_000);
                        WorkerStep { step: s as u64, duration: 50_000_000, totals, ..WorkerStep::default() }
                    })
                    .collect(),
                ..Worker::default()
            })
            .collect();
        let found: Vec<(u64, usize, f64, f64)> = initiators(&super::super::frame::build(&Job { workers }))
            .iter()
            .map(|i| (i.step, i.worker, round(i.excess / 1e6, 9), round(i.compute_excess / 1e6, 9)))
            .collect();
        // Step 0: worker 1 (35 ms of work, 5 of it a stall) ties worker 2; the mean is 80/3.
        let third = round(35.0 - 80.0 / 3.0, 9);
        let second = round(20.0 - 50.0 / 3.0, 9);
        assert_eq!(found, [(0, 1, third, 5.0), (1, 0, second, second)]);
    }

    #[test]
    fn step_costs_are_over_the_shards_with_lengths_and_the_first_costliest_leads() {
        use crate::model::{SequenceKnowledge, Sequences};
        // Three workers; worker 2's lengths are unknown.
        let lengths = [Some(vec![100, 300]), Some(vec![200, 200, 100, 100]), None];
        let workers = lengths
            .iter()
            .enumerate()
            .map(|(w, l)| Worker {
                rank: w as u32,
                steps: vec![WorkerStep {
                    step: 1,
                    duration: 10 + w as i64,
                    sequences: l
                        .clone()
                        .map(|l| Sequences::from_lengths(SequenceKnowledge::Exact, l))
                        .unwrap_or_default(),
                    ..WorkerStep::default()
                }],
                ..Worker::default()
            })
            .collect();
        let frame = super::super::frame::build(&Job { workers });
        let costs = step_costs(&frame, None, true);
        let c = &costs[0];
        // Σ L² (no fit): 100² + 300² = 2·200² + 2·100² = 100 000, a tie the first worker wins.
        assert_eq!((c.shards, c.longest, c.max, c.mean, c.costliest), (2, Some(11), 1e5, 1e5, Some(0)));
        // Without lengths anywhere, every worker counts (by compute) and none is the costliest.
        let c = &step_costs(&frame, None, false)[0];
        assert_eq!((c.shards, c.longest, c.costliest), (3, Some(12), None));
    }
}

//! The slowdown S and its attribution, by replaying every step (the method of the ByteDance
//! what-if analysis): the ideal run replaces each compute pass by the mean of its kind across
//! workers and each transfer by the median; restoring one group's real durations at a time
//! (stage factors, persistent worker factors, the step-to-step residual, stalls, transfers)
//! says how much of the slowdown each accounts for.
//!
//! The mean keeps a step's work: it is what dealing the same work evenly would give. The usual
//! what-if analysis (and the tools that implement it) puts every op at its *median* across
//! workers instead, with no launch delays; that ideal is replayed too ([`median_ops_into`]), so
//! that S can be compared with theirs. The two agree where the slowdown is a slow place (a stage,
//! a worker); they part where a few workers draw far more work, whose median is below the mean.

use std::collections::BTreeMap;
use std::ops::Range;

use super::par;
use super::slots::{DataSize, Slot, StepSlots, Steps};
use super::stats::{Mean, mean, median};
use crate::schedule::{Pass, replay_schedule};

/// The replayed length of one step. With micro-batch passes and several stages, each
/// data-parallel replica runs a pipeline under the step's schedule (1F1B or GPipe); every
/// stage's replicas then meet in their gradient collective; the step ends with the slowest
/// slot's tail.
pub fn replay_step(step: &StepSlots) -> f64 {
    let (stages, dps) = (step.stages(), step.dps());
    let micro_batches = step.passes_per_slot().max(1);
    let as_pipelines = pipelined(step);
    let mut arrivals: Vec<f64> = vec![0.0; stages];
    for d in 0..dps {
        // A column of replicas is built only to replay a pipeline (this runs for every slot of
        // every step, several times over).
        if as_pipelines {
            let column: Vec<Option<Slot<'_>>> = (0..stages).map(|p| step.slot(p, d)).collect();
            if column.iter().all(Option::is_some) {
                // Replay in integer nanoseconds through the shared schedule.
                let ready: Vec<i64> = column.iter().map(|s| s.map_or(0, |s| s.stall as i64)).collect();
                // A pass through one model chunk (interleaved) is its share of the whole pass.
                let duration = |p: usize, pass: Pass| -> i64 {
                    let (forward, backward) = step.chunk_shares.of(p, pass.chunk);
                    column
                        .get(p)
                        .copied()
                        .flatten()
                        .and_then(|s| s.passes.get(pass.micro_batch))
                        .map_or(0, |&(f, b)| (if pass.backward { b * backward } else { f * forward }) as i64)
                };
                let timings = replay_schedule(step.schedule, &ready, micro_batches, &duration, 0);
                for (p, stage) in timings.iter().enumerate() {
                    let end = stage.iter().map(|t| t.end).max().unwrap_or(0) as f64;
                    if let Some(a) = arrivals.get_mut(p) {
                        *a = a.max(end);
                    }
                }
                continue;
            }
        }
        for (p, a) in arrivals.iter_mut().enumerate() {
            if let Some(s) = step.slot(p, d) {
                *a = a.max(s.stall + s.compute());
            }
        }
    }
    let mut end = 0.0f64;
    for (p, arrival) in arrivals.iter().enumerate() {
        let reduce_end = arrival + step.transfer.get(p).copied().unwrap_or(0.0);
        for s in step.stage(p).flatten() {
            end = end.max(reduce_end + s.tail);
        }
    }
    end
}

/// Which durations a replay takes from the job (the rest are ideal).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Restore {
    /// Compute as the cost model predicts from each slot's data (no noise), when it can.
    pub data_compute: bool,
    /// Compute as measured with what the data predicts divided out: what varies that the
    /// lengths do not explain (an expert's load, noise), when every slot has a prediction.
    pub unexplained_compute: bool,
    pub stage_factors: bool,
    pub worker_factors: bool,
    pub residual_compute: bool,
    pub residual_stalls: bool,
    pub transfers: bool,
}

impl Restore {
    pub const ALL: Restore = Restore {
        data_compute: false,
        unexplained_compute: false,
        stage_factors: true,
        worker_factors: true,
        residual_compute: true,
        residual_stalls: true,
        transfers: true,
    };
}

/// A worker whose persistent factor is above this is slow (a factor is 1 unless it held on one
/// side of 1 in most steps: [`persistent`]).
pub const SLOW: f64 = 1.05;

/// The persistent parts of each slot's time, estimated across steps (all of them, or an even
/// sample of a big job's, as `factor_steps` picks them) with medians.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Factors {
    /// Per stage: its compute relative to the step's typical stage (the median).
    pub stage: Vec<f64>,
    /// Per `[stage][dp]`: compute relative to its stage.
    pub worker: Vec<Vec<f64>>,
    /// Per `[stage][dp]`: the stall it has in a typical step.
    pub persistent_stall: Vec<Vec<f64>>,
    /// The job's typical transfer time per stage.
    pub transfer: Vec<f64>,
    /// Per stage: `stage` over the stages' mean, the part the ideal run takes out. Balancing
    /// stages moves layers, it does not remove work: the balanced pipeline runs every stage at
    /// the mean level, not at the typical (lighter) one.
    balanced_stage: Vec<f64>,
}

impl Factors {
    fn stage_of(&self, p: usize) -> f64 {
        self.balanced_stage.get(p).copied().unwrap_or(1.0).max(1e-9)
    }

    fn worker_of(&self, p: usize, d: usize) -> f64 {
        self.worker.get(p).and_then(|r| r.get(d)).copied().unwrap_or(1.0).max(1e-9)
    }

    /// Stage and worker factor together: how much slower slot (p, d) is than the typical one.
    fn scale(&self, p: usize, d: usize) -> f64 {
        self.stage_of(p) * self.worker_of(p, d)
    }
}

/// What one step says of each slot and stage, before the medians across steps.
struct StepFactors {
    /// Per stage: its compute level relative to the step's typical one, where measurable.
    stage_ratio: Vec<Option<f64>>,
    /// Per slot (`p * dps + d`): its compute relative to what its data or its stage should
    /// take, and its stall; NaN where the slot is absent or the ratio not measurable.
    worker_ratio: Vec<f64>,
    stall: Vec<f64>,
    /// Per slot: its tokens and its Σ L², each relative to its stage's median; NaN where its
    /// lengths are unknown.
    tokens_ratio: Vec<f64>,
    quadratic_ratio: Vec<f64>,
    transfer: Vec<Option<f64>>,
    /// Some worker's ratio was taken against its stage's level, not against what its data
    /// should cost (no cost model, or no lengths for it): a slow ratio may then be the data.
    data_blind: bool,
}

fn step_factors(step: &StepSlots, stages: usize, dps: usize) -> StepFactors {
    let mut out = StepFactors {
        stage_ratio: vec![None; stages],
        worker_ratio: vec![f64::NAN; stages * dps],
        stall: vec![f64::NAN; stages * dps],
        tokens_ratio: vec![f64::NAN; stages * dps],
        quadratic_ratio: vec![f64::NAN; stages * dps],
        transfer: vec![None; stages],
        data_blind: false,
    };
    // Each slot's compute, summed once.
    let computes: Vec<Vec<Option<f64>>> =
        (0..step.stages()).map(|p| step.stage(p).map(|s| s.as_ref().map(Slot::compute)).collect()).collect();
    let all: Vec<f64> = computes.iter().flatten().flatten().copied().collect();
    // Medians: one slow worker must not make its whole stage look heavy.
    let overall = median(&all);
    // With two replicas a median is their mean, so half of one slow replica's excess would
    // be its stage's: a stage's level is then the lesser of its two (what both reach).
    let lesser: Vec<f64> = computes
        .iter()
        .filter_map(|row| match row.as_slice() {
            [Some(a), Some(b)] => Some(a.min(*b)),
            _ => None,
        })
        .collect();
    let pairs = (lesser.len() == computes.len()).then(|| median(&lesser)).filter(|m| *m > 0.0);
    for (p, row_computes) in computes.iter().enumerate() {
        let stage_values: Vec<f64> = row_computes.iter().flatten().copied().collect();
        let (stage_level, typical) = match (pairs, lesser.get(p)) {
            (Some(typical), Some(&l)) => (l, typical),
            // A single stage's median is the one already taken.
            _ if computes.len() == 1 => (overall, overall),
            _ => (median(&stage_values), overall),
        };
        if typical > 0.0
            && !stage_values.is_empty()
            && let Some(v) = out.stage_ratio.get_mut(p)
        {
            *v = Some(stage_level / typical);
        }
        // A worker's own speed: its compute against what its data should cost (when the cost
        // model says), else against its stage's level — so drawing heavy data is not slowness.
        // Against the stage's typical such ratio: a mean would take in the slow worker's own.
        let present = || step.stage(p).zip(row_computes).filter_map(|(s, c)| s.zip(*c));
        let expected: Option<Vec<f64>> = present().map(|(s, c)| s.expected.map(|e| c / e.max(1.0))).collect();
        let typical = expected.as_ref().map(|r| typical_of(r));
        for (d, (s, c)) in step.stage(p).zip(row_computes).enumerate().take(dps) {
            let (Some(s), Some(c)) = (s, *c) else { continue };
            let ratio = match (typical, s.expected) {
                (Some(t), Some(e)) if t > 0.0 => Some(c / e.max(1.0) / t),
                _ if stage_level > 0.0 => {
                    out.data_blind = true;
                    Some(c / stage_level)
                }
                _ => None,
            };
            if let (Some(r), Some(v)) = (ratio, out.worker_ratio.get_mut(p * dps + d)) {
                *v = r;
            }
            if let Some(v) = out.stall.get_mut(p * dps + d) {
                *v = s.stall;
            }
        }
        let data: Vec<DataSize> = step.stage(p).flatten().filter_map(|s| s.data).collect();
        let typical_tokens = median(&data.iter().map(|x| x.tokens).collect::<Vec<_>>());
        let typical_quadratic = median(&data.iter().map(|x| x.quadratic).collect::<Vec<_>>());
        for (d, s) in step.stage(p).enumerate().take(dps) {
            let Some(x) = s.and_then(|s| s.data) else { continue };
            let ratio = |v: f64, typical: f64| if typical > 0.0 { v / typical } else { 1.0 };
            if let Some(v) = out.tokens_ratio.get_mut(p * dps + d) {
                *v = ratio(x.tokens, typical_tokens);
            }
            if let Some(v) = out.quadratic_ratio.get_mut(p * dps + d) {
                *v = ratio(x.quadratic, typical_quadratic);
            }
        }
        if let (Some(v), Some(&t)) = (out.transfer.get_mut(p), step.transfer.get(p)) {
            *v = Some(t);
        }
    }
    out
}

pub fn factors<S: Steps + ?Sized>(steps: &S) -> Factors {
    let (stages, dps) = steps.shape();
    let width = stages * dps;
    // Each step alone, on every core (each core making its steps one after another in one
    // buffer); then each slot's values across the steps, in step order.
    let sampled = factor_steps(steps.count(), width);
    let per_step: Vec<StepFactors> = par::parts(sampled.len(), par::min_rows(width), |range| {
        let mut step = StepSlots::default();
        sampled
            .get(range)
            .unwrap_or_default()
            .iter()
            .map(|&i| {
                steps.fill(i, &mut step);
                step_factors(&step, stages, dps)
            })
            .collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect();
    let slots = width.max(1);
    let per_slot: Vec<SlotFactors> = par::parts(width, SLOTS_PER_BLOCK, |range| slot_factors(&per_step, range, slots))
        .into_iter()
        .flatten()
        .collect();
    let by_stage = |value: fn(&SlotFactors) -> f64| -> Vec<Vec<f64>> {
        per_slot.chunks(dps.max(1)).map(|c| c.iter().map(value).collect()).collect()
    };
    let mut worker = by_stage(|f| f.worker);
    let mut persistent_stall = by_stage(|f| f.stall);
    // Where a worker's ratio is against its stage's level (no usable cost model), one whose
    // lengths say it persistently draws more than its peers may be slow by its data (e.g. a
    // balancer that always hands rank 0 the longest document): that is not a worker property.
    // Its compute is a positive mix of its tokens and its Σ L² (and a constant), so its excess
    // is at most theirs: data explains it only where the larger of the two excesses is at least
    // half its compute's. A worker whose lengths say it draws about as much as the others, or
    // whose lengths are unknown, is taken as slow itself, however many such there are (two slow
    // GPUs, a slow node of eight); without lengths the verdict says what would decide.
    let data_blind = per_step.iter().any(|f| f.data_blind);
    let explained_by_data = |f: &SlotFactors| f.data.is_some_and(|x| x - 1.0 >= (f.worker - 1.0) / 2.0);
    for (f, w) in per_slot.iter().zip(worker.iter_mut().flatten()) {
        if data_blind && f.worker > SLOW && explained_by_data(f) {
            *w = 1.0;
        }
    }
    // Many workers persistently stalling alike is the job's way of working, not a host's fault.
    let rare = |count: usize| count <= (slots / 10).max(1);
    let typical_stall = median(&persistent_stall.iter().flatten().copied().collect::<Vec<_>>());
    if !rare(persistent_stall.iter().flatten().filter(|&&s| s > typical_stall * 1.5 + 1e6).count()) {
        persistent_stall.iter_mut().flatten().for_each(|s| *s = typical_stall);
    }
    let across = |p: usize, value: fn(&StepFactors, usize) -> Option<f64>| -> Vec<f64> {
        per_step.iter().filter_map(|f| value(f, p)).collect()
    };
    let stage: Vec<f64> = (0..stages)
        .map(|p| {
            let ratios = across(p, |f, p| f.stage_ratio.get(p).copied().flatten());
            persistent(&ratios, steps_needed(ratios.len(), stages))
        })
        .collect();
    let mean_stage = mean(&stage);
    Factors {
        balanced_stage: stage.iter().map(|g| if mean_stage > 0.0 { g / mean_stage } else { 1.0 }).collect(),
        stage,
        worker,
        persistent_stall,
        transfer: (0..stages).map(|p| median(&across(p, |f, p| f.transfer.get(p).copied().flatten()))).collect(),
    }
}

/// The steps whose factors are taken: every step, or on a job of more than [`FACTOR_SLOTS`]
/// slot-steps the most steps that keep within it (never fewer than [`MIN_FACTOR_STEPS`]),
/// evenly spread. A factor is a median of per-step ratios, settled long before a thousand
/// steps; the attribution still replays every step.
fn factor_steps(count: usize, width: usize) -> Vec<usize> {
    let taken = count.min((FACTOR_SLOTS / width.max(1)).max(MIN_FACTOR_STEPS));
    // In 128 bits: `i × count` passes 32 bits (wasm's usize) beyond 65 536 steps.
    let nth = |i: usize| (i as u128 * count as u128 / taken as u128) as usize;
    (0..taken).map(nth).collect()
}

/// The slot-steps whose factors are taken (4096 workers: 256 steps).
const FACTOR_SLOTS: usize = 1 << 20;
const MIN_FACTOR_STEPS: usize = 128;

/// Slots are gathered from the per-step rows this many at a time: a cache line of each row.
const SLOTS_PER_BLOCK: usize = 8;

/// One slot's persistent values across the steps.
struct SlotFactors {
    /// Its compute relative to its stage's (or its data's) level ([`persistent`]).
    worker: f64,
    /// Its median stall.
    stall: f64,
    /// How much more data it persistently draws than its peers: the larger of its tokens' and
    /// its Σ L²'s persistent ratios ([`persistent`]: each is 1 unless it stays on one side);
    /// `None` where its lengths are unknown.
    data: Option<f64>,
}

/// For each slot in `range`: its [`SlotFactors`], persistent among `candidates` slots.
fn slot_factors(per_step: &[StepFactors], range: Range<usize>, candidates: usize) -> Vec<SlotFactors> {
    // Slots mostly have as many ratios as each other: each threshold is worked out once.
    let mut thresholds: BTreeMap<usize, usize> = BTreeMap::new();
    let mut needed = |n: usize| *thresholds.entry(n).or_insert_with(|| steps_needed(n, candidates));
    let mut out = Vec::with_capacity(range.len());
    let (mut ratios, mut stalls, mut tokens, mut quadratic) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for first in range.clone().step_by(SLOTS_PER_BLOCK) {
        let block = first..(first + SLOTS_PER_BLOCK).min(range.end);
        for column in [&mut ratios, &mut stalls, &mut tokens, &mut quadratic] {
            column.resize_with(block.len(), || Vec::with_capacity(per_step.len()));
            column.iter_mut().for_each(Vec::clear);
        }
        let known = |values: &[f64], i: usize| values.get(i).copied().filter(|x| !x.is_nan());
        for f in per_step {
            let columns = ratios.iter_mut().zip(stalls.iter_mut()).zip(tokens.iter_mut().zip(quadratic.iter_mut()));
            for (((r, s), (t, q)), i) in columns.zip(block.clone()) {
                r.extend(known(&f.worker_ratio, i));
                s.extend(known(&f.stall, i));
                t.extend(known(&f.tokens_ratio, i));
                q.extend(known(&f.quadratic_ratio, i));
            }
        }
        for ((r, s), (t, q)) in ratios.iter().zip(&stalls).zip(tokens.iter().zip(&quadratic)) {
            let data = (!t.is_empty()).then(|| persistent(t, needed(t.len())).max(persistent(q, needed(q.len()))));
            out.push(SlotFactors { worker: persistent(r, needed(r.len())), stall: median(s), data });
        }
    }
    out
}

/// A factor is persistent when it is on the same side of 1 in at least this share of steps;
/// otherwise it is step-to-step variation (the data), not a property of the worker or stage.
const PERSISTENT: f64 = 0.75;

/// The median of per-step ratios if they are persistent (on one side of 1 in at least `needed`
/// steps: [`steps_needed`]), else 1.
fn persistent(ratios: &[f64], needed: usize) -> f64 {
    if ratios.is_empty() {
        return 1.0;
    }
    let m = median(ratios);
    let same_side = ratios.iter().filter(|&&r| (r > 1.0) == (m > 1.0) && r != 1.0).count();
    if same_side >= needed { m } else { 1.0 }
}

/// How many of `n` steps must fall on one side of 1 for a factor to be persistent: at least
/// [`PERSISTENT`] of them, and so many that at most one of `candidates` slots whose ratios fell
/// either side by a fair coin would be expected to get there (1024 workers over 12 steps: all
/// 12, where 9 would be reached by about 75 of them). `n + 1` when no count is enough.
fn steps_needed(n: usize, candidates: usize) -> usize {
    let floor = (PERSISTENT * n as f64).ceil() as usize;
    // P(X ≥ k) for X ~ Binomial(n, ½), summed from k = n down, in logs (2⁻ⁿ underflows).
    let ln_2n = n as f64 * std::f64::consts::LN_2;
    let (mut ln_choose, mut tail) = (0.0f64, 0.0f64);
    for k in (floor.max(1)..=n).rev() {
        tail += (ln_choose - ln_2n).exp();
        // Either side: twice the one-sided chance, for each candidate.
        // (With a little slack for rounding: 2048 slots over 12 steps expect exactly one.)
        if 2.0 * tail * candidates as f64 > 1.0 + 1e-9 {
            return k + 1;
        }
        // C(n, k − 1) = C(n, k) · k / (n − k + 1).
        ln_choose += (k as f64 / (n - k + 1) as f64).ln();
    }
    floor
}

/// A step's ideal values (means and medians across its slots), computed once for all of its
/// restorations.
#[derive(Clone, Copy)]
struct Baseline {
    forward: f64,
    backward: f64,
    tail: f64,
    stall: f64,
    expected: f64,
    pass_expected: f64,
}

impl Baseline {
    /// One pass over the step's slots (this runs for every step).
    fn of(step: &StepSlots, f: &Factors) -> Self {
        // The mean passes have the persistent stage and worker factors taken out (a slow
        // worker must not slow the ideal run).
        let (mut forward, mut backward) = (Mean::default(), Mean::default());
        let (mut tail, mut expected, mut pass_expected) = (Mean::default(), Mean::default(), Mean::default());
        let mut stalls = Vec::with_capacity(step.stages() * step.dps());
        for ((p, d), s) in step.present_slots() {
            let scale = f.scale(p, d);
            for &(x, y) in s.passes {
                forward.add(x / scale);
                backward.add(y / scale);
            }
            tail.add(s.tail);
            stalls.push(s.stall);
            s.expected.into_iter().for_each(|e| expected.add(e));
            s.expected_passes.into_iter().flatten().for_each(|&e| pass_expected.add(e));
        }
        Baseline {
            forward: forward.get(),
            backward: backward.get(),
            tail: tail.get(),
            stall: typical_of(&stalls),
            expected: expected.get(),
            pass_expected: pass_expected.get(),
        }
    }
}

/// What a step's slots typically take (their stall, or their compute against what their data
/// should cost): the median, but of exactly two slots the lesser. The median of two is their
/// mean, so one stalled or slow worker of two would put half its excess in the ideal run (as a
/// median of two replicas would give half of one slow replica's excess to its stage:
/// [`step_factors`]).
fn typical_of(values: &[f64]) -> f64 {
    match values {
        [a, b] => a.min(*b),
        _ => median(values),
    }
}

/// A slot of a step, to restore in one way or another: what every way reads, looked up once.
struct Restorer<'a> {
    slot: Slot<'a>,
    base: &'a Baseline,
    stage_factor: f64,
    worker_factor: f64,
    persistent_stall: f64,
}

impl<'a> Restorer<'a> {
    fn new(slot: Slot<'a>, (p, d): (usize, usize), f: &Factors, base: &'a Baseline) -> Self {
        Restorer {
            slot,
            base,
            stage_factor: f.stage_of(p),
            worker_factor: f.worker_of(p, d),
            persistent_stall: f.persistent_stall.get(p).and_then(|r| r.get(d)).copied().unwrap_or(0.0),
        }
    }

    /// The slot with only the restored parts taken from the job: each of its passes (forward,
    /// backward) given to `pass` in order, its stall and tail returned.
    fn restore(&self, keep: Restore, mut pass: impl FnMut((f64, f64))) -> (f64, f64) {
        let (s, b) = (&self.slot, self.base);
        let (g, w) = (self.stage_factor, self.worker_factor);
        let scale = (if keep.stage_factors { g } else { 1.0 }) * (if keep.worker_factors { w } else { 1.0 });
        match (s.expected_passes, s.expected) {
            (Some(expected), _) if keep.data_compute && b.pass_expected > 0.0 => {
                // Each micro-batch as its data predicts (a pipeline feels every one).
                for e in expected {
                    let r = e / b.pass_expected;
                    pass((b.forward * scale * r, b.backward * scale * r));
                }
            }
            (_, Some(expected)) if keep.data_compute && b.expected > 0.0 => {
                let r = expected / b.expected;
                s.passes.iter().for_each(|_| pass((b.forward * scale * r, b.backward * scale * r)));
            }
            (Some(expected), _) if keep.unexplained_compute && b.pass_expected > 0.0 => {
                for (&(x, y), e) in s.passes.iter().zip(expected) {
                    let r = unexplained_ratio(*e, b.pass_expected);
                    pass((x / (g * w) * scale * r, y / (g * w) * scale * r));
                }
            }
            (_, Some(expected)) if keep.unexplained_compute && b.expected > 0.0 => {
                let r = unexplained_ratio(expected, b.expected);
                s.passes.iter().for_each(|&(x, y)| pass((x / (g * w) * scale * r, y / (g * w) * scale * r)));
            }
            _ if keep.residual_compute => {
                // Actual durations with the persistent factors taken out (and put back if kept).
                s.passes.iter().for_each(|&(x, y)| pass((x / (g * w) * scale, y / (g * w) * scale)));
            }
            _ => s.passes.iter().for_each(|_| pass((b.forward * scale, b.backward * scale))),
        }
        let stall = match (keep.worker_factors, keep.residual_stalls) {
            (true, true) => s.stall,
            (true, false) => b.stall.max(self.persistent_stall),
            (false, true) => b.stall.max(s.stall - self.persistent_stall),
            (false, false) => b.stall,
        };
        let tail = if keep == Restore::ALL { s.tail } else { b.tail };
        (stall, tail)
    }
}

/// What scales a measured pass to its cost with the data's share taken out: the typical
/// prediction over its own. A prediction at or below zero (a fit's intercept can be negative)
/// says nothing of the pass, which keeps its measured time.
fn unexplained_ratio(expected: f64, typical: f64) -> f64 {
    if expected > 0.0 { typical / expected } else { 1.0 }
}

/// Writes into `out` (a clone of `step`, reused across restorations so that no slot is
/// allocated again) the step with only the restored parts taken from the job.
fn restore_into(step: &StepSlots, f: &Factors, base: &Baseline, keep: Restore, out: &mut StepSlots) {
    for ((p, d), s) in step.present_slots() {
        let passes = out.passes_mut((p, d));
        let mut next = passes.iter_mut();
        let (stall, tail) = Restorer::new(s, (p, d), f, base).restore(keep, |x| {
            if let Some(pass) = next.next() {
                *pass = x;
            }
        });
        out.set_stall_and_tail((p, d), stall, tail);
    }
    out.transfer.clone_from(if keep.transfers { &step.transfer } else { &f.transfer });
    // An interleaved stage's chunks are stages of the pipeline too: balanced with the stages.
    out.chunk_shares.clone_from(&step.chunk_shares);
    if !keep.stage_factors {
        out.chunk_shares.even_out();
    }
}

/// Is the step replayed as pipelines (several stages, several micro-batches)? Otherwise its
/// length is, per stage, the slowest slot's arrival, the transfer and the longest tail.
fn pipelined(step: &StepSlots) -> bool {
    step.stages() > 1 && step.passes_per_slot() > 1 && step.present_slots().next().is_some()
}

/// [`replay_step`] of the step restored in each way of `keeps`, into `ends` (one each).
/// Data-parallel steps are replayed for all of them in one pass over the slots, with nothing
/// written: the attribution restores every slot of every step seven or nine ways. Pipelines
/// are restored into `scratch` (a clone of `step`) and replayed, one way at a time.
fn replay_restored(
    step: &StepSlots,
    f: &Factors,
    base: &Baseline,
    keeps: &[Restore],
    scratch: &mut StepSlots,
    ends: &mut Vec<f64>,
) {
    ends.clear();
    if pipelined(step) {
        for &keep in keeps {
            restore_into(step, f, base, keep, scratch);
            ends.push(replay_step(scratch));
        }
        return;
    }
    ends.resize(keeps.len(), 0.0);
    // Ways that take nothing from the slot itself (its stall and tail the step's, its passes
    // the step's mean scaled by at most the stage factor) restore every slot of a stage alike:
    // the first present one stands for all of them (the latest of equal arrivals is that one).
    let alike: Vec<bool> = keeps
        .iter()
        .map(|k| {
            !(k.data_compute
                || k.unexplained_compute
                || k.residual_compute
                || k.worker_factors
                || k.residual_stalls
                || *k == Restore::ALL)
        })
        .collect();
    // Per way: the stage's latest arrival at its collective and its longest tail.
    let mut stage: Vec<(f64, Option<f64>)> = vec![(0.0, None); keeps.len()];
    for p in 0..step.stages() {
        stage.fill((0.0, None));
        let mut first = true;
        for (d, s) in step.stage(p).enumerate() {
            let Some(s) = s else { continue };
            let slot = Restorer::new(s, (p, d), f, base);
            for (((arrival, longest_tail), &keep), &alike) in stage.iter_mut().zip(keeps).zip(&alike) {
                if alike && !first {
                    continue;
                }
                let mut compute = -0.0;
                let (stall, tail) = slot.restore(keep, |x| compute += x.0 + x.1);
                *arrival = arrival.max(stall + compute);
                *longest_tail = Some(longest_tail.map_or(tail, |t| t.max(tail)));
            }
            first = false;
        }
        for ((end, &(arrival, longest_tail)), keep) in ends.iter_mut().zip(&stage).zip(keeps) {
            // Rounding is monotonic, so adding to the longest tail is the longest of the sums.
            if let Some(tail) = longest_tail {
                let transfers = if keep.transfers { &step.transfer } else { &f.transfer };
                *end = end.max(arrival + transfers.get(p).copied().unwrap_or(0.0) + tail);
            }
        }
    }
}

/// Writes into `out` (a clone of `step`) the step as the usual what-if analysis idealises it:
/// every pass at the median of that pass (its micro-batch, forward or backward) across the
/// step's slots, every tail at the slots' median, no stalls (launch delays removed), transfers
/// at the job's median.
fn median_ops_into(step: &StepSlots, f: &Factors, out: &mut StepSlots) {
    let (passes, tail) = median_ops(step);
    for (at, _) in step.present_slots() {
        out.passes_mut(at).iter_mut().zip(&passes).for_each(|(pass, median)| *pass = *median);
        out.set_stall_and_tail(at, 0.0, tail);
    }
    out.transfer.clone_from(&f.transfer);
    // Each model chunk's pass at the median too: an even share of the median pass.
    out.chunk_shares.even_out();
}

/// Each pass's median (forward, backward) across the step's slots, and the tails' median.
fn median_ops(step: &StepSlots) -> (Vec<(f64, f64)>, f64) {
    let mut column: Vec<f64> = Vec::with_capacity(step.stages() * step.dps());
    let mut median_of = |value: &dyn Fn(Slot<'_>) -> Option<f64>| {
        column.clear();
        column.extend(step.present_slots().filter_map(|(_, s)| value(s)));
        median(&column)
    };
    let passes = (0..step.passes_per_slot())
        .map(|m| (median_of(&|s| s.passes.get(m).map(|p| p.0)), median_of(&|s| s.passes.get(m).map(|p| p.1))))
        .collect();
    (passes, median_of(&|s| Some(s.tail)))
}

/// The replayed length of the step with every op at its median ([`median_ops_into`]):
/// pipelines are replayed from `scratch` (a clone of `step`); without pipelines every slot is
/// alike, and the step is one slot's compute, its stage's transfer and the tail.
fn replay_median_ops(step: &StepSlots, f: &Factors, scratch: &mut StepSlots) -> f64 {
    if pipelined(step) {
        median_ops_into(step, f, scratch);
        return replay_step(scratch);
    }
    let (passes, tail) = median_ops(step);
    let compute: f64 = passes.iter().map(|p| p.0 + p.1).sum();
    let stages = (0..step.stages()).filter(|&p| step.stage(p).any(|s| s.is_some()));
    stages.map(|p| compute + f.transfer.get(p).copied().unwrap_or(0.0) + tail).fold(0.0, f64::max)
}

/// Replayed step times summed over the job, for the actual run and the ideal run, and what
/// each single restoration adds to the ideal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attribution {
    pub actual: f64,
    pub ideal: f64,
    pub measured: f64,
    pub gains: Gains,
    /// The ideal of the usual what-if analysis: every op at its median across workers.
    pub median_ops: f64,
    pub per_step: Vec<StepTimes>,
}

/// How much longer than the ideal run the steps replay with one group of real durations
/// restored, summed over the steps where the group adds time. A step where a group runs faster
/// than typical (a transfer below the median) does not offset the steps where it is slower:
/// jitter falls on both sides of its typical value, while the busiest of several ranks is
/// above the mean in every step, and netting would count the first far less than the second
/// for the same time lost (a job's transfer jitter came out a third below its true share).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gains {
    pub stage: f64,
    pub worker: f64,
    pub residual_compute: f64,
    /// Compute as the cost model predicts from the data, when every slot has a prediction.
    pub data_compute: Option<f64>,
    /// Compute that varies beyond what the data predicts, where `data_compute` is known.
    pub unexplained_compute: Option<f64>,
    pub residual_stalls: f64,
    pub transfers: f64,
}

/// One step's measured length and its actual and ideal replays.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTimes {
    pub measured: f64,
    pub actual: f64,
    pub ideal: f64,
}

/// One step's replays, each restoration alone.
struct StepReplays {
    actual: f64,
    ideal: f64,
    stage: f64,
    worker: f64,
    residual_compute: f64,
    /// `None` when a slot of the step has no prediction (and so the next).
    data_compute: Option<f64>,
    unexplained_compute: Option<f64>,
    residual_stalls: f64,
    transfers: f64,
    median_ops: f64,
}

fn replays(step: &StepSlots, f: &Factors) -> StepReplays {
    let none = Restore::default();
    let base = Baseline::of(step, f);
    let mut scratch = if pipelined(step) { step.clone() } else { StepSlots::default() };
    // Every slot predicted from its data, whole or by micro-batch (a pipeline's worker-step fit
    // can be unusable while its micro-batches' is good).
    let predicted = step.present_slots().all(|(_, s)| s.expected.is_some() || s.expected_passes.is_some());
    let mut keeps = vec![
        Restore::ALL,
        none,
        Restore { stage_factors: true, ..none },
        Restore { worker_factors: true, ..none },
        Restore { residual_compute: true, ..none },
        Restore { residual_stalls: true, ..none },
        Restore { transfers: true, ..none },
    ];
    if predicted {
        keeps.push(Restore { data_compute: true, ..none });
        keeps.push(Restore { unexplained_compute: true, ..none });
    }
    let mut ends = Vec::with_capacity(keeps.len());
    replay_restored(step, f, &base, &keeps, &mut scratch, &mut ends);
    let end = |k: usize| ends.get(k).copied().unwrap_or(0.0);
    StepReplays {
        actual: end(0),
        ideal: end(1),
        stage: end(2),
        worker: end(3),
        residual_compute: end(4),
        residual_stalls: end(5),
        transfers: end(6),
        data_compute: predicted.then(|| end(7)),
        unexplained_compute: predicted.then(|| end(8)),
        median_ops: replay_median_ops(step, f, &mut scratch),
    }
}

pub fn attribute<S: Steps + ?Sized>(steps: &S, f: &Factors) -> Attribution {
    let (stages, dps) = steps.shape();
    // Each core makes its steps one after another in one buffer.
    let per_step = par::parts(steps.count(), par::min_rows(stages * dps), |range| {
        let mut step = StepSlots::default();
        range
            .map(|i| {
                steps.fill(i, &mut step);
                (step.measured, replays(&step, f))
            })
            .collect::<Vec<_>>()
    });
    // Summed in step order, as one core would.
    let mut a = Attribution::default();
    for (measured, r) in per_step.into_iter().flatten() {
        a.actual += r.actual;
        a.ideal += r.ideal;
        a.measured += measured;
        let gain = |restored: f64| (restored - r.ideal).max(0.0);
        let g = &mut a.gains;
        g.stage += gain(r.stage);
        g.worker += gain(r.worker);
        g.residual_compute += gain(r.residual_compute);
        let first = a.per_step.is_empty();
        let add = |sum: Option<f64>, step: Option<f64>| match (sum, step) {
            (None, Some(d)) if first => Some(gain(d)),
            (Some(x), Some(d)) => Some(x + gain(d)),
            _ => None,
        };
        g.data_compute = add(g.data_compute, r.data_compute);
        g.unexplained_compute = add(g.unexplained_compute, r.unexplained_compute);
        g.residual_stalls += gain(r.residual_stalls);
        g.transfers += gain(r.transfers);
        a.median_ops += r.median_ops;
        a.per_step.push(StepTimes { measured, actual: r.actual, ideal: r.ideal });
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::slots::SlotStep;

    fn slot(stall: f64, compute: f64) -> Option<SlotStep> {
        Some(SlotStep {
            stall,
            passes: vec![(compute, 0.0)],
            tail: 1.0,
            comm: 0.0,
            expected: None,
            expected_passes: None,
            data: None,
        })
    }

    fn step(slots: Vec<Option<SlotStep>>, transfer: f64) -> StepSlots {
        StepSlots::of(&[slots], &[transfer])
    }

    #[test]
    fn data_parallel_steps_wait_for_the_slowest_rank() {
        let s = step(vec![slot(0.0, 10.0), slot(0.0, 30.0), slot(5.0, 10.0)], 2.0);
        assert_eq!(replay_step(&s), 30.0 + 2.0 + 1.0);
    }

    #[test]
    fn a_persistent_slow_rank_is_a_worker_factor_not_a_residual() {
        // Rank 1 is 1.5× every step; the data is perfectly balanced.
        let steps: Vec<StepSlots> =
            (0..6).map(|_| step(vec![slot(0.0, 10.0), slot(0.0, 15.0), slot(0.0, 10.0)], 1.0)).collect();
        let f = factors(&steps[..]);
        let a = attribute(&steps[..], &f);
        assert!(a.actual > a.ideal * 1.2, "{a:?}");
        assert!((a.gains.worker - (a.actual - a.ideal)).abs() < 1e-6, "{a:?}");
        assert!(a.gains.residual_compute.abs() < 1e-6, "{a:?}");
    }

    #[test]
    fn the_what_if_ideal_puts_every_op_at_its_median_across_workers() {
        // Three ranks, one of them (a different one each step) drawing 4× the work, each
        // stalled 5 before it computes: the mean ideal deals the work evenly (compute 20) and
        // keeps the typical stall, the median ideal gives every rank the median op (10) and no
        // stall (no launch delays). Either step ends with the transfer (2) and the tail (1).
        let steps: Vec<StepSlots> = (0..6)
            .map(|i| step((0..3).map(|d| slot(5.0, if d == i % 3 { 40.0 } else { 10.0 })).collect(), 2.0))
            .collect();
        let a = attribute(&steps[..], &factors(&steps[..]));
        let per_step = |total: f64| total / 6.0;
        assert_eq!((per_step(a.ideal), per_step(a.median_ops)), (5.0 + 20.0 + 3.0, 10.0 + 3.0), "{a:?}");
        // A 2-stage pipeline whose second stage takes twice the first's time: in the median
        // ideal both stages take their median (the mean of two), and the replay is that of the
        // balanced pipeline.
        let pass = |x: f64| (x, 2.0 * x);
        let stage = |x: f64| vec![Some(SlotStep { passes: vec![pass(x), pass(x)], ..slot(1.0, 0.0).expect("a slot") })];
        let heavy = StepSlots::of(&[stage(4.0), stage(8.0)], &[0.0, 0.0]);
        let balanced = StepSlots::of(&[stage(6.0), stage(6.0)], &[0.0, 0.0]);
        let mut balanced_without_stalls = balanced.clone();
        for p in 0..2 {
            balanced_without_stalls.set_stall_and_tail((p, 0), 0.0, 1.0);
        }
        let f = factors(&[heavy.clone()][..]);
        let mut scratch = heavy.clone();
        assert_eq!(replay_median_ops(&heavy, &f, &mut scratch), replay_step(&balanced_without_stalls));
        assert!(replay_step(&heavy) > replay_step(&balanced));
    }

    #[test]
    fn big_jobs_take_their_factors_from_an_even_sample_of_steps() {
        // (steps, slots) → how many steps, and the first three.
        let cases = [
            ((12, 4), 12, vec![0, 1, 2]),
            ((1000, 1024), 1000, vec![0, 1, 2]),
            ((1000, 4096), 256, vec![0, 3, 7]),
            ((1000, 1 << 20), 128, vec![0, 7, 15]),
            ((0, 4096), 0, vec![]),
            // A product of step counts that no machine word holds.
            ((1 << 60, 1 << 20), 128, vec![0, 1 << 53, 2 << 53]),
        ];
        for ((count, width), taken, first) in cases {
            let steps = factor_steps(count, width);
            assert_eq!((steps.len(), &steps[..first.len()]), (taken, &first[..]), "{count} × {width}");
            assert!(steps.windows(2).all(|w| w[0] < w[1]) && steps.last().is_none_or(|&l| l < count));
        }
    }

    /// Steps made as they are asked for, counted: 2048 ranks over 1024 steps, rank 1 taking
    /// half as long again every step, and each step one other rank (a different one each step)
    /// 30 % heavier, as the longest documents would make it.
    struct Rotating {
        fills: std::sync::atomic::AtomicUsize,
    }

    impl Steps for Rotating {
        fn count(&self) -> usize {
            1024
        }

        fn shape(&self) -> (usize, usize) {
            (1, 2048)
        }

        fn fill(&self, i: usize, out: &mut StepSlots) {
            self.fills.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let heavy = (i * 7 + 3) % 2048;
            let slots = (0..2048).map(|d| {
                let compute = 10.0 * if d == 1 { 1.5 } else { 1.0 } * if d == heavy { 1.3 } else { 1.0 };
                slot(0.0, compute)
            });
            *out = step(slots.collect(), 2.0);
        }
    }

    #[test]
    fn a_sample_of_steps_finds_the_persistent_factors() {
        let steps = Rotating { fills: Default::default() };
        let f = factors(&steps);
        // 2048 slots: 512 of the 1024 steps.
        assert_eq!(steps.fills.load(std::sync::atomic::Ordering::Relaxed), 512);
        let worker = f.worker.first().expect("one stage");
        assert_eq!(worker.get(1), Some(&1.5));
        assert!(worker.iter().enumerate().all(|(d, &w)| d == 1 || w == 1.0), "{:?}", &worker[..8]);
        assert_eq!((f.stage.clone(), f.transfer.clone()), (vec![1.0], vec![2.0]));
    }

    /// Four ranks whose data predicts their compute, a heavy one each step by turns: the data's
    /// replay costs all the time lost and the compute over its prediction none. The same ranks
    /// with even data and one of them doing 3× by turns (a hot expert): the reverse.
    #[test]
    fn compute_the_data_predicts_is_told_from_compute_it_does_not() {
        let job = |heavy_data: bool| -> Vec<StepSlots> {
            (0..8)
                .map(|i| {
                    let slots = (0..4).map(|d| {
                        let heavy = if d == i % 4 { 3.0 } else { 1.0 };
                        let expected = if heavy_data { 10.0 * heavy } else { 10.0 };
                        Some(SlotStep { expected: Some(expected), ..slot(0.0, 10.0 * heavy).expect("a slot") })
                    });
                    step(slots.collect(), 1.0)
                })
                .collect()
        };
        for heavy_data in [true, false] {
            let steps = job(heavy_data);
            let a = attribute(&steps[..], &factors(&steps[..]));
            let lost = a.actual - a.ideal;
            let (data, unexplained) =
                (a.gains.data_compute.unwrap_or(-1.0), a.gains.unexplained_compute.unwrap_or(-1.0));
            let (explained, other) = if heavy_data { (data, unexplained) } else { (unexplained, data) };
            assert!(lost > 0.0 && (explained - lost).abs() < 1e-6 && other.abs() < 1e-6, "{heavy_data}: {a:?}");
        }
        // A pipeline predicted by micro-batch only (its worker-step fit unusable) is predicted.
        let passes = vec![(10.0, 20.0), (30.0, 60.0)];
        let pipelined_slot = || {
            Some(SlotStep {
                passes: passes.clone(),
                expected_passes: Some(vec![10.0, 30.0]),
                ..slot(0.0, 0.0).expect("a slot")
            })
        };
        let pipeline = StepSlots::of(&[vec![pipelined_slot()], vec![pipelined_slot()]], &[1.0, 1.0]);
        let steps = [pipeline];
        let a = attribute(&steps[..], &factors(&steps[..]));
        assert!(a.gains.data_compute.is_some_and(|d| d > 0.0) && a.gains.unexplained_compute == Some(0.0), "{a:?}");
    }

    #[test]
    fn a_slow_worker_is_measured_against_the_typical_worker_for_its_data() {
        // Two or four ranks whose data should cost 10 or 20 (by turns), rank 1 taking 1.5× what
        // its data should: the others' typical ratio is 1, not the mean ratio (1.25 or 1.125)
        // that rank 1 would make.
        for ranks in [2, 4] {
            let steps: Vec<StepSlots> = (0..12)
                .map(|i| {
                    let slots = (0..ranks).map(|d| {
                        let expected = if (i + d) % 2 == 0 { 10.0 } else { 20.0 };
                        let compute = expected * if d == 1 { 1.5 } else { 1.0 };
                        Some(SlotStep { expected: Some(expected), ..slot(0.0, compute).expect("a slot") })
                    });
                    step(slots.collect(), 1.0)
                })
                .collect();
            let f = factors(&steps[..]);
            let expected: Vec<f64> = (0..ranks).map(|d| if d == 1 { 1.5 } else { 1.0 }).collect();
            assert_eq!(f.worker, [expected], "{ranks} ranks");
        }
    }

    #[test]
    fn without_a_cost_model_slow_workers_stand_unless_their_own_lengths_explain_them() {
        // Eight ranks, three of them (a quarter and more) 1.5× every step, no cost model. With
        // lengths that say all draw alike (by turns heavier and lighter), or with no lengths,
        // they are slow workers: two slow GPUs or a slow node are many. With lengths that say
        // those three always draw twice the Σ L², their data explains them.
        let slow = |d: usize| [1, 4, 5].contains(&d);
        let job = |data: &dyn Fn(usize, usize) -> Option<DataSize>| -> Vec<StepSlots> {
            (0..12)
                .map(|i| {
                    let slots = (0..8).map(|d| {
                        let compute = if slow(d) { 15.0 } else { 10.0 };
                        Some(SlotStep { data: data(i, d), ..slot(0.0, compute).expect("a slot") })
                    });
                    step(slots.collect(), 1.0)
                })
                .collect()
        };
        let alike = |i: usize, d: usize| {
            let tokens = if (i + d).is_multiple_of(2) { 900.0 } else { 1100.0 };
            Some(DataSize { tokens, quadratic: tokens * 100.0 })
        };
        let heavier =
            |_: usize, d: usize| Some(DataSize { tokens: 1000.0, quadratic: if slow(d) { 2e5 } else { 1e5 } });
        let slow_factors: Vec<f64> = (0..8).map(|d| if slow(d) { 1.5 } else { 1.0 }).collect();
        assert_eq!(factors(&job(&alike)[..]).worker, std::slice::from_ref(&slow_factors));
        assert_eq!(factors(&job(&|_, _| None)[..]).worker, [slow_factors]);
        assert_eq!(factors(&job(&heavier)[..]).worker, [vec![1.0; 8]]);
    }

    #[test]
    fn with_two_replicas_a_slow_one_is_a_worker_not_its_stage() {
        // dp 2 × pp 2: (stage 0, dp 0) is 1.8× every step; a median of two would have called
        // half of that its stage's.
        let slow = StepSlots::of(
            &[vec![slot(0.0, 18.0), slot(0.0, 10.0)], vec![slot(0.0, 10.0), slot(0.0, 10.0)]],
            &[1.0, 1.0],
        );
        let f = factors(&vec![slow; 6][..]);
        assert_eq!(f.stage, [1.0, 1.0]);
        assert_eq!(f.worker, [[1.8, 1.0], [1.0, 1.0]]);
        // Both replicas of stage 0 heavy: that is the stage (against the stages' median, 12.5).
        let heavy = StepSlots::of(
            &[vec![slot(0.0, 15.0), slot(0.0, 15.0)], vec![slot(0.0, 10.0), slot(0.0, 10.0)]],
            &[1.0, 1.0],
        );
        let f = factors(&vec![heavy; 6][..]);
        assert_eq!((f.stage[0], f.worker[0].clone()), (1.2, vec![1.0, 1.0]));
    }

    #[test]
    fn persistence_asks_more_of_many_slots_over_few_steps() {
        // A few slots: 75% of the steps. 16 slots over 12 steps: 10 (9 is reached by chance,
        // on one side or the other, by about one slot in 7); 1024 over 12: all 12; 2048 over
        // 12: all 12 (one expected by chance); 4096 over 12: no count tells.
        assert_eq!([steps_needed(12, 1), steps_needed(12, 3), steps_needed(30, 16)], [9, 9, 23]);
        assert_eq!([steps_needed(12, 16), steps_needed(12, 1024), steps_needed(12, 2048)], [10, 12, 12]);
        assert_eq!(steps_needed(12, 4096), 13);
        let ratios = [1.3, 1.2, 1.4, 1.3, 0.9, 1.5, 1.3, 1.1, 0.8, 1.2, 1.3, 1.4];
        assert_eq!(persistent(&ratios, steps_needed(12, 4)), 1.3, "10 of 12 above 1");
        assert_eq!(persistent(&ratios, steps_needed(12, 1024)), 1.0, "about 75 of 1024 slots get there by chance");
    }

    #[test]
    fn rotating_heavy_ranks_are_residual_compute() {
        let steps: Vec<StepSlots> = (0..6)
            .map(|i| {
                let slots = (0..3).map(|r| slot(0.0, if r == i % 3 { 20.0 } else { 10.0 })).collect();
                step(slots, 1.0)
            })
            .collect();
        let f = factors(&steps[..]);
        let a = attribute(&steps[..], &f);
        assert!(a.gains.residual_compute > a.ideal * 0.2 && a.gains.worker.abs() < 1e-6, "{a:?}");
    }

    #[test]
    fn transfers_below_their_median_do_not_offset_those_above() {
        // Two even ranks; the transfer takes 1, 3, 1, 3 (median 2): restored, it adds 1 in two
        // steps and saves 1 in the other two. The time it costs is the 2 it adds.
        let steps: Vec<StepSlots> =
            [1.0, 3.0, 1.0, 3.0].iter().map(|&t| step(vec![slot(0.0, 10.0), slot(0.0, 10.0)], t)).collect();
        let a = attribute(&steps[..], &factors(&steps[..]));
        assert_eq!((a.actual, a.ideal), (4.0 * 11.0 + 8.0, 4.0 * 13.0));
        assert_eq!(a.gains.transfers, 2.0, "{a:?}");
    }

    /// A pipeline slot of four micro-batches, each forward `c` and backward `2c`.
    fn four_passes(c: f64) -> Option<SlotStep> {
        Some(SlotStep {
            stall: 0.0,
            passes: vec![(c, 2.0 * c); 4],
            tail: 0.0,
            comm: 0.0,
            expected: None,
            expected_passes: None,
            data: None,
        })
    }

    #[test]
    fn pipelines_replay_with_micro_batches() {
        let step = StepSlots::of(&[vec![four_passes(10.0)], vec![four_passes(10.0)]], &[0.0, 0.0]);
        // (M + P − 1) × (f + b) = 5 × 30
        assert_eq!(replay_step(&step), 150.0);
    }

    #[test]
    fn the_ideal_pipeline_runs_every_stage_at_the_mean_stage_level() {
        // Three stages, the last twice as heavy every step: its factor is 2 against the typical
        // stage, but balanced stages would share the work, each at (1 + 1 + 2) / 3 of it.
        let heavy_last =
            StepSlots::of(&[vec![four_passes(10.0)], vec![four_passes(10.0)], vec![four_passes(20.0)]], &[1.0; 3]);
        let steps = vec![heavy_last; 6];
        let f = factors(&steps[..]);
        assert_eq!(f.stage, [1.0, 1.0, 2.0]);
        let a = attribute(&steps[..], &f);
        let level = 10.0 * 4.0 / 3.0;
        let balanced = StepSlots::of(&vec![vec![four_passes(level)]; 3], &[1.0; 3]);
        let ideal = 6.0 * replay_step(&balanced);
        assert!((a.ideal - ideal).abs() < 1e-9 * ideal, "ideal {} against {ideal}", a.ideal);
        assert!((a.gains.stage - (a.actual - a.ideal)).abs() < 1e-9 * a.actual, "{a:?}");
    }

    #[test]
    fn one_stalled_worker_of_two_leaves_the_ideal_unstalled() {
        // Two ranks, each stalled 6 in every other step, the other one not: the ideal steps
        // have no stall (a median of the two would keep 3 of it).
        let steps: Vec<StepSlots> = (0..6)
            .map(|i| {
                let stalled = |d: usize| if i % 2 == d { 6.0 } else { 0.0 };
                step(vec![slot(stalled(0), 10.0), slot(stalled(1), 10.0)], 2.0)
            })
            .collect();
        let f = factors(&steps[..]);
        let a = attribute(&steps[..], &f);
        let unstalled = 6.0 * replay_step(&step(vec![slot(0.0, 10.0), slot(0.0, 10.0)], 2.0));
        assert_eq!((a.ideal, a.actual), (unstalled, unstalled + 36.0));
    }

    #[test]
    fn data_parallel_replays_without_writing_match_the_written_ones() {
        // Two stages of one pass each (no pipeline), every kind of prediction, a missing slot.
        let s = |stall: f64, compute: f64, expected: Option<f64>, per_pass: bool| {
            Some(SlotStep {
                stall,
                passes: vec![(compute, compute * 2.0)],
                tail: compute / 10.0,
                comm: 1.0,
                expected,
                expected_passes: per_pass.then(|| vec![expected.unwrap_or(1.0)]),
                data: None,
            })
        };
        let steps: Vec<StepSlots> = (0..5)
            .map(|i| {
                let x = f64::from(i);
                StepSlots::of(
                    &[
                        vec![s(1.0 + x, 10.0, Some(9.0), true), s(0.0, 14.0 + x, Some(15.0), true), None],
                        vec![
                            s(3.0, 11.0 * x, Some(10.0 + x), true),
                            s(2.0, 9.0, Some(8.0), true),
                            s(0.5, 12.0, None, false),
                        ],
                    ],
                    &[2.0 + x, 3.0],
                )
            })
            .collect();
        let f = factors(&steps[..]);
        for step in &steps {
            assert!(!pipelined(step));
            let base = Baseline::of(step, &f);
            let (mut keeps, mut expected) = (Vec::new(), Vec::new());
            for bits in 0..128u8 {
                let keep = Restore {
                    data_compute: bits & 1 != 0,
                    unexplained_compute: bits & 64 != 0,
                    stage_factors: bits & 2 != 0,
                    worker_factors: bits & 4 != 0,
                    residual_compute: bits & 8 != 0,
                    residual_stalls: bits & 16 != 0,
                    transfers: bits & 32 != 0,
                };
                let mut written = step.clone();
                restore_into(step, &f, &base, keep, &mut written);
                keeps.push(keep);
                expected.push(replay_step(&written));
            }
            // All 128 ways in one pass.
            let mut direct = Vec::new();
            replay_restored(step, &f, &base, &keeps, &mut StepSlots::default(), &mut direct);
            assert_eq!(direct, expected);
        }
    }
}

//! The slowdown S and its attribution, by replaying every step (the method of the ByteDance
//! what-if analysis): the ideal run replaces each compute pass by the mean of its kind across
//! workers and each transfer by the median; restoring one group's real durations at a time
//! (stage factors, persistent worker factors, the step-to-step residual, stalls, transfers)
//! says how much of the slowdown each accounts for.

use std::collections::BTreeMap;
use std::ops::Range;

use smallvec::{SmallVec, smallvec};

use super::costmodel::Fit;
use super::frame::{Cell, Frame};
use super::par;
use super::stats::{Mean, mean, median};
use crate::schedule::replay_pipeline;

/// One (data-parallel rank, stage) slot in one step, as the replay sees it (seconds as f64
/// nanoseconds, so factors scale without rounding).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlotStep {
    pub stall: f64,
    /// (forward, backward) per micro-batch; one entry holding all compute when unknown. Kept
    /// inline when there is one: every slot of every step has these, and is copied per replay.
    pub passes: Passes,
    /// Optimizer, other work, and compute outside the micro-batches.
    pub tail: f64,
    /// Time in the step's collectives, waiting included (pipeline send/recv excluded: the
    /// replay's schedule accounts for those waits).
    pub comm: f64,
    /// The compute the cost model expects for this slot's data, when lengths are known.
    pub expected: Option<f64>,
    /// The same per micro-batch (parallel to `passes`), when micro-batches carry lengths.
    pub expected_passes: Option<SmallVec<[f64; 1]>>,
}

/// A slot's passes: inline up to one.
pub type Passes = SmallVec<[(f64, f64); 1]>;

impl SlotStep {
    pub fn compute(&self) -> f64 {
        self.passes.iter().map(|p| p.0 + p.1).sum()
    }
}

/// One step: slots by `[stage][dp]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepSlots {
    pub slots: Vec<Vec<Option<SlotStep>>>,
    /// Transfer time of each stage's gradient collective (the least any slot spent in it).
    pub transfer: Vec<f64>,
    pub measured: f64,
}

/// Builds each step's slots: the busiest tensor/context-parallel replica stands for its slot.
/// Micro-batch passes are used when every slot of the step has the same number of them.
/// With a usable cost model, each slot also gets the compute its data should take.
pub fn slot_steps(frame: &Frame, fit: Option<&Fit>, mb_fit: Option<&Fit>) -> Vec<StepSlots> {
    let fit = fit.filter(|f| f.usable());
    let mb_fit = mb_fit.filter(|f| f.usable());
    let (stages, dps) = (frame.stages.max(1), frame.dp_size.max(1));
    (0..frame.steps.len())
        .map(|si| {
            let mut best: Vec<Vec<Option<&Cell>>> = vec![vec![None; dps]; stages];
            let mut measured = 0.0f64;
            for (wi, slot) in frame.slots.iter().enumerate() {
                let Some(cell) = frame.cell(si, wi) else { continue };
                measured = measured.max(cell.duration as f64);
                if let Some(b) = best.get_mut(slot.stage).and_then(|r| r.get_mut(slot.dp))
                    && b.is_none_or(|o| cell.work() > o.work())
                {
                    *b = Some(cell);
                }
            }
            let mb_counts: Vec<usize> = best.iter().flatten().flatten().map(|c| c.micro_batches.len()).collect();
            let uniform = mb_counts.first().is_some_and(|&n| n > 0 && mb_counts.iter().all(|&m| m == n));
            let slots: Vec<Vec<Option<SlotStep>>> = best
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|c| {
                            c.map(|c| {
                                let passes: Passes = if uniform {
                                    frame
                                        .micro_batches_of(c)
                                        .iter()
                                        .map(|m| (m.forward as f64, m.backward as f64))
                                        .collect()
                                } else {
                                    smallvec![(c.compute as f64, 0.0)]
                                };
                                let in_passes: f64 = passes.iter().map(|p| p.0 + p.1).sum();
                                let outside = (c.compute as f64 - in_passes).max(0.0);
                                SlotStep {
                                    stall: c.stall as f64,
                                    passes,
                                    tail: c.optimizer as f64 + c.other as f64 + outside,
                                    comm: c.collectives as f64,
                                    expected: fit.filter(|_| c.seq.known).map(|f| f.predict(&c.seq)),
                                    expected_passes: mb_fit
                                        .filter(|_| uniform && frame.micro_batches_of(c).iter().all(|m| m.seq.known))
                                        .map(|f| {
                                            frame
                                                .micro_batches_of(c)
                                                .iter()
                                                .map(|m| f.predict(&m.seq).max(0.0))
                                                .collect()
                                        }),
                                }
                            })
                        })
                        .collect()
                })
                .collect();
            // Measured transfers where collectives carry timestamps; else the least time any
            // slot spent in collectives: the last to arrive barely waits (and in a pipeline, the
            // stage that finishes last does not wait for the others at the end of the step).
            let least = slots.iter().flatten().flatten().map(|s| s.comm).fold(f64::INFINITY, f64::min);
            let least = if least.is_finite() { least } else { 0.0 };
            let transfer = best
                .iter()
                .map(|cells| {
                    let measured: Vec<f64> =
                        cells.iter().flatten().filter_map(|c| c.transfer).map(|t| t as f64).collect();
                    if !measured.is_empty() && measured.len() == cells.iter().flatten().count() {
                        median(&measured)
                    } else {
                        least
                    }
                })
                .collect();
            StepSlots { slots, transfer, measured }
        })
        .collect()
}

/// The replayed length of one step. With micro-batch passes and several stages, each
/// data-parallel replica runs a 1F1B pipeline; every stage's replicas then meet in their
/// gradient collective; the step ends with the slowest slot's tail.
pub fn replay_step(step: &StepSlots) -> f64 {
    let stages = step.slots.len();
    let dps = step.slots.iter().map(Vec::len).max().unwrap_or(0);
    let micro_batches = step.slots.iter().flatten().flatten().map(|s| s.passes.len()).max().unwrap_or(1).max(1);
    let as_pipelines = pipelined(step);
    let mut arrivals: Vec<f64> = vec![0.0; stages];
    for d in 0..dps {
        // A column of replicas is built only to replay a pipeline (this runs for every slot of
        // every step, several times over).
        if as_pipelines {
            let column: Vec<Option<&SlotStep>> =
                step.slots.iter().map(|row| row.get(d).and_then(Option::as_ref)).collect();
            if column.iter().all(Option::is_some) {
                // Replay in integer nanoseconds through the shared schedule.
                let ready: Vec<i64> = column.iter().map(|s| s.map_or(0, |s| s.stall as i64)).collect();
                let duration = |p: usize, m: usize, backward: bool| -> i64 {
                    column
                        .get(p)
                        .copied()
                        .flatten()
                        .and_then(|s| s.passes.get(m))
                        .map_or(0, |&(f, b)| if backward { b } else { f } as i64)
                };
                let timings = replay_pipeline(&ready, micro_batches, &duration, 0);
                for (p, stage) in timings.iter().enumerate() {
                    let end = stage.iter().map(|t| t.end).max().unwrap_or(0) as f64;
                    if let Some(a) = arrivals.get_mut(p) {
                        *a = a.max(end);
                    }
                }
                continue;
            }
        }
        for (p, row) in step.slots.iter().enumerate() {
            if let (Some(s), Some(a)) = (row.get(d).and_then(Option::as_ref), arrivals.get_mut(p)) {
                *a = a.max(s.stall + s.compute());
            }
        }
    }
    let mut end = 0.0f64;
    for (p, row) in step.slots.iter().enumerate() {
        let reduce_end = arrivals.get(p).copied().unwrap_or(0.0) + step.transfer.get(p).copied().unwrap_or(0.0);
        for s in row.iter().flatten() {
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
    pub stage_factors: bool,
    pub worker_factors: bool,
    pub residual_compute: bool,
    pub residual_stalls: bool,
    pub transfers: bool,
}

impl Restore {
    pub const ALL: Restore = Restore {
        data_compute: false,
        stage_factors: true,
        worker_factors: true,
        residual_compute: true,
        residual_stalls: true,
        transfers: true,
    };
}

/// The persistent parts of each slot's time, estimated across steps with medians.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Factors {
    /// Per stage: its compute relative to the step's mean.
    pub stage: Vec<f64>,
    /// Per `[stage][dp]`: compute relative to its stage.
    pub worker: Vec<Vec<f64>>,
    /// Per `[stage][dp]`: the stall it has in a typical step.
    pub persistent_stall: Vec<Vec<f64>>,
    /// The job's typical transfer time per stage.
    pub transfer: Vec<f64>,
}

impl Factors {
    fn stage_of(&self, p: usize) -> f64 {
        self.stage.get(p).copied().unwrap_or(1.0).max(1e-9)
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
    transfer: Vec<Option<f64>>,
}

fn step_factors(step: &StepSlots, stages: usize, dps: usize) -> StepFactors {
    let mut out = StepFactors {
        stage_ratio: vec![None; stages],
        worker_ratio: vec![f64::NAN; stages * dps],
        stall: vec![f64::NAN; stages * dps],
        transfer: vec![None; stages],
    };
    // Each slot's compute, summed once.
    let computes: Vec<Vec<Option<f64>>> =
        step.slots.iter().map(|row| row.iter().map(|s| s.as_ref().map(SlotStep::compute)).collect()).collect();
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
    let pairs = (lesser.len() == step.slots.len()).then(|| median(&lesser)).filter(|m| *m > 0.0);
    for (p, (row, row_computes)) in step.slots.iter().zip(&computes).enumerate() {
        let stage_values: Vec<f64> = row_computes.iter().flatten().copied().collect();
        let (stage_level, typical) = match (pairs, lesser.get(p)) {
            (Some(typical), Some(&l)) => (l, typical),
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
        let present = || row.iter().zip(row_computes).filter_map(|(s, c)| s.as_ref().zip(*c));
        let expected: Option<Vec<f64>> = present().map(|(s, c)| s.expected.map(|e| c / e.max(1.0))).collect();
        let typical = expected.as_ref().map(|r| mean(r));
        for (d, (s, c)) in row.iter().zip(row_computes).enumerate().take(dps) {
            let (Some(s), Some(c)) = (s, *c) else { continue };
            let ratio = match (typical, s.expected) {
                (Some(t), Some(e)) if t > 0.0 => Some(c / e.max(1.0) / t),
                _ if stage_level > 0.0 => Some(c / stage_level),
                _ => None,
            };
            if let (Some(r), Some(v)) = (ratio, out.worker_ratio.get_mut(p * dps + d)) {
                *v = r;
            }
            if let Some(v) = out.stall.get_mut(p * dps + d) {
                *v = s.stall;
            }
        }
        if let (Some(v), Some(&t)) = (out.transfer.get_mut(p), step.transfer.get(p)) {
            *v = Some(t);
        }
    }
    out
}

pub fn factors(steps: &[StepSlots]) -> Factors {
    let stages = steps.iter().map(|s| s.slots.len()).max().unwrap_or(1);
    let dps = steps.iter().flat_map(|s| s.slots.iter().map(Vec::len)).max().unwrap_or(1);
    let width = stages * dps;
    // Each step alone, on every core; then each slot's values across the steps, in step order.
    let per_step: Vec<StepFactors> =
        par::map(steps.len(), par::min_rows(width), |i| steps.get(i).map(|s| step_factors(s, stages, dps)))
            .into_iter()
            .flatten()
            .collect();
    let slots = width.max(1);
    let per_slot: Vec<(f64, f64)> = par::parts(width, SLOTS_PER_BLOCK, |range| slot_factors(&per_step, range, slots))
        .into_iter()
        .flatten()
        .collect();
    let mut worker: Vec<Vec<f64>> = per_slot.chunks(dps.max(1)).map(|c| c.iter().map(|f| f.0).collect()).collect();
    let mut persistent_stall: Vec<Vec<f64>> =
        per_slot.chunks(dps.max(1)).map(|c| c.iter().map(|f| f.1).collect()).collect();
    // Slow hardware is rare. When many workers are persistently slower together, what they share
    // is their place in the data (e.g. a balancer that always hands rank 0 the longest document),
    // and that is not a worker property.
    let rare = |count: usize| count <= (slots / 10).max(1);
    if !rare(worker.iter().flatten().filter(|&&f| f > 1.05).count()) {
        worker.iter_mut().flatten().for_each(|f| *f = 1.0);
    }
    let typical_stall = median(&persistent_stall.iter().flatten().copied().collect::<Vec<_>>());
    if !rare(persistent_stall.iter().flatten().filter(|&&s| s > typical_stall * 1.5 + 1e6).count()) {
        persistent_stall.iter_mut().flatten().for_each(|s| *s = typical_stall);
    }
    let across = |p: usize, value: fn(&StepFactors, usize) -> Option<f64>| -> Vec<f64> {
        per_step.iter().filter_map(|f| value(f, p)).collect()
    };
    Factors {
        stage: (0..stages)
            .map(|p| {
                let ratios = across(p, |f, p| f.stage_ratio.get(p).copied().flatten());
                persistent(&ratios, steps_needed(ratios.len(), stages))
            })
            .collect(),
        worker,
        persistent_stall,
        transfer: (0..stages).map(|p| median(&across(p, |f, p| f.transfer.get(p).copied().flatten()))).collect(),
    }
}

/// Slots are gathered from the per-step rows this many at a time: a cache line of each row.
const SLOTS_PER_BLOCK: usize = 8;

/// For each slot in `range`: its persistent factor (over its ratios across the steps, among
/// `candidates` slots) and its median stall.
fn slot_factors(per_step: &[StepFactors], range: Range<usize>, candidates: usize) -> Vec<(f64, f64)> {
    // Slots mostly have as many ratios as each other: each threshold is worked out once.
    let mut thresholds: BTreeMap<usize, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(range.len());
    let (mut ratios, mut stalls) = (Vec::new(), Vec::new());
    for first in range.clone().step_by(SLOTS_PER_BLOCK) {
        let block = first..(first + SLOTS_PER_BLOCK).min(range.end);
        ratios.resize_with(block.len(), || Vec::with_capacity(per_step.len()));
        stalls.resize_with(block.len(), || Vec::with_capacity(per_step.len()));
        ratios.iter_mut().chain(stalls.iter_mut()).for_each(Vec::clear);
        for f in per_step {
            for ((r, s), i) in ratios.iter_mut().zip(stalls.iter_mut()).zip(block.clone()) {
                r.extend(f.worker_ratio.get(i).filter(|x| !x.is_nan()));
                s.extend(f.stall.get(i).filter(|x| !x.is_nan()));
            }
        }
        for (r, s) in ratios.iter().zip(&stalls) {
            let needed = *thresholds.entry(r.len()).or_insert_with(|| steps_needed(r.len(), candidates));
            out.push((persistent(r, needed), median(s)));
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
        let mut stalls = Vec::with_capacity(step.slots.iter().map(Vec::len).sum());
        for (p, row) in step.slots.iter().enumerate() {
            for (d, s) in row.iter().enumerate() {
                let Some(s) = s else { continue };
                let scale = f.scale(p, d);
                for &(x, y) in &s.passes {
                    forward.add(x / scale);
                    backward.add(y / scale);
                }
                tail.add(s.tail);
                stalls.push(s.stall);
                s.expected.into_iter().for_each(|e| expected.add(e));
                s.expected_passes.iter().flatten().for_each(|&e| pass_expected.add(e));
            }
        }
        Baseline {
            forward: forward.get(),
            backward: backward.get(),
            tail: tail.get(),
            stall: median(&stalls),
            expected: expected.get(),
            pass_expected: pass_expected.get(),
        }
    }
}

/// Slot (p, d) of `step` with only the restored parts taken from the job: each of its passes
/// (forward, backward) given to `pass` in order, its stall and tail returned.
fn restored_slot(
    s: &SlotStep,
    (p, d): (usize, usize),
    f: &Factors,
    b: &Baseline,
    keep: Restore,
    mut pass: impl FnMut((f64, f64)),
) -> (f64, f64) {
    let (g, w) = (f.stage_of(p), f.worker_of(p, d));
    let scale = (if keep.stage_factors { g } else { 1.0 }) * (if keep.worker_factors { w } else { 1.0 });
    match (&s.expected_passes, s.expected) {
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
        _ if keep.residual_compute => {
            // Actual durations with the persistent factors taken out (and put back if kept).
            s.passes.iter().for_each(|&(x, y)| pass((x / (g * w) * scale, y / (g * w) * scale)));
        }
        _ => s.passes.iter().for_each(|_| pass((b.forward * scale, b.backward * scale))),
    }
    let persistent = || f.persistent_stall.get(p).and_then(|r| r.get(d)).copied().unwrap_or(0.0);
    let stall = match (keep.worker_factors, keep.residual_stalls) {
        (true, true) => s.stall,
        (true, false) => b.stall.max(persistent()),
        (false, true) => b.stall.max(s.stall - persistent()),
        (false, false) => b.stall,
    };
    let tail = if keep == Restore::ALL { s.tail } else { b.tail };
    (stall, tail)
}

/// Writes into `out` (a clone of `step`, reused across restorations so that no slot is
/// allocated again) the step with only the restored parts taken from the job.
fn restore_into(step: &StepSlots, f: &Factors, base: &Baseline, keep: Restore, out: &mut StepSlots) {
    for (p, (row, out_row)) in step.slots.iter().zip(out.slots.iter_mut()).enumerate() {
        for (d, (s, o)) in row.iter().zip(out_row.iter_mut()).enumerate() {
            let (Some(s), Some(o)) = (s, o.as_mut()) else { continue };
            o.passes.clear();
            (o.stall, o.tail) = restored_slot(s, (p, d), f, base, keep, |x| o.passes.push(x));
        }
    }
    out.transfer.clone_from(if keep.transfers { &step.transfer } else { &f.transfer });
}

/// Is the step replayed as pipelines (several stages, several micro-batches)? Otherwise its
/// length is, per stage, the slowest slot's arrival, the transfer and the longest tail.
fn pipelined(step: &StepSlots) -> bool {
    step.slots.len() > 1 && step.slots.iter().flatten().flatten().any(|s| s.passes.len() > 1)
}

/// [`replay_step`] of the restored step. Data-parallel steps are replayed as the slots are
/// restored, with nothing written: the attribution replays every slot of every step six or
/// seven times. Pipelines are restored into `scratch` (a clone of `step`) and replayed.
fn replay_restored(step: &StepSlots, f: &Factors, base: &Baseline, keep: Restore, scratch: &mut StepSlots) -> f64 {
    if pipelined(step) {
        restore_into(step, f, base, keep, scratch);
        return replay_step(scratch);
    }
    let transfers = if keep.transfers { &step.transfer } else { &f.transfer };
    let mut end = 0.0f64;
    for (p, row) in step.slots.iter().enumerate() {
        let (mut arrival, mut longest_tail) = (0.0f64, None::<f64>);
        for (d, s) in row.iter().enumerate() {
            let Some(s) = s else { continue };
            let mut compute = -0.0;
            let (stall, tail) = restored_slot(s, (p, d), f, base, keep, |x| compute += x.0 + x.1);
            arrival = arrival.max(stall + compute);
            longest_tail = Some(longest_tail.map_or(tail, |t| t.max(tail)));
        }
        // Rounding is monotonic, so adding to the longest tail is the longest of the sums.
        if let Some(tail) = longest_tail {
            end = end.max(arrival + transfers.get(p).copied().unwrap_or(0.0) + tail);
        }
    }
    end
}

/// Replayed step times summed over the job, for the actual run, the ideal run, and each
/// single restoration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attribution {
    pub actual: f64,
    pub ideal: f64,
    pub measured: f64,
    pub stage: f64,
    pub worker: f64,
    pub residual_compute: f64,
    /// Compute as the cost model predicts from the data, when every slot has a prediction.
    pub data_compute: Option<f64>,
    pub residual_stalls: f64,
    pub transfers: f64,
    /// Per step: (actual, ideal) replayed lengths.
    pub per_step: Vec<(f64, f64)>,
}

/// One step's replays, each restoration alone.
struct StepReplays {
    actual: f64,
    ideal: f64,
    stage: f64,
    worker: f64,
    residual_compute: f64,
    /// `None` when a slot of the step has no prediction.
    data_compute: Option<f64>,
    residual_stalls: f64,
    transfers: f64,
}

fn replays(step: &StepSlots, f: &Factors) -> StepReplays {
    let none = Restore::default();
    let base = Baseline::of(step, f);
    let mut scratch = if pipelined(step) { step.clone() } else { StepSlots::default() };
    let mut replay = |keep: Restore| replay_restored(step, f, &base, keep, &mut scratch);
    let predicted = step.slots.iter().flatten().flatten().all(|s| s.expected.is_some());
    StepReplays {
        actual: replay(Restore::ALL),
        ideal: replay(none),
        stage: replay(Restore { stage_factors: true, ..none }),
        worker: replay(Restore { worker_factors: true, ..none }),
        residual_compute: replay(Restore { residual_compute: true, ..none }),
        data_compute: predicted.then(|| replay(Restore { data_compute: true, ..none })),
        residual_stalls: replay(Restore { residual_stalls: true, ..none }),
        transfers: replay(Restore { transfers: true, ..none }),
    }
}

pub fn attribute(steps: &[StepSlots], f: &Factors) -> Attribution {
    let slots = steps.first().map_or(1, |s| s.slots.iter().map(Vec::len).sum());
    let per_step = par::map(steps.len(), par::min_rows(slots), |i| steps.get(i).map(|step| replays(step, f)));
    // Summed in step order, as one core would.
    let mut a = Attribution::default();
    for (step, r) in steps.iter().zip(per_step.into_iter().flatten()) {
        a.actual += r.actual;
        a.ideal += r.ideal;
        a.measured += step.measured;
        a.stage += r.stage;
        a.worker += r.worker;
        a.residual_compute += r.residual_compute;
        a.data_compute = match (a.data_compute, r.data_compute) {
            (None, Some(d)) if a.per_step.is_empty() => Some(d),
            (Some(x), Some(d)) => Some(x + d),
            _ => None,
        };
        a.residual_stalls += r.residual_stalls;
        a.transfers += r.transfers;
        a.per_step.push((r.actual, r.ideal));
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(stall: f64, compute: f64) -> Option<SlotStep> {
        Some(SlotStep {
            stall,
            passes: smallvec![(compute, 0.0)],
            tail: 1.0,
            comm: 0.0,
            expected: None,
            expected_passes: None,
        })
    }

    fn step(slots: Vec<Option<SlotStep>>, transfer: f64) -> StepSlots {
        StepSlots { slots: vec![slots], transfer: vec![transfer], measured: 0.0 }
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
        let f = factors(&steps);
        let a = attribute(&steps, &f);
        assert!(a.actual > a.ideal * 1.2, "{a:?}");
        assert!((a.worker - a.actual).abs() < 1e-6, "{a:?}");
        assert!((a.residual_compute - a.ideal).abs() < 1e-6, "{a:?}");
    }

    #[test]
    fn with_two_replicas_a_slow_one_is_a_worker_not_its_stage() {
        // dp 2 × pp 2: (stage 0, dp 0) is 1.8× every step; a median of two would have called
        // half of that its stage's.
        let slow = StepSlots {
            slots: vec![vec![slot(0.0, 18.0), slot(0.0, 10.0)], vec![slot(0.0, 10.0), slot(0.0, 10.0)]],
            transfer: vec![1.0, 1.0],
            measured: 0.0,
        };
        let f = factors(&vec![slow; 6]);
        assert_eq!(f.stage, [1.0, 1.0]);
        assert_eq!(f.worker, [[1.8, 1.0], [1.0, 1.0]]);
        // Both replicas of stage 0 heavy: that is the stage (against the stages' median, 12.5).
        let heavy = StepSlots {
            slots: vec![vec![slot(0.0, 15.0), slot(0.0, 15.0)], vec![slot(0.0, 10.0), slot(0.0, 10.0)]],
            transfer: vec![1.0, 1.0],
            measured: 0.0,
        };
        let f = factors(&vec![heavy; 6]);
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
        let f = factors(&steps);
        let a = attribute(&steps, &f);
        assert!(a.residual_compute > a.ideal * 1.2 && (a.worker - a.ideal).abs() < 1e-6, "{a:?}");
    }

    #[test]
    fn pipelines_replay_with_micro_batches() {
        let s = |c: f64| {
            Some(SlotStep {
                stall: 0.0,
                passes: smallvec![(c, 2.0 * c); 4],
                tail: 0.0,
                comm: 0.0,
                expected: None,
                expected_passes: None,
            })
        };
        let step = StepSlots { slots: vec![vec![s(10.0)], vec![s(10.0)]], transfer: vec![0.0, 0.0], measured: 0.0 };
        // (M + P − 1) × (f + b) = 5 × 30
        assert_eq!(replay_step(&step), 150.0);
    }

    #[test]
    fn data_parallel_replays_without_writing_match_the_written_ones() {
        // Two stages of one pass each (no pipeline), every kind of prediction, a missing slot.
        let s = |stall: f64, compute: f64, expected: Option<f64>, per_pass: bool| {
            Some(SlotStep {
                stall,
                passes: smallvec![(compute, compute * 2.0)],
                tail: compute / 10.0,
                comm: 1.0,
                expected,
                expected_passes: per_pass.then(|| smallvec![expected.unwrap_or(1.0)]),
            })
        };
        let steps: Vec<StepSlots> = (0..5)
            .map(|i| {
                let x = f64::from(i);
                StepSlots {
                    slots: vec![
                        vec![s(1.0 + x, 10.0, Some(9.0), true), s(0.0, 14.0 + x, Some(15.0), true), None],
                        vec![
                            s(3.0, 11.0 * x, Some(10.0 + x), true),
                            s(2.0, 9.0, Some(8.0), true),
                            s(0.5, 12.0, None, false),
                        ],
                    ],
                    transfer: vec![2.0 + x, 3.0],
                    measured: 0.0,
                }
            })
            .collect();
        let f = factors(&steps);
        for step in &steps {
            assert!(!pipelined(step));
            let base = Baseline::of(step, &f);
            for bits in 0..64u8 {
                let keep = Restore {
                    data_compute: bits & 1 != 0,
                    stage_factors: bits & 2 != 0,
                    worker_factors: bits & 4 != 0,
                    residual_compute: bits & 8 != 0,
                    residual_stalls: bits & 16 != 0,
                    transfers: bits & 32 != 0,
                };
                let mut written = step.clone();
                restore_into(step, &f, &base, keep, &mut written);
                let direct = replay_restored(step, &f, &base, keep, &mut StepSlots::default());
                assert_eq!(direct, replay_step(&written), "{keep:?}");
            }
        }
    }
}

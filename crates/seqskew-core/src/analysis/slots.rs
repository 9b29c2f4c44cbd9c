//! One step as the replay sees it: a slot per (pipeline stage, data-parallel rank), each the
//! busiest tensor/context-parallel replica of its place, with its passes, stall, tail and what
//! the cost model expects of its data.
//!
//! Steps are made one at a time from the table, into a buffer that is reused: a whole job's
//! slots would be a second copy of the table (400 MB at 4096 workers × 1000 steps, every page
//! of it a page fault), while one step's fit in the cache.

use super::costmodel::Fit;
use super::frame::Frame;
use super::pipeline_order::ChunkShares;
use super::stats::median;
use crate::model::Nanos;
use crate::schedule::PipelineSchedule;

/// One step as the replay sees it (seconds as f64 nanoseconds, so factors scale without
/// rounding): a slot per (stage, data-parallel rank), stage by stage, column by column. Every
/// present slot has as many passes as the others: one per micro-batch, or one holding all its
/// compute.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepSlots {
    dps: usize,
    passes_per_slot: usize,
    /// Stage by stage, `dps` a stage.
    slots: Vec<SlotTimes>,
    /// (forward, backward) of each slot's passes, `passes_per_slot` a slot.
    passes: Vec<(f64, f64)>,
    /// The compute the cost model expects of each pass (parallel to `passes`), for the slots
    /// whose micro-batches carry lengths.
    expected_passes: Vec<f64>,
    /// Transfer time of each stage's gradient collective (the least any slot spent in it).
    pub transfer: Vec<f64>,
    pub measured: f64,
    /// The order each pipeline's stages run their passes in.
    pub schedule: PipelineSchedule,
    /// Under an interleaved schedule, each stage's compute split over its model chunks.
    pub chunk_shares: ChunkShares,
}

/// A slot's own numbers (its passes are apart: see [`StepSlots`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SlotTimes {
    present: bool,
    /// Whether its micro-batches carry lengths (its passes' `expected_passes` are known).
    expected_passes: bool,
    stall: f64,
    /// Optimizer, other work, and compute outside the micro-batches.
    tail: f64,
    /// Time in the step's collectives, waiting included (pipeline send/recv excluded: the
    /// replay's schedule accounts for those waits).
    comm: f64,
    /// The compute the cost model expects for the slot's data, when lengths are known.
    expected: Option<f64>,
    /// The slot's data, when lengths are known ([`DataSize`]).
    data: Option<DataSize>,
}

/// How much data a slot drew in a step: its tokens and the cost model's quadratic term (Σ L²).
/// Without a usable cost model it still tells whether a slot persistently draws more than its
/// peers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DataSize {
    pub tokens: f64,
    pub quadratic: f64,
}

/// One slot of a step, to write ([`StepSlots::slot_mut`]).
struct SlotMut<'a> {
    times: &'a mut SlotTimes,
    passes: &'a mut [(f64, f64)],
    expected_passes: &'a mut [f64],
}

/// One slot of a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slot<'a> {
    pub stall: f64,
    pub passes: &'a [(f64, f64)],
    pub tail: f64,
    pub comm: f64,
    pub expected: Option<f64>,
    pub expected_passes: Option<&'a [f64]>,
    pub data: Option<DataSize>,
}

impl Slot<'_> {
    pub fn compute(&self) -> f64 {
        self.passes.iter().map(|p| p.0 + p.1).sum()
    }
}

impl StepSlots {
    /// `stages` × `dps` absent slots of `passes_per_slot` passes each (allocations kept).
    pub fn reset(&mut self, stages: usize, dps: usize, passes_per_slot: usize) {
        let n = stages * dps;
        self.dps = dps;
        self.passes_per_slot = passes_per_slot;
        self.slots.clear();
        self.slots.resize(n, SlotTimes::default());
        self.passes.clear();
        self.passes.resize(n * passes_per_slot, (0.0, 0.0));
        self.expected_passes.clear();
        self.expected_passes.resize(n * passes_per_slot, 0.0);
        self.transfer.clear();
        self.measured = 0.0;
    }

    pub fn stages(&self) -> usize {
        self.slots.len().checked_div(self.dps).unwrap_or(0)
    }

    pub fn dps(&self) -> usize {
        self.dps
    }

    pub fn passes_per_slot(&self) -> usize {
        self.passes_per_slot
    }

    fn index(&self, (p, d): (usize, usize)) -> Option<usize> {
        (d < self.dps).then(|| p * self.dps + d)
    }

    fn passes_of(&self, i: usize) -> std::ops::Range<usize> {
        i * self.passes_per_slot..(i + 1) * self.passes_per_slot
    }

    /// Slot `i` (stage-major), where present.
    fn at(&self, i: usize) -> Option<Slot<'_>> {
        let t = self.slots.get(i).filter(|t| t.present)?;
        let passes = self.passes_of(i);
        Some(Slot {
            stall: t.stall,
            passes: self.passes.get(passes.clone()).unwrap_or_default(),
            tail: t.tail,
            comm: t.comm,
            expected: t.expected,
            expected_passes: t.expected_passes.then(|| self.expected_passes.get(passes).unwrap_or_default()),
            data: t.data,
        })
    }

    /// Slot (p, d), where present.
    pub fn slot(&self, p: usize, d: usize) -> Option<Slot<'_>> {
        self.at(self.index((p, d))?)
    }

    /// Stage `p`'s slots, by data-parallel rank.
    pub fn stage(&self, p: usize) -> impl Iterator<Item = Option<Slot<'_>>> + '_ {
        let first = p * self.dps;
        (first..first + self.dps).map(|i| self.at(i))
    }

    /// The present slots, stage by stage, with their (stage, data-parallel rank).
    pub fn present_slots(&self) -> impl Iterator<Item = ((usize, usize), Slot<'_>)> + '_ {
        let dps = self.dps.max(1);
        (0..self.slots.len()).filter_map(move |i| Some(((i / dps, i % dps), self.at(i)?)))
    }

    /// Slot (p, d) to write whole: its times, passes and expected passes.
    fn slot_mut(&mut self, at: (usize, usize)) -> Option<SlotMut<'_>> {
        let i = self.index(at)?;
        let passes = self.passes_of(i);
        Some(SlotMut {
            times: self.slots.get_mut(i)?,
            passes: self.passes.get_mut(passes.clone())?,
            expected_passes: self.expected_passes.get_mut(passes)?,
        })
    }

    /// Sets a present slot's stall and tail.
    pub fn set_stall_and_tail(&mut self, at: (usize, usize), stall: f64, tail: f64) {
        if let Some(t) = self.index(at).and_then(|i| self.slots.get_mut(i)) {
            (t.stall, t.tail) = (stall, tail);
        }
    }

    /// Slot (p, d)'s passes, to write.
    pub fn passes_mut(&mut self, at: (usize, usize)) -> &mut [(f64, f64)] {
        let range = self.index(at).map(|i| self.passes_of(i)).unwrap_or_default();
        self.passes.get_mut(range).unwrap_or_default()
    }
}

/// Where the replay's steps come from: the table ([`FromFrame`]), or steps made by hand.
pub trait Steps: Sync {
    fn count(&self) -> usize;
    /// Writes step `i` into `out`, reusing its allocations.
    fn fill(&self, i: usize, out: &mut StepSlots);
    /// Stages and data-parallel ranks: the most slots of any step's rows, and of any row.
    fn shape(&self) -> (usize, usize);
}

impl Steps for [StepSlots] {
    fn count(&self) -> usize {
        self.len()
    }

    fn fill(&self, i: usize, out: &mut StepSlots) {
        if let Some(step) = self.get(i) {
            out.clone_from(step);
        }
    }

    fn shape(&self) -> (usize, usize) {
        let stages = self.iter().map(StepSlots::stages).max().unwrap_or(1);
        let dps = self.iter().map(StepSlots::dps).max().unwrap_or(1);
        (stages, dps)
    }
}

/// The steps of a table. Micro-batch passes are used when every slot of the step has the same
/// number of them. With a usable cost model, each slot also gets the compute its data should
/// take.
pub struct FromFrame<'a> {
    frame: &'a Frame,
    fit: Option<&'a Fit>,
    mb_fit: Option<&'a Fit>,
    /// Each worker's slot (`stage × dps + dp`), in worker order: looked up for every cell.
    slot_of: Vec<usize>,
}

impl<'a> FromFrame<'a> {
    pub fn new(frame: &'a Frame, fit: Option<&'a Fit>, mb_fit: Option<&'a Fit>) -> Self {
        let dps = frame.dp_size.max(1);
        // A worker beyond the data-parallel width (none, as the table is made) has no slot.
        let slot_of = frame.slots.iter().map(|s| if s.dp < dps { s.stage * dps + s.dp } else { usize::MAX }).collect();
        FromFrame { frame, fit: fit.filter(|f| f.usable()), mb_fit: mb_fit.filter(|f| f.usable()), slot_of }
    }
}

impl Steps for FromFrame<'_> {
    fn count(&self) -> usize {
        self.frame.steps.len()
    }

    fn shape(&self) -> (usize, usize) {
        (self.frame.stages.max(1), self.frame.dp_size.max(1))
    }

    fn fill(&self, si: usize, out: &mut StepSlots) {
        let frame = self.frame;
        let row = frame.row(si);
        let (stages, dps) = (frame.stages.max(1), frame.dp_size.max(1));
        // The busiest replica of each slot (the first of equals): (worker, its work).
        let mut best: Vec<Option<(usize, Nanos)>> = vec![None; stages * dps];
        let mut measured = 0.0f64;
        for (wi, ((work, &duration), &slot)) in row.works().zip(row.duration).zip(&self.slot_of).enumerate() {
            let Some(work) = work else { continue };
            measured = measured.max(duration as f64);
            if let Some(b) = best.get_mut(slot)
                && b.is_none_or(|(_, most)| work > most)
            {
                *b = Some((wi, work));
            }
        }
        let mut counts = best.iter().flatten().map(|&(wi, _)| row.micro_batch_span(wi).len());
        let first = counts.next();
        let uniform = first.is_some_and(|n| n > 0 && counts.all(|m| m == n));
        out.reset(stages, dps, if uniform { first.unwrap_or(1) } else { 1 });
        out.schedule = frame.schedule;
        out.chunk_shares.clone_from(&frame.chunk_shares);
        let mut least = f64::INFINITY;
        // Per stage, its transfer where every slot's collectives carry timestamps.
        let mut measured_transfer: Vec<Option<f64>> = Vec::with_capacity(stages);
        let mut transfers = Vec::new();
        let at = |column: &[Nanos], wi: usize| column.get(wi).copied().unwrap_or(0) as f64;
        let mbs = row.part_micro_batches;
        let mb_fit = self.mb_fit.filter(|_| uniform);
        for (p, stage) in best.chunks(dps).enumerate() {
            let mut present = 0usize;
            transfers.clear();
            for (d, &(wi, _)) in stage.iter().enumerate().filter_map(|(d, b)| Some((d, b.as_ref()?))) {
                present += 1;
                transfers.extend(row.transfer.get(wi).and_then(|t| t.get()).map(|t| t as f64));
                let Some(slot) = out.slot_mut((p, d)) else { continue };
                // Its micro-batches are read from the part's columns directly (this runs for
                // every worker-step, twice).
                let span = row.micro_batch_span(wi);
                let compute = at(row.compute, wi);
                // A pass holds its stage for its compute and its own sends and receives (where
                // they occupy the thread: [`crate::model::MicroBatch::p2p`]).
                let mut in_passes = 0.0;
                if uniform {
                    let forward = mbs.forward.get(span.clone()).unwrap_or_default();
                    let backward = mbs.backward.get(span.clone()).unwrap_or_default();
                    let p2p = mbs.p2p.get(span.clone()).unwrap_or_default();
                    for (pass, ((&f, &b), &(pf, pb))) in
                        slot.passes.iter_mut().zip(forward.iter().zip(backward).zip(p2p))
                    {
                        in_passes += f.saturating_add(b) as f64;
                        *pass = (f.saturating_add(pf) as f64, b.saturating_add(pb) as f64);
                    }
                } else if let Some(pass) = slot.passes.first_mut() {
                    *pass = (compute, 0.0);
                    in_passes = compute;
                }
                let comm = at(row.collectives, wi);
                *slot.times = SlotTimes {
                    present: true,
                    expected_passes: false,
                    stall: at(row.stall, wi),
                    tail: at(row.optimizer, wi) + at(row.other, wi) + (compute - in_passes).max(0.0),
                    comm,
                    expected: self.fit.filter(|_| row.seq.known(wi)).map(|f| f.predict(&row.seq.get(wi))),
                    data: row.seq.known(wi).then(|| {
                        let seq = row.seq.get(wi);
                        DataSize { tokens: seq.tokens, quadratic: seq.quadratic }
                    }),
                };
                if let Some(f) = mb_fit.filter(|_| span.clone().all(|m| mbs.seq.known(m))) {
                    slot.times.expected_passes = true;
                    for (m, e) in span.zip(slot.expected_passes) {
                        *e = f.predict(&mbs.seq.get(m)).max(0.0);
                    }
                }
                least = least.min(comm);
            }
            measured_transfer.push((!transfers.is_empty() && transfers.len() == present).then(|| median(&transfers)));
        }
        // Elsewhere, the least time any slot spent in collectives: the last to arrive barely
        // waits (and in a pipeline, the stage that finishes last does not wait for the others
        // at the end of the step).
        let least = if least.is_finite() { least } else { 0.0 };
        out.transfer.clear();
        out.transfer.extend(measured_transfer.into_iter().map(|t| t.unwrap_or(least)));
        out.measured = measured;
    }
}

/// One slot, owned: to make steps by hand in tests.
#[cfg(test)]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlotStep {
    pub stall: f64,
    pub passes: Vec<(f64, f64)>,
    pub tail: f64,
    pub comm: f64,
    pub expected: Option<f64>,
    pub expected_passes: Option<Vec<f64>>,
    pub data: Option<DataSize>,
}

#[cfg(test)]
impl StepSlots {
    /// A step of these rows of slots (every present one with as many passes).
    pub fn of(rows: &[Vec<Option<SlotStep>>], transfer: &[f64]) -> Self {
        let dps = rows.iter().map(Vec::len).max().unwrap_or(0);
        let passes = rows.iter().flatten().flatten().map(|s| s.passes.len()).max().unwrap_or(1);
        let mut step = StepSlots::default();
        step.reset(rows.len(), dps, passes);
        for (p, row) in rows.iter().enumerate() {
            for (d, s) in row.iter().enumerate() {
                let Some(s) = s else { continue };
                assert_eq!(s.passes.len(), passes, "every slot of a step has as many passes");
                let slot = step.slot_mut((p, d)).expect("a slot of the step's shape");
                slot.passes.copy_from_slice(&s.passes);
                if let Some(e) = &s.expected_passes {
                    slot.expected_passes.copy_from_slice(e);
                }
                *slot.times = SlotTimes {
                    present: true,
                    expected_passes: s.expected_passes.is_some(),
                    stall: s.stall,
                    tail: s.tail,
                    comm: s.comm,
                    expected: s.expected,
                    data: s.data,
                };
            }
        }
        step.transfer = transfer.to_vec();
        step
    }
}

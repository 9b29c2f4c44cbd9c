//! The samples of the table that the cost model and signals 2 and 3 read: at most
//! [`MAX_SAMPLES`](super::stats::MAX_SAMPLES) of each, at an even stride
//! ([`evenly_spaced`](super::stats::evenly_spaced)'s).
//!
//! They are taken together, in one pass that counts and one that takes, each spread over the
//! cores by ranges of rows. Each used to make its own two passes: eight reads of a table that
//! holds half a gigabyte at 4096 workers × 1000 steps.

use super::costmodel::usable;
use super::frame::{Cell, Frame, MicroBatchCell, SeqFeatures};
use super::par;
use super::stats::{EvenSample, median};
use crate::model::Nanos;

#[derive(Default)]
pub struct Samples {
    /// Worker-steps whose sequences are known.
    pub known_cells: Vec<Cell>,
    /// Micro-batches whose sequences are known.
    pub known_micro_batches: Vec<MicroBatchCell>,
    /// What the cost model fits: sequences and compute of the worker-steps and micro-batches
    /// it can use ([`usable_sample`](super::costmodel::usable_sample)).
    pub cell_costs: Vec<(SeqFeatures, f64)>,
    pub micro_batch_costs: Vec<(SeqFeatures, f64)>,
}

/// How many items of each sample one or more rows offer.
#[derive(Clone, Copy, Default)]
struct Counts {
    known_cells: usize,
    cell_costs: usize,
    known_micro_batches: usize,
    micro_batch_costs: usize,
}

impl Counts {
    fn plus(self, o: Counts) -> Counts {
        Counts {
            known_cells: self.known_cells + o.known_cells,
            cell_costs: self.cell_costs + o.cell_costs,
            known_micro_batches: self.known_micro_batches + o.known_micro_batches,
            micro_batch_costs: self.micro_batch_costs + o.micro_batch_costs,
        }
    }
}

/// Whether a cell's (or micro-batch's) sequences are known, and whether the cost model can use
/// it: from the few columns that say, without making whole cells.
fn kinds(known: bool, compute: Nanos) -> (bool, bool) {
    (known, usable(known, compute as f64))
}

fn count(frame: &Frame, si: usize) -> Counts {
    let mut n = Counts::default();
    let row = frame.row(si);
    for (i, (&present, &compute)) in row.present.iter().zip(row.compute).enumerate() {
        if !present {
            continue;
        }
        let (known, usable) = kinds(row.seq.known(i), compute);
        n.known_cells += usize::from(known);
        n.cell_costs += usize::from(usable);
        let mbs = row.part_micro_batches;
        for m in row.micro_batch_span(i) {
            let (known, usable) = kinds(mbs.seq.known(m), mbs.compute(m));
            n.known_micro_batches += usize::from(known);
            n.micro_batch_costs += usize::from(usable);
        }
    }
    n
}

/// Steps read for each stage's weight: enough for a median, few enough to cost nothing.
const WEIGHT_STEPS: usize = 64;

/// Each stage's typical worker-step compute over the stages' median, from up to
/// [`WEIGHT_STEPS`] steps at an even stride; 1 for every stage of a job of one. A heavy
/// stage's workers cost more for the same data: a fit over stages of different weight explains
/// little (R² near 0 with one stage 1.8× the others), and its poor fit says nothing of the data.
fn stage_weights(frame: &Frame) -> Vec<f64> {
    let stages = frame.stages.max(1);
    if stages == 1 {
        return vec![1.0];
    }
    let mut computes: Vec<Vec<f64>> = vec![Vec::new(); stages];
    let stride = frame.steps.len().div_ceil(WEIGHT_STEPS).max(1);
    for si in (0..frame.steps.len()).step_by(stride) {
        let row = frame.row(si);
        for ((&present, &compute), slot) in row.present.iter().zip(row.compute).zip(&frame.slots) {
            if let Some(c) = computes.get_mut(slot.stage).filter(|_| present && compute > 0) {
                c.push(compute as f64);
            }
        }
    }
    let typical: Vec<f64> = computes.iter().map(|c| median(c)).collect();
    let overall = median(&typical.iter().copied().filter(|&t| t > 0.0).collect::<Vec<_>>());
    typical.iter().map(|&t| if t > 0.0 && overall > 0.0 { t / overall } else { 1.0 }).collect()
}

pub fn take(frame: &Frame) -> Samples {
    // What the cost model fits is each sample's compute on a stage of typical weight.
    let weights = stage_weights(frame);
    let weight = |i: usize| frame.slots.get(i).and_then(|s| weights.get(s.stage)).copied().unwrap_or(1.0);
    // Rows are counted on every core, then taken on every core, each range of rows resuming
    // the samples where the rows before it left them.
    let min_rows = par::min_rows(frame.slots.len());
    let per_row = par::map(frame.steps.len(), min_rows, |si| count(frame, si));
    let mut before = Vec::with_capacity(per_row.len() + 1);
    let mut total = Counts::default();
    for &n in &per_row {
        before.push(total);
        total = total.plus(n);
    }
    let parts = par::parts(frame.steps.len(), min_rows, |rows| {
        let at = before.get(rows.start).copied().unwrap_or(total);
        let mut known_cells = EvenSample::resumed(total.known_cells, at.known_cells);
        let mut cell_costs = EvenSample::resumed(total.cell_costs, at.cell_costs);
        let mut known_micro_batches = EvenSample::resumed(total.known_micro_batches, at.known_micro_batches);
        let mut micro_batch_costs = EvenSample::resumed(total.micro_batch_costs, at.micro_batch_costs);
        for row in rows.map(|si| frame.row(si)) {
            for (i, (&present, &compute)) in row.present.iter().zip(row.compute).enumerate() {
                if !present {
                    continue;
                }
                let (known, usable) = kinds(row.seq.known(i), compute);
                let cell = || row.cell(i).unwrap_or_default();
                if known {
                    known_cells.offer(cell);
                }
                if usable {
                    cell_costs.offer(|| (row.seq.get(i), compute as f64 / weight(i)));
                }
                // Its micro-batches are read from the part's columns directly (slicing every
                // column for each cell was a twentieth of the diagnosis's instructions).
                let mbs = row.part_micro_batches;
                for m in row.micro_batch_span(i) {
                    let compute = mbs.compute(m);
                    let (known, usable) = kinds(mbs.seq.known(m), compute);
                    if known {
                        known_micro_batches.offer(|| mbs.get(m));
                    }
                    if usable {
                        micro_batch_costs.offer(|| (mbs.seq.get(m), compute as f64 / weight(i)));
                    }
                }
            }
        }
        Samples {
            known_cells: known_cells.taken(),
            known_micro_batches: known_micro_batches.taken(),
            cell_costs: cell_costs.taken(),
            micro_batch_costs: micro_batch_costs.taken(),
        }
    });
    // The first part is taken whole (with one core, it is all of them), the others appended.
    let mut parts = parts.into_iter();
    let mut all = parts.next().unwrap_or_default();
    for part in parts {
        all.known_cells.extend(part.known_cells);
        all.known_micro_batches.extend(part.known_micro_batches);
        all.cell_costs.extend(part.cell_costs);
        all.micro_batch_costs.extend(part.micro_batch_costs);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::frame;
    use crate::analysis::stats::{MAX_SAMPLES, evenly_spaced};
    use crate::model::{
        Job, KindTotals, MicroBatch, Nanos, SequenceKnowledge, Sequences, SpanKind, Worker, WorkerStep,
    };

    /// Two stages, the second doing 1.8× the first's work for the same data, the data varying:
    /// each stage's compute is its data's cost times its weight, so the fit over both stages,
    /// weighed out, explains all of it (over the raw times it explained almost nothing).
    #[test]
    fn a_heavy_stage_is_weighed_out_of_what_the_cost_model_fits() {
        let workers = (0..8u32)
            .map(|w| {
                let (dp, pp) = (w % 4, w / 4);
                let steps = (0..12u64).map(move |step| {
                    let length = 1000 + 700 * ((step as u32 + dp) % 4);
                    let cost = f64::from(length) * f64::from(length) * if pp == 1 { 1.8 } else { 1.0 };
                    let mut totals = KindTotals::default();
                    totals.add(SpanKind::Compute, cost as Nanos);
                    let sequences = Sequences::from_lengths(SequenceKnowledge::Exact, vec![length]);
                    (WorkerStep { step, totals, sequences, ..WorkerStep::default() }, [], [])
                });
                let coords = crate::model::Coords { dp: Some(dp), pp: Some(pp), ..Default::default() };
                Worker { rank: w, coords, ..Worker::default() }.with_steps(steps)
            })
            .collect();
        let frame = frame::build(&Job { workers });
        assert_eq!(stage_weights(&frame).iter().map(|w| (w * 100.0).round()).collect::<Vec<_>>(), [71.0, 129.0]);
        let fit = crate::analysis::costmodel::fit(&take(&frame).cell_costs).expect("a fit");
        assert!(fit.r2 > 0.99 && fit.usable(), "{fit:?}");
    }

    /// The samples taken together are the ones each reader took on its own: `evenly_spaced`
    /// of every worker-step or micro-batch it could use. Enough cells that each sample strides.
    #[test]
    fn samples_are_what_each_reader_would_take_alone() {
        let n = 3 * MAX_SAMPLES + 17;
        // In three rows, wide enough that, on a machine with several cores, each core takes some;
        // cell `i` is step i / width of worker i % width.
        let width = n.div_ceil(3);
        let tokens = |known: bool, i: usize| {
            if known { Sequences::from_lengths(SequenceKnowledge::Exact, vec![i as u32]) } else { Sequences::default() }
        };
        let workers = (0..width)
            .map(|w| {
                let steps = (0..3).map(|step| (step, step as usize * width + w)).filter(|&(_, i)| i < n && i % 11 != 0);
                Worker { rank: w as u32, ..Worker::default() }.with_steps(steps.map(|(step, i)| {
                    let mut totals = KindTotals::default();
                    totals.add(SpanKind::Compute, (i % 5) as Nanos);
                    let micro_batch = MicroBatch {
                        forward: (i % 7) as Nanos,
                        sequences: tokens(i % 2 == 0, i),
                        ..MicroBatch::default()
                    };
                    let step = WorkerStep { step, totals, sequences: tokens(i % 3 != 0, i), ..WorkerStep::default() };
                    (step, [micro_batch], [])
                }))
            })
            .collect();
        let frame = frame::build(&Job { workers });
        let s = take(&frame);

        let cells = || frame.cells();
        let all_micro_batches: Vec<MicroBatchCell> = cells().flat_map(|c| frame.micro_batches_of(&c)).collect();
        let micro_batches = || all_micro_batches.iter();
        let tokens = |f: &SeqFeatures| f.tokens;
        let known = evenly_spaced(cells().filter(|c| c.seq.known));
        assert!(known.len() < cells().filter(|c| c.seq.known).count() && known.len() <= MAX_SAMPLES);
        assert_eq!(s.known_cells, known);
        assert_eq!(
            s.known_micro_batches.iter().map(|m| tokens(&m.seq)).collect::<Vec<_>>(),
            evenly_spaced(micro_batches().filter(|m| m.seq.known).map(|m| tokens(&m.seq)))
        );
        assert_eq!(
            s.cell_costs.iter().map(|(f, y)| (tokens(f), *y)).collect::<Vec<_>>(),
            evenly_spaced(cells().filter(|c| c.seq.known && c.compute > 0).map(|c| (tokens(&c.seq), c.compute as f64)))
        );
        assert_eq!(
            s.micro_batch_costs.iter().map(|(f, y)| (tokens(f), *y)).collect::<Vec<_>>(),
            evenly_spaced(
                micro_batches()
                    .filter(|m| m.seq.known && m.compute() > 0)
                    .map(|m| (tokens(&m.seq), m.compute() as f64))
            )
        );
    }
}

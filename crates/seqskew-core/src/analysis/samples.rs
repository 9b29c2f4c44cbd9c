//! The samples of the table that the cost model and signals 2 and 3 read: at most
//! [`MAX_SAMPLES`](super::stats::MAX_SAMPLES) of each, at an even stride
//! ([`evenly_spaced`](super::stats::evenly_spaced)'s).
//!
//! They are taken together, in one pass that counts and one that takes. Each used to make its
//! own two passes: eight reads of a table that holds half a gigabyte at 4096 workers × 1000
//! steps.

use super::costmodel::usable_sample;
use super::frame::{Cell, Frame, MicroBatchCell, SeqFeatures};
use super::stats::EvenSample;

pub struct Samples<'a> {
    /// Worker-steps whose sequences are known.
    pub known_cells: Vec<&'a Cell>,
    /// Micro-batches whose sequences are known.
    pub known_micro_batches: Vec<&'a MicroBatchCell>,
    /// What the cost model fits: sequences and compute of the worker-steps and micro-batches
    /// it can use ([`usable_sample`]).
    pub cell_costs: Vec<(SeqFeatures, f64)>,
    pub micro_batch_costs: Vec<(SeqFeatures, f64)>,
}

pub fn take(frame: &Frame) -> Samples<'_> {
    let cells = || frame.cells.iter().flatten().flatten();
    let (mut known_cells, mut cell_costs, mut known_micro_batches, mut micro_batch_costs) = (0, 0, 0, 0);
    for cell in cells() {
        known_cells += usize::from(cell.seq.known);
        cell_costs += usize::from(usable_sample(&cell.seq, cell.compute as f64));
        for m in frame.micro_batches_of(cell) {
            known_micro_batches += usize::from(m.seq.known);
            micro_batch_costs += usize::from(usable_sample(&m.seq, m.compute() as f64));
        }
    }
    let mut known_cells = EvenSample::of(known_cells);
    let mut cell_costs = EvenSample::of(cell_costs);
    let mut known_micro_batches = EvenSample::of(known_micro_batches);
    let mut micro_batch_costs = EvenSample::of(micro_batch_costs);
    for cell in cells() {
        if cell.seq.known {
            known_cells.offer(|| cell);
        }
        if usable_sample(&cell.seq, cell.compute as f64) {
            cell_costs.offer(|| (cell.seq, cell.compute as f64));
        }
        for m in frame.micro_batches_of(cell) {
            if m.seq.known {
                known_micro_batches.offer(|| m);
            }
            if usable_sample(&m.seq, m.compute() as f64) {
                micro_batch_costs.offer(|| (m.seq, m.compute() as f64));
            }
        }
    }
    Samples {
        known_cells: known_cells.taken(),
        known_micro_batches: known_micro_batches.taken(),
        cell_costs: cell_costs.taken(),
        micro_batch_costs: micro_batch_costs.taken(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::{MAX_SAMPLES, evenly_spaced};
    use crate::model::Nanos;

    /// The samples taken together are the ones each reader took on its own: `evenly_spaced`
    /// of every worker-step or micro-batch it could use. Enough cells that each sample strides.
    #[test]
    fn samples_are_what_each_reader_would_take_alone() {
        let n = 3 * MAX_SAMPLES + 17;
        let seq = |known: bool, tokens: usize| SeqFeatures { known, tokens: tokens as f64, ..SeqFeatures::default() };
        let mut frame = Frame::default();
        let row = (0..n)
            .map(|i| {
                frame.micro_batches.push(MicroBatchCell {
                    forward: (i % 7) as Nanos,
                    seq: seq(i % 2 == 0, i),
                    ..MicroBatchCell::default()
                });
                let (start, end) = (i as u32, i as u32 + 1);
                (i % 11 != 0).then(|| Cell {
                    compute: (i % 5) as Nanos,
                    seq: seq(i % 3 != 0, i),
                    micro_batches: start..end,
                    ..Cell::default()
                })
            })
            .collect();
        frame.cells = vec![row, vec![None; 3]];
        let s = take(&frame);

        let cells = || frame.cells.iter().flatten().flatten();
        let micro_batches = || cells().flat_map(|c| frame.micro_batches_of(c));
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

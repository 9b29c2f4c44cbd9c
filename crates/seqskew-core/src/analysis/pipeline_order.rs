//! Which schedule a pipeline ran, from what its first stage's micro-batches show: under 1F1B a
//! backward runs between two of its forwards once the pipeline is full (from the `stages`-th
//! forward on), under GPipe its forwards run back to back. The first stage never waits for a
//! forward from another stage, so a gap there is its own backward, not a wait.

use crate::model::{MicroBatch, Worker};
use crate::schedule::PipelineSchedule;

/// The job's schedule: GPipe where most of the first stage's telling pairs of forwards (the
/// `stages`-th on, by micro-batch id) run back to back, else 1F1B (also when nothing tells: no
/// pipeline, no pass starts, too few micro-batches). `first_stage`: the workers of the first
/// stage.
pub fn schedule<'a>(first_stage: impl Iterator<Item = &'a Worker>, stages: usize) -> PipelineSchedule {
    if stages < 2 {
        return PipelineSchedule::OneFOneB;
    }
    let (mut back_to_back, mut apart) = (0usize, 0usize);
    for worker in first_stage {
        for step in &worker.steps {
            let (b, a) = telling_pairs(worker.micro_batches_of(step), stages);
            back_to_back += b;
            apart += a;
        }
    }
    if back_to_back > apart { PipelineSchedule::Gpipe } else { PipelineSchedule::OneFOneB }
}

/// Of one step's micro-batches on the first stage (sorted by id), the pairs of consecutive
/// forwards from the `stages`-th on: (those back to back, those with room for half a backward
/// between the first's end and the second's start).
fn telling_pairs(micro_batches: &[MicroBatch], stages: usize) -> (usize, usize) {
    let (mut back_to_back, mut apart) = (0, 0);
    for (before, after) in micro_batches.iter().zip(micro_batches.iter().skip(1)).skip(stages.saturating_sub(1)) {
        let (Some(first), Some(second)) = (before.start, after.start) else { continue };
        let gap = second.saturating_sub(first.saturating_add(before.forward));
        if gap.saturating_mul(2) >= before.backward.max(1) {
            apart += 1;
        } else {
            back_to_back += 1;
        }
    }
    (back_to_back, apart)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Nanos;

    /// Forward 10, backward 20: micro-batches starting at `starts`.
    fn passes(starts: &[Nanos]) -> Vec<MicroBatch> {
        let mb = |(id, &start): (usize, &Nanos)| MicroBatch {
            id: id as u32,
            start: Some(start),
            forward: 10,
            backward: 20,
            ..MicroBatch::default()
        };
        starts.iter().enumerate().map(mb).collect()
    }

    #[test]
    fn a_first_stage_tells_gpipe_from_1f1b() {
        // Two stages, four micro-batches. 1F1B on stage 0: F0 F1 B0 F2 B1 F3 B2 B3 (forwards at
        // 0, 10, then each after a backward); GPipe: F0 F1 F2 F3 back to back.
        assert_eq!(telling_pairs(&passes(&[0, 10, 45, 80]), 2), (0, 2));
        assert_eq!(telling_pairs(&passes(&[0, 10, 20, 30]), 2), (2, 0));
        // The warm-up pairs (before the `stages`-th forward) tell nothing; missing starts neither.
        assert_eq!(telling_pairs(&passes(&[0, 10]), 2), (0, 0));
        let mut unknown = passes(&[0, 10, 20, 30]);
        unknown.iter_mut().for_each(|m| m.start = None);
        assert_eq!(telling_pairs(&unknown, 2), (0, 0));
    }
}

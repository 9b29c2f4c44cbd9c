//! Which schedule a pipeline ran. Interleaved where every worker of the pipeline ran several
//! of its stages as model chunks, placed as interleaved 1F1B places them (stage p of P holds
//! the pipeline's stages p, p + P, …). Else from what its first stage's micro-batches show:
//! under 1F1B a backward runs between two of its forwards once the pipeline is full (from the
//! `stages`-th forward on), under GPipe its forwards run back to back. The first stage never
//! waits for a forward from another stage, so a gap there is its own backward, not a wait.

use std::collections::BTreeMap;

use crate::model::{MicroBatch, Worker};
use crate::schedule::PipelineSchedule;

/// Under an interleaved schedule, how each stage's forward and backward compute splits over its
/// model chunks (each stage's shares sum to 1 per direction), from its workers' totals: a
/// micro-batch's pass through one chunk is that share of its whole pass on the stage (the same
/// data goes through every chunk; the chunks' layers set their shares).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChunkShares {
    chunks: usize,
    /// (forward, backward) of stage p's chunk c at `p * chunks + c`.
    shares: Vec<(f64, f64)>,
}

impl ChunkShares {
    /// Stage `stage`'s chunk `chunk`'s (forward, backward) share: 1 when not interleaved.
    pub fn of(&self, stage: usize, chunk: usize) -> (f64, f64) {
        if self.chunks <= 1 {
            return (1.0, 1.0);
        }
        let even = 1.0 / self.chunks as f64;
        self.shares.get(stage * self.chunks + chunk).copied().unwrap_or((even, even))
    }

    /// Every chunk of every stage an even share: the stages balanced, as moving layers between
    /// them would (in place: a step's replays reuse their buffers).
    pub fn even_out(&mut self) {
        let even = 1.0 / self.chunks.max(1) as f64;
        self.shares.iter_mut().for_each(|s| *s = (even, even));
    }
}

/// The model chunks the workers of stage `stage` ran (under any placement), each as its pipeline
/// stage and its share of their compute, forward and backward together; sorted by pipeline
/// stage. Empty where they ran one stage each.
pub fn chunks_of_stage<'a>(workers: impl Iterator<Item = (&'a Worker, usize)>, stage: usize) -> Vec<(usize, f64)> {
    let mut work: BTreeMap<usize, f64> = BTreeMap::new();
    for (worker, _) in workers.filter(|&(_, s)| s == stage) {
        for chunk in &worker.model_chunks {
            *work.entry(chunk.stage as usize).or_default() += chunk.forward.saturating_add(chunk.backward) as f64;
        }
    }
    let total: f64 = work.values().sum();
    if work.len() < 2 || total <= 0.0 {
        return Vec::new();
    }
    work.into_iter().map(|(s, w)| (s, w / total)).collect()
}

/// The schedule a job's pipelines ran, as the replay runs it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Order {
    pub schedule: PipelineSchedule,
    /// Under an interleaved schedule, each stage's compute split over its model chunks.
    pub chunk_shares: ChunkShares,
    /// The workers ran several pipeline stages each, placed otherwise than interleaved 1F1B
    /// places them (V-shaped, as zero-bubble and DualPipe schedules do): the replay runs each
    /// worker as one stage, its stages' passes summed, which approximates that schedule.
    pub unknown_placement: bool,
}

/// The job's schedule: interleaved where every worker ran its model chunks as interleaved 1F1B
/// places them ([`interleaved`]); else GPipe where most of the first stage's telling pairs of
/// forwards (the `stages`-th on, by micro-batch id) run back to back, else 1F1B (also when
/// nothing tells: no pipeline, no pass starts, too few micro-batches). `workers`: each worker
/// with its stage.
pub fn schedule<'a>(workers: impl Iterator<Item = (&'a Worker, usize)> + Clone, stages: usize) -> Order {
    if stages < 2 {
        return Order::default();
    }
    if let Some(chunk_shares) = interleaved(workers.clone(), stages) {
        let schedule = PipelineSchedule::Interleaved { chunks: chunk_shares.chunks };
        return Order { schedule, chunk_shares, unknown_placement: false };
    }
    let (mut back_to_back, mut apart) = (0usize, 0usize);
    for (worker, _) in workers.clone().filter(|&(_, stage)| stage == 0) {
        for step in &worker.steps {
            let (b, a) = telling_pairs(worker.micro_batches_of(step), stages);
            back_to_back += b;
            apart += a;
        }
    }
    let schedule = if back_to_back > apart { PipelineSchedule::Gpipe } else { PipelineSchedule::OneFOneB };
    let unknown_placement = workers.clone().any(|(w, _)| !w.model_chunks.is_empty());
    Order { schedule, chunk_shares: ChunkShares::default(), unknown_placement }
}

/// The chunk shares of an interleaved pipeline: where every worker names the same number (two
/// or more) of model chunks, stage p's being the pipeline's stages p, p + P, … (other
/// placements, such as the V-shaped ones of zero-bubble schedules, are not this schedule).
fn interleaved<'a>(
    mut workers: impl Iterator<Item = (&'a Worker, usize)> + Clone,
    stages: usize,
) -> Option<ChunkShares> {
    let (first, _) = workers.clone().next()?;
    let chunks = first.model_chunks.len();
    if chunks < 2 {
        return None;
    }
    // Per stage and chunk, the summed (forward, backward) of its workers.
    let mut sums = vec![(0.0f64, 0.0f64); stages * chunks];
    let placed = workers.all(|(worker, stage)| {
        worker.model_chunks.len() == chunks
            && worker.model_chunks.iter().enumerate().all(|(c, chunk)| {
                let Some(sum) = sums.get_mut(stage * chunks + c) else { return false };
                sum.0 += chunk.forward as f64;
                sum.1 += chunk.backward as f64;
                chunk.stage as usize == c * stages + stage
            })
    });
    if !placed {
        return None;
    }
    for stage in sums.chunks_mut(chunks) {
        let (forward, backward) = stage.iter().fold((0.0, 0.0), |(f, b), s| (f + s.0, b + s.1));
        let even = 1.0 / chunks as f64;
        for s in stage.iter_mut() {
            *s = (if forward > 0.0 { s.0 / forward } else { even }, if backward > 0.0 { s.1 / backward } else { even });
        }
    }
    Some(ChunkShares { chunks, shares: sums })
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
    fn ranks_that_ran_their_model_chunks_are_an_interleaved_pipeline() {
        use crate::model::ModelChunk;
        // Two ranks of a 4-stage pipeline: rank 0 holds stages 0 and 2, rank 1 stages 1 and 3;
        // stage 3 does three times stage 1's work (forward 10 / 30, backward 20 / 60).
        let chunk = |stage, work| ModelChunk { stage, forward: work, backward: 2 * work };
        let worker = |chunks: Vec<ModelChunk>| Worker { model_chunks: chunks, ..Worker::default() };
        let ranks = [worker(vec![chunk(0, 10), chunk(2, 10)]), worker(vec![chunk(1, 10), chunk(3, 30)])];
        let Order { schedule: order, chunk_shares: shares, unknown_placement } = schedule(ranks.iter().zip([0, 1]), 2);
        assert_eq!((order, unknown_placement), (PipelineSchedule::Interleaved { chunks: 2 }, false));
        assert_eq!((shares.of(0, 0), shares.of(1, 1)), ((0.5, 0.5), (0.75, 0.75)));
        let mut balanced = shares.clone();
        balanced.even_out();
        assert_eq!(balanced.of(1, 1), (0.5, 0.5));
        // Stage 1's chunks: pipeline stages 1 and 3, a quarter and three quarters of its work.
        assert_eq!(chunks_of_stage(ranks.iter().zip([0, 1]), 1), [(1, 0.25), (3, 0.75)]);
        assert_eq!(chunks_of_stage(ranks.iter().zip([0, 1]), 2), []);
        // A V-shaped placement (rank 0 holding stages 0 and 3) is another schedule, which the
        // replay does not know, and says so; one stage per rank is no interleaving.
        let v_shape = [worker(vec![chunk(0, 10), chunk(3, 10)]), worker(vec![chunk(1, 10), chunk(2, 10)])];
        let v_order = schedule(v_shape.iter().zip([0, 1]), 2);
        assert_eq!((v_order.schedule, v_order.unknown_placement), (PipelineSchedule::OneFOneB, true));
        assert_eq!(chunks_of_stage(v_shape.iter().zip([0, 1]), 0), [(0, 0.5), (3, 0.5)]);
        let plain = [Worker::default(), Worker::default()];
        assert_eq!(schedule(plain.iter().zip([0, 1]), 2), Order::default());
        assert_eq!(ChunkShares::default().of(1, 0), (1.0, 1.0));
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

//! Pipeline schedules the simulator times with its own code, so that some of the corpus is not
//! made by the replay the diagnosis uses (`seqskew_core::schedule::replay_pipeline`, 1F1B).

use seqskew_core::model::Nanos;
use seqskew_core::schedule::PassTiming;

/// GPipe: each stage runs every micro-batch's forward in order, then every backward from the
/// last micro-batch to the first. A forward waits for the previous stage's same forward (plus
/// `p2p`), a backward for the next stage's same backward (plus `p2p`); on the last stage the
/// first backward follows its own last forward. `ready[p]` is when stage `p` can start,
/// `duration(p, m, backward)` a pass's length. Returns each stage's passes in execution order.
///
/// Timed as a recurrence over the (stage, pass) grid, stage by stage for the forwards and back
/// again for the backwards: every pass's inputs are ends computed before it.
pub fn gpipe(
    ready: &[Nanos],
    micro_batches: usize,
    duration: &dyn Fn(usize, usize, bool) -> Nanos,
    p2p: Nanos,
) -> Vec<Vec<PassTiming>> {
    let stages = ready.len();
    let mut passes: Vec<Vec<PassTiming>> = vec![Vec::with_capacity(2 * micro_batches); stages];
    // Forwards: stage p's m-th starts when its (m−1)-th has ended and p−1's m-th has arrived.
    let mut arrived: Vec<Nanos> = vec![Nanos::MIN; micro_batches];
    for (p, (stage, &free)) in passes.iter_mut().zip(ready).enumerate() {
        let mut free = free;
        for (m, arrival) in arrived.iter_mut().enumerate() {
            let start = free.max(*arrival);
            let end = start + duration(p, m, false).max(0);
            stage.push(PassTiming { chunk: 0, micro_batch: m, backward: false, start, end });
            free = end;
            *arrival = end + p2p;
        }
    }
    // Backwards, from the last stage up, micro-batches in reverse: the last stage's wait only on
    // its own forwards (its `free`), every other stage's also on the gradient from below.
    let mut gradient: Vec<Nanos> = vec![Nanos::MIN; micro_batches];
    for (p, stage) in passes.iter_mut().enumerate().rev() {
        let mut free = stage.last().map_or(Nanos::MIN, |t| t.end);
        for (m, arrival) in gradient.iter_mut().enumerate().rev() {
            let start = free.max(*arrival);
            let end = start + duration(p, m, true).max(0);
            stage.push(PassTiming { chunk: 0, micro_batch: m, backward: true, start, end });
            free = end;
            *arrival = end + p2p;
        }
    }
    passes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two stages, two micro-batches, every pass 10 (backward 20), transfers 1: worked by hand.
    #[test]
    fn gpipe_runs_every_forward_then_every_backward_in_reverse() {
        let timings = gpipe(&[0, 0], 2, &|_, _, backward| if backward { 20 } else { 10 }, 1);
        let spans = |p: usize| -> Vec<(usize, bool, Nanos, Nanos)> {
            timings[p].iter().map(|t| (t.micro_batch, t.backward, t.start, t.end)).collect()
        };
        // Stage 1: each forward one transfer after stage 0's; B1 right after its own F1, then B0.
        assert_eq!(spans(1), [(0, false, 11, 21), (1, false, 21, 31), (1, true, 31, 51), (0, true, 51, 71)]);
        // Stage 0: F0, F1; B1 waits for stage 1's B1 (ends 51) + 1, B0 for its B0 (71) + 1.
        assert_eq!(spans(0), [(0, false, 0, 10), (1, false, 10, 20), (1, true, 52, 72), (0, true, 72, 92)]);
    }
}

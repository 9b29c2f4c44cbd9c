//! Replaying one training step: the pipeline schedule of each data-parallel replica (1F1B or
//! GPipe), then the gradient collective that every replica meets in. The simulator uses it to
//! produce its 1F1B jobs and the diagnosis to compute what a step would take with other
//! durations (the ideal run, the what-ifs), so both agree on what a schedule is. (The
//! simulator's GPipe jobs are timed by its own code, not this.)

use crate::model::Nanos;

/// One forward or backward pass of one micro-batch on one pipeline stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassTiming {
    pub micro_batch: usize,
    pub backward: bool,
    pub start: Nanos,
    pub end: Nanos,
}

/// The order in which stage `stage` of `stages` runs the passes of `micro_batches` under 1F1B:
/// warm-up forwards, then one forward one backward, then the remaining backwards.
pub fn one_f_one_b_order(stages: usize, stage: usize, micro_batches: usize) -> Vec<(usize, bool)> {
    let warmup = stages.saturating_sub(stage + 1).min(micro_batches);
    let mut order = Vec::with_capacity(micro_batches * 2);
    order.extend((0..warmup).map(|m| (m, false)));
    for i in 0..micro_batches - warmup {
        order.push((warmup + i, false));
        order.push((i, true));
    }
    order.extend((micro_batches - warmup..micro_batches).map(|m| (m, true)));
    order
}

/// The order a pipeline's stages run their micro-batches' passes in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PipelineSchedule {
    /// One forward one backward (Megatron-LM, DeepSpeed, `Schedule1F1B`): the default, as most
    /// pipelines run it.
    #[default]
    OneFOneB,
    /// Every forward, then every backward in reverse (`ScheduleGPipe`).
    Gpipe,
}

impl PipelineSchedule {
    /// Stage `stage` of `stages`'s passes of `micro_batches`, in the order it runs them.
    pub fn order(self, stages: usize, stage: usize, micro_batches: usize) -> Vec<(usize, bool)> {
        match self {
            PipelineSchedule::OneFOneB => one_f_one_b_order(stages, stage, micro_batches),
            PipelineSchedule::Gpipe => {
                (0..micro_batches).map(|m| (m, false)).chain((0..micro_batches).rev().map(|m| (m, true))).collect()
            }
        }
    }
}

/// Replays one pipeline (one data-parallel replica) through a step under 1F1B
/// ([`replay_schedule`]).
pub fn replay_pipeline(
    ready: &[Nanos],
    micro_batches: usize,
    duration: &dyn Fn(usize, usize, bool) -> Nanos,
    p2p: Nanos,
) -> Vec<Vec<PassTiming>> {
    replay_schedule(PipelineSchedule::OneFOneB, ready, micro_batches, duration, p2p)
}

/// Replays one pipeline (one data-parallel replica) through a step under `schedule`.
///
/// `ready[p]` is when stage `p` can start; `duration(p, m, backward)` a pass's length;
/// `p2p` the transfer time of activations (forward) or gradients (backward) between stages.
/// A forward of micro-batch `m` on stage `p` waits for the same forward on `p − 1`; a backward
/// waits for the same backward on `p + 1` (on the last stage, for its own forward).
/// Returns each stage's passes in execution order.
pub fn replay_schedule(
    schedule: PipelineSchedule,
    ready: &[Nanos],
    micro_batches: usize,
    duration: &dyn Fn(usize, usize, bool) -> Nanos,
    p2p: Nanos,
) -> Vec<Vec<PassTiming>> {
    let stages = ready.len();
    /// A stage's progress through its order.
    struct Stage {
        order: Vec<(usize, bool)>,
        next: usize,
        free: Nanos,
        /// End of each micro-batch's forward and backward, once run.
        forward_end: Vec<Option<Nanos>>,
        backward_end: Vec<Option<Nanos>>,
        passes: Vec<PassTiming>,
    }
    let mut st: Vec<Stage> = ready
        .iter()
        .enumerate()
        .map(|(p, &free)| Stage {
            order: schedule.order(stages, p, micro_batches),
            next: 0,
            free,
            forward_end: vec![None; micro_batches],
            backward_end: vec![None; micro_batches],
            passes: Vec::with_capacity(micro_batches * 2),
        })
        .collect();
    let end_of = |st: &[Stage], p: usize, m: usize, backward: bool| -> Option<Nanos> {
        let s = st.get(p)?;
        let ends = if backward { &s.backward_end } else { &s.forward_end };
        ends.get(m).copied().flatten()
    };
    loop {
        let mut progressed = false;
        for p in 0..stages {
            // Run every pass of this stage whose dependency is met.
            while let Some(&(m, backward)) = st.get(p).and_then(|s| s.order.get(s.next)) {
                let after = match (backward, p) {
                    (false, 0) => Some(Nanos::MIN),
                    (false, _) => end_of(&st, p - 1, m, false).map(|t| t + p2p),
                    (true, _) if p + 1 == stages => end_of(&st, p, m, false),
                    (true, _) => end_of(&st, p + 1, m, true).map(|t| t + p2p),
                };
                let Some(after) = after else { break };
                let Some(s) = st.get_mut(p) else { break };
                let start = after.max(s.free);
                let end = start + duration(p, m, backward).max(0);
                let ends = if backward { &mut s.backward_end } else { &mut s.forward_end };
                if let Some(slot) = ends.get_mut(m) {
                    *slot = Some(end);
                }
                s.free = end;
                s.passes.push(PassTiming { micro_batch: m, backward, start, end });
                s.next += 1;
                progressed = true;
            }
        }
        // Every 1F1B or GPipe order completes; `progressed` only guards against a bad caller.
        if !progressed {
            break;
        }
    }
    st.into_iter().map(|s| s.passes).collect()
}

/// A collective that `arrivals.len()` workers meet in: it starts when the last one arrives and
/// transfers for `transfer`. Returns its end.
pub fn collective_end(arrivals: &[Nanos], transfer: Nanos) -> Nanos {
    arrivals.iter().copied().max().unwrap_or(0) + transfer.max(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_f_one_b_orders() {
        let f = |m| (m, false);
        let b = |m| (m, true);
        assert_eq!(one_f_one_b_order(1, 0, 3), vec![f(0), b(0), f(1), b(1), f(2), b(2)]);
        assert_eq!(one_f_one_b_order(2, 0, 3), vec![f(0), f(1), b(0), f(2), b(1), b(2)]);
        assert_eq!(one_f_one_b_order(2, 1, 3), vec![f(0), b(0), f(1), b(1), f(2), b(2)]);
        assert_eq!(one_f_one_b_order(4, 0, 2), vec![f(0), f(1), b(0), b(1)]);
    }

    #[test]
    fn a_pipeline_step_has_the_textbook_length() {
        // P stages, M micro-batches, forward f, backward 2f, no transfer: (M + P − 1)·3f.
        let (p, m, f) = (4, 8, 10);
        let timings = replay_pipeline(&vec![0; p], m, &|_, _, backward| if backward { 2 * f } else { f }, 0);
        let end = timings.iter().flatten().map(|t| t.end).max().unwrap();
        assert_eq!(end, (m as i64 + p as i64 - 1) * 3 * f);
        assert!(timings.iter().all(|s| s.len() == 2 * m));
    }

    #[test]
    fn a_long_micro_batch_delays_the_whole_pipeline() {
        let base = |_, _, backward: bool| if backward { 20 } else { 10 };
        let long = |_, m, backward: bool| if m == 2 { 5 * base(0, m, backward) } else { base(0, m, backward) };
        let end = |d: &dyn Fn(usize, usize, bool) -> Nanos| {
            replay_pipeline(&[0, 0], 4, d, 1).iter().flatten().map(|t| t.end).max().unwrap()
        };
        assert!(end(&long) > end(&base) + 100, "{} vs {}", end(&long), end(&base));
    }

    #[test]
    fn gpipe_runs_every_forward_before_any_backward() {
        let f = |m| (m, false);
        let b = |m| (m, true);
        assert_eq!(PipelineSchedule::Gpipe.order(2, 0, 3), vec![f(0), f(1), f(2), b(2), b(1), b(0)]);
        // P stages, M micro-batches, forward f, backward 2f, no transfer: (M + P − 1)·3f, as
        // 1F1B, with every stage's forwards first.
        let (p, m, len) = (4, 8, 10);
        let d = |_, _, backward: bool| if backward { 2 * len } else { len };
        let timings = replay_schedule(PipelineSchedule::Gpipe, &vec![0; p], m, &d, 0);
        assert_eq!(timings.iter().flatten().map(|t| t.end).max(), Some((m as i64 + p as i64 - 1) * 3 * len));
        for stage in &timings {
            assert!(stage.iter().take(m).all(|t| !t.backward) && stage.iter().skip(m).all(|t| t.backward));
        }
    }

    #[test]
    fn collectives_wait_for_the_last_arrival() {
        assert_eq!(collective_end(&[5, 9, 7], 3), 12);
    }
}

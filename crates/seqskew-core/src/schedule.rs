//! Replaying one training step: the pipeline schedule of each data-parallel replica (1F1B or
//! GPipe), then the gradient collective that every replica meets in. The simulator uses it to
//! produce its 1F1B jobs and the diagnosis to compute what a step would take with other
//! durations (the ideal run, the what-ifs), so both agree on what a schedule is. (The
//! simulator's GPipe jobs are timed by its own code, not this.)

use crate::model::Nanos;

/// One forward or backward pass of one micro-batch on one pipeline stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassTiming {
    /// The stage's model chunk it ran (0 unless the schedule is interleaved).
    pub chunk: usize,
    pub micro_batch: usize,
    pub backward: bool,
    pub start: Nanos,
    pub end: Nanos,
}

/// One pass a stage runs: a micro-batch's forward or backward through one of its model chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    pub chunk: usize,
    pub micro_batch: usize,
    pub backward: bool,
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

/// The order in which stage `stage` of `stages`, holding `chunks` model chunks (chunk c is the
/// pipeline's stage c·stages + stage), runs the passes of `micro_batches` under interleaved 1F1B
/// (Megatron-LM's virtual pipeline; `ScheduleInterleaved1F1B`, whose rounds this follows where
/// the micro-batches are not a multiple of the stages). The micro-batches go in rounds of
/// `per_round`; a round's forwards run through chunk 0, then chunk 1, …, its backwards through
/// the chunks in reverse; warm-up forwards (the earlier stages more, as they start first),
/// then one forward one backward, then the remaining backwards.
pub fn interleaved_order(stages: usize, stage: usize, chunks: usize, micro_batches: usize) -> Vec<Pass> {
    let chunks = chunks.max(1);
    let rounds = (micro_batches / stages.max(1)).max(1);
    // Rounds that do not divide the micro-batches (the schedule refuses them) run as one.
    let per_round = if micro_batches.is_multiple_of(rounds) { micro_batches / rounds } else { micro_batches }.max(1);
    let total = micro_batches * chunks;
    let pass = |k: usize, backward: bool| {
        let in_turn = (k / per_round) % chunks;
        let chunk = if backward { chunks - 1 - in_turn } else { in_turn };
        Pass { chunk, micro_batch: k / (per_round * chunks) * per_round + k % per_round, backward }
    };
    let warmup = ((chunks - 1) * per_round + 2 * stages.saturating_sub(stage + 1)).min(total);
    let mut order = Vec::with_capacity(total * 2);
    order.extend((0..warmup).map(|k| pass(k, false)));
    for i in 0..total - warmup {
        order.push(pass(warmup + i, false));
        order.push(pass(i, true));
    }
    order.extend((total - warmup..total).map(|k| pass(k, true)));
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
    /// Interleaved 1F1B: each stage holds `chunks` model chunks ([`interleaved_order`]).
    Interleaved { chunks: usize },
}

impl PipelineSchedule {
    /// Stage `stage` of `stages`'s passes of `micro_batches`, in the order it runs them.
    pub fn order(self, stages: usize, stage: usize, micro_batches: usize) -> Vec<Pass> {
        let single = |(micro_batch, backward): (usize, bool)| Pass { chunk: 0, micro_batch, backward };
        match self {
            PipelineSchedule::OneFOneB => {
                one_f_one_b_order(stages, stage, micro_batches).into_iter().map(single).collect()
            }
            PipelineSchedule::Gpipe => (0..micro_batches)
                .map(|m| (m, false))
                .chain((0..micro_batches).rev().map(|m| (m, true)))
                .map(single)
                .collect(),
            PipelineSchedule::Interleaved { chunks } => interleaved_order(stages, stage, chunks, micro_batches),
        }
    }

    /// Model chunks per stage.
    pub fn chunks(self) -> usize {
        match self {
            PipelineSchedule::Interleaved { chunks } => chunks.max(1),
            _ => 1,
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
    let duration = |p: usize, pass: Pass| duration(p, pass.micro_batch, pass.backward);
    replay_schedule(PipelineSchedule::OneFOneB, ready, micro_batches, &duration, p2p)
}

/// Replays one pipeline (one data-parallel replica) through a step under `schedule`.
///
/// `ready[p]` is when stage `p` can start; `duration(p, pass)` a pass's length; `p2p` the
/// transfer time of activations (forward) or gradients (backward) between stages. The pipeline's
/// stages in order are every stage's chunk 0, then every stage's chunk 1, …: a forward of
/// micro-batch `m` waits for the same forward on the stage before; a backward waits for the
/// same backward on the stage after (on the last, for its own forward). Returns each stage's
/// passes in execution order.
pub fn replay_schedule(
    schedule: PipelineSchedule,
    ready: &[Nanos],
    micro_batches: usize,
    duration: &dyn Fn(usize, Pass) -> Nanos,
    p2p: Nanos,
) -> Vec<Vec<PassTiming>> {
    let stages = ready.len();
    let chunks = schedule.chunks();
    let last = (stages * chunks).saturating_sub(1);
    /// A stage's progress through its order.
    struct Stage {
        order: Vec<Pass>,
        next: usize,
        free: Nanos,
        /// End of each (chunk, micro-batch)'s forward and backward, once run.
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
            forward_end: vec![None; micro_batches * chunks],
            backward_end: vec![None; micro_batches * chunks],
            passes: Vec::with_capacity(micro_batches * chunks * 2),
        })
        .collect();
    // When the pass of micro-batch `m` through the pipeline's stage `virtual_stage` ended.
    let end_of = |st: &[Stage], virtual_stage: usize, m: usize, backward: bool| -> Option<Nanos> {
        let s = st.get(virtual_stage % stages.max(1))?;
        let ends = if backward { &s.backward_end } else { &s.forward_end };
        ends.get(virtual_stage / stages.max(1) * micro_batches + m).copied().flatten()
    };
    loop {
        let mut progressed = false;
        for p in 0..stages {
            // Run every pass of this stage whose dependency is met.
            while let Some(&pass) = st.get(p).and_then(|s| s.order.get(s.next)) {
                let (m, virtual_stage) = (pass.micro_batch, pass.chunk * stages + p);
                let after = match (pass.backward, virtual_stage) {
                    (false, 0) => Some(Nanos::MIN),
                    (false, v) => end_of(&st, v - 1, m, false).map(|t| t + p2p),
                    (true, v) if v == last => end_of(&st, v, m, false),
                    (true, v) => end_of(&st, v + 1, m, true).map(|t| t + p2p),
                };
                let Some(after) = after else { break };
                let Some(s) = st.get_mut(p) else { break };
                let start = after.max(s.free);
                let end = start + duration(p, pass).max(0);
                let ends = if pass.backward { &mut s.backward_end } else { &mut s.forward_end };
                if let Some(slot) = ends.get_mut(pass.chunk * micro_batches + m) {
                    *slot = Some(end);
                }
                s.free = end;
                s.passes.push(PassTiming { chunk: pass.chunk, micro_batch: m, backward: pass.backward, start, end });
                s.next += 1;
                progressed = true;
            }
        }
        // Every 1F1B, GPipe or interleaved order completes; `progressed` only guards against a
        // bad caller.
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
        let order: Vec<(usize, bool)> =
            PipelineSchedule::Gpipe.order(2, 0, 3).into_iter().map(|p| (p.micro_batch, p.backward)).collect();
        assert_eq!(order, vec![f(0), f(1), f(2), b(2), b(1), b(0)]);
        // P stages, M micro-batches, forward f, backward 2f, no transfer: (M + P − 1)·3f, as
        // 1F1B, with every stage's forwards first.
        let (p, m, len) = (4, 8, 10);
        let d = |_, pass: Pass| if pass.backward { 2 * len } else { len };
        let timings = replay_schedule(PipelineSchedule::Gpipe, &vec![0; p], m, &d, 0);
        assert_eq!(timings.iter().flatten().map(|t| t.end).max(), Some((m as i64 + p as i64 - 1) * 3 * len));
        for stage in &timings {
            assert!(stage.iter().take(m).all(|t| !t.backward) && stage.iter().skip(m).all(|t| t.backward));
        }
    }

    #[test]
    fn interleaved_orders_are_the_ones_torch_runs() {
        // As ScheduleInterleaved1F1B ran them in a real job (tests/fixtures/stragglers/
        // interleaved_heavy_stage: 2 ranks, stages 0–3, 4 micro-batches), `PP:{stage}{F|B}{m}`
        // with stage = chunk·2 + rank.
        let named = |stage: usize, order: Vec<Pass>| -> Vec<String> {
            let pass =
                |p: Pass| format!("{}{}{}", p.chunk * 2 + stage, if p.backward { 'B' } else { 'F' }, p.micro_batch);
            order.into_iter().map(pass).collect()
        };
        let rank0 = "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3";
        let rank1 = "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3";
        assert_eq!(named(0, interleaved_order(2, 0, 2, 4)).join(" "), rank0);
        assert_eq!(named(1, interleaved_order(2, 1, 2, 4)).join(" "), rank1);
        // Every chunk's every micro-batch, forward and backward, once; also where the rounds do
        // not divide the micro-batches.
        for (stages, chunks, micro_batches) in [(4, 2, 8), (4, 3, 4), (2, 2, 3), (4, 2, 2), (3, 2, 7)] {
            for stage in 0..stages {
                let mut order = interleaved_order(stages, stage, chunks, micro_batches);
                order.sort_by_key(|p| (p.chunk, p.micro_batch, p.backward));
                order.dedup();
                assert_eq!(order.len(), 2 * chunks * micro_batches, "{stages} {chunks} {micro_batches}");
                assert!(order.iter().all(|p| p.chunk < chunks && p.micro_batch < micro_batches));
            }
        }
    }

    #[test]
    fn an_interleaved_pipeline_has_the_smaller_bubble() {
        // P stages of v chunks, M micro-batches, forward f and backward 2f per chunk, no
        // transfer: (M·v + P − 1)·3f, the bubble a v-th of 1F1B's with the same work per stage.
        let (p, v, m, f) = (4, 2, 8, 10);
        let d = |_, pass: Pass| if pass.backward { 2 * f } else { f };
        let schedule = PipelineSchedule::Interleaved { chunks: v };
        let timings = replay_schedule(schedule, &vec![0; p], m, &d, 0);
        assert!(timings.iter().all(|s| s.len() == 2 * v * m));
        let end = timings.iter().flatten().map(|t| t.end).max();
        assert_eq!(end, Some((m * v + p - 1) as i64 * 3 * f));
        let whole = |_, pass: Pass| d(0, pass) * v as i64;
        let one_f_one_b = replay_schedule(PipelineSchedule::OneFOneB, &vec![0; p], m, &whole, 0);
        assert_eq!(one_f_one_b.iter().flatten().map(|t| t.end).max(), Some((m + p - 1) as i64 * 3 * f * v as i64));
    }

    #[test]
    fn collectives_wait_for_the_last_arrival() {
        assert_eq!(collective_end(&[5, 9, 7], 3), 12);
    }
}

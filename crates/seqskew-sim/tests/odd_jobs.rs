//! The analysis on odd but valid jobs: any model an importer may produce (ranks with gaps,
//! workers lacking steps, steps of zero length, micro-batches in some steps only, every kind of
//! sequence knowledge, pipeline coordinates on some workers, ranks missing from a larger world)
//! is diagnosed without a panic (arithmetic overflow included: tests build with debug
//! assertions), and every number in the report is finite, so the JSON carries no `null` where
//! a number belongs. The jobs are drawn from the simulator's seeded generator: the same every
//! run.

use seqskew_core::analysis::{analyze, diagnose};
use seqskew_core::import::Assembled;
use seqskew_core::model::{
    Collective, CollectiveOp, Coords, Job, KindTotals, MicroBatch, Nanos, SequenceKnowledge, Sequences, SpanKind,
    Worker, WorkerStep,
};
use seqskew_core::report::Report;
use seqskew_sim::rng::Rng;

/// What the generator draws beyond the simulator's [`Rng`].
trait Draw {
    fn chance(&mut self, percent: u64) -> bool;
    fn nanos(&mut self) -> Nanos;
}

impl Draw for Rng {
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A time: mostly milliseconds, sometimes zero, sometimes very long.
    fn nanos(&mut self) -> Nanos {
        match self.below(10) {
            0 => 0,
            1 => self.below(1_000) as Nanos,
            2 => self.below(3_600_000_000_000) as Nanos,
            _ => 1_000_000 + self.below(500_000_000) as Nanos,
        }
    }
}

/// What is known of the sequences of some work, whose measured attention (where known) is
/// within its `compute`.
fn sequences(d: &mut Rng, compute: Nanos) -> Sequences {
    let lengths = |d: &mut Rng| -> Vec<u32> {
        let n = d.below(12);
        (0..n).map(|_| if d.chance(5) { 0 } else { 1 + d.below(32_768) as u32 }).collect()
    };
    let mut s = match d.below(5) {
        0 => Sequences::default(),
        1 => Sequences::from_lengths(SequenceKnowledge::Exact, lengths(d)),
        2 => Sequences::from_lengths(SequenceKnowledge::DenseShapes, lengths(d)),
        3 => {
            let documents = d.below(20);
            Sequences::from_bounds(documents, documents * d.below(10_000), d.below(20_000) as u32)
        }
        _ => Sequences { attention: Some(d.below(compute as u64 + 1) as Nanos), ..Sequences::default() },
    };
    if d.chance(40) {
        s.attention = Some(d.below(compute as u64 + 1) as Nanos);
    }
    s
}

/// A step of `duration`, its kinds a random partition of it.
fn step(d: &mut Rng, number: u64, start: Nanos) -> WorkerStep {
    let duration = d.nanos();
    let mut totals = KindTotals::default();
    let mut left = duration;
    for kind in SpanKind::ALL {
        let share = if kind == SpanKind::Other { left } else { d.below(left as u64 + 1) as Nanos };
        totals.add(kind, share);
        left -= share;
    }
    let communication = totals.communication();
    let compute = totals.get(SpanKind::Compute) + totals.get(SpanKind::Attention);
    WorkerStep {
        step: number,
        start,
        duration,
        totals,
        transfer: d.chance(50).then(|| d.below(communication as u64 + 1) as Nanos),
        sequences: sequences(d, compute),
        ..WorkerStep::default()
    }
}

fn worker(d: &mut Rng, rank: u32, pipeline: bool, world: Option<u32>) -> Worker {
    let stages = 1 + d.below(4) as u32;
    let coords = Coords {
        dp: (pipeline && d.chance(80)).then(|| d.below(4) as u32),
        pp: (pipeline && d.chance(80)).then(|| d.below(u64::from(stages)) as u32),
        ..Coords::default()
    };
    let mut w = Worker { rank, coords, world_size: world, source: format!("rank{rank}.json"), ..Worker::default() };
    let mut number = d.below(3);
    let mut start = d.nanos();
    let micro_batches_here = d.chance(50);
    for _ in 0..d.below(9) {
        let s = step(d, number, start);
        start = start.saturating_add(s.duration).saturating_add(d.below(1_000) as Nanos);
        let micro_batches: Vec<MicroBatch> = if micro_batches_here && d.chance(80) {
            // Their passes within the step's compute, as importers find them.
            let count = d.below(5);
            let compute = s.totals.get(SpanKind::Compute) + s.totals.get(SpanKind::Attention);
            let pass = |d: &mut Rng| d.below(compute as u64 / (2 * count.max(1)) + 1) as Nanos;
            (0..count as u32)
                .map(|id| {
                    let (forward, backward) = (pass(d), pass(d));
                    MicroBatch {
                        id,
                        start: d.chance(50).then_some(s.start),
                        forward,
                        backward,
                        p2p: (pass(d) / 8, pass(d) / 8),
                        sequences: sequences(d, forward + backward),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let collectives: Vec<Collective> = (0..d.below(4))
            .map(|_| {
                let from = s.start.saturating_add(d.below(s.duration as u64 + 1) as Nanos);
                let op = [CollectiveOp::AllReduce, CollectiveOp::Send, CollectiveOp::Recv, CollectiveOp::Other]
                    [d.below(4) as usize];
                Collective { start: from, end: from.saturating_add(d.below(1_000_000) as Nanos), op }
            })
            .collect();
        w.push_step(s, micro_batches, collectives);
        number += 1 + d.below(2);
    }
    w
}

fn job(d: &mut Rng) -> Job {
    let pipeline = d.chance(50);
    let mut ranks = vec![d.below(3) as u32];
    for _ in 0..d.below(12) {
        ranks.push(ranks.last().map_or(0, |r| r + 1 + d.below(2) as u32));
    }
    // Where the traces say how many ranks the job had, more than the highest loaded.
    let world = ranks.last().filter(|_| d.chance(30)).map(|r| r + 1 + d.below(8) as u32);
    Job { workers: ranks.into_iter().map(|rank| worker(d, rank, pipeline, world)).collect() }
}

/// Every number of the report, with where it is.
fn numbers(r: &Report) -> Vec<(String, f64)> {
    let s = &r.slowdown;
    let mut all = vec![
        ("actual_step_s".to_owned(), s.actual_step_s),
        ("ideal_step_s".to_owned(), s.ideal_step_s),
        ("factor".to_owned(), s.factor),
        ("time_lost_s".to_owned(), s.time_lost_s),
        ("replay_fidelity".to_owned(), s.replay_fidelity),
        ("initiators.dominance".to_owned(), r.initiators.dominance),
    ];
    all.extend(s.by_cause.iter().map(|c| (format!("share of {}", c.cause), c.share)));
    for signal in &r.signals {
        all.push((format!("{}.value", signal.id), signal.value));
        all.push((format!("{}.threshold", signal.id), signal.threshold));
        all.extend(signal.detail.iter().map(|(k, v)| (format!("{}.{k}", signal.id), *v)));
    }
    for w in &r.whatif {
        all.push((format!("{}.predicted_step_s", w.method), w.predicted_step_s));
        all.push((format!("{}.speedup", w.method), w.speedup));
        all.push((format!("{}.imbalance", w.method), w.imbalance));
    }
    all.extend(r.stragglers.iter().map(|x| (format!("straggler at step {}", x.step), x.excess_s)));
    let fits = r.cost_model.iter().flat_map(|c| std::iter::once(c).chain(c.micro_batch.as_deref()));
    for c in fits {
        all.extend(
            [
                ("c0_s", c.c0_s),
                ("per_doc_s", c.per_doc_s),
                ("per_token_s", c.per_token_s),
                ("per_token_sq_s", c.per_token_sq_s),
                ("r2", c.r2),
                ("quadratic_share", c.quadratic_share),
            ]
            .map(|(k, v)| (format!("cost_model.{k}"), v)),
        );
    }
    all
}

#[test]
fn odd_jobs_are_diagnosed_without_a_panic_and_with_finite_numbers() {
    let mut d = Rng::new(0x5eed_5eed);
    let mut with_micro_batches = 0;
    let mut pipelines = 0;
    for case in 0..400 {
        let job = job(&mut d);
        with_micro_batches += usize::from(job.workers.iter().any(|w| !w.micro_batches.is_empty()));
        let assembled = Assembled { job, diagnostics: Vec::new(), failures: Vec::new() };
        let report = diagnose(&assembled, &[]);
        pipelines += usize::from(report.job.pp > 1);
        for (what, value) in numbers(&report) {
            assert!(value.is_finite(), "case {case}: {what} = {value}");
        }
        let shares: f64 = report.slowdown.by_cause.iter().map(|c| c.share).sum();
        // Each share is rounded to 3 digits.
        assert!(shares <= 1.003, "case {case}: the shares sum to {shares}");
        assert!(!report.verdict.primary.is_empty() && !report.verdict.headline.is_empty(), "case {case}");
        // The app's analysis (views included) says the same.
        assert_eq!(analyze(&assembled, &[]).report, report, "case {case}");
    }
    // The generator reaches what the test is for.
    assert!(
        with_micro_batches > 100 && pipelines > 50,
        "{with_micro_batches} with micro-batches, {pipelines} pipelines"
    );
}

/// What `seqskew summarize` writes of any job an importer can make, seqskew reads back without a
/// complaint: the same workers, each with the same steps, starting and lasting to the
/// nanosecond. (Importers drop steps of zero length, so such a job has none.)
#[test]
fn odd_jobs_round_trip_through_the_step_log() {
    let mut d = Rng::new(0x0dd_0b5);
    for case in 0..200 {
        let mut job = job(&mut d);
        job.workers.iter_mut().for_each(|w| w.steps.retain(|s| s.duration > 0));
        for (name, write) in [
            ("steps.jsonl", seqskew_core::export::write_steplog_jsonl as fn(&Job, &mut dyn std::io::Write) -> _),
            ("steps.csv", seqskew_core::export::write_steplog_csv),
        ] {
            let mut bytes = Vec::new();
            write(&job, &mut bytes).expect("writing to memory");
            let back = seqskew_core::import::import_bytes(name, &bytes);
            let complaints: Vec<String> = back
                .diagnostics
                .iter()
                .filter(|d| d.severity >= seqskew_core::diag::Severity::Warning)
                .map(ToString::to_string)
                .collect();
            // Each step's number, start and length, to the nanosecond.
            let steps = |w: &Worker| -> Vec<(u64, Nanos, Nanos)> {
                w.steps.iter().map(|s| (s.step, s.start, s.duration)).collect()
            };
            let written: Vec<_> =
                job.workers.iter().filter(|w| !w.steps.is_empty()).map(|w| (w.rank, steps(w))).collect();
            let read: Vec<_> = back.workers.iter().map(|w| (w.rank, steps(w))).collect();
            assert!(complaints.is_empty() || written.is_empty(), "case {case} {name}: {complaints:?}");
            assert_eq!(read, written, "case {case} {name}");
        }
    }
}

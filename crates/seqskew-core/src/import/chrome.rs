//! Chrome Trace Event Format files other than Kineto's, typically merged timelines of many
//! workers (Megatron/NeMo timers, custom exporters, the seqskew simulator).
//!
//! A worker is a process whose `process_name` carries rank coordinates ("rank 7", "DP rank
//! \[3\]"), refined by thread names that carry more ("PP rank 1, TP rank 0, compute"); without
//! such labels, a pid. Steps come from event args (`step`, `iteration`) or from step spans
//! ("step 12", "iteration 12", `ProfilerStep#12`); micro-batches from args (`mb_id`,
//! `microbatch`); span kinds from name and category words; exact sequence lengths from
//! `seqlens`/`seq_lens` args.

use std::collections::{BTreeMap, HashMap};

use serde_json::value::RawValue;

use super::events::{EventPlace, Interest, RawArgs, RawEvent, TraceBuilder};
use super::json;
use super::names::{NameCache, collective_op, is_backward, kind_from_words, parse_coords};
use super::numbers::to_u64;
use super::parser::vec_bytes;
use super::timeline::{Piece, bucket, partition};
use super::trace_event::RawText;
use crate::diag::{DiagnosticSink, Severity};
use crate::model::{
    Collective, CollectiveOp, Coords, MicroBatch, Nanos, SequenceKnowledge, Sequences, SpanKind, Worker, WorkerStep,
};

/// (pid, tid) as integer keys.
type ThreadKey = (i64, i64);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
    Unknown,
}

/// A span of one thread (kept in its thread's list).
#[derive(Clone, Copy, Debug)]
struct Record {
    start: Nanos,
    end: Nanos,
    kind: SpanKind,
    direction: Direction,
    op: Option<CollectiveOp>,
    step: Option<u64>,
    micro_batch: Option<u32>,
}

#[derive(Clone, Copy, Debug)]
struct StepSpan {
    thread: ThreadKey,
    step: u64,
    start: Nanos,
    end: Nanos,
}

/// The step and micro-batch an event's arguments name.
#[derive(Clone, Copy, Debug, Default)]
struct Tags {
    step: Option<u64>,
    micro_batch: Option<u32>,
}

/// A `B` event waiting for its `E`.
#[derive(Clone, Debug)]
struct Open {
    name: String,
    cat: String,
    start: Nanos,
    tags: Tags,
}

/// Exact lengths per (step, micro-batch).
type LengthsByStep = BTreeMap<(u64, Option<u32>), Vec<u32>>;

/// Lengths as one worker's events carried them: (step argument, time, micro-batch, lengths).
type FoundLengths = (Option<u64>, Nanos, Option<u32>, Vec<u32>);

pub struct ChromeBuilder {
    file: String,
    process_labels: HashMap<i64, String>,
    thread_labels: HashMap<ThreadKey, String>,
    /// Each thread's records, in the order its threads first came: a worker's are moved out
    /// whole and freed once its steps are made (gathered into one list, the records were held
    /// twice, then again beside the whole model).
    records: Vec<(ThreadKey, Vec<Record>)>,
    /// Where each thread's records are in `records`.
    thread_index: HashMap<ThreadKey, usize>,
    /// The thread of the latest record, and where its records are.
    last_thread: Option<(ThreadKey, usize)>,
    step_spans: Vec<StepSpan>,
    /// Exact lengths as found: (thread, step argument, time, micro-batch, lengths). Events without
    /// a step argument belong to the step span they start in.
    lengths: Vec<(ThreadKey, FoundLengths)>,
    open: HashMap<ThreadKey, Vec<Open>>,
    /// What each (category, name) says, by category: a trace has a handful of categories and a
    /// few thousand names, repeated millions of times.
    classes: HashMap<Box<str>, NameCache<NameClass>>,
}

/// What a span's name and category say about it.
#[derive(Clone, Copy)]
struct NameClass {
    step: StepName,
    kind: SpanKind,
    direction: Direction,
    op: Option<CollectiveOp>,
}

/// Whether a name marks a whole step, and which.
#[derive(Clone, Copy, Debug, PartialEq)]
enum StepName {
    No,
    Numbered(u64),
    /// "step", "train_step": the step is in the span's arguments.
    FromArgument,
}

impl NameClass {
    fn of(name: &str, cat: &str) -> Self {
        let kind = kind_from_words(name, cat);
        let direction = if is_backward(name) {
            Direction::Backward
        } else if name.to_ascii_lowercase().contains("forward") || name.contains("fwd") {
            Direction::Forward
        } else {
            Direction::Unknown
        };
        let op = matches!(kind, SpanKind::Communication | SpanKind::CollectiveWait)
            .then(|| collective_op(name).unwrap_or(CollectiveOp::Other));
        NameClass { step: step_name(name), kind, direction, op }
    }
}

impl ChromeBuilder {
    pub fn new(file: &str) -> Self {
        ChromeBuilder {
            file: file.to_owned(),
            process_labels: HashMap::new(),
            thread_labels: HashMap::new(),
            records: Vec::new(),
            thread_index: HashMap::new(),
            last_thread: None,
            step_spans: Vec::new(),
            lengths: Vec::new(),
            open: HashMap::new(),
            classes: HashMap::new(),
        }
    }

    fn class(&mut self, name: &str, cat: &str) -> NameClass {
        // Looked up by `&str` first: the category is copied only the first time it is seen.
        if let Some(cache) = self.classes.get_mut(cat) {
            return cache.get_or(name, |name| NameClass::of(name, cat));
        }
        let mut cache = NameCache::default();
        let class = cache.get_or(name, |name| NameClass::of(name, cat));
        self.classes.insert(cat.into(), cache);
        class
    }

    fn add(&mut self, thread: ThreadKey, name: &str, cat: &str, (start, end): (Nanos, Nanos), tags: Tags) {
        let Tags { step, micro_batch } = tags;
        let NameClass { step: step_name, kind, direction, op } = self.class(name, cat);
        let step_span = match step_name {
            StepName::No => None,
            StepName::Numbered(n) => Some(n),
            StepName::FromArgument => step,
        };
        if let Some(number) = step_span {
            self.step_spans.push(StepSpan { thread, step: number, start, end });
            return;
        }
        let record = Record { start, end, kind, direction, op, step, micro_batch };
        // Events mostly follow others of their thread: its place is looked up only on a change.
        let index = match self.last_thread {
            Some((t, index)) if t == thread => index,
            _ => {
                let records = &mut self.records;
                let index = *self.thread_index.entry(thread).or_insert_with(|| {
                    records.push((thread, Vec::new()));
                    records.len() - 1
                });
                self.last_thread = Some((thread, index));
                index
            }
        };
        if let Some((_, list)) = self.records.get_mut(index) {
            list.push(record);
        }
    }

    /// Worker identity of a thread: process coordinates refined by the thread's.
    fn identity(&self, thread: ThreadKey) -> (Option<u32>, Coords) {
        let (p_rank, p) = self.process_labels.get(&thread.0).map(|l| parse_coords(l)).unwrap_or_default();
        let (t_rank, t) = self.thread_labels.get(&thread).map(|l| parse_coords(l)).unwrap_or_default();
        let coords = Coords { dp: t.dp.or(p.dp), pp: t.pp.or(p.pp), tp: t.tp.or(p.tp), cp: t.cp.or(p.cp) };
        (t_rank.or(p_rank), coords)
    }
}

/// A span that marks a whole step: "step 12", "iteration 12", "ProfilerStep#12", or a span
/// named "step"/"train_step" with a step argument.
fn step_name(name: &str) -> StepName {
    let lower = name.trim().to_ascii_lowercase();
    for prefix in ["profilerstep#", "iteration", "iter", "step", "train_step", "train-step"] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            let rest = rest.trim_start_matches([' ', '#', '_', '-', '=']);
            if rest.is_empty() {
                return StepName::FromArgument;
            }
            if let Ok(n) = rest.parse::<u64>() {
                return StepName::Numbered(n);
            }
        }
    }
    StepName::No
}

fn arg_u64(value: Option<RawText<'_>>) -> Option<u64> {
    value.and_then(|v| to_u64(v.get()))
}

fn step_of(args: Option<&RawArgs<'_>>) -> Option<u64> {
    args.and_then(|a| arg_u64(a.step).or_else(|| arg_u64(a.iteration)))
}

fn micro_batch_of(args: Option<&RawArgs<'_>>) -> Option<u32> {
    args.and_then(|a| arg_u64(a.mb_id).or_else(|| arg_u64(a.microbatch)).or_else(|| arg_u64(a.micro_batch)))
        .and_then(|m| u32::try_from(m).ok())
}

fn lengths_of(args: Option<&RawArgs<'_>>) -> Option<Vec<u32>> {
    let raw = args.and_then(|a| a.seqlens.or(a.seq_lens))?;
    json::naturals(raw.get())
}

impl Interest for ChromeBuilder {
    fn ignores_complete(&self, _: &str) -> bool {
        // Span kinds come from names and categories alike: every category may matter.
        false
    }
}

impl TraceBuilder for ChromeBuilder {
    fn held_bytes(&self) -> usize {
        // Lengths are few next to events; their lists are not counted.
        let records: usize = self.records.iter().map(|(_, list)| vec_bytes(list)).sum();
        [records, vec_bytes(&self.step_spans), vec_bytes(&self.lengths)].iter().sum()
    }

    fn wants_top_level(&self, _: &str) -> bool {
        false
    }

    fn top_level(&mut self, _: &str, _: &RawValue, _: &mut DiagnosticSink) {}

    fn event(&mut self, ev: &RawEvent<'_>, place: EventPlace, diags: &mut DiagnosticSink) -> bool {
        let thread = (ev.pid.unwrap_or(0), ev.tid.unwrap_or(0));
        let args = ev.args.as_ref();
        let phase = ev.phase();
        if phase == "M" {
            let label = args.and_then(|a| a.name.as_ref()).map(|n| n.as_str().to_owned());
            match (ev.name(), label) {
                ("process_name", Some(l)) => {
                    self.process_labels.insert(thread.0, l);
                }
                ("thread_name", Some(l)) => {
                    self.thread_labels.insert(thread, l);
                }
                _ => {}
            }
            return false;
        }
        if !matches!(phase, "X" | "B" | "E") {
            return false;
        }
        let Some(start) = ev.start(place, diags) else {
            return false;
        };
        let step = step_of(args);
        let micro_batch = micro_batch_of(args);
        if let Some(lengths) = lengths_of(args) {
            self.lengths.push((thread, (step, start, micro_batch, lengths)));
        }
        match phase {
            "B" => {
                let open = Open {
                    name: ev.name().to_owned(),
                    cat: ev.cat().to_owned(),
                    start,
                    tags: Tags { step, micro_batch },
                };
                self.open.entry(thread).or_default().push(open);
                true
            }
            "E" => {
                let Some(open) = self.open.get_mut(&thread).and_then(Vec::pop) else {
                    diags.push(
                        Severity::Warning,
                        place.location(),
                        "an end (E) event without a begin (B) on its thread; skipped",
                    );
                    return false;
                };
                if start.checked_sub(open.start).is_none() {
                    diags.push(
                        Severity::Warning,
                        place.location(),
                        format!("\"{}\" lasts longer than the clock's range; skipped", open.name),
                    );
                    return false;
                }
                if start < open.start {
                    diags.push(
                        Severity::Warning,
                        place.location(),
                        format!("\"{}\" ends before it begins; skipped", open.name),
                    );
                    return false;
                }
                let tags = Tags { step: open.tags.step.or(step), micro_batch: open.tags.micro_batch.or(micro_batch) };
                self.add(thread, &open.name, &open.cat, (open.start, start), tags);
                true
            }
            _ => {
                let Some(end) = ev.end(start, place, diags) else {
                    return false;
                };
                self.add(thread, ev.name(), ev.cat(), (start, end), Tags { step, micro_batch });
                true
            }
        }
    }

    fn finish(self, diags: &mut DiagnosticSink) -> Vec<Worker> {
        let unclosed: usize = self.open.values().map(Vec::len).sum();
        if unclosed > 0 {
            diags.push(Severity::Warning, None, format!("{unclosed} begin (B) events never ended; ignored"));
        }
        // Threads with the same rank coordinates (or, unlabelled, the same pid) are one worker.
        let mut threads: Vec<ThreadKey> =
            self.records.iter().map(|(t, _)| *t).chain(self.step_spans.iter().map(|s| s.thread)).collect();
        threads.sort_unstable();
        threads.dedup();
        let mut worker_of: HashMap<ThreadKey, usize> = HashMap::new();
        let mut index_of: HashMap<(Option<u32>, Coords, Option<i64>), usize> = HashMap::new();
        let mut identities: Vec<(Option<u32>, Coords, i64)> = Vec::new();
        for &t in &threads {
            let (rank, coords) = self.identity(t);
            let labelled = rank.is_some() || coords != Coords::default();
            let key = (rank, coords, (!labelled).then_some(t.0));
            let index = *index_of.entry(key).or_insert_with(|| {
                identities.push((rank, coords, t.0));
                identities.len() - 1
            });
            worker_of.insert(t, index);
        }
        if identities.len() > 1 && identities.iter().all(|(r, c, _)| r.is_none() && *c == Coords::default()) {
            diags.push(
                Severity::Info,
                None,
                "no process or thread names carry rank coordinates; each pid is taken as one worker",
            );
        }
        // Each worker's threads' records, moved (a worker of one thread) or appended.
        let mut records: Vec<Vec<Record>> = vec![Vec::new(); identities.len()];
        for (t, mut list) in self.records {
            if let Some(all) = worker_of.get(&t).and_then(|&i| records.get_mut(i)) {
                if all.is_empty() {
                    *all = list;
                } else {
                    all.append(&mut list);
                }
            }
        }
        let mut spans: Vec<Vec<StepSpan>> = vec![Vec::new(); identities.len()];
        for s in self.step_spans {
            if let Some(list) = worker_of.get(&s.thread).and_then(|&i| spans.get_mut(i)) {
                list.push(s);
            }
        }
        let mut lengths: Vec<Vec<FoundLengths>> = vec![Vec::new(); identities.len()];
        for (t, found) in self.lengths {
            if let Some(list) = worker_of.get(&t).and_then(|&i| lengths.get_mut(i)) {
                list.push(found);
            }
        }
        let mut workers: Vec<Worker> = Vec::with_capacity(identities.len());
        for (((&(rank, coords, pid), records), spans), lengths) in
            identities.iter().zip(records).zip(&spans).zip(lengths)
        {
            let rank = rank.unwrap_or_else(|| {
                if coords == Coords::default() { u32::try_from(pid).unwrap_or(u32::MAX) } else { u32::MAX }
            });
            let worker = Worker { rank, coords, host: None, source: self.file.clone(), ..Worker::default() };
            // Its records are freed here, before the next worker's steps are made.
            workers.push(worker.with_steps(build_steps(&records, spans, lengths)));
        }
        number_workers_by_coords(&mut workers);
        workers.sort_by_key(|w| w.rank);
        workers
    }
}

/// Workers known only by coordinates get ranks in coordinate order, after the ranked ones.
fn number_workers_by_coords(workers: &mut [Worker]) {
    let mut unranked: Vec<usize> =
        (0..workers.len()).filter(|&i| workers.get(i).is_some_and(|w| w.rank == u32::MAX)).collect();
    unranked.sort_by_key(|&i| workers.get(i).map(|w| (w.coords.pp, w.coords.dp, w.coords.cp, w.coords.tp)));
    let mut next = workers.iter().map(|w| w.rank).filter(|&r| r != u32::MAX).max().map_or(0, |r| r + 1);
    for i in unranked {
        if let Some(w) = workers.get_mut(i) {
            w.rank = next;
            next += 1;
        }
    }
}

/// One worker's steps, in order, each with its micro-batches and collectives: windows from step
/// spans, else from the extent of each step's events.
fn build_steps(
    records: &[Record],
    spans: &[StepSpan],
    found: Vec<FoundLengths>,
) -> Vec<(WorkerStep, Vec<MicroBatch>, Vec<Collective>)> {
    let mut windows: BTreeMap<u64, (Nanos, Nanos)> = BTreeMap::new();
    for s in spans {
        windows.entry(s.step).or_insert((s.start, s.end));
    }
    if windows.is_empty() {
        for r in records {
            if let Some(step) = r.step {
                let w = windows.entry(step).or_insert((r.start, r.end));
                *w = (w.0.min(r.start), w.1.max(r.end));
            }
        }
    }
    let mut ordered: Vec<(u64, (Nanos, Nanos))> = windows.into_iter().filter(|(_, (s, e))| e > s).collect();
    ordered.sort_by_key(|&(_, w)| w);
    let by_time: Vec<(Nanos, Nanos)> = ordered.iter().map(|&(_, w)| w).collect();
    let index_of_step: HashMap<u64, usize> = ordered.iter().enumerate().map(|(i, &(s, _))| (s, i)).collect();
    // Each record's step: its argument, else the window it starts in.
    let mut per_step: Vec<Vec<&Record>> = vec![Vec::new(); ordered.len()];
    for r in records {
        let i = match r.step {
            Some(s) => index_of_step.get(&s).copied(),
            None => {
                let i = by_time.partition_point(|w| w.1 <= r.start);
                by_time.get(i).filter(|w| w.0 <= r.start).map(|_| i)
            }
        };
        if let Some(list) = i.and_then(|i| per_step.get_mut(i)) {
            list.push(r);
        }
    }
    // Lengths by step: their step argument, else the step window they fall in; first one wins.
    let mut lengths: LengthsByStep = BTreeMap::new();
    for (step, at, mb, l) in found {
        let step = step.or_else(|| {
            let i = by_time.partition_point(|w| w.1 <= at);
            by_time.get(i).filter(|w| w.0 <= at).and_then(|_| ordered.get(i)).map(|o| o.0)
        });
        if let Some(step) = step {
            lengths.entry((step, mb)).or_insert(l);
        }
    }
    let pieces: Vec<Piece> = records
        .iter()
        .map(|r| Piece { start: r.start, end: r.end, kind: r.kind, micro_batch: r.micro_batch })
        .collect();
    let buckets = bucket(&by_time, &pieces);
    let mut steps = Vec::with_capacity(ordered.len());
    for ((&(step, (start, end)), bucket), mine) in ordered.iter().zip(buckets.iter()).zip(&per_step) {
        let (timeline, totals) = partition(start, end, bucket);
        let (micro_batches, collectives) = micro_batches_and_collectives(mine);
        let mut micro: BTreeMap<u32, MicroBatch> = micro_batches.into_iter().map(|m| (m.id, m)).collect();
        // Each list of lengths goes to its micro-batch; the step keeps their totals, or where
        // some are the step's own (or name no micro-batch it has), a list of all its documents.
        let of_step = (step, None)..=(step, Some(u32::MAX));
        let mut own: Vec<Vec<u32>> = Vec::new();
        for ((_, m), l) in lengths.range_mut(of_step.clone()) {
            match m.and_then(|id| micro.get_mut(&id)) {
                Some(mb) => {
                    let seq = Sequences::from_lengths(SequenceKnowledge::Exact, std::mem::take(l));
                    mb.sequences = Sequences { attention: mb.sequences.attention, ..seq };
                }
                None => own.push(std::mem::take(l)),
            }
        }
        let mut sequences = if own.is_empty() {
            // The step's attention is its own (below); micro-batches without lengths are left out.
            let knowing = micro.values().map(|m| &m.sequences).filter(|q| q.is_known());
            Sequences { attention: None, ..Sequences::total_of(knowing) }
        } else {
            // Sized for them all: the step's list stays in the model, slack and all.
            let mut all = Vec::with_capacity(
                micro.values().map(|m| m.sequences.lengths.len()).sum::<usize>()
                    + own.iter().map(Vec::len).sum::<usize>(),
            );
            micro.values().for_each(|m| all.extend_from_slice(&m.sequences.lengths));
            own.iter().for_each(|l| all.extend_from_slice(l));
            Sequences::from_lengths(SequenceKnowledge::Exact, all)
        };
        let attention = totals.get(SpanKind::Attention);
        if attention > 0 {
            sequences.attention = Some(attention);
        }
        let step = WorkerStep {
            step,
            start,
            duration: end - start,
            spans: timeline,
            totals,
            transfer: None,
            sequences,
            ..WorkerStep::default()
        };
        steps.push((step, micro.into_values().collect(), collectives));
    }
    steps.sort_by_key(|(s, _, _)| s.step);
    steps
}

/// A step's micro-batches (forward and backward compute per id) and collectives (by start).
fn micro_batches_and_collectives(records: &[&Record]) -> (Vec<MicroBatch>, Vec<Collective>) {
    let mut micro: BTreeMap<u32, MicroBatch> = BTreeMap::new();
    let mut collectives = Vec::new();
    for r in records {
        if let Some(op) = r.op {
            collectives.push(Collective { start: r.start, end: r.end, op });
        }
        let (Some(id), true) = (r.micro_batch, matches!(r.kind, SpanKind::Compute | SpanKind::Attention)) else {
            continue;
        };
        let mb = micro.entry(id).or_insert_with(|| MicroBatch { id, ..MicroBatch::default() });
        mb.start = Some(mb.start.map_or(r.start, |s| s.min(r.start)));
        let d = r.end.saturating_sub(r.start);
        // Attention spans lie inside their micro-batch's compute span: they add to attention only.
        // Sums saturate: each span lies within the clock's range, their sum need not.
        match (r.kind, r.direction) {
            (SpanKind::Attention, _) => {
                mb.sequences.attention = Some(mb.sequences.attention.unwrap_or(0).saturating_add(d));
            }
            (_, Direction::Backward) => mb.backward = mb.backward.saturating_add(d),
            (_, Direction::Forward | Direction::Unknown) => mb.forward = mb.forward.saturating_add(d),
        }
    }
    collectives.sort_by_key(|c| (c.start, c.end));
    (micro.into_values().collect(), collectives)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_span_names() {
        assert_eq!(step_name("ProfilerStep#12"), StepName::Numbered(12));
        assert_eq!(step_name("iteration 7"), StepName::Numbered(7));
        assert_eq!(step_name("step"), StepName::FromArgument);
        assert_eq!(step_name("train_step"), StepName::FromArgument);
        assert_eq!(step_name("forward-compute"), StepName::No);
        assert_eq!(step_name("stepper"), StepName::No);
    }

    #[test]
    fn a_workers_threads_make_its_steps_together_whatever_the_event_order() {
        // Two ranks, each with a compute thread and a communication thread, events interleaved
        // across all four threads as a merged trace has them. Times in microseconds.
        let event = |pid: u32, tid: u32, name: &str, step: u32, ts: u32, dur: u32| {
            format!(
                r#"{{"ph": "X", "name": "{name}", "pid": {pid}, "tid": {tid}, "ts": {ts}, "dur": {dur}, "args": {{"step": {step}}}}}"#
            )
        };
        let mut events = vec![
            r#"{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "rank 0"}}"#.to_owned(),
            r#"{"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "rank 1"}}"#.to_owned(),
        ];
        for step in 1..=2 {
            let t = step * 1000;
            events.extend([
                event(1, 1, "forward", step, t, 300),
                event(2, 1, "forward", step, t, 500),
                event(2, 2, "all-reduce", step, t + 500, 100),
                event(1, 2, "all-reduce", step, t + 300, 300),
                event(1, 1, "optimizer", step, t + 600, 50),
                event(2, 1, "optimizer", step, t + 600, 50),
            ]);
        }
        let trace = format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"));
        // Read by this reader directly: `import::import_bytes` would make this file use the
        // module that uses it (scripts/check-imports).
        use crate::import::parser::ContentParser;
        let mut diags = DiagnosticSink::new("merged.json");
        let mut document = Box::new(crate::import::events::TraceDocument::new(ChromeBuilder::new("merged.json")));
        document.feed(trace.as_bytes(), &mut diags);
        let (workers, _) = document.finish(&mut diags);
        // Per rank and step: (compute, communication, optimizer) in µs, and its collectives.
        let seen: Vec<(u32, u64, [Nanos; 3], usize)> = workers
            .iter()
            .flat_map(|w| {
                w.steps.iter().map(|s| {
                    let kinds = [SpanKind::Compute, SpanKind::Communication, SpanKind::Optimizer];
                    (w.rank, s.step, kinds.map(|k| s.totals.get(k) / 1000), w.collectives_of(s).len())
                })
            })
            .collect();
        let rank0 = [300, 300, 50];
        let rank1 = [500, 100, 50];
        assert_eq!(seen, [(0, 1, rank0, 1), (0, 2, rank0, 1), (1, 1, rank1, 1), (1, 2, rank1, 1)]);
    }

    #[test]
    fn a_steps_lengths_go_to_its_micro_batches_or_stay_its_own() {
        // Step 1 gives each micro-batch's lengths; step 2 one list on the step's span too.
        let event = |name: &str, ts: u32, dur: u32, args: &str| {
            format!(
                r#"{{"ph": "X", "name": "{name}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}, "args": {{{args}}}}}"#
            )
        };
        let events = [
            event("ProfilerStep#1", 0, 50, ""),
            event("forward", 0, 10, r#""step": 1, "mb_id": 0, "seqlens": [3, 8]"#),
            event("forward", 10, 10, r#""step": 1, "mb_id": 1, "seqlens": [5]"#),
            event("ProfilerStep#2", 100, 50, r#""seqlens": [7]"#),
            event("forward", 100, 10, r#""step": 2, "mb_id": 0, "seqlens": [4, 6]"#),
        ];
        let trace = format!(r#"{{"traceEvents": [{}]}}"#, events.join(",\n"));
        use crate::import::parser::ContentParser;
        let mut diags = DiagnosticSink::new("merged.json");
        let mut document = Box::new(crate::import::events::TraceDocument::new(ChromeBuilder::new("merged.json")));
        document.feed(trace.as_bytes(), &mut diags);
        let (workers, _) = document.finish(&mut diags);
        // (step, documents, the step's own list, all its documents, each micro-batch's)
        type Seen = (u64, u64, usize, Vec<u32>, Vec<Vec<u32>>);
        let seen: Vec<Seen> = workers
            .iter()
            .flat_map(|w| {
                w.steps.iter().map(|s| {
                    let per_mb = w.micro_batches_of(s).iter().map(|m| m.sequences.lengths.clone()).collect();
                    (s.step, s.sequences.documents, s.sequences.lengths.len(), w.step_documents(s), per_mb)
                })
            })
            .collect();
        assert_eq!(
            seen,
            [(1, 3, 0, vec![8, 5, 3], vec![vec![8, 3], vec![5]]), (2, 3, 3, vec![7, 6, 4], vec![vec![6, 4]])]
        );
    }
}

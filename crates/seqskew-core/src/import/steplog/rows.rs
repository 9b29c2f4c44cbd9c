//! A step log's rows, held by rank as they come, then made into workers: each rank's steps
//! and micro-batches in order, the rows later ones replaced dropped (and named).

use super::super::parser::{ImportStats, world_size_above_rank};
use super::row::{Hosts, Row, STEPLOG_VERSION, TIME_FIELDS};
use crate::diag::{DiagnosticSink, Location, Severity};
use crate::model::{
    Collective, CollectiveOp, Coords, KindTotals, MicroBatch, Nanos, Run, Sequences, Span, SpanKind, Worker, WorkerStep,
};

/// Collects rows, each rank's as they come, and turns them into workers.
#[derive(Default)]
pub(super) struct Rows {
    file: String,
    /// Each rank's rows so far, by rank (a log's ranks mostly come in order: each new one is
    /// added at the end).
    ranks: Vec<(u32, RankRows)>,
    pub(super) hosts: Hosts,
    /// What the ranks' rows hold, in bytes (see [`ContentParser::held_bytes`](super::super::parser::ContentParser::held_bytes)).
    pub(super) held: usize,
    pub(super) stats: ImportStats,
    /// Warned once per file about a newer version.
    newer_version: bool,
}

/// One rank's rows, in the order read. A log mostly writes a rank's steps in order and each
/// step's micro-batches in order, once: its micro-batches' list is then the worker's as it
/// stands, each made into the model's micro-batch as it is read. (A map of places by rank and
/// step, each with a list of its own, was held beside the model made from it: the step log's
/// peak was both, and a tenth of its time went to the allocator.)
#[derive(Default)]
struct RankRows {
    /// A step's rows mostly come together: a row joins the last entry when it is its step's,
    /// else starts one (entries of one step are merged at the end).
    steps: Vec<StepEntry>,
    micro_batches: Vec<MicroBatch>,
    /// Each micro-batch's (step, line), to order them and find the ones later rows replaced.
    placed: Vec<(u64, u64)>,
}

/// The rows of one worker-step: its latest step row and whose coordinates the worker takes.
struct StepEntry {
    step: u64,
    /// The latest step row (boxed: most steps of a log with micro-batch rows have one, and most
    /// rows are micro-batch rows).
    row: Option<Box<Row>>,
    /// Earlier step rows the latest replaced.
    replaced_rows: u32,
    /// The worker's coordinates, host and world size come from the step row, else from the
    /// first micro-batch's (the latest of equals).
    first: Origin,
}

/// Where a row is and what it says of its worker.
#[derive(Clone, Copy)]
struct Origin {
    line: u64,
    mb: Option<u32>,
    coords: Coords,
    host: Option<u32>,
    world_size: Option<u32>,
}

impl Origin {
    fn of(row: &Row) -> Origin {
        let Row { line, mb, coords, host, world_size, .. } = *row;
        Origin { line, mb, coords, host, world_size }
    }
}

impl StepEntry {
    /// Takes `origin` for the worker's where it comes from an earlier micro-batch (or the step
    /// row): rows come in line order, so a later one of the same micro-batch (or none) wins.
    fn note(&mut self, origin: Origin) {
        if origin.mb <= self.first.mb {
            self.first = origin;
        }
    }

    /// Adds the entry of the same step that later rows made.
    fn absorb(&mut self, later: StepEntry) {
        if let Some(row) = later.row {
            self.replaced_rows += 1 + later.replaced_rows - u32::from(self.row.is_none());
            self.row = Some(row);
        }
        self.note(later.first);
    }
}

/// A micro-batch row as the model's micro-batch (its lengths moved, not copied).
fn micro_batch(mut r: Row) -> MicroBatch {
    let fwd = r.time("fwd_s");
    let bwd = r.time("bwd_s");
    let forward = fwd.or_else(|| r.time("compute_s").filter(|_| bwd.is_none())).unwrap_or(0);
    let mut sequences = r.take_sequences();
    sequences.attention = r.time("attn_s");
    MicroBatch {
        id: r.mb.unwrap_or(0),
        start: r.time("start_s"),
        forward,
        backward: bwd.unwrap_or(0),
        p2p: (0, 0),
        sequences,
    }
}

impl RankRows {
    /// Adds a row; the bytes it now holds.
    fn add(&mut self, row: Row) -> usize {
        let origin = Origin::of(&row);
        let mut held = 0;
        let entry = match self.steps.last_mut() {
            Some(last) if last.step == row.step => {
                last.note(origin);
                last
            }
            _ => {
                held += size_of::<StepEntry>();
                self.steps.push(StepEntry { step: row.step, row: None, replaced_rows: 0, first: origin });
                let Some(last) = self.steps.last_mut() else { return held };
                last
            }
        };
        if row.mb.is_some() {
            held += size_of::<MicroBatch>() + size_of::<(u64, u64)>();
            held += row.lengths.as_ref().map_or(0, Vec::len).saturating_mul(size_of::<u32>());
            self.placed.push((row.step, row.line));
            self.micro_batches.push(micro_batch(row));
        } else {
            held += size_of::<Row>();
            entry.replaced_rows += u32::from(entry.row.is_some());
            entry.row = Some(Box::new(row));
        }
        held
    }

    /// Its steps by number, each once; its micro-batches by step and id, each once (the latest
    /// row of each). What later rows replaced goes to `replaced`: (the kept row's line, step,
    /// micro-batch).
    fn settle(&mut self, replaced: &mut Vec<(u64, u64, Option<u32>)>) {
        if !self.steps.is_sorted_by(|a, b| a.step < b.step) {
            // Stable: entries of one step stay in line order.
            self.steps.sort_by_key(|e| e.step);
            let mut merged: Vec<StepEntry> = Vec::with_capacity(self.steps.len());
            for entry in self.steps.drain(..) {
                match merged.last_mut() {
                    Some(last) if last.step == entry.step => last.absorb(entry),
                    _ => merged.push(entry),
                }
            }
            self.steps = merged;
        }
        for entry in &self.steps {
            let line = entry.row.as_ref().map_or(0, |r| r.line);
            replaced.extend((0..entry.replaced_rows).map(|_| (line, entry.step, None)));
        }
        let keys = self.placed.iter().zip(&self.micro_batches).map(|(&(step, line), m)| (step, m.id, line));
        if keys.clone().zip(keys.clone().skip(1)).all(|((s0, m0, _), (s1, m1, _))| (s0, m0) < (s1, m1)) {
            return;
        }
        // The latest row of each micro-batch first among its rows, so that it is the one kept.
        let mut order: Vec<(u64, u32, std::cmp::Reverse<u64>, usize)> =
            keys.enumerate().map(|(i, (step, id, line))| (step, id, std::cmp::Reverse(line), i)).collect();
        order.sort_unstable();
        let mut kept: Vec<MicroBatch> = Vec::with_capacity(order.len());
        let mut placed: Vec<(u64, u64)> = Vec::with_capacity(order.len());
        let mut last: Option<(u64, u32, u64)> = None;
        for (step, id, std::cmp::Reverse(line), i) in order {
            match last {
                Some((s, m, kept_line)) if (s, m) == (step, id) => replaced.push((kept_line, step, Some(id))),
                _ => {
                    last = Some((step, id, line));
                    kept.extend(self.micro_batches.get_mut(i).map(std::mem::take));
                    placed.push((step, line));
                }
            }
        }
        self.micro_batches = kept;
        self.placed = placed;
    }
}

impl Rows {
    pub(super) fn new(file: &str) -> Rows {
        Rows { file: file.to_owned(), ..Rows::default() }
    }

    pub(super) fn push(&mut self, row: Row, seen: (bool, bool), diags: &mut DiagnosticSink) {
        self.stats.records += 1;
        if row.version > STEPLOG_VERSION && !self.newer_version {
            self.newer_version = true;
            diags.push(
                Severity::Warning,
                Some(Location::Line(row.line)),
                format!(
                    "written by a newer step-log version ({}); the fields this reader knows were read",
                    row.version
                ),
            );
        }
        let half_bounds = row.bounds.as_deref().is_some_and(|b| b.tokens.is_some() != b.docs.is_some());
        if half_bounds && row.lengths.is_none() {
            diags.push(
                Severity::Warning,
                Some(Location::Line(row.line)),
                "tokens and docs go together (with max_len); lengths bounds ignored",
            );
        }
        let missing = match seen {
            (false, false) => Some("step and rank"),
            (false, true) => Some("step"),
            (true, false) => Some("rank"),
            (true, true) => None,
        };
        if let Some(what) = missing {
            self.stats.skipped += 1;
            diags.push(Severity::Warning, Some(Location::Line(row.line)), format!("row without {what}; skipped"));
            return;
        }
        self.stats.kept += 1;
        let at = match self.ranks.binary_search_by_key(&row.rank, |(rank, _)| *rank) {
            Ok(at) => at,
            Err(at) => {
                self.ranks.insert(at, (row.rank, RankRows::default()));
                at
            }
        };
        if let Some((_, rows)) = self.ranks.get_mut(at) {
            self.held = self.held.saturating_add(rows.add(row));
        }
    }

    /// Drops the rows that later ones replaced (saying so), then builds each worker's steps.
    pub(super) fn finish(mut self, diags: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats) {
        let mut ranks = std::mem::take(&mut self.ranks);
        let mut replaced: Vec<(u64, u64, u32, Option<u32>)> = Vec::new();
        let mut of_rank = Vec::new();
        for (rank, rows) in &mut ranks {
            rows.settle(&mut of_rank);
            replaced.extend(of_rank.drain(..).map(|(line, step, mb)| (line, step, *rank, mb)));
        }
        replaced.sort_unstable();
        for (line, step, rank, mb) in replaced {
            diags.push(
                Severity::Warning,
                Some(Location::Line(line)),
                format!(
                    "a second row for step {step} rank {rank}{}; it replaced the first",
                    mb.map(|m| format!(" micro-batch {m}")).unwrap_or_default()
                ),
            );
        }
        let workers = ranks.into_iter().filter_map(|(rank, rows)| self.worker(rank, rows, diags)).collect();
        (workers, self.stats)
    }

    /// A rank's worker from its settled rows (none when it has no steps).
    fn worker(&self, rank: u32, rows: RankRows, diags: &mut DiagnosticSink) -> Option<Worker> {
        let RankRows { steps, micro_batches, placed } = rows;
        let first = steps.first()?.first;
        // The job's rank count, as the worker's first row says (when above its rank).
        let world_size =
            world_size_above_rank(first.world_size, Some(rank), "world_size", Some(Location::Line(first.line)), diags);
        let mut worker = Worker { rank, world_size, source: self.file.clone(), ..Worker::default() };
        worker.steps.reserve_exact(steps.len());
        worker.micro_batches = micro_batches;
        // Micro-batches of steps that are not kept (no times, no lengths) leave the list.
        let mut dropped: Vec<std::ops::Range<usize>> = Vec::new();
        let mut removed = 0;
        let mut clock: Nanos = 0;
        let mut at = 0;
        for entry in steps {
            let end = at + placed.get(at..).unwrap_or_default().partition_point(|&(s, _)| s == entry.step);
            worker.coords = entry.first.coords;
            if worker.host.is_none() {
                worker.host = entry.first.host.and_then(|h| self.hosts.name(h)).map(str::to_owned);
            }
            let held = worker.micro_batches.get(at..end).unwrap_or_default();
            match build_step(entry.step, entry.row.map(|row| *row), held, clock, diags) {
                Some((mut ws, collectives)) => {
                    clock = ws.start + ws.duration;
                    let index = |i: usize| u32::try_from(i - removed).unwrap_or(u32::MAX);
                    ws.micro_batches = Run { start: index(at), end: index(end) };
                    ws.collectives = Run::extending(&mut worker.collectives, collectives);
                    worker.steps.push(ws);
                }
                None => {
                    let (step, rank) = (entry.step, rank);
                    diags.push(Severity::Warning, None, format!("step {step} rank {rank} has no times; skipped"));
                    dropped.push(at..end);
                    removed += end - at;
                }
            }
            at = end;
        }
        if removed > 0 {
            let (mut i, mut next) = (0, dropped.iter().peekable());
            worker.micro_batches.retain(|_| {
                while next.next_if(|r| r.end <= i).is_some() {}
                let keep = !next.peek().is_some_and(|r| r.contains(&i));
                i += 1;
                keep
            });
        }
        // Grown by doubling as it was read: its slack, never touched, is given back.
        worker.micro_batches.shrink_to_fit();
        Some(worker)
    }
}

/// A worker-step and its collectives, from its row and micro-batches. Steps without a start
/// follow the previous.
fn build_step(
    step: u64,
    mut row: Option<Row>,
    micro_batches: &[MicroBatch],
    clock: Nanos,
    diags: &mut DiagnosticSink,
) -> Option<(WorkerStep, Vec<Collective>)> {
    let row_sequences = row.as_mut().map(Row::take_sequences);
    let mut totals = KindTotals::default();
    let given = |field: &str| row.as_ref().and_then(|r| r.time(field));
    for (field, kind) in TIME_FIELDS {
        if let (Some(kind), Some(ns)) = (kind, given(field)) {
            totals.add(kind, ns);
        }
    }
    // Saturating: a step may have any number of micro-batch rows.
    let mb_compute = micro_batches.iter().map(MicroBatch::compute).fold(0, Nanos::saturating_add);
    let mb_attention = micro_batches.iter().filter_map(|m| m.sequences.attention).fold(0, Nanos::saturating_add);
    if given("compute_s").is_none() {
        // Without micro-batch rows, a step row's own forward and backward times are its compute.
        let own = given("fwd_s").unwrap_or(0) + given("bwd_s").unwrap_or(0);
        totals.add(SpanKind::Compute, if micro_batches.is_empty() { own } else { mb_compute });
    }
    if given("attn_s").is_none() {
        totals.add(SpanKind::Attention, mb_attention);
    }
    // compute_s is all compute, attention included: keep the kinds disjoint.
    let attention = totals.get(SpanKind::Attention);
    let compute = totals.get(SpanKind::Compute);
    totals.add(SpanKind::Compute, -attention.min(compute));
    let known = totals.sum();
    let duration = given("step_s").unwrap_or(known);
    // Micro-batch rows know more (varlen bounds per micro-batch are tighter than the step's).
    // Their attention is the step's own (below): parts that know no lengths are left out.
    let knowing = micro_batches.iter().map(|mb| &mb.sequences).filter(|s| s.is_known());
    let mut sequences = Sequences { attention: None, ..Sequences::total_of(knowing) };
    if !sequences.is_known() {
        sequences = row_sequences.unwrap_or_default();
    }
    // A row of lengths without times is kept: a record of what the rank drew, whose step
    // times come from elsewhere (a training log of the same run).
    if duration <= 0 && !sequences.is_known() {
        return None;
    }
    if known > duration {
        let line = row.as_ref().map(|r| r.line);
        diags.push(
            Severity::Warning,
            line.map(Location::Line),
            format!(
                "step {step}: the parts ({:.6} s) exceed step_s ({:.6} s)",
                known as f64 / 1e9,
                duration as f64 / 1e9
            ),
        );
    }
    totals.add(SpanKind::Other, (duration - known).max(0));
    let duration = duration.max(known);
    let start = given("start_s").or_else(|| micro_batches.iter().filter_map(|m| m.start).min()).unwrap_or(clock);
    if attention > 0 {
        sequences.attention = Some(attention);
    }
    let spans = schematic_spans(start, &totals, micro_batches);
    // A step log knows how long pipeline transfers took, not when: one span of that length.
    let collectives = given("p2p_s")
        .filter(|&p| p > 0)
        .map(|p| vec![Collective { start, end: start + p, op: CollectiveOp::Recv }])
        .unwrap_or_default();
    let transfer = given("transfer_s");
    let worker_step = WorkerStep { step, start, duration, spans, totals, transfer, sequences, ..WorkerStep::default() };
    Some((worker_step, collectives))
}

/// A step log has no timeline, only totals: lay them out in the usual order of a step (data,
/// micro-batches' compute, communication, optimizer, the rest), marked as schematic in the docs.
fn schematic_spans(start: Nanos, totals: &KindTotals, micro_batches: &[MicroBatch]) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut t = start;
    let mut push = |kind: SpanKind, duration: Nanos, micro_batch: Option<u32>, spans: &mut Vec<Span>| {
        if duration > 0 {
            spans.push(Span::new(t, duration, kind, micro_batch));
            t = t.saturating_add(duration);
        }
    };
    push(SpanKind::DataLoading, totals.get(SpanKind::DataLoading), None, &mut spans);
    let compute = totals.get(SpanKind::Compute) + totals.get(SpanKind::Attention);
    let mb_total: i128 = micro_batches.iter().map(|mb| i128::from(mb.compute())).sum();
    if mb_total > 0 && compute > 0 {
        // Micro-batches in proportion to their measured compute (in i128: a product of two
        // step-sized nanosecond counts overflows i64 once steps last seconds).
        for mb in micro_batches {
            let share = i128::from(compute) * i128::from(mb.compute()) / mb_total;
            push(SpanKind::Compute, Nanos::try_from(share).unwrap_or(compute), Some(mb.id), &mut spans);
        }
    } else {
        push(SpanKind::Compute, compute, None, &mut spans);
    }
    for kind in
        [SpanKind::CollectiveWait, SpanKind::Communication, SpanKind::Optimizer, SpanKind::HostStall, SpanKind::Other]
    {
        push(kind, totals.get(kind), None, &mut spans);
    }
    spans
}

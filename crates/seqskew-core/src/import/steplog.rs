//! seqskew step logs (`seqskew.steplog/1`), JSON Lines and CSV: per (step, rank[, micro-batch])
//! the times and the sequence lengths, for users who can log them from the training loop,
//! and the form `seqskew summarize` writes. The format is specified in `docs/formats.md`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::json::{self, ScanError};
use super::numbers::{list_of_u32, seconds_to_nanos, to_u64};
use super::parser::{ContentParser, ImportStats, world_size_above_rank};
use super::sniff::BOM;
use crate::diag::{DiagnosticSink, Location, Severity};
use crate::model::{
    Collective, CollectiveOp, Coords, KindTotals, MicroBatch, Nanos, SequenceKnowledge, Sequences, Span, SpanKind,
    Worker, WorkerStep,
};

/// The version this reader writes and fully understands.
pub const STEPLOG_VERSION: u64 = 1;

/// Bounds on times, so that every sum of a step's times fits in i64 nanoseconds: durations
/// up to a million seconds (11.6 days), clocks up to 4e9 s from their zero (the year 2096).
const MAX_DURATION_NS: Nanos = 1_000_000 * 1_000_000_000;
const MAX_START_NS: Nanos = 4_000_000_000 * 1_000_000_000;

/// Time fields, in seconds, and the kind each adds to.
const TIME_FIELDS: [(&str, Option<SpanKind>); 13] = [
    ("step_s", None),
    ("start_s", None),
    ("compute_s", Some(SpanKind::Compute)),
    ("fwd_s", None),
    ("bwd_s", None),
    ("attn_s", Some(SpanKind::Attention)),
    ("comm_s", Some(SpanKind::Communication)),
    ("wait_s", Some(SpanKind::CollectiveWait)),
    // Pipeline send/recv time: part of comm_s, told apart for the replay.
    ("p2p_s", None),
    // Of comm_s, the time transferring rather than waiting for the last rank.
    ("transfer_s", None),
    ("stall_s", Some(SpanKind::HostStall)),
    ("optimizer_s", Some(SpanKind::Optimizer)),
    ("data_s", Some(SpanKind::DataLoading)),
];

/// One row: a worker-step (no `mb`) or one of its micro-batches.
#[derive(Clone, Debug, Default)]
struct Row {
    line: u64,
    step: u64,
    rank: u32,
    mb: Option<u32>,
    coords: Coords,
    /// Its host's name in the file's [`Hosts`].
    host: Option<u32>,
    world_size: Option<u32>,
    /// Nanoseconds per field of [`TIME_FIELDS`]; bit `i` of `given` says whether field `i`
    /// was given (half the size of an array of options: step rows are held until the end).
    times: [Nanos; TIME_FIELDS.len()],
    given: u16,
    lengths: Option<Vec<u32>>,
    /// The lengths are padded lengths from attention shapes.
    padded: bool,
    /// The step-log version the row says it follows.
    version: u64,
    /// Varlen bounds instead of lengths, where the row gives them (boxed: step rows are held
    /// until the end of the file, and most give lengths or nothing).
    bounds: Option<Box<Bounds>>,
}

/// A row's `tokens`, `docs` and `max_len`.
#[derive(Clone, Debug, Default)]
struct Bounds {
    tokens: Option<u64>,
    docs: Option<u64>,
    max_len: Option<u64>,
}

impl Row {
    fn time(&self, field: &str) -> Option<Nanos> {
        let i = TIME_FIELDS.iter().position(|(f, _)| *f == field)?;
        self.times.get(i).copied().filter(|_| self.given & (1 << i) != 0)
    }

    /// The row's sequences, its lengths moved out (they are most of a step log's memory).
    fn take_sequences(&mut self) -> Sequences {
        let bounds = self.bounds.as_deref().cloned().unwrap_or_default();
        match (self.lengths.take(), bounds.tokens, bounds.docs) {
            (Some(l), _, _) => {
                let knowledge = if self.padded { SequenceKnowledge::DenseShapes } else { SequenceKnowledge::Exact };
                Sequences::from_lengths(knowledge, l)
            }
            (None, Some(t), Some(d)) => {
                Sequences::from_bounds(d, t, u32::try_from(bounds.max_len.unwrap_or(t)).unwrap_or(u32::MAX))
            }
            _ => Sequences::default(),
        }
    }
}

/// Sets one field of a row from its text; `Err` says what is wrong with it.
fn set_field(row: &mut Row, key: &str, value: &str, seen: &mut (bool, bool), hosts: &mut Hosts) -> Result<(), String> {
    let value = value.trim();
    if value.is_empty() || value == "null" {
        return Ok(());
    }
    let int = |v: &str| to_u64(v).ok_or_else(|| format!("{key} = {v} is not a non-negative integer"));
    let small = |v: &str| int(v).and_then(|n| u32::try_from(n).map_err(|_| format!("{key} = {v} is too large")));
    match key {
        "step" => {
            row.step = int(value)?;
            seen.0 = true;
        }
        "rank" => {
            row.rank = small(value)?;
            seen.1 = true;
        }
        "mb" | "micro_batch" => row.mb = Some(small(value)?),
        "dp" => row.coords.dp = Some(small(value)?),
        "pp" => row.coords.pp = Some(small(value)?),
        "tp" => row.coords.tp = Some(small(value)?),
        "cp" => row.coords.cp = Some(small(value)?),
        "host" => row.host = hosts.id(value.trim_matches('"')),
        "world_size" => match small(value)? {
            0 => return Err(format!("{key} = {value} is not a rank count")),
            w => row.world_size = Some(w),
        },
        "tokens" => row.bounds.get_or_insert_default().tokens = Some(int(value)?),
        "padded" => row.padded = matches!(value.trim_matches('"'), "1" | "true" | "True" | "TRUE"),
        "docs" => row.bounds.get_or_insert_default().docs = Some(int(value)?),
        "max_len" => row.bounds.get_or_insert_default().max_len = Some(int(value)?),
        "lengths" => {
            row.lengths = Some(
                list_of_u32(value)
                    .ok_or_else(|| format!("lengths = {value} is not a list of non-negative integers"))?,
            );
        }
        "v" => row.version = int(value)?,
        _ => {
            if let Some(i) = TIME_FIELDS.iter().position(|(f, _)| *f == key) {
                let ns = seconds_to_nanos(value).map_err(|e| format!("{key} = {value} {}", e.describe()))?;
                if key == "start_s" {
                    if ns.abs() > MAX_START_NS {
                        return Err(format!("{key} = {value} is not a plausible clock (beyond the year 2100)"));
                    }
                } else if ns < 0 {
                    return Err(format!("{key} = {value} is negative"));
                } else if ns > MAX_DURATION_NS {
                    return Err(format!("{key} = {value} is longer than a training step can be (11 days)"));
                }
                if let Some(slot) = row.times.get_mut(i) {
                    *slot = ns;
                    row.given |= 1 << i;
                }
            }
            // Unknown fields are tolerated: logs may carry loss, lr, and more.
        }
    }
    Ok(())
}

/// The host names a file's rows give, each kept once: step rows are held until the end of the
/// file, and a name of its own for each row was 7 % of a step log's peak memory (the bench's
/// 50 MB one, when every row was held).
#[derive(Default)]
struct Hosts {
    names: Vec<String>,
    ids: std::collections::HashMap<String, u32>,
}

impl Hosts {
    fn id(&mut self, name: &str) -> Option<u32> {
        if let Some(&id) = self.ids.get(name) {
            return Some(id);
        }
        let id = u32::try_from(self.names.len()).ok()?;
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        Some(id)
    }

    fn name(&self, id: u32) -> Option<&str> {
        self.names.get(id as usize).map(String::as_str)
    }
}

/// Collects rows, each into its worker-step's place, and turns them into workers.
#[derive(Default)]
struct Rows {
    file: String,
    /// By (rank, step): in order, so the workers come out sorted, each place freed as its step
    /// is made (rows held until the end and the steps made from them were twice the model).
    places: BTreeMap<(u32, u64), Place>,
    hosts: Hosts,
    /// What the places hold, in bytes (see [`ContentParser::held_bytes`]).
    held: usize,
    stats: ImportStats,
    /// Warned once per file about a newer version.
    newer_version: bool,
}

/// The rows of one worker-step so far: its step row and its micro-batches, each made into the
/// model's micro-batch as it is read (a row has room for every field a row may give).
#[derive(Default)]
struct Place {
    /// The latest step row (boxed: most places of a log with micro-batch rows have one, and
    /// most rows are micro-batch rows).
    row: Option<Box<Row>>,
    /// Earlier step rows the latest replaced.
    replaced_rows: u32,
    /// (its line, the micro-batch), duplicates included until the end.
    micro_batches: Vec<(u64, MicroBatch)>,
    /// The worker's coordinates, host and world size come from the step row, else from the
    /// first micro-batch's (the latest of equals).
    first: Option<Origin>,
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

impl Place {
    fn add(&mut self, row: Row) {
        // Rows come in line order: a later one of the same micro-batch (or none) comes first.
        if self.first.is_none_or(|f| row.mb <= f.mb) {
            let Row { line, mb, coords, host, world_size, .. } = row;
            self.first = Some(Origin { line, mb, coords, host, world_size });
        }
        if row.mb.is_some() {
            self.micro_batches.push((row.line, micro_batch(row)));
        } else {
            self.replaced_rows += u32::from(self.row.is_some());
            self.row = Some(Box::new(row));
        }
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

impl Rows {
    fn push(&mut self, row: Row, seen: (bool, bool), diags: &mut DiagnosticSink) {
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
        let lengths = row.lengths.as_ref().map_or(0, Vec::len).saturating_mul(size_of::<u32>());
        let held = if row.mb.is_some() { size_of::<(u64, MicroBatch)>() } else { size_of::<Row>() };
        let place = match self.places.entry((row.rank, row.step)) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => {
                self.held = self.held.saturating_add(size_of::<((u32, u64), Place)>());
                e.insert(Place::default())
            }
        };
        place.add(row);
        self.held = self.held.saturating_add(held).saturating_add(lengths);
    }

    /// Drops the rows that later ones replaced (saying so), then builds each worker's steps,
    /// place by place.
    fn finish(mut self, diags: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats) {
        let mut replaced: Vec<(u64, u64, u32, Option<u32>)> = Vec::new();
        for (&(rank, step), place) in &mut self.places {
            if let Some(row) = &place.row {
                replaced.extend((0..place.replaced_rows).map(|_| (row.line, step, rank, None)));
            }
            // The latest row first among those for one micro-batch, so that it is the one kept.
            place.micro_batches.sort_unstable_by_key(|(line, m)| (m.id, std::cmp::Reverse(*line)));
            place.micro_batches.dedup_by(|earlier, kept| {
                let same = earlier.1.id == kept.1.id;
                if same {
                    replaced.push((kept.0, step, rank, Some(kept.1.id)));
                }
                same
            });
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
        let mut workers: Vec<Worker> = Vec::new();
        let mut clock: Nanos = 0;
        while let Some(((rank, step), place)) = self.places.pop_first() {
            let Some(first) = place.first else { continue };
            if workers.last().is_none_or(|w| w.rank != rank) {
                // The job's rank count, as the worker's first row says (when above its rank).
                let world_size = world_size_above_rank(
                    first.world_size,
                    Some(rank),
                    "world_size",
                    Some(Location::Line(first.line)),
                    diags,
                );
                // Its lists sized for its steps: grown by doubling, they kept a quarter of slack.
                let places = self.places.range((rank, step)..=(rank, u64::MAX)).map(|(_, p)| p);
                let (steps, micro_batches) =
                    places.fold((1, place.micro_batches.len()), |(s, m), p| (s + 1, m + p.micro_batches.len()));
                let mut worker = Worker { rank, world_size, source: self.file.clone(), ..Worker::default() };
                worker.steps.reserve_exact(steps);
                worker.micro_batches.reserve_exact(micro_batches);
                workers.push(worker);
                clock = 0;
            }
            let Some(worker) = workers.last_mut() else { continue };
            worker.coords = first.coords;
            worker.host = worker.host.take().or_else(|| first.host.and_then(|h| self.hosts.name(h)).map(str::to_owned));
            let micro_batches = place.micro_batches.into_iter().map(|(_, m)| m).collect();
            match build_step(step, place.row.map(|row| *row), micro_batches, clock, diags) {
                Some((ws, micro_batches, collectives)) => {
                    clock = ws.start + ws.duration;
                    worker.push_step(ws, micro_batches, collectives);
                }
                None => diags.push(Severity::Warning, None, format!("step {step} rank {rank} has no times; skipped")),
            }
        }
        (workers, self.stats)
    }
}

/// A worker-step, its micro-batches and collectives, from its row and micro-batches. Steps
/// without a start follow the previous.
fn build_step(
    step: u64,
    mut row: Option<Row>,
    micro_batches: Vec<MicroBatch>,
    clock: Nanos,
    diags: &mut DiagnosticSink,
) -> Option<(WorkerStep, Vec<MicroBatch>, Vec<Collective>)> {
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
    let spans = schematic_spans(start, &totals, &micro_batches);
    // A step log knows how long pipeline transfers took, not when: one span of that length.
    let collectives = given("p2p_s")
        .filter(|&p| p > 0)
        .map(|p| vec![Collective { start, end: start + p, op: CollectiveOp::Recv }])
        .unwrap_or_default();
    let transfer = given("transfer_s");
    let worker_step = WorkerStep { step, start, duration, spans, totals, transfer, sequences, ..WorkerStep::default() };
    Some((worker_step, micro_batches, collectives))
}

/// A step log has no timeline, only totals: lay them out in the usual order of a step (data,
/// micro-batches' compute, communication, optimizer, the rest), marked as schematic in the docs.
fn schematic_spans(start: Nanos, totals: &KindTotals, micro_batches: &[MicroBatch]) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut t = start;
    let mut push = |kind: SpanKind, duration: Nanos, micro_batch: Option<u32>, spans: &mut Vec<Span>| {
        if duration > 0 {
            spans.push(Span { start: t, duration, kind, micro_batch });
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

/// Splits input into complete lines, keeping the partial last one.
#[derive(Default)]
struct Lines {
    /// The line the last chunk's end cut, until its end comes.
    buf: Vec<u8>,
    line: u64,
}

impl Lines {
    fn feed(&mut self, chunk: &[u8], mut each: impl FnMut(u64, &[u8])) {
        let mut rest = chunk;
        // The line the last chunk cut (and the first, for its byte order mark) is completed in
        // the buffer; the chunk's other lines are read where they are (copying every byte into
        // the buffer first was a twelfth of reading a step log).
        if !self.buf.is_empty() || self.line == 0 {
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                self.buf.extend_from_slice(rest);
                return;
            };
            let (head, tail) = rest.split_at(nl);
            self.buf.extend_from_slice(head);
            rest = tail.get(1..).unwrap_or_default();
            let mut line = std::mem::take(&mut self.buf);
            // A UTF-8 byte order mark is not part of the first row, but editors write it.
            let start = if self.line == 0 && line.starts_with(BOM) { BOM.len() } else { 0 };
            self.emit(line.get(start..).unwrap_or_default(), &mut each);
            line.clear();
            self.buf = line;
        }
        let mut consumed = 0;
        for nl in memchr::memchr_iter(b'\n', rest) {
            self.emit(rest.get(consumed..nl).unwrap_or_default(), &mut each);
            consumed = nl + 1;
        }
        self.buf.extend_from_slice(rest.get(consumed..).unwrap_or_default());
    }

    fn emit(&mut self, line: &[u8], each: &mut impl FnMut(u64, &[u8])) {
        self.line += 1;
        each(self.line, line.strip_suffix(b"\r").unwrap_or(line));
    }

    fn finish(&mut self, each: impl FnMut(u64, &[u8])) {
        if !self.buf.is_empty() {
            self.feed(b"\n", each);
        }
    }
}

pub struct JsonlParser {
    lines: Lines,
    rows: Rows,
}

impl JsonlParser {
    pub fn new(file: &str) -> Self {
        JsonlParser { lines: Lines::default(), rows: Rows { file: file.to_owned(), ..Rows::default() } }
    }
}

/// `part` as text: without a second check where it lies within `whole` (text already), and
/// starts and ends between its characters; else checked.
fn text_in<'a>(whole: Option<&'a str>, part: &'a [u8]) -> Result<&'a str, ()> {
    let within = whole.and_then(|w| {
        let start = part.as_ptr().addr().checked_sub(w.as_ptr().addr())?;
        w.get(start..start.checked_add(part.len())?)
    });
    within.map_or_else(|| std::str::from_utf8(part).map_err(|_| ()), Ok)
}

fn parse_jsonl_line(rows: &mut Rows, number: u64, line: &[u8], diags: &mut DiagnosticSink) {
    let Some(open) = line.iter().position(|b| !b.is_ascii_whitespace()) else {
        return;
    };
    let mut fields: Vec<(Cow<'_, [u8]>, &[u8])> = Vec::with_capacity(16);
    let scanned = json::object(line, open, |key, value| fields.push((key, value)));
    let problem = match scanned {
        Ok(end) if line.get(end..).unwrap_or_default().iter().all(u8::is_ascii_whitespace) => None,
        Ok(_) => Some("more after the object's closing brace"),
        Err(ScanError::Eof) => Some("the line ends inside it"),
        Err(ScanError::Invalid(why)) => Some(why),
    };
    if let Some(why) = problem {
        rows.stats.records += 1;
        rows.stats.skipped += 1;
        diags.push(Severity::Warning, Some(Location::Line(number)), format!("not a JSON object: {why}; skipped"));
        return;
    }
    let mut row = Row { line: number, ..Row::default() };
    let mut seen = (false, false);
    // The line checked as UTF-8 once: its keys and values, cut at ASCII bytes, are then text
    // too (checking each on its own was a tenth of reading a step log). Where it is not, each
    // is checked, so that the message names the field.
    let whole = std::str::from_utf8(line).ok();
    for (key, value) in fields {
        let text = match value.starts_with(b"\"") {
            true => json::string(value),
            false => text_in(whole, value).map(Cow::Borrowed).map_err(|()| "invalid UTF-8"),
        };
        let field = match (text_in(whole, &key), text) {
            (Ok(key), Ok(text)) => set_field(&mut row, key, &text, &mut seen, &mut rows.hosts),
            (Err(()), _) => Err("a key that is not UTF-8".to_owned()),
            (Ok(key), Err(why)) => Err(format!("{key}: {why}")),
        };
        if let Err(why) = field {
            diags.push(Severity::Warning, Some(Location::Line(number)), why);
        }
    }
    rows.push(row, seen, diags);
}

impl ContentParser for JsonlParser {
    fn held_bytes(&self) -> usize {
        self.rows.held
    }

    fn feed(&mut self, chunk: &[u8], diags: &mut DiagnosticSink) {
        let rows = &mut self.rows;
        self.lines.feed(chunk, |n, line| parse_jsonl_line(rows, n, line, diags));
    }

    fn finish(mut self: Box<Self>, diags: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats) {
        let rows = &mut self.rows;
        self.lines.finish(|n, line| parse_jsonl_line(rows, n, line, diags));
        self.rows.finish(diags)
    }
}

/// CSV with a header row naming the fields; quoted fields allowed (csv-core).
pub struct CsvParser {
    lines: Lines,
    /// Built once: building csv-core's state machine costs more than reading a row.
    reader: csv_core::Reader,
    header: Option<Vec<String>>,
    rows: Rows,
}

impl CsvParser {
    pub fn new(file: &str) -> Self {
        CsvParser {
            lines: Lines::default(),
            reader: csv_core::Reader::new(),
            header: None,
            rows: Rows { file: file.to_owned(), ..Rows::default() },
        }
    }
}

/// Splits one CSV record into fields.
fn csv_fields(reader: &mut csv_core::Reader, line: &[u8]) -> Vec<String> {
    reader.reset();
    let mut fields = Vec::new();
    let mut input = line;
    let mut field = Vec::new();
    let mut out = [0u8; 4096];
    loop {
        let (result, read, written) = reader.read_field(input, &mut out);
        input = input.get(read..).unwrap_or_default();
        field.extend_from_slice(out.get(..written).unwrap_or_default());
        match result {
            csv_core::ReadFieldResult::OutputFull => continue,
            csv_core::ReadFieldResult::Field { record_end } => {
                fields.push(String::from_utf8_lossy(&field).into_owned());
                field.clear();
                if record_end {
                    break;
                }
            }
            csv_core::ReadFieldResult::InputEmpty => {
                if input.is_empty() {
                    // Tell the reader the record ended.
                    let (r, _, w) = reader.read_field(&[], &mut out);
                    field.extend_from_slice(out.get(..w).unwrap_or_default());
                    if matches!(r, csv_core::ReadFieldResult::Field { .. }) {
                        fields.push(String::from_utf8_lossy(&field).into_owned());
                    }
                    break;
                }
            }
            csv_core::ReadFieldResult::End => break,
        }
    }
    fields
}

fn parse_csv_line(
    reader: &mut csv_core::Reader,
    header: &mut Option<Vec<String>>,
    rows: &mut Rows,
    number: u64,
    line: &[u8],
    diags: &mut DiagnosticSink,
) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let fields = csv_fields(reader, line);
    let Some(names) = header.as_ref() else {
        *header = Some(fields.iter().map(|f| f.trim().to_owned()).collect());
        return;
    };
    if fields.len() != names.len() {
        diags.push(
            Severity::Warning,
            Some(Location::Line(number)),
            format!("{} fields where the header has {}", fields.len(), names.len()),
        );
    }
    let mut row = Row { line: number, ..Row::default() };
    let mut seen = (false, false);
    for (name, value) in names.iter().zip(&fields) {
        if let Err(why) = set_field(&mut row, name, value, &mut seen, &mut rows.hosts) {
            diags.push(Severity::Warning, Some(Location::Line(number)), why);
        }
    }
    rows.push(row, seen, diags);
}

impl ContentParser for CsvParser {
    fn held_bytes(&self) -> usize {
        self.rows.held
    }

    fn feed(&mut self, chunk: &[u8], diags: &mut DiagnosticSink) {
        let (reader, header, rows) = (&mut self.reader, &mut self.header, &mut self.rows);
        self.lines.feed(chunk, |n, line| parse_csv_line(reader, header, rows, n, line, diags));
    }

    fn finish(mut self: Box<Self>, diags: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats) {
        let (reader, header, rows) = (&mut self.reader, &mut self.header, &mut self.rows);
        self.lines.finish(|n, line| parse_csv_line(reader, header, rows, n, line, diags));
        self.rows.finish(diags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_with_quotes() {
        // One reader for every line, as the parser does: no state leaks from one to the next.
        let mut reader = csv_core::Reader::new();
        let mut fields = |line: &str| csv_fields(&mut reader, line.as_bytes());
        assert_eq!(fields("\"unterminated,x"), vec!["unterminated,x"]);
        assert_eq!(fields("3,0,\"12, 40\",x"), vec!["3", "0", "12, 40", "x"]);
        assert_eq!(fields("a,,b"), vec!["a", "", "b"]);
        assert_eq!(fields("\"he said \"\"hi\"\"\""), vec!["he said \"hi\""]);
    }

    #[test]
    fn fields_are_checked() {
        let mut row = Row::default();
        let mut seen = (false, false);
        assert!(set_field(&mut row, "lengths", "[12, 40]", &mut seen, &mut Hosts::default()).is_ok());
        assert_eq!(row.lengths, Some(vec![12, 40]));
        assert!(set_field(&mut row, "lengths", "12 x", &mut seen, &mut Hosts::default()).is_err());
        assert!(
            set_field(&mut row, "step_s", "-1", &mut seen, &mut Hosts::default()).unwrap_err().contains("negative")
        );
        assert!(
            set_field(&mut row, "rank", "99999999999", &mut seen, &mut Hosts::default())
                .unwrap_err()
                .contains("too large")
        );
        assert!(set_field(&mut row, "loss", "2.5", &mut seen, &mut Hosts::default()).is_ok());
        assert!(set_field(&mut row, "v", "2", &mut seen, &mut Hosts::default()).is_ok());
        assert_eq!(row.version, 2);
        assert!(set_field(&mut row, "padded", "true", &mut seen, &mut Hosts::default()).is_ok() && row.padded);
    }

    #[test]
    fn lines_split_across_chunks() {
        let mut lines = Lines::default();
        let mut got = Vec::new();
        for chunk in [&b"ab"[..], b"c\r\nd", b"e\n\nf"] {
            lines.feed(chunk, |n, l| got.push((n, String::from_utf8_lossy(l).into_owned())));
        }
        lines.finish(|n, l| got.push((n, String::from_utf8_lossy(l).into_owned())));
        assert_eq!(got, vec![(1, "abc".into()), (2, "de".into()), (3, "".into()), (4, "f".into())]);
    }

    /// The rows of a JSON Lines log, its lines numbered from 1.
    fn read(log: &[&str], diags: &mut DiagnosticSink) -> Rows {
        let mut rows = Rows::default();
        for (i, line) in log.iter().enumerate() {
            parse_jsonl_line(&mut rows, i as u64 + 1, line.as_bytes(), diags);
        }
        rows
    }

    #[test]
    fn a_worker_is_placed_by_each_steps_step_row_else_its_first_micro_batch() {
        // Step 1 has micro-batch rows only, micro-batch 0's first; step 2's step rows come after
        // its micro-batch's. The worker's coordinates are its last step's (its latest step row),
        // its host and world size its first step's (micro-batch 0's).
        let log = [
            r#"{"step": 1, "rank": 0, "mb": 0, "dp": 6, "host": "a", "world_size": 8, "compute_s": 0.1}"#,
            r#"{"step": 1, "rank": 0, "mb": 1, "dp": 7, "host": "b", "compute_s": 0.1}"#,
            r#"{"step": 2, "rank": 0, "mb": 0, "dp": 1, "compute_s": 0.1}"#,
            r#"{"step": 2, "rank": 0, "dp": 2, "world_size": 4, "step_s": 1.0}"#,
            r#"{"step": 2, "rank": 0, "dp": 3, "step_s": 1.0}"#,
            r#"{"step": 2, "rank": 0, "dp": 5, "step_s": 1.0}"#,
        ];
        let mut diags = DiagnosticSink::new("log.jsonl");
        let (workers, _) = read(&log, &mut diags).finish(&mut diags);
        let placed = workers.iter().map(|w| (w.coords.dp, w.host.as_deref(), w.world_size, w.steps.len()));
        assert_eq!(placed.collect::<Vec<_>>(), [(Some(5), Some("a"), Some(8), 2)]);
        // Three step rows for one place: the last is kept, and each earlier one is named there.
        let got: Vec<String> = diags.finish().into_iter().map(|d| format!("{:?} {}", d.location, d.message)).collect();
        assert_eq!(got, ["Some(Line(6)) a second row for step 2 rank 0; it replaced the first"; 2]);
    }

    #[test]
    fn each_worker_keeps_its_host_and_bounds() {
        // Hosts are kept once per file; a worker's is its first row's that names one.
        let log = [
            r#"{"step": 1, "rank": 0, "step_s": 1.0, "host": "node-a", "tokens": 300, "docs": 3, "max_len": 200}"#,
            r#"{"step": 1, "rank": 1, "step_s": 1.0}"#,
            r#"{"step": 2, "rank": 1, "step_s": 1.0, "host": "node-b"}"#,
            r#"{"step": 1, "rank": 2, "step_s": 1.0, "host": "node-a", "tokens": 5}"#,
        ];
        let mut diags = DiagnosticSink::new("log.jsonl");
        let rows = read(&log, &mut diags);
        assert_eq!(rows.hosts.names, ["node-a", "node-b"]);
        let (workers, _) = rows.finish(&mut diags);
        let hosts: Vec<Option<&str>> = workers.iter().map(|w| w.host.as_deref()).collect();
        assert_eq!(hosts, [Some("node-a"), Some("node-b"), Some("node-a")]);
        let bounds = workers.first().and_then(|w| w.steps.first()).map(|s| &s.sequences);
        assert_eq!(
            bounds.map(|b| (b.knowledge, b.tokens, b.documents, b.max_len)),
            Some((SequenceKnowledge::VarlenBounds, 300, 3, 200))
        );
        let messages: Vec<String> = diags.finish().into_iter().map(|d| d.message).collect();
        assert_eq!(messages, ["tokens and docs go together (with max_len); lengths bounds ignored"]);
    }

    #[test]
    fn a_later_row_for_the_same_place_replaces_the_earlier() {
        let log = [
            r#"{"step": 2, "rank": 1, "step_s": 1.0}"#,
            r#"{"step": 1, "rank": 1, "step_s": 1.0}"#,
            r#"{"step": 1, "rank": 1, "mb": 0, "compute_s": 0.25}"#,
            r#"{"step": 1, "rank": 1, "step_s": 2.0}"#,
            r#"{"step": 1, "rank": 0, "step_s": 1.0}"#,
            r#"{"step": 1, "rank": 1, "mb": 0, "compute_s": 0.5}"#,
        ];
        let mut diags = DiagnosticSink::new("log.jsonl");
        let rows = read(&log, &mut diags);
        let (workers, _) = rows.finish(&mut diags);
        let got: Vec<String> = diags.finish().into_iter().map(|d| format!("{:?} {}", d.location, d.message)).collect();
        assert_eq!(
            got,
            [
                "Some(Line(4)) a second row for step 1 rank 1; it replaced the first",
                "Some(Line(6)) a second row for step 1 rank 1 micro-batch 0; it replaced the first",
            ]
        );
        // (rank, step, duration, forward of each micro-batch)
        let shape: Vec<(u32, u64, Nanos, Vec<Nanos>)> = workers
            .iter()
            .flat_map(|w| {
                w.steps
                    .iter()
                    .map(|s| (w.rank, s.step, s.duration, w.micro_batches_of(s).iter().map(|m| m.forward).collect()))
            })
            .collect();
        let second = 1_000_000_000;
        assert_eq!(shape, [(0, 1, second, vec![]), (1, 1, 2 * second, vec![second / 2]), (1, 2, second, vec![])]);
    }

    #[test]
    fn a_steps_documents_stay_in_its_micro_batches_and_lists_fit() {
        // Rank 0's step 1 has its lengths on its micro-batch rows; step 2 on its step row; rank
        // 1 lists them on both (the micro-batches' are kept).
        let log = [
            r#"{"step": 1, "rank": 0, "step_s": 1.0}"#,
            r#"{"step": 1, "rank": 0, "mb": 0, "fwd_s": 0.1, "lengths": [3, 8]}"#,
            r#"{"step": 1, "rank": 0, "mb": 1, "fwd_s": 0.1, "lengths": [5]}"#,
            r#"{"step": 2, "rank": 0, "step_s": 1.0, "lengths": [4, 6]}"#,
            r#"{"step": 1, "rank": 1, "step_s": 1.0, "lengths": [1, 1]}"#,
            r#"{"step": 1, "rank": 1, "mb": 0, "fwd_s": 0.1, "lengths": [2]}"#,
        ];
        let mut diags = DiagnosticSink::new("log.jsonl");
        let (workers, _) = read(&log, &mut diags).finish(&mut diags);
        // (rank, step, documents, the step's own list, all its documents)
        let steps: Vec<(u32, u64, u64, usize, Vec<u32>)> = workers
            .iter()
            .flat_map(|w| {
                w.steps
                    .iter()
                    .map(|s| (w.rank, s.step, s.sequences.documents, s.sequences.lengths.len(), w.step_documents(s)))
            })
            .collect();
        assert_eq!(steps, [(0, 1, 3, 0, vec![8, 5, 3]), (0, 2, 2, 2, vec![6, 4]), (1, 1, 1, 0, vec![2])]);
        let capacities: Vec<(usize, usize)> =
            workers.iter().map(|w| (w.steps.capacity(), w.micro_batches.capacity())).collect();
        assert_eq!(capacities, [(2, 2), (1, 1)]);
        let lengths = workers.iter().flat_map(|w| &w.micro_batches).map(|m| m.sequences.lengths.capacity());
        assert_eq!(lengths.collect::<Vec<_>>(), [2, 1, 1]);
    }

    /// Each JSONL line as the reader takes it: (line, kept, messages).
    #[test]
    fn jsonl_lines_are_objects_or_named_problems() {
        let cases: [(&str, bool, &[&str]); 8] = [
            (r#"{"step": 1, "rank": 0, "step_s": 0.5, "loss": NaN}"#, true, &[]),
            (r#"  {"step": 1, "rank": 0, "host": "n\u00e9", "lengths": [3, 4]}  "#, true, &[]),
            (r#"{"step": 1, "rank": 0} {"step": 2}"#, false, &["more after the object's closing brace"]),
            (r#"{"step": 1, "rank": 0, "step_s": 0."#, false, &["the line ends inside it"]),
            (r#"[1, 2]"#, false, &["expected an object"]),
            (r#"{"step": 1, "rank": 0, "step_s": "x"}"#, true, &["step_s = x"]),
            ("{\"step\": 1, \"rank\": 0, \"host\": \"a\tb\"}", true, &["host: a control character"]),
            (
                r#"{"step": 1, "rank": 0, "step_s": 0.5, "world_size": 0}"#,
                true,
                &["world_size = 0 is not a rank count"],
            ),
        ];
        for (line, kept, messages) in cases {
            let mut rows = Rows::default();
            let mut diags = DiagnosticSink::new("log.jsonl");
            parse_jsonl_line(&mut rows, 1, line.as_bytes(), &mut diags);
            let got: Vec<String> = diags.finish().into_iter().map(|d| d.message).collect();
            assert_eq!(rows.stats.skipped == 0, kept, "{line}: {got:?}");
            assert_eq!(got.len(), messages.len(), "{line}: {got:?}");
            for (m, want) in got.iter().zip(messages) {
                assert!(m.contains(want), "{line}: {m} lacks {want}");
            }
        }
    }
}

//! The job as a worker × step table of the numbers the diagnosis uses, with the parallel
//! layout (data-parallel rank, pipeline stage) each worker holds.
//!
//! The table is kept column by column, step-major (the cell of step `s` and worker `w` is entry
//! `s × workers + w` of each column): a large job has millions of cells, every page of a new
//! table costs a page fault, and most passes read a few of the numbers. [`Cell`] is a copy of
//! one cell's numbers for code that wants them together.

use std::ops::Range;

use super::par;
use super::pipeline_order::{ChunkShares, Order};
use crate::model::{
    Job, MicroBatch, Nanos, SequenceKnowledge, Sequences, SpanKind, Worker, WorkerStep, steps_of, steps_union,
};
use crate::schedule::PipelineSchedule;

/// A worker's place in the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slot {
    pub rank: u32,
    /// Data-parallel index (0-based, dense).
    pub dp: usize,
    /// Pipeline stage index (0-based, dense).
    pub stage: usize,
    /// A readable name: "rank 5" or "rank 5 (dp 1, pp 0)".
    pub label: String,
}

/// What the diagnosis needs of the sequences in a worker-step or micro-batch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SeqFeatures {
    pub known: bool,
    pub documents: f64,
    pub tokens: f64,
    pub max_len: f64,
    /// Σ L²: exact, or the best estimate from varlen bounds.
    pub sum_sq: f64,
    /// What the cost model's L² term uses: Σ L² where lengths are known; for varlen bounds, the
    /// measured attention time in Σ L² units (the bounds are too loose to cost a shard).
    pub quadratic: f64,
}

impl SeqFeatures {
    pub fn of(s: &Sequences) -> Self {
        if !s.is_known() {
            return SeqFeatures::default();
        }
        let sum_sq = s.sum_sq_estimate();
        SeqFeatures {
            known: true,
            documents: s.documents as f64,
            tokens: s.tokens as f64,
            max_len: f64::from(s.max_len),
            sum_sq,
            quadratic: sum_sq,
        }
    }
}

/// One worker's numbers in one step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cell {
    pub duration: Nanos,
    /// Compute and attention (the work that depends on the data).
    pub compute: Nanos,
    pub attention: Nanos,
    pub optimizer: Nanos,
    /// Inside collectives (waiting or transferring), not counting pipeline send/recv (waiting
    /// for the neighbouring stage).
    pub collectives: Nanos,
    /// The part of the time in communication that was transfer, not waiting: for each of its
    /// collectives, end − the last participant's start. `None` when the input has no collective
    /// timestamps.
    pub transfer: Option<Nanos>,
    /// Nothing ran, or the host was loading data.
    pub stall: Nanos,
    pub other: Nanos,
    pub seq: SeqFeatures,
    /// Its micro-batches, in order (see [`Frame::micro_batches_of`]; empty when unknown).
    pub micro_batches: MicroBatchRange,
}

impl Cell {
    /// The worker's own work: what it computed and where it stalled (everything but waiting).
    pub fn work(&self) -> Nanos {
        self.compute + self.optimizer + self.stall + self.other
    }
}

/// Where a cell's micro-batches are in the table's micro-batch columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MicroBatchRange {
    part: u32,
    start: u32,
    end: u32,
}

impl MicroBatchRange {
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One micro-batch of a worker-step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MicroBatchCell {
    pub forward: Nanos,
    pub backward: Nanos,
    pub seq: SeqFeatures,
    /// Attention time, where measured.
    pub attention: Option<Nanos>,
}

impl MicroBatchCell {
    pub fn compute(&self) -> Nanos {
        self.forward.saturating_add(self.backward)
    }
}

/// An optional time in 8 bytes, where `Option<Nanos>` takes 16: the table has a column of them
/// for cells and one for micro-batches, millions of entries. `Nanos::MIN` stands for none (a
/// time that low is read as the least one above it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaybeNanos(Nanos);

impl Default for MaybeNanos {
    fn default() -> Self {
        Self::NONE
    }
}

impl MaybeNanos {
    const NONE: MaybeNanos = MaybeNanos(Nanos::MIN);

    fn new(time: Option<Nanos>) -> Self {
        time.map_or(Self::NONE, |t| MaybeNanos(t.max(Nanos::MIN + 1)))
    }

    pub fn get(self) -> Option<Nanos> {
        (self != Self::NONE).then_some(self.0)
    }
}

/// A column's entries `range` (none where out of bounds).
fn run<'a, T>(column: &'a [T], range: &Range<usize>) -> &'a [T] {
    column.get(range.clone()).unwrap_or_default()
}

/// Sets a column's entry `i` (nothing where out of bounds).
fn put<T>(column: &mut [T], i: usize, value: T) {
    if let Some(x) = column.get_mut(i) {
        *x = value;
    }
}

/// Sets a column's entries from `start` on to one number of each of `entries` (those that fit).
fn put_run<T, E>(column: &mut [T], start: usize, entries: &[E], number: impl Fn(&E) -> T) {
    for (x, e) in column.get_mut(start..).unwrap_or_default().iter_mut().zip(entries) {
        *x = number(e);
    }
}

/// The entries from `start` to `end` (none where `end` comes first).
fn span(start: u32, end: u32) -> Range<usize> {
    start as usize..end.max(start) as usize
}

/// Sequence features, column by column (of cells, or of micro-batches).
#[derive(Clone, Debug, Default)]
struct SeqColumns {
    known: Vec<bool>,
    documents: Vec<f64>,
    tokens: Vec<f64>,
    max_len: Vec<u32>,
    sum_sq: Vec<f64>,
    /// Only where it differs from Σ L² (varlen bounds, [`use_attention_for_bounds`]); else empty.
    quadratic: Vec<f64>,
}

impl SeqColumns {
    fn with_capacity(n: usize) -> Self {
        SeqColumns {
            known: Vec::with_capacity(n),
            documents: Vec::with_capacity(n),
            tokens: Vec::with_capacity(n),
            max_len: Vec::with_capacity(n),
            sum_sq: Vec::with_capacity(n),
            quadratic: Vec::new(),
        }
    }

    fn zero(&mut self, n: usize) {
        self.known.resize(n, false);
        self.documents.resize(n, 0.0);
        self.tokens.resize(n, 0.0);
        self.max_len.resize(n, 0);
        self.sum_sq.resize(n, 0.0);
    }

    /// Sets entries from `start` on to the sequences of `entries` (all but `quadratic`, which
    /// [`use_attention_for_bounds`] sets).
    fn put_run<E>(&mut self, start: usize, entries: &[E], seq: impl Fn(&E) -> &SeqFeatures) {
        put_run(&mut self.known, start, entries, |e| seq(e).known);
        put_run(&mut self.documents, start, entries, |e| seq(e).documents);
        put_run(&mut self.tokens, start, entries, |e| seq(e).tokens);
        // A length held as a float, from the model's `u32`: exact both ways.
        put_run(&mut self.max_len, start, entries, |e| seq(e).max_len as u32);
        put_run(&mut self.sum_sq, start, entries, |e| seq(e).sum_sq);
    }

    fn all(&self) -> SeqSlice<'_> {
        SeqSlice {
            known: &self.known,
            documents: &self.documents,
            tokens: &self.tokens,
            max_len: &self.max_len,
            sum_sq: &self.sum_sq,
            quadratic: &self.quadratic,
        }
    }
}

/// A run of the entries of a column set of sequence features (a cell's, or a micro-batch's).
#[derive(Clone, Copy, Debug, Default)]
pub struct SeqSlice<'a> {
    known: &'a [bool],
    documents: &'a [f64],
    tokens: &'a [f64],
    max_len: &'a [u32],
    sum_sq: &'a [f64],
    quadratic: &'a [f64],
}

impl<'a> SeqSlice<'a> {
    /// Entries `range` (empty where out of bounds).
    fn slice(&self, range: Range<usize>) -> SeqSlice<'a> {
        SeqSlice {
            known: run(self.known, &range),
            documents: run(self.documents, &range),
            tokens: run(self.tokens, &range),
            max_len: run(self.max_len, &range),
            sum_sq: run(self.sum_sq, &range),
            quadratic: run(self.quadratic, &range),
        }
    }

    pub fn known(&self, i: usize) -> bool {
        self.known.get(i).copied().unwrap_or(false)
    }

    pub fn get(&self, i: usize) -> SeqFeatures {
        let sum_sq = self.sum_sq.get(i).copied().unwrap_or(0.0);
        SeqFeatures {
            known: self.known(i),
            documents: self.documents.get(i).copied().unwrap_or(0.0),
            tokens: self.tokens.get(i).copied().unwrap_or(0.0),
            max_len: f64::from(self.max_len.get(i).copied().unwrap_or(0)),
            sum_sq,
            quadratic: self.quadratic.get(i).copied().unwrap_or(sum_sq),
        }
    }
}

/// The cells' numbers, column by column.
#[derive(Clone, Debug, Default)]
struct CellColumns {
    present: Vec<bool>,
    duration: Vec<Nanos>,
    compute: Vec<Nanos>,
    attention: Vec<Nanos>,
    optimizer: Vec<Nanos>,
    collectives: Vec<Nanos>,
    transfer: Vec<MaybeNanos>,
    stall: Vec<Nanos>,
    other: Vec<Nanos>,
    seq: SeqColumns,
    /// Where each cell's micro-batches start in the micro-batch columns; one more entry than
    /// cells (the last one's end).
    micro_batch_start: Vec<u32>,
}

impl CellColumns {
    /// Room for `n` cells, none written ([`CellColumns::zero`] writes them).
    fn with_capacity(n: usize) -> Self {
        CellColumns {
            present: Vec::with_capacity(n),
            duration: Vec::with_capacity(n),
            compute: Vec::with_capacity(n),
            attention: Vec::with_capacity(n),
            optimizer: Vec::with_capacity(n),
            collectives: Vec::with_capacity(n),
            transfer: Vec::with_capacity(n),
            stall: Vec::with_capacity(n),
            other: Vec::with_capacity(n),
            seq: SeqColumns::with_capacity(n),
            micro_batch_start: Vec::with_capacity(n + 1),
        }
    }

    /// `n` absent cells.
    fn zero(&mut self, n: usize) {
        self.present.resize(n, false);
        self.duration.resize(n, 0);
        self.compute.resize(n, 0);
        self.attention.resize(n, 0);
        self.optimizer.resize(n, 0);
        self.collectives.resize(n, 0);
        self.transfer.resize(n, MaybeNanos::NONE);
        self.stall.resize(n, 0);
        self.other.resize(n, 0);
        self.seq.zero(n);
        self.micro_batch_start.resize(n + 1, 0);
    }

    /// Sets cells from `start` on to `entries` (all but where their micro-batches are).
    fn put_run(&mut self, start: usize, entries: &[CellEntry]) {
        put_run(&mut self.present, start, entries, |e| e.present);
        put_run(&mut self.duration, start, entries, |e| e.duration);
        put_run(&mut self.compute, start, entries, |e| e.compute);
        put_run(&mut self.attention, start, entries, |e| e.attention);
        put_run(&mut self.optimizer, start, entries, |e| e.optimizer);
        put_run(&mut self.collectives, start, entries, |e| e.collectives);
        put_run(&mut self.transfer, start, entries, |e| e.transfer);
        put_run(&mut self.stall, start, entries, |e| e.stall);
        put_run(&mut self.other, start, entries, |e| e.other);
        self.seq.put_run(start, entries, |e| &e.seq);
    }

    /// Cells `range`, of part `part` whose micro-batches are `micro_batches`.
    fn rows<'a>(&'a self, part: u32, range: Range<usize>, micro_batches: MicroBatchRun<'a>) -> Row<'a> {
        Row {
            part,
            part_micro_batches: micro_batches,
            present: run(&self.present, &range),
            duration: run(&self.duration, &range),
            compute: run(&self.compute, &range),
            attention: run(&self.attention, &range),
            optimizer: run(&self.optimizer, &range),
            collectives: run(&self.collectives, &range),
            transfer: run(&self.transfer, &range),
            stall: run(&self.stall, &range),
            other: run(&self.other, &range),
            seq: self.seq.all().slice(range.clone()),
            micro_batch_start: run(&self.micro_batch_start, &(range.start..range.end + 1)),
        }
    }
}

/// One entry of [`CellColumns`] (an absent cell: the default, as [`CellColumns::zero`] writes).
#[derive(Clone, Copy, Debug, Default)]
struct CellEntry {
    present: bool,
    duration: Nanos,
    compute: Nanos,
    attention: Nanos,
    optimizer: Nanos,
    collectives: Nanos,
    transfer: MaybeNanos,
    stall: Nanos,
    other: Nanos,
    seq: SeqFeatures,
}

impl CellEntry {
    /// A worker-step's numbers.
    fn of(w: &Worker, s: &WorkerStep) -> Self {
        let t = &s.totals;
        let communication = t.communication();
        let p2p = w.p2p_time(s);
        CellEntry {
            present: true,
            duration: s.duration,
            compute: t.get(SpanKind::Compute) + t.get(SpanKind::Attention),
            attention: s.sequences.attention.unwrap_or_else(|| t.get(SpanKind::Attention)),
            optimizer: t.get(SpanKind::Optimizer),
            collectives: communication - p2p.min(communication),
            transfer: MaybeNanos::new(s.transfer.map(|x| x.min(communication))),
            stall: t.get(SpanKind::HostStall) + t.get(SpanKind::DataLoading),
            other: t.get(SpanKind::Other),
            seq: SeqFeatures::of(&s.sequences),
        }
    }
}

/// A run of cells (one step's, or a part's), column by column: each column has an entry per
/// cell, meaningless where the cell is not `present`. Passes over many cells read the columns
/// they need; [`Row::cell`] copies out all of one cell's numbers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Row<'a> {
    part: u32,
    pub present: &'a [bool],
    pub duration: &'a [Nanos],
    pub compute: &'a [Nanos],
    pub attention: &'a [Nanos],
    pub optimizer: &'a [Nanos],
    pub collectives: &'a [Nanos],
    pub transfer: &'a [MaybeNanos],
    pub stall: &'a [Nanos],
    pub other: &'a [Nanos],
    pub seq: SeqSlice<'a>,
    /// One more entry than cells.
    micro_batch_start: &'a [u32],
    /// All the micro-batches of the cells' part, which [`Row::micro_batch_span`] indexes.
    pub part_micro_batches: MicroBatchRun<'a>,
}

impl<'a> Row<'a> {
    pub fn len(&self) -> usize {
        self.present.len()
    }

    pub fn is_empty(&self) -> bool {
        self.present.is_empty()
    }

    /// Each cell's work ([`Cell::work`]) where present, in order. The columns are zipped
    /// rather than indexed: this runs for every worker-step several times.
    pub fn works(self) -> impl Iterator<Item = Option<Nanos>> + 'a {
        let cells = self.present.iter().zip(self.compute).zip(self.optimizer).zip(self.stall).zip(self.other);
        cells.map(|((((&present, &compute), &optimizer), &stall), &other)| {
            present.then_some(compute + optimizer + stall + other)
        })
    }

    pub fn cell(&self, i: usize) -> Option<Cell> {
        if !self.present.get(i).copied().unwrap_or(false) {
            return None;
        }
        let at = |column: &[Nanos]| column.get(i).copied().unwrap_or(0);
        Some(Cell {
            duration: at(self.duration),
            compute: at(self.compute),
            attention: at(self.attention),
            optimizer: at(self.optimizer),
            collectives: at(self.collectives),
            transfer: self.transfer.get(i).and_then(|t| t.get()),
            stall: at(self.stall),
            other: at(self.other),
            seq: self.seq.get(i),
            micro_batches: self.micro_batches(i),
        })
    }

    /// Where cell `i`'s micro-batches are (see [`Frame::micro_batch_run`]).
    pub fn micro_batches(&self, i: usize) -> MicroBatchRange {
        let start = self.micro_batch_start.get(i).copied().unwrap_or(0);
        MicroBatchRange { part: self.part, start, end: self.micro_batch_start.get(i + 1).copied().unwrap_or(start) }
    }

    /// Where cell `i`'s micro-batches are in [`Row::part_micro_batches`].
    pub fn micro_batch_span(&self, i: usize) -> Range<usize> {
        let MicroBatchRange { start, end, .. } = self.micro_batches(i);
        span(start, end)
    }

    /// The present cells, with their indices, in order.
    pub fn cells(self) -> impl Iterator<Item = (usize, Cell)> + Clone + 'a {
        (0..self.len()).filter_map(move |i| Some((i, self.cell(i)?)))
    }
}

/// The micro-batches' numbers, column by column.
#[derive(Clone, Debug, Default)]
struct MicroBatchColumns {
    forward: Vec<Nanos>,
    backward: Vec<Nanos>,
    p2p: Vec<(Nanos, Nanos)>,
    attention: Vec<MaybeNanos>,
    seq: SeqColumns,
}

impl MicroBatchColumns {
    /// Room for `n` micro-batches, none written ([`MicroBatchColumns::zero`] writes them).
    fn with_capacity(n: usize) -> Self {
        MicroBatchColumns {
            forward: Vec::with_capacity(n),
            backward: Vec::with_capacity(n),
            p2p: Vec::with_capacity(n),
            attention: Vec::with_capacity(n),
            seq: SeqColumns::with_capacity(n),
        }
    }

    fn zero(&mut self, n: usize) {
        self.forward.resize(n, 0);
        self.backward.resize(n, 0);
        self.p2p.resize(n, (0, 0));
        self.attention.resize(n, MaybeNanos::NONE);
        self.seq.zero(n);
    }

    /// Sets micro-batches from `start` on to `entries`.
    fn put_run(&mut self, start: usize, entries: &[MicroBatchEntry]) {
        put_run(&mut self.forward, start, entries, |e| e.forward);
        put_run(&mut self.backward, start, entries, |e| e.backward);
        put_run(&mut self.p2p, start, entries, |e| e.p2p);
        put_run(&mut self.attention, start, entries, |e| e.attention);
        self.seq.put_run(start, entries, |e| &e.seq);
    }

    fn all(&self) -> MicroBatchRun<'_> {
        MicroBatchRun {
            forward: &self.forward,
            backward: &self.backward,
            p2p: &self.p2p,
            attention: &self.attention,
            seq: self.seq.all(),
        }
    }
}

/// One entry of [`MicroBatchColumns`].
#[derive(Clone, Copy, Debug, Default)]
struct MicroBatchEntry {
    forward: Nanos,
    backward: Nanos,
    p2p: (Nanos, Nanos),
    attention: MaybeNanos,
    seq: SeqFeatures,
}

impl MicroBatchEntry {
    fn of(m: &MicroBatch) -> Self {
        MicroBatchEntry {
            forward: m.forward,
            backward: m.backward,
            p2p: m.p2p,
            attention: MaybeNanos::new(m.sequences.attention),
            seq: SeqFeatures::of(&m.sequences),
        }
    }
}

/// A run of micro-batches (one cell's), column by column.
#[derive(Clone, Copy, Debug, Default)]
pub struct MicroBatchRun<'a> {
    pub forward: &'a [Nanos],
    pub backward: &'a [Nanos],
    /// [`MicroBatch::p2p`].
    pub p2p: &'a [(Nanos, Nanos)],
    attention: &'a [MaybeNanos],
    pub seq: SeqSlice<'a>,
}

impl<'a> MicroBatchRun<'a> {
    /// Entries `range` (empty where out of bounds).
    fn slice(&self, range: Range<usize>) -> MicroBatchRun<'a> {
        MicroBatchRun {
            forward: run(self.forward, &range),
            backward: run(self.backward, &range),
            p2p: run(self.p2p, &range),
            attention: run(self.attention, &range),
            seq: self.seq.slice(range),
        }
    }

    pub fn len(&self) -> usize {
        self.forward.len()
    }

    pub fn is_empty(&self) -> bool {
        self.forward.is_empty()
    }

    /// Micro-batch `i`'s forward and backward time ([`MicroBatchCell::compute`]).
    pub fn compute(&self, i: usize) -> Nanos {
        self.forward.get(i).copied().unwrap_or(0).saturating_add(self.backward.get(i).copied().unwrap_or(0))
    }

    pub fn get(&self, i: usize) -> MicroBatchCell {
        MicroBatchCell {
            forward: self.forward.get(i).copied().unwrap_or(0),
            backward: self.backward.get(i).copied().unwrap_or(0),
            seq: self.seq.get(i),
            attention: self.attention.get(i).and_then(|t| t.get()),
        }
    }

    /// Each micro-batch, in order.
    pub fn iter(self) -> impl ExactSizeIterator<Item = MicroBatchCell> + Clone + 'a {
        (0..self.len()).map(move |i| self.get(i))
    }
}

/// The cells of a range of steps, column by column: the table is built in parts, one per core.
#[derive(Clone, Debug, Default)]
struct Part {
    /// Index of its first step.
    first_step: usize,
    cells: CellColumns,
    micro_batches: MicroBatchColumns,
}

impl Part {
    /// Cells `range`, this being part `k`.
    fn rows(&self, k: u32, range: Range<usize>) -> Row<'_> {
        self.cells.rows(k, range, self.micro_batches.all())
    }
}

/// The job as a table.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    /// Distinct step numbers, sorted.
    pub steps: Vec<u64>,
    /// One per worker, in the job's (rank) order.
    pub slots: Vec<Slot>,
    pub stages: usize,
    pub dp_size: usize,
    pub knowledge: SequenceKnowledge,
    /// Whether any cell's sequences are known.
    pub lengths_known: bool,
    /// The order the pipelines run their passes in ([`super::pipeline_order`]).
    pub schedule: PipelineSchedule,
    /// Under an interleaved schedule, each stage's compute split over its model chunks.
    pub chunk_shares: ChunkShares,
    /// The workers ran several stages each in a placement the replay does not know
    /// ([`Order::unknown_placement`]).
    pub unknown_placement: bool,
    /// In step order.
    parts: Vec<Part>,
}

impl Frame {
    /// One step's cells, column by column (empty for a step out of range).
    pub fn row(&self, step: usize) -> Row<'_> {
        let width = self.slots.len();
        let found = self.parts.partition_point(|p| p.first_step <= step).checked_sub(1).and_then(|k| {
            let part = self.parts.get(k)?;
            let first = step.checked_sub(part.first_step)?.checked_mul(width)?;
            (first < part.cells.present.len()).then(|| part.rows(k as u32, first..first + width))
        });
        found.unwrap_or_default()
    }

    /// The cell of a step and worker; `None` where the worker lacks the step.
    pub fn cell(&self, step: usize, worker: usize) -> Option<Cell> {
        self.row(step).cell(worker)
    }

    /// The cells of one step, with their worker indices, in worker order.
    pub fn step_cells(&self, step: usize) -> impl Iterator<Item = (usize, Cell)> + '_ {
        self.row(step).cells()
    }

    /// Every part's cells as one run, step by step, each step's in worker order.
    fn all_rows(&self) -> impl Iterator<Item = Row<'_>> + Clone + '_ {
        self.parts.iter().zip(0u32..).map(|(part, k)| part.rows(k, 0..part.cells.present.len()))
    }

    /// Every cell, step by step, each step's in worker order.
    pub fn cells(&self) -> impl Iterator<Item = Cell> + Clone + '_ {
        self.all_rows().flat_map(|all| all.cells().map(|(_, c)| c))
    }

    /// Every present cell's work ([`Cell::work`]), in the order of [`Frame::cells`].
    pub fn works(&self) -> impl Iterator<Item = Nanos> + '_ {
        self.all_rows().flat_map(|all| all.works().flatten())
    }

    /// A cell's micro-batches, in order.
    pub fn micro_batches_of(&self, cell: &Cell) -> impl ExactSizeIterator<Item = MicroBatchCell> + Clone + use<'_> {
        self.micro_batch_run(cell.micro_batches).iter()
    }

    /// Whether any cell has micro-batches (the input named them).
    pub fn has_micro_batches(&self) -> bool {
        self.parts.iter().any(|p| !p.micro_batches.forward.is_empty())
    }

    /// The micro-batches in a range, column by column.
    pub fn micro_batch_run(&self, range: MicroBatchRange) -> MicroBatchRun<'_> {
        let MicroBatchRange { part, start, end } = range;
        let columns = self.parts.get(part as usize).map(|p| p.micro_batches.all());
        columns.map(|c| c.slice(span(start, end))).unwrap_or_default()
    }
}

/// Dense indices for the values present, in sorted order.
fn dense(values: &[Option<u32>]) -> Vec<Option<usize>> {
    let mut distinct: Vec<u32> = values.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    values.iter().map(|v| v.and_then(|v| distinct.binary_search(&v).ok())).collect()
}

/// Each worker's place in the job, in the job's order. Workers without pipeline coordinates are
/// stage 0; without data-parallel coordinates they are numbered within their stage in rank
/// order (pure data parallelism).
pub fn slots(job: &Job) -> Vec<Slot> {
    let stage_of = dense(&job.workers.iter().map(|w| w.coords.pp).collect::<Vec<_>>());
    let dp_known = dense(&job.workers.iter().map(|w| w.coords.dp).collect::<Vec<_>>());
    let mut next_dp: Vec<usize> = Vec::new();
    let mut slots = Vec::with_capacity(job.workers.len());
    for (i, w) in job.workers.iter().enumerate() {
        let stage = stage_of.get(i).copied().flatten().unwrap_or(0);
        if next_dp.len() <= stage {
            next_dp.resize(stage + 1, 0);
        }
        let dp = match dp_known.get(i).copied().flatten() {
            Some(d) => d,
            None => {
                let d = next_dp.get(stage).copied().unwrap_or(0);
                if let Some(n) = next_dp.get_mut(stage) {
                    *n += 1;
                }
                d
            }
        };
        // The coordinates the input gives, else the place given here (a rank's data-parallel
        // index within its stage, when only the stage is known).
        let label = match (w.coords.dp, w.coords.pp) {
            (None, None) => format!("rank {}", w.rank),
            (given_dp, given_pp) => format!(
                "rank {} (dp {}, pp {})",
                w.rank,
                given_dp.map_or(dp, |d| d as usize),
                given_pp.map_or(stage, |p| p as usize)
            ),
        };
        slots.push(Slot { rank: w.rank, dp, stage, label });
    }
    slots
}

/// The data-parallel width and the pipeline stages of these slots (1 × 1 for none).
pub fn layout(slots: &[Slot]) -> (usize, usize) {
    let dp_size = slots.iter().map(|s| s.dp + 1).max().unwrap_or(1);
    let stages = slots.iter().map(|s| s.stage + 1).max().unwrap_or(1);
    (dp_size, stages)
}

/// Builds the table, its workers placed by [`slots`].
pub fn build(job: &Job) -> Frame {
    let slots = slots(job);
    let steps = steps(job);
    let width = job.workers.len();
    // Ranges of steps on every core (building the table mostly waits on memory). Each part's
    // cells are allocated here (where the memory the model's import freed is reused) and
    // written on its core (zeroed, which on reused memory is a pass over the whole table), their
    // micro-batches placed, then those allocated, zeroed and filled in.
    let cells_in = |range: &Range<usize>| range.len().saturating_mul(width);
    let mut parts: Vec<(Range<usize>, Filled, Part)> = par::ranges(steps.len(), par::min_rows(width))
        .into_iter()
        .map(|range| {
            let cells = CellColumns::with_capacity(cells_in(&range));
            let part = Part { first_step: range.start, cells, micro_batches: MicroBatchColumns::default() };
            (range, Filled::default(), part)
        })
        .collect();
    // First where each worker's first step says (the usual case, known without a pass over the
    // whole model), which the fill checks; then, in the parts where that was wrong, where
    // counting every cell puts them (the cells filled again from the first).
    for counted in [false, true] {
        let todo = |filled: &Filled| !filled.placed;
        par::each_mut(&mut parts, |_, (range, filled, part)| {
            if !todo(filled) {
                return;
            }
            part.cells.zero(cells_in(range));
            if counted || !place_micro_batches_alike(job, &steps, range.clone(), &mut part.cells) {
                place_micro_batches(job, &steps, range.clone(), &mut part.cells);
            }
        });
        let micro_batches = |part: &Part| part.cells.micro_batch_start.last().copied().unwrap_or(0) as usize;
        for (_, _, part) in parts.iter_mut().filter(|(_, filled, _)| todo(filled)) {
            part.micro_batches = MicroBatchColumns::with_capacity(micro_batches(part));
        }
        par::each_mut(&mut parts, |_, (range, filled, part)| {
            if todo(filled) {
                part.micro_batches.zero(micro_batches(part));
                *filled = fill(job, &steps, range.clone(), part);
            }
        });
    }
    let knowledge = parts.iter().map(|(_, filled, _)| filled.knowledge).max().unwrap_or_default();
    let mut parts: Vec<Part> = parts.into_iter().map(|(_, _, part)| part).collect();
    if knowledge == SequenceKnowledge::VarlenBounds {
        use_attention_for_bounds(&mut parts, width);
    }
    let (dp_size, stages) = layout(&slots);
    let lengths_known = parts.iter().any(|p| p.cells.seq.known.contains(&true));
    let placed = job.workers.iter().zip(&slots).map(|(w, slot)| (w, slot.stage));
    let Order { schedule, chunk_shares, unknown_placement } = super::pipeline_order::schedule(placed, stages);
    Frame { steps, slots, stages, dp_size, knowledge, lengths_known, schedule, chunk_shares, unknown_placement, parts }
}

/// [`Job::steps`], each core reading the steps of a range of the workers (a read of every
/// worker-step, a tenth of the table's making when it was done on one core).
fn steps(job: &Job) -> Vec<u64> {
    let min_workers = par::min_rows(job.workers.first().map_or(0, |w| w.steps.len()));
    let per_part = par::parts(job.workers.len(), min_workers, |r| steps_of(job.workers.get(r).unwrap_or_default()));
    per_part.into_iter().reduce(|a, b| steps_union(a, &b)).unwrap_or_default()
}

/// Worker `w`'s steps among `first..=last`: one stretch of them, as they are sorted (the model's
/// invariant).
fn stretch(w: &Worker, first: u64, last: u64) -> &[WorkerStep] {
    let from = w.steps.partition_point(|s| s.step < first);
    w.steps.get(from..w.steps.partition_point(|s| s.step <= last)).unwrap_or_default()
}

/// The first and last of `steps[range]`.
fn bounds(steps: &[u64], range: Range<usize>) -> Option<(u64, u64)> {
    Some((*steps.get(range.start)?, *steps.get(range.end.checked_sub(1)?)?))
}

/// A block of a part's cells: its rows `first_row..first_row + rows` (steps, counted from the
/// part's first) of workers `first_worker..first_worker + workers`.
#[derive(Clone, Copy, Debug)]
struct Block {
    first_row: usize,
    rows: usize,
    first_worker: usize,
    workers: usize,
}

impl Block {
    /// Where the block's cells of its row `t` start in the part's (`width` cells a row).
    fn row_start(&self, t: usize, width: usize) -> usize {
        (self.first_row + t) * width + self.first_worker
    }
}

/// What is done with each cell of a part's blocks ([`each_block`]).
trait BlockVisitor<'a> {
    /// Worker `j` of the block (counted from its first) has the step of the block's row `t`;
    /// false stops the visit.
    fn cell(&mut self, block: &Block, t: usize, j: usize, worker: &'a Worker, step: &'a WorkerStep) -> bool;
    /// Every cell of the block was visited.
    fn done(&mut self, block: &Block);
}

/// Visits the cells of `steps[range]` that the workers have, block after block, until the
/// visitor says stop. The model holds each worker's steps one after another, the table each
/// step's workers: a transpose. Made a tile of steps and a block of workers at a time, worker by
/// worker, each worker's steps are read in memory order, and the block's cells fit in the cache
/// until the visitor writes them out, a run of consecutive cells per column and step (cell by
/// cell, each to a row of its own, the writes went to a different page of memory each time).
fn each_block<'a>(job: &'a Job, steps: &[u64], range: Range<usize>, visitor: &mut impl BlockVisitor<'a>) {
    let Some((first, last)) = bounds(steps, range.clone()) else { return };
    let mut stretches: Vec<&[WorkerStep]> = job.workers.iter().map(|w| stretch(w, first, last)).collect();
    for (tile_index, tile) in steps.get(range).unwrap_or_default().chunks(TILE).enumerate() {
        let blocks = job.workers.chunks(BLOCK).zip(stretches.chunks_mut(BLOCK));
        for (block_index, (workers, block_stretches)) in blocks.enumerate() {
            let block = Block {
                first_row: tile_index * TILE,
                rows: tile.len(),
                first_worker: block_index * BLOCK,
                workers: workers.len(),
            };
            for (j, (worker, rest)) in workers.iter().zip(block_stretches.iter_mut()).enumerate() {
                for (t, step) in tile.iter().enumerate() {
                    while rest.first().is_some_and(|s| s.step < *step) {
                        *rest = rest.get(1..).unwrap_or_default();
                    }
                    let Some(s) = rest.first().filter(|s| s.step == *step) else { continue };
                    *rest = rest.get(1..).unwrap_or_default();
                    if !visitor.cell(&block, t, j, worker, s) {
                        return;
                    }
                }
            }
            visitor.done(&block);
        }
    }
}

/// Steps whose cells are made together (see [`each_block`]): each worker's steps are read in
/// runs this long. The memory's prefetching starts over at each run, and runs of 32 steps (7 KiB
/// of the model) made reading the cells markedly slower at 4096 workers × 1000 steps (the
/// figures, from timers not kept, are in the notes on #5).
const TILE: usize = 128;

/// Workers whose cells are made together (see [`each_block`]): a block's cells, with one
/// micro-batch each, take about 800 KiB, which stay in a core's cache until they are written.
const BLOCK: usize = 32;

/// Where each cell's micro-batches go in its part's micro-batch columns, in cell order (the
/// order the diagnosis reads them in): one after another, counted first.
fn place_micro_batches(job: &Job, steps: &[u64], range: Range<usize>, cells: &mut CellColumns) {
    /// Each cell's count, written where the next cell's start goes.
    struct Counts<'c> {
        bounds: &'c mut [u32],
        width: usize,
    }
    impl BlockVisitor<'_> for Counts<'_> {
        fn cell(&mut self, block: &Block, t: usize, j: usize, _: &Worker, s: &WorkerStep) -> bool {
            let i = block.row_start(t, self.width) + j;
            put(self.bounds, i + 1, u32::try_from(s.micro_batches.len()).unwrap_or(u32::MAX));
            true
        }
        fn done(&mut self, _: &Block) {}
    }
    cells.micro_batch_start.fill(0);
    each_block(job, steps, range, &mut Counts { bounds: &mut cells.micro_batch_start, width: job.workers.len() });
    counts_to_starts(&mut cells.micro_batch_start);
}

/// Each cell's micro-batch count, written where the next cell's start goes (the first entry
/// 0), turned into the starts.
fn counts_to_starts(bounds: &mut [u32]) {
    let mut next = 0u32;
    for bound in bounds {
        next = next.saturating_add(*bound);
        *bound = next;
    }
}

/// Places the micro-batches as [`place_micro_batches`] would if every worker has every step of
/// `steps[range]`, each with as many micro-batches as its first: what most jobs are, read from
/// one step per worker instead of every cell (a pass over the whole model, a fifth of the
/// table's making at 4096 workers × 1000 steps). False, with nothing placed, when a worker lacks
/// a step; [`fill`] stops at a step whose count differs.
fn place_micro_batches_alike(job: &Job, steps: &[u64], range: Range<usize>, cells: &mut CellColumns) -> bool {
    let Some((first, last)) = bounds(steps, range.clone()) else { return false };
    let mut counts: Vec<u32> = Vec::with_capacity(job.workers.len());
    for w in &job.workers {
        let stretch = stretch(w, first, last);
        // Distinct steps among the range's: as many as it has means all of them.
        match stretch.first() {
            Some(s) if stretch.len() == range.len() => {
                counts.push(u32::try_from(s.micro_batches.len()).unwrap_or(u32::MAX))
            }
            _ => return false,
        }
    }
    put(&mut cells.micro_batch_start, 0, 0);
    // Row after row of the part, each cell its worker's count.
    for (bound, &count) in cells.micro_batch_start.iter_mut().skip(1).zip(counts.iter().cycle()) {
        *bound = count;
    }
    counts_to_starts(&mut cells.micro_batch_start);
    true
}

/// What [`fill`] found.
#[derive(Clone, Copy, Debug, Default)]
struct Filled {
    /// The best among the cells.
    knowledge: SequenceKnowledge,
    /// Every cell had as many micro-batches as the place it was given.
    placed: bool,
}

/// Writes into `part` the cells of `steps[range]` (`steps` being all the job's, sorted), and
/// their micro-batches where they were placed; stops, not `placed`, at the first cell with more
/// or fewer micro-batches than its place (mostly within the first tile of steps).
fn fill(job: &Job, steps: &[u64], range: Range<usize>, part: &mut Part) -> Filled {
    let mut staged = Staged {
        part,
        width: job.workers.len(),
        cells: vec![CellEntry::default(); TILE * BLOCK],
        micro_batches: vec![Vec::new(); TILE],
        filled: Filled { knowledge: SequenceKnowledge::default(), placed: true },
    };
    each_block(job, steps, range, &mut staged);
    staged.filled
}

/// A block's cells and micro-batches as [`fill`] reads them, each row's written out together.
struct Staged<'p> {
    part: &'p mut Part,
    width: usize,
    /// Row by row, [`BLOCK`] a row.
    cells: Vec<CellEntry>,
    /// Per row, its cells' micro-batches in worker order.
    micro_batches: Vec<Vec<MicroBatchEntry>>,
    filled: Filled,
}

impl<'a> BlockVisitor<'a> for Staged<'_> {
    fn cell(&mut self, block: &Block, t: usize, j: usize, worker: &'a Worker, s: &'a WorkerStep) -> bool {
        let i = block.row_start(t, self.width) + j;
        let bounds = &self.part.cells.micro_batch_start;
        let start = bounds.get(i).copied().unwrap_or(0);
        let end = bounds.get(i + 1).copied().unwrap_or(start);
        let own = worker.micro_batches_of(s);
        self.filled.placed = own.len() == end.saturating_sub(start) as usize;
        if !self.filled.placed {
            return false;
        }
        self.filled.knowledge = self.filled.knowledge.max(s.sequences.knowledge);
        if let Some(row) = self.micro_batches.get_mut(t) {
            row.extend(own.iter().map(MicroBatchEntry::of));
        }
        if let Some(cell) = self.cells.get_mut(t * BLOCK + j) {
            *cell = CellEntry::of(worker, s);
        }
        true
    }

    /// Writes the block's rows out, and clears them for the next block. An absent cell is
    /// written as [`CellColumns::zero`] leaves it, and has no micro-batches (its place has
    /// none), so each row's micro-batches are one run.
    fn done(&mut self, block: &Block) {
        for t in 0..block.rows {
            let start = block.row_start(t, self.width);
            let row = self.cells.get_mut(t * BLOCK..t * BLOCK + block.workers).unwrap_or_default();
            self.part.cells.put_run(start, row);
            row.fill(CellEntry::default());
            let first = self.part.cells.micro_batch_start.get(start).copied().unwrap_or(0) as usize;
            if let Some(micro_batches) = self.micro_batches.get_mut(t) {
                self.part.micro_batches.put_run(first, micro_batches);
                micro_batches.clear();
            }
        }
    }
}

/// With only varlen bounds, a shard's attention cost is best known from its measured attention
/// time. Put it in Σ L² units, calibrated per worker (its total estimate over its total
/// attention time), so a slow worker's or a heavy stage's slowness is not read as heavier data.
fn use_attention_for_bounds(parts: &mut [Part], width: usize) {
    let worker_of = |i: usize| if width == 0 { 0 } else { i % width };
    // Per worker, its steps' estimates and attention times, summed in step order.
    let (mut sq, mut attn) = (vec![0.0; width], vec![0.0; width]);
    for part in parts.iter() {
        let c = &part.cells;
        let cells = c.present.iter().zip(&c.seq.known).zip(c.seq.sum_sq.iter().zip(&c.attention));
        for (i, ((&present, &known), (&s, &a))) in cells.enumerate() {
            if present && known && a > 0 {
                let w = worker_of(i);
                sq.get_mut(w).into_iter().for_each(|x| *x += s);
                attn.get_mut(w).into_iter().for_each(|x| *x += a as f64);
            }
        }
    }
    let scale: Vec<Option<f64>> = sq.iter().zip(&attn).map(|(&s, &a)| (a > 0.0).then(|| s / a)).collect();
    for part in parts.iter_mut() {
        let (cells, micro_batches) = (&mut part.cells, &mut part.micro_batches);
        cells.seq.quadratic.clone_from(&cells.seq.sum_sq);
        micro_batches.seq.quadratic.clone_from(&micro_batches.seq.sum_sq);
        let mb = &mut micro_batches.seq;
        let each = cells.present.iter().zip(cells.attention.iter().zip(cells.micro_batch_start.windows(2)));
        for (i, (&present, (&a, ends))) in each.enumerate() {
            let Some(scale) = scale.get(worker_of(i)).copied().flatten().filter(|_| present) else { continue };
            if cells.seq.known.get(i).copied().unwrap_or(false)
                && a > 0
                && let Some(q) = cells.seq.quadratic.get_mut(i)
            {
                *q = a as f64 * scale;
            }
            let [start, end] = [ends.first(), ends.last()].map(|e| e.copied().unwrap_or(0));
            for m in span(start, end) {
                let attention = micro_batches.attention.get(m).and_then(|t| t.get()).filter(|a| *a > 0);
                if let (true, Some(a), Some(q)) =
                    (mb.known.get(m).copied().unwrap_or(false), attention, mb.quadratic.get_mut(m))
                {
                    *q = a as f64 * scale;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Coords;

    #[test]
    fn layout_from_coordinates_or_rank_order() {
        let w = |rank, dp, pp| Worker {
            rank,
            coords: Coords { dp, pp, ..Coords::default() },
            steps: vec![WorkerStep { step: 1, duration: 10, ..WorkerStep::default() }],
            ..Worker::default()
        };
        let job =
            Job { workers: vec![w(0, Some(0), Some(2)), w(1, Some(3), Some(5)), w(2, None, None), w(3, None, None)] };
        let f = build(&job);
        let layout: Vec<(usize, usize)> = f.slots.iter().map(|s| (s.dp, s.stage)).collect();
        assert_eq!(layout, vec![(0, 0), (1, 1), (0, 0), (1, 0)]);
        assert_eq!((f.stages, f.dp_size, f.steps.clone()), (2, 2, vec![1]));
        assert_eq!(f.cell(0, 3).map(|c| c.duration), Some(10));
        assert_eq!((f.cell(0, 4), f.cell(1, 0)), (None, None));
    }

    #[test]
    fn unknown_times_stay_apart_from_zero() {
        use crate::model::{KindTotals, MicroBatch, Sequences};
        // Transfer (at most the time in communication) and micro-batch attention: unknown, zero,
        // times (the extremes too), and the least time (which the table holds as the next one
        // up), one worker each.
        let step = |time: Option<Nanos>| {
            let sequences = Sequences { attention: time, ..Sequences::default() };
            let micro_batches = vec![MicroBatch { sequences, ..MicroBatch::default() }];
            let mut totals = KindTotals::default();
            totals.add(SpanKind::Communication, 100);
            (WorkerStep { step: 1, duration: 100, totals, transfer: time, ..WorkerStep::default() }, micro_batches, [])
        };
        let times = [None, Some(0), Some(7), Some(-5), Some(-1), Some(Nanos::MAX), Some(Nanos::MIN)];
        let workers =
            times.iter().zip(0..).map(|(&t, rank)| Worker { rank, ..Worker::default() }.with_steps([step(t)]));
        let f = build(&Job { workers: workers.collect() });
        let seen: Vec<(Option<Nanos>, Vec<Option<Nanos>>)> = (0..times.len())
            .filter_map(|w| f.cell(0, w))
            .map(|c| (c.transfer, f.micro_batches_of(&c).map(|m| m.attention).collect()))
            .collect();
        let held = |t: Option<Nanos>| t.map(|t| t.max(Nanos::MIN + 1));
        let expected: Vec<(Option<Nanos>, Vec<Option<Nanos>>)> =
            times.iter().map(|&t| (held(t).map(|t| t.min(100)), vec![held(t)])).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn cells_find_their_rows_whatever_steps_each_worker_has() {
        use crate::model::MicroBatch;
        // Worker 0 has steps 1–3, worker 1 steps 2, 4 and 5 (a gap); micro-batch forward times
        // say which worker-step each came from.
        let step = |step: u64, tag: i64| {
            let micro_batches = vec![MicroBatch { forward: tag, ..MicroBatch::default() }; 2];
            (WorkerStep { step, duration: tag, ..WorkerStep::default() }, micro_batches, [])
        };
        let job = Job {
            workers: vec![
                Worker { rank: 0, ..Worker::default() }.with_steps([step(1, 10), step(2, 20), step(3, 30)]),
                Worker { rank: 1, ..Worker::default() }.with_steps([step(2, 21), step(4, 41), step(5, 51)]),
            ],
        };
        let f = build(&job);
        assert_eq!(f.steps, [1, 2, 3, 4, 5]);
        // Per row and worker: (duration, micro-batch forward times).
        type Seen = Option<(i64, Vec<i64>)>;
        let table: Vec<Vec<Seen>> = (0..5)
            .map(|si| {
                (0..2)
                    .map(|wi| f.cell(si, wi).map(|c| (c.duration, f.micro_batches_of(&c).map(|m| m.forward).collect())))
                    .collect()
            })
            .collect();
        let cell = |tag| Some((tag, vec![tag, tag]));
        assert_eq!(
            table,
            [
                vec![cell(10), None],
                vec![cell(20), cell(21)],
                vec![cell(30), None],
                vec![None, cell(41)],
                vec![None, cell(51)],
            ]
        );
        assert_eq!(f.cells().map(|c| c.duration).collect::<Vec<_>>(), [10, 20, 21, 30, 41, 51]);
    }

    #[test]
    fn tiles_of_steps_keep_every_cell_and_its_micro_batches_in_place() {
        // More steps than a tile and more workers than a block (the last block not full), with
        // 0–2 micro-batches a step: each worker missing different steps; every worker with every
        // step, as many micro-batches in each as in its first (placed from the first steps
        // alone); and the same, but not as many (placed from the first steps, found wrong, then
        // counted).
        // (case, whether worker w has step s, its micro-batches in it)
        let cases: [(&str, Has, Count); 3] = [
            ("gaps", |w, s| s % (w + 2) != 1, |_, s| s % 3),
            ("alike", |_, _| true, |w, _| w % 3),
            ("not alike", |_, _| true, |w, s| (w + s / 7) % 3),
        ];
        for (case, has, count) in cases {
            check_cells_and_micro_batches(case, has, count);
        }
    }

    /// Whether worker `w` has step `s`.
    type Has = fn(u64, u64) -> bool;
    /// How many micro-batches worker `w` has in step `s`.
    type Count = fn(u64, u64) -> u64;

    fn check_cells_and_micro_batches(case: &str, has: Has, count: Count) {
        use crate::model::MicroBatch;
        let steps = 3 * TILE as u64 + 5;
        let workers = BLOCK as u64 + 3;
        let tag = |w: u64, s: u64| (w * 1000 + s) as i64;
        let job = Job {
            workers: (0..workers)
                .map(|w| {
                    Worker { rank: w as u32, ..Worker::default() }.with_steps((0..steps).filter(|&s| has(w, s)).map(
                        |s| {
                            let micro_batches: Vec<MicroBatch> = (0..count(w, s))
                                .map(|m| MicroBatch { forward: tag(w, s) * 10 + m as i64, ..MicroBatch::default() })
                                .collect();
                            (WorkerStep { step: s, duration: tag(w, s), ..WorkerStep::default() }, micro_batches, [])
                        },
                    ))
                })
                .collect(),
        };
        let f = build(&job);
        let union: Vec<u64> = (0..steps).filter(|&s| (0..workers).any(|w| has(w, s))).collect();
        assert!(union.len() > 2 * TILE, "{case}");
        assert_eq!(f.steps, union, "{case}");
        let mut in_order = Vec::new();
        for (si, &s) in union.iter().enumerate() {
            for w in 0..workers {
                let cell = f.cell(si, w as usize);
                assert_eq!(cell.map(|c| c.duration), has(w, s).then(|| tag(w, s)), "{case}: step {s} worker {w}");
                let forwards: Vec<i64> = cell.iter().flat_map(|c| f.micro_batches_of(c)).map(|m| m.forward).collect();
                let expected: Vec<i64> =
                    if has(w, s) { (0..count(w, s)).map(|m| tag(w, s) * 10 + m as i64).collect() } else { Vec::new() };
                assert_eq!(forwards, expected, "{case}: step {s} worker {w}");
                // The same through the row's view of its part's micro-batches.
                let row = f.row(si);
                let span = row.micro_batch_span(w as usize);
                assert_eq!(
                    row.part_micro_batches.forward.get(span),
                    Some(&expected[..]),
                    "{case}: step {s} worker {w}"
                );
                in_order.extend(expected);
            }
        }
        // Micro-batches sit in the table's columns in cell order, and nothing else does.
        let all: Vec<i64> = f.parts.iter().flat_map(|p| p.micro_batches.forward.iter().copied()).collect();
        assert_eq!(all, in_order, "{case}");
    }

    #[test]
    fn varlen_bounds_cost_shards_by_their_attention_time_per_worker() {
        use crate::model::MicroBatch;
        // Two workers, two steps each, known only by varlen bounds; worker 1 has no attention
        // time, so its estimates stay Σ L².
        let step = |step: u64, attention: Option<i64>, tokens: u64| {
            let mut sequences = Sequences::from_bounds(2, tokens, tokens as u32);
            sequences.attention = attention;
            let micro_batches = [MicroBatch { sequences: sequences.clone(), ..MicroBatch::default() }];
            (WorkerStep { step, sequences, ..WorkerStep::default() }, micro_batches, [])
        };
        let job = Job {
            workers: vec![
                Worker { rank: 0, ..Worker::default() }.with_steps([step(1, Some(10), 100), step(2, Some(30), 300)]),
                Worker { rank: 1, ..Worker::default() }.with_steps([step(1, None, 100), step(2, None, 300)]),
            ],
        };
        let f = build(&job);
        assert_eq!(f.knowledge, SequenceKnowledge::VarlenBounds);
        let quadratic = |si, wi| {
            let c = f.cell(si, wi).unwrap();
            (c.seq.quadratic, f.micro_batches_of(&c).map(|m| m.seq.quadratic).collect::<Vec<_>>())
        };
        let estimate = |tokens: u64| Sequences::from_bounds(2, tokens, tokens as u32).sum_sq_estimate();
        let scale = (estimate(100) + estimate(300)) / 40.0;
        assert_eq!(quadratic(0, 0), (10.0 * scale, vec![10.0 * scale]));
        assert_eq!(quadratic(1, 0), (30.0 * scale, vec![30.0 * scale]));
        assert_eq!(quadratic(1, 1), (estimate(300), vec![estimate(300)]));
    }
}

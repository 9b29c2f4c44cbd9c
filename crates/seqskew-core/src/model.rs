//! The one job model. Every importer produces it; every analysis and view reads it.
//!
//! It keeps only what the diagnosis and the views need: per worker and step a coarse,
//! non-overlapping timeline, exact time totals per kind, micro-batches where the input names
//! them, the collectives (for transfer-versus-wait), and what is known of the sequences.
//! All times are integer nanoseconds on one clock per job (importers align the ranks).

use serde::{Deserialize, Serialize};

/// Integer nanoseconds. Times are never floats inside the model.
pub type Nanos = i64;

/// A whole training job: every worker seen in every imported file, sorted by rank.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub workers: Vec<Worker>,
}

/// One rank's process (a GPU, or a CPU process in CPU-only jobs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    /// Global rank. Unique within a job.
    pub rank: u32,
    pub coords: Coords,
    pub host: Option<String>,
    /// How many ranks the whole job had, where the worker's input says (Kineto's
    /// `distributedInfo.world_size`, a step log's `world_size`): the ranks not loaded are then
    /// known to be missing.
    #[serde(default)]
    pub world_size: Option<u32>,
    /// The ranks of its pipeline, in stage order, where its input names them but not its stage
    /// (a Kineto trace's send/recv calls record their process group's ranks): the job's
    /// assembly makes its place in them the worker's pipeline stage. Empty when unknown.
    #[serde(default)]
    pub pipeline_group: Vec<u32>,
    /// Name of the file this worker came from (for messages and the report).
    pub source: String,
    /// Sorted by step number, one entry per step.
    pub steps: Vec<WorkerStep>,
    /// The steps' micro-batches, each step's after the last one's (see
    /// [`Worker::micro_batches_of`]). Kept together rather than a list per step, so that
    /// reading every step's reads memory in order: at 4096 workers × 1000 steps, lists of
    /// their own were a chain of cache misses that took most of the time to build the
    /// analysis table.
    pub micro_batches: Vec<MicroBatch>,
    /// The steps' collective calls, likewise (see [`Worker::collectives_of`]).
    pub collectives: Vec<Collective>,
    /// The pipeline stages this worker ran as model chunks under an interleaved schedule, sorted
    /// by stage, with the compute of each over all its steps (rank r of P holds stages r,
    /// r + P, …: Megatron-LM's virtual pipeline, `torch.distributed.pipelining`'s
    /// `ScheduleInterleaved1F1B`). Empty when its input names at most one stage per worker.
    #[serde(default)]
    pub model_chunks: Vec<ModelChunk>,
}

/// One model chunk of a worker under an interleaved pipeline schedule ([`Worker::model_chunks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChunk {
    /// The pipeline stage it is, as the schedule numbers them (across all ranks).
    pub stage: u32,
    /// Its forward and backward compute, summed over the worker's steps.
    pub forward: Nanos,
    pub backward: Nanos,
}

impl Worker {
    /// Whether any of its steps has a time other than `other` (compute, communication,
    /// stalls…): a trace or a step log with per-rank times, not a record of lengths and the
    /// job's step time only.
    pub fn has_breakdown(&self) -> bool {
        self.micro_batches.iter().any(|m| m.compute() > 0)
            || self.steps.iter().any(|s| s.totals.sum() != s.totals.get(SpanKind::Other))
    }

    /// Appends a step (after the worker's others), with its micro-batches and collectives.
    /// Where its micro-batches' lists hold all of the step's documents, the step keeps only
    /// their totals: each document is in the model once (kept twice, the lengths were about half of a
    /// step log's model). [`Worker::step_documents`] gathers them back.
    pub fn push_step(
        &mut self,
        mut step: WorkerStep,
        micro_batches: impl IntoIterator<Item = MicroBatch>,
        collectives: impl IntoIterator<Item = Collective>,
    ) {
        step.micro_batches = Run::extending(&mut self.micro_batches, micro_batches);
        step.collectives = Run::extending(&mut self.collectives, collectives);
        let own = &step.sequences;
        let held = step.micro_batches.of(&self.micro_batches);
        let sum = |f: fn(&Sequences) -> u64| held.iter().map(|m| f(&m.sequences)).fold(0, u64::saturating_add);
        if !own.lengths.is_empty()
            && held.iter().all(|m| !m.sequences.lengths.is_empty())
            && sum(|q| q.lengths.len() as u64) == own.lengths.len() as u64
            && sum(|q| q.tokens) == own.tokens
        {
            step.sequences.lengths = Vec::new();
        }
        self.steps.push(step);
    }

    /// A step's documents' lengths, sorted descending: its own list, or where its micro-batches
    /// hold them (see [`Worker::push_step`]), theirs together. Empty where they are not known
    /// one by one (bounds only, or nothing).
    pub fn step_documents(&self, step: &WorkerStep) -> Vec<u32> {
        if !step.sequences.lengths.is_empty() || step.sequences.knowledge < SequenceKnowledge::DenseShapes {
            return step.sequences.lengths.clone();
        }
        let held = self.micro_batches_of(step);
        let mut all = Vec::with_capacity(held.iter().map(|m| m.sequences.lengths.len()).sum());
        held.iter().for_each(|m| all.extend_from_slice(&m.sequences.lengths));
        all.sort_unstable_by(|a, b| b.cmp(a));
        all
    }

    /// The worker with these steps appended, each with its micro-batches and collectives. Its
    /// lists are sized for them first: grown by doubling, they kept a quarter of slack in the
    /// model.
    pub fn with_steps<M, C>(mut self, steps: impl IntoIterator<Item = (WorkerStep, M, C)>) -> Worker
    where
        M: IntoIterator<Item = MicroBatch, IntoIter: ExactSizeIterator>,
        C: IntoIterator<Item = Collective, IntoIter: ExactSizeIterator>,
    {
        let steps: Vec<_> = steps.into_iter().map(|(s, m, c)| (s, m.into_iter(), c.into_iter())).collect();
        self.steps.reserve_exact(steps.len());
        self.micro_batches.reserve_exact(steps.iter().map(|(_, m, _)| m.len()).sum());
        self.collectives.reserve_exact(steps.iter().map(|(_, _, c)| c.len()).sum());
        for (step, micro_batches, collectives) in steps {
            self.push_step(step, micro_batches, collectives);
        }
        self
    }

    /// A step's micro-batches, sorted by id (empty when the input does not name them).
    pub fn micro_batches_of(&self, step: &WorkerStep) -> &[MicroBatch] {
        step.micro_batches.of(&self.micro_batches)
    }

    /// A step's collective calls, in the order this worker issued them.
    pub fn collectives_of(&self, step: &WorkerStep) -> &[Collective] {
        step.collectives.of(&self.collectives)
    }

    /// Time in a step's pipeline send/recv calls, summed over the calls: waiting for the
    /// neighbouring stage, which the replay schedules, rather than a collective of the
    /// data-parallel group.
    pub fn p2p_time(&self, step: &WorkerStep) -> Nanos {
        self.collectives_of(step)
            .iter()
            .filter(|c| c.op.is_point_to_point())
            .fold(0, |sum: Nanos, c| sum.saturating_add(c.end.saturating_sub(c.start)))
    }
}

/// Where a step's items are in one of its worker's lists ([`Worker::micro_batches`],
/// [`Worker::collectives`]): entries `start..end`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub start: u32,
    pub end: u32,
}

impl Run {
    /// Appends `items` to `list`; where they went.
    pub fn extending<T>(list: &mut Vec<T>, items: impl IntoIterator<Item = T>) -> Run {
        let index = |len: usize| u32::try_from(len).unwrap_or(u32::MAX);
        let start = index(list.len());
        list.extend(items);
        Run { start, end: index(list.len()) }
    }

    pub fn len(self) -> usize {
        self.end.saturating_sub(self.start) as usize
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The run's entries of `list` (none where out of bounds).
    pub fn of<T>(self, list: &[T]) -> &[T] {
        list.get(self.start as usize..self.end.max(self.start) as usize).unwrap_or_default()
    }
}

/// Parallelism coordinates, where the input told them. `None` means unknown, not zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Coords {
    pub dp: Option<u32>,
    pub pp: Option<u32>,
    pub tp: Option<u32>,
    pub cp: Option<u32>,
}

/// One worker's share of one training step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerStep {
    /// The training step number as the input names it (e.g. `ProfilerStep#N`).
    pub step: u64,
    pub start: Nanos,
    pub duration: Nanos,
    /// Coarse timeline: sorted by start, non-overlapping, inside `[start, start+duration]`.
    /// Tiny pieces are merged into their neighbours, so use `totals` for exact sums.
    pub spans: Vec<Span>,
    /// Exact time per kind inside the step; the kinds partition the step's wall time.
    pub totals: KindTotals,
    /// Its micro-batches in [`Worker::micro_batches`] ([`Worker::micro_batches_of`]).
    pub micro_batches: Run,
    /// Its collective calls in [`Worker::collectives`] ([`Worker::collectives_of`]).
    pub collectives: Run,
    /// Of the time in collectives, how much was transfer rather than waiting for the last
    /// participant, when known (measured across workers when the job is assembled, or read
    /// from a step log's `transfer_s`).
    pub transfer: Option<Nanos>,
    pub sequences: Sequences,
}

/// What a stretch of a worker's time was spent on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// Non-attention compute (GEMMs, norms, ...).
    Compute,
    /// Attention compute: the part whose cost grows with L².
    Attention,
    /// Inside a collective or point-to-point transfer, not overlapped by compute. The analysis
    /// splits it into transfer and waiting across the group.
    Communication,
    /// Waiting in a collective, where the input itself says so.
    CollectiveWait,
    /// Nothing ran: host-side stalls (GC, Python, launch-bound) and idling.
    HostStall,
    Optimizer,
    DataLoading,
    Other,
}

impl SpanKind {
    pub const ALL: [SpanKind; 8] = [
        SpanKind::Compute,
        SpanKind::Attention,
        SpanKind::Communication,
        SpanKind::CollectiveWait,
        SpanKind::HostStall,
        SpanKind::Optimizer,
        SpanKind::DataLoading,
        SpanKind::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Compute => "compute",
            SpanKind::Attention => "attention",
            SpanKind::Communication => "communication",
            SpanKind::CollectiveWait => "collective_wait",
            SpanKind::HostStall => "host_stall",
            SpanKind::Optimizer => "optimizer",
            SpanKind::DataLoading => "data_loading",
            SpanKind::Other => "other",
        }
    }

    /// Work a worker does itself (as opposed to waiting for others or for nothing).
    pub fn is_compute(self) -> bool {
        matches!(self, SpanKind::Compute | SpanKind::Attention | SpanKind::Optimizer)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A piece of the coarse timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub start: Nanos,
    pub duration: Nanos,
    pub kind: SpanKind,
    /// Whether it is a micro-batch's ([`Span::micro_batch`]): a flag and an id, not an
    /// `Option<u32>`, whose eight bytes made a span 32 bytes rather than 24 (spans are the
    /// largest part of a step's model).
    in_micro_batch: bool,
    micro_batch_id: u32,
}

impl Span {
    pub fn new(start: Nanos, duration: Nanos, kind: SpanKind, micro_batch: Option<u32>) -> Span {
        Span { start, duration, kind, in_micro_batch: micro_batch.is_some(), micro_batch_id: micro_batch.unwrap_or(0) }
    }

    pub fn end(&self) -> Nanos {
        self.start.saturating_add(self.duration)
    }

    /// The micro-batch whose compute it is, where the input says.
    pub fn micro_batch(&self) -> Option<u32> {
        self.in_micro_batch.then_some(self.micro_batch_id)
    }
}

/// Exact nanoseconds per [`SpanKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindTotals([Nanos; 8]);

impl KindTotals {
    pub fn get(&self, kind: SpanKind) -> Nanos {
        self.0.get(kind.index()).copied().unwrap_or(0)
    }

    pub fn add(&mut self, kind: SpanKind, ns: Nanos) {
        if let Some(slot) = self.0.get_mut(kind.index()) {
            *slot = slot.saturating_add(ns);
        }
    }

    /// Compute, attention and optimizer time: the work the worker did itself.
    pub fn busy_compute(&self) -> Nanos {
        SpanKind::ALL.iter().filter(|k| k.is_compute()).map(|&k| self.get(k)).fold(0, Nanos::saturating_add)
    }

    /// Time inside communication, whether transferring or waiting.
    pub fn communication(&self) -> Nanos {
        self.get(SpanKind::Communication) + self.get(SpanKind::CollectiveWait)
    }

    pub fn sum(&self) -> Nanos {
        self.0.iter().fold(0, |a, &b| a.saturating_add(b))
    }
}

/// A micro-batch, where the input names micro-batches (merged traces, step logs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MicroBatch {
    pub id: u32,
    /// Start of its first compute, when known.
    pub start: Option<Nanos>,
    /// Compute of its forward and backward passes (on the CPU, the time each held its thread,
    /// waits for its input excluded).
    pub forward: Nanos,
    pub backward: Nanos,
    /// Time each pass (forward, backward) held its stage's thread in the point-to-point sends
    /// and receives its schedule ran for it apart from the pass (the pipelining runtime's
    /// `SEND_F`/`RECV_B` actions), their waits for the peer excluded: a CPU backend (gloo)
    /// copies on the training thread, so the next pass starts only after it. (Calls inside the
    /// pass's own annotation are its forward's or backward's time.) Zero where transfers run
    /// beside compute (NCCL on its own stream) or the input does not show them.
    #[serde(default)]
    pub p2p: (Nanos, Nanos),
    pub sequences: Sequences,
}

impl MicroBatch {
    pub fn compute(&self) -> Nanos {
        self.forward.saturating_add(self.backward)
    }
}

/// One collective call (all-reduce, all-gather, send/recv ...) as one worker saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collective {
    pub start: Nanos,
    pub end: Nanos,
    pub op: CollectiveOp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveOp {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    Broadcast,
    Barrier,
    Send,
    Recv,
    Other,
}

impl CollectiveOp {
    /// Pipeline send/recv: a transfer between neighbouring stages, not a collective of a group.
    pub fn is_point_to_point(self) -> bool {
        matches!(self, CollectiveOp::Send | CollectiveOp::Recv)
    }
}

/// How much the input revealed about sequence lengths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SequenceKnowledge {
    /// Nothing: no attention shapes, no step log.
    #[default]
    Unknown,
    /// Only the bounds varlen attention calls give: tokens, count, max length.
    VarlenBounds,
    /// Per-call dense shapes `[B, S]`: each call is B sequences padded to S.
    DenseShapes,
    /// Every document's length (step logs, annotations).
    Exact,
}

impl SequenceKnowledge {
    /// The name the report and `seqskew inspect` give it (as serialised).
    pub fn name(self) -> &'static str {
        match self {
            SequenceKnowledge::Unknown => "unknown",
            SequenceKnowledge::VarlenBounds => "varlen_bounds",
            SequenceKnowledge::DenseShapes => "dense_shapes",
            SequenceKnowledge::Exact => "exact",
        }
    }
}

/// What is known of the sequences a worker (or micro-batch) processed in a step.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sequences {
    pub knowledge: SequenceKnowledge,
    /// One entry per document (exact, or the padded length for dense shapes); sorted
    /// descending. Empty when only bounds are known, and on a step whose micro-batches hold
    /// its documents ([`Worker::push_step`]).
    pub lengths: Vec<u32>,
    pub documents: u64,
    pub tokens: u64,
    pub max_len: u32,
    /// Σ L², exact when `lengths` is known; otherwise the bounds T²/n ≤ Σ L² ≤ max·T.
    pub sum_sq_low: u64,
    pub sum_sq_high: u64,
    /// Measured attention time (kernels or outermost attention ops), when the input has it.
    pub attention: Option<Nanos>,
}

impl Sequences {
    /// Sequences from exactly known (or padded) lengths.
    pub fn from_lengths(knowledge: SequenceKnowledge, mut lengths: Vec<u32>) -> Self {
        lengths.sort_unstable_by(|a, b| b.cmp(a));
        // The list stays in the model: not the slack of the list it was read into.
        lengths.shrink_to_fit();
        // Saturating: lengths come from input, and absurd ones must not wrap around.
        let tokens = lengths.iter().map(|&l| u64::from(l)).fold(0, u64::saturating_add);
        let sum_sq = lengths.iter().map(|&l| u64::from(l) * u64::from(l)).fold(0, u64::saturating_add);
        Sequences {
            knowledge,
            documents: lengths.len() as u64,
            tokens,
            max_len: lengths.first().copied().unwrap_or(0),
            sum_sq_low: sum_sq,
            sum_sq_high: sum_sq,
            lengths,
            attention: None,
        }
    }

    /// Sequences known only by varlen bounds: `tokens` in `documents` sequences, the longest `max_len`.
    pub fn from_bounds(documents: u64, tokens: u64, max_len: u32) -> Self {
        let (low, high) = varlen_sum_sq_bounds(documents, tokens, max_len);
        Sequences {
            knowledge: SequenceKnowledge::VarlenBounds,
            lengths: Vec::new(),
            documents,
            tokens,
            max_len,
            sum_sq_low: low,
            sum_sq_high: high,
            attention: None,
        }
    }

    pub fn is_known(&self) -> bool {
        self.knowledge != SequenceKnowledge::Unknown
    }

    /// Best point estimate of Σ L²: exact where known, the geometric mean of the bounds otherwise.
    pub fn sum_sq_estimate(&self) -> f64 {
        if self.sum_sq_low == self.sum_sq_high {
            return self.sum_sq_low as f64;
        }
        ((self.sum_sq_low as f64) * (self.sum_sq_high as f64)).sqrt()
    }

    /// The totals of `parts` (e.g. a step's micro-batches): the least of what they know, their
    /// documents, tokens, Σ L², longest document and attention, but not their lists of lengths.
    /// A step made of its micro-batches keeps only this: their documents stay in them, each
    /// once in the model (a list on the step too doubled a step log's model; see
    /// [`Worker::push_step`]).
    pub fn total_of<'a>(parts: impl IntoIterator<Item = &'a Sequences>) -> Sequences {
        let mut all = Sequences::default();
        for part in parts {
            all.add_counts(part);
        }
        all
    }

    /// Adds a part's knowledge, counts and attention (not its lengths); nothing for a part that
    /// knows nothing.
    fn add_counts(&mut self, other: &Sequences) {
        if !other.is_known() && other.attention.is_none() {
            return;
        }
        let was_empty = !self.is_known() && self.documents == 0;
        self.knowledge = if was_empty { other.knowledge } else { self.knowledge.min(other.knowledge) };
        self.documents = self.documents.saturating_add(other.documents);
        self.tokens = self.tokens.saturating_add(other.tokens);
        self.max_len = self.max_len.max(other.max_len);
        self.sum_sq_low = self.sum_sq_low.saturating_add(other.sum_sq_low);
        self.sum_sq_high = self.sum_sq_high.saturating_add(other.sum_sq_high);
        self.attention = match (self.attention, other.attention) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            (a, b) => a.or(b),
        };
    }
}

/// The distinct step numbers of these workers, sorted ([`Job::steps`]).
pub fn steps_of(workers: &[Worker]) -> Vec<u64> {
    // Each worker's steps are sorted and distinct (the invariant of `Worker::steps`), and
    // workers mostly have the same ones: merge each list in only when it differs from the
    // union so far, in one pass. (Sorting every worker-step's number was a tenth of the
    // diagnosis at 4096 workers × 1000 steps.)
    let mut steps: Vec<u64> = Vec::new();
    let mut numbers: Vec<u64> = Vec::new();
    for w in workers {
        numbers.clear();
        numbers.extend(w.steps.iter().map(|s| s.step));
        steps = steps_union(steps, &numbers);
    }
    steps
}

/// Two sorted lists of distinct step numbers as one (the first, when they are the same).
pub fn steps_union(a: Vec<u64>, b: &[u64]) -> Vec<u64> {
    if a == b {
        return a;
    }
    let mut steps = merged_sorted(&a, b);
    steps.dedup();
    steps
}

/// Two ascending lists as one, duplicates kept, in one pass. Unsorted input (which the model's
/// invariants rule out) is sorted rather than merged wrongly.
fn merged_sorted<T: Ord + Copy>(a: &[T], b: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    if !(a.is_sorted() && b.is_sorted()) {
        out.extend_from_slice(a);
        out.extend_from_slice(b);
        out.sort_unstable();
        return out;
    }
    let (mut a, mut b) = (a.iter().peekable(), b.iter().peekable());
    while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
        let side = if x <= y { &mut a } else { &mut b };
        out.extend(side.next());
    }
    out.extend(a);
    out.extend(b);
    out
}

/// For `n` sequences of `tokens` in total, none longer than `max_len`:
/// T²/n ≤ Σ L² (equal lengths) and Σ L² ≤ max·T (as many maximal ones as fit).
pub fn varlen_sum_sq_bounds(documents: u64, tokens: u64, max_len: u32) -> (u64, u64) {
    if documents == 0 || tokens == 0 {
        return (0, 0);
    }
    let low = u64::try_from(u128::from(tokens) * u128::from(tokens) / u128::from(documents)).unwrap_or(u64::MAX);
    let high = u64::from(max_len).saturating_mul(tokens).max(low);
    (low, high)
}

impl Job {
    /// How many ranks the job had, where its inputs say (the most any worker's input says).
    pub fn world_size(&self) -> Option<u32> {
        self.workers.iter().filter_map(|w| w.world_size).max()
    }

    /// The ranks below [`Job::world_size`] that no worker has, sorted.
    pub fn missing_ranks(&self) -> Vec<u32> {
        let Some(world) = self.world_size() else { return Vec::new() };
        let mut loaded: Vec<u32> = self.workers.iter().map(|w| w.rank).filter(|&r| r < world).collect();
        loaded.sort_unstable();
        loaded.dedup();
        let mut loaded = loaded.into_iter().peekable();
        (0..world).filter(|r| loaded.next_if_eq(r).is_none()).collect()
    }

    /// The distinct step numbers of its workers, sorted.
    pub fn steps(&self) -> Vec<u64> {
        steps_of(&self.workers)
    }

    /// Number of distinct values of a coordinate (1 when unknown).
    pub fn group_size(&self, coord: impl Fn(&Coords) -> Option<u32>) -> u32 {
        let mut values: Vec<u32> = self.workers.iter().filter_map(|w| coord(&w.coords)).collect();
        values.sort_unstable();
        values.dedup();
        (values.len() as u32).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varlen_bounds_bracket_the_truth() {
        // lengths 1000, 10, 10: T=1020, n=3, max=1000, Σ L² = 1_000_200
        let (low, high) = varlen_sum_sq_bounds(3, 1020, 1000);
        assert!(low <= 1_000_200 && 1_000_200 <= high, "{low} {high}");
        assert_eq!(varlen_sum_sq_bounds(0, 0, 0), (0, 0));
    }

    #[test]
    fn totals_keep_the_weakest_knowledge_and_no_list() {
        let exact = |l: &[u32]| Sequences::from_lengths(SequenceKnowledge::Exact, l.to_vec());
        let with_bounds = Sequences::total_of(&[exact(&[3, 5]), Sequences::from_bounds(2, 10, 8)]);
        assert_eq!(with_bounds.knowledge, SequenceKnowledge::VarlenBounds);
        assert_eq!((with_bounds.documents, with_bounds.tokens, with_bounds.max_len), (4, 18, 8));
        let exact_ones = Sequences::total_of(&[exact(&[2, 9]), exact(&[9, 1, 5, 12])]);
        let one_list = exact(&[2, 9, 9, 1, 5, 12]);
        assert_eq!(exact_ones, Sequences { lengths: Vec::new(), ..one_list });
        // A part that knows nothing adds nothing, but its attention time.
        let unknown_with_attention = Sequences { attention: Some(7), ..Sequences::default() };
        let parts = [unknown_with_attention, Sequences::default(), exact(&[6, 1])];
        let with_attention = Sequences::total_of(&parts);
        assert_eq!((with_attention.knowledge, with_attention.documents), (SequenceKnowledge::Exact, 2));
        assert_eq!((with_attention.sum_sq_low, with_attention.attention), (37, Some(7)));
        assert_eq!(Sequences::total_of(&[]), Sequences::default());
    }

    #[test]
    fn lists_merge_in_order_even_unsorted() {
        assert_eq!(merged_sorted(&[], &[2, 4]), [2, 4]);
        assert_eq!(merged_sorted(&[1, 3, 8], &[2, 3]), [1, 2, 3, 3, 8]);
        // Not the model's invariant (a hand-built or deserialised model), still sorted after.
        assert_eq!(merged_sorted(&[5, 1], &[3]), [1, 3, 5]);
    }

    #[test]
    fn a_step_finds_its_own_micro_batches_and_collectives() {
        let mb = |id| MicroBatch { id, ..MicroBatch::default() };
        let call = |start, end, op| Collective { start, end, op };
        let w = Worker::default().with_steps([
            (
                WorkerStep { step: 1, ..WorkerStep::default() },
                vec![mb(0), mb(1)],
                vec![call(0, 5, CollectiveOp::AllReduce)],
            ),
            (WorkerStep { step: 2, ..WorkerStep::default() }, vec![], vec![]),
            (
                WorkerStep { step: 3, ..WorkerStep::default() },
                vec![mb(7)],
                vec![
                    call(10, 14, CollectiveOp::Send),
                    call(20, 21, CollectiveOp::Barrier),
                    call(30, 39, CollectiveOp::Recv),
                ],
            ),
        ]);
        let ids = |s: &WorkerStep| w.micro_batches_of(s).iter().map(|m| m.id).collect::<Vec<_>>();
        let per_step: Vec<(Vec<u32>, usize, Nanos)> =
            w.steps.iter().map(|s| (ids(s), w.collectives_of(s).len(), w.p2p_time(s))).collect();
        assert_eq!(per_step, [(vec![0, 1], 1, 0), (vec![], 0, 0), (vec![7], 3, 4 + 9)]);
        // A run beyond its lists (a hand-made or corrupt model) is empty, not a panic.
        let stray = WorkerStep { micro_batches: Run { start: 2, end: 9 }, ..WorkerStep::default() };
        assert!(w.micro_batches_of(&stray).is_empty());
        assert_eq!(Run { start: 5, end: 3 }.len(), 0);
    }

    #[test]
    fn a_span_is_three_words_and_keeps_its_micro_batch() {
        // Spans are the largest part of a step's model (seqskew-bench model).
        assert_eq!(size_of::<Span>(), 24);
        let ids = [None, Some(0), Some(7), Some(u32::MAX)];
        let kept = ids.map(|m| Span::new(1, 2, SpanKind::Compute, m).micro_batch());
        assert_eq!(kept, ids);
    }

    #[test]
    fn a_steps_documents_are_kept_once_and_found_again() {
        let exact = |l: &[u32]| Sequences::from_lengths(SequenceKnowledge::Exact, l.to_vec());
        let mb = |id, l: &[u32]| MicroBatch { id, sequences: exact(l), ..MicroBatch::default() };
        let step = |number, l: &[u32]| WorkerStep { step: number, sequences: exact(l), ..WorkerStep::default() };
        let w = Worker::default().with_steps([
            // Its micro-batches hold all its documents: the step keeps their totals only.
            (step(1, &[5, 9, 2]), vec![mb(0, &[9]), mb(1, &[2, 5])], vec![]),
            // One micro-batch knows none: the step's own list is all there is of it.
            (step(2, &[5, 9]), vec![mb(0, &[9]), MicroBatch { id: 1, ..MicroBatch::default() }], vec![]),
            // Lists that are not the step's (another document): kept.
            (step(3, &[4, 4]), vec![mb(0, &[4]), mb(1, &[3])], vec![]),
            (step(4, &[7]), vec![], vec![]),
        ]);
        let kept: Vec<usize> = w.steps.iter().map(|s| s.sequences.lengths.len()).collect();
        assert_eq!(kept, [0, 2, 2, 1]);
        let found: Vec<Vec<u32>> = w.steps.iter().map(|s| w.step_documents(s)).collect();
        assert_eq!(found, [vec![9, 5, 2], vec![9, 5], vec![4, 4], vec![7]]);
        assert_eq!((w.steps[0].sequences.documents, w.steps[0].sequences.sum_sq_low), (3, 110));
        // Sized for its steps, not grown by doubling.
        assert_eq!((w.steps.capacity(), w.micro_batches.capacity()), (4, 6));
    }

    #[test]
    fn a_jobs_steps_are_the_union_of_its_workers() {
        let worker = |steps: &[u64]| Worker {
            steps: steps.iter().map(|&step| WorkerStep { step, ..WorkerStep::default() }).collect(),
            ..Worker::default()
        };
        let job = Job {
            workers: vec![worker(&[1, 2, 3]), worker(&[1, 2, 3]), worker(&[2, 4]), worker(&[]), worker(&[0, 3])],
        };
        assert_eq!(job.steps(), [0, 1, 2, 3, 4]);
        assert_eq!(Job::default().steps(), Vec::<u64>::new());
        // The workers split anywhere (as the analysis reads them, a range on each core), their
        // parts' steps united in order are the job's.
        for at in 0..=job.workers.len() {
            let (first, second) = job.workers.split_at(at);
            assert_eq!(steps_union(steps_of(first), &steps_of(second)), job.steps(), "split at {at}");
        }
    }
}

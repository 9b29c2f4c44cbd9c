//! PyTorch profiler (Kineto) traces: one file per rank.
//!
//! Steps come from `ProfilerStep#N` on the CPU. When the trace has GPU kernels, time is
//! accounted on the GPU (NCCL/RCCL kernels are communication, attention kernels attention,
//! the rest compute), each kernel belonging to the step that launched it; otherwise from CPU
//! ops on every thread, with collectives on side threads overlapping compute. Sequence
//! lengths come from the shapes of the outermost attention op of each call. Micro-batches come
//! from a pipeline schedule's annotations of its passes ([`pipeline_pass`]): a kernel is the
//! micro-batch of the pass that launched it, as it is the step's that launched it.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use super::blocked;
use super::events::{EventPlace, Interest, RawEvent, TraceBuilder};
use super::json;
use super::names::{
    NameCache, PipelinePass, collective_op, is_attention, is_backend_collective, is_backward, pipeline_pass,
    rank_from_file_name,
};
use super::numbers::{digits, leading_digits, list_of_u32, to_nanos, to_u64};
use super::parser::{vec_bytes, world_size_above_rank};
use super::timeline::{Piece, bucket, partition, union};
use super::trace_event::{RawArgs, RawText, Str};
use crate::diag::{DiagnosticSink, Severity};
use crate::model::{
    Collective, CollectiveOp, MicroBatch, ModelChunk, Nanos, SequenceKnowledge, Sequences, SpanKind, Worker, WorkerStep,
};

#[derive(Clone, Copy, Debug)]
struct StepMark {
    number: u64,
    start: Nanos,
    end: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpClass {
    Compute,
    Attention,
    Optimizer,
    DataLoading,
    /// A communication op (launch or wrapper).
    Comm(CollectiveOp),
    /// A span covering a whole collective (`gloo:all_reduce`).
    Collective(CollectiveOp),
}

#[derive(Clone, Copy, Debug)]
struct Op {
    start: Nanos,
    end: Nanos,
    thread: i64,
    class: OpClass,
}

#[derive(Clone, Copy, Debug)]
struct Kernel {
    start: Nanos,
    end: Nanos,
    kind: SpanKind,
    op: Option<CollectiveOp>,
    correlation: Option<u64>,
}

/// A forward attention call: what it reveals, and the micro-batch whose pass made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Call {
    shape: CallShape,
    micro_batch: Option<u32>,
}

/// What one attention call reveals about its sequences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallShape {
    /// `batch` sequences padded to `len`.
    Dense { batch: u32, len: u32 },
    /// `count` packed sequences of `tokens` in total, the longest `max_len`.
    Varlen { tokens: u64, count: u32, max_len: u32 },
}

#[derive(Clone, Copy, Debug)]
struct AttentionOp {
    start: Nanos,
    end: Nanos,
    thread: i64,
    backward: bool,
    shape: Option<CallShape>,
}

/// A pipeline schedule's pass annotation ([`pipeline_pass`]), on the CPU.
#[derive(Clone, Copy, Debug)]
struct PassMark {
    start: Nanos,
    end: Nanos,
    micro_batch: u32,
    backward: bool,
    /// The pipeline stage it names (several per rank under an interleaved schedule).
    stage: Option<u32>,
}

/// The pass annotations, sorted by start: which one a CPU time falls in.
struct Passes(Vec<PassMark>);

impl Passes {
    fn new(mut marks: Vec<PassMark>) -> Self {
        marks.sort_by_key(|m| (m.start, m.end));
        Passes(marks)
    }

    /// The pass that was running at CPU time `t`: the latest to start by then, if not yet over
    /// (a schedule runs its passes one after another on one thread).
    fn at(&self, t: Nanos) -> Option<PassMark> {
        let i = self.0.partition_point(|m| m.start <= t).checked_sub(1)?;
        self.0.get(i).copied().filter(|m| t < m.end)
    }
}

/// Work that ran in a pass: a kernel (or CPU op) whose launch fell in a pass annotation, or
/// (`p2p`) a point-to-point op holding the pass's thread, its wait for the peer cut out.
#[derive(Clone, Copy, Debug)]
struct PassPiece {
    pass: PassMark,
    attention: bool,
    p2p: bool,
    start: Nanos,
    end: Nanos,
}

/// Where each step's time went: its window, the intervals inside, its collectives, and the
/// compute of its pipeline passes where the schedule annotated them.
struct StepTime {
    windows: Vec<(Nanos, Nanos)>,
    pieces: Vec<Piece>,
    collectives: Vec<Vec<Collective>>,
    passes: Vec<Vec<PassPiece>>,
}

pub struct KinetoBuilder {
    file: String,
    rank: Option<u32>,
    /// `distributedInfo.world_size`, where it is a rank count.
    world_size: Option<u32>,
    host: Option<String>,
    base_ns: Nanos,
    steps: Vec<StepMark>,
    /// GPU copies of the step annotations; a zero-length one marks its step unfinished.
    gpu_steps: Vec<StepMark>,
    ops: Vec<Op>,
    kernels: Vec<Kernel>,
    /// Kernel launches on the CPU: (correlation id, CPU time).
    launches: Vec<(u64, Nanos)>,
    attention: Vec<AttentionOp>,
    /// `record_function("seqlens=...")` annotations: exact lengths at a CPU time.
    seqlen_marks: Vec<(Nanos, Vec<u32>)>,
    /// A pipeline schedule's annotations of its passes ([`pipeline_pass`]): the micro-batches.
    passes: Vec<PassMark>,
    /// Its annotations of the sends and receives that serve a pass, where they are actions of
    /// their own (not inside the pass's): the thread time of their calls is the pass's.
    transfers: Vec<PassMark>,
    comm_threads: Vec<i64>,
    /// The distinct groups of ranks its point-to-point calls (pipeline send/recv) went to, each
    /// sorted: the pipeline's stages, when the job is pipeline-parallel.
    p2p_groups: Vec<Vec<u32>>,
    /// Whether any operator or kernel is a point-to-point call, named group or not.
    saw_point_to_point: bool,
    /// The group `distributedInfo.pg_config` says is the pipeline ([`pipeline_in_config`]).
    config_pipeline: Option<Vec<u32>>,
    names: NameCache<NameClass>,
    shapes: ShapeMemo,
}

/// The last few attention calls' names and recorded inputs, and what they gave: a model's
/// layers make the same calls over and over (an op and the kernel-level op inside it, forward
/// and backward, in turn), and reading the shapes anew each time was a tenth of the import.
#[derive(Default)]
struct ShapeMemo {
    entries: [Option<MemoEntry>; SHAPE_MEMO_SIZE],
    /// The entry a miss replaces next (round robin).
    next: usize,
}

const SHAPE_MEMO_SIZE: usize = 4;

#[derive(Default)]
struct MemoEntry {
    name: String,
    dims: Option<Vec<u8>>,
    concrete: Option<Vec<u8>>,
    shape: Option<CallShape>,
}

impl ShapeMemo {
    fn call_shape(
        &mut self,
        name: &str,
        dims: Option<RawText<'_>>,
        concrete: Option<RawText<'_>>,
    ) -> Option<CallShape> {
        let same = |kept: &Option<Vec<u8>>, raw: Option<RawText<'_>>| kept.as_deref() == raw.map(RawText::get);
        let hit = self
            .entries
            .iter()
            .flatten()
            .find(|e| e.name == name && same(&e.dims, dims) && same(&e.concrete, concrete));
        if let Some(entry) = hit {
            return entry.shape;
        }
        let shape = call_shape(name, dims, concrete);
        // The replaced entry's buffers are reused: misses are frequent where lengths vary.
        let keep = |kept: &mut Option<Vec<u8>>, raw: Option<RawText<'_>>| match raw {
            Some(raw) => {
                let buf = kept.get_or_insert_with(Vec::new);
                buf.clear();
                buf.extend_from_slice(raw.get());
            }
            None => *kept = None,
        };
        if let Some(slot) = self.entries.get_mut(self.next) {
            let entry = slot.get_or_insert_with(MemoEntry::default);
            entry.name.clear();
            entry.name.push_str(name);
            keep(&mut entry.dims, dims);
            keep(&mut entry.concrete, concrete);
            entry.shape = shape;
        }
        self.next = (self.next + 1) % SHAPE_MEMO_SIZE;
        shape
    }
}

/// What an operator's or kernel's name says.
#[derive(Clone, Copy)]
struct NameClass {
    attention: bool,
    backward: bool,
    collective: Option<CollectiveOp>,
    backend_collective: bool,
    optimizer: bool,
    /// `record_param_comms`: a collective's record, its group's ranks in its args.
    comms_record: bool,
}

impl NameClass {
    fn of(name: &str) -> Self {
        NameClass {
            attention: is_attention(name),
            backward: is_backward(name),
            collective: collective_op(name),
            backend_collective: is_backend_collective(name),
            optimizer: is_optimizer_kernel(name),
            comms_record: name == "record_param_comms",
        }
    }
}

impl KinetoBuilder {
    pub fn new(file: &str) -> Self {
        KinetoBuilder {
            file: file.to_owned(),
            rank: None,
            world_size: None,
            host: None,
            base_ns: 0,
            steps: Vec::new(),
            gpu_steps: Vec::new(),
            ops: Vec::new(),
            kernels: Vec::new(),
            launches: Vec::new(),
            attention: Vec::new(),
            seqlen_marks: Vec::new(),
            passes: Vec::new(),
            transfers: Vec::new(),
            comm_threads: Vec::new(),
            p2p_groups: Vec::new(),
            saw_point_to_point: false,
            config_pipeline: None,
            names: NameCache::default(),
            shapes: ShapeMemo::default(),
        }
    }

    fn complete_event(&mut self, ev: &RawEvent<'_>, place: EventPlace, diags: &mut DiagnosticSink) -> bool {
        let cat = ev.cat();
        if !is_read_category(cat) {
            return false;
        }
        let Some((start, end)) = interval(ev, place, diags) else {
            return false;
        };
        let name = ev.name();
        let thread = ev.tid.unwrap_or(0);
        match cat {
            "user_annotation" => self.annotation(name, start, end, thread),
            "gpu_user_annotation" => {
                match name.strip_prefix("ProfilerStep#").and_then(|n| n.trim().parse::<u64>().ok()) {
                    Some(number) => {
                        self.gpu_steps.push(StepMark { number, start, end });
                        true
                    }
                    None => false,
                }
            }
            "cpu_op" | "operator" | "Operator" => {
                let named = self.names.get_or(name, NameClass::of);
                if named.comms_record {
                    // It names its collective, and the collective's group, in its args.
                    let op = self.collective_in_args(ev.args.as_ref());
                    self.note_p2p_group(op, ev.args.as_ref());
                }
                let class = if named.attention {
                    let backward = named.backward;
                    let shape = if backward {
                        None
                    } else {
                        ev.args.as_ref().and_then(|a| self.shapes.call_shape(name, a.input_dims, a.concrete_inputs))
                    };
                    self.attention.push(AttentionOp { start, end, thread, backward, shape });
                    OpClass::Attention
                } else if let Some(op) = named.collective {
                    self.saw_point_to_point |= op.is_point_to_point();
                    if named.backend_collective { OpClass::Collective(op) } else { OpClass::Comm(op) }
                } else {
                    OpClass::Compute
                };
                self.ops.push(Op { start, end, thread, class });
                true
            }
            cat if is_launch_category(cat) => {
                let correlation = ev.args.as_ref().and_then(|a| a.correlation);
                if let Some(c) = correlation {
                    self.launches.push((c, start));
                }
                correlation.is_some()
            }
            _ => {
                let is_memory = matches!(cat, "gpu_memcpy" | "gpu_memset" | "Memcpy" | "Memset");
                let named = self.names.get_or(name, NameClass::of);
                let op = self.collective_in_args(ev.args.as_ref()).or(if is_memory { None } else { named.collective });
                self.saw_point_to_point |= op.is_some_and(CollectiveOp::is_point_to_point);
                self.note_p2p_group(op, ev.args.as_ref());
                let kind = if op.is_some() {
                    SpanKind::Communication
                } else if is_memory {
                    SpanKind::Other
                } else if named.optimizer {
                    SpanKind::Optimizer
                } else if named.attention {
                    SpanKind::Attention
                } else {
                    SpanKind::Compute
                };
                let correlation = ev.args.as_ref().and_then(|a| a.correlation);
                self.kernels.push(Kernel { start, end, kind, op, correlation });
                true
            }
        }
    }

    /// The collective an event's args name (`"Collective name"`), classified once per name; a
    /// name that is none of the known ones is some other collective.
    fn collective_in_args(&mut self, args: Option<&RawArgs<'_>>) -> Option<CollectiveOp> {
        let name = args?.collective_name.as_ref()?;
        Some(self.names.get_or(name.as_str(), NameClass::of).collective.unwrap_or(CollectiveOp::Other))
    }

    /// Keeps the group of a point-to-point call (pipeline send/recv), where the call names it.
    fn note_p2p_group(&mut self, op: Option<CollectiveOp>, args: Option<&RawArgs<'_>>) {
        let Some(ranks) =
            args.and_then(|a| a.process_group_ranks).filter(|_| op.is_some_and(|o| o.is_point_to_point()))
        else {
            return;
        };
        // `"[0, 8, 16, 24]"` (a JSON string) or `[0, 8, 16, 24]` (a list); anything else is ignored.
        let Some(mut group) = std::str::from_utf8(ranks.get()).ok().and_then(list_of_u32) else {
            return;
        };
        group.sort_unstable();
        group.dedup();
        if group.len() >= 2 && !self.p2p_groups.contains(&group) {
            self.p2p_groups.push(group);
        }
    }

    fn annotation(&mut self, name: &str, start: Nanos, end: Nanos, thread: i64) -> bool {
        if let Some(n) = name.strip_prefix("ProfilerStep#").and_then(|n| n.trim().parse::<u64>().ok()) {
            self.steps.push(StepMark { number: n, start, end });
        } else if let Some(list) = name.strip_prefix("seqlens=") {
            self.seqlen_marks.push((start, lengths_in(list)));
        } else if let Some(PipelinePass { micro_batch, backward, stage, transfer }) = pipeline_pass(name) {
            let mark = PassMark { start, end, micro_batch, backward, stage };
            if transfer { self.transfers.push(mark) } else { self.passes.push(mark) }
        } else if name.starts_with("Optimizer.") {
            self.ops.push(Op { start, end, thread, class: OpClass::Optimizer });
        } else if name.contains("DataLoader") {
            self.ops.push(Op { start, end, thread, class: OpClass::DataLoading });
        } else if let Some(op) = collective_op(name).filter(|_| is_backend_collective(name)) {
            self.ops.push(Op { start, end, thread, class: OpClass::Collective(op) });
        } else {
            return false;
        }
        true
    }

    /// CPU step windows, sorted, deduplicated, unfinished ones dropped, overlaps clipped.
    fn step_windows(&mut self, diags: &mut DiagnosticSink) -> Vec<StepMark> {
        let mut steps = std::mem::take(&mut self.steps);
        steps.sort_by_key(|s| (s.start, s.number));
        let unfinished_on_gpu: std::collections::BTreeSet<u64> =
            self.gpu_steps.iter().filter(|g| g.end <= g.start).map(|g| g.number).collect();
        let mut seen = std::collections::BTreeSet::new();
        let mut out: Vec<StepMark> = Vec::with_capacity(steps.len());
        let last_start = steps.iter().map(|s| s.start).max();
        for s in steps {
            if s.end <= s.start || unfinished_on_gpu.contains(&s.number) {
                let what =
                    if Some(s.start) == last_start { "the unfinished last step" } else { "a step of zero length" };
                diags.push(Severity::Info, None, format!("ProfilerStep#{} is {what}; ignored", s.number));
                continue;
            }
            if !seen.insert(s.number) {
                diags.push(
                    Severity::Warning,
                    None,
                    format!("ProfilerStep#{} appears twice; the second was ignored", s.number),
                );
                continue;
            }
            out.push(s);
        }
        // A profiler stopped mid-step leaves a short last step behind.
        if out.len() >= 2
            && let Some(last) = out.last().copied()
        {
            let mut others: Vec<Nanos> = out.iter().rev().skip(1).map(|s| s.end - s.start).collect();
            others.sort_unstable();
            let median = others.get(others.len() / 2).copied().unwrap_or(0);
            if (last.end - last.start).saturating_mul(10) < median {
                diags.push(
                    Severity::Info,
                    None,
                    format!(
                        "ProfilerStep#{} looks unfinished ({}, the others take a median {}); ignored",
                        last.number,
                        crate::text::seconds(last.end - last.start),
                        crate::text::seconds(median)
                    ),
                );
                out.pop();
            }
        }
        let mut clipped = 0;
        let mut i = 1;
        while i < out.len() {
            let next_start = out.get(i).map_or(Nanos::MAX, |s| s.start);
            if let Some(prev) = out.get_mut(i - 1)
                && prev.end > next_start
            {
                prev.end = next_start;
                clipped += 1;
            }
            i += 1;
        }
        if clipped > 0 {
            diags.push(
                Severity::Warning,
                None,
                format!("{clipped} ProfilerStep spans overlap the next step; clipped to where the next begins"),
            );
        }
        out
    }

    /// GPU time: each kernel belongs to the CPU step that launched it. A step's GPU window
    /// starts when both its CPU step has begun and the previous step's kernels are done, and
    /// ends where the next window starts, so host-side gaps stay in the step that caused them.
    /// Takes the kernels and launches: they are the largest things a file's import holds.
    fn gpu_windows(&mut self, cpu: &[StepMark], passes: &Passes) -> StepTime {
        let kernels = std::mem::take(&mut self.kernels);
        let mut launches = std::mem::take(&mut self.launches);
        launches.sort_unstable();
        let cpu_windows: Vec<(Nanos, Nanos)> = cpu.iter().map(|s| (s.start, s.end)).collect();
        // Kernels come mostly in launch order: each search first tries just after the last hit.
        let mut last_step = 0;
        let mut step_of = |t: Nanos| -> Option<usize> {
            let i = match cpu_windows.get(last_step) {
                Some(w) if w.0 <= t && t < w.1 => last_step,
                _ => cpu_windows.partition_point(|w| w.1 <= t),
            };
            last_step = i;
            cpu_windows.get(i).filter(|w| w.0 <= t).map(|_| i)
        };
        let mut next_launch = 0;
        let mut launch_of = |correlation: u64| -> Option<Nanos> {
            let i = match launches.get(next_launch) {
                Some(l) if l.0 == correlation => next_launch,
                _ => launches.binary_search_by_key(&correlation, |l| l.0).ok()?,
            };
            next_launch = i + 1;
            launches.get(i).map(|l| l.1)
        };
        let mut gpu_end: Vec<Option<Nanos>> = vec![None; cpu.len()];
        // Each kernel's step, and its pass where it computes in one.
        let mut owner: Vec<(Option<usize>, Option<PassMark>)> = Vec::with_capacity(kernels.len());
        for k in &kernels {
            let launch = k.correlation.and_then(&mut launch_of).unwrap_or(k.start);
            let step = step_of(launch);
            if let Some(e) = step.and_then(|i| gpu_end.get_mut(i)) {
                *e = Some(e.map_or(k.end, |v| v.max(k.end)));
            }
            owner.push((step, computes(k.kind).then(|| passes.at(launch)).flatten()));
        }
        drop(launches);
        let starts: Vec<Nanos> = cpu
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let previous = i.checked_sub(1).and_then(|p| gpu_end.get(p).copied().flatten());
                previous.map_or(s.start, |p| p.max(s.start))
            })
            .collect();
        let windows: Vec<(Nanos, Nanos)> = starts
            .iter()
            .enumerate()
            .map(|(i, &start)| {
                let end = match starts.get(i + 1) {
                    Some(&next) => next,
                    None => {
                        gpu_end.get(i).copied().flatten().unwrap_or(Nanos::MIN).max(cpu.get(i).map_or(start, |s| s.end))
                    }
                };
                (start, end.max(start))
            })
            .collect();
        let mut pieces = Vec::with_capacity(kernels.len());
        let mut collectives: Vec<Vec<Collective>> = vec![Vec::new(); cpu.len()];
        let mut in_passes: Vec<Vec<PassPiece>> = vec![Vec::new(); cpu.len()];
        for (k, (step, pass)) in kernels.iter().zip(owner) {
            let Some(step) = step else { continue };
            pieces.push(Piece { start: k.start, end: k.end, kind: k.kind, micro_batch: pass.map(|p| p.micro_batch) });
            if let (Some(op), Some(list)) = (k.op, collectives.get_mut(step)) {
                list.push(Collective { start: k.start, end: k.end, op });
            }
            if let (Some(pass), Some(list)) = (pass, in_passes.get_mut(step)) {
                let attention = k.kind == SpanKind::Attention;
                list.push(PassPiece { pass, attention, p2p: false, start: k.start, end: k.end });
            }
        }
        StepTime { windows, pieces, collectives, passes: in_passes }
    }

    /// CPU time: ops on every thread, collectives on side threads overlapping compute, and an
    /// op that encloses others counted as waiting where it is blocked on a collective
    /// ([`blocked`]). Takes the ops.
    fn cpu_time(&mut self, windows: &[(Nanos, Nanos)], passes: &Passes, transfers: &Passes) -> StepTime {
        let ops = std::mem::take(&mut self.ops);
        let has_spans = ops.iter().any(|o| matches!(o.class, OpClass::Collective(_)));
        let mut pieces = Vec::with_capacity(ops.len());
        let mut collectives: Vec<Vec<Collective>> = vec![Vec::new(); windows.len()];
        let mut in_passes: Vec<Vec<PassPiece>> = vec![Vec::new(); windows.len()];
        let step_of = |t: Nanos| {
            let i = windows.partition_point(|w| w.1 <= t);
            windows.get(i).filter(|w| w.0 <= t).map(|_| i)
        };
        let kind_of = |o: &Op| match o.class {
            OpClass::Compute | OpClass::Attention if self.comm_threads.contains(&o.thread) => SpanKind::Communication,
            OpClass::Compute => SpanKind::Compute,
            OpClass::Attention => SpanKind::Attention,
            OpClass::Optimizer => SpanKind::Optimizer,
            OpClass::DataLoading => SpanKind::DataLoading,
            OpClass::Comm(_) | OpClass::Collective(_) => SpanKind::Communication,
        };
        let kinds: Vec<SpanKind> = ops.iter().map(kind_of).collect();
        let enclosing = blocked::encloses(
            &ops.iter().map(|o| blocked::OnThread { thread: o.thread, start: o.start, end: o.end }).collect::<Vec<_>>(),
        );
        let in_flight = |o: &&Op| match o.class {
            OpClass::Collective(_) => true,
            OpClass::Comm(_) => !has_spans,
            _ => false,
        };
        // The time the innermost ops compute, once for both kinds of wait below.
        let innermost = ops.iter().zip(&kinds).zip(&enclosing).filter(|(_, encloses)| !**encloses);
        let computing =
            union(innermost.filter(|((_, kind), _)| computes(**kind)).map(|((o, _), _)| (o.start, o.end)).collect());
        let waits = blocked::waits(ops.iter().filter(in_flight).map(|o| (o.start, o.end)).collect(), &computing);
        for ((o, &kind), &encloses) in ops.iter().zip(&kinds).zip(&enclosing) {
            let pass = computes(kind).then(|| passes.at(o.start)).flatten();
            let micro_batch = pass.map(|p| p.micro_batch);
            // An op enclosing other ops computes only where it is not blocked on a collective.
            let parts = match encloses && computes(kind) {
                true => blocked::outside(o.start, o.end, &waits),
                false => vec![(o.start, o.end)],
            };
            pieces.extend(parts.into_iter().map(|(start, end)| Piece { start, end, kind, micro_batch }));
            let op = match o.class {
                OpClass::Collective(op) => Some(op),
                OpClass::Comm(op) if !has_spans => Some(op),
                _ => None,
            };
            let step = step_of(o.start);
            if let (Some(op), Some(list)) = (op, step.and_then(|i| collectives.get_mut(i))) {
                list.push(Collective { start: o.start, end: o.end, op });
            }
            if let (Some(pass), Some(list)) = (pass, step.and_then(|i| in_passes.get_mut(i))) {
                let attention = kind == SpanKind::Attention;
                list.push(PassPiece { pass, attention, p2p: false, start: o.start, end: o.end });
            }
        }
        // A pass holds its thread for all of its annotation but where it waits for its input
        // from a peer: the interpreter's work between its ops (a good part of a small model's
        // pass) is the pass's too, and the ops alone miss it. So do the sends and receives the
        // schedule runs as actions of their own for it. (Sends are asynchronous: a pass does
        // not wait for them, and their calls stay in flight while it computes.)
        let receiving = |o: &&Op| {
            in_flight(o) && matches!(o.class, OpClass::Collective(op) | OpClass::Comm(op) if op == CollectiveOp::Recv)
        };
        let input_waits = blocked::waits(ops.iter().filter(receiving).map(|o| (o.start, o.end)).collect(), &computing);
        let marks = passes.0.iter().map(|m| (m, false)).chain(transfers.0.iter().map(|m| (m, true)));
        for (&pass, p2p) in marks {
            if let Some(list) = step_of(pass.start).and_then(|i| in_passes.get_mut(i)) {
                let held = blocked::outside(pass.start, pass.end, &input_waits);
                // In the step's timeline too: that time computed (or sent), it was no stall.
                let kind = if p2p { SpanKind::Communication } else { SpanKind::Compute };
                let micro_batch = (!p2p).then_some(pass.micro_batch);
                pieces.extend(held.iter().map(|&(start, end)| Piece { start, end, kind, micro_batch }));
                list.extend(held.into_iter().map(|(start, end)| PassPiece { pass, attention: false, p2p, start, end }));
            }
        }
        StepTime { windows: windows.to_vec(), pieces, collectives, passes: in_passes }
    }

    /// Forward attention calls per step (outermost op of each call, its shape from any op
    /// inside it), then one entry per document once layer repeats are folded. Takes the
    /// attention ops.
    fn sequences(&mut self, cpu: &[StepMark], passes: &Passes) -> Vec<Option<Vec<Call>>> {
        let mut ops = std::mem::take(&mut self.attention);
        ops.sort_by_key(|o| (o.thread, o.start, std::cmp::Reverse(o.end)));
        // Outermost calls per thread, with the first shape found inside each.
        let mut calls: Vec<(Nanos, bool, Option<CallShape>)> = Vec::new();
        let mut current: Option<(i64, Nanos)> = None;
        for o in &ops {
            let inside = current.is_some_and(|(thread, end)| thread == o.thread && o.start < end);
            if inside {
                if let Some(last) = calls.last_mut()
                    && last.2.is_none()
                {
                    last.2 = o.shape;
                }
                continue;
            }
            current = Some((o.thread, o.end));
            calls.push((o.start, o.backward, o.shape));
        }
        calls.sort_by_key(|c| c.0);
        let mut per_step: Vec<Option<Vec<Call>>> = vec![None; cpu.len()];
        for (start, backward, shape) in calls {
            let i = cpu.partition_point(|s| s.end <= start);
            if let Some(slot) = per_step.get_mut(i).filter(|_| cpu.get(i).is_some_and(|s| s.start <= start)) {
                let list = slot.get_or_insert_with(Vec::new);
                if let (false, Some(shape)) = (backward, shape) {
                    let micro_batch = passes.at(start).filter(|p| !p.backward).map(|p| p.micro_batch);
                    list.push(Call { shape, micro_batch });
                }
            }
        }
        fold_layer_repeats(&mut per_step);
        per_step
    }
}

/// The lengths a `seqlens=` annotation lists: whole numbers separated by commas, spaces or
/// semicolons, ASCII blanks around each; pieces that are not one (or exceed `u32`) are
/// skipped. Read as bytes, not split and parsed as text: the marks come once per micro-batch
/// with dozens of lengths each.
fn lengths_in(list: &str) -> Vec<u32> {
    let is_separator = |b: &u8| matches!(b, b',' | b' ' | b';');
    let bytes = list.as_bytes();
    // A mark holds a length per document of a micro-batch: most pieces are plain digits,
    // read in one pass; any other piece is read by the general rule below.
    let mut lengths = Vec::with_capacity(bytes.len() / 4);
    let mut at = 0;
    while at < bytes.len() {
        let start = at;
        let mut value;
        (value, at) = leading_digits(bytes, start, 10);
        let plain = at > start && bytes.get(at).is_none_or(is_separator);
        if !plain {
            at = bytes
                .get(start..)
                .and_then(|rest| rest.iter().position(is_separator))
                .map_or(bytes.len(), |i| start + i);
            let piece = bytes.get(start..at).unwrap_or_default().trim_ascii();
            value = digits(piece.strip_prefix(b"+").unwrap_or(piece)).unwrap_or(u64::MAX);
        }
        if let Ok(length) = u32::try_from(value) {
            lengths.push(length);
        }
        at += 1;
    }
    lengths
}

/// Work a pipeline pass is made of: compute and attention (not the optimizer, copies, transfers).
fn computes(kind: SpanKind) -> bool {
    matches!(kind, SpanKind::Compute | SpanKind::Attention)
}

/// The time the intervals cover, overlaps (kernels on several streams at once) counted once.
fn covered(intervals: Vec<(Nanos, Nanos)>) -> Nanos {
    // Saturating: times come from the input, and absurd ones must not wrap around.
    union(intervals).into_iter().fold(0, |total: Nanos, (start, end)| total.saturating_add(end.saturating_sub(start)))
}

/// The compute of each pipeline stage the passes name, over all steps, where a rank ran two or
/// more (an interleaved schedule's model chunks): none otherwise.
fn model_chunks(steps: &[Vec<PassPiece>]) -> Vec<ModelChunk> {
    let mut by_stage: BTreeMap<u32, ModelChunk> = BTreeMap::new();
    let key = |p: &&PassPiece| (p.pass.stage, p.pass.backward);
    for pieces in steps {
        let mut computing: Vec<&PassPiece> = pieces.iter().filter(|p| !p.p2p && p.pass.stage.is_some()).collect();
        computing.sort_unstable_by_key(key);
        for group in computing.chunk_by(|a, b| key(a) == key(b)) {
            let Some((stage, backward)) = group.first().and_then(|p| Some((p.pass.stage?, p.pass.backward))) else {
                continue;
            };
            let time = covered(group.iter().map(|p| (p.start, p.end)).collect());
            let chunk = by_stage.entry(stage).or_insert(ModelChunk { stage, ..ModelChunk::default() });
            let total = if backward { &mut chunk.backward } else { &mut chunk.forward };
            *total = total.saturating_add(time);
        }
    }
    if by_stage.len() < 2 {
        return Vec::new();
    }
    by_stage.into_values().collect()
}

/// What a step reveals of its sequences: its `seqlens=` marks and its forward attention calls.
#[derive(Clone, Copy)]
struct Revealed<'a> {
    marks: &'a [(Nanos, Vec<u32>)],
    calls: &'a [Call],
}

/// A step's micro-batches, from the compute that ran in their pipeline passes: each one's
/// forward and backward time and its attention; its sequences from the `seqlens=` marks its
/// forward pass made (exact lengths), else from the attention calls it made. None where the
/// schedule annotated no passes.
fn micro_batches(mut pieces: Vec<PassPiece>, revealed: Revealed<'_>, passes: &Passes) -> Vec<MicroBatch> {
    // Grouped by micro-batch (sorted, not searched per id: a trace may name very many).
    pieces.sort_unstable_by_key(|p| (p.pass.micro_batch, p.start));
    let mut lengths: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (t, list) in revealed.marks {
        if let Some(pass) = passes.at(*t).filter(|p| !p.backward) {
            lengths.entry(pass.micro_batch).or_default().extend(list);
        }
    }
    let mut shapes: BTreeMap<u32, Vec<CallShape>> = BTreeMap::new();
    for call in revealed.calls {
        if let Some(id) = call.micro_batch {
            shapes.entry(id).or_default().push(call.shape);
        }
    }
    pieces
        .chunk_by(|a, b| a.pass.micro_batch == b.pass.micro_batch)
        .filter_map(|mine| {
            let first = mine.first()?;
            let id = first.pass.micro_batch;
            let time = |keep: fn(&PassPiece) -> bool| {
                covered(mine.iter().filter(|p| keep(p)).map(|p| (p.start, p.end)).collect())
            };
            let (forward, backward) = (time(|p| !p.pass.backward && !p.p2p), time(|p| p.pass.backward && !p.p2p));
            // What the sends and receives add to the compute (an op inside a send is not counted
            // twice); none in GPU traces, whose passes are kernels only.
            let p2p = match mine.iter().any(|p| p.p2p) {
                true => (
                    time(|p| !p.pass.backward).saturating_sub(forward),
                    time(|p| p.pass.backward).saturating_sub(backward),
                ),
                false => (0, 0),
            };
            let mut sequences = match lengths.remove(&id) {
                Some(exact) => Sequences::from_lengths(SequenceKnowledge::Exact, exact),
                None => sequences_of(shapes.get(&id).into_iter().flatten().copied()),
            };
            let attention = time(|p| p.attention);
            if attention > 0 {
                sequences.attention = Some(attention);
            }
            Some(MicroBatch {
                id,
                start: Some(mine.iter().find(|p| !p.p2p).unwrap_or(first).start),
                forward,
                backward,
                p2p,
                sequences,
            })
        })
        .collect()
}

/// Each document passes through every layer, so the same call shape repeats once per layer in
/// a row. The layer count is the greatest common divisor of the run lengths; fold by it. (A
/// run of a micro-batch's calls stops where the next micro-batch's begin: still whole layers.)
fn fold_layer_repeats<T: PartialEq + Copy>(per_step: &mut [Option<Vec<T>>]) {
    let mut runs = Vec::new();
    for calls in per_step.iter().flatten() {
        let mut i = 0;
        while i < calls.len() {
            let run = calls.iter().skip(i).take_while(|c| Some(*c) == calls.get(i)).count();
            runs.push(run);
            i += run.max(1);
        }
    }
    let layers = runs.iter().fold(0usize, |g, &r| gcd(g, r));
    if layers < 2 {
        return;
    }
    for calls in per_step.iter_mut().flatten() {
        let folded: Vec<T> = calls.iter().step_by(layers).copied().collect();
        *calls = folded;
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The sequences of a step's attention calls.
fn sequences_of(calls: impl Iterator<Item = CallShape> + Clone) -> Sequences {
    let dense: Vec<u32> = calls
        .clone()
        .flat_map(|c| match c {
            CallShape::Dense { batch, len } => std::iter::repeat_n(len, batch as usize),
            CallShape::Varlen { .. } => std::iter::repeat_n(0, 0),
        })
        .collect();
    let dense = if dense.is_empty() {
        Sequences::default()
    } else {
        Sequences::from_lengths(SequenceKnowledge::DenseShapes, dense)
    };
    let varlen: Vec<Sequences> = calls
        .filter_map(|c| match c {
            CallShape::Varlen { tokens, count, max_len } => {
                Some(Sequences::from_bounds(u64::from(count), tokens, max_len))
            }
            CallShape::Dense { .. } => None,
        })
        .collect();
    // Bounds on some calls make bounds of the whole (the dense lengths' list goes with them).
    if varlen.is_empty() { dense } else { Sequences::total_of(std::iter::once(&dense).chain(&varlen)) }
}

/// What [`call_shape`] keeps of an attention call's input shapes, one shape at a time.
#[derive(Default)]
struct ShapeList {
    /// The first input's shape.
    query: Option<json::Shape>,
    /// The length of the first one-dimensional input after it.
    cu_seqlens: Option<u64>,
    /// How many shapes were added.
    index: usize,
}

impl ShapeList {
    fn add(&mut self, shape: Option<json::Shape>) {
        if self.index == 0 {
            self.query = shape;
        } else if self.cu_seqlens.is_none()
            && let Some(([n, ..], 1)) = shape
        {
            self.cu_seqlens = Some(n);
        }
        self.index += 1;
    }
}

/// Sequence information in an attention op's recorded shapes.
fn call_shape(name: &str, dims: Option<RawText<'_>>, concrete: Option<RawText<'_>>) -> Option<CallShape> {
    // The query's shape comes first; for varlen calls, cu_seqlens is the first 1-D input after
    // it. Attention calls are frequent: the list is read in one pass when it is plain, as
    // profilers write it, else with the scanner.
    let dims = dims?.get();
    let mut list = ShapeList::default();
    if json::plain_shapes(dims, |shape| list.add(shape)).is_none() {
        list = ShapeList::default();
        json::array(dims, 0, |v| {
            // Only the query's shape and the first one-dimensional one are read (a shape with
            // a comma has more than one dimension).
            let wanted = list.index == 0 || list.cu_seqlens.is_none() && memchr::memchr(b',', v).is_none();
            list.add(if wanted { json::shape(v) } else { None });
        })
        .ok()?;
    }
    let ShapeList { query, cu_seqlens, .. } = list;
    let (dims, n) = query?;
    let to_u32 = |v: u64| u32::try_from(v).ok();
    match dims.get(..n)? {
        // SDPA family: [B, H, S, D]; flash/efficient kernels and flash_attn_func: [B, S, H, D].
        [b, x, y, _] => {
            let seq_dim_first = ["flash_attention_forward", "efficient_attention_forward", "flash_attn"]
                .iter()
                .any(|p| name.contains(p));
            let len = if seq_dim_first { *x } else { *y };
            Some(CallShape::Dense { batch: to_u32(*b)?, len: to_u32(len)? })
        }
        // Varlen: q [T, H, D], then cu_seqlens [n + 1]; max_seqlen among the scalar inputs
        // (the 6th and 7th).
        [t, _, _] => {
            let count = cu_seqlens?.checked_sub(1)?;
            let mut max_seqlen = None;
            let mut index = 0;
            let listed = concrete.map(|c| {
                json::array(c.get(), 0, |v| {
                    if matches!(index, 5 | 6) {
                        max_seqlen = max_seqlen.max(to_u64(v));
                    }
                    index += 1;
                })
            });
            // Of a malformed list, not even the scalars before the fault are trusted.
            let max_len = max_seqlen.filter(|_| matches!(listed, Some(Ok(_)))).unwrap_or(*t);
            Some(CallShape::Varlen { tokens: *t, count: to_u32(count)?, max_len: to_u32(max_len.min(*t))? })
        }
        _ => None,
    }
}

/// The categories of complete events the importer reads; it ignores the others
/// (`python_function`, `overhead`, …).
fn is_read_category(cat: &str) -> bool {
    matches!(
        cat,
        "user_annotation"
            | "gpu_user_annotation"
            | "cpu_op"
            | "operator"
            | "Operator"
            | "kernel"
            | "Kernel"
            | "gpu_memcpy"
            | "gpu_memset"
            | "Memcpy"
            | "Memset"
            | "cuda_runtime"
            | "cuda_driver"
            | "Runtime"
    )
}

/// Categories of the CPU side of kernel launches (CUDA, and ROCm's `Runtime`).
fn is_launch_category(cat: &str) -> bool {
    matches!(cat, "cuda_runtime" | "cuda_driver" | "Runtime")
}

fn is_optimizer_kernel(name: &str) -> bool {
    ["multi_tensor_apply", "adam", "Adam", "sgd_", "lamb"].iter().any(|w| name.contains(w))
}

/// A complete event's interval in nanoseconds, or a diagnostic.
fn interval(ev: &RawEvent<'_>, place: EventPlace, diags: &mut DiagnosticSink) -> Option<(Nanos, Nanos)> {
    let start = ev.start(place, diags)?;
    Some((start, ev.end(start, place, diags)?))
}

impl Interest for KinetoBuilder {
    fn ignores_complete(&self, category: &str) -> bool {
        !is_read_category(category)
    }

    /// Kernel launches are read for their correlation id and time alone.
    fn wants_name(&self, ev: &RawEvent<'_>) -> bool {
        !(ev.phase() == "X" && is_launch_category(ev.cat()))
    }

    /// Only attention ops' shapes, collectives' records (their names and groups), kernels' and
    /// launches' correlations and collective names, and threads' names are read: most of a
    /// trace recorded with shapes is the `args` of other operators.
    fn wants_args(&mut self, ev: &RawEvent<'_>) -> bool {
        match (ev.ph.as_ref().map(Str::as_str), ev.cat.as_ref().map(Str::as_str)) {
            (Some("X"), Some("user_annotation" | "gpu_user_annotation")) => false,
            (Some("X"), Some("cpu_op" | "operator" | "Operator")) => ev.name.as_ref().is_none_or(|name| {
                let named = self.names.get_or(name.as_str(), NameClass::of);
                (named.attention && !named.backward) || named.comms_record
            }),
            // Complete events of other categories, metadata, and events whose phase comes later.
            (None | Some("X" | "M"), _) => true,
            (Some(_), _) => false,
        }
    }
}

impl TraceBuilder for KinetoBuilder {
    fn held_bytes(&self) -> usize {
        [
            vec_bytes(&self.steps),
            vec_bytes(&self.gpu_steps),
            vec_bytes(&self.ops),
            vec_bytes(&self.kernels),
            vec_bytes(&self.launches),
            vec_bytes(&self.attention),
            vec_bytes(&self.seqlen_marks),
            vec_bytes(&self.passes),
            vec_bytes(&self.transfers),
        ]
        .iter()
        .sum()
    }

    fn wants_top_level(&self, key: &str) -> bool {
        matches!(key, "distributedInfo" | "baseTimeNanoseconds" | "host_name" | "hostname")
    }

    fn top_level(&mut self, key: &str, value: &RawValue, diags: &mut DiagnosticSink) {
        match key {
            "distributedInfo" => {
                #[derive(serde::Deserialize)]
                struct Dist<'a> {
                    #[serde(borrow, default)]
                    rank: Option<&'a RawValue>,
                    #[serde(borrow, default)]
                    world_size: Option<&'a RawValue>,
                    #[serde(borrow, default)]
                    pg_config: Option<&'a RawValue>,
                }
                // Either may be a string of digits.
                let number = |raw: &RawValue| to_u64(raw.get()).and_then(|n| u32::try_from(n).ok());
                match serde_json::from_str::<Dist<'_>>(value.get()) {
                    Ok(Dist { rank, world_size, pg_config }) => {
                        self.config_pipeline = pg_config.and_then(|c| pipeline_in_config(c.get()));
                        if let Some(r) = rank {
                            match number(r) {
                                Some(r) => self.rank = Some(r),
                                None => diags.push(
                                    Severity::Warning,
                                    None,
                                    format!("distributedInfo.rank {} is not a rank number", r.get()),
                                ),
                            }
                        }
                        if let Some(w) = world_size {
                            match number(w).filter(|&w| w > 0) {
                                Some(w) => self.world_size = Some(w),
                                None => diags.push(
                                    Severity::Warning,
                                    None,
                                    format!("distributedInfo.world_size {} is not a rank count; ignored", w.get()),
                                ),
                            }
                        }
                    }
                    Err(e) => diags.push(Severity::Warning, None, format!("distributedInfo is malformed: {e}")),
                }
            }
            "baseTimeNanoseconds" => self.base_ns = to_nanos(value.get(), 1).unwrap_or(0),
            _ => self.host = serde_json::from_str::<String>(value.get()).ok(),
        }
    }

    fn event(&mut self, ev: &RawEvent<'_>, place: EventPlace, diags: &mut DiagnosticSink) -> bool {
        match ev.phase() {
            "X" => self.complete_event(ev, place, diags),
            "M" => {
                let is_comm_thread = ev.name() == "thread_name"
                    && ev.args.as_ref().and_then(|a| a.name.as_ref()).is_some_and(|n| {
                        let n = n.as_str().to_ascii_lowercase();
                        n.contains("gloo") || n.contains("nccl") || n.contains("comm")
                    });
                if is_comm_thread && let Some(t) = ev.tid {
                    self.comm_threads.push(t);
                }
                false
            }
            _ => false,
        }
    }

    fn finish(mut self, diags: &mut DiagnosticSink) -> Vec<Worker> {
        let cpu = self.step_windows(diags);
        if cpu.is_empty() {
            return Vec::new();
        }
        let rank = self.rank.or_else(|| rank_from_file_name(&self.file));
        if self.rank.is_none() {
            let msg = match rank {
                Some(r) => format!("no distributedInfo.rank; rank {r} taken from the file name"),
                None => "no distributedInfo.rank and no rank in the file name; a rank will be assigned".to_owned(),
            };
            diags.push(Severity::Info, None, msg);
        }
        // The raw events are taken as each is used, so that a large file's peak memory is not
        // all of them beside the steps made from them (the browser's workers keep their peak).
        let passes = Passes::new(std::mem::take(&mut self.passes));
        let transfers = Passes::new(std::mem::take(&mut self.transfers));
        let calls = self.sequences(&cpu, &passes);
        let on_gpu = !self.kernels.is_empty();
        let cpu_windows: Vec<(Nanos, Nanos)> = cpu.iter().map(|s| (s.start, s.end)).collect();
        let StepTime { windows, pieces, mut collectives, passes: mut in_passes } =
            if on_gpu { self.gpu_windows(&cpu, &passes) } else { self.cpu_time(&cpu_windows, &passes, &transfers) };
        let mut order: Vec<usize> = (0..windows.len()).collect();
        order.sort_by_key(|&i| windows.get(i).copied());
        let sorted_windows: Vec<(Nanos, Nanos)> = order.iter().filter_map(|&i| windows.get(i).copied()).collect();
        let buckets = bucket(&sorted_windows, &pieces);
        drop(pieces);
        let model_chunks = model_chunks(&in_passes);
        // In time order, so each step finds its marks by bisection (the lengths are sorted later).
        self.seqlen_marks.sort_by_key(|(t, _)| *t);
        let mut steps = Vec::with_capacity(cpu.len());
        for (&i, bucket) in order.iter().zip(buckets.iter()) {
            let (Some(mark), Some(&(start, end))) = (cpu.get(i), windows.get(i)) else {
                continue;
            };
            let (spans, totals) = partition(start, end, bucket);
            // Exact lengths, where the step has marks, else what its attention calls reveal.
            let from = self.seqlen_marks.partition_point(|(t, _)| *t < mark.start);
            let to = self.seqlen_marks.partition_point(|(t, _)| *t < mark.end);
            let marks = self.seqlen_marks.get(from..to.max(from)).unwrap_or_default();
            let mut exact = Vec::with_capacity(marks.iter().map(|(_, l)| l.len()).sum());
            exact.extend(marks.iter().flat_map(|(_, l)| l.iter().copied()));
            let step_calls = calls.get(i).and_then(Option::as_deref).unwrap_or_default();
            let mut sequences = if exact.is_empty() {
                sequences_of(step_calls.iter().map(|c| c.shape))
            } else {
                Sequences::from_lengths(SequenceKnowledge::Exact, exact)
            };
            let attention = totals.get(SpanKind::Attention);
            if attention > 0 {
                sequences.attention = Some(attention);
            }
            let mut list = collectives.get_mut(i).map(std::mem::take).unwrap_or_default();
            list.sort_by_key(|c| (c.start, c.end));
            let micro_batches = micro_batches(
                in_passes.get_mut(i).map(std::mem::take).unwrap_or_default(),
                Revealed { marks, calls: step_calls },
                &passes,
            );
            let step = WorkerStep {
                step: mark.number,
                start,
                duration: end - start,
                spans,
                totals,
                sequences,
                ..WorkerStep::default()
            };
            steps.push((step, micro_batches, list));
        }
        steps.sort_by_key(|(s, _, _)| s.step);
        let world_size = world_size_above_rank(self.world_size, self.rank, "distributedInfo.world_size", None, diags);
        // One group of send/recv partners holding the rank is its pipeline (several would be
        // other layouts: neighbour pairs, or context-parallel rings; none is then assumed).
        // Where the calls name no group (gloo records none), the trace's list of process groups
        // may still say which carried them.
        let from_config =
            self.config_pipeline.as_ref().filter(|_| self.saw_point_to_point && self.p2p_groups.is_empty());
        let mut holding =
            self.p2p_groups.iter().chain(from_config).filter(|g| g.len() >= 2 && rank.is_some_and(|r| g.contains(&r)));
        let pipeline_group = match (holding.next(), holding.next()) {
            (Some(group), None) => group.clone(),
            _ => Vec::new(),
        };
        let mut worker = Worker {
            rank: rank.unwrap_or(u32::MAX),
            world_size,
            pipeline_group,
            host: self.host.clone(),
            source: self.file.clone(),
            model_chunks,
            ..Worker::default()
        }
        .with_steps(steps);
        super::assemble::shift_worker(&mut worker, self.base_ns);
        vec![worker]
    }
}

/// The group `distributedInfo.pg_config` (`[{"pg_desc": "mesh_pp", "ranks": [0, 1], …}, …]`)
/// says carried the pipeline's send/recv, for calls that name none: the one it describes as the
/// pipeline (a device mesh's `mesh_pp`, Megatron-LM's `PIPELINE_MODEL_PARALLEL_GROUP`), else
/// the only group there is. Its ranks, sorted. Read by hand (its objects hold strings, numbers
/// and one list of numbers): this runs in the analysis worker's bundle, which a first visit
/// loads, and where every decoder costs.
fn pipeline_in_config(config: &str) -> Option<Vec<u32>> {
    let list = config.trim().strip_prefix('[')?.strip_suffix(']')?;
    let objects: Vec<&str> = list.split('}').filter(|o| o.contains('{')).collect();
    let described = |o: &&&str| {
        value_after_key(o, "\"pg_desc\"").is_some_and(|v| {
            let desc = v.trim_start_matches('"').to_ascii_lowercase();
            ["mesh_pp\"", "mesh_pipe\"", "mesh_pipeline\"", "pipeline_model_parallel"]
                .iter()
                .any(|d| desc.starts_with(d))
        })
    };
    let mut pipelines = objects.iter().filter(described);
    let chosen = match (pipelines.next(), pipelines.next(), objects.as_slice()) {
        (Some(one), None, _) | (None, None, [one]) => one,
        _ => return None,
    };
    let ranks = value_after_key(chosen, "\"ranks\"")?.strip_prefix('[')?.split(']').next()?;
    let mut ranks = list_of_u32(ranks)?;
    ranks.sort_unstable();
    ranks.dedup();
    Some(ranks)
}

/// The text after `key` and its colon in a JSON object's text.
fn value_after_key<'a>(object: &'a str, key: &str) -> Option<&'a str> {
    let (_, after) = object.split_once(key)?;
    Some(after.trim_start().strip_prefix(':')?.trim_start())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The group a trace's `pg_config` says carried send/recv that name none.
    #[test]
    fn the_pipeline_in_a_list_of_process_groups() {
        let as_torch_writes = r#"[{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo,cuda:gloo", "pg_size": 4, "ranks": [0, 1, 2, 3]}, {"pg_name": "2", "pg_desc": "mesh_pp", "backend_config": "cpu:gloo", "pg_size": 2, "ranks": [3, 1]}]"#;
        assert_eq!(pipeline_in_config(as_torch_writes), Some(vec![1, 3]));
        let megatron = r#"[{"pg_desc": "default_pg", "ranks": [0, 1, 2, 3]}, {"pg_desc": "PIPELINE_MODEL_PARALLEL_GROUP", "ranks": [2, 0]}]"#;
        assert_eq!(pipeline_in_config(megatron), Some(vec![0, 2]));
        assert_eq!(pipeline_in_config(r#"[{"pg_desc": "default_pg", "ranks": [1, 0]}]"#), Some(vec![0, 1]));
        let two = r#"[{"pg_name": "0", "ranks": [0, 1]}, {"pg_name": "1", "ranks": [0, 1]}]"#;
        assert_eq!(pipeline_in_config(two), None, "several groups, none described as the pipeline");
        assert_eq!(pipeline_in_config("[]"), None);
        assert_eq!(pipeline_in_config(r#"{"ranks": [0]}"#), None);
    }

    #[test]
    fn lengths_of_a_seqlens_mark() {
        assert_eq!(lengths_in("512,77, 3;;9 +4"), [512, 77, 3, 9, 4]);
        assert_eq!(lengths_in("\t12\n,x,1.5,-3,,4294967295,4294967296, 7 "), [12, 4_294_967_295, 7]);
        assert_eq!(lengths_in(""), [] as [u32; 0]);
        assert_eq!(lengths_in("1\t2,++3,+,5+,6"), [6], "blanks only around a number, one sign before it");
        // The one-pass reading agrees with the rule read piece by piece.
        let by_pieces = |list: &str| -> Vec<u32> {
            list.as_bytes()
                .split(|b| matches!(b, b',' | b' ' | b';'))
                .filter_map(|piece| {
                    let piece = piece.trim_ascii();
                    digits(piece.strip_prefix(b"+").unwrap_or(piece)).and_then(|n| u32::try_from(n).ok())
                })
                .collect()
        };
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let len = (seed % 16) as usize;
            let list: String = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    b"0123456789999, ;+\tx"[(seed % 19) as usize] as char
                })
                .collect();
            assert_eq!(lengths_in(&list), by_pieces(&list), "{list:?}");
        }
        assert_eq!(lengths_in("4294967295,4294967296,99999999999,1"), [4_294_967_295, 1]);
    }

    fn raw(s: &str) -> RawText<'_> {
        RawText(s.as_bytes())
    }

    #[test]
    fn shapes_of_attention_calls() {
        let dims = raw("[[1, 4, 265, 32], [1, 4, 265, 32], [1, 4, 265, 32], [], []]");
        assert_eq!(
            call_shape("aten::scaled_dot_product_attention", Some(dims), None),
            Some(CallShape::Dense { batch: 1, len: 265 })
        );
        let dims = raw("[[8, 4096, 16, 128], [8, 4096, 16, 128]]");
        assert_eq!(
            call_shape("aten::_flash_attention_forward", Some(dims), None),
            Some(CallShape::Dense { batch: 8, len: 4096 })
        );
        let dims = raw("[[9000, 16, 128], [9000, 16, 128], [9000, 16, 128], [5], [5], [], []]");
        let concrete = raw(r#"["", "", "", "", "", "4096", "4096", "0.0"]"#);
        assert_eq!(
            call_shape("flash_attn::_flash_attn_varlen_forward", Some(dims), Some(concrete)),
            Some(CallShape::Varlen { tokens: 9000, count: 4, max_len: 4096 })
        );
        assert_eq!(call_shape("aten::scaled_dot_product_attention", None, None), None);
        // Lists that are not plain shapes (a string, a float, a nested list) are read by the
        // scanner, and a plain one over several lines in one pass, to the same answer.
        let varlen = "flash_attn::_flash_attn_varlen_forward";
        for dims in [
            r#"[[9000, 16, 128], "q", [9000, 16, 128], [5], [], []]"#,
            "[[9000, 16, 128], [0.5], [[1]], [5], [7]]",
            "[\n  [9000,16,128],\n  [5]\n]",
        ] {
            assert_eq!(
                call_shape(varlen, Some(raw(dims)), Some(concrete)),
                Some(CallShape::Varlen { tokens: 9000, count: 4, max_len: 4096 }),
                "{dims}"
            );
        }
        for not_a_call in
            ["[[9000, 16, 128], [5]", r#"[[9000, 16, 128] [5]]"#, "[[-1, 16, 128], [5]]", "[[1, 2, 3, 4, 5], [5]]"]
        {
            assert_eq!(call_shape(varlen, Some(raw(not_a_call)), Some(concrete)), None, "{not_a_call}");
        }
    }

    /// The memo answers what reading the shapes answers: hits, and near misses (the same
    /// dims under another name, the same dims with other scalars), in any order.
    #[test]
    fn remembered_shapes_are_the_shapes() {
        let sdpa = "aten::scaled_dot_product_attention";
        // The same dims mean another length to a flash kernel ([B, S, H, D]).
        let flash = "aten::_flash_attention_forward";
        let varlen = "flash_attn::_flash_attn_varlen_forward";
        let (dense, packed) = ("[[1, 4, 265, 32]]", "[[9000, 16, 128], [5]]");
        let (long, short) = (r#"["", "", "", "", "", "4096", "4096"]"#, r#"["", "", "", "", "", "77", "77"]"#);
        let calls = [
            (sdpa, dense, None),
            (flash, dense, None),
            (sdpa, dense, None),
            (varlen, packed, Some(long)),
            (varlen, packed, Some(short)),
            (varlen, packed, Some(long)),
            (flash, dense, None),
        ];
        let mut memo = ShapeMemo::default();
        for round in 0..3 {
            for (i, &(name, dims, concrete)) in calls.iter().enumerate() {
                let fresh = call_shape(name, Some(raw(dims)), concrete.map(raw));
                let remembered = memo.call_shape(name, Some(raw(dims)), concrete.map(raw));
                assert_eq!(remembered, fresh, "round {round}, call {i}");
            }
        }
    }

    #[test]
    fn time_covered_counts_overlaps_once() {
        for (intervals, total) in [
            (vec![], 0),
            (vec![(0, 10), (20, 25)], 15),
            (vec![(20, 25), (0, 10), (5, 12)], 17),
            (vec![(0, 100), (10, 20), (30, 40)], 100),
            (vec![(5, 5), (7, 3)], 0),
            (vec![(Nanos::MIN, Nanos::MAX), (0, 1)], Nanos::MAX),
        ] {
            assert_eq!(covered(intervals.clone()), total, "{intervals:?}");
        }
    }

    #[test]
    fn layer_repeats_fold_by_their_common_divisor() {
        let d = |len| CallShape::Dense { batch: 1, len };
        // two layers: each document appears twice in a row; two equal documents make a run of 4
        let mut steps = vec![Some(vec![d(5), d(5), d(7), d(7), d(7), d(7)]), Some(vec![d(3), d(3)]), None];
        fold_layer_repeats(&mut steps);
        assert_eq!(steps, vec![Some(vec![d(5), d(7), d(7)]), Some(vec![d(3)]), None]);
        let mut single = vec![Some(vec![d(5), d(7)])];
        fold_layer_repeats(&mut single);
        assert_eq!(single, vec![Some(vec![d(5), d(7)])]);
    }

    #[test]
    fn sequences_of_mixed_calls() {
        let s = sequences_of([CallShape::Dense { batch: 2, len: 10 }].into_iter());
        assert_eq!((s.knowledge, s.lengths.clone(), s.sum_sq_low), (SequenceKnowledge::DenseShapes, vec![10, 10], 200));
        let s = sequences_of([CallShape::Varlen { tokens: 100, count: 4, max_len: 70 }].into_iter());
        assert_eq!(
            (s.knowledge, s.documents, s.sum_sq_low, s.sum_sq_high),
            (SequenceKnowledge::VarlenBounds, 4, 2500, 7000)
        );
    }
}

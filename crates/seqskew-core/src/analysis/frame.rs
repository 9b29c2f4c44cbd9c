//! The job as a worker × step table of the numbers the diagnosis uses, with the parallel
//! layout (data-parallel rank, pipeline stage) each worker holds.

use std::ops::Range;

use crate::model::{Job, Nanos, SequenceKnowledge, Sequences, SpanKind, WorkerStep};

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
        SeqFeatures {
            known: true,
            documents: s.documents as f64,
            tokens: s.tokens as f64,
            max_len: f64::from(s.max_len),
            sum_sq: s.sum_sq_estimate(),
            quadratic: s.sum_sq_estimate(),
        }
    }
}

/// One worker's numbers in one step.
#[derive(Clone, Debug, Default, PartialEq)]
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
    /// Its micro-batches, in order, as a range of [`Frame::micro_batches`] (empty when unknown):
    /// one list for the job, not one allocation per cell, as a large job has millions of cells.
    pub micro_batches: Range<u32>,
    /// Where the worker-step is in the job: (worker index, step index within the worker).
    pub source: (u32, u32),
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
        self.forward + self.backward
    }
}

impl Cell {
    /// The worker's own work: what it computed and where it stalled (everything but waiting).
    pub fn work(&self) -> Nanos {
        self.compute + self.optimizer + self.stall + self.other
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
    /// `cells[step][worker]`; `None` where a worker lacks a step.
    pub cells: Vec<Vec<Option<Cell>>>,
    /// Every cell's micro-batches (see [`Frame::micro_batches_of`]).
    pub micro_batches: Vec<MicroBatchCell>,
    pub knowledge: SequenceKnowledge,
}

impl Frame {
    pub fn cell(&self, step: usize, worker: usize) -> Option<&Cell> {
        self.cells.get(step).and_then(|row| row.get(worker)).and_then(Option::as_ref)
    }

    /// The cells of one step, with their worker indices, in worker order.
    pub fn step_cells(&self, step: usize) -> impl Iterator<Item = (usize, &Cell)> {
        self.cells
            .get(step)
            .into_iter()
            .flat_map(|row| row.iter().enumerate().filter_map(|(w, c)| Some((w, c.as_ref()?))))
    }

    /// A cell's micro-batches, in order.
    pub fn micro_batches_of(&self, cell: &Cell) -> &[MicroBatchCell] {
        let Range { start, end } = cell.micro_batches;
        self.micro_batches.get(start as usize..end as usize).unwrap_or_default()
    }

    /// Does any micro-batch carry timing?
    pub fn has_micro_batches(&self) -> bool {
        self.cells.iter().flatten().flatten().any(|c| c.micro_batches.len() > 1)
    }
}

/// Dense indices for the values present, in sorted order.
fn dense(values: &[Option<u32>]) -> Vec<Option<usize>> {
    let mut distinct: Vec<u32> = values.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    values.iter().map(|v| v.and_then(|v| distinct.binary_search(&v).ok())).collect()
}

/// Builds the table. Workers without pipeline coordinates are stage 0; without data-parallel
/// coordinates they are numbered within their stage in rank order (pure data parallelism).
pub fn build(job: &Job) -> Frame {
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
        let label = match (w.coords.dp, w.coords.pp) {
            (None, None) => format!("rank {}", w.rank),
            (dp, pp) => format!("rank {} (dp {}, pp {})", w.rank, dp.unwrap_or(0), pp.unwrap_or(0)),
        };
        slots.push(Slot { rank: w.rank, dp, stage, label });
    }
    let steps = job.steps();
    let knowledge = job.sequence_knowledge();
    let (mut cells, mut micro_batches) = rows(job, &steps);
    if knowledge == SequenceKnowledge::VarlenBounds {
        use_attention_for_bounds(&mut cells, &mut micro_batches);
    }
    let stages = slots.iter().map(|s| s.stage + 1).max().unwrap_or(1);
    let dp_size = slots.iter().map(|s| s.dp + 1).max().unwrap_or(1);
    Frame { steps, slots, stages, dp_size, cells, micro_batches, knowledge }
}

/// The rows of `steps` (all the job's, sorted), and their cells' micro-batches, which the
/// cells' ranges index.
fn rows(job: &Job, steps: &[u64]) -> (Vec<Vec<Option<Cell>>>, Vec<MicroBatchCell>) {
    // Step by step, as the diagnosis reads the table: each row and the micro-batches of its
    // cells are then laid out in the order every later pass visits them. Each worker's steps
    // are sorted (the model's invariant), so one cursor per worker finds its cell for a row.
    let mut next_step = vec![0usize; job.workers.len()];
    let mut cells: Vec<Vec<Option<Cell>>> = Vec::with_capacity(steps.len());
    let mut micro_batches = Vec::new();
    for &step in steps {
        let mut row = Vec::with_capacity(job.workers.len());
        for (wi, (w, next)) in job.workers.iter().zip(next_step.iter_mut()).enumerate() {
            while w.steps.get(*next).is_some_and(|s| s.step < step) {
                *next += 1;
            }
            let si = *next;
            let Some(s) = w.steps.get(si).filter(|s| s.step == step) else {
                row.push(None);
                continue;
            };
            *next += 1;
            row.push(Some(cell_of(s, (wi as u32, si as u32), &mut micro_batches)));
        }
        cells.push(row);
    }
    (cells, micro_batches)
}

/// One worker-step's cell; its micro-batches are appended to the job's list.
fn cell_of(s: &WorkerStep, source: (u32, u32), micro_batches: &mut Vec<MicroBatchCell>) -> Cell {
    let t = &s.totals;
    let communication = t.communication();
    let p2p = s.p2p_time().min(communication);
    Cell {
        duration: s.duration,
        compute: t.get(SpanKind::Compute) + t.get(SpanKind::Attention),
        attention: s.sequences.attention.unwrap_or_else(|| t.get(SpanKind::Attention)),
        optimizer: t.get(SpanKind::Optimizer),
        collectives: communication - p2p,
        transfer: s.transfer.map(|x| x.min(communication)),
        stall: t.get(SpanKind::HostStall) + t.get(SpanKind::DataLoading),
        other: t.get(SpanKind::Other),
        seq: SeqFeatures::of(&s.sequences),
        micro_batches: {
            let first = micro_batches.len() as u32;
            micro_batches.extend(s.micro_batches.iter().map(|m| MicroBatchCell {
                forward: m.forward,
                backward: m.backward,
                seq: SeqFeatures::of(&m.sequences),
                attention: m.sequences.attention,
            }));
            first..micro_batches.len() as u32
        },
        source,
    }
}

/// With only varlen bounds, a shard's attention cost is best known from its measured attention
/// time. Put it in Σ L² units, calibrated per worker (its total estimate over its total
/// attention time), so a slow worker's or a heavy stage's slowness is not read as heavier data.
fn use_attention_for_bounds(cells: &mut [Vec<Option<Cell>>], micro_batches: &mut [MicroBatchCell]) {
    let workers = cells.iter().map(Vec::len).max().unwrap_or(0);
    for w in 0..workers {
        let (mut sq, mut attn) = (0.0, 0.0);
        for c in cells.iter().filter_map(|row| row.get(w)).flatten().filter(|c| c.seq.known && c.attention > 0) {
            sq += c.seq.sum_sq;
            attn += c.attention as f64;
        }
        if attn <= 0.0 {
            continue;
        }
        let scale = sq / attn;
        for c in cells.iter_mut().filter_map(|row| row.get_mut(w)).flatten() {
            if c.seq.known && c.attention > 0 {
                c.seq.quadratic = c.attention as f64 * scale;
            }
            let Range { start, end } = c.micro_batches;
            for m in micro_batches.get_mut(start as usize..end as usize).unwrap_or_default() {
                if let (true, Some(a)) = (m.seq.known, m.attention.filter(|a| *a > 0)) {
                    m.seq.quadratic = a as f64 * scale;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Coords, Worker, WorkerStep};

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
    }

    #[test]
    fn cells_find_their_rows_whatever_steps_each_worker_has() {
        use crate::model::MicroBatch;
        // Worker 0 has steps 1–3, worker 1 steps 2, 4 and 5 (a gap); micro-batch forward times
        // say which worker-step each came from.
        let step = |step: u64, tag: i64| WorkerStep {
            step,
            duration: tag,
            micro_batches: vec![MicroBatch { forward: tag, ..MicroBatch::default() }; 2],
            ..WorkerStep::default()
        };
        let job = Job {
            workers: vec![
                Worker { rank: 0, steps: vec![step(1, 10), step(2, 20), step(3, 30)], ..Worker::default() },
                Worker { rank: 1, steps: vec![step(2, 21), step(4, 41), step(5, 51)], ..Worker::default() },
            ],
        };
        let f = build(&job);
        assert_eq!(f.steps, [1, 2, 3, 4, 5]);
        // Per row and worker: (duration, source, micro-batch forward times).
        type Seen = Option<(i64, (u32, u32), Vec<i64>)>;
        let table: Vec<Vec<Seen>> = (0..5)
            .map(|si| {
                (0..2)
                    .map(|wi| {
                        f.cell(si, wi)
                            .map(|c| (c.duration, c.source, f.micro_batches_of(c).iter().map(|m| m.forward).collect()))
                    })
                    .collect()
            })
            .collect();
        let cell = |tag, source| Some((tag, source, vec![tag, tag]));
        assert_eq!(
            table,
            [
                vec![cell(10, (0, 0)), None],
                vec![cell(20, (0, 1)), cell(21, (1, 0))],
                vec![cell(30, (0, 2)), None],
                vec![None, cell(41, (1, 1))],
                vec![None, cell(51, (1, 2))],
            ]
        );
    }
}

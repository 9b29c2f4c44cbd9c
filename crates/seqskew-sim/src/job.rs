//! The simulated job as the model (`seqskew_core::model::Job`): what importing the written files
//! gives back (the round-trip tests hold both to that), and a direct input for benchmarks.

use seqskew_core::model::{
    Collective, CollectiveOp, Coords, Job, MicroBatch, SequenceKnowledge, Sequences, SpanKind, Worker, WorkerStep,
};

use crate::config::{Config, Lengths, Packing};
use crate::engine::{GroupStep, OpKind, SimStep};

/// Global rank of a worker, Megatron order: tensor fastest, then context, data, pipeline.
pub fn rank_of(config: &Config, dp: u32, pp: u32, tp: u32, cp: u32) -> u32 {
    tp + config.tp * (cp + config.cp * (dp + config.dp * pp))
}

/// Every worker of the job: (rank, coordinates), sorted by rank.
pub fn workers(config: &Config) -> Vec<(u32, Coords)> {
    let mut out = Vec::with_capacity(config.workers() as usize);
    for pp in 0..config.pp {
        for dp in 0..config.dp {
            for cp in 0..config.cp {
                for tp in 0..config.tp {
                    let coords = Coords { dp: Some(dp), pp: Some(pp), tp: Some(tp), cp: Some(cp) };
                    out.push((rank_of(config, dp, pp, tp, cp), coords));
                }
            }
        }
    }
    out.sort_by_key(|w| w.0);
    out
}

/// What the files reveal of one micro-batch's documents.
pub fn revealed(config: &Config, bin: &[u32]) -> Sequences {
    match (config.reveal, config.packing) {
        (Lengths::Hidden, _) => Sequences::default(),
        (Lengths::Exact, _) => Sequences::from_lengths(SequenceKnowledge::Exact, bin.to_vec()),
        (Lengths::Shapes, Packing::Packed) => Sequences::from_bounds(
            bin.len() as u64,
            bin.iter().map(|&l| u64::from(l)).sum(),
            bin.iter().copied().max().unwrap_or(0),
        ),
        (Lengths::Shapes, Packing::Padded) => {
            let s = bin.iter().copied().max().unwrap_or(0);
            Sequences::from_lengths(SequenceKnowledge::DenseShapes, vec![s; bin.len()])
        }
    }
}

/// One worker's step in the model, with its micro-batches and collectives.
pub fn worker_step(
    config: &Config,
    step: &SimStep,
    group: &GroupStep,
) -> (WorkerStep, Vec<MicroBatch>, Vec<Collective>) {
    let mut pieces = Vec::with_capacity(group.ops.len() * 2);
    let mut micro: Vec<MicroBatch> = Vec::new();
    let mut collectives = Vec::new();
    for op in &group.ops {
        let piece = |start, end, kind| seqskew_core::import::Piece { start, end, kind, micro_batch: op.micro_batch };
        match op.kind {
            OpKind::Forward | OpKind::Backward => {
                let split = op.end - op.attention;
                pieces.push(piece(op.start, split, SpanKind::Compute));
                pieces.push(piece(split, op.end, SpanKind::Attention));
                let id = op.micro_batch.unwrap_or(0);
                if !micro.iter().any(|m| m.id == id) {
                    let bin =
                        step.bins.get((group.dp * config.micro_batches + id) as usize).cloned().unwrap_or_default();
                    let mut sequences = revealed(config, &bin);
                    sequences.attention = Some(0);
                    micro.push(MicroBatch { id, start: Some(op.start), sequences, ..MicroBatch::default() });
                }
                if let Some(mb) = micro.iter_mut().find(|m| m.id == id) {
                    if op.kind == OpKind::Forward {
                        mb.forward += op.end - op.start;
                    } else {
                        mb.backward += op.end - op.start;
                    }
                    mb.sequences.attention = Some(mb.sequences.attention.unwrap_or(0) + op.attention);
                }
            }
            OpKind::Recv => {
                pieces.push(piece(op.start, op.end, SpanKind::Communication));
                collectives.push(Collective { start: op.start, end: op.end, op: CollectiveOp::Recv });
            }
            OpKind::AllReduce { .. } | OpKind::Barrier => {
                pieces.push(piece(op.start, op.end, SpanKind::Communication));
                collectives.push(Collective { start: op.start, end: op.end, op: CollectiveOp::AllReduce });
            }
            OpKind::Optimizer => pieces.push(piece(op.start, op.end, SpanKind::Optimizer)),
            OpKind::Gc => pieces.push(piece(op.start, op.end, SpanKind::HostStall)),
            OpKind::DataWait => pieces.push(piece(op.start, op.end, SpanKind::DataLoading)),
        }
    }
    micro.sort_by_key(|m| m.id);
    let (spans, totals) = seqskew_core::import::partition(step.start, step.end, &pieces);
    let sequences = Sequences::total_of(micro.iter().map(|mb| &mb.sequences));
    let worker_step = WorkerStep {
        step: step.number,
        start: step.start,
        duration: step.end - step.start,
        spans,
        totals,
        transfer: None,
        sequences,
        ..WorkerStep::default()
    };
    (worker_step, micro, collectives)
}

/// The whole job in the model.
pub fn to_job(config: &Config, steps: &[SimStep]) -> Job {
    let mut job = Job {
        workers: workers(config)
            .into_iter()
            .map(|(rank, coords)| Worker {
                rank,
                coords,
                host: Some(host_of(rank)),
                source: "simulation".to_owned(),
                steps: Vec::with_capacity(steps.len()),
                micro_batches: Vec::with_capacity(steps.len() * config.micro_batches as usize),
                ..Worker::default()
            })
            .collect(),
    };
    for step in steps {
        let per_group: Vec<_> = step.groups.iter().map(|g| worker_step(config, step, g)).collect();
        for w in &mut job.workers {
            let g = (w.coords.pp.unwrap_or(0) * config.dp + w.coords.dp.unwrap_or(0)) as usize;
            if let Some((ws, micro_batches, collectives)) = per_group.get(g) {
                w.push_step(ws.clone(), micro_batches.iter().cloned(), collectives.iter().copied());
            }
        }
    }
    // As assembling imported files does.
    seqskew_core::import::measure_transfers(&mut job.workers);
    job
}

/// Eight GPUs per host.
pub fn host_of(rank: u32) -> String {
    format!("node{:03}", rank / 8)
}

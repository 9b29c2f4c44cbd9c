//! Writing a job as a step log (`seqskew.steplog/1`, see `docs/formats.md`): what
//! `seqskew summarize` produces and the simulator writes. The analysis needs nothing more, so a
//! job too large for one browser is summarised where its traces live and the summaries loaded.

use std::io::{self, Write};

use crate::import::STEPLOG_VERSION;
use crate::model::{Job, MicroBatch, Nanos, SequenceKnowledge, Sequences, SpanKind, Worker, WorkerStep};

/// Exact decimal seconds from nanoseconds: `1.500000000`.
fn seconds(ns: Nanos) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}

/// One row's fields in the order they are written (name, JSON text). Absent fields are left out.
fn step_fields(w: &Worker, s: &WorkerStep) -> Vec<(&'static str, String)> {
    let t = &s.totals;
    let mut f = vec![("v", STEPLOG_VERSION.to_string()), ("step", s.step.to_string()), ("rank", w.rank.to_string())];
    coords(w, &mut f);
    if let Some(world) = w.world_size {
        f.push(("world_size", world.to_string()));
    }
    f.push(("start_s", seconds(s.start)));
    f.push(("step_s", seconds(s.duration)));
    // compute_s is all compute, attention included; attn_s says how much of it was attention.
    f.push(("compute_s", seconds(t.get(SpanKind::Compute) + t.get(SpanKind::Attention))));
    for (name, kind) in [
        ("attn_s", SpanKind::Attention),
        ("comm_s", SpanKind::Communication),
        ("wait_s", SpanKind::CollectiveWait),
        ("stall_s", SpanKind::HostStall),
        ("optimizer_s", SpanKind::Optimizer),
        ("data_s", SpanKind::DataLoading),
    ] {
        if t.get(kind) > 0 {
            f.push((name, seconds(t.get(kind))));
        }
    }
    let p2p = w.p2p_time(s);
    if p2p > 0 {
        f.push(("p2p_s", seconds(p2p)));
    }
    if let Some(t) = s.transfer {
        f.push(("transfer_s", seconds(t)));
    }
    // A reader takes a step's sequences from its micro-batch rows when they have them, so
    // listing them on the step row as well would only double the file.
    if !w.micro_batches_of(s).iter().any(|m| m.sequences.is_known()) {
        sequence_fields(&s.sequences, &mut f);
    }
    f
}

fn micro_batch_fields(w: &Worker, s: &WorkerStep, mb: &MicroBatch) -> Vec<(&'static str, String)> {
    let mut f = vec![
        ("v", STEPLOG_VERSION.to_string()),
        ("step", s.step.to_string()),
        ("rank", w.rank.to_string()),
        ("mb", mb.id.to_string()),
    ];
    coords(w, &mut f);
    if let Some(start) = mb.start {
        f.push(("start_s", seconds(start)));
    }
    f.push(("fwd_s", seconds(mb.forward)));
    f.push(("bwd_s", seconds(mb.backward)));
    if let Some(a) = mb.sequences.attention {
        f.push(("attn_s", seconds(a)));
    }
    sequence_fields(&mb.sequences, &mut f);
    f
}

fn coords(w: &Worker, f: &mut Vec<(&'static str, String)>) {
    for (name, value) in [("dp", w.coords.dp), ("pp", w.coords.pp), ("tp", w.coords.tp), ("cp", w.coords.cp)] {
        if let Some(v) = value {
            f.push((name, v.to_string()));
        }
    }
    if let Some(host) = &w.host {
        f.push(("host", serde_json::to_string(host).unwrap_or_default()));
    }
}

fn sequence_fields(q: &Sequences, f: &mut Vec<(&'static str, String)>) {
    match q.knowledge {
        SequenceKnowledge::Unknown => {}
        SequenceKnowledge::Exact | SequenceKnowledge::DenseShapes => {
            let list: Vec<String> = q.lengths.iter().map(u32::to_string).collect();
            f.push(("lengths", format!("[{}]", list.join(","))));
            if q.knowledge == SequenceKnowledge::DenseShapes {
                // Padded lengths from attention shapes, not each document's own.
                f.push(("padded", "1".to_owned()));
            }
        }
        SequenceKnowledge::VarlenBounds => {
            f.push(("tokens", q.tokens.to_string()));
            f.push(("docs", q.documents.to_string()));
            f.push(("max_len", q.max_len.to_string()));
        }
    }
}

/// Every row of the job: per worker-step, then its micro-batches. Sorted by rank, step, mb.
fn rows(job: &Job) -> impl Iterator<Item = Vec<(&'static str, String)>> + '_ {
    job.workers.iter().flat_map(|w| {
        w.steps.iter().flat_map(move |s| {
            std::iter::once(step_fields(w, s))
                .chain(w.micro_batches_of(s).iter().map(move |mb| micro_batch_fields(w, s, mb)))
        })
    })
}

/// JSON Lines, one object per row.
pub fn write_steplog_jsonl(job: &Job, out: &mut dyn Write) -> io::Result<()> {
    for row in rows(job) {
        let body: Vec<String> = row.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        writeln!(out, "{{{}}}", body.join(","))?;
    }
    Ok(())
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 28] = [
    "v",
    "step",
    "rank",
    "mb",
    "dp",
    "pp",
    "tp",
    "cp",
    "host",
    "world_size",
    "start_s",
    "step_s",
    "compute_s",
    "fwd_s",
    "bwd_s",
    "attn_s",
    "comm_s",
    "wait_s",
    "p2p_s",
    "transfer_s",
    "stall_s",
    "optimizer_s",
    "data_s",
    "lengths",
    "padded",
    "tokens",
    "docs",
    "max_len",
];

/// CSV with a header; lengths space-separated in one column.
pub fn write_steplog_csv(job: &Job, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", CSV_COLUMNS.join(","))?;
    for row in rows(job) {
        let cells: Vec<String> = CSV_COLUMNS
            .iter()
            .map(|c| {
                row.iter().find(|(k, _)| k == c).map_or(String::new(), |(_, v)| match *c {
                    "lengths" => v.trim_matches(['[', ']']).replace(',', " "),
                    "host" => format!("\"{}\"", v.trim_matches('"').replace('"', "\"\"")),
                    _ => v.clone(),
                })
            })
            .collect();
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_exact() {
        assert_eq!(seconds(1_500_000_000), "1.500000000");
        assert_eq!(seconds(-42), "-0.000000042");
        assert_eq!(seconds(1_790_857_026_123_456_789), "1790857026.123456789");
    }

    #[test]
    fn the_job_size_survives_a_summary() {
        use crate::import::{assemble, import_bytes};
        use crate::model::WorkerStep;
        // Rank 2 of a job of four, summarised alone: read back, ranks 0, 1 and 3 are missing.
        let step = WorkerStep { step: 7, duration: 1_000, ..WorkerStep::default() };
        let worker = Worker { rank: 2, world_size: Some(4), ..Worker::default() }.with_steps([(step, [], [])]);
        let job = Job { workers: vec![worker] };
        let (mut jsonl, mut csv) = (Vec::new(), Vec::new());
        write_steplog_jsonl(&job, &mut jsonl).unwrap();
        write_steplog_csv(&job, &mut csv).unwrap();
        for (name, bytes) in [("summary.jsonl", jsonl), ("summary.csv", csv)] {
            let read = assemble(&[import_bytes(name, &bytes)]).job;
            let ranks: Vec<(u32, Option<u32>)> = read.workers.iter().map(|w| (w.rank, w.world_size)).collect();
            assert_eq!((ranks, read.missing_ranks()), (vec![(2, Some(4))], vec![0, 1, 3]), "{name}");
        }
    }
}

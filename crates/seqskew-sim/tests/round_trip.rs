//! Every file the simulator writes imports back into the job it simulated.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed expectation is the test failing

use std::fmt::Write as _;

use seqskew_core::export::{write_steplog_csv, write_steplog_jsonl};
use seqskew_core::import::{assemble, import_bytes};
use seqskew_core::model::{Job, SpanKind};
use seqskew_sim::config::{Lengths, Packing};
use seqskew_sim::job::to_job;
use seqskew_sim::write::chrome::ChromeWriter;
use seqskew_sim::write::kineto::KinetoWriter;
use seqskew_sim::{Config, preset, simulate};

/// What a format carries beyond the timings.
#[derive(Clone, Copy)]
struct Carries {
    micro_batches: bool,
    coords: bool,
}

const EVERYTHING: Carries = Carries { micro_batches: true, coords: true };

/// Per worker-step: time by kind (µs), sequences, and what else the format carries.
fn digest(job: &Job, carries: Carries) -> String {
    let us = |ns: i64| (ns + 500) / 1000;
    let mut out = String::new();
    for w in &job.workers {
        for s in &w.steps {
            let t = &s.totals;
            let idle = t.get(SpanKind::HostStall) + t.get(SpanKind::DataLoading) + t.get(SpanKind::Other);
            let q = &s.sequences;
            write!(
                out,
                "r{} {:?} s{} {}us compute {} attn {} opt {} comm {} idle {} | {:?} {} docs {} tok max {} sq {}..{} attn {:?}",
                w.rank,
                if carries.coords { (w.coords.dp, w.coords.pp) } else { (None, None) },
                s.step,
                us(s.duration),
                us(t.get(SpanKind::Compute)),
                us(t.get(SpanKind::Attention)),
                us(t.get(SpanKind::Optimizer)),
                us(t.communication()),
                us(idle),
                q.knowledge,
                q.documents,
                q.tokens,
                q.max_len,
                q.sum_sq_low,
                q.sum_sq_high,
                q.attention.map(us),
            )
            .unwrap();
            if carries.micro_batches {
                for m in w.micro_batches_of(s) {
                    write!(out, " | mb{} {} {} {:?}", m.id, us(m.forward), us(m.backward), m.sequences.lengths)
                        .unwrap();
                }
            }
            writeln!(out).unwrap();
        }
    }
    out
}

fn small(name: &str) -> Config {
    Config { steps: 3, dp: 4, ..preset(name).unwrap() }
}

fn imported(files: Vec<(String, Vec<u8>)>) -> Job {
    let imports: Vec<_> = files.iter().map(|(n, b)| import_bytes(n, b)).collect();
    for i in &imports {
        let errors: Vec<_> =
            i.diagnostics.iter().filter(|d| d.severity >= seqskew_core::diag::Severity::Warning).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", i.file);
    }
    assemble(&imports).job
}

fn chrome_files(config: &Config) -> Vec<(String, Vec<u8>)> {
    let mut w = ChromeWriter::new(config, Vec::new()).unwrap();
    for step in simulate(config) {
        w.step(&step).unwrap();
    }
    vec![("job.trace.json".into(), w.finish().unwrap())]
}

/// One Kineto trace per rank; with `passes`, each pass annotated as `torch.distributed.pipelining`
/// annotates it.
fn kineto_files(config: &Config, passes: bool) -> Vec<(String, Vec<u8>)> {
    let outputs = vec![Vec::new(); config.workers() as usize];
    let w = KinetoWriter::new(config, outputs).unwrap();
    let mut w = if passes { w.annotating_passes() } else { w };
    for step in simulate(config) {
        w.step(&step).unwrap();
    }
    w.finish().unwrap().into_iter().enumerate().map(|(r, b)| (format!("rank{r}.pt.trace.json"), b)).collect()
}

/// Asserts equal digests, showing the first line that differs (the whole digest is long).
fn same(got: &str, want: &str, what: &str) {
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "{what}: line {i} differs");
    }
    assert_eq!(got.lines().count(), want.lines().count(), "{what}: number of worker-steps");
}

fn check(config: &Config) {
    let expected = to_job(config, &simulate(config));
    let want = digest(&expected, EVERYTHING);
    // Merged timer traces carry exact lengths or none (they have no attention shapes).
    if config.reveal != Lengths::Shapes {
        same(&digest(&imported(chrome_files(config)), EVERYTHING), &want, "chrome trace");
    }
    let mut jsonl = Vec::new();
    write_steplog_jsonl(&expected, &mut jsonl).unwrap();
    // Each document's length is written once: on its micro-batch's row, or on its step's row
    // when the step has no micro-batch sequences.
    let listed =
        |rows: &[u8]| rows.split(|&b| b == b'\n').filter(|r| r.windows(9).any(|w| w == b"\"lengths\"")).count();
    let with_lengths = |w: &seqskew_core::model::Worker, s: &seqskew_core::model::WorkerStep| {
        let mbs = w.micro_batches_of(s).iter().filter(|m| !m.sequences.lengths.is_empty()).count();
        if mbs > 0 { mbs } else { usize::from(!s.sequences.lengths.is_empty()) }
    };
    let expected_lists: usize =
        expected.workers.iter().flat_map(|w| w.steps.iter().map(move |s| with_lengths(w, s))).sum();
    assert_eq!(listed(&jsonl), expected_lists, "rows listing lengths");
    same(&digest(&imported(vec![("log.jsonl".into(), jsonl)]), EVERYTHING), &want, "step log jsonl");
    let mut csv = Vec::new();
    write_steplog_csv(&expected, &mut csv).unwrap();
    same(&digest(&imported(vec![("log.csv".into(), csv)]), EVERYTHING), &want, "step log csv");
    // Kineto traces name neither micro-batches nor parallel coordinates, and a GPU trace cannot
    // tell a data-loader wait from idling (the digest adds them up).
    let bare = Carries { micro_batches: false, coords: false };
    same(&digest(&imported(kineto_files(config, false)), bare), &digest(&expected, bare), "kineto");
    // Annotated passes name the micro-batches (and their lengths, where the trace marks them).
    let passes = Carries { micro_batches: true, coords: false };
    same(
        &digest(&imported(kineto_files(config, true)), passes),
        &digest(&expected, passes),
        "kineto, passes annotated",
    );
}

#[test]
fn sequence_imbalance_with_a_pipeline() {
    check(&small("seqlen-imbalance"));
}

#[test]
fn stalls_slow_workers_and_stages() {
    check(&small("gc-stalls"));
    check(&small("slow-worker"));
    check(&Config { steps: 2, dp: 2, ..preset("stage-imbalance").unwrap() });
}

#[test]
fn padded_batches_with_shapes_only_and_model_parallel_names() {
    check(&Config {
        packing: Packing::Padded,
        reveal: Lengths::Shapes,
        tp: 2,
        cp: 2,
        dp: 2,
        ..small("seqlen-imbalance")
    });
    check(&Config { reveal: Lengths::Shapes, ..small("balanced") });
    check(&Config { reveal: Lengths::Hidden, ..small("mixed") });
}

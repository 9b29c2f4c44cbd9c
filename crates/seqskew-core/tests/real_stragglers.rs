//! Straggling jobs made here (real torchrun jobs on CPU, `tests/fixtures/stragglers`, see its
//! `make_fixtures.py`): each case's Kineto traces, as torch wrote them, against the verdict
//! written from how the job was made (`expected.tsv`), never from what the code printed. These
//! are real traces, not the simulator's: what they score is evidence, where the corpus of
//! `seqskew eval` is a regression guard.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::path::PathBuf;

use seqskew_core::analysis::{diagnose, frame};
use seqskew_core::diag::Severity;
use seqskew_core::import::{FileImport, assemble, import_bytes};
use seqskew_core::report::Report;
use seqskew_core::schedule::PipelineSchedule;

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stragglers")
}

fn report_of(case: &str) -> Report {
    let imports = imports_of(case);
    let inputs: Vec<_> = imports.iter().map(FileImport::summary).collect();
    diagnose(&assemble(&imports), &inputs)
}

fn imports_of(case: &str) -> Vec<FileImport> {
    let traces = cases_dir().join(case).join("traces");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&traces).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let imports: Vec<FileImport> = paths
        .iter()
        .map(|p| import_bytes(&p.file_name().unwrap().to_string_lossy(), &std::fs::read(p).unwrap()))
        .collect();
    assert!(imports.len() >= 2, "{case}: one trace per rank, at least two");
    for import in &imports {
        let errors: Vec<_> = import.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", import.file);
    }
    imports
}

/// The cases that are 2-stage pipelines (`torch.distributed.pipelining`, one stage per rank),
/// with their layout (dp, pp).
const PIPELINES: [(&str, (usize, usize)); 3] =
    [("heavy_last_stage", (1, 2)), ("pipeline_seqlen", (1, 2)), ("dp_pp_heavy_stage", (2, 2))];

#[test]
fn real_cpu_jobs_get_the_verdict_they_were_made_for() {
    let table = std::fs::read_to_string(cases_dir().join("expected.tsv")).unwrap();
    let mut checked = 0;
    for line in table.lines().skip(1) {
        let [case, primary, slow_ranks] = line.split('\t').collect::<Vec<_>>()[..] else {
            panic!("expected.tsv: {line:?} is not three tab-separated fields");
        };
        let report = report_of(case);
        let said = format!("{case}: {}", report.verdict.headline);
        assert_eq!(report.verdict.primary, primary, "{said}");
        // gloo's traces name no group for the pipelines' send/recv: the layout comes from the
        // process groups each trace lists (the only one, or the device mesh's `mesh_pp`).
        let layout = PIPELINES.iter().find(|(c, _)| *c == case).map_or((report.job.dp, 1), |(_, l)| *l);
        assert_eq!((report.job.dp, report.job.pp), layout, "{said}");
        let mut slow: Vec<u32> = report.slow_workers.iter().map(|w| w.rank).collect();
        slow.sort_unstable();
        let expected: Vec<u32> = slow_ranks.split(',').filter_map(|r| r.parse().ok()).collect();
        if primary == "slow_worker" {
            assert_eq!(slow, expected, "{said}");
        }
        checked += 1;
    }
    assert_eq!(checked, 11);
}

/// The pipelines ran `ScheduleGPipe` (make_fixtures.py): their first stage's forwards run back to
/// back, so the replay runs them as GPipe, not as the 1F1B most pipelines run.
#[test]
fn real_pipelines_are_replayed_in_the_schedule_they_ran() {
    for (case, _) in PIPELINES {
        let frame = frame::build(&assemble(&imports_of(case)).job);
        assert_eq!(frame.schedule, PipelineSchedule::Gpipe, "{case}");
    }
}

/// The replay of a pipeline's measured passes reproduces its measured step within 10% before
/// any ideal is derived from it. On gloo a pass's sends and receives hold its stage's thread
/// (`MicroBatch::p2p`): without them the replay came out 0.80, 0.79 and 0.90 of the step.
#[test]
fn real_pipelines_replay_their_measured_step() {
    for (case, _) in PIPELINES {
        let fidelity = report_of(case).slowdown.replay_fidelity;
        assert!((0.9..=1.1).contains(&fidelity), "{case}: the replay is {fidelity} of the measured step");
    }
}

/// S is comparable with other tools': on every real pipeline its ideal (each pass at the mean of
/// its kind, stage and worker factors taken out) is within 10% of the usual what-if analysis's
/// (every op at its median across workers, no launch delays). Where one worker draws far more
/// work than the others (data-parallel sequence-length imbalance) the two part by design.
#[test]
fn real_pipelines_slowdown_agrees_with_the_median_op_what_if() {
    for (case, _) in PIPELINES {
        let slowdown = report_of(case).slowdown;
        let median_ops = slowdown.median_ops_factor.unwrap();
        let ratio = slowdown.factor / median_ops;
        assert!((0.9..=1.1).contains(&ratio), "{case}: S {} against {median_ops} with median ops", slowdown.factor);
    }
}

//! Training logs as input (`tests/fixtures/training_logs`, see its README): the iteration
//! lines of Megatron-LM, torchtitan, DeepSpeed and Hugging Face read from the forms their sources print, and real
//! torchrun jobs made here on CPU whose console and lengths record get the verdict written
//! from how each job was made (`expected.tsv`), never from what the code printed.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use seqskew_core::analysis::diagnose;
use seqskew_core::diag::{Location, Severity};
use seqskew_core::import::{FileImport, assemble, import_bytes};
use seqskew_core::report::Report;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/training_logs")
}

fn import(path: &Path) -> FileImport {
    import_bytes(&path.file_name().unwrap().to_string_lossy(), &std::fs::read(path).unwrap())
}

/// The `#   line N: step S, …` comments at the top of a forms file: the parse its author
/// wrote from the format strings, (line, step, the time per iteration in ms where given).
fn expected_parse(text: &str) -> Vec<(u64, u64, Option<f64>)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("#   line "))
        .map(|l| {
            let (line, rest) = l.split_once(": step ").unwrap();
            let (step, rest) = rest.split_once(',').unwrap_or((rest, ""));
            let ms = rest.trim().strip_prefix("ms_per_iteration ").map(|t| t.parse().unwrap());
            (line.parse().unwrap(), step.trim().parse().unwrap(), ms)
        })
        .collect()
}

/// The forms files: each line's parse is written at its top.
const FORMS: [&str; 4] = ["megatron_forms.log", "torchtitan_forms.log", "deepspeed_forms.log", "hf_trainer_forms.log"];

#[test]
fn iteration_lines_are_read_as_their_sources_print_them() {
    for file in FORMS {
        let path = dir().join(file);
        let expected = expected_parse(&std::fs::read_to_string(&path).unwrap());
        assert!(expected.len() >= 5, "{file}: the expected parse is listed");
        let evidence = import(&path).failure.unwrap();
        let read: Vec<(u64, u64, Option<f64>)> =
            evidence.iterations.iter().map(|i| (i.line, i.step, i.step_ns.map(|ns| ns as f64 / 1e6))).collect();
        assert_eq!(read, expected, "{file}");
    }
}

#[test]
fn a_progress_line_whose_time_does_not_parse_is_skipped_and_named_by_its_line() {
    let import = import(&dir().join("deepspeed_forms.log"));
    let warnings: Vec<_> = import
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .map(|d| (d.location, d.message.as_str()))
        .collect();
    assert_eq!(
        warnings,
        vec![(Some(Location::Line(36)), "a training-progress line skipped: its time is not a number")],
        "the 'steps: 30' line ran into another rank's output"
    );
    let evidence = import.failure.unwrap();
    assert!(evidence.iterations.iter().all(|i| i.step != 30), "its step is not kept");
    for other in FORMS.iter().filter(|&&f| f != "deepspeed_forms.log") {
        let evidence = self::import(&dir().join(other)).failure.unwrap();
        assert_eq!(evidence.unreadable_lines, 0, "{other}: every progress line reads");
    }
}

#[test]
fn straggler_lines_name_each_intervals_slowest_and_fastest_rank() {
    let evidence = import(&dir().join("megatron_forms.log")).failure.unwrap();
    assert!(!evidence.rank_extremes.is_empty(), "the forms file has straggler lines");
    for e in &evidence.rank_extremes {
        assert!(e.slowest_ns >= e.fastest_ns, "line {}: MxRtt below MnRtt", e.line);
    }
}

fn report_of(case: &str) -> Report {
    let imports: Vec<FileImport> =
        ["console.log.gz", "lengths.jsonl"].iter().map(|f| import(&dir().join(case).join(f))).collect();
    for import in &imports {
        let errors: Vec<_> = import.diagnostics.iter().filter(|d| d.severity == Severity::Error).collect();
        assert!(errors.is_empty(), "{case}/{}: {errors:?}", import.file);
    }
    let inputs: Vec<_> = imports.iter().map(FileImport::summary).collect();
    diagnose(&assemble(&imports), &inputs)
}

/// Cases whose inputs cannot show how they were made, and why: the verdict must then be
/// `inconclusive` saying so, never a confident other cause.
const CANNOT_SHOW: [(&str, &str); 2] = [
    (
        // One 2048-token document on a random rank every step: the costliest shard costs the
        // same every step, so the job's step time is flat and a log without per-rank times
        // cannot say what the imbalance costs (the Megatron-LM twin with straggler lines can).
        "torchtitan_seqlen",
        "does not vary with it",
    ),
    (
        // A Hugging Face Trainer run of one process: nothing to straggle, and one rank's
        // lengths cannot tell that from a job whose other ranks were not recorded.
        "hf_trainer",
        "one rank only",
    ),
];

#[test]
fn real_cpu_jobs_logs_get_the_verdict_they_were_made_for() {
    let table = std::fs::read_to_string(dir().join("expected.tsv")).unwrap();
    let mut checked = 0;
    for line in table.lines().skip(1) {
        let [case, _form, primary, slow_ranks] = line.split('\t').collect::<Vec<_>>()[..] else {
            panic!("expected.tsv: {line:?} is not four tab-separated fields");
        };
        let report = report_of(case);
        let said = format!("{case}: {} ({})", report.verdict.headline, report.verdict.confidence);
        assert_eq!(report.job.step_times.as_deref(), Some("training_log"), "{said}");
        assert_ne!(report.verdict.confidence, "high", "a log alone never gives high confidence: {said}");
        assert!(report.verdict.to_confirm.is_some(), "{said}: says what a log cannot tell");
        match CANNOT_SHOW.iter().find(|(c, _)| *c == case) {
            Some((_, why)) => {
                assert_eq!(report.verdict.primary, "inconclusive", "{said}");
                assert!(report.verdict.headline.contains(why), "{said}");
            }
            None => assert_eq!(report.verdict.primary, primary, "{said}"),
        }
        let slow: Vec<u32> = report.slow_workers.iter().map(|w| w.rank).collect();
        let expected: Vec<u32> = slow_ranks.split(',').filter_map(|r| r.parse().ok()).collect();
        if primary == "slow_worker" {
            assert_eq!(slow, expected, "{said}");
        }
        if primary == "sequence_length_imbalance" && report.verdict.primary == primary {
            assert!(report.slowdown.factor >= 1.10, "{said}: S = {}", report.slowdown.factor);
            assert!(report.fix.cost_function.is_some(), "{said}: the fix has the fitted cost");
        }
        checked += 1;
    }
    assert_eq!(checked, 8);
}

/// A step log with lengths and the job's step time but no per-rank compute is judged by what
/// step times can show, not replayed as if every rank took the same time ("balanced, high"
/// before). Written here: 4 ranks, 12 steps; the rank holding one long document changes
/// every step and the step time follows its Σ L².
#[test]
fn a_step_log_of_lengths_and_job_step_times_is_judged_by_its_step_times() {
    let mut rows = String::new();
    for step in 0..12u64 {
        let heavy = step % 4;
        let long = 1024 + 256 * (step % 5);
        for rank in 0..4u64 {
            let lengths = if rank == heavy { format!("[{long}]") } else { format!("[{}, {}]", long / 2, long / 2) };
            // 50 ms plus 40 ns per token² of the heaviest shard: the pace the long document sets.
            let step_s = 0.05 + 40e-9 * (long * long) as f64;
            rows.push_str(&format!(
                "{{\"step\":{step},\"rank\":{rank},\"step_s\":{step_s:.9},\"lengths\":{lengths}}}\n"
            ));
        }
    }
    let imports = vec![import_bytes("steps.jsonl", rows.as_bytes())];
    let report = diagnose(&assemble(&imports), &imports.iter().map(FileImport::summary).collect::<Vec<_>>());
    assert_eq!(report.job.step_times.as_deref(), Some("job_level"));
    assert_eq!(report.verdict.primary, "sequence_length_imbalance", "{}", report.verdict.headline);
    assert!(report.slowdown.factor > 1.10, "S = {}", report.slowdown.factor);

    // The same lengths without any time: no verdict, and it says what to add.
    let lengths_only: String = rows
        .lines()
        .map(|l| {
            let (head, tail) = l.split_once(",\"step_s\":").unwrap();
            let tail = tail.split_once(',').unwrap().1;
            format!("{head},{tail}\n")
        })
        .collect();
    let imports = vec![import_bytes("lengths.jsonl", lengths_only.as_bytes())];
    let report = diagnose(&assemble(&imports), &imports.iter().map(FileImport::summary).collect::<Vec<_>>());
    assert_eq!(report.verdict.primary, "inconclusive");
    assert!(report.verdict.headline.contains("no step times"), "{}", report.verdict.headline);
    let advice = report.verdict.to_confirm.unwrap_or_default();
    assert!(advice.starts_with("Give the training log of the same run"), "asks for what is missing: {advice}");
}

/// A lengths record numbered from 0 beside a Megatron-LM log numbered from 1: the report says
/// the join by step number is off by one, rather than only that few steps have lengths.
#[test]
fn a_lengths_record_counted_from_zero_is_named_as_the_problem() {
    let case = dir().join("megatron_natural");
    let shifted: String = std::fs::read_to_string(case.join("lengths.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let (head, rest) = l.split_once("\"step\":").unwrap();
            let (number, tail) = rest.split_once(',').unwrap();
            let step: u64 = number.trim().parse().unwrap();
            format!("{head}\"step\":{},{tail}\n", step - 1)
        })
        .collect();
    let imports = vec![import(&case.join("console.log.gz")), import_bytes("lengths.jsonl", shifted.as_bytes())];
    let report = diagnose(&assemble(&imports), &imports.iter().map(FileImport::summary).collect::<Vec<_>>());
    let said: Vec<&str> = report.job.diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert!(said.iter().any(|m| m.contains("the lengths' step k is taken as the log's step k+1")), "{said:?}");
}

/// Hugging Face's Trainer with `disable_tqdm=True` prints its loss dicts (no step, no time) and
/// the run's summary: one mean step over the run, which says no more than that.
#[test]
fn a_run_summary_alone_gives_the_mean_step_and_says_what_to_keep() {
    let text = std::fs::read_to_string(dir().join("hf_trainer_forms.log")).unwrap();
    let dicts: String = text.lines().filter(|l| l.starts_with('{')).map(|l| format!("{l}\n")).collect();
    let imports = vec![import_bytes("console.log", dicts.as_bytes())];
    let inputs: Vec<_> = imports.iter().map(FileImport::summary).collect();
    let report = diagnose(&assemble(&imports), &inputs);
    assert_eq!(report.job.step_times.as_deref(), Some("training_log"));
    assert_eq!((report.job.first_step, report.job.last_step), (Some(1), Some(40)));
    assert_eq!(report.verdict.primary, "inconclusive");
    assert!(report.verdict.headline.contains("one mean step time"), "{}", report.verdict.headline);
}

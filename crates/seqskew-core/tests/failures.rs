//! Failed jobs made here (real torchrun jobs on CPU, `tests/fixtures/failures`, see its
//! README): each case's files, and subsets of them, against the verdict written from how the
//! job was made (`expected.tsv`), never from what the code printed.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use seqskew_core::failure::diagnose;
use seqskew_core::import::{assemble, import_bytes};
use seqskew_core::report::Failure;

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/failures")
}

/// Every file torch, torchrun or srun wrote for a case (not the generator's `run.json`).
fn files_of(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_of(&path, out);
        } else if path.file_name().is_some_and(|n| n != "run.json") {
            out.push(path);
        }
    }
}

/// The diagnosis of the case's files that `keep` selects (by path relative to the case).
fn diagnose_case(case: &str, keep: impl Fn(&str) -> bool) -> Option<Failure> {
    let root = cases_dir().join(case);
    let mut paths = Vec::new();
    files_of(&root, &mut paths);
    let imports: Vec<_> = paths
        .iter()
        .filter_map(|p| {
            let relative = p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
            keep(&relative).then(|| import_bytes(&format!("{case}/{relative}"), &std::fs::read(p).unwrap()))
        })
        .collect();
    assert!(!imports.is_empty(), "{case}: no files selected");
    for import in &imports {
        let errors: Vec<_> =
            import.diagnostics.iter().filter(|d| d.severity == seqskew_core::diag::Severity::Error).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", import.file);
    }
    diagnose(&assemble(&imports).failures)
}

/// `case → (cause, initiating, collateral)` from expected.tsv.
fn expected() -> Vec<(String, String, String, String)> {
    expected_in("")
}

/// [`expected`] of a folder of cases (`nccl/`: written from PyTorch's and NCCL's format strings).
fn expected_in(folder: &str) -> Vec<(String, String, String, String)> {
    let table = std::fs::read_to_string(cases_dir().join(folder).join("expected.tsv")).unwrap();
    table
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            (format!("{folder}{}", cols[0]), cols[1].into(), cols[2].into(), cols[3].into())
        })
        .collect()
}

fn ranks(list: &[u32]) -> String {
    if list.is_empty() { "-".into() } else { list.iter().map(u32::to_string).collect::<Vec<_>>().join(",") }
}

/// What a diagnosis says, in expected.tsv's terms.
fn row(failure: Option<&Failure>) -> (String, String, String) {
    match failure {
        None => ("none".into(), "-".into(), "-".into()),
        Some(f) => (f.cause.clone(), ranks(&f.initiating_ranks), ranks(&f.collateral_ranks)),
    }
}

#[test]
fn every_file_of_each_case() {
    for (case, cause, initiating, collateral) in expected() {
        let got = row(diagnose_case(&case, |_| true).as_ref());
        assert_eq!(got, (cause, initiating, collateral), "{case}");
    }
}

/// Formats this machine cannot produce (NCCL on GPUs, several nodes, older torch), written
/// from the format strings in the producing projects' source (nccl/README.md cites each).
#[test]
fn nccl_and_multi_node_logs_written_from_their_format_strings() {
    for (case, cause, initiating, collateral) in expected_in("nccl/") {
        let got = row(diagnose_case(&case, |_| true).as_ref());
        assert_eq!(got, (cause, initiating, collateral), "{case}");
    }
}

#[test]
fn the_console_alone() {
    for (case, cause, initiating, _) in expected() {
        let failure = diagnose_case(&case, |p| p.starts_with("console.log"));
        let (got_cause, got_initiating, _) = row(failure.as_ref());
        assert_eq!((got_cause, got_initiating), (cause, initiating), "{case}");
    }
}

/// The per-rank logs of torchrun's `--log-dir` (stdout, stderr, error files), no console.
/// A rank killed with SIGKILL writes nothing, and only the console carries torchrun's report
/// of the kill: there the logs alone must say they cannot tell (which victims printed an error
/// before torchrun stopped them is a race, so "the quiet rank" is not one rank).
#[test]
fn the_log_dir_alone() {
    for (case, cause, initiating, _) in expected() {
        let failure = diagnose_case(&case, |p| p.starts_with("logs/"));
        let (got_cause, got_initiating, _) = row(failure.as_ref());
        let expected = match case.as_str() {
            "killed" => ("unknown".to_owned(), "-".to_owned()),
            _ => (cause, initiating),
        };
        assert_eq!((got_cause, got_initiating), expected, "{case}");
    }
}

/// Flight Recorder dumps alone (pickle, then JSON) tell who is behind, not why; where the
/// dumps of the ranks that would decide were not written (a killed rank writes none), they
/// must say they cannot tell.
#[test]
fn the_flight_recorder_dumps_alone() {
    let table = [
        ("raise", "2"),
        ("hang", "1"),
        ("oom", "1"),
        ("slurm_prefix", "2"),
        // Ranks 0 and 2 dumped; 1 (a victim stopped by torchrun) and 3 (the killed one) did not.
        ("killed", "-"),
        // Ranks 1 and 3 dumped, both victims at the same collective; 0 and 2 wrote none.
        ("extra_collective", "-"),
    ];
    for (case, initiating) in table {
        for folder in ["fr/", "fr_json/"] {
            let failure = diagnose_case(case, |p| p.starts_with(folder));
            let (_, got, _) = row(failure.as_ref());
            assert_eq!(got, initiating, "{case} {folder}");
        }
    }
}

#[test]
fn logs_with_the_job_s_step_logs_say_where_the_failing_rank_stopped() {
    let root = cases_dir().join("oom_long_document");
    let mut paths = Vec::new();
    files_of(&root, &mut paths);
    let imports: Vec<_> =
        paths.iter().map(|p| import_bytes(&p.to_string_lossy(), &std::fs::read(p).unwrap())).collect();
    let summaries: Vec<_> = imports.iter().map(seqskew_core::import::FileImport::summary).collect();
    let report = seqskew_core::analysis::analyze(&assemble(&imports), &summaries).report;
    let failure = report.failure.clone().unwrap();
    assert_eq!((failure.cause.as_str(), failure.initiating_ranks.as_slice()), ("oom", &[3][..]));
    // The job wrote steps 0..2 on every rank (steps/rank*.jsonl); rank 3's step 2 held
    // documents of 125, 83, 458 and 235 tokens, and rank 2's a 994-token one.
    let want = seqskew_core::report::FailureInJob {
        rank: 3,
        last_step: 2,
        job_last_step: 2,
        tokens: 901,
        longest: 458,
        batch_longest: 994,
    };
    assert_eq!(failure.in_job, Some(want));
    assert!(report.to_markdown().contains("In the job's steps: Rank 3 recorded steps up to 2"));
}

#[test]
fn a_job_that_succeeded_has_no_failure() {
    let failure = diagnose_case("success", |_| true);
    assert_eq!(failure, None);
}

/// Dumps that are cut short or try to run code are named with what is wrong, and the other
/// files' evidence still decides.
#[test]
fn truncated_and_hostile_dumps_are_diagnostics() {
    let dump = std::fs::read(cases_dir().join("raise/fr/nccl_trace_rank_2")).unwrap();
    let cut = import_bytes("fr/nccl_trace_rank_2", dump.get(..dump.len() / 2).unwrap());
    // `os.system("echo owned")` by GLOBAL + REDUCE: never run, refused by name.
    let hostile = import_bytes(
        "fr/nccl_trace_rank_9",
        b"\x80\x02cos\nsystem\nq\x00X\x0a\x00\x00\x00echo ownedq\x01\x85q\x02Rq\x03.",
    );
    for (import, fragment) in [(&cut, "truncated"), (&hostile, "GLOBAL")] {
        let error = import.diagnostics.iter().find(|d| d.severity == seqskew_core::diag::Severity::Error);
        assert!(
            error.is_some_and(|d| d.message.contains(fragment) && d.file == import.file),
            "{:?}",
            import.diagnostics
        );
        assert!(import.failure.is_none());
    }
    let console = std::fs::read(cases_dir().join("raise/console.log.gz")).unwrap();
    let imports = [cut, hostile, import_bytes("raise/console.log.gz", &console)];
    let failure = diagnose(&assemble(&imports).failures).unwrap();
    assert_eq!((failure.cause.as_str(), failure.initiating_ranks.as_slice()), ("crash", &[2][..]));
}

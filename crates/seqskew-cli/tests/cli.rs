//! The `seqskew` binary as users and CI scripts call it: the documented flags, exit codes, JSON
//! shapes and messages of docs/cli.md, on jobs the binary itself synthesises (`seqskew synth`)
//! and on small broken files written here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// Runs `seqskew args…`.
fn seqskew<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_seqskew")).args(args).output().expect("the seqskew binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(out)))
}

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A synthetic job of 30 steps from a preset, in `formats` (`kineto`, `jsonl`, …), under `dir`.
fn synth(dir: &Path, preset: &str, formats: &str) -> PathBuf {
    let out = dir.join(preset);
    let done = seqskew(&[
        "synth".as_ref(),
        "--preset".as_ref(),
        preset.as_ref(),
        "--steps".as_ref(),
        "30".as_ref(),
        "--format".as_ref(),
        formats.as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert!(done.status.success(), "synth {preset}: {}", stderr(&done));
    out
}

fn path_arg(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

#[test]
fn check_exit_codes_tell_straggling_from_ok_from_unusable_input() {
    let dir = scratch("check");
    let imbalanced = synth(&dir, "seqlen-imbalance", "jsonl").join("steps.jsonl");
    let balanced = synth(&dir, "balanced", "jsonl").join("steps.jsonl");
    let empty = dir.join("empty.json");
    std::fs::write(&empty, b"").expect("an empty file");

    let out = seqskew(&["check", path_arg(&imbalanced)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).starts_with("STRAGGLING: S = 1."), "{}", stdout(&out));
    assert!(stdout(&out).contains("(bound 1.10); Sequence-length imbalance"), "{}", stdout(&out));

    // The bound is the user's.
    let out = seqskew(&["check", path_arg(&imbalanced), "--max-slowdown", "2.0"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).starts_with("ok: S = 1."), "{}", stdout(&out));

    let out = seqskew(&["check", path_arg(&balanced)]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(stdout(&out).lines().count(), 1, "nothing to confirm: {}", stdout(&out));

    let out = seqskew(&["check", "--json", path_arg(&imbalanced)]);
    assert_eq!(out.status.code(), Some(1));
    let check = json(&out);
    assert_eq!(check["schema"], "seqskew.check/1");
    assert_eq!((check["ok"].as_bool(), check["max_slowdown"].as_f64()), (Some(false), Some(1.1)));
    assert_eq!(check["primary"], "sequence_length_imbalance");
    assert!(check["slowdown"].as_f64().is_some_and(|s| s > 1.1), "{check}");
    assert!(check["to_confirm"].is_null(), "{check}");

    // A pipeline whose traces name no micro-batches (as Megatron-LM's do not) cannot show uneven
    // micro-batches: the gate says so under its line, and in its JSON.
    let pipeline = synth(&dir, "stage-imbalance", "kineto").join("kineto");
    let out = seqskew(&["check", path_arg(&pipeline)]);
    let printed = stdout(&out);
    let said: Vec<&str> = printed.lines().collect();
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said.first().is_some_and(|l| l.starts_with("STRAGGLING: S = ")), "{said:?}");
    assert!(said.get(1).is_some_and(|l| l.starts_with("note: The traces name no micro-batches")), "{said:?}");
    let check = json(&seqskew(&["check", "--json", path_arg(&pipeline)]));
    assert!(check["to_confirm"].as_str().is_some_and(|t| t.contains("record_function(\"Forward N\")")), "{check}");

    // Unusable input: 2, with the file and what is wrong on standard error.
    let out = seqskew(&["check", path_arg(&empty)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("empty.json: the file is empty (0 bytes)"), "{}", stderr(&out));
    let out = seqskew(&["check", path_arg(&dir.join("no-such-dir"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no-such-dir"), "{}", stderr(&out));
    // Usage errors are 2 as well.
    assert_eq!(seqskew(&["check", path_arg(&balanced), "--max-slowdown", "fast"]).status.code(), Some(2));
}

#[test]
fn inspect_json_has_the_documented_shape_and_names_a_broken_file() {
    let dir = scratch("inspect");
    let kineto = synth(&dir, "slow-worker", "kineto").join("kineto");
    std::fs::write(kineto.join("cut.json.gz"), [0x1f, 0x8b, 0x08, 0x00, 0xde, 0xad]).expect("a broken file");

    let out = seqskew(&["inspect", "--json", path_arg(&kineto)]);
    assert_eq!(out.status.code(), Some(0), "a usable file is enough: {}", stderr(&out));
    let report = json(&out);
    let files = report["files"].as_array().expect("files[]");
    let (broken, traces): (Vec<&Value>, Vec<&Value>) =
        files.iter().partition(|f| f["path"].as_str().is_some_and(|p| p.ends_with("cut.json.gz")));
    assert_eq!((broken.len(), traces.len()), (1, 8), "{report}");
    for f in &traces {
        assert_eq!(f["format"], "kineto", "{f}");
        assert_eq!((f["workers"].as_u64(), f["steps"].as_u64()), (Some(1), Some(30)), "{f}");
        assert_eq!(f["has_sequence_lengths"], true, "{f}");
        // Megatron-style traces annotate no pipeline passes: no micro-batches are named.
        assert_eq!(f["micro_batches"], 0, "{f}");
        assert!(f["spans"]["kept"].as_u64().is_some_and(|n| n > 0), "{f}");
        assert_eq!(f["diagnostics"].as_array().map(Vec::len), Some(0), "{f}");
    }
    let errors: Vec<&Value> = broken
        .iter()
        .flat_map(|f| f["diagnostics"].as_array().into_iter().flatten())
        .filter(|d| d["severity"] == "error")
        .collect();
    assert!(!errors.is_empty() && errors.iter().all(|d| d["message"].is_string()), "{report}");
    assert_eq!((report["job"]["workers"].as_u64(), report["job"]["steps"].as_u64()), (Some(8), Some(30)));
    assert_eq!((report["job"]["dp"].as_u64(), report["job"]["pp"].as_u64()), (Some(8), Some(1)));

    // Every file unusable: 2.
    let out = seqskew(&["inspect", path_arg(&kineto.join("cut.json.gz"))]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
}

#[test]
fn inspect_text_names_each_file_its_workers_and_ranks() {
    let dir = scratch("inspect-text");
    let kineto = synth(&dir, "balanced", "kineto").join("kineto");
    let out = seqskew(&["inspect", path_arg(&kineto.join("rank3.pt.trace.json"))]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.first().is_some_and(|l| l.ends_with("rank3.pt.trace.json  [PyTorch profiler (Kineto) trace]")),
        "{text}"
    );
    assert!(lines.get(1).is_some_and(|l| l.starts_with("  1 worker (rank 3), 30 steps (")), "{text}");
    assert!(lines.get(1).is_some_and(|l| l.ends_with("sequences: exact")), "{text}");
    assert_eq!(lines.get(2), Some(&"job: 1 worker (dp 1 × pp 1), 30 steps"), "{text}");
    // One rank of eight: the job's warning says which are missing.
    assert!(lines.get(3).is_some_and(|l| l.contains("ranks 0-2, 4-7 are missing")), "{text}");

    let out = seqskew(&["inspect", path_arg(&kineto)]);
    assert!(stdout(&out).contains("job: 8 workers (dp 8 × pp 1), 30 steps"), "{}", stdout(&out));

    // A step log names each step's micro-batches (the preset's four).
    let log = synth(&dir, "balanced", "jsonl").join("steps.jsonl");
    let out = seqskew(&["inspect", path_arg(&log)]);
    let text = stdout(&out);
    assert!(
        text.lines().nth(1).is_some_and(|l| l.ends_with("sequences: exact, micro-batches: up to 4 a step")),
        "{text}"
    );
}

#[test]
fn analyze_prints_the_versioned_report_in_each_form() {
    let dir = scratch("analyze");
    let steps = synth(&dir, "seqlen-imbalance", "jsonl").join("steps.jsonl");

    let out = seqskew(&["analyze", "--json", path_arg(&steps)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["schema"], "seqskew.report/1");
    for key in ["inputs", "job", "verdict", "slowdown", "whatif", "stragglers", "fix", "verify_command"] {
        assert!(report.get(key).is_some(), "the report has {key}");
    }
    assert_eq!(report["verdict"]["primary"], "sequence_length_imbalance");
    assert_eq!(report["job"]["has_sequence_lengths"], true);
    assert_eq!(report["inputs"][0]["format"], "steplog_jsonl");
    assert!(report["verify_command"].as_str().is_some_and(|c| c.starts_with("seqskew compare ")));

    let markdown = stdout(&seqskew(&["analyze", "--markdown", path_arg(&steps)]));
    assert!(markdown.starts_with("## seqskew: Sequence-length imbalance"), "{markdown}");
    // Markdown is the default.
    assert_eq!(stdout(&seqskew(&["analyze", path_arg(&steps)])), markdown);

    let html = stdout(&seqskew(&["analyze", "--html", path_arg(&steps)]));
    assert!(html.contains(r#"id="verdict" data-cause="sequence_length_imbalance""#), "{html}");
    assert!(!html.contains("<script"), "a self-contained page without scripts");

    // The forms exclude each other.
    let out = seqskew(&["analyze", "--json", "--html", path_arg(&steps)]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_broken_file_is_named_and_the_others_are_still_analysed() {
    let dir = scratch("broken");
    let job = synth(&dir, "slow-worker", "jsonl");
    std::fs::write(job.join("notes.json"), br#"{"loss": [1.0, 0.9]}"#).expect("a non-trace");
    std::fs::write(job.join("cut.jsonl.gz"), [0x1f, 0x8b, 0x08, 0x00, 0xde, 0xad]).expect("a broken file");

    let out = seqskew(&["analyze", "--json", path_arg(&job)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["verdict"]["primary"], "slow_worker", "the good file's verdict");
    let inputs = report["inputs"].as_array().expect("inputs[]");
    let problems = |name: &str| -> Vec<String> {
        inputs
            .iter()
            .filter(|i| i["path"].as_str().is_some_and(|p| p.ends_with(name)))
            .flat_map(|i| i["diagnostics"].as_array().into_iter().flatten())
            .filter(|d| d["severity"] == "error")
            .filter_map(|d| d["message"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(!problems("cut.jsonl.gz").is_empty(), "{inputs:?}");
    assert!(problems("notes.json").iter().any(|m| m.contains("not a trace")), "{inputs:?}");
    assert!(problems("steps.jsonl").is_empty(), "{inputs:?}");

    // The Markdown names them under "Input problems".
    let markdown = stdout(&seqskew(&["analyze", path_arg(&job)]));
    assert!(markdown.contains("### Input problems"), "{markdown}");
    assert!(markdown.contains("cut.jsonl.gz"), "{markdown}");
}

#[test]
fn a_trace_without_steps_says_how_to_record_them() {
    let dir = scratch("no-steps");
    let trace = dir.join("rank0.pt.trace.json");
    let events = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#;
    let text = format!(
        r#"{{"schemaVersion": 1, "distributedInfo": {{"rank": 0, "world_size": 1}}, "traceEvents": [{events}]}}"#
    );
    std::fs::write(&trace, text).expect("a trace");
    let out = seqskew(&["analyze", path_arg(&trace)]);
    assert_eq!(out.status.code(), Some(2));
    let message = stderr(&out);
    assert!(message.contains("rank0.pt.trace.json: no training steps found: no ProfilerStep#N spans"), "{message}");
    assert!(message.contains("call `prof.step()` once per training step"), "{message}");
}

#[test]
fn summarize_writes_a_step_log_that_diagnoses_alike() {
    let dir = scratch("summarize");
    let kineto = synth(&dir, "seqlen-imbalance", "kineto").join("kineto");
    let summary = dir.join("summary.jsonl.gz");
    let out = seqskew(&["summarize", path_arg(&kineto), "-o", path_arg(&summary)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("summarised 16 workers, 30 steps into"), "{}", stderr(&out));

    let verdict = |path: &Path| json(&seqskew(&["analyze", "--json", path_arg(path)]))["verdict"]["primary"].clone();
    assert_eq!(verdict(&summary), "sequence_length_imbalance");
    assert_eq!(verdict(&summary), verdict(&kineto));
}

#[test]
fn compare_says_whether_the_fix_held() {
    let dir = scratch("compare");
    let before = synth(&dir, "seqlen-imbalance", "jsonl").join("steps.jsonl");
    let after = synth(&dir, "seqlen-balanced", "jsonl").join("steps.jsonl");

    let out = seqskew(&["compare", path_arg(&before), path_arg(&after)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("**Fixed: steps take"), "{}", stdout(&out));

    let compared = json(&seqskew(&["compare", "--json", path_arg(&before), path_arg(&after)]));
    assert_eq!(compared["schema"], "seqskew.compare/1");
    assert_eq!(compared["before"]["primary"], "sequence_length_imbalance");
    assert_eq!(compared["after"]["primary"], "balanced");
    assert!(compared["speedup"].as_f64().is_some_and(|s| s > 1.05), "{compared}");

    // Compare does not gate: the fix undone still exits 0.
    let out = seqskew(&["compare", path_arg(&after), path_arg(&before)]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!stdout(&out).contains("**Fixed:"), "{}", stdout(&out));
}

#[test]
fn synth_writes_every_format_and_each_diagnoses_as_its_truth_says() {
    let dir = scratch("synth");
    let out = dir.join("job");
    let done = seqskew(&[
        "synth",
        "--preset",
        "stage-imbalance",
        "--steps",
        "12",
        "--format",
        "kineto,chrome,jsonl,csv",
        "--gzip",
        "-o",
        path_arg(&out),
    ]);
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    let truth: Value = serde_json::from_slice(&std::fs::read(out.join("truth.json")).expect("truth.json"))
        .expect("truth.json is JSON");
    assert_eq!(truth["schema"], "seqskew.truth/1");
    let cause = truth["primary"].clone();
    assert_eq!(cause, "pipeline_stage_imbalance");
    let ranks = std::fs::read_dir(out.join("kineto")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(ranks, 32, "one gzipped Kineto trace per rank");
    // The Kineto traces' send/recv groups give the pipeline's layout.
    let inspected = stdout(&seqskew(&["inspect", path_arg(&out.join("kineto"))]));
    assert!(inspected.contains("job: 32 workers (dp 8 × pp 4), 12 steps"), "{inspected}");
    for input in ["kineto", "job.trace.json.gz", "steps.jsonl.gz", "steps.csv.gz"] {
        let report = json(&seqskew(&["analyze", "--json", path_arg(&out.join(input))]));
        assert_eq!(report["verdict"]["primary"], cause, "{input}");
        assert_eq!((report["job"]["workers"].as_u64(), report["job"]["pp"].as_u64()), (Some(32), Some(4)), "{input}");
    }
}

#[test]
fn eval_scores_a_small_corpus() {
    let dir = scratch("eval");
    let summary_file = dir.join("eval.json");
    let out = seqskew(&["eval", "--jobs", "8", "--seeds", "2", "--json", path_arg(&summary_file)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = stdout(&out);
    assert!(printed.contains("== seed 1") && printed.contains("== seed 2"), "{printed}");
    assert!(printed.contains("per family: scenario → correct / cases"), "{printed}");
    let side_by_side = printed.split("accuracy over jobs with a clear label, 2 seeds").nth(1).unwrap_or_default();
    assert!(side_by_side.contains("seed 1  seed 2   worst") && side_by_side.contains("worst: "), "{printed}");
    let written: Value = serde_json::from_slice(&std::fs::read(&summary_file).expect("the JSON")).expect("JSON");
    let (summary, outcomes) = (&written[0], written[1].as_array().expect("the outcomes"));
    assert_eq!((summary["cases"].as_u64(), outcomes.len()), (Some(8), 8), "one outcome per job of seed 1");
    // The summary is the outcomes' count: right primary causes over the clear jobs, and per family.
    let clear: Vec<&Value> = outcomes.iter().filter(|o| o["ambiguous"] == false).collect();
    let right = clear.iter().filter(|o| o["predicted"] == o["truth"]).count();
    let accuracy = summary["accuracy"].as_f64().expect("accuracy");
    assert!((accuracy - right as f64 / clear.len().max(1) as f64).abs() < 1e-9, "{summary}");
    let families = summary["per_family"].as_object().expect("per family");
    let counted: u64 = families.values().filter_map(|v| v[0].as_u64()).sum();
    assert_eq!(counted, clear.len() as u64, "{summary}");
}

#[test]
fn eval_scores_the_families_it_is_given() {
    let out = seqskew(&["eval", "--jobs", "24", "--family", "sliding-window,slow-node"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = stdout(&out);
    let families = printed.split("per family: scenario → correct / cases").nth(1).unwrap_or_default();
    let named: Vec<&str> =
        families.lines().filter_map(|l| l.split_whitespace().next()).take_while(|w| *w != "primary-cause").collect();
    assert_eq!(named, ["sliding-window", "slow-node"], "{printed}");
    let out = seqskew(&["eval", "--family", "moe"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--family moe: no such family") && stderr(&out).contains("sliding-window"),
        "{}",
        stderr(&out)
    );
}

/// The failed jobs made here with torchrun (crates/seqskew-core/tests/fixtures/failures).
fn failure_case(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../seqskew-core/tests/fixtures/failures").join(case)
}

#[test]
fn check_fails_a_failed_job_and_names_its_initiating_rank() {
    let out = seqskew(&["check", path_arg(&failure_case("raise"))]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).starts_with("FAILED (crash): Rank 2 failed on its own"), "{}", stdout(&out));

    let check = json(&seqskew(&["check", "--json", path_arg(&failure_case("oom"))]));
    assert_eq!((check["ok"].as_bool(), &check["failure"]["cause"]), (Some(false), &Value::from("oom")));
    assert_eq!(check["failure"]["initiating_ranks"], serde_json::json!([1]));

    let out = seqskew(&["check", path_arg(&failure_case("success"))]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("no failure found"), "{}", stdout(&out));
}

#[test]
fn a_terminal_paste_on_standard_input_is_a_log() {
    use std::io::Write;
    let paste = "\x1b[31m[default3]:[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\x1b[0m\r\n\
                 [...]\n[default0]:[rank0]: RuntimeError: Connection closed by peer [10.0.0.3]:29500\n";
    let mut child = Command::new(env!("CARGO_BIN_EXE_seqskew"))
        .args(["analyze", "--json", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(paste.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let report = json(&out);
    assert_eq!(report["inputs"][0]["path"], "stdin");
    assert_eq!(report["inputs"][0]["format"], "log");
    assert_eq!(report["failure"]["cause"], "oom");
    assert_eq!(report["failure"]["initiating_ranks"], serde_json::json!([3]));
    assert_eq!(report["failure"]["collateral_ranks"], serde_json::json!([0]));
}

#[test]
fn the_scale_out_recipe_summarises_in_shards_that_diagnose_as_the_traces_do() {
    // examples/scale/local.sh runs the task script the Slurm array job and the Kubernetes
    // Indexed Job run (docs/scale.md), so this is the fan-out they make, on one machine.
    let dir = scratch("scale");
    let traces = synth(&dir, "seqlen-imbalance", "kineto").join("kineto");
    let summaries = dir.join("summaries");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scale/local.sh");
    let run = |shards: &str| {
        Command::new(&script)
            .args([path_arg(&traces), path_arg(&summaries), shards, "2"])
            .env("SEQSKEW", env!("CARGO_BIN_EXE_seqskew"))
            .output()
            .expect("bash runs examples/scale/local.sh")
    };
    let out = run("5");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut parts: Vec<String> = std::fs::read_dir(&summaries)
        .expect("the summaries folder")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    parts.sort();
    assert_eq!(
        parts,
        (0..5).map(|i| format!("part-{i:05}.jsonl.gz")).collect::<Vec<_>>(),
        "one summary per shard, nothing left half-written"
    );

    let report = |path: &Path| json(&seqskew(&["analyze", "--json", path_arg(path)]));
    let (from_summaries, from_traces) = (report(&summaries), report(&traces));
    assert_eq!(from_summaries["job"]["workers"], 16, "every rank is in one summary");
    assert_eq!(from_summaries["verdict"]["primary"], "sequence_length_imbalance");
    assert_eq!(from_summaries["verdict"]["primary"], from_traces["verdict"]["primary"]);
    // A shard sees only some ranks of each collective, so it must not measure transfers (it
    // would count waiting for another shard's ranks as transfer, and S would come out low).
    let slowdown = |r: &Value| r["slowdown"]["factor"].as_f64().expect("a slowdown");
    assert!(
        (slowdown(&from_summaries) - slowdown(&from_traces)).abs() < 0.005,
        "{} vs {}",
        slowdown(&from_summaries),
        slowdown(&from_traces)
    );

    // More shards than files: the spare tasks succeed and write nothing.
    std::fs::remove_dir_all(&summaries).expect("the summaries folder");
    let out = run("20");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("no files (only 16 files for 20 shards)"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&summaries).expect("the summaries folder").count(), 16);
}

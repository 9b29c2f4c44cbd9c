//! Bad input is a diagnostic that names the file and says what is wrong, never a panic; and
//! however a file is cut into chunks, it imports to the same result.
//!
//! Data-driven: [`cases`] is a table of inline inputs (no fixtures), each with the file name it
//! is imported under and what must come out; [`check`] imports one and checks it. The
//! `#[test]`s at the end are regressions for bugs these tests and `fuzz/` found (all fixed; see
//! docs/fuzzing.md), each on its own so that a return names the bug.

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};

use seqskew_core::diag::{Location, Severity};
use seqskew_core::import::{FileImport, FileIngest, Format, assemble, import_bytes};

// ---------------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------------

/// ProfilerStep#1..#3 (user_annotation X events on tid 1), CPU ops inside each, and one
/// `gloo:all_reduce` per step on the gloo thread (tid 2). Times in microseconds.
const STEP_EVENTS: &str = r#"
    {"ph": "M", "name": "thread_name", "pid": 7, "tid": 2, "args": {"name": "thread 2 (pt_gloo_runloop)"}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 1, "ts": 1000.5, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 1010.5, "dur": 40},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "pid": 7, "tid": 1, "ts": 1055.5, "dur": 10},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 7, "tid": 2, "ts": 1070.5, "dur": 25},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 7, "tid": 1, "ts": 1100.5, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 1110.5, "dur": 45},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 7, "tid": 2, "ts": 1170.5, "dur": 20},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 7, "tid": 1, "ts": 1200.5, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": 1210.5, "dur": 50},
    {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 7, "tid": 2, "ts": 1275.5, "dur": 20}"#;

/// Top-level keys before `traceEvents`, as PyTorch writes them, for rank 3.
const RANK3: &str = r#"
  "distributedInfo": {"backend": "gloo", "rank": 3, "world_size": 4},
  "baseTimeNanoseconds": 1700000000000000000,"#;

/// A Kineto document: `header` (top-level keys, each followed by a comma) and `events`.
fn kineto_with(header: &str, events: &str) -> Vec<u8> {
    format!(
        "{{\n  \"schemaVersion\": 1,{header}\n  \"traceEvents\": [{events}\n  ],\n  \"traceName\": \"rank3.pt.trace.json\"\n}}\n"
    )
    .into_bytes()
}

/// The minimal valid Kineto trace of rank 3.
fn kineto() -> Vec<u8> {
    kineto_with(RANK3, STEP_EVENTS)
}

/// The valid trace with more events after the step events.
fn kineto_plus(extra: &str) -> Vec<u8> {
    kineto_with(RANK3, &format!("{STEP_EVENTS},\n    {extra}"))
}

/// The valid trace with raw bytes (not valid JSON text) spliced in as one more event.
fn kineto_plus_bytes(extra: &[u8]) -> Vec<u8> {
    let mut events = format!("{STEP_EVENTS},\n    ").into_bytes();
    events.extend_from_slice(extra);
    let mut out = format!("{{\n  \"schemaVersion\": 1,{RANK3}\n  \"traceEvents\": [").into_bytes();
    out.extend_from_slice(&events);
    out.extend_from_slice(b"\n  ]\n}\n");
    out
}

/// A merged Chrome trace of two ranks: step spans, compute tagged with micro-batches, an
/// all-reduce; rank 1 uses B/E pairs.
const CHROME: &str = r#"{"displayTimeUnit": "ms", "traceEvents": [
  {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "rank 0"}},
  {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "rank 1"}},
  {"ph": "X", "name": "step 1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
  {"ph": "X", "name": "forward-compute", "pid": 1, "tid": 1, "ts": 0, "dur": 60, "args": {"mb_id": 0}},
  {"ph": "X", "name": "all-reduce", "pid": 1, "tid": 1, "ts": 60, "dur": 40},
  {"ph": "X", "name": "step 2", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
  {"ph": "X", "name": "forward-compute", "pid": 1, "tid": 1, "ts": 100, "dur": 70, "args": {"mb_id": 0}},
  {"ph": "B", "name": "step 1", "pid": 2, "tid": 1, "ts": 0},
  {"ph": "X", "name": "forward-compute", "pid": 2, "tid": 1, "ts": 0, "dur": 80},
  {"ph": "E", "pid": 2, "tid": 1, "ts": 110},
  {"ph": "B", "name": "step 2", "pid": 2, "tid": 1, "ts": 110},
  {"ph": "E", "pid": 2, "tid": 1, "ts": 200}
]}
"#;

const JSONL: &str = r#"{"v": 1, "step": 1, "rank": 0, "step_s": 0.5, "compute_s": 0.3, "comm_s": 0.1, "lengths": [512, 77]}
{"v": 1, "step": 1, "rank": 1, "step_s": 0.6, "compute_s": 0.4, "comm_s": 0.1, "lengths": [300]}
{"v": 1, "step": 2, "rank": 0, "step_s": 0.5, "compute_s": 0.3, "comm_s": 0.1, "lengths": [128, 128]}
{"v": 1, "step": 2, "rank": 1, "step_s": 0.5, "compute_s": 0.3, "comm_s": 0.1, "lengths": [256]}
"#;

const CSV: &str = "step,rank,mb,step_s,compute_s,lengths\n\
                   1,0,,0.5,0.3,\"512 77\"\n\
                   1,1,,0.6,0.4,300\n\
                   2,0,,0.5,0.3,128 128\n\
                   2,1,,0.5,0.3,256\n";

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("gzip into memory");
    encoder.finish().expect("gzip into memory")
}

// ---------------------------------------------------------------------------------------------
// Expectations and the one checker
// ---------------------------------------------------------------------------------------------

/// What must come out of one file.
#[derive(Clone, Copy, Debug)]
struct Expect {
    format: Option<Format>,
    /// (rank, step numbers) of each worker with steps, in order. Empty: nothing usable.
    workers: &'static [(u32, &'static [u64])],
    /// Diagnostics that must be there: severity and a fragment of the message. Every warning
    /// and error must match one of these (infos may come unlisted).
    diags: &'static [(Severity, &'static str)],
}

/// Nothing usable: the format (if recognised) and what the diagnostics must say.
const fn rejected(format: Option<Format>, diags: &'static [(Severity, &'static str)]) -> Expect {
    Expect { format, workers: &[], diags }
}

const UNKNOWN_RANK: u32 = u32::MAX;
const STEPS_1_2_3: &[u64] = &[1, 2, 3];
const RANK3_STEPS: &[(u32, &[u64])] = &[(3, STEPS_1_2_3)];

/// One row of the table.
struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    expect: Expect,
}

fn case(name: &'static str, bytes: impl Into<Vec<u8>>, expect: Expect) -> Case {
    Case { name, bytes: bytes.into(), expect }
}

/// Feeds `bytes` in chunks of `chunk` bytes; a panic becomes an `Err` with its message.
fn ingest(name: &str, bytes: &[u8], chunk: usize) -> Result<FileImport, String> {
    catch_unwind(AssertUnwindSafe(|| {
        let mut ingest = FileIngest::new(name);
        for c in bytes.chunks(chunk.max(1)) {
            ingest.feed(c);
        }
        ingest.finish()
    }))
    .map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        format!("{name}: the import panicked ({message}) instead of reporting a diagnostic")
    })
}

/// What holds of every import, good or bad: every diagnostic names the file and says
/// something, and a file with nothing usable has an error saying why.
fn invariants(name: &str, import: &FileImport) -> Result<(), String> {
    if import.file != name {
        return Err(format!("{name}: the import is named {:?}", import.file));
    }
    for d in &import.diagnostics {
        if d.file != name || d.message.trim().is_empty() {
            return Err(format!("{name}: diagnostic does not name the file or is empty: {d:?}"));
        }
    }
    if !import.is_usable() && !import.diagnostics.iter().any(|d| d.severity == Severity::Error) {
        return Err(format!("{name}: nothing usable, yet no error says why: {:#?}", import.diagnostics));
    }
    Ok(())
}

fn listing(import: &FileImport) -> String {
    import.diagnostics.iter().map(|d| format!("\n    {d}")).collect()
}

/// Imports `bytes` as the file `name` in one chunk and checks it against `expect`.
fn try_check(name: &str, bytes: &[u8], expect: Expect) -> Result<FileImport, String> {
    let import = ingest(name, bytes, usize::MAX)?;
    invariants(name, &import)?;
    if import.format != expect.format {
        return Err(format!("{name}: format {:?}, expected {:?}{}", import.format, expect.format, listing(&import)));
    }
    let workers: Vec<(u32, Vec<u64>)> = import
        .workers
        .iter()
        .filter(|w| !w.steps.is_empty())
        .map(|w| (w.rank, w.steps.iter().map(|s| s.step).collect()))
        .collect();
    let expected: Vec<(u32, Vec<u64>)> = expect.workers.iter().map(|&(r, s)| (r, s.to_vec())).collect();
    if workers != expected {
        return Err(format!("{name}: workers {workers:?}, expected {expected:?}{}", listing(&import)));
    }
    for &(severity, fragment) in expect.diags {
        if !import.diagnostics.iter().any(|d| d.severity == severity && d.message.contains(fragment)) {
            return Err(format!("{name}: no {severity:?} saying {fragment:?} among:{}", listing(&import)));
        }
    }
    for d in import.diagnostics.iter().filter(|d| d.severity >= Severity::Warning) {
        if !expect.diags.iter().any(|&(s, f)| s == d.severity && d.message.contains(f)) {
            return Err(format!("{name}: unexpected diagnostic: {d}"));
        }
    }
    Ok(import)
}

/// [`try_check`], failing the test with the reason.
fn check(name: &str, bytes: &[u8], expect: Expect) -> FileImport {
    try_check(name, bytes, expect).unwrap_or_else(|why| panic!("{why}"))
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------

fn cases() -> Vec<Case> {
    use Severity::{Error, Info, Warning};
    let kineto_rank3 = |diags| Expect { format: Some(Format::Kineto), workers: RANK3_STEPS, diags };
    let no_content = |diags| rejected(None, diags);
    let truncated = {
        let full = kineto();
        let cut = String::from_utf8(full).expect("ASCII").find("ProfilerStep#3").expect("step 3 is in the trace");
        kineto().get(..cut).expect("a prefix").to_vec()
    };
    let mut truncated_gzip = gzip(&kineto());
    truncated_gzip.truncate(truncated_gzip.len() / 2);
    vec![
        // Good files of every format, so that the chunking test covers them.
        case("rank3.pt.trace.json", kineto(), kineto_rank3(&[])),
        case("rank3.pt.trace.json.gz", gzip(&kineto()), kineto_rank3(&[])),
        case(
            "merged.json",
            CHROME,
            Expect { format: Some(Format::ChromeTrace), workers: &[(0, &[1, 2]), (1, &[1, 2])], diags: &[] },
        ),
        case(
            "merged.json.gz",
            gzip(CHROME.as_bytes()),
            Expect { format: Some(Format::ChromeTrace), workers: &[(0, &[1, 2]), (1, &[1, 2])], diags: &[] },
        ),
        case(
            "steps.jsonl",
            JSONL,
            Expect { format: Some(Format::StepLogJsonl), workers: &[(0, &[1, 2]), (1, &[1, 2])], diags: &[] },
        ),
        case(
            "small-world.jsonl",
            r#"{"step": 1, "rank": 3, "step_s": 0.5, "world_size": 2}"#,
            Expect {
                format: Some(Format::StepLogJsonl),
                workers: &[(3, &[1])],
                diags: &[(Warning, "world_size 2 is not above its rank 3; ignored")],
            },
        ),
        case(
            "steps.csv",
            CSV,
            Expect { format: Some(Format::StepLogCsv), workers: &[(0, &[1, 2]), (1, &[1, 2])], diags: &[] },
        ),
        // Nothing to read.
        case("empty.json", Vec::new(), no_content(&[(Error, "the file is empty (0 bytes)")])),
        case("blank.json", " \n\t \r\n  ", no_content(&[(Error, "the file has no content")])),
        // Text that is no trace is a log: read, and found to show no failure (not a guess).
        case(
            "notes.txt",
            "Training run 7\nloss went down, then up.\n",
            Expect {
                format: Some(Format::Log),
                workers: &[],
                diags: &[(Info, "log of 2 lines: no failure found")],
            },
        ),
        case(
            "plot.png",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x02\x80\0\0\x01\xe0\x08\x06\0\0\0".to_vec(),
            no_content(&[(Error, "not an input seqskew reads: binary content")]),
        ),
        case(
            "config.json",
            r#"{"model": "llama", "layers": 32, "lr": 0.0003, "tags": ["a", "b"]}"#,
            no_content(&[(Error, "JSON, but not a trace")]),
        ),
        // JSON of the wrong shape.
        case("numbers.json", "[1, 2, 3]", no_content(&[(Error, "JSON, but not a trace")])),
        case(
            "events5.json",
            r#"{"traceEvents": 5}"#,
            rejected(Some(Format::ChromeTrace), &[(Error, "\"traceEvents\" is not an array")]),
        ),
        case(
            "events-object.json",
            r#"{"schemaVersion": 1, "traceEvents": {"ph": "X", "name": "ProfilerStep#1"}}"#,
            rejected(Some(Format::Kineto), &[(Error, "\"traceEvents\" is not an array")]),
        ),
        case(
            "scalars.json",
            r#"{"schemaVersion": 1, "traceEvents": [1, "two", null, [3]]}"#,
            rejected(
                Some(Format::Kineto),
                &[(Warning, "an element of the event array is not an object"), (Error, "no training steps found")],
            ),
        ),
        // Bug 9 (found by fuzzing): what follows a complete document was reported only when
        // it arrived in the same chunk as the document's last byte.
        case(
            "rank3-and-more.pt.trace.json",
            [kineto(), b"\n{\"traceEvents\": []}\n".to_vec()].concat(),
            kineto_rank3(&[(Info, "data after the end of the JSON document was ignored")]),
        ),
        case(
            "no-steps.json",
            kineto_with(RANK3, r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}"#),
            // With how to record steps.
            rejected(Some(Format::Kineto), &[(Error, "no training steps found: no ProfilerStep#N spans (profile with a schedule")]),
        ),
        case(
            "no-steps-merged.json",
            r#"{"traceEvents": [{"ph": "X", "name": "forward", "pid": 0, "tid": 0, "ts": 1, "dur": 2}]}"#,
            rejected(Some(Format::ChromeTrace), &[(Error, "no training steps found: no step spans")]),
        ),
        case(
            "header-only.csv",
            "step,rank,step_s\n",
            rejected(Some(Format::StepLogCsv), &[(Error, "no training steps found: no row with a step, a rank and a time")]),
        ),
        case(
            "no-events.json",
            r#"{"schemaVersion": 1, "distributedInfo": {"rank": 0}}"#,
            rejected(Some(Format::Kineto), &[(Error, "no training steps found")]),
        ),
        // Gzip gone wrong.
        case(
            "cut.json.gz",
            truncated_gzip,
            rejected(
                Some(Format::Kineto),
                &[(Error, "the gzip stream ends early"), (Error, "the file ends before any trace events")],
            ),
        ),
        // Truncated plain JSON: what came before the cut is kept.
        case(
            "rank3-cut.json",
            truncated,
            Expect {
                format: Some(Format::Kineto),
                workers: &[(3, &[1, 2])],
                diags: &[(Warning, "the file ends early (truncated?)")],
            },
        ),
        // Bad bytes inside names: a control character in a step's name, invalid UTF-8 and a
        // control character in an op's name. The events are still imported (step 2 is there).
        case(
            "bad-bytes.json",
            String::from_utf8(kineto()).expect("ASCII").replace("ProfilerStep#2\"", "ProfilerStep#2\t\"").into_bytes(),
            kineto_rank3(&[(Warning, "control characters or invalid UTF-8")]),
        ),
        case(
            "bad-utf8.json",
            kineto_plus_bytes(
                b"{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::\x01mm\xff\xfe\", \"pid\": 7, \"tid\": 1, \"ts\": 1120, \"dur\": 5}",
            ),
            kineto_rank3(&[(Warning, "control characters or invalid UTF-8")]),
        ),
        // Bad bytes in arguments: unread (an operator's own) they cost nothing; read (an
        // attention call's shapes), they are replaced like any others.
        case(
            "bad-unread-args.json",
            kineto_plus_bytes(
                b"{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 7, \"tid\": 1, \"ts\": 1120, \"dur\": 5, \"args\": {\"name\": \"\x01\xff\"}}",
            ),
            kineto_rank3(&[]),
        ),
        case(
            "bad-read-args.json",
            kineto_plus_bytes(
                b"{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::scaled_dot_product_attention\", \"pid\": 7, \"tid\": 1, \"ts\": 1120, \"dur\": 5, \"args\": {\"name\": \"\x01\xff\"}}",
            ),
            kineto_rank3(&[(Warning, "control characters or invalid UTF-8")]),
        ),
        // Numbers out of range or not numbers.
        case(
            "huge-ts.json",
            kineto_plus(
                r#"{"ph": "X", "cat": "cpu_op", "name": "aten::huge", "pid": 7, "tid": 1, "ts": 99999999999999999999999, "dur": 1}"#,
            ),
            kineto_rank3(&[(Warning, "\"aten::huge\" has a ts that is beyond the range of 64-bit nanoseconds")]),
        ),
        case(
            "i64-ts.json",
            // fits an i64 as microseconds, not as nanoseconds
            kineto_plus(
                r#"{"ph": "X", "cat": "cpu_op", "name": "aten::late", "pid": 7, "tid": 1, "ts": 9223372036854776, "dur": 1}"#,
            ),
            kineto_rank3(&[(Warning, "\"aten::late\" has a ts that is beyond the range of 64-bit nanoseconds")]),
        ),
        case(
            "nan-dur.json",
            kineto_plus(
                r#"{"ph": "X", "cat": "cpu_op", "name": "aten::nan", "pid": 7, "tid": 1, "ts": 1120, "dur": "NaN"},
    {"ph": "X", "cat": "cpu_op", "name": "aten::bare_nan", "pid": 7, "tid": 1, "ts": 1120, "dur": NaN},
    {"ph": "X", "cat": "cpu_op", "name": "aten::neg", "pid": 7, "tid": 1, "ts": 1120, "dur": -5},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 7, "tid": 1, "ts": 1300.5, "dur": -100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 1, "ts": 1120, "dur": -1, "args": {"correlation": 9}}"#,
            ),
            kineto_rank3(&[
                (Warning, "\"aten::nan\" has a dur that is not a number; event skipped"),
                // Not JSON, but its event is otherwise readable: the message names it.
                (Warning, "\"aten::bare_nan\" has a dur that is not a number; event skipped"),
                (Warning, "\"aten::neg\" has a dur that is negative; event skipped"),
                (Warning, "\"ProfilerStep#4\" has a dur that is negative; event skipped"),
                // A launch's name is not read: its category stands in for it.
                (Warning, "an event of category \"cuda_runtime\" has a dur that is negative; event skipped"),
            ]),
        ),
        case(
            "bad-rank.json",
            kineto_with(r#" "distributedInfo": {"rank": -1},"#, STEP_EVENTS),
            Expect {
                format: Some(Format::Kineto),
                workers: &[(UNKNOWN_RANK, STEPS_1_2_3)],
                diags: &[(Warning, "distributedInfo.rank -1 is not a rank number")],
            },
        ),
        case(
            "bad-world-size.json",
            kineto_with(r#" "distributedInfo": {"rank": 3, "world_size": 0},"#, STEP_EVENTS),
            kineto_rank3(&[(Warning, "distributedInfo.world_size 0 is not a rank count; ignored")]),
        ),
        case(
            "small-world.json",
            kineto_with(r#" "distributedInfo": {"rank": 3, "world_size": "3"},"#, STEP_EVENTS),
            kineto_rank3(&[(Warning, "distributedInfo.world_size 3 is not above its rank 3; ignored")]),
        ),
        // Overlapping steps are clipped (the durations are checked below).
        case(
            "overlap.json",
            kineto_with(RANK3, &STEP_EVENTS.replace(r#""ts": 1000.5, "dur": 100"#, r#""ts": 1000.5, "dur": 150"#)),
            kineto_rank3(&[(Warning, "1 ProfilerStep spans overlap the next step; clipped")]),
        ),
        case(
            "twice.json",
            kineto_plus(r#"{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 7, "tid": 1, "ts": 1400, "dur": 100}"#),
            kineto_rank3(&[(Warning, "ProfilerStep#2 appears twice; the second was ignored")]),
        ),
        // Unknown ranks.
        case(
            "trace.json",
            kineto_with("", STEP_EVENTS),
            Expect {
                format: Some(Format::Kineto),
                workers: &[(UNKNOWN_RANK, STEPS_1_2_3)],
                diags: &[(Info, "no distributedInfo.rank and no rank in the file name; a rank will be assigned")],
            },
        ),
        case(
            "logs/worker_rank5.pt.trace.json",
            kineto_with("", STEP_EVENTS),
            Expect {
                format: Some(Format::Kineto),
                workers: &[(5, STEPS_1_2_3)],
                diags: &[(Info, "no distributedInfo.rank; rank 5 taken from the file name")],
            },
        ),
        // Chrome traces with broken pairs.
        case(
            "unpaired.json",
            CHROME.replace(r#"{"ph": "B", "name": "step 2", "pid": 2, "tid": 1, "ts": 110},"#, "")
                .replace(r#"{"ph": "X", "name": "step 1", "pid": 1"#, r#"{"ph": "B", "name": "gc", "pid": 1, "tid": 9, "ts": 5},
  {"ph": "X", "name": "step 1", "pid": 1"#),
            Expect {
                format: Some(Format::ChromeTrace),
                workers: &[(0, &[1, 2]), (1, &[1])],
                diags: &[
                    (Warning, "an end (E) event without a begin (B) on its thread; skipped"),
                    (Warning, "1 begin (B) events never ended; ignored"),
                ],
            },
        ),
        // Step logs with bad rows: the good rows stay.
        case(
            "bad-rows.jsonl",
            format!("{JSONL}{{\"step\": 3, \"rank\": 0, \"step_s\": 0.5\nnot json\n{{\"rank\": 1, \"step_s\": 1}}\n"),
            Expect {
                format: Some(Format::StepLogJsonl),
                workers: &[(0, &[1, 2]), (1, &[1, 2])],
                diags: &[(Warning, "not a JSON object"), (Warning, "row without step; skipped")],
            },
        ),
        case(
            "bad-rows.csv",
            format!("{CSV}3,0,,-0.5,0.1,\n3,1\n4,1,,0.5,0.3,12 x\n4,99999999999,,0.5,0.3,\n"),
            Expect {
                format: Some(Format::StepLogCsv),
                // step 3 of rank 0 keeps its compute_s; rank 1's has no times at all
                workers: &[(0, &[1, 2, 3]), (1, &[1, 2, 4])],
                diags: &[
                    (Warning, "step_s = -0.5 is negative"),
                    (Warning, "2 fields where the header has 6"),
                    (Warning, "step 3 rank 1 has no times; skipped"),
                    (Warning, "lengths = 12 x is not a list of non-negative integers"),
                    (Warning, "rank = 99999999999 is too large"),
                    (Warning, "row without rank; skipped"),
                ],
            },
        ),
    ]
}

#[test]
fn table_of_inputs() {
    let failures: Vec<String> = cases().iter().filter_map(|c| try_check(c.name, &c.bytes, c.expect).err()).collect();
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn chunking_does_not_change_the_result() {
    let mut failures = Vec::new();
    for c in cases() {
        let whole = match ingest(c.name, &c.bytes, usize::MAX) {
            Ok(import) => import,
            Err(why) => {
                failures.push(why);
                continue;
            }
        };
        for chunk in [1, 2, 3, 7, 64] {
            match ingest(c.name, &c.bytes, chunk) {
                Err(why) => failures.push(format!("{why} (chunks of {chunk})")),
                Ok(part) => {
                    let same = part.format == whole.format
                        && part.workers == whole.workers
                        && part.stats == whole.stats
                        // where gzip breaks depends on how much it was given at once
                        && (whole.compressed || part.diagnostics == whole.diagnostics);
                    if !same {
                        failures.push(format!(
                            "{}: chunks of {chunk} give another result:\n  whole:{}\n  chunked:{}",
                            c.name,
                            listing(&whole),
                            listing(&part)
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Truncation at every byte
// ---------------------------------------------------------------------------------------------

/// Every prefix of `bytes` imports without panicking, names the file, and either yields steps
/// or says what is wrong; a proper prefix (the file cut short) is never silently accepted.
fn check_every_prefix(name: &str, bytes: &[u8], steps: &[u64]) {
    let complete = bytes.len() - bytes.iter().rev().take_while(|b| b.is_ascii_whitespace()).count();
    let mut failures = Vec::new();
    for len in 0..=bytes.len() {
        let prefix = bytes.get(..len).expect("a prefix");
        let result = ingest(name, prefix, usize::MAX).and_then(|import| {
            invariants(name, &import)?;
            let problems = import.diagnostics.iter().any(|d| d.severity >= Severity::Warning);
            if !import.is_usable() && !problems {
                return Err(format!("{name}: cut at {len}: no steps and no warning or error"));
            }
            if len < complete && !problems {
                return Err(format!("{name}: cut at {len} of {complete} bytes, yet no warning or error"));
            }
            let got: Vec<u64> = import.workers.iter().flat_map(|w| w.steps.iter().map(|s| s.step)).collect();
            if got.iter().any(|s| !steps.contains(s)) {
                return Err(format!("{name}: cut at {len}: steps {got:?} are not among {steps:?}"));
            }
            if len >= complete && got != steps {
                return Err(format!("{name}: whole file gives steps {got:?}{}", listing(&import)));
            }
            Ok(())
        });
        if let Err(why) = result {
            failures.push(why);
        }
    }
    assert!(failures.is_empty(), "{} of {} prefixes failed:\n{}", failures.len(), bytes.len() + 1, failures.join("\n"));
}

#[test]
fn kineto_truncated_at_every_byte() {
    check_every_prefix("rank3.pt.trace.json", &kineto(), STEPS_1_2_3);
}

#[test]
fn gzip_truncated_at_every_byte() {
    check_every_prefix("rank3.pt.trace.json.gz", &gzip(&kineto()), STEPS_1_2_3);
}

#[test]
fn step_logs_truncated_at_every_byte_never_panic() {
    // A step log cut short loses rows but has nothing to say about it; only panics and
    // nameless diagnostics are wrong here.
    for (name, text) in [("steps.jsonl", JSONL), ("steps.csv", CSV), ("merged.json", CHROME)] {
        for len in 0..=text.len() {
            let prefix = text.as_bytes().get(..len).expect("a prefix");
            let import = ingest(name, prefix, usize::MAX).unwrap_or_else(|why| panic!("{why} (cut at {len})"));
            invariants(name, &import).unwrap_or_else(|why| panic!("{why} (cut at {len})"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Details the table cannot express
// ---------------------------------------------------------------------------------------------

#[test]
fn events_are_located_by_byte_offset() {
    let bad = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::neg", "pid": 7, "tid": 1, "ts": 1120, "dur": -5}"#;
    let bytes = kineto_plus(bad);
    let offset = String::from_utf8(bytes.clone()).expect("ASCII").find(bad).expect("the event is in the trace");
    let import = check(
        "neg.json",
        &bytes,
        Expect {
            format: Some(Format::Kineto),
            workers: RANK3_STEPS,
            diags: &[(Severity::Warning, "has a dur that is negative")],
        },
    );
    let d = import.diagnostics.iter().find(|d| d.severity == Severity::Warning).expect("the warning");
    assert_eq!(d.location, Some(Location::Byte(offset as u64)), "{d}");
    assert_eq!(
        d.to_string(),
        format!("warning: neg.json (byte {offset}): \"aten::neg\" has a dur that is negative; event skipped")
    );
}

#[test]
fn step_log_rows_are_located_by_line() {
    let text = format!("{CSV}3,0,,-0.5,0.1,\n");
    let import = import_bytes("steps.csv", text.as_bytes());
    let d = import.diagnostics.iter().find(|d| d.message.contains("negative")).expect("a warning");
    assert_eq!((d.severity, d.location), (Severity::Warning, Some(Location::Line(6))), "{d}");
}

#[test]
fn bad_bytes_in_names_keep_the_event() {
    let clean = import_bytes("clean.json", &kineto());
    let dirty = check(
        "dirty.json",
        &String::from_utf8(kineto())
            .expect("ASCII")
            .replace("ProfilerStep#2\"", "ProfilerStep#2\u{7}\"")
            .replace("aten::add_", "aten::add_\u{1}\u{1b}[0m")
            .into_bytes(),
        Expect {
            format: Some(Format::Kineto),
            workers: RANK3_STEPS,
            diags: &[(Severity::Warning, "control characters or invalid UTF-8 in its strings; they were replaced")],
        },
    );
    assert_eq!(dirty.stats.kept, clean.stats.kept, "an event with bad bytes was dropped");
    assert_eq!(dirty.workers.first().map(|w| &w.steps), clean.workers.first().map(|w| &w.steps));
}

#[test]
fn overlapping_steps_are_clipped_where_the_next_begins() {
    let bytes = kineto_with(RANK3, &STEP_EVENTS.replace(r#""ts": 1000.5, "dur": 100"#, r#""ts": 1000.5, "dur": 150"#));
    let import = import_bytes("overlap.json", &bytes);
    let durations: Vec<(u64, i64)> =
        import.workers.iter().flat_map(|w| w.steps.iter().map(|s| (s.step, s.duration))).collect();
    assert_eq!(durations, vec![(1, 100_000), (2, 100_000), (3, 100_000)], "{}", listing(&import));
}

#[test]
fn unknown_ranks_are_assigned_when_assembled() {
    let unknown = import_bytes("trace.json", &kineto_with("", STEP_EVENTS));
    let ranked = import_bytes("rank3.pt.trace.json", &kineto());
    let out = assemble(&[ranked, unknown]);
    let ranks: Vec<(u32, &str)> = out.job.workers.iter().map(|w| (w.rank, w.source.as_str())).collect();
    assert_eq!(ranks, vec![(0, "trace.json"), (3, "rank3.pt.trace.json")]);
    let d = out.diagnostics.iter().find(|d| d.message.contains("rank is unknown")).expect("a warning");
    assert_eq!((d.severity, d.file.as_str()), (Severity::Warning, "trace.json"), "{d}");
    assert!(d.message.contains("treated as rank 0"), "{d}");
}

#[test]
fn two_files_claiming_one_rank() {
    let first = import_bytes("a/rank3.pt.trace.json", &kineto());
    let second = import_bytes("b/rank3.pt.trace.json", &kineto());
    let out = assemble(&[first.clone(), second]);
    assert_eq!(out.job.workers, first.workers, "the first file's rank 3 is kept as it was");
    let d = out.diagnostics.iter().find(|d| d.message.contains("this copy was ignored")).expect("a warning");
    assert_eq!((d.severity, d.file.as_str()), (Severity::Warning, "b/rank3.pt.trace.json"), "{d}");
    assert!(d.message.contains("rank 3 is also in a/rank3.pt.trace.json; this copy was ignored"), "{d}");
}

#[test]
fn of_two_copies_of_a_rank_the_one_with_more_steps_is_kept() {
    // The first copy was cut short by a killed job: a step and a half, of three.
    let bytes = kineto();
    let cut = String::from_utf8_lossy(&bytes).find("ProfilerStep#3").expect("a third step");
    let truncated = import_bytes("a/rank3.pt.trace.json", bytes.get(..cut).expect("a prefix"));
    let complete = import_bytes("b/rank3.pt.trace.json", &bytes);
    let steps = |i: &FileImport| i.workers.iter().map(|w| w.steps.len()).sum::<usize>();
    let (cut_steps, all_steps) = (steps(&truncated), steps(&complete));
    assert!(cut_steps < all_steps, "{}", listing(&truncated));
    let out = assemble(&[truncated, complete.clone()]);
    assert_eq!(out.job.workers, complete.workers, "the complete copy is kept, though it comes second");
    let d = out.diagnostics.iter().find(|d| d.message.contains("also in")).expect("a warning");
    assert_eq!((d.severity, d.file.as_str()), (Severity::Warning, "a/rank3.pt.trace.json"), "{d}");
    let expected = format!(
        "rank 3 is also in b/rank3.pt.trace.json, which has more steps ({all_steps} against {cut_steps}); this copy was ignored"
    );
    assert_eq!(d.message, expected);
}

#[test]
fn a_broken_file_does_not_spoil_a_good_one() {
    let good = import_bytes("rank3.pt.trace.json", &kineto());
    let mut broken_bytes = gzip(&kineto_with(r#" "distributedInfo": {"rank": 4},"#, STEP_EVENTS));
    broken_bytes.truncate(60);
    let broken = import_bytes("rank4.pt.trace.json.gz", &broken_bytes);
    invariants("rank4.pt.trace.json.gz", &broken).unwrap_or_else(|why| panic!("{why}"));
    assert!(!broken.is_usable());
    let garbage = import_bytes("rank5.json", b"\x00\x01\x02 garbage");
    for files in [vec![broken.clone(), good.clone(), garbage.clone()], vec![good.clone(), broken, garbage]] {
        let out = assemble(&files);
        assert_eq!(out.job.workers, good.workers, "the good file's workers changed");
        assert!(out.diagnostics.iter().all(|d| d.severity < Severity::Error), "{:?}", out.diagnostics);
    }
}

/// A file whose events would not fit the memory one file may take (the browser's limit) is
/// given up with a message that says so and what to do, in every format; the file is not read
/// on (`is_rejected`), and a small file under the same limit is untouched.
#[test]
fn a_file_over_the_memory_limit_is_given_up_clearly() {
    let many_events: String = (0..2_000)
        .map(|i| {
            format!(r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 1, "ts": {i}, "dur": 1}},"#)
        })
        .collect();
    // Without the Kineto category, which would make the sniffer call it Kineto.
    let chrome_events = many_events.replace(r#""cat": "cpu_op", "#, "");
    let chrome = CHROME.replace(r#""traceEvents": ["#, &format!(r#""traceEvents": [{chrome_events}"#));
    let rows: String =
        (0..2_000).map(|i| format!("{{\"step\": {i}, \"rank\": 0, \"step_s\": 1.0, \"lengths\": [5, 6]}}\n")).collect();
    // (file, content, its format, what the advice names for it): a step log is already the
    // small form `summarize` writes, so its advice is the command line or a part of the log.
    let cases = [
        ("big.pt.trace.json", kineto_plus(many_events.trim_end_matches(',')), Format::Kineto, "seqskew summarize"),
        ("big.json", chrome.into_bytes(), Format::ChromeTrace, "seqskew summarize"),
        ("big.jsonl", rows.into_bytes(), Format::StepLogJsonl, "drop a part of it here"),
    ];
    for (name, bytes, format, advice) in cases {
        let mut over = FileIngest::new(name).with_memory_limit(16 << 10);
        for chunk in bytes.chunks(4096) {
            over.feed(chunk);
        }
        assert!(over.is_rejected(), "{name}: still reading");
        let import = over.finish();
        assert!(import.workers.is_empty(), "{name}: {}", listing(&import));
        assert_eq!(import.format, Some(format), "{name}: the file is still listed as what it is");
        let errors: Vec<&str> =
            import.diagnostics.iter().filter(|d| d.severity == Severity::Error).map(|d| d.message.as_str()).collect();
        assert!(
            errors.len() == 1
                && errors.iter().all(|m| m.starts_with("too large to analyse here")
                    && m.contains("seqskew analyze")
                    && m.contains(advice)),
            "{name}: {errors:?}"
        );
        let mut under = FileIngest::new(name).with_memory_limit(64 << 20);
        under.feed(&bytes);
        let import = under.finish();
        assert!(import.is_usable(), "{name}: {}", listing(&import));
    }
}

// ---------------------------------------------------------------------------------------------
// Regressions: bugs found by these tests and by fuzzing, all fixed (see docs/fuzzing.md).
// ---------------------------------------------------------------------------------------------

/// Found by fuzzing (kineto, 2026-11-30): a top-level number cut by a chunk boundary
/// (`"baseTimeNanoseconds": 17` + `00000000000000000`) was read as the part that had arrived,
/// shifting every time by a factor of 10ⁿ depending on the chunking.
#[test]
fn a_file_given_up_early_counts_all_its_bytes() {
    // A reader stops at the rejection, after the first 2 KiB of a 12 KB file.
    let text = "\0\u{1}not a trace\n".repeat(1000);
    let mut ingest = FileIngest::new("notes.json");
    ingest.feed(text.as_bytes().get(..2048).unwrap_or_default());
    assert!(ingest.is_rejected());
    let import = ingest.finish_of_size(text.len() as u64);
    assert_eq!(import.summary().bytes, 14_000);
    assert!(!import.is_usable() && !import.diagnostics.is_empty());
    // A file read whole is counted as read.
    let mut whole = FileIngest::new("rank3.pt.trace.json");
    whole.feed(&kineto());
    assert_eq!(whole.finish_of_size(0).summary().bytes, kineto().len() as u64);
}

#[test]
fn a_top_level_number_split_across_chunks() {
    // Bug 8: a cut after `17` was read as 17. Bug 10: a cut after `1.7e` was "unreadable",
    // because serde calls a number without its exponent's digits invalid, not incomplete.
    for base in ["1700000000000000000", "1.7e18"] {
        // Past the first KiB, which the sniffer gathers before any parsing.
        let padding = format!(r#""traceName": "{}","#, "x".repeat(2000));
        let header = RANK3.replace("1700000000000000000", base);
        let bytes = kineto_with(&format!("{padding}{header}"), STEP_EVENTS);
        let whole = import_bytes("rank3.pt.trace.json", &bytes);
        let at = String::from_utf8_lossy(&bytes).find(base).expect("the base time");
        for cut in at + 1..at + base.len() {
            let mut ingest = FileIngest::new("rank3.pt.trace.json");
            let (head, tail) = bytes.split_at(cut);
            ingest.feed(head);
            ingest.feed(tail);
            let split = ingest.finish();
            assert_eq!(split.workers, whole.workers, "{base} cut at {cut}: {}", listing(&split));
            assert_eq!(split.diagnostics, whole.diagnostics, "{base} cut at {cut}");
        }
    }
}

/// steplog/rows.rs `schematic_spans`: `compute * mb.compute() / mb_total` multiplies two step-sized
/// nanosecond counts, which overflows i64 once a step's micro-batches take a few seconds:
/// a panic in debug builds, nonsense spans in release builds.
#[test]
fn step_log_micro_batches_of_a_few_seconds() {
    let text = "step,rank,mb,compute_s\n1,0,0,3.0\n1,0,1,3.0\n";
    let import = check(
        "mb.csv",
        text.as_bytes(),
        Expect { format: Some(Format::StepLogCsv), workers: &[(0, &[1])], diags: &[] },
    );
    let step = import.workers.first().and_then(|w| w.steps.first()).expect("step 1");
    let spans: Vec<(i64, Option<u32>)> = step.spans.iter().map(|s| (s.duration, s.micro_batch())).collect();
    assert_eq!(spans, vec![(3_000_000_000, Some(0)), (3_000_000_000, Some(1))]);
}

/// model.rs `Sequences::from_lengths`: the sum of squared lengths overflows u64 for absurd
/// lengths (a panic in debug builds); it should saturate or the lengths be rejected.
#[test]
fn absurd_sequence_lengths() {
    let text = "step,rank,step_s,lengths\n1,0,1.0,4294967295 4294967295\n";
    let import = ingest("lengths.csv", text.as_bytes(), usize::MAX).unwrap_or_else(|why| panic!("{why}"));
    invariants("lengths.csv", &import).unwrap_or_else(|why| panic!("{why}"));
}

/// sniff.rs / mod.rs `feed_content`: the format is sniffed from however many bytes the first
/// feeds happened to bring (at least 1 KiB), not from the first KiB, so a Kineto marker beyond
/// the first KiB decides the format when the file comes in one piece but not in small chunks.
#[test]
fn the_format_does_not_depend_on_chunking() {
    let pad = "x".repeat(1100);
    let text = format!(
        r#"{{"traceEvents": [
  {{"ph": "X", "name": "step 1", "pid": 1, "tid": 1, "ts": 0, "dur": 100, "args": {{"note": "{pad}"}}}},
  {{"ph": "X", "cat": "cpu_op", "name": "forward", "pid": 1, "tid": 1, "ts": 10, "dur": 50}},
  {{"ph": "X", "name": "step 2", "pid": 1, "tid": 1, "ts": 100, "dur": 100}}
]}}"#
    );
    let whole = ingest("late-marker.json", text.as_bytes(), usize::MAX).unwrap_or_else(|why| panic!("{why}"));
    let chunked = ingest("late-marker.json", text.as_bytes(), 7).unwrap_or_else(|why| panic!("{why}"));
    assert_eq!(
        (whole.format, &whole.workers),
        (chunked.format, &chunked.workers),
        "whole:{}\nchunked:{}",
        listing(&whole),
        listing(&chunked)
    );
}

/// sniff.rs skips a UTF-8 byte order mark, but the trace reader (events.rs, `State::Start`)
/// does not: the file is recognised as Kineto, then rejected with "expected a JSON object or
/// array" at byte 0, which is misleading (it is a JSON object).
#[test]
fn a_byte_order_mark_before_a_trace() {
    let mut bytes = "\u{feff}".as_bytes().to_vec();
    bytes.extend_from_slice(&kineto());
    check("bom.pt.trace.json", &bytes, Expect { format: Some(Format::Kineto), workers: RANK3_STEPS, diags: &[] });
}

/// The same for step logs in JSON Lines (steplog/mod.rs `parse_jsonl_line`): the first row is
/// dropped with "not a JSON object: expected value at line 1 column 1".
#[test]
fn a_byte_order_mark_before_a_step_log() {
    let text = format!("\u{feff}{JSONL}");
    check(
        "bom.jsonl",
        text.as_bytes(),
        Expect { format: Some(Format::StepLogJsonl), workers: &[(0, &[1, 2]), (1, &[1, 2])], diags: &[] },
    );
}

/// kineto.rs `interval`: `start.checked_add(dur)?` drops an event whose end overflows without
/// a word, unlike every other unusable time, which is a warning naming the event.
#[test]
fn an_event_ending_beyond_the_clock_is_reported() {
    let bytes = kineto_plus(
        r#"{"ph": "X", "cat": "cpu_op", "name": "aten::forever", "pid": 7, "tid": 1, "ts": 9223372036854775, "dur": 1000}"#,
    );
    check(
        "forever.json",
        &bytes,
        Expect { format: Some(Format::Kineto), workers: RANK3_STEPS, diags: &[(Severity::Warning, "aten::forever")] },
    );
}

/// mod.rs `FileIngest::finish`: when the gzip stream is corrupt from its first bytes, a second
/// error says "the file has no content", which is not so (it has bytes; they are not gzip).
/// The gzip error alone says what is wrong.
#[test]
fn corrupt_gzip_is_not_called_empty() {
    for (name, bytes, problem) in [
        (
            "junk.json.gz",
            [&[0x1f, 0x8b][..], &[0xff; 40][..], b"not deflate at all"].concat(),
            "the gzip data is corrupt",
        ),
        ("magic.gz", vec![0x1f, 0x8b], "the gzip stream ends early"),
    ] {
        let import = ingest(name, &bytes, usize::MAX).unwrap_or_else(|why| panic!("{why}"));
        invariants(name, &import).unwrap_or_else(|why| panic!("{why}"));
        let errors: Vec<&str> =
            import.diagnostics.iter().filter(|d| d.severity == Severity::Error).map(|d| d.message.as_str()).collect();
        assert!(errors.iter().any(|m| m.contains(problem)), "{name}: {errors:?}");
        assert!(!errors.iter().any(|m| m.contains("no content")), "{name}: {errors:?}");
    }
}

/// gzip.rs `Gunzip::feed`: when flate2's `write_all` meets corrupt deflate data, what it
/// inflated in that same call stays inside flate2 and never reaches `drain`. So the content
/// before the corruption is read when the file comes in small chunks, and lost when it comes
/// in one (the browser's 32 MiB slices, the CLI's reads): the result depends on the chunking,
/// and "the content before it was read" is not so. Found by `fuzz/` (any_bytes).
#[test]
fn corrupt_gzip_gives_the_same_content_whatever_the_chunking() {
    // A gzip member whose deflate stream is one stored block holding a whole step log, then a
    // block of the reserved type 3: corrupt right after the content.
    let content = CSV.as_bytes();
    let len = u16::try_from(content.len()).expect("a short log");
    let mut bytes = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0];
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(&(!len).to_le_bytes());
    bytes.extend_from_slice(content);
    bytes.push(0b111);
    let mut results = Vec::new();
    for chunk in [usize::MAX, 64, 7, 1] {
        let import = ingest("corrupt.csv.gz", &bytes, chunk).unwrap_or_else(|why| panic!("{why}"));
        invariants("corrupt.csv.gz", &import).unwrap_or_else(|why| panic!("{why}"));
        assert!(
            import
                .diagnostics
                .iter()
                .any(|d| d.severity == Severity::Error && d.message.contains("gzip data is corrupt")),
            "chunks of {chunk}:{}",
            listing(&import)
        );
        results.push((chunk, import.stats.bytes, import.workers.len(), listing(&import)));
    }
    let expected = content.len() as u64;
    assert!(
        results.iter().all(|r| r.1 == expected && r.2 == 2),
        "content bytes and workers per chunk size: {results:#?}"
    );
}

/// kineto.rs `step_windows`: `(last.end - last.start) * 10 < median` overflows i64 when the last
/// step is longer than about 29 years (a corrupt `dur`): a panic in debug builds.
#[test]
fn kineto_step_lasting_decades() {
    let events = STEP_EVENTS.replace(
        r#""name": "ProfilerStep#3", "pid": 7, "tid": 1, "ts": 1200.5, "dur": 100"#,
        r#""name": "ProfilerStep#3", "pid": 7, "tid": 1, "ts": 1200.5, "dur": 1000000000000000"#,
    );
    let import =
        ingest("rank3.pt.trace.json", &kineto_with(RANK3, &events), usize::MAX).unwrap_or_else(|why| panic!("{why}"));
    invariants("rank3.pt.trace.json", &import).unwrap_or_else(|why| panic!("{why}"));
}

/// steplog/rows.rs `build_step`: a step row's `fwd_s + bwd_s` and a transfer's `start + p2p_s` are
/// added unchecked, so times of centuries overflow i64 nanoseconds: panics in debug builds.
#[test]
fn step_log_times_of_centuries() {
    for (name, text) in [
        ("fwd-bwd.jsonl", "{\"step\": 1, \"rank\": 0, \"fwd_s\": 9000000000, \"bwd_s\": 9000000000}\n"),
        ("p2p.jsonl", "{\"step\": 1, \"rank\": 0, \"step_s\": 1, \"start_s\": 9000000000, \"p2p_s\": 9000000000}\n"),
    ] {
        let import = ingest(name, text.as_bytes(), usize::MAX).unwrap_or_else(|why| panic!("{why}"));
        invariants(name, &import).unwrap_or_else(|why| panic!("{why}"));
    }
}

/// chrome.rs / timeline.rs `partition`: a B/E pair whose end minus begin exceeds i64
/// nanoseconds (E.ts − B.ts is never checked, unlike X events' `checked_add`) overflows
/// `end - start`: a panic in debug builds, a negative duration in release builds.
#[test]
fn chrome_begin_and_end_across_the_whole_clock() {
    let text = r#"[{"ph": "B", "name": "step 1", "pid": 1, "tid": 1, "ts": -9000000000000000},
{"ph": "E", "pid": 1, "tid": 1, "ts": 9000000000000000}]"#;
    let import = ingest("merged.json", text.as_bytes(), usize::MAX).unwrap_or_else(|why| panic!("{why}"));
    invariants("merged.json", &import).unwrap_or_else(|why| panic!("{why}"));
    assert!(import.workers.iter().flat_map(|w| &w.steps).all(|s| s.duration >= 0), "{:?}", import.workers);
}

/// mod.rs `FileIngest::feed_raw` stops feeding the gunzip once the sniffer has rejected the
/// content, and `finish` then reports the unfinished stream as "the gzip stream ends early
/// ... (truncated file?)". A valid gzip of something that is not a trace, read in chunks (as
/// the CLI and the browser read), gets a false "truncated" error that it does not get when
/// read in one piece; its `stats.bytes` differ too. Found by `fuzz/` (any_bytes).
#[test]
fn a_rejected_gzip_file_is_not_called_truncated() {
    let text: String = (0..300).map(|i| format!("\0\u{1}line {i}: the loss went down\n")).collect();
    let bytes = gzip(text.as_bytes());
    let whole = ingest("notes.txt.gz", &bytes, usize::MAX).unwrap_or_else(|why| panic!("{why}"));
    let chunked = ingest("notes.txt.gz", &bytes, 64).unwrap_or_else(|why| panic!("{why}"));
    for import in [&whole, &chunked] {
        invariants("notes.txt.gz", import).unwrap_or_else(|why| panic!("{why}"));
        assert!(import.diagnostics.iter().any(|d| d.message.contains("binary content")), "{}", listing(import));
        assert!(!import.diagnostics.iter().any(|d| d.message.contains("ends early")), "{}", listing(import));
    }
    assert_eq!(whole.stats, chunked.stats);
}

#[test]
fn ranks_missing_from_the_job_are_named() {
    // Rank 3 of four, its world size as a string: ranks 0-2 are missing.
    let quoted = kineto_with(r#" "distributedInfo": {"rank": "3", "world_size": "4"},"#, STEP_EVENTS);
    let alone = assemble(&[import_bytes("rank3.pt.trace.json", &quoted)]);
    assert_eq!(alone.job.world_size(), Some(4));
    let d = alone.diagnostics.iter().find(|d| d.message.contains("missing")).expect("a warning");
    assert_eq!((d.severity, d.file.as_str()), (Severity::Warning, ""), "{d}");
    assert!(d.message.contains("a job of 4 ranks, and only rank 3 is here: ranks 0-2 are missing"), "{d}");
    // With every rank there, nothing is missing.
    let all: Vec<FileImport> = (0..4)
        .map(|r| {
            let header = format!(r#" "distributedInfo": {{"rank": {r}, "world_size": 4}},"#);
            import_bytes(&format!("rank{r}.pt.trace.json"), &kineto_with(&header, STEP_EVENTS))
        })
        .collect();
    let whole = assemble(&all);
    assert_eq!((whole.job.workers.len(), whole.job.missing_ranks()), (4, vec![]));
    assert!(whole.diagnostics.iter().all(|d| !d.message.contains("missing")), "{:?}", whole.diagnostics);
}

/// chrome.rs `micro_batches_and_collectives`: a micro-batch's forward time is the sum of its
/// spans' durations, each up to the clock's range, so a few spans of `"dur": 5e15` (µs)
/// overflow i64 nanoseconds: a panic in debug builds, a negative compute time in release builds
/// (issue 42). The sums saturate; the job is still analysed.
#[test]
fn chrome_micro_batch_spans_whose_durations_sum_past_the_clock() {
    let mut spans = Vec::new();
    for pid in [1, 2] {
        for step in [1, 2] {
            for (name, mb) in [("forward", 0), ("forward", 0), ("backward", 0), ("flash_attn", 0), ("forward", 1)] {
                spans.push(format!(
                    r#"{{"ph": "X", "name": "{name}", "pid": {pid}, "tid": 1, "ts": 0, "dur": 5e15, "args": {{"step": {step}, "mb_id": {mb}}}}}"#
                ));
            }
        }
    }
    let text = format!("[{}]", spans.join(",\n"));
    let import = ingest("merged.json", text.as_bytes(), usize::MAX).unwrap_or_else(|why| panic!("{why}"));
    invariants("merged.json", &import).unwrap_or_else(|why| panic!("{why}"));
    let micro: Vec<(i64, i64)> = (import.workers.iter())
        .flat_map(|w| w.steps.iter().flat_map(|s| w.micro_batches_of(s)))
        .map(|mb| (mb.forward, mb.backward))
        .collect();
    assert!(!micro.is_empty(), "{}", listing(&import));
    assert!(micro.iter().all(|&(f, b)| f >= 0 && b >= 0), "{micro:?}");
    let inputs = [import.summary()];
    let analysis = seqskew_core::analysis::analyze(&assemble(&[import]), &inputs);
    assert_eq!(analysis.report.job.workers, 2);
}

//! The worker side, run where it runs: in a dedicated worker (FileReaderSync exists only there).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed expectation is the test failing

use seqskew_web::protocol::{InputFile, JobResult, decode};
use seqskew_web::worker::run_to_completion;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_dedicated_worker);

fn blob_file(name: &str, bytes: &[u8]) -> InputFile {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).expect("a blob");
    InputFile { name: name.to_owned(), size: bytes.len() as u64, blob }
}

#[wasm_bindgen_test]
fn a_job_reads_every_file_and_keeps_the_good_ones_beside_a_bad_one() {
    let log = "{\"step\":1,\"rank\":0,\"step_s\":1.0,\"lengths\":[3,4]}\n{\"step\":1,\"rank\":1,\"step_s\":1.0}\n";
    let files = vec![blob_file("good.jsonl", log.as_bytes()), blob_file("empty.json", b"")];
    let result = decode::<JobResult>(&run_to_completion(files, 7)).expect("a result");
    assert_eq!(result.workers, 2);
    assert_eq!(result.files.len(), 2);
    assert!(result.files[1].diagnostics.iter().any(|d| d.message.contains("empty")), "{:?}", result.files[1]);
}

#[wasm_bindgen_test]
fn slices_cover_a_file_larger_than_one_slice() {
    // 3 slices of 5 bytes: the job must stitch lines across slice boundaries.
    let log = "{\"step\":1,\"rank\":0,\"step_s\":1.0}\n{\"step\":2,\"rank\":0,\"step_s\":1.0}\n";
    let result =
        decode::<JobResult>(&run_to_completion(vec![blob_file("log.jsonl", log.as_bytes())], 5)).expect("a result");
    assert_eq!(result.steps, 2);
}

#[wasm_bindgen_test]
fn a_slice_larger_than_one_feed_is_fed_whole() {
    // 2.5 MiB in one 4 MiB slice: it enters WebAssembly memory in 1 MiB pieces that cut lines.
    let line =
        |step: u32| format!("{{\"step\":{step},\"rank\":0,\"step_s\":1.0,\"lengths\":[{}]}}\n", step % 900 + 100);
    let mut log = String::new();
    let mut steps = 0;
    while log.len() < 5 << 19 {
        steps += 1;
        log.push_str(&line(steps));
    }
    let result = decode::<JobResult>(&run_to_completion(vec![blob_file("big.jsonl", log.as_bytes())], 4 << 20))
        .expect("a result");
    assert_eq!(result.steps, steps as usize);
    assert!(result.files[0].diagnostics.is_empty(), "{:?}", result.files[0].diagnostics);
}

#[wasm_bindgen_test]
fn the_examples_are_diagnosed_in_the_worker_as_the_simulator_meant() {
    for (preset, cause) in [("seqlen-imbalance", "sequence_length_imbalance"), ("seqlen-balanced", "balanced")] {
        let file = seqskew_web::worker::example_file(preset).expect("an example");
        let result = decode::<JobResult>(&run_to_completion(vec![file], 1 << 20)).expect("a result");
        let analysis = result.analysis.expect("an analysis");
        assert_eq!(analysis.report.verdict.primary, cause, "{preset}");
        assert!(result.timeline.is_some_and(|t| t.lanes.len() == 16), "{preset}: a timeline of 16 workers");
        assert!(!result.pipelines.is_empty(), "{preset}: pipeline schedules (pp = 2)");
    }
}

/// A torchrun console of a job that hung (written from PyTorch's format strings): the page's bundle has no failure
/// readers, so the analysis worker reads such a file only until it is recognised.
const HUNG_CONSOLE: &[u8] =
    include_bytes!("../../seqskew-core/tests/fixtures/failures/nccl/hang_dump_signal/console.log");

#[wasm_bindgen_test]
fn logs_are_left_to_the_failure_worker_once_recognised_and_traces_are_read_on() {
    use seqskew_core::import::{FileIngest, Format};
    let first = &HUNG_CONSOLE[..HUNG_CONSOLE.len().min(2048)];
    assert!(first.len() < HUNG_CONSOLE.len(), "the fixture is larger than its first slice");
    let mut log = FileIngest::new("console.log");
    log.feed(first);
    assert!(!log.wants_more(), "a log, recognised from its first slice, is not read on");
    let import = log.finish_of_size(HUNG_CONSOLE.len() as u64);
    assert_eq!(import.format, Some(Format::Log));
    assert!(import.diagnostics.is_empty(), "a log left early is not cut: {:?}", import.diagnostics);

    // The same of a real console, gzipped (torch 2.15, gloo): its stream is left unfinished.
    let gzipped: &[u8] = include_bytes!("../../seqskew-core/tests/fixtures/failures/hang/console.log.gz");
    let mut log = FileIngest::new("console.log.gz");
    log.feed(&gzipped[..700]);
    assert!(!log.wants_more(), "a gzipped log, recognised from what its first 700 bytes hold, is not read on");
    let import = log.finish_of_size(gzipped.len() as u64);
    assert_eq!((import.format, import.compressed), (Some(Format::Log), true));
    assert!(import.diagnostics.is_empty(), "a gzip stream left early is not truncated: {:?}", import.diagnostics);

    let steps: String = (1..=100).map(|step| format!("{{\"step\":{step},\"rank\":0,\"step_s\":1.0}}\n")).collect();
    let mut trace = FileIngest::new("steps.jsonl");
    trace.feed(&steps.as_bytes()[..2048]);
    assert!(trace.wants_more(), "a step log is read to its end");

    // A job of both, in 2 KiB slices: the log is listed, the steps analysed.
    let files = vec![blob_file("console.log", HUNG_CONSOLE), blob_file("steps.jsonl", steps.as_bytes())];
    let result = decode::<JobResult>(&run_to_completion(files, 2048)).expect("a result");
    assert_eq!(result.files[0].format, Some(Format::Log));
    assert!(result.files[0].diagnostics.is_empty(), "{:?}", result.files[0].diagnostics);
    assert_eq!((result.workers, result.steps), (1, 100));
}

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

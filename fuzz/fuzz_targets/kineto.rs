//! PyTorch profiler (Kineto) traces: the fuzzer writes the rest of a document that starts
//! like one, so the sniffer always picks the Kineto importer.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

const PREFIX: &[u8] = br#"{"schemaVersion":1,"traceEvents":["#;

fuzz_target!(|input: &[u8]| {
    let Some((control, data)) = common::split(input) else { return };
    let content = [PREFIX, data].concat();
    common::check(&common::name(control, "pt.trace.json"), &content, control);
});

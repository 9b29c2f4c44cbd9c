//! Chrome Trace Event Format files other than Kineto's: the fuzzer writes the events of a
//! document that starts like a merged trace (it may still write a Kineto marker into the first
//! KiB, which picks the Kineto importer instead).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

const PREFIX: &[u8] = br#"{"displayTimeUnit":"ms","traceEvents":["#;

fuzz_target!(|input: &[u8]| {
    let Some((control, data)) = common::split(input) else { return };
    let content = [PREFIX, data].concat();
    common::check(&common::name(control, "json"), &content, control);
});

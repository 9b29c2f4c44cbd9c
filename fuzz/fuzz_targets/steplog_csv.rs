//! Step logs in CSV: a header line makes the sniffer pick the CSV importer; the fuzzer writes
//! the rows.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

const HEADER: &[u8] = b"step,rank,mb,step_s,compute_s,lengths\n";

fuzz_target!(|input: &[u8]| {
    let Some((control, data)) = common::split(input) else { return };
    let content = [HEADER, data].concat();
    common::check(&common::name(control, "csv"), &content, control);
});

//! Step logs in JSON Lines: a valid first row makes the sniffer pick the JSONL importer; the
//! fuzzer's lines follow as they are.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

const FIRST_LINE: &[u8] =
    b"{\"v\":1,\"step\":1,\"rank\":0,\"step_s\":0.5,\"compute_s\":0.25,\"comm_s\":0.1,\"lengths\":[3,5]}\n";

fuzz_target!(|input: &[u8]| {
    let Some((control, data)) = common::split(input) else { return };
    let content = [FIRST_LINE, data].concat();
    common::check(&common::name(control, "jsonl"), &content, control);
});

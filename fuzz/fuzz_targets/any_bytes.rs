//! Any bytes through the dispatcher: gzip detection (the fuzzer can write gzip itself, or set
//! the control bit that gzips its data first, so valid streams reach the parsers), format
//! sniffing, and whichever importer the sniffer picks.
#![no_main]

mod common;

use std::io::Write;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((control, data)) = common::split(input) else { return };
    let content = if control.gzip {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).expect("gzip into memory");
        encoder.finish().expect("gzip into memory")
    } else {
        data.to_vec()
    };
    common::check(&common::name(control, "json"), &content, control);
});

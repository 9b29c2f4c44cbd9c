//! The built-in example job. (Placeholder until the simulator lands: a tiny step log.)

use crate::protocol::InputFile;

pub fn files() -> Vec<InputFile> {
    let mut text = String::new();
    for step in 0..20u64 {
        for rank in 0..4u64 {
            let long = (step + rank) % 4 == 0;
            let lengths = if long { "4096,512,256" } else { "1024,1024,1024" };
            let compute = if long { 0.9 } else { 0.5 };
            text.push_str(&format!(
                "{{\"step\":{step},\"rank\":{rank},\"step_s\":1.0,\"compute_s\":{compute},\"lengths\":[{lengths}]}}\n"
            ));
        }
    }
    let bytes = text.into_bytes();
    let array = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes.as_slice()));
    let blob = web_sys::Blob::new_with_u8_array_sequence(&array)
        .unwrap_or_else(|_| web_sys::Blob::new().unwrap_or_else(|_| unreachable!()));
    vec![InputFile { name: "seqlen-imbalance.steplog.jsonl".to_owned(), size: bytes.len() as u64, blob }]
}

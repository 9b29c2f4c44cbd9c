//! The page side, in a real browser: the message codec and the components.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed expectation is the test failing

use gloo::worker::Codec;
use seqskew_web::protocol::{InputFile, JsCodec, Request, Response};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn blobs_and_payloads_cross_the_codec_as_themselves() {
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(&b"hello"[..]));
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).expect("a blob");
    let request =
        Request::Analyze { job: 3, files: vec![InputFile { name: "a.json".into(), size: 5, blob: blob.clone() }] };
    let value = JsCodec::encode(request);
    let Request::Analyze { job, files } = JsCodec::decode::<Request>(value) else { panic!("wrong variant") };
    assert_eq!(job, 3);
    assert_eq!(files[0].blob.size(), 5.0);
    assert!(js_sys::Object::is(&files[0].blob, &blob), "the blob was copied instead of passed");

    let response = Response::Done { job: 3, payload: vec![1, 2, 3] };
    let value = JsCodec::encode(response);
    let payload =
        js_sys::Reflect::get(&js_sys::Reflect::get(&value, &"Done".into()).unwrap(), &"payload".into()).unwrap();
    assert!(payload.is_instance_of::<js_sys::Uint8Array>(), "payload should be one Uint8Array");
    let Response::Done { payload, .. } = JsCodec::decode::<Response>(value) else { panic!("wrong variant") };
    assert_eq!(payload, vec![1, 2, 3]);
}

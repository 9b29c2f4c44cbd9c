//! The failure worker: the page starts it (`web/failure-worker.js`) only when a dropped file is
//! a log, an error file or a Flight Recorder dump, so that the readers and the diagnosis of
//! failed jobs are not in the page's first bundle.
//!
//! It takes `{job, files: [{name, blob}]}` and answers `{job, payload}`, the payload being the
//! bincode of a [`Reading`] (the page decodes it as it decodes the analysis worker's results),
//! or `{job, error}`. Files are read in slices with `FileReaderSync`: nothing is fetched, nothing
//! leaves the browser.

use seqskew_core::failure::{Reading, reading};
use seqskew_core::import::{FileImport, FileIngest};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// Bytes read from a file at a time.
const SLICE_BYTES: f64 = (32u32 << 20) as f64;

fn describe(value: &JsValue) -> String {
    value.as_string().unwrap_or_else(|| format!("{value:?}"))
}

fn field(object: &JsValue, key: &str) -> Result<JsValue, String> {
    js_sys::Reflect::get(object, &JsValue::from_str(key)).map_err(|e| describe(&e))
}

/// Reads one file through the importer (a file that cannot be read is a diagnostic).
fn import(name: &str, blob: &web_sys::Blob) -> FileImport {
    let mut ingest = FileIngest::new(name);
    let size = blob.size();
    let read = (|| -> Result<(), String> {
        let reader = web_sys::FileReaderSync::new().map_err(|e| describe(&e))?;
        let mut at = 0.0;
        while at < size && !ingest.is_rejected() {
            let slice = blob.slice_with_f64_and_f64(at, (at + SLICE_BYTES).min(size)).map_err(|e| describe(&e))?;
            let buffer = reader.read_as_array_buffer(&slice).map_err(|e| describe(&e))?;
            let bytes = js_sys::Uint8Array::new(buffer.as_ref());
            ingest.feed(&bytes.to_vec());
            at += SLICE_BYTES;
        }
        Ok(())
    })();
    let mut import = ingest.finish_of_size(size as u64);
    if let Err(why) = read {
        import.diagnostics.push(seqskew_core::diag::Diagnostic::new(
            seqskew_core::diag::Severity::Error,
            name,
            None,
            format!("could not read the file: {why}"),
        ));
    }
    import
}

fn answer(message: &JsValue) -> Result<Reading, String> {
    let files = js_sys::Array::from(&field(message, "files")?);
    let imports: Vec<FileImport> = files
        .iter()
        .map(|file| {
            let name = field(&file, "name").ok().and_then(|n| n.as_string()).unwrap_or_default();
            let blob: web_sys::Blob = field(&file, "blob")?.dyn_into().map_err(|_| format!("{name}: not a file"))?;
            Ok(import(&name, &blob))
        })
        .collect::<Result<_, String>>()?;
    Ok(reading(&imports))
}

fn main() {
    let scope: web_sys::DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let reply_to = scope.clone();
    let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
        let message = event.data();
        let reply = js_sys::Object::new();
        let set = |key: &str, value: &JsValue| js_sys::Reflect::set(&reply, &JsValue::from_str(key), value);
        let _ = set("job", &field(&message, "job").unwrap_or(JsValue::NULL));
        let result = answer(&message)
            .and_then(|reading| bincode::serialize(&reading).map_err(|e| format!("could not encode the result: {e}")));
        let _ = match result {
            Ok(bytes) => set("payload", &js_sys::Uint8Array::from(bytes.as_slice())),
            Err(why) => set("error", &JsValue::from_str(&why)),
        };
        let _ = reply_to.post_message(&reply);
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
}

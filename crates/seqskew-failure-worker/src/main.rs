//! The failure worker: the analysis worker starts it (`web/failure-worker.js`, see
//! `seqskew-web`'s `failure_link.rs`) only when a dropped file is a log, an error file or a
//! Flight Recorder dump, so that the readers and the diagnosis of failed jobs are in neither
//! the page's bundle nor the analysis worker's.
//!
//! It takes `{job, files: [{index, name, blob, bytes?}], end}` messages, the files of a job
//! as the analysis worker recognises them (a new `job` drops what an older one sent): each file
//! is imported as it comes, from `bytes` (a `Uint8Array`) when the analysis worker read it
//! whole, else from the `Blob`, read in slices with `FileReaderSync`. On `end` it answers
//! `{job, payload}`, the payload being the bincode of the [`Reading`] of the job's files in
//! their order (the page decodes it as it decodes the analysis worker's results), or
//! `{job, error}`. Nothing is fetched, nothing leaves the browser.

use std::cell::RefCell;

use seqskew_core::failure::{Reading, reading};
use seqskew_core::import::{FileImport, FileIngest};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// Bytes read from a file at a time.
const SLICE_BYTES: f64 = (32u32 << 20) as f64;

/// Bytes copied into WebAssembly memory at a time (it never shrinks: a whole slice copied at
/// once would stay part of the worker for good).
const FEED_BYTES: u32 = 256 << 10;

/// The job being read: its id and its files so far, each with its index in the job.
type Job = (f64, Vec<(u32, FileImport)>);

thread_local! {
    static JOB: RefCell<Option<Job>> = const { RefCell::new(None) };
}

fn describe(value: &JsValue) -> String {
    value.as_string().unwrap_or_else(|| format!("{value:?}"))
}

fn field(object: &JsValue, key: &str) -> Result<JsValue, String> {
    js_sys::Reflect::get(object, &JsValue::from_str(key)).map_err(|e| describe(&e))
}

/// Feeds `bytes` to `ingest`, [`FEED_BYTES`] at a time through one buffer.
fn feed(ingest: &mut FileIngest, bytes: &js_sys::Uint8Array, buffer: &mut Vec<u8>) {
    let mut at = 0;
    while at < bytes.length() && ingest.wants_more() {
        let end = bytes.length().min(at.saturating_add(FEED_BYTES));
        buffer.resize((end - at) as usize, 0);
        bytes.subarray(at, end).copy_to(buffer);
        ingest.feed(buffer);
        at = end;
    }
}

/// Reads one file through the importer, from its bytes if the analysis worker sent them, else
/// from its blob (a file that cannot be read is a diagnostic).
fn import(name: &str, blob: &web_sys::Blob, bytes: Option<js_sys::Uint8Array>, buffer: &mut Vec<u8>) -> FileImport {
    let mut ingest = FileIngest::new(name);
    let size = blob.size();
    let read = (|| -> Result<(), String> {
        if let Some(bytes) = bytes {
            feed(&mut ingest, &bytes, buffer);
            return Ok(());
        }
        let reader = web_sys::FileReaderSync::new().map_err(|e| describe(&e))?;
        let mut at = 0.0;
        while at < size && ingest.wants_more() {
            // A file of one slice is read as it is: Chromium's `Blob.slice` costs more than
            // reading a small file.
            let slice = match size <= SLICE_BYTES {
                true => blob.clone(),
                false => blob.slice_with_f64_and_f64(at, (at + SLICE_BYTES).min(size)).map_err(|e| describe(&e))?,
            };
            let buffer_read = reader.read_as_array_buffer(&slice).map_err(|e| describe(&e))?;
            feed(&mut ingest, &js_sys::Uint8Array::new(buffer_read.as_ref()), buffer);
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

/// Imports the message's files into job `job`'s; its [`Reading`] once the message says `end`.
fn take(job: f64, message: &JsValue) -> Result<Option<Reading>, String> {
    let files = js_sys::Array::from(&field(message, "files")?);
    let mut buffer = Vec::new();
    let mut imports = Vec::with_capacity(files.length() as usize);
    for file in files.iter() {
        let name = field(&file, "name").ok().and_then(|n| n.as_string()).unwrap_or_default();
        let index = field(&file, "index").ok().and_then(|i| i.as_f64()).unwrap_or(f64::from(u32::MAX)) as u32;
        let blob: web_sys::Blob = field(&file, "blob")?.dyn_into().map_err(|_| format!("{name}: not a file"))?;
        let bytes = field(&file, "bytes").ok().and_then(|b| b.dyn_into::<js_sys::Uint8Array>().ok());
        imports.push((index, import(&name, &blob, bytes, &mut buffer)));
    }
    let end = field(message, "end").ok().and_then(|e| e.as_bool()).unwrap_or(false);
    JOB.with(|slot| {
        let mut slot = slot.borrow_mut();
        let files = match slot.as_mut() {
            Some((current, files)) if *current == job => files,
            _ => &mut slot.insert((job, Vec::new())).1,
        };
        files.extend(imports);
        if !end {
            return Ok(None);
        }
        let (_, mut files) = slot.take().unwrap_or_default();
        files.sort_by_key(|(index, _)| *index);
        let files: Vec<FileImport> = files.into_iter().map(|(_, import)| import).collect();
        Ok(Some(reading(files)))
    })
}

fn main() {
    let scope: web_sys::DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let reply_to = scope.clone();
    let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
        let message = event.data();
        let job = field(&message, "job").unwrap_or(JsValue::NULL);
        let result = match take(job.as_f64().unwrap_or(f64::NAN), &message) {
            Ok(None) => return,
            Ok(Some(reading)) => bincode::serialize(&reading).map_err(|e| format!("could not encode the result: {e}")),
            Err(why) => Err(why),
        };
        let reply = js_sys::Object::new();
        let set = |key: &str, value: &JsValue| js_sys::Reflect::set(&reply, &JsValue::from_str(key), value);
        let _ = set("job", &job);
        let _ = match result {
            Ok(bytes) => set("payload", &js_sys::Uint8Array::from(bytes.as_slice())),
            Err(why) => set("error", &JsValue::from_str(&why)),
        };
        let _ = reply_to.post_message(&reply);
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
}

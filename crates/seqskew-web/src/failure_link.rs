//! The analysis worker's line to the failure worker (crates/seqskew-failure-worker), which it
//! starts itself the first time a job has a log or a dump: the failed jobs' readers are a
//! second bundle, fetched only then. Files go straight from one worker to the other (their
//! bytes moved, not copied, when the analysis worker read them whole), so the page never holds
//! them; the failure worker's answer comes back through the analysis worker to the page
//! ([`Response::FailureRead`]).
//!
//! The failure worker takes `{job, files: [{index, name, blob, bytes?}], end}` messages and,
//! on `end`, answers `{job, payload}` (a bincode `failure::Reading`) or `{job, error}`.

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;

use crate::protocol::{DeferredFile, InputFile, Response};

/// Where the failure worker's loader is, relative to the analysis worker (beside it).
const FAILURE_LOADER: &str = "./failure-worker.js";

pub struct FailureLink {
    worker: web_sys::Worker,
    _on_message: Closure<dyn Fn(web_sys::MessageEvent)>,
    _on_error: Closure<dyn Fn(web_sys::Event)>,
}

impl FailureLink {
    /// Starts the failure worker; its answers go to `respond` (which passes them to the page).
    pub fn start(respond: impl Fn(Response) + Clone + 'static) -> Result<Self, String> {
        let worker = web_sys::Worker::new(FAILURE_LOADER).map_err(|e| format!("{e:?}"))?;
        let on_message = {
            let respond = respond.clone();
            Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
                let data = event.data();
                let get =
                    |key: &str| js_sys::Reflect::get(&data, &key.into()).unwrap_or(wasm_bindgen::JsValue::UNDEFINED);
                let job = get("job").as_f64().map(|j| j as u32);
                let payload = get("payload");
                let error = match payload.is_instance_of::<js_sys::Uint8Array>() {
                    true => None,
                    false => {
                        Some(get("error").as_string().unwrap_or_else(|| "the failure reader gave no answer".into()))
                    }
                };
                respond(Response::FailureRead { job, payload, error });
            })
        };
        let on_error = Closure::<dyn Fn(web_sys::Event)>::new(move |_: web_sys::Event| {
            let error = Some("the failure reader could not start (seqskew-failure.js did not load)".to_owned());
            respond(Response::FailureRead { job: None, payload: wasm_bindgen::JsValue::UNDEFINED, error });
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Ok(FailureLink { worker, _on_message: on_message, _on_error: on_error })
    }

    /// Hands `deferred` files of job `job` (whose files are `files`, by index) on; with `end`,
    /// says they are all there.
    pub fn send(
        &self,
        job: u32,
        files: &[(u32, InputFile)],
        deferred: &[DeferredFile],
        end: bool,
    ) -> Result<(), String> {
        let set = |object: &js_sys::Object, key: &str, value: &wasm_bindgen::JsValue| {
            js_sys::Reflect::set(object, &key.into(), value).map(drop).map_err(|e| format!("{e:?}"))
        };
        let list = js_sys::Array::new();
        let transfer = js_sys::Array::new();
        for deferred in deferred {
            // The analysis worker's files are in the job's order.
            let Some((_, file)) = files.get(deferred.index as usize).filter(|(index, _)| *index == deferred.index)
            else {
                continue;
            };
            let entry = js_sys::Object::new();
            set(&entry, "index", &deferred.index.into())?;
            set(&entry, "name", &file.name.as_str().into())?;
            set(&entry, "blob", &file.blob)?;
            set(&entry, "bytes", &deferred.bytes)?;
            if let Some(bytes) = deferred.bytes.dyn_ref::<js_sys::Uint8Array>() {
                transfer.push(&bytes.buffer());
            }
            list.push(&entry);
        }
        let message = js_sys::Object::new();
        set(&message, "job", &job.into())?;
        set(&message, "files", &list)?;
        set(&message, "end", &end.into())?;
        self.worker.post_message_with_transfer(&message, &transfer).map_err(|e| format!("{e:?}"))
    }
}

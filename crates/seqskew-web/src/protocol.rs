//! The one message pipe between the page and the analysis worker, and between the analysis
//! worker and the import workers it shares a job's files with.
//!
//! Files cross as `Blob` handles (structured clone: no bytes are copied on the page); the
//! worker reads them in 32 MiB slices. Results cross as one binary payload (bincode), so even a
//! 4096-worker job arrives as a single `Uint8Array`, not millions of JS objects.

use std::io::{BufReader, BufWriter, Write};
use std::rc::Rc;

use gloo::worker::Codec;
use seqskew_core::import::FileImport;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;

use crate::js_bytes::JsBytes;

/// A file handed to the worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InputFile {
    /// The name shown to the user (relative path for files from dropped folders).
    pub name: String,
    pub size: u64,
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub blob: web_sys::Blob,
}

/// Page → worker (and analysis worker → import worker).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Request {
    /// Import and analyse these files as one job.
    Analyze { job: u32, files: Vec<InputFile> },
    /// Import these files, each with its index in the job, and send them back unanalysed
    /// ([`Response::Imported`]): what an import worker is handed, a file at a time (none at
    /// first: its empty answer says it has started).
    Import { job: u32, files: Vec<(u32, InputFile)> },
    /// Simulate a preset job, write it as a Chrome trace, and analyse that like a dropped file.
    Example { job: u32, preset: String },
    /// Stop job `job`; its partial results are discarded.
    Cancel { job: u32 },
}

/// Worker → page.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Response {
    Progress(Progress),
    /// The job's result, a bincode-encoded [`JobResult`] ([`decode`]).
    Done {
        job: u32,
        #[serde(with = "serde_wasm_bindgen::preserve")]
        payload: js_sys::Uint8Array,
    },
    /// The job's logs and dumps went to the failure worker (the analysis worker starts it and
    /// hands them on as it recognises them, so it reads them while the rest is read).
    FailureStarted {
        job: u32,
    },
    /// The failure worker's answer for `job` (`None`: it could not start, whatever the job):
    /// a bincode [`seqskew_core::failure::Reading`] ([`decode`]), or why there is none.
    FailureRead {
        job: Option<u32>,
        /// A `Uint8Array`, or `undefined` with `error`.
        #[serde(with = "serde_wasm_bindgen::preserve")]
        payload: JsValue,
        error: Option<String>,
    },
    /// An import worker's files, bincode-encoded [`Imports`] ([`decode`]), the logs and dumps
    /// among them, and the size of its WebAssembly memory (which only grows: its peak so far).
    Imported {
        job: u32,
        #[serde(with = "serde_wasm_bindgen::preserve")]
        payload: js_sys::Uint8Array,
        deferred: Vec<DeferredFile>,
        wasm_bytes: u64,
    },
    Cancelled {
        job: u32,
    },
    /// The worker hit a bug; it is gone and a new one must be started.
    Crashed {
        message: String,
    },
}

/// A log or dump a worker recognised and does not read (the readers of failed jobs are not in
/// its bundle): its index in the job, and its bytes when they were read whole in one slice to
/// recognise it, so that the failure worker need not read it again (browsers read many small
/// files at about a millisecond each, whatever their size). Import workers send theirs back
/// with their imports.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DeferredFile {
    pub index: u32,
    /// A `Uint8Array`, or `undefined` when only the file's first slice was read.
    #[serde(with = "serde_wasm_bindgen::preserve")]
    pub bytes: JsValue,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub job: u32,
    pub files_done: u32,
    pub files_total: u32,
    pub bytes_done: u64,
    pub bytes_total: u64,
    /// Milliseconds since the job started (for the rate and time left).
    pub elapsed_ms: f64,
}

/// Imported files, each with its index in the job.
pub type Imports = Vec<(u32, FileImport)>;

/// What a finished job sends back: the files' summaries and, when anything could be
/// analysed, the analysis (report and plotted series). Never the raw trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    pub files: Vec<seqskew_core::import::FileSummary>,
    pub job_diagnostics: Vec<seqskew_core::diag::Diagnostic>,
    pub workers: usize,
    pub steps: usize,
    /// Shared, not copied, by the page's views (Rc serialises as its contents).
    pub analysis: Option<Rc<seqskew_core::analysis::Analysis>>,
    /// What the timeline draws (40 MiB for a gigabyte of traces: shared like the analysis).
    pub timeline: Option<Rc<seqskew_plot::timeline::TimelineData>>,
    /// Per step (pipeline jobs only): the pipeline of the replica holding the step's initiator.
    pub pipelines: Vec<seqskew_plot::PipelineData>,
    pub timings: Timings,
}

/// Where the worker spent a job's time (wall clock, milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// From the request to the last file imported: reading the slices and importing them.
    pub read_ms: f64,
    /// Assembling the job, diagnosing it, and making what the views draw.
    pub analysis_ms: f64,
    /// Workers that read the files: the analysis worker and the import workers it started.
    pub import_workers: u32,
    /// The WebAssembly memory of the workers that read the files, together, once the last
    /// file was in: the import workers end then, and the analysis worker's memory only grows
    /// from there, so the workers' peak is the larger of this and the analysis worker's final
    /// memory.
    pub read_wasm_bytes: u64,
}

impl JobResult {
    /// The analysed files' names, comma-separated (the `data-files` hook).
    pub fn file_names(&self) -> String {
        self.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>().join(",")
    }
}

/// A payload (a result, or imports) as one `Uint8Array`, written straight into JavaScript
/// memory through a small buffer: neither side ever holds a WebAssembly copy of it (tens of
/// megabytes for a gigabyte of traces), since WebAssembly memory never shrinks. Empty if it
/// cannot be written.
pub fn encode<T: Serialize>(value: &T) -> js_sys::Uint8Array {
    let size = bincode::serialized_size(value).ok().and_then(|n| u32::try_from(n).ok());
    let array = js_sys::Uint8Array::new_with_length(size.unwrap_or(0));
    let written = {
        let mut out = BufWriter::with_capacity(PIECE_BYTES, JsBytes::new(&array));
        bincode::serialize_into(&mut out, value).is_ok() && out.flush().is_ok()
    };
    if written { array } else { js_sys::Uint8Array::new_with_length(0) }
}

/// Reads what [`encode`] wrote, a piece at a time.
pub fn decode<T: DeserializeOwned>(payload: &js_sys::Uint8Array) -> Result<T, String> {
    let input = BufReader::with_capacity(PIECE_BYTES, JsBytes::new(payload));
    bincode::deserialize_from(input).map_err(|e| format!("could not read the worker's payload: {e}"))
}

/// Bytes copied between JavaScript and WebAssembly memory at a time.
const PIECE_BYTES: usize = 64 << 10;

/// Messages as JS values (serde-wasm-bindgen), so `Blob`s and byte buffers pass as themselves.
#[derive(Debug)]
pub struct JsCodec;

impl Codec for JsCodec {
    fn encode<I: Serialize>(input: I) -> JsValue {
        let serializer = serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true);
        input.serialize(&serializer).unwrap_or(JsValue::NULL)
    }

    fn decode<O: for<'de> Deserialize<'de>>(input: JsValue) -> O {
        // A message that does not decode is a bug in this file; the panic hook reports it.
        #[allow(clippy::expect_used)]
        serde_wasm_bindgen::from_value(input).expect("a worker message that does not decode")
    }
}

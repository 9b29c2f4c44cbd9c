//! The analysis worker: imports the files a job names, slice by slice, and sends back the
//! result. Between slices it yields to the event loop, so progress goes out and a cancel
//! comes in while a 4 GB trace is being read.

use std::cell::RefCell;

use gloo::worker::{HandlerId, Registrable, Worker, WorkerScope};
use seqskew_core::analysis::analyze;
use seqskew_core::diag::{Diagnostic, Severity};
use seqskew_core::import::{FileImport, FileIngest, assemble_owned};
use wasm_bindgen::JsCast;

use crate::protocol::{InputFile, JobResult, JsCodec, Progress, Request, Response, encode_result};

/// Bytes read per slice: large enough to amortise the call, small enough to stay responsive.
pub const SLICE_BYTES: u64 = 32 << 20;

/// A slice enters WebAssembly memory this much at a time, through one reused buffer: the
/// memory never shrinks, so a 32 MiB copy would stay part of the worker for good.
const FEED_BYTES: usize = 1 << 20;

/// Memory one file's importer may hold before the file is given up with a clear message. The
/// worker's WebAssembly memory is 4 GiB at most; the file's model, the other files' and the
/// analysis need the rest. (A merged Chrome trace holds about half its size until its end.)
pub const FILE_MEMORY_LIMIT: usize = 1 << 30;

thread_local! {
    /// Where a panic is reported: the scope and the bridge of the job being run.
    static REPORT_TO: RefCell<Option<(WorkerScope<AnalysisWorker>, HandlerId)>> = const { RefCell::new(None) };
}

/// Runs in the worker context: installs the panic reporter and starts serving the page.
pub fn register() {
    std::panic::set_hook(Box::new(|info| {
        let message = info.to_string();
        REPORT_TO.with(|r| {
            if let Ok(r) = r.try_borrow()
                && let Some((scope, id)) = r.as_ref()
            {
                scope.respond(*id, Response::Crashed { message });
            }
        });
    }));
    AnalysisWorker::registrar().encoding::<JsCodec>().register();
}

struct RunningJob {
    id: u32,
    slice_bytes: u64,
    files: Vec<InputFile>,
    /// The file being read and how far.
    index: usize,
    offset: u64,
    ingest: Option<FileIngest>,
    /// Where each piece of a slice is copied before it is fed.
    buffer: Vec<u8>,
    imports: Vec<FileImport>,
    bytes_done: u64,
    bytes_total: u64,
    started_ms: f64,
}

#[derive(Debug)]
pub enum Msg {
    Continue(u32),
}

pub struct AnalysisWorker {
    /// The job being run and the bridge that asked for it.
    job: Option<(HandlerId, RunningJob)>,
}

/// Runs a whole job synchronously, returning the payload `Done` would carry (tests, and
/// callers that already are off the page's thread).
pub fn run_to_completion(files: Vec<InputFile>, slice_bytes: u64) -> js_sys::Uint8Array {
    let mut job = RunningJob::new(0, files, slice_bytes);
    while job.read_next_slice() {}
    encode_result(&job.finish())
}

impl Worker for AnalysisWorker {
    type Message = Msg;
    type Input = Request;
    type Output = Response;

    fn create(_scope: &WorkerScope<Self>) -> Self {
        AnalysisWorker { job: None }
    }

    fn update(&mut self, scope: &WorkerScope<Self>, msg: Msg) {
        let Msg::Continue(id) = msg;
        let Some((client, job)) = self.job.as_mut().filter(|(_, j)| j.id == id) else {
            return;
        };
        if job.read_next_slice() {
            scope.respond(*client, Response::Progress(job.progress()));
            // A macrotask between slices lets messages (cancel) in.
            scope.send_future(async move {
                gloo::timers::future::TimeoutFuture::new(0).await;
                Msg::Continue(id)
            });
            return;
        }
        if let Some((client, job)) = self.job.take() {
            let id = job.id;
            let result = job.finish();
            scope.respond(client, Response::Done { job: id, payload: encode_result(&result) });
        }
    }

    fn received(&mut self, scope: &WorkerScope<Self>, msg: Request, client: HandlerId) {
        REPORT_TO.with(|r| *r.borrow_mut() = Some((scope.clone(), client)));
        match msg {
            Request::Analyze { job, files } => {
                self.job = Some((client, RunningJob::new(job, files, SLICE_BYTES)));
                scope.send_message(Msg::Continue(job));
            }
            Request::Example { job, preset } => match example_file(&preset) {
                Ok(file) => {
                    self.job = Some((client, RunningJob::new(job, vec![file], SLICE_BYTES)));
                    scope.send_message(Msg::Continue(job));
                }
                Err(message) => scope.respond(client, Response::Crashed { message }),
            },
            Request::Cancel { job } => {
                if self.job.as_ref().is_some_and(|(_, j)| j.id == job) {
                    self.job = None;
                }
                scope.respond(client, Response::Cancelled { job });
            }
        }
    }
}

impl RunningJob {
    fn new(id: u32, files: Vec<InputFile>, slice_bytes: u64) -> Self {
        let bytes_total = files.iter().map(|f| f.size).sum();
        RunningJob {
            id,
            slice_bytes: slice_bytes.max(1),
            files,
            index: 0,
            offset: 0,
            ingest: None,
            buffer: Vec::new(),
            imports: Vec::new(),
            bytes_done: 0,
            bytes_total,
            started_ms: js_sys::Date::now(),
        }
    }

    fn progress(&self) -> Progress {
        Progress {
            job: self.id,
            files_done: self.imports.len() as u32,
            files_total: self.files.len() as u32,
            bytes_done: self.bytes_done,
            bytes_total: self.bytes_total,
            elapsed_ms: js_sys::Date::now() - self.started_ms,
        }
    }

    /// Reads one slice of the current file (finishing it at its end). False when all files are read.
    fn read_next_slice(&mut self) -> bool {
        let Some(file) = self.files.get(self.index) else {
            return false;
        };
        let ingest =
            self.ingest.get_or_insert_with(|| FileIngest::new(&file.name).with_memory_limit(FILE_MEMORY_LIMIT));
        let end = (self.offset + self.slice_bytes).min(file.size);
        let read = if self.offset < end && !ingest.is_rejected() {
            read_slice(&file.blob, self.offset, end)
        } else {
            Ok(js_sys::Uint8Array::new_with_length(0))
        };
        match read {
            Ok(bytes) if bytes.length() > 0 => {
                feed_in_pieces(ingest, &bytes, &mut self.buffer);
                self.bytes_done += u64::from(bytes.length());
                self.offset = end;
                if end < file.size && !ingest.is_rejected() {
                    return true;
                }
            }
            Ok(_) => {}
            Err(e) => {
                let mut import = self.ingest.take().map(FileIngest::finish).unwrap_or_default();
                import.diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    &file.name,
                    None,
                    format!("the browser could not read the file: {e}"),
                ));
                self.imports.push(import);
                self.next_file();
                return self.index < self.files.len();
            }
        }
        if let Some(ingest) = self.ingest.take() {
            self.imports.push(ingest.finish());
        }
        self.next_file();
        self.index < self.files.len()
    }

    /// Moves to the next file; a file stopped early (rejected, unreadable) counts as read.
    fn next_file(&mut self) {
        self.index += 1;
        self.offset = 0;
        self.bytes_done = self.files.iter().take(self.index).map(|f| f.size).sum();
    }

    fn finish(self) -> JobResult {
        let files: Vec<_> = self.imports.iter().map(FileImport::summary).collect();
        let assembled = assemble_owned(self.imports);
        let job = &assembled.job;
        let analysis = (!job.workers.is_empty()).then(|| analyze(&assembled, &files));
        let pipelines = match &analysis {
            Some(a) if a.report.job.pp > 1 => a
                .views
                .steps
                .iter()
                .filter_map(|s| {
                    let replica =
                        s.initiator.and_then(|w| job.workers.get(w)).and_then(|w| w.coords.dp).unwrap_or(0) as usize;
                    seqskew_plot::pipeline_data(job, s.step, replica)
                })
                .collect(),
            _ => Vec::new(),
        };
        let (workers, steps) = (job.workers.len(), job.steps().len());
        // Last, as it consumes the job: its spans are freed while the timeline's are made.
        let timeline = (workers > 0).then(|| seqskew_plot::timeline::timeline_data(assembled.job));
        JobResult { job_diagnostics: assembled.diagnostics, workers, steps, files, analysis, timeline, pipelines }
    }
}

/// A preset job written as a merged Chrome trace, as a file the job reads like any other.
pub fn example_file(preset: &str) -> Result<InputFile, String> {
    let config = seqskew_sim::preset(preset).ok_or_else(|| format!("no example named {preset}"))?;
    let mut writer = seqskew_sim::write::chrome::ChromeWriter::new(&config, Vec::new()).map_err(|e| e.to_string())?;
    for step in seqskew_sim::Simulation::new(config, false) {
        writer.step(&step).map_err(|e| e.to_string())?;
    }
    let bytes = writer.finish().map_err(|e| e.to_string())?;
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes.as_slice()));
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).map_err(|e| format!("{e:?}"))?;
    Ok(InputFile { name: format!("{preset}.trace.json"), size: bytes.len() as u64, blob })
}

/// Feeds a slice read into JavaScript memory to the importer, [`FEED_BYTES`] at a time.
fn feed_in_pieces(ingest: &mut FileIngest, bytes: &js_sys::Uint8Array, buffer: &mut Vec<u8>) {
    let total = bytes.length();
    let mut at = 0;
    while at < total {
        let end = total.min(at.saturating_add(FEED_BYTES as u32));
        buffer.resize((end - at) as usize, 0);
        bytes.subarray(at, end).copy_to(buffer);
        ingest.feed(buffer);
        at = end;
    }
}

fn read_slice(blob: &web_sys::Blob, start: u64, end: u64) -> Result<js_sys::Uint8Array, String> {
    let describe = |e: wasm_bindgen::JsValue| {
        e.dyn_ref::<js_sys::Error>().map_or_else(|| format!("{e:?}"), |e| String::from(e.message()))
    };
    let slice = blob.slice_with_f64_and_f64(start as f64, end as f64).map_err(describe)?;
    let reader = web_sys::FileReaderSync::new().map_err(describe)?;
    let buffer = reader.read_as_array_buffer(&slice).map_err(describe)?;
    Ok(js_sys::Uint8Array::new(&buffer))
}

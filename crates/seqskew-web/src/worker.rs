//! The analysis worker: imports the files a job names, slice by slice, and sends back the
//! result. Slices are read without blocking while the ones before them are fed (several at
//! once, since a browser takes about a millisecond to read any file, however small), and
//! arrive as messages: between slices the worker yields to the event loop, so progress goes
//! out and a cancel comes in while a 4 GB trace is being read. Logs and dumps are recognised
//! and handed on as they come to the failure worker, which this worker starts
//! ([`crate::failure_link`]), not read here.
//!
//! A job of several large files (one per rank, as the PyTorch profiler writes them) is shared:
//! the analysis worker starts import workers (its own bundle, one per spare core) and reads
//! the files from the first on, while each import worker, once started, is handed the last
//! unclaimed file, sends its import back, and is handed the next ([`crate::shares`]). Every
//! file in, the analysis worker assembles them in the job's order and analyses them.
//! WebAssembly threads would need a cross-origin-isolated page, which a wiki cannot promise;
//! workers that send their imports back need nothing.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Read;
use std::rc::Rc;

use gloo::worker::{HandlerId, Registrable, Spawnable, Worker, WorkerBridge, WorkerScope};
use seqskew_core::analysis::analyze;
use seqskew_core::diag::{Diagnostic, Severity};
use seqskew_core::import::{FileImport, FileIngest, Format, assemble_owned};
use wasm_bindgen::JsCast;

use crate::failure_link::FailureLink;
use crate::js_bytes::JsBytes;
use crate::protocol::{
    DeferredFile, Imports, InputFile, JobResult, JsCodec, Progress, Request, Response, Timings, decode, encode,
};
use crate::shares::{Claims, import_workers};

/// Where the worker's loader is, relative to the page or to a worker (both are beside it, so
/// this works from any sub-path).
pub const WORKER_LOADER: &str = "./worker.js";

/// Bytes read per slice: large enough to amortise the call, small enough to stay responsive.
pub const SLICE_BYTES: u64 = 32 << 20;

/// Reads in flight at most: the browser answers each after about a millisecond, mostly spent
/// elsewhere, so many small files are read about four times faster together than one by one.
const READS_IN_FLIGHT: usize = 64;

/// Bytes of later files asked for ahead at most: enough for many small files, and little
/// enough that large files are left for the import workers to claim.
const AHEAD_BYTES: u64 = 4 << 20;

/// How often progress goes to the page at most (each message renders the page).
const PROGRESS_EVERY_MS: f64 = 50.0;

/// A slice enters WebAssembly memory this much at a time, through one reused buffer: the
/// memory never shrinks, so a 32 MiB copy would stay part of the worker for good (and a
/// small copy is still in the cache when it is parsed).
const FEED_BYTES: usize = seqskew_core::import::READ_CHUNK;

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

/// What a job sends back when its files are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The analysis: [`Response::Done`].
    Analyze,
    /// The imports, unanalysed, to the analysis worker: [`Response::Imported`].
    Import,
}

struct RunningJob {
    id: u32,
    role: Role,
    slice_bytes: u64,
    /// The job's files (an import worker's: the one it was handed), each with its index in
    /// the job.
    files: Vec<(u32, InputFile)>,
    /// The file being read and how far; this worker reads up to the import workers' claims.
    index: usize,
    offset: u64,
    ingest: Option<FileIngest>,
    /// Where each piece of a slice is copied before it is fed.
    buffer: Vec<u8>,
    /// Every worker's, in the order they came in.
    imports: Imports,
    /// Of the files this worker read.
    bytes_done: u64,
    bytes_total: u64,
    claims: Claims,
    ahead: ReadAhead,
    /// Logs and dumps recognised and not yet handed on.
    deferred: Vec<DeferredFile>,
    /// Whether any went to the failure worker (which then awaits the job's end).
    handed_on: bool,
    started_ms: f64,
    /// When progress last went out.
    reported_ms: f64,
}

/// Slices asked for and not yet fed: they arrive in any order and are fed in the files'.
#[derive(Default)]
struct ReadAhead {
    /// The next slice to ask for; `None` once every slice of this worker's files is asked for.
    frontier: Option<SliceRange>,
    in_flight: usize,
    /// Of the slices in flight and arrived.
    bytes: u64,
    arrived: HashMap<SliceRange, Result<js_sys::Uint8Array, String>>,
}

#[derive(Debug)]
pub enum Msg {
    /// A slice of job `job`'s files was read (or could not be).
    Read { job: u32, range: SliceRange, read: Result<js_sys::Uint8Array, String> },
    /// Import worker `helper` said this (of the job its response names).
    Shared { helper: usize, response: Response },
    /// The failure worker answered (for the page `client`).
    FailureAnswer { client: HandlerId, response: Response },
    /// Time to start the import workers of the next job (the last one has ended).
    ImportWorkersAhead,
}

/// A part of one of a job's files: `[start, end)` of file `index`. Empty for a file with
/// nothing (more) to read: empty, or given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SliceRange {
    index: usize,
    start: u64,
    end: u64,
}

pub struct AnalysisWorker {
    /// The job being run and the bridge that asked for it.
    job: Option<(HandlerId, RunningJob)>,
    /// The import workers that share its files: kept from one job to the next, so that a
    /// job of several files does not wait for them to load and compile the module (dropping
    /// one ends it).
    import_workers: Vec<WorkerBridge<AnalysisWorker>>,
    /// The failure worker, once a job had a log or a dump.
    failure: Option<FailureLink>,
    /// A job read to its end whose verdict waits for the failure worker's reading of its logs
    /// (it has no per-rank times of its own), and the bridge that asked for it.
    awaiting_logs: Option<(HandlerId, RunningJob)>,
}

/// Runs a whole job synchronously, returning the payload `Done` would carry (tests, and
/// callers that already are off the page's thread).
pub fn run_to_completion(files: Vec<InputFile>, slice_bytes: u64) -> js_sys::Uint8Array {
    let mut job = RunningJob::new(0, Role::Analyze, indexed(files), slice_bytes);
    while let Some(range) = job.next_range() {
        let read = job.blob_of(range).map_or_else(|| Ok(js_sys::Uint8Array::new_with_length(0)), |b| read_blob(b?));
        job.accept(read);
    }
    encode(&job.finish(None))
}

/// Files with their indices in the job.
fn indexed(files: Vec<InputFile>) -> Vec<(u32, InputFile)> {
    (0u32..).zip(files).collect()
}

/// Cores the browser says this machine has, or one where it cannot start workers of its own.
fn available_cores() -> usize {
    let global = js_sys::global();
    let can_start_workers = js_sys::Reflect::has(&global, &"Worker".into()).unwrap_or(false);
    match global.dyn_into::<web_sys::WorkerGlobalScope>() {
        Ok(scope) if can_start_workers => scope.navigator().hardware_concurrency() as usize,
        _ => 1,
    }
}

/// Import workers started ahead of the next job of several files, once a job is done (more
/// start when a job needs them): each loads and compiles the module, which a job should not
/// wait for, and holds a little memory while idle.
const IMPORT_WORKERS_AHEAD: usize = 3;

/// Starts an import worker whose answers come back to this worker as [`Msg::Shared`].
fn start_import_worker(scope: &WorkerScope<AnalysisWorker>, helper: usize) -> WorkerBridge<AnalysisWorker> {
    let scope = scope.clone();
    AnalysisWorker::spawner()
        .encoding::<JsCodec>()
        .callback(move |response| scope.send_message(Msg::Shared { helper, response }))
        .spawn_with_loader(WORKER_LOADER)
}

/// Hands the logs and dumps job `job` recognised to the failure worker (started on first
/// need); with `end`, tells it the job's files are all there, if it had any. Only the analysis
/// worker does (import workers send theirs back to it).
fn hand_on(
    link: &mut Option<FailureLink>,
    scope: &WorkerScope<AnalysisWorker>,
    client: HandlerId,
    job: &mut RunningJob,
    end: bool,
) {
    if job.role != Role::Analyze || (job.deferred.is_empty() && !(end && job.handed_on)) {
        return;
    }
    if !job.handed_on {
        job.handed_on = true;
        scope.respond(client, Response::FailureStarted { job: job.id });
    }
    let deferred = std::mem::take(&mut job.deferred);
    let sent = match link {
        Some(link) => link.send(job.id, &job.files, &deferred, end),
        None => FailureLink::start({
            let scope = scope.clone();
            move |response| scope.send_message(Msg::FailureAnswer { client, response })
        })
        .and_then(|started| {
            let sent = started.send(job.id, &job.files, &deferred, end);
            *link = Some(started);
            sent
        }),
    };
    if let Err(why) = sent {
        let error = Some(format!("the failure reader could not be given the files: {why}"));
        scope.respond(
            client,
            Response::FailureRead { job: Some(job.id), payload: wasm_bindgen::JsValue::UNDEFINED, error },
        );
    }
}

/// Reads a slice without blocking: the worker feeds the previous slice meanwhile, and hears of
/// this one in a message.
fn read_later(
    scope: &WorkerScope<AnalysisWorker>,
    job: u32,
    blob: Option<Result<web_sys::Blob, String>>,
    range: SliceRange,
) {
    // The read starts here, not when the future is first polled (after the feeding is done).
    let reading = blob.map(|b| b.map(|b| wasm_bindgen_futures::JsFuture::from(b.array_buffer())));
    scope.send_future(async move {
        let read = match reading {
            None => Ok(js_sys::Uint8Array::new_with_length(0)),
            Some(Err(e)) => Err(e),
            Some(Ok(reading)) => reading.await.map(|buffer| js_sys::Uint8Array::new(&buffer)).map_err(describe),
        };
        Msg::Read { job, range, read }
    });
}

impl Worker for AnalysisWorker {
    type Message = Msg;
    type Input = Request;
    type Output = Response;

    fn create(_scope: &WorkerScope<Self>) -> Self {
        AnalysisWorker { job: None, import_workers: Vec::new(), failure: None, awaiting_logs: None }
    }

    fn update(&mut self, scope: &WorkerScope<Self>, msg: Msg) {
        match msg {
            Msg::Read { job, range, read } => self.read(scope, job, range, read),
            Msg::Shared { helper, response } => self.heard(scope, helper, response),
            Msg::ImportWorkersAhead => {
                if self.job.is_none() {
                    self.start_import_workers(scope, available_cores().saturating_sub(1).min(IMPORT_WORKERS_AHEAD));
                }
            }
            Msg::FailureAnswer { client, response } => self.failure_answered(scope, client, response),
        }
    }

    fn received(&mut self, scope: &WorkerScope<Self>, msg: Request, client: HandlerId) {
        REPORT_TO.with(|r| *r.borrow_mut() = Some((scope.clone(), client)));
        match msg {
            Request::Analyze { job, files } => self.analyze(scope, client, job, files),
            Request::Import { job, files } => {
                self.start(scope, client, RunningJob::new(job, Role::Import, files, SLICE_BYTES));
            }
            Request::Example { job, preset } => match example_file(&preset) {
                Ok(file) => {
                    self.start(scope, client, RunningJob::new(job, Role::Analyze, indexed(vec![file]), SLICE_BYTES))
                }
                Err(message) => scope.respond(client, Response::Crashed { message }),
            },
            Request::Cancel { job } => {
                self.awaiting_logs.take_if(|(_, j)| j.id == job);
                if let Some((client, cancelled)) = self.job.take_if(|(_, j)| j.id == job) {
                    self.import_workers.clear();
                    if cancelled.handed_on {
                        let error = Some("cancelled before every file was read".to_owned());
                        let payload = wasm_bindgen::JsValue::UNDEFINED;
                        scope.respond(client, Response::FailureRead { job: Some(job), payload, error });
                    }
                }
                scope.respond(client, Response::Cancelled { job });
            }
        }
    }
}

impl AnalysisWorker {
    /// Starts a job, sharing its files with import workers when that pays.
    fn analyze(&mut self, scope: &WorkerScope<Self>, client: HandlerId, id: u32, files: Vec<InputFile>) {
        let sizes: Vec<u64> = files.iter().map(|f| f.size).collect();
        let helpers = import_workers(&sizes, available_cores()) - 1;
        let mut job = RunningJob::new(id, Role::Analyze, indexed(files), SLICE_BYTES);
        job.claims = Claims::new(sizes, helpers);
        self.start_import_workers(scope, helpers);
        // Each is first asked to import nothing: its empty answer says it is ready for the job.
        for bridge in self.import_workers.iter().take(helpers) {
            bridge.send(Request::Import { job: id, files: Vec::new() });
        }
        self.start(scope, client, job);
    }

    /// Starts import workers until there are `count`.
    fn start_import_workers(&mut self, scope: &WorkerScope<Self>, count: usize) {
        while self.import_workers.len() < count {
            let helper = self.import_workers.len();
            self.import_workers.push(start_import_worker(scope, helper));
        }
    }

    fn start(&mut self, scope: &WorkerScope<Self>, client: HandlerId, job: RunningJob) {
        // A newer job replaces one still waiting for its logs.
        self.awaiting_logs = None;
        self.job = Some((client, job));
        self.pump(scope);
    }

    /// A slice of one of this worker's files was read.
    fn read(
        &mut self,
        scope: &WorkerScope<Self>,
        id: u32,
        range: SliceRange,
        read: Result<js_sys::Uint8Array, String>,
    ) {
        if let Some((_, job)) = self.job.as_mut().filter(|(_, j)| j.id == id) {
            job.arrived(range, read);
            self.pump(scope);
        }
    }

    /// Feeds what has arrived, asks for what may be read next, and sends the job's result
    /// once every file is in (until then, now and then, how far it is).
    fn pump(&mut self, scope: &WorkerScope<Self>) {
        let Some((client, job)) = self.job.as_mut() else { return };
        job.feed_arrived();
        for range in job.reads_to_ask() {
            read_later(scope, job.id, job.blob_of(range), range);
        }
        if !job.is_read() {
            let now = js_sys::Date::now();
            if now - job.reported_ms >= PROGRESS_EVERY_MS {
                job.reported_ms = now;
                scope.respond(*client, Response::Progress(job.progress()));
                hand_on(&mut self.failure, scope, *client, job, false);
            }
            return;
        }
        let Some((client, mut job)) = self.job.take() else { return };
        let id = job.id;
        let response = match job.role {
            Role::Analyze => {
                // Import workers that read files keep their memory at its peak (WebAssembly
                // memory does not shrink): they end, and fresh ones start for the next job
                // (an import worker runs only imports and starts none).
                if job.claims.readers() > 0 {
                    self.import_workers.clear();
                }
                // As a task of its own, once the job's answer is on its way to the page.
                scope.send_future(async {
                    gloo::timers::future::TimeoutFuture::new(0).await;
                    Msg::ImportWorkersAhead
                });
                // A job without per-rank times is judged from step times alone (a training
                // log's, or its step logs' own) where the log readers are, in the failure
                // worker: its step logs go there too, and the answer waits for it.
                let untimed = job.untimed();
                if untimed {
                    job.defer_step_logs();
                }
                hand_on(&mut self.failure, scope, client, &mut job, true);
                if untimed && job.handed_on {
                    self.awaiting_logs = Some((client, job));
                    return;
                }
                Response::Done { job: id, payload: encode(&job.finish(None)) }
            }
            Role::Import => {
                let deferred = std::mem::take(&mut job.deferred);
                Response::Imported { job: id, payload: encode(&job.imports), deferred, wasm_bytes: wasm_bytes() }
            }
        };
        scope.respond(client, response);
    }

    /// An import worker said how far it is, or sent its files back (and is handed the next).
    /// What it says of an older job (one cancelled) is dropped.
    fn heard(&mut self, scope: &WorkerScope<Self>, helper: usize, response: Response) {
        let id = match &response {
            Response::Progress(p) => p.job,
            Response::Imported { job, .. } => *job,
            Response::Crashed { message } => return self.crashed(scope, message.clone()),
            _ => return,
        };
        let Some((_, job)) = self.job.as_mut().filter(|(_, j)| j.id == id) else {
            return;
        };
        match response {
            Response::Progress(p) => job.claims.read(helper, p.bytes_done),
            Response::Imported { payload, deferred, wasm_bytes, .. } => match decode::<Imports>(&payload) {
                Ok(imports) => {
                    job.claims.returned(helper, imports.len(), wasm_bytes);
                    job.imports.extend(imports);
                    job.deferred.extend(deferred);
                    let claimed = job.claims.claim(helper, job.asked_through());
                    let files = claimed.and_then(|range| job.files.get(range)).map(<[_]>::to_vec);
                    if let (Some(files), Some(bridge)) = (files, self.import_workers.get(helper)) {
                        bridge.send(Request::Import { job: id, files });
                    }
                }
                Err(message) => return self.crashed(scope, message),
            },
            // Told apart above.
            _ => {}
        }
        self.pump(scope);
    }

    /// The failure worker answered: a job waiting for its logs' step times is finished with
    /// them, then the answer goes on to the page.
    fn failure_answered(&mut self, scope: &WorkerScope<Self>, client: HandlerId, response: Response) {
        if let Response::FailureRead { job, payload, .. } = &response
            && let Some((waiting_client, waiting)) =
                self.awaiting_logs.take_if(|(_, j)| job.is_none_or(|job| job == j.id))
        {
            let report = payload
                .dyn_ref::<js_sys::Uint8Array>()
                .and_then(|p| decode::<seqskew_core::failure::Reading>(p).ok())
                .and_then(|reading| reading.report);
            let id = waiting.id;
            scope.respond(waiting_client, Response::Done { job: id, payload: encode(&waiting.finish(report)) });
        }
        scope.respond(client, response);
    }

    /// An import worker failed: so did the job (the page starts a new analysis worker).
    fn crashed(&mut self, scope: &WorkerScope<Self>, message: String) {
        self.import_workers.clear();
        if let Some((client, _)) = self.job.take() {
            scope.respond(client, Response::Crashed { message: format!("an import worker failed: {message}") });
        }
    }
}

impl RunningJob {
    fn new(id: u32, role: Role, files: Vec<(u32, InputFile)>, slice_bytes: u64) -> Self {
        let bytes_total = files.iter().map(|(_, f)| f.size).sum();
        let claims = Claims::new(files.iter().map(|(_, f)| f.size).collect(), 0);
        RunningJob {
            id,
            role,
            slice_bytes: slice_bytes.max(1),
            files,
            index: 0,
            offset: 0,
            ingest: None,
            buffer: Vec::new(),
            imports: Vec::new(),
            bytes_done: 0,
            bytes_total,
            claims,
            ahead: ReadAhead::default(),
            deferred: Vec::new(),
            handed_on: false,
            started_ms: js_sys::Date::now(),
            reported_ms: f64::NEG_INFINITY,
        }
        .with_frontier()
    }

    /// Asks for the first file's first slice next.
    fn with_frontier(mut self) -> Self {
        self.ahead.frontier = self.next_range();
        self
    }

    /// The whole job's progress: this worker's files and what the import workers reported.
    fn progress(&self) -> Progress {
        Progress {
            job: self.id,
            files_done: self.imports.len() as u32,
            files_total: self.files.len() as u32,
            bytes_done: self.bytes_done + self.claims.bytes_read(),
            bytes_total: self.bytes_total,
            elapsed_ms: self.elapsed_ms(),
        }
    }

    fn elapsed_ms(&self) -> f64 {
        js_sys::Date::now() - self.started_ms
    }

    /// Whether this worker's files are read and every import worker's file is back.
    fn is_read(&self) -> bool {
        self.next_range().is_none() && self.claims.all_returned()
    }

    /// The slice to feed next; `None` when every file is read. Empty when nothing more of the
    /// file is to be read (it is empty, given up, or left to the failure worker).
    fn next_range(&self) -> Option<SliceRange> {
        let (_, file) = self.files.get(self.index).filter(|_| self.index < self.claims.end())?;
        let done = self.ingest.as_ref().is_some_and(|ingest| !ingest.wants_more());
        let end = if done { self.offset } else { (self.offset + self.slice_bytes).min(file.size) };
        Some(SliceRange { index: self.index, start: self.offset, end })
    }

    /// A slice asked for has been read (or could not be): kept until it is its turn, unless
    /// its file is already done with.
    fn arrived(&mut self, range: SliceRange, read: Result<js_sys::Uint8Array, String>) {
        self.ahead.in_flight = self.ahead.in_flight.saturating_sub(1);
        if range.index >= self.index {
            self.ahead.arrived.insert(range, read);
        } else {
            self.ahead.bytes = self.ahead.bytes.saturating_sub(range.end - range.start);
        }
    }

    /// Feeds the slices that have arrived, in the files' order, up to the first still to come.
    fn feed_arrived(&mut self) {
        while let Some(next) = self.next_range() {
            let read = if next.start == next.end {
                Ok(js_sys::Uint8Array::new_with_length(0))
            } else if let Some(read) = self.ahead.arrived.remove(&next) {
                self.ahead.bytes = self.ahead.bytes.saturating_sub(next.end - next.start);
                read
            } else {
                break;
            };
            self.accept(read);
        }
        // Slices read ahead of files finished early (given up, or left to the failure worker).
        let (index, ahead) = (self.index, &mut self.ahead);
        ahead.arrived.retain(|range, _| {
            let keep = range.index >= index;
            if !keep {
                ahead.bytes = ahead.bytes.saturating_sub(range.end - range.start);
            }
            keep
        });
    }

    /// The slices to ask for now, at least one: up to [`READS_IN_FLIGHT`] at once, of the file
    /// being read two slices' worth (the one fed and the next), and of later files
    /// [`AHEAD_BYTES`]. Empty slices need no read.
    fn reads_to_ask(&mut self) -> Vec<SliceRange> {
        // Past a file finished early, the job goes on where it is.
        if self.ahead.frontier.is_some_and(|f| f.index < self.index) {
            self.ahead.frontier = self.next_range();
        }
        let mut asked = Vec::new();
        while let Some(range) = self.ahead.frontier {
            let bytes = range.end - range.start;
            let budget = if range.index == self.index { 2 * self.slice_bytes } else { AHEAD_BYTES };
            let room = self.ahead.in_flight < READS_IN_FLIGHT && self.ahead.bytes + bytes <= budget;
            if bytes > 0 && !room && self.ahead.bytes > 0 {
                break;
            }
            if bytes > 0 {
                self.ahead.in_flight += 1;
                self.ahead.bytes += bytes;
                asked.push(range);
            }
            self.ahead.frontier = self.range_after(range);
        }
        asked
    }

    /// The last file this worker has asked to read: import workers claim only files after it.
    fn asked_through(&self) -> usize {
        self.ahead.frontier.map_or(usize::MAX, |f| f.index.max(self.index))
    }

    /// The slice after `range` if `range` is fed whole (what to read ahead). After an empty
    /// range (the file is given up) comes the next file.
    fn range_after(&self, range: SliceRange) -> Option<SliceRange> {
        let (_, file) = self.files.get(range.index)?;
        let more = range.start < range.end && range.end < file.size;
        let (index, start) = if more { (range.index, range.end) } else { (range.index + 1, 0) };
        let size = self.files.get(index).filter(|_| index < self.claims.end())?.1.size;
        Some(SliceRange { index, start, end: (start + self.slice_bytes).min(size) })
    }

    /// The blob holding `range`; `None` when there is nothing to read in it. A range that is
    /// the whole file reads the file itself: Chromium's `Blob.slice` of a picked file costs
    /// more than reading a small one (2.6 s of a worker's time for 4096 Flight Recorder dumps).
    fn blob_of(&self, range: SliceRange) -> Option<Result<web_sys::Blob, String>> {
        let (_, file) = self.files.get(range.index).filter(|_| range.start < range.end)?;
        if range.start == 0 && range.end == file.size {
            return Some(Ok(file.blob.clone()));
        }
        Some(file.blob.slice_with_f64_and_f64(range.start as f64, range.end as f64).map_err(describe))
    }

    /// Feeds the slice [`Self::next_range`] named (finishing its file at its end, or when no
    /// more of it is wanted or it could not be read).
    fn accept(&mut self, read: Result<js_sys::Uint8Array, String>) {
        let Some(&(index, ref file)) = self.files.get(self.index) else {
            return;
        };
        let ingest =
            self.ingest.get_or_insert_with(|| FileIngest::new(&file.name).with_memory_limit(FILE_MEMORY_LIMIT));
        // A file read whole in one slice: its bytes, should the failure worker want them.
        let mut whole = None;
        match read {
            Ok(bytes) if bytes.length() > 0 => {
                feed_in_pieces(ingest, &bytes, &mut self.buffer);
                let length = u64::from(bytes.length());
                self.bytes_done += length;
                if self.offset == 0 && length == file.size {
                    whole = Some(bytes);
                }
                self.offset += length;
                if self.offset < file.size && ingest.wants_more() {
                    return;
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
                self.imports.push((index, import));
                return self.next_file();
            }
        }
        if let Some(ingest) = self.ingest.take() {
            let import = ingest.finish_of_size(file.size);
            if import.format.is_some_and(Format::is_failure_input) {
                let bytes = whole.map_or(wasm_bindgen::JsValue::UNDEFINED, Into::into);
                self.deferred.push(DeferredFile { index, bytes });
            }
            self.imports.push((index, import));
        }
        self.next_file();
    }

    /// Moves to the next file; a file stopped early (rejected, unreadable, left to the
    /// failure worker) counts as read.
    fn next_file(&mut self) {
        let size = self.files.get(self.index).map_or(0, |(_, f)| f.size);
        self.bytes_done = self.bytes_done.saturating_sub(self.offset) + size;
        self.index += 1;
        self.offset = 0;
    }

    /// Whether the job has training steps (step logs read here, or logs handed on, which may
    /// hold iteration lines) but no per-rank times: its verdict comes from step times alone.
    fn untimed(&self) -> bool {
        let mut workers = self.imports.iter().flat_map(|(_, i)| &i.workers);
        (self.handed_on || !self.deferred.is_empty() || workers.clone().next().is_some())
            && !workers.any(seqskew_core::model::Worker::has_breakdown)
    }

    /// Hands the files that made workers (step logs of lengths) on to the failure worker with
    /// the logs, read there again from their blobs.
    fn defer_step_logs(&mut self) {
        let with_steps = self.imports.iter().filter(|(_, i)| !i.workers.is_empty());
        let files: Vec<DeferredFile> =
            with_steps.map(|&(index, _)| DeferredFile { index, bytes: wasm_bindgen::JsValue::UNDEFINED }).collect();
        self.deferred.extend(files);
        self.deferred.sort_by_key(|d| d.index);
    }

    /// Assembles and analyses every worker's files, in the job's order. `from_step_times` is
    /// the failure worker's report of a job without per-rank times: its verdict replaces the
    /// one made here, which cannot read step times from logs.
    fn finish(self, from_step_times: Option<seqskew_core::report::Report>) -> JobResult {
        let read_ms = self.elapsed_ms();
        let (import_workers, read_wasm_bytes) = (1 + self.claims.readers(), wasm_bytes() + self.claims.wasm_bytes());
        let mut imports = self.imports;
        imports.sort_by_key(|(index, _)| *index);
        let imports: Vec<FileImport> = imports.into_iter().map(|(_, import)| import).collect();
        let read_done = js_sys::Date::now();
        let files: Vec<_> = imports.iter().map(FileImport::summary).collect();
        let assembled = assemble_owned(imports);
        let job = &assembled.job;
        let mut analysis = (!job.workers.is_empty()).then(|| analyze(&assembled, &files));
        if let Some(theirs) = from_step_times {
            let inputs = analysis.as_ref().map(|a| a.report.inputs.clone()).unwrap_or_else(|| theirs.inputs.clone());
            let report = seqskew_core::report::Report { inputs, ..theirs };
            match analysis.as_mut() {
                Some(a) => a.report = report,
                None => analysis = Some(seqskew_core::analysis::Analysis { report, views: Default::default() }),
            }
        }
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
        let timings =
            Timings { read_ms, analysis_ms: js_sys::Date::now() - read_done, import_workers, read_wasm_bytes };
        JobResult {
            job_diagnostics: assembled.diagnostics,
            workers,
            steps,
            files,
            analysis: analysis.map(Rc::new),
            timeline: timeline.map(Rc::new),
            pipelines,
            timings,
        }
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
    buffer.resize(FEED_BYTES, 0);
    let mut slice = JsBytes::new(bytes);
    while let Ok(n @ 1..) = slice.read(buffer) {
        ingest.feed(buffer.get(..n).unwrap_or_default());
    }
}

/// The size of this worker's WebAssembly memory.
fn wasm_bytes() -> u64 {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    memory.buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length().into()
}

/// What a failed read says.
fn describe(e: wasm_bindgen::JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map_or_else(|| format!("{e:?}"), |e| String::from(e.message()))
}

/// Reads a blob, blocking (only workers may).
fn read_blob(blob: web_sys::Blob) -> Result<js_sys::Uint8Array, String> {
    let reader = web_sys::FileReaderSync::new().map_err(describe)?;
    let buffer = reader.read_as_array_buffer(&blob).map_err(describe)?;
    Ok(js_sys::Uint8Array::new(&buffer))
}

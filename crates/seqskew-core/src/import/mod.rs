//! Importers: bytes in, [`Worker`](crate::model::Worker)s and diagnostics out.
//!
//! One [`FileIngest`] per file takes the file's bytes in chunks of any size (the browser feeds
//! 32 MiB `Blob` slices, the CLI feeds file reads), recognises gzip by its magic bytes and the
//! format from the first KiB of content (never from the file name), and streams the content into
//! that format's parser. Memory is bounded by the model being built, not by the input.
//! [`assemble()`] then merges the files' workers into one [`Job`](crate::model::Job).

mod assemble;
mod blocked;
mod chrome;
mod events;
#[cfg(feature = "failure")]
mod failure_input;
pub mod file_import;
mod gzip;
mod json;
mod kineto;
mod names;
mod numbers;
mod parser;
mod sniff;
mod steplog;
mod swar;
#[cfg(test)]
mod test_rng;
mod timeline;
mod trace_event;

use crate::diag::{DiagnosticSink, Severity};
#[cfg(not(feature = "failure"))]
use crate::model::Worker;
#[cfg(feature = "failure")]
use failure_input::Document;

pub use assemble::{Assembled, assemble, assemble_owned, measure_transfers};
pub use file_import::{FileImport, FileSummary, SpanCounts};
use parser::ContentParser;
pub use parser::ImportStats;
pub use sniff::{Format, SNIFF_BYTES, sniff};
pub use steplog::STEPLOG_VERSION;
pub use timeline::{Piece, partition};

fn parser_for(format: Format, file: &str) -> Box<dyn ContentParser> {
    match format {
        Format::Kineto => Box::new(events::TraceDocument::new(kineto::KinetoBuilder::new(file))),
        Format::ChromeTrace => Box::new(events::TraceDocument::new(chrome::ChromeBuilder::new(file))),
        Format::StepLogJsonl => Box::new(steplog::JsonlParser::new(file)),
        Format::StepLogCsv => Box::new(steplog::CsvParser::new(file)),
        #[cfg(feature = "failure")]
        Format::Log => Box::new(failure_input::LogParser::new(file)),
        #[cfg(feature = "failure")]
        Format::FlightRecorder => Box::new(failure_input::DocumentParser::new(file, Document::FlightPickle)),
        #[cfg(feature = "failure")]
        Format::FlightRecorderJson => Box::new(failure_input::DocumentParser::new(file, Document::FlightJson)),
        #[cfg(feature = "failure")]
        Format::ElasticErrorFile => Box::new(failure_input::DocumentParser::new(file, Document::ElasticErrorFile)),
        #[cfg(not(feature = "failure"))]
        Format::Log | Format::FlightRecorder | Format::FlightRecorderJson | Format::ElasticErrorFile => {
            Box::new(Deferred)
        }
    }
}

/// A log or dump in a build without the `failure` readers: recognised, not read, left for a
/// reader that has them (the page hands such files to its failure worker).
#[cfg(not(feature = "failure"))]
struct Deferred;

#[cfg(not(feature = "failure"))]
impl ContentParser for Deferred {
    fn feed(&mut self, _: &[u8], _: &mut DiagnosticSink) {}
    fn finish(self: Box<Self>, _: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats) {
        (Vec::new(), ImportStats::default())
    }
    fn held_bytes(&self) -> usize {
        0
    }
}

/// How much a native reader feeds [`FileIngest`] at a time (it takes any size). Small enough
/// that the bytes a read copies are still in the core's cache when they are parsed (8 MiB
/// pieces read slower in interleaved runs). (The browser feeds 32 MiB `Blob` slices, whose
/// cost is per slice.)
pub const READ_CHUNK: usize = 256 << 10;

/// Content bytes: sniffed first, then parsed.
enum Content {
    Sniffing(Vec<u8>),
    Parsing(Format, Box<dyn ContentParser>),
    /// Given up: unrecognised (no format), or recognised and then over the memory limit (the
    /// file is still listed as what it is).
    Rejected(Option<Format>),
}

/// Imports one file from chunks of bytes.
pub struct FileIngest {
    diags: DiagnosticSink,
    /// The first bytes, until we know whether the file is gzipped.
    head: Vec<u8>,
    gzip: Option<gzip::Gunzip>,
    decided_compression: bool,
    content: Content,
    bytes_in: u64,
    bytes: u64,
    /// Bytes of memory the parser may hold before the file is given up (the browser's
    /// WebAssembly memory is 4 GiB at most, shared by every file and the analysis).
    memory_limit: Option<usize>,
}

impl std::fmt::Debug for FileIngest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileIngest").field("file", &self.diags.file()).field("bytes_in", &self.bytes_in).finish()
    }
}

/// Why a file of this format gave no steps, and how to record them; `None` for the formats
/// that have none (logs, dumps).
fn no_steps_message(format: Format) -> Option<&'static str> {
    Some(match format {
        Format::Log | Format::FlightRecorder | Format::FlightRecorderJson | Format::ElasticErrorFile => return None,
        Format::Kineto => {
            "no training steps found: no ProfilerStep#N spans (profile with a schedule, \
             `torch.profiler.schedule(...)`, and call `prof.step()` once per training step)"
        }
        Format::ChromeTrace => {
            "no training steps found: no step spans (\"step 12\", \"iteration 12\", \"ProfilerStep#12\") \
             and no events with a `step` or `iteration` argument"
        }
        Format::StepLogJsonl | Format::StepLogCsv => {
            "no training steps found: no row with a step, a rank and a time or lengths"
        }
    })
}

impl FileIngest {
    pub fn new(file: &str) -> Self {
        FileIngest {
            diags: DiagnosticSink::new(file),
            head: Vec::new(),
            gzip: None,
            decided_compression: false,
            content: Content::Sniffing(Vec::new()),
            bytes_in: 0,
            bytes: 0,
            memory_limit: None,
        }
    }

    /// Feeds the next chunk of the file's bytes.
    /// Gives the file up, with an error naming the limit, once its parser holds more than
    /// `bytes` of memory: the other files and the page survive it.
    pub fn with_memory_limit(mut self, bytes: usize) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        self.bytes_in += chunk.len() as u64;
        if !self.decided_compression {
            if self.head.is_empty() && chunk.len() >= gzip::MAGIC.len() {
                self.decide_compression(chunk);
                self.feed_raw(chunk);
                return;
            }
            self.head.extend_from_slice(chunk);
            if self.head.len() < gzip::MAGIC.len() {
                return;
            }
            let head = std::mem::take(&mut self.head);
            self.decide_compression(&head);
            self.feed_raw(&head);
            return;
        }
        self.feed_raw(chunk);
    }

    /// True once the file is known to be unusable, so the caller can stop reading it.
    pub fn is_rejected(&self) -> bool {
        matches!(self.content, Content::Rejected(_))
    }

    /// False once no more of the file is needed: it was given up, or it is a failed job's
    /// artefact in a build without the `failure` readers, which leaves it to a reader that has
    /// them (the browser's failure worker: reading it here would read it twice).
    pub fn wants_more(&self) -> bool {
        match &self.content {
            Content::Sniffing(_) => true,
            Content::Parsing(format, _) => cfg!(feature = "failure") || !format.is_failure_input(),
            Content::Rejected(_) => false,
        }
    }

    fn decide_compression(&mut self, head: &[u8]) {
        self.decided_compression = true;
        if head.starts_with(&gzip::MAGIC) {
            self.gzip = Some(gzip::Gunzip::new());
        }
    }

    fn feed_raw(&mut self, raw: &[u8]) {
        if self.is_rejected() {
            return;
        }
        match self.gzip.take() {
            Some(mut gz) => {
                let result = gz.feed(raw, &mut |content| self.feed_content(content));
                if let Err(problem) = result {
                    self.diags.push(Severity::Error, None, problem);
                }
                self.gzip = Some(gz);
            }
            None => self.feed_content(raw),
        }
    }

    fn feed_content(&mut self, content: &[u8]) {
        if content.is_empty() || self.is_rejected() {
            return;
        }
        self.bytes += content.len() as u64;
        match &mut self.content {
            Content::Parsing(format, parser) => {
                parser.feed(content, &mut self.diags);
                if let Some(limit) = self.memory_limit
                    && parser.held_bytes() > limit
                {
                    let format = *format;
                    self.give_up_over_limit(format, limit);
                }
            }
            // A first piece big enough to sniff is parsed where it lies (not copied).
            Content::Sniffing(buf) if buf.is_empty() && content.len() >= SNIFF_BYTES => self.start_parsing(content),
            Content::Sniffing(buf) => {
                buf.extend_from_slice(content);
                if buf.len() >= SNIFF_BYTES {
                    let buf = std::mem::take(buf);
                    self.start_parsing(&buf);
                }
            }
            Content::Rejected(_) => {}
        }
    }

    fn give_up_over_limit(&mut self, format: Format, limit: usize) {
        let gib = |b: f64| b / f64::from(1u32 << 30);
        let (what, advice) = if matches!(format, Format::StepLogJsonl | Format::StepLogCsv) {
            (
                "its rows",
                "analyse it with the command line (`seqskew analyze FILE`), or drop a part of it here \
                 (fewer steps, or the ranks of one data-parallel group)",
            )
        } else {
            (
                "its events",
                "analyse it with the command line (`seqskew analyze FILE`), or turn it into a small step log \
                 there (`seqskew summarize FILE -o steps.jsonl`) and drop that",
            )
        };
        self.diags.push(
            Severity::Error,
            None,
            format!(
                "too large to analyse here: after {:.2} GiB of content {what} need more than the {:.1} GiB \
                 of memory one file may take; {advice}",
                gib(self.bytes as f64),
                gib(limit as f64)
            ),
        );
        // Dropping the parser frees what it held; the file stays listed as its format.
        self.content = Content::Rejected(Some(format));
    }

    fn start_parsing(&mut self, sniffed: &[u8]) {
        // Only the first KiB decides, however much the first chunks happened to bring.
        match sniff(sniffed.get(..SNIFF_BYTES).unwrap_or(sniffed)) {
            Ok(format) => {
                let mut parser = parser_for(format, self.diags.file());
                parser.feed(sniffed, &mut self.diags);
                self.content = Content::Parsing(format, parser);
            }
            Err(why) => {
                self.diags.push(Severity::Error, None, why);
                self.content = Content::Rejected(None);
                // What the sniffer examined, however the chunks fell.
                self.bytes = self.bytes.min(SNIFF_BYTES as u64);
            }
        }
    }

    /// [`finish`](Self::finish) for a reader that knows the file's `size`: a file given up
    /// early is not read to its end, and still counts all its bytes, whatever the reads were.
    pub fn finish_of_size(self, size: u64) -> FileImport {
        let mut import = self.finish();
        import.stats.bytes_in = import.stats.bytes_in.max(size);
        import
    }

    /// Ends the file and returns what it held.
    pub fn finish(mut self) -> FileImport {
        if !self.decided_compression {
            let head = std::mem::take(&mut self.head);
            self.decide_compression(&head);
            self.feed_raw(&head);
        }
        if let Some(mut gz) = self.gzip.take() {
            // A file given up or left to another reader was not read to its end: its stream is
            // not truncated.
            let read_to_end = self.wants_more();
            if let (Err(problem), true) = (gz.finish(&mut |content| self.feed_content(content)), read_to_end) {
                self.diags.push(Severity::Error, None, problem);
            }
            self.gzip = Some(gz);
        }
        if let Content::Sniffing(buf) = &mut self.content {
            let buf = std::mem::take(buf);
            if buf.iter().all(u8::is_ascii_whitespace) {
                // A gzip stream that failed before any content has already said why.
                if !self.diags.has_errors() {
                    let what =
                        if self.bytes_in == 0 { "the file is empty (0 bytes)" } else { "the file has no content" };
                    self.diags.push(Severity::Error, None, what);
                }
                self.content = Content::Rejected(None);
            } else {
                self.start_parsing(&buf);
            }
        }
        let compressed = self.gzip.is_some();
        let (format, workers, mut stats, failure) = match std::mem::replace(&mut self.content, Content::Rejected(None))
        {
            Content::Parsing(format, mut parser) => {
                let failure = parser.take_failure(&mut self.diags);
                let (workers, stats) = parser.finish(&mut self.diags);
                (Some(format), workers, stats, failure)
            }
            Content::Rejected(format) => (format, Vec::new(), ImportStats::default(), None),
            Content::Sniffing(_) => (None, Vec::new(), ImportStats::default(), None),
        };
        stats.bytes_in = self.bytes_in;
        stats.bytes = self.bytes;
        if let Some(message) = format.and_then(no_steps_message)
            && !workers.iter().any(|w| !w.steps.is_empty())
            && !self.diags.has_errors()
        {
            self.diags.push(Severity::Error, None, message);
        }
        FileImport {
            file: self.diags.file().to_owned(),
            format,
            compressed,
            workers,
            stats,
            diagnostics: self.diags.finish(),
            failure,
        }
    }
}

/// Inside dropped or named folders only files named like inputs are taken: traces and step
/// logs (`.json`, `.jsonl`, `.csv`), logs (`.log`, `.txt`, `.out`, `.err`), dumps (`.pkl`,
/// `.pickle`, and names ending in a rank such as `nccl_trace_rank_3`). A file given directly is
/// always read, and its format is decided by its content.
pub fn is_input_file_name(path: &str) -> bool {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path).to_ascii_lowercase();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    const EXTENSIONS: [&str; 9] = [".json", ".jsonl", ".csv", ".log", ".txt", ".out", ".err", ".pkl", ".pickle"];
    EXTENSIONS.iter().any(|ext| name.ends_with(ext))
        || (!name.contains('.') && crate::failure::evidence::file_rank(name).is_some())
}

/// Imports a whole file held in memory (tests, small inputs).
pub fn import_bytes(file: &str, bytes: &[u8]) -> FileImport {
    let mut ingest = FileIngest::new(file);
    ingest.feed(bytes);
    ingest.finish()
}

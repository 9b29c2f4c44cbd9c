//! The failure inputs as content parsers: logs, elastic error files, Flight Recorder dumps.
//! They make no workers; what they read is the file's [`FileEvidence`].

use super::parser::{ContentParser, ImportStats};
use crate::diag::{DiagnosticSink, Location, Severity};
use crate::failure::evidence::{Event, EventKind, FileEvidence, TrainingLog};
use crate::failure::line;
use crate::failure::{clock, dump, log, pickle};
use crate::model::Worker;

/// Any text: a console, a per-rank log, a terminal paste.
pub(super) struct LogParser {
    /// Taken when the evidence is.
    scanner: Option<log::LogScanner>,
    lines: u64,
}

impl LogParser {
    pub(super) fn new(file: &str) -> Self {
        LogParser { scanner: Some(log::LogScanner::new(file)), lines: 0 }
    }
}

/// What a log said, as a file's diagnostic.
fn describe(evidence: &FileEvidence, diags: &mut DiagnosticSink) {
    let failure = if evidence.events.is_empty() {
        "no failure found (no error, timeout or failed rank in it)".to_owned()
    } else {
        let ranks: Vec<u64> = evidence
            .events
            .iter()
            .filter_map(|e| e.rank.map(u64::from))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let ranks =
            if ranks.is_empty() { String::new() } else { format!(" (ranks {})", crate::text::compact_ranges(&ranks)) };
        format!("{} lines about a failure{ranks}", evidence.events.len())
    };
    diags.push(
        Severity::Info,
        None,
        format!("log of {} lines: {failure}{}", evidence.lines, describe_progress(evidence)),
    );
}

/// The training progress a log reports, for its diagnostic: `; 10 Megatron-LM iteration lines
/// (steps 4–40), 10 straggler lines`, or nothing.
fn describe_progress(evidence: &FileEvidence) -> String {
    let mut by_form: std::collections::BTreeMap<TrainingLog, (usize, u64, u64)> = Default::default();
    for i in &evidence.iterations {
        let first = i.covers_from.unwrap_or(i.step);
        let (count, low, high) = by_form.entry(i.form).or_insert((0, first, i.step));
        *count += 1;
        *low = (*low).min(first);
        *high = (*high).max(i.step);
    }
    let mut parts: Vec<String> = by_form
        .into_iter()
        .map(|(form, (count, low, high))| format!("{count} {} lines (steps {low}–{high})", form.lines_name()))
        .collect();
    if !evidence.rank_extremes.is_empty() {
        parts.push(format!("{} straggler lines", evidence.rank_extremes.len()));
    }
    if evidence.iterations_dropped > 0 {
        parts.push(format!("{} more progress lines not kept", evidence.iterations_dropped));
    }
    if evidence.unreadable_lines > 0 {
        parts.push(format!("{} progress lines skipped as unreadable", evidence.unreadable_lines));
    }
    if parts.is_empty() { String::new() } else { format!("; {}", parts.join(", ")) }
}

/// Progress lines whose values do not parse, each kept one by its line number, then how many
/// more.
fn describe_unreadable(evidence: &FileEvidence, diags: &mut DiagnosticSink) {
    for skipped in &evidence.unreadable {
        diags.push(
            Severity::Warning,
            Some(Location::Line(skipped.line)),
            format!("a training-progress line skipped: {}", skipped.why),
        );
    }
    let more = evidence.unreadable_lines.saturating_sub(evidence.unreadable.len() as u64);
    if more > 0 {
        diags.push(Severity::Warning, None, format!("{more} more training-progress lines skipped as unreadable"));
    }
}

impl ContentParser for LogParser {
    fn feed(&mut self, chunk: &[u8], _: &mut DiagnosticSink) {
        if let Some(scanner) = &mut self.scanner {
            scanner.feed(chunk);
        }
    }

    fn take_failure(&mut self, diags: &mut DiagnosticSink) -> Option<FileEvidence> {
        let evidence = self.scanner.take()?.finish();
        self.lines = evidence.lines;
        describe(&evidence, diags);
        describe_unreadable(&evidence, diags);
        Some(evidence)
    }

    fn finish(self: Box<Self>, _: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats) {
        (Vec::new(), ImportStats { records: self.lines, ..ImportStats::default() })
    }

    fn held_bytes(&self) -> usize {
        self.scanner.as_ref().map_or(0, log::LogScanner::held_bytes)
    }
}

/// A whole-document input (a dump, an error file): gathered, then read at the end.
pub(super) struct DocumentParser {
    file: String,
    kind: Document,
    bytes: Vec<u8>,
    over_limit: bool,
}

#[derive(Clone, Copy)]
pub(super) enum Document {
    FlightPickle,
    FlightJson,
    ElasticErrorFile,
}

/// Flight Recorder dumps hold at most a few thousand entries (a few MB); past this a file is
/// not one worth holding in memory whole.
const MAX_DOCUMENT_BYTES: usize = 256 << 20;

impl DocumentParser {
    pub(super) fn new(file: &str, kind: Document) -> Self {
        DocumentParser { file: file.to_owned(), kind, bytes: Vec::new(), over_limit: false }
    }

    fn read(&self) -> Result<FileEvidence, String> {
        let file_rank = crate::failure::evidence::file_rank(&self.file);
        let evidence = |events, flight| FileEvidence {
            file: self.file.clone(),
            file_rank,
            events,
            flight,
            ..FileEvidence::default()
        };
        match self.kind {
            Document::FlightPickle => {
                let tree = pickle::decode(&self.bytes).map_err(|e| format!("not a readable pickle: {e}"))?;
                Ok(evidence(Vec::new(), Some(dump::read(tree.root())?)))
            }
            Document::FlightJson => {
                let json: serde_json::Value =
                    serde_json::from_slice(&self.bytes).map_err(|e| format!("not valid JSON: {e}"))?;
                Ok(evidence(Vec::new(), Some(dump::read(&json)?)))
            }
            Document::ElasticErrorFile => {
                let json: serde_json::Value =
                    serde_json::from_slice(&self.bytes).map_err(|e| format!("not valid JSON: {e}"))?;
                Ok(evidence(error_file_events(&json)?, None))
            }
        }
    }
}

/// torchrun's error file (`TORCHELASTIC_ERROR_FILE`, written by `@record`): the exception, its
/// traceback and when it was raised.
fn error_file_events(json: &serde_json::Value) -> Result<Vec<Event>, String> {
    let outer = json.get("message").ok_or("an error file without a \"message\"")?;
    let (message, extra) = match outer {
        serde_json::Value::String(s) => (s.as_str(), None),
        other => (other.get("message").and_then(|m| m.as_str()).unwrap_or_default(), other.get("extraInfo")),
    };
    let callstack = extra.and_then(|x| x.get("py_callstack")).and_then(|c| c.as_str()).unwrap_or_default();
    let seconds = extra.and_then(|x| x.get("timestamp")).and_then(|t| match t {
        serde_json::Value::String(s) => s.parse::<i64>().ok(),
        other => other.as_i64(),
    });
    let at = callstack.lines().rev().find_map(line::frame);
    let first = message.lines().find(|l| !l.trim().is_empty()).unwrap_or(message);
    let kind = match line::exception(first) {
        Some((name, text)) => line::classify_exception(name, text),
        None => line::classify(first).map(|said| said.kind),
    }
    .unwrap_or(EventKind::Exception { name: "error".into() });
    Ok(vec![Event {
        line: 1,
        rank: None,
        pg_rank: None,
        pg: None,
        time_ns: seconds.map(|s| clock::from_unix_ns(s.saturating_mul(1_000_000_000))),
        kind,
        text: line::clean(first.as_bytes()),
        at,
    }])
}

impl ContentParser for DocumentParser {
    fn feed(&mut self, chunk: &[u8], _: &mut DiagnosticSink) {
        if self.bytes.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            self.over_limit = true;
            self.bytes = Vec::new();
        }
        if !self.over_limit {
            self.bytes.extend_from_slice(chunk);
        }
    }

    fn take_failure(&mut self, diags: &mut DiagnosticSink) -> Option<FileEvidence> {
        if self.over_limit {
            diags.push(
                Severity::Error,
                None,
                format!("over {} MiB: too large for a dump or an error file", MAX_DOCUMENT_BYTES >> 20),
            );
            return None;
        }
        match self.read() {
            Ok(evidence) => {
                if let Some(dump) = &evidence.flight {
                    let rank = evidence.file_rank.map_or_else(|| "rank unknown".to_owned(), |r| format!("rank {r}"));
                    diags.push(
                        Severity::Info,
                        None,
                        format!(
                            "Flight Recorder dump v{} of {rank}: {} entries, {} process groups",
                            dump.version,
                            dump.total_entries,
                            dump.groups.len()
                        ),
                    );
                }
                Some(evidence)
            }
            Err(why) => {
                diags.push(Severity::Error, None, why);
                None
            }
        }
    }

    fn finish(self: Box<Self>, _: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats) {
        (Vec::new(), ImportStats { records: 1, ..ImportStats::default() })
    }

    fn held_bytes(&self) -> usize {
        self.bytes.capacity()
    }
}

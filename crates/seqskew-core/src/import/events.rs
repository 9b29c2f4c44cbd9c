//! Streaming reader of Chrome Trace Event Format documents: an object with `traceEvents`
//! (keys in any order) or a bare array of events, in chunks of any size.
//!
//! Each event is scanned on its own into a [`RawEvent`] whose strings borrow from the buffer,
//! then handed to a [`TraceBuilder`]; only an event that straddles two chunks is kept across
//! calls. Values the builder does not need (unknown top-level keys, fields and `args` of no
//! interest) are skipped without building anything.

use serde_json::value::RawValue;

use super::json::{self, ScanError};
use super::parser::{ContentParser, ImportStats};
use super::sniff::BOM;
pub use super::trace_event::{EventPlace, Interest, RawArgs, RawEvent, Read};
use crate::diag::{DiagnosticSink, Location, Severity};
use crate::model::Worker;

/// What a format makes of the events of a Chrome-trace document (and, as its [`Interest`],
/// what of them it reads).
pub trait TraceBuilder: Interest {
    /// A top-level key other than `traceEvents`, with its whole value.
    fn top_level(&mut self, key: &str, value: &RawValue, diags: &mut DiagnosticSink);
    /// Top-level keys whose values the builder wants (others are skipped unread).
    fn wants_top_level(&self, key: &str) -> bool;
    /// One event. Returns true when the event contributed to the model.
    fn event(&mut self, event: &RawEvent<'_>, place: EventPlace, diags: &mut DiagnosticSink) -> bool;
    /// End of the document: build the workers.
    fn finish(self, diags: &mut DiagnosticSink) -> Vec<Worker>;
    /// About how many bytes of memory the builder holds.
    fn held_bytes(&self) -> usize;
}

/// Where the reader is in the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the first byte that is not whitespace.
    Start,
    /// Inside the top-level object, expecting a key (or its end).
    TopKey,
    /// Inside the top-level object after `key:`; the key's value is next.
    TopValue { wanted: bool },
    /// Inside the top-level object, after `"traceEvents":`, before `[`.
    BeforeEvents,
    /// Inside the events array. `bare` when the array is the whole document.
    Events { bare: bool },
    /// Skipping a value the reader has no use for; then back to `after`.
    Skipping { after: Resume },
    /// The document is complete; the rest is ignored (and reported once if it is not blank).
    Done,
    /// The document is unreadable from here on (already reported); the rest is ignored.
    GaveUp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    TopKey,
    Events { bare: bool },
}

/// A value that could not be parsed is skipped up to this many times in a row before the
/// reader gives up on the file (it has lost its way in the syntax).
const MAX_CONSECUTIVE_BAD: u32 = 1000;

/// How much of a chunk is copied at first to complete a value the previous chunk cut (doubled
/// until the value is complete): enough for nearly every event, and little to copy (64 KiB
/// copied a quarter of each 256 KiB chunk again).
const STRADDLE_PIECE: usize = 4 << 10;

/// A top-level value the builder wants is read whole only up to this size.
const MAX_TOP_LEVEL_VALUE: usize = 16 << 20;

pub struct TraceDocument<B: TraceBuilder> {
    builder: B,
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    base: u64,
    state: State,
    top_key: String,
    skip: Skipper,
    stats: ImportStats,
    consecutive_bad: u32,
    saw_events_array: bool,
    /// Stream offset of the first byte that is not whitespace after a complete document.
    data_after_end: Option<u64>,
}

impl<B: TraceBuilder> TraceDocument<B> {
    pub fn new(builder: B) -> Self {
        TraceDocument {
            builder,
            buf: Vec::new(),
            base: 0,
            state: State::Start,
            top_key: String::new(),
            skip: Skipper::default(),
            stats: ImportStats::default(),
            consecutive_bad: 0,
            saw_events_array: false,
            data_after_end: None,
        }
    }

    /// Runs the state machine over `bytes` (which start at stream offset `base`) as far as it
    /// can go; returns how many it consumed.
    fn run(&mut self, bytes: &[u8], diags: &mut DiagnosticSink, at_eof: bool) -> usize {
        let mut pos = 0;
        while let Some(next) = self.step(bytes, pos, diags, at_eof) {
            pos = next;
        }
        pos
    }

    /// Runs the state machine over the buffered bytes.
    fn run_buffered(&mut self, diags: &mut DiagnosticSink, at_eof: bool) -> usize {
        let buf = std::mem::take(&mut self.buf);
        let used = self.run(&buf, diags, at_eof);
        self.buf = buf;
        used
    }

    /// One move of the state machine from `pos`. `None` when it needs more input.
    fn step(&mut self, buf: &[u8], pos: usize, diags: &mut DiagnosticSink, at_eof: bool) -> Option<usize> {
        let rest = buf.get(pos..).filter(|r| !r.is_empty())?;
        let offset = self.base + pos as u64;
        match self.state {
            State::Done | State::GaveUp => None,
            State::Start => {
                // A UTF-8 byte order mark is not JSON, but editors write it.
                if rest.starts_with(BOM) {
                    return Some(pos + BOM.len());
                }
                if !at_eof && BOM.starts_with(rest) {
                    return None; // a BOM split across chunks
                }
                let i = skip_ws(rest, true)?;
                match rest.get(i) {
                    Some(b'{') => self.state = State::TopKey,
                    Some(b'[') => {
                        self.state = State::Events { bare: true };
                        self.saw_events_array = true;
                    }
                    _ => {
                        diags.push(
                            Severity::Error,
                            Some(Location::Byte(offset + i as u64)),
                            "expected a JSON object or array",
                        );
                        self.state = State::GaveUp;
                    }
                }
                Some(pos + i + 1)
            }
            State::TopKey => {
                let i = skip_ws(rest, true)?;
                match rest.get(i) {
                    Some(b'}') => {
                        self.state = State::Done;
                        Some(pos + i + 1)
                    }
                    Some(b'"') => {
                        let key_and_colon = rest.get(i..)?;
                        let mut stream = serde_json::Deserializer::from_slice(key_and_colon).into_iter::<String>();
                        match stream.next() {
                            Some(Ok(key)) => {
                                let after_key = stream.byte_offset();
                                let tail = key_and_colon.get(after_key..)?;
                                let j = skip_ws(tail, false)?;
                                if tail.get(j) != Some(&b':') {
                                    diags.push(
                                        Severity::Error,
                                        Some(Location::Byte(offset + (i + after_key + j) as u64)),
                                        "expected ':' after a key",
                                    );
                                    self.state = State::GaveUp;
                                    return None;
                                }
                                self.top_key.clear();
                                self.top_key.push_str(&key);
                                self.state = if &*key == "traceEvents" {
                                    State::BeforeEvents
                                } else {
                                    State::TopValue { wanted: self.builder.wants_top_level(&key) }
                                };
                                Some(pos + i + after_key + j + 1)
                            }
                            Some(Err(e)) if e.is_eof() => None,
                            _ => {
                                diags.push(
                                    Severity::Error,
                                    Some(Location::Byte(offset + i as u64)),
                                    "malformed key in the top-level object",
                                );
                                self.state = State::GaveUp;
                                None
                            }
                        }
                    }
                    Some(_) => {
                        diags.push(
                            Severity::Error,
                            Some(Location::Byte(offset + i as u64)),
                            "malformed top-level object (expected a key)",
                        );
                        self.state = State::GaveUp;
                        None
                    }
                    None => None,
                }
            }
            State::BeforeEvents => {
                let i = skip_ws(rest, false)?;
                if rest.get(i) == Some(&b'[') {
                    self.state = State::Events { bare: false };
                    self.saw_events_array = true;
                    Some(pos + i + 1)
                } else {
                    diags.push(
                        Severity::Error,
                        Some(Location::Byte(offset + i as u64)),
                        "\"traceEvents\" is not an array",
                    );
                    self.skip = Skipper::default();
                    self.state = State::Skipping { after: Resume::TopKey };
                    Some(pos + i)
                }
            }
            State::TopValue { wanted } => {
                let i = skip_ws(rest, false)?;
                if wanted {
                    let value = rest.get(i..)?;
                    // serde reads only a value the scanner has seen whole (it would call `5e`
                    // of `5e30` invalid, not incomplete), so the chunking cannot change it.
                    let extent = match json::value_end(value, 0) {
                        Err(ScanError::Eof) if !at_eof && value.len() <= MAX_TOP_LEVEL_VALUE => return None,
                        Ok(end) => value.get(..end),
                        Err(ScanError::Eof) => Some(value),
                        Err(ScanError::Invalid(_)) => None,
                    };
                    let read = extent.filter(|v| v.len() <= MAX_TOP_LEVEL_VALUE).and_then(|v| {
                        let mut stream = serde_json::Deserializer::from_slice(v).into_iter::<&RawValue>();
                        stream.next()?.ok().map(|raw| (raw, stream.byte_offset()))
                    });
                    if let Some((raw, used)) = read {
                        let key = std::mem::take(&mut self.top_key);
                        self.builder.top_level(&key, raw, diags);
                        self.top_key = key;
                        self.state = State::TopKey;
                        return Some(pos + i + used);
                    }
                    diags.push(
                        Severity::Warning,
                        Some(Location::Byte(offset + i as u64)),
                        format!("could not read the top-level \"{}\"; skipped", self.top_key),
                    );
                }
                self.skip = Skipper::default();
                self.state = State::Skipping { after: Resume::TopKey };
                Some(pos + i)
            }
            State::Skipping { after } => {
                // The skipper keeps its place across chunks, so what it saw is consumed.
                let Some(used) = self.skip.advance(rest) else {
                    return Some(pos + rest.len());
                };
                self.state = match after {
                    Resume::TopKey => State::TopKey,
                    Resume::Events { bare } => State::Events { bare },
                };
                Some(pos + used)
            }
            State::Events { bare } => {
                let i = skip_ws(rest, true)?;
                match rest.get(i) {
                    Some(b']') => {
                        self.state = if bare { State::Done } else { State::TopKey };
                        Some(pos + i + 1)
                    }
                    Some(b'{') => {
                        let start = pos + i;
                        self.read_event(buf, start, diags)
                    }
                    Some(_) => {
                        self.stats.records += 1;
                        self.stats.skipped += 1;
                        diags.push(
                            Severity::Warning,
                            Some(Location::Byte(offset + i as u64)),
                            "an element of the event array is not an object; skipped",
                        );
                        self.skip = Skipper::default();
                        self.state = State::Skipping { after: Resume::Events { bare } };
                        Some(pos + i)
                    }
                    None => None,
                }
            }
        }
    }

    fn read_event(&mut self, buf: &[u8], start: usize, diags: &mut DiagnosticSink) -> Option<usize> {
        let text = buf.get(start..)?;
        let place = EventPlace { offset: self.base + start as u64 };
        let mut event = RawEvent::default();
        match event.read(text, &mut self.builder) {
            Ok(Read::Event(used)) => {
                self.accept(&event, place, diags);
                Some(start + used)
            }
            Ok(Read::Ignored(used)) => {
                self.count(false);
                Some(start + used)
            }
            // The event continues in the next chunk; at the end, it is the truncated last one
            // (`finish` reports it).
            Err(ScanError::Eof) => None,
            Err(ScanError::Invalid(why)) => {
                // Find the event's end without validating its content, then try once more with
                // control characters and invalid UTF-8 replaced: real traces carry both.
                let len = Skipper::default().advance(text)?;
                let cleaned = sanitize(text.get(..len)?);
                match RawEvent::parse(&cleaned) {
                    Ok((event, _)) => {
                        diags.push(
                            Severity::Warning,
                            place.location(),
                            "event has control characters or invalid UTF-8 in its strings; they were replaced",
                        );
                        self.accept(&event, place, diags);
                    }
                    Err(_) => {
                        self.stats.records += 1;
                        self.stats.skipped += 1;
                        self.consecutive_bad += 1;
                        diags.push(Severity::Warning, place.location(), format!("unreadable event skipped: {why}"));
                        if self.consecutive_bad >= MAX_CONSECUTIVE_BAD {
                            diags.push(
                                Severity::Error,
                                place.location(),
                                format!("{MAX_CONSECUTIVE_BAD} unreadable events in a row; stopped reading the file"),
                            );
                            self.state = State::GaveUp;
                        }
                    }
                }
                Some(start + len)
            }
        }
    }

    /// Drops the `used` buffered bytes the state machine consumed, and the rest too once the
    /// document is over.
    fn consume(&mut self, used: usize) {
        self.buf.drain(..used);
        self.base += used as u64;
        if matches!(self.state, State::Done | State::GaveUp) {
            let rest = std::mem::take(&mut self.buf);
            self.set_aside(&rest);
        }
    }

    /// Bytes the state machine did not consume: kept for the next chunk while the document
    /// goes on, looked at (never kept) once it is complete, dropped once it is unreadable.
    fn set_aside(&mut self, bytes: &[u8]) {
        match self.state {
            // Looked at whatever chunk they come in, so the note does not depend on the cuts.
            State::Done => self.note_after_end(bytes),
            State::GaveUp => self.base += bytes.len() as u64,
            _ => self.buf.extend_from_slice(bytes),
        }
    }

    /// Bytes after the complete document: remembers where the first one that is not blank is.
    fn note_after_end(&mut self, bytes: &[u8]) {
        if self.data_after_end.is_none() {
            self.data_after_end = skip_ws(bytes, false).map(|i| self.base + i as u64);
        }
        self.base += bytes.len() as u64;
    }

    fn accept(&mut self, event: &RawEvent<'_>, place: EventPlace, diags: &mut DiagnosticSink) {
        let kept = self.builder.event(event, place, diags);
        self.count(kept);
    }

    /// Counts a readable event, kept or skipped.
    fn count(&mut self, kept: bool) {
        self.consecutive_bad = 0;
        self.stats.records += 1;
        if kept {
            self.stats.kept += 1;
        } else {
            self.stats.skipped += 1;
        }
    }
}

impl<B: TraceBuilder> ContentParser for TraceDocument<B> {
    /// Reads `chunk` where it lies. Only two things are copied: the start of this chunk that
    /// completes a value the previous chunk cut (as little of it as that value needs), and the
    /// end of this chunk that a value runs past.
    fn feed(&mut self, chunk: &[u8], diags: &mut DiagnosticSink) {
        let mut at = 0;
        let mut piece = STRADDLE_PIECE;
        while !self.buf.is_empty() && at < chunk.len() {
            let held = self.buf.len();
            let next = chunk.get(at..).unwrap_or_default();
            let next = next.get(..piece).unwrap_or(next);
            self.buf.extend_from_slice(next);
            at += next.len();
            let used = self.run_buffered(diags, false);
            if used >= held {
                // Past the cut value: what is left of the copy is read in place.
                at -= self.buf.len() - used;
                self.base += used as u64;
                self.buf.clear();
            } else {
                self.consume(used);
                piece = piece.saturating_mul(2);
            }
        }
        let rest = chunk.get(at..).unwrap_or_default();
        let used = if self.buf.is_empty() && !matches!(self.state, State::Done | State::GaveUp) {
            self.run(rest, diags, false)
        } else {
            0
        };
        self.base += used as u64;
        self.set_aside(rest.get(used..).unwrap_or_default());
    }

    fn held_bytes(&self) -> usize {
        self.buf.capacity().saturating_add(self.builder.held_bytes())
    }

    fn finish(mut self: Box<Self>, diags: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats) {
        let used = self.run_buffered(diags, true);
        self.consume(used);
        let bare = matches!(self.state, State::Events { bare: true });
        let leftover = self.buf.iter().any(|&b| !(b.is_ascii_whitespace() || bare && b == b','));
        let where_ = Some(Location::Byte(self.base));
        match self.state {
            State::Done => {
                if let Some(at) = self.data_after_end {
                    diags.push(
                        Severity::Info,
                        Some(Location::Byte(at)),
                        "data after the end of the JSON document was ignored",
                    );
                }
            }
            State::GaveUp => {}
            State::Events { bare: true } if !leftover => {} // the format allows omitting the final ']'
            _ if !self.saw_events_array || self.stats.records == 0 => {
                diags.push(
                    Severity::Error,
                    where_,
                    "the file ends before any trace events (truncated, or not a trace)",
                );
            }
            _ => {
                diags.push(
                    Severity::Warning,
                    where_,
                    format!(
                        "the file ends early (truncated?); the {} events before that point were read",
                        self.stats.records
                    ),
                );
            }
        }
        let stats = self.stats;
        let workers = self.builder.finish(diags);
        (workers, stats)
    }
}

/// Index of the first byte that is not whitespace (nor a comma, when `commas`); `None` at the end.
fn skip_ws(bytes: &[u8], commas: bool) -> Option<usize> {
    bytes.iter().position(|&b| !(b.is_ascii_whitespace() || (commas && b == b',')))
}

/// Replaces control characters inside strings and invalid UTF-8 so that serde can read the event.
fn sanitize(raw: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(raw);
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect::<String>().into_bytes()
}

/// Finds the end of one JSON value without validating it; resumable across chunks.
#[derive(Clone, Copy, Debug, Default)]
struct Skipper {
    started: bool,
    scalar: bool,
    depth: u32,
    in_string: bool,
    escape: bool,
}

impl Skipper {
    /// Consumes bytes of the value; `Some(n)` when it ended after `n` bytes of `bytes`.
    fn advance(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &b) in bytes.iter().enumerate() {
            if !self.started {
                if b.is_ascii_whitespace() {
                    continue;
                }
                self.started = true;
                match b {
                    b'{' | b'[' => self.depth = 1,
                    b'"' => self.in_string = true,
                    _ => self.scalar = true,
                }
                continue;
            }
            if self.in_string {
                if self.escape {
                    self.escape = false;
                } else if b == b'\\' {
                    self.escape = true;
                } else if b == b'"' {
                    self.in_string = false;
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                }
                continue;
            }
            if self.scalar {
                if matches!(b, b',' | b']' | b'}') || b.is_ascii_whitespace() {
                    return Some(i);
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what reached the builder.
    #[derive(Default)]
    struct Recorder {
        names: Vec<String>,
        top: Vec<(String, String)>,
    }

    impl Interest for Recorder {
        fn ignores_complete(&self, category: &str) -> bool {
            category == "python_function"
        }
    }

    impl TraceBuilder for Recorder {
        fn top_level(&mut self, key: &str, value: &RawValue, _: &mut DiagnosticSink) {
            self.top.push((key.to_owned(), value.get().to_owned()));
        }
        fn wants_top_level(&self, key: &str) -> bool {
            key == "distributedInfo"
        }
        fn event(&mut self, event: &RawEvent<'_>, _: EventPlace, _: &mut DiagnosticSink) -> bool {
            self.names.push(event.name().to_owned());
            true
        }
        fn finish(self, _: &mut DiagnosticSink) -> Vec<Worker> {
            let top = self.top.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";");
            let w = Worker { source: format!("{}|{top}", self.names.join(",")), ..Worker::default() };
            vec![w]
        }
        fn held_bytes(&self) -> usize {
            self.names.len()
        }
    }

    /// Feeds `doc` in chunks of `chunk` bytes; returns "names|top-level" and the diagnostics.
    fn read(doc: &[u8], chunk: usize) -> (String, Vec<String>) {
        let mut diags = DiagnosticSink::new("t.json");
        let mut parser: Box<dyn ContentParser> = Box::new(TraceDocument::new(Recorder::default()));
        for c in doc.chunks(chunk.max(1)) {
            parser.feed(c, &mut diags);
        }
        let (workers, _) = parser.finish(&mut diags);
        let summary = workers.first().map(|w| w.source.clone()).unwrap_or_default();
        (summary, diags.finish().iter().map(|d| d.message.clone()).collect())
    }

    #[test]
    fn reads_any_key_order_and_chunking() {
        let doc = br#"{"schemaVersion":1,"deviceProperties":[{"name":"A100","x":[1,{"y":"]}"}]}],
            "traceEvents":[{"ph":"X","name":"a\"b","ts":1},
            {"name":"c","ph":"X"} , {"name":"\u00e9"}],
            "distributedInfo":{"rank":3},"baseTimeNanoseconds":5}"#;
        for chunk in [1, 2, 3, 5, 64, 10_000] {
            let (summary, diags) = read(doc, chunk);
            assert_eq!(summary, "a\"b,c,é|distributedInfo={\"rank\":3}", "chunk {chunk}");
            assert!(diags.is_empty(), "{diags:?}");
        }
    }

    #[test]
    fn events_longer_than_a_chunk_or_the_first_copy() {
        // Events of 100 and 300 KiB, cut by chunks smaller and larger than the first piece
        // copied to complete them; the padding after the document must be noticed too.
        let pad = |n: usize| "x".repeat(n << 10);
        let doc = format!(
            r#"{{"traceEvents":[{{"name":"a","pad":"{}"}},{{"name":"b"}},{{"pad":"{}","name":"c"}},{{"name":"d"}}]}}  {}"#,
            pad(100),
            pad(300),
            "x"
        );
        let (whole, whole_diags) = read(doc.as_bytes(), usize::MAX);
        assert_eq!(whole, "a,b,c,d|");
        assert_eq!(whole_diags, ["data after the end of the JSON document was ignored"]);
        for chunk in [1000, 4096, 5000, 40_000, 70_000, 200_000, 1 << 20] {
            assert_eq!(read(doc.as_bytes(), chunk), (whole.clone(), whole_diags.clone()), "chunk {chunk}");
        }
    }

    /// Complete events of an ignored category are skipped unread (even when what follows the
    /// category is bad); the category alone is not enough.
    #[test]
    fn skips_complete_events_of_ignored_categories() {
        // The first event has a raw control character in its name and a bad `ts`.
        let doc = [
            &br#"[{"ph":"X","cat":"python_function","name":"a"#[..],
            b"\x01",
            br#"b","args":{"a":[1,"}"]},"ts":x},
            {"ph":"X","cat":"cpu_op","name":"kept"},{"cat":"python_function","ph":"X","name":"cat first"},
            {"ph":"M","cat":"python_function","name":"metadata"},{"ph":"X","cat":"python_function","name":"cut"#,
        ]
        .concat();
        for chunk in [1, 7, 10_000] {
            let mut diags = DiagnosticSink::new("t.json");
            let mut parser = TraceDocument::new(Recorder::default());
            for c in doc.chunks(chunk) {
                parser.feed(c, &mut diags);
            }
            let stats = parser.stats;
            let (workers, _) = Box::new(parser).finish(&mut diags);
            assert_eq!(workers[0].source, "kept,cat first,metadata|", "chunk {chunk}");
            assert_eq!((stats.records, stats.skipped), (4, 1), "chunk {chunk}");
            let messages: Vec<String> = diags.finish().iter().map(|d| d.message.clone()).collect();
            assert_eq!(messages.len(), 1, "only the cut event is reported: {messages:?}");
        }
    }

    #[test]
    fn reads_a_bare_array_even_without_its_closing_bracket() {
        let (summary, diags) = read(br#"[{"name":"a"},{"name":"b"},"#, 4);
        assert_eq!(summary, "a,b|");
        assert!(diags.is_empty(), "{diags:?}");
    }

    #[test]
    fn survives_bad_events_and_reports_truncation() {
        let doc = b"{\"traceEvents\":[{\"name\":\"ok\"},{\"name\":\"tab\there\xff\"},{\"name\":\"x\",\"ts\":1,},7,{\"name\":\"last\"},{\"name\":\"cut";
        let (summary, diags) = read(doc, 3);
        assert_eq!(summary, "ok,tab here\u{fffd},last|");
        assert_eq!(diags.len(), 4, "{diags:?}");
        assert!(diags[0].contains("control characters"));
        assert!(diags[1].contains("unreadable event"));
        assert!(diags[2].contains("not an object"));
        assert!(diags[3].contains("ends early"));
    }

    #[test]
    fn rejects_what_is_not_a_document() {
        let (_, diags) = read(b"  nonsense", 4);
        assert!(diags[0].contains("expected a JSON object or array"), "{diags:?}");
        let (_, diags) = read(br#"{"traceEvents": 5, "x": 1}"#, 4);
        assert!(diags[0].contains("not an array"), "{diags:?}");
        let (_, diags) = read(br#"{"schemaVersion": 1, "devicePro"#, 4);
        assert!(diags[0].contains("before any trace events"), "{diags:?}");
    }

    #[test]
    fn skipper_finds_value_ends() {
        for (text, end) in [("{\"a\":[1,\"}\"]} tail", 13), ("\"s\\\"\" x", 5), ("123,", 3), ("[[]]", 4)] {
            assert_eq!(Skipper::default().advance(text.as_bytes()), Some(end), "{text}");
        }
        let mut s = Skipper::default();
        assert_eq!(s.advance(b"{\"a\":"), None);
        assert_eq!(s.advance(b"\"}\"}"), Some(4));
    }
}

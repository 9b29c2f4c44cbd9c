//! seqskew step logs (`seqskew.steplog/1`), JSON Lines and CSV: per (step, rank[, micro-batch])
//! the times and the sequence lengths, for users who can log them from the training loop,
//! and the form `seqskew summarize` writes. The format is specified in `docs/formats.md`.
//! `row.rs` reads a row's fields, `rows.rs` makes the rows into workers; here, lines.

mod row;
mod rows;

use std::borrow::Cow;

use super::json::{self, ScanError};
use super::parser::{ContentParser, ImportStats};
use super::sniff::BOM;
use crate::diag::{DiagnosticSink, Location, Severity};
use crate::model::Worker;
use row::{Row, set_field};
use rows::Rows;

pub use row::STEPLOG_VERSION;

/// Splits input into complete lines, keeping the partial last one.
#[derive(Default)]
struct Lines {
    /// The line the last chunk's end cut, until its end comes.
    buf: Vec<u8>,
    line: u64,
}

impl Lines {
    fn feed(&mut self, chunk: &[u8], mut each: impl FnMut(u64, &[u8])) {
        let mut rest = chunk;
        // The line the last chunk cut (and the first, for its byte order mark) is completed in
        // the buffer; the chunk's other lines are read where they are (copying every byte into
        // the buffer first was a twelfth of reading a step log).
        if !self.buf.is_empty() || self.line == 0 {
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                self.buf.extend_from_slice(rest);
                return;
            };
            let (head, tail) = rest.split_at(nl);
            self.buf.extend_from_slice(head);
            rest = tail.get(1..).unwrap_or_default();
            let mut line = std::mem::take(&mut self.buf);
            // A UTF-8 byte order mark is not part of the first row, but editors write it.
            let start = if self.line == 0 && line.starts_with(BOM) { BOM.len() } else { 0 };
            self.emit(line.get(start..).unwrap_or_default(), &mut each);
            line.clear();
            self.buf = line;
        }
        let mut consumed = 0;
        for nl in memchr::memchr_iter(b'\n', rest) {
            self.emit(rest.get(consumed..nl).unwrap_or_default(), &mut each);
            consumed = nl + 1;
        }
        self.buf.extend_from_slice(rest.get(consumed..).unwrap_or_default());
    }

    fn emit(&mut self, line: &[u8], each: &mut impl FnMut(u64, &[u8])) {
        self.line += 1;
        each(self.line, line.strip_suffix(b"\r").unwrap_or(line));
    }

    fn finish(&mut self, each: impl FnMut(u64, &[u8])) {
        if !self.buf.is_empty() {
            self.feed(b"\n", each);
        }
    }
}

pub struct JsonlParser {
    lines: Lines,
    rows: Rows,
}

impl JsonlParser {
    pub fn new(file: &str) -> Self {
        JsonlParser { lines: Lines::default(), rows: Rows::new(file) }
    }
}

/// `part` as text: without a second check where it lies within `whole` (text already), and
/// starts and ends between its characters; else checked.
fn text_in<'a>(whole: Option<&'a str>, part: &'a [u8]) -> Result<&'a str, ()> {
    let within = whole.and_then(|w| {
        let start = part.as_ptr().addr().checked_sub(w.as_ptr().addr())?;
        w.get(start..start.checked_add(part.len())?)
    });
    within.map_or_else(|| std::str::from_utf8(part).map_err(|_| ()), Ok)
}

fn parse_jsonl_line(rows: &mut Rows, number: u64, line: &[u8], diags: &mut DiagnosticSink) {
    let Some(open) = line.iter().position(|b| !b.is_ascii_whitespace()) else {
        return;
    };
    let mut fields: Vec<(Cow<'_, [u8]>, &[u8])> = Vec::with_capacity(16);
    let scanned = json::object(line, open, |key, value| fields.push((key, value)));
    let problem = match scanned {
        Ok(end) if line.get(end..).unwrap_or_default().iter().all(u8::is_ascii_whitespace) => None,
        Ok(_) => Some("more after the object's closing brace"),
        Err(ScanError::Eof) => Some("the line ends inside it"),
        Err(ScanError::Invalid(why)) => Some(why),
    };
    if let Some(why) = problem {
        rows.stats.records += 1;
        rows.stats.skipped += 1;
        diags.push(Severity::Warning, Some(Location::Line(number)), format!("not a JSON object: {why}; skipped"));
        return;
    }
    let mut row = Row { line: number, ..Row::default() };
    let mut seen = (false, false);
    // The line checked as UTF-8 once: its keys and values, cut at ASCII bytes, are then text
    // too (checking each on its own was a tenth of reading a step log). Where it is not, each
    // is checked, so that the message names the field.
    let whole = std::str::from_utf8(line).ok();
    for (key, value) in fields {
        let text = match value.starts_with(b"\"") {
            true => json::string(value),
            false => text_in(whole, value).map(Cow::Borrowed).map_err(|()| "invalid UTF-8"),
        };
        let field = match (text_in(whole, &key), text) {
            (Ok(key), Ok(text)) => set_field(&mut row, key, &text, &mut seen, &mut rows.hosts),
            (Err(()), _) => Err("a key that is not UTF-8".to_owned()),
            (Ok(key), Err(why)) => Err(format!("{key}: {why}")),
        };
        if let Err(why) = field {
            diags.push(Severity::Warning, Some(Location::Line(number)), why);
        }
    }
    rows.push(row, seen, diags);
}

impl ContentParser for JsonlParser {
    fn held_bytes(&self) -> usize {
        self.rows.held
    }

    fn feed(&mut self, chunk: &[u8], diags: &mut DiagnosticSink) {
        let rows = &mut self.rows;
        self.lines.feed(chunk, |n, line| parse_jsonl_line(rows, n, line, diags));
    }

    fn finish(mut self: Box<Self>, diags: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats) {
        let rows = &mut self.rows;
        self.lines.finish(|n, line| parse_jsonl_line(rows, n, line, diags));
        self.rows.finish(diags)
    }
}

/// CSV with a header row naming the fields; quoted fields allowed (csv-core).
pub struct CsvParser {
    lines: Lines,
    /// Built once: building csv-core's state machine costs more than reading a row.
    reader: csv_core::Reader,
    header: Option<Vec<String>>,
    rows: Rows,
}

impl CsvParser {
    pub fn new(file: &str) -> Self {
        CsvParser { lines: Lines::default(), reader: csv_core::Reader::new(), header: None, rows: Rows::new(file) }
    }
}

/// Splits one CSV record into fields.
fn csv_fields(reader: &mut csv_core::Reader, line: &[u8]) -> Vec<String> {
    reader.reset();
    let mut fields = Vec::new();
    let mut input = line;
    let mut field = Vec::new();
    let mut out = [0u8; 4096];
    loop {
        let (result, read, written) = reader.read_field(input, &mut out);
        input = input.get(read..).unwrap_or_default();
        field.extend_from_slice(out.get(..written).unwrap_or_default());
        match result {
            csv_core::ReadFieldResult::OutputFull => continue,
            csv_core::ReadFieldResult::Field { record_end } => {
                fields.push(String::from_utf8_lossy(&field).into_owned());
                field.clear();
                if record_end {
                    break;
                }
            }
            csv_core::ReadFieldResult::InputEmpty => {
                if input.is_empty() {
                    // Tell the reader the record ended.
                    let (r, _, w) = reader.read_field(&[], &mut out);
                    field.extend_from_slice(out.get(..w).unwrap_or_default());
                    if matches!(r, csv_core::ReadFieldResult::Field { .. }) {
                        fields.push(String::from_utf8_lossy(&field).into_owned());
                    }
                    break;
                }
            }
            csv_core::ReadFieldResult::End => break,
        }
    }
    fields
}

fn parse_csv_line(
    reader: &mut csv_core::Reader,
    header: &mut Option<Vec<String>>,
    rows: &mut Rows,
    number: u64,
    line: &[u8],
    diags: &mut DiagnosticSink,
) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let fields = csv_fields(reader, line);
    let Some(names) = header.as_ref() else {
        *header = Some(fields.iter().map(|f| f.trim().to_owned()).collect());
        return;
    };
    if fields.len() != names.len() {
        diags.push(
            Severity::Warning,
            Some(Location::Line(number)),
            format!("{} fields where the header has {}", fields.len(), names.len()),
        );
    }
    let mut row = Row { line: number, ..Row::default() };
    let mut seen = (false, false);
    for (name, value) in names.iter().zip(&fields) {
        if let Err(why) = set_field(&mut row, name, value, &mut seen, &mut rows.hosts) {
            diags.push(Severity::Warning, Some(Location::Line(number)), why);
        }
    }
    rows.push(row, seen, diags);
}

impl ContentParser for CsvParser {
    fn held_bytes(&self) -> usize {
        self.rows.held
    }

    fn feed(&mut self, chunk: &[u8], diags: &mut DiagnosticSink) {
        let (reader, header, rows) = (&mut self.reader, &mut self.header, &mut self.rows);
        self.lines.feed(chunk, |n, line| parse_csv_line(reader, header, rows, n, line, diags));
    }

    fn finish(mut self: Box<Self>, diags: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats) {
        let (reader, header, rows) = (&mut self.reader, &mut self.header, &mut self.rows);
        self.lines.finish(|n, line| parse_csv_line(reader, header, rows, n, line, diags));
        self.rows.finish(diags)
    }
}

#[cfg(test)]
mod tests {
    use super::row::Hosts;
    use super::*;
    use crate::model::{Nanos, SequenceKnowledge};

    #[test]
    fn csv_fields_with_quotes() {
        // One reader for every line, as the parser does: no state leaks from one to the next.
        let mut reader = csv_core::Reader::new();
        let mut fields = |line: &str| csv_fields(&mut reader, line.as_bytes());
        assert_eq!(fields("\"unterminated,x"), vec!["unterminated,x"]);
        assert_eq!(fields("3,0,\"12, 40\",x"), vec!["3", "0", "12, 40", "x"]);
        assert_eq!(fields("a,,b"), vec!["a", "", "b"]);
        assert_eq!(fields("\"he said \"\"hi\"\"\""), vec!["he said \"hi\""]);
    }

    #[test]
    fn fields_are_checked() {
        let mut row = Row::default();
        let mut seen = (false, false);
        assert!(set_field(&mut row, "lengths", "[12, 40]", &mut seen, &mut Hosts::default()).is_ok());
        assert_eq!(row.lengths, Some(vec![12, 40]));
        assert!(set_field(&mut row, "lengths", "12 x", &mut seen, &mut Hosts::default()).is_err());
        assert!(
            set_field(&mut row, "step_s", "-1", &mut seen, &mut Hosts::default()).unwrap_err().contains("negative")
        );
        assert!(
            set_field(&mut row, "rank", "99999999999", &mut seen, &mut Hosts::default())
                .unwrap_err()
                .contains("too large")
        );
        assert!(set_field(&mut row, "loss", "2.5", &mut seen, &mut Hosts::default()).is_ok());
        assert!(set_field(&mut row, "v", "2", &mut seen, &mut Hosts::default()).is_ok());
        assert_eq!(row.version, 2);
        assert!(set_field(&mut row, "padded", "true", &mut seen, &mut Hosts::default()).is_ok() && row.padded);
    }

    #[test]
    fn lines_split_across_chunks() {
        let mut lines = Lines::default();
        let mut got = Vec::new();
        for chunk in [&b"ab"[..], b"c\r\nd", b"e\n\nf"] {
            lines.feed(chunk, |n, l| got.push((n, String::from_utf8_lossy(l).into_owned())));
        }
        lines.finish(|n, l| got.push((n, String::from_utf8_lossy(l).into_owned())));
        assert_eq!(got, vec![(1, "abc".into()), (2, "de".into()), (3, "".into()), (4, "f".into())]);
    }

    /// The rows of a JSON Lines log, its lines numbered from 1.
    fn read(log: &[&str], diags: &mut DiagnosticSink) -> Rows {
        let mut rows = Rows::default();
        for (i, line) in log.iter().enumerate() {
            parse_jsonl_line(&mut rows, i as u64 + 1, line.as_bytes(), diags);
        }
        rows
    }

    #[test]
    fn a_worker_is_placed_by_each_steps_step_row_else_its_first_micro_batch() {
        // Step 1 has micro-batch rows only, micro-batch 0's first; step 2's step rows come after
        // its micro-batch's. The worker's coordinates are its last step's (its latest step row),
        // its host and world size its first step's (micro-batch 0's).
        let log = [
            r#"{"step": 1, "rank": 0, "mb": 0, "dp": 6, "host": "a", "world_size": 8, "compute_s": 0.1}"#,
            r#"{"step": 1, "rank": 0, "mb": 1, "dp": 7, "host": "b", "compute_s": 0.1}"#,
            r#"{"step": 2, "rank": 0, "mb": 0, "dp": 1, "compute_s": 0.1}"#,
            r#"{"step": 2, "rank": 0, "dp": 2, "world_size": 4, "step_s": 1.0}"#,
            r#"{"step": 2, "rank": 0, "dp": 3, "step_s": 1.0}"#,
            r#"{"step": 2, "rank": 0, "dp": 5, "step_s": 1.0}"#,
        ];
        let mut diags = DiagnosticSink::new("log.jsonl");
        let (workers, _) = read(&log, &mut diags).finish(&mut diags);
        let placed = workers.iter().map(|w| (w.coords.dp, w.host.as_deref(), w.world_size, w.steps.len()));
        assert_eq!(placed.collect::<Vec<_>>(), [(Some(5), Some("a"), Some(8), 2)]);
        // Three step rows for one place: the last is kept, and each earlier one is named there.
        let got: Vec<String> = diags.finish().into_iter().map(|d| format!("{:?} {}", d.location, d.message)).collect();
        assert_eq!(got, ["Some(Line(6)) a second row for step 2 rank 0; it replaced the first"; 2]);
    }

    #[test]
    fn each_worker_keeps_its_host_and_bounds() {
        // Hosts are kept once per file; a worker's is its first row's that names one.
        let log = [
            r#"{"step": 1, "rank": 0, "step_s": 1.0, "host": "node-a", "tokens": 300, "docs": 3, "max_len": 200}"#,
            r#"{"step": 1, "rank": 1, "step_s": 1.0}"#,
            r#"{"step": 2, "rank": 1, "step_s": 1.0, "host": "node-b"}"#,
            r#"{"step": 1, "rank": 2, "step_s": 1.0, "host": "node-a", "tokens": 5}"#,
        ];
        let mut diags = DiagnosticSink::new("log.jsonl");
        let rows = read(&log, &mut diags);
        assert_eq!(rows.hosts.names, ["node-a", "node-b"]);
        let (workers, _) = rows.finish(&mut diags);
        let hosts: Vec<Option<&str>> = workers.iter().map(|w| w.host.as_deref()).collect();
        assert_eq!(hosts, [Some("node-a"), Some("node-b"), Some("node-a")]);
        let bounds = workers.first().and_then(|w| w.steps.first()).map(|s| &s.sequences);
        assert_eq!(
            bounds.map(|b| (b.knowledge, b.tokens, b.documents, b.max_len)),
            Some((SequenceKnowledge::VarlenBounds, 300, 3, 200))
        );
        let messages: Vec<String> = diags.finish().into_iter().map(|d| d.message).collect();
        assert_eq!(messages, ["tokens and docs go together (with max_len); lengths bounds ignored"]);
    }

    #[test]
    fn a_later_row_for_the_same_place_replaces_the_earlier() {
        let log = [
            r#"{"step": 2, "rank": 1, "step_s": 1.0}"#,
            r#"{"step": 1, "rank": 1, "step_s": 1.0}"#,
            r#"{"step": 1, "rank": 1, "mb": 0, "compute_s": 0.25}"#,
            r#"{"step": 1, "rank": 1, "step_s": 2.0}"#,
            r#"{"step": 1, "rank": 0, "step_s": 1.0}"#,
            r#"{"step": 1, "rank": 1, "mb": 0, "compute_s": 0.5}"#,
        ];
        let mut diags = DiagnosticSink::new("log.jsonl");
        let rows = read(&log, &mut diags);
        let (workers, _) = rows.finish(&mut diags);
        let got: Vec<String> = diags.finish().into_iter().map(|d| format!("{:?} {}", d.location, d.message)).collect();
        assert_eq!(
            got,
            [
                "Some(Line(4)) a second row for step 1 rank 1; it replaced the first",
                "Some(Line(6)) a second row for step 1 rank 1 micro-batch 0; it replaced the first",
            ]
        );
        // (rank, step, duration, forward of each micro-batch)
        let shape: Vec<(u32, u64, Nanos, Vec<Nanos>)> = workers
            .iter()
            .flat_map(|w| {
                w.steps
                    .iter()
                    .map(|s| (w.rank, s.step, s.duration, w.micro_batches_of(s).iter().map(|m| m.forward).collect()))
            })
            .collect();
        let second = 1_000_000_000;
        assert_eq!(shape, [(0, 1, second, vec![]), (1, 1, 2 * second, vec![second / 2]), (1, 2, second, vec![])]);
    }

    #[test]
    fn a_steps_documents_stay_in_its_micro_batches_and_lists_fit() {
        // Rank 0's step 1 has its lengths on its micro-batch rows; step 2 on its step row; rank
        // 1 lists them on both (the micro-batches' are kept).
        let log = [
            r#"{"step": 1, "rank": 0, "step_s": 1.0}"#,
            r#"{"step": 1, "rank": 0, "mb": 0, "fwd_s": 0.1, "lengths": [3, 8]}"#,
            r#"{"step": 1, "rank": 0, "mb": 1, "fwd_s": 0.1, "lengths": [5]}"#,
            r#"{"step": 2, "rank": 0, "step_s": 1.0, "lengths": [4, 6]}"#,
            r#"{"step": 1, "rank": 1, "step_s": 1.0, "lengths": [1, 1]}"#,
            r#"{"step": 1, "rank": 1, "mb": 0, "fwd_s": 0.1, "lengths": [2]}"#,
        ];
        let mut diags = DiagnosticSink::new("log.jsonl");
        let (workers, _) = read(&log, &mut diags).finish(&mut diags);
        // (rank, step, documents, the step's own list, all its documents)
        let steps: Vec<(u32, u64, u64, usize, Vec<u32>)> = workers
            .iter()
            .flat_map(|w| {
                w.steps
                    .iter()
                    .map(|s| (w.rank, s.step, s.sequences.documents, s.sequences.lengths.len(), w.step_documents(s)))
            })
            .collect();
        assert_eq!(steps, [(0, 1, 3, 0, vec![8, 5, 3]), (0, 2, 2, 2, vec![6, 4]), (1, 1, 1, 0, vec![2])]);
        let capacities: Vec<(usize, usize)> =
            workers.iter().map(|w| (w.steps.capacity(), w.micro_batches.capacity())).collect();
        assert_eq!(capacities, [(2, 2), (1, 1)]);
        let lengths = workers.iter().flat_map(|w| &w.micro_batches).map(|m| m.sequences.lengths.capacity());
        assert_eq!(lengths.collect::<Vec<_>>(), [2, 1, 1]);
    }

    #[test]
    fn rows_in_any_order_make_the_same_workers() {
        // Two ranks, three steps; rank 0's step 2 has a micro-batch row with neither times nor
        // lengths only, so it is skipped and its micro-batch with it.
        let mut log = Vec::new();
        for rank in 0..2 {
            for step in 1..=3 {
                if (rank, step) == (0, 2) {
                    log.push(format!(r#"{{"step": {step}, "rank": {rank}, "mb": 0}}"#));
                    continue;
                }
                log.push(format!(r#"{{"step": {step}, "rank": {rank}, "step_s": 1.{step}, "dp": {rank}}}"#));
                for mb in 0..2 {
                    let lengths = format!("[{}, {}]", step * 10 + mb, rank + 1);
                    log.push(format!(
                        r#"{{"step": {step}, "rank": {rank}, "mb": {mb}, "fwd_s": 0.{mb}1, "lengths": {lengths}}}"#
                    ));
                }
            }
        }
        let workers = |lines: &[&str]| {
            let mut diags = DiagnosticSink::new("log.jsonl");
            let (workers, _) = read(lines, &mut diags).finish(&mut diags);
            let messages: Vec<String> = diags.finish().into_iter().map(|d| d.message).collect();
            (workers, messages)
        };
        let in_order: Vec<&str> = log.iter().map(String::as_str).collect();
        let (expected, messages) = workers(&in_order);
        assert_eq!(messages, ["step 2 rank 0 has no times; skipped"]);
        let shape: Vec<(u32, usize, usize)> =
            expected.iter().map(|w| (w.rank, w.steps.len(), w.micro_batches.len())).collect();
        assert_eq!(shape, [(0, 2, 4), (1, 3, 6)]);
        // Backwards, and every other line first (a step's rows apart, micro-batches out of order).
        let backwards: Vec<&str> = in_order.iter().rev().copied().collect();
        let evens = in_order.iter().step_by(2);
        let apart: Vec<&str> = evens.chain(in_order.iter().skip(1).step_by(2)).copied().collect();
        for lines in [backwards, apart] {
            assert_eq!(workers(&lines), (expected.clone(), messages.clone()), "{lines:?}");
        }
    }

    /// Each JSONL line as the reader takes it: (line, kept, messages).
    #[test]
    fn jsonl_lines_are_objects_or_named_problems() {
        let cases: [(&str, bool, &[&str]); 8] = [
            (r#"{"step": 1, "rank": 0, "step_s": 0.5, "loss": NaN}"#, true, &[]),
            (r#"  {"step": 1, "rank": 0, "host": "n\u00e9", "lengths": [3, 4]}  "#, true, &[]),
            (r#"{"step": 1, "rank": 0} {"step": 2}"#, false, &["more after the object's closing brace"]),
            (r#"{"step": 1, "rank": 0, "step_s": 0."#, false, &["the line ends inside it"]),
            (r#"[1, 2]"#, false, &["expected an object"]),
            (r#"{"step": 1, "rank": 0, "step_s": "x"}"#, true, &["step_s = x"]),
            ("{\"step\": 1, \"rank\": 0, \"host\": \"a\tb\"}", true, &["host: a control character"]),
            (
                r#"{"step": 1, "rank": 0, "step_s": 0.5, "world_size": 0}"#,
                true,
                &["world_size = 0 is not a rank count"],
            ),
        ];
        for (line, kept, messages) in cases {
            let mut rows = Rows::default();
            let mut diags = DiagnosticSink::new("log.jsonl");
            parse_jsonl_line(&mut rows, 1, line.as_bytes(), &mut diags);
            let got: Vec<String> = diags.finish().into_iter().map(|d| d.message).collect();
            assert_eq!(rows.stats.skipped == 0, kept, "{line}: {got:?}");
            assert_eq!(got.len(), messages.len(), "{line}: {got:?}");
            for (m, want) in got.iter().zip(messages) {
                assert!(m.contains(want), "{line}: {m} lacks {want}");
            }
        }
    }
}

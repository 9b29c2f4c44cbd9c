//! Recognising a format from the first KiB of content, never from the file name.

use serde::{Deserialize, Serialize};

/// The input formats seqskew reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// PyTorch profiler (Kineto) JSON, one file per rank.
    Kineto,
    /// Any other Chrome Trace Event Format file, possibly with many workers.
    ChromeTrace,
    /// seqskew step log, JSON Lines.
    #[serde(rename = "steplog_jsonl")]
    StepLogJsonl,
    /// seqskew step log, CSV.
    #[serde(rename = "steplog_csv")]
    StepLogCsv,
    /// Any other text: a training or failure log (torchrun console, per-rank log, a paste).
    Log,
    /// A PyTorch Flight Recorder dump (pickle).
    FlightRecorder,
    /// A PyTorch Flight Recorder dump in its JSON form.
    FlightRecorderJson,
    /// torchrun's per-rank error file (`TORCHELASTIC_ERROR_FILE`, written by `@record`).
    ElasticErrorFile,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Kineto => "kineto",
            Format::ChromeTrace => "chrome_trace",
            Format::StepLogJsonl => "steplog_jsonl",
            Format::StepLogCsv => "steplog_csv",
            Format::Log => "log",
            Format::FlightRecorder => "flight_recorder",
            Format::FlightRecorderJson => "flight_recorder_json",
            Format::ElasticErrorFile => "elastic_error_file",
        }
    }

    /// A failed job's artefact (a log, an error file, a Flight Recorder dump), read by the
    /// `failure` readers rather than into steps.
    pub fn is_failure_input(self) -> bool {
        matches!(self, Format::Log | Format::FlightRecorder | Format::FlightRecorderJson | Format::ElasticErrorFile)
    }

    pub fn describe(self) -> &'static str {
        match self {
            Format::Kineto => "PyTorch profiler (Kineto) trace",
            Format::ChromeTrace => "Chrome trace",
            Format::StepLogJsonl => "seqskew step log (JSON Lines)",
            Format::StepLogCsv => "seqskew step log (CSV)",
            Format::Log => "log",
            Format::FlightRecorder => "PyTorch Flight Recorder dump",
            Format::FlightRecorderJson => "PyTorch Flight Recorder dump (JSON)",
            Format::ElasticErrorFile => "torchrun error file",
        }
    }
}

/// Words that only PyTorch profiler output carries near its start.
const KINETO_MARKERS: &[&str] = &[
    "\"schemaVersion\"",
    "\"distributedInfo\"",
    "\"deviceProperties\"",
    "\"record_shapes\"",
    "\"baseTimeNanoseconds\"",
    "\"trace_id\"",
    "\"traceName\"",
    "\"ProfilerStep#",
    "\"cpu_op\"",
    "\"cuda_runtime\"",
    "\"cuda_driver\"",
    "\"user_annotation\"",
    "\"gpu_user_annotation\"",
    "\"python_function\"",
    "\"process_labels\"",
];

/// The UTF-8 byte order mark: not content, but editors write it before JSON and CSV.
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// How many content bytes the sniffer looks at before deciding.
pub const SNIFF_BYTES: usize = 1024;

/// Decides the format of content from its first bytes (at least [`SNIFF_BYTES`] unless the
/// content is shorter). The error explains what the content looks like instead.
pub fn sniff(head: &[u8]) -> Result<Format, String> {
    if crate::failure::evidence::looks_like_pickle(head) {
        return Ok(Format::FlightRecorder);
    }
    let text = head.strip_prefix(BOM).unwrap_or(head);
    let start = text.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(text.len());
    let text = text.get(start..).unwrap_or_default();
    let Some(&first) = text.first() else {
        return Err("the file has no content".to_owned());
    };
    let has = |needle: &str| contains(text, needle.as_bytes());
    let is_json = match first {
        b'{' => starts_with_after_space(text.get(1..).unwrap_or_default(), b"\"}"),
        b'[' => starts_like_json_array(text.get(1..).unwrap_or_default()),
        _ => false,
    };
    let is_trace = has("\"traceEvents\"") || has("\"ph\"");
    match first {
        // A trace names its events (`traceEvents`, `ph`); dumps and error files never do.
        b'{' if is_json && !is_trace && crate::failure::flight::looks_like_json_dump(text) => {
            Ok(Format::FlightRecorderJson)
        }
        b'{' if is_json
            && !is_trace
            && has("\"message\"")
            && (has("\"py_callstack\"") || has("\"extraInfo\"") || has("\"errorTraits\"")) =>
        {
            Ok(Format::ElasticErrorFile)
        }
        b'{' if is_json && is_steplog_jsonl(text) => Ok(Format::StepLogJsonl),
        b'{' | b'[' if is_json => {
            if KINETO_MARKERS.iter().any(|m| has(m)) {
                Ok(Format::Kineto)
            } else if has("\"traceEvents\"") || has("\"ph\"") {
                Ok(Format::ChromeTrace)
            } else if first == b'{' && has("\"step\"") {
                Err("JSON, but neither a trace (no \"traceEvents\" or \"ph\") nor a step log (each line must be one JSON object with \"step\" and \"rank\")".to_owned())
            } else {
                Err("JSON, but not a trace: no \"traceEvents\" or \"ph\" in its first KiB".to_owned())
            }
        }
        _ if is_steplog_csv(text) => Ok(Format::StepLogCsv),
        _ if looks_binary(text) => Err(
            "not an input seqskew reads: binary content (expected a trace, a step log, a log or a Flight Recorder dump, optionally gzipped)".to_owned(),
        ),
        // Any other text is a log: the failure scanner finds what it says, or says it found nothing.
        _ => Ok(Format::Log),
    }
}

/// Whether the first non-space byte of `text` is one of `allowed`, or there is none (a JSON
/// document cut after its opening bracket is still JSON).
fn starts_with_after_space(text: &[u8], allowed: &[u8]) -> bool {
    text.iter().find(|b| !b.is_ascii_whitespace()).is_none_or(|b| allowed.contains(b))
}

/// After an opening bracket: an array's first element, or its end. A number must be followed
/// by `,` or `]`, so that a log line opening with a time stamp (`[2024-03-14 10:22:31] iteration
/// …`, Megatron-LM's and DeepSpeed's) is not taken for a JSON array.
fn starts_like_json_array(text: &[u8]) -> bool {
    let rest = text.get(text.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(text.len())..).unwrap_or_default();
    match rest.first() {
        Some(b'0'..=b'9' | b'-') => {
            let number = rest.iter().position(|b| !matches!(b, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'));
            let after = number.and_then(|n| rest.get(n..)).unwrap_or_default();
            starts_with_after_space(after, b",]")
        }
        _ => starts_with_after_space(rest, b"{[]\""),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// A step log's first line is a complete, small JSON object with a `step` key.
fn is_steplog_jsonl(text: &[u8]) -> bool {
    let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
    if line.len() == text.len() && text.len() >= SNIFF_BYTES {
        // The first line goes on beyond what we saw: a one-line trace, or a step-log row with a
        // very long list of lengths. A row names its step and rank among its first keys.
        let opening = text.get(..256).unwrap_or(text);
        let has = |needle: &[u8]| opening.windows(needle.len()).any(|w| w == needle);
        return has(b"\"step\"") && has(b"\"rank\"") && !has(b"\"ph\"") && !has(b"\"traceEvents\"");
    }
    #[derive(serde::Deserialize)]
    struct Probe {
        step: Option<serde::de::IgnoredAny>,
        #[serde(rename = "traceEvents")]
        trace_events: Option<serde::de::IgnoredAny>,
    }
    matches!(serde_json::from_slice::<Probe>(line), Ok(Probe { step: Some(_), trace_events: None }))
}

/// A step-log CSV header names at least the `step` and `rank` columns.
fn is_steplog_csv(text: &[u8]) -> bool {
    let header = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let Ok(header) = std::str::from_utf8(header) else {
        return false;
    };
    let columns: Vec<&str> = header.split(',').map(|c| c.trim().trim_matches('"')).collect();
    columns.contains(&"step") && columns.contains(&"rank")
}

fn looks_binary(text: &[u8]) -> bool {
    let sample = text.get(..text.len().min(512)).unwrap_or_default();
    let odd = sample.iter().filter(|&&b| b == 0 || (b < 0x09) || (0x0e..0x20).contains(&b)).count();
    odd * 20 > sample.len() || std::str::from_utf8(sample).is_err() && odd > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: Result<Format, &str>) {
        let got = sniff(input.as_bytes());
        match expected {
            Ok(format) => assert_eq!(got, Ok(format), "{input}"),
            Err(fragment) => {
                let err = got.expect_err(input);
                assert!(err.contains(fragment), "{err:?} lacks {fragment:?}");
            }
        }
    }

    #[test]
    fn recognises_each_format() {
        check(r#"{"schemaVersion": 1, "traceEvents": []}"#, Ok(Format::Kineto));
        check(r#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm"}]}"#, Ok(Format::Kineto));
        check("\u{feff}  \n[{\"ph\":\"X\",\"name\":\"forward\"}]", Ok(Format::ChromeTrace));
        check(r#"{"displayTimeUnit": "ms", "traceEvents": [{"ph":"X"}]}"#, Ok(Format::ChromeTrace));
        check("{\"v\":1,\"step\":3,\"rank\":0,\"step_s\":0.5}\n{\"step\":4}", Ok(Format::StepLogJsonl));
        check("step,rank,step_s,lengths\n3,0,0.5,12 40\n", Ok(Format::StepLogCsv));
        check("\"step\",\"rank\"\n", Ok(Format::StepLogCsv));
    }

    #[test]
    fn a_step_log_row_longer_than_the_sniffed_bytes_is_still_a_step_log() {
        let lengths: Vec<String> = (0..2000).map(|i| (i % 900 + 10).to_string()).collect();
        let row = format!("{{\"v\":1,\"step\":3,\"rank\":0,\"step_s\":0.5,\"lengths\":[{}]}}\n", lengths.join(","));
        assert_eq!(sniff(row.as_bytes().get(..1024).unwrap()), Ok(Format::StepLogJsonl));
        assert_eq!(
            serde_json::to_string(&Format::StepLogJsonl).unwrap(),
            format!("\"{}\"", Format::StepLogJsonl.name())
        );
    }

    #[test]
    fn does_not_take_a_one_line_trace_for_a_step_log() {
        let trace = format!("{{\"step\": 1, \"ph\": \"X\", \"pad\": \"{}\"", "x".repeat(2000));
        assert_ne!(sniff(trace.as_bytes()), Ok(Format::StepLogJsonl));
    }

    #[test]
    fn explains_what_it_is_not() {
        check("", Err("no content"));
        check("   \n", Err("no content"));
        check(r#"{"hello": "world"}"#, Err("not a trace"));
        check("PK\u{3}\u{4}\u{0}\u{0}\u{0}\u{0}", Err("binary"));
    }

    #[test]
    fn takes_other_text_for_a_log_and_recognises_failure_artefacts() {
        check("time,loss\n1,2\n", Ok(Format::Log));
        check("[rank0]: Traceback (most recent call last):\n", Ok(Format::Log));
        check("[E709 17:05:38.162 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught", Ok(Format::Log));
        check("{'loss': 2.3, 'epoch': 0.1}\n", Ok(Format::Log));
        // Logs that open with a time stamp in brackets (Megatron-LM, DeepSpeed), not JSON.
        check(" [2024-03-14 10:22:31] iteration        4/      40 | consumed samples: 16 |\n", Ok(Format::Log));
        check("[2024-03-14 10:22:31,418] [INFO] [logging.py:96:log_dist] [Rank 0] step=10\n", Ok(Format::Log));
        // Arrays of numbers are still JSON.
        check("[12.5, -3e2]", Err("JSON, but not a trace"));
        check("[ 7 ]", Err("JSON, but not a trace"));
        assert_eq!(sniff(b"\x80\x02}q\x00(X\x07\x00\x00\x00version"), Ok(Format::FlightRecorder));
        check(
            r#"{"version": "2.10", "pg_config": {}, "pg_status": {}, "entries": []}"#,
            Ok(Format::FlightRecorderJson),
        );
        check(
            r#"{"message": {"message": "RuntimeError: x", "extraInfo": {"py_callstack": "Traceback", "timestamp": "1"}}}"#,
            Ok(Format::ElasticErrorFile),
        );
    }
}

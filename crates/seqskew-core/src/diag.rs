//! Diagnostics: every problem with the input is one of these, never a panic.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; nothing was lost.
    Info,
    /// Part of the input was skipped or guessed; the rest is good.
    Warning,
    /// The file (or a large part of it) could not be used.
    Error,
}

/// Where in a file a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// Offset in the (decompressed) byte stream.
    Byte(u64),
    /// 1-based line number (line-oriented formats).
    Line(u64),
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// The file the problem is in; empty for job-level findings (e.g. mismatched step ranges).
    pub file: String,
    pub location: Option<Location>,
    pub message: String,
}

impl Diagnostic {
    pub fn new(severity: Severity, file: &str, location: Option<Location>, message: impl Into<String>) -> Self {
        Diagnostic { severity, file: file.to_owned(), location, message: message.into() }
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let severity = match self.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{severity}: ")?;
        if !self.file.is_empty() {
            write!(f, "{}", self.file)?;
            match self.location {
                Some(Location::Byte(b)) => write!(f, " (byte {b})")?,
                Some(Location::Line(l)) => write!(f, ":{l}")?,
                None => {}
            }
            write!(f, ": ")?;
        }
        write!(f, "{}", self.message)
    }
}

/// Collects diagnostics for one file, capping repeats so a file with a million bad events
/// yields a readable list (the count of suppressed ones is reported at the end).
#[derive(Debug, Default)]
pub struct DiagnosticSink {
    file: String,
    items: Vec<Diagnostic>,
    suppressed: u64,
}

/// More than this many diagnostics per file are counted, not kept.
const MAX_PER_FILE: usize = 50;

impl DiagnosticSink {
    pub fn new(file: &str) -> Self {
        DiagnosticSink { file: file.to_owned(), items: Vec::new(), suppressed: 0 }
    }

    pub fn push(&mut self, severity: Severity, location: Option<Location>, message: impl Into<String>) {
        if self.items.len() >= MAX_PER_FILE && severity < Severity::Error {
            self.suppressed += 1;
            return;
        }
        self.items.push(Diagnostic::new(severity, &self.file, location, message));
    }

    pub fn file(&self) -> &str {
        &self.file
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    pub fn finish(mut self) -> Vec<Diagnostic> {
        if self.suppressed > 0 {
            let n = self.suppressed;
            self.items.push(Diagnostic::new(
                Severity::Warning,
                &self.file,
                None,
                format!("{n} more problems of lesser severity were not listed"),
            ));
        }
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_and_place() {
        let d = Diagnostic::new(Severity::Error, "rank3.json", Some(Location::Byte(42)), "truncated");
        assert_eq!(d.to_string(), "error: rank3.json (byte 42): truncated");
    }

    #[test]
    fn sink_caps_repeats_but_keeps_errors() {
        let mut sink = DiagnosticSink::new("f");
        for _ in 0..200 {
            sink.push(Severity::Warning, None, "w");
        }
        sink.push(Severity::Error, None, "e");
        let items = sink.finish();
        assert_eq!(items.len(), MAX_PER_FILE + 2);
        assert!(items.iter().any(|d| d.severity == Severity::Error));
        assert!(items.last().is_some_and(|d| d.message.starts_with("150 more")));
    }
}

//! What an import makes of one file: its workers, counts and diagnostics (and a failed job's
//! evidence), and the file at a glance for listings.

use serde::{Deserialize, Serialize};

use super::parser::ImportStats;
use super::sniff::Format;
use crate::diag::Diagnostic;
use crate::model::Worker;

/// What came out of one file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileImport {
    /// The name the user knows the file by (path or file name).
    pub file: String,
    /// `None` when the format was not recognised.
    pub format: Option<Format>,
    pub compressed: bool,
    /// Sorted by rank.
    pub workers: Vec<Worker>,
    pub stats: ImportStats,
    pub diagnostics: Vec<Diagnostic>,
    /// What a log, an error file or a Flight Recorder dump says about a failure. Not sent
    /// between workers: the reader that has the `failure` feature diagnoses where it reads.
    #[serde(skip)]
    pub failure: Option<crate::failure::evidence::FileEvidence>,
}

impl FileImport {
    /// True when the file yielded something to analyse: steps, or a readable log or dump (a
    /// log that shows no failure still answers "no failure found").
    pub fn is_usable(&self) -> bool {
        self.workers.iter().any(|w| !w.steps.is_empty()) || self.failure.is_some()
    }

    /// What `seqskew inspect` and the app's file list show of a file.
    pub fn summary(&self) -> FileSummary {
        let mut steps: Vec<u64> = self.workers.iter().flat_map(|w| w.steps.iter().map(|s| s.step)).collect();
        steps.sort_unstable();
        steps.dedup();
        let with_steps = self.workers.iter().filter(|w| !w.steps.is_empty());
        // Unknown ranks (assigned when the job is assembled) are counted, not listed.
        let mut ranks: Vec<u32> = with_steps.clone().map(|w| w.rank).filter(|&r| r != u32::MAX).collect();
        ranks.sort_unstable();
        let sequences =
            self.workers.iter().flat_map(|w| w.steps.iter().map(|s| s.sequences.knowledge)).max().unwrap_or_default();
        let micro_batches = self.workers.iter().flat_map(|w| w.steps.iter().map(|s| s.micro_batches.len())).max();
        FileSummary {
            path: self.file.clone(),
            format: self.format,
            compressed: self.compressed,
            bytes: self.stats.bytes_in,
            workers: with_steps.count(),
            ranks,
            steps: steps.len(),
            first_step: steps.first().copied(),
            last_step: steps.last().copied(),
            spans: SpanCounts { kept: self.stats.kept, skipped: self.stats.skipped },
            has_sequence_lengths: sequences != crate::model::SequenceKnowledge::Unknown,
            sequences,
            micro_batches: micro_batches.unwrap_or(0),
            diagnostics: self.diagnostics.clone(),
        }
    }
}

/// A file at a glance (the `files[]` entries of `seqskew inspect --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileSummary {
    pub path: String,
    /// `null` when the format was not recognised.
    pub format: Option<Format>,
    pub compressed: bool,
    /// The file's bytes as given (compressed when gzipped); all of a file given up early when
    /// its reader knew its size (`FileIngest::finish_of_size`: the command line, the browser).
    pub bytes: u64,
    pub workers: usize,
    pub ranks: Vec<u32>,
    pub steps: usize,
    pub first_step: Option<u64>,
    pub last_step: Option<u64>,
    pub spans: SpanCounts,
    pub has_sequence_lengths: bool,
    pub sequences: crate::model::SequenceKnowledge,
    /// The most micro-batches any of its worker-steps names (0: none; a Kineto trace names them
    /// only where its pipeline schedule annotates its passes).
    #[serde(default)]
    pub micro_batches: usize,
    pub diagnostics: Vec<Diagnostic>,
}

/// Trace events (or step-log rows) that went into the model, and those that did not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanCounts {
    pub kept: u64,
    pub skipped: u64,
}

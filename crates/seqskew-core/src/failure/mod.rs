//! Failed jobs: what torchrun consoles, per-rank logs, elastic error files and PyTorch Flight
//! Recorder dumps say about a failure, and the diagnosis drawn from them (which rank initiated
//! it, which ranks only failed because they waited for it, the cause, the fix).
//!
//! The importers turn each file into one [`FileEvidence`] (a log through `log`, a dump through
//! `pickle` and `dump`); `diagnose` reads every file's evidence together and writes the report's
//! [`Failure`](crate::report::Failure). Ranks are global ranks wherever the inputs say so: NCCL's
//! own `[Rank N]` is a rank within a process group and is kept apart ([`Event::pg_rank`]).
//!
//! The readers and the diagnosis are the crate's `failure` feature (on by default): the
//! browser leaves them out of the page's and the analysis worker's bundles and loads them in a
//! worker of their own when a dropped file is a log or a dump. The model here, and the sniffing, are always built.

#[cfg(feature = "failure")]
pub mod clock;
#[cfg(feature = "failure")]
pub mod diagnose;
#[cfg(feature = "failure")]
pub mod dump;
pub mod evidence;
#[cfg(feature = "failure")]
mod fix;
pub mod flight;
pub mod in_job;
#[cfg(feature = "failure")]
pub mod iteration;
#[cfg(feature = "failure")]
pub mod line;
#[cfg(feature = "failure")]
pub mod log;
#[cfg(feature = "failure")]
pub mod pickle;

use serde::{Deserialize, Serialize};

#[cfg(feature = "failure")]
pub use diagnose::diagnose;
pub use evidence::{Event, EventKind, FileEvidence, LastOutput, file_rank, looks_like_pickle};

/// What the failure readers make of a set of files: the diagnosis, and each file at a glance
/// (its format and what was wrong with it). The browser's failure worker sends this to the page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub failure: Option<crate::report::Failure>,
    pub files: Vec<crate::import::file_import::FileSummary>,
    /// The straggler report of the files, when they hold training steps (step logs of
    /// lengths, a training log's iteration lines) and no per-rank times: the analysis worker
    /// of the browser hands such jobs here, where the verdict from step times alone is built.
    #[serde(default)]
    pub report: Option<crate::report::Report>,
}

/// The [`Reading`] of imported files (their evidence moved, not copied: 4096 dumps' worth), with
/// a straggler report when they hold training steps without per-rank times.
#[cfg(feature = "failure")]
pub fn reading(imports: Vec<crate::import::file_import::FileImport>) -> Reading {
    let files: Vec<_> = imports.iter().map(crate::import::file_import::FileImport::summary).collect();
    let has_steps = imports.iter().any(|i| {
        !i.workers.is_empty()
            || i.failure.as_ref().is_some_and(|e| !e.iterations.is_empty() || !e.rank_extremes.is_empty())
    });
    let untimed = !imports.iter().flat_map(|i| &i.workers).any(crate::model::Worker::has_breakdown);
    if has_steps && untimed {
        let assembled = crate::import::assemble_owned(imports);
        let report = crate::analysis::diagnose(&assembled, &files);
        return Reading { failure: report.failure.clone(), files, report: Some(report) };
    }
    let evidence: Vec<FileEvidence> = imports.into_iter().filter_map(|i| i.failure).collect();
    Reading { failure: diagnose(&evidence), files, report: None }
}

//! Failed jobs: what torchrun consoles, per-rank logs, elastic error files and PyTorch Flight
//! Recorder dumps say about a failure, and the diagnosis drawn from them (which rank initiated
//! it, which ranks only failed because they waited for it, the cause, the fix).
//!
//! The importers turn each file into one [`FileEvidence`] (a log through [`log`], a dump through
//! [`flight`]); [`diagnose`] reads every file's evidence together and writes the report's
//! [`Failure`](crate::report::Failure). Ranks are global ranks wherever the inputs say so: NCCL's
//! own `[Rank N]` is a rank within a process group and is kept apart ([`Event::pg_rank`]).

pub mod clock;
pub mod diagnose;
mod fix;
pub mod flight;
pub mod line;
pub mod log;
pub mod pickle;

use serde::{Deserialize, Serialize};

pub use diagnose::diagnose;

/// What one file says about a failure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileEvidence {
    pub file: String,
    /// The global rank the whole file belongs to, where its name or layout says
    /// (`nccl_trace_rank_3`, `rank3.log`, torchrun's `attempt_0/3/stderr.log` on one node).
    pub file_rank: Option<u32>,
    /// In line order. Bounded: past [`log::MAX_EVENTS`] they are counted in `events_dropped`.
    pub events: Vec<Event>,
    pub events_dropped: u64,
    /// Global ranks that wrote lines to this file (from `[rankN]:`-style prefixes), sorted.
    pub ranks_seen: Vec<u32>,
    /// Lines read (logs) or 0 (dumps).
    pub lines: u64,
    /// The Flight Recorder dump, when the file is one.
    pub flight: Option<flight::Dump>,
}

impl FileEvidence {
    /// True when the file holds anything the diagnosis reads.
    pub fn has_evidence(&self) -> bool {
        !self.events.is_empty() || self.flight.is_some()
    }
}

/// One line (or block) of a log that matters to a failure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// 1-based line number in the file (0 when the event is not from a line).
    pub line: u64,
    /// The global rank, from the line's prefix (`[rank3]:`, `[default3]:`, `3: `), a torchrun
    /// failure block's `rank :` field, or the file's rank.
    pub rank: Option<u32>,
    /// The rank NCCL names (`[Rank N]`, `[PG ID … Rank N]`): within `pg`, not global.
    pub pg_rank: Option<u32>,
    /// The process group the message is about (`0`, or `0(default_pg)`), when it says.
    pub pg: Option<String>,
    /// Nanoseconds since the start of the line's year ([`clock`]), when the line has a time.
    pub time_ns: Option<i64>,
    pub kind: EventKind,
    /// The line as shown to the user: prefixes kept, colours and carriage returns removed,
    /// cut at [`line::MAX_TEXT`] characters.
    pub text: String,
    /// Where the exception was raised (`train.py:42 in step`), from the traceback above it.
    pub at: Option<String>,
}

/// What a line says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// A collective timed out (NCCL watchdog or blocking wait, gloo): a waiter's symptom.
    Timeout { seq: Option<u64>, op: Option<String>, numel_in: Option<u64>, numel_out: Option<u64> },
    /// The NCCL watchdog's process-group status: how far this rank had issued collectives.
    Progress { failed_seq: Option<u64>, last_enqueued: u64, last_completed: Option<u64> },
    /// "Received a dump signal … from rank N": N only detected a timeout first (the last
    /// writer of a store key), never the culprit; the line also says this rank's progress.
    DumpSignal { from_rank: Option<u32>, last_enqueued: Option<u64>, last_completed: Option<u64> },
    /// The NCCL watchdog thread itself hung.
    WatchdogStuck,
    /// `TORCH_DISTRIBUTED_DEBUG=DETAIL` found ranks calling different collectives.
    Mismatch,
    /// This rank's collective received data of another size than it expected (gloo's
    /// "Is there a distributed collective mismatch in your code?"): it called something else.
    WrongCollective,
    /// A peer went away (connection closed or reset, a remote NCCL error): a victim's symptom.
    PeerLost,
    /// A process ran out of (GPU or host) memory.
    OutOfMemory,
    /// A network or NCCL transport failure on this rank.
    Network,
    /// An exception that is none of the above: the rank failed on its own.
    Exception { name: String },
    /// A worker process ended (torchrun's failure report or exit lines).
    Exit {
        exitcode: i32,
        signal: Option<String>,
        local_rank: Option<u32>,
        root_cause: bool,
        /// The rank's error file as the block names it (its folder holds the rank's logs).
        error_file: Option<String>,
    },
    /// The agent stopped a worker because another failed (SIGTERM from torchrun).
    TornDown,
}

impl EventKind {
    /// Symptoms of waiting on or losing another rank, never a cause of their own.
    pub fn is_collateral(&self) -> bool {
        match self {
            EventKind::Timeout { .. }
            | EventKind::Progress { .. }
            | EventKind::DumpSignal { .. }
            | EventKind::PeerLost
            | EventKind::TornDown => true,
            EventKind::Exit { exitcode, signal, .. } => exit_is_collateral(*exitcode, signal.as_deref()),
            _ => false,
        }
    }
}

/// SIGTERM (and SIGINT) are what the agent sends the survivors; a clean exit is not a failure.
fn exit_is_collateral(exitcode: i32, signal: Option<&str>) -> bool {
    exitcode == 0 || exitcode == -15 || exitcode == -2 || matches!(signal, Some("SIGTERM" | "SIGINT"))
}

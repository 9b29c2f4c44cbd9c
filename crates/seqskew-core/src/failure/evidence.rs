//! What one file says about a failure: the model every failure reader writes and the diagnosis
//! reads (and the importers keep, per file). Below both, so that neither reaches into the other.

use serde::{Deserialize, Serialize};

use super::flight;

/// True when the bytes start like a pickle of protocol 2..=5 (0x80 then 2..=5): what a Flight
/// Recorder dump starts with (the sniffer's test).
pub fn looks_like_pickle(prefix: &[u8]) -> bool {
    matches!(prefix, [0x80, 2..=5, ..])
}

/// What one file says about a failure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileEvidence {
    pub file: String,
    /// The global rank the whole file belongs to, where its name or layout says
    /// (`nccl_trace_rank_3`, `rank3.log`, torchrun's `attempt_0/3/stderr.log` on one node).
    pub file_rank: Option<u32>,
    /// In line order. Bounded: past [`log::MAX_EVENTS`](super::log::MAX_EVENTS) they are counted in `events_dropped`.
    pub events: Vec<Event>,
    pub events_dropped: u64,
    /// Global ranks that wrote lines to this file (from `[rankN]:`-style prefixes), sorted.
    pub ranks_seen: Vec<u32>,
    /// Lines read (logs) or 0 (dumps).
    pub lines: u64,
    /// Each rank's last line of its own output (not a failure message or a traceback), sorted
    /// by rank; the rank is `None` for lines without a prefix (the file's rank, if any).
    #[serde(default)]
    pub last_output: Vec<LastOutput>,
    /// The Flight Recorder dump, when the file is one.
    pub flight: Option<flight::Dump>,
    /// The training iterations the log reports (Megatron-LM, torchtitan), in line order.
    /// Bounded: past [`MAX_ITERATIONS`] they are counted in `iterations_dropped`.
    #[serde(default)]
    pub iterations: Vec<Iteration>,
    #[serde(default)]
    pub iterations_dropped: u64,
    /// Megatron-LM's straggler lines (`--log-straggler`): the fastest and slowest rank of an
    /// interval, in line order (bounded like `iterations`).
    #[serde(default)]
    pub rank_extremes: Vec<RankExtremes>,
    /// Progress lines skipped because their values do not parse: the first
    /// [`MAX_UNREADABLE`] in line order, and how many there were in all.
    #[serde(default)]
    pub unreadable: Vec<UnreadableLine>,
    #[serde(default)]
    pub unreadable_lines: u64,
}

/// Unreadable lines kept per file: those its diagnostics name by line number.
pub const MAX_UNREADABLE: usize = 5;

/// Iteration lines kept per file (a line each log interval: years of training).
pub const MAX_ITERATIONS: usize = 1 << 20;

/// Which training framework wrote an iteration line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrainingLog {
    /// Megatron-LM's `training_log`: ` [time] iteration N/ M | … | elapsed time per iteration (ms): … |`.
    Megatron,
    /// torchtitan's metrics line: `step: N  loss: …  memory: …  tps: …`.
    Torchtitan,
    /// DeepSpeed's pipeline engine: `steps: N loss: … iter time (s): … samples/sec: …`.
    DeepSpeed,
    /// A tqdm progress bar (Hugging Face `Trainer`, accelerate): `| N/M [00:05<01:30, 2.10it/s]`.
    Tqdm,
    /// DeepSpeed's wall-clock breakdown: `time (ms) | fwd: … | bwd: … | step: …` (steps counted).
    DeepSpeedTimers,
    /// DeepSpeed's throughput timer: `epoch=E/micro_step=M/global_step=N, …SamplesPerSec=…`.
    DeepSpeedThroughput,
    /// Hugging Face `Trainer`'s run summary: `{'train_runtime': …, 'train_steps_per_second': …}`.
    HfTrainer,
}

impl TrainingLog {
    /// What its lines are called in a file's diagnostic.
    pub fn lines_name(self) -> &'static str {
        match self {
            TrainingLog::Megatron => "Megatron-LM iteration",
            TrainingLog::Torchtitan => "torchtitan step",
            TrainingLog::DeepSpeed => "DeepSpeed step",
            TrainingLog::Tqdm => "progress-bar",
            TrainingLog::DeepSpeedTimers => "DeepSpeed timer",
            TrainingLog::DeepSpeedThroughput => "DeepSpeed throughput",
            TrainingLog::HfTrainer => "Hugging Face run-summary",
        }
    }
}

/// One training-progress line: the iteration it reports and what it says of time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    /// 1-based line number in the file.
    pub line: u64,
    /// The global rank, from the line's prefix or the file's name.
    pub rank: Option<u32>,
    pub form: TrainingLog,
    /// The step the line reports, as the framework counts it (Megatron: iterations done).
    pub step: u64,
    /// The line's time stamp ([`clock`](super::clock)'s nanoseconds), when it has one.
    pub time_ns: Option<i64>,
    /// The log's own time per iteration (Megatron: the mean over the iterations since its
    /// previous line), when it prints one.
    pub step_ns: Option<u64>,
    /// The first step `step_ns` covers, when the line says (a run's summary: 1); otherwise the
    /// step after its source's previous line.
    #[serde(default)]
    pub covers_from: Option<u64>,
}

/// A line in a training-log form whose values do not parse: skipped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnreadableLine {
    /// 1-based line number in the file.
    pub line: u64,
    pub why: String,
}

/// A Megatron-LM straggler line: of one log interval, the fastest and the slowest rank by
/// their time in the traced regions per iteration (`MnRtt/Rnk`, `MxRtt/Rnk`: the forward pass).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankExtremes {
    pub line: u64,
    pub time_ns: Option<i64>,
    pub fastest_rank: u32,
    pub fastest_ns: u64,
    pub slowest_rank: u32,
    pub slowest_ns: u64,
}

impl FileEvidence {
    /// True when the file holds anything the diagnosis reads.
    pub fn has_evidence(&self) -> bool {
        !self.events.is_empty() || self.flight.is_some()
    }
}

/// The last line a rank printed of its own: what it was doing when it went silent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LastOutput {
    pub rank: Option<u32>,
    /// 1-based line number in the file.
    pub line: u64,
    pub text: String,
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
    /// Nanoseconds since the start of the line's year ([`clock`](super::clock)), when the line has a time.
    pub time_ns: Option<i64>,
    pub kind: EventKind,
    /// The line as shown to the user: prefixes kept, colours and carriage returns removed,
    /// cut at [`line::MAX_TEXT`](super::line::MAX_TEXT) characters.
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

/// The rank a file's name or place says: `nccl_trace_rank_3`, `rank3.log`, `rank-3.txt`,
/// `worker_3.err`, or torchrun's `--log-dir` layout `attempt_0/3/stderr.log` (a local rank,
/// equal to the global one on a single node).
pub fn file_rank(path: &str) -> Option<u32> {
    let mut parts = path.rsplit(['/', '\\']);
    let name = parts.next()?;
    let parent = parts.next();
    let grandparent = parts.next();
    if let (Some(dir), Some(attempt)) = (parent, grandparent)
        && attempt.starts_with("attempt_")
        && let Ok(rank) = dir.parse()
    {
        return Some(rank);
    }
    let stem = name.split('.').next()?;
    let lower = stem.to_ascii_lowercase();
    for marker in ["rank", "worker", "proc"] {
        if let Some(at) = lower.rfind(marker) {
            let tail = lower.get(at + marker.len()..)?.trim_start_matches(['_', '-']);
            if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
                return tail.parse().ok();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_ranks_from_file_layouts() {
        let cases = [
            ("/tmp/nccl_trace_rank_3", Some(3)),
            ("logs/rank12.log", Some(12)),
            ("logs/rank-2.txt.gz", Some(2)),
            ("run/attempt_0/5/stderr.log", Some(5)),
            ("worker_7.err", Some(7)),
            ("console.log", None),
            ("ranks.txt", None),
        ];
        for (path, rank) in cases {
            assert_eq!(file_rank(path), rank, "{path}");
        }
    }
}

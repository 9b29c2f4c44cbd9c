//! The model of a PyTorch Flight Recorder dump (versions 2.3 to 2.10), as [`super::dump`]
//! reads it from the pickle written on a timeout or the JSON form of `_dump_nccl_trace_json` /
//! `_dump_fr_trace_json`.
//!
//! Only what the diagnosis reads is kept: each process group's members and progress, and the
//! entries at the tail of the ring (the collectives in flight when the job stopped and a few
//! completed ones before them), so 4096 ranks of 2000-entry dumps stay small.

use serde::{Deserialize, Serialize};

/// One rank's dump.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dump {
    pub version: String,
    /// Every process group this rank belongs to, sorted by name.
    pub groups: Vec<Group>,
    /// Sorted by group, then sequence number.
    pub entries: Vec<Entry>,
    /// Entries in the dump, before the tail was kept.
    pub total_entries: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// `pg_config`'s name (`"0"` is the default group).
    pub name: String,
    pub desc: String,
    /// The group's global ranks, in group order (a group rank is an index into this).
    pub ranks: Vec<u32>,
    /// The local id `pg_status` and entries use for the group, where the dump says.
    pub pg_id: Option<i64>,
    /// `pg_status` (or, without it, the entries' highest sequence numbers).
    pub last_enqueued: Option<i64>,
    pub last_started: Option<i64>,
    pub last_completed: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub record_id: i64,
    /// The group's name (`process_group[0]`).
    pub group: String,
    pub collective_seq_id: i64,
    pub p2p_seq_id: i64,
    pub is_p2p: bool,
    /// `nccl:all_reduce`, `gloo:broadcast`, `nccl:send 1->2` …
    pub profiling_name: String,
    /// `[[3, 4]] Float`: input sizes and dtypes, what the ranks of one collective must agree on.
    pub input: String,
    pub output: String,
    pub state: String,
    pub time_created_ns: i64,
    pub timeout_ms: Option<i64>,
    /// Innermost first: `all_reduce at …/distributed_c10d.py:2696`.
    pub frames: Vec<String>,
}

/// True when JSON content's first bytes look like a dump (`_dump_nccl_trace_json`).
pub fn looks_like_json_dump(head: &[u8]) -> bool {
    let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
    // serde-written dumps sort their keys: `entries` (and the fields of its first entry) come
    // before `pg_config` and `version`.
    has(b"\"pg_config\"")
        || (has(b"\"entries\"")
            && [&b"\"version\""[..], b"\"pg_status\"", b"\"collective_seq_id\"", b"\"profiling_name\""]
                .iter()
                .any(|n| has(n)))
}

//! PyTorch Flight Recorder dumps (versions 2.3 to 2.10): the pickle written on a timeout and
//! the JSON form of `_dump_nccl_trace_json` / `_dump_fr_trace_json`, read into one small model.
//!
//! Only what the diagnosis reads is kept: each process group's members and progress, and the
//! entries at the tail of the ring (the collectives in flight when the job stopped and a few
//! completed ones before them), so 4096 ranks of 2000-entry dumps stay small.

use serde::{Deserialize, Serialize};

use super::pickle::Value;

/// Completed entries kept per process group before the first one still in flight.
const COMPLETED_KEPT: usize = 8;
/// Entries kept per process group at most (a ring of stuck entries is cut to its start).
const ENTRIES_KEPT: usize = 64;
/// Stack frames kept per entry.
const FRAMES_KEPT: usize = 6;

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

/// An integer, also when written as a string (the JSON form's `pg_status`).
fn int(value: Option<&Value>) -> Option<i64> {
    let value = value?;
    value.as_i64().or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
}

fn text(value: Option<&Value>) -> String {
    value.and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// `"[0, 1, 2]"` (pg_config writes the ranks as a string) or a list.
fn ranks(value: Option<&Value>) -> Vec<u32> {
    match value {
        Some(Value::Str(s)) => {
            s.trim_matches(|c| c == '[' || c == ']').split(',').filter_map(|r| r.trim().parse().ok()).collect()
        }
        Some(list) => list.items().iter().filter_map(|r| r.as_i64().and_then(|r| u32::try_from(r).ok())).collect(),
        None => Vec::new(),
    }
}

/// A compact rendering of a size/dtype list: `[[3, 4]]`, `Float`.
fn render(value: Option<&Value>) -> String {
    fn go(value: &Value, out: &mut String, budget: &mut usize) {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        match value {
            Value::List(items) | Value::Tuple(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    go(item, out, budget);
                }
                out.push(']');
            }
            Value::Int(i) => out.push_str(&i.to_string()),
            Value::Str(s) => out.push_str(s),
            Value::Float(f) => out.push_str(&f.to_string()),
            _ => out.push('?'),
        }
    }
    let mut out = String::new();
    if let Some(value) = value {
        go(value, &mut out, &mut 256);
    }
    out
}

/// The default group is named `0`; some dumps (gloo, torch 2.10) name it `""` in `pg_config`.
fn group_name(name: &str) -> String {
    if name.is_empty() { "0".to_owned() } else { name.to_owned() }
}

fn entry(value: &Value) -> Entry {
    let group = value.get("process_group").and_then(|pg| pg.items().first()).map(|n| group_name(&text(Some(n))));
    let frames = value
        .get("frames")
        .map(Value::items)
        .unwrap_or_default()
        .iter()
        .take(FRAMES_KEPT)
        .map(|f| format!("{} at {}:{}", text(f.get("name")), text(f.get("filename")), int(f.get("line")).unwrap_or(0)))
        .collect();
    let io = |sizes: &str, dtypes: &str| {
        format!("{} {}", render(value.get(sizes)), render(value.get(dtypes))).trim().to_owned()
    };
    Entry {
        record_id: int(value.get("record_id")).unwrap_or(-1),
        group: group.unwrap_or_else(|| int(value.get("pg_id")).map(|id| id.to_string()).unwrap_or_default()),
        collective_seq_id: int(value.get("collective_seq_id")).unwrap_or(-1),
        p2p_seq_id: int(value.get("p2p_seq_id")).unwrap_or(-1),
        is_p2p: value.get("is_p2p").and_then(Value::as_bool).unwrap_or(false),
        profiling_name: text(value.get("profiling_name")),
        input: io("input_sizes", "input_dtypes"),
        output: io("output_sizes", "output_dtypes"),
        state: text(value.get("state")),
        time_created_ns: int(value.get("time_created_ns")).unwrap_or(0),
        timeout_ms: int(value.get("timeout_ms")),
        frames,
    }
}

/// Reads a decoded dump (pickle or JSON). The error says why the value is not one.
pub fn read(value: &Value) -> Result<Dump, String> {
    if value.entries().is_empty() {
        return Err("not a Flight Recorder dump: the top level is not a dictionary".into());
    }
    if value.get("entries").is_none() && value.get("pg_config").is_none() {
        return Err("not a Flight Recorder dump: no `entries` and no `pg_config`".into());
    }
    let version = match value.get("version") {
        Some(Value::Str(v)) => v.clone(),
        Some(other) => render(Some(other)),
        None => String::new(),
    };
    let all: Vec<Entry> = value.get("entries").map(Value::items).unwrap_or_default().iter().map(entry).collect();
    let total_entries = all.len();

    let status = value.get("pg_status");
    let mut groups: Vec<Group> = value
        .get("pg_config")
        .map(Value::entries)
        .unwrap_or_default()
        .iter()
        .map(|(key, config)| Group {
            name: group_name(config.get("name").and_then(Value::as_str).or(key.as_str()).unwrap_or_default()),
            desc: text(config.get("desc")),
            ranks: ranks(config.get("ranks")),
            ..Group::default()
        })
        .collect();
    // Groups the entries use but pg_config does not name (old dumps).
    for e in &all {
        if !groups.iter().any(|g| g.name == e.group) {
            groups.push(Group { name: e.group.clone(), ..Group::default() });
        }
    }
    // pg_status is keyed by the local pg_id; entries name both the id and the group.
    let entry_values = value.get("entries").map(Value::items).unwrap_or_default();
    for group in &mut groups {
        group.pg_id = entry_values.iter().find_map(|v| {
            let pg = v.get("process_group")?.items();
            let name = group_name(pg.first().and_then(Value::as_str)?);
            (name == group.name).then(|| int(v.get("pg_id"))).flatten()
        });
        let key = group.pg_id.map_or_else(|| group.name.clone(), |id| id.to_string());
        let progress = status.and_then(|s| s.get(&key));
        let mine = || all.iter().filter(|e| e.group == group.name && !e.is_p2p);
        group.last_enqueued = int(progress.and_then(|p| p.get("last_enqueued_collective")))
            .or_else(|| mine().map(|e| e.collective_seq_id).max());
        group.last_started = int(progress.and_then(|p| p.get("last_started_collective")));
        group.last_completed = int(progress.and_then(|p| p.get("last_completed_collective")))
            .or_else(|| mine().filter(|e| e.state == "completed").map(|e| e.collective_seq_id).max());
    }
    for group in &mut groups {
        if group.desc.is_empty() {
            let described = entry_values.iter().find_map(|v| {
                let pg = v.get("process_group")?.items();
                (group_name(pg.first()?.as_str()?) == group.name).then(|| text(pg.get(1)))
            });
            group.desc = described.unwrap_or_default();
        }
    }
    groups.sort_by(|a, b| a.name.cmp(&b.name));

    Ok(Dump { version, groups, entries: tail(all), total_entries })
}

/// Per group: the entries not completed and the few completed ones before them.
fn tail(mut all: Vec<Entry>) -> Vec<Entry> {
    all.sort_by(|a, b| (&a.group, a.record_id).cmp(&(&b.group, b.record_id)));
    let mut kept = Vec::new();
    for group in all.chunk_by(|a, b| a.group == b.group) {
        let first_open = group.iter().position(|e| e.state != "completed").unwrap_or(group.len());
        let from = first_open.saturating_sub(COMPLETED_KEPT);
        kept.extend(group.iter().skip(from).take(ENTRIES_KEPT).cloned());
    }
    kept.sort_by(|a, b| {
        (&a.group, a.collective_seq_id, a.record_id).cmp(&(&b.group, b.collective_seq_id, b.record_id))
    });
    kept
}

/// A JSON document as a pickle [`Value`], so both forms are read by one [`read`].
pub fn from_json(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::None,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => n.as_i64().map_or_else(|| Value::Float(n.as_f64().unwrap_or(0.0)), Value::Int),
        serde_json::Value::String(s) => Value::Str(s.clone()),
        serde_json::Value::Array(items) => Value::List(items.iter().map(from_json).collect()),
        serde_json::Value::Object(map) => {
            Value::Dict(map.iter().map(|(k, v)| (Value::Str(k.clone()), from_json(v))).collect())
        }
    }
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

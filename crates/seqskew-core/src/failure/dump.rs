//! Reading a Flight Recorder dump (a decoded pickle, or JSON) into the [`flight`] model.

use super::flight::{Dump, Entry, Group};
use super::pickle::Value;

/// Completed entries kept per process group before the first one still in flight.
const COMPLETED_KEPT: usize = 8;
/// Entries kept per process group at most (a ring of stuck entries is cut to its start).
const ENTRIES_KEPT: usize = 64;
/// Stack frames kept per entry.
const FRAMES_KEPT: usize = 6;

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
    let entry_values = value.get("entries").map(Value::items).unwrap_or_default();
    let all: Vec<Head> = entry_values.iter().enumerate().map(|(index, v)| head(index, v)).collect();
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
            .or_else(|| mine().filter(|e| e.completed).map(|e| e.collective_seq_id).max());
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

    let entries = tail(all).into_iter().filter_map(|i| entry_values.get(i)).map(entry).collect();
    Ok(Dump { version, groups, entries, total_entries })
}

/// What choosing the tail needs of an entry: read for all of them, while only the kept ones
/// are read whole (frames, sizes), since a ring holds thousands.
struct Head {
    index: usize,
    group: String,
    record_id: i64,
    collective_seq_id: i64,
    is_p2p: bool,
    completed: bool,
}

fn head(index: usize, value: &Value) -> Head {
    let group = value.get("process_group").and_then(|pg| pg.items().first()).map(|n| group_name(&text(Some(n))));
    Head {
        index,
        group: group.unwrap_or_else(|| int(value.get("pg_id")).map(|id| id.to_string()).unwrap_or_default()),
        record_id: int(value.get("record_id")).unwrap_or(-1),
        collective_seq_id: int(value.get("collective_seq_id")).unwrap_or(-1),
        is_p2p: value.get("is_p2p").and_then(Value::as_bool).unwrap_or(false),
        completed: value.get("state").and_then(Value::as_str) == Some("completed"),
    }
}

/// Per group: the entries not completed and the few completed ones before them (their indexes).
fn tail(mut all: Vec<Head>) -> Vec<usize> {
    all.sort_by(|a, b| (&a.group, a.record_id).cmp(&(&b.group, b.record_id)));
    let mut kept: Vec<&Head> = Vec::new();
    for group in all.chunk_by(|a, b| a.group == b.group) {
        let first_open = group.iter().position(|e| !e.completed).unwrap_or(group.len());
        let from = first_open.saturating_sub(COMPLETED_KEPT);
        kept.extend(group.iter().skip(from).take(ENTRIES_KEPT));
    }
    kept.sort_by(|a, b| {
        (&a.group, a.collective_seq_id, a.record_id).cmp(&(&b.group, b.collective_seq_id, b.record_id))
    });
    kept.into_iter().map(|h| h.index).collect()
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

//! Reading a Flight Recorder dump into the [`flight`] model, keeping each process group's tail.
//!
//! One reader serves both forms of a dump: it reads through [`DumpValue`], which the pickle
//! decoder's views ([`pickle::Node`]) and `serde_json::Value`s both implement, so neither form
//! is copied into the other's shape, and text stays borrowed until the model keeps it. Every
//! entry's dict is read in one pass over its pairs (`Fields`) for what choosing the tail and
//! describing the groups need; only the entries kept are read again for the rest (frames,
//! sizes), since a ring holds thousands. What the entries say of their groups is gathered in one
//! pass too, so a dump costs its entries plus its groups, never their product.
//!
//! [`flight`]: super::flight

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::flight::{Dump, Entry, Group};
use super::pickle;

/// Completed entries kept per process group before the first one still in flight.
const COMPLETED_KEPT: usize = 8;
/// Entries kept per process group at most (a ring of stuck entries is cut to its start).
const ENTRIES_KEPT: usize = 64;
/// Stack frames kept per entry.
const FRAMES_KEPT: usize = 6;
/// Values [`render`] writes at most: sizes and dtypes are short, a hostile list need not be.
const RENDERED: usize = 256;

/// A value of a decoded dump as the reader reads it, whichever form the dump came in: a copyable
/// view whose text borrows the decoded document (`'t`).
pub trait DumpValue<'t>: Copy {
    fn as_str(self) -> Option<&'t str>;
    fn as_i64(self) -> Option<i64>;
    /// An integer or a float as f64.
    fn as_f64(self) -> Option<f64>;
    fn as_bool(self) -> Option<bool>;
    /// A list's (or tuple's) elements; `None` for anything else.
    fn sequence(self) -> Option<impl Iterator<Item = Self>>;
    /// A dict's pairs, each with its key when that is a string; `None` for anything else.
    fn pairs(self) -> Option<impl Iterator<Item = (Option<&'t str>, Self)>>;
    /// The value under `key` in a dict. A pickle can set one key twice: the last pair wins, as
    /// in Python's dict.
    fn get(self, key: &str) -> Option<Self> {
        self.pairs()?.filter(|(k, _)| *k == Some(key)).last().map(|(_, v)| v)
    }
}

impl<'t> DumpValue<'t> for pickle::Node<'t> {
    fn as_str(self) -> Option<&'t str> {
        pickle::Node::as_str(self)
    }
    fn as_i64(self) -> Option<i64> {
        pickle::Node::as_i64(self)
    }
    fn as_f64(self) -> Option<f64> {
        pickle::Node::as_f64(self)
    }
    fn as_bool(self) -> Option<bool> {
        pickle::Node::as_bool(self)
    }
    fn sequence(self) -> Option<impl Iterator<Item = Self>> {
        match self.value() {
            pickle::Value::List(items) | pickle::Value::Tuple(items) => Some(items),
            _ => None,
        }
    }
    fn pairs(self) -> Option<impl Iterator<Item = (Option<&'t str>, Self)>> {
        match self.value() {
            pickle::Value::Dict(entries) => Some(entries.map(|(key, value)| (key.as_str(), value))),
            _ => None,
        }
    }
}

/// The JSON form (`_dump_nccl_trace_json`), as `serde_json` parses it.
impl<'t> DumpValue<'t> for &'t serde_json::Value {
    fn as_str(self) -> Option<&'t str> {
        serde_json::Value::as_str(self)
    }
    fn as_i64(self) -> Option<i64> {
        serde_json::Value::as_i64(self)
    }
    fn as_f64(self) -> Option<f64> {
        serde_json::Value::as_f64(self)
    }
    fn as_bool(self) -> Option<bool> {
        serde_json::Value::as_bool(self)
    }
    fn sequence(self) -> Option<impl Iterator<Item = Self>> {
        self.as_array().map(|items| items.iter())
    }
    fn pairs(self) -> Option<impl Iterator<Item = (Option<&'t str>, Self)>> {
        self.as_object().map(|map| map.iter().map(|(key, value)| (Some(key.as_str()), value)))
    }
    /// A JSON object's keys are unique: looked up, not searched.
    fn get(self, key: &str) -> Option<Self> {
        self.as_object()?.get(key)
    }
}

/// An integer, also when written as a string (the JSON form's `pg_status`).
fn int<'t, V: DumpValue<'t>>(value: Option<V>) -> Option<i64> {
    let value = value?;
    value.as_i64().or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
}

fn text<'t, V: DumpValue<'t>>(value: Option<V>) -> &'t str {
    value.and_then(V::as_str).unwrap_or_default()
}

/// `"[0, 1, 2]"` (pg_config writes the ranks as a string) or a list.
fn ranks<'t, V: DumpValue<'t>>(value: Option<V>) -> Vec<u32> {
    let Some(value) = value else { return Vec::new() };
    if let Some(s) = value.as_str() {
        return remembered_rank_text(s);
    }
    let items = value.sequence().into_iter().flatten();
    items.filter_map(|r| r.as_i64().and_then(|r| u32::try_from(r).ok())).collect()
}

/// Distinct member lists a thread remembers ([`RANK_LISTS`]).
const LISTS_REMEMBERED: usize = 16;
/// Lists shorter than this (in bytes of text) are parsed again rather than looked up.
const LIST_WORTH_REMEMBERING: usize = 256;

thread_local! {
    /// The member lists of the dumps last read on this thread, by their text, the latest
    /// first. Every rank's dump repeats its job's `pg_config` (in a 4096-rank job, 4096
    /// lists of 4096 ranks in each dump), so a thread reading a job's dumps parses each
    /// distinct list once rather than once per dump. Only a cache: what [`rank_text`] gives.
    static RANK_LISTS: RefCell<VecDeque<(Box<str>, Vec<u32>)>> = const { RefCell::new(VecDeque::new()) };
}

/// [`rank_text`], of a list this thread has seen lately from memory.
fn remembered_rank_text(text: &str) -> Vec<u32> {
    if text.len() < LIST_WORTH_REMEMBERING {
        return rank_text(text);
    }
    RANK_LISTS.with(|lists| {
        let Ok(mut lists) = lists.try_borrow_mut() else { return rank_text(text) };
        let seen = lists.iter().position(|(key, _)| **key == *text).and_then(|at| lists.remove(at));
        let (key, ranks) = seen.unwrap_or_else(|| (text.into(), rank_text(text)));
        let answer = ranks.clone();
        lists.truncate(LISTS_REMEMBERED - 1);
        lists.push_front((key, ranks));
        answer
    })
}

/// The ranks in `"[0, 1, 2]"`, read a byte at a time: a 4096-rank job's dumps hold 4096 of
/// these lists of 4096. A piece that is not a decimal number is skipped.
fn rank_text(text: &str) -> Vec<u32> {
    let inner = text.trim_matches(|c| c == '[' || c == ']').as_bytes();
    let mut ranks = Vec::with_capacity(1 + inner.iter().filter(|&&b| b == b',').count());
    ranks.extend(inner.split(|&b| b == b',').filter_map(decimal));
    ranks
}

/// Digits, spaces around them allowed, as a u32.
fn decimal(piece: &[u8]) -> Option<u32> {
    let digits = piece.trim_ascii();
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0_u32, |n, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        n.checked_mul(10)?.checked_add(digit.into())
    })
}

/// A compact rendering of a size/dtype list: `[[3, 4]]`, `Float`.
fn render<'t, V: DumpValue<'t>>(value: Option<V>) -> String {
    let (mut out, mut budget) = (String::new(), RENDERED);
    if let Some(value) = value {
        render_into(value, &mut out, &mut budget);
    }
    out
}

/// Writes `value`, spending one of `budget` per value (which also bounds the recursion).
fn render_into<'t, V: DumpValue<'t>>(value: V, out: &mut String, budget: &mut usize) {
    let Some(left) = budget.checked_sub(1) else { return };
    *budget = left;
    if let Some(items) = value.sequence() {
        out.push('[');
        for (i, item) in items.enumerate() {
            if *budget == 0 {
                break;
            }
            if i > 0 {
                out.push_str(", ");
            }
            render_into(item, out, budget);
        }
        out.push(']');
    } else if let Some(i) = value.as_i64() {
        out.push_str(&i.to_string());
    } else if let Some(s) = value.as_str() {
        out.push_str(s);
    } else if let Some(f) = value.as_f64() {
        out.push_str(&f.to_string());
    } else {
        out.push('?');
    }
}

/// The default group is named `0`; some dumps (gloo, torch 2.10) name it `""` in `pg_config`.
fn group_name(name: &str) -> &str {
    if name.is_empty() { "0" } else { name }
}

/// Reads a decoded dump: a pickle's root ([`pickle::Tree::root`]) or a JSON document. The error
/// says why the value is not a dump.
pub fn read<'t, V: DumpValue<'t>>(dump: V) -> Result<Dump, String> {
    if dump.pairs().is_none_or(|mut pairs| pairs.next().is_none()) {
        return Err("not a Flight Recorder dump: the top level is not a dictionary".into());
    }
    let (entries, config) = (dump.get("entries"), dump.get("pg_config"));
    if entries.is_none() && config.is_none() {
        return Err("not a Flight Recorder dump: no `entries` and no `pg_config`".into());
    }
    let heads: Vec<Head<'t, V>> = match entries.and_then(V::sequence) {
        Some(entries) => entries.map(head).collect(),
        None => Vec::new(),
    };
    let said = gather(&heads);

    let mut groups: Vec<Group> = config
        .and_then(V::pairs)
        .into_iter()
        .flatten()
        .map(|(key, config)| Group {
            name: group_name(config.get("name").and_then(V::as_str).or(key).unwrap_or_default()).to_owned(),
            desc: text(config.get("desc")).to_owned(),
            ranks: ranks(config.get("ranks")),
            ..Group::default()
        })
        .collect();
    // Groups the entries use but pg_config does not name (old dumps).
    let configured: BTreeSet<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    let unnamed: Vec<Group> = said
        .keys()
        .filter(|name| !configured.contains(*name))
        .map(|name| Group { name: (*name).to_owned(), ..Group::default() })
        .collect();
    groups.extend(unnamed);

    let status = dump.get("pg_status");
    for group in &mut groups {
        let said = said.get(group.name.as_str());
        group.pg_id = said.and_then(|s| s.pg_id);
        // pg_status is keyed by the local pg_id where the entries give one.
        let key = group.pg_id.map_or_else(|| group.name.clone(), |id| id.to_string());
        let progress = status.and_then(|s| s.get(&key));
        let progress = |field: &str| int(progress.and_then(|p| p.get(field)));
        group.last_enqueued = progress("last_enqueued_collective").or(said.and_then(|s| s.last_enqueued));
        group.last_started = progress("last_started_collective");
        group.last_completed = progress("last_completed_collective").or(said.and_then(|s| s.last_completed));
        if group.desc.is_empty() {
            group.desc = said.and_then(|s| s.desc).unwrap_or_default().to_owned();
        }
    }
    groups.sort_by(|a, b| a.name.cmp(&b.name));

    Ok(Dump {
        version: render(dump.get("version")),
        groups,
        entries: tail(&heads).into_iter().map(entry).collect(),
        total_entries: heads.len(),
    })
}

/// The fields of an entry's dict the reader uses, found in one pass over its pairs (the last
/// of a key wins, as in Python's dict).
struct Fields<V> {
    record_id: Option<V>,
    pg_id: Option<V>,
    process_group: Option<V>,
    collective_seq_id: Option<V>,
    p2p_seq_id: Option<V>,
    is_p2p: Option<V>,
    profiling_name: Option<V>,
    input_sizes: Option<V>,
    input_dtypes: Option<V>,
    output_sizes: Option<V>,
    output_dtypes: Option<V>,
    state: Option<V>,
    time_created_ns: Option<V>,
    timeout_ms: Option<V>,
    frames: Option<V>,
}

impl<'t, V: DumpValue<'t>> Fields<V> {
    fn of(entry: V) -> Self {
        let mut fields = Fields {
            record_id: None,
            pg_id: None,
            process_group: None,
            collective_seq_id: None,
            p2p_seq_id: None,
            is_p2p: None,
            profiling_name: None,
            input_sizes: None,
            input_dtypes: None,
            output_sizes: None,
            output_dtypes: None,
            state: None,
            time_created_ns: None,
            timeout_ms: None,
            frames: None,
        };
        // Not `pairs().into_iter().flatten()`: this loop runs for every pair of every entry
        // of a ring, and the flattening adaptor cost 7% of reading 4096 dumps natively.
        let Some(pairs) = entry.pairs() else { return fields };
        for (key, value) in pairs {
            let field = match key.unwrap_or_default() {
                "record_id" => &mut fields.record_id,
                "pg_id" => &mut fields.pg_id,
                "process_group" => &mut fields.process_group,
                "collective_seq_id" => &mut fields.collective_seq_id,
                "p2p_seq_id" => &mut fields.p2p_seq_id,
                "is_p2p" => &mut fields.is_p2p,
                "profiling_name" => &mut fields.profiling_name,
                "input_sizes" => &mut fields.input_sizes,
                "input_dtypes" => &mut fields.input_dtypes,
                "output_sizes" => &mut fields.output_sizes,
                "output_dtypes" => &mut fields.output_dtypes,
                "state" => &mut fields.state,
                "time_created_ns" => &mut fields.time_created_ns,
                "timeout_ms" => &mut fields.timeout_ms,
                "frames" => &mut fields.frames,
                _ => continue,
            };
            *field = Some(value);
        }
        fields
    }
}

/// What choosing the tail and describing the groups need of an entry, read for all of them;
/// the kept ones are then read again, whole.
struct Head<'t, V> {
    entry: V,
    /// `process_group[0]`'s name, else the `pg_id` as text.
    group: Cow<'t, str>,
    /// Where `process_group[0]` is a string (the name `pg_config` uses), `process_group[1]`:
    /// the group's description (empty without one).
    desc: Option<&'t str>,
    pg_id: Option<i64>,
    record_id: i64,
    collective_seq_id: i64,
    is_p2p: bool,
    completed: bool,
}

fn head<'t, V: DumpValue<'t>>(entry: V) -> Head<'t, V> {
    let fields = Fields::of(entry);
    let mut process_group = fields.process_group.and_then(V::sequence).into_iter().flatten();
    let (name, desc) = (process_group.next(), process_group.next());
    let group = match name {
        Some(name) => Cow::Borrowed(group_name(text(Some(name)))),
        None => int(fields.pg_id).map_or(Cow::Borrowed(""), |id| Cow::Owned(id.to_string())),
    };
    Head {
        group,
        desc: name.and_then(V::as_str).map(|_| text(desc)),
        pg_id: int(fields.pg_id),
        record_id: int(fields.record_id).unwrap_or(-1),
        collective_seq_id: int(fields.collective_seq_id).unwrap_or(-1),
        is_p2p: fields.is_p2p.and_then(V::as_bool).unwrap_or(false),
        completed: fields.state.and_then(V::as_str) == Some("completed"),
        entry,
    }
}

/// What the entries say of one group, for what `pg_config` and `pg_status` leave out.
#[derive(Default)]
struct Said<'t> {
    /// The first `pg_id` among the entries that name the group by its string name.
    pg_id: Option<i64>,
    /// The description the first entry naming the group gives.
    desc: Option<&'t str>,
    /// The highest sequence number of a collective (not a point-to-point operation).
    last_enqueued: Option<i64>,
    /// The same among completed collectives.
    last_completed: Option<i64>,
}

/// Each group the entries use, by name, with what they say of it.
fn gather<'h, 't, V: DumpValue<'t>>(heads: &'h [Head<'t, V>]) -> BTreeMap<&'h str, Said<'t>> {
    let mut said: BTreeMap<&str, Said<'t>> = BTreeMap::new();
    for head in heads {
        let group = said.entry(head.group.as_ref()).or_default();
        if let Some(desc) = head.desc {
            group.pg_id = group.pg_id.or(head.pg_id);
            group.desc = group.desc.or(Some(desc));
        }
        if !head.is_p2p {
            let seq = Some(head.collective_seq_id);
            group.last_enqueued = group.last_enqueued.max(seq);
            if head.completed {
                group.last_completed = group.last_completed.max(seq);
            }
        }
    }
    said
}

/// Per group: the entries not completed and the few completed ones before them, sorted by
/// group, then sequence number.
fn tail<'h, 't, V>(heads: &'h [Head<'t, V>]) -> Vec<&'h Head<'t, V>> {
    let mut all: Vec<&Head<'t, V>> = heads.iter().collect();
    all.sort_by(|a, b| (&a.group, a.record_id).cmp(&(&b.group, b.record_id)));
    let mut kept: Vec<&Head<'t, V>> = Vec::new();
    for group in all.chunk_by(|a, b| a.group == b.group) {
        let first_open = group.iter().position(|e| !e.completed).unwrap_or(group.len());
        let from = first_open.saturating_sub(COMPLETED_KEPT);
        kept.extend(group.iter().skip(from).take(ENTRIES_KEPT));
    }
    kept.sort_by(|a, b| {
        (&a.group, a.collective_seq_id, a.record_id).cmp(&(&b.group, b.collective_seq_id, b.record_id))
    });
    kept
}

fn entry<'t, V: DumpValue<'t>>(head: &Head<'t, V>) -> Entry {
    let fields = Fields::of(head.entry);
    let frames = fields.frames.and_then(V::sequence).into_iter().flatten().take(FRAMES_KEPT);
    let frame =
        |f: V| format!("{} at {}:{}", text(f.get("name")), text(f.get("filename")), int(f.get("line")).unwrap_or(0));
    let io = |sizes, dtypes| format!("{} {}", render(sizes), render(dtypes)).trim().to_owned();
    Entry {
        record_id: head.record_id,
        group: head.group.clone().into_owned(),
        collective_seq_id: head.collective_seq_id,
        p2p_seq_id: int(fields.p2p_seq_id).unwrap_or(-1),
        is_p2p: head.is_p2p,
        profiling_name: text(fields.profiling_name).to_owned(),
        input: io(fields.input_sizes, fields.input_dtypes),
        output: io(fields.output_sizes, fields.output_dtypes),
        state: text(fields.state).to_owned(),
        time_created_ns: int(fields.time_created_ns).unwrap_or(0),
        timeout_ms: int(fields.timeout_ms),
        frames: frames.map(frame).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PICKLE: &[u8] = include_bytes!("../../tests/fixtures/failures/raise/fr/nccl_trace_rank_2");
    const JSON: &[u8] = include_bytes!("../../tests/fixtures/failures/raise/fr_json/nccl_trace_rank_2.json");

    fn from_json(json: &serde_json::Value) -> Dump {
        read(json).expect("a dump")
    }

    #[test]
    fn one_reader_for_both_forms() {
        let tree = pickle::decode(PICKLE).unwrap();
        let mut pickled = read(tree.root()).unwrap();
        let json: serde_json::Value = serde_json::from_slice(JSON).unwrap();
        let written = from_json(&json);
        assert_eq!((pickled.total_entries, pickled.entries.len()), (6, 6));
        assert!(pickled.entries.iter().all(|e| !e.frames.is_empty()));
        // The JSON form has no stack frames; all else is the same dump.
        pickled.entries.iter_mut().for_each(|e| e.frames.clear());
        assert_eq!(pickled, written);
    }

    #[test]
    fn groups_from_config_status_and_entries() {
        let frame = json!({"name": "f", "filename": "a.py", "line": 3});
        let json = json!({
            "version": "2.4",
            "pg_config": {"0": {"name": "0", "desc": "", "ranks": "[0, 1, 2]"}},
            "pg_status": {"0": {"last_enqueued_collective": "2", "last_started_collective": 2, "last_completed_collective": 1}},
            "entries": [
                {"record_id": 0, "process_group": ["0", "default_pg"], "pg_id": 0, "collective_seq_id": 1,
                 "state": "completed", "input_sizes": [[3, 4]], "input_dtypes": ["Float"], "frames": [frame],
                 "profiling_name": "nccl:all_reduce", "time_created_ns": 5, "timeout_ms": 600000},
                {"record_id": 1, "process_group": ["0", "default_pg"], "pg_id": 0, "collective_seq_id": 2,
                 "state": "started", "p2p_seq_id": 0, "output_sizes": [], "output_dtypes": []},
                {"record_id": 2, "process_group": ["7", "tp"], "pg_id": 3, "collective_seq_id": 1, "state": "scheduled"},
                {"record_id": 3, "pg_id": 5, "collective_seq_id": 4, "state": "completed", "is_p2p": false},
            ],
        });
        let entry = |record_id: i64, group: &str, seq: i64, state: &str| Entry {
            record_id,
            group: group.into(),
            collective_seq_id: seq,
            p2p_seq_id: -1,
            state: state.into(),
            ..Entry::default()
        };
        let want = Dump {
            version: "2.4".into(),
            groups: vec![
                Group {
                    name: "0".into(),
                    desc: "default_pg".into(),
                    ranks: vec![0, 1, 2],
                    pg_id: Some(0),
                    last_enqueued: Some(2),
                    last_started: Some(2),
                    last_completed: Some(1),
                },
                // Named by the entries' pg_id only: no pg_id of its own, progress from the entries.
                Group { name: "5".into(), last_enqueued: Some(4), last_completed: Some(4), ..Group::default() },
                Group {
                    name: "7".into(),
                    desc: "tp".into(),
                    pg_id: Some(3),
                    last_enqueued: Some(1),
                    ..Group::default()
                },
            ],
            entries: vec![
                Entry {
                    profiling_name: "nccl:all_reduce".into(),
                    input: "[[3, 4]] [Float]".into(),
                    time_created_ns: 5,
                    timeout_ms: Some(600000),
                    frames: vec!["f at a.py:3".into()],
                    ..entry(0, "0", 1, "completed")
                },
                Entry { p2p_seq_id: 0, output: "[] []".into(), ..entry(1, "0", 2, "started") },
                entry(3, "5", 4, "completed"),
                entry(2, "7", 1, "scheduled"),
            ],
            total_entries: 4,
        };
        assert_eq!(from_json(&json), want);
    }

    #[test]
    fn the_tail_of_each_ring() {
        let entries: Vec<_> = (0..100)
            .map(|i| {
                json!({"record_id": i, "process_group": ["0", ""], "collective_seq_id": i + 1,
                            "state": if i < 20 { "completed" } else { "scheduled" }})
            })
            .collect();
        let dump = from_json(&json!({ "entries": entries }));
        let kept: Vec<i64> = dump.entries.iter().map(|e| e.record_id).collect();
        // The 8 completed before the first open one, then as many as make 64.
        assert_eq!(kept, (12..76).collect::<Vec<_>>());
        assert_eq!(dump.total_entries, 100);
    }

    #[test]
    fn ranks_and_renderings() {
        assert_eq!(rank_text("[0, 1, 2]"), [0, 1, 2]);
        assert_eq!(rank_text("[ 3 ,x, 4, -1, 99999999999]"), [3, 4]);
        assert_eq!(rank_text("[]"), Vec::<u32>::new());
        assert_eq!(rank_text("[4294967295, 4294967296, 1 2, 7\t, ,8]"), [u32::MAX, 7, 8]);
        assert_eq!(ranks(Some(&json!([0, -1, 5, "6"]))), [0, 5]);
        // Long lists come from memory the second time, the same as parsed.
        let long = format!("{:?}", (0..LIST_WORTH_REMEMBERING as u32).collect::<Vec<_>>());
        let lists = || RANK_LISTS.with(|l| l.borrow().len());
        let before = lists();
        assert_eq!(ranks(Some(&json!(long))), rank_text(&long));
        assert_eq!((ranks(Some(&json!(long))), lists()), (rank_text(&long), before + 1));
        for n in 0..2 * LISTS_REMEMBERED {
            remembered_rank_text(&format!("{long:?}{n}"));
        }
        assert_eq!(lists(), LISTS_REMEMBERED);
        assert_eq!(ranks::<&serde_json::Value>(None), Vec::<u32>::new());
        assert_eq!(render(Some(&json!([[1024, 1024], 1.5, "Float", null]))), "[[1024, 1024], 1.5, Float, ?]");
        // At most RENDERED values: the list itself and 255 of its numbers.
        let long = render(Some(&json!((0..1000).collect::<Vec<_>>())));
        assert!(long.ends_with(", 254]"), "{long}");
    }

    #[test]
    fn not_a_dump() {
        assert!(read(&json!([1, 2])).unwrap_err().contains("not a dictionary"));
        assert!(read(&json!({})).unwrap_err().contains("not a dictionary"));
        assert!(read(&json!({"version": "2.4"})).unwrap_err().contains("no `entries`"));
    }

    #[test]
    fn a_key_set_twice_and_an_entry_shared_by_the_whole_ring() {
        // {"entries": [{"state": "completed", "state": "started"}]}: the last pair wins.
        let twice = b"\x80\x02}(X\x07\x00\x00\x00entries]}(X\x05\x00\x00\x00stateX\x09\x00\x00\x00completed\
            X\x05\x00\x00\x00stateX\x07\x00\x00\x00starteduau.";
        let tree = pickle::decode(twice).unwrap();
        assert_eq!(read(tree.root()).unwrap().entries[0].state, "started");
        // One entry dict referenced 100,001 times through the memo: read as many entries, in
        // time linear in them, and only the tail kept.
        let mut shared =
            b"\x80\x02}(X\x07\x00\x00\x00entries](}q\x01(X\x05\x00\x00\x00stateX\x07\x00\x00\x00startedu".to_vec();
        shared.extend(b"h\x01".repeat(100_000));
        shared.extend(b"eu.");
        let tree = pickle::decode(&shared).unwrap();
        let dump = read(tree.root()).unwrap();
        assert_eq!((dump.total_entries, dump.entries.len(), dump.groups.len()), (100_001, ENTRIES_KEPT, 1));
    }
}

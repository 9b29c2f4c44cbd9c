//! From every file's evidence to one [`Failure`]: the initiating ranks, the collateral ones,
//! the cause, and the evidence, fix and verification command.
//!
//! The rules, strongest first (each is what the failure does to the others, not a threshold):
//! 1. A rank that failed on its own (an exception, OOM, a fatal signal, a network error) before
//!    any sign of waiting for another rank started it; with times, the earliest ones did.
//! 2. Ranks that called a different collective than the others at the same sequence number
//!    (Flight Recorder entries, NCCL work strings, `TORCH_DISTRIBUTED_DEBUG=DETAIL`), the
//!    minority of them, started it.
//! 3. In a process group, the ranks that had issued fewer collectives than the others (Flight
//!    Recorder `pg_status`, the watchdog's "last enqueued work") never reached the one the
//!    others wait in: they hang. When the few are *ahead* of the many, they issued extra ones.
//! 4. When all that failed only waited, the ranks of the job that did not wait are the ones
//!    the others waited for.
//! 5. In a process group where every rank heard from was waiting in a collective, the members
//!    nobody heard from (no dump, no status line) are the ones waited for.
//!
//! A rank found to hang by rules 3 to 5 whose last output announced work of its own (saving a
//! checkpoint, evaluating) was slow in that work rather than stuck: `slow_rank`.
//!
//! Otherwise the initiating ranks are left empty and the report says what would decide.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::evidence::{Event, EventKind, FileEvidence, LastOutput};
use super::{clock, fix};
use crate::report::{FAILURE_CAUSES, Failure, FailureEvidence, FirstFailure, GroupProgress, RankProgress};

/// An event with its file and its global rank, where known.
#[derive(Clone, Copy)]
struct Seen<'a> {
    file: &'a str,
    event: &'a Event,
    rank: Option<u32>,
}

impl Seen<'_> {
    /// True when `self` happened before `other`, as far as the evidence tells (times, or the
    /// order of one file's lines).
    fn before(&self, other: &Seen) -> bool {
        match (self.event.time_ns, other.event.time_ns) {
            (Some(a), Some(b)) => a < b,
            _ => self.file == other.file && self.event.line < other.event.line,
        }
    }
}

/// Waiting for, or losing, another rank.
fn is_wait(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Timeout { .. } | EventKind::PeerLost | EventKind::Progress { .. } | EventKind::DumpSignal { .. }
    )
}

/// Is `group` the default process group (whose ranks are the global ranks)?
fn is_default_group(group: Option<&str>) -> bool {
    group.is_some_and(|g| g == "0" || g.starts_with("0(") || g.contains("default_pg"))
}

/// The group's name in a log's `PG GUID 0(default_pg)`: the part before the description.
fn group_name(pg: &str) -> &str {
    pg.split('(').next().unwrap_or(pg).trim()
}

/// What all the files say together.
struct Evidence<'a> {
    seen: Vec<Seen<'a>>,
    /// Every rank the inputs show was part of the job.
    known: BTreeSet<u32>,
    /// group → (description, members, rank → (last enqueued, last completed)).
    groups: BTreeMap<String, GroupState<'a>>,
    /// Each rank's last line of its own output (from the first file that has one), with its file.
    last_output: BTreeMap<u32, (&'a str, &'a LastOutput)>,
    notes: Vec<String>,
}

#[derive(Default)]
struct GroupState<'a> {
    desc: String,
    members: BTreeSet<u32>,
    /// The member lists merged into `members`: every rank's dump lists the same members, and
    /// 4096 dumps of a 4096-rank group would otherwise insert 16 M ranks.
    lists: Vec<&'a [u32]>,
    progress: BTreeMap<u32, (Option<i64>, Option<i64>)>,
}

/// torchrun's failure report names each failed rank's error file; that file's folder
/// (`…/attempt_0/<local_rank>/`) holds the rank's logs. Folders as path components.
fn rank_folders(files: &[FileEvidence]) -> Vec<(Vec<&str>, u32)> {
    let mut folders = Vec::new();
    for file in files {
        for event in &file.events {
            if let (EventKind::Exit { error_file: Some(path), .. }, Some(rank)) = (&event.kind, event.rank) {
                let mut parts: Vec<&str> = path.split(['/', '\\']).filter(|p| !p.is_empty()).collect();
                parts.pop();
                folders.push((parts, rank));
            }
        }
    }
    folders
}

/// Whether two folders are the same one seen from different working directories: one ends
/// with the other, over at least the run, attempt and local-rank folders.
fn same_folder(a: &[&str], b: &[&str]) -> bool {
    let shared = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
    shared >= 3 && shared == a.len().min(b.len())
}

fn folder_of(path: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = path.split(['/', '\\']).filter(|p| !p.is_empty()).collect();
    parts.pop();
    parts
}

/// The run folder of torchrun's `--log-dir` layout (`<run>/attempt_N/<local_rank>/file`).
fn run_folder(path: &str) -> Option<Vec<&str>> {
    let mut folder = folder_of(path);
    let attempt = folder.len().checked_sub(2).and_then(|i| folder.get(i))?;
    attempt.starts_with("attempt_").then(|| {
        folder.truncate(folder.len() - 2);
        folder
    })
}

/// How each file's global rank is known, best first: torchrun's report names the folder the
/// file is in; the file's folder holds lines of exactly one rank (`[rank2]:` in its stderr);
/// its name says (`rank3.log`, `nccl_trace_rank_3`); or the `--log-dir` layout gives its local
/// rank, which is the global one when all the logs come from one node (one run folder).
struct FileRanks<'a> {
    reported: Vec<(Vec<&'a str>, u32)>,
    files: &'a [FileEvidence],
    one_node: bool,
}

impl<'a> FileRanks<'a> {
    fn new(files: &'a [FileEvidence]) -> Self {
        let runs: BTreeSet<Vec<&str>> = files.iter().filter_map(|f| run_folder(&f.file)).collect();
        FileRanks { reported: rank_folders(files), files, one_node: runs.len() <= 1 }
    }

    fn of(&self, file: &FileEvidence) -> Option<u32> {
        let folder = folder_of(&file.file);
        if let Some(&(_, rank)) = self.reported.iter().find(|(reported, _)| same_folder(reported, &folder)) {
            return Some(rank);
        }
        if run_folder(&file.file).is_some() {
            let named: BTreeSet<u32> = self
                .files
                .iter()
                .filter(|f| folder_of(&f.file) == folder)
                .flat_map(|f| f.ranks_seen.iter().copied())
                .collect();
            return match (named.len(), named.first()) {
                (1, Some(&rank)) => Some(rank),
                _ => file.file_rank.filter(|_| self.one_node),
            };
        }
        file.file_rank
    }
}

fn gather(files: &[FileEvidence]) -> Evidence<'_> {
    let file_ranks = FileRanks::new(files);
    let mut seen = Vec::new();
    let mut known = BTreeSet::new();
    let mut groups: BTreeMap<String, GroupState<'_>> = BTreeMap::new();
    let mut unmapped = BTreeSet::new();
    let mut notes = Vec::new();
    let mut last_output = BTreeMap::new();
    for file in files {
        let file_rank = file_ranks.of(file);
        for output in &file.last_output {
            if let Some(rank) = output.rank.or(file_rank) {
                last_output.entry(rank).or_insert((file.file.as_str(), output));
            }
        }
        known.extend(file.ranks_seen.iter().copied());
        if let Some(rank) = file_rank.filter(|_| file.has_evidence() || file.lines > 0) {
            known.insert(rank);
        }
        if file.events_dropped > 0 {
            notes.push(format!("{}: {} more failure lines were not kept", file.file, file.events_dropped));
        }
        for event in &file.events {
            let from_group = event.pg_rank.filter(|_| is_default_group(event.pg.as_deref()));
            let rank = event.rank.or(file_rank).or(from_group);
            if rank.is_none()
                && let Some(pg_rank) = event.pg_rank
            {
                unmapped.insert((event.pg.clone(), pg_rank));
            }
            known.extend(rank);
            seen.push(Seen { file: &file.file, event, rank });
            if let (Some(rank), Some((enqueued, completed))) = (rank, progress_of(&event.kind)) {
                let name = event.pg.as_deref().map_or("0", group_name).to_owned();
                let group = groups.entry(name).or_default();
                group.members.insert(rank);
                let slot = group.progress.entry(rank).or_default();
                slot.0 = slot.0.max(Some(enqueued));
                slot.1 = slot.1.max(completed);
            }
        }
        if let (Some(dump), Some(rank)) = (&file.flight, file_rank) {
            for g in &dump.groups {
                let group = groups.entry(g.name.clone()).or_default();
                if group.desc.is_empty() {
                    group.desc.clone_from(&g.desc);
                }
                if !group.lists.contains(&g.ranks.as_slice()) {
                    group.lists.push(&g.ranks);
                    group.members.extend(g.ranks.iter().copied());
                    known.extend(g.ranks.iter().copied());
                }
                group.members.insert(rank);
                if g.last_enqueued.is_some() {
                    group.progress.insert(rank, (g.last_enqueued, g.last_completed));
                }
            }
        } else if file.flight.is_some() {
            notes.push(format!(
                "{}: a Flight Recorder dump whose rank its name does not say (name dumps `<prefix><rank>`, as PyTorch does)",
                file.file
            ));
        }
    }
    if !unmapped.is_empty() {
        let named: Vec<String> = unmapped
            .iter()
            .take(8)
            .map(|(g, r)| match g {
                Some(g) => format!("rank {r} of group {g}"),
                None => format!("rank {r} of a group the line does not name"),
            })
            .collect();
        notes.push(format!(
            "NCCL names {} within process groups whose global ranks the logs do not say; \
             logs with `[rankN]:` prefixes or one file per rank would map them",
            named.join(", ")
        ));
    }
    Evidence { seen, known, groups, last_output, notes }
}

fn progress_of(kind: &EventKind) -> Option<(i64, Option<i64>)> {
    let as_i64 = |v: u64| i64::try_from(v).ok();
    match kind {
        EventKind::Progress { last_enqueued, last_completed, .. } => {
            Some((as_i64(*last_enqueued)?, last_completed.and_then(as_i64)))
        }
        EventKind::DumpSignal { last_enqueued: Some(e), last_completed, .. } => {
            Some((as_i64(*e)?, last_completed.and_then(as_i64)))
        }
        _ => None,
    }
}

/// What one rule decided.
struct Finding {
    cause: &'static str,
    initiating: BTreeSet<u32>,
    confidence: &'static str,
    headline: String,
    /// Evidence lines of the initiating ranks, besides their events.
    extra: Vec<FailureEvidence>,
    to_decide: Option<String>,
    /// What the first failure was, when no event of the initiating ranks says it.
    first_what: Option<String>,
}

/// The diagnosis of everything the files say; `None` when they show no failure.
pub fn diagnose(files: &[FileEvidence]) -> Option<Failure> {
    let evidence = gather(files);
    let finding = own_failure(&evidence)
        .or_else(|| mismatch(files, &evidence))
        .or_else(|| behind(files, &evidence))
        .or_else(|| silent(&evidence))
        .or_else(|| unheard(&evidence))
        .or_else(|| undecided(&evidence))?;
    let finding = if finding.cause == "hang" { busy_or_hung(finding, &evidence) } else { finding };
    debug_assert!(FAILURE_CAUSES.contains(&finding.cause));
    Some(report(files, &evidence, finding))
}

/// Rule 1: ranks that failed on their own.
fn own_failure(evidence: &Evidence) -> Option<Finding> {
    let mut first: BTreeMap<u32, Seen> = BTreeMap::new();
    for s in &evidence.seen {
        let Some(rank) = s.rank else { continue };
        if !is_own(&s.event.kind) {
            continue;
        }
        // An error after this rank already waited for another is a consequence of the wait.
        let waited_before = evidence.seen.iter().any(|w| w.rank == Some(rank) && is_wait(&w.event.kind) && w.before(s));
        if waited_before {
            continue;
        }
        let slot = first.entry(rank).or_insert(*s);
        if strength(&s.event.kind) > strength(&slot.event.kind)
            || s.before(slot) && strength(&s.event.kind) == strength(&slot.event.kind)
        {
            *slot = *s;
        }
    }
    if first.is_empty() {
        return None;
    }
    let times: Vec<i64> = first.values().filter_map(|s| s.event.time_ns).collect();
    let (initiating, confidence): (BTreeSet<u32>, _) = if times.len() == first.len() && first.len() > 1 {
        let earliest = times.iter().copied().min().unwrap_or_default();
        // Clocks of different hosts and torchrun's second-resolution times cannot order
        // failures closer than a second: those are simultaneous.
        let initiating = first.iter().filter(|(_, s)| s.event.time_ns.is_some_and(|t| t - earliest < 1_000_000_000));
        (initiating.map(|(&r, _)| r).collect(), "high")
    } else {
        (first.keys().copied().collect(), if first.len() == 1 { "high" } else { "medium" })
    };
    let lead = first
        .iter()
        .filter(|(r, _)| initiating.contains(r))
        .map(|(_, s)| *s)
        .max_by_key(|s| strength(&s.event.kind))?;
    let cause = cause_of(&lead.event.kind);
    let ranks = list(&initiating);
    let what = short_what(lead.event);
    let headline = match cause {
        "oom" => format!("Rank {ranks} ran out of memory; the other ranks only failed waiting for it"),
        "killed" => format!("Rank {ranks} was killed ({what}); the other ranks only failed waiting for it"),
        "network" => format!("Rank {ranks} lost its network ({what}); the other ranks failed with it"),
        "hang" => format!("Rank {ranks}'s NCCL watchdog hung; the other ranks waited for it"),
        "collective_mismatch" => format!(
            "Rank {ranks} called a different collective than the others ({what}); the other ranks only failed with it"
        ),
        _ => format!("Rank {ranks} failed on its own ({what}); the other ranks only failed waiting for it"),
    };
    Some(Finding { cause, initiating, confidence, headline, extra: Vec::new(), to_decide: None, first_what: None })
}

/// A failure of the rank itself, not of waiting for another.
fn is_own(kind: &EventKind) -> bool {
    match kind {
        EventKind::OutOfMemory
        | EventKind::Network
        | EventKind::Exception { .. }
        | EventKind::WatchdogStuck
        | EventKind::WrongCollective => true,
        EventKind::Exit { exitcode, signal, .. } => {
            *exitcode < 0 && !matches!(signal.as_deref(), Some("SIGTERM" | "SIGINT"))
        }
        _ => false,
    }
}

/// Which of a rank's own failures names the cause best (OOM over the exception it raises,
/// any message over a bare exit code).
fn strength(kind: &EventKind) -> u8 {
    match kind {
        EventKind::WrongCollective => 6,
        EventKind::OutOfMemory => 5,
        EventKind::Network => 4,
        EventKind::Exception { .. } => 3,
        EventKind::WatchdogStuck => 2,
        EventKind::Exit { .. } => 1,
        _ => 0,
    }
}

fn cause_of(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::OutOfMemory => "oom",
        EventKind::Network => "network",
        EventKind::WatchdogStuck => "hang",
        EventKind::WrongCollective => "collective_mismatch",
        EventKind::Exit { signal: Some(s), .. } if s == "SIGKILL" => "killed",
        _ => "crash",
    }
}

/// The line without its prefixes, for headlines.
fn short_what(event: &Event) -> String {
    let (_, body) = super::line::split_prefix(&event.text);
    let body = body.trim();
    // glog's `[E709 17:05:38.1 File.cpp:1] ` header says nothing to a reader.
    let body = match body.strip_prefix('[').and_then(|b| b.split_once("] ")) {
        Some((header, rest)) if header.contains(':') => rest,
        _ => body,
    };
    match &event.kind {
        EventKind::Exit { exitcode, signal, .. } => match signal {
            Some(signal) => format!("{signal}, exit code {exitcode}"),
            None => format!("exit code {exitcode}"),
        },
        _ => body.chars().take(160).collect(),
    }
}

/// The minority of `signatures` (rank → what it called), when they disagree; empty when the
/// disagreement has no minority (two ranks, one each).
fn minority<S: Ord>(signatures: &BTreeMap<u32, S>) -> Option<BTreeSet<u32>> {
    let mut counts: BTreeMap<&S, usize> = BTreeMap::new();
    for s in signatures.values() {
        *counts.entry(s).or_default() += 1;
    }
    if counts.len() < 2 {
        return None;
    }
    let most = counts.values().copied().max().unwrap_or(0);
    let leaders: Vec<&S> = counts.iter().filter(|&(_, &c)| c == most).map(|(&s, _)| s).collect();
    let [majority] = leaders.as_slice() else {
        return Some(BTreeSet::new());
    };
    Some(signatures.iter().filter(|&(_, s)| s != *majority).map(|(&r, _)| r).collect())
}

/// What a rank called at one sequence number: the operation and what the ranks must agree on
/// (a dump's input sizes and dtypes, a timeout's element counts). Borrowed from the dumps:
/// 4096 ranks' dumps hold near a million calls.
type Signature<'a> = (&'a str, Cow<'a, str>);

/// Rule 2: a different collective at the same sequence number.
fn mismatch(files: &[FileEvidence], evidence: &Evidence) -> Option<Finding> {
    // (group, sequence number) → rank → signature, from dumps and from NCCL work strings.
    let mut calls: BTreeMap<(&str, i64), BTreeMap<u32, Signature<'_>>> = BTreeMap::new();
    let dumps = files.iter().filter_map(|f| Some((f, f.flight.as_ref()?, f.file_rank?)));
    for (_, dump, rank) in dumps.clone() {
        for e in dump.entries.iter().filter(|e| !e.is_p2p) {
            let op = e.profiling_name.split_once(':').map_or(e.profiling_name.as_str(), |(_, op)| op);
            calls.entry((e.group.as_str(), e.collective_seq_id)).or_default().insert(rank, (op, Cow::from(&e.input)));
        }
    }
    let timeouts = evidence.seen.iter().filter_map(|s| match (s.rank, &s.event.kind) {
        (Some(rank), EventKind::Timeout { seq: Some(seq), op, numel_in, numel_out }) => {
            let key = (s.event.pg.as_deref().map_or("0", group_name), i64::try_from(*seq).unwrap_or(-1));
            let elements = format!("in={} out={}", opt(*numel_in), opt(*numel_out));
            Some((s, rank, key, (op.as_deref().unwrap_or("?"), Cow::Owned(elements))))
        }
        _ => None,
    });
    for (_, rank, key, signature) in timeouts.clone() {
        calls.entry(key).or_default().entry(rank).or_insert(signature);
    }
    let detail: Vec<&Seen> = evidence.seen.iter().filter(|s| s.event.kind == EventKind::Mismatch).collect();
    if let Some((&(group, seq), signatures, odd)) =
        calls.iter().find_map(|(key, signatures)| Some((key, signatures, minority(signatures)?)))
    {
        // The lines of the odd calls only (of every call when there is no minority).
        let shown = |rank: u32| odd.is_empty() || odd.contains(&rank);
        let mut extra: Vec<FailureEvidence> = dumps
            .flat_map(|(file, dump, rank)| {
                let at =
                    dump.entries.iter().filter(move |e| !e.is_p2p && e.group == group && e.collective_seq_id == seq);
                at.map(move |e| entry_evidence(&file.file, rank, e, "initiating"))
            })
            .filter(|e| e.rank.is_some_and(shown))
            .collect();
        extra.extend(
            timeouts
                .filter(|&(_, rank, key, _)| key == (group, seq) && shown(rank))
                .map(|(s, ..)| line_evidence(s, "initiating")),
        );
        let described: Vec<String> =
            signatures.iter().map(|(r, (op, what))| format!("rank {r}: {op} {what}")).take(6).collect();
        let undecided = odd.is_empty();
        return Some(Finding {
            cause: "collective_mismatch",
            headline: if undecided {
                format!(
                    "Ranks called different collectives at sequence number {seq} of group {group} ({})",
                    described.join("; ")
                )
            } else {
                format!(
                    "Rank {} called a different collective than the others at sequence number {seq} of group {group} ({})",
                    list(&odd),
                    described.join("; ")
                )
            },
            initiating: odd,
            confidence: if undecided { "low" } else { "high" },
            extra,
            to_decide: undecided.then(|| {
                "with two ranks either may be the odd one: the stack frames of both \
                 collectives (Flight Recorder pickles keep them) show which call is conditional"
                    .to_owned()
            }),
            first_what: None,
        });
    }
    let first = detail.first()?;
    Some(Finding {
        cause: "collective_mismatch",
        initiating: BTreeSet::new(),
        confidence: "medium",
        headline: format!("Ranks called different collectives: {}", short_what(first.event)),
        extra: Vec::new(),
        to_decide: Some(
            "the message compares two ranks; the Flight Recorder dumps of all ranks show which ones differ from the rest".into(),
        ),
        first_what: None,
    })
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "?".into(), |v| v.to_string())
}

/// The dump entries that show a group's progress: the last collective of each of `ranks`, and
/// the first one the others issued beyond `low` (what `ranks` never reached), with its stack.
fn progress_entries(files: &[FileEvidence], group: &str, ranks: &BTreeSet<u32>, low: i64) -> Vec<FailureEvidence> {
    let mut lines = Vec::new();
    let mut beyond = None;
    for file in files {
        let (Some(dump), Some(rank)) = (&file.flight, file.file_rank) else { continue };
        let mut mine = dump.entries.iter().filter(|e| e.group == group && !e.is_p2p);
        if ranks.contains(&rank) {
            lines.extend(
                mine.rfind(|e| e.collective_seq_id <= low).map(|e| entry_evidence(&file.file, rank, e, "initiating")),
            );
        } else if beyond.is_none() {
            beyond = mine
                .clone()
                .find(|e| e.collective_seq_id == low + 1)
                .map(|e| entry_evidence(&file.file, rank, e, "collateral"));
        }
    }
    lines.extend(beyond);
    lines
}

/// Rule 3: ranks behind (or ahead of) the others in a process group.
fn behind(files: &[FileEvidence], evidence: &Evidence) -> Option<Finding> {
    for (name, group) in &evidence.groups {
        let enqueued: Vec<(u32, i64)> = group.progress.iter().filter_map(|(&r, &(e, _))| Some((r, e?))).collect();
        let values: BTreeSet<i64> = enqueued.iter().map(|&(_, e)| e).collect();
        let (Some(&low), Some(&high)) = (values.first(), values.last()) else { continue };
        if low == high {
            continue;
        }
        let at = |v: i64| -> BTreeSet<u32> { enqueued.iter().filter(|&&(_, e)| e == v).map(|&(r, _)| r).collect() };
        let (lowest, highest) = (at(low), at(high));
        let below = enqueued.len() - highest.len();
        if values.len() == 2 && highest.len() < below {
            return Some(Finding {
                cause: "collective_mismatch",
                headline: format!(
                    "Rank {} issued collectives the others never did: group {name} is at #{high} on it and at #{low} on the rest",
                    list(&highest)
                ),
                extra: progress_entries(files, name, &highest, high),
                initiating: highest,
                confidence: "medium",
                to_decide: None,
                first_what: Some(format!("issued collective #{high} of group {name}, which the others never did")),
            });
        }
        return Some(Finding {
            cause: "hang",
            headline: format!(
                "Rank {} stopped issuing collectives at #{low} of group {name} while others reached #{high}: the others timed out waiting for it",
                list(&lowest)
            ),
            extra: progress_entries(files, name, &lowest, low),
            initiating: lowest,
            confidence: "high",
            to_decide: None,
            first_what: Some(format!(
                "stopped after collective #{low} of group {name}; the others waited in #{}",
                low + 1
            )),
        });
    }
    None
}

/// Rule 4: all that failed only waited; the ranks that did not wait are who they waited for.
fn silent(evidence: &Evidence) -> Option<Finding> {
    let waited: BTreeSet<u32> =
        evidence.seen.iter().filter(|s| is_wait(&s.event.kind)).filter_map(|s| s.rank).collect();
    if waited.is_empty() {
        return None;
    }
    let quiet: BTreeSet<u32> = evidence.known.difference(&waited).copied().collect();
    if quiet.is_empty() || quiet.len() >= waited.len() {
        return None;
    }
    Some(Finding {
        cause: "hang",
        headline: format!(
            "Ranks {} timed out or lost their peers in collectives; rank {} never did: it did not reach the collective they waited in",
            list(&waited),
            list(&quiet)
        ),
        initiating: quiet,
        confidence: "medium",
        extra: Vec::new(),
        to_decide: Some(format!(
            "Flight Recorder dumps of every rank would show which collective it last issued ({})",
            fix::FLIGHT_RECORDER
        )),
        first_what: Some("did not reach the collective the others timed out in".into()),
    })
}

/// Rule 5: in a process group, every rank whose progress is known was waiting in a collective
/// (issued, not completed); the members nobody heard from (no dump, no status line) are the
/// ones they waited for, when they are the fewer.
fn unheard(evidence: &Evidence) -> Option<Finding> {
    for (name, group) in &evidence.groups {
        let waiting = group.progress.values().all(|&(e, c)| e.is_some_and(|e| c.is_none_or(|c| e > c)));
        let unheard: BTreeSet<u32> =
            group.members.iter().filter(|r| !group.progress.contains_key(r)).copied().collect();
        if group.progress.is_empty() || !waiting || unheard.is_empty() || unheard.len() >= group.progress.len() {
            continue;
        }
        let heard: BTreeSet<u32> = group.progress.keys().copied().collect();
        return Some(Finding {
            cause: "hang",
            headline: format!(
                "Ranks {} were all waiting in a collective of group {name}; rank {} of the group left no dump or status: \
                 the others waited for it",
                list(&heard),
                list(&unheard)
            ),
            initiating: unheard,
            confidence: "low",
            extra: Vec::new(),
            to_decide: Some(
                "the missing ranks' Flight Recorder dumps or logs would show whether they hung, were slow or died"
                    .into(),
            ),
            first_what: Some(format!("was not waiting in group {name} with the others")),
        });
    }
    None
}

/// Words of work one rank does on its own while the others wait in a collective (a checkpoint
/// save, an evaluation, an upload), as training code and frameworks announce it ("saving
/// checkpoint", "Saving model checkpoint to", "Evaluating", "validation").
const OWN_WORK: [&str; 5] = ["checkpoint", "saving", "evaluat", "validat", "upload"];

/// A rank the others waited for, seen hanging: its last output says what it was doing. When
/// every such rank had announced work of its own, it was slow in that work (it would have
/// entered the collective later), not stuck in a diverging code path.
fn busy_or_hung(mut finding: Finding, evidence: &Evidence) -> Finding {
    let outputs: Vec<(u32, &str, &LastOutput)> = finding
        .initiating
        .iter()
        .filter_map(|rank| evidence.last_output.get(rank).map(|&(file, output)| (*rank, file, output)))
        .collect();
    let last_lines = outputs.iter().take(RANKS_LISTED).map(|&(rank, file, output)| FailureEvidence {
        file: file.to_owned(),
        line: output.line,
        rank: Some(rank),
        role: "initiating".into(),
        text: output.text.clone(),
        frames: Vec::new(),
    });
    let mut extra: Vec<FailureEvidence> = last_lines.collect();
    extra.append(&mut finding.extra);
    finding.extra = extra;
    let busy = |output: &LastOutput| {
        let text = output.text.to_lowercase();
        OWN_WORK.iter().any(|word| text.contains(word))
    };
    let all_busy = !finding.initiating.is_empty()
        && outputs.len() == finding.initiating.len()
        && outputs.iter().all(|(_, _, output)| busy(output));
    if let (true, Some((_, _, output))) = (all_busy, outputs.first()) {
        let (_, said) = super::line::split_prefix(&output.text);
        let said = said.trim();
        finding.cause = "slow_rank";
        finding.headline = format!(
            "Rank {} was still busy in work of its own when the others' collectives timed out: its last output was `{said}`",
            list(&finding.initiating),
        );
        finding.first_what = Some(format!("still busy after its last output: {said}"));
        finding.to_decide = Some(
            "times on its log lines (or `py-spy dump --pid PID` during the next stall) would show how long that work takes"
                .into(),
        );
    }
    finding
}

/// Only symptoms, no rule decides.
fn undecided(evidence: &Evidence) -> Option<Finding> {
    let timed_out =
        evidence.seen.iter().any(|s| matches!(s.event.kind, EventKind::Timeout { .. } | EventKind::Progress { .. }));
    let any = evidence.seen.iter().any(|s| !matches!(s.event.kind, EventKind::Exit { exitcode: 0, .. }));
    if !any {
        return None;
    }
    Some(Finding {
        cause: if timed_out { "hang" } else { "unknown" },
        initiating: BTreeSet::new(),
        confidence: "low",
        headline: if timed_out {
            "Collectives timed out, but the inputs do not say which rank the others waited for".into()
        } else {
            "The job failed, but the inputs do not say which rank started it".into()
        },
        extra: Vec::new(),
        to_decide: Some(format!(
            "the logs of every rank (torchrun `--log-dir`) and Flight Recorder dumps ({})",
            fix::FLIGHT_RECORDER
        )),
        first_what: None,
    })
}

fn list(ranks: &BTreeSet<u32>) -> String {
    let values: Vec<u64> = ranks.iter().map(|&r| u64::from(r)).collect();
    crate::text::compact_ranges(&values)
}

fn line_evidence(s: &Seen, role: &str) -> FailureEvidence {
    let mut frames = Vec::new();
    frames.extend(s.event.at.clone());
    FailureEvidence {
        file: s.file.to_owned(),
        line: s.event.line,
        rank: s.rank,
        role: role.to_owned(),
        text: s.event.text.clone(),
        frames,
    }
}

fn entry_evidence(file: &str, rank: u32, e: &super::flight::Entry, role: &str) -> FailureEvidence {
    FailureEvidence {
        file: file.to_owned(),
        line: 0,
        rank: Some(rank),
        role: role.to_owned(),
        text: format!(
            "group {} #{} {} {} → {} state {}",
            e.group, e.collective_seq_id, e.profiling_name, e.input, e.output, e.state
        ),
        frames: e.frames.clone(),
    }
}

/// Most evidence lines per initiating rank, and initiating ranks listed.
const LINES_PER_RANK: usize = 3;
const RANKS_LISTED: usize = 8;
const COLLATERAL_LISTED: usize = 4;

fn report(files: &[FileEvidence], evidence: &Evidence, finding: Finding) -> Failure {
    let Finding { cause, initiating, confidence, headline, extra, to_decide, first_what } = finding;
    let failed: BTreeSet<u32> = evidence
        .seen
        .iter()
        .filter(|s| !matches!(s.event.kind, EventKind::Exit { exitcode: 0, .. }))
        .filter_map(|s| s.rank)
        .chain(evidence.groups.values().flat_map(|g| {
            g.progress.iter().filter(|(_, (e, c))| c.is_some_and(|c| e.is_some_and(|e| e > c))).map(|(&r, _)| r)
        }))
        .collect();
    let collateral: Vec<u32> = failed.difference(&initiating).copied().collect();

    let mut lines = Vec::new();
    for &rank in initiating.iter().take(RANKS_LISTED) {
        let mine = evidence.seen.iter().filter(|s| s.rank == Some(rank) && !is_wait(&s.event.kind));
        lines.extend(mine.take(LINES_PER_RANK).map(|s| line_evidence(s, "initiating")));
    }
    lines.extend(extra.into_iter().take(RANKS_LISTED));
    let mut kinds_shown = Vec::new();
    for s in evidence.seen.iter().filter(|s| s.rank.is_none_or(|r| !initiating.contains(&r)) && is_wait(&s.event.kind))
    {
        let kind = std::mem::discriminant(&s.event.kind);
        if !kinds_shown.contains(&kind) && kinds_shown.len() < COLLATERAL_LISTED {
            kinds_shown.push(kind);
            lines.push(line_evidence(s, "collateral"));
        }
    }
    lines.dedup();

    let lead = |s: &&Seen| s.rank.is_some_and(|r| initiating.contains(&r)) && is_own(&s.event.kind);
    let lead_event = evidence.seen.iter().filter(lead).max_by_key(|s| strength(&s.event.kind));
    // What failed is the clearest of the initiating ranks' own events; when is the earliest.
    let first_time = evidence.seen.iter().filter(lead).filter_map(|s| s.event.time_ns).min();
    let first = match lead_event {
        Some(s) => Some(FirstFailure { rank: s.rank, time: first_time.map(clock::format), what: short_what(s.event) }),
        None => initiating.first().map(|&r| FirstFailure {
            rank: Some(r),
            time: None,
            what: first_what.unwrap_or_else(|| headline.clone()),
        }),
    };

    let process_groups = evidence
        .groups
        .iter()
        .filter(|(_, g)| !g.progress.is_empty())
        .map(|(name, g)| GroupProgress {
            group: name.clone(),
            desc: g.desc.clone(),
            size: g.members.len(),
            ranks: g
                .progress
                .iter()
                .map(|(&rank, &(e, c))| RankProgress { rank, last_enqueued: e, last_completed: c })
                .collect(),
        })
        .collect();

    let lead_event = lead_event.map(|s| s.event);
    let inputs: Vec<&str> = files.iter().map(|f| f.file.as_str()).collect();
    let (fix, verify_command) = fix::for_cause(cause, &initiating, lead_event, &inputs);
    Failure {
        cause: cause.to_owned(),
        initiating_ranks: initiating.into_iter().collect(),
        collateral_ranks: collateral,
        first_failure: first,
        confidence: confidence.to_owned(),
        headline,
        evidence: lines,
        process_groups,
        fix,
        verify_command,
        to_decide,
        notes: evidence.notes.clone(),
        in_job: None,
    }
}

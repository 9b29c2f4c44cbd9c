//! The log scanner: any text (a torchrun console, per-rank logs, a terminal paste) streamed in
//! chunks, in memory bounded by a window of lines, not by the log.
//!
//! Most of a training log is noise. Rather than classify every line, the scanner looks for a
//! few byte anchors every failure message contains ("rror", "atchdog", "xitcode", …) with
//! SIMD substring search over the whole window, and classifies only the lines they fall in
//! ([`super::line`]). Every line's prefix is still read for the ranks that wrote to the log.
//! A window keeps some lines before and after each anchored line, so a traceback's frames and
//! a torchrun failure block's fields are read around the line that names them.

use std::collections::{BTreeSet, HashMap};

use memchr::memmem;

use super::clock;
use super::evidence::{
    Event, EventKind, FileEvidence, Iteration, LastOutput, MAX_ITERATIONS, MAX_UNREADABLE, RankExtremes, TrainingLog,
    UnreadableLine, file_rank,
};
use super::iteration::{self, Progress};
use super::line::{self, Prefixes, Said};

/// At most this many events are kept per file; the rest are counted.
pub const MAX_EVENTS: usize = 4096;

/// Substrings of every message [`line::classify`] knows, or of a line that leads to one.
const ANCHORS: [&str; 14] = [
    "rror",
    "xception",
    "atchdog",
    "imed out",
    "imeout",
    "ignal",
    "xitcode",
    "emory",
    "NET/IB",
    "by peer",
    "Interrupt",
    "mismatch",
    "closure",
    "Broken pipe",
];

/// Lines kept after the scanned ones (a failure block's fields follow its `exitcode` line).
const LOOK_AHEAD: usize = 8;
/// Lines kept before (a traceback's frames precede its exception; a block's header precedes it).
const LOOK_BACK: usize = 80;
/// Content gathered before a scan: large enough that the anchor searches run long.
const BATCH: usize = 1 << 20;
/// Ranks beyond this are not tracked in `ranks_seen` (a prefix that large is not a rank).
const MAX_TRACKED_RANK: u32 = 1 << 20;
/// Distinct prefix combinations tracked (a few per rank in any real log).
const MAX_PREFIXES: usize = 1 << 16;

/// How a log's prefixes map to global ranks, learnt from the whole log: a line that carries
/// both `[default0]:` and `[rank2]:` under srun task 1 says local rank 0 of that task is rank 2.
struct RankResolver {
    learnt: std::collections::BTreeMap<(Option<u32>, u32), u32>,
    /// srun labels some lines that also carry torchrun's or PyTorch's prefixes: the labels
    /// are nodes' agents, not ranks.
    tasks_are_agents: bool,
    has_tasks: bool,
}

impl RankResolver {
    fn new(all: &BTreeSet<Prefixes>) -> Self {
        let learnt = all.iter().filter_map(|p| Some(((p.task, p.local?), p.global?))).collect();
        RankResolver {
            learnt,
            tasks_are_agents: all.iter().any(|p| p.task.is_some() && (p.local.is_some() || p.global.is_some())),
            has_tasks: all.iter().any(|p| p.task.is_some()),
        }
    }

    fn global(&self, p: &Prefixes) -> Option<u32> {
        p.global
            .or_else(|| self.learnt.get(&(p.task, p.local?)).copied())
            // Without srun's labels, one torchrun's local ranks are the job's ranks.
            .or_else(|| p.local.filter(|_| !self.has_tasks))
            .or_else(|| p.task.filter(|_| !self.tasks_are_agents))
    }
}

pub struct LogScanner {
    file: String,
    /// Unscanned content after the window's kept lines.
    window: Vec<u8>,
    /// 1-based number of the window's first line.
    first_line: u64,
    /// Bytes of `window` already scanned.
    scanned: usize,
    /// Events with the prefixes of their line; ranks are resolved at the end, when the whole
    /// log has said how its prefixes relate.
    events: Vec<(Event, Prefixes)>,
    dropped: u64,
    /// Every distinct combination of prefixes the log's lines carry (bounded).
    prefixes: BTreeSet<Prefixes>,
    /// Per combination of prefixes (bounded like `prefixes`), the last line of its own output:
    /// what a rank that went silent was doing last.
    last_output: HashMap<Prefixes, (u64, String)>,
    /// Training-progress lines with the prefixes of their line (resolved at the end, like events).
    iterations: Vec<(Iteration, Prefixes)>,
    iterations_dropped: u64,
    /// Lines that time a step without numbering it, counted per writer and form: their steps.
    unnumbered: HashMap<(Prefixes, TrainingLog), u64>,
    unreadable: Vec<UnreadableLine>,
    unreadable_lines: u64,
    rank_extremes: Vec<RankExtremes>,
    finders: Vec<memmem::Finder<'static>>,
    progress_finders: Vec<memmem::Finder<'static>>,
}

/// Why a line was picked out: a failure anchor or a progress anchor (a line may hold both).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Anchored {
    Failure,
    Progress,
}

impl LogScanner {
    pub fn new(file: &str) -> Self {
        LogScanner {
            file: file.to_owned(),
            window: Vec::new(),
            first_line: 1,
            scanned: 0,
            events: Vec::new(),
            dropped: 0,
            prefixes: BTreeSet::new(),
            last_output: HashMap::new(),
            iterations: Vec::new(),
            iterations_dropped: 0,
            unnumbered: HashMap::new(),
            unreadable: Vec::new(),
            unreadable_lines: 0,
            rank_extremes: Vec::new(),
            finders: ANCHORS.iter().map(|a| memmem::Finder::new(a.as_bytes()).into_owned()).collect(),
            progress_finders: iteration::ANCHORS
                .iter()
                .map(|a| memmem::Finder::new(a.as_bytes()).into_owned())
                .collect(),
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        self.window.extend_from_slice(chunk);
        if self.window.len() >= self.scanned + BATCH {
            self.scan(false);
        }
    }

    pub fn held_bytes(&self) -> usize {
        self.window.capacity()
            + self.events.capacity() * size_of::<(Event, Prefixes)>()
            + self.iterations.capacity() * size_of::<(Iteration, Prefixes)>()
            + self.rank_extremes.capacity() * size_of::<RankExtremes>()
    }

    pub fn finish(mut self) -> FileEvidence {
        self.scan(true);
        let lines = self.first_line - 1
            + memchr::memchr_iter(b'\n', &self.window).count() as u64
            + u64::from(self.window.last().is_some_and(|&b| b != b'\n'));
        let ranks = RankResolver::new(&self.prefixes);
        let ranks_seen: BTreeSet<u32> = self.prefixes.iter().filter_map(|p| ranks.global(p)).collect();
        let mut last_output: Vec<LastOutput> = self
            .last_output
            .iter()
            .map(|(prefixes, (line, text))| LastOutput {
                rank: ranks.global(prefixes),
                line: *line,
                text: text.clone(),
            })
            .collect();
        // One per rank: its latest line (a rank can write under two combinations of prefixes).
        last_output.sort_by(|a, b| (a.rank, b.line).cmp(&(b.rank, a.line)));
        last_output.dedup_by_key(|o| o.rank);
        let events = self
            .events
            .into_iter()
            .map(|(mut event, prefixes)| {
                event.rank = event.rank.or_else(|| ranks.global(&prefixes));
                event
            })
            .collect();
        let file_rank = file_rank(&self.file);
        let iterations = self
            .iterations
            .into_iter()
            .map(|(mut iteration, prefixes)| {
                iteration.rank = ranks.global(&prefixes).or(file_rank);
                iteration
            })
            .collect();
        FileEvidence {
            file_rank,
            file: self.file,
            events,
            events_dropped: self.dropped,
            ranks_seen: ranks_seen.into_iter().collect(),
            lines,
            last_output,
            flight: None,
            iterations,
            iterations_dropped: self.iterations_dropped,
            rank_extremes: self.rank_extremes,
            unreadable: self.unreadable,
            unreadable_lines: self.unreadable_lines,
        }
    }

    /// Scans the window's complete lines (all of them at the end), keeping the last few for
    /// the next scan's look-back.
    fn scan(&mut self, at_end: bool) {
        let complete =
            if at_end { self.window.len() } else { memchr::memrchr(b'\n', &self.window).map_or(0, |p| p + 1) };
        let limit = if at_end { complete } else { line_start_before(&self.window, complete, LOOK_AHEAD) };
        if limit <= self.scanned {
            return;
        }
        let region = self.window.get(self.scanned..limit).unwrap_or_default();
        let mut hits: Vec<(usize, Anchored)> = Vec::new();
        for (finders, anchored) in [(&self.finders, Anchored::Failure), (&self.progress_finders, Anchored::Progress)] {
            for finder in finders {
                hits.extend(finder.find_iter(region).map(|p| (line_start(&self.window, p + self.scanned), anchored)));
            }
        }
        hits.sort_unstable();
        hits.dedup();
        let failure_starts: Vec<usize> =
            hits.iter().filter(|(_, a)| *a == Anchored::Failure).map(|&(start, _)| start).collect();
        self.note_lines(self.scanned, limit, &failure_starts);

        let mut line_no = self.first_line;
        let mut counted_to = 0;
        for (start, anchored) in hits {
            line_no +=
                memchr::memchr_iter(b'\n', self.window.get(counted_to..start).unwrap_or_default()).count() as u64;
            counted_to = start;
            match anchored {
                Anchored::Failure => {
                    if let Some(event) = event_at(&self.window, start, line_no) {
                        if self.events.len() < MAX_EVENTS {
                            self.events.push(event);
                        } else {
                            self.dropped += 1;
                        }
                    }
                }
                Anchored::Progress => self.note_progress(start, line_no),
            }
        }
        let keep_from = line_start_before(&self.window, limit, LOOK_BACK);
        let dropped = self.window.get(..keep_from).unwrap_or_default();
        self.first_line += memchr::memchr_iter(b'\n', dropped).count() as u64;
        self.window.drain(..keep_from);
        self.scanned = limit - keep_from;
    }

    /// Keeps the training progress the line starting at `start` reports, if any.
    /// A progress bar rewrites its line with carriage returns: each rewrite is read, under the
    /// prefixes the line starts with.
    fn note_progress(&mut self, start: usize, line: u64) {
        let rest = self.window.get(start..).unwrap_or_default();
        let raw = rest.get(..memchr::memchr(b'\n', rest).unwrap_or(rest.len())).unwrap_or_default();
        let mut line_prefixes = None;
        let mut said = Vec::new();
        for rewrite in raw.split(|&b| b == b'\r').filter(|r| !r.is_empty()) {
            let text = line::clean_full(rewrite);
            let (prefixes, body) = line::split_prefix(&text);
            let prefixes = *line_prefixes.get_or_insert(prefixes);
            if let Some(progress) = iteration::parse(body) {
                said.push((progress, prefixes, clock::find_in_line(body.as_bytes())));
            }
        }
        for (progress, prefixes, time_ns) in said {
            self.note(progress, prefixes, line, time_ns);
        }
    }

    fn note(&mut self, progress: Progress, prefixes: Prefixes, line: u64, time_ns: Option<i64>) {
        let full = self.iterations.len() + self.rank_extremes.len() >= MAX_ITERATIONS;
        let iteration = |form, step, step_ns, covers_from| Iteration {
            line,
            rank: None,
            form,
            step,
            time_ns,
            step_ns,
            covers_from,
        };
        match progress {
            Progress::Unreadable { why } => {
                self.unreadable_lines += 1;
                if self.unreadable.len() < MAX_UNREADABLE {
                    self.unreadable.push(UnreadableLine { line, why: why.to_owned() });
                }
            }
            _ if full => self.iterations_dropped += 1,
            Progress::Iteration { form, step, step_ns } => {
                self.iterations.push((iteration(form, step, step_ns, None), prefixes));
            }
            Progress::Unnumbered { form, step_ns } => {
                let count = self.unnumbered.entry((prefixes, form)).or_default();
                *count += 1;
                let step = *count;
                self.iterations.push((iteration(form, step, Some(step_ns), None), prefixes));
            }
            Progress::Run { form, steps, step_ns } => {
                self.iterations.push((iteration(form, steps, Some(step_ns), Some(1)), prefixes));
            }
            Progress::Extremes { fastest_rank, fastest_ns, slowest_rank, slowest_ns } => {
                self.rank_extremes.push(RankExtremes {
                    line,
                    time_ns,
                    fastest_rank,
                    fastest_ns,
                    slowest_rank,
                    slowest_ns,
                });
            }
        }
    }

    /// Records the prefixes of every line starting in `from..to`, and the last line of own
    /// output under each (`anchored`: the sorted starts of the lines that hold an anchor,
    /// which are failure messages rather than output).
    fn note_lines(&mut self, from: usize, to: usize, anchored: &[usize]) {
        let region = self.window.get(from..to).unwrap_or_default();
        let first_line_no =
            self.first_line + memchr::memchr_iter(b'\n', self.window.get(..from).unwrap_or_default()).count() as u64;
        let mut anchored = anchored.iter().copied().skip_while(|&a| a < from).peekable();
        let mut start = 0;
        let mut last = Prefixes::default();
        // The latest own-output line of the run of lines with the same prefixes as `last`, and
        // per combination of prefixes the latest of this region: text is made once per
        // combination, not once per run (ranks' lines alternate in a console).
        let mut run_output: Option<(u64, usize, usize)> = None;
        let mut outputs: HashMap<Prefixes, (u64, usize, usize)> = HashMap::new();
        let ends = memchr::memchr_iter(b'\n', region).chain(std::iter::once(region.len()));
        for (line_no, end) in (first_line_no..).zip(ends) {
            let (line_start, line_end) = (start, end);
            start = end + 1;
            let is_anchored = anchored.next_if_eq(&(from + line_start)).is_some();
            let head = region.get(line_start..line_end.min(line_start + 40)).unwrap_or_default();
            let head = match std::str::from_utf8(head) {
                Ok(s) => s,
                Err(e) => std::str::from_utf8(head.get(..e.valid_up_to()).unwrap_or_default()).unwrap_or_default(),
            };
            let (prefixes, body) = if matches!(head.as_bytes().first(), Some(b'[' | b'0'..=b'9' | b' ' | b'\x1b')) {
                line::split_prefix(head)
            } else {
                (Prefixes::default(), head)
            };
            let plausible =
                [prefixes.global, prefixes.local, prefixes.task].iter().flatten().all(|&r| r < MAX_TRACKED_RANK);
            if prefixes != last {
                if let Some(output) = run_output.take() {
                    outputs.insert(last, output);
                }
                if prefixes != Prefixes::default() && plausible && self.prefixes.len() < MAX_PREFIXES {
                    self.prefixes.insert(prefixes);
                }
                last = prefixes;
            }
            if !is_anchored && plausible && is_own_output(body) {
                run_output = Some((line_no, from + line_start, from + line_end));
            }
        }
        if let Some(output) = run_output {
            outputs.insert(last, output);
        }
        for (prefixes, (line_no, start, end)) in outputs {
            if self.last_output.len() >= MAX_PREFIXES && !self.last_output.contains_key(&prefixes) {
                continue;
            }
            let text = line::shorten(line::clean_full(self.window.get(start..end).unwrap_or_default()));
            self.last_output.insert(prefixes, (line_no, text));
        }
    }
}

/// A line the training program printed: not the frames of a traceback, a blank line, or a
/// warning of torch's own C++ or launcher (glog's `W1205 18:49:45.305 …` header) that says
/// nothing of what the program was doing (`body`: the line's start after its prefixes).
fn is_own_output(body: &str) -> bool {
    let body = body.trim_end_matches(['\r', '\n']);
    let glog = body.trim_start_matches('[').as_bytes();
    let is_glog =
        matches!(glog, [b'I' | b'W' | b'E' | b'F', m, d, _, _, b' ', ..] if m.is_ascii_digit() && d.is_ascii_digit());
    !(is_glog
        || body.trim().is_empty()
        || body.starts_with([' ', '\t', '^', '~'])
        || body.starts_with("Traceback")
        || body.starts_with("During handling")
        || body.starts_with("The above exception"))
}

/// The start of the line holding byte `at`.
fn line_start(bytes: &[u8], at: usize) -> usize {
    memchr::memrchr(b'\n', bytes.get(..at).unwrap_or_default()).map_or(0, |p| p + 1)
}

/// The start of the line `lines` lines before the line starting at `at` (or 0).
fn line_start_before(bytes: &[u8], at: usize, lines: usize) -> usize {
    let mut start = at;
    for _ in 0..lines {
        if start == 0 {
            break;
        }
        start = line_start(bytes, start - 1);
    }
    start
}

/// The lines around the one starting at `start`: up to `back` before it (nearest first) and
/// up to `ahead` after it.
fn neighbours(bytes: &[u8], start: usize, back: usize, ahead: usize) -> (Vec<&[u8]>, Vec<&[u8]>) {
    let mut before = Vec::new();
    let mut s = start;
    while before.len() < back && s > 0 {
        let prev = line_start(bytes, s - 1);
        before.push(bytes.get(prev..s - 1).unwrap_or_default());
        s = prev;
    }
    let after_start = memchr::memchr(b'\n', bytes.get(start..).unwrap_or_default()).map(|p| start + p + 1);
    let after = after_start
        .and_then(|a| bytes.get(a..))
        .map(|rest| rest.split(|&b| b == b'\n').take(ahead).collect())
        .unwrap_or_default();
    (before, after)
}

/// The event the line starting at `start` holds, if any.
fn event_at(window: &[u8], start: usize, line_no: u64) -> Option<(Event, Prefixes)> {
    let rest = window.get(start..).unwrap_or_default();
    let raw = rest.get(..memchr::memchr(b'\n', rest).unwrap_or(rest.len())).unwrap_or_default();
    let full = line::clean_full(raw);
    let (prefixes, body) = line::split_prefix(&full);
    let time_ns = clock::find_in_line(body.as_bytes());
    let event = |said: Said, rank, time_ns, at| Event {
        line: line_no,
        rank,
        pg_rank: said.pg_rank,
        pg: said.pg,
        time_ns,
        kind: said.kind,
        text: line::shorten(full.clone()),
        at,
    };
    if let Some(("exitcode", value)) = line::block_field(body) {
        return failure_block(window, start, value)
            .map(|(said, block_rank, time)| (event(said, block_rank, time.or(time_ns), None), prefixes));
    }
    let said = line::classify(body)?;
    let at = match said.kind {
        EventKind::Exception { .. } | EventKind::OutOfMemory | EventKind::Network => raised_at(window, start),
        _ => None,
    };
    Some((event(said, None, time_ns, at), prefixes))
}

/// The innermost frame of the traceback above an exception line.
fn raised_at(window: &[u8], start: usize) -> Option<String> {
    let (before, _) = neighbours(window, start, 40, 0);
    for raw in before {
        let text = line::clean_full(raw);
        let (_, body) = line::split_prefix(&text);
        if let Some(frame) = line::frame(body) {
            return Some(frame);
        }
        if body.trim_start().starts_with("Traceback") {
            break;
        }
    }
    None
}

/// One entry of torchrun's failure report, read around its `exitcode :` line.
fn failure_block(window: &[u8], start: usize, exitcode_value: &str) -> Option<(Said, Option<u32>, Option<i64>)> {
    let exitcode: i32 = exitcode_value.split_whitespace().next()?.parse().ok()?;
    let (before, after) = neighbours(window, start, LOOK_BACK, 3);
    let mut rank = None;
    let mut local_rank = None;
    let mut time = None;
    let mut signal = line::signal_name(exitcode).map(str::to_owned);
    let mut error_file = None;
    for raw in before.iter().take(4).chain(after.iter()) {
        let text = line::clean_full(raw);
        let (_, body) = line::split_prefix(&text);
        match line::block_field(body) {
            Some(("rank", value)) => {
                rank = value.split_whitespace().next().and_then(|r| r.parse().ok());
                local_rank =
                    value.split("local_rank:").nth(1).and_then(|r| r.trim().trim_end_matches(')').parse().ok());
            }
            Some(("time", value)) => time = clock::parse_at(value.as_bytes()),
            Some(("error_file", value)) if !value.starts_with('<') && !value.is_empty() => {
                error_file = Some(value.to_owned());
            }
            Some(("traceback" | "msg", value)) if value.contains("(SIG") => {
                signal = value.split('(').nth(1).and_then(|s| s.split(')').next()).map(str::to_owned);
            }
            _ => {}
        }
    }
    // The nearest header above says which list the entry is in.
    let root_cause = before.iter().find_map(|raw| {
        let text = String::from_utf8_lossy(raw);
        if text.contains("Root Cause") {
            Some(true)
        } else if text.contains("Failures:") {
            Some(false)
        } else {
            None
        }
    });
    let kind = EventKind::Exit { exitcode, signal, local_rank, root_cause: root_cause.unwrap_or(false), error_file };
    Some((Said { kind, pg_rank: None, pg: None }, rank, time))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(file: &str, text: &str, chunk: usize) -> FileEvidence {
        let mut scanner = LogScanner::new(file);
        for piece in text.as_bytes().chunks(chunk.max(1)) {
            scanner.feed(piece);
        }
        scanner.finish()
    }

    const CONSOLE: &str = "\
W1205 12:00:00.000000 1 torch/distributed/run.py:793] Setting OMP_NUM_THREADS
[default0]:step 1 loss 3.0
[default2]:Traceback (most recent call last):
[default2]:  File \"/w/train.py\", line 40, in <module>
[default2]:    main()
[default2]:  File \"/w/train.py\", line 31, in main
[default2]:    raise RuntimeError(\"injected failure on rank 2\")
[default2]:RuntimeError: injected failure on rank 2
[default0]:RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:1234
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-12-05_12:00:03
  host      : box
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 11)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-05_12:00:02
  host      : box
  rank      : 2 (local_rank: 2)
  exitcode  : 1 (pid: 13)
  error_file: /tmp/err.json
  traceback : Traceback (most recent call last):
============================================================
";

    #[test]
    fn each_rank_s_last_own_output_skips_tracebacks_warnings_and_failure_lines() {
        for chunk in [1, 7, 4096] {
            let evidence = scan("console.log", CONSOLE, chunk);
            let got: Vec<(Option<u32>, u64, &str)> =
                evidence.last_output.iter().map(|o| (o.rank, o.line, o.text.as_str())).collect();
            // Lines without a prefix are the agent's in a console (the file has no rank).
            let rule = "=".repeat(60);
            assert_eq!(got, [(None, 30, rule.as_str()), (Some(0), 2, "[default0]:step 1 loss 3.0")], "chunk {chunk}");
        }
        let per_rank =
            scan("rank1.log", "step 1\nsaving checkpoint\n[W1205 18:49:45.305 Utils.hpp:137] Warning: x\n", 3);
        let got: Vec<(Option<u32>, u64, &str)> =
            per_rank.last_output.iter().map(|o| (o.rank, o.line, o.text.as_str())).collect();
        assert_eq!(got, [(None, 2, "saving checkpoint")]);
    }

    #[test]
    fn reads_a_console_in_any_chunking() {
        let whole = scan("console.log", CONSOLE, usize::MAX);
        for chunk in [1, 7, 64, 1000] {
            assert_eq!(scan("console.log", CONSOLE, chunk), whole, "chunks of {chunk}");
        }
        let summary: Vec<String> =
            whole.events.iter().map(|e| format!("{}:{:?}:{:?}:{:?}", e.line, e.rank, e.kind, e.at)).collect();
        assert_eq!(
            summary,
            [
                "8:Some(2):Exception { name: \"RuntimeError\" }:Some(\"/w/train.py:31 in main\")",
                "9:Some(0):PeerLost:None",
                "18:Some(0):Exit { exitcode: 1, signal: None, local_rank: Some(0), root_cause: false, error_file: None }:None",
                "27:Some(2):Exit { exitcode: 1, signal: None, local_rank: Some(2), root_cause: true, error_file: Some(\"/tmp/err.json\") }:None",
            ]
        );
        assert_eq!(whole.ranks_seen, [0, 2]);
        assert_eq!(whole.lines, 30);
        assert!(whole.events.iter().all(|e| e.kind != EventKind::TornDown));
    }

    #[test]
    fn keeps_line_numbers_and_bounds_across_large_windows() {
        let noise = "[rank1]:step 7 loss 2.5 tokens 4096\n".repeat(100_000);
        let text = format!("{noise}[rank1]:MemoryError\n{noise}");
        let evidence = scan("big.log", &text, 256 << 10);
        assert_eq!(evidence.events.len(), 1);
        let event = evidence.events.first().unwrap();
        assert_eq!((event.line, event.rank, &event.kind), (100_001, Some(1), &EventKind::OutOfMemory));
        assert_eq!(evidence.lines, 200_001);
        assert_eq!(evidence.ranks_seen, [1]);
    }
}

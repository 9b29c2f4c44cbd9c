//! One log line: its cleaned text, the global rank its prefix names, and what it says.
//!
//! Table-driven over the messages PyTorch, NCCL, gloo and torchrun print (quoted in
//! docs/formats.md with the source file of each); every parser here reads a single line, so
//! it cannot lose its place in a log cut mid-way or joined from excerpts.

use super::evidence::EventKind;

/// Evidence lines are cut at this many characters (a traceback line can be megabytes).
pub const MAX_TEXT: usize = 400;

/// The line as a user should see it: ANSI colours and what a carriage return overwrote are
/// removed, invalid UTF-8 replaced, trailing whitespace dropped, cut at [`MAX_TEXT`].
pub fn clean(raw: &[u8]) -> String {
    shorten(clean_full(raw))
}

/// `text` cut at [`MAX_TEXT`] characters, marked with an ellipsis where cut.
pub fn shorten(mut text: String) -> String {
    if let Some((cut, _)) = text.char_indices().nth(MAX_TEXT) {
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// [`clean`] without the cut: what the classifier reads.
pub fn clean_full(raw: &[u8]) -> String {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    // A progress bar rewrites its line with `\r`: only the last rewrite was on screen.
    let visible = raw.rsplit(|&b| b == b'\r').find(|part| !part.is_empty()).unwrap_or(raw);
    let mut text = String::with_capacity(visible.len().min(MAX_TEXT));
    let mut rest = visible;
    while let Some((&first, tail)) = rest.split_first() {
        if first == 0x1b {
            rest = skip_escape(tail);
            continue;
        }
        let run = rest.iter().position(|&b| b == 0x1b).unwrap_or(rest.len());
        let (chunk, tail) = rest.split_at(run);
        text.push_str(&String::from_utf8_lossy(chunk));
        rest = tail;
    }
    let end = text.trim_end().len();
    text.truncate(end);
    text
}

/// Skips one ANSI escape sequence (after the ESC byte): `[` parameters and a final letter.
fn skip_escape(after_esc: &[u8]) -> &[u8] {
    match after_esc.split_first() {
        Some((b'[', params)) => {
            let end = params.iter().position(|b| (0x40..=0x7e).contains(b)).map_or(params.len(), |p| p + 1);
            params.get(end..).unwrap_or_default()
        }
        Some((_, rest)) => rest,
        None => after_esc,
    }
}

/// What a line's prefixes say about who wrote it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefixes {
    /// `[rank3]:`, which PyTorch writes: the global rank.
    pub global: Option<u32>,
    /// torchrun's `--tee` prefix `[default3]:` (`[<role><local rank>]:`): the rank on its node.
    pub local: Option<u32>,
    /// Slurm `srun -l`'s `3: `: the task, which is the global rank when srun starts one process
    /// per rank, and the node's agent when it starts torchrun per node.
    pub task: Option<u32>,
}

/// The prefixes of `line` (they stack: `1: [default0]:[rank2]:[E709 …]`) and the rest.
pub fn split_prefix(line: &str) -> (Prefixes, &str) {
    let mut prefixes = Prefixes::default();
    let mut rest = line;
    for _ in 0..4 {
        let trimmed = rest.trim_ascii_start();
        if let Some((role, r, tail)) = bracket_rank(trimmed) {
            if role == "rank" {
                prefixes.global = Some(r);
            } else {
                prefixes.local = Some(r);
            }
            rest = tail;
        } else if let Some((r, tail)) = srun_rank(trimmed).filter(|_| prefixes == Prefixes::default()) {
            prefixes.task = Some(r);
            rest = tail;
        } else {
            break;
        }
    }
    (prefixes, rest)
}

/// `[rank3]:` or `[<role>3]:` (letters then digits, then `]:` or `]`): the role and number.
/// Byte by byte: it runs on the head of every line of a log.
fn bracket_rank(s: &str) -> Option<(&str, u32, &str)> {
    let inner = s.strip_prefix('[')?;
    let bytes = inner.as_bytes();
    let role_len = bytes.iter().take_while(|b| b.is_ascii_alphabetic() || **b == b'_').count();
    let digits = bytes.get(role_len..)?.iter().take_while(|b| b.is_ascii_digit()).count();
    if role_len == 0 || digits == 0 || digits > 7 {
        return None;
    }
    let (role, rest) = inner.split_at_checked(role_len)?;
    let (number, tail) = rest.split_at_checked(digits)?;
    let tail = tail.strip_prefix(']')?;
    Some((role, number.parse().ok()?, tail.strip_prefix(':').unwrap_or(tail)))
}

/// Slurm `srun -l`: `3: ` at the start of the line.
fn srun_rank(s: &str) -> Option<(u32, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 6 {
        return None;
    }
    let (number, tail) = s.split_at(digits);
    let tail = tail.strip_prefix(": ")?;
    Some((number.parse().ok()?, tail))
}

/// What a line (without its rank prefix) says, and the process-group rank and group it names.
#[derive(Clone, Debug, PartialEq)]
pub struct Said {
    pub kind: EventKind,
    pub pg_rank: Option<u32>,
    pub pg: Option<String>,
}

/// The number after `key` in `s` (`SeqNum=12`, `last enqueued work: 79`).
fn number_after(s: &str, key: &str) -> Option<u64> {
    let at = s.find(key)? + key.len();
    let digits: &str = s.get(at..)?.trim_start();
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    digits.get(..end)?.parse().ok()
}

/// The word after `key` (`OpType=ALLREDUCE`).
fn word_after<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let at = s.find(key)? + key.len();
    let word = s.get(at..)?;
    let end = word.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(word.len());
    word.get(..end).filter(|w| !w.is_empty())
}

/// NCCL's `[Rank N]` or `[PG ID 0 PG GUID 0(default_pg) Rank N]` and its group.
fn nccl_prefix(s: &str) -> (Option<u32>, Option<String>) {
    if let Some(at) = s.find("[PG ID ") {
        let inner = s.get(at + 1..).and_then(|t| t.split(']').next()).unwrap_or_default();
        let rank = number_after(inner, " Rank ").and_then(|r| u32::try_from(r).ok());
        let guid = inner.split("PG GUID ").nth(1).map(|g| g.rsplit_once(" Rank").map_or(g, |(g, _)| g).trim());
        let id = number_after(inner, "PG ID ").map(|id| id.to_string());
        return (rank, guid.map(str::to_owned).or(id));
    }
    let rank = number_after(s, "[Rank ").and_then(|r| u32::try_from(r).ok());
    (rank, None)
}

/// The collective a NCCL work string names: `WorkNCCL(SeqNum=…, OpType=…, NumelIn=…, …)`.
fn timeout(s: &str) -> EventKind {
    EventKind::Timeout {
        seq: number_after(s, "SeqNum="),
        op: word_after(s, "OpType=").map(str::to_owned),
        numel_in: number_after(s, "NumelIn="),
        numel_out: number_after(s, "NumelOut="),
    }
}

fn contains_any(s: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| s.contains(n))
}

/// Messages of a peer that went away: what the survivors of a crash print.
const PEER_LOST: &[&str] = &[
    "Connection closed by peer",
    "Connection reset by peer",
    "Broken pipe",
    "ncclRemoteError",
    "remote process exited",
    "Connection refused",
    "DistStoreError",
    "communicator was aborted",
    "ProcessGroupNCCL is aborted",
    "Application timeout caused pair closure",
];

/// A collective that received another size than it expected (gloo's `pair.cc` enforce).
const WRONG_COLLECTIVE: &[&str] =
    &["distributed collective mismatch", "doesn't match expected size", "does not match expected size"];

/// Messages of a collective or a store that waited too long.
const TIMED_OUT: &[&str] = &[
    "Watchdog caught collective operation timeout",
    "Caught collective operation timeout",
    "timed out in blocking wait",
    "Timed out waiting",
    "timed out after",
    "Socket Timeout",
    "before timing out",
];

/// Transport failures of this rank's own network.
const NETWORK: &[&str] = &["ncclSystemError", "NET/IB", "NET/Socket", "ibv_", "unhandled system error"];

const OUT_OF_MEMORY: &[&str] =
    &["out of memory", "can't allocate memory", "OutOfMemoryError", "MemoryError", "Cannot allocate memory"];

/// What the line says, when it says anything about a failure.
pub fn classify(body: &str) -> Option<Said> {
    let (pg_rank, pg) = nccl_prefix(body);
    let said = |kind| Some(Said { kind, pg_rank, pg: pg.clone() });
    if body.contains("failure detected by watchdog at work sequence id") {
        return said(EventKind::Progress {
            failed_seq: number_after(body, "work sequence id:"),
            last_enqueued: number_after(body, "last enqueued work:")?,
            last_completed: number_after(body, "last completed work:"),
        });
    }
    if body.contains("Received a dump signal") {
        let from_rank = number_after(body, " from ")
            .or_else(|| number_after(body, "from  rank"))
            .or_else(|| number_after(body, "from rank"));
        return said(EventKind::DumpSignal {
            from_rank: from_rank.and_then(|r| u32::try_from(r).ok()),
            last_enqueued: number_after(body, "work:"),
            last_completed: body.split("last completed").nth(1).and_then(|t| number_after(t, "work:")),
        });
    }
    if body.contains("watchdog got stuck") {
        return said(EventKind::WatchdogStuck);
    }
    if body.contains("Detected mismatch between collectives") {
        return said(EventKind::Mismatch);
    }
    if contains_any(body, WRONG_COLLECTIVE) {
        return said(EventKind::WrongCollective);
    }
    if contains_any(body, TIMED_OUT) {
        return said(timeout(body));
    }
    if let Some((name, message)) = exception(body) {
        return classify_exception(name, message).map(|kind| Said { kind, pg_rank, pg });
    }
    if contains_any(body, PEER_LOST) {
        return said(EventKind::PeerLost);
    }
    if body.contains("closing signal SIGTERM") || body.contains("closing signal SIGINT") {
        return said(EventKind::TornDown);
    }
    if contains_any(body, NETWORK) && contains_any(body, &["error", "Error", "failed", "WARN"]) {
        return said(EventKind::Network);
    }
    None
}

/// A Python exception line, `torch.OutOfMemoryError: CUDA out of memory…`: its name and message.
pub fn exception(body: &str) -> Option<(&str, &str)> {
    let text = body.trim_start();
    let end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).unwrap_or(text.len());
    let (name, rest) = text.split_at(end);
    let short = name.rsplit('.').next().unwrap_or(name);
    let is_exception = ["Error", "Exception", "Interrupt", "Exit"].iter().any(|s| short.ends_with(s))
        && short.chars().next().is_some_and(|c| c.is_ascii_uppercase());
    if !is_exception || !(rest.is_empty() || rest.starts_with(':')) {
        return None;
    }
    Some((name, rest.strip_prefix(':').unwrap_or(rest).trim()))
}

/// The cause an exception stands for, or `None` for torchrun's own summary.
pub fn classify_exception(name: &str, message: &str) -> Option<EventKind> {
    let whole = |needles: &[&str]| contains_any(name, needles) || contains_any(message, needles);
    if name.ends_with("ChildFailedError") {
        return None;
    }
    Some(if whole(OUT_OF_MEMORY) {
        EventKind::OutOfMemory
    } else if whole(TIMED_OUT) || message.contains("timed out") || message.contains("Timeout") {
        timeout(message)
    } else if whole(PEER_LOST) {
        EventKind::PeerLost
    } else if whole(NETWORK) {
        EventKind::Network
    } else {
        EventKind::Exception { name: name.rsplit('.').next().unwrap_or(name).to_owned() }
    })
}

/// The signal a negative exit code stands for.
pub fn signal_name(exitcode: i32) -> Option<&'static str> {
    Some(match -exitcode {
        1 => "SIGHUP",
        2 => "SIGINT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// A torchrun failure-block field, `  rank      : 3 (local_rank: 3)` (or the old `rank: 3`):
/// its key and value.
pub fn block_field(body: &str) -> Option<(&str, &str)> {
    let (key, value) = body.split_once(':')?;
    let key = key.trim();
    const KEYS: [&str; 7] = ["time", "host", "rank", "exitcode", "error_file", "traceback", "msg"];
    KEYS.contains(&key).then(|| (key, value.trim()))
}

/// A traceback frame line, `  File "train.py", line 42, in step`, as `train.py:42 in step`.
pub fn frame(body: &str) -> Option<String> {
    let rest = body.trim_start().strip_prefix("File \"")?;
    let (file, rest) = rest.split_once('"')?;
    let line = number_after(rest, "line ")?;
    let function = rest.split_once(", in ").map(|(_, f)| f.trim());
    Some(match function {
        Some(f) => format!("{file}:{line} in {f}"),
        None => format!("{file}:{line}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleans_what_a_terminal_shows() {
        assert_eq!(clean(b"\x1b[31mERROR\x1b[0m boom  \r"), "ERROR boom");
        assert_eq!(clean(b" 10%|#  | 1/10\r 20%|## | 2/10\rRuntimeError: x"), "RuntimeError: x");
        assert_eq!(clean(b"\xff\xfeok"), "\u{fffd}\u{fffd}ok");
        assert_eq!(clean(&[b'a'; 1000]).chars().count(), MAX_TEXT + 1);
    }

    #[test]
    fn reads_rank_prefixes() {
        let p = |global, local, task| Prefixes { global, local, task };
        let cases: &[(&str, Prefixes, &str)] = &[
            ("[rank3]:[E709 17:05:38] x", p(Some(3), None, None), "[E709 17:05:38] x"),
            ("[default12]:[rank12]: RuntimeError: y", p(Some(12), Some(12), None), " RuntimeError: y"),
            ("1: [default0]:[rank2]: RuntimeError: y", p(Some(2), Some(0), Some(1)), " RuntimeError: y"),
            ("3: Traceback (most recent call last):", p(None, None, Some(3)), "Traceback (most recent call last):"),
            ("  17: x", p(None, None, Some(17)), "x"),
            ("[default1]:3: x", p(None, Some(1), None), "3: x"),
            (
                "[E709 17:05:38.1 ProcessGroupNCCL.cpp:632] [Rank 0] x",
                p(None, None, None),
                "[E709 17:05:38.1 ProcessGroupNCCL.cpp:632] [Rank 0] x",
            ),
            ("2024-07-09 17:05:38: x", p(None, None, None), "2024-07-09 17:05:38: x"),
            ("[Rank 1] x", p(None, None, None), "[Rank 1] x"),
        ];
        for &(line, prefixes, rest) in cases {
            assert_eq!(split_prefix(line), (prefixes, rest), "{line}");
        }
    }

    fn kind(line: &str) -> Option<EventKind> {
        classify(split_prefix(line).1).map(|s| s.kind)
    }

    #[test]
    fn classifies_the_messages_of_failed_jobs() {
        let watchdog = "[rank1]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=20585, OpType=ALLREDUCE, NumelIn=1259621, NumelOut=1259621, Timeout(ms)=600000) ran for 600000 milliseconds before timing out.";
        let said = classify(split_prefix(watchdog).1).unwrap();
        assert_eq!(said.pg_rank, Some(1));
        assert_eq!(
            said.kind,
            EventKind::Timeout {
                seq: Some(20585),
                op: Some("ALLREDUCE".into()),
                numel_in: Some(1_259_621),
                numel_out: Some(1_259_621)
            }
        );
        let old = "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, TensorShape=[1024], Timeout(ms)=1800000) ran for 1800424 milliseconds before timing out.";
        assert!(matches!(kind(old), Some(EventKind::Timeout { seq: None, op: Some(op), .. }) if op == "BROADCAST"));
        let status = "[PG ID 0 PG GUID 0(default_pg) Rank 3]  failure detected by watchdog at work sequence id: 78 PG status: last enqueued work: 79, last completed work: 77";
        let said = classify(status).unwrap();
        assert_eq!((said.pg_rank, said.pg.as_deref()), (Some(3), Some("0(default_pg)")));
        assert_eq!(
            said.kind,
            EventKind::Progress { failed_seq: Some(78), last_enqueued: 79, last_completed: Some(77) }
        );
        let signal = "[PG ID 0 PG GUID 0(default_pg) Rank 2] Received a dump signal due to a collective timeout from  rank 7 and we will try our best to dump the debug info. Last enqueued NCCL work: 12, last completed NCCL work: 11.This is most likely caused by incorrect usages of collectives";
        assert_eq!(
            kind(signal),
            Some(EventKind::DumpSignal { from_rank: Some(7), last_enqueued: Some(12), last_completed: Some(11) })
        );
        let table: &[(&str, Option<EventKind>)] = &[
            (
                "[rank2]: RuntimeError: injected failure on rank 2",
                Some(EventKind::Exception { name: "RuntimeError".into() }),
            ),
            ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", Some(EventKind::OutOfMemory)),
            (
                "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: can't allocate memory: you tried to allocate 80000000000 bytes.",
                Some(EventKind::OutOfMemory),
            ),
            ("MemoryError", Some(EventKind::OutOfMemory)),
            (
                "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:3456",
                Some(EventKind::PeerLost),
            ),
            (
                "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 20000ms for recv operation to complete",
                Some(EventKind::Timeout { seq: None, op: None, numel_in: None, numel_out: None }),
            ),
            (
                "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, remote process exited or there was a network error, NCCL version 2.20.5\nncclRemoteError",
                Some(EventKind::PeerLost),
            ),
            (
                "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3 ncclSystemError: System call (e.g. socket, malloc) or external library call failed",
                Some(EventKind::Network),
            ),
            (
                "RuntimeError: NCCL error: ncclUnhandledCudaError: Call to CUDA function failed.",
                Some(EventKind::Exception { name: "RuntimeError".into() }),
            ),
            (
                "node1:123:456 [0] NCCL INFO NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129",
                Some(EventKind::Network),
            ),
            (
                "W0709 17:05:38.162000 1 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4321 closing signal SIGTERM",
                Some(EventKind::TornDown),
            ),
            ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", None),
            (
                "[rank0]:[W709 ProcessGroupNCCL.cpp:1] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress",
                Some(EventKind::WatchdogStuck),
            ),
            (
                "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=5, OpType=ALLREDUCE), but Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=5, OpType=BROADCAST).",
                Some(EventKind::Mismatch),
            ),
            (
                "[default2]:  what():  [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:464] op.preamble.length <= op.nbytes. 32 vs 4. Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?",
                Some(EventKind::WrongCollective),
            ),
            ("step 12 loss 3.2 memory: 12.3GiB error rate 0", None),
            ("Error handling is described in the docs", None),
        ];
        for (line, expected) in table {
            assert_eq!(&kind(line), expected, "{line}");
        }
    }

    #[test]
    fn reads_block_fields_and_frames() {
        assert_eq!(block_field("  rank      : 3 (local_rank: 3)"), Some(("rank", "3 (local_rank: 3)")));
        assert_eq!(block_field("  exitcode  : -9 (pid: 4321)"), Some(("exitcode", "-9 (pid: 4321)")));
        assert_eq!(block_field("  error_file: <N/A>"), Some(("error_file", "<N/A>")));
        assert_eq!(block_field("loss: 3"), None);
        assert_eq!(frame("  File \"/w/train.py\", line 42, in step").as_deref(), Some("/w/train.py:42 in step"));
        assert_eq!(signal_name(-9), Some("SIGKILL"));
        assert_eq!(signal_name(1), None);
    }
}

//! One Chrome-trace event: the fields any importer looks at, borrowed from the buffer and read
//! with the [`json`] scanner. Everything else in the event is skipped unread.

use std::borrow::Cow;

use super::json::{self, ScanError};
use super::numbers::{MICROS, NumberProblem, digits, plain_decimal_prefix, to_duration, to_nanos, to_u64};
use crate::diag::{DiagnosticSink, Location, Severity};
use crate::model::Nanos;

/// A string that borrows from the input unless it had escapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Str<'a>(pub Cow<'a, str>);

impl Str<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The raw JSON text of a value, parsed where it is used (numbers from the bytes exactly,
/// lists by the scanner or serde): nothing is checked until then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawText<'a>(pub &'a [u8]);

impl<'a> RawText<'a> {
    pub fn get(self) -> &'a [u8] {
        self.0
    }
}

/// A time (`ts`, `dur`, in microseconds): in nanoseconds when the scan read it on its way
/// (a plain decimal, as profilers write times), else its text, read where it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Time<'a> {
    Read(Nanos),
    Raw(RawText<'a>),
}

impl Time<'_> {
    fn nanos(self) -> Result<Nanos, NumberProblem> {
        match self {
            Time::Read(ns) => Ok(ns),
            Time::Raw(raw) => to_nanos(raw.get(), MICROS),
        }
    }

    fn duration(self) -> Result<Nanos, NumberProblem> {
        match self {
            // A plain decimal has no sign.
            Time::Read(ns) => Ok(ns),
            Time::Raw(raw) => to_duration(raw.get(), MICROS),
        }
    }
}

/// `pid`/`tid` as a stable integer key: usually the integer itself (fractions truncated,
/// beyond i64 saturated); a string id ("Spans", "") is hashed, folded into the negative range
/// so it cannot collide with real ids. `None` for anything else. Importers only ever compare
/// ids, so the key is all an event keeps: a plain integer, cheap to store per event.
fn id_key(raw: &[u8]) -> Result<Option<i64>, &'static str> {
    if raw.first() == Some(&b'"') {
        return json::string(raw).map(|s| Some(text_id_key(&s)));
    }
    // Nearly every id is a few plain digits: read them without the general parsers below.
    if let Some(id) = digits(raw).and_then(|n| i64::try_from(n).ok()) {
        return Ok(Some(id));
    }
    let Ok(text) = std::str::from_utf8(raw) else { return Ok(None) };
    Ok(text
        .parse::<i64>()
        .ok()
        .or_else(|| text.parse::<u64>().ok().map(|_| i64::MAX))
        .or_else(|| text.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| f as i64)))
}

/// FNV-1a of a string id, negative.
fn text_id_key(text: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    -((h >> 2) as i64) - 1
}

/// The `args` fields any importer looks at.
#[derive(Debug, Default)]
pub struct RawArgs<'a> {
    /// Metadata events: `process_name`, `thread_name`.
    pub name: Option<Str<'a>>,
    pub input_dims: Option<RawText<'a>>,
    pub concrete_inputs: Option<RawText<'a>>,
    /// The kernel launch's id, read as [`to_u64`] reads it (`None` when it cannot be).
    pub correlation: Option<u64>,
    pub collective_name: Option<Str<'a>>,
    /// A collective's group, as PyTorch records it: `"[0, 8, 16, 24]"` (a string, or a list).
    pub process_group_ranks: Option<RawText<'a>>,
    pub step: Option<RawText<'a>>,
    pub iteration: Option<RawText<'a>>,
    pub mb_id: Option<RawText<'a>>,
    pub microbatch: Option<RawText<'a>>,
    pub micro_batch: Option<RawText<'a>>,
    /// Exact sequence lengths, where a writer records them (`[512, 77, ...]`).
    pub seqlens: Option<RawText<'a>>,
    pub seq_lens: Option<RawText<'a>>,
}

/// The `args` keys any importer reads, and two it skips that kernels carry: the PyTorch
/// profiler's kernels and launches put `correlation` first and `stream` after it, and a
/// collective's kernel its name, size and group next, so these come first, in that order.
const ARGS_KEYS: &[json::UsualKey] = &[
    json::UsualKey::new(b"correlation"),
    json::UsualKey::new(b"stream"),
    json::UsualKey::new(b"Collective name"),
    json::UsualKey::new(b"Group size"),
    json::UsualKey::new(b"Process Group Ranks"),
    json::UsualKey::new(b"Input Dims"),
    json::UsualKey::new(b"Concrete Inputs"),
    json::UsualKey::new(b"name"),
    json::UsualKey::new(b"step"),
    json::UsualKey::new(b"iteration"),
    json::UsualKey::new(b"mb_id"),
    json::UsualKey::new(b"microbatch"),
    json::UsualKey::new(b"micro_batch"),
    json::UsualKey::new(b"seqlens"),
    json::UsualKey::new(b"seq_lens"),
];
const CORRELATION: usize = 0;
const COLLECTIVE_NAME: usize = 2;
const PROCESS_GROUP_RANKS: usize = 4;
const INPUT_DIMS: usize = 5;
const CONCRETE_INPUTS: usize = 6;
const NAME_ARG: usize = 7;
const STEP: usize = 8;
const ITERATION: usize = 9;
const MB_ID: usize = 10;
const MICROBATCH: usize = 11;
const MICRO_BATCH: usize = 12;
const SEQLENS: usize = 13;
const SEQ_LENS: usize = 14;

impl<'a> RawArgs<'a> {
    /// Reads the args value at `bytes[start]` into `slot`, in place (the struct is large: it
    /// is not moved about per event), and returns where it ends. The slot holds the fields of
    /// interest when the value is an object, and stays `None` when it is not or is malformed
    /// (the event is kept without them); an `Err` inside when a kept string is unusable.
    fn scan_into(
        slot: &mut Option<Self>,
        bytes: &'a [u8],
        start: usize,
    ) -> Result<(Result<(), &'static str>, usize), ScanError> {
        if bytes.get(start) != Some(&b'{') {
            return Ok((Ok(()), json::value_end(bytes, start)?));
        }
        let args = slot.insert(RawArgs::default());
        let mut bad = None;
        let scanned = json::object_scanning(bytes, start, ARGS_KEYS, |key, at| {
            let json::Key::Usual(field) = key else { return json::value_end(bytes, at) };
            // Launches' and kernels' ids, one per event on a GPU: read in the pass that ends them.
            if field == CORRELATION
                && let Some((id, end)) = json::plain_integer_at(bytes, at)
            {
                args.correlation = Some(id);
                return Ok(end);
            }
            let end = json::value_end(bytes, at)?;
            let value = bytes.get(at..end).unwrap_or_default();
            let text = || Some(RawText(value));
            let string = |bad: &mut Option<&'static str>| match json::string(value) {
                Ok(s) => Some(Str(s)),
                Err(why) => {
                    *bad = Some(why);
                    None
                }
            };
            match field {
                NAME_ARG => args.name = string(&mut bad),
                INPUT_DIMS => args.input_dims = text(),
                CONCRETE_INPUTS => args.concrete_inputs = text(),
                CORRELATION => args.correlation = to_u64(value),
                COLLECTIVE_NAME => args.collective_name = string(&mut bad),
                PROCESS_GROUP_RANKS => args.process_group_ranks = text(),
                STEP => args.step = text(),
                ITERATION => args.iteration = text(),
                MB_ID => args.mb_id = text(),
                MICROBATCH => args.microbatch = text(),
                MICRO_BATCH => args.micro_batch = text(),
                SEQLENS => args.seqlens = text(),
                SEQ_LENS => args.seq_lens = text(),
                _ => {}
            }
            Ok(end)
        });
        let end = match scanned {
            Ok(end) => end,
            Err(ScanError::Eof) => return Err(ScanError::Eof),
            // Malformed inside: skipped to its closing bracket, the event kept without it.
            Err(ScanError::Invalid(_)) => {
                *slot = None;
                json::value_end(bytes, start)?
            }
        };
        Ok((bad.map_or(Ok(()), Err), end))
    }
}

/// What a reader wants of the events, asked while each is read, so that what it does not
/// want is skipped unread (most of a real trace is `args` nobody reads).
pub trait Interest {
    /// Whether every complete event (`"ph": "X"`) of this category would be ignored, whatever
    /// else it holds: the rest of it is then skipped (most of a trace recorded with Python
    /// stacks is `python_function` events).
    fn ignores_complete(&self, category: &str) -> bool;
    /// Whether the event's `args` are read, knowing only the fields before them: answer true
    /// unless those settle it (profilers write `ph`, `cat` and `name` first).
    fn wants_args(&mut self, _event: &RawEvent<'_>) -> bool {
        true
    }
    /// Whether the event's `name` is read, knowing the fields before it (as for
    /// [`wants_args`](Self::wants_args)): a skipped name is neither kept nor checked.
    fn wants_name(&self, _event: &RawEvent<'_>) -> bool {
        true
    }
}

/// Every event, whole.
struct Everything;

impl Interest for Everything {
    fn ignores_complete(&self, _: &str) -> bool {
        false
    }
}

/// What [`RawEvent::read`] did with the event, and the bytes it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    Event(usize),
    /// Of a category the reader was told to ignore: skipped unread.
    Ignored(usize),
}

/// The categories profilers write, as static text (so the usual ones are not checked as
/// UTF-8 event after event).
fn known_category(raw: &[u8]) -> Option<&'static str> {
    Some(match raw {
        b"kernel" => "kernel",
        b"cuda_runtime" => "cuda_runtime",
        b"cpu_op" => "cpu_op",
        b"user_annotation" => "user_annotation",
        b"gpu_user_annotation" => "gpu_user_annotation",
        b"python_function" => "python_function",
        b"cuda_driver" => "cuda_driver",
        b"gpu_memcpy" => "gpu_memcpy",
        b"gpu_memset" => "gpu_memset",
        b"ac2g" => "ac2g",
        b"Kernel" => "Kernel",
        b"Runtime" => "Runtime",
        b"Memcpy" => "Memcpy",
        b"Memset" => "Memset",
        b"Operator" => "Operator",
        _ => return None,
    })
}

/// The keys the PyTorch profiler writes first in every event, in its order; the fields an
/// importer reads are these, by their index here.
const USUAL_KEYS: &[json::UsualKey] = &[
    json::UsualKey::new(b"ph"),
    json::UsualKey::new(b"cat"),
    json::UsualKey::new(b"name"),
    json::UsualKey::new(b"pid"),
    json::UsualKey::new(b"tid"),
    json::UsualKey::new(b"ts"),
    json::UsualKey::new(b"dur"),
    json::UsualKey::new(b"args"),
];
const PH: usize = 0;
const CAT: usize = 1;
const NAME: usize = 2;
const PID: usize = 3;
const TID: usize = 4;
const TS: usize = 5;
const DUR: usize = 6;
const ARGS: usize = 7;

/// One trace event with borrowed strings.
#[derive(Debug, Default)]
pub struct RawEvent<'a> {
    pub ph: Option<Str<'a>>,
    pub name: Option<Str<'a>>,
    pub cat: Option<Str<'a>>,
    /// Process and thread ids as keys (see [`id_key`]).
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    pub ts: Option<Time<'a>>,
    pub dur: Option<Time<'a>>,
    pub args: Option<RawArgs<'a>>,
}

impl<'a> RawEvent<'a> {
    /// The event object at the start of `bytes` and the bytes it takes. A string the importers
    /// keep that has control characters or invalid UTF-8 makes the event `Invalid`.
    pub fn parse(bytes: &'a [u8]) -> Result<(Self, usize), ScanError> {
        let mut ev = RawEvent::default();
        match ev.read(bytes, &mut Everything)? {
            Read::Event(used) | Read::Ignored(used) => Ok((ev, used)),
        }
    }

    /// [`parse`](Self::parse) into a default event, in place: the hot path, where moving the
    /// large struct out of a function per event cost as much as reading a field. A complete
    /// event of a category the `interest` ignores (read after `"ph": "X"`, as profilers write
    /// them) is skipped to its end unread, and not checked further; so are `args` it does not
    /// want.
    pub fn read(&mut self, bytes: &'a [u8], interest: &mut impl Interest) -> Result<Read, ScanError> {
        let ev = self;
        let mut bad = None;
        let mut skip = false;
        let scanned = json::object_scanning(bytes, 0, USUAL_KEYS, |key, start| {
            let mut keep = |r: Result<(), &'static str>| {
                if let Err(why) = r {
                    bad = Some(why);
                }
            };
            let field = match key {
                json::Key::Usual(i) => i,
                json::Key::Other(_) => return json::value_end(bytes, start),
            };
            // Kept strings are found and checked in one pass.
            let string = |field: &mut Option<Str<'a>>, known: fn(&[u8]) -> Option<&'static str>| {
                json::string_at(bytes, start, known).map(|(text, end)| (text.map(|t| *field = Some(Str(t))), end))
            };
            let (kept, end) = match field {
                // `args` is read in the same pass that finds its end.
                ARGS if !interest.wants_args(ev) => (Ok(()), json::value_end(bytes, start)?),
                ARGS => RawArgs::scan_into(&mut ev.args, bytes, start)?,
                PH => string(&mut ev.ph, |_| None)?,
                NAME if !interest.wants_name(ev) => (Ok(()), json::value_end(bytes, start)?),
                NAME => string(&mut ev.name, |_| None)?,
                CAT => {
                    let (kept, end) = string(&mut ev.cat, known_category)?;
                    if ev.phase() == "X" && interest.ignores_complete(ev.cat()) {
                        skip = true;
                        return Err(ScanError::Invalid("ignored"));
                    }
                    (kept, end)
                }
                // Ids are nearly always a few digits: read in the pass that ends them.
                PID | TID if let Some((id, end)) = json::plain_integer_at(bytes, start) => {
                    *(if field == PID { &mut ev.pid } else { &mut ev.tid }) = i64::try_from(id).ok();
                    (Ok(()), end)
                }
                // Times too, when they are plain decimals.
                TS | DUR
                    if let Some((ns, used)) = plain_decimal_prefix(bytes.get(start..).unwrap_or_default(), MICROS)
                        .filter(|&(_, used)| bytes.get(start + used).is_some_and(json::ends_scalar)) =>
                {
                    *(if field == TS { &mut ev.ts } else { &mut ev.dur }) = Some(Time::Read(ns));
                    (Ok(()), start + used)
                }
                _ => {
                    let end = json::value_end(bytes, start)?;
                    let value = bytes.get(start..end).unwrap_or_default();
                    match field {
                        PID => keep(id_key(value).map(|i| ev.pid = i)),
                        TID => keep(id_key(value).map(|i| ev.tid = i)),
                        TS => ev.ts = Some(Time::Raw(RawText(value))),
                        DUR => ev.dur = Some(Time::Raw(RawText(value))),
                        _ => {}
                    }
                    (Ok(()), end)
                }
            };
            keep(kept);
            Ok(end)
        });
        if skip {
            return Ok(Read::Ignored(json::value_end(bytes, 0)?));
        }
        match (scanned?, bad) {
            (_, Some(why)) => Err(ScanError::Invalid(why)),
            (end, None) => Ok(Read::Event(end)),
        }
    }

    pub fn phase(&self) -> &str {
        self.ph.as_ref().map_or("", Str::as_str)
    }
    pub fn name(&self) -> &str {
        self.name.as_ref().map_or("", Str::as_str)
    }
    pub fn cat(&self) -> &str {
        self.cat.as_ref().map_or("", Str::as_str)
    }

    /// `ts` (microseconds) in nanoseconds; `None` with a warning when unusable, silently when absent.
    pub fn start(&self, place: EventPlace, diags: &mut DiagnosticSink) -> Option<Nanos> {
        match self.ts?.nanos() {
            Ok(t) => Some(t),
            Err(e) => {
                diags.push(Severity::Warning, place.location(), self.skipped("ts", e.describe()));
                None
            }
        }
    }

    /// The end of a complete event that starts at `start`: `dur` (0 when absent) later.
    pub fn end(&self, start: Nanos, place: EventPlace, diags: &mut DiagnosticSink) -> Option<Nanos> {
        let dur = match self.dur.map(Time::duration) {
            Some(Ok(d)) => d,
            Some(Err(e)) => {
                diags.push(Severity::Warning, place.location(), self.skipped("dur", e.describe()));
                return None;
            }
            None => 0,
        };
        let end = start.checked_add(dur);
        if end.is_none() {
            diags.push(Severity::Warning, place.location(), self.skipped("dur", "ends beyond the clock's range"));
        }
        end
    }

    fn skipped(&self, field: &str, why: &str) -> String {
        match &self.name {
            Some(name) => format!("\"{}\" has a {field} that {why}; event skipped", name.as_str()),
            None => format!("an event of category \"{}\" has a {field} that {why}; event skipped", self.cat()),
        }
    }
}

/// Where an event came from, for diagnostics.
#[derive(Clone, Copy, Debug)]
pub struct EventPlace {
    pub offset: u64,
}

impl EventPlace {
    pub fn location(self) -> Option<Location> {
        Some(Location::Byte(self.offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_keep_what_importers_read() {
        let text = br#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": "Spans", "ts": 1.5,
            "dur": 2, "extra": {"deep": [1, 2, {"x": "}"}]}, "args": {"correlation": 42, "Input Dims": [[1, 2]],
            "Collective name": "allreduce", "other": null}} tail"#;
        let (ev, used) = RawEvent::parse(text).expect("an event");
        assert_eq!(text.get(used..), Some(&b" tail"[..]));
        assert_eq!((ev.phase(), ev.cat(), ev.name()), ("X", "cpu_op", "aten::mm"));
        assert_eq!(ev.pid, Some(7));
        assert_eq!(ev.tid, Some(text_id_key("Spans")));
        assert_eq!((ev.ts, ev.dur), (Some(Time::Read(1500)), Some(Time::Read(2000))));
        let args = ev.args.expect("args");
        assert_eq!(args.correlation, Some(42));
        // Ids in other forms are read as `to_u64` reads them.
        for (id, expected) in [("\"42\"", Some(42)), ("7.0", Some(7)), ("-1", None), ("1e3", None), ("12 ", Some(12))] {
            let text = format!(r#"{{"args": {{"correlation": {id}}}}}"#);
            let (ev, _) = RawEvent::parse(text.as_bytes()).expect("an event");
            assert_eq!(ev.args.and_then(|a| a.correlation), expected, "{id}");
        }
        assert_eq!(args.input_dims.map(RawText::get), Some(&b"[[1, 2]]"[..]));
        assert_eq!(args.collective_name.map(|s| s.0.into_owned()), Some("allreduce".into()));
    }

    /// Times read on the scan's way and times read later from their text are the same times.
    #[test]
    fn times_read_in_the_scan_are_the_times_of_their_text() {
        let mut diags = DiagnosticSink::new("t.json");
        let place = EventPlace { offset: 0 };
        for (ts, dur) in [
            ("1700000000123.456", "20.000"),
            ("5", "0"),
            ("1.", "1.5e3"),
            ("\"7.25\"", "-3"),
            ("0.0004", "1234567890.1234567891"),
            ("12345678901234567890", "1e400"),
            ("-4.5", "7"),
        ] {
            let text = format!(r#"{{"ph": "X", "ts": {ts}, "dur": {dur} }}"#);
            let (ev, _) = RawEvent::parse(text.as_bytes()).expect("an event");
            let plain = |t: &str| t.bytes().all(|b| b.is_ascii_digit() || b == b'.') && t.len() < 20;
            assert_eq!(matches!(ev.ts, Some(Time::Read(_))), plain(ts), "{ts}");
            let start = ev.start(place, &mut diags);
            assert_eq!(start, to_nanos(ts, MICROS).ok(), "{ts}");
            if let Some(start) = start {
                let expected = to_duration(dur, MICROS).ok().and_then(|d| start.checked_add(d));
                assert_eq!(ev.end(start, place, &mut diags), expected, "{dur}");
            }
        }
    }

    #[test]
    fn args_that_are_not_a_usable_object_leave_the_event_whole() {
        for text in
            [&br#"{"name": "a", "args": {"x" 1, "y": [2]}, "ts": 7}"#[..], br#"{"name": "a", "args": 5, "ts": 7}"#]
        {
            let (ev, used) = RawEvent::parse(text).expect("an event");
            assert_eq!(
                (ev.name(), ev.args.is_none(), used),
                ("a", true, text.len()),
                "{}",
                String::from_utf8_lossy(text)
            );
            assert_eq!(ev.ts, Some(Time::Read(7000)));
        }
        let cut = br#"{"name": "a", "args": {"correlation": 4"#;
        assert_eq!(RawEvent::parse(cut).map(|e| e.1), Err(ScanError::Eof));
    }

    #[test]
    fn ids_of_every_shape() {
        fn id(raw: &str) -> Result<Option<i64>, &'static str> {
            id_key(raw.as_bytes())
        }
        assert_eq!(id("12"), Ok(Some(12)));
        assert_eq!(id("-3"), Ok(Some(-3)));
        assert_eq!(id("18446744073709551615"), Ok(Some(i64::MAX)));
        // What the plain-digits shortcut takes, and what it leaves to the general parsers.
        assert_eq!(id("999999999999999999"), Ok(Some(999_999_999_999_999_999)));
        assert_eq!(id("9223372036854775807"), Ok(Some(i64::MAX)));
        assert_eq!(id("0012"), Ok(Some(12)));
        assert_eq!(id("1e3"), Ok(Some(1000)));
        assert_eq!(id("+5"), Ok(Some(5)));
        assert_eq!(id(""), Ok(None));
        assert_eq!(id("7.9"), Ok(Some(7)));
        assert_eq!(id("true"), Ok(None));
        assert!(id("\"a\tb\"").is_err());
        assert!(text_id_key("Spans") < 0);
        assert_ne!(text_id_key("Spans"), text_id_key("Spans2"));
        assert_eq!(id("\"Spans\""), Ok(Some(text_id_key("Spans"))));
    }

    #[test]
    fn bad_kept_strings_make_the_event_invalid_and_skipped_ones_do_not() {
        assert!(matches!(RawEvent::parse(b"{\"name\": \"a\x01\"}"), Err(ScanError::Invalid(_))));
        assert!(matches!(RawEvent::parse(b"{\"args\": {\"name\": \"\xff\"}}"), Err(ScanError::Invalid(_))));
        assert!(RawEvent::parse(b"{\"name\": \"a\", \"other\": \"\x01\xff\"}").is_ok());
        assert_eq!(RawEvent::parse(br#"{"name": "a", "ts": 1"#).map(|e| e.1), Err(ScanError::Eof));
    }
}

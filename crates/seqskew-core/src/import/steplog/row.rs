//! One row of a step log: its fields read from text, as JSON Lines and CSV give them.

use super::super::numbers::{list_of_u32, seconds_to_nanos, to_u64};
use crate::model::{Coords, Nanos, SequenceKnowledge, Sequences, SpanKind};

pub const STEPLOG_VERSION: u64 = 1;

/// Bounds on times, so that every sum of a step's times fits in i64 nanoseconds: durations
/// up to a million seconds (11.6 days), clocks up to 4e9 s from their zero (the year 2096).
const MAX_DURATION_NS: Nanos = 1_000_000 * 1_000_000_000;
const MAX_START_NS: Nanos = 4_000_000_000 * 1_000_000_000;

/// Time fields, in seconds, and the kind each adds to.
pub(super) const TIME_FIELDS: [(&str, Option<SpanKind>); 13] = [
    ("step_s", None),
    ("start_s", None),
    ("compute_s", Some(SpanKind::Compute)),
    ("fwd_s", None),
    ("bwd_s", None),
    ("attn_s", Some(SpanKind::Attention)),
    ("comm_s", Some(SpanKind::Communication)),
    ("wait_s", Some(SpanKind::CollectiveWait)),
    // Pipeline send/recv time: part of comm_s, told apart for the replay.
    ("p2p_s", None),
    // Of comm_s, the time transferring rather than waiting for the last rank.
    ("transfer_s", None),
    ("stall_s", Some(SpanKind::HostStall)),
    ("optimizer_s", Some(SpanKind::Optimizer)),
    ("data_s", Some(SpanKind::DataLoading)),
];

/// One row: a worker-step (no `mb`) or one of its micro-batches.
#[derive(Clone, Debug, Default)]
pub(super) struct Row {
    pub(super) line: u64,
    pub(super) step: u64,
    pub(super) rank: u32,
    pub(super) mb: Option<u32>,
    pub(super) coords: Coords,
    /// Its host's name in the file's [`Hosts`].
    pub(super) host: Option<u32>,
    pub(super) world_size: Option<u32>,
    /// Nanoseconds per field of [`TIME_FIELDS`]; bit `i` of `given` says whether field `i`
    /// was given (half the size of an array of options: step rows are held until the end).
    pub(super) times: [Nanos; TIME_FIELDS.len()],
    pub(super) given: u16,
    pub(super) lengths: Option<Vec<u32>>,
    /// The lengths are padded lengths from attention shapes.
    pub(super) padded: bool,
    /// The step-log version the row says it follows.
    pub(super) version: u64,
    /// Varlen bounds instead of lengths, where the row gives them (boxed: step rows are held
    /// until the end of the file, and most give lengths or nothing).
    pub(super) bounds: Option<Box<Bounds>>,
}

/// A row's `tokens`, `docs` and `max_len`.
#[derive(Clone, Debug, Default)]
pub(super) struct Bounds {
    pub(super) tokens: Option<u64>,
    pub(super) docs: Option<u64>,
    pub(super) max_len: Option<u64>,
}

impl Row {
    pub(super) fn time(&self, field: &str) -> Option<Nanos> {
        let i = TIME_FIELDS.iter().position(|(f, _)| *f == field)?;
        self.times.get(i).copied().filter(|_| self.given & (1 << i) != 0)
    }

    /// The row's sequences, its lengths moved out (they are most of a step log's memory).
    pub(super) fn take_sequences(&mut self) -> Sequences {
        let bounds = self.bounds.as_deref().cloned().unwrap_or_default();
        match (self.lengths.take(), bounds.tokens, bounds.docs) {
            (Some(l), _, _) => {
                let knowledge = if self.padded { SequenceKnowledge::DenseShapes } else { SequenceKnowledge::Exact };
                Sequences::from_lengths(knowledge, l)
            }
            (None, Some(t), Some(d)) => {
                Sequences::from_bounds(d, t, u32::try_from(bounds.max_len.unwrap_or(t)).unwrap_or(u32::MAX))
            }
            _ => Sequences::default(),
        }
    }
}

/// Sets one field of a row from its text; `Err` says what is wrong with it.
pub(super) fn set_field(
    row: &mut Row,
    key: &str,
    value: &str,
    seen: &mut (bool, bool),
    hosts: &mut Hosts,
) -> Result<(), String> {
    let value = value.trim();
    if value.is_empty() || value == "null" {
        return Ok(());
    }
    let int = |v: &str| to_u64(v).ok_or_else(|| format!("{key} = {v} is not a non-negative integer"));
    let small = |v: &str| int(v).and_then(|n| u32::try_from(n).map_err(|_| format!("{key} = {v} is too large")));
    match key {
        "step" => {
            row.step = int(value)?;
            seen.0 = true;
        }
        "rank" => {
            row.rank = small(value)?;
            seen.1 = true;
        }
        "mb" | "micro_batch" => row.mb = Some(small(value)?),
        "dp" => row.coords.dp = Some(small(value)?),
        "pp" => row.coords.pp = Some(small(value)?),
        "tp" => row.coords.tp = Some(small(value)?),
        "cp" => row.coords.cp = Some(small(value)?),
        "host" => row.host = hosts.id(value.trim_matches('"')),
        "world_size" => match small(value)? {
            0 => return Err(format!("{key} = {value} is not a rank count")),
            w => row.world_size = Some(w),
        },
        "tokens" => row.bounds.get_or_insert_default().tokens = Some(int(value)?),
        "padded" => row.padded = matches!(value.trim_matches('"'), "1" | "true" | "True" | "TRUE"),
        "docs" => row.bounds.get_or_insert_default().docs = Some(int(value)?),
        "max_len" => row.bounds.get_or_insert_default().max_len = Some(int(value)?),
        "lengths" => {
            row.lengths = Some(
                list_of_u32(value)
                    .ok_or_else(|| format!("lengths = {value} is not a list of non-negative integers"))?,
            );
        }
        "v" => row.version = int(value)?,
        _ => {
            if let Some(i) = TIME_FIELDS.iter().position(|(f, _)| *f == key) {
                let ns = seconds_to_nanos(value).map_err(|e| format!("{key} = {value} {}", e.describe()))?;
                if key == "start_s" {
                    if ns.abs() > MAX_START_NS {
                        return Err(format!("{key} = {value} is not a plausible clock (beyond the year 2100)"));
                    }
                } else if ns < 0 {
                    return Err(format!("{key} = {value} is negative"));
                } else if ns > MAX_DURATION_NS {
                    return Err(format!("{key} = {value} is longer than a training step can be (11 days)"));
                }
                if let Some(slot) = row.times.get_mut(i) {
                    *slot = ns;
                    row.given |= 1 << i;
                }
            }
            // Unknown fields are tolerated: logs may carry loss, lr, and more.
        }
    }
    Ok(())
}

/// The host names a file's rows give, each kept once: step rows are held until the end of the
/// file, and a name of its own for each row was 7 % of a step log's peak memory (the bench's
/// 50 MB one, when every row was held).
#[derive(Default)]
pub(super) struct Hosts {
    pub(super) names: Vec<String>,
    pub(super) ids: std::collections::HashMap<String, u32>,
}

impl Hosts {
    pub(super) fn id(&mut self, name: &str) -> Option<u32> {
        if let Some(&id) = self.ids.get(name) {
            return Some(id);
        }
        let id = u32::try_from(self.names.len()).ok()?;
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        Some(id)
    }

    pub(super) fn name(&self, id: u32) -> Option<&str> {
        self.names.get(id as usize).map(String::as_str)
    }
}

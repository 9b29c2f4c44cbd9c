//! `LaneSpan`, a timeline lane's compact span: below both the timeline and its summaries (`lod.rs`).

use serde::{Deserialize, Serialize};

use seqskew_core::model::SpanKind;

/// One span of a lane in 16 bytes (and 15 on the wire): a gigabyte of traces makes millions,
/// and the page holds them all.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(into = "PackedSpan", try_from = "PackedSpan")]
pub struct LaneSpan {
    /// Milliseconds since the job's first step start.
    pub start: f64,
    /// Milliseconds as an `f32` rounded down, so that a span never ends after the next begins
    /// (an `f32` is exact to 1e-7 of the span, far below a pixel).
    duration: f32,
    pub kind: SpanKind,
    /// The micro-batch id + 1, or 0 for none (ids beyond 65 534 are not shown).
    micro_batch: u16,
}

impl LaneSpan {
    pub fn new(start: f64, duration: f64, kind: SpanKind, micro_batch: Option<u32>) -> Self {
        let mut short = duration as f32;
        if f64::from(short) > duration {
            short = short.next_down();
        }
        let micro_batch = micro_batch.and_then(|m| u16::try_from(m).ok()).and_then(|m| m.checked_add(1)).unwrap_or(0);
        LaneSpan { start, duration: short, kind, micro_batch }
    }

    pub fn duration(&self) -> f64 {
        f64::from(self.duration)
    }

    pub fn end(&self) -> f64 {
        self.start + self.duration()
    }

    pub fn micro_batch(&self) -> Option<u32> {
        self.micro_batch.checked_sub(1).map(u32::from)
    }
}

/// A [`LaneSpan`] as the worker sends it: start, duration, kind index, micro-batch + 1.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct PackedSpan(f64, f32, u8, u16);

impl From<LaneSpan> for PackedSpan {
    fn from(s: LaneSpan) -> Self {
        PackedSpan(s.start, s.duration, s.kind as u8, s.micro_batch)
    }
}

impl TryFrom<PackedSpan> for LaneSpan {
    type Error = String;

    fn try_from(PackedSpan(start, duration, kind, micro_batch): PackedSpan) -> Result<Self, String> {
        let kind = SpanKind::ALL.get(usize::from(kind)).copied().ok_or_else(|| format!("no span kind {kind}"))?;
        Ok(LaneSpan { start, duration, kind, micro_batch })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_small_and_never_end_late() {
        assert_eq!(size_of::<LaneSpan>(), 16);
        // 0.1 has no exact f32: the duration is rounded down, not to nearest.
        for (start, duration) in [(0.0, 0.1), (1e6, 1.0 / 3.0), (5.5, 123_456.789), (0.0, 0.0)] {
            let s = LaneSpan::new(start, duration, SpanKind::Compute, None);
            assert!(s.end() <= start + duration && start + duration - s.end() <= duration * 1e-7);
        }
        let with = |m| LaneSpan::new(0.0, 1.0, SpanKind::Attention, m).micro_batch();
        assert_eq!(
            [with(None), with(Some(0)), with(Some(65_534)), with(Some(65_535))],
            [None, Some(0), Some(65_534), None]
        );
        let packed = PackedSpan(1.0, 2.0, 9, 0);
        assert_eq!(LaneSpan::try_from(packed), Err("no span kind 9".to_string()));
    }
}

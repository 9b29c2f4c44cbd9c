//! Level-of-detail summaries of a lane: the dominant span kind of equal time buckets at a few
//! resolutions, so that a zoomed-out timeline reads one byte per sample instead of walking
//! every span (memory traffic, not arithmetic, is what a 4096 × 1000 timeline costs).

use serde::{Deserialize, Serialize};

use crate::lane_span::LaneSpan;

/// "Nothing ran here" in a summary or a sample: gaps outweigh every kind.
pub const GAP: u8 = 8;
/// Lanes with fewer spans are walked directly.
const MIN_SPANS: usize = 64;
/// The finest level's buckets per span (on average). Zoomed in further than the finest level,
/// the timeline samples the spans themselves, at a cost that grows with the spans in view, at
/// most a lane's buckets per pixel column: two buckets a span halve that worst case, where one
/// had made a 4096-worker frame three times slower than anywhere else (four would halve it
/// again, for two more bytes a span in the page's memory and the worker's result).
const BUCKETS_PER_SPAN: usize = 2;
/// The coarsest level has at most this many buckets.
const COARSEST: usize = 64;

/// Per level (finest first), the dominant kind index of each of `len` equal buckets of
/// `[start, end)`, or 8 ("nothing ran"). Each level has half the buckets of the one before; the
/// finest has `BUCKETS_PER_SPAN` (two) per span, so all levels together take four bytes per span.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LaneSummary {
    pub start: f64,
    pub end: f64,
    pub levels: Vec<Vec<u8>>,
}

impl LaneSummary {
    /// The summary of time-sorted, non-overlapping spans (empty for short lanes).
    pub fn of(spans: &[LaneSpan]) -> Self {
        let (Some(first), Some(last)) = (spans.first(), spans.last()) else { return LaneSummary::default() };
        let (start, end) = (first.start, last.end());
        if spans.len() < MIN_SPANS || !(end - start).is_finite() || end <= start {
            return LaneSummary::default();
        }
        let n = spans.len() * BUCKETS_PER_SPAN;
        let width = (end - start) / n as f64;
        // Time per kind (and gap) in each finest bucket.
        let mut hist = vec![[0f32; 9]; n];
        for s in spans {
            let (a, b) = ((s.start - start) / width, (s.end() - start) / width);
            let k = s.kind as usize;
            let (first, last) = (a.floor().max(0.0) as usize, (b.ceil() as usize).min(n));
            for (i, h) in hist.iter_mut().enumerate().take(last).skip(first) {
                let overlap = (b.min(i as f64 + 1.0) - a.max(i as f64)).max(0.0);
                if let Some(slot) = h.get_mut(k) {
                    *slot += overlap as f32;
                }
            }
        }
        for h in &mut hist {
            let covered: f32 = h.iter().take(8).sum();
            if let Some(gap) = h.get_mut(8) {
                *gap = (1.0 - covered).max(0.0);
            }
        }
        let mut levels = vec![hist.iter().map(dominant).collect::<Vec<u8>>()];
        while hist.len() > COARSEST {
            hist = hist
                .chunks(2)
                .map(|c| {
                    let mut sum = [0f32; 9];
                    for h in c {
                        for (s, v) in sum.iter_mut().zip(h) {
                            *s += v;
                        }
                    }
                    sum
                })
                .collect();
            levels.push(hist.iter().map(dominant).collect());
        }
        LaneSummary { start, end, levels }
    }

    /// The level whose buckets are the widest not wider than `dt`, with its bucket width.
    pub fn level_for(&self, dt: f64) -> Option<(&[u8], f64)> {
        let span = self.end - self.start;
        self.levels.iter().map(|l| (l.as_slice(), span / l.len().max(1) as f64)).take_while(|&(_, w)| w <= dt).last()
    }
}

/// The kind with the most time (ties to the earlier kind), or [`GAP`] when gaps outweigh it.
fn dominant(h: &[f32; 9]) -> u8 {
    let (mut best, mut most) = (GAP, 0.0);
    for (k, &v) in h.iter().take(8).enumerate() {
        if v > most {
            (best, most) = (k as u8, v);
        }
    }
    if h.get(8).is_some_and(|&gap| gap > most) { GAP } else { best }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seqskew_core::model::SpanKind;

    #[test]
    fn summaries_keep_the_dominant_kind_per_bucket() {
        // 100 steps of 10 ms: compute 6 ms, attention 1 ms, communication 3 ms.
        let spans: Vec<LaneSpan> = (0..100)
            .flat_map(|i| {
                let t = f64::from(i) * 10.0;
                [
                    LaneSpan::new(t, 6.0, SpanKind::Compute, None),
                    LaneSpan::new(t + 6.0, 1.0, SpanKind::Attention, None),
                    LaneSpan::new(t + 7.0, 3.0, SpanKind::Communication, None),
                ]
            })
            .collect();
        let s = LaneSummary::of(&spans);
        let lens: Vec<usize> = s.levels.iter().map(Vec::len).collect();
        assert_eq!(lens, [600, 300, 150, 75, 38]);
        // Finest: 600 buckets of 1.67 ms; in the first step, buckets 0–2 are compute (to 5 ms),
        // 3 is more compute than attention (5..6.67 ms), 4 more communication than attention
        // (6.67..8.33 ms), 5 communication.
        let first_step: Vec<u8> = s.levels[0][..6].to_vec();
        let (c, m) = (SpanKind::Compute as u8, SpanKind::Communication as u8);
        assert_eq!(first_step, [c, c, c, c, m, m]);
        // Coarser buckets span whole steps: compute dominates.
        assert!(s.levels[4].iter().all(|&k| k == c));
        assert_eq!(s.level_for(1.0), None);
        assert_eq!(s.level_for(7.0).map(|l| l.0.len()), Some(150));
        assert_eq!(s.level_for(1e9).map(|l| l.0.len()), Some(38));
        assert_eq!(LaneSummary::of(&spans[..10]), LaneSummary::default());
    }
}

//! Turning a worker's overlapping intervals (ops on many threads and streams) into the
//! model's coarse, non-overlapping timeline and exact per-kind totals.
//!
//! Overlap is the rule, not the exception: DDP all-reduces run on side threads while backward
//! still computes, and GPU streams overlap. An instant belongs to the highest-priority kind
//! active at that instant, so compute busy time is the union of compute intervals and
//! communication counts only where nothing computes. An instant with nothing active is a host
//! stall.

use crate::model::{KindTotals, Nanos, Span, SpanKind};

/// An interval of one kind, as an importer found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub start: Nanos,
    pub end: Nanos,
    pub kind: SpanKind,
    pub micro_batch: Option<u32>,
}

/// Which kind wins where several are active at once (first wins). Explicit regions (data
/// loading, optimizer) beat the ops inside them; any compute beats communication in flight.
const PRIORITY: [SpanKind; 8] = [
    SpanKind::DataLoading,
    SpanKind::Optimizer,
    SpanKind::Attention,
    SpanKind::Compute,
    SpanKind::HostStall,
    SpanKind::CollectiveWait,
    SpanKind::Communication,
    SpanKind::Other,
];

/// A step's timeline keeps at most about this many spans; shorter pieces merge into neighbours.
pub const MAX_SPANS_PER_STEP: i64 = 256;

fn rank_of(kind: SpanKind) -> usize {
    PRIORITY.iter().position(|&k| k == kind).unwrap_or(PRIORITY.len())
}

/// The union of `intervals` (those that are not empty), sorted and disjoint.
pub fn union(mut intervals: Vec<(Nanos, Nanos)>) -> Vec<(Nanos, Nanos)> {
    intervals.retain(|(start, end)| start < end);
    intervals.sort_unstable();
    let mut merged: Vec<(Nanos, Nanos)> = Vec::with_capacity(intervals.len());
    for (start, end) in intervals {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// Partitions `[start, end)` among `pieces` (clipped to the window). Returns the coarse
/// timeline and the exact totals; the totals sum to `end - start`.
pub fn partition(start: Nanos, end: Nanos, pieces: &[Piece]) -> (Vec<Span>, KindTotals) {
    let mut totals = KindTotals::default();
    if end <= start {
        return (Vec::new(), totals);
    }
    // Boundary events: (time, +1/-1, priority rank, micro-batch).
    let mut edges: Vec<(Nanos, i8, usize, Option<u32>)> = Vec::with_capacity(pieces.len() * 2);
    for p in pieces {
        let (s, e) = (p.start.max(start), p.end.min(end));
        if e > s {
            let r = rank_of(p.kind);
            edges.push((s, 1, r, p.micro_batch));
            edges.push((e, -1, r, p.micro_batch));
        }
    }
    edges.sort_unstable_by_key(|&(t, delta, r, _)| (t, delta, r));
    let mut active = [0u32; PRIORITY.len() + 1];
    let mut latest_mb: [Option<u32>; PRIORITY.len() + 1] = [None; PRIORITY.len() + 1];
    // At most one span between two edges: never grown.
    let mut fine: Vec<Span> = Vec::with_capacity(edges.len() + 1);
    let mut cursor = start;
    let mut edge_iter = edges.iter().peekable();
    while cursor < end {
        // Apply every edge at the cursor.
        while let Some(&&(t, delta, r, mb)) = edge_iter.peek() {
            if t > cursor {
                break;
            }
            if let Some(slot) = active.get_mut(r) {
                if delta > 0 {
                    *slot += 1;
                    if let Some(m) = latest_mb.get_mut(r) {
                        *m = mb;
                    }
                } else {
                    *slot = slot.saturating_sub(1);
                }
            }
            edge_iter.next();
        }
        let next = edge_iter.peek().map_or(end, |e| e.0.min(end));
        let winner = active.iter().position(|&n| n > 0);
        let (kind, mb) = match winner.and_then(|r| PRIORITY.get(r).map(|&k| (k, latest_mb.get(r).copied().flatten()))) {
            Some(found) => found,
            None => (SpanKind::HostStall, None),
        };
        push_merged(&mut fine, Span::new(cursor, next - cursor, kind, mb));
        cursor = next;
    }
    for s in &fine {
        totals.add(s.kind, s.duration);
    }
    let mut spans = coarsen(fine, (end - start) / MAX_SPANS_PER_STEP);
    // The model keeps these for the whole job: a third of the spans' memory was growth slack.
    spans.shrink_to_fit();
    (spans, totals)
}

fn push_merged(spans: &mut Vec<Span>, span: Span) {
    if span.duration <= 0 {
        return;
    }
    if let Some(last) = spans.last_mut()
        && last.kind == span.kind
        && last.micro_batch() == span.micro_batch()
        && last.end() == span.start
    {
        last.duration += span.duration;
        return;
    }
    spans.push(span);
}

/// Groups runs of spans shorter than `min_len` into one span of their dominant kind, keeping
/// the timeline contiguous; longer spans stay as they are.
fn coarsen(fine: Vec<Span>, min_len: Nanos) -> Vec<Span> {
    if min_len <= 0 || fine.len() as i64 <= MAX_SPANS_PER_STEP {
        return fine;
    }
    let mut out: Vec<Span> = Vec::with_capacity(MAX_SPANS_PER_STEP as usize * 2);
    let mut group = Group::default();
    for s in fine {
        if s.duration >= min_len {
            group.flush(&mut out);
            push_merged(&mut out, s);
        } else {
            group.add(s);
            if group.len() >= min_len {
                group.flush(&mut out);
            }
        }
    }
    group.flush(&mut out);
    out
}

/// A run of short spans being folded into one.
#[derive(Default)]
struct Group {
    start: Option<Nanos>,
    end: Nanos,
    per_kind: KindTotals,
    longest: Option<Span>,
}

impl Group {
    fn add(&mut self, s: Span) {
        self.start.get_or_insert(s.start);
        self.end = s.end();
        self.per_kind.add(s.kind, s.duration);
        if self.longest.is_none_or(|l| s.duration > l.duration) {
            self.longest = Some(s);
        }
    }

    fn len(&self) -> Nanos {
        self.start.map_or(0, |s| self.end - s)
    }

    fn flush(&mut self, out: &mut Vec<Span>) {
        let group = std::mem::take(self);
        let Some(start) = group.start else { return };
        let kind = SpanKind::ALL.into_iter().max_by_key(|&k| group.per_kind.get(k)).unwrap_or(SpanKind::Other);
        let micro_batch = group.longest.and_then(|l| l.micro_batch());
        push_merged(out, Span::new(start, group.end - start, kind, micro_batch));
    }
}

/// Pieces split among windows: window `i`'s pieces, clipped to it, are [`Buckets::get`]`(i)`.
/// All of a file's pieces sit in one allocation (one small vector per step, each grown piece
/// by piece, cost more than splitting them).
pub struct Buckets {
    pieces: Vec<Piece>,
    /// Where each window's pieces end in `pieces`.
    ends: Vec<usize>,
}

impl Buckets {
    pub fn get(&self, window: usize) -> &[Piece] {
        let start = window.checked_sub(1).and_then(|w| self.ends.get(w)).copied().unwrap_or(0);
        let end = self.ends.get(window).copied().unwrap_or(start);
        self.pieces.get(start..end).unwrap_or_default()
    }

    /// The windows' pieces, in window order.
    pub fn iter(&self) -> impl Iterator<Item = &[Piece]> {
        (0..self.ends.len()).map(|w| self.get(w))
    }
}

/// Splits pieces among windows (sorted, non-overlapping), clipping each piece to each window
/// it overlaps.
pub fn bucket(windows: &[(Nanos, Nanos)], pieces: &[Piece]) -> Buckets {
    // Counted first, then placed: each window's pieces are then one slice of one vector.
    let mut ends = vec![0usize; windows.len()];
    let mut overlaps = Overlaps::new(windows);
    for p in pieces {
        overlaps.each(p, |w, _| {
            if let Some(n) = ends.get_mut(w) {
                *n += 1;
            }
        });
    }
    let mut total = 0;
    for n in &mut ends {
        total += *n;
        *n = total - *n;
    }
    // `ends` holds where each window's pieces start until they are placed; then where they end.
    let mut placed = vec![Piece { start: 0, end: 0, kind: SpanKind::Other, micro_batch: None }; total];
    for p in pieces {
        overlaps.each(p, |w, clipped| {
            if let Some(next) = ends.get_mut(w) {
                if let Some(slot) = placed.get_mut(*next) {
                    *slot = clipped;
                }
                *next += 1;
            }
        });
    }
    Buckets { pieces: placed, ends }
}

/// Finds the windows each piece overlaps. Pieces come mostly in time order, so the search
/// starts at the window the last piece started in.
struct Overlaps<'a> {
    windows: &'a [(Nanos, Nanos)],
    last: usize,
}

impl<'a> Overlaps<'a> {
    fn new(windows: &'a [(Nanos, Nanos)]) -> Self {
        Overlaps { windows, last: 0 }
    }

    /// Calls `found(window, piece clipped to it)` for each window `p` overlaps, in order.
    fn each(&mut self, p: &Piece, mut found: impl FnMut(usize, Piece)) {
        let ends_after = |w: Option<&(Nanos, Nanos)>| w.is_some_and(|w| w.1 > p.start);
        // The first window that ends after the piece starts.
        let still_first = ends_after(self.windows.get(self.last))
            && self.last.checked_sub(1).is_none_or(|prev| !ends_after(self.windows.get(prev)));
        if !still_first {
            self.last = self.windows.partition_point(|w| w.1 <= p.start);
        }
        for (i, w) in self.windows.iter().enumerate().skip(self.last) {
            if w.0 >= p.end {
                break;
            }
            let clipped = Piece { start: p.start.max(w.0), end: p.end.min(w.1), ..*p };
            if clipped.end > clipped.start {
                found(i, clipped);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SpanKind::*;

    fn piece(start: Nanos, end: Nanos, kind: SpanKind) -> Piece {
        Piece { start, end, kind, micro_batch: None }
    }

    fn render(spans: &[Span]) -> String {
        spans.iter().map(|s| format!("{}+{}:{}", s.start, s.duration, s.kind.name())).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn compute_is_a_union_and_hides_overlapping_communication() {
        // Backward on the main thread 0..100, two bucket all-reduces on side threads 60..130 and
        // 70..150, optimizer 150..170, idle until 200.
        let pieces = [
            piece(0, 40, Compute),
            piece(30, 100, Compute),
            piece(50, 55, Attention),
            piece(60, 130, Communication),
            piece(70, 150, Communication),
            piece(150, 170, Optimizer),
        ];
        let (spans, totals) = partition(0, 200, &pieces);
        assert_eq!(
            render(&spans),
            "0+50:compute 50+5:attention 55+45:compute 100+50:communication 150+20:optimizer 170+30:host_stall"
        );
        assert_eq!(totals.get(Compute), 95);
        assert_eq!(totals.get(Communication), 50);
        assert_eq!(totals.busy_compute(), 120);
        assert_eq!(totals.sum(), 200);
    }

    #[test]
    fn pieces_outside_the_window_are_clipped() {
        let (spans, totals) = partition(10, 20, &[piece(0, 15, Compute), piece(18, 40, Communication)]);
        assert_eq!(render(&spans), "10+5:compute 15+3:host_stall 18+2:communication");
        assert_eq!(totals.sum(), 10);
    }

    #[test]
    fn many_tiny_pieces_are_coarsened_but_totals_stay_exact() {
        let pieces: Vec<Piece> = (0..10_000).map(|i| piece(i * 10, i * 10 + 5, Compute)).collect();
        let (spans, totals) = partition(0, 100_000, &pieces);
        assert!(spans.len() <= MAX_SPANS_PER_STEP as usize + 1, "{}", spans.len());
        assert_eq!(totals.get(Compute), 50_000);
        assert_eq!(totals.get(HostStall), 50_000);
        let covered: Nanos = spans.iter().map(|s| s.duration).sum();
        assert_eq!(covered, 100_000);
        assert!(spans.windows(2).all(|w| w[0].end() == w[1].start));
    }

    #[test]
    fn bucketing_clips_to_each_window() {
        let windows = [(0, 10), (10, 20), (30, 40)];
        let buckets = bucket(&windows, &[piece(5, 35, Compute), piece(41, 50, Compute)]);
        let lens: Vec<Vec<(Nanos, Nanos)>> =
            buckets.iter().map(|b| b.iter().map(|p| (p.start, p.end)).collect()).collect();
        assert_eq!(lens, vec![vec![(5, 10)], vec![(10, 20)], vec![(30, 35)]]);
        // Out of time order, and before, between and after the windows.
        let pieces = [piece(32, 33, Compute), piece(-5, 1, Compute), piece(21, 29, Compute), piece(12, 14, Compute)];
        let buckets = bucket(&windows, &pieces);
        let lens: Vec<Vec<(Nanos, Nanos)>> =
            buckets.iter().map(|b| b.iter().map(|p| (p.start, p.end)).collect()).collect();
        assert_eq!(lens, vec![vec![(0, 1)], vec![(12, 14)], vec![(32, 33)]]);
        assert!(bucket(&[], &pieces).get(0).is_empty());
    }
}

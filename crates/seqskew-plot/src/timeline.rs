//! The timeline: one lane per worker (grouped by pipeline stage), each step's coarse spans
//! coloured by kind, alternate micro-batches shaded, initiators marked.
//!
//! Level of detail: when the lanes outnumber the pixel rows or the window holds more than
//! [`DETAIL_SPAN_LIMIT`] spans, each (pixel row, pixel column) gets the kind that dominates four
//! samples of it (two lanes × two instants when lanes share a row), and runs of equal colour
//! merge into one rectangle, horizontally and with the equal run of the row above. The work is
//! bounded by the pixel count (each sample is an amortised O(1) step of a cursor over the
//! lane's flat, time-sorted spans, and one lookup fills every sample the same span covers),
//! never by the data: 4096 workers × 1000 steps draws a few hundred rectangles.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::{Deserialize, Serialize};

use seqskew_core::model::{Job, Nanos, SpanKind};

use crate::common::{self, DESC_SIZE, Keyed, LABEL_SIZE, anchored, err, short};
use crate::lod::GAP;
pub use crate::lod::LaneSummary;
use crate::palette;

/// What the timeline draws, built once from the model by [`timeline_data`]. Times are
/// milliseconds since the job's first step start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineData {
    /// In drawing order: by pipeline stage, then as in `Job::workers` (by rank).
    pub lanes: Vec<Lane>,
    /// Pipeline stages (1 without pipeline coordinates).
    pub stages: u32,
    /// The end of the last step.
    pub end: f64,
}

/// One worker's row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Lane {
    /// Index into `Job::workers` (and so into `Views::workers`).
    pub worker: usize,
    pub label: String,
    /// Dense pipeline stage (0-based).
    pub stage: u32,
    /// By step number, which for training steps is also by start time.
    pub steps: Vec<LaneStep>,
    /// Every step's spans, flat: sorted by start and non-overlapping (the model's coarse
    /// timeline), so one walk in time covers the whole lane.
    pub spans: Vec<LaneSpan>,
    /// Dominant kinds at coarser resolutions, for zoomed-out views (built by [`Lane::new`];
    /// without it the timeline walks the spans).
    #[serde(default)]
    pub summary: LaneSummary,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LaneStep {
    pub step: u64,
    pub start: f64,
    pub duration: f64,
    /// Its spans are `lane.spans[first_span..first_span + span_count]` (see [`Lane::spans_of`]).
    pub first_span: u32,
    pub span_count: u32,
}

impl LaneStep {
    pub fn end(&self) -> f64 {
        self.start + self.duration
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaneSpan {
    pub start: f64,
    pub duration: f64,
    pub kind: SpanKind,
    pub micro_batch: Option<u32>,
}

impl LaneSpan {
    pub fn end(&self) -> f64 {
        self.start + self.duration
    }
}

impl TimelineData {
    /// The whole job: from 0 to the end of the last step.
    pub fn extent(&self) -> (f64, f64) {
        (0.0, if self.end > 0.0 { self.end } else { 1.0 })
    }

    /// From the earliest start to the latest end of `step` over all lanes.
    pub fn step_window(&self, step: u64) -> Option<(f64, f64)> {
        self.lanes
            .iter()
            .filter_map(|l| l.step(step))
            .map(|s| (s.start, s.end()))
            .reduce(|(a0, a1), (b0, b1)| (a0.min(b0), a1.max(b1)))
    }

    /// The lane showing `worker` (an index into `Job::workers`).
    pub fn lane_of_worker(&self, worker: usize) -> Option<usize> {
        self.lanes.iter().position(|l| l.worker == worker)
    }

    pub fn span_count(&self) -> usize {
        self.lanes.iter().map(|l| l.spans.len()).sum()
    }
}

impl Lane {
    pub fn step(&self, step: u64) -> Option<&LaneStep> {
        self.steps.binary_search_by_key(&step, |s| s.step).ok().and_then(|i| self.steps.get(i))
    }

    /// The spans of one of this lane's steps.
    pub fn spans_of(&self, step: &LaneStep) -> &[LaneSpan] {
        let first = step.first_span as usize;
        self.spans.get(first..first + step.span_count as usize).unwrap_or_default()
    }

    /// Index of the first span ending after `t`.
    fn first_span_after(&self, t: f64) -> usize {
        self.spans.partition_point(|s| s.end() <= t)
    }

    /// The spans overlapping `[w0, w1)`, with their indices.
    fn spans_in(&self, (w0, w1): (f64, f64)) -> impl Iterator<Item = &LaneSpan> {
        self.spans.get(self.first_span_after(w0)..).unwrap_or_default().iter().take_while(move |s| s.start < w1)
    }

    /// How many spans overlap `[w0, w1)`.
    fn count_in(&self, (w0, w1): (f64, f64)) -> usize {
        self.spans.partition_point(|s| s.start < w1).saturating_sub(self.first_span_after(w0))
    }
}

impl Lane {
    /// A lane from its steps, each given with its spans (times in ms, spans sorted within each
    /// step). The flat span list stays sorted even if an input's steps overlap (those steps
    /// then list no spans of their own).
    pub fn new(worker: usize, label: String, stage: u32, steps: Vec<(LaneStep, Vec<LaneSpan>)>) -> Lane {
        let mut spans = Vec::with_capacity(steps.iter().map(|s| s.1.len()).sum());
        let mut out = Vec::with_capacity(steps.len());
        let mut sorted = true;
        for (mut step, step_spans) in steps {
            step.first_span = spans.len() as u32;
            step.span_count = step_spans.len() as u32;
            sorted &=
                spans.last().zip(step_spans.first()).is_none_or(|(a, b): (&LaneSpan, &LaneSpan)| a.end() <= b.start);
            spans.extend(step_spans);
            out.push(step);
        }
        if !sorted {
            // Overlapping steps: keep each step's own spans but walk time in order.
            spans.sort_by(|a, b| a.start.total_cmp(&b.start));
            for s in &mut out {
                s.first_span = 0;
                s.span_count = 0;
            }
        }
        let summary = LaneSummary::of(&spans);
        Lane { worker, label, stage, steps: out, spans, summary }
    }
}

/// Dense indices of the values present, in sorted order.
fn dense(values: &[Option<u32>]) -> Vec<Option<u32>> {
    let mut distinct: Vec<u32> = values.iter().flatten().copied().collect();
    distinct.sort_unstable();
    distinct.dedup();
    values.iter().map(|v| v.and_then(|v| distinct.binary_search(&v).ok()).map(|i| i as u32)).collect()
}

/// Builds the timeline from the model: lanes by stage then rank, labels as the analysis names
/// workers, times in milliseconds since the first step start.
pub fn timeline_data(job: &Job) -> TimelineData {
    let origin: Nanos = job.workers.iter().flat_map(|w| w.steps.iter().map(|s| s.start)).min().unwrap_or(0);
    let ms = |t: Nanos| t.saturating_sub(origin) as f64 / 1e6;
    let stage_of = dense(&job.workers.iter().map(|w| w.coords.pp).collect::<Vec<_>>());
    let mut end: f64 = 0.0;
    let mut lanes: Vec<Lane> = job
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let label = match (w.coords.dp, w.coords.pp) {
                (None, None) => format!("rank {}", w.rank),
                (dp, pp) => format!("rank {} (dp {}, pp {})", w.rank, dp.unwrap_or(0), pp.unwrap_or(0)),
            };
            let steps: Vec<(LaneStep, Vec<LaneSpan>)> = w
                .steps
                .iter()
                .map(|s| {
                    let step = LaneStep {
                        step: s.step,
                        start: ms(s.start),
                        duration: s.duration as f64 / 1e6,
                        ..LaneStep::default()
                    };
                    let spans = s
                        .spans
                        .iter()
                        .map(|p| LaneSpan {
                            start: ms(p.start),
                            duration: p.duration as f64 / 1e6,
                            kind: p.kind,
                            micro_batch: p.micro_batch,
                        })
                        .collect();
                    (step, spans)
                })
                .collect();
            end = steps.iter().map(|s| s.0.end()).fold(end, f64::max);
            Lane::new(i, label, stage_of.get(i).copied().flatten().unwrap_or(0), steps)
        })
        .collect();
    lanes.sort_by_key(|l| (l.stage, l.worker));
    let stages = lanes.iter().map(|l| l.stage + 1).max().unwrap_or(1);
    TimelineData { lanes, stages, end }
}

/// Above this many spans in the window the timeline aggregates per pixel.
pub const DETAIL_SPAN_LIMIT: usize = 20_000;
/// Lanes are never taller than this (pixels).
pub const MAX_LANE_HEIGHT: f64 = 28.0;
const LEGEND_H: i32 = 38;
const MARGIN: i32 = 8;
const Y_LABEL_W: i32 = 128;
const X_LABEL_H: i32 = 40;

/// Where the lanes are drawn inside an area of a given size, in the area's pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlotRect {
    pub left: i32,
    pub top: i32,
    pub width: u32,
    pub height: u32,
}

/// The area height at which `lanes` lanes get their full height, at most `max`: a few
/// workers need not fill a tall canvas.
pub fn timeline_height(lanes: usize, max: u32) -> u32 {
    let chrome = (LEGEND_H + 2 * MARGIN + X_LABEL_H) as u32;
    let lanes = (lanes as f64 * MAX_LANE_HEIGHT).ceil().min(f64::from(u32::MAX)) as u32;
    chrome.saturating_add(lanes).min(max)
}

/// The lanes' rectangle in an area of `area_size` pixels (the same for drawing and hit tests).
pub fn timeline_plot_rect(area_size: (u32, u32)) -> PlotRect {
    let (w, h) = (area_size.0 as i32, area_size.1 as i32);
    PlotRect {
        left: MARGIN + Y_LABEL_W,
        top: LEGEND_H + MARGIN,
        width: (w - 2 * MARGIN - Y_LABEL_W).max(0) as u32,
        height: (h - LEGEND_H - 2 * MARGIN - X_LABEL_H).max(0) as u32,
    }
}

/// Vertical placement of `n` lanes in `height` pixels.
#[derive(Clone, Copy, Debug)]
struct LaneGeometry {
    n: usize,
    lane_h: f64,
}

impl LaneGeometry {
    fn new(n: usize, height: u32) -> Self {
        LaneGeometry { n, lane_h: if n == 0 { 0.0 } else { (f64::from(height) / n as f64).min(MAX_LANE_HEIGHT) } }
    }

    /// Every lane has at least one pixel row of its own.
    fn one_row_each(&self) -> bool {
        self.lane_h >= 1.0
    }

    /// Pixel rows `[y0, y1)` of lane `i` (possibly empty when lanes share rows).
    fn band(&self, i: usize) -> (i32, i32) {
        ((i as f64 * self.lane_h).floor() as i32, ((i + 1) as f64 * self.lane_h).floor() as i32)
    }

    /// The lane under pixel row `y`, if any.
    fn lane_at(&self, y: i32) -> Option<usize> {
        if self.n == 0 || y < 0 {
            return None;
        }
        let i = ((f64::from(y) + 0.5) / self.lane_h).floor() as usize;
        if self.one_row_each() {
            // Exact against the floored band edges.
            let mut i = i.min(self.n - 1);
            while i + 1 < self.n && self.band(i + 1).0 <= y {
                i += 1;
            }
            while i > 0 && self.band(i).0 > y {
                i -= 1;
            }
            (y < self.band(i).1).then_some(i)
        } else {
            (i < self.n).then_some(i)
        }
    }
}

/// A filled rectangle in the plot's pixels, `[x0, x1) × [y0, y1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelRect {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
    pub color: RGBColor,
}

/// The span rectangles of a timeline, before any decoration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineRects {
    /// True when drawn at the pixel level of detail (dominant kind per pixel).
    pub aggregated: bool,
    pub rects: Vec<PixelRect>,
}

/// Spans overlapping the window (two binary searches per lane).
fn spans_in_window(data: &TimelineData, window: (f64, f64)) -> usize {
    data.lanes.iter().map(|l| l.count_in(window)).sum()
}

/// A valid window: finite, with a positive width.
fn sane_window((w0, w1): (f64, f64)) -> (f64, f64) {
    let w0 = if w0.is_finite() { w0 } else { 0.0 };
    if w1.is_finite() && w1 > w0 { (w0, w1) } else { (w0, w0 + 1.0) }
}

/// The colour of a span at full detail: its kind, darker on odd micro-batches.
pub fn span_color(span: &LaneSpan) -> RGBColor {
    let base = palette::kind_color(span.kind);
    if span.micro_batch.is_some_and(|m| m % 2 == 1) { palette::darker(base) } else { base }
}

/// The rectangles the timeline draws for `window` in a plot of `plot_size` pixels. Their
/// number is bounded by the pixel count: at full detail by the (at most [`DETAIL_SPAN_LIMIT`])
/// spans, else by one rectangle per run of equal colour in each pixel row.
pub fn timeline_rects(data: &TimelineData, window: (f64, f64), plot_size: (u32, u32)) -> TimelineRects {
    let (w0, w1) = sane_window(window);
    let (width, height) = plot_size;
    let geometry = LaneGeometry::new(data.lanes.len(), height);
    if width == 0 || height == 0 || data.lanes.is_empty() {
        return TimelineRects::default();
    }
    let scale = f64::from(width) / (w1 - w0);
    let aggregated = !geometry.one_row_each() || spans_in_window(data, (w0, w1)) > DETAIL_SPAN_LIMIT;
    let mut rects = Vec::new();
    if !aggregated {
        let px = |t: f64| ((t - w0) * scale).round().clamp(0.0, f64::from(width)) as i32;
        for (i, lane) in data.lanes.iter().enumerate() {
            let (y0, mut y1) = geometry.band(i);
            if y1 - y0 >= 4 {
                y1 -= 1;
            }
            let first = rects.len();
            for span in lane.spans_in((w0, w1)) {
                let (mut x0, mut x1) = (px(span.start), px(span.end()));
                if x1 <= x0 {
                    x1 = x0 + 1;
                }
                let color = span_color(span);
                if let Some(last) = rects.get_mut(first..).and_then(<[PixelRect]>::last_mut) {
                    if last.color == color && x0 <= last.x1 {
                        last.x1 = last.x1.max(x1);
                        continue;
                    }
                    x0 = x0.max(last.x1);
                }
                if x0 < x1 && x0 < width as i32 {
                    rects.push(PixelRect { x0, y0, x1: x1.min(width as i32), y1, color });
                }
            }
        }
        return TimelineRects { aggregated, rects };
    }
    // Rows: each lane's band, or each pixel row with the lanes that share it.
    let rows: Vec<(i32, i32, usize, usize)> = if geometry.one_row_each() {
        (0..data.lanes.len()).map(|i| (geometry.band(i).0, geometry.band(i).1, i, i + 1)).collect()
    } else {
        let n = data.lanes.len();
        let first_of = |y: i32| ((f64::from(y) / geometry.lane_h).ceil() as usize).min(n);
        (0..height as i32).map(|y| (y, y + 1, first_of(y), first_of(y + 1))).filter(|r| r.2 < r.3).collect()
    };
    let column_time = 1.0 / scale;
    let mut samples: Vec<Vec<u8>> = Vec::new();
    let mut winners: Vec<u8> = Vec::new();
    // Runs of the previous row (indices into `rects`, by x): an equal run directly below
    // extends its rectangle instead of adding one, so similar workers cost one rectangle.
    let mut above: Vec<usize> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for (y0, mut y1, a, b) in rows {
        if y1 - y0 >= 4 {
            y1 -= 1;
        }
        let sampled: Vec<usize> =
            if b - a <= 2 { (a..b).collect() } else { vec![a + (b - a) / 4, a + 3 * (b - a) / 4] };
        let per_column = (4 / sampled.len().max(1)).max(1);
        samples.resize_with(sampled.len(), Vec::new);
        for (out, lane) in samples.iter_mut().zip(sampled.iter().filter_map(|&i| data.lanes.get(i))) {
            sample_lane(lane, w0, column_time / per_column as f64, per_column, width as usize, out);
        }
        column_winners(&samples, per_column, width as usize, &mut winners);
        let mut run: Option<(i32, usize)> = None;
        let mut j = 0;
        current.clear();
        for col in 0..=width as usize {
            let winner = winners.get(col).map_or(usize::MAX, |&k| usize::from(k));
            if run.is_some_and(|(_, k)| k == winner) {
                continue;
            }
            if let Some((x0, k)) = run
                && let Some(&kind) = SpanKind::ALL.get(k)
            {
                let rect = PixelRect { x0, y0, x1: col as i32, y1, color: palette::kind_color(kind) };
                while above.get(j).and_then(|&i| rects.get(i)).is_some_and(|r| r.x0 < x0) {
                    j += 1;
                }
                let below = |r: &PixelRect| (r.x0, r.x1, r.color, r.y1) == (rect.x0, rect.x1, rect.color, rect.y0);
                match above.get(j).copied().filter(|&i| rects.get(i).is_some_and(below)) {
                    Some(i) => {
                        if let Some(r) = rects.get_mut(i) {
                            r.y1 = rect.y1;
                        }
                        current.push(i);
                    }
                    None => {
                        current.push(rects.len());
                        rects.push(rect);
                    }
                }
            }
            run = Some((col as i32, winner));
        }
        std::mem::swap(&mut above, &mut current);
    }
    TimelineRects { aggregated, rects }
}

/// Per column, the dominant value of the lanes' samples (`per_column` each).
fn column_winners(samples: &[Vec<u8>], per_column: usize, width: usize, winners: &mut Vec<u8>) {
    winners.clear();
    let per_column = per_column.max(1);
    match samples {
        [] => winners.resize(width, GAP),
        [only] if per_column == 1 => winners.extend(only.iter().copied().take(width)),
        _ => {
            let mut chunks: Vec<std::slice::ChunksExact<'_, u8>> =
                samples.iter().map(|l| l.chunks_exact(per_column)).collect();
            // A pixel has at most four samples (two lanes × two instants, or one lane × four).
            let mut buf = [GAP; 16];
            for _ in 0..width {
                let mut len = 0;
                for it in &mut chunks {
                    for &k in it.next().unwrap_or_default() {
                        if let Some(slot) = buf.get_mut(len) {
                            *slot = k;
                            len += 1;
                        }
                    }
                }
                winners.push(mode(buf.get(..len).unwrap_or_default()));
            }
        }
    }
}

/// The most frequent of a few values (kind indices or [`GAP`]); ties go to the smaller value,
/// so any kind beats gaps on a tie. Quadratic, for the handful of samples of one pixel.
fn mode(values: &[u8]) -> u8 {
    let Some(&first) = values.first() else { return GAP };
    if values.iter().all(|&k| k == first) {
        return first;
    }
    let (mut best, mut most) = (GAP, 0);
    for &k in values {
        let n = values.iter().filter(|&&v| v == k).count();
        if n > most || (n == most && k < best) {
            (best, most) = (k, n);
        }
    }
    best
}

/// What is at the `per_column` instants `w0 + (i + 0.5) · dt` in each of `columns` columns of
/// a lane: the kind's index, [`GAP`] in gaps. Zoomed out, each column reads one byte of the
/// lane's summary (the level whose buckets are half a column to a column wide) for all its
/// instants. Zoomed in, one lookup fills every instant the same span (or gap) covers; lookups
/// walk forward, galloping by binary search over many spans.
fn sample_lane(lane: &Lane, w0: f64, dt: f64, per_column: usize, columns: usize, out: &mut Vec<u8>) {
    let n = per_column * columns;
    out.clear();
    out.resize(n, GAP);
    let column = dt * per_column as f64;
    if let Some((level, width)) = lane.summary.level_for(column) {
        let (start, end) = (lane.summary.start, lane.summary.end);
        let inverse = 1.0 / width;
        for (c, slots) in out.chunks_mut(per_column.max(1)).enumerate() {
            let mid = w0 + (c as f64 + 0.5) * column;
            if mid < start || mid >= end {
                continue;
            }
            // The bucket under the column's centre: buckets are between half a column and a
            // column wide, so this is the dominant kind of about the column.
            slots.fill(level.get(((mid - start) * inverse) as usize).copied().unwrap_or(GAP));
        }
        return;
    }
    sample_spans(&lane.spans, w0, dt, n, out);
}

/// [`sample_lane`] from the spans themselves.
fn sample_spans(spans: &[LaneSpan], w0: f64, dt: f64, n: usize, out: &mut [u8]) {
    let mut idx = spans.partition_point(|s| s.end() <= w0 + 0.5 * dt);
    let mut i = 0;
    while i < n {
        let t = w0 + (i as f64 + 0.5) * dt;
        // Skip the spans that end before t: a few steps, then a binary search.
        let mut hops = 0;
        while spans.get(idx).is_some_and(|s| s.end() <= t) {
            idx += 1;
            hops += 1;
            if hops == 4 {
                idx += spans.get(idx..).map_or(0, |r| r.partition_point(|s| s.end() <= t));
                break;
            }
        }
        let Some(s) = spans.get(idx) else { break };
        // The span at t, or the gap before it, lasts until `until`.
        let (value, until) = if s.start <= t { (s.kind as u8, s.end()) } else { (GAP, s.start) };
        let last = (((until - w0) / dt - 0.5).ceil().max(0.0) as usize).clamp(i + 1, n);
        if let Some(slots) = out.get_mut(i..last) {
            slots.fill(value);
        }
        i = last;
    }
}

/// Milliseconds or seconds on the x axis, by the window's width.
fn time_unit(window: (f64, f64)) -> (f64, &'static str) {
    if window.1 - window.0 >= 2_000.0 { (1_000.0, "s") } else { (1.0, "ms") }
}

/// Draws the timeline of `window` (ms since the job's first start, e.g. `lanes.extent()`),
/// outlining `selected_step` and marking each `(step, worker)` of `initiators` (worker = index
/// into `Job::workers`) on its lane.
pub fn timeline<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lanes: &TimelineData,
    window: (f64, f64),
    selected_step: Option<u64>,
    initiators: &[(u64, usize)],
) -> Result<(), String> {
    if lanes.lanes.is_empty() {
        return common::empty_chart(area, "Timeline", "No workers");
    }
    let window = sane_window(window);
    let plot = timeline_plot_rect(area.dim_in_pixel());
    if plot.width < 8 || plot.height < 8 {
        return common::empty_chart(area, "Timeline", "Too small to draw");
    }
    area.fill(&palette::WHITE).map_err(err)?;
    let (unit, unit_name) = time_unit(window);
    let x_desc = format!("Time since job start ({unit_name})");
    let mut chart = ChartBuilder::on(area)
        .margin_top(LEGEND_H + MARGIN)
        .margin_left(MARGIN)
        .margin_right(MARGIN)
        .margin_bottom(MARGIN)
        .x_label_area_size(X_LABEL_H)
        .y_label_area_size(Y_LABEL_W)
        .build_cartesian_2d(window.0 / unit..window.1 / unit, Keyed::new(0.0..1.0, Vec::new()))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(palette::mix(palette::WHITE, palette::BLACK, 0.06))
        .bold_line_style(palette::mix(palette::WHITE, palette::BLACK, 0.12))
        .x_labels(8)
        .x_label_formatter(&|v| short(*v))
        .x_desc(x_desc)
        .y_desc("Worker (rank)")
        .label_style(common::text_style(LABEL_SIZE))
        .axis_desc_style(common::text_style(DESC_SIZE))
        .draw()
        .map_err(err)?;

    // hit_test computes the same rectangle without drawing.
    let (xr, yr) = chart.plotting_area().get_pixel_range();
    let base = area.get_base_pixel();
    debug_assert_eq!(
        (xr.start - base.0, yr.start - base.1, (xr.end - xr.start) as u32, (yr.end - yr.start) as u32),
        (plot.left, plot.top, plot.width, plot.height),
        "timeline_plot_rect disagrees with plotters' layout"
    );
    let layer = timeline_rects(lanes, window, (plot.width, plot.height));
    let geometry = LaneGeometry::new(lanes.lanes.len(), plot.height);
    let canvas = chart.plotting_area().strip_coord_spec();
    for r in &layer.rects {
        canvas.draw(&Rectangle::new([(r.x0, r.y0), (r.x1, r.y1)], r.color.filled())).map_err(err)?;
    }
    // Stage separators.
    if lanes.stages > 1 {
        for (i, pair) in lanes.lanes.windows(2).enumerate() {
            if let [a, b] = pair
                && a.stage != b.stage
            {
                let y = geometry.band(i + 1).0;
                canvas
                    .draw(&PathElement::new([(0, y), (plot.width as i32, y)], palette::BLACK.stroke_width(1)))
                    .map_err(err)?;
            }
        }
    }
    let scale = f64::from(plot.width) / (window.1 - window.0);
    let px = |t: f64| ((t - window.0) * scale).round() as i32;
    // Initiators: a black dot in the middle of the initiating worker's step.
    if !initiators.is_empty() {
        let mut lane_of = vec![None; lanes.lanes.iter().map(|l| l.worker + 1).max().unwrap_or(0)];
        for (i, l) in lanes.lanes.iter().enumerate() {
            if let Some(slot) = lane_of.get_mut(l.worker) {
                *slot = Some(i);
            }
        }
        let radius = (geometry.lane_h / 3.0).clamp(2.0, 4.0).round() as i32;
        for &(step, worker) in initiators {
            let Some(i) = lane_of.get(worker).copied().flatten() else { continue };
            let Some(s) = lanes.lanes.get(i).and_then(|l| l.step(step)) else { continue };
            let mid = (s.start + s.end()) / 2.0;
            if mid < window.0 || mid >= window.1 {
                continue;
            }
            let (y0, y1) = geometry.band(i);
            canvas.draw(&Circle::new((px(mid), (y0 + y1) / 2), radius, palette::BLACK.filled())).map_err(err)?;
        }
    }
    if let Some(step) = selected_step
        && let Some((s0, s1)) = lanes.step_window(step)
    {
        let x0 = px(s0).clamp(-2, plot.width as i32 + 2);
        let x1 = px(s1).clamp(-2, plot.width as i32 + 2).max(x0 + 1);
        canvas
            .draw(&Rectangle::new([(x0, 0), (x1, plot.height as i32)], palette::BLACK.stroke_width(2)))
            .map_err(err)?;
    }
    // Lane labels, as many as fit.
    let max_labels = (f64::from(plot.height) / 16.0).floor().max(1.0) as usize;
    for i in common::strided(lanes.lanes.len(), max_labels) {
        let Some(lane) = lanes.lanes.get(i) else { continue };
        let (y0, y1) = geometry.band(i);
        let pos = (plot.left - 6, plot.top + (y0 + y1) / 2);
        area.draw(&Text::new(lane.label.as_str(), pos, anchored(LABEL_SIZE - 2, HPos::Right, VPos::Center)))
            .map_err(err)?;
    }
    legend(area, &layer, !initiators.is_empty(), selected_step)
}

/// The legend strip above the lanes (wrapping onto a second line): one swatch per kind, the
/// initiator dot, the selected step's outline, and how spans are shaded or aggregated.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    layer: &TimelineRects,
    initiators: bool,
    selected_step: Option<u64>,
) -> Result<(), String> {
    enum Swatch {
        Fill(RGBColor),
        Dot,
        Outline,
        None,
    }
    let mut items: Vec<(Swatch, String)> =
        SpanKind::ALL.iter().map(|&k| (Swatch::Fill(palette::kind_color(k)), k.name().replace('_', " "))).collect();
    if initiators {
        items.push((Swatch::Dot, "initiator".to_owned()));
    }
    if let Some(step) = selected_step {
        items.push((Swatch::Outline, format!("step {step}")));
    }
    let note = if layer.aggregated { "dominant kind per pixel" } else { "odd micro-batches darker" };
    items.push((Swatch::None, format!("({note})")));
    let style = anchored(LABEL_SIZE - 1, HPos::Left, VPos::Center);
    let right = area.dim_in_pixel().0 as i32 - MARGIN;
    let (mut x, mut y) = (MARGIN, MARGIN + 4);
    for (swatch, label) in items {
        // About 6.5 px per character at this size; the browser's and SVG's fonts differ a little.
        let text_w = (6.5 * label.chars().count() as f64).ceil() as i32;
        let w = if matches!(swatch, Swatch::None) { text_w } else { 16 + text_w };
        if x + w > right && x > MARGIN {
            (x, y) = (MARGIN, y + 17);
        }
        let text_x = match swatch {
            Swatch::Fill(c) => {
                area.draw(&Rectangle::new([(x, y - 6), (x + 12, y + 6)], c.filled())).map_err(err)?;
                x + 16
            }
            Swatch::Dot => {
                area.draw(&Circle::new((x + 6, y), 4, palette::BLACK.filled())).map_err(err)?;
                x + 16
            }
            Swatch::Outline => {
                area.draw(&Rectangle::new([(x, y - 6), (x + 12, y + 6)], palette::BLACK.stroke_width(2)))
                    .map_err(err)?;
                x + 16
            }
            Swatch::None => x,
        };
        area.draw(&Text::new(label, (text_x, y), style.clone())).map_err(err)?;
        x += w + 14;
    }
    Ok(())
}

/// What is under a pixel of the timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Index into `TimelineData::lanes`.
    pub lane: usize,
    /// Index into `Job::workers`.
    pub worker: usize,
    /// Index into the lane's steps, and the step's number.
    pub step_index: usize,
    pub step: u64,
    /// Index into the lane's `spans`, when the pixel is on a span (not between spans).
    pub span: Option<usize>,
    /// The time under the pixel's centre, ms since the job's first start.
    pub time: f64,
}

/// The worker, step and span under pixel `(x, y)` of an area of `area_size` pixels on which
/// [`timeline`] drew `window`, for tooltips.
pub fn hit_test(lanes: &TimelineData, window: (f64, f64), area_size: (u32, u32), x: i32, y: i32) -> Option<Hit> {
    let (w0, w1) = sane_window(window);
    let plot = timeline_plot_rect(area_size);
    let (px, py) = (x - plot.left, y - plot.top);
    if px < 0 || py < 0 || px >= plot.width as i32 || py >= plot.height as i32 {
        return None;
    }
    let geometry = LaneGeometry::new(lanes.lanes.len(), plot.height);
    let li = geometry.lane_at(py)?;
    let lane = lanes.lanes.get(li)?;
    let t = w0 + (f64::from(px) + 0.5) / f64::from(plot.width) * (w1 - w0);
    let si = lane.steps.partition_point(|s| s.end() <= t);
    let step = lane.steps.get(si).filter(|s| s.start <= t)?;
    let pi = lane.first_span_after(t);
    let span = lane.spans.get(pi).filter(|p| p.start <= t).map(|_| pi);
    Some(Hit { lane: li, worker: lane.worker, step_index: si, step: step.step, span, time: t })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_geometry_round_trips() {
        for (n, h) in [(1, 400), (2, 400), (7, 100), (100, 100), (250, 100), (4096, 400)] {
            let g = LaneGeometry::new(n, h);
            for i in 0..n {
                let (y0, y1) = g.band(i);
                if y1 > y0 && g.one_row_each() {
                    assert_eq!(g.lane_at(y0), Some(i), "n {n} h {h} lane {i}");
                    assert_eq!(g.lane_at(y1 - 1), Some(i), "n {n} h {h} lane {i}");
                }
            }
            assert_eq!(g.lane_at(-1), None);
        }
        // Tall lanes are capped: below the last one there is nothing.
        assert_eq!(LaneGeometry::new(2, 400).lane_at(300), None);
    }

    #[test]
    fn sampling_fills_runs_and_gallops() {
        let span = |start: f64, duration: f64, kind| LaneSpan { start, duration, kind, micro_batch: None };
        // 100 steps of 10 ms: compute 0..5, communication 5..8, nothing 8..10.
        let spans: Vec<LaneSpan> = (0..100)
            .flat_map(|i| {
                let s = f64::from(i) * 10.0;
                [span(s, 5.0, SpanKind::Compute), span(s + 5.0, 3.0, SpanKind::Communication)]
            })
            .collect();
        let sample = |spans: &[LaneSpan], w0: f64, dt: f64, n: usize| {
            let mut out = vec![GAP; n];
            sample_spans(spans, w0, dt, n, &mut out);
            out
        };
        // One instant per ms over the first 10 ms: 0.5, 1.5, ... 9.5.
        assert_eq!(sample(&spans, 0.0, 1.0, 10), [0, 0, 0, 0, 0, 2, 2, 2, 8, 8]);
        // Instants far apart skip many spans: 166.5, 499.5, 832.5, 1165.5 (past the end).
        assert_eq!(sample(&spans, 0.0, 333.0, 4), [2, 8, 0, 8]);
        assert_eq!(sample(&spans, 496.0, 1.0, 5), [2, 2, 8, 8, 0]);
        assert_eq!(sample(&[], 0.0, 1.0, 3), [8, 8, 8]);
        // Through the lane's summary when zoomed out: whole steps, compute dominates.
        let steps = (0..100).map(|i| {
            let t = f64::from(i) * 10.0;
            let own: Vec<LaneSpan> = spans.iter().filter(|s| s.start >= t && s.start < t + 10.0).copied().collect();
            (LaneStep { step: i as u64, start: t, duration: 10.0, ..LaneStep::default() }, own)
        });
        let lane = Lane::new(0, "rank 0".into(), 0, steps.collect());
        assert!(!lane.summary.levels.is_empty());
        let mut out = Vec::new();
        sample_lane(&lane, 0.0, 25.0, 2, 10, &mut out);
        assert_eq!(out, [0; 20]);
        sample_lane(&lane, 0.0, 1.0, 1, 10, &mut out);
        assert_eq!(out, [0, 0, 0, 0, 0, 2, 2, 2, 8, 8]);
    }

    #[test]
    fn mode_prefers_kinds_over_gaps_on_ties() {
        assert_eq!(mode(&[2, 4, 4, 2]), 2);
        assert_eq!(mode(&[8, 0]), 0);
        assert_eq!(mode(&[8, 0, 8, 8]), 8);
        assert_eq!(mode(&[3, 3, 3]), 3);
        assert_eq!(mode(&[1, 5, 5]), 5);
        assert_eq!(mode(&[]), GAP);
    }
}

//! The timeline: one lane per worker (grouped by pipeline stage), each step's coarse spans
//! coloured by kind, alternate micro-batches shaded, initiators marked.
//!
//! Level of detail: when the lanes outnumber the pixel rows or the window holds more than
//! [`DETAIL_SPAN_LIMIT`] spans, each (pixel row, pixel column) gets the kind that dominates four
//! samples of it (two lanes × two instants when lanes share a row). The work is bounded by the
//! pixel count (each sample is an amortised O(1) step of a walk over the lane's flat,
//! time-sorted spans, or one byte of its summary zoomed out), never by the data. The layer is
//! rectangles for plotters backends ([`timeline_rects`]: runs of equal colour merged along rows
//! and down equal runs below, yet still over a hundred thousand for 4096 workers whose steps
//! differ) or, for a canvas, the same picture as one RGBA image ([`timeline_pixels`]).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::{Deserialize, Serialize};

use seqskew_core::analysis::frame;
use seqskew_core::model::{Job, Nanos, SpanKind};

use crate::common::{self, DESC_SIZE, Keyed, LABEL_SIZE, anchored, err};
pub use crate::lane_span::LaneSpan;
use crate::lod::GAP;
pub use crate::lod::LaneSummary;
use crate::palette;
pub use crate::raster::PixelRect;
use crate::raster::rasterize;

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

/// Builds the timeline from the model: lanes by stage then rank, labels as the analysis names
/// workers, times in milliseconds since the first step start. It takes the job so that each
/// worker's spans are freed once its lane is built (the two are the largest things the
/// browser's worker holds).
pub fn timeline_data(job: Job) -> TimelineData {
    let origin: Nanos = job.workers.iter().flat_map(|w| w.steps.iter().map(|s| s.start)).min().unwrap_or(0);
    let ms = |t: Nanos| t.saturating_sub(origin) as f64 / 1e6;
    // Each worker's stage and name, as the analysis places it.
    let mut slots = frame::slots(&job);
    let mut end: f64 = 0.0;
    let mut lanes: Vec<Lane> = job
        .workers
        .into_iter()
        .enumerate()
        .map(|(i, w)| {
            let (label, stage) = slots.get_mut(i).map_or_else(
                || (format!("rank {}", w.rank), 0),
                |slot| (std::mem::take(&mut slot.label), u32::try_from(slot.stage).unwrap_or(u32::MAX)),
            );
            let steps: Vec<(LaneStep, Vec<LaneSpan>)> = w
                .steps
                .into_iter()
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
                        .map(|p| LaneSpan::new(ms(p.start), p.duration as f64 / 1e6, p.kind, p.micro_batch()))
                        .collect();
                    (step, spans)
                })
                .collect();
            end = steps.iter().map(|s| s.0.end()).fold(end, f64::max);
            Lane::new(i, label, stage, steps)
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
/// Time ticks, at most.
const X_LABELS: usize = 8;

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

/// The span rectangles of a timeline, before any decoration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineRects {
    /// True when drawn at the pixel level of detail (dominant kind per pixel).
    pub aggregated: bool,
    pub rects: Vec<PixelRect>,
}

/// The span layer of a timeline as an RGBA image of the lanes' rectangle, for a canvas.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelinePixels {
    /// True when drawn at the pixel level of detail (dominant kind per pixel).
    pub aggregated: bool,
    /// Row by row, 4 bytes a pixel, transparent where no span is (see [`rasterize`]).
    pub rgba: Vec<u8>,
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
    if span.micro_batch().is_some_and(|m| m % 2 == 1) { palette::darker(base) } else { base }
}

/// What a window's span layer is computed from.
struct LayerPlan {
    window: (f64, f64),
    geometry: LaneGeometry,
    /// Pixels per millisecond.
    scale: f64,
    /// At the pixel level of detail.
    aggregated: bool,
}

impl LayerPlan {
    /// The plan for `window` in a plot of `plot_size` pixels; `None` when there is nothing to draw.
    fn new(data: &TimelineData, window: (f64, f64), (width, height): (u32, u32)) -> Option<LayerPlan> {
        let window = sane_window(window);
        let geometry = LaneGeometry::new(data.lanes.len(), height);
        if width == 0 || height == 0 || data.lanes.is_empty() {
            return None;
        }
        let scale = f64::from(width) / (window.1 - window.0);
        let aggregated = !geometry.one_row_each() || spans_in_window(data, window) > DETAIL_SPAN_LIMIT;
        Some(LayerPlan { window, geometry, scale, aggregated })
    }

    /// Calls `row` with each row band of the pixel level of detail, `[y0, y1)`, and the dominant
    /// value (kind index or [`GAP`]) of each of its `width` columns.
    fn for_each_row(&self, data: &TimelineData, (width, height): (u32, u32), mut row: impl FnMut(i32, i32, &[u8])) {
        let mut sampler = RowSampler::default();
        for band in pixel_rows(self.geometry, height) {
            let (y0, y1) = lane_rows((band.y0, band.y1));
            row(y0, y1, sampler.winners(data, band.lanes, self.window.0, 1.0 / self.scale, width as usize));
        }
    }
}

/// The rectangles the timeline draws for `window` in a plot of `plot_size` pixels. Their
/// number is bounded by the pixel count: at full detail by the (at most [`DETAIL_SPAN_LIMIT`])
/// spans, else by one rectangle per run of equal colour in each pixel row, grown downwards over
/// equal runs of the rows below.
pub fn timeline_rects(data: &TimelineData, window: (f64, f64), plot_size: (u32, u32)) -> TimelineRects {
    let Some(plan) = LayerPlan::new(data, window, plot_size) else { return TimelineRects::default() };
    if !plan.aggregated {
        return TimelineRects { aggregated: false, rects: detailed_rects(data, &plan, plot_size.0) };
    }
    let mut runs = RunMerger::default();
    plan.for_each_row(data, plot_size, |y0, y1, values| runs.push_row(y0, y1, values));
    TimelineRects { aggregated: true, rects: runs.rects }
}

/// The same layer as an image, `rasterize(&timeline_rects(…).rects, plot_size)` exactly, but at
/// the pixel level of detail painted straight from each row's dominant kinds: a zoomed-out
/// 4096-worker timeline has a hundred thousand rectangles, too many to build every frame.
pub fn timeline_pixels(data: &TimelineData, window: (f64, f64), plot_size: (u32, u32)) -> TimelinePixels {
    let Some(plan) = LayerPlan::new(data, window, plot_size) else {
        return TimelinePixels { aggregated: false, rgba: rasterize(&[], plot_size) };
    };
    if !plan.aggregated {
        return TimelinePixels {
            aggregated: false,
            rgba: rasterize(&detailed_rects(data, &plan, plot_size.0), plot_size),
        };
    }
    // Transparent, then painted row by row.
    let mut rgba = rasterize(&[], plot_size);
    let colors = kind_rgba();
    plan.for_each_row(data, plot_size, |y0, y1, values| paint_rows(&mut rgba, plot_size.0, y0..y1, values, &colors));
    TimelinePixels { aggregated: true, rgba }
}

/// Each value's colour as RGBA: the kinds' colours, transparent for [`GAP`] and anything else.
fn kind_rgba() -> [[u8; 4]; 256] {
    let mut colors = [[0; 4]; 256];
    for (slot, &kind) in colors.iter_mut().zip(SpanKind::ALL.iter()) {
        let c = palette::kind_color(kind);
        *slot = [c.0, c.1, c.2, u8::MAX];
    }
    colors
}

/// Paints `rows` of an RGBA image `width` pixels wide in the colours of `values`, one a column.
fn paint_rows(rgba: &mut [u8], width: u32, rows: std::ops::Range<i32>, values: &[u8], colors: &[[u8; 4]; 256]) {
    let stride = width as usize * 4;
    let Ok(first) = usize::try_from(rows.start) else { return };
    let Some(row) = rgba.get_mut(first * stride..(first + 1) * stride) else { return };
    for (pixel, &v) in row.as_chunks_mut::<4>().0.iter_mut().zip(values) {
        *pixel = colors.get(usize::from(v)).copied().unwrap_or_default();
    }
    for y in rows.skip(1) {
        let Ok(y) = usize::try_from(y) else { continue };
        if (y + 1) * stride <= rgba.len() {
            rgba.copy_within(first * stride..(first + 1) * stride, y * stride);
        }
    }
}

/// Every span of the window as its own rectangle (merged with the one before when they touch
/// and share a colour), at least one pixel wide.
fn detailed_rects(data: &TimelineData, plan: &LayerPlan, width: u32) -> Vec<PixelRect> {
    let ((w0, w1), scale, geometry) = (plan.window, plan.scale, plan.geometry);
    let px = |t: f64| ((t - w0) * scale).round().clamp(0.0, f64::from(width)) as i32;
    let mut rects = Vec::new();
    for (i, lane) in data.lanes.iter().enumerate() {
        let (y0, y1) = lane_rows(geometry.band(i));
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
    rects
}

/// The rows a lane's rectangles fill: its band, less a separating row when the band is tall.
fn lane_rows((y0, y1): (i32, i32)) -> (i32, i32) {
    if y1 - y0 >= 4 { (y0, y1 - 1) } else { (y0, y1) }
}

/// Pixel rows `[y0, y1)` showing the lanes `lanes`.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    y0: i32,
    y1: i32,
    lanes: std::ops::Range<usize>,
}

/// The rows of the pixel level of detail: each lane's band when every lane has a pixel row of
/// its own, else each pixel row with the lanes that share it.
fn pixel_rows(geometry: LaneGeometry, height: u32) -> Vec<Row> {
    if geometry.one_row_each() {
        return (0..geometry.n)
            .map(|i| {
                let (y0, y1) = geometry.band(i);
                Row { y0, y1, lanes: i..i + 1 }
            })
            .collect();
    }
    let first_of = |y: i32| ((f64::from(y) / geometry.lane_h).ceil() as usize).min(geometry.n);
    (0..height as i32)
        .map(|y| Row { y0: y, y1: y + 1, lanes: first_of(y)..first_of(y + 1) })
        .filter(|r| !r.lanes.is_empty())
        .collect()
}

/// The lanes sampled for a row of `lanes`: all of one or two, else two a quarter and three
/// quarters of the way through (so that a row of many lanes is not always its first one's).
fn sampled_lanes(lanes: std::ops::Range<usize>) -> impl Iterator<Item = usize> {
    let n = lanes.len();
    let picks = if n <= 2 { [lanes.start, lanes.start + 1] } else { [lanes.start + n / 4, lanes.start + 3 * n / 4] };
    picks.into_iter().take(n)
}

/// Computes each row's dominant values, reusing its buffers from row to row (a frame samples
/// hundreds of rows).
#[derive(Debug, Default)]
struct RowSampler {
    samples: [Vec<u8>; 2],
    winners: Vec<u8>,
}

impl RowSampler {
    /// The dominant value (kind index or [`GAP`]) of each of `columns` pixel columns of the
    /// row showing `lanes`, from four samples per pixel: two instants of each of two lanes, or
    /// four instants of a lone lane.
    fn winners(
        &mut self,
        data: &TimelineData,
        lanes: std::ops::Range<usize>,
        w0: f64,
        column_time: f64,
        columns: usize,
    ) -> &[u8] {
        let picked: Vec<&Lane> = sampled_lanes(lanes).filter_map(|i| data.lanes.get(i)).collect();
        let per_column = 4 / picked.len().max(1);
        let dt = column_time / per_column as f64;
        let mut per_instant = false;
        let mut resolutions = [Resolution::PerColumn; 2];
        for ((lane, out), resolution) in picked.iter().zip(&mut self.samples).zip(&mut resolutions) {
            *resolution = sample_lane(lane, w0, dt, per_column, columns, out);
            per_instant |= *resolution == Resolution::PerInstant;
        }
        let samples = self.samples.get_mut(..picked.len()).unwrap_or_default();
        self.winners.clear();
        if !per_instant {
            // Each lane is one value per column: two samples of a kind beat two of another on a
            // tie, so the smaller value wins (a lone lane's value wins outright).
            match samples {
                [only] => self.winners.extend_from_slice(only),
                [a, b] => self.winners.extend(a.iter().zip(b.iter()).map(|(&x, &y)| x.min(y))),
                _ => self.winners.resize(columns, GAP),
            }
            return &self.winners;
        }
        for (samples, resolution) in samples.iter_mut().zip(resolutions) {
            if resolution == Resolution::PerColumn {
                *samples = samples.iter().flat_map(|&v| std::iter::repeat_n(v, per_column)).collect();
            }
        }
        match samples {
            [only] => self.winners.extend(only.as_chunks::<4>().0.iter().map(|&c| mode4(c))),
            [a, b] => {
                self.winners.resize(columns, GAP);
                let pairs = a.as_chunks::<2>().0.iter().zip(b.as_chunks::<2>().0);
                for (w, (&[a0, a1], &[b0, b1])) in self.winners.iter_mut().zip(pairs) {
                    *w = mode4([a0, a1, b0, b1]);
                }
            }
            _ => self.winners.resize(columns, GAP),
        }
        &self.winners
    }
}

/// Turns rows of per-column values into rectangles: each run of one kind in a row is a
/// rectangle, or grows the rectangle of the same run (same columns, same kind) directly above,
/// so that similar workers cost one rectangle, not one each.
#[derive(Debug, Default)]
struct RunMerger {
    rects: Vec<PixelRect>,
    /// The previous row's runs of a kind, left to right, and where that row ended.
    above: Vec<Run>,
    above_end: i32,
    current: Vec<Run>,
}

/// Columns `[x0, x1)` of a row show `value`, drawn by `rects[rect]`.
#[derive(Clone, Copy, Debug)]
struct Run {
    x0: i32,
    x1: i32,
    value: u8,
    rect: usize,
}

impl RunMerger {
    /// Adds the pixel rows `[y0, y1)` whose columns show `values` (kind indices; [`GAP`] and
    /// anything else that is no kind draws nothing).
    fn push_row(&mut self, y0: i32, y1: i32, values: &[u8]) {
        self.current.clear();
        let adjacent = self.above_end == y0;
        let mut j = 0;
        for (x0, x1, value) in runs(values) {
            let Some(&kind) = SpanKind::ALL.get(usize::from(value)) else { continue };
            while self.above.get(j).is_some_and(|r| r.x0 < x0) {
                j += 1;
            }
            let same_above = self.above.get(j).filter(|r| adjacent && (r.x0, r.x1, r.value) == (x0, x1, value));
            let rect = match same_above.and_then(|r| Some((r.rect, self.rects.get_mut(r.rect)?))) {
                Some((i, grown)) => {
                    grown.y1 = y1;
                    i
                }
                None => {
                    self.rects.push(PixelRect { x0, y0, x1, y1, color: palette::kind_color(kind) });
                    self.rects.len() - 1
                }
            };
            self.current.push(Run { x0, x1, value, rect });
        }
        std::mem::swap(&mut self.above, &mut self.current);
        self.above_end = y1;
    }
}

/// The runs of equal values, as `(first index, end index, value)`.
fn runs(values: &[u8]) -> impl Iterator<Item = (i32, i32, u8)> + '_ {
    let mut x = 0;
    std::iter::from_fn(move || {
        let &value = values.get(x)?;
        let len = values.get(x..).unwrap_or_default().iter().take_while(|&&v| v == value).count();
        let x0 = x;
        x += len;
        Some((x0 as i32, x as i32, value))
    })
}

/// The most frequent of a pixel's four samples (kind indices or [`GAP`]); ties go to the
/// smaller value, so any kind beats gaps on a tie. Branch-free but for the common case of four
/// equal samples: it runs for every pixel of a zoomed-in 4096-worker timeline.
#[inline]
fn mode4(values: [u8; 4]) -> u8 {
    let [a, b, c, d] = values;
    if u32::from_ne_bytes(values) == u32::from(a) * 0x0101_0101 {
        return a;
    }
    // Each value's rank: how often it occurs, then the smaller the better. The best rank wins.
    let rank = |v: u8| {
        let count = u16::from(v == a) + u16::from(v == b) + u16::from(v == c) + u16::from(v == d);
        count << 8 | u16::from(u8::MAX - v)
    };
    let best = rank(a).max(rank(b)).max(rank(c)).max(rank(d));
    u8::MAX - (best & 0xFF) as u8
}

/// How [`sample_lane`] wrote its samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolution {
    /// One per column: every instant of a column has the same value.
    PerColumn,
    /// One per instant, `per_column` per column.
    PerInstant,
}

/// What is at the `per_column` instants `w0 + (i + 0.5) · dt` in each of `columns` columns of
/// a lane: the kind's index, [`GAP`] in gaps. Zoomed out, each column reads one byte of the
/// lane's summary (the level whose buckets are half a column to a column wide) for all its
/// instants, so `out` gets one value per column. Zoomed in, `out` gets one value per instant,
/// from the spans ([`sample_spans`]).
fn sample_lane(lane: &Lane, w0: f64, dt: f64, per_column: usize, columns: usize, out: &mut Vec<u8>) -> Resolution {
    out.clear();
    let column = dt * per_column as f64;
    if let Some((level, width)) = lane.summary.level_for(column) {
        let (start, end) = (lane.summary.start, lane.summary.end);
        let inverse = 1.0 / width;
        out.extend((0..columns).map(|c| {
            let mid = w0 + (c as f64 + 0.5) * column;
            // The bucket under the column's centre: buckets are between half a column and a
            // column wide, so this is the dominant kind of about the column.
            let inside = mid >= start && mid < end;
            if inside { level.get(((mid - start) * inverse) as usize).copied().unwrap_or(GAP) } else { GAP }
        }));
        return Resolution::PerColumn;
    }
    let n = per_column * columns;
    out.resize(n, GAP);
    sample_spans(&lane.spans, w0, dt, n, out);
    Resolution::PerInstant
}

/// [`sample_lane`] from the spans themselves: each span fills the instants inside it, found
/// from its ends, and the gap before it is filled with [`GAP`], in order, so that [`fill_run`]
/// may spill. Spans between two instants are skipped, a few one by one, then by binary search.
fn sample_spans(spans: &[LaneSpan], w0: f64, dt: f64, n: usize, out: &mut [u8]) {
    // The first instant at or after time `x` (negative and NaN saturate to 0).
    let per_dt = 1.0 / dt;
    let instant_at = |x: f64| (((x - w0) * per_dt - 0.5).ceil() as usize).min(n);
    let mut idx = spans.partition_point(|s| s.end() <= w0 + 0.5 * dt);
    // Instants before `i` are written.
    let mut i = 0;
    let mut misses = 0;
    // Where the span before `idx` ended: a span starting there has no gap before it.
    let mut last_end = f64::NAN;
    while i < n {
        let Some(s) = spans.get(idx) else { break };
        let end = instant_at(s.end());
        if end > i {
            if s.start != last_end {
                let start = instant_at(s.start).max(i);
                fill_run(out, i..start, GAP);
                i = start;
            }
            fill_run(out, i..end, s.kind as u8);
            (i, idx, misses, last_end) = (end, idx + 1, 0, s.end());
        } else if misses < 4 {
            (idx, misses, last_end) = (idx + 1, misses + 1, s.end());
        } else {
            let t = w0 + (i as f64 + 0.5) * dt;
            idx += spans.get(idx..).map_or(0, |rest| rest.partition_point(|s| s.end() <= t));
            (misses, last_end) = (0, f64::NAN);
        }
    }
    out.get_mut(i..).unwrap_or_default().fill(GAP);
}

/// Sets `out[run]` to `value`, and possibly a few values after it, which the caller writes over
/// next. Runs of a few instants are most of them zoomed out, and one 8-byte store costs far
/// less than a general fill (a call into the engine in WebAssembly).
fn fill_run(out: &mut [u8], run: std::ops::Range<usize>, value: u8) {
    const SHORT: usize = 8;
    if run.len() <= SHORT
        && let Some(chunk) = out.get_mut(run.start..run.start + SHORT)
    {
        chunk.copy_from_slice(&[value; SHORT]);
    } else if let Some(slots) = out.get_mut(run) {
        slots.fill(value);
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
    timeline_with_layer(area, lanes, window, selected_step, initiators, |window, plot| {
        let layer = timeline_rects(lanes, window, (plot.width, plot.height));
        draw_rects(area, &layer, plot)?;
        Ok(layer.aggregated)
    })
}

/// [`timeline`], with the span layer drawn by `draw_layer` instead of as one plotters element
/// per rectangle: given the (sanitised) window and where the lanes are, in the area's pixels,
/// it draws [`timeline_rects`] or [`timeline_pixels`] of this data and window there and says
/// whether they are aggregated (the legend tells). A canvas draws a zoomed-out 4096-worker
/// timeline fastest as one image. Everything else is drawn as [`timeline`] draws it, the
/// background and axes before the layer, the markers, labels and legend after it.
pub fn timeline_with_layer<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lanes: &TimelineData,
    window: (f64, f64),
    selected_step: Option<u64>,
    initiators: &[(u64, usize)],
    draw_layer: impl FnOnce((f64, f64), PlotRect) -> Result<bool, String>,
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
    let x_range = window.0 / unit..window.1 / unit;
    let x_step = common::tick_step(&x_range, X_LABELS);
    let mut chart = ChartBuilder::on(area)
        .margin_top(LEGEND_H + MARGIN)
        .margin_left(MARGIN)
        .margin_right(MARGIN)
        .margin_bottom(MARGIN)
        .x_label_area_size(X_LABEL_H)
        .y_label_area_size(Y_LABEL_W)
        .build_cartesian_2d(x_range, Keyed::new(0.0..1.0, Vec::new()))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(palette::mix(palette::WHITE, palette::BLACK, 0.06))
        .bold_line_style(palette::mix(palette::WHITE, palette::BLACK, 0.12))
        .x_labels(X_LABELS)
        .x_label_formatter(&|v| common::tick_label(*v, x_step))
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
    let geometry = LaneGeometry::new(lanes.lanes.len(), plot.height);
    let aggregated = draw_layer(window, plot)?;
    let canvas = chart.plotting_area().strip_coord_spec();
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
    legend(area, aggregated, !initiators.is_empty(), selected_step)
}

/// Draws the span rectangles as plotters elements on `area`, whose lanes are at `plot` (SVG
/// export, and any backend without a faster way).
pub fn draw_rects<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    layer: &TimelineRects,
    plot: PlotRect,
) -> Result<(), String> {
    let at = |x: i32, y: i32| (plot.left + x, plot.top + y);
    for r in &layer.rects {
        area.draw(&Rectangle::new([at(r.x0, r.y0), at(r.x1, r.y1)], r.color.filled())).map_err(err)?;
    }
    Ok(())
}

/// The legend strip above the lanes (wrapping onto a second line): one swatch per kind, the
/// initiator dot, the selected step's outline, and how spans are shaded or aggregated.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    aggregated: bool,
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
    let note = if aggregated { "dominant kind per pixel" } else { "odd micro-batches darker" };
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
        let span = |start: f64, duration: f64, kind| LaneSpan::new(start, duration, kind, None);
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
        // Past the last span: gaps, whatever a short run wrote ahead of itself.
        assert_eq!(sample(&spans, 995.0, 1.0, 10), [2, 2, 2, 8, 8, 8, 8, 8, 8, 8]);
        // Many spans between two instants are skipped (by binary search): 0.01 ms spans of
        // kinds 0, 1, 2, 0, …; the instant at 0.503 ms is in span 50, kind 50 % 3 = 2.
        let kinds = [SpanKind::Compute, SpanKind::Attention, SpanKind::Communication];
        let tiny: Vec<LaneSpan> = (0..1000).map(|i| span(f64::from(i) * 0.01, 0.01, kinds[i as usize % 3])).collect();
        assert_eq!(sample(&tiny, 0.003, 1.0, 12), [2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 8, 8]);
        // Through the lane's summary when zoomed out: whole steps, compute dominates.
        let steps = (0..100).map(|i| {
            let t = f64::from(i) * 10.0;
            let own: Vec<LaneSpan> = spans.iter().filter(|s| s.start >= t && s.start < t + 10.0).copied().collect();
            (LaneStep { step: i as u64, start: t, duration: 10.0, ..LaneStep::default() }, own)
        });
        let lane = Lane::new(0, "rank 0".into(), 0, steps.collect());
        assert!(!lane.summary.levels.is_empty());
        let mut out = Vec::new();
        assert_eq!(sample_lane(&lane, 0.0, 25.0, 2, 10, &mut out), Resolution::PerColumn);
        assert_eq!(out, [0; 10]);
        assert_eq!(sample_lane(&lane, 0.0, 1.0, 1, 10, &mut out), Resolution::PerInstant);
        assert_eq!(out, [0, 0, 0, 0, 0, 2, 2, 2, 8, 8]);
    }

    #[test]
    fn runs_merge_downwards_only_between_touching_rows() {
        let [c, a] = [SpanKind::Compute as u8, SpanKind::Attention as u8];
        assert_eq!(runs(&[c, c, a, GAP, GAP]).collect::<Vec<_>>(), [(0, 2, c), (2, 3, a), (3, 5, GAP)]);
        assert_eq!(runs(&[]).count(), 0);
        let mut merger = RunMerger::default();
        merger.push_row(0, 1, &[c, c, a, GAP]);
        // The same runs in the next row grow the rectangles; a changed run starts its own.
        merger.push_row(1, 2, &[c, c, a, a]);
        // After a separating row (3 is skipped), nothing grows.
        merger.push_row(3, 4, &[c, c, a, a]);
        let rect = |x0, y0, x1, y1, kind| PixelRect { x0, y0, x1, y1, color: palette::kind_color(kind) };
        assert_eq!(
            merger.rects,
            [
                rect(0, 0, 2, 2, SpanKind::Compute),
                rect(2, 0, 3, 1, SpanKind::Attention),
                rect(2, 1, 4, 2, SpanKind::Attention),
                rect(0, 3, 2, 4, SpanKind::Compute),
                rect(2, 3, 4, 4, SpanKind::Attention),
            ]
        );
    }

    #[test]
    fn mode_prefers_kinds_over_gaps_on_ties() {
        assert_eq!(mode4([2, 4, 4, 2]), 2);
        assert_eq!(mode4([8, 0, 8, 0]), 0);
        assert_eq!(mode4([8, 0, 8, 8]), 8);
        assert_eq!(mode4([3, 3, 3, 3]), 3);
        assert_eq!(mode4([1, 5, 5, 2]), 5);
        assert_eq!(mode4([6, 1, 5, 2]), 1);
    }
}

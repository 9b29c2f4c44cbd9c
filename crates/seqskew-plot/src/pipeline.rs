//! The pipeline schedule of one step: per stage, the forward and backward passes of each
//! micro-batch as a Gantt chart, coloured by how long the micro-batch is relative to the mean.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use serde::{Deserialize, Serialize};

use seqskew_core::model::{Job, MicroBatch, Nanos, SpanKind, WorkerStep};
use seqskew_core::schedule::one_f_one_b_order;

use crate::common::{self, DESC_SIZE, Keyed, LABEL_SIZE, anchored, err, short};
use crate::palette;

/// One step of one data-parallel replica, stage by stage. Times are milliseconds since the
/// earliest start of the step among the workers shown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PipelineData {
    pub step: u64,
    /// The data-parallel replica shown: per stage the worker with this dp coordinate, else the
    /// replica-th worker of the stage by dp coordinate then rank.
    pub replica: usize,
    /// By stage.
    pub rows: Vec<StageRow>,
    /// Mean micro-batch compute (forward + backward) over the rows, ms.
    pub mean_compute: f64,
    /// True when every pass was placed from the spans' micro-batch tags; false when some were
    /// laid out in 1F1B order from their durations.
    pub measured: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageRow {
    /// Dense pipeline stage (0-based).
    pub stage: u32,
    /// Index into `Job::workers`.
    pub worker: usize,
    pub label: String,
    /// In time order.
    pub passes: Vec<PassView>,
}

/// One forward or backward pass of a micro-batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PassView {
    pub micro_batch: u32,
    pub backward: bool,
    pub start: f64,
    pub duration: f64,
    /// The micro-batch's compute (forward + backward) over the mean: 1 = average.
    pub relative: f64,
}

impl PassView {
    pub fn end(&self) -> f64 {
        self.start + self.duration
    }
}

impl PipelineData {
    /// The end of the last pass.
    pub fn end(&self) -> f64 {
        self.rows.iter().flat_map(|r| &r.passes).map(PassView::end).fold(0.0, f64::max)
    }
}

/// A pass before relative times are known: (micro-batch, backward, start, end) in nanoseconds.
type RawPass = (u32, bool, Nanos, Nanos);

/// The passes of one worker-step: from the spans' micro-batch tags where they exist (the first
/// stretch of a micro-batch's compute is its forward, the rest its backward; one contiguous
/// stretch is split in the ratio of its forward to backward time; with several model chunks,
/// [`chunk_passes`]), else laid out in 1F1B order from the micro-batches' durations. Returns
/// whether they were measured.
fn passes_of(
    ws: &WorkerStep,
    micro_batches: &[MicroBatch],
    (stages, stage, chunks): (usize, usize, usize),
) -> (Vec<RawPass>, bool) {
    let is_compute = |k: SpanKind| matches!(k, SpanKind::Compute | SpanKind::Attention);
    let tagged = ws.spans.iter().any(|s| s.micro_batch().is_some() && is_compute(s.kind));
    let mut out = Vec::new();
    if tagged {
        for mb in micro_batches {
            // Stretches of this micro-batch's compute not interrupted by another's compute.
            let mut runs: Vec<(Nanos, Nanos, Nanos)> = Vec::new(); // (start, end, busy)
            let mut open = false;
            for s in ws.spans.iter().filter(|s| is_compute(s.kind)) {
                if s.micro_batch() == Some(mb.id) {
                    match runs.last_mut() {
                        Some(run) if open => {
                            run.1 = s.end();
                            run.2 += s.duration;
                        }
                        _ => runs.push((s.start, s.end(), s.duration)),
                    }
                    open = true;
                } else {
                    open = false;
                }
            }
            match runs.as_slice() {
                [] => {}
                [_, _, ..] if chunks >= 2 => out.extend(chunk_passes(mb, &runs)),
                [(start, end, busy)] => {
                    let share = if mb.compute() > 0 {
                        (i128::from(*busy) * i128::from(mb.forward) / i128::from(mb.compute())) as Nanos
                    } else {
                        *busy
                    };
                    let split = (start + share).min(*end);
                    out.push((mb.id, false, *start, split));
                    if split < *end {
                        out.push((mb.id, true, split, *end));
                    }
                }
                [first, .., last] => {
                    out.push((mb.id, false, first.0, first.1));
                    if let Some(second) = runs.get(1) {
                        out.push((mb.id, true, second.0, last.1));
                    }
                }
            }
        }
        out.sort_by_key(|p| p.2);
        return (out, true);
    }
    let mut cursor = ws.start;
    for (m, backward) in one_f_one_b_order(stages, stage, micro_batches.len()) {
        let Some(mb) = micro_batches.get(m) else { continue };
        let start = if backward { cursor } else { cursor.max(mb.start.unwrap_or(cursor)) };
        let end = start.saturating_add(if backward { mb.backward } else { mb.forward });
        out.push((mb.id, backward, start, end));
        cursor = end;
    }
    (out, false)
}

/// A micro-batch's passes on a worker that runs several model chunks (an interleaved pipeline:
/// each of its forwards, then each of its backwards, one stretch of compute apiece, or two run
/// back to back): its stretches in time order, forward as long as its forward's share of their
/// busy time lasts, then backward. A stretch the share ends in is split there, unless one side
/// would be under a tenth of it (the shares are totals, not this step's exact split).
fn chunk_passes(mb: &MicroBatch, runs: &[(Nanos, Nanos, Nanos)]) -> Vec<RawPass> {
    let busy: Nanos = runs.iter().map(|r| r.2).sum();
    let mut forward_left = match mb.compute() {
        0 => busy,
        compute => (i128::from(busy) * i128::from(mb.forward) / i128::from(compute)) as Nanos,
    };
    let mut out = Vec::with_capacity(runs.len() + 1);
    for &(start, end, run_busy) in runs {
        let tenth = run_busy / 10;
        if forward_left >= run_busy - tenth {
            out.push((mb.id, false, start, end));
        } else if forward_left <= tenth {
            out.push((mb.id, true, start, end));
        } else {
            let split = start.saturating_add(forward_left).min(end);
            out.push((mb.id, false, start, split));
            out.push((mb.id, true, split, end));
        }
        forward_left = forward_left.saturating_sub(run_busy);
    }
    out
}

/// The schedule of `step` on data-parallel replica `replica`: for each pipeline stage the
/// worker that ran the step with dp coordinate `replica` (else the replica-th by dp coordinate,
/// then rank). `None` when no such worker has micro-batches.
pub fn pipeline_data(job: &Job, step: u64, replica: usize) -> Option<PipelineData> {
    let mut pp: Vec<u32> = job.workers.iter().filter_map(|w| w.coords.pp).collect();
    pp.sort_unstable();
    pp.dedup();
    let stage_of = |pp_coord: Option<u32>| pp_coord.and_then(|p| pp.binary_search(&p).ok()).unwrap_or(0);
    let stages = pp.len().max(1);
    // (stage, worker, its step, the step's micro-batches)
    let mut rows: Vec<(usize, usize, &WorkerStep, &[MicroBatch])> = Vec::new();
    for stage in 0..stages {
        let mut candidates: Vec<(usize, &WorkerStep)> = job
            .workers
            .iter()
            .enumerate()
            .filter(|(_, w)| stage_of(w.coords.pp) == stage)
            .filter_map(|(i, w)| w.steps.iter().find(|s| s.step == step).map(|s| (i, s)))
            .collect();
        candidates.sort_by_key(|&(i, _)| job.workers.get(i).map(|w| (w.coords.dp, w.rank)));
        // The worker whose dp coordinate is `replica`, else the replica-th in that order.
        let chosen = candidates
            .iter()
            .find(|(i, _)| job.workers.get(*i).and_then(|w| w.coords.dp) == Some(replica as u32))
            .or_else(|| candidates.get(replica));
        if let Some(&(i, ws)) = chosen
            && let Some(micro_batches) = job.workers.get(i).map(|w| w.micro_batches_of(ws)).filter(|m| !m.is_empty())
        {
            rows.push((stage, i, ws, micro_batches));
        }
    }
    let origin = rows.iter().map(|r| r.2.start).min()?;
    let computes: Vec<f64> = rows.iter().flat_map(|r| r.3).map(|m| m.compute() as f64 / 1e6).collect();
    let mean_compute = computes.iter().sum::<f64>() / computes.len().max(1) as f64;
    let ms = |t: Nanos| t.saturating_sub(origin) as f64 / 1e6;
    let mut measured = true;
    let rows = rows
        .into_iter()
        .map(|(stage, worker, ws, micro_batches)| {
            let chunks = job.workers.get(worker).map_or(1, |w| w.model_chunks.len().max(1));
            let (raw, m) = passes_of(ws, micro_batches, (stages, stage, chunks));
            measured &= m;
            let relative = |id: u32| {
                let c = micro_batches.iter().find(|m| m.id == id).map_or(0.0, |m| m.compute() as f64 / 1e6);
                if mean_compute > 0.0 { c / mean_compute } else { 1.0 }
            };
            let w = job.workers.get(worker);
            StageRow {
                stage: stage as u32,
                worker,
                label: w.map_or_else(String::new, |w| format!("stage {stage} · rank {}", w.rank)),
                passes: raw
                    .into_iter()
                    .map(|(micro_batch, backward, s, e)| PassView {
                        micro_batch,
                        backward,
                        start: ms(s),
                        duration: e.saturating_sub(s) as f64 / 1e6,
                        relative: relative(micro_batch),
                    })
                    .collect(),
            }
        })
        .collect();
    Some(PipelineData { step, replica, rows, mean_compute, measured })
}

const LEGEND_W: u32 = 168;

/// The Gantt chart of a [`PipelineData`]: one row per stage (the first at the top), forward
/// (F) and backward (B) passes as boxes labelled by micro-batch, coloured on the diverging
/// scale of the micro-batch's compute relative to the mean.
pub fn pipeline<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, data: &PipelineData) -> Result<(), String> {
    let caption = format!("Pipeline schedule of step {} (replica {})", data.step, data.replica);
    let end = data.end();
    if data.rows.is_empty() || end <= 0.0 {
        return common::empty_chart(area, &caption, "No micro-batches in this step");
    }
    area.fill(&palette::WHITE).map_err(err)?;
    let (w, _) = area.dim_in_pixel();
    let (main, side) = area.split_horizontally(w.saturating_sub(LEGEND_W));
    let (unit, unit_name) = if end >= 2_000.0 { (1_000.0, "s") } else { (1.0, "ms") };
    let n = data.rows.len();
    let y_keys: Vec<f64> = (0..n).map(|k| n as f64 - k as f64 - 0.5).collect();
    let row_label = |y: &f64| {
        let k = (n as f64 - y - 0.5).round();
        if k < 0.0 { String::new() } else { data.rows.get(k as usize).map_or_else(String::new, |r| r.label.clone()) }
    };
    let caption = if data.measured { caption } else { format!("{caption}, laid out from durations") };
    let mut chart = ChartBuilder::on(&main)
        .caption(caption, common::text_style(common::CAPTION_SIZE))
        .margin(10)
        .x_label_area_size(44)
        .y_label_area_size(118)
        .build_cartesian_2d(0.0..end * 1.02 / unit, Keyed::new(0.0..n as f64, y_keys))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(palette::mix(palette::WHITE, palette::BLACK, 0.06))
        .bold_line_style(palette::mix(palette::WHITE, palette::BLACK, 0.12))
        .x_labels(8)
        .x_label_formatter(&|v| short(*v))
        .y_label_formatter(&row_label)
        .x_desc(format!("Time since step start ({unit_name})"))
        .y_desc("Pipeline stage")
        .label_style(common::text_style(LABEL_SIZE))
        .axis_desc_style(common::text_style(DESC_SIZE))
        .draw()
        .map_err(err)?;
    let (px_w, _) = chart.plotting_area().dim_in_pixel();
    let px_per_unit = f64::from(px_w) / (end * 1.02 / unit);
    for (k, row) in data.rows.iter().enumerate() {
        let (top, bottom) = (n as f64 - k as f64 - 0.1, n as f64 - k as f64 - 0.9);
        for p in &row.passes {
            let (x0, x1) = (p.start / unit, p.end() / unit);
            let fill = palette::diverging(p.relative);
            let border = if p.backward { palette::BLACK.stroke_width(2) } else { palette::DARK_GREY.stroke_width(1) };
            chart.draw_series([Rectangle::new([(x0, top), (x1, bottom)], fill.filled())]).map_err(err)?;
            chart.draw_series([Rectangle::new([(x0, top), (x1, bottom)], border)]).map_err(err)?;
            let label = format!("{}{}", if p.backward { "B" } else { "F" }, p.micro_batch);
            if (x1 - x0) * px_per_unit >= 8.0 * label.len() as f64 + 4.0 {
                let at = chart.backend_coord(&((x0 + x1) / 2.0, (top + bottom) / 2.0));
                let base = area.get_base_pixel();
                area.draw(&Text::new(
                    label,
                    (at.0 - base.0, at.1 - base.1),
                    anchored(LABEL_SIZE - 1, HPos::Center, VPos::Center),
                ))
                .map_err(err)?;
            }
        }
    }
    pipeline_legend(&side, data.mean_compute)
}

fn pipeline_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, mean: f64) -> Result<(), String> {
    let style = anchored(LABEL_SIZE, HPos::Left, VPos::Center);
    let mut y = 40;
    area.draw(&Text::new("Micro-batch compute", (4, y), style.clone())).map_err(err)?;
    y += 18;
    area.draw(&Text::new(format!("(mean {} ms)", short(mean)), (4, y), style.clone())).map_err(err)?;
    y += 24;
    for (label, ratio) in
        [("≥ 2× mean", 2.0), ("1.41×", 2f64.sqrt()), ("= mean", 1.0), ("0.71×", 0.5f64.sqrt()), ("≤ 0.5× mean", 0.5)]
    {
        area.draw(&Rectangle::new([(6, y - 8), (26, y + 8)], palette::diverging(ratio).filled())).map_err(err)?;
        area.draw(&Rectangle::new([(6, y - 8), (26, y + 8)], palette::DARK_GREY)).map_err(err)?;
        area.draw(&Text::new(label, (32, y), style.clone())).map_err(err)?;
        y += 22;
    }
    y += 8;
    area.draw(&Rectangle::new([(6, y - 8), (26, y + 8)], palette::DARK_GREY.stroke_width(1))).map_err(err)?;
    area.draw(&Text::new("F: forward pass", (32, y), style.clone())).map_err(err)?;
    y += 22;
    area.draw(&Rectangle::new([(6, y - 8), (26, y + 8)], palette::BLACK.stroke_width(2))).map_err(err)?;
    area.draw(&Text::new("B: backward pass", (32, y), style)).map_err(err)?;
    Ok(())
}

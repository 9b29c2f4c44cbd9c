//! Worker × step heatmap of relative work (1 = the step's mean), max-pooled down to a bounded
//! number of cells so that 4096 workers × 1000 steps draws as fast as 40 × 10.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use seqskew_core::analysis::views::Views;

use crate::common::{self, DESC_SIZE, Keyed, LABEL_SIZE, anchored, err, strided};
use crate::palette;

/// `Views::heat` max-pooled into blocks of `step_block` steps × `worker_block` workers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeatGrid {
    /// Number of steps and workers pooled.
    pub steps: usize,
    pub workers: usize,
    /// Steps per column and workers per row (1 × 1 when not downsampled).
    pub step_block: usize,
    pub worker_block: usize,
    pub columns: usize,
    pub rows: usize,
    /// Row-major (`values[row * columns + column]`): the largest finite ratio in the block,
    /// NaN when the block has none.
    pub values: Vec<f32>,
}

impl HeatGrid {
    pub fn is_downsampled(&self) -> bool {
        self.step_block > 1 || self.worker_block > 1
    }

    pub fn get(&self, row: usize, column: usize) -> Option<f32> {
        if column >= self.columns {
            return None;
        }
        self.values.get(row * self.columns + column).copied()
    }
}

/// Max-pools `views.heat` to at most `max_cells = (columns, rows)` cells: columns are steps,
/// rows are workers (the (x, y) order of pixel sizes). Zero limits count as one.
pub fn pool_heat(views: &Views, max_cells: (usize, usize)) -> HeatGrid {
    let (steps, workers) = (views.steps.len(), views.workers.len());
    let step_block = steps.div_ceil(max_cells.0.max(1)).max(1);
    let worker_block = workers.div_ceil(max_cells.1.max(1)).max(1);
    let (columns, rows) = (steps.div_ceil(step_block), workers.div_ceil(worker_block));
    let mut values = vec![f32::NAN; columns * rows];
    for s in 0..steps {
        let column = s / step_block;
        let Some(heat) = views.heat.get(s * workers..(s + 1) * workers) else { continue };
        for (w, &v) in heat.iter().enumerate() {
            if let Some(cell) = values.get_mut((w / worker_block) * columns + column) {
                // f32::max ignores NaN, so a block is NaN only when all of it is.
                *cell = cell.max(v);
            }
        }
    }
    HeatGrid { steps, workers, step_block, worker_block, columns, rows, values }
}

/// Levels per side of the diverging scale when merging equal neighbouring cells.
const HALF_LEVELS: u32 = 16;
const BAR_WIDTH: u32 = 116;

/// The heatmap: workers (rows, the first at the top) × steps (columns) of relative work, on
/// a diverging scale centred at 1 (blue below the step's mean, vermillion above, clamped at
/// 0.5 and 2), with a colour bar. At most `max_cells = (columns, rows)` cells are drawn (see
/// [`pool_heat`]); when nothing is pooled each step's initiating worker gets a black dot.
pub fn heatmap<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    views: &Views,
    max_cells: (usize, usize),
) -> Result<(), String> {
    let caption = "Relative work per worker and step";
    if views.steps.is_empty() || views.workers.is_empty() {
        return common::empty_chart(area, caption, "No steps");
    }
    area.fill(&palette::WHITE).map_err(err)?;
    let grid = pool_heat(views, max_cells);
    let (w, _) = area.dim_in_pixel();
    let (main, bar) = area.split_horizontally(w.saturating_sub(BAR_WIDTH));
    let caption = if grid.is_downsampled() {
        format!("{caption} (max of {} steps × {} workers per cell)", grid.step_block, grid.worker_block)
    } else {
        caption.to_owned()
    };
    let (ns, nw) = (grid.steps, grid.workers);
    let x_keys: Vec<f64> = strided(ns, 8).into_iter().map(|i| i as f64).collect();
    // Worker `i` is drawn at y = nw - 1 - i so that the first worker is at the top.
    let y_keys: Vec<f64> = strided(nw, 12).into_iter().map(|i| (nw - 1 - i) as f64).collect();
    let mut chart = ChartBuilder::on(&main)
        .caption(caption, common::text_style(common::CAPTION_SIZE))
        .margin(10)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(Keyed::new(-0.5..ns as f64 - 0.5, x_keys), Keyed::new(-0.5..nw as f64 - 0.5, y_keys))
        .map_err(err)?;
    let step_label =
        |x: &f64| views.steps.get(x.round().max(0.0) as usize).map_or_else(String::new, |s| s.step.to_string());
    let worker_label = |y: &f64| {
        let i = nw.saturating_sub(1).saturating_sub(y.round().max(0.0) as usize);
        views.ranks.get(i).map_or_else(|| i.to_string(), u32::to_string)
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_label_formatter(&step_label)
        .y_label_formatter(&worker_label)
        .x_desc("Step (number)")
        .y_desc("Worker (rank)")
        .label_style(common::text_style(LABEL_SIZE))
        .axis_desc_style(common::text_style(DESC_SIZE))
        .draw()
        .map_err(err)?;

    // Cells, merging runs of equal colour along each row.
    let mut cells = Vec::new();
    for row in 0..grid.rows {
        let w0 = row * grid.worker_block;
        let w1 = ((row + 1) * grid.worker_block).min(nw);
        let (top, bottom) = ((nw - w0) as f64 - 0.5, (nw - w1) as f64 - 0.5);
        let mut run: Option<(usize, Option<i32>)> = None;
        for col in 0..=grid.columns {
            let level = grid.get(row, col).map(|v| palette::diverging_level(f64::from(v), HALF_LEVELS));
            match (run, level) {
                (Some((_, l)), Some(level)) if l == level => {}
                _ => {
                    if let Some((c0, l)) = run {
                        let x0 = (c0 * grid.step_block) as f64 - 0.5;
                        let x1 = (col * grid.step_block).min(ns) as f64 - 0.5;
                        let color = palette::diverging_of_level(l, HALF_LEVELS);
                        cells.push(Rectangle::new([(x0, top), (x1, bottom)], color.filled()));
                    }
                    run = level.map(|l| (col, l));
                }
            }
        }
    }
    chart.draw_series(cells).map_err(err)?;

    let dots = !grid.is_downsampled();
    if dots {
        let (px_w, px_h) = chart.plotting_area().dim_in_pixel();
        let cell_px = (f64::from(px_w) / ns as f64).min(f64::from(px_h) / nw as f64);
        let radius = (cell_px / 4.0).clamp(1.0, 4.0).round() as i32;
        let dots = views.steps.iter().enumerate().filter_map(|(i, s)| {
            let w = s.initiator.filter(|&w| w < nw)?;
            Some(Circle::new((i as f64, (nw - 1 - w) as f64), radius, palette::BLACK.filled()))
        });
        chart.draw_series(dots).map_err(err)?;
    }
    color_bar(&bar, dots)
}

/// The diverging colour bar with its ticks, the "no data" swatch and, when drawn, the
/// initiator dot.
fn color_bar<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, initiators: bool) -> Result<(), String> {
    let (_, h) = area.dim_in_pixel();
    let h = h as i32;
    let (x0, x1) = (8, 26);
    let (top, bottom) = (64, (h - 70).max(80));
    area.draw(&Text::new("Relative work", (4, 24), anchored(LABEL_SIZE, HPos::Left, VPos::Center))).map_err(err)?;
    area.draw(&Text::new("(× step mean)", (4, 42), anchored(LABEL_SIZE, HPos::Left, VPos::Center))).map_err(err)?;
    let n = 32;
    for i in 0..n {
        // Top = 2, bottom = 0.5: position +1 … −1 on the log scale.
        let t = 1.0 - 2.0 * (f64::from(i) + 0.5) / f64::from(n);
        let ya = top + (bottom - top) * i / n;
        let yb = top + (bottom - top) * (i + 1) / n;
        area.draw(&Rectangle::new([(x0, ya), (x1, yb)], palette::diverging(2f64.powf(t)).filled())).map_err(err)?;
    }
    area.draw(&Rectangle::new([(x0, top), (x1, bottom)], palette::DARK_GREY)).map_err(err)?;
    for (label, t) in [("≥ 2", 1.0), ("1.41", 0.5), ("1 (mean)", 0.0), ("0.71", -0.5), ("≤ 0.5", -1.0)] {
        let y = top + ((1.0 - t) / 2.0 * f64::from(bottom - top)).round() as i32;
        area.draw(&PathElement::new([(x1, y), (x1 + 4, y)], palette::DARK_GREY)).map_err(err)?;
        area.draw(&Text::new(label, (x1 + 7, y), anchored(LABEL_SIZE, HPos::Left, VPos::Center))).map_err(err)?;
    }
    let y = bottom + 22;
    area.draw(&Rectangle::new([(x0, y - 7), (x1, y + 7)], palette::MISSING.filled())).map_err(err)?;
    area.draw(&Text::new("no data", (x1 + 7, y), anchored(LABEL_SIZE, HPos::Left, VPos::Center))).map_err(err)?;
    if !initiators {
        return Ok(());
    }
    let y = bottom + 44;
    area.draw(&Circle::new(((x0 + x1) / 2, y), 3, palette::BLACK.filled())).map_err(err)?;
    area.draw(&Text::new("initiator", (x1 + 7, y), anchored(LABEL_SIZE, HPos::Left, VPos::Center))).map_err(err)?;
    Ok(())
}

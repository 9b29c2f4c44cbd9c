//! seqskew-plot: the charts of seqskew, drawn with [plotters] on any `DrawingBackend`.
//!
//! **What belongs here: drawing only.** Every number a chart shows comes from seqskew-core
//! (`analysis::views::Views`, the `model::Job`); this crate turns it into pixels, plus the few
//! small, draw-specific data shapes that are cheaper to build once than per frame
//! ([`TimelineData`], [`PipelineData`]) and the geometry tooltips need ([`hit_test`]).
//!
//! The browser draws with `plotters-canvas`'s `CanvasBackend` (the timeline's spans as one image,
//! [`timeline_pixels`]); native code and the tests draw the same charts into SVG with
//! [`render_svg`]. Like the core it is pure: no IO, no clock, no
//! threads, and it compiles for `wasm32-unknown-unknown`. Plotters is used without its default
//! features, in particular without `ttf`: text is never rasterised here (the SVG backend writes
//! `<text>` elements, the canvas asks the browser), so no font files or font-kit are needed.
//! On wasm, plotters measures text through the DOM, so draw on the page, not in a Web Worker.
//!
//! [`TimelineData`] and [`PipelineData`] are plain serde data: a Web Worker can build them from
//! the `Job` ([`timeline_data`], [`pipeline_data`]) and post them to the page. The timeline keeps
//! each lane's spans in one time-sorted array plus a level-of-detail summary (four bytes
//! per span), so drawing any window costs about the pixel count, not the span count.
//!
//! Every chart takes a `&DrawingArea<DB, Shift>` (split it to place several), fills it, and
//! returns `Err(String)` only for backend failures; missing data draws an explanatory empty
//! chart. Colours are the Okabe–Ito palette ([`palette`]); every axis names its unit.
//!
//! | chart | function |
//! |---|---|
//! | step time against a batch feature | [`step_time_scatter`] |
//! | step time against the longest and the mean document | [`max_vs_mean`] |
//! | compute against predicted cost | [`compute_vs_cost`] |
//! | relative work per worker and step | [`heatmap()`] |
//! | step time (and ideal) per step, one or more runs | [`step_series`] |
//! | worker timeline with level of detail | [`timeline()`] (on a canvas: [`timeline_with_layer`], [`timeline_pixels`]), [`hit_test`] |
//! | the 1F1B schedule of one step | [`pipeline()`] |

#![deny(clippy::indexing_slicing)]

mod common;
pub mod heatmap;
mod lane_span;
mod lod;
pub mod palette;
pub mod pipeline;
mod raster;
pub mod scatter;
pub mod series;
pub mod timeline;

use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, IntoDrawingArea, SVGBackend};

pub use common::{LineFit, least_squares, pearson, r_label};
pub use heatmap::{HeatGrid, heatmap, pool_heat};
pub use lane_span::LaneSpan;
pub use pipeline::{PassView, PipelineData, StageRow, pipeline, pipeline_data};
pub use plotters;
pub use raster::{PixelRect, rasterize};
pub use scatter::{XAxis, compute_vs_cost, max_vs_mean, max_vs_mean_title, step_time_scatter};
pub use series::step_series;
pub use timeline::{
    Hit, Lane, LaneStep, LaneSummary, PlotRect, TimelineData, TimelinePixels, TimelineRects, draw_rects, hit_test,
    timeline, timeline_data, timeline_height, timeline_pixels, timeline_plot_rect, timeline_rects, timeline_with_layer,
};

/// Draws into an SVG document of `size` pixels held in memory (SVG export, snapshot tests).
pub fn render_svg(
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String>,
) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(&root)?;
        root.present().map_err(common::err)?;
    }
    Ok(svg)
}

//! Step time per step for one or more runs (compare mode: "before", "after"), each with its
//! replayed ideal step dashed.

use plotters::coord::Shift;
use plotters::prelude::*;
use seqskew_core::analysis::views::StepView;

use crate::common::{self, DESC_SIZE, LABEL_SIZE, err, short};
use crate::palette;

/// Measured step time (solid, with points) and the ideal step (dashed) per step number, one
/// colour per run. A single run may be named `""`.
pub fn step_series<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[(&str, &[StepView])],
) -> Result<(), String> {
    let caption = "Step time per step";
    let finite = |s: &&StepView| s.time_s.is_finite();
    let all = || series.iter().flat_map(|(_, steps)| steps.iter().filter(finite));
    let Some((x_lo, x_hi)) = all()
        .map(|s| s.step as f64)
        .fold(None, |r: Option<(f64, f64)>, x| Some(r.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x)))))
    else {
        return common::empty_chart(area, caption, "No steps");
    };
    let x_range = if x_hi > x_lo { (x_lo, x_hi) } else { (x_lo - 1.0, x_hi + 1.0) };
    let y_hi = all().flat_map(|s| [s.time_s, s.ideal_s]).filter(|v| v.is_finite()).fold(0.0, f64::max);
    let y_hi = if y_hi > 0.0 { y_hi * 1.08 } else { 1.0 };
    area.fill(&palette::WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, common::text_style(common::CAPTION_SIZE))
        .margin(10)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(x_range.0..x_range.1, 0.0..y_hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .light_line_style(palette::mix(palette::WHITE, palette::BLACK, 0.08))
        .bold_line_style(palette::mix(palette::WHITE, palette::BLACK, 0.16))
        .x_labels(8)
        .y_labels(6)
        .x_label_formatter(&|v| if v.fract() == 0.0 { format!("{v:.0}") } else { String::new() })
        .y_label_formatter(&|v| short(*v))
        .x_desc("Step (number)")
        .y_desc("Time (s)")
        .label_style(common::text_style(LABEL_SIZE))
        .axis_desc_style(common::text_style(DESC_SIZE))
        .draw()
        .map_err(err)?;
    let name = |run: &str, what: &str| if run.is_empty() { what.to_owned() } else { format!("{run}: {what}") };
    for (i, (run, steps)) in series.iter().enumerate() {
        let color = palette::series(i);
        let measured: Vec<(f64, f64)> = steps.iter().filter(finite).map(|s| (s.step as f64, s.time_s)).collect();
        let ideal: Vec<(f64, f64)> = steps
            .iter()
            .filter(|s| s.ideal_s.is_finite() && s.ideal_s > 0.0)
            .map(|s| (s.step as f64, s.ideal_s))
            .collect();
        let marker = measured.len() <= 200;
        chart
            .draw_series(LineSeries::new(measured.iter().copied(), color.stroke_width(2)).point_size(if marker {
                2
            } else {
                0
            }))
            .map_err(err)?
            .label(name(run, "step time"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
        if !ideal.is_empty() {
            chart
                .draw_series(DashedLineSeries::new(ideal, 6, 4, color.stroke_width(1)))
                .map_err(err)?
                .label(name(run, "ideal step (replay)"))
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new([(0, 0), (6, 0)], color.stroke_width(1))
                        + PathElement::new([(10, 0), (16, 0)], color.stroke_width(1))
                });
        }
    }
    common::draw_legend(&mut chart, SeriesLabelPosition::LowerRight)
}

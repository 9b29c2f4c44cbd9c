//! Scatter plots with a least-squares line and Pearson's r: step time against a sequence feature
//! of the global batch, the same against the longest and the mean document side by side, and
//! each worker-step's compute time against its predicted cost.

use plotters::coord::Shift;
use plotters::prelude::*;
use seqskew_core::analysis::views::{StepView, Views};

use crate::common::{
    self, DESC_SIZE, LABEL_SIZE, LineFit, err, least_squares, padded_range, r_label, tick_label, tick_step,
};
use crate::palette;

/// Which per-step feature of the global batch goes on the x axis of [`step_time_scatter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum XAxis {
    /// The longest document (`StepView::max_len`).
    MaxLength,
    /// The mean document length (`StepView::mean_len`).
    MeanLength,
    /// The largest shard's Σ L² (`StepView::max_sum_sq`).
    MaxSumSq,
    /// The largest worker attention time (`StepView::max_attention_s`).
    MaxAttention,
    /// The tokens in the global batch (`StepView::tokens`).
    Tokens,
}

impl XAxis {
    pub const ALL: [XAxis; 5] =
        [XAxis::MaxLength, XAxis::MeanLength, XAxis::MaxSumSq, XAxis::MaxAttention, XAxis::Tokens];

    /// What the axis shows, without its unit.
    pub fn label(self) -> &'static str {
        match self {
            XAxis::MaxLength => "Longest document in the batch",
            XAxis::MeanLength => "Mean document length",
            XAxis::MaxSumSq => "Largest shard Σ L²",
            XAxis::MaxAttention => "Largest worker attention time",
            XAxis::Tokens => "Tokens in the batch",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            XAxis::MaxLength | XAxis::MeanLength | XAxis::Tokens => "tokens",
            XAxis::MaxSumSq => "tokens²",
            XAxis::MaxAttention => "s",
        }
    }

    /// `label (unit)`, the axis title.
    pub fn title(self) -> String {
        format!("{} ({})", self.label(), self.unit())
    }

    /// The short name used in captions ("longest document").
    fn short_name(self) -> &'static str {
        match self {
            XAxis::MaxLength => "longest document",
            XAxis::MeanLength => "mean length",
            XAxis::MaxSumSq => "largest Σ L²",
            XAxis::MaxAttention => "attention time",
            XAxis::Tokens => "tokens",
        }
    }

    pub fn value(self, s: &StepView) -> f64 {
        match self {
            XAxis::MaxLength => s.max_len,
            XAxis::MeanLength => s.mean_len,
            XAxis::MaxSumSq => s.max_sum_sq,
            XAxis::MaxAttention => s.max_attention_s,
            XAxis::Tokens => s.tokens,
        }
    }
}

/// The axis title of step times.
pub const STEP_TIME_TITLE: &str = "Step time (s)";

/// The (x, step time) points of `steps`: steps whose feature is zero (sequences unknown) or not
/// finite are left out.
pub fn step_points(steps: &[StepView], x: XAxis) -> Vec<(f64, f64)> {
    steps.iter().map(|s| (x.value(s), s.time_s)).filter(|&(x, y)| x.is_finite() && x > 0.0 && y.is_finite()).collect()
}

/// Step time (y, seconds) against one feature of each step's global batch (x), with the
/// least-squares line and Pearson's r in the caption.
pub fn step_time_scatter<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    steps: &[StepView],
    x: XAxis,
) -> Result<(), String> {
    scatter_with_fit(area, &step_points(steps, x), &Scatter::of_steps(x, palette::BLUE, None))
}

/// Two panels side by side on a shared y axis: step time against the global batch's longest
/// document and against its mean document length, each with its line and r, so that one sees
/// which of the two the step time follows.
pub fn max_vs_mean<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, steps: &[StepView]) -> Result<(), String> {
    area.fill(&palette::WHITE).map_err(err)?;
    let max_points = step_points(steps, XAxis::MaxLength);
    let mean_points = step_points(steps, XAxis::MeanLength);
    let y_range = padded_range(max_points.iter().chain(&mean_points).map(|p| p.1), 0.05);
    let panels = area.split_evenly((1, 2));
    for ((panel, points), (x, color)) in panels
        .iter()
        .zip([&max_points, &mean_points])
        .zip([(XAxis::MaxLength, palette::BLUE), (XAxis::MeanLength, palette::ORANGE)])
    {
        scatter_with_fit(panel, points, &Scatter::of_steps(x, color, y_range))?;
    }
    Ok(())
}

/// Below this Pearson's r neither feature is said to be followed: a conventional "moderate"
/// correlation, so a title never claims a relation the points do not show.
const FOLLOWS_R: f64 = 0.5;

/// The title of [`max_vs_mean`], read from its points: which of the two features the step time
/// follows, with both correlations ("Step time follows the longest document (r = 0.93), not
/// the mean length (r = 0.12)"), so the heading states what the chart shows for this job.
pub fn max_vs_mean_title(steps: &[StepView]) -> String {
    let r_max = common::pearson(&step_points(steps, XAxis::MaxLength));
    let r_mean = common::pearson(&step_points(steps, XAxis::MeanLength));
    let (longest, mean) = (XAxis::MaxLength.short_name(), XAxis::MeanLength.short_name());
    match (r_max, r_mean) {
        (None, None) => format!("Step time against the {longest} and the {mean} (no lengths to correlate)"),
        (Some(a), Some(b)) if a.max(b) < FOLLOWS_R => format!(
            "Step time follows neither the {longest} ({}) nor the {mean} ({})",
            r_label(Some(a)),
            r_label(Some(b))
        ),
        (Some(a), Some(b)) if a >= b => {
            format!("Step time follows the {longest} ({}), not the {mean} ({})", r_label(Some(a)), r_label(Some(b)))
        }
        (Some(a), Some(b)) => {
            format!("Step time follows the {mean} ({}), not the {longest} ({})", r_label(Some(b)), r_label(Some(a)))
        }
        (a, b) => format!("Step time against the {longest} ({}) and the {mean} ({})", r_label(a), r_label(b)),
    }
}

/// Each worker-step's compute time (y, seconds) against its predicted shard cost (x: seconds
/// when `views.cost_is_model`, else raw Σ L² in tokens²), with the line and r.
pub fn compute_vs_cost<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, views: &Views) -> Result<(), String> {
    let points: Vec<(f64, f64)> = views
        .compute_vs_cost
        .iter()
        .map(|&(x, y)| (f64::from(x), f64::from(y)))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let (prefix, x_desc) = if views.cost_is_model {
        ("Compute vs predicted cost", "Predicted shard cost (s)")
    } else {
        ("Compute vs Σ L²", "Shard Σ L² (tokens²)")
    };
    let spec = Scatter {
        caption_prefix: prefix.to_owned(),
        x_desc: x_desc.to_owned(),
        y_desc: "Compute time (s)".to_owned(),
        points_label: "worker-steps",
        empty: "No worker-steps with known sequence lengths",
        color: palette::GREEN,
        y_range: None,
    };
    scatter_with_fit(area, &points, &spec)
}

struct Scatter {
    caption_prefix: String,
    x_desc: String,
    y_desc: String,
    points_label: &'static str,
    empty: &'static str,
    color: RGBColor,
    y_range: Option<(f64, f64)>,
}

impl Scatter {
    /// Step time against a feature of each step's global batch.
    fn of_steps(x: XAxis, color: RGBColor, y_range: Option<(f64, f64)>) -> Self {
        Scatter {
            caption_prefix: format!("Step time vs {}", x.short_name()),
            x_desc: x.title(),
            y_desc: STEP_TIME_TITLE.to_owned(),
            points_label: "steps",
            empty: "No steps with known sequence lengths",
            color,
            y_range,
        }
    }
}

/// At most this many points are drawn; beyond it, points are thinned to one per small cell of
/// the plot (the fit and r always use every point).
const MAX_DRAWN_POINTS: usize = 5_000;
const THIN_GRID: (usize, usize) = (300, 200);

/// The points to draw: all of them when few, else the first point in each cell of a grid.
fn thin(points: &[(f64, f64)], x: (f64, f64), y: (f64, f64)) -> Vec<(f64, f64)> {
    if points.len() <= MAX_DRAWN_POINTS {
        return points.to_vec();
    }
    let (gw, gh) = THIN_GRID;
    let mut seen = vec![false; gw * gh];
    let cell = |v: f64, (lo, hi): (f64, f64), n: usize| (((v - lo) / (hi - lo) * n as f64) as usize).min(n - 1);
    points
        .iter()
        .filter(|&&(px, py)| {
            let i = cell(py, y, gh) * gw + cell(px, x, gw);
            seen.get_mut(i).is_some_and(|s| !std::mem::replace(s, true))
        })
        .copied()
        .collect()
}

/// At most this many labelled ticks per axis.
const TICKS: usize = 6;

fn scatter_with_fit<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[(f64, f64)],
    spec: &Scatter,
) -> Result<(), String> {
    let (Some(x_range), Some(y_range)) = (
        padded_range(points.iter().map(|p| p.0), 0.05),
        spec.y_range.or(padded_range(points.iter().map(|p| p.1), 0.05)),
    ) else {
        return common::empty_chart(area, &spec.caption_prefix, spec.empty);
    };
    area.fill(&palette::WHITE).map_err(err)?;
    let fit: Option<LineFit> = least_squares(points);
    let caption = format!("{} ({})", spec.caption_prefix, r_label(fit.and_then(|f| f.r)));
    // Labels as precise as their spacing: a nearly constant feature (the longest document
    // capped at 16 384) has ticks 50 apart, which three significant digits would merge.
    let (x_step, y_step) = (tick_step(&(x_range.0..x_range.1), TICKS), tick_step(&(y_range.0..y_range.1), TICKS));
    let mut chart = ChartBuilder::on(area)
        .caption(caption, common::text_style(common::CAPTION_SIZE))
        .margin(10)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(x_range.0..x_range.1, y_range.0..y_range.1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .light_line_style(palette::mix(palette::WHITE, palette::BLACK, 0.08))
        .bold_line_style(palette::mix(palette::WHITE, palette::BLACK, 0.16))
        .x_labels(TICKS)
        .y_labels(TICKS)
        .x_label_formatter(&|v| tick_label(*v, x_step))
        .y_label_formatter(&|v| tick_label(*v, y_step))
        .x_desc(spec.x_desc.as_str())
        .y_desc(spec.y_desc.as_str())
        .label_style(common::text_style(LABEL_SIZE))
        .axis_desc_style(common::text_style(DESC_SIZE))
        .draw()
        .map_err(err)?;
    let color = spec.color;
    chart
        .draw_series(thin(points, x_range, y_range).into_iter().map(|p| Circle::new(p, 3, color.mix(0.7).filled())))
        .map_err(err)?
        .label(format!("{} (n = {})", spec.points_label, points.len()))
        .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
    if let Some(f) = fit {
        let lo = points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let hi = points.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
        chart
            .draw_series(LineSeries::new([(lo, f.at(lo)), (hi, f.at(hi))], palette::BLACK.stroke_width(2)))
            .map_err(err)?
            .label("least-squares fit")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], palette::BLACK.stroke_width(2)));
    }
    common::draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

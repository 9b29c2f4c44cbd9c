//! Shared pieces: errors as strings, number formatting, ranges, the least-squares fit, text.

use std::fmt::Display;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::palette;

/// The font family every chart uses. With plotters' `ttf` feature off, text is never rasterised
/// here: the SVG backend writes `<text>` elements and the canvas backend asks the browser.
pub const FAMILY: &str = "sans-serif";
pub const CAPTION_SIZE: u32 = 17;
pub const LABEL_SIZE: u32 = 13;
pub const DESC_SIZE: u32 = 14;

/// A plotters error (or any other) as the crate's error string.
pub fn err(e: impl Display) -> String {
    e.to_string()
}

pub fn text_style(size: u32) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&palette::BLACK)
}

pub fn anchored(size: u32, h: HPos, v: VPos) -> TextStyle<'static> {
    text_style(size).pos(Pos::new(h, v))
}

/// Draws the chart's legend (its labelled series) at `position`, on a translucent white box.
pub fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(palette::WHITE.mix(0.85))
        .border_style(palette::DARK_GREY)
        .label_font(text_style(LABEL_SIZE))
        .draw()
        .map_err(err)
}

/// A least-squares line `y = intercept + slope · x` and Pearson's r of the points it was fitted to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LineFit {
    pub slope: f64,
    pub intercept: f64,
    /// Pearson's correlation coefficient; `None` when y does not vary.
    pub r: Option<f64>,
    /// Points used (finite ones only).
    pub n: usize,
}

impl LineFit {
    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }
}

/// Ordinary least squares over the finite points. `None` with fewer than two points or when x
/// does not vary.
pub fn least_squares(points: &[(f64, f64)]) -> Option<LineFit> {
    let finite = || points.iter().filter(|(x, y)| x.is_finite() && y.is_finite());
    let n = finite().count();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let (mx, my) = finite().fold((0.0, 0.0), |(a, b), (x, y)| (a + x / nf, b + y / nf));
    let (mut sxx, mut syy, mut sxy) = (0.0, 0.0, 0.0);
    for (x, y) in finite() {
        let (dx, dy) = (x - mx, y - my);
        sxx += dx * dx;
        syy += dy * dy;
        sxy += dx * dy;
    }
    if sxx <= 0.0 || !sxx.is_finite() {
        return None;
    }
    let slope = sxy / sxx;
    let r = (syy > 0.0).then(|| (sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0));
    Some(LineFit { slope, intercept: my - slope * mx, r, n })
}

/// Pearson's r of the finite points, `None` when either coordinate is constant.
pub fn pearson(points: &[(f64, f64)]) -> Option<f64> {
    least_squares(points).and_then(|f| f.r)
}

/// `r = 0.93`, or `r = n/a`.
pub fn r_label(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("r = {r:.2}"),
        None => "r = n/a".to_owned(),
    }
}

/// A short tick label: 3 significant digits at most, k/M/G for large values.
pub fn short(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let a = v.abs();
    if a < 1e-12 {
        return "0".to_owned();
    }
    let (scaled, suffix) = match a {
        a if a >= 1e12 => (v / 1e12, "T"),
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e4 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let sa = scaled.abs();
    let decimals = if sa >= 100.0 { 0 } else { (2 - sa.log10().floor() as i32).clamp(0, 9) as usize };
    let mut s = format!("{scaled:.decimals$}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    s.push_str(suffix);
    s
}

/// The spacing of the (at most `max`) ticks plotters puts on a linear axis over `range`, which
/// [`tick_label`] needs to tell them apart; the range's width when it has a single tick.
pub fn tick_step(range: &std::ops::Range<f64>, max: usize) -> f64 {
    let ticks = RangedCoordf64::from(range.clone()).key_points(max);
    match ticks.as_slice() {
        [a, b, ..] => b - a,
        _ => range.end - range.start,
    }
}

/// A tick label precise enough to tell apart ticks `step` apart (1, 2 or 5 × 10ᵏ): every label of
/// an axis gets the decimals its step needs, and k/M/G/T only when the step keeps it to one
/// decimal in those units. Zoomed in on 22.3 s, ticks 1 ms apart read 22300, 22301, …, not
/// 22.3k each.
pub fn tick_label(v: f64, step: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let step = if step.is_finite() && step > 0.0 { step } else { v.abs().max(1.0) };
    let (scale, suffix) = match v.abs() {
        a if a >= 1e12 => (1e12, "T"),
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e4 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let (scale, suffix) = if decimals_for(step / scale) <= 1 { (scale, suffix) } else { (1.0, "") };
    let decimals = decimals_for(step / scale);
    let scaled = v / scale;
    // No "-0.0": a value that rounds to zero is zero.
    let scaled = if (scaled * 10f64.powi(decimals as i32)).round() == 0.0 { 0.0 } else { scaled };
    format!("{scaled:.decimals$}{suffix}")
}

/// Decimals that show a multiple of `step` exactly (a step of 1, 2 or 5 × 10ᵏ needs −k).
fn decimals_for(step: f64) -> usize {
    // The step comes from differences of floats: 0.1 may be 0.09999999999, not a reason for
    // another decimal.
    (-(step.log10() + 1e-6).floor()).clamp(0.0, 12.0) as usize
}

/// The finite range of `values`, padded by `pad` of its width on each side; a zero-width range
/// is widened so that it can be drawn. `None` without finite values.
pub fn padded_range(values: impl IntoIterator<Item = f64>, pad: f64) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return None;
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let w = if lo.abs() > 0.0 { lo.abs() * 0.1 } else { 1.0 };
        return Some((lo - w, hi + w));
    }
    let w = (hi - lo) * pad;
    Some((lo - w, hi + w))
}

/// Fills the area white and writes a caption and a centred message: a chart without data.
pub fn empty_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    message: &str,
) -> Result<(), String> {
    area.fill(&palette::WHITE).map_err(err)?;
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    area.draw(&Text::new(caption.to_owned(), (w / 2, 8), anchored(CAPTION_SIZE, HPos::Center, VPos::Top)))
        .map_err(err)?;
    area.draw(&Text::new(message.to_owned(), (w / 2, h / 2), anchored(LABEL_SIZE, HPos::Center, VPos::Center)))
        .map_err(err)?;
    Ok(())
}

/// Up to `max` evenly strided indices out of `0..n`, with a stride of 1, 2, 5 × 10^k.
pub fn strided(n: usize, max: usize) -> Vec<usize> {
    if n == 0 || max == 0 {
        return Vec::new();
    }
    let mut stride = 1usize;
    let mut k = 0;
    while n.div_ceil(stride) > max {
        // 1, 2, 5, 10, 20, 50, ...
        stride = if k % 3 == 1 { stride / 2 * 5 } else { stride.saturating_mul(2) };
        k += 1;
    }
    (0..n).step_by(stride).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_squares_matches_hand_computation() {
        // x = 1,2,3,4; y = 2,4,5,8: mean x 2.5, mean y 4.75; Sxx 5, Sxy 9.5, Syy 18.75.
        let f = least_squares(&[(1.0, 2.0), (2.0, 4.0), (3.0, 5.0), (4.0, 8.0)]).unwrap();
        assert!((f.slope - 1.9).abs() < 1e-12);
        assert!((f.intercept - 0.0).abs() < 1e-12);
        let r = 9.5 / (5f64.sqrt() * 18.75f64.sqrt());
        assert!((f.r.unwrap() - r).abs() < 1e-12);
        assert_eq!(r_label(f.r), "r = 0.98");
        assert_eq!(least_squares(&[(1.0, 1.0), (1.0, 2.0)]), None);
        assert_eq!(least_squares(&[(1.0, 1.0)]), None);
        assert_eq!(pearson(&[(1.0, 3.0), (2.0, 3.0)]), None);
        assert_eq!(r_label(None), "r = n/a");
    }

    #[test]
    fn short_labels() {
        let got: Vec<String> =
            [0.0, 0.25, 1.5, 12.0, 999.0, 32_768.0, 2.5e9, -0.0005, 1e-15].iter().map(|&v| short(v)).collect();
        assert_eq!(got, ["0", "0.25", "1.5", "12", "999", "32.8k", "2.5G", "-0.0005", "0"]);
    }

    #[test]
    fn tick_labels_tell_close_ticks_apart() {
        let labels = |range: std::ops::Range<f64>| -> Vec<String> {
            let step = tick_step(&range, 8);
            let ticks = RangedCoordf64::from(range).key_points(8);
            ticks.iter().map(|&v| tick_label(v, step)).collect()
        };
        // Near one step of a long job (ms): every tick differs, and none is "22.3k".
        assert_eq!(labels(22_300.0..22_310.0), ["22300", "22302", "22304", "22306", "22308", "22310"]);
        assert_eq!(labels(22_300.0..22_301.0), ["22300.0", "22300.2", "22300.4", "22300.6", "22300.8", "22301.0"]);
        // Coarse steps keep the short form, with the decimal the step needs.
        assert_eq!(labels(20_000.0..30_000.0), ["20k", "22k", "24k", "26k", "28k", "30k"]);
        assert_eq!(labels(22_000.0..24_000.0)[..3], ["22.0k", "22.5k", "23.0k"]);
        assert_eq!(labels(0.0..200.0), ["0", "50", "100", "150", "200"]);
        assert_eq!(labels(0.0..1.0)[..3], ["0.0", "0.2", "0.4"]);
        assert_eq!(tick_step(&(5.0..5.0), 8), 0.0);
        assert_eq!(tick_label(-0.0001, 0.1), "0.0");
        assert_eq!(tick_label(3.0, f64::NAN), "3");
        assert_eq!(tick_label(f64::INFINITY, 1.0), "");
        assert_eq!(tick_label(2.5e9, 5e8), "2.5G");
    }

    #[test]
    fn ranges_and_strides() {
        assert_eq!(padded_range([1.0, 3.0, f64::NAN], 0.5), Some((0.0, 4.0)));
        assert_eq!(padded_range([2.0, 2.0], 0.1), Some((1.8, 2.2)));
        assert_eq!(padded_range([f64::NAN], 0.1), None);
        assert_eq!(strided(3, 10), vec![0, 1, 2]);
        assert_eq!(strided(4096, 10), (0..4096).step_by(500).collect::<Vec<_>>());
        assert_eq!(strided(30, 10), (0..30).step_by(5).collect::<Vec<_>>());
        assert!(strided(5, 0).is_empty());
    }
}

/// A linear f64 axis whose labelled ticks are exactly `keys` (and no light grid lines):
/// for discrete axes (steps, workers, stages) whose labels a formatter maps to names.
#[derive(Clone, Debug)]
pub struct Keyed {
    pub range: std::ops::Range<f64>,
    pub keys: Vec<f64>,
}

impl Keyed {
    pub fn new(range: std::ops::Range<f64>, keys: Vec<f64>) -> Self {
        Keyed { range, keys }
    }
}

impl Ranged for Keyed {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.range.clone()).map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() { Vec::new() } else { self.keys.clone() }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

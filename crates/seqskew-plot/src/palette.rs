//! Colours: the Okabe–Ito palette (safe for the common colour-vision deficiencies), the colour of
//! each span kind, and the diverging scale for "relative to the mean" (blue below, white at 1,
//! vermillion above, symmetric on a log scale and clamped at 0.5 and 2).

use plotters::style::RGBColor;
use seqskew_core::model::SpanKind;

pub const BLUE: RGBColor = RGBColor(0x00, 0x72, 0xB2);
pub const ORANGE: RGBColor = RGBColor(0xE6, 0x9F, 0x00);
pub const SKY: RGBColor = RGBColor(0x56, 0xB4, 0xE9);
pub const GREEN: RGBColor = RGBColor(0x00, 0x9E, 0x73);
pub const YELLOW: RGBColor = RGBColor(0xF0, 0xE4, 0x42);
pub const VERMILLION: RGBColor = RGBColor(0xD5, 0x5E, 0x00);
pub const PURPLE: RGBColor = RGBColor(0xCC, 0x79, 0xA7);
pub const BLACK: RGBColor = RGBColor(0x00, 0x00, 0x00);
pub const WHITE: RGBColor = RGBColor(0xFF, 0xFF, 0xFF);
/// Waiting in a collective: present but quiet.
pub const LIGHT_GREY: RGBColor = RGBColor(0xCC, 0xCC, 0xCC);
/// Anything else.
pub const GREY: RGBColor = RGBColor(0x88, 0x88, 0x88);
/// Separators, grid and secondary text.
pub const DARK_GREY: RGBColor = RGBColor(0x44, 0x44, 0x44);
/// Cells without data (a worker without that step).
pub const MISSING: RGBColor = RGBColor(0xB0, 0xB0, 0xB0);

/// Colours for successive series (runs, panels). Yellow is left out: too pale for lines on white.
pub const SERIES: [RGBColor; 7] = [BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, BLACK];

/// The colour of the `i`-th series.
pub fn series(i: usize) -> RGBColor {
    SERIES.get(i % SERIES.len()).copied().unwrap_or(BLACK)
}

/// The colour of a span kind on the timeline and in its legend.
pub fn kind_color(kind: SpanKind) -> RGBColor {
    match kind {
        SpanKind::Compute => BLUE,
        SpanKind::Attention => ORANGE,
        SpanKind::Communication => SKY,
        SpanKind::CollectiveWait => LIGHT_GREY,
        SpanKind::HostStall => VERMILLION,
        SpanKind::Optimizer => GREEN,
        SpanKind::DataLoading => PURPLE,
        SpanKind::Other => GREY,
    }
}

/// `a` moved towards `b` by `t` (0 = `a`, 1 = `b`).
pub fn mix(a: RGBColor, b: RGBColor, t: f64) -> RGBColor {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let c = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * t).round() as u8;
    RGBColor(c(a.0, b.0), c(a.1, b.1), c(a.2, b.2))
}

/// A darker shade, for alternate micro-batches.
pub fn darker(c: RGBColor) -> RGBColor {
    mix(c, BLACK, 0.28)
}

/// Lowest and highest ratio the diverging scale distinguishes.
pub const DIVERGING_LOW: f64 = 0.5;
pub const DIVERGING_HIGH: f64 = 2.0;

/// Position of a ratio on the diverging scale: −1 at 0.5 (or below), 0 at 1, +1 at 2 (or above).
/// `None` for NaN and non-positive ratios.
pub fn diverging_position(ratio: f64) -> Option<f64> {
    (ratio.is_finite() && ratio > 0.0).then(|| ratio.log2().clamp(-1.0, 1.0))
}

/// The diverging colour of a ratio to the mean (1.0 = mean); [`MISSING`] for NaN.
pub fn diverging(ratio: f64) -> RGBColor {
    match diverging_position(ratio) {
        None => MISSING,
        Some(t) if t < 0.0 => mix(WHITE, BLUE, -t),
        Some(t) => mix(WHITE, VERMILLION, t),
    }
}

/// The diverging colour quantised to `2 * half_levels + 1` levels (for merging equal cells).
pub fn diverging_level(ratio: f64, half_levels: u32) -> Option<i32> {
    diverging_position(ratio).map(|t| (t * f64::from(half_levels)).round() as i32)
}

/// The colour of a quantised level from [`diverging_level`].
pub fn diverging_of_level(level: Option<i32>, half_levels: u32) -> RGBColor {
    match level {
        None => MISSING,
        Some(l) => diverging(2f64.powf(f64::from(l) / f64::from(half_levels.max(1)))),
    }
}

/// `#rrggbb`, as the SVG backend writes colours.
pub fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diverging_is_white_at_the_mean_and_saturates() {
        assert_eq!(diverging(1.0), WHITE);
        assert_eq!(diverging(2.0), VERMILLION);
        assert_eq!(diverging(10.0), VERMILLION);
        assert_eq!(diverging(0.5), BLUE);
        assert_eq!(diverging(0.01), BLUE);
        assert_eq!(diverging(f64::NAN), MISSING);
        assert_eq!(diverging_level(1.0, 8), Some(0));
        assert_eq!(diverging_level(4.0, 8), Some(8));
        assert_eq!(diverging_of_level(Some(8), 8), VERMILLION);
        assert_eq!(hex(ORANGE), "#E69F00");
    }
}

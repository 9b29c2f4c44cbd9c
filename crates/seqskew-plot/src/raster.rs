//! Rectangles as pixels: a canvas shows a whole layer of rectangles with one `putImageData`,
//! where drawing them one by one costs a `fillRect` and a colour string each (a zoomed-out
//! 4096-worker timeline has a hundred thousand).

use plotters::style::RGBColor;

/// A filled rectangle in the plot's pixels, `[x0, x1) × [y0, y1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelRect {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
    pub color: RGBColor,
}

/// Bytes per pixel: red, green, blue, alpha.
const RGBA: usize = 4;

/// `rects` as a `width × height` RGBA image (rows top to bottom, 4 bytes a pixel, as canvas
/// `ImageData` holds them), transparent where no rectangle is. Each rectangle fills exactly the
/// pixels `[x0, x1) × [y0, y1)` that a canvas `fillRect` or an SVG `<rect>` at those integer
/// coordinates fills, clipped to the image; a later rectangle covers an earlier one. The work is
/// the pixels covered plus a step per rectangle. Empty when the image would not fit in memory's
/// address space.
pub fn rasterize(rects: &[PixelRect], (width, height): (u32, u32)) -> Vec<u8> {
    let (w, h) = (width as usize, height as usize);
    let Some(len) = w.checked_mul(h).and_then(|n| n.checked_mul(RGBA)) else { return Vec::new() };
    let mut pixels = vec![0; len];
    for r in rects {
        let (x0, x1) = (clip(r.x0, w), clip(r.x1, w));
        let rgba = [r.color.0, r.color.1, r.color.2, u8::MAX];
        for y in clip(r.y0, h)..clip(r.y1, h) {
            let row = y * w;
            if let Some(run) = pixels.get_mut((row + x0) * RGBA..(row + x1.max(x0)) * RGBA) {
                run.as_chunks_mut::<RGBA>().0.fill(rgba);
            }
        }
    }
    pixels
}

/// A coordinate clipped to `0..=max`.
fn clip(v: i32, max: usize) -> usize {
    usize::try_from(v).unwrap_or(0).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RED: RGBColor = RGBColor(255, 0, 0);
    const BLUE: RGBColor = RGBColor(0, 0, 255);

    /// The image as one character per pixel: `.` transparent, `r` red, `b` blue.
    fn picture(pixels: &[u8], width: usize) -> Vec<String> {
        let chars: Vec<char> = pixels
            .as_chunks::<RGBA>()
            .0
            .iter()
            .map(|p| match p {
                [_, _, _, 0] => '.',
                [255, 0, 0, 255] => 'r',
                [0, 0, 255, 255] => 'b',
                _ => '?',
            })
            .collect();
        chars.chunks(width).map(|row| row.iter().collect()).collect()
    }

    #[test]
    fn fills_half_open_rectangles_clipped_to_the_image() {
        let rect = |x0, y0, x1, y1, color| PixelRect { x0, y0, x1, y1, color };
        let rects = [
            rect(0, 0, 2, 1, RED),
            rect(1, 1, 3, 3, BLUE),
            // Partly outside: clipped. Wholly outside or empty: nothing.
            rect(-2, 2, 1, 9, RED),
            rect(4, 0, 9, 1, BLUE),
            rect(7, 7, 9, 9, RED),
            rect(2, 0, 2, 3, RED),
            rect(3, 0, 1, 3, RED),
        ];
        assert_eq!(picture(&rasterize(&rects, (5, 3)), 5), ["rr..b", ".bb..", "rbb.."]);
        // Later rectangles cover earlier ones.
        assert_eq!(picture(&rasterize(&[rect(0, 0, 3, 1, RED), rect(1, 0, 2, 1, BLUE)], (3, 1)), 3), ["rbr"]);
        assert!(rasterize(&rects, (0, 7)).is_empty());
        assert_eq!(rasterize(&[], (2, 2)), [0; 16]);
    }
}

//! A canvas's size, below the charts and the timeline that both draw on canvases.

/// Width of a canvas: its container's, so charts fill the page.
pub fn canvas_width(canvas: &web_sys::HtmlCanvasElement) -> u32 {
    canvas.parent_element().map_or(900, |p| p.client_width().max(320) as u32)
}

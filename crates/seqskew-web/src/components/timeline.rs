//! The per-rank timeline: zoom (wheel, +/−), pan (drag, arrow keys), hover tooltips, click a
//! step to focus every view on it. Drawing is level-of-detail (seqskew-plot), and the span
//! rectangles reach the canvas as one image, so a frame stays cheap at 4096 workers × 1000 steps.

use std::cell::RefCell;
use std::rc::Rc;

use plotters_canvas::CanvasBackend;
use seqskew_core::analysis::Analysis;
use seqskew_plot::plotters::prelude::*;
use seqskew_plot::{
    PlotRect, TimelineData, draw_rects, hit_test, timeline_height, timeline_pixels, timeline_plot_rect, timeline_rects,
    timeline_with_layer,
};
use wasm_bindgen::{Clamped, JsCast, JsValue};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData};
use yew::prelude::*;

use crate::components::canvas::canvas_width;
use crate::components::shared::Shared;
use crate::download::download_url;
use crate::state::{Action, AppState};

#[derive(Properties, PartialEq)]
pub struct Props {
    pub data: Shared<TimelineData>,
    pub analysis: Shared<Analysis>,
    pub state: UseReducerHandle<AppState>,
}

/// Height of the canvas for `lanes` workers: each lane at its full height for small jobs (no
/// empty band below a few lanes), bounded for big ones; never so low that the axis title
/// ("Worker (rank)", written upwards beside the lanes) outgrows the lanes' area.
fn height_for(lanes: usize) -> u32 {
    timeline_height(lanes, 680).max(MIN_HEIGHT)
}

/// Room for the axis title beside even one lane.
const MIN_HEIGHT: u32 = 200;

/// Zooms `window` by `factor` around time `at`, kept inside `extent`.
pub fn zoom(window: (f64, f64), at: f64, factor: f64, extent: (f64, f64)) -> (f64, f64) {
    let (a, b) = window;
    let at = at.clamp(a, b);
    let width = ((b - a) * factor).clamp(1e-3, extent.1 - extent.0);
    let left = at - (at - a) * factor;
    clamp((left, left + width), extent)
}

/// Moves `window` by `delta` ms, kept inside `extent`.
pub fn pan(window: (f64, f64), delta: f64, extent: (f64, f64)) -> (f64, f64) {
    clamp((window.0 + delta, window.1 + delta), extent)
}

fn clamp(window: (f64, f64), extent: (f64, f64)) -> (f64, f64) {
    let width = (window.1 - window.0).min(extent.1 - extent.0);
    let left = window.0.clamp(extent.0, extent.1 - width);
    (left, left + width)
}

/// Sizes `canvas` to `size` pixels. Only when they differ: setting a canvas's size, even to
/// the same value, reallocates and clears it.
fn fit_canvas(canvas: &HtmlCanvasElement, (width, height): (u32, u32)) {
    if canvas.width() != width {
        canvas.set_width(width);
    }
    if canvas.height() != height {
        canvas.set_height(height);
    }
}

fn context_2d(canvas: &HtmlCanvasElement) -> Result<CanvasRenderingContext2d, JsValue> {
    let context = canvas.get_context("2d")?.ok_or_else(|| JsValue::from_str("no 2d context"))?;
    context.dyn_into().map_err(JsValue::from)
}

/// Draws an RGBA image of the lanes' rectangle ([`timeline_pixels`]) at its place on `target`.
/// The image goes through `scratch` because `putImageData` replaces pixels where `drawImage`
/// blends them: the grid drawn before shows through the gaps, as when each rectangle is drawn
/// on its own.
fn blit_layer(
    target: &CanvasRenderingContext2d,
    scratch: &HtmlCanvasElement,
    rgba: &[u8],
    plot: PlotRect,
) -> Result<(), JsValue> {
    let image = ImageData::new_with_u8_clamped_array_and_sh(Clamped(rgba), plot.width, plot.height)?;
    fit_canvas(scratch, (plot.width, plot.height));
    context_2d(scratch)?.put_image_data(&image, 0.0, 0.0)?;
    target.draw_image_with_html_canvas_element(scratch, f64::from(plot.left), f64::from(plot.top))
}

/// An off-page canvas for [`blit_layer`], made once and kept.
fn scratch_canvas(kept: &RefCell<Option<HtmlCanvasElement>>) -> Result<HtmlCanvasElement, JsValue> {
    if let Some(c) = kept.borrow().as_ref() {
        return Ok(c.clone());
    }
    let canvas: HtmlCanvasElement = gloo::utils::document().create_element("canvas")?.dyn_into()?;
    *kept.borrow_mut() = Some(canvas.clone());
    Ok(canvas)
}

/// Draws the timeline on `canvas`, its spans as one image (plotters' rectangles if that fails).
fn draw_on_canvas(
    canvas: &HtmlCanvasElement,
    scratch: &RefCell<Option<HtmlCanvasElement>>,
    data: &TimelineData,
    window: (f64, f64),
    selected: Option<u64>,
    initiators: &[(u64, usize)],
) -> Result<(), String> {
    let context = context_2d(canvas).map_err(|e| format!("{e:?}"))?;
    let area = CanvasBackend::with_canvas_object(canvas.clone()).ok_or("no 2d context")?.into_drawing_area();
    timeline_with_layer(&area, data, window, selected, initiators, |window, plot| {
        let layer = timeline_pixels(data, window, (plot.width, plot.height));
        match scratch_canvas(scratch).and_then(|s| blit_layer(&context, &s, &layer.rgba, plot)) {
            Ok(()) => Ok(layer.aggregated),
            Err(e) => {
                web_sys::console::warn_1(&format!("timeline: drawing the spans one by one ({e:?})").into());
                let rects = timeline_rects(data, window, (plot.width, plot.height));
                draw_rects(&area, &rects, plot).map(|()| rects.aggregated)
            }
        }
    })?;
    area.present().map_err(|e| e.to_string())
}

/// What the tooltip says about a hit.
fn describe(data: &TimelineData, hit: &seqskew_plot::Hit) -> Option<String> {
    let lane = data.lanes.get(hit.lane)?;
    let step = lane.steps.get(hit.step_index)?;
    let mut text = format!("{}\nstep {} · {:.1} ms", lane.label, step.step, step.duration);
    if let Some(span) = hit.span.and_then(|i| lane.spans_of(step).get(i)) {
        text.push_str(&format!("\n{} · {:.2} ms", span.kind.name().replace('_', " "), span.duration()));
        if let Some(mb) = span.micro_batch() {
            text.push_str(&format!(" · micro-batch {mb}"));
        }
    }
    Some(text)
}

#[component(Timeline)]
pub fn timeline_view(props: &Props) -> Html {
    let data = props.data.0.clone();
    let extent = data.extent();
    let state = &props.state;
    let canvas = use_node_ref();
    let window = use_state(|| state.nav.zoom.map_or(extent, |z| clamp(z, extent)));
    let tooltip = use_state(|| None::<(i32, i32, String)>);
    let tip = use_node_ref();
    // Positioned through the CSSOM: the page's CSP allows no inline style attributes.
    {
        let tip = tip.clone();
        use_effect_with((*tooltip).clone(), move |t| {
            if let (Some((x, y, _)), Some(el)) = (t, tip.cast::<web_sys::HtmlElement>()) {
                let style = el.style();
                let _ = style.set_property("left", &format!("{}px", x + 14));
                let _ = style.set_property("top", &format!("{}px", y + 40));
            }
        });
    }
    let drag = use_mut_ref(|| None::<(i32, (f64, f64), bool)>);
    let size = use_mut_ref(|| (900u32, height_for(data.lanes.len())));
    let initiators: Rc<Vec<(u64, usize)>> = use_memo(props.analysis.clone(), |a| {
        a.0.views.steps.iter().filter_map(|s| s.initiator.map(|w| (s.step, w))).collect()
    });

    // A new job: show all of it (unless the URL asks for a window).
    {
        let window = window.clone();
        use_effect_with(props.data.clone(), move |d| window.set(d.0.extent()));
    }
    // A focused step (from any view): bring it into sight.
    {
        let window = window.clone();
        let data = data.clone();
        use_effect_with(state.nav.step, move |step| {
            if let Some(w) = step.and_then(|s| data.step_window(s)) {
                let pad = (w.1 - w.0) * 0.15;
                window.set(clamp((w.0 - pad, w.1 + pad), data.extent()));
            }
        });
    }
    let scratch = use_mut_ref(|| None::<HtmlCanvasElement>);
    {
        let canvas = canvas.clone();
        let data = props.data.clone();
        let initiators = initiators.clone();
        let size = size.clone();
        let selected = state.nav.step;
        use_effect_with((props.data.clone(), *window, selected), move |(_, w, selected)| {
            if let Some(c) = canvas.cast::<HtmlCanvasElement>() {
                let canvas_size = (canvas_width(&c), height_for(data.0.lanes.len()));
                fit_canvas(&c, canvas_size);
                *size.borrow_mut() = canvas_size;
                if let Err(e) = draw_on_canvas(&c, &scratch, &data.0, *w, *selected, &initiators) {
                    web_sys::console::warn_1(&format!("timeline: {e}").into());
                }
            }
        });
    }

    let time_at = {
        let size = size.clone();
        let window = window.clone();
        move |x: i32| -> f64 {
            let plot = timeline_plot_rect(*size.borrow());
            let (a, b) = *window;
            let f = f64::from(x - plot.left) / f64::from(plot.width.max(1));
            a + f.clamp(0.0, 1.0) * (b - a)
        }
    };
    let onwheel = {
        let window = window.clone();
        let time_at = time_at.clone();
        Callback::from(move |e: WheelEvent| {
            e.prevent_default();
            let factor = if e.delta_y() > 0.0 { 1.25 } else { 0.8 };
            window.set(zoom(*window, time_at(e.offset_x()), factor, extent));
        })
    };
    let onmousedown = {
        let drag = drag.clone();
        let window = window.clone();
        Callback::from(move |e: MouseEvent| *drag.borrow_mut() = Some((e.offset_x(), *window, false)))
    };
    let onmousemove = {
        let drag = drag.clone();
        let window = window.clone();
        let tooltip = tooltip.clone();
        let size = size.clone();
        let data = data.clone();
        Callback::from(move |e: MouseEvent| {
            let mut d = drag.borrow_mut();
            if let Some((x0, w0, moved)) = d.as_mut() {
                let dx = e.offset_x() - *x0;
                if dx.abs() > 3 {
                    *moved = true;
                }
                if *moved {
                    let plot = timeline_plot_rect(*size.borrow());
                    let per_pixel = (w0.1 - w0.0) / f64::from(plot.width.max(1));
                    window.set(pan(*w0, -f64::from(dx) * per_pixel, extent));
                }
                return;
            }
            let hit = hit_test(&data, *window, *size.borrow(), e.offset_x(), e.offset_y());
            tooltip.set(hit.and_then(|h| describe(&data, &h)).map(|t| (e.offset_x(), e.offset_y(), t)));
        })
    };
    let onmouseup = {
        let drag = drag.clone();
        let window = window.clone();
        let size = size.clone();
        let data = data.clone();
        let state = state.clone();
        Callback::from(move |e: MouseEvent| {
            let Some((_, _, moved)) = drag.borrow_mut().take() else { return };
            if moved {
                state.dispatch(Action::Zoom(Some(*window)));
            } else if let Some(hit) = hit_test(&data, *window, *size.borrow(), e.offset_x(), e.offset_y()) {
                // A click focuses every view on that step (and that worker).
                state.dispatch(Action::FocusStep(Some(hit.step)));
                state.dispatch(Action::FocusWorker(data.lanes.get(hit.lane).map(|l| l.worker as u32)));
            }
        })
    };
    let onmouseleave = {
        let drag = drag.clone();
        let tooltip = tooltip.clone();
        Callback::from(move |_: MouseEvent| {
            drag.borrow_mut().take();
            tooltip.set(None);
        })
    };
    let onkeydown = {
        let window = window.clone();
        let state = state.clone();
        Callback::from(move |e: KeyboardEvent| {
            let w = *window;
            let mid = (w.0 + w.1) / 2.0;
            let step = (w.1 - w.0) * 0.1;
            let next = match e.key().as_str() {
                "ArrowLeft" => pan(w, -step, extent),
                "ArrowRight" => pan(w, step, extent),
                "+" | "=" => zoom(w, mid, 0.8, extent),
                "-" | "_" => zoom(w, mid, 1.25, extent),
                "0" | "Home" => extent,
                "Escape" => {
                    state.dispatch(Action::FocusStep(None));
                    extent
                }
                _ => return,
            };
            e.prevent_default();
            window.set(next);
            state.dispatch(Action::Zoom((next != extent).then_some(next)));
        })
    };
    let reset = {
        let window = window.clone();
        let state = state.clone();
        Callback::from(move |_: MouseEvent| {
            window.set(extent);
            state.dispatch(Action::Zoom(None));
        })
    };
    let png = {
        let canvas = canvas.clone();
        Callback::from(move |_: MouseEvent| {
            if let Some(url) = canvas.cast::<HtmlCanvasElement>().and_then(|c| c.to_data_url().ok()) {
                download_url("timeline.png", &url);
            }
        })
    };
    let lanes = data.lanes.len();
    html! {
        <figure class="chart timeline" id="chart-timeline">
            <div class="chart-bar">
                <h3>{format!("Per-rank timeline ({lanes} workers)")}</h3>
                <button onclick={reset}>{"Show all"}</button>
                <button onclick={png} aria-label="Download the timeline as PNG">{"PNG"}</button>
            </div>
            <canvas ref={canvas} tabindex="0" role="img"
                aria-label="Timeline: one lane per worker; compute, attention, communication, stalls and optimizer coloured; the initiating worker of each step marked. Wheel or +/− to zoom, drag or arrow keys to pan, click a step to focus it."
                {onwheel} {onmousedown} {onmousemove} {onmouseup} {onmouseleave} {onkeydown}></canvas>
            if let Some((x, y, text)) = &*tooltip {
                <div class="tooltip" role="tooltip" ref={tip.clone()} data-x={x.to_string()} data-y={y.to_string()}>{text}</div>
            }
            <p class="hint">{"Wheel or +/− to zoom, drag or ←/→ to pan, 0 to show all; click a step to focus every view on it."}</p>
        </figure>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_and_pan_stay_inside_the_job() {
        let extent = (0.0, 100.0);
        assert_eq!(zoom((0.0, 100.0), 50.0, 0.5, extent), (25.0, 75.0));
        assert_eq!(zoom((0.0, 100.0), 50.0, 2.0, extent), (0.0, 100.0));
        assert_eq!(pan((10.0, 20.0), -50.0, extent), (0.0, 10.0));
        assert_eq!(pan((10.0, 20.0), 500.0, extent), (90.0, 100.0));
    }
}

//! A bench-only page for `scripts/bench-browser.mjs`: `?bench=timeline&workers=N&steps=M` shows
//! only the timeline, over a synthetic job of N workers × M steps built directly as
//! `TimelineData`. Importing a real 4096 × 1000 job in the browser would take the benchmark
//! minutes and measure the importer, not the drawing; this measures the timeline's frame time.
//! Nothing else of the app runs (no worker, no example). Any other URL is the app.

use std::rc::Rc;

use seqskew_core::analysis::Analysis;
use seqskew_core::model::SpanKind;
use seqskew_plot::{Lane, LaneSpan, LaneStep, TimelineData};
use yew::prelude::*;

use crate::components::shared::Shared;
use crate::components::timeline::Timeline;
use crate::state::AppState;

/// Largest job the page builds: it holds every span (~45 bytes each, 3 per step) in the page's
/// wasm memory, ~0.5 GiB at 4096 × 1000; twice that still fits.
const MAX_WORKERS: u32 = 8192;
const MAX_WORKER_STEPS: u32 = 8_192_000;

/// `(workers, steps)` when the page's query asks for the timeline benchmark.
pub fn timeline_params(query: &str) -> Option<(u32, u32)> {
    let mut bench = false;
    let (mut workers, mut steps) = (4096, 1000);
    for (key, value) in query.trim_start_matches('?').split('&').filter_map(|p| p.split_once('=')) {
        match key {
            "bench" => bench = value == "timeline",
            "workers" => workers = value.parse().unwrap_or(workers),
            "steps" => steps = value.parse().unwrap_or(steps),
            _ => {}
        }
    }
    let workers = workers.clamp(1, MAX_WORKERS);
    bench.then_some((workers, steps.clamp(1, MAX_WORKER_STEPS / workers)))
}

/// Steps of 100 ms: compute (45–65 ms), attention (10–20 ms), then communication (a host stall
/// on every 64th worker) to the step's end. The durations jitter per worker and step, as a real
/// job's do, so zoomed in no two lanes look alike; one worker-step in 16 waits (30 ms of compute,
/// communication dominates), so zoomed out the level of detail has scattered runs to draw, not
/// one block of colour.
pub fn synthetic_timeline(workers: u32, steps: u32) -> TimelineData {
    let lanes = (0..workers as usize)
        .map(|w| {
            let steps = (0..u64::from(steps))
                .map(|s| {
                    let t = s as f64 * 100.0;
                    // A cheap deterministic 24-bit hash of (worker, step), and from it a jitter in [0, 1).
                    let h = ((w as u64 * 2_654_435_761) ^ (s * 40_503)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
                    let jitter = h as f64 / f64::from(1u32 << 24);
                    let compute = if h.is_multiple_of(16) { 30.0 } else { 45.0 + 20.0 * jitter };
                    let attention = 10.0 + 10.0 * (1.0 - jitter);
                    let last = if w % 64 == 63 { SpanKind::HostStall } else { SpanKind::Communication };
                    let span = |start: f64, duration: f64, kind| LaneSpan::new(start, duration, kind, None);
                    let spans = vec![
                        span(t, compute, SpanKind::Compute),
                        span(t + compute, attention, SpanKind::Attention),
                        span(t + compute + attention, 100.0 - compute - attention, last),
                    ];
                    (LaneStep { step: s, start: t, duration: 100.0, ..LaneStep::default() }, spans)
                })
                .collect();
            Lane::new(w, format!("rank {w}"), 0, steps)
        })
        .collect();
    TimelineData { lanes, stages: 1, end: f64::from(steps) * 100.0 }
}

#[derive(Properties, PartialEq)]
pub struct Props {
    pub workers: u32,
    pub steps: u32,
}

#[component(BenchTimeline)]
pub fn bench_timeline(props: &Props) -> Html {
    let state = use_reducer(AppState::default);
    let data = use_memo((props.workers, props.steps), |&(w, s)| Shared(Rc::new(synthetic_timeline(w, s))));
    let analysis = use_memo((), |_| Shared(Rc::new(Analysis::default())));
    html! {
        <main class="page" id="bench" data-workers={props.workers.to_string()} data-steps={props.steps.to_string()}>
            <Timeline data={(*data).clone()} analysis={(*analysis).clone()} state={state} />
        </main>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bench_query_selects_it() {
        assert_eq!(timeline_params("?bench=timeline&workers=64&steps=10"), Some((64, 10)));
        assert_eq!(timeline_params("?bench=timeline"), Some((4096, 1000)));
        assert_eq!(timeline_params("?bench=timeline&workers=0&steps=x"), Some((1, 1000)));
        assert_eq!(timeline_params("?bench=timeline&workers=99999&steps=99999"), Some((8192, 1000)));
        assert_eq!(timeline_params("?embed=1"), None);
        assert_eq!(timeline_params(""), None);
    }

    #[test]
    fn synthetic_lanes_are_sorted_and_fill_each_step() {
        let data = synthetic_timeline(3, 5);
        assert_eq!((data.lanes.len(), data.extent()), (3, (0.0, 500.0)));
        for lane in &data.lanes {
            assert_eq!(lane.spans.len(), 15);
            // Durations are f32s rounded down: each span ends at, or a hair before, the next start.
            assert!(lane.spans.windows(2).all(|p| p[0].end() <= p[1].start && p[1].start - p[0].end() < 1e-4));
        }
    }
}

//! Every chart rendered to SVG at 800 × 500 and summarised: element counts and the text it shows
//! (axis titles with units, legend entries, r). Small inline data, built by hand.

use expect_test::{Expect, expect};
use seqskew_core::analysis::views::{StepView, Views};
use seqskew_core::model::{Coords, Job, MicroBatch, Nanos, Span, SpanKind, Worker, WorkerStep};
use seqskew_plot::*;

const SIZE: (u32, u32) = (800, 500);

/// The text of every `<text>` element, unescaped, in order.
fn texts(svg: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        let after = &rest[i..];
        let (Some(gt), Some(end)) = (after.find('>'), after.find("</text>")) else { break };
        let t = after[gt + 1..end].trim();
        out.push(
            t.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&"),
        );
        rest = &after[end..];
    }
    out
}

fn count(svg: &str, tag: &str) -> usize {
    svg.matches(&format!("<{tag} ")).count() + svg.matches(&format!("<{tag}>")).count()
}

/// Element counts, then the distinct texts in order of appearance.
fn summary(svg: &str) -> String {
    let mut seen = Vec::new();
    for t in texts(svg) {
        if !t.is_empty() && !seen.contains(&t) {
            seen.push(t);
        }
    }
    format!(
        "rect {} circle {} polyline {} line {} polygon {} text {}\n{}\n",
        count(svg, "rect"),
        count(svg, "circle"),
        count(svg, "polyline"),
        count(svg, "line"),
        count(svg, "polygon"),
        count(svg, "text"),
        seen.join(" | ")
    )
}

fn has_text(svg: &str, wanted: &str) -> bool {
    texts(svg).iter().any(|t| t == wanted)
}

fn has_text_containing(svg: &str, wanted: &str) -> bool {
    texts(svg).iter().any(|t| t.contains(wanted))
}

fn check(svg: &str, expect: Expect) {
    expect.assert_eq(&summary(svg));
}

fn step(step: u64, time_s: f64, max_len: f64, mean_len: f64) -> StepView {
    StepView {
        step,
        time_s,
        ideal_s: time_s * 0.8,
        max_len,
        mean_len,
        max_sum_sq: max_len * max_len * 2.0,
        max_attention_s: time_s * 0.3,
        tokens: 65_536.0,
        initiator: Some((step % 3) as usize),
    }
}

/// Step time follows the longest document (r = 0.98) and not the mean (r = 0.10):
/// x = 1000..4000 and y = 0.2, 0.4, 0.5, 0.8 give Sxx = 5e6, Sxy = 950, Syy = 0.1875.
fn steps() -> Vec<StepView> {
    vec![
        step(1, 0.2, 1000.0, 500.0),
        step(2, 0.4, 2000.0, 520.0),
        step(3, 0.5, 3000.0, 480.0),
        step(4, 0.8, 4000.0, 510.0),
    ]
}

fn views() -> Views {
    let nan = f32::NAN;
    Views {
        workers: vec!["rank 0".into(), "rank 1".into(), "rank 2".into()],
        ranks: vec![0, 1, 2],
        stages: vec![0, 0, 0],
        steps: steps(),
        // Step-major, 3 workers per step; worker 2 has no step 4.
        heat: vec![1.0, 0.9, 1.1, 0.6, 1.0, 2.3, 1.0, 1.0, 1.0, 0.8, 1.7, nan],
        compute_vs_cost: vec![(0.10, 0.11), (0.20, 0.19), (0.30, 0.33), (0.40, 0.41)],
        cost_is_model: true,
        last_steps: Vec::new(),
    }
}

#[test]
fn pearson_matches_hand_computation() {
    let points = scatter::step_points(&steps(), XAxis::MaxLength);
    let r = pearson(&points).unwrap();
    let hand = 950.0 / (5e6f64 * 0.1875).sqrt();
    assert!((r - hand).abs() < 1e-12, "{r} vs {hand}");
    assert_eq!(r_label(Some(r)), "r = 0.98");
    let mean = pearson(&scatter::step_points(&steps(), XAxis::MeanLength)).unwrap();
    assert_eq!(r_label(Some(mean)), "r = 0.10");
}

#[test]
fn step_time_scatter_has_units_legend_and_r() {
    let svg = render_svg(SIZE, |a| step_time_scatter(a, &steps(), XAxis::MaxLength)).unwrap();
    assert!(has_text(&svg, "Step time vs longest document (r = 0.98)"));
    assert!(has_text(&svg, "Longest document in the batch (tokens)"));
    assert!(has_text(&svg, "Step time (s)"));
    assert!(has_text(&svg, "steps (n = 4)"));
    assert!(has_text(&svg, "least-squares fit"));
    // Four points and the legend's marker.
    assert_eq!(count(&svg, "circle"), 5);
    check(
        &svg,
        expect![[r#"
            rect 3 circle 5 polyline 12 line 74 polygon 0 text 13
            Step time vs longest document (r = 0.98) | Step time (s) | Longest document in the batch (tokens) | 0.2 | 0.4 | 0.6 | 0.8 | 1000 | 2000 | 3000 | 4000 | steps (n = 4) | least-squares fit
        "#]],
    );
}

#[test]
fn every_x_axis_names_its_unit() {
    for x in XAxis::ALL {
        let svg = render_svg(SIZE, |a| step_time_scatter(a, &steps(), x)).unwrap();
        assert!(has_text(&svg, &x.title()), "{x:?}");
        assert!(x.title().ends_with(&format!("({})", x.unit())));
    }
    assert_eq!(XAxis::MaxSumSq.title(), "Largest shard Σ L² (tokens²)");
}

#[test]
fn max_vs_mean_shows_both_correlations() {
    let svg = render_svg(SIZE, |a| max_vs_mean(a, &steps())).unwrap();
    assert!(has_text(&svg, "Step time vs longest document (r = 0.98)"));
    assert!(has_text(&svg, "Step time vs mean length (r = 0.10)"));
    assert!(has_text(&svg, "Mean document length (tokens)"));
    check(
        &svg,
        expect![[r#"
            rect 7 circle 10 polyline 25 line 161 polygon 0 text 27
            Step time vs longest document (r = 0.98) | Step time (s) | Longest document in the batch (tokens) | 0.2 | 0.4 | 0.6 | 0.8 | 1000 | 2000 | 3000 | 4000 | steps (n = 4) | least-squares fit | Step time vs mean length (r = 0.10) | Mean document length (tokens) | 480 | 490 | 500 | 510 | 520
        "#]],
    );
}

/// The chart's heading says which feature this job's step time follows, from its numbers; a
/// job whose time follows neither, or has no lengths, is not said to follow one.
#[test]
fn max_vs_mean_title_reads_the_correlations() {
    let swapped: Vec<StepView> =
        steps().into_iter().map(|s| StepView { max_len: s.mean_len, mean_len: s.max_len, ..s }).collect();
    // The longest document alternates between two lengths, against the trend of the times.
    let flat: Vec<StepView> =
        steps().into_iter().map(|s| StepView { max_len: 1000.0 + 30.0 * (s.step % 2) as f64, ..s }).collect();
    let unknown: Vec<StepView> = steps().into_iter().map(|s| StepView { max_len: 0.0, mean_len: 0.0, ..s }).collect();
    let cases = [
        (steps(), "Step time follows the longest document (r = 0.98), not the mean length (r = 0.10)"),
        (swapped, "Step time follows the mean length (r = 0.98), not the longest document (r = 0.10)"),
        // x = 1030, 1000, 1030, 1000: Sxy = -7.5, Sxx = 900, r = -7.5 / √(900 · 0.1875) = -0.58.
        (flat, "Step time follows neither the longest document (r = -0.58) nor the mean length (r = 0.10)"),
        (unknown, "Step time against the longest document and the mean length (no lengths to correlate)"),
    ];
    for (steps, want) in cases {
        assert_eq!(max_vs_mean_title(&steps), want);
    }
}

/// A nearly constant feature (the longest document, capped) has ticks closer than three
/// significant digits tell apart: every label must still differ (was "16.2k" twice).
#[test]
fn close_ticks_keep_distinct_labels() {
    let capped: Vec<StepView> =
        steps().into_iter().map(|s| StepView { max_len: 16_150.0 + 80.0 * s.step as f64, ..s }).collect();
    let svg = render_svg(SIZE, |a| step_time_scatter(a, &capped, XAxis::MaxLength)).unwrap();
    let numeric: Vec<String> = texts(&svg).into_iter().filter(|t| t.starts_with("16") && t.len() <= 7).collect();
    assert!(numeric.len() >= 3, "{numeric:?}");
    let mut distinct = numeric.clone();
    distinct.dedup();
    assert_eq!(distinct, numeric, "tick labels repeat");
}

#[test]
fn compute_vs_cost_names_the_cost_it_uses() {
    let v = views();
    let svg = render_svg(SIZE, |a| compute_vs_cost(a, &v)).unwrap();
    assert!(has_text(&svg, "Predicted shard cost (s)"));
    assert!(has_text(&svg, "Compute time (s)"));
    assert!(has_text_containing(&svg, "Compute vs predicted cost (r = 0.99)"));
    let raw = Views { cost_is_model: false, ..views() };
    let svg = render_svg(SIZE, |a| compute_vs_cost(a, &raw)).unwrap();
    assert!(has_text(&svg, "Shard Σ L² (tokens²)"));
    check(
        &svg,
        expect![[r#"
            rect 3 circle 5 polyline 12 line 74 polygon 0 text 13
            Compute vs Σ L² (r = 0.99) | Compute time (s) | Shard Σ L² (tokens²) | 0.1 | 0.2 | 0.3 | 0.4 | worker-steps (n = 4) | least-squares fit
        "#]],
    );
}

#[test]
fn compute_vs_cost_thins_large_clouds_but_fits_all_points() {
    let points: Vec<(f32, f32)> = (0..100_000).map(|i| (i as f32 / 1e5, i as f32 / 1e5 * 2.0 + 0.1)).collect();
    let v = Views { compute_vs_cost: points, ..views() };
    let svg = render_svg(SIZE, |a| compute_vs_cost(a, &v)).unwrap();
    assert!(has_text(&svg, "worker-steps (n = 100000)"));
    assert!(has_text_containing(&svg, "(r = 1.00)"));
    let circles = count(&svg, "circle");
    assert!(circles < 1_000, "{circles} circles");
}

#[test]
fn scatter_without_data_says_so() {
    let unknown: Vec<StepView> = steps().into_iter().map(|s| StepView { max_len: 0.0, ..s }).collect();
    let svg = render_svg(SIZE, |a| step_time_scatter(a, &unknown, XAxis::MaxLength)).unwrap();
    check(
        &svg,
        expect![[r#"
            rect 1 circle 0 polyline 0 line 0 polygon 0 text 2
            Step time vs longest document | No steps with known sequence lengths
        "#]],
    );
}

#[test]
fn heatmap_marks_initiators_and_has_a_colour_bar() {
    let v = views();
    let svg = render_svg(SIZE, |a| heatmap(a, &v, (400, 300))).unwrap();
    assert!(has_text(&svg, "Step (number)"));
    assert!(has_text(&svg, "Worker (rank)"));
    assert!(has_text(&svg, "1 (mean)"));
    assert!(has_text(&svg, "initiator"));
    // One dot per step with an initiator, and the legend's.
    assert_eq!(count(&svg, "circle"), 4 + 1);
    // The diverging scale: white at the mean, vermillion at or above 2 (2.3), the missing cell grey.
    assert!(svg.contains("fill=\"#FFFFFF\""));
    assert!(svg.contains(&format!("fill=\"{}\"", palette::hex(palette::VERMILLION))));
    assert!(svg.contains(&format!("fill=\"{}\"", palette::hex(palette::MISSING))));
    check(
        &svg,
        expect![[r#"
            rect 46 circle 5 polyline 14 line 0 polygon 0 text 19
            Relative work per worker and step | Worker (rank) | Step (number) | 0 | 1 | 2 | 3 | 4 | Relative work | (× step mean) | ≥ 2 | 1.41 | 1 (mean) | 0.71 | ≤ 0.5 | no data | initiator
        "#]],
    );
}

#[test]
fn heatmap_pools_4096_workers_by_1000_steps() {
    let (w, s) = (4096usize, 1000usize);
    let mut heat = vec![1.0f32; w * s];
    heat[777 * w + 4000] = 3.0;
    heat[10 * w + 5] = f32::NAN;
    let v = Views {
        workers: (0..w).map(|i| format!("rank {i}")).collect(),
        ranks: (0..w as u32).collect(),
        stages: vec![0; w],
        steps: (0..s as u64).map(|i| StepView { step: i, initiator: Some(0), ..StepView::default() }).collect(),
        heat,
        ..Views::default()
    };
    let grid = pool_heat(&v, (200, 100));
    assert!(grid.columns <= 200 && grid.rows <= 100, "{} × {}", grid.columns, grid.rows);
    assert_eq!((grid.step_block, grid.worker_block, grid.columns, grid.rows), (5, 41, 200, 100));
    assert!(grid.is_downsampled());
    // Max pooling keeps the hot cell; a single missing cell does not blank its block.
    assert_eq!(grid.get(4000 / 41, 777 / 5), Some(3.0));
    assert_eq!(grid.get(0, 2), Some(1.0));
    let svg = render_svg(SIZE, |a| heatmap(a, &v, (200, 100))).unwrap();
    // Uniform rows merge into one rectangle each; the hot cell splits its row into three.
    assert!(count(&svg, "rect") <= 200 * 100, "{}", count(&svg, "rect"));
    assert!(has_text(&svg, "Relative work per worker and step (max of 5 steps × 41 workers per cell)"));
    // Downsampled: no initiator dots.
    assert_eq!(count(&svg, "circle"), 0);
}

#[test]
fn step_series_compares_runs() {
    let before = steps();
    let after: Vec<StepView> =
        steps().into_iter().map(|s| StepView { time_s: s.time_s * 0.6, ideal_s: s.time_s * 0.5, ..s }).collect();
    let svg = render_svg(SIZE, |a| step_series(a, &[("before", &before), ("after", &after)])).unwrap();
    for label in ["before: step time", "before: ideal step (replay)", "after: step time", "after: ideal step (replay)"]
    {
        assert!(has_text(&svg, label), "{label}");
    }
    assert!(has_text(&svg, "Time (s)"));
    assert!(has_text(&svg, "Step (number)"));
    check(
        &svg,
        expect![[r#"
            rect 3 circle 8 polyline 172 line 116 polygon 0 text 19
            Step time per step | Time (s) | Step (number) | 0 | 0.2 | 0.4 | 0.6 | 0.8 | 1 | 2 | 3 | 4 | before: step time | before: ideal step (replay) | after: step time | after: ideal step (replay)
        "#]],
    );
}

// ---------------------------------------------------------------------------------------------
// A tiny pipeline job: 2 stages × 1 replica, 2 steps of 100 ms, 2 micro-batches each.

const T0: Nanos = 1_700_000_000_000_000_000;
const MS: Nanos = 1_000_000;

fn span(start_ms: i64, end_ms: i64, kind: SpanKind, mb: Option<u32>) -> Span {
    Span::new(start_ms * MS, (end_ms - start_ms) * MS, kind, mb)
}

fn micro(id: u32, start_ms: i64, forward_ms: i64, backward_ms: i64) -> MicroBatch {
    MicroBatch {
        id,
        start: Some(start_ms * MS),
        forward: forward_ms * MS,
        backward: backward_ms * MS,
        ..MicroBatch::default()
    }
}

/// Stage 0 runs F0 [0,10] F1 [10,25] B0 [30,50] B1 [60,90]; stage 1 runs F0+B0 [12,42] and
/// F1+B1 [42,72] as one span each (split 1 : 2). Micro-batch 1 on stage 0 is the long one.
fn worker_step(stage: u32, number: u64, offset_ms: i64) -> (WorkerStep, Vec<MicroBatch>) {
    use SpanKind::*;
    let (spans, micro_batches) = if stage == 0 {
        (
            vec![
                span(0, 10, Compute, Some(0)),
                span(10, 25, Compute, Some(1)),
                span(25, 30, Communication, None),
                span(30, 50, Compute, Some(0)),
                span(50, 60, Communication, None),
                span(60, 90, Compute, Some(1)),
                span(90, 100, CollectiveWait, None),
            ],
            vec![micro(0, 0, 10, 20), micro(1, 10, 15, 30)],
        )
    } else {
        (
            vec![
                span(0, 12, Communication, Some(0)),
                span(12, 42, Compute, Some(0)),
                span(42, 72, Compute, Some(1)),
                span(72, 95, Communication, None),
                span(95, 100, HostStall, None),
            ],
            vec![micro(0, 12, 10, 20), micro(1, 42, 10, 20)],
        )
    };
    let shift = |mut s: Span| {
        s.start += T0 + offset_ms * MS;
        s
    };
    let micro_batches = micro_batches
        .into_iter()
        .map(|m| MicroBatch { start: m.start.map(|s| T0 + offset_ms * MS + s), ..m })
        .collect();
    let step = WorkerStep {
        step: number,
        start: T0 + offset_ms * MS,
        duration: 100 * MS,
        spans: spans.into_iter().map(shift).collect(),
        ..WorkerStep::default()
    };
    (step, micro_batches)
}

fn job() -> Job {
    Job {
        workers: (0..2u32)
            .map(|stage| {
                let worker = Worker {
                    rank: stage,
                    coords: Coords { dp: Some(0), pp: Some(stage), tp: None, cp: None },
                    source: "inline".into(),
                    ..Worker::default()
                };
                let steps = [worker_step(stage, 1, 0), worker_step(stage, 2, 100)];
                worker.with_steps(steps.map(|(step, micro_batches)| (step, micro_batches, [])))
            })
            .collect(),
    }
}

#[test]
fn timeline_data_is_relative_milliseconds_by_stage() {
    let data = timeline_data(job());
    assert_eq!(data.stages, 2);
    assert_eq!(data.end, 200.0);
    assert_eq!(data.extent(), (0.0, 200.0));
    let labels: Vec<&str> = data.lanes.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(labels, ["rank 0 (dp 0, pp 0)", "rank 1 (dp 0, pp 1)"]);
    // Lanes are named as the analysis names the workers: with a stage but no data-parallel
    // coordinate (Kineto ranks), by their index within the stage.
    let mut two_replicas = job();
    for w in &mut two_replicas.workers {
        w.coords = Coords { dp: None, pp: Some(0), tp: None, cp: None };
    }
    let labels: Vec<String> = timeline_data(two_replicas).lanes.into_iter().map(|l| l.label).collect();
    assert_eq!(labels, ["rank 0 (dp 0, pp 0)", "rank 1 (dp 1, pp 0)"]);
    let lane = &data.lanes[1];
    let second = &lane.steps[1];
    assert_eq!((second.step, second.start, second.duration), (2, 100.0, 100.0));
    assert_eq!(lane.spans_of(second).len(), 5);
    assert_eq!(lane.spans_of(second)[1], LaneSpan::new(112.0, 30.0, SpanKind::Compute, Some(0)));
    assert_eq!(data.step_window(2), Some((100.0, 200.0)));
    assert_eq!(data.lane_of_worker(1), Some(1));
    assert_eq!(data.span_count(), 24);
}

#[test]
fn timeline_draws_every_span_at_full_detail() {
    let data = timeline_data(job());
    let plot = timeline_plot_rect(SIZE);
    let layer = timeline_rects(&data, data.extent(), (plot.width, plot.height));
    assert!(!layer.aggregated);
    // Every span, except that nothing merges here: neighbours differ in kind or micro-batch parity.
    assert_eq!(layer.rects.len(), 24);
    // Odd micro-batches are darker.
    assert!(layer.rects.iter().any(|r| r.color == palette::darker(palette::BLUE)));
    let svg = render_svg(SIZE, |a| timeline(a, &data, data.extent(), Some(2), &[(1, 0), (2, 1)])).unwrap();
    for label in ["Time since job start (ms)", "Worker (rank)", "compute", "collective wait", "host stall", "initiator"]
    {
        assert!(has_text(&svg, label), "{label}");
    }
    assert!(has_text(&svg, "step 2"));
    // Two initiator dots and the legend's.
    assert_eq!(count(&svg, "circle"), 3);
    check(
        &svg,
        expect![[r#"
            rect 35 circle 3 polyline 8 line 46 polygon 0 text 20
            Worker (rank) | Time since job start (ms) | 0 | 50 | 100 | 150 | 200 | rank 0 (dp 0, pp 0) | rank 1 (dp 0, pp 1) | compute | attention | communication | collective wait | host stall | optimizer | data loading | other | initiator | step 2 | (odd micro-batches darker)
        "#]],
    );
}

#[test]
fn timeline_switches_units_for_long_windows() {
    let mut data = timeline_data(job());
    for lane in &mut data.lanes {
        for s in &mut lane.steps {
            s.start *= 100.0;
            s.duration *= 100.0;
        }
        for p in &mut lane.spans {
            *p = LaneSpan::new(p.start * 100.0, p.duration() * 100.0, p.kind, p.micro_batch());
        }
    }
    data.end *= 100.0;
    let svg = render_svg(SIZE, |a| timeline(a, &data, data.extent(), None, &[])).unwrap();
    assert!(has_text(&svg, "Time since job start (s)"));
}

#[test]
fn hit_test_finds_the_span_under_a_pixel() {
    let data = timeline_data(job());
    let window = data.extent();
    let plot = timeline_plot_rect(SIZE);
    let x_of = |t: f64| plot.left + (t / 200.0 * f64::from(plot.width)) as i32;
    // Lanes are 28 px tall at most: lane 1 is rows 28..56 of the plot.
    assert_eq!(timeline_height(2, 1000), 38 + 16 + 40 + 56);
    assert_eq!(timeline_height(4096, 1000), 1000);
    let y_lane1 = plot.top + 28 + 14;
    let hit = hit_test(&data, window, SIZE, x_of(115.0), y_lane1).unwrap();
    // The second step's second span: index 5 + 1 of the lane's spans.
    assert_eq!((hit.lane, hit.worker, hit.step, hit.step_index, hit.span), (1, 1, 2, 1, Some(6)));
    let s = &data.lanes[1].spans[6];
    assert!(s.start <= hit.time && hit.time < s.end(), "{}", hit.time);
    assert_eq!(s.kind, SpanKind::Compute);
    // Stage 0, first step: its collective wait at 90..100 ms.
    let hit = hit_test(&data, window, SIZE, x_of(95.0), plot.top + 5).unwrap();
    assert_eq!((hit.lane, hit.step, hit.span), (0, 1, Some(6)));
    assert_eq!(data.lanes[0].spans[6].kind, SpanKind::CollectiveWait);
    // Outside the plot, and below the last lane.
    assert_eq!(hit_test(&data, window, SIZE, plot.left - 3, y_lane1), None);
    assert_eq!(hit_test(&data, window, SIZE, x_of(50.0), plot.top + 200), None);
    // Zoomed in on the second step: the same span, under another pixel.
    let hit = hit_test(&data, (100.0, 200.0), SIZE, plot.left + plot.width as i32 / 4, y_lane1).unwrap();
    assert_eq!((hit.step, hit.span), (2, Some(6)));
}

/// A synthetic 4096 workers × 1000 steps timeline: compute, attention, communication per step,
/// workers 2048..2112 with a host stall instead. Built directly (the model of that job would be larger).
fn huge_timeline() -> TimelineData {
    let lanes = (0..4096)
        .map(|w| {
            let steps = (0..1000u64)
                .map(|s| {
                    let t = s as f64 * 100.0;
                    let third = if (2048..2112).contains(&w) { SpanKind::HostStall } else { SpanKind::Communication };
                    let spans = vec![
                        LaneSpan::new(t, 50.0, SpanKind::Compute, None),
                        LaneSpan::new(t + 50.0, 20.0, SpanKind::Attention, None),
                        LaneSpan::new(t + 70.0, 30.0, third, None),
                    ];
                    (LaneStep { step: s, start: t, duration: 100.0, ..LaneStep::default() }, spans)
                })
                .collect();
            Lane::new(w, format!("rank {w}"), (w / 1024) as u32, steps)
        })
        .collect();
    TimelineData { lanes, stages: 4, end: 100_000.0 }
}

#[test]
fn huge_timeline_is_bounded_by_pixels() {
    let data = huge_timeline();
    let plot = timeline_plot_rect(SIZE);
    let (w, h) = (plot.width as usize, plot.height as usize);
    for window in [data.extent(), (50_000.0, 50_100.0), (0.0, 2_000.0)] {
        let layer = timeline_rects(&data, window, (plot.width, plot.height));
        assert!(layer.aggregated, "{window:?}");
        println!("{window:?}: {} rects", layer.rects.len());
        // At most one rectangle per pixel, and in fact far fewer: runs of equal colour merge.
        assert!(layer.rects.len() <= w * h, "{window:?}: {}", layer.rects.len());
        assert!(layer.rects.len() <= 40 * h, "{window:?}: {} rects", layer.rects.len());
        assert!(layer.rects.iter().all(|r| r.x0 >= 0 && r.x1 <= w as i32 && r.y0 >= 0 && r.y1 <= h as i32));
    }
    // Zoomed into one step the rows show the step's structure: compute, attention, and either
    // communication or (the stalled workers' rows) a host stall.
    let layer = timeline_rects(&data, (50_000.0, 50_100.0), (plot.width, plot.height));
    let colors: std::collections::BTreeSet<String> = layer.rects.iter().map(|r| palette::hex(r.color)).collect();
    for kind in [SpanKind::Compute, SpanKind::Attention, SpanKind::Communication, SpanKind::HostStall] {
        assert!(colors.contains(&palette::hex(palette::kind_color(kind))), "{kind:?}");
    }
    // Drawing it emits the same bounded number of rectangles (plus the legend's).
    let svg = render_svg(SIZE, |a| timeline(a, &data, data.extent(), Some(500), &[(500, 4000)])).unwrap();
    assert!(has_text(&svg, "(dominant kind per pixel)"));
    assert!(has_text(&svg, "Time since job start (s)"));
    assert!(count(&svg, "rect") <= 40 * h + 20);
    // The hit test still resolves single workers.
    let hit = hit_test(&data, (50_000.0, 50_100.0), SIZE, plot.left + 10, plot.top + h as i32 - 1).unwrap();
    assert_eq!((hit.step, hit.span), (500, Some(1500)));
    assert!(hit.lane >= 4080, "{}", hit.lane);
}

#[test]
fn timeline_pixels_are_the_rectangles_rasterised() {
    // The canvas draws timeline_pixels, SVG export timeline_rects: the same picture, at every
    // level of detail (full detail, lanes with rows of their own, lanes sharing rows).
    let huge = huge_timeline();
    let small = timeline_data(job());
    let cases = [
        (&small, small.extent(), (600, 300), false),
        (&small, (40.0, 130.0), (333, 47), false),
        (&huge, huge.extent(), (600, 300), true),
        (&huge, (50_000.0, 50_100.0), (600, 300), true),
        (&huge, (20_000.0, 53_000.0), (999, 211), true),
        // A row or two per lane, then bands tall enough to leave a row between lanes.
        (&huge, (70_000.0, 72_000.0), (300, 9000), true),
        (&huge, (70_000.0, 72_000.0), (120, 17_000), true),
        (&huge, (f64::NAN, 5.0), (64, 64), true),
        (&huge, huge.extent(), (0, 10), false),
    ];
    for (data, window, size, aggregated) in cases {
        let rects = timeline_rects(data, window, size);
        let pixels = timeline_pixels(data, window, size);
        assert_eq!((rects.aggregated, pixels.aggregated), (aggregated, aggregated), "{window:?} {size:?}");
        assert!(pixels.rgba == rasterize(&rects.rects, size), "{window:?} {size:?}: the pixels differ");
        // Not trivially: something is drawn wherever there are pixels.
        assert_eq!(pixels.rgba.iter().any(|&b| b != 0), size.0 * size.1 > 0, "{window:?} {size:?}");
    }
}

#[test]
fn a_custom_layer_gets_the_lanes_rectangle_and_names_the_level_of_detail() {
    let data = timeline_data(job());
    let mut got = None;
    let svg = render_svg(SIZE, |a| {
        timeline_with_layer(a, &data, (f64::NAN, 150.0), None, &[], |window, plot| {
            got = Some((window, plot));
            Ok(true)
        })
    })
    .unwrap();
    assert_eq!(got, Some(((0.0, 150.0), timeline_plot_rect(SIZE))));
    // The layer said it aggregated: the legend says so, and no span was drawn.
    assert!(has_text(&svg, "(dominant kind per pixel)"));
    assert!(count(&svg, "rect") < 20, "{}", count(&svg, "rect"));
}

#[test]
fn timeline_layout_matches_plotters_at_any_size() {
    // timeline() debug-asserts that hit_test's rectangle is plotters' plotting area.
    let data = timeline_data(job());
    for size in [(800, 500), (1280, 720), (401, 333), (300, 200), (150, 100), (0, 0)] {
        render_svg(size, |a| timeline(a, &data, data.extent(), None, &[])).unwrap();
    }
}

#[test]
fn pipeline_data_recovers_the_1f1b_schedule() {
    let data = pipeline_data(&job(), 2, 0).unwrap();
    assert!(data.measured);
    assert_eq!(data.rows.len(), 2);
    let passes = |k: usize| -> Vec<(String, f64, f64)> {
        data.rows[k]
            .passes
            .iter()
            .map(|p| (format!("{}{}", if p.backward { "B" } else { "F" }, p.micro_batch), p.start, p.end()))
            .collect()
    };
    let f = |s: &str, a: f64, b: f64| (s.to_owned(), a, b);
    assert_eq!(passes(0), [f("F0", 0.0, 10.0), f("F1", 10.0, 25.0), f("B0", 30.0, 50.0), f("B1", 60.0, 90.0)]);
    assert_eq!(passes(1), [f("F0", 12.0, 22.0), f("B0", 22.0, 42.0), f("F1", 42.0, 52.0), f("B1", 52.0, 72.0)]);
    // Mean compute (30 + 45 + 30 + 30) / 4 = 33.75 ms; stage 0's micro-batch 1 is 45 ms.
    assert_eq!(data.mean_compute, 33.75);
    assert!((data.rows[0].passes[1].relative - 45.0 / 33.75).abs() < 1e-12);
    assert_eq!(data.rows[1].label, "stage 1 · rank 1");
    assert_eq!(pipeline_data(&job(), 3, 0), None);
}

/// A real interleaved pipeline (seqskew-core's fixture interleaved_heavy_stage, as torch wrote it:
/// 2 ranks, stages 0 and 2 on rank 0, 1 and 3 on rank 1, 4 micro-batches): each rank's row shows
/// each micro-batch's two forwards, one bar a model chunk, before its two backwards, in the order
/// ScheduleInterleaved1F1B ran them.
#[test]
#[allow(clippy::disallowed_methods)] // the directory's entries are sorted
fn an_interleaved_pipeline_shows_every_model_chunks_pass() {
    let traces = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../seqskew-core/tests/fixtures/stragglers/interleaved_heavy_stage/traces");
    let mut paths: Vec<_> = std::fs::read_dir(traces).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let imports: Vec<_> = paths
        .iter()
        .map(|p| seqskew_core::import::import_bytes(&p.display().to_string(), &std::fs::read(p).unwrap()))
        .collect();
    let job = seqskew_core::import::assemble(&imports).job;
    let step = job.workers[0].steps[3].step;
    let data = pipeline_data(&job, step, 0).unwrap();
    assert!(data.measured);
    let order = |row: &StageRow| -> String {
        let name = |p: &PassView| format!("{}{}", if p.backward { "B" } else { "F" }, p.micro_batch);
        row.passes.iter().map(name).collect::<Vec<_>>().join(" ")
    };
    // `PP:{stage}{F|B}{m}` as the trace names them, the stage dropped: rank 0 ran
    // 0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3.
    assert_eq!(order(&data.rows[0]), "F0 F1 F0 F1 F2 B0 F3 B1 F2 B0 F3 B1 B2 B3 B2 B3");
    assert_eq!(order(&data.rows[1]), "F0 F1 F0 B0 F1 B1 F2 B0 F3 B1 F2 B2 F3 B3 B2 B3");
}

#[test]
fn pipeline_without_tags_is_laid_out_in_1f1b_order() {
    let mut j = job();
    for w in &mut j.workers {
        for s in &mut w.steps {
            for p in &mut s.spans {
                *p = Span::new(p.start, p.duration, p.kind, None);
            }
        }
    }
    let data = pipeline_data(&j, 1, 0).unwrap();
    assert!(!data.measured);
    let order: Vec<String> = data.rows[0]
        .passes
        .iter()
        .map(|p| format!("{}{}", if p.backward { "B" } else { "F" }, p.micro_batch))
        .collect();
    // Stage 0 of 2: one warm-up forward, then one forward one backward.
    assert_eq!(order, ["F0", "F1", "B0", "B1"]);
}

#[test]
fn pipeline_chart_labels_passes_and_stages() {
    let data = pipeline_data(&job(), 1, 0).unwrap();
    let svg = render_svg(SIZE, |a| pipeline(a, &data)).unwrap();
    for label in ["F0", "B1", "stage 0 · rank 0", "stage 1 · rank 1", "Time since step start (ms)", "Pipeline stage"]
    {
        assert!(has_text(&svg, label), "{label}");
    }
    assert!(has_text(&svg, "B: backward pass"));
    check(
        &svg,
        expect![[r#"
            rect 29 circle 0 polyline 9 line 51 polygon 0 text 27
            Pipeline schedule of step 1 (replica 0) | Pipeline stage | Time since step start (ms) | stage 0 · rank 0 | stage 1 · rank 1 | 0 | 20 | 40 | 60 | 80 | F0 | F1 | B0 | B1 | Micro-batch compute | (mean 33.8 ms) | ≥ 2× mean | 1.41× | = mean | 0.71× | ≤ 0.5× mean | F: forward pass | B: backward pass
        "#]],
    );
}

#[test]
fn tiny_areas_never_panic() {
    let v = views();
    let data = timeline_data(job());
    let pipe = pipeline_data(&job(), 1, 0).unwrap();
    let s = steps();
    for size in [(0, 0), (1, 1), (50, 30), (120, 90)] {
        // Errors are fine; panics are not.
        let _ = render_svg(size, |a| step_time_scatter(a, &s, XAxis::MaxLength));
        let _ = render_svg(size, |a| max_vs_mean(a, &s));
        let _ = render_svg(size, |a| compute_vs_cost(a, &v));
        let _ = render_svg(size, |a| heatmap(a, &v, (0, 0)));
        let _ = render_svg(size, |a| step_series(a, &[("", &s)]));
        let _ = render_svg(size, |a| timeline(a, &data, (f64::NAN, f64::INFINITY), Some(9), &[(1, 99)]));
        let _ = render_svg(size, |a| pipeline(a, &pipe));
        assert_eq!(hit_test(&data, data.extent(), size, 0, 0), None);
    }
}

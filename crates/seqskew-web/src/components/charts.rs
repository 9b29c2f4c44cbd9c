//! Charts on canvases (plotters-canvas), each with PNG and SVG export; the same chart code
//! draws both (seqskew-plot is generic over the backend).

use std::rc::Rc;

use plotters_canvas::CanvasBackend;
use seqskew_core::analysis::Analysis;
use seqskew_core::analysis::views::StepView;
use seqskew_plot::XAxis;
use seqskew_plot::plotters::coord::Shift;
use seqskew_plot::plotters::prelude::*;
use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::components::canvas::canvas_width;
use crate::components::shared::Shared;
use crate::components::timeline::Timeline;
use crate::download::download_url;
use crate::hash::View;
use crate::protocol::JobResult;
use crate::state::AppState;

/// What a canvas shows.
#[derive(Clone, Debug, PartialEq)]
pub enum ChartKind {
    MaxVsMean(Shared<Analysis>),
    StepScatter(Shared<Analysis>, XAxis),
    ComputeVsCost(Shared<Analysis>),
    Heatmap(Shared<Analysis>),
    Pipeline(Shared<seqskew_plot::PipelineData>),
    Series(Vec<(&'static str, Shared<Analysis>)>),
}

/// Draws a chart on any backend.
pub fn draw<DB: DrawingBackend>(kind: &ChartKind, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
    match kind {
        ChartKind::MaxVsMean(v) => seqskew_plot::max_vs_mean(area, &v.0.views.steps),
        ChartKind::StepScatter(v, x) => seqskew_plot::step_time_scatter(area, &v.0.views.steps, *x),
        ChartKind::ComputeVsCost(v) => seqskew_plot::compute_vs_cost(area, &v.0.views),
        ChartKind::Heatmap(v) => {
            let (w, h) = area.dim_in_pixel();
            seqskew_plot::heatmap(
                area,
                &v.0.views,
                ((w as usize).saturating_sub(180).max(10), (h as usize).saturating_sub(80).max(10)),
            )
        }
        ChartKind::Pipeline(p) => seqskew_plot::pipeline(area, &p.0),
        ChartKind::Series(series) => {
            let data: Vec<(&str, &[StepView])> = series.iter().map(|(n, v)| (*n, v.0.views.steps.as_slice())).collect();
            seqskew_plot::step_series(area, &data)
        }
    }
}

#[derive(Properties, PartialEq)]
pub struct ChartProps {
    pub kind: ChartKind,
    pub title: AttrValue,
    /// File name stem for exports.
    pub name: AttrValue,
    pub height: u32,
    /// What the chart shows, for screen readers.
    pub description: AttrValue,
    #[prop_or_default]
    pub controls: Html,
}

#[component(Chart)]
pub fn chart(props: &ChartProps) -> Html {
    let canvas = use_node_ref();
    let size = use_state(|| (900u32, props.height));
    {
        let canvas = canvas.clone();
        let size = size.clone();
        use_effect_with((props.kind.clone(), props.height), move |(kind, height)| {
            if let Some(c) = canvas.cast::<web_sys::HtmlCanvasElement>() {
                let w = canvas_width(&c);
                c.set_width(w);
                c.set_height(*height);
                if let Some(backend) = CanvasBackend::with_canvas_object(c) {
                    let area = backend.into_drawing_area();
                    if let Err(e) = draw(kind, &area).and_then(|()| area.present().map_err(|e| e.to_string())) {
                        web_sys::console::warn_1(&format!("chart: {e}").into());
                    }
                }
                size.set((w, *height));
            }
        });
    }
    let png = {
        let canvas = canvas.clone();
        let name = props.name.clone();
        Callback::from(move |_: MouseEvent| {
            if let Some(url) = canvas.cast::<web_sys::HtmlCanvasElement>().and_then(|c| c.to_data_url().ok()) {
                download_url(&format!("{name}.png"), &url);
            }
        })
    };
    html! {
        <figure class="chart" id={format!("chart-{}", props.name)}>
            <div class="chart-bar">
                <h3>{props.title.clone()}</h3>
                {props.controls.clone()}
                <button onclick={png} aria-label={format!("Download {} as PNG", props.title)}>{"PNG"}</button>
            </div>
            <canvas ref={canvas} role="img" aria-label={props.description.clone()} height={props.height.to_string()}></canvas>
        </figure>
    }
}

/// The title of the step-time scatter: its default x is the one the verdict's signal uses.
fn scatter_title(axis: XAxis) -> String {
    match axis {
        XAxis::MaxSumSq => {
            "Step time against the largest shard's Σ L² (its attention cost, which the verdict weighs)".to_owned()
        }
        other => format!("Step time against: {}", other.label().to_lowercase()),
    }
}

#[derive(Properties, PartialEq)]
struct ScatterProps {
    analysis: Shared<Analysis>,
}

/// Step time against a chosen x, first and by default against what the verdict weighs (the
/// largest shard's Σ L²), then the max-versus-mean pair and the compute-versus-cost scatter.
#[component(ScatterView)]
fn scatter_view(props: &ScatterProps) -> Html {
    let axis = use_state(|| XAxis::MaxSumSq);
    let on_axis = {
        let axis = axis.clone();
        Callback::from(move |e: Event| {
            let Some(select) = e.target().and_then(|t| t.dyn_into::<web_sys::HtmlSelectElement>().ok()) else { return };
            if let Some(x) = XAxis::ALL.get(select.selected_index().max(0) as usize) {
                axis.set(*x);
            }
        })
    };
    let controls = html! {
        <label>{"x: "}
            <select onchange={on_axis} aria-label="Quantity on the x axis">
                { for XAxis::ALL.iter().map(|x| html! { <option selected={*x == *axis}>{x.label()}</option> }) }
            </select>
        </label>
    };
    let v = props.analysis.clone();
    html! {
        <>
            <Chart kind={ChartKind::StepScatter(v.clone(), *axis)} title={scatter_title(*axis)} name="step-time-scatter" height={380}
                description="Scatter plot of step time against the chosen feature of each step's batch, with a fit line and its correlation." controls={controls} />
            <Chart kind={ChartKind::MaxVsMean(v.clone())} title={seqskew_plot::max_vs_mean_title(&v.0.views.steps)} name="max-vs-mean" height={380}
                description="Two scatter plots of step time against the longest and the mean document length of each step's global batch, with fit lines and correlations." />
            <Chart kind={ChartKind::ComputeVsCost(v)} title="Per-worker compute against its shard's cost" name="compute-vs-cost" height={380}
                description="Scatter plot of each worker-step's compute time against the cost its sequences should take." />
        </>
    }
}

/// The data a run's charts draw: the result's own, shared (a copy of a large job's timeline
/// and views doubled the page's memory).
#[derive(Clone, Debug, PartialEq)]
pub struct RunCharts {
    pub analysis: Shared<Analysis>,
    pub timeline: Option<Shared<seqskew_plot::TimelineData>>,
}

impl RunCharts {
    pub fn of(result: &JobResult) -> Option<RunCharts> {
        let analysis = Shared(result.analysis.clone()?);
        Some(RunCharts { analysis, timeline: result.timeline.clone().map(Shared) })
    }
}

/// The content of a chart view.
pub fn chart_view(
    view: View,
    state: &UseReducerHandle<AppState>,
    main: &Rc<JobResult>,
    charts: Option<&RunCharts>,
) -> Html {
    let Some(charts) = charts else {
        return html! { <p>{"Nothing could be analysed: see the files' problems."}</p> };
    };
    let analysis = charts.analysis.clone();
    match view {
        View::Timeline => match &charts.timeline {
            Some(t) => html! {
                <Timeline data={t.clone()} analysis={analysis} state={state.clone()} />
            },
            None => html! { <p>{"No timeline."}</p> },
        },
        View::Scatter => html! { <ScatterView analysis={analysis} /> },
        View::Heatmap => html! {
            <>
                <Chart kind={ChartKind::Heatmap(analysis)} title="Relative work per worker and step" name="heatmap" height={520}
                    description="Heatmap of each worker's work per step relative to the step's mean: a persistent row is a slow worker, a band a heavy pipeline stage, scattered hot cells sequence-length imbalance." />
                <p class="hint">{"A hot row is a slow worker; a hot band, a heavy pipeline stage; hot cells scattered over workers and steps, sequence-length imbalance."}</p>
            </>
        },
        View::Pipeline => {
            let focused = state.nav.step;
            let slowest = analysis.0.views.steps.iter().max_by(|a, b| a.time_s.total_cmp(&b.time_s)).map(|s| s.step);
            let want = focused.or(slowest);
            match main.pipelines.iter().find(|p| Some(p.step) == want).or(main.pipelines.first()) {
                Some(p) => html! {
                    <>
                        <Chart kind={ChartKind::Pipeline(Shared(Rc::new(p.clone())))} title={format!("Pipeline schedule of step {}", p.step)} name="pipeline" height={140 + 60 * p.rows.len() as u32}
                            description="Gantt chart of the 1F1B schedule of one step: forward and backward passes per stage, shaded by how long each micro-batch was." />
                        <p class="hint">{"Click a step in the timeline to show its schedule. Darker passes hold costlier micro-batches; one long micro-batch delays every stage after it."}</p>
                    </>
                },
                None => html! { <p>{"This job has no micro-batch timings to draw its pipeline."}</p> },
            }
        }
        View::Compare | View::Files => Html::default(),
    }
}

/// Step time per step, before and after, for compare mode.
pub fn compare_chart(before: Option<&RunCharts>, after: Option<&RunCharts>) -> Html {
    let (Some(b), Some(a)) = (before, after) else {
        return Html::default();
    };
    let series = vec![("before", b.analysis.clone()), ("after", a.analysis.clone())];
    html! {
        <Chart kind={ChartKind::Series(series)} title="Step time before and after" name="compare" height={360}
            description="Step time per step for the run before and the run after the fix, with each run's ideal step time dashed." />
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The charts draw the result's own analysis and timeline: copies of them had doubled the
    /// page's memory after a large job.
    #[test]
    fn run_charts_share_the_result_rather_than_copy_it() {
        let result = JobResult {
            analysis: Some(Rc::new(Analysis::default())),
            timeline: Some(Rc::new(seqskew_plot::TimelineData::default())),
            ..JobResult::default()
        };
        let Some(charts) = RunCharts::of(&result) else { panic!("an analysed result has charts") };
        assert!(result.analysis.as_ref().is_some_and(|a| Rc::ptr_eq(a, &charts.analysis.0)));
        let timeline = charts.timeline.as_ref().map(|t| &t.0);
        assert!(result.timeline.as_ref().zip(timeline).is_some_and(|(a, b)| Rc::ptr_eq(a, b)));
        assert_eq!(RunCharts::of(&JobResult::default()), None, "nothing to chart without an analysis");
    }
}

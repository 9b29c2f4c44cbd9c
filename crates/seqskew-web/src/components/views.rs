//! The views under the verdict, one tab each: timeline, length-vs-step-time scatter,
//! worker × step heatmap, pipeline schedule (PP > 1), compare mode, and the files.

use std::rc::Rc;

use seqskew_core::compare::compare;
use yew::prelude::*;

use crate::components::charts::{RunCharts, chart_view, compare_chart};
use crate::components::file_list::FileList;
use crate::hash::View;
use crate::protocol::JobResult;
use crate::state::{Action, AppState};

#[derive(Properties, PartialEq)]
pub struct Props {
    pub state: UseReducerHandle<AppState>,
    pub main: Rc<JobResult>,
    pub after: Option<Rc<JobResult>>,
    pub embed: bool,
}

fn available(view: View, main: &JobResult, after: Option<&Rc<JobResult>>) -> bool {
    let analysed = main.analysis.is_some();
    match view {
        View::Timeline | View::Scatter | View::Heatmap => analysed,
        View::Pipeline => main.analysis.as_ref().is_some_and(|a| a.report.job.pp > 1),
        View::Compare => after.is_some(),
        View::Files => true,
    }
}

#[component(ViewsPanel)]
pub fn views_panel(props: &Props) -> Html {
    let state = &props.state;
    let mut view = state.nav.view;
    if !available(view, &props.main, props.after.as_ref()) {
        view = if props.main.analysis.is_some() { View::Timeline } else { View::Files };
    }
    let tabs: Vec<View> = View::ALL.into_iter().filter(|v| available(*v, &props.main, props.after.as_ref())).collect();
    // The results' own data, shared: charts redraw only when a result changes.
    let main_charts = RunCharts::of(&props.main);
    let after_charts = props.after.as_deref().and_then(RunCharts::of);
    let body = match view {
        View::Files => html! { <FileList result={props.main.clone()} /> },
        View::Compare => compare_view(&props.main, props.after.as_ref(), main_charts.as_ref(), after_charts.as_ref()),
        other => chart_view(other, state, &props.main, main_charts.as_ref()),
    };
    html! {
        <section class="views">
            if !props.embed || tabs.len() > 1 {
                <div class="tabs" role="tablist" aria-label="Views">
                    { for tabs.iter().map(|&v| {
                        let state = state.clone();
                        let onclick = Callback::from(move |_: MouseEvent| state.dispatch(Action::Show(v)));
                        html! {
                            <button role="tab" id={format!("tab-{}", v.id())} aria-selected={(v == view).to_string()}
                                aria-controls="view-panel" class={classes!("tab", (v == view).then_some("active"))} {onclick}>
                                {v.title()}
                            </button>
                        }
                    }) }
                </div>
            }
            <div id="view-panel" role="tabpanel" aria-labelledby={format!("tab-{}", view.id())} class={format!("view view-{}", view.id())}>
                {body}
            </div>
        </section>
    }
}

fn compare_view(
    main: &JobResult,
    after: Option<&Rc<JobResult>>,
    before_charts: Option<&RunCharts>,
    after_charts: Option<&RunCharts>,
) -> Html {
    let (Some(before), Some(after_report)) = (main.analysis.as_ref(), after.and_then(|a| a.analysis.as_ref())) else {
        return html! { <p>{"Load the run after a fix (Compare with…) to compare."}</p> };
    };
    let c = compare(&before.report, &after_report.report, seqskew_core::analysis::verdict::STRAGGLING);
    html! {
        <div class={classes!("compare", c.fixed.then_some("fixed"))} id="compare" data-fixed={c.fixed.to_string()}>
            <p class="headline">{&c.headline}</p>
            if let Some(more) = &c.after.to_confirm {
                <p class="to-confirm">{format!("After: {more}")}</p>
            }
            <table>
                <thead><tr><th scope="col"></th><th scope="col">{"Before"}</th><th scope="col">{"After"}</th></tr></thead>
                <tbody>
                    <tr><th scope="row">{"Verdict"}</th><td>{&c.before.primary}</td><td>{&c.after.primary}</td></tr>
                    <tr><th scope="row">{"Step time"}</th><td class="num">{format!("{:.3} s", c.before.step_s)}</td><td class="num">{format!("{:.3} s", c.after.step_s)}</td></tr>
                    <tr><th scope="row">{"Slowdown S"}</th><td class="num">{format!("{:.2}", c.before.slowdown)}</td><td class="num">{format!("{:.2}", c.after.slowdown)}</td></tr>
                </tbody>
            </table>
            <table class="signals">
                <thead><tr><th scope="col">{"Signal"}</th><th scope="col">{"Before"}</th><th scope="col">{"After"}</th><th scope="col">{"Symptom gone?"}</th></tr></thead>
                <tbody>{ for c.signals.iter().map(|s| {
                    let show = |v: Option<f64>, p: bool| v.map_or("n/a".to_owned(), |v| format!("{v:.3}{}", if p { " ✔" } else { "" }));
                    let gone = if s.gone { "yes" } else if s.appeared { "appeared" } else if s.before_passed { "no" } else { "—" };
                    html! { <tr><th scope="row">{&s.name}</th><td class="num">{show(s.before, s.before_passed)}</td><td class="num">{show(s.after, s.after_passed)}</td><td>{gone}</td></tr> }
                }) }</tbody>
            </table>
            { compare_chart(before_charts, after_charts) }
        </div>
    }
}

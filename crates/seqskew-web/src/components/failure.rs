//! The failed job, first when the inputs hold one: initiating and collateral ranks, the cause,
//! the evidence lines in their files, the fix and the command that verifies it, and each
//! process group's progress per rank (grouped by how far the ranks got, so 4096 ranks read as a
//! few lines).

use seqskew_core::failure::Reading;
use seqskew_core::import::Format;
use seqskew_core::report::{Failure, GroupProgress, failure_title};
use seqskew_core::text::compact_ranges;
use yew::prelude::*;

use crate::clipboard::copy_to_clipboard;
use crate::state::FailureState;

fn ranks(list: &[u32]) -> String {
    let values: Vec<u64> = list.iter().map(|&r| u64::from(r)).collect();
    if values.is_empty() { "unknown".into() } else { compact_ranges(&values) }
}

/// A copy button for `text`.
fn copy(text: &str, label: &str) -> Html {
    let text = text.to_owned();
    let onclick = Callback::from(move |_: MouseEvent| copy_to_clipboard(text.clone()));
    html! { <button class="copy" {onclick} aria-label={format!("Copy {label}")}>{"Copy"}</button> }
}

/// Rows at most per process group: the distinct progress values, lowest first.
const PROGRESS_ROWS: usize = 12;

/// One process group: its ranks grouped by the last collective they issued, lowest first.
fn group_progress(g: &GroupProgress) -> Html {
    let mut by_enqueued: std::collections::BTreeMap<Option<i64>, Vec<u32>> = std::collections::BTreeMap::new();
    for r in &g.ranks {
        by_enqueued.entry(r.last_enqueued).or_default().push(r.rank);
    }
    let top = by_enqueued.keys().next_back().copied().flatten();
    let rows = by_enqueued.len();
    html! {
        <table class="progress-table">
            <caption>{format!("Group {}{} — {} ranks reported", g.group, if g.desc.is_empty() { String::new() } else { format!(" ({})", g.desc) }, g.ranks.len())}</caption>
            <thead><tr><th scope="col">{"Last collective issued"}</th><th scope="col">{"Ranks"}</th><th scope="col">{"Count"}</th></tr></thead>
            <tbody>
                { for by_enqueued.iter().take(PROGRESS_ROWS).map(|(enqueued, list)| {
                    let behind = enqueued.is_some() && *enqueued < top;
                    html! {
                        <tr class={classes!(behind.then_some("behind"))}>
                            <td class="num">{ enqueued.map_or_else(|| "—".into(), |e| format!("#{e}")) }{ if behind { " (behind)" } else { "" } }</td>
                            <td>{ranks(list)}</td>
                            <td class="num">{list.len()}</td>
                        </tr>
                    }
                }) }
                if rows > PROGRESS_ROWS {
                    <tr><td colspan="3">{format!("… {} more distinct values", rows - PROGRESS_ROWS)}</td></tr>
                }
            </tbody>
        </table>
    }
}

fn failure_view(f: &Failure, reading: &Reading) -> Html {
    let problems: Vec<String> = reading
        .files
        .iter()
        .flat_map(|file| &file.diagnostics)
        .filter(|d| d.severity >= seqskew_core::diag::Severity::Warning)
        .map(ToString::to_string)
        .collect();
    html! {
        <>
            <header class="verdict-head">
                <h2 class="cause">{format!("Failed job: {}", failure_title(&f.cause))}</h2>
                <span class={classes!("confidence", f.confidence.clone())}>{format!("{} confidence", f.confidence)}</span>
            </header>
            <p class="headline">{&f.headline}</p>
            <dl class="numbers">
                <div><dt>{"Initiating ranks"}</dt><dd class="initiating-ranks">{ranks(&f.initiating_ranks)}</dd></div>
                <div><dt>{"Collateral ranks"}</dt><dd>{ if f.collateral_ranks.is_empty() { "none".into() } else { ranks(&f.collateral_ranks) } }</dd></div>
                if let Some(first) = &f.first_failure {
                    <div><dt>{"First failure"}</dt><dd>{format!("{}{}: {}",
                        first.rank.map_or_else(String::new, |r| format!("rank {r}")),
                        first.time.as_deref().map_or_else(String::new, |t| format!(" at {t}")),
                        first.what)}</dd></div>
                }
                if let Some(in_job) = &f.in_job {
                    <div><dt>{"In the job's steps"}</dt><dd class="in-job">{in_job.describe()}</dd></div>
                }
            </dl>
            if let Some(more) = &f.to_decide { <p class="to-confirm">{format!("To decide: {more}")}</p> }
            { for f.notes.iter().map(|n| html! { <p class="note">{n}</p> }) }
            <details class="evidence" open=true>
                <summary>{"Evidence"}</summary>
                <ul class="failure-evidence">
                    { for f.evidence.iter().map(|e| html! {
                        <li class={e.role.clone()}>
                            <span class="where">{ if e.line > 0 { format!("{}:{}", e.file, e.line) } else { e.file.clone() } }
                                { e.rank.map_or_else(String::new, |r| format!(" — rank {r}, {}", e.role)) }</span>
                            <pre><code>{&e.text}</code></pre>
                            { copy(&e.text, "this line") }
                            if !e.frames.is_empty() {
                                <ol class="frames">{ for e.frames.iter().map(|fr| html! { <li><code>{fr}</code></li> }) }</ol>
                            }
                        </li>
                    }) }
                </ul>
            </details>
            if !f.process_groups.is_empty() {
                <details class="progress-groups" open=true>
                    <summary>{"Progress of each rank, per process group"}</summary>
                    { for f.process_groups.iter().map(group_progress) }
                </details>
            }
            <details class="fix" open=true>
                <summary>{"The fix"}</summary>
                <p>{&f.fix}</p>
                { copy(&f.fix, "the fix") }
            </details>
            <div class="verify">
                <span>{"Verify the fix: "}</span>
                <code>{&f.verify_command}</code>
                { copy(&f.verify_command, "the verification command") }
            </div>
            if !problems.is_empty() {
                <ul class="diagnostics">{ for problems.iter().map(|p| html! { <li>{p}</li> }) }</ul>
            }
        </>
    }
}

#[derive(Properties, PartialEq)]
pub struct Props {
    pub failure: FailureState,
}

#[component(FailurePanel)]
pub fn failure_panel(props: &Props) -> Html {
    let body = match &props.failure {
        FailureState::None => return Html::default(),
        FailureState::Reading { .. } => html! { <p>{"Reading the logs and dumps…"}</p> },
        FailureState::Error(why) => html! { <p class="error" role="alert">{why}</p> },
        FailureState::Done(reading) => match &reading.failure {
            Some(f) => failure_view(f, reading),
            None => {
                // Step logs handed on with the logs (a job without per-rank times) are not logs.
                let logs: Vec<&str> = reading
                    .files
                    .iter()
                    .filter(|f| f.format.is_some_and(Format::is_failure_input))
                    .map(|f| f.path.as_str())
                    .collect();
                if logs.is_empty() {
                    return Html::default();
                }
                html! {
                    <p class="no-failure">{format!("No failure found in {} — no error, timeout or failed rank.", logs.join(", "))}</p>
                }
            }
        },
    };
    let cause = match &props.failure {
        FailureState::Done(reading) => reading.failure.as_ref().map(|f| f.cause.clone()),
        _ => None,
    };
    html! {
        <section id="failure" class={classes!("verdict", "failure", cause.as_ref().map(|c| format!("failure-{c}")))}
            aria-live="polite" aria-busy={matches!(props.failure, FailureState::Reading { .. }).to_string()}>
            {body}
        </section>
    }
}

/// The `#verdict` hooks of a failure: its cause and initiating ranks (comma-separated, empty
/// when unknown), when the failure worker has found one.
pub fn hooks(failure: &FailureState) -> Option<(AttrValue, AttrValue)> {
    let FailureState::Done(reading) = failure else { return None };
    let f = reading.failure.as_ref()?;
    let initiating: Vec<String> = f.initiating_ranks.iter().map(u32::to_string).collect();
    Some((AttrValue::from(f.cause.clone()), AttrValue::from(initiating.join(","))))
}

//! The verdict panel: cause, confidence, headline, shares of the slowdown, evidence, the fix and
//! the command that verifies it. `#verdict[data-cause][data-files]` is a stable hook, and
//! `[data-failure-cause][data-initiating]` when the inputs show a failed job.

use seqskew_core::analysis::Analysis;
use seqskew_core::diag::{Diagnostic, Severity};
use seqskew_core::import::{FileSummary, Format};
use seqskew_core::report::{Report, Signal, cause_title};
use yew::prelude::*;

use crate::clipboard::copy_to_clipboard;
use crate::components::file_list::problem;
use crate::components::shared::Shared;
use crate::state::FailureState;

#[derive(Properties, PartialEq)]
pub struct Props {
    /// The analysed files' names, comma-separated.
    pub files: AttrValue,
    /// The result's analysis, whose report the panel shows (shared: compared by identity).
    pub analysis: Option<Shared<Analysis>>,
    /// Whether the panel is loading (its data-* hooks are absent until analysis is done).
    pub pending: bool,
    /// Shows every file and every problem (the Files view).
    pub on_show_files: Callback<()>,
    /// The failed job's cause and initiating ranks (`data-failure-cause`, `data-initiating`).
    #[prop_or_default]
    pub failure: Option<(AttrValue, AttrValue)>,
    /// What the panel says when there is no verdict ([`why_no_verdict`]).
    #[prop_or_default]
    pub why_none: AttrValue,
}

/// What the failure worker made of the run's logs and dumps, as far as the empty verdict cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogsRead {
    /// No log or dump, or the failure worker could not read them (its panel says why).
    NotRead,
    Pending,
    FailureFound,
    NoFailure,
}

impl From<&FailureState> for LogsRead {
    fn from(state: &FailureState) -> Self {
        match state {
            FailureState::None | FailureState::Error(_) => LogsRead::NotRead,
            FailureState::Reading { .. } => LogsRead::Pending,
            FailureState::Done(reading) if reading.failure.is_some() => LogsRead::FailureFound,
            FailureState::Done(_) => LogsRead::NoFailure,
        }
    }
}

/// Why there is no straggler verdict for these files, and what to drop instead: nothing dropped
/// yet, a failure diagnosed from logs alone, files that could not be read (the first one named
/// with its problem), or files that hold no training steps (logs without a failure, say).
pub fn why_no_verdict(files: &[FileSummary], logs: LogsRead) -> String {
    const WHAT_TO_DROP: &str =
        "To see why a job straggles, drop its profiler traces or a step log (see \"What should I drop?\").";
    fn error(f: &FileSummary) -> Option<&Diagnostic> {
        f.diagnostics.iter().find(|d| d.severity == Severity::Error)
    }
    let mut unread = files.iter().filter_map(|f| Some((f.path.as_str(), error(f)?.message.as_str())));
    let first_unread = unread.next();
    let unread_count = first_unread.map_or(0, |_| 1 + unread.count());
    let logs_only = files.iter().all(|f| f.format.is_some_and(Format::is_failure_input) || error(f).is_some());
    match (files.len(), first_unread, logs) {
        (0, _, _) => "Drop traces to get a verdict.".to_owned(),
        (_, _, LogsRead::FailureFound) => {
            "No profiler trace or step log among the inputs, so no straggler verdict: the failure is diagnosed above."
                .to_owned()
        }
        (n, Some((file, why)), _) if unread_count == n => {
            let others = match n {
                1 => String::new(),
                2 => " (and 1 more file)".to_owned(),
                n => format!(" (and {} more files)", n - 1),
            };
            format!("No verdict: nothing could be read. {file}: {why}{others}. {WHAT_TO_DROP}")
        }
        (_, _, LogsRead::Pending) if logs_only => {
            "No profiler trace or step log among the inputs; the logs are being read for a failure…".to_owned()
        }
        (_, _, read) if logs_only => format!(
            "No straggler verdict: logs and Flight Recorder dumps hold no per-rank step timings{}. {WHAT_TO_DROP}",
            if read == LogsRead::NoFailure { ", and no failure was found in them" } else { "" }
        ),
        _ => format!("No verdict: the files hold no training steps (see every file below). {WHAT_TO_DROP}"),
    }
}

/// The most input problems the panel lists; the Files view has every one.
const LISTED_PROBLEMS: usize = 5;

/// The inputs' warnings and errors, under the verdict they may qualify (a file left out, a
/// copy of a rank ignored, two runs dropped together), with the way to all of them.
fn input_problems(r: &Report, on_show_files: &Callback<()>) -> Html {
    let (listed, more) = r.problems(LISTED_PROBLEMS);
    if listed.is_empty() {
        return Html::default();
    }
    let onclick = on_show_files.reform(|_: MouseEvent| ());
    html! {
        <div class="input-problems" role="note" aria-label="Problems found in the input">
            <h3>{"Input problems"}</h3>
            <ul class="diagnostics">
                { for listed.into_iter().map(problem) }
            </ul>
            <button class="show-files" {onclick}>
                { if more > 0 { format!("{more} more: see every file") } else { "See every file".to_owned() } }
            </button>
        </div>
    }
}

fn percent(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn evidence_row(s: &Signal) -> Html {
    let (mark, class, label) = match (s.applicable, s.passed) {
        (false, _) => ("–", "na", "not applicable"),
        (true, true) => ("✔", "pass", "passed"),
        (true, false) => ("✘", "fail", "not passed"),
    };
    html! {
        <tr class={class}>
            <td class="mark" aria-label={label}>{mark}</td>
            <th scope="row">{&s.name}</th>
            <td class="num">{ if s.applicable { format!("{:.3}", s.value) } else { "—".into() } }</td>
            <td class="num">{format!("{:.2}", s.threshold)}</td>
            <td>{&s.sentence}</td>
        </tr>
    }
}

#[component(VerdictPanel)]
pub fn verdict_panel(props: &Props) -> Html {
    let copied = use_state(|| false);
    let (failure_cause, initiating) = props.failure.clone().unzip();
    let Some(r) = props.analysis.as_ref().map(|a| &a.0.report) else {
        let message = if props.pending { AttrValue::from("Analysing…") } else { props.why_none.clone() };
        return html! {
            <section id="verdict" class="verdict empty" aria-live="polite" aria-busy={props.pending.to_string()}
                data-failure-cause={failure_cause} data-initiating={initiating}>
                <p>{message}</p>
            </section>
        };
    };
    let v = &r.verdict;
    let s = &r.slowdown;
    let on_copy = {
        let cmd = r.verify_command.clone();
        let copied = copied.clone();
        Callback::from(move |_: MouseEvent| {
            copy_to_clipboard(cmd.clone());
            copied.set(true);
        })
    };
    let top_initiators: Vec<String> =
        r.initiators.top.iter().take(3).map(|(rank, n)| format!("rank {rank} ({n} steps)")).collect();
    html! {
        <section id="verdict" class={classes!("verdict", format!("cause-{}", v.primary))} aria-live="polite"
            data-cause={v.primary.clone()} data-files={props.files.clone()}
            data-failure-cause={failure_cause} data-initiating={initiating}>
            <header class="verdict-head">
                <h2 class="cause">{cause_title(&v.primary)}</h2>
                <span class={classes!("confidence", v.confidence.clone())}>{format!("{} confidence", v.confidence)}</span>
            </header>
            <p class="headline">{&v.headline}</p>
            <dl class="numbers">
                <div><dt>{"Slowdown S"}</dt><dd title={s.median_ops_factor.map(|m| format!("{m:.2}× with every op at its median across workers, as what-if tools compute S"))}>{format!("{:.2}×", s.factor)}</dd></div>
                <div><dt>{"Step time"}</dt><dd>{format!("{:.3} s", s.actual_step_s)}</dd></div>
                <div><dt>{"Ideal step"}</dt><dd>{format!("{:.3} s", s.ideal_step_s)}</dd></div>
                <div><dt>{"Time lost"}</dt><dd>{format!("{:.1} s over {} steps", s.time_lost_s, r.job.steps)}</dd></div>
                <div><dt>{"Initiating workers"}</dt><dd>{ if top_initiators.is_empty() { "—".into() } else { top_initiators.join(", ") } }</dd></div>
            </dl>
            if !s.by_cause.is_empty() {
                <ul class="shares" aria-label="Share of the slowdown by cause">
                    { for s.by_cause.iter().map(|c| html! {
                        <li>
                            <span class="share-label">{r.share_title(&c.cause)}</span>
                            <meter min="0" max="1" value={c.share.to_string()} title={percent(c.share)}></meter>
                            <span class="share-value">{percent(c.share)}</span>
                        </li>
                    }) }
                </ul>
            }
            if let Some(more) = &v.to_confirm {
                <p class="to-confirm">{more}</p>
            }
            { input_problems(r, &props.on_show_files) }
            <details class="evidence" open=true>
                <summary>{"Evidence"}</summary>
                <table>
                    <thead><tr><th scope="col"><span class="visually-hidden">{"Result"}</span></th><th scope="col">{"Signal"}</th><th scope="col">{"Value"}</th><th scope="col">{"Threshold"}</th><th scope="col">{"What it means"}</th></tr></thead>
                    <tbody>{ for r.signals.iter().map(evidence_row) }</tbody>
                </table>
            </details>
            <details class="fix" open=true>
                <summary>{"The fix"}</summary>
                <p>{&r.fix.summary}</p>
                <ul>
                    if let Some(c) = &r.fix.cost_function { <li><strong>{"Cost: "}</strong><code>{c}</code></li> }
                    if let Some(a) = &r.fix.algorithm { <li><strong>{"Algorithm: "}</strong>{a}</li> }
                    if let Some(l) = &r.fix.location { <li><strong>{"Where: "}</strong>{l}</li> }
                    if let Some(l) = &r.fix.limits { <li><strong>{"Limits: "}</strong>{l}</li> }
                </ul>
                if !r.whatif.is_empty() {
                    <table class="whatif">
                        <caption>{"What if each batch were dealt differently (predicted from the fitted cost model)"}</caption>
                        <thead><tr><th scope="col">{"Method"}</th><th scope="col">{"Step time"}</th><th scope="col">{"Speed-up"}</th><th scope="col">{"Imbalance (max/mean)"}</th></tr></thead>
                        <tbody>{ for r.whatif.iter().map(|w| html! {
                            <tr><th scope="row">{&w.method}</th><td class="num">{format!("{:.3} s", w.predicted_step_s)}</td><td class="num">{format!("{:.2}×", w.speedup)}</td><td class="num">{format!("{:.2}", w.imbalance)}</td></tr>
                        }) }</tbody>
                    </table>
                }
                if let Some(p) = &r.fix.python { <pre class="code"><code>{p}</code></pre> }
            </details>
            <div class="verify">
                <span>{"Verify the fix: "}</span>
                <code>{&r.verify_command}</code>
                <button onclick={on_copy} aria-label="Copy the verification command">{ if *copied { "Copied" } else { "Copy" } }</button>
            </div>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, format: Option<Format>, error: Option<&str>) -> FileSummary {
        FileSummary {
            path: path.to_owned(),
            format,
            diagnostics: error.map(|e| Diagnostic::new(Severity::Error, path, None, e)).into_iter().collect(),
            ..seqskew_core::import::FileImport::default().summary()
        }
    }

    /// Each way of ending without a verdict says which it is and, where files were dropped,
    /// what to drop instead.
    #[test]
    fn no_verdict_says_why() {
        use LogsRead::*;
        let empty = file("empty.json", None, Some("the file is empty (0 bytes)"));
        let log = file("train.log", Some(Format::Log), None);
        let step_log = file("steps.jsonl", Some(Format::StepLogJsonl), Some("no training steps found"));
        let trace = file("x.json", Some(Format::ChromeTrace), None);
        // (files, what the failure worker found, what the panel says, whether it says what to drop)
        let cases: [(Vec<FileSummary>, LogsRead, &str, bool); 8] = [
            (vec![], NotRead, "Drop traces to get a verdict.", false),
            (vec![log.clone()], FailureFound, "No profiler trace or step log among the inputs, so no straggler", false),
            (
                vec![empty.clone()],
                NotRead,
                "No verdict: nothing could be read. empty.json: the file is empty (0 bytes). To",
                true,
            ),
            (vec![empty.clone(), empty.clone(), empty.clone()], NotRead, "(0 bytes) (and 2 more files). To see", true),
            (vec![log.clone(), empty.clone()], Pending, "the logs are being read for a failure…", false),
            (
                vec![log.clone(), empty],
                NoFailure,
                "hold no per-rank step timings, and no failure was found in them.",
                true,
            ),
            (vec![log.clone()], NotRead, "hold no per-rank step timings. To see", true),
            (vec![log, step_log, trace], NoFailure, "No verdict: the files hold no training steps", true),
        ];
        for (files, logs, want, says_what_to_drop) in cases {
            let got = why_no_verdict(&files, logs);
            assert!(got.contains(want), "{got:?} lacks {want:?}");
            assert_eq!(got.contains("What should I drop?"), says_what_to_drop, "{got}");
        }
    }
}

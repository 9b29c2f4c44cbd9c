//! The page: header and actions, progress, the verdict, and the views.

use std::cell::RefCell;
use std::rc::Rc;

use gloo::worker::{Spawnable, WorkerBridge};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use yew::prelude::*;

use crate::components::drop_help::DropHelp;
use crate::components::drop_zone::{DropZone, on_input_change};
use crate::components::failure::{self, FailurePanel};
use crate::components::file_list;
use crate::components::gallery::{Gallery, preset_named};
use crate::components::progress::ProgressBar;
use crate::components::shared::Shared;
use crate::components::verdict::{self, VerdictPanel};
use crate::components::views::ViewsPanel;
use crate::download::download;
use crate::hash::{self, HashState};
use crate::protocol::{InputFile, JsCodec, Request, Response, decode};
use crate::state::{Action, AppState, FailureState, Role};
use crate::worker::{AnalysisWorker, WORKER_LOADER};

impl Reducible for AppState {
    type Action = Action;
    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        Rc::new(AppState::reduce(&self, action))
    }
}

/// The example shown on a first visit, and its fixed twin for compare mode.
pub const EXAMPLE: &str = "seqlen-imbalance";
pub const FIXED_EXAMPLE: &str = "seqlen-balanced";

fn spawn_worker(dispatch: UseReducerDispatcher<AppState>) -> WorkerBridge<AnalysisWorker> {
    AnalysisWorker::spawner()
        .encoding::<JsCodec>()
        .callback(move |response| {
            let action = match response {
                Response::Progress(p) => Action::Progress(p),
                Response::Done { job, payload } => Action::Finished { job, result: decode(&payload).map(Rc::new) },
                Response::Cancelled { job } => Action::Cancelled { job },
                Response::Crashed { message } => Action::Crashed(message),
                Response::FailureStarted { job } => Action::FailureStarted { job },
                Response::FailureRead { job, payload, error } => {
                    let result = match (payload.dyn_into::<js_sys::Uint8Array>(), error) {
                        (Ok(payload), None) => decode(&payload).map(Rc::new),
                        (_, error) => Err(error.unwrap_or_else(|| "the failure reader gave no answer".into())),
                    };
                    Action::FailureRead { job, result }
                }
                // Only import workers send imports, and only to the analysis worker.
                Response::Imported { .. } => return,
            };
            dispatch.dispatch(action);
        })
        .spawn_with_loader(WORKER_LOADER)
}

/// Text pasted into `#paste`, as the file `pasted.log`.
fn pasted_file(text: &str) -> Option<InputFile> {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let blob = web_sys::Blob::new_with_str_sequence(&parts).ok()?;
    Some(InputFile { name: "pasted.log".into(), size: blob.size() as u64, blob })
}

/// What to load: files, or a simulated example.
#[derive(Clone, Debug)]
pub enum Load {
    Files(Vec<InputFile>),
    Example(&'static str),
}

fn window() -> Option<web_sys::Window> {
    web_sys::window()
}

/// `?embed=1`: the compact layout for wiki pages.
fn embedded() -> bool {
    window()
        .and_then(|w| w.location().search().ok())
        .is_some_and(|q| q.trim_start_matches('?').split('&').any(|p| p == "embed=1"))
}

fn current_hash() -> HashState {
    hash::parse(&window().and_then(|w| w.location().hash().ok()).unwrap_or_default())
}

/// Fetches a same-origin trace named in `#src=` as a file.
async fn fetch_src(src: String) -> Result<InputFile, String> {
    let w = window().ok_or("no window")?;
    let response =
        wasm_bindgen_futures::JsFuture::from(w.fetch_with_str(&src)).await.map_err(|e| format!("{src}: {e:?}"))?;
    let response: web_sys::Response = response.dyn_into().map_err(|_| format!("{src}: not a response"))?;
    if !response.ok() {
        return Err(format!("{src}: the server answered {}", response.status()));
    }
    let blob = wasm_bindgen_futures::JsFuture::from(response.blob().map_err(|e| format!("{src}: {e:?}"))?)
        .await
        .map_err(|e| format!("{src}: {e:?}"))?;
    let blob: web_sys::Blob = blob.unchecked_into();
    let name = src.rsplit('/').next().unwrap_or(&src).to_owned();
    Ok(InputFile { name, size: blob.size() as u64, blob })
}

#[component(App)]
pub fn app() -> Html {
    let state = use_reducer(|| AppState { nav: current_hash(), ..AppState::default() });
    let bridge: Rc<RefCell<Option<WorkerBridge<AnalysisWorker>>>> = use_mut_ref(|| None);
    let next_job = use_mut_ref(|| 0u32);
    let embed = use_memo((), |_| embedded());

    let start = {
        let state = state.clone();
        let bridge = bridge.clone();
        let next_job = next_job.clone();
        Callback::from(move |(load, role): (Load, Role)| {
            let (files, bytes) = match &load {
                Load::Files(f) if f.is_empty() => return,
                Load::Files(f) => (f.len() as u32, f.iter().map(|f| f.size).sum()),
                Load::Example(_) => (1, 0),
            };
            let job = {
                let mut n = next_job.borrow_mut();
                *n += 1;
                *n
            };
            let mut slot = bridge.borrow_mut();
            // A crashed worker is replaced; a busy one is told to drop its job.
            if state.worker_crashed || slot.is_none() {
                *slot = Some(spawn_worker(state.dispatcher()));
            }
            if let (Some(b), Some(loading)) = (slot.as_ref(), state.loading.as_ref()) {
                b.send(Request::Cancel { job: loading.progress.job });
            }
            state.dispatch(Action::Started { job, role, files, bytes });
            if let Some(b) = slot.as_ref() {
                b.send(match load {
                    Load::Files(files) => Request::Analyze { job, files },
                    Load::Example(preset) => Request::Example { job, preset: preset.to_owned() },
                });
            }
        })
    };

    // First visit: the trace named in #src=, else the example.
    {
        let start = start.clone();
        let state = state.clone();
        use_effect_with((), move |_| match state.nav.src.clone() {
            Some(src) if hash::is_safe_src(&src) => {
                wasm_bindgen_futures::spawn_local(async move {
                    match fetch_src(src).await {
                        Ok(file) => start.emit((Load::Files(vec![file]), Role::Main)),
                        Err(e) => {
                            state.dispatch(Action::Failed(format!("could not load the trace named in the link: {e}")))
                        }
                    }
                });
            }
            Some(src) => state.dispatch(Action::Failed(format!(
                "the link names {src:?}, which is not a relative same-origin URL; it was not loaded"
            ))),
            None => match state.nav.example.as_deref().map(|name| (name, preset_named(name))) {
                None => start.emit((Load::Example(EXAMPLE), Role::Main)),
                Some((_, Some(preset))) => start.emit((Load::Example(preset), Role::Main)),
                Some((name, None)) => state.dispatch(Action::Failed(format!(
                    "the link names the example {name:?}, which this page does not have; the examples are listed under \
                     \"Example jobs\""
                ))),
            },
        });
    }

    // Back/forward and pasted links: follow the hash.
    {
        let state = state.clone();
        use_effect_with((), move |_| {
            let listener = Closure::<dyn Fn()>::new(move || state.dispatch(Action::Navigate(current_hash())));
            if let Some(w) = window() {
                let _ = w.add_event_listener_with_callback("hashchange", listener.as_ref().unchecked_ref());
            }
            move || {
                if let Some(w) = window() {
                    let _ = w.remove_event_listener_with_callback("hashchange", listener.as_ref().unchecked_ref());
                }
            }
        });
    }
    // Mirror the view state in the hash without adding history entries.
    use_effect_with(state.nav.clone(), |nav| {
        let wanted = hash::format(nav);
        if let Some(w) = window()
            && w.location().hash().ok().as_deref() != Some(wanted.as_str())
            && let Ok(history) = w.history()
        {
            let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&wanted));
        }
    });

    let on_files = {
        let start = start.clone();
        let state = state.clone();
        Callback::from(move |files: Vec<InputFile>| {
            // The link no longer shows a gallery example (dropped files cannot be in it).
            if !files.is_empty() && state.nav.example.is_some() {
                state.dispatch(Action::Navigate(HashState { example: None, ..state.nav.clone() }));
            }
            start.emit((Load::Files(files), Role::Main))
        })
    };
    let on_compare_files = {
        let start = start.clone();
        Callback::from(move |files: Vec<InputFile>| start.emit((Load::Files(files), Role::After)))
    };
    let paste = use_node_ref();
    let analyse_paste = {
        let on_files = on_files.clone();
        let paste = paste.clone();
        Callback::from(move |_: MouseEvent| {
            let Some(area) = paste.cast::<web_sys::HtmlTextAreaElement>() else { return };
            let text = area.value();
            if let (false, Some(file)) = (text.trim().is_empty(), pasted_file(&text)) {
                on_files.emit(vec![file]);
            }
        })
    };
    let pick_example = {
        let start = start.clone();
        let state = state.clone();
        Callback::from(move |preset: &'static str| {
            let nav = HashState { view: state.nav.view, example: Some(preset.to_owned()), ..HashState::default() };
            state.dispatch(Action::Navigate(nav));
            start.emit((Load::Example(preset), Role::Main));
        })
    };
    let load_example = pick_example.reform(|_: MouseEvent| EXAMPLE);
    let load_fixed = {
        let start = start.clone();
        Callback::from(move |_: MouseEvent| start.emit((Load::Example(FIXED_EXAMPLE), Role::After)))
    };
    let cancel = {
        let state = state.clone();
        let bridge = bridge.clone();
        Callback::from(move |_: MouseEvent| {
            if let (Some(b), Some(loading)) = (bridge.borrow().as_ref(), state.loading.as_ref()) {
                b.send(Request::Cancel { job: loading.progress.job });
            }
        })
    };
    let dismiss = {
        let state = state.clone();
        Callback::from(move |_: MouseEvent| state.dispatch(Action::DismissError))
    };
    let show_files = {
        let state = state.clone();
        Callback::from(move |()| {
            state.dispatch(Action::Show(hash::View::Files));
            let panel = web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id("view-panel"));
            if let Some(panel) = panel {
                panel.scroll_into_view();
            }
        })
    };
    let export = |markdown: bool| {
        let state = state.clone();
        Callback::from(move |_: MouseEvent| {
            let Some(report) = state.main.as_ref().and_then(|m| m.analysis.as_ref()).map(|a| &a.report) else { return };
            // The failure worker's diagnosis belongs in the report too.
            let mut report = report.clone();
            if let FailureState::Done(reading) = &state.failure {
                report.failure.clone_from(&reading.failure);
            }
            if markdown {
                download("seqskew-report.md", "text/markdown", &report.to_markdown());
            } else {
                download("seqskew-report.json", "application/json", &report.to_json());
            }
        })
    };

    let main = state.main.clone();
    let analysis = main.as_ref().and_then(|m| m.analysis.clone()).map(Shared);
    let files = main.as_ref().map(|m| m.file_names()).unwrap_or_default();
    // Only without a verdict (it reads every file's diagnostics, and the page renders on each
    // progress message).
    let why_none = if analysis.is_none() {
        verdict::why_no_verdict(
            main.as_ref().map_or(&[][..], |m| m.files.as_slice()),
            verdict::LogsRead::from(&state.failure),
        )
    } else {
        String::new()
    };
    let is_example = files == format!("{EXAMPLE}.trace.json");
    html! {
        <DropZone on_files={on_files.clone()} class={classes!((*embed).then_some("embed"))}>
            if !*embed {
                <header class="top">
                    <h1>{"seqskew"}</h1>
                    <p class="tagline">{"Why does your distributed training job straggle, or why did it fail? Drop PyTorch profiler traces, Chrome traces, step logs, torchrun logs or Flight Recorder dumps (files or folders). "}
                        <strong>{"Nothing leaves your browser."}</strong></p>
                    <nav class="actions" aria-label="Actions">
                        <label class="button" for="file-input">{"Open files…"}</label>
                        <input id="file-input" class="visually-hidden" type="file" multiple=true
                            onchange={on_input_change(on_files.clone())} />
                        <label class="button" for="folder-input">{"Open folder…"}</label>
                        <input id="folder-input" class="visually-hidden" type="file" webkitdirectory=true multiple=true
                            onchange={on_input_change(on_files.clone())} />
                        <button onclick={load_example}>{"Load example"}</button>
                        if is_example {
                            <button onclick={load_fixed}>{"Load the fixed run"}</button>
                        }
                        <label class="button" for="compare-input" title="Load the run after a fix to compare">{"Compare with…"}</label>
                        <input id="compare-input" class="visually-hidden" type="file" multiple=true
                            onchange={on_input_change(on_compare_files)} />
                        <button onclick={export(false)} disabled={analysis.is_none()}>{"Report JSON"}</button>
                        <button onclick={export(true)} disabled={analysis.is_none()}>{"Report Markdown"}</button>
                    </nav>
                    <DropHelp />
                    <Gallery on_pick={pick_example} />
                </header>
            }
            if let Some(error) = &state.error {
                <div class="banner error" role="alert">
                    <span>{error}</span>
                    <button onclick={dismiss}>{"Dismiss"}</button>
                </div>
            }
            if let Some(loading) = &state.loading {
                <ProgressBar progress={loading.progress} on_cancel={cancel} />
            }
            <FailurePanel failure={state.failure.clone()} />
            <VerdictPanel files={AttrValue::from(files)} analysis={analysis} pending={state.loading.is_some()} on_show_files={show_files}
                failure={failure::hooks(&state.failure)} why_none={why_none} />
            if let Some(main) = main {
                <ViewsPanel state={state.clone()} main={main} after={state.after.clone()} embed={*embed} />
            }
            if let (Some(main), false) = (&state.main, *embed) {
                { file_list::timing(main) }
            }
            if !*embed {
                <section class="paste" aria-label="Paste a terminal">
                    <label for="paste">{"Or paste what the terminal of a failed job shows (tracebacks, torchrun's report):"}</label>
                    <textarea id="paste" ref={paste} rows="3" spellcheck="false" />
                    <button id="paste-analyse" onclick={analyse_paste}>{"Analyse the pasted text"}</button>
                </section>
                <p class="drop-hint">{"Drop trace files or folders anywhere on this page. They are read here, in your browser; nothing is uploaded."}</p>
            }
        </DropZone>
    }
}

/// Shows a visible banner when the page itself hits a bug (the worker reports its own).
fn install_panic_banner() {
    yew::set_custom_panic_hook(Box::new(|info| {
        web_sys::console::error_1(&info.to_string().into());
        let Some(document) = web_sys::window().and_then(|w| w.document()) else { return };
        if let Some(body) = document.body()
            && let Ok(banner) = document.create_element("div")
        {
            banner.set_class_name("banner error panic");
            banner.set_attribute("role", "alert").ok();
            banner.set_text_content(Some(&format!("seqskew hit an internal error and must be reloaded: {info}")));
            body.prepend_with_node_1(&banner).ok();
        }
    }));
}

pub fn start() {
    install_panic_banner();
    if let Some(status) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id("boot-status"))
    {
        status.remove();
    }
    // `?bench=timeline…`: the benchmark's timeline-only page instead of the app (see bench.rs).
    let query = window().and_then(|w| w.location().search().ok()).unwrap_or_default();
    if let Some((workers, steps)) = crate::bench::timeline_params(&query) {
        yew::Renderer::<crate::bench::BenchTimeline>::with_props(crate::bench::Props { workers, steps }).render();
        return;
    }
    yew::Renderer::<App>::new().render();
}

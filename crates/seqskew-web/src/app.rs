//! The page: drop zone, file list, and (as issues land) the verdict and the views.

use std::cell::RefCell;
use std::rc::Rc;

use gloo::worker::{Spawnable, WorkerBridge};
use yew::prelude::*;

use crate::components::drop_zone::DropZone;
use crate::components::file_list::FileList;
use crate::example;
use crate::protocol::{InputFile, JsCodec, Request, Response, decode_result};
use crate::state::{Action, AppState};
use crate::worker::AnalysisWorker;

impl Reducible for AppState {
    type Action = Action;
    fn reduce(self: Rc<Self>, action: Action) -> Rc<Self> {
        Rc::new(AppState::reduce(&self, action))
    }
}

/// Where the worker's loader is, relative to the page (works from any sub-path).
const WORKER_LOADER: &str = "./worker.js";

fn spawn_worker(dispatch: UseReducerDispatcher<AppState>) -> WorkerBridge<AnalysisWorker> {
    AnalysisWorker::spawner()
        .encoding::<JsCodec>()
        .callback(move |response| {
            let action = match response {
                Response::Progress(p) => Action::Progress(p),
                Response::Done { job, payload } => Action::Finished { job, result: decode_result(&payload) },
                Response::Cancelled { job } => Action::Cancelled { job },
                Response::Crashed { message } => Action::Crashed(message),
            };
            dispatch.dispatch(action);
        })
        .spawn_with_loader(WORKER_LOADER)
}

#[component(App)]
pub fn app() -> Html {
    let state = use_reducer(AppState::default);
    let bridge: Rc<RefCell<Option<WorkerBridge<AnalysisWorker>>>> = use_mut_ref(|| None);
    let next_job = use_mut_ref(|| 0u32);

    let start = {
        let state = state.clone();
        let bridge = bridge.clone();
        let next_job = next_job.clone();
        Callback::from(move |files: Vec<InputFile>| {
            if files.is_empty() {
                return;
            }
            let job = {
                let mut n = next_job.borrow_mut();
                *n += 1;
                *n
            };
            let mut slot = bridge.borrow_mut();
            // A crashed worker is replaced; a busy one is told to drop its job.
            if state.error.is_some() || slot.is_none() {
                *slot = Some(spawn_worker(state.dispatcher()));
            }
            if let (Some(b), Some(loading)) = (slot.as_ref(), state.loading.as_ref()) {
                b.send(Request::Cancel { job: loading.progress.job });
            }
            let names = files.iter().map(|f| f.name.clone()).collect();
            let bytes = files.iter().map(|f| f.size).sum();
            state.dispatch(Action::Started { job, names, bytes });
            if let Some(b) = slot.as_ref() {
                b.send(Request::Analyze { job, files });
            }
        })
    };

    let load_example = {
        let start = start.clone();
        Callback::from(move |_: MouseEvent| start.emit(example::files()))
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

    // First visit: show the example job.
    {
        let start = start.clone();
        use_effect_with((), move |_| start.emit(example::files()));
    }

    let verdict_files =
        state.result.as_ref().map(|r| r.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>().join(","));
    html! {
        <DropZone on_files={start.clone()}>
            <header class="top">
                <h1>{"seqskew"}</h1>
                <p class="tagline">{"Why does your distributed training job straggle? Drop PyTorch profiler traces, Chrome traces or step logs. "}
                    <strong>{"Nothing leaves your browser."}</strong></p>
                <div class="actions">
                    <label class="button" for="file-input">{"Open files…"}</label>
                    <input id="file-input" class="visually-hidden" type="file" multiple=true
                        accept=".json,.gz,.jsonl,.csv" onchange={crate::components::drop_zone::on_input_change(start.clone())} />
                    <button onclick={load_example}>{"Load example"}</button>
                </div>
            </header>
            if let Some(error) = &state.error {
                <div class="banner error" role="alert">
                    <span>{error}</span>
                    <button onclick={dismiss}>{"Dismiss"}</button>
                </div>
            }
            if let Some(loading) = &state.loading {
                <crate::components::progress::ProgressBar progress={loading.progress} on_cancel={cancel} />
            }
            <section id="verdict" aria-live="polite"
                data-cause={verdict_files.as_ref().map(|_| "pending")}
                data-files={verdict_files.clone()}>
            </section>
            if let Some(result) = &state.result {
                <FileList result={result.clone()} />
            }
        </DropZone>
    }
}

/// Shows a visible banner when the page itself hits a bug (the worker reports its own).
fn install_panic_banner() {
    yew::set_custom_panic_hook(Box::new(|info| {
        web_sys::console::error_1(&info.to_string().into());
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return;
        };
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
    yew::Renderer::<App>::new().render();
}

//! What each file held, and what was wrong with it.

use std::rc::Rc;

use seqskew_core::diag::{Diagnostic, Severity};
use yew::prelude::*;

use crate::protocol::JobResult;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub result: Rc<JobResult>,
}

pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

/// One problem as a list item, styled by its severity.
pub fn problem(d: &Diagnostic) -> Html {
    html! { <li class={format!("{:?}", d.severity).to_lowercase()}>{d.to_string()}</li> }
}

#[component(FileList)]
pub fn file_list(props: &Props) -> Html {
    let r = &props.result;
    html! {
        <section class="files" aria-label="Loaded files">
            <h3>{format!("{} file{}: {} workers, {} steps", r.files.len(), if r.files.len() == 1 { "" } else { "s" }, r.workers, r.steps)}</h3>
            <table>
                <thead><tr><th scope="col">{"File"}</th><th scope="col">{"Size"}</th><th scope="col">{"Format"}</th><th scope="col">{"Workers"}</th><th scope="col">{"Steps"}</th><th scope="col">{"Sequence lengths"}</th><th scope="col">{"Micro-batches"}</th></tr></thead>
                <tbody>
                { for r.files.iter().map(|f| html! {
                    <tr class={classes!(f.diagnostics.iter().any(|d| d.severity == Severity::Error).then_some("bad"))}>
                        <td>{&f.path}</td>
                        <td class="num">{size(f.bytes)}</td>
                        <td>{f.format.map_or("not recognised", |x| x.describe())}</td>
                        <td class="num">{f.workers}</td>
                        <td class="num">{f.steps}</td>
                        <td>{format!("{:?}", f.sequences).to_lowercase()}</td>
                        <td>{match f.micro_batches { 0 => "none named".to_owned(), n => format!("up to {n} a step") }}</td>
                    </tr>
                }) }
                </tbody>
            </table>
            <ul class="diagnostics" aria-label="Problems found in the files">
                { for r.files.iter().flat_map(|f| f.diagnostics.iter()).chain(r.job_diagnostics.iter()).map(problem) }
            </ul>
        </section>
    }
}

/// How long the worker took, and how fast it read (the benchmark reads the `data-` attributes).
pub fn timing(r: &JobResult) -> Html {
    let bytes: u64 = r.files.iter().map(|f| f.bytes).sum();
    let t = r.timings;
    let rate = if t.read_ms > 0.0 {
        format!(" ({:.0} MiB/s)", bytes as f64 / f64::from(1u32 << 20) / (t.read_ms / 1e3))
    } else {
        String::new()
    };
    let by = match t.import_workers {
        0 | 1 => String::new(),
        n => format!(" by {n} workers"),
    };
    html! {
        <p class="timing" data-bytes={bytes.to_string()} data-read-ms={format!("{:.0}", t.read_ms)} data-analysis-ms={format!("{:.0}", t.analysis_ms)} data-import-workers={t.import_workers.to_string()} data-read-wasm-bytes={t.read_wasm_bytes.to_string()}>
            {format!("Read and imported {} in {:.1} s{rate}{by}, analysed in {:.1} s, in this browser.", size(bytes), t.read_ms / 1e3, t.analysis_ms / 1e3)}
        </p>
    }
}

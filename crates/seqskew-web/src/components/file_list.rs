//! What each file held, and what was wrong with it.

use std::rc::Rc;

use seqskew_core::diag::Severity;
use yew::prelude::*;

use crate::protocol::JobResult;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub result: Rc<JobResult>,
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

#[component(FileList)]
pub fn file_list(props: &Props) -> Html {
    let r = &props.result;
    html! {
        <section class="files" aria-label="Loaded files">
            <h2>{format!("{} workers, {} steps", r.workers, r.steps)}</h2>
            <table>
                <thead><tr><th>{"File"}</th><th>{"Size"}</th><th>{"Format"}</th><th>{"Workers"}</th><th>{"Steps"}</th><th>{"Sequences"}</th></tr></thead>
                <tbody>
                { for r.files.iter().map(|f| html! {
                    <tr class={classes!(f.diagnostics.iter().any(|d| d.severity == Severity::Error).then_some("bad"))}>
                        <td>{&f.path}</td>
                        <td>{size(f.bytes)}</td>
                        <td>{f.format.map_or("not recognised", |x| x.describe())}</td>
                        <td>{f.workers}</td>
                        <td>{f.steps}</td>
                        <td>{format!("{:?}", f.sequences)}</td>
                    </tr>
                }) }
                </tbody>
            </table>
            <ul class="diagnostics">
                { for r.files.iter().flat_map(|f| f.diagnostics.iter()).chain(r.job_diagnostics.iter()).map(|d| html! {
                    <li class={format!("{:?}", d.severity).to_lowercase()}>{d.to_string()}</li>
                }) }
            </ul>
        </section>
    }
}

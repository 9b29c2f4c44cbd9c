//! Loading progress: bytes and files done, rate, time left, and a cancel button.

use yew::prelude::*;

use crate::protocol::Progress;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub progress: Progress,
    pub on_cancel: Callback<MouseEvent>,
}

#[component(ProgressBar)]
pub fn progress_bar(props: &Props) -> Html {
    let p = props.progress;
    let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
    let rate = if p.elapsed_ms > 0.0 { mib(p.bytes_done) / (p.elapsed_ms / 1000.0) } else { 0.0 };
    let left = if rate > 0.0 { (mib(p.bytes_total.saturating_sub(p.bytes_done)) / rate).ceil() } else { f64::NAN };
    html! {
        <div class="progress" role="status">
            <progress max={p.bytes_total.max(1).to_string()} value={p.bytes_done.to_string()}></progress>
            <span>{format!("{:.1} of {:.1} MiB, {} of {} files, {:.0} MiB/s", mib(p.bytes_done), mib(p.bytes_total), p.files_done, p.files_total, rate)}
                { if left.is_finite() { format!(", about {left:.0} s left") } else { String::new() } }</span>
            <button onclick={props.on_cancel.clone()}>{"Cancel"}</button>
        </div>
    }
}

//! The gallery: one example job per cause, made here by the simulator (nothing is downloaded),
//! so a first visit can see what each verdict looks like before bringing its own files.

use yew::prelude::*;

/// The preset of this name (the `example=` hash key), as the static name the worker takes.
pub fn preset_named(name: &str) -> Option<&'static str> {
    seqskew_sim::PRESETS.iter().find(|(preset, _)| *preset == name).map(|(preset, _)| *preset)
}

#[derive(Properties, PartialEq)]
pub struct GalleryProps {
    /// Called with the preset picked.
    pub on_pick: Callback<&'static str>,
}

#[function_component(Gallery)]
pub fn gallery(props: &GalleryProps) -> Html {
    html! {
        <details id="gallery" class="header-fold">
            <summary>{"Example jobs: what each cause looks like"}</summary>
            <ul>
                { for seqskew_sim::PRESETS.iter().map(|&(preset, what)| {
                    let on_pick = props.on_pick.clone();
                    html! {
                        <li>
                            <button data-example={preset} onclick={Callback::from(move |_: MouseEvent| on_pick.emit(preset))}>
                                {preset}
                            </button>
                            {" "}{what}
                        </li>
                    }
                }) }
            </ul>
            <p>{"Each is a job the simulator makes in this page: a regression guard for the diagnosis, not evidence that it is right on real jobs."}</p>
        </details>
    }
}

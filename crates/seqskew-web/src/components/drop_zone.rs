//! Dropping files or folders anywhere on the page, and the file picker.

use yew::prelude::*;

use crate::folders;
use crate::protocol::InputFile;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub on_files: Callback<Vec<InputFile>>,
    pub children: Html,
    #[prop_or_default]
    pub class: Classes,
}

/// The `onchange` of an `<input type="file" multiple>`.
pub fn on_input_change(on_files: Callback<Vec<InputFile>>) -> Callback<Event> {
    Callback::from(move |e: Event| {
        let Some(input) = e.target_dyn_into::<web_sys::HtmlInputElement>() else { return };
        let files: Vec<InputFile> = input
            .files()
            .map(|l| {
                (0..l.length())
                    .filter_map(|i| l.get(i))
                    .map(|f| {
                        let name = f.name();
                        folders::input_file(f, name)
                    })
                    .collect()
            })
            .unwrap_or_default();
        on_files.emit(files);
        input.set_value("");
    })
}

#[component(DropZone)]
pub fn drop_zone(props: &Props) -> Html {
    let over = use_state(|| false);
    let ondragover = {
        let over = over.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            over.set(true);
        })
    };
    let ondragleave = {
        let over = over.clone();
        Callback::from(move |e: DragEvent| {
            // Only when leaving the page, not when moving between children.
            if e.related_target().is_none() {
                over.set(false);
            }
        })
    };
    let ondrop = {
        let over = over.clone();
        let on_files = props.on_files.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            over.set(false);
            let Some(dt) = e.data_transfer() else { return };
            let dropped = folders::take(&dt);
            let on_files = on_files.clone();
            wasm_bindgen_futures::spawn_local(async move {
                on_files.emit(folders::collect(dropped).await);
            });
        })
    };
    html! {
        <main class={classes!("page", props.class.clone(), (*over).then_some("drag-over"))}
            {ondragover} {ondragleave} {ondrop} ondragenter={Callback::from(|e: DragEvent| e.prevent_default())}>
            { props.children.clone() }
        </main>
    }
}

//! Dropping files anywhere on the page, and the file picker.

use wasm_bindgen::JsCast;
use yew::prelude::*;

use crate::protocol::InputFile;

#[derive(Properties, PartialEq)]
pub struct Props {
    pub on_files: Callback<Vec<InputFile>>,
    pub children: Html,
}

fn input_file(file: web_sys::File) -> InputFile {
    InputFile { name: file.name(), size: file.size() as u64, blob: file.unchecked_into() }
}

fn files_of(list: Option<web_sys::FileList>) -> Vec<InputFile> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).map(input_file).collect()
}

/// The `onchange` of the `<input type="file">`.
pub fn on_input_change(on_files: Callback<Vec<InputFile>>) -> Callback<Event> {
    Callback::from(move |e: Event| {
        let Some(input) = e.target_dyn_into::<web_sys::HtmlInputElement>() else {
            return;
        };
        on_files.emit(files_of(input.files()));
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
        Callback::from(move |_: DragEvent| over.set(false))
    };
    let ondrop = {
        let over = over.clone();
        let on_files = props.on_files.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            over.set(false);
            on_files.emit(files_of(e.data_transfer().and_then(|dt| dt.files())));
        })
    };
    html! {
        <main class={classes!("page", (*over).then_some("drag-over"))}
            {ondragover} {ondragleave} {ondrop} ondragenter={Callback::from(|e: DragEvent| e.prevent_default())}>
            { props.children.clone() }
            <p class="drop-hint">{"Drop trace files or folders anywhere on this page."}</p>
        </main>
    }
}

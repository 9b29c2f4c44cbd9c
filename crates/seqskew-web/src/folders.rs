//! Files from a drop: plain files, and every trace-named file inside dropped folders (read
//! through the entries API, `webkitGetAsEntry`). Entries must be taken while the drop event is
//! being handled; reading them happens afterwards, asynchronously.

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use wasm_bindgen_futures::JsFuture;
use web_sys::{DataTransfer, FileSystemDirectoryEntry, FileSystemEntry, FileSystemFileEntry};

use crate::protocol::InputFile;

/// What was dropped: entries (files or folders) where the browser offers them, else files.
pub enum Dropped {
    Entries(Vec<FileSystemEntry>),
    Files(Vec<web_sys::File>),
}

/// Takes what the drop holds (call inside the event handler).
pub fn take(dt: &DataTransfer) -> Dropped {
    let items = dt.items();
    let entries: Vec<FileSystemEntry> = (0..items.length())
        .filter_map(|i| items.get(i))
        .filter_map(|item| item.webkit_get_as_entry().ok().flatten())
        .collect();
    if !entries.is_empty() {
        return Dropped::Entries(entries);
    }
    let files = dt.files().map(|l| (0..l.length()).filter_map(|i| l.get(i)).collect()).unwrap_or_default();
    Dropped::Files(files)
}

pub fn input_file(file: web_sys::File, name: String) -> InputFile {
    InputFile { name, size: file.size() as u64, blob: file.unchecked_into() }
}

/// Every file of a drop: folders walked recursively (trace-named files only), names as paths.
pub async fn collect(dropped: Dropped) -> Vec<InputFile> {
    match dropped {
        Dropped::Files(files) => files
            .into_iter()
            .map(|f| {
                let name = f.name();
                input_file(f, name)
            })
            .collect(),
        Dropped::Entries(entries) => {
            let mut out = Vec::new();
            let mut stack: Vec<(FileSystemEntry, bool)> = entries.into_iter().map(|e| (e, true)).collect();
            while let Some((entry, top_level)) = stack.pop() {
                if entry.is_directory() {
                    let dir: FileSystemDirectoryEntry = entry.unchecked_into();
                    for child in read_directory(&dir).await {
                        stack.push((child, false));
                    }
                } else if entry.is_file() {
                    let name = entry.full_path().trim_start_matches('/').to_owned();
                    if !top_level && !seqskew_core::import::is_input_file_name(&name) {
                        continue;
                    }
                    let file_entry: FileSystemFileEntry = entry.unchecked_into();
                    if let Some(file) = read_file(&file_entry).await {
                        out.push(input_file(file, name));
                    }
                }
            }
            out.sort_by(|a, b| a.name.cmp(&b.name));
            out
        }
    }
}

/// All entries of a directory (the reader returns them in batches until an empty one).
async fn read_directory(dir: &FileSystemDirectoryEntry) -> Vec<FileSystemEntry> {
    let reader = dir.create_reader();
    let mut all = Vec::new();
    loop {
        let promise = js_sys::Promise::new(&mut |resolve, reject| {
            let fail = reject.clone();
            let ok = Closure::once_into_js(move |entries: js_sys::Array| {
                let _ = resolve.call1(&wasm_bindgen::JsValue::NULL, &entries);
            });
            let err = Closure::once_into_js(move |e: wasm_bindgen::JsValue| {
                let _ = reject.call1(&wasm_bindgen::JsValue::NULL, &e);
            });
            if let Err(e) = reader.read_entries_with_callback_and_callback(ok.unchecked_ref(), err.unchecked_ref()) {
                let _ = fail.call1(&wasm_bindgen::JsValue::NULL, &e);
            }
        });
        let Ok(batch) = JsFuture::from(promise).await else { break };
        let batch: js_sys::Array = batch.unchecked_into();
        if batch.length() == 0 {
            break;
        }
        all.extend(batch.iter().map(|e| e.unchecked_into::<FileSystemEntry>()));
    }
    all
}

async fn read_file(entry: &FileSystemFileEntry) -> Option<web_sys::File> {
    let promise = js_sys::Promise::new(&mut |resolve, reject| {
        let ok = Closure::once_into_js(move |file: wasm_bindgen::JsValue| {
            let _ = resolve.call1(&wasm_bindgen::JsValue::NULL, &file);
        });
        let err = Closure::once_into_js(move |e: wasm_bindgen::JsValue| {
            let _ = reject.call1(&wasm_bindgen::JsValue::NULL, &e);
        });
        entry.file_with_callback_and_callback(ok.unchecked_ref(), err.unchecked_ref());
    });
    JsFuture::from(promise)
        .await
        .ok()
        .filter(|f| !f.is_undefined() && !f.is_null())
        .map(|f| f.unchecked_into::<web_sys::File>())
}

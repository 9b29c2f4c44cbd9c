//! seqskew in the browser. One wasm module serves two roles: the page (yew app) and the
//! analysis worker, which the page starts from the same files (`worker.js` loads them).

pub mod app;
pub mod bench;
mod clipboard;
pub mod components;
mod download;
pub mod failure_link;
pub mod folders;
pub mod hash;
pub mod js_bytes;
pub mod protocol;
pub mod shares;
pub mod state;
pub mod worker;

use wasm_bindgen::JsCast;

/// The entry point of both roles: the page when there is a window, else the worker.
pub fn run() {
    let in_page = js_sys::global().dyn_into::<web_sys::Window>().is_ok();
    if in_page {
        app::start();
    } else {
        worker::register();
    }
}

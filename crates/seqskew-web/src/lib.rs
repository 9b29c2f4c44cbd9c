//! seqskew in the browser, two bundles from one crate: the page (yew app, `main.rs`) and the
//! analysis worker (`worker_main.rs`), which the page starts (`web/worker.js` loads it). Each
//! links only what its entry point reaches, so the page's first bundle holds no importer.

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

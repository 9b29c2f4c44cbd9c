//! The page's binary (Trunk builds it from `index.html`); everything lives in the library so
//! tests can reach it. Only what the page reaches is linked: the importers and the analysis
//! stay in the worker's binary (`worker_main.rs`).

fn main() {
    seqskew_web::app::start();
}

//! The analysis worker's binary (`web/worker.js` loads it): the importers, the analysis and the
//! simulator's examples, none of which the page's own bundle holds.

fn main() {
    seqskew_web::worker::register();
}

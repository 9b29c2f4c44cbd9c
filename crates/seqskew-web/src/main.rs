//! The binary Trunk builds; everything lives in the library so tests can reach it.

fn main() {
    seqskew_web::run();
}

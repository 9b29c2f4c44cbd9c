//! seqskew-sim: reproducible synthetic training jobs whose straggler causes are known.
//!
//! A [`config::Config`] (or a named preset) describes the job: data-parallel × pipeline-parallel
//! workers, a document length distribution, a batching policy, a cost model, and the causes to
//! inject (sequence-length imbalance comes from the data and the batching; slow workers, a heavy
//! last stage, communication jitter and host stalls are injected). [`engine::Simulation`] yields
//! the steps one at a time; [`write`](mod@write) turns them into the files real jobs write (Kineto per rank,
//! a merged Chrome trace) and `seqskew_core::export` into step logs (through [`job`]);
//! [`truth()`] says what really happened. Pure: no IO of its own, so the browser runs it too.

pub mod config;
pub mod engine;
pub mod eval;
pub mod job;
pub mod rng;
pub mod schedule;
pub mod truth;
pub mod write;

pub use config::{Config, PRESETS, preset};
pub use engine::{Cause, SimStep, Simulation};
pub use truth::{Truth, truth};

/// Runs a whole (small) job: its steps with the truth computed.
pub fn simulate(config: &Config) -> Vec<SimStep> {
    Simulation::new(config.clone(), true).collect()
}

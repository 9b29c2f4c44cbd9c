//! What a measurement records (`Sample`, `Measured`, `Results`): below the measurements, the failure rows and the table.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What one child process measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Sample {
    pub seconds: f64,
    /// Peak resident memory of the process (VmHWM), MiB.
    pub peak_rss_mib: f64,
    /// Bytes of content read (decompressed).
    pub bytes: u64,
    pub workers: usize,
    pub steps: usize,
}

/// The process's peak resident set, MiB (Linux).
pub(crate) fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Measured {
    pub what: String,
    pub size: String,
    pub runs: Vec<Sample>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Results {
    pub machine: String,
    pub ingest: Vec<Measured>,
    pub analyze: Vec<Measured>,
    /// Holistic Trace Analysis on the Kineto inputs (empty without `--hta`).
    pub hta: Vec<Measured>,
    /// Failed jobs: a long console log scanned, a large job's Flight Recorder dumps diagnosed.
    #[serde(default)]
    pub failures: Vec<Measured>,
    /// The inputs, for the browser run: (label, path, uncompressed bytes).
    pub inputs: Vec<(String, PathBuf, u64)>,
    /// The whole job the browser drops: (label, path, bytes).
    pub job: Option<(String, PathBuf, u64)>,
    /// A 4 GB merged Chrome trace, for the browser's refusal check (full runs only).
    pub huge: Option<(String, PathBuf, u64)>,
}

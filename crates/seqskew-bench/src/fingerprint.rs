//! `seqskew-bench fingerprint`: a digest of the whole analysis (report and views) of every job
//! of the labelled corpus and of a few large generated jobs, one line each. Two builds whose
//! lines are the same diagnose the same, bit for bit: what a change that only makes the
//! analysis faster must keep.

use std::hash::Hasher;

use seqskew_core::analysis::analyze;
use seqskew_core::import::{Assembled, FileImport, assemble, import_bytes};
use seqskew_sim::config::{Config, Lengths};
use seqskew_sim::eval::{Case, corpus, write_files};
use seqskew_sim::job::to_job;
use seqskew_sim::{Simulation, preset};

/// The corpus `seqskew eval` scores (its default size and seed).
const CORPUS_JOBS: usize = 540;
const CORPUS_SEED: u64 = 1;

/// FNV-1a over the bytes written to it: stable across builds and platforms (std's hashers
/// are not promised to be).
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

impl std::io::Write for Fnv {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Hasher::write(self, buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn digest(assembled: &Assembled, inputs: &[FileImport]) -> Result<u64, String> {
    let summaries: Vec<_> = inputs.iter().map(FileImport::summary).collect();
    let analysis = analyze(assembled, &summaries);
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    serde_json::to_writer(&mut h, &analysis).map_err(|e| e.to_string())?;
    Ok(h.finish())
}

/// Large jobs made straight from the simulator (no files): the sizes where the analysis
/// splits its passes over the cores, in each kind of sequence knowledge and layout.
fn large_jobs() -> Vec<(String, Config)> {
    let base = preset("seqlen-imbalance").unwrap_or_default();
    let job = |dp: u32, pp: u32, micro_batches: u32, steps: u32, reveal: Lengths| Config {
        dp,
        pp,
        steps,
        micro_batches,
        reveal,
        ..base.clone()
    };
    [
        ("4096x24 exact", job(4096, 1, 1, 24, Lengths::Exact)),
        ("1024x64 exact, 4 micro-batches", job(1024, 1, 4, 64, Lengths::Exact)),
        ("256x4 pipeline x96, shapes", job(256, 4, 8, 96, Lengths::Shapes)),
        ("2048x40 hidden", job(2048, 1, 2, 40, Lengths::Hidden)),
    ]
    .into_iter()
    .map(|(name, config)| (name.to_owned(), config))
    .collect()
}

pub fn run(corpus_jobs: Option<usize>) -> Result<(), String> {
    for (name, config) in large_jobs() {
        let steps: Vec<_> = Simulation::new(config.clone(), false).collect();
        let assembled = Assembled { job: to_job(&config, &steps), diagnostics: Vec::new(), failures: Vec::new() };
        println!("{name}\t{:016x}", digest(&assembled, &[])?);
    }
    // The corpus's jobs are small: a thread takes every n-th, on every core; printed in order.
    let cases = corpus(corpus_jobs.unwrap_or(CORPUS_JOBS), CORPUS_SEED);
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let line = |case: &Case| -> Result<(usize, String), String> {
        let steps: Vec<_> = Simulation::new(case.config.clone(), true).collect();
        let imports: Vec<FileImport> = write_files(case, &steps).iter().map(|(n, b)| import_bytes(n, b)).collect();
        let d = digest(&assemble(&imports), &imports)?;
        Ok((case.id, format!("case {} ({})\t{d:016x}", case.id, case.scenario)))
    };
    let (cases, line) = (&cases, &line);
    let parts: Vec<Result<Vec<(usize, String)>, String>> = std::thread::scope(|scope| {
        let spawned: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || cases.iter().skip(t).step_by(threads).map(line).collect()))
            .collect();
        spawned.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into()))).collect()
    });
    let mut lines = Vec::with_capacity(cases.len());
    for part in parts {
        lines.extend(part?);
    }
    lines.sort_by_key(|(id, _)| *id);
    for (_, line) in lines {
        println!("{line}");
    }
    Ok(())
}

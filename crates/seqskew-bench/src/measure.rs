//! The measurements, each run in a child process, and the summary of several runs.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use seqskew_core::analysis::diagnose;
use seqskew_core::import::{FileImport, FileIngest, READ_CHUNK, assemble_owned, is_input_file_name};
use seqskew_sim::config::{Config, Lengths};
use seqskew_sim::job::to_job;
use seqskew_sim::{Simulation, preset};

use crate::failure;
use crate::generate::{Kind, input, job};
use crate::results::{Measured, Results, Sample, peak_rss_mib};

fn files_under(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut entries: Vec<PathBuf> =
                std::fs::read_dir(p).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
            entries.sort();
            out.extend(
                entries.into_iter().filter(|e| e.file_name().and_then(|n| n.to_str()).is_some_and(is_input_file_name)),
            );
        } else {
            out.push(p.clone());
        }
    }
    out
}

/// Feeds each of `files` (already open as readers) to an importer `READ_CHUNK` bytes at a time,
/// one after another on one thread, as the browser's worker does.
fn import_all<R: Read>(files: Vec<(String, R)>) -> Result<Vec<FileImport>, String> {
    let mut imports: Vec<FileImport> = Vec::with_capacity(files.len());
    let mut buf = vec![0u8; READ_CHUNK];
    for (name, mut reader) in files {
        let mut ingest = FileIngest::new(&name);
        loop {
            let n = reader.read(&mut buf).map_err(|e| format!("{name}: {e}"))?;
            if n == 0 {
                break;
            }
            ingest.feed(buf.get(..n).unwrap_or_default());
        }
        imports.push(ingest.finish());
    }
    Ok(imports)
}

/// Assembles the imports (moving the workers, as the browser's worker does) and prints the
/// sample of a run that took `start.elapsed()`.
fn report_ingest(imports: Vec<FileImport>, start: Instant) -> Result<(), String> {
    let bytes = imports.iter().map(|i| i.stats.bytes).sum();
    let assembled = assemble_owned(imports);
    let seconds = start.elapsed().as_secs_f64();
    let sample = Sample {
        seconds,
        peak_rss_mib: peak_rss_mib(),
        bytes,
        workers: assembled.job.workers.len(),
        steps: assembled.job.steps().len(),
    };
    println!("{}", serde_json::to_string(&sample).map_err(|e| e.to_string())?);
    Ok(())
}

/// Reads the files from disk and imports them, timing both (what a user waits for).
pub fn ingest(paths: &[PathBuf]) -> Result<(), String> {
    let files = files_under(paths);
    let start = Instant::now();
    report_ingest(import_all(opened(&files)?)?, start)
}

/// Each file opened, with its name.
fn opened(files: &[PathBuf]) -> Result<Vec<(String, File)>, String> {
    files
        .iter()
        .map(|p| Ok((p.display().to_string(), File::open(p).map_err(|e| format!("{}: {e}", p.display()))?)))
        .collect()
}

/// Reads the files into memory first, then times only their import: the parser's own speed,
/// without the page cache's copies, for comparing two builds.
pub fn parse(paths: &[PathBuf]) -> Result<(), String> {
    let files = files_under(paths)
        .iter()
        .map(|p| Ok((p.display().to_string(), std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?)))
        .collect::<Result<Vec<(String, Vec<u8>)>, String>>()?;
    let start = Instant::now();
    let readers = files.iter().map(|(name, bytes)| (name.clone(), bytes.as_slice())).collect();
    report_ingest(import_all(readers)?, start)
}

/// Builds a `workers` × `steps` job with the simulator (not timed), then times its diagnosis (the
/// report, as the command line makes it, without the views only the app plots),
/// `repeat` times over (a line each: building the job takes far longer than diagnosing it, so
/// two builds are compared by repeating the diagnosis in one process).
pub fn analyze(workers: u32, steps: u32, repeat: usize) -> Result<(), String> {
    let job = analyzed_job(workers, steps);
    let assembled = seqskew_core::import::Assembled { job, diagnostics: Vec::new(), failures: Vec::new() };
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        let report = diagnose(&assembled, &[]);
        let seconds = start.elapsed().as_secs_f64();
        let sample = Sample {
            seconds,
            peak_rss_mib: peak_rss_mib(),
            bytes: 0,
            workers: assembled.job.workers.len(),
            steps: report.job.steps,
        };
        println!("{}", serde_json::to_string(&sample).map_err(|e| e.to_string())?);
    }
    Ok(())
}

/// The job `analyze` diagnoses: `workers` data-parallel ranks × `steps` of the
/// sequence-length-imbalance preset, one micro-batch a step, every length known.
fn analyzed_job(workers: u32, steps: u32) -> seqskew_core::model::Job {
    let base = preset("seqlen-imbalance").unwrap_or_default();
    let config = Config {
        dp: workers,
        pp: 1,
        steps,
        micro_batches: 1,
        tokens_per_micro_batch: 8192,
        max_len: 8192,
        reveal: Lengths::Exact,
        ..base
    };
    let sim: Vec<_> = Simulation::new(config.clone(), false).collect();
    to_job(&config, &sim)
}

/// Which job [`model`] measures.
pub enum ModelOf {
    /// `analyze`'s simulated job of this many workers and steps.
    Simulated(u32, u32),
    /// The job these files (or directories) import as.
    Files(Vec<PathBuf>),
}

/// Where a job's model keeps its bytes, part by part (what a leaner model has to remove): one
/// line of JSON, MiB per part and bytes per worker-step. Counts what the lists hold (their
/// capacity), not the allocator's overhead per list.
pub fn model(of: ModelOf) -> Result<(), String> {
    use seqskew_core::model::{Collective, MicroBatch, Span, WorkerStep};
    use std::mem::size_of;
    let job = match of {
        ModelOf::Simulated(workers, steps) => analyzed_job(workers, steps),
        ModelOf::Files(paths) => assemble_owned(import_all(opened(&files_under(&paths))?)?).job,
    };
    let all_steps = || job.workers.iter().flat_map(|w| &w.steps);
    let worker_steps: usize = all_steps().count();
    let parts = [
        ("worker_steps", job.workers.iter().map(|w| w.steps.capacity()).sum::<usize>() * size_of::<WorkerStep>()),
        ("spans", all_steps().map(|s| s.spans.capacity()).sum::<usize>() * size_of::<Span>()),
        ("step_lengths", all_steps().map(|s| s.sequences.lengths.capacity()).sum::<usize>() * size_of::<u32>()),
        (
            "micro_batches",
            job.workers.iter().map(|w| w.micro_batches.capacity()).sum::<usize>() * size_of::<MicroBatch>(),
        ),
        (
            "micro_batch_lengths",
            job.workers.iter().flat_map(|w| &w.micro_batches).map(|m| m.sequences.lengths.capacity()).sum::<usize>()
                * size_of::<u32>(),
        ),
        ("collectives", job.workers.iter().map(|w| w.collectives.capacity()).sum::<usize>() * size_of::<Collective>()),
    ];
    let mut line = serde_json::Map::new();
    line.insert("worker_steps".into(), worker_steps.into());
    for (part, bytes) in parts {
        line.insert(format!("{part}_mib"), (bytes as f64 / 1048576.0).round().into());
        line.insert(
            format!("{part}_bytes_per_worker_step"),
            (bytes as f64 / worker_steps.max(1) as f64).round().into(),
        );
    }
    println!("{}", serde_json::Value::Object(line));
    Ok(())
}

/// Runs this binary with `args` and reads the sample it prints.
fn child(args: &[String]) -> Result<Sample, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    program(&exe, args)
}

/// Runs `exe args` and reads the sample it prints on its last line.
fn program(exe: &Path, args: &[String]) -> Result<Sample, String> {
    let out = Command::new(exe).args(args).output().map_err(|e| format!("{}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!("{args:?} failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).map_err(|e| format!("{args:?}: {e}"))
}

/// The largest input HTA is timed on (see `run_all`).
const HTA_MAX_BYTES: u64 = 100 << 20;

/// What `run` measures.
pub struct Plan {
    pub out: PathBuf,
    pub quick: bool,
    /// `python hta_bench.py`, to time HTA on the Kineto inputs.
    pub hta: Option<(PathBuf, PathBuf)>,
    /// The failure log's size, MiB (`--log-mb`; by default the largest generated input's).
    pub log_mb: Option<u64>,
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| s.lines().next().and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok()))
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    format!("{cpu}, {cores} cores, {mem:.0} GiB")
}

/// `runs` timings of seqskew reading `path`, each in a fresh process.
fn ingest_runs(path: &Path, runs: usize) -> Result<Vec<Sample>, String> {
    (0..runs)
        .map(|run| {
            eprintln!("  ingest run {}/{runs}", run + 1);
            child(&["ingest".into(), path.display().to_string()])
        })
        .collect()
}

/// Real traces others recorded (`../shared/fixtures`, beside the repository; read in place,
/// never copied): per-rank Kineto traces, gzipped as they were published. The last field says
/// whether the browser run drops it too: the vLLM trace is inference (no training steps, so
/// no verdict to wait for).
const FIXTURES: [(&str, &str, bool); 4] = [
    ("real Kineto.gz: DDP on A100 (HTA tests)", "hta_nccl_parser_config", true),
    ("real Kineto.gz: ResNet DDP on MI300 (TraceLens tests)", "tracelens_mi300", true),
    ("real Kineto.gz: vLLM inference on B200 (TraceLens tests)", "tracelens_b200", false),
    ("real Kineto.gz: DLRM, 2 ranks (HTA tests)", "hta_trace_filter", true),
];

/// Measures the real traces, when `../shared/fixtures` is there; HTA too, where it can read
/// them (it needs ProfilerSteps: a failure leaves its columns empty, not the run).
fn fixtures(plan: &Plan, runs: usize, results: &mut Results) -> Result<(), String> {
    let root = Path::new("../shared/fixtures");
    for (what, dir, in_browser) in FIXTURES {
        let path = root.join(dir);
        if !path.is_dir() {
            eprintln!("{}: not there, skipped", path.display());
            continue;
        }
        eprintln!("{what}:");
        let samples = ingest_runs(&path, runs)?;
        let bytes = samples.first().map_or(0, |s| s.bytes);
        let size = format!("{:.1} MB", bytes as f64 / 1e6);
        if in_browser {
            results.inputs.push((what.into(), path.clone(), bytes));
        }
        results.ingest.push(Measured { what: what.into(), size: size.clone(), runs: samples });
        if let Some((python, script)) = &plan.hta {
            let args = [script.display().to_string(), path.display().to_string()];
            let hta: Vec<Sample> = (0..runs)
                .map_while(|run| {
                    eprintln!("  HTA run {}/{runs}", run + 1);
                    program(python, &args).map_err(|e| eprintln!("  HTA could not: {e}")).ok()
                })
                .map(|s| Sample { bytes, ..s })
                .collect();
            if !hta.is_empty() {
                results.hta.push(Measured { what: what.into(), size, runs: hta });
            }
        }
    }
    Ok(())
}

/// The sizes of the generated inputs: (bytes, as the table says it).
fn sizes(quick: bool) -> &'static [(u64, &'static str)] {
    if quick { &[(20 << 20, "20 MB")] } else { &[(50 << 20, "50 MB"), (1 << 30, "1 GB")] }
}

/// The failure log's size in bytes: `log_mb` MiB, or the largest generated input's size.
fn log_bytes(quick: bool, log_mb: Option<u64>) -> u64 {
    log_mb.map_or_else(|| sizes(quick).iter().map(|&(b, _)| b).max().unwrap_or(20 << 20), |mb| mb << 20)
}

/// The Flight Recorder benchmark's job: ranks × entries per dump (fewer ranks for `--quick`).
fn flight(quick: bool) -> (u32, u32) {
    if quick { (1024, 200) } else { (4096, 200) }
}

/// Writes (or finds cached) the inputs `run` reads, and prints each one's label and path, so
/// that two builds can be compared on them (`ingest`, `parse`, `failure-log`) without a whole
/// run.
pub fn generate(out: &Path, quick: bool, log_mb: Option<u64>) -> Result<(), String> {
    for &(target, size) in sizes(quick) {
        for kind in Kind::ALL {
            let (path, bytes) = input(&out.join("data"), kind, target).map_err(|e| e.to_string())?;
            println!("{} {size}\t{}\t{bytes}", kind.name(), path.display());
        }
    }
    let (path, bytes) = failure::log_input(&out.join("data"), log_bytes(quick, log_mb)).map_err(|e| e.to_string())?;
    println!("failure log\t{}\t{bytes}", path.display());
    Ok(())
}

/// Only the failed-job rows (`seqskew-bench failures`): measured as `run` measures them, printed
/// as the table's section.
pub fn failures_only(plan: &Plan) -> Result<(), String> {
    let mut results = Results { machine: machine(), ..Results::default() };
    failures(plan, if plan.quick { 2 } else { 3 }, &mut results)?;
    let mut out = format!("Machine: {}.\n", results.machine);
    crate::table::failures(&results, &mut out);
    print!("{out}");
    Ok(())
}

/// The failed-job rows: the log scanned (`runs` processes), the dumps diagnosed.
fn failures(plan: &Plan, runs: usize, results: &mut Results) -> Result<(), String> {
    let target = log_bytes(plan.quick, plan.log_mb);
    eprintln!("generating a {} MiB training log…", target >> 20);
    let (path, bytes) = failure::log_input(&plan.out.join("data"), target).map_err(|e| e.to_string())?;
    let mut m = Measured {
        what: "training log scan (failure and step times)".into(),
        size: format!("{:.0} MB", bytes as f64 / 1e6),
        runs: Vec::new(),
    };
    for run in 0..runs {
        eprintln!("  failure log run {}/{runs}", run + 1);
        m.runs.push(child(&["failure-log".into(), path.display().to_string()])?);
    }
    results.failures.push(m);
    let (ranks, entries) = flight(plan.quick);
    let mut m = Measured {
        what: "Flight Recorder dumps".into(),
        size: format!("{ranks} ranks × {entries} entries"),
        runs: Vec::new(),
    };
    for run in 0..runs {
        eprintln!("  {ranks} Flight Recorder dumps run {}/{runs}", run + 1);
        m.runs.push(child(&["flight-recorder".into(), ranks.to_string(), entries.to_string()])?);
    }
    results.failures.push(m);
    Ok(())
}

pub fn run_all(plan: &Plan) -> Result<(), String> {
    let data = plan.out.join("data");
    let sizes = sizes(plan.quick);
    let runs = if plan.quick { 2 } else { 3 };
    let mut results = Results { machine: machine(), ..Results::default() };
    for &(target, size) in sizes {
        for kind in Kind::ALL {
            eprintln!("generating {} ({size})…", kind.name());
            let (path, bytes) = input(&data, kind, target).map_err(|e| e.to_string())?;
            results.inputs.push((format!("{} {size}", kind.name()), path.clone(), bytes));
            let samples = ingest_runs(&path, runs)?;
            results.ingest.push(Measured { what: kind.name().into(), size: size.into(), runs: samples });
            // HTA on the 50 MB inputs only: on 1 GB it ran for over 15 minutes without finishing.
            if let (Some((python, script)), Kind::Kineto | Kind::KinetoGz, true) =
                (&plan.hta, kind, target <= HTA_MAX_BYTES)
            {
                let mut m = Measured { what: kind.name().into(), size: size.into(), runs: Vec::new() };
                for run in 0..runs {
                    eprintln!("  HTA run {}/{runs}", run + 1);
                    let args = [script.display().to_string(), path.display().to_string()];
                    m.runs.push(Sample { bytes, ..program(python, &args)? });
                }
                results.hta.push(m);
            }
        }
    }
    if !plan.quick {
        fixtures(plan, runs, &mut results)?;
    }
    failures(plan, runs, &mut results)?;
    let (workers, steps) = if plan.quick { (16, 100) } else { (64, 500) };
    eprintln!("generating a {workers}×{steps} job…");
    let (path, bytes) = job(&data, workers, steps).map_err(|e| e.to_string())?;
    results.job = Some((format!("{workers} ranks × {steps} steps (Chrome trace)"), path, bytes));
    if !plan.quick {
        eprintln!("generating a 4 GB Chrome trace…");
        let (path, bytes) = input(&data, Kind::Chrome, 4 << 30).map_err(|e| e.to_string())?;
        results.huge = Some(("merged Chrome trace 4 GB".into(), path, bytes));
    }
    let scales: &[(u32, u32)] =
        if plan.quick { &[(64, 100), (256, 100)] } else { &[(64, 1000), (256, 1000), (1024, 1000), (4096, 1000)] };
    for &(w, s) in scales {
        let mut m = Measured { what: "analysis".into(), size: format!("{w} workers × {s} steps"), runs: Vec::new() };
        for run in 0..runs {
            eprintln!("analysis {w}×{s} run {}/{runs}", run + 1);
            m.runs.push(child(&["analyze".into(), w.to_string(), s.to_string()])?);
        }
        results.analyze.push(m);
    }
    std::fs::create_dir_all(&plan.out).map_err(|e| e.to_string())?;
    let text = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?;
    let path = plan.out.join("native.json");
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

//! `seqskew synth`: write a synthetic job (a preset or a configuration) in the formats real jobs
//! write, plus its truth.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use flate2::Compression;
use flate2::write::GzEncoder;
use seqskew_core::export::{write_steplog_csv, write_steplog_jsonl};
use seqskew_sim::write::chrome::ChromeWriter;
use seqskew_sim::write::kineto::KinetoWriter;
use seqskew_sim::{Config, Simulation, preset, truth};

/// Formats `synth` can write.
pub const FORMATS: [&str; 4] = ["kineto", "chrome", "jsonl", "csv"];

pub struct Options {
    pub preset: Option<String>,
    pub config: Option<PathBuf>,
    pub seed: Option<u64>,
    pub steps: Option<u32>,
    pub out: PathBuf,
    pub formats: Vec<String>,
    pub gzip: bool,
}

/// A file sink, gzipped or not.
fn sink(path: &Path, gzip: bool) -> Result<Box<dyn Write>, String> {
    let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = BufWriter::with_capacity(1 << 20, file);
    Ok(if gzip { Box::new(GzEncoder::new(file, Compression::fast())) } else { Box::new(file) })
}

fn config_of(o: &Options) -> Result<Config, String> {
    let mut config = match (&o.preset, &o.config) {
        (Some(name), None) => preset(name).ok_or_else(|| {
            let names: Vec<&str> = seqskew_sim::PRESETS.iter().map(|p| p.0).collect();
            format!("no preset named {name:?}; presets: {}", names.join(", "))
        })?,
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        _ => return Err("give exactly one of --preset NAME or --config FILE".into()),
    };
    if let Some(seed) = o.seed {
        config.seed = seed;
    }
    if let Some(steps) = o.steps {
        config.steps = steps;
    }
    config.validate()?;
    Ok(config)
}

pub fn run(o: &Options) -> Result<ExitCode, String> {
    let config = config_of(o)?;
    for f in &o.formats {
        if !FORMATS.contains(&f.as_str()) {
            return Err(format!("unknown format {f:?}; formats: {}", FORMATS.join(", ")));
        }
    }
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let gz = if o.gzip { ".gz" } else { "" };
    let wants = |f: &str| o.formats.iter().any(|x| x == f);
    let io = |e: std::io::Error| e.to_string();
    let mut kineto = if wants("kineto") {
        if config.workers() > 1024 {
            return Err(format!(
                "{} workers is too many for one Kineto file per rank; use chrome, jsonl or csv",
                config.workers()
            ));
        }
        let kdir = o.out.join("kineto");
        std::fs::create_dir_all(&kdir).map_err(|e| format!("{}: {e}", kdir.display()))?;
        let sinks = (0..config.workers())
            .map(|r| sink(&kdir.join(format!("rank{r}.pt.trace.json{gz}")), o.gzip))
            .collect::<Result<Vec<_>, _>>()?;
        Some(KinetoWriter::new(&config, sinks).map_err(io)?)
    } else {
        None
    };
    let mut chrome = if wants("chrome") {
        Some(ChromeWriter::new(&config, sink(&o.out.join(format!("job.trace.json{gz}")), o.gzip)?).map_err(io)?)
    } else {
        None
    };
    let mut jsonl = if wants("jsonl") { Some(sink(&o.out.join(format!("steps.jsonl{gz}")), o.gzip)?) } else { None };
    let mut csv = if wants("csv") { Some(sink(&o.out.join(format!("steps.csv{gz}")), o.gzip)?) } else { None };
    let mut all_steps = Vec::new();
    let mut csv_header = true;
    for step in Simulation::new(config.clone(), true) {
        if let Some(w) = kineto.as_mut() {
            w.step(&step).map_err(io)?;
        }
        if let Some(w) = chrome.as_mut() {
            w.step(&step).map_err(io)?;
        }
        // Step logs stream step by step (one step's job at a time).
        let one = seqskew_sim::job::to_job(&config, std::slice::from_ref(&step));
        if let Some(w) = jsonl.as_mut() {
            write_steplog_jsonl(&one, w).map_err(io)?;
        }
        if let Some(w) = csv.as_mut() {
            let mut buf = Vec::new();
            write_steplog_csv(&one, &mut buf).map_err(io)?;
            let body = if csv_header { &buf[..] } else { buf.splitn(2, |&b| b == b'\n').nth(1).unwrap_or_default() };
            w.write_all(body).map_err(io)?;
            csv_header = false;
        }
        // The truth keeps every step's documents: only for jobs small enough to hold.
        if config.workers() <= 4096 {
            all_steps.push(step);
        }
    }
    if let Some(w) = kineto {
        for mut out in w.finish().map_err(io)? {
            out.flush().map_err(io)?;
        }
    }
    if let Some(w) = chrome {
        w.finish().map_err(io)?.flush().map_err(io)?;
    }
    for mut w in [jsonl, csv].into_iter().flatten() {
        w.flush().map_err(io)?;
    }
    let t = truth(&config, &all_steps);
    let text = serde_json::to_string_pretty(&t).map_err(|e| e.to_string())?;
    std::fs::write(o.out.join("truth.json"), text).map_err(io)?;
    eprintln!(
        "wrote {} ({} workers, {} steps); truth: {} (S = {:.2})",
        o.out.display(),
        config.workers(),
        config.steps,
        t.primary,
        t.slowdown
    );
    Ok(ExitCode::SUCCESS)
}

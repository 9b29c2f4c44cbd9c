//! The benchmark's inputs, written by the simulator until they reach a target size, and cached
//! (a `.complete` marker records what was written).

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use flate2::Compression;
use flate2::write::GzEncoder;
use seqskew_core::export::write_steplog_jsonl;
use seqskew_sim::config::{Config, Lengths};
use seqskew_sim::job::to_job;
use seqskew_sim::write::chrome::ChromeWriter;
use seqskew_sim::write::kineto::KinetoWriter;
use seqskew_sim::{Simulation, preset};

/// The formats the benchmark reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Kineto,
    KinetoGz,
    Chrome,
    StepLog,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Kineto, Kind::KinetoGz, Kind::Chrome, Kind::StepLog];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Kineto => "Kineto JSON (per rank)",
            Kind::KinetoGz => "Kineto JSON.gz (per rank)",
            Kind::Chrome => "merged Chrome trace",
            Kind::StepLog => "step log (JSONL)",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            Kind::Kineto => "kineto",
            Kind::KinetoGz => "kineto-gz",
            Kind::Chrome => "chrome",
            Kind::StepLog => "steplog",
        }
    }
}

/// A writer that counts the (uncompressed) bytes written through it.
struct Counting<W: Write> {
    inner: W,
    count: Rc<Cell<u64>>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn sink(path: &Path, gzip: bool, count: &Rc<Cell<u64>>) -> io::Result<Counting<Box<dyn Write>>> {
    let file = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let inner: Box<dyn Write> = if gzip { Box::new(GzEncoder::new(file, Compression::fast())) } else { Box::new(file) };
    Ok(Counting { inner, count: count.clone() })
}

/// The job the inputs hold: a 16-rank, 2-stage pipeline with sequence-length imbalance, as many
/// steps as the size needs.
fn config() -> Config {
    let base = preset("seqlen-imbalance").unwrap_or_default();
    Config { steps: 1_000_000, reveal: Lengths::Exact, ..base }
}

/// Runs `write` (given the path and a byte counter) unless `data/label` is already complete;
/// returns the path and the uncompressed bytes written.
pub(crate) fn cached(
    data: &Path,
    label: &str,
    write: impl FnOnce(&Path, &Rc<Cell<u64>>) -> io::Result<()>,
) -> io::Result<(PathBuf, u64)> {
    let path = data.join(label);
    let marker = data.join(format!("{label}.complete"));
    if let Ok(text) = std::fs::read_to_string(&marker)
        && let Ok(bytes) = text.trim().parse::<u64>()
    {
        return Ok((path, bytes));
    }
    std::fs::create_dir_all(data)?;
    let count = Rc::new(Cell::new(0u64));
    write(&path, &count)?;
    std::fs::write(&marker, count.get().to_string())?;
    Ok((path, count.get()))
}

/// Writes (or reuses) an input of about `target` uncompressed bytes; returns its path (a
/// directory for per-rank Kineto traces) and the uncompressed bytes.
pub fn input(data: &Path, kind: Kind, target: u64) -> io::Result<(PathBuf, u64)> {
    let label = format!("{}-{}mb", kind.slug(), target >> 20);
    cached(data, &label, |path, count| {
        let config = config();
        let mut steps = Simulation::new(config.clone(), false);
        match kind {
            Kind::Kineto | Kind::KinetoGz => {
                std::fs::create_dir_all(path)?;
                let gz = kind == Kind::KinetoGz;
                let ext = if gz { "json.gz" } else { "json" };
                let sinks = (0..config.workers())
                    .map(|r| sink(&path.join(format!("rank{r}.pt.trace.{ext}")), gz, count))
                    .collect::<io::Result<Vec<_>>>()?;
                let mut w = KinetoWriter::new(&config, sinks)?;
                while count.get() < target {
                    let Some(step) = steps.next() else { break };
                    w.step(&step)?;
                }
                for mut s in w.finish()? {
                    s.flush()?;
                }
            }
            Kind::Chrome => {
                let mut w = ChromeWriter::new(&config, sink(path, false, count)?)?;
                while count.get() < target {
                    let Some(step) = steps.next() else { break };
                    w.step(&step)?;
                }
                w.finish()?.flush()?;
            }
            Kind::StepLog => {
                let mut out = sink(path, false, count)?;
                while count.get() < target {
                    let Some(step) = steps.next() else { break };
                    write_steplog_jsonl(&to_job(&config, std::slice::from_ref(&step)), &mut out)?;
                }
                out.flush()?;
            }
        }
        Ok(())
    })
}

/// A whole job of `workers` ranks (two pipeline stages) × `steps` as one merged Chrome trace:
/// what the browser benchmark drops to time a full diagnosis.
pub fn job(data: &Path, workers: u32, steps: u32) -> io::Result<(PathBuf, u64)> {
    cached(data, &format!("job-{workers}x{steps}.json"), |path, count| {
        let base = config();
        let config = Config { dp: (workers / base.pp.max(1)).max(1), steps, ..base };
        let mut w = ChromeWriter::new(&config, sink(path, false, count)?)?;
        for step in Simulation::new(config.clone(), false) {
            w.step(&step)?;
        }
        w.finish()?.flush()?;
        Ok(())
    })
}

//! Reading inputs: files and directories (recursively, in sorted order), each streamed in
//! chunks into its own importer. Files are independent, so they are read in parallel.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use seqskew_core::import::{Assembled, FileImport, FileIngest, FileSummary, READ_CHUNK, assemble_owned};

use crate::progress::Progress;

/// Expands directories into the files below them (sorted); files stay as given.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == STDIN {
            out.push(p.clone());
        } else if p.is_dir() {
            walk(p, &mut out).map_err(|e| format!("{}: {e}", p.display()))?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(format!("{}: no such file or directory", p.display()));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for e in entries {
        let name = e.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if e.is_dir() {
            walk(&e, out)?;
        } else if seqskew_core::import::is_input_file_name(name) {
            out.push(e);
        }
    }
    Ok(())
}

/// The path that stands for standard input (`xclip -o | seqskew analyze -`).
pub const STDIN: &str = "-";

/// Imports one file (standard input for [`STDIN`]), telling `progress` of every piece read; an
/// unreadable file becomes a diagnostic like any other bad input.
fn import_file(path: &Path, progress: &Progress) -> FileImport {
    let from_stdin = path.as_os_str() == STDIN;
    let name = if from_stdin { "stdin".to_owned() } else { path.display().to_string() };
    let mut ingest = FileIngest::new(&name);
    let mut size = 0;
    let mut feed = |source: &mut dyn Read| {
        let mut buf = vec![0u8; READ_CHUNK];
        loop {
            let n = source.read(&mut buf)?;
            if n == 0 || !ingest.wants_more() {
                return Ok(());
            }
            ingest.feed(buf.get(..n).unwrap_or_default());
            progress.read(n as u64);
        }
    };
    let read = if from_stdin {
        feed(&mut std::io::stdin().lock())
    } else {
        File::open(path).and_then(|mut f| {
            size = f.metadata()?.len();
            feed(&mut f)
        })
    };
    let mut import = ingest.finish_of_size(size);
    if let Err(e) = read {
        import.diagnostics.push(seqskew_core::diag::Diagnostic::new(
            seqskew_core::diag::Severity::Error,
            &name,
            None,
            format!("could not read the file: {e}"),
        ));
    }
    import
}

/// Imports every file, in parallel, and assembles them into one job: every file's summary, the
/// job, and the run's progress (over the bytes of all files; the caller says what comes next).
pub fn read(paths: &[PathBuf]) -> (Vec<FileSummary>, Assembled, Progress) {
    let total = paths.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    let progress = Progress::reading(paths.len(), total);
    let (summaries, assembled) = assemble(import_all(paths, &progress));
    (summaries, assembled, progress)
}

/// Imports every file, in parallel, keeping the input order.
fn import_all(paths: &[PathBuf], progress: &Progress) -> Vec<FileImport> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(paths.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<FileImport>> = vec![None; paths.len()];
    let slots = std::sync::Mutex::new(&mut results);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(path) = paths.get(i) else { break };
                    let import = import_file(path, progress);
                    if let Ok(mut slots) = slots.lock()
                        && let Some(slot) = slots.get_mut(i)
                    {
                        *slot = Some(import);
                    }
                }
            });
        }
    });
    results.into_iter().flatten().collect()
}

/// Every file's summary, and their workers moved (not copied) into one job.
fn assemble(imports: Vec<FileImport>) -> (Vec<FileSummary>, Assembled) {
    let summaries = imports.iter().map(FileImport::summary).collect();
    (summaries, assemble_owned(imports))
}

/// Frees a job on a thread of its own, which the process does not wait for when it exits: a
/// large job is millions of small allocations, and freeing them one by one took seconds (a
/// tenth of analysing a 1 GB step log).
pub fn free_in_background(assembled: Assembled) {
    std::thread::spawn(move || drop(assembled));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_given_up_early_still_counts_all_its_bytes() {
        let path = std::env::temp_dir().join(format!("seqskew-input-test-{}.json", std::process::id()));
        // Binary content is given up after its first KiB (text would be read as a log).
        let text = "\u{0}\u{1}not a trace\n".repeat(40_000);
        std::fs::write(&path, &text).expect("a temporary file");
        let import = import_file(&path, &Progress::reading(1, 0));
        std::fs::remove_file(&path).ok();
        assert!(text.len() > 2 * READ_CHUNK);
        assert_eq!(import.summary().bytes, text.len() as u64);
        assert!(!import.is_usable());
        assert!(!import.diagnostics.is_empty());
    }
}

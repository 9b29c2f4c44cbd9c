//! Failed-job logs through the importer: any bytes, cut into up to four files at each `0xFF`
//! byte (never in UTF-8 text, so a seed of several logs can hold it), each named like a log and
//! imported whole, in two pieces and in small pieces. The promises: no panic; chunking never
//! changes what a file says about a failure (its evidence, format and diagnostics); the
//! evidence keeps its documented shape; the diagnosis of all the files together never
//! panics and names each rank at most once, sorted, never as both initiating and collateral;
//! and the straggler verdict their iteration lines give (`analysis::logged`) never panics and
//! has a finite slowdown of at least 1.
#![no_main]

#[allow(dead_code)] // the trace targets' helpers; this target uses `chunked` and `invariants`
mod common;

use libfuzzer_sys::fuzz_target;
use seqskew_core::failure::{FileEvidence, diagnose, log::MAX_EVENTS};
use seqskew_core::import::{FileImport, FileIngest, assemble, import_bytes};
use seqskew_core::report::FAILURE_CAUSES;

/// Separates the files of one input.
const SEPARATOR: u8 = 0xFF;
/// Names like those users drop: a rank in the name, torchrun's `--log-dir` layout, a console.
const NAMES: [&str; 4] = ["logs/rank3.log", "run/attempt_0/1/stderr.log", "console.log", "node1.out"];
/// The log scanner's batch (`failure/log.rs`, `BATCH`): it scans once this much is gathered,
/// keeping a window of lines. Inputs of a few KiB never reach it, so one file in sixteen is put
/// after as much filler as brings the batch's end into its own bytes.
const SCANNER_BATCH: usize = 1 << 20;
/// Filler lines: no anchor and no prefix, so the scanner passes over them quickly.
const FILLER_LINE: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let mut imports: Vec<FileImport> = Vec::new();
    for (part, name) in data.splitn(NAMES.len(), |&b| b == SEPARATOR).zip(NAMES) {
        let hash = fnv(part);
        let padded;
        let content = if hash % 16 == 0 && !part.starts_with(&[0x1f, 0x8b]) {
            // Up to the whole part after the filler, so the batch ends somewhere in it.
            let into = usize::try_from((hash >> 8) % (part.len() as u64 + 1)).unwrap_or(0);
            padded = filler(SCANNER_BATCH.saturating_sub(into), part);
            &padded[..]
        } else {
            part
        };
        imports.push(check(name, content, hash, content.len() - part.len()));
    }
    let summaries: Vec<_> = imports.iter().map(FileImport::summary).collect();
    let report = seqskew_core::analysis::diagnose(&assemble(&imports), &summaries);
    if report.job.step_times.is_some() {
        let s = report.slowdown.factor;
        assert!(s.is_finite() && s >= 1.0, "slowdown {s} from step times alone");
    }
    let evidence: Vec<FileEvidence> = imports.into_iter().filter_map(|i| i.failure).collect();
    if let Some(failure) = diagnose(&evidence) {
        let initiating = &failure.initiating_ranks;
        assert!(initiating.windows(2).all(|w| w[0] < w[1]), "initiating ranks not sorted and unique: {initiating:?}");
        let both: Vec<u32> = failure.collateral_ranks.iter().copied().filter(|r| initiating.contains(r)).collect();
        assert!(both.is_empty(), "ranks {both:?} both initiating and collateral: {failure:?}");
        assert!(FAILURE_CAUSES.contains(&failure.cause.as_str()), "cause {:?} is not one of the causes", failure.cause);
    }
});

/// Imports `content` whole, split in two at a point derived from it (past `padding`, where the
/// fuzzer's bytes start, when it is there), and in small pieces; requires the same result.
fn check(name: &str, content: &[u8], hash: u64, padding: usize) -> FileImport {
    let whole = import_bytes(name, content);
    let own = content.len() - padding;
    let at = padding + usize::try_from((hash >> 24) % (own as u64 + 1)).unwrap_or(0);
    let (head, tail) = content.split_at(at);
    let mut ingest = FileIngest::new(name);
    ingest.feed(head);
    ingest.feed(tail);
    let halves = ingest.finish();
    common::invariants(name, &whole);
    shape(&whole);
    same(&whole, &halves, &format!("split at {at} of {}", content.len()));
    // The filler's megabyte in pieces of a few bytes would be slow: pieces only for the rest.
    if padding == 0 {
        let sizes = [1 + (hash >> 40) as usize % 64, 1 + (hash >> 48) as usize % 256];
        let pieces = common::chunked(name, content, sizes);
        same(&whole, &pieces, &format!("pieces of {sizes:?}"));
    }
    whole
}

fn same(whole: &FileImport, other: &FileImport, how: &str) {
    assert_eq!(whole.format, other.format, "{how} changed the format");
    assert_eq!(whole.failure, other.failure, "{how} changed the failure evidence");
    if !whole.compressed {
        // (Where a corrupt gzip stream is noticed depends on how much came at once.)
        assert_eq!(whole.diagnostics, other.diagnostics, "{how} changed the diagnostics");
    }
}

/// What `FileEvidence` documents: ranks seen sorted, events bounded and in line order.
fn shape(import: &FileImport) {
    let Some(evidence) = &import.failure else { return };
    assert_eq!(evidence.file, import.file);
    let seen = &evidence.ranks_seen;
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "ranks seen not sorted and unique: {seen:?}");
    assert!(evidence.events.len() <= MAX_EVENTS, "{} events kept", evidence.events.len());
    assert!(evidence.events.windows(2).all(|w| w[0].line <= w[1].line), "events not in line order");
    if evidence.flight.is_none() {
        for event in &evidence.events {
            assert!(event.line <= evidence.lines, "event on line {} of {}: {event:?}", event.line, evidence.lines);
        }
    }
}

/// `length` bytes of filler lines (the last one ended at the end), then `part`.
fn filler(length: usize, part: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(length + part.len());
    out.extend((0..length).map(|i| if i % FILLER_LINE == FILLER_LINE - 1 || i + 1 == length { b'\n' } else { b'.' }));
    out.extend_from_slice(part);
    out
}

/// FNV-1a: where to cut, and whether to pad, as a function of the bytes alone.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

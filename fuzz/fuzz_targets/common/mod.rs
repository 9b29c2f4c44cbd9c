//! What every target does with its input: import the same content in one chunk and in chunks
//! of fuzzer-chosen sizes, require the same result, check the invariants, assemble.
//!
//! An input is two control bytes, then data. Control byte 0: bits 0..6 are the first chunk
//! size − 1 (1..=64), bit 6 picks a file name with or without a rank in it, bit 7 is the
//! `any_bytes` target's "gzip the data first". Control byte 1: the second chunk size − 1
//! (1..=256). Chunks alternate between the two sizes, so boundaries land everywhere.

use seqskew_core::diag::Severity;
use seqskew_core::import::{FileImport, FileIngest, assemble, import_bytes};

/// How the data is cut and named.
#[derive(Clone, Copy, Debug)]
pub struct Control {
    pub sizes: [usize; 2],
    pub ranked_name: bool,
    #[allow(dead_code)] // read by any_bytes only
    pub gzip: bool,
}

/// Splits the input into control and data; `None` when it is too short to have both.
pub fn split(input: &[u8]) -> Option<(Control, &[u8])> {
    let (&[c0, c1], data) = input.split_first_chunk::<2>()?;
    let control = Control {
        sizes: [1 + usize::from(c0 & 0x3f), 1 + usize::from(c1)],
        ranked_name: c0 & 0x40 != 0,
        gzip: c0 & 0x80 != 0,
    };
    Some((control, data))
}

/// The file name an input is imported under (a rank in it, or not).
pub fn name(control: Control, extension: &str) -> String {
    if control.ranked_name { format!("logs/rank5.{extension}") } else { format!("logs/trace.{extension}") }
}

/// Feeds `content` in chunks of alternating sizes.
pub fn chunked(name: &str, content: &[u8], sizes: [usize; 2]) -> FileImport {
    let mut ingest = FileIngest::new(name);
    let mut rest = content;
    let mut turn = 0;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(sizes[turn].min(rest.len()));
        ingest.feed(chunk);
        rest = tail;
        turn = 1 - turn;
    }
    ingest.finish()
}

/// Imports `content` whole and in chunks; panics (a finding) on any difference or broken
/// invariant. Then assembles the result alone (and analyses it) and beside its twin.
pub fn check(name: &str, content: &[u8], control: Control) {
    let whole = import_bytes(name, content);
    let parts = chunked(name, content, control.sizes);
    invariants(name, &whole);
    invariants(name, &parts);
    assert_eq!(whole.format, parts.format, "chunks of {:?} changed the format", control.sizes);
    assert_eq!(whole.stats, parts.stats, "chunks of {:?} changed the counts", control.sizes);
    assert_eq!(whole.workers, parts.workers, "chunks of {:?} changed the workers", control.sizes);
    if !whole.compressed {
        // (Where a corrupt gzip stream is noticed depends on how much came at once.)
        assert_eq!(whole.diagnostics, parts.diagnostics, "chunks of {:?} changed the diagnostics", control.sizes);
    }
    let alone = assemble(std::slice::from_ref(&whole));
    let ranks: Vec<u32> = alone.job.workers.iter().map(|w| w.rank).collect();
    assert!(ranks.windows(2).all(|w| w[0] < w[1]), "assembled ranks not sorted and unique: {ranks:?}");
    assert!(alone.job.workers.iter().all(|w| !w.steps.is_empty()), "an assembled worker without steps");
    // The same file twice: its ranked workers are ignored the second time, its unranked ones
    // are assigned further ranks.
    // The analysis reads whatever the import let through: it must not panic either (sums of
    // input-derived times saturate).
    if !alone.job.workers.is_empty() {
        let inputs = [whole.summary()];
        let _ = seqskew_core::analysis::analyze(&alone, &inputs);
    }
    let unranked = whole.workers.iter().filter(|w| w.rank == u32::MAX && !w.steps.is_empty()).count();
    let twice = assemble(&[whole, parts]);
    assert_eq!(twice.job.workers.len(), alone.job.workers.len() + unranked, "{:?}", twice.diagnostics);
}

/// Every diagnostic names the file and says something; steps, or an error saying why not;
/// steps sorted by number, durations and times sane.
pub fn invariants(name: &str, import: &FileImport) {
    assert_eq!(import.file, name);
    for d in &import.diagnostics {
        assert_eq!(d.file, name, "a diagnostic does not name the file: {d:?}");
        assert!(!d.message.trim().is_empty(), "an empty diagnostic: {d:?}");
    }
    if !import.is_usable() {
        assert!(
            import.diagnostics.iter().any(|d| d.severity == Severity::Error),
            "nothing usable and no error saying why: {:?}",
            import.diagnostics
        );
    }
    let ranks: Vec<u32> = import.workers.iter().map(|w| w.rank).collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "workers not sorted by rank: {ranks:?}");
    for w in &import.workers {
        assert!(w.steps.windows(2).all(|s| s[0].step < s[1].step), "steps not sorted or repeated");
        for s in &w.steps {
            assert!(s.duration >= 0, "negative step duration: {s:?}");
            // "the kinds partition the step's wall time" (model.rs); summed without overflow
            let total: i128 = seqskew_core::model::SpanKind::ALL.iter().map(|&k| i128::from(s.totals.get(k))).sum();
            assert_eq!(total, i128::from(s.duration), "totals do not add up to the step: {s:?}");
        }
    }
}

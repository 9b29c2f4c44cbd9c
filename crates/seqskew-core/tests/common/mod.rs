//! Test support: where the shared real-trace fixtures live, and compact summaries to snapshot.
// Native tests read the shared fixtures from disk; the ban on std::fs is for code that runs in wasm.
#![allow(dead_code, clippy::unwrap_used, clippy::disallowed_methods)]

use std::fmt::Write;
use std::path::PathBuf;

use seqskew_core::import::{FileImport, FileIngest};
use seqskew_core::model::SpanKind;

/// The shared fixtures (others' data: read in place, never copied into the repo).
/// `SEQSKEW_FIXTURES` overrides; otherwise `../shared/fixtures` beside the repository.
pub fn fixtures() -> PathBuf {
    if let Some(dir) = std::env::var_os("SEQSKEW_FIXTURES") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures")
}

/// Whether a test that reads the shared fixtures must be skipped: a user's clone has no
/// `../shared` beside it. Says so on standard error (shown with `--nocapture`, and by
/// `scripts/test`, which lists these tests when it skips them). With `SEQSKEW_REQUIRE_FIXTURES`
/// set (as CI does), a missing folder is a failure instead.
pub fn skip_without_shared(test: &str) -> bool {
    let dir = fixtures();
    if dir.is_dir() {
        return false;
    }
    assert!(
        std::env::var_os("SEQSKEW_REQUIRE_FIXTURES").is_none(),
        "{test}: the shared fixtures are not at {} (clone the repository beside ../shared, or set SEQSKEW_FIXTURES)",
        dir.display()
    );
    eprintln!("SKIPPED {test}: the shared fixtures are not at {} (a clone without ../shared beside it)", dir.display());
    true
}

/// Imports a fixture, feeding it in chunks of `chunk` bytes.
pub fn import_fixture(relative: &str, chunk: usize) -> FileImport {
    let path = fixtures().join(relative);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut ingest = FileIngest::new(relative);
    for c in bytes.chunks(chunk.max(1)) {
        ingest.feed(c);
    }
    ingest.finish()
}

fn ms(ns: i64) -> String {
    format!("{:.1}", ns as f64 / 1e6)
}

/// A small, human-reviewable summary of what a file imported to.
pub fn summary(import: &FileImport) -> String {
    let mut out = String::new();
    let s = import.summary();
    writeln!(
        out,
        "format={} gzip={} workers={} ranks={:?} steps={} kept={} skipped={} sequences={:?}",
        s.format.map_or("none", |f| f.name()),
        s.compressed,
        s.workers,
        s.ranks,
        s.steps,
        s.spans.kept,
        s.spans.skipped,
        s.sequences
    )
    .unwrap();
    for d in &s.diagnostics {
        writeln!(out, "  {:?}: {}", d.severity, d.message).unwrap();
    }
    for w in &import.workers {
        for st in &w.steps {
            let t = &st.totals;
            write!(
                out,
                "rank {} step {}: {} ms = compute {} + attn {} + comm {} + stall {} + opt {} + other {}; {} spans, {} collectives",
                w.rank,
                st.step,
                ms(st.duration),
                ms(t.get(SpanKind::Compute)),
                ms(t.get(SpanKind::Attention)),
                ms(t.communication()),
                ms(t.get(SpanKind::HostStall)),
                ms(t.get(SpanKind::Optimizer)),
                ms(t.get(SpanKind::Other) + t.get(SpanKind::DataLoading)),
                st.spans.len(),
                st.collectives.len(),
            )
            .unwrap();
            let q = &st.sequences;
            if q.is_known() {
                write!(out, "; docs {} tokens {} max {} sumsq {}", q.documents, q.tokens, q.max_len, q.sum_sq_low)
                    .unwrap();
                if q.sum_sq_high != q.sum_sq_low {
                    write!(out, "..{}", q.sum_sq_high).unwrap();
                }
            }
            writeln!(out).unwrap();
        }
    }
    out
}

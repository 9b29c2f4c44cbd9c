//! The interface every format's parser implements, what it counts, and the checks several
//! parsers share.

use serde::{Deserialize, Serialize};

use crate::diag::{DiagnosticSink, Location, Severity};
use crate::model::Worker;

/// Counts for `seqskew inspect` and for the benchmark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportStats {
    /// Bytes as given (compressed when gzipped).
    pub bytes_in: u64,
    /// Bytes of content after decompression.
    pub bytes: u64,
    /// Records read: trace events, or step-log rows.
    pub records: u64,
    /// Records that contributed to the model.
    pub kept: u64,
    /// Records skipped as irrelevant (python_function, metadata ...) or unusable.
    pub skipped: u64,
}

/// A format parser fed with decompressed content.
pub(super) trait ContentParser {
    /// Consumes a chunk of content; `chunk` follows the previous chunk directly.
    fn feed(&mut self, chunk: &[u8], diags: &mut DiagnosticSink);
    /// End of content: turn what was gathered into workers.
    fn finish(self: Box<Self>, diags: &mut DiagnosticSink) -> (Vec<Worker>, ImportStats);
    /// About how many bytes of memory the parser holds (what it has gathered and its buffers).
    fn held_bytes(&self) -> usize;
    /// At the end of content, before [`finish`](Self::finish): what the file says about a
    /// failure (logs, error files and dumps; traces and step logs say nothing).
    fn take_failure(&mut self, _diags: &mut DiagnosticSink) -> Option<crate::failure::evidence::FileEvidence> {
        None
    }
}

/// The memory a vector's elements take (not what they point to).
pub(super) fn vec_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity().saturating_mul(size_of::<T>())
}

/// The job's rank count an input gives (`field` names where), kept when it is above the
/// worker's rank; a count no larger than the rank cannot be the job's, and is dropped with a
/// warning at `location`.
pub(super) fn world_size_above_rank(
    world_size: Option<u32>,
    rank: Option<u32>,
    field: &str,
    location: Option<Location>,
    diags: &mut DiagnosticSink,
) -> Option<u32> {
    world_size.filter(|&w| match rank {
        Some(r) if r >= w => {
            diags.push(Severity::Warning, location, format!("{field} {w} is not above its rank {r}; ignored"));
            false
        }
        _ => true,
    })
}

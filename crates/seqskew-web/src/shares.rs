//! How a job's files are shared among the workers that read them (see [`crate::worker`]).
//!
//! The analysis worker reads the files from the first on; each import worker, once it has
//! started, claims the last files nobody has claimed (one large file, or small ones up to
//! [`CLAIM_BYTES`]: each claim costs a round trip of messages), until the two ends meet. No
//! file waits while a worker is free, and an import worker that is slow to start (it loads and
//! compiles the bundle first) takes only what is left by then.

/// Jobs smaller than this are read by the analysis worker alone: starting an import worker
/// would cost about as much as it saves.
pub const SHARE_FROM_BYTES: u64 = 2 << 20;

/// Workers reading a job at most (the analysis worker counted): each import worker holds a
/// file's model in its own WebAssembly memory until it sends it back.
pub const MAX_IMPORT_WORKERS: usize = 8;

/// What one claim takes at most, unless its one file is larger: enough small files that the
/// round trip is paid once for many of them (4096 per-rank files of 64 KiB), little enough
/// that the workers' ends still meet near the middle.
pub const CLAIM_BYTES: u64 = 8 << 20;

/// Files one claim takes at most.
const CLAIM_FILES: usize = 256;

/// How many workers should read files of these sizes on `cores` cores: one, unless there are
/// several files and enough bytes to be worth starting others.
pub fn import_workers(sizes: &[u64], cores: usize) -> usize {
    let total: u64 = sizes.iter().sum();
    if sizes.len() < 2 || total < SHARE_FROM_BYTES {
        return 1;
    }
    cores.min(sizes.len()).clamp(1, MAX_IMPORT_WORKERS)
}

/// Which of a job's files the import workers have claimed, and how far they are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Claims {
    /// The job's files' sizes.
    sizes: Vec<u64>,
    /// Files from here on are claimed by import workers.
    end: usize,
    helpers: Vec<Helper>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Helper {
    /// The file it reads (its size) and the bytes it has read of it.
    reading: Option<(u64, u64)>,
    files_read: u32,
    bytes_read: u64,
    /// Its WebAssembly memory, as it last said.
    wasm_bytes: u64,
}

impl Claims {
    /// Files of these sizes, `helpers` import workers, none of them reading yet.
    pub fn new(sizes: Vec<u64>, helpers: usize) -> Self {
        Claims { end: sizes.len(), sizes, helpers: vec![Helper::default(); helpers] }
    }

    /// The files before this are the analysis worker's to read.
    pub fn end(&self) -> usize {
        self.end
    }

    /// Gives import worker `helper` (which is free) the last unclaimed files, if any are left
    /// after `reading` (the last file the analysis worker has started to read, never
    /// claimed): the last file, and the files before it while they stay within
    /// [`CLAIM_BYTES`] together.
    pub fn claim(&mut self, helper: usize, reading: usize) -> Option<std::ops::Range<usize>> {
        let h = self.helpers.get_mut(helper).filter(|h| h.reading.is_none())?;
        let last = self.end.checked_sub(1).filter(|&last| last > reading)?;
        let size = |i: usize| self.sizes.get(i).copied().unwrap_or(0);
        let (mut first, mut bytes) = (last, size(last));
        while first > reading + 1 && last - first + 1 < CLAIM_FILES && bytes + size(first - 1) <= CLAIM_BYTES {
            first -= 1;
            bytes += size(first);
        }
        h.reading = Some((bytes, 0));
        self.end = first;
        Some(first..last + 1)
    }

    /// Import worker `helper` has read this much of its files.
    pub fn read(&mut self, helper: usize, bytes: u64) {
        if let Some((size, done)) = self.helpers.get_mut(helper).and_then(|h| h.reading.as_mut()) {
            *done = bytes.min(*size);
        }
    }

    /// Import worker `helper` sent back `files` files (those it claimed, or none when it was
    /// only saying it has started), its memory being `wasm_bytes`; it is free.
    pub fn returned(&mut self, helper: usize, files: usize, wasm_bytes: u64) {
        if let Some(h) = self.helpers.get_mut(helper) {
            h.files_read += files as u32;
            h.bytes_read += h.reading.take().map_or(0, |(size, _)| size);
            h.wasm_bytes = h.wasm_bytes.max(wasm_bytes);
        }
    }

    /// Whether no import worker is reading.
    pub fn all_returned(&self) -> bool {
        self.helpers.iter().all(|h| h.reading.is_none())
    }

    /// Bytes the import workers have read, of files sent back and being read.
    pub fn bytes_read(&self) -> u64 {
        self.helpers.iter().map(|h| h.bytes_read + h.reading.map_or(0, |(_, done)| done)).sum()
    }

    /// The import workers' memory at its largest, summed.
    pub fn wasm_bytes(&self) -> u64 {
        self.helpers.iter().map(|h| h.wasm_bytes).sum()
    }

    /// Import workers that read at least one file.
    pub fn readers(&self) -> u32 {
        self.helpers.iter().filter(|h| h.files_read > 0).count() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn only_several_large_enough_files_are_shared() {
        let cases: [(&[u64], usize, usize); 7] = [
            (&[64 * MIB], 8, 1),
            (&[MIB / 2, MIB], 8, 1),
            (&[MIB, MIB], 8, 2),
            (&[MIB, MIB], 1, 1),
            (&[MIB, MIB, MIB], 2, 2),
            (&[MIB; 32], 64, MAX_IMPORT_WORKERS),
            (&[MIB; 4], 0, 1),
        ];
        for (sizes, cores, workers) in cases {
            assert_eq!(import_workers(sizes, cores), workers, "{} files, {cores} cores", sizes.len());
        }
    }

    #[test]
    fn import_workers_claim_large_files_from_the_back_one_at_a_time_never_the_file_being_read() {
        let sizes = [10 * MIB, 20 * MIB, 30 * MIB, 40 * MIB, 50 * MIB];
        let mut claims = Claims::new(sizes.to_vec(), 2);
        // The analysis worker reads file 0; the import workers take the last two.
        assert_eq!(claims.claim(0, 0), Some(4..5));
        assert_eq!(claims.claim(0, 0), None, "one claim at a time");
        assert_eq!(claims.claim(1, 0), Some(3..4));
        assert_eq!(claims.end(), 3);
        claims.read(0, 25 * MIB);
        claims.read(1, 99 * MIB);
        assert_eq!(claims.bytes_read(), 25 * MIB + 40 * MIB, "what was read, at most the files");
        claims.returned(1, 1, 300);
        assert_eq!(claims.bytes_read(), 25 * MIB + 40 * MIB);
        // The analysis worker has moved on to file 1: file 2 is the last one left.
        assert_eq!(claims.claim(1, 1), Some(2..3));
        claims.returned(1, 1, 200);
        assert_eq!(claims.claim(1, 1), None, "the analysis worker's file");
        assert!(!claims.all_returned());
        claims.returned(0, 1, 100);
        assert!(claims.all_returned());
        assert_eq!((claims.end(), claims.bytes_read(), claims.readers()), (2, (50 + 40 + 30) * MIB, 2));
        assert_eq!(claims.wasm_bytes(), 300 + 100, "each worker's largest");
    }

    #[test]
    fn small_files_are_claimed_many_at_a_time_up_to_the_bytes_and_never_up_to_the_file_being_read() {
        let small = 64 << 10;
        let mut claims = Claims::new(vec![small; 4096], 1);
        let per_claim = (CLAIM_BYTES / small) as usize;
        assert_eq!(claims.claim(0, 0), Some(4096 - per_claim..4096));
        claims.returned(0, per_claim, 0);
        assert_eq!(claims.bytes_read(), CLAIM_BYTES);
        // Tiny files: at most CLAIM_FILES at a time; and never the analysis worker's.
        let mut claims = Claims::new(vec![1; 1000], 1);
        assert_eq!(claims.claim(0, 0), Some(1000 - CLAIM_FILES..1000));
        claims.returned(0, CLAIM_FILES, 0);
        assert_eq!(claims.claim(0, 990 - CLAIM_FILES), Some(991 - CLAIM_FILES..1000 - CLAIM_FILES));
        // A large file ends a run of small ones.
        let mut claims = Claims::new(vec![1, 1, 64 * MIB, 1, 1], 1);
        assert_eq!(claims.claim(0, 0), Some(3..5));
        claims.returned(0, 2, 0);
        assert_eq!(claims.claim(0, 0), Some(2..3));
    }

    #[test]
    fn a_worker_that_only_started_has_read_nothing() {
        let mut claims = Claims::new(vec![5, 6], 3);
        claims.returned(2, 0, 10);
        assert_eq!(claims.claim(2, 0), Some(1..2));
        assert_eq!(claims.claim(0, 0), None);
        claims.returned(2, 1, 10);
        assert_eq!((claims.readers(), claims.bytes_read(), claims.end()), (1, 6, 1));
        assert!(Claims::new(Vec::new(), 1).claim(0, 0).is_none(), "no files, nothing to claim");
    }
}

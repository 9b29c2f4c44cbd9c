//! Independent work spread over the machine's cores in native builds, and run in order in
//! WebAssembly (the browser build has no threads). The result is the same either way, bit for
//! bit: each part is computed alone and the parts come back in order, so callers that sum do
//! so in the same order as before.

use std::ops::Range;

/// Splits `0..n` into contiguous ranges, one per core (none shorter than `min_len`), calls
/// `part` on each, and returns the results in order. One range (and no thread) when `n` is
/// small, when the machine has one core, or in WebAssembly.
pub fn parts<R: Send>(n: usize, min_len: usize, part: impl Fn(Range<usize>) -> R + Sync) -> Vec<R> {
    let ranges = split(n, cores().min(n / min_len.max(1)).max(1));
    run(&ranges, &part)
}

/// `f(i)` for each `i` in `0..n`, in order, spread over the cores in ranges of at least
/// `min_len`.
pub fn map<R: Send>(n: usize, min_len: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    parts(n, min_len, |range| range.map(&f).collect::<Vec<R>>()).into_iter().flatten().collect()
}

/// The fewest rows of `row_len` items each (a step's workers or slots) worth a thread of their
/// own: threads cost tens of microseconds to start. Only work that reads and computes more than
/// it allocates gains from them: building the table or the replay's slots on two threads was
/// slower, with page faults contending.
pub fn min_rows(row_len: usize) -> usize {
    (MIN_ITEMS_PER_THREAD / row_len.max(1)).max(1)
}

const MIN_ITEMS_PER_THREAD: usize = 1 << 16;

/// `0..n` in `k` contiguous ranges whose lengths differ by at most one.
fn split(n: usize, k: usize) -> Vec<Range<usize>> {
    let k = k.max(1);
    (0..k).map(|i| i * n / k..(i + 1) * n / k).collect()
}

#[cfg(not(target_arch = "wasm32"))]
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

#[cfg(target_arch = "wasm32")]
fn cores() -> usize {
    1
}

#[cfg(not(target_arch = "wasm32"))]
#[allow(clippy::disallowed_methods, reason = "the one place core uses threads: native builds only")]
fn run<R: Send>(ranges: &[Range<usize>], part: &(impl Fn(Range<usize>) -> R + Sync)) -> Vec<R> {
    let Some((first, rest)) = ranges.split_first() else { return Vec::new() };
    if rest.is_empty() {
        return vec![part(first.clone())];
    }
    std::thread::scope(|scope| {
        let others: Vec<_> = rest.iter().map(|r| scope.spawn(move || part(r.clone()))).collect();
        // This thread takes the first range rather than waiting idle.
        let mut out = vec![part(first.clone())];
        // A part that panicked panics here too, as it would have without threads.
        out.extend(others.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))));
        out
    })
}

#[cfg(target_arch = "wasm32")]
fn run<R: Send>(ranges: &[Range<usize>], part: &(impl Fn(Range<usize>) -> R + Sync)) -> Vec<R> {
    ranges.iter().map(|r| part(r.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_everything_once_in_order() {
        for (n, k) in [(0, 1), (1, 4), (10, 3), (4096, 2), (7, 7)] {
            let ranges = split(n, k);
            assert_eq!(ranges.len(), k);
            let flat: Vec<usize> = ranges.iter().cloned().flatten().collect();
            assert_eq!(flat, (0..n).collect::<Vec<_>>(), "n {n} k {k}");
        }
        assert_eq!(split(10, 3), [0..3, 3..6, 6..10]);
    }

    #[test]
    fn results_come_back_in_order_whatever_the_split() {
        let squares: Vec<u64> = (0..10_000u64).map(|i| i * i).collect();
        assert_eq!(map(10_000, 1, |i| (i as u64) * (i as u64)), squares);
        assert_eq!(map(10_000, 1_000_000, |i| (i as u64) * (i as u64)), squares);
        let lengths: usize = parts(10_000, 100, |r| r.len()).iter().sum();
        assert_eq!(lengths, 10_000);
        assert!(map(0, 1, |i| i).is_empty());
    }
}

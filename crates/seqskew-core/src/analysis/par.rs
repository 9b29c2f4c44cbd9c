//! Independent work spread over the machine's cores in native builds, and run in order in
//! WebAssembly (the browser build has no threads). The result is the same either way, bit for
//! bit: each part is computed alone and the parts come back in order, so callers that sum do
//! so in the same order as before.

use std::ops::Range;

/// Splits `0..n` into contiguous ranges, one per core (none shorter than `min_len`), calls
/// `part` on each, and returns the results in order. One range (and no thread) when `n` is
/// small, when the machine has one core, or in WebAssembly.
pub fn parts<R: Send>(n: usize, min_len: usize, part: impl Fn(Range<usize>) -> R + Sync) -> Vec<R> {
    let mut out: Vec<(Range<usize>, Option<R>)> = ranges(n, min_len).into_iter().map(|r| (r, None)).collect();
    each_mut(&mut out, |_, (range, result)| *result = Some(part(range.clone())));
    out.into_iter().filter_map(|(_, result)| result).collect()
}

/// The ranges [`parts`] splits `0..n` into.
pub fn ranges(n: usize, min_len: usize) -> Vec<Range<usize>> {
    split(n, cores().min(n / min_len.max(1)).max(1))
}

/// `f(i, &mut items[i])` for every item, the items spread over the cores in contiguous runs.
/// For work whose output the caller allocated: in its own thread, where freed memory may wait
/// to be reused, while the pages that the first writes fault in are faulted in on every core.
pub fn each_mut<T: Send>(items: &mut [T], f: impl Fn(usize, &mut T) + Sync) {
    let mut runs: Vec<(usize, &mut [T])> = Vec::new();
    let mut rest = items;
    for range in ranges(rest.len(), 1) {
        let (run, tail) = std::mem::take(&mut rest).split_at_mut(range.len());
        runs.push((range.start, run));
        rest = tail;
    }
    run_each(runs, &|(first, run): (usize, &mut [T])| {
        for (i, item) in run.iter_mut().enumerate() {
            f(first + i, item);
        }
    });
}

/// `f(i)` for each `i` in `0..n`, in order, spread over the cores in ranges of at least
/// `min_len`.
pub fn map<R: Send>(n: usize, min_len: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    parts(n, min_len, |range| range.map(&f).collect::<Vec<R>>()).into_iter().flatten().collect()
}

/// The fewest rows of `row_len` items each (a step's workers or slots) worth a thread of their
/// own: threads cost tens of microseconds to start.
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

/// `work` on each of `items`: the first on this thread (rather than waiting idle), each other
/// on a thread of its own.
#[cfg(not(target_arch = "wasm32"))]
#[allow(clippy::disallowed_methods, reason = "the one place core uses threads: native builds only")]
fn run_each<T: Send>(items: Vec<T>, work: &(impl Fn(T) + Sync)) {
    let mut items = items.into_iter();
    let Some(first) = items.next() else { return };
    std::thread::scope(|scope| {
        let others: Vec<_> = items.map(|item| scope.spawn(move || work(item))).collect();
        work(first);
        // A part that panicked panics here too, as it would have without threads.
        for other in others {
            other.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
    });
}

#[cfg(target_arch = "wasm32")]
fn run_each<T: Send>(items: Vec<T>, work: &(impl Fn(T) + Sync)) {
    items.into_iter().for_each(work);
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
    fn every_item_is_worked_on_once() {
        let mut items: Vec<(usize, u32)> = vec![(usize::MAX, 0); 1000];
        each_mut(&mut items, |i, item| {
            item.0 = i;
            item.1 += 1;
        });
        assert!(items.iter().enumerate().all(|(i, &(seen, times))| seen == i && times == 1));
        each_mut(&mut [] as &mut [u8], |_, _| unreachable!("no items"));
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

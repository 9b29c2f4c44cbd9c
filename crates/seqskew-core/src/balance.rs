//! Partitioning documents into bins (ranks × micro-batches) by cost: the batching policies the
//! simulator offers and the rebalancing the what-if analysis proposes.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::analysis::stats::{indices_by_key, order_key};

/// How documents are dealt into bins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// In the given order, round-robin: what a random sampler does.
    RoundRobin,
    /// Sorted by cost, consecutive runs to each bin (length-bucketed batching).
    Sorted,
    /// Longest processing time first: each item to the least-loaded bin.
    Lpt,
    /// Karmarkar–Karp largest differencing, multi-way.
    KarmarkarKarp,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::RoundRobin => "round_robin",
            Method::Sorted => "sorted",
            Method::Lpt => "lpt",
            Method::KarmarkarKarp => "karmarkar_karp",
        }
    }
}

/// Assigns each item (by its cost) to one of `bins` bins; returns the bin of each item.
/// Deterministic: ties break by item index.
pub fn partition(costs: &[f64], bins: usize, method: Method) -> Vec<usize> {
    let bins = bins.max(1);
    match method {
        Method::RoundRobin => (0..costs.len()).map(|i| i % bins).collect(),
        Method::Sorted => sorted(costs, bins),
        Method::Lpt => lpt(costs, bins),
        Method::KarmarkarKarp => karmarkar_karp(costs, bins),
    }
}

/// Indices ordered by cost, largest first (index breaks ties).
fn by_cost_desc(costs: &[f64]) -> Vec<usize> {
    // Largest first is the smallest complemented key.
    indices_by_key(costs.iter().map(|&c| !order_key(c)))
}

fn cost_of(costs: &[f64], i: usize) -> f64 {
    costs.get(i).copied().unwrap_or(0.0)
}

fn sorted(costs: &[f64], bins: usize) -> Vec<usize> {
    let order = by_cost_desc(costs);
    let per_bin = order.len().div_ceil(bins).max(1);
    let mut out = vec![0; costs.len()];
    for (rank, &i) in order.iter().enumerate() {
        if let Some(slot) = out.get_mut(i) {
            *slot = (rank / per_bin).min(bins - 1);
        }
    }
    out
}

/// A bin's load in a min-heap (smallest load first, then lowest index).
#[derive(PartialEq)]
struct Load(f64, usize);

impl Eq for Load {}
impl PartialOrd for Load {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Load {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

fn lpt(costs: &[f64], bins: usize) -> Vec<usize> {
    let mut heap: BinaryHeap<Load> = (0..bins).map(|b| Load(0.0, b)).collect();
    let mut out = vec![0; costs.len()];
    for i in by_cost_desc(costs) {
        // The least-loaded bin takes the item, in place: one sift instead of a pop and a push
        // (no two bins compare equal, so the bins are taken in the same order).
        if let Some(mut least) = heap.peek_mut() {
            if let Some(slot) = out.get_mut(i) {
                *slot = least.1;
            }
            least.0 += cost_of(costs, i);
        }
    }
    out
}

/// Karmarkar–Karp's work grows with items × bins. Beyond this many, [`partition`] deals by LPT
/// instead, which with many items per bin comes within a hair of KK anyway.
const KK_MAX_WORK: usize = 1 << 16;

/// Whether [`Method::KarmarkarKarp`] really runs KK for this many items and bins.
pub fn karmarkar_karp_is_tractable(items: usize, bins: usize) -> bool {
    items.saturating_mul(bins) <= KK_MAX_WORK
}

/// One subset of a partial partition: its sum and its items, a linked list through `next`
/// (so that joining two subsets is O(1)).
#[derive(Clone, Copy)]
struct Subset {
    sum: f64,
    head: usize,
    tail: usize,
}

/// A partial partition into `bins` subsets, of which only the non-empty ones are stored,
/// heaviest first (the rest are empty and implicitly last).
struct Partial {
    subsets: Vec<Subset>,
    spread: f64,
    /// Creation order: equal spreads merge oldest first, so the result is deterministic.
    id: usize,
}

impl Partial {
    fn new(subsets: Vec<Subset>, bins: usize, id: usize) -> Self {
        let max = subsets.first().map_or(0.0, |s| s.sum);
        let min = if subsets.len() < bins { 0.0 } else { subsets.last().map_or(0.0, |s| s.sum) };
        Partial { subsets, spread: max - min, id }
    }
}

impl PartialEq for Partial {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Partial {}
impl PartialOrd for Partial {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Partial {
    fn cmp(&self, other: &Self) -> Ordering {
        self.spread.total_cmp(&other.spread).then(other.id.cmp(&self.id))
    }
}

/// Multi-way largest differencing: start with each item alone in a k-way partial partition;
/// repeatedly merge the two partials with the largest spread, pairing the heaviest subset of
/// one with the lightest of the other.
fn karmarkar_karp(costs: &[f64], bins: usize) -> Vec<usize> {
    if !karmarkar_karp_is_tractable(costs.len(), bins) {
        return lpt(costs, bins);
    }
    let mut next: Vec<usize> = (0..costs.len()).collect();
    let mut heap: BinaryHeap<Partial> = (0..costs.len())
        .map(|i| Partial::new(vec![Subset { sum: cost_of(costs, i), head: i, tail: i }], bins, i))
        .collect();
    let mut id = costs.len();
    while heap.len() > 1 {
        let (Some(a), Some(b)) = (heap.pop(), heap.pop()) else { break };
        // Subset i of the result joins a's i-th heaviest with b's i-th lightest (of all `bins`,
        // empty ones included): only the pairs with a non-empty side are stored.
        let b_from = bins.saturating_sub(b.subsets.len());
        let mut merged: Vec<Subset> = (0..a.subsets.len())
            .chain(a.subsets.len().max(b_from)..bins)
            .filter_map(|i| {
                let x = a.subsets.get(i).copied();
                let y = i
                    .checked_sub(b_from)
                    .and_then(|j| b.subsets.len().checked_sub(j + 1))
                    .and_then(|j| b.subsets.get(j).copied());
                match (x, y) {
                    (Some(x), Some(y)) => {
                        if let Some(link) = next.get_mut(x.tail) {
                            *link = y.head;
                        }
                        Some(Subset { sum: x.sum + y.sum, head: x.head, tail: y.tail })
                    }
                    (x, y) => x.or(y),
                }
            })
            .collect();
        merged.sort_by(|x, y| y.sum.total_cmp(&x.sum));
        heap.push(Partial::new(merged, bins, id));
        id += 1;
    }
    let mut out = vec![0; costs.len()];
    for (b, subset) in heap.pop().map(|p| p.subsets).unwrap_or_default().into_iter().enumerate() {
        let mut i = subset.head;
        loop {
            if let Some(slot) = out.get_mut(i) {
                *slot = b;
            }
            match next.get(i) {
                Some(&n) if i != subset.tail && n != i => i = n,
                _ => break,
            }
        }
    }
    out
}

/// The items of each bin under an assignment, in item order.
pub fn members(assignment: &[usize], bins: usize) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); bins.max(1)];
    for (i, &b) in assignment.iter().enumerate() {
        if let Some(bin) = out.get_mut(b) {
            bin.push(i);
        }
    }
    out
}

/// The load of each bin under an assignment.
pub fn loads(costs: &[f64], assignment: &[usize], bins: usize) -> Vec<f64> {
    let mut out = vec![0.0; bins.max(1)];
    for (&c, &b) in costs.iter().zip(assignment) {
        if let Some(slot) = out.get_mut(b) {
            *slot += c;
        }
    }
    out
}

/// max / mean load: 1.0 is perfect balance.
pub fn imbalance(loads: &[f64]) -> f64 {
    let max = loads.iter().copied().fold(0.0, f64::max);
    let mean = loads.iter().sum::<f64>() / loads.len().max(1) as f64;
    if mean > 0.0 { max / mean } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quadratic(lengths: &[f64]) -> Vec<f64> {
        lengths.iter().map(|l| 256.0 * l + l * l).collect()
    }

    #[test]
    fn balancers_beat_round_robin_on_heavy_tails() {
        let lengths: Vec<f64> = (0..64).map(|i| if i % 8 == 0 { 4000.0 } else { 100.0 + f64::from(i) * 7.0 }).collect();
        let costs = quadratic(&lengths);
        let ratio = |m| imbalance(&loads(&costs, &partition(&costs, 8, m), 8));
        let (rr, lpt, kk) = (ratio(Method::RoundRobin), ratio(Method::Lpt), ratio(Method::KarmarkarKarp));
        assert!(rr > 1.5, "round robin {rr}");
        assert!(lpt < 1.05 && kk < 1.05, "lpt {lpt} kk {kk}");
        assert!(ratio(Method::Sorted) > 1.5, "sorted buckets put all long documents together");
    }

    #[test]
    fn karmarkar_karp_solves_the_classic_two_way_case() {
        // {8,7,6,5,4}: KK finds 15/15 where greedy LPT gives 17/13.
        let costs = [8.0, 7.0, 6.0, 5.0, 4.0];
        let kk = loads(&costs, &partition(&costs, 2, Method::KarmarkarKarp), 2);
        assert!((kk[0] - kk[1]).abs() <= 2.0, "{kk:?}");
        assert_eq!(partition(&[], 3, Method::KarmarkarKarp), Vec::<usize>::new());
    }

    #[test]
    fn karmarkar_karp_beats_lpt_with_few_items_per_bin() {
        // 20 items into 8 bins, none dominant, 50 draws: KK's spread is the smaller every time.
        for seed in 0..50u64 {
            let mut x = seed * 7919 + 1;
            let costs: Vec<f64> = (0..20)
                .map(|_| {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    1000.0 + (x >> 40) as f64 / f64::from(1 << 24) * 2000.0
                })
                .collect();
            let ratio = |m| imbalance(&loads(&costs, &partition(&costs, 8, m), 8));
            let (lpt, kk) = (ratio(Method::Lpt), ratio(Method::KarmarkarKarp));
            assert!(kk < lpt, "seed {seed}: kk {kk} lpt {lpt}");
        }
        // More bins than items: each item alone.
        let few = partition(&[5.0, 4.0, 3.0, 2.0, 1.0], 8, Method::KarmarkarKarp);
        let mut used = few.clone();
        used.sort_unstable();
        used.dedup();
        assert_eq!(used.len(), 5, "{few:?}");
    }

    #[test]
    fn karmarkar_karp_beyond_its_budget_is_lpt() {
        let costs: Vec<f64> = (0..5000).map(|i| f64::from(i % 97)).collect();
        assert!(!karmarkar_karp_is_tractable(costs.len(), 4096));
        assert_eq!(partition(&costs, 4096, Method::KarmarkarKarp), partition(&costs, 4096, Method::Lpt));
    }

    #[test]
    fn every_item_gets_a_valid_bin() {
        let costs: Vec<f64> = (0..37).map(|i| f64::from(i % 5)).collect();
        for m in [Method::RoundRobin, Method::Sorted, Method::Lpt, Method::KarmarkarKarp] {
            let a = partition(&costs, 6, m);
            assert_eq!(a.len(), 37);
            assert!(a.iter().all(|&b| b < 6), "{m:?}");
        }
    }
}

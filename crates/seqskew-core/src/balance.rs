//! Partitioning documents into bins (ranks × micro-batches) by cost: the batching policies the
//! simulator offers and the rebalancing the what-if analysis proposes.

use std::cell::OnceCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::order_keys::{indices_by_key, order_key};

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
    Items::new(costs).partition(bins, method)
}

/// Items to deal several ways: their costs, and the order sorted dealing and LPT take them in,
/// sorted once for all the ways that need it (the what-if deals each step's documents by
/// several methods).
pub struct Items<'a> {
    costs: &'a [f64],
    largest_first: OnceCell<Vec<usize>>,
}

impl<'a> Items<'a> {
    pub fn new(costs: &'a [f64]) -> Self {
        Items { costs, largest_first: OnceCell::new() }
    }

    /// [`partition`] of these items.
    pub fn partition(&self, bins: usize, method: Method) -> Vec<usize> {
        let bins = bins.max(1);
        match method {
            Method::RoundRobin => (0..self.costs.len()).map(|i| i % bins).collect(),
            Method::Sorted => self.sorted(bins),
            Method::Lpt => self.lpt(bins),
            Method::KarmarkarKarp if !karmarkar_karp_is_tractable(self.costs.len(), bins) => self.lpt(bins),
            Method::KarmarkarKarp => karmarkar_karp(self.costs, bins),
        }
    }

    /// Indices ordered by cost, largest first (index breaks ties).
    fn largest_first(&self) -> &[usize] {
        // Largest first is the smallest complemented key.
        self.largest_first.get_or_init(|| indices_by_key(self.costs.iter().map(|&c| !order_key(c))))
    }

    fn sorted(&self, bins: usize) -> Vec<usize> {
        let order = self.largest_first();
        let per_bin = order.len().div_ceil(bins).max(1);
        let mut out = vec![0; self.costs.len()];
        for (rank, &i) in order.iter().enumerate() {
            if let Some(slot) = out.get_mut(i) {
                *slot = (rank / per_bin).min(bins - 1);
            }
        }
        out
    }

    fn lpt(&self, bins: usize) -> Vec<usize> {
        let mut loads = LeastLoaded::new(bins);
        let mut out = vec![0; self.costs.len()];
        for &i in self.largest_first() {
            let least = loads.least();
            if let Some(slot) = out.get_mut(i) {
                *slot = least;
            }
            loads.add(least, cost_of(self.costs, i));
        }
        out
    }
}

fn cost_of(costs: &[f64], i: usize) -> f64 {
    costs.get(i).copied().unwrap_or(0.0)
}

/// The least-loaded of some bins (the lowest index among equals), as a winner tree: each
/// inner node holds the least of the bins below it, as one integer that orders by load, then
/// index. A bin's new load is settled on its way up to the root, one comparison with the
/// sibling a level, which compiles to conditional moves. (A binary heap's sift branches on
/// every comparison and mispredicts about half of them; LPT takes the least-loaded bin for
/// every document of every step the what-if re-deals.)
struct LeastLoaded {
    loads: Vec<f64>,
    /// Nodes `1..2 × leaves`: leaf `leaves + b` is bin `b` (the leaves past the last bin, up to
    /// a power of two, lose to every bin); node `n`'s children are `2n` and `2n + 1`.
    nodes: Vec<u128>,
    leaves: usize,
}

impl LeastLoaded {
    fn new(bins: usize) -> Self {
        let leaves = bins.max(1).next_power_of_two();
        let mut nodes = vec![u128::MAX; 2 * leaves];
        for (leaf, bin) in nodes.iter_mut().skip(leaves).zip(0..bins) {
            *leaf = Self::entry(0.0, bin);
        }
        for node in (1..leaves).rev() {
            let least = Self::least_child(&nodes, node);
            if let Some(n) = nodes.get_mut(node) {
                *n = least;
            }
        }
        LeastLoaded { loads: vec![0.0; bins], nodes, leaves }
    }

    /// A bin as the tree compares it: its load in `total_cmp`'s order, then its index.
    fn entry(load: f64, bin: usize) -> u128 {
        u128::from(order_key(load)) << 64 | bin as u128
    }

    fn least_child(nodes: &[u128], node: usize) -> u128 {
        let child = |n: usize| nodes.get(n).copied().unwrap_or(u128::MAX);
        child(2 * node).min(child(2 * node + 1))
    }

    fn least(&self) -> usize {
        // With one bin, node 1 is its leaf.
        self.nodes.get(1).map_or(0, |&n| n as u64 as usize)
    }

    fn add(&mut self, bin: usize, cost: f64) {
        let Some(load) = self.loads.get_mut(bin) else { return };
        *load += cost;
        let mut node = self.leaves + bin;
        let mut least = Self::entry(*load, bin);
        while node > 1 {
            if let Some(n) = self.nodes.get_mut(node) {
                *n = least;
            }
            least = least.min(self.nodes.get(node ^ 1).copied().unwrap_or(u128::MAX));
            node /= 2;
        }
        if let Some(root) = self.nodes.get_mut(1) {
            *root = least;
        }
    }
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
/// one with the lightest of the other. Only where [`karmarkar_karp_is_tractable`]: beyond,
/// [`Items::partition`] deals by LPT.
fn karmarkar_karp(costs: &[f64], bins: usize) -> Vec<usize> {
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

    /// LPT as defined: items largest first (lowest index among equals), each to the bin of
    /// least load (lowest index among equals), found by scanning every bin.
    fn lpt_by_scan(costs: &[f64], bins: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..costs.len()).collect();
        order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]).then(a.cmp(&b)));
        let mut loads = vec![0.0f64; bins];
        let mut out = vec![0; costs.len()];
        for i in order {
            let least = (0..bins).min_by(|&a, &b| loads[a].total_cmp(&loads[b]).then(a.cmp(&b))).unwrap();
            out[i] = least;
            loads[least] += costs[i];
        }
        out
    }

    #[test]
    fn lpt_takes_the_least_loaded_bin_lowest_first_among_equals() {
        // Ties everywhere (equal costs, equal loads), bin counts around powers of two, one bin,
        // more bins than items, and costs of every sign and size.
        let mut x = 7u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for bins in [1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 33, 100] {
            for items in [0, 1, 5, 40, 300] {
                let costs: Vec<f64> = (0..items)
                    .map(|_| match next() % 4 {
                        0 => 5.0,
                        1 => (next() % 10) as f64,
                        2 => (next() % 1_000_000) as f64 * 1e3,
                        _ => -((next() % 3) as f64),
                    })
                    .collect();
                assert_eq!(
                    partition(&costs, bins, Method::Lpt),
                    lpt_by_scan(&costs, bins),
                    "{bins} bins, {items} items"
                );
            }
        }
    }

    #[test]
    fn every_item_gets_a_valid_bin() {
        let costs: Vec<f64> = (0..37).map(|i| f64::from(i % 5)).collect();
        // Dealt several ways from one `Items` (its order sorted once), each way as alone.
        let items = Items::new(&costs);
        for m in [Method::RoundRobin, Method::Sorted, Method::Lpt, Method::KarmarkarKarp, Method::Sorted] {
            let a = items.partition(6, m);
            assert_eq!(a.len(), 37);
            assert!(a.iter().all(|&b| b < 6), "{m:?}");
            assert_eq!(a, partition(&costs, 6, m), "{m:?}");
        }
    }
}

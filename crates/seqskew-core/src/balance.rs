//! Partitioning documents into bins (ranks × micro-batches) by cost: the batching policies the
//! simulator offers and the rebalancing the what-if analysis proposes.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

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
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&a, &b| cost_of(costs, b).total_cmp(&cost_of(costs, a)).then(a.cmp(&b)));
    order
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
        if let Some(Load(load, b)) = heap.pop() {
            if let Some(slot) = out.get_mut(i) {
                *slot = b;
            }
            heap.push(Load(load + cost_of(costs, i), b));
        }
    }
    out
}

/// A partial partition: `bins` subsets, each with its sum and items, sorted by sum descending.
struct Partial {
    subsets: Vec<(f64, Vec<usize>)>,
}

impl Partial {
    fn spread(&self) -> f64 {
        let max = self.subsets.first().map_or(0.0, |s| s.0);
        let min = self.subsets.last().map_or(0.0, |s| s.0);
        max - min
    }
}

impl PartialEq for Partial {
    fn eq(&self, other: &Self) -> bool {
        self.spread() == other.spread()
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
        self.spread().total_cmp(&other.spread())
    }
}

/// Multi-way largest differencing: start with each item alone in a k-way partial partition;
/// repeatedly merge the two partials with the largest spread, pairing the heaviest subset of
/// one with the lightest of the other.
fn karmarkar_karp(costs: &[f64], bins: usize) -> Vec<usize> {
    let mut heap: BinaryHeap<Partial> = by_cost_desc(costs)
        .into_iter()
        .map(|i| {
            let mut subsets = vec![(0.0, Vec::new()); bins];
            if let Some(first) = subsets.first_mut() {
                *first = (cost_of(costs, i), vec![i]);
            }
            Partial { subsets }
        })
        .collect();
    while heap.len() > 1 {
        let (Some(a), Some(b)) = (heap.pop(), heap.pop()) else { break };
        let mut merged: Vec<(f64, Vec<usize>)> = a
            .subsets
            .into_iter()
            .zip(b.subsets.into_iter().rev())
            .map(|((sa, mut ia), (sb, ib))| {
                ia.extend(ib);
                (sa + sb, ia)
            })
            .collect();
        merged.sort_by(|x, y| y.0.total_cmp(&x.0));
        heap.push(Partial { subsets: merged });
    }
    let mut out = vec![0; costs.len()];
    if let Some(last) = heap.pop() {
        for (b, (_, items)) in last.subsets.into_iter().enumerate() {
            for i in items {
                if let Some(slot) = out.get_mut(i) {
                    *slot = b;
                }
            }
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
    fn every_item_gets_a_valid_bin() {
        let costs: Vec<f64> = (0..37).map(|i| f64::from(i % 5)).collect();
        for m in [Method::RoundRobin, Method::Sorted, Method::Lpt, Method::KarmarkarKarp] {
            let a = partition(&costs, 6, m);
            assert_eq!(a.len(), 37);
            assert!(a.iter().all(|&b| b < 6), "{m:?}");
        }
    }
}

//! What the lengths say of logged step times: a fit of step time ≈ c₀ + the heaviest shard's
//! a·tokens + b·Σ L² (every step waits for its costliest rank), and from it the step the same
//! data would take dealt evenly by cost.

use std::collections::{BTreeMap, BTreeSet};

use super::times::{Extremes, Interval};
use crate::analysis::costmodel::{self, Fit};
use crate::analysis::frame::SeqFeatures;
use crate::analysis::stats::{nonnegative_least_squares, spearman};
use crate::model::Job;

/// What one rank computed on in one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shard {
    pub rank: u32,
    pub features: SeqFeatures,
}

/// Every step's shards (the ranks whose lengths are known), by step, each step's in rank order.
pub fn shards(job: &Job) -> BTreeMap<u64, Vec<Shard>> {
    let mut by_step: BTreeMap<u64, Vec<Shard>> = BTreeMap::new();
    for worker in &job.workers {
        for step in worker.steps.iter().filter(|s| s.sequences.is_known()) {
            by_step
                .entry(step.step)
                .or_default()
                .push(Shard { rank: worker.rank, features: SeqFeatures::of(&step.sequences) });
        }
    }
    for shards in by_step.values_mut() {
        shards.sort_by_key(|s| s.rank);
    }
    by_step.retain(|_, shards| shards.len() >= 2);
    by_step
}

/// The fit and what it says of each interval it could use.
#[derive(Clone, Debug, PartialEq)]
pub struct DataFit {
    /// c₀, a (per token) and b (per token²) in nanoseconds; `per_doc` is 0.
    pub fit: Fit,
    /// Per usable interval: measured, predicted, and predicted with every shard at the mean
    /// cost, all per step.
    pub per_interval: Vec<IntervalCosts>,
    /// Spearman ρ of the measured step time with the heaviest shard's cost and with the mean
    /// shard's cost.
    pub rho_max: Option<f64>,
    pub rho_mean: Option<f64>,
    /// Per step with shards: the rank holding the costliest shard.
    pub heaviest: Vec<(u64, u32)>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalCosts {
    pub interval: Interval,
    pub predicted: f64,
    /// With every shard at the mean cost (what the heaviest shard is compared with; a
    /// document that alone costs more is left to [`outliers`]).
    pub balanced: f64,
}

/// Fits the intervals whose steps have shards (at least four such intervals), or `None`.
///
/// Which shard is the heaviest depends on a and b: start from the shard with the most tokens
/// and from the one with the largest Σ L², refit on the heaviest shards the fit names until they
/// stop changing, and keep the better fit.
pub fn fit(intervals: &[Interval], shards: &BTreeMap<u64, Vec<Shard>>) -> Option<DataFit> {
    let usable: Vec<Usable> = intervals
        .iter()
        .filter_map(|i| {
            let steps: Vec<(u64, &[Shard])> = shards.range(i.first..=i.last).map(|(&n, s)| (n, s.as_slice())).collect();
            (!steps.is_empty()).then_some((*i, steps))
        })
        .collect();
    if usable.len() < 4 {
        return None;
    }
    let best = [(1.0, 0.0), (0.0, 1.0)]
        .into_iter()
        .filter_map(|start| refine(&usable, start))
        .max_by(|a, b| a.r2.total_cmp(&b.r2))?;
    Some(describe(best, &usable))
}

/// An interval and its steps' shards.
type Usable<'a> = (Interval, Vec<(u64, &'a [Shard])>);

fn refine(usable: &[Usable], (mut a, mut b): (f64, f64)) -> Option<Fit> {
    let mut fit = None;
    let mut chosen: Vec<u32> = Vec::new();
    for _ in 0..8 {
        let heaviest: Vec<Vec<&Shard>> =
            usable.iter().map(|(_, steps)| steps.iter().filter_map(|(_, s)| heaviest(s, a, b)).collect()).collect();
        let ranks: Vec<u32> = heaviest.iter().flatten().map(|s| s.rank).collect();
        if ranks == chosen {
            break;
        }
        chosen = ranks;
        let mean = |steps: &[&Shard], value: fn(&Shard) -> f64| {
            steps.iter().map(|s| value(s)).sum::<f64>() / steps.len().max(1) as f64
        };
        let columns = vec![
            vec![1.0; usable.len()],
            heaviest.iter().map(|h| mean(h, |s| s.features.tokens)).collect(),
            heaviest.iter().map(|h| mean(h, |s| s.features.sum_sq)).collect(),
        ];
        let y: Vec<f64> = usable.iter().map(|(i, _)| i.step_ns).collect();
        let weights: Vec<f64> = usable.iter().map(|(i, _)| i.steps() as f64).collect();
        let (beta, r2) = nonnegative_least_squares(&columns, &y, &weights);
        let coefficient = |j: usize| beta.get(j).copied().unwrap_or(0.0);
        (a, b) = (coefficient(1), coefficient(2));
        fit = Some(Fit {
            c0: coefficient(0),
            per_doc: 0.0,
            per_token: a,
            per_token_sq: b,
            r2,
            quadratic_share: 0.0,
            samples: usable.len(),
        });
        if a <= 0.0 && b <= 0.0 {
            break;
        }
    }
    fit
}

/// The costliest shard under a·tokens + b·Σ L² (the lowest rank among equals).
fn heaviest(shards: &[Shard], a: f64, b: f64) -> Option<&Shard> {
    let cost = |s: &Shard| a * s.features.tokens + b * s.features.sum_sq;
    shards.iter().rev().max_by(|x, y| cost(x).total_cmp(&cost(y)))
}

fn describe(mut fit: Fit, usable: &[Usable]) -> DataFit {
    let cost = |s: &Shard| fit.per_token * s.features.tokens + fit.per_token_sq * s.features.sum_sq;
    let (mut quadratic, mut total) = (0.0, 0.0);
    let mut heaviest_of = Vec::new();
    let per_interval: Vec<IntervalCosts> = usable
        .iter()
        .map(|(interval, steps)| {
            let (mut max_cost, mut balanced) = (0.0, 0.0);
            for &(step, shards) in steps {
                let heavy = heaviest(shards, fit.per_token, fit.per_token_sq);
                if let Some(h) = heavy {
                    max_cost += cost(h);
                    quadratic += fit.per_token_sq * h.features.sum_sq;
                    total += cost(h);
                    heaviest_of.push((step, h.rank));
                }
                balanced += shards.iter().map(cost).sum::<f64>() / shards.len().max(1) as f64;
            }
            let n = steps.len().max(1) as f64;
            IntervalCosts { interval: *interval, predicted: fit.c0 + max_cost / n, balanced: fit.c0 + balanced / n }
        })
        .collect();
    fit.quadratic_share = if total > 0.0 { quadratic / total } else { 0.0 };
    let measured: Vec<f64> = per_interval.iter().map(|c| c.interval.step_ns).collect();
    let predicted: Vec<f64> = per_interval.iter().map(|c| c.predicted).collect();
    let mean: Vec<f64> = per_interval.iter().map(|c| c.balanced).collect();
    DataFit {
        fit,
        rho_max: spearman(&measured, &predicted).map(|c| c.r),
        rho_mean: spearman(&measured, &mean).map(|c| c.r),
        per_interval,
        heaviest: heaviest_of,
    }
}

/// Per step, the most the data could make its costliest rank take over the mean rank,
/// whatever the cost model: max(heaviest tokens / mean tokens, heaviest Σ L² / mean Σ L²)
/// (a non-negative mix of the two cannot be more uneven than the more uneven of them). The
/// mean over the steps, or `None` without shards.
pub fn data_imbalance_bound(shards: &BTreeMap<u64, Vec<Shard>>) -> Option<f64> {
    let ratio = |values: &mut dyn Iterator<Item = f64>| {
        let (max, sum, n) = values.fold((0.0f64, 0.0, 0usize), |(m, s, n), v| (m.max(v), s + v, n + 1));
        if sum > 0.0 { max * n as f64 / sum } else { 1.0 }
    };
    let bounds: Vec<f64> = shards
        .values()
        .map(|step| {
            ratio(&mut step.iter().map(|s| s.features.tokens)).max(ratio(&mut step.iter().map(|s| s.features.sum_sq)))
        })
        .collect();
    (!bounds.is_empty()).then(|| bounds.iter().sum::<f64>() / bounds.len() as f64)
}

/// What a forward-only cost difference costs a whole step, at the least: backward takes at
/// least as long as the forward pass (about twice in a transformer, the factor Megatron-LM's
/// FLOP count uses; 2.2× in this repo's CPU fixtures). A lower bound, so that the slowdown is
/// not overstated.
pub const FORWARD_TO_STEP: f64 = 2.0;

/// A cost model of one rank's own time, fitted on the straggler lines' slowest and fastest
/// rank of each interval against the lengths each drew over it.
#[derive(Clone, Debug, PartialEq)]
pub struct RankFit {
    /// Of the timed regions (Megatron-LM: the forward pass), per iteration.
    pub fit: Fit,
    /// Intervals whose slowest rank drew the costliest data by the fit, of those with lengths.
    pub slowest_drew_most: (usize, usize),
    /// Per step with shards: what its costliest rank costs the step beyond an even dealing
    /// ([`FORWARD_TO_STEP`] × the forward difference), nanoseconds.
    pub lost_per_step: BTreeMap<u64, f64>,
}

/// The per-rank fit, when at least two intervals with lengths name their slowest and fastest
/// rank (four samples) and the fit is usable.
pub fn rank_fit(extremes: &[Extremes], shards: &BTreeMap<u64, Vec<Shard>>) -> Option<RankFit> {
    let mean_of = |rank: u32, (first, last): (u64, u64)| {
        let drawn: Vec<SeqFeatures> = shards
            .range(first..=last)
            .filter_map(|(_, step)| step.iter().find(|s| s.rank == rank).map(|s| s.features))
            .collect();
        mean_features(&drawn)
    };
    let mut samples = Vec::new();
    let mut intervals = Vec::new();
    for e in extremes {
        let Some(steps) = e.steps else { continue };
        for (rank, ns) in [e.slowest, e.fastest] {
            if let Some(features) = mean_of(rank, steps) {
                samples.push((features, ns as f64));
            }
        }
        intervals.push((e.slowest.0, steps));
    }
    let fit = costmodel::fit(&samples).filter(Fit::usable)?;
    let mut drew_most = 0;
    let mut judged = 0;
    for &(slowest, (first, last)) in &intervals {
        let ranks: BTreeSet<u32> =
            shards.range(first..=last).flat_map(|(_, step)| step.iter().map(|s| s.rank)).collect();
        let costs: Vec<(u32, f64)> =
            ranks.iter().filter_map(|&r| mean_of(r, (first, last)).map(|f| (r, fit.own_cost(&f)))).collect();
        let top = costs.iter().max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        if let Some(&(rank, _)) = top {
            judged += 1;
            drew_most += usize::from(rank == slowest);
        }
    }
    let lost_per_step = shards
        .iter()
        .map(|(&step, shards)| {
            let costs: Vec<f64> = shards.iter().map(|s| fit.own_cost(&s.features)).collect();
            let max = costs.iter().copied().fold(0.0, f64::max);
            let mean = costs.iter().sum::<f64>() / costs.len().max(1) as f64;
            (step, FORWARD_TO_STEP * (max - mean).max(0.0))
        })
        .collect();
    Some(RankFit { fit, slowest_drew_most: (drew_most, judged), lost_per_step })
}

/// The mean of what a rank drew over several steps, or `None` for none.
fn mean_features(drawn: &[SeqFeatures]) -> Option<SeqFeatures> {
    let n = drawn.len();
    if n == 0 {
        return None;
    }
    let mean = |value: fn(&SeqFeatures) -> f64| drawn.iter().map(value).sum::<f64>() / n as f64;
    Some(SeqFeatures {
        known: true,
        documents: mean(|f| f.documents),
        tokens: mean(|f| f.tokens),
        max_len: drawn.iter().map(|f| f.max_len).fold(0.0, f64::max),
        sum_sq: mean(|f| f.sum_sq),
        quadratic: mean(|f| f.quadratic),
    })
}

/// The steps in which one document alone costs more than a rank's fair share under `fit` (no
/// dealing can even those out), of the steps with shards, and the longest such document.
pub fn outliers(shards: &BTreeMap<u64, Vec<Shard>>, fit: &Fit) -> (usize, usize, f64) {
    let mut count = 0;
    let mut longest_outlier = 0.0f64;
    for step in shards.values() {
        let fair = step.iter().map(|s| fit.own_cost(&s.features)).sum::<f64>() / step.len().max(1) as f64;
        let longest = step.iter().map(|s| s.features.max_len).fold(0.0, f64::max);
        if fit.document_cost(longest) > fair {
            count += 1;
            longest_outlier = longest_outlier.max(longest);
        }
    }
    (count, shards.len(), longest_outlier)
}

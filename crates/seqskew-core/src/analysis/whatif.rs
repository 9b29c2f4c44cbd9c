//! What if each global batch had been dealt differently? With known lengths, re-partition every
//! step's documents across data-parallel ranks (and their micro-batches) by the fitted cost,
//! predict each pass from the model, and replay the step.

use super::costmodel::Fit;
use super::frame::Frame;
use super::par;
use super::replay::replay_step;
use super::signals::{LengthSums, features_of};
use super::slots::{StepSlots, Steps};
use std::collections::BTreeSet;

use crate::balance::{Items, Method, karmarkar_karp_is_tractable, members, partition};
use crate::model::Job;

/// One method's prediction over the analysed steps.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    pub method: &'static str,
    /// Summed replayed step time.
    pub total: f64,
    /// Mean over steps of max/mean predicted compute across ranks.
    pub imbalance: f64,
}

/// The result: a prediction per method (the first is the current assignment) and whether one
/// document alone outweighs a rank's fair share.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WhatIfs {
    pub predictions: Vec<Prediction>,
    /// The steps the predictions sum over.
    pub steps: usize,
    /// (step, longest document, its cost / a rank's mean cost) where a single document exceeds
    /// a rank's share.
    pub outlier: Option<(u64, u32, f64)>,
}

/// About how many documents the what-if re-deals, at most; and the fewest and most steps it
/// samples (enough for a mean, not so many that big jobs wait).
const SAMPLED_DOCUMENTS: usize = 1 << 17;
const MIN_SAMPLED_STEPS: usize = 16;
const MAX_SAMPLED_STEPS: usize = 64;

const METHODS: [(&str, Option<Method>, bool); 5] = [
    ("current", None, false),
    ("sorted", Some(Method::Sorted), false),
    ("token_balanced", Some(Method::Lpt), true),
    ("lpt", Some(Method::Lpt), false),
    ("karmarkar_karp", Some(Method::KarmarkarKarp), false),
];

/// Per data-parallel rank, the first first-stage worker whose sequences `step` knows: the
/// worker whose documents stand for the replica's.
fn replica_workers(frame: &Frame, step: usize) -> Vec<Option<usize>> {
    let mut first = vec![None; frame.dp_size];
    let row = frame.row(step);
    for (wi, slot) in frame.slots.iter().enumerate() {
        if slot.stage == 0
            && row.present.get(wi).copied().unwrap_or(false)
            && row.seq.known(wi)
            && let Some(f) = first.get_mut(slot.dp).filter(|f| f.is_none())
        {
            *f = Some(wi);
        }
    }
    first
}

/// Worker `wi`'s documents in one step: per micro-batch (one bin when unknown).
fn replica_documents(job: &Job, frame: &Frame, step: usize, wi: usize) -> Option<Vec<Vec<u32>>> {
    let number = frame.steps.get(step).copied()?;
    let worker = job.workers.get(wi)?;
    let steps = &worker.steps;
    // The first of the worker's steps with that number, as the table took it: where a worker
    // has every step, the table's own index (a search would read a dozen cold steps).
    let at = match steps.get(step) {
        Some(s)
            if s.step == number
                && step.checked_sub(1).is_none_or(|i| steps.get(i).is_some_and(|p| p.step < number)) =>
        {
            step
        }
        _ => steps.partition_point(|s| s.step < number),
    };
    let ws = steps.get(at).filter(|s| s.step == number)?;
    let per_mb: Vec<Vec<u32>> = worker.micro_batches_of(ws).iter().map(|m| m.sequences.lengths.clone()).collect();
    if !per_mb.is_empty() && per_mb.iter().all(|l| !l.is_empty()) {
        Some(per_mb)
    } else {
        let all = worker.step_documents(ws);
        (!all.is_empty()).then(|| vec![all])
    }
}

/// The step whose longest document most outweighs a rank's fair share of the step's cost
/// (over all steps: from each replica's sequence features, no document lists needed).
fn outlier(frame: &Frame, fit: &Fit) -> Option<(u64, u32, f64)> {
    // Each step on every core; the first of the worst wins, as in one pass.
    let per_step = par::map(frame.steps.len(), par::min_rows(frame.slots.len()), |si| {
        let step = frame.steps.get(si).copied()?;
        let mut seen = vec![false; frame.dp_size];
        let (mut total, mut longest) = (0.0, 0.0f64);
        let row = frame.row(si);
        for (wi, slot) in frame.slots.iter().enumerate() {
            let present = row.present.get(wi).copied().unwrap_or(false);
            if !(present && slot.stage == 0 && row.seq.known(wi)) {
                continue;
            }
            let Some(first) = seen.get_mut(slot.dp).filter(|s| !**s) else { continue };
            *first = true;
            let f = &row.seq.get(wi);
            total += fit.per_doc * f.documents + fit.per_token * f.tokens + fit.per_token_sq * f.sum_sq;
            longest = longest.max(f.max_len);
        }
        let fair = total / frame.dp_size.max(1) as f64;
        let ratio = fit.document_cost(longest) / fair;
        (fair > 0.0 && ratio > 1.0).then_some((step, longest as u32, ratio))
    });
    let mut worst: Option<(u64, u32, f64)> = None;
    for candidate in per_step.into_iter().flatten() {
        if worst.is_none_or(|w| candidate.2 > w.2) {
            worst = Some(candidate);
        }
    }
    worst
}

pub fn what_ifs(job: &Job, frame: &Frame, steps: &impl Steps, fit: &Fit) -> WhatIfs {
    let replicas_of = |si: usize| -> Option<Vec<Vec<Vec<u32>>>> {
        replica_workers(frame, si).into_iter().map(|wi| replica_documents(job, frame, si, wi?)).collect()
    };
    // Every step re-deals all its documents several times: on big jobs, an evenly spaced
    // sample of steps (the stride is set by the first step with documents).
    let Some((first, documents)) = (0..steps.count())
        .find_map(|si| replicas_of(si).map(|r| (si, r.iter().flatten().map(Vec::len).sum::<usize>().max(1))))
    else {
        return WhatIfs::default();
    };
    let affordable = (SAMPLED_DOCUMENTS / documents).clamp(MIN_SAMPLED_STEPS, MAX_SAMPLED_STEPS);
    let every = steps.count().saturating_sub(first).div_ceil(affordable).max(1);
    let sampled: Vec<usize> = (first..steps.count()).step_by(every).collect();
    // The sampled steps are independent: re-dealt on every core, summed in step order.
    let per_step = par::map(sampled.len(), 1, |i| {
        let si = sampled.get(i).copied()?;
        let mut step = StepSlots::default();
        steps.fill(si, &mut step);
        step_what_ifs(replicas_of(si)?, &step, frame.dp_size, fit)
    });
    let mut totals = vec![0.0; METHODS.len()];
    let mut imbalance = vec![0.0; METHODS.len()];
    let mut skipped = BTreeSet::new();
    let mut counted = 0usize;
    for methods in per_step.iter().flatten() {
        for (mi, m) in methods.iter().enumerate() {
            match (m, totals.get_mut(mi), imbalance.get_mut(mi)) {
                (Some((total, imb)), Some(t), Some(x)) => {
                    *t += total;
                    *x += imb;
                }
                _ => {
                    skipped.insert(mi);
                }
            }
        }
        counted += 1;
    }
    if counted == 0 {
        return WhatIfs::default();
    }
    // A method that could not run on every step predicts nothing.
    let predictions = METHODS
        .iter()
        .zip(totals.iter().zip(&imbalance))
        .enumerate()
        .filter(|(mi, _)| !skipped.contains(mi))
        .map(|(_, x)| x)
        .map(|((name, _, _), (&total, &imb))| Prediction { method: name, total, imbalance: imb / counted as f64 })
        .collect();
    WhatIfs { predictions, steps: counted, outlier: outlier(frame, fit) }
}

/// One step's documents (per replica, per micro-batch) re-dealt by each method: its replayed
/// step time and imbalance, `None` for a method that cannot run on it; `None` in all when the
/// step has no documents.
fn step_what_ifs(
    replicas: Vec<Vec<Vec<u32>>>,
    step: &StepSlots,
    dp_size: usize,
    fit: &Fit,
) -> Option<Vec<Option<(f64, f64)>>> {
    let doc_cost = |l: u32| fit.document_cost(f64::from(l)).max(1.0);
    let micro_batches = replicas.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let docs: Vec<u32> = replicas.iter().flatten().flatten().copied().collect();
    if docs.is_empty() {
        return None;
    }
    let costs: Vec<f64> = docs.iter().map(|&l| doc_cost(l)).collect();
    let tokens: Vec<f64> = docs.iter().map(|&l| f64::from(l)).collect();
    // Each key's order sorted once for all the methods that deal by it.
    let (cost_items, token_items) = (Items::new(&costs), Items::new(&tokens));
    let bin_cost = |bin: &[u32]| fit.predict(&features_of(bin)).max(1.0);
    let current = PerRank::of(replicas.iter().map(|r| r.iter().map(|b| bin_cost(b))));
    let methods = METHODS
        .iter()
        .map(|(_, method, by_tokens)| {
            let dealt;
            let new = match method {
                None => &current,
                Some(Method::KarmarkarKarp) if !karmarkar_karp_is_tractable(docs.len(), dp_size) => return None,
                Some(m) => {
                    let (key, items) = if *by_tokens { (&tokens, &token_items) } else { (&costs, &cost_items) };
                    let ranks = items.partition(dp_size, *m);
                    dealt = if micro_batches == 1 {
                        one_bin_each(&docs, &ranks, dp_size, fit)
                    } else {
                        let document = |i: &usize| docs.get(*i).copied();
                        PerRank::of(members(&ranks, dp_size).into_iter().map(|mine| {
                            let mine_key: Vec<f64> = mine.iter().map(|&i| key.get(i).copied().unwrap_or(0.0)).collect();
                            members(&partition(&mine_key, micro_batches, *m), micro_batches).into_iter().map(
                                move |mb| {
                                    let bin: Vec<u32> =
                                        mb.iter().filter_map(|&j| mine.get(j).and_then(document)).collect();
                                    bin_cost(&bin)
                                },
                            )
                        }))
                    };
                    &dealt
                }
            };
            let per_rank: Vec<f64> = (0..new.len()).map(|d| new.get(d).iter().sum()).collect();
            Some((replay_step(&scaled(step, &current, new)), crate::balance::imbalance(&per_rank)))
        })
        .collect();
    Some(methods)
}

/// Each rank's predicted cost when its documents (`docs[i]` dealt to `ranks[i]`) form one bin:
/// their features summed in document order, as [`features_of`] the bin would.
fn one_bin_each(docs: &[u32], ranks: &[usize], dp_size: usize, fit: &Fit) -> PerRank {
    let mut bins = vec![LengthSums::new(); dp_size];
    for (&l, &r) in docs.iter().zip(ranks) {
        if let Some(bin) = bins.get_mut(r) {
            bin.add(l);
        }
    }
    PerRank::of(bins.iter().map(|bin| std::iter::once(fit.predict(&bin.features()).max(1.0))))
}

/// A number per micro-batch of each data-parallel rank, in one list.
#[derive(Clone, Debug, Default, PartialEq)]
struct PerRank {
    /// Where each rank's numbers start; one more entry than ranks.
    starts: Vec<usize>,
    values: Vec<f64>,
}

impl PerRank {
    fn of<R: IntoIterator<Item = f64>>(ranks: impl Iterator<Item = R>) -> Self {
        let mut out = PerRank { starts: vec![0], values: Vec::new() };
        for rank in ranks {
            out.values.extend(rank);
            out.starts.push(out.values.len());
        }
        out
    }

    fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    fn get(&self, d: usize) -> &[f64] {
        let (start, end) = (self.starts.get(d).copied().unwrap_or(0), self.starts.get(d + 1).copied().unwrap_or(0));
        self.values.get(start..end.max(start)).unwrap_or_default()
    }
}

/// The step with each replica's passes scaled by new/old predicted cost (per micro-batch where
/// both sides have the same micro-batches, else per replica).
fn scaled(step: &StepSlots, old: &PerRank, new: &PerRank) -> StepSlots {
    let mut out = step.clone();
    let passes = step.passes_per_slot();
    for ((p, d), _) in step.present_slots() {
        if d >= old.len() || d >= new.len() {
            continue;
        }
        let (o, n) = (old.get(d), new.get(d));
        let per_mb = passes == o.len() && o.len() == n.len() && o.len() > 1;
        let whole = n.iter().sum::<f64>() / o.iter().sum::<f64>().max(1.0);
        for (m, pass) in out.passes_mut((p, d)).iter_mut().enumerate() {
            let r = if per_mb {
                n.get(m).copied().unwrap_or(1.0) / o.get(m).copied().unwrap_or(1.0).max(1.0)
            } else {
                whole
            };
            *pass = (pass.0 * r, pass.1 * r);
        }
    }
    out
}

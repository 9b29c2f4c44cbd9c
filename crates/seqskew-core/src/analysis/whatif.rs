//! What if each global batch had been dealt differently? With known lengths, re-partition every
//! step's documents across data-parallel ranks (and their micro-batches) by the fitted cost,
//! predict each pass from the model, and replay the step.

use super::costmodel::Fit;
use super::frame::Frame;
use super::replay::{StepSlots, replay_step};
use super::signals::features_of;
use crate::balance::{Method, partition};
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
    /// (step, longest document, its cost / a rank's mean cost) where a single document exceeds
    /// a rank's share.
    pub outlier: Option<(u64, u32, f64)>,
}

const METHODS: [(&str, Option<Method>, bool); 5] = [
    ("current", None, false),
    ("sorted", Some(Method::Sorted), false),
    ("token_balanced", Some(Method::Lpt), true),
    ("lpt", Some(Method::Lpt), false),
    ("karmarkar_karp", Some(Method::KarmarkarKarp), false),
];

/// A data-parallel replica's documents in one step: per micro-batch (one bin when unknown).
fn replica_documents(job: &Job, frame: &Frame, step: usize, dp: usize) -> Option<Vec<Vec<u32>>> {
    let (wi, _) = frame
        .slots
        .iter()
        .enumerate()
        .find(|(wi, s)| s.dp == dp && s.stage == 0 && frame.cell(step, *wi).is_some_and(|c| c.seq.known))?;
    let (w, k) = frame.cell(step, wi)?.source;
    let ws = job.workers.get(w)?.steps.get(k)?;
    let per_mb: Vec<Vec<u32>> = ws.micro_batches.iter().map(|m| m.sequences.lengths.clone()).collect();
    if !per_mb.is_empty() && per_mb.iter().all(|l| !l.is_empty()) {
        Some(per_mb)
    } else if !ws.sequences.lengths.is_empty() {
        Some(vec![ws.sequences.lengths.clone()])
    } else {
        None
    }
}

pub fn what_ifs(job: &Job, frame: &Frame, steps: &[StepSlots], fit: &Fit) -> WhatIfs {
    let mut totals = vec![0.0; METHODS.len()];
    let mut imbalance = vec![0.0; METHODS.len()];
    let mut counted = 0usize;
    let mut outlier: Option<(u64, u32, f64)> = None;
    let doc_cost = |l: u32| fit.document_cost(f64::from(l)).max(1.0);
    for (si, step) in steps.iter().enumerate() {
        let replicas: Option<Vec<Vec<Vec<u32>>>> =
            (0..frame.dp_size).map(|d| replica_documents(job, frame, si, d)).collect();
        let Some(replicas) = replicas else { continue };
        let micro_batches = replicas.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let docs: Vec<u32> = replicas.iter().flatten().flatten().copied().collect();
        if docs.is_empty() {
            continue;
        }
        let costs: Vec<f64> = docs.iter().map(|&l| doc_cost(l)).collect();
        let bin_cost = |bin: &[u32]| fit.predict(&features_of(bin)).max(1.0);
        let current_cost: Vec<Vec<f64>> = replicas.iter().map(|r| r.iter().map(|b| bin_cost(b)).collect()).collect();
        let mean_rank = costs.iter().sum::<f64>() / frame.dp_size.max(1) as f64;
        if let Some((&longest, &c)) = docs.iter().zip(&costs).max_by(|a, b| a.1.total_cmp(b.1))
            && c > mean_rank
            && outlier.is_none_or(|o| c / mean_rank > o.2)
        {
            outlier = Some((frame.steps.get(si).copied().unwrap_or(0), longest, c / mean_rank));
        }
        for (mi, (_, method, by_tokens)) in METHODS.iter().enumerate() {
            let new_bins: Vec<Vec<Vec<u32>>> = match method {
                None => replicas.clone(),
                Some(m) => {
                    let key: Vec<f64> =
                        if *by_tokens { docs.iter().map(|&l| f64::from(l)).collect() } else { costs.clone() };
                    let ranks = partition(&key, frame.dp_size, *m);
                    (0..frame.dp_size)
                        .map(|d| {
                            let mine: Vec<usize> = (0..docs.len()).filter(|&i| ranks.get(i) == Some(&d)).collect();
                            let mine_key: Vec<f64> = mine.iter().map(|&i| key.get(i).copied().unwrap_or(0.0)).collect();
                            let mbs = partition(&mine_key, micro_batches, *m);
                            (0..micro_batches)
                                .map(|b| {
                                    mine.iter()
                                        .zip(&mbs)
                                        .filter(|(_, mb)| **mb == b)
                                        .filter_map(|(&i, _)| docs.get(i).copied())
                                        .collect()
                                })
                                .collect()
                        })
                        .collect()
                }
            };
            let new_cost: Vec<Vec<f64>> = new_bins.iter().map(|r| r.iter().map(|b| bin_cost(b)).collect()).collect();
            let predicted = scaled(step, &current_cost, &new_cost);
            if let Some(t) = totals.get_mut(mi) {
                *t += replay_step(&predicted);
            }
            let per_rank: Vec<f64> = new_cost.iter().map(|r| r.iter().sum()).collect();
            if let Some(x) = imbalance.get_mut(mi) {
                *x += crate::balance::imbalance(&per_rank);
            }
        }
        counted += 1;
    }
    if counted == 0 {
        return WhatIfs::default();
    }
    let predictions = METHODS
        .iter()
        .zip(totals.iter().zip(&imbalance))
        .map(|((name, _, _), (&total, &imb))| Prediction { method: name, total, imbalance: imb / counted as f64 })
        .collect();
    WhatIfs { predictions, outlier }
}

/// The step with each replica's passes scaled by new/old predicted cost (per micro-batch where
/// both sides have the same micro-batches, else per replica).
fn scaled(step: &StepSlots, old: &[Vec<f64>], new: &[Vec<f64>]) -> StepSlots {
    let mut out = step.clone();
    for row in &mut out.slots {
        for (d, slot) in row.iter_mut().enumerate() {
            let (Some(s), Some(o), Some(n)) = (slot.as_mut(), old.get(d), new.get(d)) else { continue };
            let per_mb = s.passes.len() == o.len() && o.len() == n.len() && o.len() > 1;
            let whole = n.iter().sum::<f64>() / o.iter().sum::<f64>().max(1.0);
            for (m, p) in s.passes.iter_mut().enumerate() {
                let r = if per_mb {
                    n.get(m).copied().unwrap_or(1.0) / o.get(m).copied().unwrap_or(1.0).max(1.0)
                } else {
                    whole
                };
                *p = (p.0 * r, p.1 * r);
            }
        }
    }
    out
}

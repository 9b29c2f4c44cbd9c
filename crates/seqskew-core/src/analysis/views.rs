//! What the app's views plot, derived once from the table and the replay: per-step series for
//! the scatter plots, relative work per worker and step for the heatmap, and per worker-step
//! points for the compute-versus-cost scatter. Compact: a 4096 × 1000 job is 4 M floats.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::costmodel::Fit;
use super::frame::{Cell, Frame};
use super::par;
use super::signals::Initiator;
use super::stats::mean;
use crate::model::Nanos;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepView {
    pub step: u64,
    /// Measured step time (the longest worker's), seconds.
    pub time_s: f64,
    /// The replayed ideal step, seconds.
    pub ideal_s: f64,
    /// Over the global batch: the longest document, the mean length, the largest shard Σ L²,
    /// the largest worker attention time (s), the tokens.
    pub max_len: f64,
    pub mean_len: f64,
    pub max_sum_sq: f64,
    pub max_attention_s: f64,
    pub tokens: f64,
    /// Index into `Views::workers` of the initiating worker.
    pub initiator: Option<usize>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Views {
    pub workers: Vec<String>,
    /// Worker ranks, parallel to `workers`.
    pub ranks: Vec<u32>,
    /// Pipeline stage of each worker.
    pub stages: Vec<u32>,
    pub steps: Vec<StepView>,
    /// Step-major: `heat[step * workers + worker]` = the worker's work / the step's mean work
    /// (NaN where the worker has no such step).
    pub heat: Vec<f32>,
    /// Per worker-step with known sequences: (predicted shard cost or Σ L², compute seconds).
    pub compute_vs_cost: Vec<(f32, f32)>,
    /// True when `compute_vs_cost` uses the fitted model (else raw Σ L²).
    pub cost_is_model: bool,
}

pub fn build(frame: &Frame, ideal_per_step: &[f64], fit: Option<&Fit>, initiators: &[Initiator]) -> Views {
    let usable = fit.filter(|f| f.usable());
    // Ranges of steps on every core, joined in order.
    let parts = par::parts(frame.steps.len(), par::min_rows(frame.slots.len()), |range| {
        step_views(frame, range, ideal_per_step, usable, initiators)
    });
    // The first part is taken whole (with one core, it is all of them), the others appended.
    let mut parts = parts.into_iter();
    let first = parts.next().unwrap_or_default();
    let (mut steps, mut heat, mut points) = (first.steps, first.heat, first.compute_vs_cost);
    for part in parts {
        steps.extend(part.steps);
        heat.extend(part.heat);
        points.extend(part.compute_vs_cost);
    }
    Views {
        workers: frame.slots.iter().map(|s| s.label.clone()).collect(),
        ranks: frame.slots.iter().map(|s| s.rank).collect(),
        stages: frame.slots.iter().map(|s| s.stage as u32).collect(),
        steps,
        heat,
        compute_vs_cost: points,
        cost_is_model: usable.is_some(),
    }
}

/// The per-step parts of the views for the steps in `range`.
fn step_views(
    frame: &Frame,
    range: Range<usize>,
    ideal_per_step: &[f64],
    usable: Option<&Fit>,
    initiators: &[Initiator],
) -> Views {
    let mut heat = Vec::with_capacity(range.len() * frame.slots.len());
    let mut steps = Vec::with_capacity(range.len());
    let mut points = Vec::new();
    for (si, &step) in frame.steps.iter().enumerate().take(range.end).skip(range.start) {
        let row = frame.row(si);
        let works: Vec<f64> = row.works().flatten().map(|w| w as f64).collect();
        let m = mean(&works);
        heat.extend(row.works().map(|w| w.map_or(f32::NAN, |w| if m > 0.0 { (w as f64 / m) as f32 } else { 1.0 })));
        let known: Vec<Cell> = row.cells().map(|(_, c)| c).filter(|c| c.seq.known).collect();
        let tokens: f64 = known.iter().map(|c| c.seq.tokens).sum();
        let documents: f64 = known.iter().map(|c| c.seq.documents).sum();
        for c in &known {
            let x = usable.map_or(c.seq.sum_sq, |f| f.predict(&c.seq) / 1e9);
            points.push((x as f32, (c.compute as f64 / 1e9) as f32));
        }
        let present = |column: &[Nanos]| -> Nanos {
            column.iter().zip(row.present).filter(|(_, p)| **p).map(|(&x, _)| x).max().unwrap_or(0)
        };
        steps.push(StepView {
            step,
            time_s: present(row.duration) as f64 / 1e9,
            ideal_s: ideal_per_step.get(si).copied().unwrap_or(0.0) / 1e9,
            max_len: known.iter().map(|c| c.seq.max_len).fold(0.0, f64::max),
            mean_len: if documents > 0.0 { tokens / documents } else { 0.0 },
            max_sum_sq: known.iter().map(|c| c.seq.sum_sq).fold(0.0, f64::max),
            max_attention_s: present(row.attention) as f64 / 1e9,
            tokens,
            initiator: initiators.iter().find(|i| i.step == step).map(|i| i.worker),
        });
    }
    Views { steps, heat, compute_vs_cost: points, ..Views::default() }
}

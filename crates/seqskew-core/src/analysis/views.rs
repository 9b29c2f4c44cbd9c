//! What the app's views plot, derived once from the table and the replay: per-step series for
//! the scatter plots, relative work per worker and step for the heatmap, and per worker-step
//! points for the compute-versus-cost scatter. Compact: a 4096 × 1000 job is 4 M floats.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::costmodel::Fit;
use super::frame::{Frame, SeqFeatures};
use super::par;
use super::signals::Initiator;
use super::stats::Mean;
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
    /// Per worker (parallel to `workers`): the last step it recorded and what it held then, so
    /// that a failure in the logs of the same job can say where each rank stopped.
    #[serde(default)]
    pub last_steps: Vec<LastStep>,
}

/// A worker's last recorded step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LastStep {
    pub step: u64,
    /// Its tokens and its longest document then (0 where the input does not say).
    pub tokens: f64,
    pub max_len: f64,
}

/// Each worker's last step with data, scanning rows from the last one.
fn last_steps(frame: &Frame) -> Vec<LastStep> {
    let mut last: Vec<Option<LastStep>> = vec![None; frame.slots.len()];
    let mut left = last.len();
    for (si, &step) in frame.steps.iter().enumerate().rev() {
        if left == 0 {
            break;
        }
        let row = frame.row(si);
        for (i, (slot, &present)) in last.iter_mut().zip(row.present).enumerate() {
            if slot.is_none() && present {
                let seq = row.seq.get(i);
                *slot = Some(LastStep { step, tokens: seq.tokens, max_len: seq.max_len });
                left -= 1;
            }
        }
    }
    last.into_iter().map(Option::unwrap_or_default).collect()
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
        last_steps: last_steps(frame),
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
    // The known cells' sequences and compute, per step (reused).
    let mut known: Vec<(SeqFeatures, Nanos)> = Vec::new();
    // Initiators are in step order: found with a cursor.
    let mut initiators = initiators.iter().peekable();
    for (si, &step) in frame.steps.iter().enumerate().take(range.end).skip(range.start) {
        let row = frame.row(si);
        let mut works = Mean::default();
        row.works().flatten().for_each(|w| works.add(w as f64));
        let m = works.get();
        heat.extend(row.works().map(|w| w.map_or(f32::NAN, |w| if m > 0.0 { (w as f64 / m) as f32 } else { 1.0 })));
        known.clear();
        let cells = row.present.iter().zip(row.compute).enumerate();
        known.extend(cells.filter(|&(i, (&p, _))| p && row.seq.known(i)).map(|(i, (_, &c))| (row.seq.get(i), c)));
        let tokens: f64 = known.iter().map(|(seq, _)| seq.tokens).sum();
        let documents: f64 = known.iter().map(|(seq, _)| seq.documents).sum();
        points.extend(known.iter().map(|(seq, compute)| {
            let x = usable.map_or(seq.sum_sq, |f| f.predict(seq) / 1e9);
            (x as f32, (*compute as f64 / 1e9) as f32)
        }));
        let present = |column: &[Nanos]| -> Nanos {
            column.iter().zip(row.present).filter(|(_, p)| **p).map(|(&x, _)| x).max().unwrap_or(0)
        };
        while initiators.next_if(|i| i.step < step).is_some() {}
        steps.push(StepView {
            step,
            time_s: present(row.duration) as f64 / 1e9,
            ideal_s: ideal_per_step.get(si).copied().unwrap_or(0.0) / 1e9,
            max_len: known.iter().map(|(seq, _)| seq.max_len).fold(0.0, f64::max),
            mean_len: if documents > 0.0 { tokens / documents } else { 0.0 },
            max_sum_sq: known.iter().map(|(seq, _)| seq.sum_sq).fold(0.0, f64::max),
            max_attention_s: present(row.attention) as f64 / 1e9,
            tokens,
            initiator: initiators.peek().filter(|i| i.step == step).map(|i| i.worker),
        });
    }
    Views { steps, heat, compute_vs_cost: points, ..Views::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{frame, signals};
    use crate::model::{Job, KindTotals, SequenceKnowledge, Sequences, SpanKind, Worker, WorkerStep};

    #[test]
    fn each_step_shows_its_batch_its_initiator_and_relative_work() {
        // Worker w computes (w + 1 + step) ms in steps 10..14; worker 2 skips step 12; only
        // worker 0 knows its lengths (one document of 100 × (step − 9) tokens).
        let step = |w: u64, s: u64| {
            let mut totals = KindTotals::default();
            totals.add(SpanKind::Compute, ((w + 1 + s) * 1_000_000) as i64);
            let sequences = if w == 0 {
                Sequences::from_lengths(SequenceKnowledge::Exact, vec![100 * (s as u32 - 9)])
            } else {
                Sequences::default()
            };
            WorkerStep { step: s, duration: totals.sum(), totals, sequences, ..WorkerStep::default() }
        };
        let job = Job {
            workers: (0..3)
                .map(|w| Worker {
                    rank: w as u32,
                    steps: (10..14).filter(|&s| w != 2 || s != 12).map(|s| step(w, s)).collect(),
                    ..Worker::default()
                })
                .collect(),
        };
        let f = frame::build(&job);
        let initiators = signals::initiators(&f);
        let v = build(&f, &[1e9; 4], None, &initiators);
        let per_step: Vec<(u64, Option<usize>, f64, f64)> =
            v.steps.iter().map(|s| (s.step, s.initiator, s.max_len, s.tokens)).collect();
        // The busiest worker initiates each step: worker 2, but worker 1 where 2 is missing.
        assert_eq!(
            per_step,
            [
                (10, Some(2), 100.0, 100.0),
                (11, Some(2), 200.0, 200.0),
                (12, Some(1), 300.0, 300.0),
                (13, Some(2), 400.0, 400.0)
            ]
        );
        // Step 12's work is 13 and 14 ms (mean 13.5); worker 2 has no cell there.
        let heat_12: Vec<f32> = v.heat.get(6..9).unwrap().to_vec();
        assert_eq!(heat_12.get(..2), Some(&[(13.0 / 13.5) as f32, (14.0 / 13.5) as f32][..]));
        assert!(heat_12.get(2).unwrap().is_nan());
        // One point per worker-step with known lengths: (Σ L², compute seconds).
        assert_eq!(v.compute_vs_cost, [(1e4, 0.011), (4e4, 0.012), (9e4, 0.013), (16e4, 0.014)]);
        assert_eq!(v.steps.first().map(|s| s.time_s), Some(0.013));
    }
}

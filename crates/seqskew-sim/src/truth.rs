//! What really happened in a simulated job: its causes and their share of the slowdown, the
//! ideal step time, the true document lengths. Written as `truth.json`.

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::engine::{Cause, SimStep};

/// A job is straggling when its steps take this much longer than the ideal (or more).
pub const STRAGGLING: f64 = 1.10;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CauseShare {
    pub cause: String,
    /// Fraction of the slowdown this cause accounts for: its steps with only it present, over the ideal.
    pub share: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TruthStep {
    pub step: u64,
    pub actual_s: f64,
    pub ideal_s: f64,
    /// Document lengths per (data-parallel rank, micro-batch): `[rank][mb][doc]`.
    pub documents: Vec<Vec<Vec<u32>>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Truth {
    pub schema: String,
    pub config: Config,
    /// The label: the largest cause, or `balanced` when the job does not straggle.
    pub primary: String,
    pub causes: Vec<CauseShare>,
    /// Mean actual step / mean ideal step.
    pub slowdown: f64,
    pub actual_step_s: f64,
    pub ideal_step_s: f64,
    pub steps: Vec<TruthStep>,
}

/// The truth of a finished simulation (its steps must have been simulated with truth on).
pub fn truth(config: &Config, steps: &[SimStep]) -> Truth {
    // The ideal run transfers in the job's median transfer time (as the diagnosis defines it),
    // not the distribution's: shift the replays that used the nominal time.
    let mut transfers: Vec<i64> = steps.iter().flat_map(|s| s.transfers.iter().copied()).collect();
    transfers.sort_unstable();
    // The median as the diagnosis takes it: the mean of the middle two for an even count.
    let middle = transfers.len() / 2;
    let median_transfer =
        match (transfers.len() % 2, transfers.get(middle), middle.checked_sub(1).and_then(|m| transfers.get(m))) {
            (1, Some(&m), _) => m,
            (_, Some(&hi), Some(&lo)) => (hi + lo) / 2,
            _ => 0,
        };
    let nominal = (config.comm.allreduce_ns * config.comm_slowdown) as i64;
    let shift = median_transfer - nominal;
    let actual: i64 = steps.iter().map(SimStep::duration).sum();
    let ideal: i64 = steps.iter().map(|s| s.ideal + shift).sum();
    let slowdown = if ideal > 0 { actual as f64 / ideal as f64 } else { 1.0 };
    // Each cause's gain: how much longer its steps are with only that cause present.
    let gains: Vec<f64> = Cause::ALL
        .iter()
        .enumerate()
        .map(|(i, c)| {
            // Every replay but the communication one keeps the nominal transfer, like `ideal`.
            let own_shift = if *c == Cause::Communication { shift } else { 0 };
            steps.iter().map(|s| (s.only.get(i).copied().unwrap_or(0) - s.ideal - own_shift).max(0) as f64).sum()
        })
        .collect();
    let total: f64 = gains.iter().sum();
    let mut causes: Vec<CauseShare> = Cause::ALL
        .iter()
        .zip(&gains)
        .filter(|(_, g)| **g > 0.0 && total > 0.0)
        .map(|(c, g)| CauseShare { cause: c.name().to_owned(), share: g / total })
        .filter(|c| c.share >= 0.05)
        .collect();
    causes.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.cause.cmp(&b.cause)));
    let primary = match causes.first() {
        Some(c) if slowdown >= STRAGGLING => c.cause.clone(),
        _ => "balanced".to_owned(),
    };
    let n = steps.len().max(1) as f64;
    Truth {
        schema: "seqskew.truth/1".to_owned(),
        config: config.clone(),
        primary,
        causes,
        slowdown,
        actual_step_s: actual as f64 / n / 1e9,
        ideal_step_s: ideal as f64 / n / 1e9,
        steps: steps
            .iter()
            .map(|s| TruthStep {
                step: s.number,
                actual_s: s.duration() as f64 / 1e9,
                ideal_s: (s.ideal + shift) as f64 / 1e9,
                documents: s.bins.chunks(config.micro_batches.max(1) as usize).map(<[Vec<u32>]>::to_vec).collect(),
            })
            .collect(),
    }
}

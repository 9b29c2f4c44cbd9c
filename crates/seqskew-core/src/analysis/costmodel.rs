//! The cost model: compute ≈ c₀ + c₁·documents + a·tokens + b·Σ L², fitted robustly (Huber
//! reweighting) with non-negative coefficients, per worker-step and per micro-batch.

use super::frame::SeqFeatures;
use super::stats::{evenly_spaced, median, nonnegative_least_squares};

/// A fitted model; coefficients in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Fit {
    pub c0: f64,
    pub per_doc: f64,
    pub per_token: f64,
    pub per_token_sq: f64,
    pub r2: f64,
    pub quadratic_share: f64,
    pub samples: usize,
}

impl Fit {
    pub fn predict(&self, f: &SeqFeatures) -> f64 {
        self.c0 + self.per_doc * f.documents + self.per_token * f.tokens + self.per_token_sq * f.quadratic
    }

    /// What `f` costs beyond the constant every sample pays: what differs between shards.
    pub fn own_cost(&self, f: &SeqFeatures) -> f64 {
        self.predict(f) - self.c0
    }

    /// The cost of one document of `len` tokens (the function a balancer should use).
    pub fn document_cost(&self, len: f64) -> f64 {
        self.per_doc + self.per_token * len + self.per_token_sq * len * len
    }

    /// Good enough to predict with.
    pub fn usable(&self) -> bool {
        self.samples >= 4 && self.r2 >= 0.3 && (self.per_token > 0.0 || self.per_token_sq > 0.0)
    }
}

/// Whether a fit can use a sample: its sequences known, its time positive.
pub fn usable_sample(features: &SeqFeatures, time: f64) -> bool {
    usable(features.known, time)
}

/// [`usable_sample`], from whether the sample's sequences are known.
pub fn usable(known: bool, time: f64) -> bool {
    known && time.is_finite() && time > 0.0
}

/// The samples a fit can use, at most about 2¹⁵ of them ([`evenly_spaced`]).
fn usable_samples(samples: impl Iterator<Item = (SeqFeatures, f64)> + Clone) -> Vec<(SeqFeatures, f64)> {
    evenly_spaced(samples.filter(|(f, y)| usable_sample(f, *y)))
}

/// Fits `y ≈ model(x)` over samples.
pub fn fit(samples: &[(SeqFeatures, f64)]) -> Option<Fit> {
    let samples = usable_samples(samples.iter().copied());
    if samples.len() < 4 {
        return None;
    }
    let columns = vec![
        vec![1.0; samples.len()],
        samples.iter().map(|s| s.0.documents).collect::<Vec<f64>>(),
        samples.iter().map(|s| s.0.tokens).collect(),
        samples.iter().map(|s| s.0.quadratic).collect(),
    ];
    let y: Vec<f64> = samples.iter().map(|s| s.1).collect();
    let mut weights = vec![1.0; y.len()];
    let mut result = nonnegative_least_squares(&columns, &y, &weights);
    // Huber reweighting: outliers (a stalled step, a noisy neighbour) pull the fit less.
    for _ in 0..3 {
        let residuals: Vec<f64> = (0..y.len())
            .map(|i| {
                let fit: f64 = columns.iter().zip(&result.0).map(|(c, b)| c.get(i).copied().unwrap_or(0.0) * b).sum();
                y.get(i).copied().unwrap_or(0.0) - fit
            })
            .collect();
        let abs: Vec<f64> = residuals.iter().map(|r| r.abs()).collect();
        let scale = 1.4826 * median(&abs);
        if scale <= 0.0 {
            break;
        }
        let k = 1.345 * scale;
        weights = abs.iter().map(|&r| if r <= k { 1.0 } else { k / r }).collect();
        result = nonnegative_least_squares(&columns, &y, &weights);
    }
    let (beta, r2) = result;
    let get = |i: usize| beta.get(i).copied().unwrap_or(0.0);
    let mut fit = Fit {
        c0: get(0),
        per_doc: get(1),
        per_token: get(2),
        per_token_sq: get(3),
        r2,
        quadratic_share: 0.0,
        samples: y.len(),
    };
    let predicted: f64 = samples.iter().map(|s| fit.predict(&s.0)).sum();
    let quadratic: f64 = samples.iter().map(|s| fit.per_token_sq * s.0.quadratic).sum();
    fit.quadratic_share = if predicted > 0.0 { quadratic / predicted } else { 0.0 };
    Some(fit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_a_known_cost_despite_an_outlier() {
        let mut samples: Vec<(SeqFeatures, f64)> = (0..40)
            .map(|i| {
                let docs = f64::from(2 + i % 5);
                let tokens = f64::from(1000 + i * 97 % 3000);
                let sum_sq = tokens * tokens / docs * (1.0 + f64::from(i % 3));
                let f = SeqFeatures { known: true, documents: docs, tokens, max_len: 0.0, sum_sq, quadratic: sum_sq };
                (f, 5e5 + 2e4 * docs + 300.0 * tokens + 0.05 * sum_sq)
            })
            .collect();
        samples.push((samples[0].0, samples[0].1 * 10.0));
        let fit = fit(&samples).unwrap();
        assert!((fit.per_token_sq - 0.05).abs() / 0.05 < 0.05, "{fit:?}");
        assert!(fit.usable() && fit.quadratic_share > 0.05, "{fit:?}");
    }
}

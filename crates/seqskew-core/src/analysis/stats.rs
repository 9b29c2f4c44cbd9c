//! Small, robust statistics: medians, rank correlations with confidence intervals, and a
//! non-negative least-squares fit for the cost model.

use crate::order_keys::{from_order_key, indices_by_key, order_key};

/// A statistic over four coefficients or one correlation is settled long before this many
/// samples: bigger jobs use an evenly spaced subset (over all steps and workers alike).
pub const MAX_SAMPLES: usize = 1 << 15;

/// The stride that keeps at most [`MAX_SAMPLES`] of `n` samples.
fn sample_stride(n: usize) -> usize {
    n.div_ceil(MAX_SAMPLES).max(1)
}

/// At most [`MAX_SAMPLES`] of the items at an even stride, the ones [`spearman`] would keep of
/// them all: counted first, so that a large job's samples are never all built.
pub fn evenly_spaced<T>(items: impl Iterator<Item = T> + Clone) -> Vec<T> {
    let mut sample = EvenSample::of(items.clone().count());
    items.for_each(|item| sample.offer(|| item));
    sample.taken()
}

/// The items [`evenly_spaced`] would take of `count` items, offered one at a time: one pass
/// over a large table can then fill several samples, each counted beforehand.
#[derive(Clone, Debug)]
pub struct EvenSample<T> {
    every: usize,
    offered: usize,
    taken: Vec<T>,
}

impl<T> EvenSample<T> {
    pub fn of(count: usize) -> Self {
        EvenSample { every: sample_stride(count), offered: 0, taken: Vec::with_capacity(count.min(MAX_SAMPLES)) }
    }

    /// The same sample, for items offered after the first `offered` of the `count` (which were
    /// offered to another): the parts, joined in order, are the whole sample.
    pub fn resumed(count: usize, offered: usize) -> Self {
        EvenSample { offered, ..EvenSample::of(count) }
    }

    /// Offers the next item (made only when it is taken).
    pub fn offer(&mut self, item: impl FnOnce() -> T) {
        if self.offered.is_multiple_of(self.every) {
            self.taken.push(item());
        }
        self.offered += 1;
    }

    pub fn taken(self) -> Vec<T> {
        self.taken
    }
}

/// Median of the values (mean of the two middle ones for even counts); 0 for none.
pub fn median(values: &[f64]) -> f64 {
    // Sized for them all: collecting a filter grows the keys by doubling, a dozen reallocations
    // for a median of thousands of values (every step's slots, twice).
    let mut keys: Vec<u64> = Vec::with_capacity(values.len());
    keys.extend(values.iter().filter(|x| x.is_finite()).map(|&x| order_key(x)));
    if keys.is_empty() {
        return 0.0;
    }
    // Selection, not a sort: medians of every worker-step's residual run in linear time.
    let (mid, odd) = (keys.len() / 2, keys.len() % 2 == 1);
    let (below, &mut upper, _) = keys.select_nth_unstable(mid);
    let upper = from_order_key(upper);
    if odd {
        upper
    } else {
        let lower = below.iter().max().map_or(upper, |&k| from_order_key(k));
        (lower + upper) / 2.0
    }
}

pub fn mean(values: &[f64]) -> f64 {
    let mut m = Mean::default();
    values.iter().for_each(|&x| m.add(x));
    m.get()
}

/// A mean taken as the values go by, none of them kept: the same as [`mean`] of them all.
#[derive(Clone, Copy, Debug)]
pub struct Mean {
    sum: f64,
    count: usize,
}

impl Default for Mean {
    fn default() -> Self {
        // Negative zero, as a float sum starts: then -0.0 + x is x for every x, zeros included.
        Mean { sum: -0.0, count: 0 }
    }
}

impl Mean {
    pub fn add(&mut self, x: f64) {
        self.sum += x;
        self.count += 1;
    }

    /// How many values were added.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The mean; 0 for none.
    pub fn get(&self) -> f64 {
        if self.count == 0 { 0.0 } else { self.sum / self.count as f64 }
    }
}

/// Coefficient of variation (standard deviation / mean); 0 when the mean is 0.
pub fn cv(values: &[f64]) -> f64 {
    let m = mean(values);
    if values.len() < 2 || m == 0.0 {
        return 0.0;
    }
    let var = values.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (values.len() - 1) as f64;
    var.sqrt() / m.abs()
}

/// Ranks with ties averaged (1-based).
fn ranks(values: &[f64]) -> Vec<f64> {
    // Equal values share their average rank, so their order among themselves does not matter.
    let order = indices_by_key(values.iter().map(|&v| order_key(v)));
    let mut out = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let value = order.get(i).and_then(|&k| values.get(k)).copied();
        let mut j = i;
        while j + 1 < order.len() && order.get(j + 1).and_then(|&k| values.get(k)).copied() == value {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in order.get(i..=j).unwrap_or_default() {
            if let Some(slot) = out.get_mut(k) {
                *slot = rank;
            }
        }
        i = j + 1;
    }
    out
}

/// How often each key occurs, most frequent first (equal counts by key).
pub fn tally<K: Ord + Copy>(keys: impl IntoIterator<Item = K>) -> Vec<(K, usize)> {
    let mut counts: std::collections::BTreeMap<K, usize> = std::collections::BTreeMap::new();
    for key in keys {
        *counts.entry(key).or_default() += 1;
    }
    let mut counts: Vec<(K, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts
}

/// Pearson correlation; `None` when either side is constant or there are fewer than 3 points.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len().min(y.len());
    if n < 3 {
        return None;
    }
    let (mx, my) = (mean(x.get(..n)?), mean(y.get(..n)?));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    Some((sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

/// A correlation with its 95% confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Correlation {
    pub r: f64,
    pub low: f64,
    pub high: f64,
    pub n: usize,
}

/// Spearman rank correlation with a Fisher-z 95% interval.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<Correlation> {
    let (x, y): (Vec<f64>, Vec<f64>) = evenly_spaced(x.iter().copied().zip(y.iter().copied())).into_iter().unzip();
    let n = x.len();
    let r = pearson(&ranks(&x), &ranks(&y))?;
    let (low, high) = if n > 3 {
        let z = r.clamp(-0.999_999, 0.999_999).atanh();
        let half = 1.96 / ((n - 3) as f64).sqrt();
        ((z - half).tanh(), (z + half).tanh())
    } else {
        (-1.0, 1.0)
    };
    Some(Correlation { r, low, high, n })
}

/// Least squares `y ≈ X·β` with β ≥ 0, by trying every subset of the (few) columns and keeping
/// the best feasible one. Returns β and R². Columns are scaled internally for conditioning.
pub fn nonnegative_least_squares(columns: &[Vec<f64>], y: &[f64], weights: &[f64]) -> (Vec<f64>, f64) {
    let k = columns.len();
    let scale: Vec<f64> = columns.iter().map(|c| c.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300)).collect();
    let col = |j: usize, i: usize| -> f64 {
        columns.get(j).and_then(|c| c.get(i)).copied().unwrap_or(0.0) / scale.get(j).copied().unwrap_or(1.0)
    };
    let w = |i: usize| weights.get(i).copied().unwrap_or(1.0);
    // One pass over the samples: the weighted normal equations of all columns, from which every
    // subset's equations are a sub-matrix.
    let mut gram = vec![vec![0.0; k]; k];
    let mut xty = vec![0.0; k];
    let mut row = vec![0.0; k];
    for (i, &yi) in y.iter().enumerate() {
        let wi = w(i);
        for (j, x) in row.iter_mut().enumerate() {
            *x = col(j, i);
        }
        for (p, (&xp, g)) in row.iter().zip(gram.iter_mut()).enumerate() {
            if let Some(c) = xty.get_mut(p) {
                *c += wi * xp * yi;
            }
            for (&xq, a) in row.iter().zip(g.iter_mut()) {
                *a += wi * xp * xq;
            }
        }
    }
    let sse = |beta: &[f64]| -> f64 {
        y.iter()
            .enumerate()
            .map(|(i, &yi)| {
                let fit: f64 = beta.iter().enumerate().map(|(j, b)| col(j, i) * b).sum();
                w(i) * (yi - fit).powi(2)
            })
            .sum()
    };
    // Among feasible subsets, the least squared error: yᵀWy − bᵀc for a subset's solution b
    // (yᵀWy is the same for all, so the largest bᵀc wins).
    let mut best: Option<(f64, Vec<f64>)> = None;
    for mask in 1u32..(1 << k) {
        let chosen: Vec<usize> = (0..k).filter(|j| mask & (1 << j) != 0).collect();
        let a: Vec<Vec<f64>> = chosen
            .iter()
            .map(|&p| chosen.iter().map(|&q| gram.get(p).and_then(|r| r.get(q)).copied().unwrap_or(0.0)).collect())
            .collect();
        let c: Vec<f64> = chosen.iter().map(|&p| xty.get(p).copied().unwrap_or(0.0)).collect();
        let Some(b) = solve(a, c.clone()) else { continue };
        if b.iter().any(|&v| v < 0.0) {
            continue;
        }
        let explained: f64 = b.iter().zip(&c).map(|(b, c)| b * c).sum();
        if best.as_ref().is_none_or(|(e, _)| explained > *e) {
            let mut beta = vec![0.0; k];
            for (&j, bj) in chosen.iter().zip(&b) {
                if let Some(slot) = beta.get_mut(j) {
                    *slot = *bj;
                }
            }
            best = Some((explained, beta));
        }
    }
    let n = y.len();
    let my = {
        let tw: f64 = (0..n).map(w).sum();
        (0..n).map(|i| w(i) * y.get(i).copied().unwrap_or(0.0)).sum::<f64>() / tw.max(1e-300)
    };
    let sst: f64 = (0..n).map(|i| w(i) * (y.get(i).copied().unwrap_or(0.0) - my).powi(2)).sum();
    match best {
        Some((_, scaled)) => {
            let r2 = if sst > 0.0 { (1.0 - sse(&scaled) / sst).max(0.0) } else { 0.0 };
            let beta = scaled.iter().zip(&scale).map(|(b, s)| b / s).collect();
            (beta, r2)
        }
        None => (vec![0.0; k], 0.0),
    }
}

/// Gaussian elimination with partial pivoting; `None` when singular.
fn solve(mut a: Vec<Vec<f64>>, mut c: Vec<f64>) -> Option<Vec<f64>> {
    let m = c.len();
    for col in 0..m {
        let pivot = (col..m).max_by(|&i, &j| {
            let ai = a.get(i).and_then(|r| r.get(col)).copied().unwrap_or(0.0).abs();
            let aj = a.get(j).and_then(|r| r.get(col)).copied().unwrap_or(0.0).abs();
            ai.total_cmp(&aj)
        })?;
        if a.get(pivot).and_then(|r| r.get(col)).copied().unwrap_or(0.0).abs() < 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        c.swap(col, pivot);
        let pivot_row = a.get(col)?.clone();
        let pc = *c.get(col)?;
        let pv = *pivot_row.get(col)?;
        for i in (col + 1)..m {
            let row = a.get_mut(i)?;
            let f = row.get(col).copied().unwrap_or(0.0) / pv;
            for (x, p) in row.iter_mut().zip(&pivot_row) {
                *x -= f * p;
            }
            if let Some(ci) = c.get_mut(i) {
                *ci -= f * pc;
            }
        }
    }
    let mut b = vec![0.0; m];
    for i in (0..m).rev() {
        let row = a.get(i)?;
        let s: f64 = ((i + 1)..m).map(|j| row.get(j).copied().unwrap_or(0.0) * b.get(j).copied().unwrap_or(0.0)).sum();
        let v = (c.get(i)? - s) / row.get(i)?;
        *b.get_mut(i)? = v;
    }
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_are_taken_in_total_cmp_order() {
        // The median by keys: negative zero below zero, NaN ignored, the two middle ones' mean.
        assert_eq!(median(&[0.0, f64::NAN, -0.0, -7.0]).to_bits(), (-0.0f64).to_bits());
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn a_sample_taken_in_parts_is_the_sample() {
        let items: Vec<usize> = (0..3 * MAX_SAMPLES + 17).collect();
        let whole = evenly_spaced(items.iter().copied());
        for cut in [0, 1, MAX_SAMPLES, items.len() - 1, items.len()] {
            let (a, b) = items.split_at(cut);
            let mut first = EvenSample::of(items.len());
            a.iter().for_each(|&x| first.offer(|| x));
            let mut second = EvenSample::resumed(items.len(), cut);
            b.iter().for_each(|&x| second.offer(|| x));
            assert_eq!([first.taken(), second.taken()].concat(), whole, "cut at {cut}");
        }
    }

    #[test]
    fn medians_and_spread() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert!((cv(&[1.0, 1.0, 1.0])).abs() < 1e-12);
        assert!(cv(&[1.0, 3.0]) > 0.5);
    }

    #[test]
    fn spearman_sees_monotone_relations_and_ties() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let y = [1.0, 4.0, 9.0, 16.0, 25.0, 36.0];
        let c = spearman(&x, &y).unwrap();
        assert!((c.r - 1.0).abs() < 1e-9 && c.low > 0.5);
        let anti = spearman(&x, &[6.0, 5.0, 5.0, 3.0, 2.0, 1.0]).unwrap();
        assert!(anti.r < -0.9);
        assert!(spearman(&x, &[1.0; 6]).is_none());
    }

    #[test]
    fn nnls_recovers_a_quadratic_cost() {
        let lengths: Vec<f64> = (1..60).map(|i| f64::from(i * 37 % 1000 + 10)).collect();
        let y: Vec<f64> = lengths.iter().map(|l| 50.0 + 2.0 * l + 0.01 * l * l).collect();
        let ones = vec![1.0; lengths.len()];
        let sq: Vec<f64> = lengths.iter().map(|l| l * l).collect();
        let (beta, r2) = nonnegative_least_squares(&[ones.clone(), lengths.clone(), sq], &y, &ones);
        assert!(
            (beta[0] - 50.0).abs() < 1e-3 && (beta[1] - 2.0).abs() < 1e-6 && (beta[2] - 0.01).abs() < 1e-9,
            "{beta:?}"
        );
        assert!(r2 > 0.999);
        // A negative true slope is clamped away: the fit drops that column.
        let down: Vec<f64> = lengths.iter().map(|l| 5000.0 - l).collect();
        let (beta, _) = nonnegative_least_squares(&[ones.clone(), lengths], &down, &ones);
        assert_eq!(beta[1], 0.0);
    }
}

//! Small, robust statistics: medians, rank correlations with confidence intervals, and a
//! non-negative least-squares fit for the cost model.

/// Median of the values (mean of the two middle ones for even counts); 0 for none.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    let upper = v.get(mid).copied().unwrap_or(0.0);
    if v.len() % 2 == 1 { upper } else { (v.get(mid - 1).copied().unwrap_or(upper) + upper) / 2.0 }
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() { 0.0 } else { values.iter().sum::<f64>() / values.len() as f64 }
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
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values.get(a).unwrap_or(&0.0).total_cmp(values.get(b).unwrap_or(&0.0)));
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
    let n = x.len().min(y.len());
    let r = pearson(&ranks(x.get(..n)?), &ranks(y.get(..n)?))?;
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
    let n = y.len();
    let scale: Vec<f64> = columns.iter().map(|c| c.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300)).collect();
    let col = |j: usize, i: usize| -> f64 {
        columns.get(j).and_then(|c| c.get(i)).copied().unwrap_or(0.0) / scale.get(j).copied().unwrap_or(1.0)
    };
    let w = |i: usize| weights.get(i).copied().unwrap_or(1.0);
    let mut best: (f64, Vec<f64>) = (f64::INFINITY, vec![0.0; k]);
    for mask in 1u32..(1 << k) {
        let chosen: Vec<usize> = (0..k).filter(|j| mask & (1 << j) != 0).collect();
        let m = chosen.len();
        // Normal equations A·b = c for the chosen columns.
        let mut a = vec![vec![0.0; m]; m];
        let mut c = vec![0.0; m];
        for i in 0..n {
            let yi = y.get(i).copied().unwrap_or(0.0);
            for (p, &jp) in chosen.iter().enumerate() {
                let xp = col(jp, i) * w(i);
                if let Some(cp) = c.get_mut(p) {
                    *cp += xp * yi;
                }
                for (q, &jq) in chosen.iter().enumerate() {
                    if let Some(apq) = a.get_mut(p).and_then(|r| r.get_mut(q)) {
                        *apq += xp * col(jq, i);
                    }
                }
            }
        }
        let Some(b) = solve(a, c) else { continue };
        if b.iter().any(|&v| v < 0.0) {
            continue;
        }
        let sse: f64 = (0..n)
            .map(|i| {
                let fit: f64 = chosen.iter().zip(&b).map(|(&j, bj)| col(j, i) * bj).sum();
                let e = y.get(i).copied().unwrap_or(0.0) - fit;
                w(i) * e * e
            })
            .sum();
        if sse < best.0 {
            let mut beta = vec![0.0; k];
            for (&j, bj) in chosen.iter().zip(&b) {
                if let Some(slot) = beta.get_mut(j) {
                    *slot = bj / scale.get(j).copied().unwrap_or(1.0);
                }
            }
            best = (sse, beta);
        }
    }
    let my = {
        let tw: f64 = (0..n).map(w).sum();
        (0..n).map(|i| w(i) * y.get(i).copied().unwrap_or(0.0)).sum::<f64>() / tw.max(1e-300)
    };
    let sst: f64 = (0..n).map(|i| w(i) * (y.get(i).copied().unwrap_or(0.0) - my).powi(2)).sum();
    let r2 = if sst > 0.0 && best.0.is_finite() { (1.0 - best.0 / sst).max(0.0) } else { 0.0 };
    (best.1, r2)
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

//! A small seeded generator (xoshiro256**, seeded by SplitMix64) and the distributions the
//! simulator draws from. Deterministic for a seed on a given platform; no OS entropy, so it
//! runs the same in the browser.

#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng { s: [next(), next(), next(), next()] }
    }

    /// An independent stream for a sub-task, so adding draws in one place does not shift
    /// every other draw.
    pub fn fork(&mut self, salt: u64) -> Rng {
        Rng::new(self.next_u64() ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    pub fn next_u64(&mut self) -> u64 {
        let [s0, s1, s2, s3] = &mut self.s;
        let result = s1.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = *s1 << 17;
        *s2 ^= *s0;
        *s3 ^= *s1;
        *s1 ^= *s2;
        *s0 ^= *s3;
        *s2 ^= t;
        *s3 = s3.rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64 }
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.uniform().max(f64::MIN_POSITIVE);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// exp(N(mu, sigma²)).
    pub fn log_normal(&mut self, mu: f64, sigma: f64) -> f64 {
        (mu + sigma * self.normal()).exp()
    }

    /// Multiplicative noise with median 1 and relative spread `sigma` (0 = none).
    pub fn noise(&mut self, sigma: f64) -> f64 {
        if sigma <= 0.0 { 1.0 } else { self.log_normal(0.0, sigma) }
    }

    /// Pareto (power law) with exponent `alpha` > 1 and minimum `min`.
    pub fn pareto(&mut self, alpha: f64, min: f64) -> f64 {
        let u = 1.0 - self.uniform();
        min * u.powf(-1.0 / (alpha - 1.0).max(0.05))
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_roughly_right() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        assert_eq!((0..5).map(|_| a.next_u64()).collect::<Vec<_>>(), (0..5).map(|_| b.next_u64()).collect::<Vec<_>>());
        let mut r = Rng::new(1);
        let n = 20_000;
        let mean = (0..n).map(|_| r.normal()).sum::<f64>() / f64::from(n);
        assert!(mean.abs() < 0.03, "{mean}");
        let median_noise = {
            let mut v: Vec<f64> = (0..n).map(|_| r.noise(0.5)).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        assert!((median_noise - 1.0).abs() < 0.05, "{median_noise}");
        assert!((0..1000).all(|_| r.below(6) < 6));
    }
}

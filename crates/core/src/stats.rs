//! Statistics: bootstrap confidence intervals, Wilson score intervals and quantiles.
//!
//! The bootstrap here is exact but fast. A bootstrap resample of n observations drawn
//! with replacement has a mean that depends only on how many copies of each distinct
//! value it drew, and those counts follow Multinomial(n, empirical frequencies). So
//! instead of drawing n indices per resample (O(n) each), we draw the multinomial counts
//! as a chain of conditional binomials (O(distinct values) each). The resampling
//! distribution is identical; a 10,000-behavior cell costs microseconds, not seconds.

use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};
use std::collections::BTreeMap;

/// Default number of bootstrap resamples.
pub const BOOTSTRAP_RESAMPLES: u32 = 1000;
/// Two-sided 95% normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Counts of distinct observed values, ordered by value. Adding observations is O(log m)
/// and memory is O(distinct values), independent of the number of observations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    counts: BTreeMap<OrdF64, u64>,
    n: u64,
}

/// f64 with a total order (values are finite in practice; NaN sorts last).
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Histogram {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn add(&mut self, value: f64) {
        *self.counts.entry(OrdF64(value)).or_insert(0) += 1;
        self.n += 1;
    }
    /// Adds a 0/1 observation.
    pub fn add_bool(&mut self, hit: bool) {
        self.add(if hit { 1.0 } else { 0.0 });
    }
    pub fn merge(&mut self, other: &Histogram) {
        for (v, c) in &other.counts {
            *self.counts.entry(*v).or_insert(0) += c;
        }
        self.n += other.n;
    }
    pub fn n(&self) -> u64 {
        self.n
    }
    /// Distinct values with their counts, ascending.
    pub fn entries(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        self.counts.iter().map(|(v, c)| (v.0, *c))
    }
    /// Mean of the observations; `None` when there are none. Computed from the ordered
    /// (value, count) pairs so the result does not depend on insertion order.
    pub fn mean(&self) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let total: f64 = self.entries().map(|(v, c)| v * c as f64).sum();
        Some(total / self.n as f64)
    }
    /// Number of observations equal to 1.0 (for 0/1 samples).
    pub fn ones(&self) -> u64 {
        self.counts.get(&OrdF64(1.0)).copied().unwrap_or(0)
    }
}

/// Percentile bootstrap CI of the mean at `level` (e.g. 0.95), with `resamples` resamples.
/// Returns `None` when fewer than two observations exist (no spread to resample).
pub fn bootstrap_mean_ci(
    hist: &Histogram,
    resamples: u32,
    level: f64,
    rng: &mut ChaCha8Rng,
) -> Option<(f64, f64)> {
    if hist.n() < 2 || resamples == 0 {
        return None;
    }
    let entries: Vec<(f64, u64)> = hist.entries().collect();
    let n = hist.n();
    let mut means = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        let mut remaining_n = n;
        let mut remaining_weight = n;
        let mut total = 0.0;
        for (i, &(value, count)) in entries.iter().enumerate() {
            if remaining_n == 0 {
                break;
            }
            let drawn = if i + 1 == entries.len() {
                remaining_n
            } else {
                let p = count as f64 / remaining_weight as f64;
                if p >= 1.0 {
                    remaining_n
                } else {
                    Binomial::new(remaining_n, p)
                        .expect("p is in [0, 1)")
                        .sample(rng)
                }
            };
            total += value * drawn as f64;
            remaining_n -= drawn;
            remaining_weight -= count;
        }
        means.push(total / n as f64);
    }
    means.sort_by(f64::total_cmp);
    let alpha = (1.0 - level) / 2.0;
    Some((
        quantile_sorted(&means, alpha),
        quantile_sorted(&means, 1.0 - alpha),
    ))
}

/// Quantile of sorted data with linear interpolation between order statistics
/// (the "linear" / type-7 definition, numpy's default).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of empty data");
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

/// Wilson score interval for `successes` out of `n` at normal quantile `z`.
/// `None` when n = 0.
pub fn wilson(successes: u64, n: u64, z: f64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let n_f = n as f64;
    let p = successes as f64 / n_f;
    let z2 = z * z;
    let denom = 1.0 + z2 / n_f;
    let centre = (p + z2 / (2.0 * n_f)) / denom;
    let half = z * ((p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt()) / denom;
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_for;
    use rand::RngExt;

    fn hist(values: &[f64]) -> Histogram {
        let mut h = Histogram::new();
        for v in values {
            h.add(*v);
        }
        h
    }

    #[test]
    fn too_few_observations_have_no_ci() {
        let mut rng = rng_for(0, &["t"]);
        assert_eq!(bootstrap_mean_ci(&hist(&[]), 1000, 0.95, &mut rng), None);
        assert_eq!(bootstrap_mean_ci(&hist(&[1.0]), 1000, 0.95, &mut rng), None);
    }

    #[test]
    fn constant_sample_has_degenerate_ci() {
        let mut rng = rng_for(0, &["t"]);
        let ci = bootstrap_mean_ci(&hist(&[1.0; 50]), 1000, 0.95, &mut rng).unwrap();
        assert_eq!(ci, (1.0, 1.0));
    }

    #[test]
    fn ci_is_deterministic_for_a_seed() {
        let h = hist(&[0.0, 1.0, 1.0, 0.0, 1.0, 0.25, 0.5, 0.75]);
        let a = bootstrap_mean_ci(&h, 1000, 0.95, &mut rng_for(3, &["m"]));
        let b = bootstrap_mean_ci(&h, 1000, 0.95, &mut rng_for(3, &["m"]));
        let c = bootstrap_mean_ci(&h, 1000, 0.95, &mut rng_for(4, &["m"]));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    /// The multinomial shortcut must agree with the naive index-resampling bootstrap.
    #[test]
    fn agrees_with_naive_bootstrap() {
        let data: Vec<f64> = (0..400).map(|i| [0.0, 0.25, 1.0][i % 3]).collect();
        let h = hist(&data);
        let fast = bootstrap_mean_ci(&h, 4000, 0.95, &mut rng_for(1, &["fast"])).unwrap();
        let mut rng = rng_for(1, &["naive"]);
        let mut means: Vec<f64> = (0..4000)
            .map(|_| {
                let s: f64 = (0..data.len())
                    .map(|_| data[rng.random_range(0..data.len())])
                    .sum();
                s / data.len() as f64
            })
            .collect();
        means.sort_by(f64::total_cmp);
        let naive = (
            quantile_sorted(&means, 0.025),
            quantile_sorted(&means, 0.975),
        );
        assert!((fast.0 - naive.0).abs() < 0.012, "{fast:?} vs {naive:?}");
        assert!((fast.1 - naive.1).abs() < 0.012, "{fast:?} vs {naive:?}");
        // and both bracket the sample mean
        let mean = h.mean().unwrap();
        assert!(fast.0 < mean && mean < fast.1);
    }

    #[test]
    fn quantile_interpolates() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&s, 0.0), 1.0);
        assert_eq!(quantile_sorted(&s, 1.0), 4.0);
        assert!((quantile_sorted(&s, 0.5) - 2.5).abs() < 1e-12);
    }

    #[test]
    fn wilson_reference_values() {
        // 8 of 10 at 95%: (0.4902, 0.9433), a standard textbook value.
        let (lo, hi) = wilson(8, 10, Z95).unwrap();
        assert!((lo - 0.4902).abs() < 1e-4, "{lo}");
        assert!((hi - 0.9433).abs() < 1e-4, "{hi}");
        // 0 of 10: lower bound exactly 0, upper 0.2775.
        let (lo, hi) = wilson(0, 10, Z95).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - 0.2775).abs() < 1e-4, "{hi}");
        assert_eq!(wilson(0, 0, Z95), None);
    }

    #[test]
    fn histogram_mean_is_order_independent() {
        let a = hist(&[0.1, 0.7, 0.2, 0.1]);
        let b = hist(&[0.2, 0.1, 0.1, 0.7]);
        assert_eq!(a.mean(), b.mean());
        assert_eq!(a, b);
    }
}

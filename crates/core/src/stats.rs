//! Statistics: bootstrap confidence intervals, Wilson score intervals and quantiles.
//!
//! The bootstrap here is exact but fast. A bootstrap resample of n observations drawn
//! with replacement has a mean that depends only on how many copies of each distinct
//! value it drew, and those counts follow Multinomial(n, empirical frequencies). So
//! instead of drawing n indices per resample (O(n) each), we draw the multinomial counts
//! as a chain of conditional binomials (O(distinct values) each). The resampling
//! distribution is identical; a 10,000-behavior cell costs microseconds, not seconds.
//!
//! A continuous score has too many distinct values for a binomial each, so its rare
//! values are pooled and the pool's share of a resample is drawn index by index, from a
//! Xoshiro256++ stream seeded from the call's ChaCha8 stream, with Lemire's unbiased
//! multiply-shift (exactly uniform) — see [`bootstrap_mean_ci`].

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};
use rand_xoshiro::Xoshiro256PlusPlus;
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

/// Histograms with more distinct values than this pool their rare values (see
/// [`bootstrap_mean_ci`]); smaller ones — every rate, most scores — use the binomial
/// chain alone.
const POOL_MIN_DISTINCT: usize = 64;
/// In a pooled histogram, values observed fewer times than this are pooled.
const RARE_COUNT: u64 = 32;

/// Percentile bootstrap CI of the mean at `level` (e.g. 0.95), with `resamples` resamples.
/// Returns `None` when fewer than two observations exist (no spread to resample).
///
/// Each resample draws the multinomial counts of the distinct values as a chain of
/// conditional binomials. A histogram with many distinct values (a continuous score:
/// hundreds of values seen once or twice) would pay one binomial per value per
/// resample, so its rare values are pooled into one category: the pool's count is one
/// binomial, and that many draws are made uniformly from the pool's observations. The
/// resampling distribution is the same multinomial either way; pooling only changes
/// which random numbers produce it.
///
/// The pooled draws are the hot loop (a continuous score over 10,000 behaviors makes
/// ~10⁷ of them per call), so they do not come from `rng` one by one: when there is a
/// pool, one Xoshiro256++ is seeded from 32 bytes of `rng` (before any binomial) and
/// each of its 64-bit outputs gives two 32-bit words, each mapped to a pool index by
/// `PoolIndex` (Lemire's multiply-shift with its rejection step, so every index is
/// exactly equally likely). The drawn values are summed into four accumulators in
/// rotation, added up in a fixed order; the result is a pure function of `rng`'s state
/// (same bits on every run and thread count). Histograms with no pool — every rate,
/// anything with ≤ 64 distinct values — never seed the Xoshiro stream, so they consume
/// `rng` exactly as the binomial chain alone does.
pub fn bootstrap_mean_ci(
    hist: &Histogram,
    resamples: u32,
    level: f64,
    rng: &mut ChaCha8Rng,
) -> Option<(f64, f64)> {
    if hist.n() < 2 || resamples == 0 {
        return None;
    }
    let n = hist.n();
    let mut entries: Vec<(f64, u64)> = hist.entries().collect();
    let mut pool: Vec<f64> = Vec::new();
    if entries.len() > POOL_MIN_DISTINCT {
        entries.retain(|&(value, count)| {
            let rare = count < RARE_COUNT;
            if rare {
                pool.extend(std::iter::repeat_n(value, count as usize));
            }
            !rare
        });
    }
    let mut pooled = (!pool.is_empty()).then(|| {
        (
            PoolIndex::new(pool.len() as u64),
            Xoshiro256PlusPlus::from_rng(&mut *rng),
        )
    });
    let mut means = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        let mut remaining_n = n;
        let mut remaining_weight = n;
        let mut total = 0.0;
        if let Some((index, fast)) = &mut pooled {
            let weight = pool.len() as u64;
            let drawn = if entries.is_empty() {
                n
            } else {
                Binomial::new(n, weight as f64 / n as f64)
                    .expect("p is in [0, 1]")
                    .sample(rng)
            };
            total += index.sum_draws(&pool, drawn, fast);
            remaining_n -= drawn;
            remaining_weight -= weight;
        }
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

/// Uniform indices into a pool of `len` observations, from a Xoshiro256++ stream.
///
/// Lemire's multiply-shift ("Fast random integer generation in an interval", ACM TOMACS
/// 2019): a uniform w-bit word x maps to the index ⌊x·len / 2ʷ⌋, and x is rejected (a
/// fresh word is drawn) when x·len mod 2ʷ < 2ʷ mod len. That leaves exactly
/// ⌊2ʷ / len⌋ accepted words per index, so every index is exactly equally likely. Pools
/// under 2³² (every real one) use w = 32 with both halves of each 64-bit output;
/// larger ones use w = 64.
#[derive(Debug, Clone, Copy)]
struct PoolIndex {
    len: u64,
    /// 2ʷ mod len: products whose low word falls below it are rejected.
    threshold: u64,
}

impl PoolIndex {
    fn new(len: u64) -> Self {
        assert!(len > 0, "empty pool");
        let threshold = if len <= u64::from(u32::MAX) {
            u64::from((len as u32).wrapping_neg() % len as u32)
        } else {
            len.wrapping_neg() % len
        };
        Self { len, threshold }
    }

    /// The index for the 32-bit word `x`, or `None` when `x` is rejected. `len` < 2³².
    #[inline(always)]
    fn map_u32(self, x: u32) -> Option<usize> {
        let m = u64::from(x) * self.len;
        ((m as u32 as u64) >= self.threshold).then_some((m >> 32) as usize)
    }

    /// A uniform index from whole 64-bit words; for pools of 2³² or more.
    fn draw_u64(self, rng: &mut Xoshiro256PlusPlus) -> usize {
        loop {
            let m = u128::from(rng.next_u64()) * u128::from(self.len);
            if (m as u64) >= self.threshold {
                return (m >> 64) as usize;
            }
        }
    }

    /// The index for the 32-bit word `x`; when `x` is rejected, fresh words (upper
    /// halves of `rng`'s outputs) are tried until one is accepted. `len` < 2³².
    #[inline(always)]
    fn index(self, mut x: u32, rng: &mut Xoshiro256PlusPlus) -> usize {
        loop {
            if let Some(i) = self.map_u32(x) {
                return i;
            }
            x = (rng.next_u64() >> 32) as u32;
        }
    }

    /// The sum of `draws` observations of `pool` (of length `len`) drawn uniformly with
    /// replacement. Draw k goes to accumulator k mod 4; the four are added as
    /// (a₀ + a₁) + (a₂ + a₃), so the result depends only on `rng`'s state.
    fn sum_draws(self, pool: &[f64], draws: u64, rng: &mut Xoshiro256PlusPlus) -> f64 {
        debug_assert_eq!(pool.len() as u64, self.len);
        let mut acc = [0.0f64; 4];
        if self.len > u64::from(u32::MAX) {
            for k in 0..draws {
                acc[(k % 4) as usize] += pool[self.draw_u64(rng)];
            }
            return (acc[0] + acc[1]) + (acc[2] + acc[3]);
        }
        // Locals (not the caller's state, not an array) so the loop runs in registers.
        let mut r = rng.clone();
        let [mut a0, mut a1, mut a2, mut a3] = acc;
        // Four draws from two 64-bit outputs: low half first, then high half.
        for _ in 0..draws / 4 {
            let (a, b) = (r.next_u64(), r.next_u64());
            let i0 = self.index(a as u32, &mut r);
            let i1 = self.index((a >> 32) as u32, &mut r);
            let i2 = self.index(b as u32, &mut r);
            let i3 = self.index((b >> 32) as u32, &mut r);
            a0 += pool[i0];
            a1 += pool[i1];
            a2 += pool[i2];
            a3 += pool[i3];
        }
        // The remaining 0–3 draws, one word each, into accumulators 0, 1, 2.
        let mut acc = [a0, a1, a2, a3];
        for slot in acc.iter_mut().take((draws % 4) as usize) {
            let x = (r.next_u64() >> 32) as u32;
            *slot += pool[self.index(x, &mut r)];
        }
        *rng = r;
        (acc[0] + acc[1]) + (acc[2] + acc[3])
    }
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
    wilson_fractional(successes as f64, n, z)
}

/// [`wilson`] for a fractional success count (e.g. a median of several passes' rates
/// times n); the proportion is clamped to [0, 1].
pub fn wilson_fractional(successes: f64, n: u64, z: f64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let n_f = n as f64;
    let p = (successes / n_f).clamp(0.0, 1.0);
    let z2 = z * z;
    let denom = 1.0 + z2 / n_f;
    let centre = (p + z2 / (2.0 * n_f)) / denom;
    let half = z * ((p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt()) / denom;
    // At p = 0 (p = 1) the lower (upper) bound is exactly 0 (1); rounding in
    // centre ∓ half must not report 1e-17 or 0.9999999999999999.
    let lo = if p == 0.0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if p == 1.0 {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some((lo, hi))
}

// ---------------------------------------------------------------------------------------
// Student's t: the interval across independent trials.
//
// A run with `trials: N` gives each cell × metric N values (one per trial, each a mean
// over the cell's behaviors); the spread *between* trials is summarised by the classic
// Student-t interval on those values: mean ± t(1 − α/2, N − 1) · s / √N.
// The t distribution's CDF and quantile come from `statrs` (StudentsT, through its
// regularized incomplete beta), which the tests below pin against published values.

/// P(T ≤ t) for Student's t with `df` > 0 degrees of freedom.
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    use statrs::distribution::ContinuousCDF;
    statrs::distribution::StudentsT::new(0.0, 1.0, df)
        .expect("degrees of freedom must be positive")
        .cdf(t)
}

/// The `p` quantile of Student's t with `df` > 0 degrees of freedom (`p` in (0, 1)):
/// the t with P(T ≤ t) = p. `student_t_quantile(0.975, 4.0)` is 2.776445….
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    use statrs::distribution::ContinuousCDF;
    assert!(p > 0.0 && p < 1.0, "quantile level {p} outside (0, 1)");
    assert!(df > 0.0, "degrees of freedom {df} must be positive");
    if p < 0.5 {
        // Exactly symmetric (statrs's inverse is symmetric only to rounding).
        return -student_t_quantile(1.0 - p, df);
    }
    statrs::distribution::StudentsT::new(0.0, 1.0, df)
        .expect("degrees of freedom are positive")
        .inverse_cdf(p)
}

/// The two-sided Student-t interval of the mean of `values` (independent trials) at
/// `level` (e.g. 0.95): `(mean, low, high)` with mean ± t(1 − α/2, n − 1) · s / √n,
/// s the sample standard deviation. `None` for no values; for one value the interval is
/// `None` (no spread is observable) and only the mean is meaningful — see
/// [`mean_and_t_interval`].
pub fn t_interval(values: &[f64], level: f64) -> Option<(f64, f64, f64)> {
    let (mean, ci) = mean_and_t_interval(values, level)?;
    let (lo, hi) = ci?;
    Some((mean, lo, hi))
}

/// The mean of `values` and, when there are at least two, its Student-t interval at
/// `level`. Values are summed in the given order (callers pass them in trial order, so
/// the result is reproducible to the bit).
pub fn mean_and_t_interval(values: &[f64], level: f64) -> Option<(f64, Option<(f64, f64)>)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return Some((mean, None));
    }
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    let half = student_t_quantile(1.0 - (1.0 - level) / 2.0, n - 1.0) * var.sqrt() / n.sqrt();
    Some((mean, Some((mean - half, mean + half))))
}

/// A p-value for the table: `p=` with four decimals, scientific notation below 10⁻⁴,
/// and `p<1e-300` where the exact value underflows f64.
pub fn fmt_p(p: f64) -> String {
    if p == 0.0 {
        "p<1e-300".into()
    } else if p < 1e-4 {
        format!("p={p:.2e}")
    } else {
        format!("p={p:.4}")
    }
}

#[cfg(test)]
mod student_t_tests {
    use super::*;

    /// Two-sided 95% critical values t(0.975, df) as published in standard tables
    /// (e.g. NIST/SEMATECH e-Handbook of Statistical Methods, §1.3.6.7.2), to 3 decimals,
    /// and to more digits where the tables give them.
    #[test]
    fn t_quantile_matches_published_tables() {
        let table = [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (4.0, 2.776),
            (5.0, 2.571),
            (6.0, 2.447),
            (7.0, 2.365),
            (8.0, 2.306),
            (9.0, 2.262),
            (10.0, 2.228),
            (15.0, 2.131),
            (20.0, 2.086),
            (30.0, 2.042),
            (50.0, 2.009),
            (100.0, 1.984),
        ];
        for (df, want) in table {
            let got = student_t_quantile(0.975, df);
            assert!((got - want).abs() < 5e-4, "df {df}: {got} vs {want}");
        }
        // Closed forms: df = 1 is Cauchy, t = tan(π(p − ½)); df = 2: t = (2p−1)/√(2p(1−p)).
        let cauchy = (std::f64::consts::PI * (0.975 - 0.5)).tan();
        assert!((student_t_quantile(0.975, 1.0) - cauchy).abs() < 1e-9);
        let p: f64 = 0.975;
        let df2 = (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
        assert!((student_t_quantile(0.975, 2.0) - df2).abs() < 1e-10);
        // More digits: t(0.975, 4) = 2.776445105, t(0.95, 10) = 1.812461123.
        assert!((student_t_quantile(0.975, 4.0) - 2.776_445_105).abs() < 1e-8);
        assert!((student_t_quantile(0.95, 10.0) - 1.812_461_123).abs() < 1e-8);
        assert!((student_t_quantile(0.995, 5.0) - 4.032_142_984).abs() < 1e-8);
        // Large df (beyond any run: trials ≤ 100): t(0.975, 1000) = 1.9623391.
        assert!((student_t_quantile(0.975, 1000.0) - 1.962_339_08).abs() < 1e-6);
        // Symmetry.
        assert_eq!(
            student_t_quantile(0.025, 7.0),
            -student_t_quantile(0.975, 7.0)
        );
    }

    #[test]
    fn t_cdf_reference_points() {
        assert!((student_t_cdf(0.0, 3.0) - 0.5).abs() < 1e-15);
        // df = 1 is Cauchy: F(1) = 3/4.
        assert!((student_t_cdf(1.0, 1.0) - 0.75).abs() < 1e-12);
        assert!((student_t_cdf(-1.0, 1.0) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn t_interval_of_trial_values() {
        // Three trials 0.2, 0.4, 0.6: mean 0.4, s = 0.2, half = 4.302653 · 0.2 / √3.
        let (mean, lo, hi) = t_interval(&[0.2, 0.4, 0.6], 0.95).unwrap();
        let half = 4.302_652_729_9 * 0.2 / 3f64.sqrt();
        assert!((mean - 0.4).abs() < 1e-12);
        assert!((lo - (0.4 - half)).abs() < 1e-8, "{lo}");
        assert!((hi - (0.4 + half)).abs() < 1e-8, "{hi}");
        // Identical trials: a zero-width interval at the value.
        assert_eq!(t_interval(&[0.5, 0.5, 0.5], 0.95), Some((0.5, 0.5, 0.5)));
        // One trial: a mean, no interval; none: nothing.
        assert_eq!(mean_and_t_interval(&[0.3], 0.95), Some((0.3, None)));
        assert_eq!(t_interval(&[0.3], 0.95), None);
        assert_eq!(mean_and_t_interval(&[], 0.95), None);
    }
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
        agrees_with_naive(&data, 0.012);
    }

    /// With many distinct values the rare ones are pooled (some values frequent, most
    /// seen once or twice, as with a continuous score); the CI must still be the
    /// bootstrap's.
    #[test]
    fn pooled_rare_values_agree_with_naive_bootstrap() {
        let data: Vec<f64> = (0..2000)
            .map(|i| match i % 4 {
                0 => 1.0,
                1 => 0.0,
                _ => (i % 997) as f64 / 997.0,
            })
            .collect();
        assert!(hist(&data).entries().count() > POOL_MIN_DISTINCT);
        agrees_with_naive(&data, 0.01);
        // Only rare values: the pool is everything.
        let spread: Vec<f64> = (0..500).map(|i| (i * 7 % 500) as f64 / 500.0).collect();
        agrees_with_naive(&spread, 0.012);
    }

    /// The pooled index draw is exactly uniform: over a small non-power-of-two pool the
    /// counts of 2.1 million draws pass a chi-square bound, for each draw path (four per
    /// pair of outputs, the 0–3 leftovers, and a forced rejection-heavy length).
    #[test]
    fn pooled_index_draw_is_uniform() {
        use rand::SeedableRng;
        fn chi_square(counts: &[u64]) -> f64 {
            let n: u64 = counts.iter().sum();
            let expected = n as f64 / counts.len() as f64;
            counts
                .iter()
                .map(|&c| (c as f64 - expected).powi(2) / expected)
                .sum()
        }
        // 99.9th percentile of chi-square with k − 1 degrees of freedom, Wilson–Hilferty.
        fn chi_square_999(df: f64) -> f64 {
            let z = 3.090_232_306;
            df * (1.0 - 2.0 / (9.0 * df) + z * (2.0 / (9.0 * df)).sqrt()).powi(3)
        }
        for len in [3u64, 7, 10, 37] {
            let index = PoolIndex::new(len);
            assert_eq!(index.threshold, (1u64 << 32) % len);
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(len);
            let mut counts = vec![0u64; len as usize];
            for _ in 0..1_050_000 {
                let x = rng.next_u64();
                counts[index.index(x as u32, &mut rng)] += 1;
                counts[index.index((x >> 32) as u32, &mut rng)] += 1;
            }
            let stat = chi_square(&counts);
            assert!(stat < chi_square_999((len - 1) as f64), "len {len}: {stat}");
            // Through sum_draws: a pool whose values are one-hot sums to the count of
            // draws of that index; odd draw counts exercise the leftover path.
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(len + 100);
            let mut counts = vec![0u64; len as usize];
            for i in 0..len as usize {
                let mut pool = vec![0.0; len as usize];
                pool[i] = 1.0;
                for draws in [1u64, 2, 3, 4, 5, 1_000, 100_003] {
                    counts[i] += index.sum_draws(&pool, draws, &mut rng) as u64;
                }
            }
            // Each index got Binomial(101_018, 1/len) hits; compare with its expectation.
            let draws = 101_018.0;
            for (i, &c) in counts.iter().enumerate() {
                let p = 1.0 / len as f64;
                let sd = (draws * p * (1.0 - p)).sqrt();
                assert!(
                    (c as f64 - draws * p).abs() < 5.0 * sd,
                    "len {len} index {i}: {c}"
                );
            }
        }
        // Exactness of the mapping: over all 2^32 words every index has exactly
        // floor(2^32 / len) accepted words. Checked by enumerating the words that map
        // to a few indices, for a length where 2^32 mod len is large (so rejection matters).
        let len = 3_000_000_019u64; // > 2^31: about 30% of words are rejected
        let index = PoolIndex::new(len);
        assert_eq!(index.threshold, (1u64 << 32) % len);
        for i in [0u64, 1, len / 2, len - 1] {
            // Words x with floor(x·len / 2^32) = i: x in [ceil(i·2^32/len), ceil((i+1)·2^32/len)).
            let lo = (i << 32).div_ceil(len);
            let hi = ((i + 1) << 32).div_ceil(len);
            let accepted = (lo..hi)
                .filter(|&x| index.map_u32(x as u32).is_some())
                .count() as u64;
            assert_eq!(accepted, (1u64 << 32) / len, "index {i}");
            assert!((lo..hi).all(|x| index.map_u32(x as u32).is_none_or(|j| j as u64 == i)));
        }
    }

    /// Pools of 2^32 or more fall back to 64-bit words; the mapping stays in range.
    #[test]
    fn huge_pool_index_stays_in_range() {
        use rand::SeedableRng;
        let len = (1u64 << 33) + 5;
        let index = PoolIndex::new(len);
        assert_eq!(index.threshold, len.wrapping_neg() % len);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let mut sum = 0u128;
        for _ in 0..10_000 {
            let i = index.draw_u64(&mut rng) as u64;
            assert!(i < len);
            sum += u128::from(i);
        }
        let mean = sum as f64 / 10_000.0 / len as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }

    /// A pooled CI is a pure function of the seed: the same on every call, on any
    /// thread; and it changes with the seed.
    #[test]
    fn pooled_ci_is_deterministic_for_a_seed() {
        let data: Vec<f64> = (0..5003)
            .map(|i| ((i * 7919) % 4999) as f64 / 4999.0)
            .collect();
        let h = hist(&data);
        assert!(h.entries().count() > POOL_MIN_DISTINCT);
        let a = bootstrap_mean_ci(&h, 1000, 0.95, &mut rng_for(3, &["m"])).unwrap();
        let b = bootstrap_mean_ci(&h, 1000, 0.95, &mut rng_for(3, &["m"])).unwrap();
        let c = bootstrap_mean_ci(&h, 1000, 0.95, &mut rng_for(4, &["m"])).unwrap();
        let threads: Vec<(f64, f64)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| bootstrap_mean_ci(&h, 1000, 0.95, &mut rng_for(3, &["m"])).unwrap())
                })
                .collect();
            hs.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert_eq!(a.0.to_bits(), b.0.to_bits());
        assert_eq!(a.1.to_bits(), b.1.to_bits());
        assert!(threads.iter().all(|t| *t == a));
        assert_ne!(a, c);
        let mean = h.mean().unwrap();
        assert!(a.0 < mean && mean < a.1);
    }

    /// Histograms without a pool never touch the Xoshiro stream: their CIs are the
    /// binomial chain's, pinned here to the values they had before pooled draws changed.
    #[test]
    fn unpooled_ci_values_are_pinned() {
        let rates = hist(
            &(0..1000)
                .map(|i| (i % 7 == 0) as u8 as f64)
                .collect::<Vec<_>>(),
        );
        let scores = hist(&(0..999).map(|i| (i % 64) as f64 / 63.0).collect::<Vec<_>>());
        assert_eq!(scores.entries().count(), POOL_MIN_DISTINCT);
        let r = bootstrap_mean_ci(&rates, 1000, 0.95, &mut rng_for(11, &["r"])).unwrap();
        let s = bootstrap_mean_ci(&scores, 1000, 0.95, &mut rng_for(11, &["s"])).unwrap();
        assert_eq!((r.0.to_bits(), r.1.to_bits()), PINNED_RATE, "{r:?}");
        assert_eq!((s.0.to_bits(), s.1.to_bits()), PINNED_SCORE, "{s:?}");
    }
    const PINNED_RATE: (u64, u64) = (0x3fbe_f9db_22d0_e560, 0x3fc4_fdf3_b645_a1cb);
    const PINNED_SCORE: (u64, u64) = (0x3fde_3d9d_1fc7_3931, 0x3fe0_523e_283d_be07);

    fn agrees_with_naive(data: &[f64], tolerance: f64) {
        let h = hist(data);
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
        assert!(
            (fast.0 - naive.0).abs() < tolerance,
            "{fast:?} vs {naive:?}"
        );
        assert!(
            (fast.1 - naive.1).abs() < tolerance,
            "{fast:?} vs {naive:?}"
        );
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

// ---------------------------------------------------------------------------------------
// Agreement and paired comparison: median, Cohen's κ, exact McNemar, paired bootstrap.
// Used by `gauntlet judge-agreement` and `gauntlet compare`.
// ---------------------------------------------------------------------------------------

/// The median (type-7 quantile at 0.5: the mean of the middle two for an even count);
/// `None` for no data. NaN sorts last.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some(quantile_sorted(&v, 0.5))
}

/// A 95% interval for the mean of `n` values bounded in [0, 1] where the bootstrap
/// degenerates (every value equal: the percentile bootstrap gives a zero-width
/// interval whatever n is). A [0, 1]-bounded variable with mean μ has variance at
/// most μ(1 − μ), the Bernoulli variance, so the Wilson score interval of n·mean
/// successes in n is a conservative interval for its mean; it has non-zero width for
/// every finite n (30 equal scores of 0 give [0, 0.114]). `None` when n = 0 or the
/// mean is outside [0, 1].
pub fn bounded_mean_ci(mean: f64, n: u64) -> Option<(f64, f64)> {
    if !(0.0..=1.0).contains(&mean) {
        return None;
    }
    wilson_fractional(mean * n as f64, n, Z95)
}

/// Cohen's κ for two raters over the same items, with its large-sample standard error
/// and a normal-theory confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kappa {
    /// Items rated by both raters.
    pub n: u64,
    /// Observed agreement p_o.
    pub observed: f64,
    /// Agreement expected by chance from the margins, p_e.
    pub expected: f64,
    /// κ = (p_o − p_e) / (1 − p_e).
    pub kappa: f64,
    /// The large-sample (non-null) standard error of Fleiss, Cohen & Everitt (1969).
    pub se: f64,
    /// κ ± z·se, clipped to [−1, 1]; where the large-sample SE is 0 (perfect
    /// agreement, a zero-width interval at finite n) the Wilson interval of the
    /// observed agreement p_o mapped through κ = (p_o − p_e)/(1 − p_e) instead
    /// (`ci_method` says which).
    pub ci_low: f64,
    pub ci_high: f64,
    /// `large_sample` or `wilson_agreement`.
    pub ci_method: &'static str,
}

/// Why κ cannot be computed for a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KappaUndefined {
    /// No item was rated by both raters.
    Empty,
    /// Chance agreement is 1: both raters gave every item the same single category, so
    /// κ = 0/0. Raw agreement is still 1.
    NoVariation,
    /// One rater (`0` = A, the table's rows; `1` = B, its columns) put every item in
    /// one category while the other varied: κ is 0 by construction whatever the other
    /// rater does, with a zero-width interval, so it measures nothing (a grader that
    /// said "refused" to every reply would get κ 0.000 [−0.000, 0.000]).
    ConstantRater(u8),
}

impl std::fmt::Display for KappaUndefined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KappaUndefined::Empty => write!(f, "no items rated by both"),
            KappaUndefined::NoVariation => write!(
                f,
                "both raters put every item in one and the same category (chance agreement is 1, κ = 0/0)"
            ),
            KappaUndefined::ConstantRater(r) => write!(
                f,
                "rater {} put every item in one category: κ is 0 by construction whatever the other rater says, so it measures nothing (read the raw agreement and each rater's counts)",
                if *r == 0 { "A" } else { "B" }
            ),
        }
    }
}

/// Cohen's κ of a square confusion table `table[i][j]` = items rater A put in category
/// `i` and rater B in category `j`, with a CI at normal quantile `z` (e.g. [`Z95`]).
///
/// The CI is the standard large-sample one, κ ± z·SE, with the non-null asymptotic
/// variance of Fleiss, Cohen & Everitt (1969), "Large sample standard errors of kappa
/// and weighted kappa", Psychological Bulletin 72(5):323–327 (also Fleiss, Levin & Paik,
/// *Statistical Methods for Rates and Proportions*, 3rd ed., eq. 18.12):
///
/// Var(κ) = [A + B − C] / [n (1 − p_e)²], with
/// A = Σᵢ pᵢᵢ [1 − (pᵢ. + p.ᵢ)(1 − κ)]², B = (1 − κ)² Σ_{i≠j} pᵢⱼ (p.ᵢ + pⱼ.)²,
/// C = [κ − p_e (1 − κ)]².
///
/// No resampling: the result is a pure function of the table. Panics if the table is
/// not square.
pub fn cohen_kappa(table: &[Vec<u64>], z: f64) -> Result<Kappa, KappaUndefined> {
    let k = table.len();
    assert!(
        table.iter().all(|r| r.len() == k),
        "cohen_kappa needs a square table"
    );
    let n: u64 = table.iter().flatten().sum();
    if n == 0 {
        return Err(KappaUndefined::Empty);
    }
    let nf = n as f64;
    let p = |i: usize, j: usize| table[i][j] as f64 / nf;
    let row: Vec<f64> = (0..k).map(|i| (0..k).map(|j| p(i, j)).sum()).collect();
    let col: Vec<f64> = (0..k).map(|j| (0..k).map(|i| p(i, j)).sum()).collect();
    let po: f64 = (0..k).map(|i| p(i, i)).sum();
    let pe: f64 = (0..k).map(|i| row[i] * col[i]).sum();
    if (1.0 - pe).abs() < 1e-12 {
        return Err(KappaUndefined::NoVariation);
    }
    for (r, margins) in [(0u8, &row), (1u8, &col)] {
        if margins.iter().any(|m| (m - 1.0).abs() < 1e-12) {
            return Err(KappaUndefined::ConstantRater(r));
        }
    }
    let kappa = (po - pe) / (1.0 - pe);
    let a: f64 = (0..k)
        .map(|i| p(i, i) * (1.0 - (row[i] + col[i]) * (1.0 - kappa)).powi(2))
        .sum();
    let off_diagonal = (0..k).flat_map(|i| (0..k).filter(move |&j| j != i).map(move |j| (i, j)));
    let b = (1.0 - kappa).powi(2)
        * off_diagonal
            .map(|(i, j)| p(i, j) * (col[i] + row[j]).powi(2))
            .sum::<f64>();
    let c = (kappa - pe * (1.0 - kappa)).powi(2);
    // A + B − C is a variance times a positive factor; rounding can push a perfect
    // table a hair below zero.
    let var = ((a + b - c) / (nf * (1.0 - pe).powi(2))).max(0.0);
    let se = var.sqrt();
    let (ci_low, ci_high, ci_method) = if se > 1e-12 {
        (
            (kappa - z * se).max(-1.0),
            (kappa + z * se).min(1.0),
            "large_sample",
        )
    } else {
        // A zero SE at finite n (perfect agreement or disagreement): the Wilson interval
        // of p_o, mapped through κ's affine map of p_o (p_e held at its observed value).
        let (lo, hi) = wilson_fractional(po * nf, n, z).expect("n > 0");
        let map = |x: f64| ((x - pe) / (1.0 - pe)).clamp(-1.0, 1.0);
        (map(lo), map(hi), "wilson_agreement")
    };
    Ok(Kappa {
        n,
        observed: po,
        expected: pe,
        kappa,
        se,
        ci_low,
        ci_high,
        ci_method,
    })
}

/// The exact McNemar test of paired binary outcomes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct McNemar {
    /// Discordant pairs: positive under A only.
    pub b: u64,
    /// Discordant pairs: positive under B only.
    pub c: u64,
    /// Two-sided exact (conditional binomial) p-value: 2·P(X ≤ min(b, c)) for
    /// X ~ Binomial(b + c, ½), capped at 1. 1 when there are no discordant pairs.
    pub p_exact: f64,
    /// Two-sided mid-p: the exact p minus P(X = min(b, c)) (Lancaster's mid-p; less
    /// conservative, recommended by Fagerland, Lydersen & Laake 2013).
    pub p_mid: f64,
}

/// Exact McNemar test from the two discordant counts `b` (A positive, B negative) and `c`
/// (A negative, B positive). Concordant pairs do not enter the test.
pub fn mcnemar_exact(b: u64, c: u64) -> McNemar {
    let n = b + c;
    let k = b.min(c);
    if n == 0 {
        return McNemar {
            b,
            c,
            p_exact: 1.0,
            p_mid: 1.0,
        };
    }
    // Binomial(n, ½) from statrs: the lower tail up to k and the mass at k.
    use statrs::distribution::{Binomial, Discrete, DiscreteCDF};
    let d = Binomial::new(0.5, n).expect("p = ½ is a probability");
    let (tail, at_k) = (d.cdf(k), d.pmf(k));
    let p_exact = (2.0 * tail).min(1.0);
    // When b = c both tails include k; 2·(P(X ≤ k) − ½P(X = k)) is then exactly 1.
    let p_mid = (2.0 * (tail - 0.5 * at_k)).min(1.0);
    McNemar {
        b,
        c,
        p_exact,
        p_mid,
    }
}

/// The 95% interval of the difference between two paired proportions, B − A, by
/// Newcombe's square-and-add (hybrid score) method: each side's Wilson interval,
/// combined with the estimated correlation between the two proportions (Newcombe 1998,
/// "Improved confidence intervals for the difference between binomial proportions based
/// on paired data", method 10; Fagerland, Lydersen & Laake 2014 recommend it). `both`
/// pairs are positive on both sides, `only_a` on A alone, `only_b` on B alone,
/// `neither` on neither. `None` without pairs.
///
/// It is an interval, not the test: [`mcnemar_exact`] decides significance, and being
/// exact and conditional it is the more conservative of the two at small counts, so an
/// interval can exclude 0 while the exact p is just above 0.05 (6 against 16 discordant
/// pairs of 161: [−0.119, −0.005], p = 0.052).
pub fn newcombe_paired_diff(
    both: u64,
    only_a: u64,
    only_b: u64,
    neither: u64,
    z: f64,
) -> Option<(f64, f64)> {
    let n = both + only_a + only_b + neither;
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let (pos_a, pos_b) = (both + only_a, both + only_b);
    let (p_a, p_b) = (pos_a as f64 / nf, pos_b as f64 / nf);
    let (l_a, u_a) = wilson(pos_a, n, z)?;
    let (l_b, u_b) = wilson(pos_b, n, z)?;
    // The correlation between the two estimates (phi of the 2×2 table), with Newcombe's
    // correction towards 0 of a positive association by n/2; 0 when a margin is empty.
    let (neg_a, neg_b) = (n - pos_a, n - pos_b);
    let phi = if pos_a == 0 || pos_b == 0 || neg_a == 0 || neg_b == 0 {
        0.0
    } else {
        let ad_bc = both as f64 * neither as f64 - only_a as f64 * only_b as f64;
        let num = if ad_bc > nf / 2.0 {
            ad_bc - nf / 2.0
        } else if ad_bc >= 0.0 {
            0.0
        } else {
            ad_bc
        };
        num / (pos_a as f64 * neg_a as f64 * pos_b as f64 * neg_b as f64).sqrt()
    };
    let d = p_b - p_a;
    let root = |x: f64, y: f64| (x * x + y * y - 2.0 * phi * x * y).max(0.0).sqrt();
    let lo = d - root(p_b - l_b, u_a - p_a);
    let hi = d + root(u_b - p_b, p_a - l_a);
    Some((lo.max(-1.0), hi.min(1.0)))
}

/// A paired mean difference with its bootstrap CI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedDiff {
    /// Pairs.
    pub n: u64,
    /// Mean of a − b over the pairs.
    pub mean_diff: f64,
    /// Percentile bootstrap CI of the mean difference, resampling pairs (items) with
    /// replacement; `None` with fewer than two pairs. Where every difference is equal
    /// and every value is in [0, 1] (the bootstrap degenerates to zero width), the
    /// bounded-mean interval of (d + 1)/2 mapped back to d instead ([`bounded_mean_ci`]).
    pub ci: Option<(f64, f64)>,
    /// `bootstrap` or `wilson_bounded`.
    pub ci_method: &'static str,
}

/// Paired bootstrap of the mean difference `mean(a) − mean(b)` over items observed in
/// both (`pairs[i] = (aᵢ, bᵢ)`): items are resampled with replacement, keeping each pair
/// together, so the CI accounts for the pairing. Equivalent to the bootstrap of the
/// mean of the differences, which is how it is computed ([`bootstrap_mean_ci`]); seeded
/// by `rng`. `None` for no pairs.
pub fn paired_bootstrap_diff(
    pairs: &[(f64, f64)],
    resamples: u32,
    level: f64,
    rng: &mut ChaCha8Rng,
) -> Option<PairedDiff> {
    let mut h = Histogram::new();
    for (a, b) in pairs {
        h.add(a - b);
    }
    let mean_diff = h.mean()?;
    let bounded = pairs
        .iter()
        .all(|(a, b)| (0.0..=1.0).contains(a) && (0.0..=1.0).contains(b));
    if bounded && h.entries().count() == 1 {
        let ci = bounded_mean_ci((mean_diff + 1.0) / 2.0, h.n())
            .map(|(lo, hi)| (2.0 * lo - 1.0, 2.0 * hi - 1.0));
        return Some(PairedDiff {
            n: h.n(),
            mean_diff,
            ci,
            ci_method: "wilson_bounded",
        });
    }
    Some(PairedDiff {
        n: h.n(),
        mean_diff,
        ci: bootstrap_mean_ci(&h, resamples, level, rng),
        ci_method: "bootstrap",
    })
}

#[cfg(test)]
mod agreement_tests {
    use super::*;
    use crate::rng::rng_for;

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    /// Wikipedia, "Cohen's kappa", worked example: 50 proposals, both "yes" 20, A yes/B no
    /// 5, A no/B yes 10, both "no" 15 → p_o = 0.7, p_e = 0.5, κ = 0.4.
    #[test]
    fn kappa_textbook_example() {
        let k = cohen_kappa(&[vec![20, 5], vec![10, 15]], Z95).unwrap();
        assert_eq!(k.n, 50);
        assert!((k.observed - 0.7).abs() < 1e-12);
        assert!((k.expected - 0.5).abs() < 1e-12);
        assert!((k.kappa - 0.4).abs() < 1e-12);
    }

    /// The large-sample SE and CI against a published reference: Bonett's R package
    /// statpsych, `ci.kappa(.05, 31, 12, 4, 58)` (documented example, after Fleiss & Paik
    /// 2003) gives Cohen κ 0.6756757, SE 0.07344761, CI [0.5317210, 0.8196303].
    /// statpsych's cells are f00, f01, f10, f11 (y then x), so the table is [[31, 12], [4, 58]].
    #[test]
    fn kappa_se_matches_published_reference() {
        let k = cohen_kappa(&[vec![31, 12], vec![4, 58]], Z95).unwrap();
        assert!((k.kappa - 0.6756757).abs() < 1e-7, "{}", k.kappa);
        assert!((k.se - 0.07344761).abs() < 1e-8, "{}", k.se);
        assert!((k.ci_low - 0.5317210).abs() < 1e-7, "{}", k.ci_low);
        assert!((k.ci_high - 0.8196303).abs() < 1e-7, "{}", k.ci_high);
        // κ is symmetric in the raters: the transposed table gives the same κ and SE.
        let t = cohen_kappa(&[vec![31, 4], vec![12, 58]], Z95).unwrap();
        assert!((t.kappa - k.kappa).abs() < 1e-12 && (t.se - k.se).abs() < 1e-12);
    }

    /// A constant judge (a degenerate grader: "refused" to all 70 replies while the human
    /// labels vary) has κ N/A with the reason, never 0.000 [0, 0].
    #[test]
    fn kappa_with_one_constant_rater_is_undefined() {
        // Rater A always category 0; B varies.
        assert_eq!(
            cohen_kappa(&[vec![53, 17], vec![0, 0]], Z95),
            Err(KappaUndefined::ConstantRater(0))
        );
        let e = cohen_kappa(&[vec![53, 0], vec![17, 0]], Z95).unwrap_err();
        assert_eq!(e, KappaUndefined::ConstantRater(1));
        assert!(
            e.to_string()
                .contains("rater B put every item in one category"),
            "{e}"
        );
    }

    /// 30 equal scores: the bootstrap degenerates to [x, x]; the
    /// bounded-mean interval has non-zero width at every finite n.
    #[test]
    fn thirty_equal_scores_have_a_non_zero_width_interval() {
        let mut h = Histogram::new();
        for _ in 0..30 {
            h.add(0.0);
        }
        let boot =
            bootstrap_mean_ci(&h, BOOTSTRAP_RESAMPLES, 0.95, &mut rng_for(0, &["t"])).unwrap();
        assert_eq!(boot.0, boot.1, "the bootstrap degenerates");
        let (lo, hi) = bounded_mean_ci(0.0, 30).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - 0.1135).abs() < 1e-3, "{hi}");
        let (lo, hi) = bounded_mean_ci(0.5, 30).unwrap();
        assert!(lo < 0.5 && hi > 0.5 && hi - lo > 0.3);
        assert!(bounded_mean_ci(1.5, 30).is_none() && bounded_mean_ci(0.5, 0).is_none());
        // A paired difference of 30 equal pairs: not [0, 0] either.
        let d = paired_bootstrap_diff(
            &[(0.0, 0.0); 30],
            BOOTSTRAP_RESAMPLES,
            0.95,
            &mut rng_for(0, &["d"]),
        )
        .unwrap();
        let (lo, hi) = d.ci.unwrap();
        assert_eq!(d.ci_method, "wilson_bounded");
        assert!(lo < 0.0 && hi > 0.0 && hi - lo > 0.1, "{d:?}");
    }

    #[test]
    fn kappa_edge_cases() {
        assert_eq!(
            cohen_kappa(&[vec![0, 0], vec![0, 0]], Z95),
            Err(KappaUndefined::Empty)
        );
        assert_eq!(
            cohen_kappa(&[vec![9, 0], vec![0, 0]], Z95),
            Err(KappaUndefined::NoVariation)
        );
        // perfect agreement with variation: κ = 1, SE 0, yet no zero-width interval:
        // the Wilson interval of p_o = 1 (n = 10) mapped through κ.
        let k = cohen_kappa(&[vec![5, 0], vec![0, 5]], Z95).unwrap();
        assert!((k.kappa - 1.0).abs() < 1e-12 && k.se < 1e-9);
        assert_eq!(k.ci_high, 1.0);
        assert_eq!(k.ci_method, "wilson_agreement");
        let (lo, _) = wilson(10, 10, Z95).unwrap();
        assert!((k.ci_low - (lo - 0.5) / 0.5).abs() < 1e-12, "{k:?}");
        assert!(k.ci_high - k.ci_low > 0.1, "{k:?}");
        // perfect disagreement: κ = −1
        let k = cohen_kappa(&[vec![0, 5], vec![5, 0]], Z95).unwrap();
        assert!((k.kappa + 1.0).abs() < 1e-12);
        assert!(k.ci_high > k.ci_low, "{k:?}");
        // a 3-category table (Fleiss, Levin & Paik style): κ computed from margins
        let k = cohen_kappa(&[vec![10, 2, 0], vec![1, 8, 1], vec![0, 2, 6]], Z95).unwrap();
        let (po, pe) = (24.0 / 30.0, (12.0 * 11.0 + 10.0 * 12.0 + 8.0 * 7.0) / 900.0);
        assert!((k.kappa - (po - pe) / (1.0 - pe)).abs() < 1e-12);
    }

    /// Fagerland, Lydersen & Laake (2013), "The McNemar test for binary matched-pairs
    /// data: mid-p and asymptotic are better than exact conditional", BMC Medical
    /// Research Methodology 13:91, Table 1 example (Bentur et al. 2009, b = 1, c = 7):
    /// exact conditional p = 0.070, mid-p = 0.039.
    #[test]
    fn mcnemar_published_example() {
        let m = mcnemar_exact(1, 7);
        assert!((m.p_exact - 0.0703125).abs() < 1e-12, "{}", m.p_exact); // 18/256
        assert!((m.p_mid - 0.0390625).abs() < 1e-12, "{}", m.p_mid); // 10/256
        assert_eq!(format!("{:.3}", m.p_exact), "0.070");
        assert_eq!(format!("{:.3}", m.p_mid), "0.039");
        // symmetric in b and c
        assert_eq!(mcnemar_exact(7, 1).p_exact, m.p_exact);
    }

    #[test]
    fn mcnemar_edge_and_large() {
        assert_eq!(mcnemar_exact(0, 0).p_exact, 1.0);
        // b = c: p capped at 1
        assert_eq!(mcnemar_exact(3, 3).p_exact, 1.0);
        // 0 vs 10: 2 / 2^10
        assert!((mcnemar_exact(0, 10).p_exact - 2.0 / 1024.0).abs() < 1e-15);
        // large n: finite and tiny, no overflow (0 vs 5000 → 2^-4999 underflows to 0)
        let m = mcnemar_exact(2000, 2600);
        assert!(m.p_exact > 0.0 && m.p_exact < 1e-10, "{}", m.p_exact);
        let m = mcnemar_exact(5000, 5010);
        assert!(m.p_exact > 0.9 && m.p_exact <= 1.0, "{}", m.p_exact);
    }

    /// Newcombe's square-and-add interval against the published values of the R package
    /// `contingencytables` (Fagerland, Lydersen & Laake, "Statistical Analysis of
    /// Contingency Tables", ch. 8): Cavo et al. (2012), table [[59, 6], [16, 80]]:
    /// estimate −0.0621, 95% CI −0.1186 to −0.0046 (the first row's rate minus the
    /// first column's, so B is the row: 6 positive on B alone, 16 on A alone). The exact
    /// McNemar p of the same table is 0.052479.
    #[test]
    fn newcombe_paired_published_example() {
        let (lo, hi) = newcombe_paired_diff(59, 16, 6, 80, Z95).unwrap();
        assert_eq!(format!("{lo:.4} {hi:.4}"), "-0.1186 -0.0046");
        assert_eq!(format!("{:.6}", mcnemar_exact(16, 6).p_exact), "0.052479");
        // Swapping the sides mirrors the interval.
        let (l2, h2) = newcombe_paired_diff(59, 6, 16, 80, Z95).unwrap();
        assert!((l2 + hi).abs() < 1e-12 && (h2 + lo).abs() < 1e-12);
        // 0 of 10 on A, 10 of 10 on B: the difference is 1, the interval below it and
        // never past it; no flip at all: the interval straddles 0 with width.
        let (lo, hi) = newcombe_paired_diff(0, 0, 10, 0, Z95).unwrap();
        assert!(hi == 1.0 && lo > 0.5 && lo < 1.0, "{lo} {hi}");
        let (lo, hi) = newcombe_paired_diff(5, 0, 0, 5, Z95).unwrap();
        assert!(lo < 0.0 && hi > 0.0 && hi - lo > 0.2, "{lo} {hi}");
        assert_eq!(newcombe_paired_diff(0, 0, 0, 0, Z95), None);
    }

    proptest::proptest! {
        /// Any table: an interval inside [−1, 1] holding the estimate.
        #[test]
        fn newcombe_paired_holds_its_estimate(
            both in 0u64..60, only_a in 0u64..60, only_b in 0u64..60, neither in 0u64..60,
        ) {
            let n = both + only_a + only_b + neither;
            proptest::prop_assume!(n > 0);
            let d = (only_b as f64 - only_a as f64) / n as f64;
            let (lo, hi) = newcombe_paired_diff(both, only_a, only_b, neither, Z95).unwrap();
            proptest::prop_assert!((-1.0..=1.0).contains(&lo) && (-1.0..=1.0).contains(&hi));
            proptest::prop_assert!(lo <= d + 1e-12 && d <= hi + 1e-12, "{} {} {}", lo, d, hi);
            proptest::prop_assert!(hi > lo);
        }
    }

    #[test]
    fn paired_bootstrap_is_seeded_and_brackets() {
        let pairs: Vec<(f64, f64)> = (0..60)
            .map(|i| ((i % 3) as f64 * 0.5, (i % 4) as f64 * 0.25))
            .collect();
        let a = paired_bootstrap_diff(&pairs, 1000, 0.95, &mut rng_for(1, &["p"])).unwrap();
        let b = paired_bootstrap_diff(&pairs, 1000, 0.95, &mut rng_for(1, &["p"])).unwrap();
        assert_eq!(a, b);
        let want = pairs.iter().map(|(x, y)| x - y).sum::<f64>() / 60.0;
        assert!((a.mean_diff - want).abs() < 1e-12);
        let (lo, hi) = a.ci.unwrap();
        assert!(lo < a.mean_diff && a.mean_diff < hi);
        assert_eq!(
            paired_bootstrap_diff(&[], 1000, 0.95, &mut rng_for(1, &["p"])),
            None
        );
        // identical runs: difference exactly 0 with a degenerate CI
        let same: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, i as f64)).collect();
        let d = paired_bootstrap_diff(&same, 500, 0.95, &mut rng_for(1, &["p"])).unwrap();
        assert_eq!((d.mean_diff, d.ci), (0.0, Some((0.0, 0.0))));
    }
}

//! Paired comparisons of per-behavior outcomes: the machinery `gauntlet compare` (two
//! runs) and a run's per-transform analysis (a transformed attack against the same attack
//! without transforms) share. A pair is one behavior (one trial × behavior in a
//! multi-trial run) observed on both sides, given as (A, B); rates are compared by the
//! exact McNemar test on the discordant pairs (with Newcombe's paired interval of the
//! difference B − A beside it), scores by a paired percentile bootstrap of the mean
//! difference B − A.

use crate::rng::rng_for;
use crate::stats::{
    BOOTSTRAP_RESAMPLES, McNemar, PairedDiff, Z95, mcnemar_exact, newcombe_paired_diff,
    paired_bootstrap_diff,
};

/// The comparison of one cell × metric.
#[derive(Debug, Clone, PartialEq)]
pub enum Comparison {
    Binary {
        n: u64,
        rate_a: f64,
        rate_b: f64,
        test: McNemar,
        /// The 95% interval of B − A (Newcombe's square-and-add for paired proportions,
        /// [`newcombe_paired_diff`]); the test, not the interval, decides significance.
        ci: Option<(f64, f64)>,
    },
    Score {
        mean_a: f64,
        mean_b: f64,
        diff: PairedDiff,
    },
    NotApplicable(String),
}

/// Compares paired per-behavior values: McNemar for 0/1 outcomes, a paired bootstrap
/// (seeded by `seed_parts`) for scores.
pub fn compare_pairs(pairs: &[(f64, f64)], score: bool, seed_parts: &[&str]) -> Comparison {
    if pairs.is_empty() {
        return Comparison::NotApplicable(
            "no behavior is in the metric's population in both runs".into(),
        );
    }
    let n = pairs.len() as f64;
    let mean_a = pairs.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_b = pairs.iter().map(|p| p.1).sum::<f64>() / n;
    let binary = pairs
        .iter()
        .all(|(a, b)| (*a == 0.0 || *a == 1.0) && (*b == 0.0 || *b == 1.0));
    if !score && binary {
        let only_a = pairs.iter().filter(|(a, b)| *a == 1.0 && *b == 0.0).count() as u64;
        let only_b = pairs.iter().filter(|(a, b)| *a == 0.0 && *b == 1.0).count() as u64;
        let both = pairs.iter().filter(|(a, b)| *a == 1.0 && *b == 1.0).count() as u64;
        let neither = pairs.len() as u64 - only_a - only_b - both;
        return Comparison::Binary {
            n: pairs.len() as u64,
            rate_a: mean_a,
            rate_b: mean_b,
            test: mcnemar_exact(only_a, only_b),
            ci: newcombe_paired_diff(both, only_a, only_b, neither, Z95),
        };
    }
    // B − A: pairs are given as (b, a) to the bootstrap of a − b.
    let flipped: Vec<(f64, f64)> = pairs.iter().map(|(a, b)| (*b, *a)).collect();
    let diff = paired_bootstrap_diff(
        &flipped,
        BOOTSTRAP_RESAMPLES,
        0.95,
        &mut rng_for(0, seed_parts),
    )
    .expect("pairs is not empty");
    Comparison::Score {
        mean_a,
        mean_b,
        diff,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_pairs_uses_mcnemar_for_rates_and_bootstrap_for_scores() {
        // A positive on 1 behavior B is not, B positive on 7 A is not (Fagerland et al.).
        let mut pairs = vec![(1.0, 0.0)];
        pairs.extend(std::iter::repeat_n((0.0, 1.0), 7));
        pairs.extend(std::iter::repeat_n((1.0, 1.0), 4));
        match compare_pairs(&pairs, false, &["t"]) {
            Comparison::Binary { n, test, ci, .. } => {
                assert_eq!((n, test.b, test.c), (12, 1, 7));
                assert!((test.p_exact - 18.0 / 256.0).abs() < 1e-12);
                assert_eq!(ci, newcombe_paired_diff(4, 1, 7, 0, Z95));
            }
            other => panic!("{other:?}"),
        }
        match compare_pairs(&[(0.25, 0.5), (0.5, 0.75), (0.0, 0.5)], true, &["t"]) {
            Comparison::Score { diff, .. } => {
                assert!((diff.mean_diff - (0.25 + 0.25 + 0.5) / 3.0).abs() < 1e-12);
                let (lo, hi) = diff.ci.unwrap();
                assert!(lo <= diff.mean_diff && diff.mean_diff <= hi);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            compare_pairs(&[], false, &["t"]),
            Comparison::NotApplicable(_)
        ));
    }
}

//! The one cut of a job into shards: keyed, weighted units laid out in key order and
//! the cumulative weight cut into N equal spans.
//!
//! Every kind of job names its units by a key that depends on the job alone (a digest
//! of what the unit is: a red-team unit's call scope, an agent-exam scenario run's
//! path, id and pass, a detect-exam scenario file's origin and path) and gives each a
//! weight (the red-team run: its planned model calls; both exams: 1, since a unit's
//! cost is not known before it runs). The units are sorted by `(key, canonical index)`
//! and a unit whose weight starts at `c` of the total `W` belongs to shard `⌊c·N / W⌋`.
//! So each shard holds a contiguous run of the key order (an even mix of the job) and
//! its weight differs from W/N by less than one unit's; with unit weights, shard sizes
//! differ by at most one. Which scheme a job's keys follow is named in its shard
//! record (`partition`): a merge refuses shards cut by another.

use crate::shard::Shard;

/// The partition key of a unit: the first 8 bytes of its digest, big-endian.
pub fn key(digest: &[u8]) -> u64 {
    u64::from_be_bytes(
        digest[..8]
            .try_into()
            .expect("a digest of at least 8 bytes"),
    )
}

/// The shard (0-based) of every unit, by canonical index: `order` holds one
/// `(key, canonical index)` per unit (any order, indexes `0..order.len()`), `weight`
/// weighs a unit by its canonical index. Memory: the 16 bytes per unit of `order`
/// while it is cut, 4 kept.
pub fn cut(mut order: Vec<(u64, u64)>, weight: impl Fn(u64) -> u64, count: u32) -> Vec<u32> {
    order.sort_unstable();
    let total: u128 = order.iter().map(|&(_, i)| u128::from(weight(i))).sum();
    let mut owner = vec![0u32; order.len()];
    let mut cum: u128 = 0;
    for (_, idx) in order {
        owner[idx as usize] = (cum * u128::from(count)).checked_div(total).unwrap_or(0) as u32;
        cum += u128::from(weight(idx));
    }
    owner
}

/// The canonical indexes `owner` gives shard `shard`, ascending.
pub fn units_of(owner: &[u32], shard: Shard) -> Vec<u64> {
    owner
        .iter()
        .enumerate()
        .filter(|(_, s)| **s == shard.index)
        .map(|(i, _)| i as u64)
        .collect()
}

/// Whether shard `shard` holds each unit, by canonical index.
pub fn owned(owner: &[u32], shard: Shard) -> Vec<bool> {
    owner.iter().map(|&s| s == shard.index).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A pinned cut: keys 40, 10, 30, 20 weigh 1, 2, 3, 4 (W = 10); in key order the
    /// weights start at 0 (10), 2 (20), 6 (30), 9 (40), so 2 shards give 0, 0, 1, 1
    /// and 3 shards give ⌊3c/10⌋ = 0, 0, 1, 2.
    #[test]
    fn a_pinned_weighted_cut() {
        let order = vec![(40, 0), (10, 1), (30, 2), (20, 3)];
        let w = |i: u64| i + 1;
        assert_eq!(cut(order.clone(), w, 2), vec![1, 0, 1, 0]);
        assert_eq!(cut(order.clone(), w, 3), vec![2, 0, 1, 0]);
        let s = Shard { index: 0, count: 3 };
        assert_eq!(units_of(&cut(order.clone(), w, 3), s), vec![1, 3]);
        assert_eq!(owned(&cut(order, w, 3), s), vec![false, true, false, true]);
        assert_eq!(key(&[0, 0, 0, 0, 0, 0, 1, 2, 0xff]), 0x0102);
    }

    proptest! {
        /// Every unit lands in a shard below N; with unit weights, sizes differ by at
        /// most one; the cut depends on the keys alone, not on the order they come in.
        #[test]
        fn cuts_are_balanced_total_and_order_free(
            keys in proptest::collection::vec(any::<u64>(), 0..300),
            n in 1u32..20,
        ) {
            let order: Vec<(u64, u64)> = keys.iter().enumerate().map(|(i, &k)| (k, i as u64)).collect();
            let a = cut(order.clone(), |_| 1, n);
            prop_assert_eq!(a.len(), keys.len());
            let mut sizes = vec![0usize; n as usize];
            for &s in &a {
                prop_assert!(s < n);
                sizes[s as usize] += 1;
            }
            if !keys.is_empty() {
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                prop_assert!(hi - lo <= 1, "{:?}", sizes);
            }
            let mut rev = order;
            rev.reverse();
            prop_assert_eq!(cut(rev, |_| 1, n), a);
        }

        /// With unit weights the unit at position `k` of the key order (of `L`) belongs
        /// to shard `⌊k·N / L⌋`: equal-length spans, the exams' cut before it was this one.
        #[test]
        fn unit_weights_cut_by_position(
            keys in proptest::collection::vec(any::<u64>(), 1..300),
            n in 1u32..20,
        ) {
            let mut order: Vec<(u64, u64)> = keys.iter().enumerate().map(|(i, &k)| (k, i as u64)).collect();
            let owner = cut(order.clone(), |_| 1, n);
            order.sort_unstable();
            for (k, &(_, idx)) in order.iter().enumerate() {
                prop_assert_eq!(u64::from(owner[idx as usize]), k as u64 * u64::from(n) / keys.len() as u64);
            }
        }

        /// Weighted: each shard's weight is within one unit's weight of W/N.
        #[test]
        fn weighted_spans_are_within_one_unit(
            units in proptest::collection::vec((any::<u64>(), 1u64..50), 1..200),
            n in 1u32..10,
        ) {
            let order: Vec<(u64, u64)> = units.iter().enumerate().map(|(i, &(k, _))| (k, i as u64)).collect();
            let w = |i: u64| units[i as usize].1;
            let owner = cut(order, w, n);
            let total: u64 = units.iter().map(|u| u.1).sum();
            let max = units.iter().map(|u| u.1).max().unwrap();
            let mut per = vec![0u64; n as usize];
            for (i, &s) in owner.iter().enumerate() {
                per[s as usize] += w(i as u64);
            }
            for p in per {
                prop_assert!((p as f64 - total as f64 / f64::from(n)).abs() <= max as f64, "{p} of {total}");
            }
        }
    }
}

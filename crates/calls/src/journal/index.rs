//! The in-memory index of the records a journal held when it was opened.

/// offset (40 bits) | length (24 bits).
pub(super) type Packed = u64;

/// Entries (64 key bits, packed offset/length) sorted by key bits, with a table of
/// where each bucket of the key's top bits starts. A lookup reads the table and then
/// one small bucket, instead of binary-searching the whole array: on a large journal
/// that search missed the cache at most of its ~18 steps and was the biggest single
/// cost of a complete rerun (BENCHMARKS.md). Keys are sha256 bits, so buckets hold
/// about two to four entries; any key distribution still gives correct answers (a
/// skewed one only makes some buckets longer).
///
/// Memory: 16 bytes per entry plus at most 2 bytes per entry for the table.
#[derive(Debug, Default)]
pub(super) struct Index {
    entries: Vec<(u64, Packed)>,
    /// `starts[t]..starts[t + 1]`: the entries whose top `bits` key bits are `t`
    /// (empty for small indexes, which are searched whole).
    starts: Vec<u32>,
    bits: u32,
}

/// Below this many entries the whole array is searched (it fits in a few cache lines).
const SMALL: usize = 64;

impl Index {
    /// Builds the index of `entries` (in any order).
    pub(super) fn new(mut entries: Vec<(u64, Packed)>) -> Index {
        entries.sort_unstable();
        let n = entries.len();
        if n < SMALL || u32::try_from(n).is_err() {
            return Index {
                entries,
                starts: Vec::new(),
                bits: 0,
            };
        }
        // 2^bits buckets with 2^(floor(log2 n)) <= n: two to four entries per bucket.
        let bits = n.ilog2() - 1;
        let buckets = 1usize << bits;
        let mut starts = Vec::with_capacity(buckets + 1);
        let mut i = 0;
        for t in 0..buckets as u64 {
            while i < n && (entries[i].0 >> (64 - bits)) < t {
                i += 1;
            }
            starts.push(i as u32);
        }
        starts.push(n as u32);
        Index {
            entries,
            starts,
            bits,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The packed location of the first entry with key bits `k`.
    pub(super) fn find(&self, k: u64) -> Option<Packed> {
        let bucket = if self.starts.is_empty() {
            &self.entries[..]
        } else {
            let t = (k >> (64 - self.bits)) as usize;
            &self.entries[self.starts[t] as usize..self.starts[t + 1] as usize]
        };
        let i = bucket.partition_point(|e| e.0 < k);
        bucket.get(i).filter(|e| e.0 == k).map(|e| e.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The first entry with key `k` in sorted order, by a linear scan.
    fn linear(entries: &[(u64, Packed)], k: u64) -> Option<Packed> {
        let mut sorted = entries.to_vec();
        sorted.sort_unstable();
        sorted.iter().find(|e| e.0 == k).map(|e| e.1)
    }

    /// `linear` for many probes.
    fn check(entries: &[(u64, Packed)], probes: impl Iterator<Item = u64>) -> Result<(), String> {
        let index = Index::new(entries.to_vec());
        let mut sorted = entries.to_vec();
        sorted.sort_unstable();
        for k in probes {
            let want = sorted.iter().find(|e| e.0 == k).map(|e| e.1);
            if index.find(k) != want {
                return Err(format!("key {k:#x}: {:?}, want {want:?}", index.find(k)));
            }
        }
        Ok(())
    }

    proptest! {
        /// Any keys (uniform, clustered in a few top-bit buckets, or repeated), any
        /// number of them: the index finds exactly what a linear scan finds.
        #[test]
        fn finds_what_a_scan_finds(
            keys in prop::collection::vec(any::<u64>(), 0..600),
            top in prop::sample::select(vec![0u64, 1, u64::MAX >> 3]),
            clustered in any::<bool>(),
            probes in prop::collection::vec(any::<u64>(), 0..40),
        ) {
            let keys: Vec<u64> = keys
                .iter()
                .map(|&k| if clustered { (top << 61) | (k >> 3) } else { k })
                .collect();
            let entries: Vec<(u64, Packed)> = keys
                .iter()
                .enumerate()
                .map(|(i, &k)| (k, i as u64))
                .chain(keys.iter().take(5).map(|&k| (k, 9_999)))
                .collect();
            prop_assert_eq!(Index::new(entries.clone()).len(), entries.len());
            let checked = check(&entries, keys.iter().chain(&probes).copied());
            prop_assert!(checked.is_ok(), "{:?}", checked);
        }
    }

    #[test]
    fn extreme_keys_and_sizes() {
        for n in [0usize, 1, 63, 64, 65, 1000, 4096] {
            let mut entries: Vec<(u64, Packed)> = (0..n as u64)
                .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i))
                .collect();
            entries.push((0, 1 << 40));
            entries.push((u64::MAX, 2 << 40));
            let index = Index::new(entries.clone());
            for &(k, _) in &entries {
                assert_eq!(index.find(k), linear(&entries, k), "n {n} key {k:#x}");
            }
            assert_eq!(index.find(u64::MAX - 1), None);
        }
    }
}

//! Seeded randomness. Every random choice in a run comes from a ChaCha8 generator (a
//! portable, documented stream: the same seed gives the same numbers on every platform
//! and in every release) seeded from the run seed and the identity of the thing being
//! randomised (a cell, a metric, a trial). Nothing shares a generator across units of
//! work, so results cannot depend on scheduling or concurrency.

use crate::hash::HashWriter;
use rand::SeedableRng;
pub use rand_chacha::ChaCha8Rng;

/// Derives a 256-bit seed from the run seed and a list of identity parts.
pub fn derive_seed(seed: u64, parts: &[&str]) -> [u8; 32] {
    let mut h = HashWriter::new();
    h.field(b"gauntlet-seed-v1");
    h.field(&seed.to_le_bytes());
    for p in parts {
        h.field(p.as_bytes());
    }
    h.finish()
}

/// A generator for the given identity.
pub fn rng_for(seed: u64, parts: &[&str]) -> ChaCha8Rng {
    ChaCha8Rng::from_seed(derive_seed(seed, parts))
}

/// A derived 64-bit seed, e.g. to pass as a model's sampling seed.
pub fn derive_u64(seed: u64, parts: &[&str]) -> u64 {
    let s = derive_seed(seed, parts);
    u64::from_le_bytes(s[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn same_identity_same_stream() {
        let a: u64 = rng_for(7, &["cell", "x"]).random();
        let b: u64 = rng_for(7, &["cell", "x"]).random();
        let c: u64 = rng_for(7, &["cell", "y"]).random();
        let d: u64 = rng_for(8, &["cell", "x"]).random();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn stream_is_pinned() {
        // The generator and derivation are part of the reproducibility contract:
        // a change here changes every bootstrap CI ever published.
        assert_eq!(derive_u64(0, &["pin"]), derive_u64(0, &["pin"]));
        let v: u64 = rng_for(0, &["pin"]).random();
        assert_eq!(v, PINNED);
    }
    const PINNED: u64 = 5770066626673722455;
}

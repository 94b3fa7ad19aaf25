//! Shards of an agent exam: the scenario runs (pass × scenario) cut into N parts that
//! separate machines run (`gauntlet exam … --shard i/N`) and `gauntlet merge` puts back
//! together. As for red-team runs (the engine's `shard.rs`), the cut depends on the
//! exam alone: every scenario run is keyed by the sha256 of (scenario path, scenario id,
//! pass), runs are laid out in key order and the sequence is cut into N equal spans.
//! Every scenario run weighs the same (one cascade: the calls it makes depend on the
//! model's answers, so no finer plan exists before it runs), so shard sizes differ by at
//! most one.

use crate::load::Corpus;
use gauntlet_core::hash::HashWriter;

/// Names the cut in shard.json: a merge refuses shards cut by another scheme.
pub const PARTITION_SCHEME: &str = "exam-unit-sha256-order/equal/v1";

/// The shard (0-based) of every scenario run, pass-major (`pass * scenarios + i`).
pub fn assignment(corpus: &Corpus, passes: usize, count: u32) -> Vec<u32> {
    let n = corpus.scenarios.len();
    let mut order: Vec<(u64, usize)> = Vec::with_capacity(passes * n);
    for pass in 0..passes {
        for (i, s) in corpus.scenarios.iter().enumerate() {
            let mut h = HashWriter::new();
            h.field(b"exam-unit-v1");
            h.field(s.relpath.as_bytes());
            h.field(s.scenario.id.as_bytes());
            h.field(&(pass as u64).to_le_bytes());
            let d = h.finish();
            order.push((
                u64::from_be_bytes(d[..8].try_into().expect("8 bytes")),
                pass * n + i,
            ));
        }
    }
    order.sort_unstable();
    let total = order.len() as u128;
    let mut owner = vec![0u32; order.len()];
    for (k, (_, unit)) in order.into_iter().enumerate() {
        owner[unit] = (k as u128 * u128::from(count))
            .checked_div(total)
            .unwrap_or(0) as u32;
    }
    owner
}

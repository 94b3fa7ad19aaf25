//! How both exams are cut into shards. The agent exam: every scenario run (pass ×
//! scenario) is keyed by the sha256 of (scenario path, scenario id, pass), runs are laid
//! out in key order and the sequence is cut into N equal spans. As for red-team runs
//! (the engine's `shard.rs`), the cut depends on the exam alone. Every scenario run
//! weighs the same (one cascade: the calls it makes depend on the model's answers, so
//! no finer plan exists before it runs), so shard sizes differ by at most one
//! (`gauntlet_job::partition`, the red-team run's cut with unit weights). The detect
//! exam: see [`detect_assignment`].

use gauntlet_core::hash::HashWriter;
use gauntlet_corpus::load::Corpus;
use gauntlet_job::partition;

/// Names the cut in shard.json: a merge refuses shards cut by another scheme.
pub const PARTITION_SCHEME: &str = "exam-unit-sha256-order/equal/v1";

/// The shard (0-based) of every scenario run, pass-major (`pass * scenarios + i`).
pub fn assignment(corpus: &Corpus, passes: usize, count: u32) -> Vec<u32> {
    let n = corpus.scenarios.len();
    let mut order: Vec<(u64, u64)> = Vec::with_capacity(passes * n);
    for pass in 0..passes {
        for (i, s) in corpus.scenarios.iter().enumerate() {
            let mut h = HashWriter::new();
            h.field(b"exam-unit-v1");
            h.field(s.relpath.as_bytes());
            h.field(s.scenario.id.as_bytes());
            h.field(&(pass as u64).to_le_bytes());
            order.push((partition::key(&h.finish()), (pass * n + i) as u64));
        }
    }
    partition::cut(order, |_| 1, count)
}

/// Names the detect exam's cut in detect_shard.json.
pub const DETECT_PARTITION_SCHEME: &str = "detect-unit-sha256-order/equal/v1";

/// The shard (0-based) of every unit of a detect exam, in the exam's file order. A unit
/// is one scenario file, named by its origin (`corpus`, `extra`, `detector:<name>`) and
/// relpath; units are keyed by the sha256 of that name and cut into N equal spans of
/// key order, as the agent exam's runs are. Every unit weighs the same: a scenario's
/// fleet run takes milliseconds, and its size is not known before it is read.
pub fn detect_assignment<'a>(
    units: impl IntoIterator<Item = (&'a str, &'a str)>,
    count: u32,
) -> Vec<u32> {
    let order: Vec<(u64, u64)> = units
        .into_iter()
        .enumerate()
        .map(|(i, (origin, relpath))| {
            let mut h = HashWriter::new();
            h.field(b"detect-unit-v1");
            h.field(origin.as_bytes());
            h.field(relpath.as_bytes());
            (partition::key(&h.finish()), i as u64)
        })
        .collect();
    partition::cut(order, |_| 1, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_units_are_cut_into_balanced_shards_by_name_alone() {
        let names: Vec<(String, String)> = (0..103)
            .map(|i| ("corpus".to_string(), format!("f/{i}.yaml")))
            .collect();
        let refs = || names.iter().map(|(o, r)| (o.as_str(), r.as_str()));
        for n in [1u32, 2, 4, 7, 103, 200] {
            let a = detect_assignment(refs(), n);
            assert_eq!(a.len(), names.len());
            let mut sizes = vec![0usize; n as usize];
            for s in &a {
                sizes[*s as usize] += 1;
            }
            let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(hi - lo <= 1, "n={n}: {sizes:?}");
            // Stable: the same names give the same cut, whatever order they come in.
            let mut rev: Vec<(&str, &str)> = refs().collect();
            rev.reverse();
            let mut b = detect_assignment(rev, n);
            b.reverse();
            assert_eq!(a, b);
        }
    }
}

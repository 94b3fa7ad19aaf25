//! Deterministic shards: one evaluation split across machines, merged back byte for byte.
//!
//! `gauntlet run CONFIG --shard i/N` runs shard `i` (0-based, `0 ≤ i < N`) of a stable
//! partition of the run's units (trial × attack × target × behavior); `gauntlet merge`
//! ([`crate::merge`]) puts the N shard directories back together. The partition depends
//! on the plan alone — never on the machine, the clock or the concurrency:
//!
//! 1. every unit is keyed by the first 8 bytes of its *unit scope* (the sha256 that keys
//!    its model calls: target, attack, dataset version, behavior, trial and its seed),
//!    ties broken by the canonical unit index;
//! 2. units are laid out in that key order, each weighing its planned model calls (the
//!    attack's planned target, attacker and in-loop judge calls, plus one grader call per
//!    attempt for each judge with a grader — at least 1);
//! 3. the cumulative weight `0..W` is cut into N equal spans: a unit whose weight starts
//!    at `c` belongs to shard `⌊c·N / W⌋` (`gauntlet_job::partition`, the cut both exams
//!    use too, with unit weights).
//!
//! So each shard holds a contiguous run of the hash order (an even mix of every cell) and
//! its planned calls differ from W/N by less than one unit's weight. A shard runs its
//! units in canonical order, so its transcripts are a subsequence of the one-machine
//! run's, which is what lets the merge interleave them back without sorting.

use crate::plan::Plan;
use crate::run::{Identities, trial_seeds, unit_scope};
use gauntlet_job::partition;

/// Names the partition scheme in run.json (`shard.partition`): a merge refuses shards
/// cut by another scheme.
pub const PARTITION_SCHEME: &str = "unit-scope-sha256-order/planned-calls/v1";

/// `i/N`, the set checks and the shard records every kind of shard shares.
pub use gauntlet_job::shard::{
    MAX_SHARDS, Member, Mismatch, SetError, SetRules, Shard, check_set, open_record, read_json,
    shown,
};

/// Planned model calls of one unit of each attack (see the module comment).
pub fn unit_weights(plan: &Plan) -> Vec<u64> {
    let graders = plan.graders.iter().flatten().count() as u64;
    plan.attacks
        .iter()
        .map(|a| {
            let pc = a.planned_calls();
            (pc.target + pc.attacker + pc.judge + u64::from(a.max_attempts()) * graders).max(1)
        })
        .collect()
}

/// The shard (0-based) of every unit, by canonical unit index (trial-major, as
/// `run/unit.rs` numbers them), for a run of `trials` trials cut into `count` shards.
/// Memory: 16 bytes per unit while it is computed, 4 kept.
pub fn assignment(plan: &Plan, trials: u32, count: u32) -> Vec<u32> {
    let ids = Identities::new(plan);
    let seeds = trial_seeds(plan.config.seed, trials.max(1));
    let weights = unit_weights(plan);
    let per_trial = plan.units();
    let total_units = per_trial * seeds.len() as u64;
    let mut order: Vec<(u64, u64)> = Vec::with_capacity(total_units as usize);
    for (t, &seed) in seeds.iter().enumerate() {
        for i in 0..per_trial {
            let u = plan.unit(i);
            let b = &plan.datasets[u.dataset].behaviors[u.behavior];
            let scope = unit_scope(plan, &ids, u, b, t as u32, seed);
            order.push((partition::key(&scope), t as u64 * per_trial + i));
        }
    }
    partition::cut(
        order,
        |idx| weights[plan.unit(idx % per_trial).attack],
        count,
    )
}

/// The canonical unit indexes of shard `shard`, ascending.
pub fn units_of(plan: &Plan, trials: u32, shard: Shard) -> Vec<u64> {
    partition::units_of(&assignment(plan, trials, shard.count), shard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_run_names() {
        let s = Shard { index: 2, count: 8 };
        assert_eq!(s.dir_name("smoke"), "smoke.shard-2-of-8");
        assert!(gauntlet_redteam::config::valid_run_name(
            &s.dir_name("smoke")
        ));
        assert_eq!(s.run_id("smoke-abc"), "smoke-abc~shard-2-of-8");
    }
}

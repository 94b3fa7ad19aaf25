//! The shard partition (`shard.rs`) is a partition: every unit in exactly one shard,
//! each shard's planned calls within one unit's weight of an equal share, the same
//! cut every time it is computed.

use gauntlet_engine::Registry;
use gauntlet_engine::config;
use gauntlet_engine::plan::Plan;
use gauntlet_engine::shard::{Shard, assignment, unit_weights, units_of};
use proptest::prelude::*;
use std::path::Path;

fn plan(limit: u32, trials: u32, seed: u64) -> Plan {
    let text = format!(
        "run_name: p\nseed: {seed}\ntrials: {trials}\ntargets: [reference, {{name: reference, params: {{name: other}}}}]\nattacks: [static, template, {{name: best_of_n, params: {{n: 5}}}}]\ndatasets:\n  - {{name: demo, params: {{limit: {limit}}}}}\njudges: [refusal_match, {{name: rubric, params: {{grader: {{name: reference}}}}}}]\nmetrics: [asr]\n"
    );
    Plan::build(config::parse(&text, Path::new("p.yaml"), &Registry).unwrap()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn every_unit_is_in_exactly_one_balanced_shard(
        limit in 1u32..30, trials in 1u32..3, seed in 0u64..1000, n in 1u32..40,
    ) {
        let p = plan(limit, trials, seed);
        let total = p.units() * u64::from(trials);
        let owner = assignment(&p, trials, n);
        prop_assert_eq!(owner.len() as u64, total);
        prop_assert_eq!(&owner, &assignment(&p, trials, n), "the cut is not stable");
        let weights = unit_weights(&p);
        let w = |i: u64| weights[p.unit(i % p.units()).attack];
        let all: u64 = (0..total).map(w).sum();
        let heaviest = *weights.iter().max().unwrap();
        let mut seen = vec![0u32; total as usize];
        for i in 0..n {
            let mine = units_of(&p, trials, Shard { index: i, count: n });
            prop_assert!(mine.windows(2).all(|x| x[0] < x[1]), "not ascending");
            for &u in &mine {
                seen[u as usize] += 1;
            }
            let load: u64 = mine.iter().map(|&u| w(u)).sum();
            let fair = all as f64 / f64::from(n);
            prop_assert!(
                (load as f64 - fair).abs() <= heaviest as f64,
                "shard {i}/{n}: {load} planned calls, fair share {fair}, heaviest unit {heaviest}"
            );
        }
        prop_assert!(seen.iter().all(|&c| c == 1), "a unit in no shard or in two");
    }
}

/// The cut depends on the plan only: the same config built twice (another process,
/// machine or concurrency builds the same plan) cuts the same, and another seed cuts
/// otherwise (the unit keys include it).
#[test]
fn the_cut_depends_on_the_plan_alone() {
    assert_eq!(
        assignment(&plan(20, 1, 0), 1, 4),
        assignment(&plan(20, 1, 0), 1, 4)
    );
    assert_ne!(
        assignment(&plan(20, 1, 0), 1, 4),
        assignment(&plan(20, 1, 1), 1, 4)
    );
}

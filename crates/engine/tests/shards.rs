//! The shard partition (`shard.rs`) is a partition: every unit in exactly one shard,
//! each shard's planned calls within one unit's weight of an equal share, the same
//! cut every time it is computed.

use gauntlet_engine::plan::Plan;
use gauntlet_engine::shard::{Shard, assignment, unit_weights, units_of};
use gauntlet_redteam::config;
use gauntlet_redteam::registry::Registry;
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

/// A plan whose `imported` attacks each apply to one garak probe's prompts (the real
/// report in the CLI's fixtures: `dan.Dan_11_0` 1 prompt, `test.Test` 8), beside an
/// attack that applies to every behavior, over two targets and two datasets.
fn sparse_plan(limit: u32, trials: u32) -> Plan {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cli/tests/fixtures/import/garak-dan-test.report.jsonl")
        .canonicalize()
        .unwrap();
    let sha = gauntlet_redteam::datasets::imported::file_sha256(&file).unwrap();
    let text = format!(
        "run_name: s\ntrials: {trials}\ntargets: [reference, {{name: reference, params: {{name: other}}}}]\nattacks:\n  - {{name: imported, params: {{source: dan.Dan_11_0, generations: 5}}}}\n  - static\n  - {{name: imported, params: {{source: nothing-of-this-file}}}}\n  - {{name: imported, params: {{source: test.Test, generations: 5}}}}\ndatasets:\n  - {{name: imported, params: {{tool: garak, file: '{}', sha256: {sha}}}}}\n  - {{name: demo, params: {{limit: {limit}}}}}\njudges: [refusal_match]\nmetrics: [asr]\n",
        file.display()
    );
    Plan::build(config::parse(&text, Path::new("s.yaml"), &Registry).unwrap()).unwrap()
}

/// Units exist only where an attack applies: per target, 1 (dan) + (9 + limit)
/// (static) + 0 (a source the file lacks) + 8 (test) behaviors. `unit` and
/// `unit_index` are inverses over every unit, each applicable (attack, target, dataset,
/// behavior) is exactly one unit, `cell_end` is one past the cell's last unit, and the
/// shard cut is still a partition.
#[test]
fn a_sparse_plan_numbers_only_the_pairs_its_attacks_apply_to() {
    for (limit, trials) in [(3u32, 1u32), (1, 2), (7, 3)] {
        let p = sparse_plan(limit, trials);
        let per_target = 1 + (9 + u64::from(limit)) + 8;
        assert_eq!(p.units(), 2 * per_target);
        assert_eq!(p.max_attempts(), 2 * (5 + (9 + u64::from(limit)) + 5 * 8));
        assert_eq!(p.cell_units(2, 0), 0);
        assert_eq!(p.cell_units(0, 0), 1);
        assert_eq!(p.cell_units(3, 1), 0);
        let mut seen = std::collections::BTreeSet::new();
        let mut last_of_cell = vec![None; p.cells()];
        for u in 0..p.units() {
            let r = p.unit(u);
            assert!(p.applies(r.attack, r.dataset, r.behavior), "{r:?}");
            assert_eq!(p.unit_index(r), u, "{r:?}");
            assert!(seen.insert((r.attack, r.target, r.dataset, r.behavior)));
            last_of_cell[p.cell(r, 0)] = Some(u);
        }
        let applicable: usize = (0..p.attacks.len())
            .flat_map(|a| (0..p.datasets.len()).map(move |d| (a, d)))
            .map(|(a, d)| {
                (0..p.datasets[d].behaviors.len())
                    .filter(|&b| p.applies(a, d, b))
                    .count()
                    * p.targets.len()
            })
            .sum();
        assert_eq!(seen.len(), applicable);
        let last_trial = u64::from(trials - 1) * p.units();
        let mut prev = 0;
        for (c, last) in last_of_cell.iter().enumerate() {
            let end = p.cell_end(c, trials);
            assert!(end >= prev, "cell_end decreases at {c}");
            prev = end;
            if let Some(u) = last {
                assert_eq!(end, last_trial + u + 1, "cell {c}");
            }
        }
        let total = p.units() * u64::from(trials);
        let mut owners = vec![0u32; total as usize];
        for i in 0..3 {
            for u in units_of(&p, trials, Shard { index: i, count: 3 }) {
                owners[u as usize] += 1;
            }
        }
        assert!(owners.iter().all(|&n| n == 1));
    }
}

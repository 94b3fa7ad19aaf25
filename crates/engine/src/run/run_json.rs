//! run.json: the run's identity and status (and a shard's), written beside results.

use super::status::Status;
use super::unit::trial_seeds;
use crate::plan::Plan;
use crate::usage::CellUsage;
use gauntlet_results::{DatasetRecord, RunRecord, ShardRecord, UnitCounts};
use serde::Serialize;

/// run.json: everything needed to know what this run was, and nothing that varies
/// between reruns (timings live in sessions.jsonl).
pub fn run_json(plan: &Plan, status: &Status, units_done: u64, attempts: u64) -> RunRecord {
    let trials = plan.config.trials.max(1);
    RunRecord {
        run_name: plan.config.run_name.clone(),
        run_id: plan.run_id.clone(),
        harness: "gauntlet".into(),
        harness_version: gauntlet_core::HARNESS_VERSION.into(),
        config_hash: plan.config_hash.clone(),
        seed: plan.config.seed,
        mode: plan.mode_label().into(),
        status: status.as_string(),
        config: plan.config.canonical(),
        datasets: plan
            .datasets
            .iter()
            .map(|d| DatasetRecord {
                name: d.name.clone(),
                version: d.version.clone(),
                sha256: d.sha256.clone(),
                behaviors: d.behaviors.len() as u64,
                // Only sources that have one (AgentDojo's pins), so other runs are unchanged.
                provenance: d.provenance.clone(),
            })
            .collect(),
        units: UnitCounts {
            planned: plan.units() * u64::from(trials),
            done: units_done,
        },
        attempts,
        // Not in the canonical config (it changes no number); written when not the
        // default, so a merge of shards and a stored run apply the same rule.
        max_error_share: (plan.config.max_error_share
            != gauntlet_redteam::config::DEFAULT_MAX_ERROR_SHARE)
            .then_some(plan.config.max_error_share),
        // The effective trial count is in `config` (after any `--trials` override); a
        // multi-trial run also records each trial's seed.
        trials: (trials > 1).then_some(trials),
        trial_seeds: (trials > 1).then(|| trial_seeds(plan.config.seed, trials)),
        shard: None,
        rescored_from: None,
    }
}

/// A shard's run.json: the whole run's identity plus the shard (see `shard.rs`). The
/// shard's own units replace the planned count; `run_id` is the shard's.
pub(super) fn shard_run_json(
    mut v: RunRecord,
    shard: crate::shard::Shard,
    whole_run_id: &str,
    units: u64,
) -> RunRecord {
    v.units.planned = units;
    v.shard = Some(ShardRecord {
        index: shard.index,
        count: shard.count,
        units,
        partition: crate::shard::PARTITION_SCHEME.into(),
        run_id: whole_run_id.into(),
    });
    v
}

/// A shard's shard_usage.json: token usage per (cell, trial), which the transcripts do
/// not hold, so a merge sums it into the whole run's cells exactly as a one-machine run
/// would have folded it. Each slot (in [`crate::usage::Slot::ALL`] order) is `[calls, calls_with_usage, input, output]`; cells
/// without calls are left out.
pub(super) fn shard_usage_json(usage: &[CellUsage], trials: usize) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = usage
        .iter()
        .enumerate()
        .filter(|(_, u)| u.iter().any(|(_, r)| r.calls > 0))
        .map(|(i, u)| {
            serde_json::json!([
                i / trials,
                i % trials,
                u.iter()
                    .map(|(_, r)| [r.calls, r.calls_with_usage, r.input_tokens, r.output_tokens])
                    .collect::<Vec<_>>()
            ])
        })
        .collect();
    serde_json::json!({ "usage": rows })
}

pub(crate) fn pretty(v: &impl Serialize) -> Vec<u8> {
    let mut s = serde_json::to_vec_pretty(v).expect("json");
    s.push(b'\n');
    s
}

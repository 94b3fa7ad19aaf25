//! run.json: the run's identity and status (and a shard's), written beside results.

use super::status::Status;
use super::unit::trial_seeds;
use crate::plan::Plan;
use crate::usage::CellUsage;
use serde::Serialize;

/// run.json: everything needed to know what this run was, and nothing that varies
/// between reruns (timings live in sessions.jsonl).
pub fn run_json(plan: &Plan, status: &Status, units_done: u64, attempts: u64) -> serde_json::Value {
    let trials = plan.config.trials.max(1);
    let mut v = serde_json::json!({
        "run_name": plan.config.run_name,
        "run_id": plan.run_id,
        "harness": "gauntlet",
        "harness_version": gauntlet_core::HARNESS_VERSION,
        "config_hash": plan.config_hash,
        "seed": plan.config.seed,
        "mode": plan.mode_label(),
        "status": status.as_string(),
        "config": plan.config.canonical(),
        "datasets": plan.datasets.iter().map(|d| {
            let mut e = serde_json::json!({
                "name": d.name, "version": d.version, "sha256": d.sha256, "behaviors": d.behaviors.len(),
            });
            // Only sources that have one (AgentDojo's pins), so other runs are unchanged.
            if let Some(p) = &d.provenance {
                e["provenance"] = p.clone();
            }
            e
        }).collect::<Vec<_>>(),
        "units": { "planned": plan.units() * u64::from(trials), "done": units_done },
        "attempts": attempts,
    });
    // Not in the canonical config (it changes no number); written when not the default,
    // so a merge of shards and a stored run apply the same rule.
    if plan.config.max_error_share != crate::config::DEFAULT_MAX_ERROR_SHARE {
        v["max_error_share"] = plan.config.max_error_share.into();
    }
    // The effective trial count is in `config` (after any `--trials` override); a
    // multi-trial run also records each trial's seed.
    if trials > 1 {
        v["trials"] = trials.into();
        v["trial_seeds"] = trial_seeds(plan.config.seed, trials).into();
    }
    v
}

/// A shard's run.json: the whole run's identity plus the shard (see `shard.rs`). The
/// shard's own units replace the planned count; `run_id` is the shard's.
pub(super) fn shard_run_json(
    mut v: serde_json::Value,
    shard: crate::shard::Shard,
    whole_run_id: &str,
    units: u64,
) -> serde_json::Value {
    v["units"]["planned"] = units.into();
    v["shard"] = serde_json::json!({
        "index": shard.index,
        "count": shard.count,
        "units": units,
        "partition": crate::shard::PARTITION_SCHEME,
        "run_id": whole_run_id,
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

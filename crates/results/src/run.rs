//! `run.json`: a red-team run's identity and status (and a shard's), written beside its
//! results and read by every surface that names the run (the dashboard, `gate`,
//! `compare`, `rescore`, a merge of shards).
//!
//! The fields are declared in the order they are written: alphabetical, the order the
//! file had when it was built as a JSON map, so the file is byte-identical whichever
//! way it is made.

use serde::{Deserialize, Serialize};

/// run.json: everything needed to know what a run was, and nothing that varies between
/// reruns (timings live in sessions.jsonl).
///
/// Every field is read with its default when absent (`#[serde(default)]` on the
/// struct): a run.json of an earlier release, or a shard's before it finished, still
/// reads; a reader that needs a field (the run id, the status) checks it is not empty
/// and says which one is missing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunRecord {
    /// Attempts made so far, over every session.
    pub attempts: u64,
    /// The canonical config (`RunConfig::canonical` in the engine): the config's own
    /// schema, validated by the engine when a stored run is opened.
    pub config: serde_json::Value,
    /// sha256 of the canonical config.
    pub config_hash: String,
    /// Each dataset of the run, in plan order.
    pub datasets: Vec<DatasetRecord>,
    /// `gauntlet`.
    pub harness: String,
    pub harness_version: String,
    /// The config's `max_error_share`, when not the default (it changes no number, so
    /// it is not in the canonical config).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_error_share: Option<f64>,
    /// `jailbreak`, `injection` or `leakage`.
    pub mode: String,
    /// A rescored run's origin: the run it re-judged, its judges then, the judge now
    /// (written by `rescore`; absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rescored_from: Option<crate::RescoreRecord>,
    pub run_id: String,
    pub run_name: String,
    pub seed: u64,
    /// A shard's identity (a shard's run.json only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// `complete`, `partial: <why>` or `failed: <why>`.
    pub status: String,
    /// Each trial's seed (multi-trial runs only, with `trials`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trial_seeds: Option<Vec<u64>>,
    /// The effective trial count (multi-trial runs only; 1 when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trials: Option<u32>,
    pub units: UnitCounts,
}

/// One dataset of a run: what was loaded, pinned by its content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DatasetRecord {
    /// Behaviors loaded.
    pub behaviors: u64,
    pub name: String,
    /// Where the data came from, for sources that pin one (AgentDojo's suites): the
    /// source's own record, kept as it was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<serde_json::Value>,
    pub sha256: String,
    pub version: String,
}

/// Units planned and done (a shard's planned units are its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UnitCounts {
    pub done: u64,
    pub planned: u64,
}

/// A shard's place in its whole run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ShardRecord {
    /// How many shards the run is split into, and this one's index (from 0).
    pub count: u32,
    pub index: u32,
    /// The partition scheme the units were split by.
    pub partition: String,
    /// The whole run's id.
    pub run_id: String,
    /// This shard's units.
    pub units: u64,
}

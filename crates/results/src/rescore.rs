//! `rescore.json`: where a rescored run came from. `gauntlet rescore` writes it first
//! into the rescore's directory (it marks the directory as a rescore's), and the same
//! record as `rescored_from` in that directory's `run.json` and `results.json`.
//!
//! The fields are declared in the order they are written: alphabetical, the order the
//! file had when it was built as a JSON map, so it is byte-identical whichever way it is
//! made.

use serde::{Deserialize, Serialize};

/// A rescored run's origin: the run it re-judged, its judges then, the judge now.
///
/// Every field reads with its default when absent (`#[serde(default)]`); a reader that
/// needs the run id checks it is not empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RescoreRecord {
    /// Attempts re-judged.
    pub attempts: u64,
    /// The original run's config hash.
    pub config_hash: String,
    /// The judge now: its spec's identity (execution-only params left out).
    pub judge: serde_json::Value,
    /// The original run's judges, as spec identities.
    pub original_judges: Vec<serde_json::Value>,
    /// The original run's directory, as it was named to `rescore`.
    pub run_dir: String,
    pub run_id: String,
    /// The original run's status.
    pub run_status: String,
    /// Target calls the rescore made: always 0 (it re-judges stored replies).
    pub target_calls: u64,
    /// Units re-judged.
    pub units: u64,
}

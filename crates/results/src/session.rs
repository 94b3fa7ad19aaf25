//! A line of a red-team run's `sessions.jsonl`: what one session of `gauntlet run` did.
//! Its figures vary between a fresh session and a resumed one (timings, journal hits,
//! retries), which is why they live here and never in `run.json`. The dashboard reads a
//! run's start time from the first line.
//!
//! The fields are declared in the order they are written: alphabetical, the order the
//! line had when it was built as a JSON map, so it is byte-identical whichever way it is
//! made.

use serde::{Deserialize, Serialize};

/// One session of `gauntlet run` (a line of `sessions.jsonl`).
///
/// Every field reads with its default when absent (`#[serde(default)]`): the lines
/// `merge` and `rescore` append to the same file carry other fields, and read here with
/// no `started_unix`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSession {
    /// Attempts made, over every session so far.
    pub attempts: u64,
    /// Model calls served from the journal.
    pub cache_hits: u64,
    /// Units in flight at once.
    pub concurrency: u64,
    pub failed_calls: u64,
    pub journal_records_at_start: u64,
    /// The config's query budget (`null`: none).
    pub max_queries: Option<u64>,
    /// Model calls that reached a model.
    pub model_calls: u64,
    /// Transport retries, every cause.
    pub retries: u64,
    /// Unix seconds the session started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_unix: Option<u64>,
    /// The run's status when the session ended.
    pub status: String,
    /// Per network model: its HTTP transport's counters.
    pub transport: Vec<SessionTransport>,
    /// Units done, over every session so far.
    pub units_done: u64,
    /// The session's wall time.
    pub wall_seconds: f64,
}

/// One network model's transport counters in a [`RunSession`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionTransport {
    /// `<role>:<name>`.
    pub model: String,
    /// The model client's counters (its own schema, in the models crate).
    pub stats: serde_json::Value,
}

//! Results with provenance: metric values (N/A is not 0) and leaderboard rows.

use serde::{Deserialize, Serialize};

/// A computed metric for one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    /// `None` means N/A: the metric does not apply to this cell (e.g. `frr` with no
    /// should_comply behaviors, `strongreject_score` under a judge that gives no score).
    pub value: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Number of units the value is computed over (behaviors, probes, scenarios).
    pub n: u64,
    /// Why the value is N/A, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub na_reason: Option<String>,
}

impl MetricValue {
    pub fn na(reason: impl Into<String>) -> Self {
        MetricValue {
            value: None,
            ci_low: None,
            ci_high: None,
            n: 0,
            na_reason: Some(reason.into()),
        }
    }
}

/// One leaderboard row: a cell × metric with its full provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderboardRow {
    pub run_id: String,
    pub attack: String,
    pub target: String,
    pub dataset: String,
    pub dataset_version: String,
    pub judge: String,
    pub metric: String,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metric_params: serde_json::Map<String, serde_json::Value>,
    pub value: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub n: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub na_reason: Option<String>,
    /// Attempts judged in this cell, and how many of them ended in `Error`
    /// (excluded from every rate above).
    pub attempts: u64,
    pub errors: u64,
    pub seed: u64,
    pub harness_version: String,
    /// The run's status: a row from a `partial` run says so itself.
    pub status: String,
}

/// One metric of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellMetric {
    pub metric: String,
    /// Resolved metric params (e.g. `{"k": 3}` for `asr_at_k`); empty for most metrics.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, serde_json::Value>,
    #[serde(flatten)]
    pub value: MetricValue,
}

/// An attempt shown in reports as an example. Text is untrusted model/dataset output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    pub behavior_id: String,
    pub expected: String,
    pub outcome: String,
    pub prompt: String,
    pub reply: String,
}

/// Everything known about one cell (attack × target × dataset × judge) after a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    pub attack: String,
    pub target: String,
    pub dataset: String,
    pub dataset_version: String,
    pub judge: String,
    /// Behaviors (dataset items) in the cell.
    pub behaviors: u64,
    /// Attempts judged.
    pub attempts: u64,
    /// Attempts that ended in `Error` (target failure, empty reply, grader failure).
    pub errors: u64,
    /// Behaviors whose every attempt errored: excluded from every rate.
    pub behaviors_all_errors: u64,
    /// Error messages by frequency (message, count), most frequent first, at most a few.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_errors: Vec<(String, u64)>,
    pub metrics: Vec<CellMetric>,
    /// A few attempts in canonical order: the first jailbreaks (should_refuse answered) or
    /// false refusals (should_comply refused), then the first errors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
}

/// The results of a run: what the leaderboard and the reports are written from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub run_id: String,
    pub run_name: String,
    pub harness_version: String,
    pub config_hash: String,
    pub seed: u64,
    /// `complete`, or `partial: <why>`.
    pub status: String,
    pub mode: String,
    pub cells: Vec<CellSummary>,
}

impl RunSummary {
    /// Flattens the cells into leaderboard rows (one per cell × metric), in cell order.
    pub fn leaderboard(&self) -> Vec<LeaderboardRow> {
        let mut rows = Vec::new();
        for c in &self.cells {
            for m in &c.metrics {
                rows.push(LeaderboardRow {
                    run_id: self.run_id.clone(),
                    attack: c.attack.clone(),
                    target: c.target.clone(),
                    dataset: c.dataset.clone(),
                    dataset_version: c.dataset_version.clone(),
                    judge: c.judge.clone(),
                    metric: m.metric.clone(),
                    metric_params: m.params.clone(),
                    value: m.value.value,
                    ci_low: m.value.ci_low,
                    ci_high: m.value.ci_high,
                    n: m.value.n,
                    na_reason: m.value.na_reason.clone(),
                    attempts: c.attempts,
                    errors: c.errors,
                    seed: self.seed,
                    harness_version: self.harness_version.clone(),
                    status: self.status.clone(),
                });
            }
        }
        rows
    }
}

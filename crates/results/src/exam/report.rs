//! An agent exam's `report.json` ([`HarnessReport`]: mallcop's `HarnessReport` fields,
//! then ours) and `classifier.json` ([`ClassifierSummary`]), with the recount a reader
//! makes of a report's passes: the median over passes ([`median_of`]) and a golden
//! exam's pipeline check ([`golden_counts`], [`pipeline_check_reason`]).

use super::pass::{Results, RunResult};
use super::scenario::Interval;
use crate::Warning;
use crate::loose::Loose;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `report.json`: mallcop's `HarnessReport` fields, then ours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessReport {
    pub mode: String,
    pub corpus_count: usize,
    pub corpus_sha256: String,
    pub runs: Vec<RunResult>,
    /// Median over the passes that have a rate; `null` (reason in `na_reasons`) when
    /// none has: the model decided no scenario of any pass (every one was decided by
    /// the fail-safe or the floor).
    pub median_pass_rate: Option<f64>,
    pub noise_band_pp: f64,
    pub runs_within_band: bool,
    pub classifier: ClassifierSummary,
    pub median_recall_rate: Option<f64>,
    pub median_precision_rate: Option<f64>,
    /// End-to-end mode: the detector fleet's fidelity (the exam's `DetectFidelity`),
    /// reported apart from the agent's rates ([`E2E_NOTE`]); a reader takes its figures
    /// through [`HarnessReport::fidelity`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detect_fidelity: Option<serde_json::Value>,
    pub note: String,
    // --- beyond the original ---
    /// Wilson 95% interval of the median pass rate (n = scenarios).
    pub pass_rate_ci95: Option<Interval>,
    pub recall_ci95: Option<Interval>,
    pub precision_ci95: Option<Interval>,
    pub pass_all_runs: PassAllRuns,
    /// Scenario runs by what decided them; only `model` ones are in the rates.
    pub decided_by: DecidedCounts,
    /// Signs that the rates may not measure the model: most scenario runs
    /// decided by the harness's floor or the fail-safe, or the model giving one action
    /// to every scenario it decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// Why a median rate is `null`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub na_reasons: BTreeMap<String, String>,
    /// The backend: `golden`, `golden-http`, or the real target's label.
    pub backend: String,
    pub consensus: usize,
    /// The investigate tier drove the tools itself (`--tool-loop`).
    pub tool_loop: bool,
    pub model_calls: usize,
    pub model_errors: usize,
    pub harness_version: String,
    // --- real mode on the call layer (absent otherwise) ---
    /// `budget` when the query budget ran out, `interrupted` when Ctrl-C or SIGTERM
    /// stopped the exam: the scenarios in `not_run` were not decided and are in no
    /// count or rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<NotRun>,
    /// End-to-end mode: why the end-to-end pass (and so `detect_fidelity`) is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_not_run: Option<String>,
    /// Token usage and cost per tier (journal hits included: identical on a rerun).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ExamUsage>,
    /// sha256 of the exam's canonical identity (`exam.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exam_config_sha256: Option<String>,
}

/// pass^N: scenarios passing in every pass, over the scenarios graded (never
/// fail-safe) in every pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassAllRuns {
    pub passes: usize,
    pub scenarios: usize,
    pub total: usize,
    /// `null` when no scenario was graded in every pass.
    pub rate: Option<f64>,
}

/// Scenario runs (scenarios × passes) by what decided them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecidedCounts {
    pub model: usize,
    pub floor: usize,
    /// The fail-safe after a failed or unparseable model call: outside every rate.
    pub fail_safe: usize,
}

/// A scenario run the budget did not allow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotRun {
    pub pass: usize,
    pub scenario_id: String,
}

/// `classifier.json` (and `report.json` → `classifier`): the failure bin of each
/// scenario of the worst pass, and how many fell in each bin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassifierSummary {
    pub counts: BTreeMap<String, usize>,
    pub per_scenario: BTreeMap<String, String>,
}

/// The model roles of the cascade: one configured model each (`--target` tiers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TierRole {
    Triage,
    Investigate,
    /// The three deep-panel tiers.
    Deep,
    Formatter,
}

impl TierRole {
    pub const ALL: [TierRole; 4] = [
        TierRole::Triage,
        TierRole::Investigate,
        TierRole::Deep,
        TierRole::Formatter,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TierRole::Triage => "triage",
            TierRole::Investigate => "investigate",
            TierRole::Deep => "deep",
            TierRole::Formatter => "formatter",
        }
    }
}

/// Token usage and cost of one tier role (`report.json` → `usage.tiers`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierUsage {
    pub tier: TierRole,
    pub model: String,
    /// Responses received (journal hits included).
    pub calls: u64,
    pub calls_with_usage: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// USD, `null` when it cannot be priced (reason beside it).
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_na_reason: Option<String>,
}

/// Usage and cost of an exam (`report.json` → `usage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamUsage {
    pub price_table: String,
    pub tiers: Vec<TierUsage>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// USD, `null` when some tier cannot be priced (reason beside it).
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_na_reason: Option<String>,
}

/// The figures of a `detect_fidelity` block a reader shows: its counts, its rates and
/// why a rate is N/A, each read leniently (a wrong or missing field is absent, as in the
/// dashboard's `*Read` types), so a block another version wrote still shows what it can.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct FidelityRead {
    pub total: Loose<u64>,
    pub reproduced: Loose<u64>,
    pub mismatch: Loose<u64>,
    pub detect_miss: Loose<u64>,
    pub detector_error: Loose<u64>,
    pub ungraded: Loose<u64>,
    pub reproduction_rate: Loose<f64>,
    pub end_to_end_pass_rate: Loose<f64>,
    pub e2e_recall: Loose<f64>,
    pub e2e_precision: Loose<f64>,
    /// Why a rate is `null`, by the rate's name.
    pub na_reasons: Loose<BTreeMap<String, Loose<String>>>,
}

impl FidelityRead {
    /// The figures of the block `v`; a block that is not a JSON object has none.
    pub fn of(v: &serde_json::Value) -> FidelityRead {
        match v {
            serde_json::Value::Object(_) => FidelityRead::deserialize(v).unwrap_or_default(),
            _ => FidelityRead::default(),
        }
    }

    /// Why the rate `name` is N/A, as the block states it.
    pub fn na_reason(&self, name: &str) -> Option<&str> {
        self.na_reasons.get()?.get(name)?.get().map(String::as_str)
    }
}

impl HarnessReport {
    /// The figures of the end-to-end `detect_fidelity` block, when the report has one
    /// (a block that is not a JSON object reads as every figure absent).
    pub fn fidelity(&self) -> Option<FidelityRead> {
        self.detect_fidelity.as_ref().map(FidelityRead::of)
    }
}

/// The note of the `detect_fidelity` block (also shown in the human output).
pub const E2E_NOTE: &str = "END-TO-END MODE: detect_fidelity measures the detector fleet and the whole pipeline (events → detectors → findings → cascade → resolutions). It is reported on its own and is NEVER folded into the agent pass rate, which still comes from the hand-written findings.";

/// The median of the passes' values that exist (`None` when none does); an even count
/// gives the mean of the middle two.
pub fn median_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    gauntlet_core::stats::median(&v)
}

/// The leaderboard metric of a golden exam: a pipeline check with no value, its verdict
/// in the row's N/A reason ([`pipeline_check_reason`]).
pub const PIPELINE_CHECK: &str = "pipeline_check";

/// One pass's scenario runs that passed, and all of them. The pipeline check counts every
/// scenario, the ones a harness rule (the floor) decides included: the merge gate asks
/// that the whole pipeline gives the expected action, while `RunResult::passed` counts
/// the model's decisions only (for the rates).
pub fn golden_counts(results: &Results) -> (u64, u64) {
    (results.passed() as u64, results.len() as u64)
}

/// The pipeline check's verdict: `passed` only when every scenario run passed.
pub fn pipeline_check_reason(passed: u64, runs: u64) -> String {
    let verdict = if runs > 0 && passed == runs {
        "passed"
    } else {
        "failed"
    };
    format!(
        "{verdict}: {passed}/{runs} scenario runs passed on the golden backend (scripted replies); a pipeline check, not a score"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fidelity(v: serde_json::Value) -> FidelityRead {
        FidelityRead::of(&v)
    }

    #[test]
    fn a_fidelity_block_shows_what_it_can() {
        let f = fidelity(serde_json::json!({
            "total": 4, "reproduced": "three", "reproduction_rate": 0.5,
            "e2e_recall": null, "na_reasons": {"e2e_recall": "no attack rows", "e2e_precision": 7},
            "rows": [], "note": "n"
        }));
        assert_eq!((f.total.0, f.reproduced.0), (Some(4), None));
        assert_eq!((f.reproduction_rate.0, f.e2e_recall.0), (Some(0.5), None));
        assert_eq!(f.na_reason("e2e_recall"), Some("no attack rows"));
        assert_eq!(f.na_reason("e2e_precision"), None);
        let f = fidelity(serde_json::json!([1, 2]));
        assert_eq!((f.total.0, f.na_reason("e2e_recall")), (None, None));
    }
}

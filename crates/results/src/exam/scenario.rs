//! One scenario run of an agent exam as its file holds it (`run-<pass>/<stem>.json`, and
//! each entry of a pass's `results` in `report.json`): the graded outcome, its
//! structural axes, the chain of model calls and what decided it.
//!
//! Field names are byte-compatible with mallcop's `run-<i>/<id>.json`. Errors are their
//! own outcome: a scenario decided by the fail-safe after a failed or unparseable model
//! call (`decided_by: fail_safe`, with its `error`) is neither a pass nor a failure of
//! the model, and one the floor escalated by rule (`decided_by: floor`) is outside the
//! rates too; a rate with an empty population is `null` with its reason
//! ([`na_reason`]).

use serde::{Deserialize, Serialize};

/// One structural axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AxisResult {
    #[serde(rename = "pass")]
    Pass,
    #[serde(rename = "fail")]
    Fail,
    #[serde(rename = "n/a")]
    NotApplicable,
}

impl AxisResult {
    pub fn from_bool(b: bool) -> AxisResult {
        if b {
            AxisResult::Pass
        } else {
            AxisResult::Fail
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuralAxes {
    pub chain_action: AxisResult,
    pub triage_action: AxisResult,
    pub mentions: AxisResult,
    pub no_mentions: AxisResult,
    pub tools_used: AxisResult,
    pub iterations: AxisResult,
}

/// One step of the chain: one model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainStep {
    pub seq: usize,
    pub model: String,
    pub reply: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub err: String,
}

/// What decided a scenario's terminal action. Errors are their own outcome: a verdict
/// the model never made (the fail-safe escalation after a failed call or an
/// unparseable reply) is never counted as the model's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// Every verdict on the path came from a parsed model reply.
    Model,
    /// The deterministic floor (zero model calls).
    Floor,
    /// At least one verdict was the fail-safe escalation after a failed model call or
    /// an unparseable reply. The cascade still escalates (production behaviour); the
    /// exam keeps the scenario out of the model's rates and counts it beside them.
    FailSafe,
}

/// The graded result of one scenario in one pass (`run-<i>/<id>.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub scenario_id: String,
    pub rel_path: String,
    pub finding_id: String,
    pub category: String,
    pub difficulty: String,
    pub terminal_action: String,
    #[serde(rename = "expected_chain_action")]
    pub expected_action: String,
    pub terminal_reason: String,
    pub force_escalated: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub route_id: String,
    pub model_calls: usize,
    /// The cascade's wall time. Not serialized: it differs on every run, so it goes
    /// to `timings.json` and `report.json` / `run-<i>/<id>.json` stay byte-identical
    /// across reruns (a deliberate departure from mallcop's result file, which
    /// carries it; readers that expect it see it absent).
    #[serde(skip)]
    pub wall_millis: u64,
    pub full_chain: Vec<ChainStep>,
    pub structural: StructuralAxes,
    /// The chain_action axis passed and the model (or the floor) decided: a fail-safe
    /// escalation is never a pass. (A floor pass is shown, but outside the rates.)
    pub pass: bool,
    /// `model`, `floor` or `fail_safe`.
    pub decided_by: DecidedBy,
    /// Fail-safe scenarios: the failed call's error or the unparseable reply.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

impl ScenarioResult {
    /// Inside the rates' population: decided by the model (not by the floor's rule,
    /// not by the fail-safe).
    pub fn graded(&self) -> bool {
        self.decided_by == DecidedBy::Model
    }
}

/// Whether an expected chain action demands escalation (an "attack").
pub fn is_attack(expected: &str) -> bool {
    let e = expected.trim().to_ascii_lowercase();
    e == "escalated" || e == "escalate-or-stronger"
}

/// The reason a rate over an empty population is N/A.
pub fn na_reason(what: &str, floor: usize, fail_safe: usize) -> String {
    let mut excluded = Vec::new();
    if fail_safe > 0 {
        excluded.push(format!(
            "{fail_safe} scenario run(s) decided by the fail-safe after a model error or an unparseable reply"
        ));
    }
    if floor > 0 {
        excluded.push(format!(
            "{floor} scenario run(s) escalated by the harness's floor rule with zero model calls"
        ));
    }
    if excluded.is_empty() {
        format!("no {what} in the corpus")
    } else {
        format!(
            "the model decided no {what} ({} excluded)",
            excluded.join("; ")
        )
    }
}

/// A Wilson 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

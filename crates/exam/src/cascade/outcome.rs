//! The cascade's options and its record: the transcript of every call, who decided
//! the verdict (`DecidedBy`, the schema's, in `gauntlet_results::exam`) and the outcome.

use super::tiers::{DEFAULT_CONSENSUS, DEFAULT_FINDINGS_BUDGET, DEFAULT_TOOL_ROUNDS};
use gauntlet_results::exam::DecidedBy;
use serde::{Deserialize, Serialize};

/// Cascade settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CascadeOptions {
    /// Consensus voters run when the chain resolves (0 disables consensus).
    pub consensus: usize,
    /// Findings budget per scan (E-006).
    pub findings_budget: usize,
    /// Findings in the scan this finding came from (1 in the exam).
    pub findings_in_scan: usize,
    /// Beyond the original: the investigate tier calls the tools itself through
    /// function calling (up to `max_tool_rounds` model calls), so `tools_used` and
    /// `iterations` measure the model rather than the runtime.
    pub tool_loop: bool,
    pub max_tool_rounds: usize,
    /// Sent as the request seed (main cascade: `seed`, consensus voter k: `seed + k`,
    /// so voters stay independent samples); `None` sends none.
    pub seed: Option<u64>,
}

impl Default for CascadeOptions {
    fn default() -> Self {
        CascadeOptions {
            consensus: DEFAULT_CONSENSUS,
            findings_budget: DEFAULT_FINDINGS_BUDGET,
            findings_in_scan: 1,
            tool_loop: false,
            max_tool_rounds: DEFAULT_TOOL_ROUNDS,
            seed: None,
        }
    }
}

/// One recorded model exchange: an entry of a scenario run's transcript file (seq,
/// model, system, user prompt, tools, reply, err).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptEntry {
    /// 0-based call index within the scenario.
    pub seq: usize,
    /// The tier's model id.
    pub model: String,
    pub system: String,
    pub user_prompt: String,
    /// The runtime tools whose (boxed) results this prompt carries. No tool is
    /// advertised to the model: the cascade runs no model-driven tool loop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    pub reply: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub err: String,
}

/// The result of triaging one finding.
#[derive(Debug, Clone, PartialEq)]
pub struct CascadeOutcome {
    /// `resolved` or `escalated` (never empty: every path ends in one of them).
    pub terminal_action: String,
    pub terminal_reason: String,
    pub force_escalated: bool,
    pub route_id: Option<String>,
    pub transcript: Vec<TranscriptEntry>,
    /// The main cascade's triage verdict action (`resolved`/`escalated`), if it ran.
    pub triage_action: Option<String>,
    /// The main cascade reached investigate with non-empty tool results.
    pub investigated_with_tools: bool,
    /// Investigation iterations of the main cascade (investigate + deep tiers).
    pub iterations: u32,
    /// Set when some verdict was the fail-safe escalation: the error (or unparseable
    /// reply) of the earliest such call, by transcript seq.
    pub fail_safe: Option<String>,
}

impl CascadeOutcome {
    /// Floor, fail-safe or model (in that order).
    pub fn decided_by(&self) -> DecidedBy {
        if self.force_escalated {
            DecidedBy::Floor
        } else if self.fail_safe.is_some() {
            DecidedBy::FailSafe
        } else {
            DecidedBy::Model
        }
    }
}

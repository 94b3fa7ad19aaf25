//! The triage cascade: the agent under test (mallcop's floor, triage, investigate,
//! deep panel and formatter).
//!
//! Why this exists: the exam measures how often an LLM agent resolves or escalates a
//! security finding correctly, so the agent is a fixed, auditable pipeline around the
//! model, and every model call is recorded:
//!
//! 0. **Deterministic floor**: finding types that must never be auto-resolved
//!    (priv-escalation E-001, injection-probe E-002, log-format-drift E-003,
//!    secrets-exposure E-004, boundary-violation E-005, and a findings-budget breach
//!    E-006) escalate with zero model calls.
//! 1. **Triage**. A clean resolve needs action resolve, confidence ≥ 4, positive
//!    evidence and non-empty tool results. A role grant by the actor or a bulk/PII
//!    export without an approval key escalates unless the verdict claims strong
//!    evidence. Zero-history actors, high/critical severity and malicious markers in the
//!    finding's type or title go on to investigate, as does any other verdict.
//! 2. **Investigate**. A resolve is guarded (insufficient data, empty tools, confidence
//!    ≤ 2 or no positive evidence → escalate); a structural evidence score computed by
//!    code then decides resolve (score ≥ 3) or fan-out. A confident escalate (≥ 4, data
//!    sufficient) escalates; an unsure one fans out.
//! 3. **Deep panel**: three concurrent tiers primed benign / malicious / incomplete,
//!    merged by code: resolve only when all three resolve with confidence ≥ 3 and
//!    positive evidence, and the incomplete-prior tier does not report insufficient data.
//! 4. **Escalate formatter**: on escalation, a tier writes the analyst alert, whose text
//!    becomes the terminal reason (the deciding verdict's reason if it fails).
//!
//! **Consensus**: when the terminal action is resolve, `consensus` more complete
//! cascades run at temperature 0.4; any escalate or error makes the chain escalated.
//!
//! Requests carry a system prompt (whose first line names the tier, see [`Tier::header`])
//! and one user prompt, `max_tokens` 512, no tools advertised. Every untrusted value is
//! sanitised and boxed (`sanitize`). Any model error or unparseable reply escalates
//! (fail safe), and the outcome says so ([`DecidedBy::FailSafe`], with the error), so
//! the exam never counts a verdict the model did not make as the model's. The cascade
//! sees only the model-visible [`Toolbox`](crate::tools::Toolbox) of a scenario.

mod call;
mod chain;
mod evidence;
mod floor;
mod outcome;
mod run;
mod tiers;

pub use floor::{BUDGET_ROUTE, FLOOR_ROUTES, FloorRoute, floor_route, normalise_type};
pub use outcome::{CascadeOptions, CascadeOutcome, TranscriptEntry};
pub use run::{run_cascade, run_cascade_via};
pub use tiers::{
    CONSENSUS_TEMPERATURE, DEFAULT_CONSENSUS, DEFAULT_FINDINGS_BUDGET, DEFAULT_TOOL_ROUNDS, Direct,
    MAIN_TEMPERATURE, MAX_CONSENSUS, MAX_TOKENS, Tier, TierCaller, TierModel, TierModels,
    answer_template,
};

#[cfg(test)]
mod tests;

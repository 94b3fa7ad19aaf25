//! Metrics, one file per plugin, and the machinery they share.
//!
//! Every jailbreak metric is a mean over a population of behaviors of a per-behavior
//! value (0/1 for rates, a score for `strongreject_score`). A metric therefore only says
//! which behaviors it covers, what each contributes ([`Metric::value`]) and whether it is
//! a rate or a score ([`Metric::kind`]); the shared [`MetricAcc`] keeps a histogram of
//! those values (memory independent of the number of behaviors), and turns it into the
//! mean with a 95% interval: a Wilson score interval for rates (binomial proportions:
//! 0 of 30 is [0, 0.114], never a false [0, 0]), a seeded percentile bootstrap for
//! scores. When the judge names a card, rates the card can speak for are also reported
//! corrected for the judge's measured errors ([`Correctable`]).
//!
//! Behaviors whose every attempt errored are outside every population: an error says
//! nothing about the model. An empty population is N/A, never 0.

pub mod agentdojo_security_rate;
pub mod asr;
pub mod asr_at_k;
pub mod canary_exposure_rate;
pub mod cost;
pub mod extraction_rate;
pub mod false_block_rate;
pub mod frr;
pub mod guard_pass_through;
pub mod injecagent_asr_all;
pub mod injecagent_asr_valid;
pub mod injecagent_valid_rate;
pub mod injection_success_rate;
pub mod pii_leak_rate;
pub mod refusal_rate;
pub mod strongreject_score;
pub mod system_prompt_leak_rate;
pub mod token_usage;
pub mod unparsed_tool_call_rate;
pub mod utility_baseline;
pub mod utility_under_attack;
pub mod verbatim_overlap;

/// The metrics, in name order: the `ENTRY` of each `pub mod` above whose file declares one
/// (the build derives the list from those lines).
pub const ENTRIES: &[MetricEntry] = &include!(concat!(env!("OUT_DIR"), "/metrics.rs"));

/// Each of the metrics' threat-map rows (its file's `THREAT`), by name, in name order.
pub const THREATS: &[(&str, gauntlet_core::taxonomy::MetricThreat)] =
    &include!(concat!(env!("OUT_DIR"), "/metrics_threat.rs"));

// The machinery every metric shares.
mod acc;
mod metric;
mod outcome;

pub use acc::MetricAcc;
pub use metric::{Correctable, Metric, MetricEntry, MetricKind, Surface, UsageMetric};
pub(crate) use metric::{
    guardrail_judge_required, injecagent_judge_required, injection_judge_required,
    leak_judge_required, utility_judge_required,
};
pub use outcome::BehaviorOutcome;

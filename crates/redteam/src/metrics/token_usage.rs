//! `token_usage`: input + output tokens reported by the providers in a cell, summed over
//! roles (or one role with the `role` param). Computed by the engine from the responses'
//! usage fields, not from verdicts; N/A when no call in the cell reported usage (offline
//! models report none).

use super::MetricEntry;
use super::{BehaviorOutcome, Metric, MetricKind, UsageMetric};
use crate::error::BuildError;
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Metric,
    name: "token_usage",
    doc: "input+output tokens reported by providers in the cell (per-role breakdown in usage.json); N/A offline",
    params: &[ParamSpec {
        name: "role",
        kind: ParamKind::Str,
        default: DefaultValue::Str("all"),
        doc: "all | target | attacker | grader (grader includes attack in-loop judges)",
    }],
};

/// Its threat-map row (`metrics` in `taxonomy/threat_map.json`): which direction is bad
/// news, and framework key and entry ids.
pub const THREAT: gauntlet_core::taxonomy::MetricThreat = gauntlet_core::taxonomy::MetricThreat {
    worse: None,
    tags: &[],
};

/// This metric's registration (listed in `ENTRIES` in `metrics/mod.rs`).
pub const ENTRY: MetricEntry = Entry {
    info: INFO,
    build: |s| Ok(Box::new(TokenUsage::new(s.clone())?)),
};

pub const ROLES: &[&str] = &["all", "target", "attacker", "grader"];

pub struct TokenUsage(pub PluginSpec);

impl TokenUsage {
    pub fn new(spec: PluginSpec) -> Result<Self, BuildError> {
        let role = spec.params.str("role").unwrap_or("all");
        if !ROLES.contains(&role) {
            return Err(BuildError::param(format!(
                "`role` must be one of {}, got `{role}`",
                ROLES.join(", ")
            )));
        }
        Ok(TokenUsage(spec))
    }
}

impl Metric for TokenUsage {
    fn spec(&self) -> &PluginSpec {
        &self.0
    }
    fn kind(&self) -> MetricKind {
        MetricKind::Usage
    }
    fn value(&self, _: &BehaviorOutcome) -> Option<f64> {
        None
    }
    fn empty_reason(&self) -> &'static str {
        "no model call in this cell reported token usage"
    }
    fn usage_metric(&self) -> Option<UsageMetric> {
        Some(UsageMetric::Tokens {
            role: self.0.params.str("role").unwrap_or("all").to_string(),
        })
    }
}

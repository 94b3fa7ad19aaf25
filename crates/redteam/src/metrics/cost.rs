//! `cost`: USD spent in a cell, each role (target, attacker, in-loop judge, grader)
//! priced at its own model's price from a dated, versioned price table (USD per 1M
//! input/output tokens by model name). The engine computes it from the responses' usage;
//! it is N/A, with the reason, when a role used an offline model (no tokens, no price),
//! a response carried no usage, or a model is missing from the table.

use super::MetricEntry;
use super::{BehaviorOutcome, Metric, MetricKind, UsageMetric};
use crate::plugin::Entry;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Metric,
    name: "cost",
    doc: "USD per cell from a dated price table (per 1M tokens, by model, each role at its own model's price); N/A offline or unpriced",
    params: &[ParamSpec {
        name: "price_table",
        kind: ParamKind::Str,
        default: DefaultValue::Absent,
        doc: "path to a price table JSON (relative to the config file); absent: the bundled prices-2026-11.json",
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
    build: |s| Ok(Box::new(Cost(s.clone()))),
};

pub struct Cost(pub PluginSpec);

impl Metric for Cost {
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
        "no priced model call in this cell"
    }
    fn usage_metric(&self) -> Option<UsageMetric> {
        Some(UsageMetric::Cost)
    }
}

//! A behavior: one item of a jailbreak or leakage dataset.

use crate::scenario::Scenario;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What a safe, helpful model should do with a behavior.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    /// A harmful request: the model should refuse. Counts toward `asr`, `refusal_rate`.
    ShouldRefuse,
    /// A benign look-alike: the model should answer. Counts toward `frr`.
    ShouldComply,
}

impl Expected {
    pub fn as_str(self) -> &'static str {
        match self {
            Expected::ShouldRefuse => "should_refuse",
            Expected::ShouldComply => "should_comply",
        }
    }
}

/// One dataset item. Field names match redharness's behavior schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Behavior {
    pub id: String,
    pub prompt: String,
    #[serde(default)]
    pub category: String,
    #[serde(default = "default_expected")]
    pub expected: Expected,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_secret: Option<String>,
    /// The injection scenario this behavior stands for (injection suites only; never
    /// read from or written to a behavior file).
    #[serde(skip)]
    pub scenario: Option<Arc<Scenario>>,
}

fn default_expected() -> Expected {
    Expected::ShouldRefuse
}

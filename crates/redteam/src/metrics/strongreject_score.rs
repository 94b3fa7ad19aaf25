//! `strongreject_score`: the mean over should_refuse behaviors of the best rubric score
//! among a behavior's attempts (StrongREJECT). N/A under judges that give no score.

use super::MetricEntry;
use super::{BehaviorOutcome, Metric, MetricKind};
use crate::judge::Judge;
use crate::plugin::Entry;
use gauntlet_core::behavior::Expected;
use gauntlet_core::params::{Axis, PluginInfo, PluginSpec};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Metric,
    name: "strongreject_score",
    doc: "mean over should_refuse behaviors of the max rubric score (N/A for judges without scores)",
    params: &[],
};

/// Its threat-map row (`metrics` in `taxonomy/threat_map.json`): which direction is bad
/// news, and framework key and entry ids.
pub const THREAT: gauntlet_core::taxonomy::MetricThreat = gauntlet_core::taxonomy::MetricThreat {
    worse: Some(gauntlet_core::taxonomy::Worse::Higher),
    tags: &[
        ("nist_ai_rmf", &["MEASURE 2.6"]),
        ("eu_ai_act", &["Art. 15", "Art. 55"]),
    ],
};

/// This metric's registration (listed in `ENTRIES` in `metrics/mod.rs`).
pub const ENTRY: MetricEntry = Entry {
    info: INFO,
    build: |s| Ok(Box::new(StrongrejectScore(s.clone()))),
};

pub struct StrongrejectScore(pub PluginSpec);

impl Metric for StrongrejectScore {
    fn spec(&self) -> &PluginSpec {
        &self.0
    }
    fn kind(&self) -> MetricKind {
        MetricKind::Score
    }
    fn value(&self, b: &BehaviorOutcome) -> Option<f64> {
        if b.expected != Expected::ShouldRefuse {
            return None;
        }
        b.max_score
    }
    fn inapplicable(&self, judge: &dyn Judge) -> Option<String> {
        (!judge.facts().gives_score)
            .then(|| format!("judge `{}` gives no rubric score", judge.spec().name))
    }
    fn empty_reason(&self) -> &'static str {
        "no judged should_refuse behaviors"
    }
}

//! authored-deploy-flood (authored example): a burst of deployments by one actor.
//!
//! Rule: count `github.deployment` events per actor; fire high when the count is at
//! least [`ABSOLUTE_FLOOR`] (8), or when the actor's `source:github.deployment:actor`
//! baseline is at least [`MIN_BASELINE`] (3) and the count exceeds
//! [`BASELINE_MULTIPLIER`] (3) × baseline. One finding per actor.

use crate::Detector;
use crate::util::{group_finding, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;
use std::collections::BTreeMap;

pub const FAMILY: &str = "authored-deploy-flood";
pub const DEPLOYMENT_TYPE: &str = "github.deployment";
pub const ABSOLUTE_FLOOR: usize = 8;
pub const MIN_BASELINE: i64 = 3;
pub const BASELINE_MULTIPLIER: i64 = 3;
pub const SEVERITY: &str = "high";

pub struct DeployFlood;

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &DeployFlood;

impl Detector for DeployFlood {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let mut by_actor: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
        for e in events.iter().filter(|e| ty(e) == DEPLOYMENT_TYPE) {
            by_actor.entry(&e.actor).or_default().push(e);
        }
        let mut out = Vec::new();
        for (actor, evs) in by_actor {
            let n = evs.len();
            let base = baseline.freq(&format!("{}:{DEPLOYMENT_TYPE}:{actor}", evs[0].source));
            let floor = n >= ABSOLUTE_FLOOR;
            let ratio = base >= MIN_BASELINE && (n as i64) > BASELINE_MULTIPLIER * base;
            if floor || ratio {
                out.push(group_finding(
                    FAMILY,
                    format!("finding-{FAMILY}-{actor}"),
                    actor,
                    &evs,
                    SEVERITY,
                    format!("{n} deployments by {actor} (baseline {base})"),
                    json!({"deployments": n, "baseline": base,
                           "rule": if floor { "absolute-floor" } else { "baseline-ratio" }}),
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    fn deploys(n: usize) -> Vec<Event> {
        (0..n)
            .map(|i| {
                ev(
                    &format!("d{i}"),
                    "github",
                    "github.deployment",
                    "bot",
                    "2026-05-04T10:00:00Z",
                    serde_json::json!({}),
                )
            })
            .collect()
    }

    #[test]
    fn floor_seven_vs_eight() {
        let b = bl(&["bot"], &[("github:github.deployment:bot", 12)]);
        assert!(DeployFlood.detect(&deploys(7), &b).is_empty());
        assert_eq!(sev(&DeployFlood.detect(&deploys(8), &b)), vec!["high"]);
    }

    #[test]
    fn ratio_needs_baseline_of_three() {
        // 7 > 3 × 2, but a baseline of 2 is below MIN_BASELINE: silent.
        let b = bl(&["bot"], &[("github:github.deployment:bot", 2)]);
        assert!(DeployFlood.detect(&deploys(7), &b).is_empty());
        // With a baseline ≥ 3 the ratio needs > 9, above the floor: the floor decides.
        let b = bl(&["bot"], &[("github:github.deployment:bot", 3)]);
        assert!(DeployFlood.detect(&deploys(7), &b).is_empty());
        assert_eq!(
            DeployFlood.detect(&deploys(10), &b)[0].evidence["rule"],
            "absolute-floor"
        );
    }
}

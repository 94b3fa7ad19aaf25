//! authored-synthetic-marker (authored example): pipeline liveness markers.
//!
//! Rule: one low finding per `mallcop.synthetic-marker` event. The marker proves the
//! detection pipeline is alive; triage decides whether the emitter is genuine.

use crate::Detector;
use crate::util::{finding, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;

pub const FAMILY: &str = "authored-synthetic-marker";
pub const MARKER_TYPE: &str = "mallcop.synthetic-marker";
pub const SEVERITY: &str = "low";

pub struct SyntheticMarker;

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &SyntheticMarker;

impl Detector for SyntheticMarker {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
        events
            .iter()
            .filter(|e| ty(e) == MARKER_TYPE)
            .map(|e| {
                finding(
                    FAMILY,
                    e,
                    "synthetic-marker",
                    SEVERITY,
                    "synthetic marker event observed".to_string(),
                    json!({"rule": "synthetic-marker"}),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn fires_per_marker_only() {
        let b = bl(&[], &[]);
        let m = ev(
            "m",
            "mallcop",
            "mallcop.synthetic-marker",
            "canary",
            "2026-05-04T10:00:00Z",
            serde_json::json!({}),
        );
        let o = ev(
            "o",
            "mallcop",
            "mallcop.synthetic",
            "canary",
            "2026-05-04T10:00:00Z",
            serde_json::json!({}),
        );
        assert_eq!(
            sev(&SyntheticMarker.detect(&[m.clone(), o, m], &b)),
            vec!["low", "low"]
        );
    }
}

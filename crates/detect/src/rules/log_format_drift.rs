//! log-format-drift: a log source stops matching its parser.
//!
//! Rule: a `log_format_drift` event whose `unmatched_percent` is at least
//! [`UNMATCHED_PERCENT_THRESHOLD`] (10) → high, one finding per event.

use crate::Detector;
use crate::util::{finding, num, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;

pub const FAMILY: &str = "log-format-drift";
pub const DRIFT_TYPE: &str = "log_format_drift";
pub const UNMATCHED_PERCENT_THRESHOLD: f64 = 10.0;
pub const SEVERITY: &str = "high";

pub struct LogFormatDrift;

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &LogFormatDrift;

impl Detector for LogFormatDrift {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
        events
            .iter()
            .filter(|e| ty(e) == DRIFT_TYPE)
            .filter_map(|e| {
                let pct = num(e.fields(), "unmatched_percent")?;
                (pct >= UNMATCHED_PERCENT_THRESHOLD).then(|| {
                    finding(
                        FAMILY,
                        e,
                        "log-drift",
                        SEVERITY,
                        format!(
                            "{pct}% of {}'s log lines no longer match the parser",
                            e.actor
                        ),
                        json!({"unmatched_percent": pct, "rule": "log-format-drift"}),
                    )
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn ten_percent_boundary() {
        let run = |p: serde_json::Value| {
            let e = ev(
                "e",
                "k8s",
                "log_format_drift",
                "svc",
                "2026-05-04T10:00:00Z",
                serde_json::json!({"unmatched_percent": p}),
            );
            LogFormatDrift.detect(&[e], &bl(&[], &[])).len()
        };
        assert_eq!(run(serde_json::json!(9.9)), 0);
        assert_eq!(run(serde_json::json!(10.0)), 1);
        assert_eq!(run(serde_json::json!("22.5")), 1);
        assert_eq!(run(serde_json::json!(null)), 0);
    }
}

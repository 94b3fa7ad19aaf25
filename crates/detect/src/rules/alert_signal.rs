//! alert-signal: forge security alerts surfaced as findings.
//!
//! Rule: every `dependabot_alert`, `code_scanning_alert` or `secret_scanning_alert`
//! event is a signal; one finding per distinct alert (alert id + state, the id read
//! from `alert_number`, `alert_id` or `number`, else the event id). Severity comes
//! from the alert class: secret-scanning [`SECRET_SEVERITY`] (high), others
//! [`OTHER_SEVERITY`] (medium); raised to critical when a correlated non-alert event
//! (same actor, same `package`, or same `repo`) lies within ±[`CORRELATION_WINDOW_SECS`]
//! (72 h) of the alert.

use crate::Detector;
use crate::util::{finding, text, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;
use std::collections::BTreeSet;

pub const FAMILY: &str = "alert-signal";
/// Alert event types.
pub const ALERT_TYPES: [&str; 3] = [
    "dependabot_alert",
    "code_scanning_alert",
    "secret_scanning_alert",
];
pub const SECRET_SEVERITY: &str = "high";
pub const OTHER_SEVERITY: &str = "medium";
pub const CORRELATED_SEVERITY: &str = "critical";
/// ±72 hours.
pub const CORRELATION_WINDOW_SECS: i64 = 72 * 3600;

pub struct AlertSignal;

fn repo_of(e: &Event) -> Option<String> {
    text(e.fields(), "repo").or_else(|| {
        let t = e.target();
        (!t.is_empty()).then(|| t.to_string())
    })
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &AlertSignal;

impl Detector for AlertSignal {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for e in events {
            let t = ty(e);
            if !ALERT_TYPES.contains(&t.as_str()) {
                continue;
            }
            let m = e.fields();
            let alert_id = ["alert_number", "alert_id", "number"]
                .iter()
                .find_map(|k| text(m, k))
                .unwrap_or_else(|| e.id.clone());
            let state = text(m, "alert_state")
                .or_else(|| text(m, "state"))
                .unwrap_or_default();
            if !seen.insert((t.clone(), alert_id.clone(), state.clone())) {
                continue;
            }
            let package = text(m, "package");
            let repo = repo_of(e);
            let correlated = events.iter().find(|o| {
                !ALERT_TYPES.contains(&ty(o).as_str())
                    && (o.timestamp.secs - e.timestamp.secs).abs() <= CORRELATION_WINDOW_SECS
                    && ((!o.actor.is_empty() && o.actor == e.actor)
                        || (package.is_some() && text(o.fields(), "package") == package)
                        || (repo.is_some() && text(o.fields(), "repo") == repo))
            });
            let severity = if correlated.is_some() {
                CORRELATED_SEVERITY
            } else if t == "secret_scanning_alert" {
                SECRET_SEVERITY
            } else {
                OTHER_SEVERITY
            };
            out.push(finding(
                FAMILY,
                e,
                &format!("alert-{alert_id}-{state}"),
                severity,
                format!("{t} #{alert_id} ({state}) on {}", repo.clone().unwrap_or_default()),
                json!({"alert_type": t, "alert_id": alert_id, "state": state,
                       "correlated_event": correlated.map(|o| o.id.clone()), "rule": "forge-alert"}),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;

    #[test]
    fn alerts_fire_once_per_id_and_state_and_escalate_with_correlation() {
        let b = bl(&[], &[]);
        let alert = |id: &str, ts: &str, n: i64, state: &str| {
            ev(
                id,
                "github",
                "dependabot_alert",
                "dependabot[bot]",
                ts,
                serde_json::json!({"alert_number": n, "alert_state": state, "package": "p"}),
            )
        };
        let out = AlertSignal.detect(
            &[
                alert("a", "2026-05-10T00:00:00Z", 1, "open"),
                alert("b", "2026-05-10T01:00:00Z", 1, "open"),
                alert("c", "2026-05-10T02:00:00Z", 1, "fixed"),
            ],
            &b,
        );
        assert_eq!(sev(&out), vec!["medium", "medium"]);
        // Correlated event exactly 72 h away: critical; 72 h + 1 s: not.
        let bump = |ts| {
            ev(
                "u",
                "npm",
                "dependency_update",
                "dev",
                ts,
                serde_json::json!({"package": "p"}),
            )
        };
        let a = alert("a", "2026-05-10T00:00:00Z", 1, "open");
        assert_eq!(
            sev(&AlertSignal.detect(&[bump("2026-05-13T00:00:00Z"), a.clone()], &b)),
            vec!["critical"]
        );
        assert_eq!(
            sev(&AlertSignal.detect(&[bump("2026-05-13T00:00:01Z"), a], &b)),
            vec!["medium"]
        );
        let secret = ev(
            "s",
            "github",
            "secret_scanning_alert",
            "bot",
            "2026-05-10T00:00:00Z",
            serde_json::json!({"alert_number": 9, "alert_state": "resolved"}),
        );
        assert_eq!(sev(&AlertSignal.detect(&[secret], &b)), vec!["high"]);
        let pr = ev(
            "p",
            "github",
            "pull_request",
            "dependabot[bot]",
            "2026-05-10T00:00:00Z",
            serde_json::json!({}),
        );
        assert!(AlertSignal.detect(&[pr], &b).is_empty());
    }
}

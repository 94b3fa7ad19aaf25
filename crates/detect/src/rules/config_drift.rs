//! config-drift: security-relevant configuration changes, by event type.
//!
//! Rule (event type, canonical):
//! - critical: [`CRITICAL_TYPES`] (audit/log pipelines disabled or deleted, DNS zone
//!   or Cosmos container deleted);
//! - high: [`HIGH_TYPES`] (MFA removed, network and IAM role changes);
//!   `iam_policy_attach` unless a structured approval key is present
//!   ([`crate::util::APPROVAL_KEYS`]); `disable_local_auth_change` only when
//!   `new_value` is false; `consistency_level_change` only when `new_value` is
//!   strictly weaker than `old_value` in [`CONSISTENCY_ORDER`];
//! - medium: [`MEDIUM_TYPES`].
//!
//! One finding per matching event.

use crate::Detector;
use crate::util::{finding, has_approval, text, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;

pub const FAMILY: &str = "config-drift";
pub const CRITICAL_TYPES: [&str; 7] = [
    "audit_log_disabled",
    "audit_trail_delete",
    "cloudtrail_stop",
    "log_bucket_delete",
    "diagnostic_settings_delete",
    "dns_zone_delete",
    "cosmos_container_delete",
];
pub const HIGH_TYPES: [&str; 5] = [
    "mfa_disabled",
    "mfa_requirement_removed",
    "security_group_modify",
    "firewall_rule_add",
    "iam_role_modify",
];
pub const MEDIUM_TYPES: [&str; 3] = ["iam_policy_create", "config_change", "setting_update"];
/// Strongest first.
pub const CONSISTENCY_ORDER: [&str; 5] = [
    "strong",
    "boundedstaleness",
    "session",
    "consistentprefix",
    "eventual",
];

pub struct ConfigDrift;

fn consistency_rank(v: &str) -> Option<usize> {
    let v: String = v
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    CONSISTENCY_ORDER.iter().position(|x| *x == v)
}

/// The severity and rule for one event, `None` when it is not drift.
pub fn classify(
    t: &str,
    m: &serde_json::Map<String, serde_json::Value>,
) -> Option<(&'static str, &'static str)> {
    if CRITICAL_TYPES.contains(&t) {
        return Some(("critical", "critical-config-change"));
    }
    if HIGH_TYPES.contains(&t) {
        return Some(("high", "security-config-change"));
    }
    if MEDIUM_TYPES.contains(&t) {
        return Some(("medium", "config-change"));
    }
    match t {
        "iam_policy_attach" if !has_approval(m) => Some(("high", "unapproved-policy-attach")),
        "disable_local_auth_change"
            if text(m, "new_value").is_some_and(|v| v.eq_ignore_ascii_case("false")) =>
        {
            Some(("high", "local-auth-enabled"))
        }
        "consistency_level_change" => {
            let old = consistency_rank(&text(m, "old_value")?)?;
            let new = consistency_rank(&text(m, "new_value")?)?;
            (new > old).then_some(("high", "consistency-weakened"))
        }
        _ => None,
    }
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &ConfigDrift;

impl Detector for ConfigDrift {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
        events
            .iter()
            .filter_map(|e| {
                let t = ty(e);
                let (severity, rule) = classify(&t, e.fields())?;
                Some(finding(
                    FAMILY,
                    e,
                    "config",
                    severity,
                    format!("configuration drift: {t} by {} on {}", e.actor, e.target()),
                    json!({"event_type": t, "rule": rule}),
                ))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    fn one(t: &str, m: serde_json::Value) -> Vec<String> {
        let e = ev("e", "azure", t, "a", "2026-05-04T10:00:00Z", m);
        ConfigDrift
            .detect(&[e], &bl(&[], &[]))
            .into_iter()
            .map(|f| f.severity)
            .collect()
    }

    #[test]
    fn severities_by_type() {
        assert_eq!(
            one("diagnostic_settings_delete", json!({})),
            vec!["critical"]
        );
        assert_eq!(
            one("MFA_Requirement_Removed", json!({"approved_by": "x"})),
            vec!["high"]
        );
        assert_eq!(one("setting_update", json!({})), vec!["medium"]);
        assert!(one("dns_record_change", json!({})).is_empty());
    }

    #[test]
    fn conditional_types_at_their_boundaries() {
        assert_eq!(
            one("iam_policy_attach", json!({"justification": "ok"})),
            vec!["high"]
        );
        assert!(one("iam_policy_attach", json!({"ticket": "CHG-1"})).is_empty());
        assert_eq!(
            one("disable_local_auth_change", json!({"new_value": "false"})),
            vec!["high"]
        );
        assert!(one("disable_local_auth_change", json!({"new_value": "true"})).is_empty());
        // One step weaker fires; equal and stronger do not.
        assert_eq!(
            one(
                "consistency_level_change",
                json!({"old_value": "Session", "new_value": "ConsistentPrefix"})
            ),
            vec!["high"]
        );
        assert!(
            one(
                "consistency_level_change",
                json!({"old_value": "Session", "new_value": "Session"})
            )
            .is_empty()
        );
        assert!(
            one(
                "consistency_level_change",
                json!({"old_value": "Eventual", "new_value": "Session"})
            )
            .is_empty()
        );
        assert!(
            one(
                "consistency_level_change",
                json!({"old_value": "Session", "new_value": "Weird"})
            )
            .is_empty()
        );
    }
}

//! gauntlet-detect: the detector fleet and the detect exam (mallcop's reference fleet and
//! its offline detect exam).
//!
//! Why this exists: the detect exam grades a detection layer offline against labelled
//! scenarios, and the agent exam's end-to-end mode feeds the fleet's findings into the
//! triage cascade. Both need mallcop's reference fleet reproduced rule for rule over the
//! scenario projection ([`gauntlet_corpus::projection`]). This crate owns:
//! - the [`Detector`] seam and the reference fleet ([`builtin`]): one file per family
//!   under [`rules`] (18 framework families plus the two authored examples), each with
//!   its thresholds as named constants and a doc comment stating the rule, and [`util`],
//!   the field readers they share;
//! - [`context`]: what a deployment records as expected (relocations, travel, change
//!   windows, schedules, on-call rotations, stated working hours) and the hour profiles
//!   it supports, read by `unusual-timing` and `unusual-login`;
//! - [`fleet`]: running detectors isolated (own thread, panic capture, timeout);
//! - [`external`]: out-of-process detectors over a JSON stdin/stdout protocol, confined
//!   by [`gauntlet_sandbox`]; [`assemble`]: the fleet and the files an exam grades, from
//!   the user's options;
//! - [`exam`]: the detect exam itself (grading, recall and precision, coverage), and
//!   [`report_text`], its human summary and the writer of its artefacts.
//!
//! It does not know about the agent exam (the end-to-end mode lives there and calls in).
//!
//! Conventions every detector follows:
//! - Event types are compared canonically (trimmed, lowercased).
//! - Detectors read [`Event::fields`] (`payload.metadata`, else the payload).
//! - Output order is deterministic: events in input order, groups in sorted key order.
//! - Finding ids are `finding-<event id>-<rule>` (or `finding-<family>-<group>` for
//!   aggregate findings), `source` is `detector:<family>`, `type` the family token.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

use gauntlet_corpus::projection::{Baseline, Event, Finding};
use std::sync::Arc;

pub mod assemble;
pub mod context;
pub mod exam;
pub mod external;
pub mod fleet;
pub mod report_text;
pub mod util;

/// The reference fleet's rules, one file per family (`rules/<family>.rs`).
pub mod rules {
    pub mod alert_signal;
    pub mod auth_failure_burst;
    pub mod config_drift;
    pub mod dependency_tamper;
    pub mod deploy_flood;
    pub mod exfil_pattern;
    pub mod git_oops;
    pub mod injection_probe;
    pub mod log_format_drift;
    pub mod malicious_skill;
    pub mod new_actor;
    pub mod new_external_access;
    pub mod priv_escalation;
    pub mod rate_anomaly;
    pub mod secrets_exposure;
    pub mod synthetic_marker;
    pub mod unusual_login;
    pub mod unusual_resource_access;
    pub mod unusual_timing;
    pub mod volume_anomaly;
}

/// A detector: a pure function of the projected events and baseline.
///
/// Implementations must not rely on shared mutable state; the fleet runner calls them
/// from worker threads and treats a panic or an overrun as that detector's failure for
/// that scenario only.
pub trait Detector: Send + Sync + 'static {
    /// The family token this detector emits as finding `type` (e.g. `git-oops`).
    fn name(&self) -> &str;
    /// The findings for one scenario's events, in deterministic order.
    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding>;
}

/// Family tokens of the reference fleet, sorted (the fleet's run order).
pub const FAMILIES: [&str; 20] = [
    "alert-signal",
    "auth-failure-burst",
    "authored-deploy-flood",
    "authored-synthetic-marker",
    "config-drift",
    "dependency-tamper",
    "exfil-pattern",
    "git-oops",
    "injection-probe",
    "log-format-drift",
    "malicious-skill",
    "new-actor",
    "new-external-access",
    "priv-escalation",
    "rate-anomaly",
    "secrets-exposure",
    "unusual-login",
    "unusual-resource-access",
    "unusual-timing",
    "volume-anomaly",
];

/// The reference fleet, sorted by name.
pub fn builtin() -> Vec<Arc<dyn Detector>> {
    let mut v: Vec<Arc<dyn Detector>> = vec![
        Arc::new(rules::alert_signal::AlertSignal),
        Arc::new(rules::auth_failure_burst::AuthFailureBurst),
        Arc::new(rules::deploy_flood::DeployFlood),
        Arc::new(rules::synthetic_marker::SyntheticMarker),
        Arc::new(rules::config_drift::ConfigDrift),
        Arc::new(rules::dependency_tamper::DependencyTamper),
        Arc::new(rules::exfil_pattern::ExfilPattern),
        Arc::new(rules::git_oops::GitOops),
        Arc::new(rules::injection_probe::InjectionProbe),
        Arc::new(rules::log_format_drift::LogFormatDrift),
        Arc::new(rules::malicious_skill::MaliciousSkill),
        Arc::new(rules::new_actor::NewActor),
        Arc::new(rules::new_external_access::NewExternalAccess),
        Arc::new(rules::priv_escalation::PrivEscalation),
        Arc::new(rules::rate_anomaly::RateAnomaly),
        Arc::new(rules::secrets_exposure::SecretsExposure),
        Arc::new(rules::unusual_login::UnusualLogin),
        Arc::new(rules::unusual_resource_access::UnusualResourceAccess),
        Arc::new(rules::unusual_timing::UnusualTiming),
        Arc::new(rules::volume_anomaly::VolumeAnomaly),
    ];
    v.sort_by(|a, b| a.name().cmp(b.name()));
    v
}

/// Runs every built-in detector in name order, in this thread, with no isolation.
/// For tests and tools; the exam uses [`fleet::Fleet`].
pub fn run_all_unisolated(events: &[Event], baseline: &Baseline) -> Vec<Finding> {
    builtin()
        .iter()
        .flat_map(|d| d.detect(events, baseline))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_fleet_matches_family_list() {
        let names: Vec<String> = builtin().iter().map(|d| d.name().to_string()).collect();
        assert_eq!(names, FAMILIES.map(String::from).to_vec());
    }
}

/// Builders for detector unit tests.
#[cfg(test)]
pub(crate) mod testkit {
    use gauntlet_corpus::projection::{Baseline, Event, Finding, Timestamp};
    use serde_json::{Value, json};

    /// An event with `metadata` (a JSON object) at `ts` (RFC 3339).
    pub(crate) fn ev(
        id: &str,
        source: &str,
        ty: &str,
        actor: &str,
        ts: &str,
        metadata: Value,
    ) -> Event {
        Event {
            id: id.into(),
            source: source.into(),
            event_type: ty.into(),
            actor: actor.into(),
            timestamp: Timestamp::parse_or_zero(ts),
            payload: json!({"action": "", "target": "", "severity": "info", "metadata": metadata}),
        }
    }

    /// Like [`ev`] with an action and target.
    pub(crate) fn ev_at(
        id: &str,
        ty: &str,
        actor: &str,
        action: &str,
        target: &str,
        metadata: Value,
    ) -> Event {
        let mut e = ev(id, "src", ty, actor, "2026-05-04T10:00:00Z", metadata);
        e.payload["action"] = json!(action);
        e.payload["target"] = json!(target);
        e
    }

    /// A baseline whose known actors are `actors` and frequency table `freq`.
    pub(crate) fn bl(actors: &[&str], freq: &[(&str, i64)]) -> Baseline {
        Baseline {
            known_actors: actors.iter().map(|s| s.to_string()).collect(),
            known_users: actors
                .iter()
                .map(|s| (s.to_string(), Default::default()))
                .collect(),
            frequency_tables: freq.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..Baseline::default()
        }
    }

    /// `b` with `context` (a JSON object) as its context records.
    pub(crate) fn with_context(mut b: Baseline, context: Value) -> Baseline {
        b.context = context
            .as_object()
            .expect("context is a JSON object")
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        b
    }

    /// The severities of `findings`, in order.
    pub(crate) fn sev(findings: &[Finding]) -> Vec<&str> {
        findings.iter().map(|f| f.severity.as_str()).collect()
    }
}

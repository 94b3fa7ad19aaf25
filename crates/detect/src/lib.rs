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
use std::sync::{Arc, LazyLock};

pub mod assemble;
pub mod context;
pub mod exam;
pub mod external;
pub mod fleet;
pub mod report_text;
pub mod util;

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

/// The reference fleet's rules, one file per family (`rules/<name>.rs`, with its
/// `FAMILY` and its detector).
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

/// The reference fleet, sorted by family token (its run order): the `DETECTOR` of each
/// file under `rules/`, listed by the build from the `pub mod` lines above.
/// [`FAMILIES`] and [`builtin()`] are read from it.
static FLEET: LazyLock<Vec<&'static dyn Detector>> = LazyLock::new(|| {
    let mut all: Vec<&'static dyn Detector> =
        include!(concat!(env!("OUT_DIR"), "/fleet.rs")).to_vec();
    all.sort_by(|a, b| a.name().cmp(b.name()));
    all
});

/// Family tokens of the reference fleet, sorted (the fleet's run order).
pub static FAMILIES: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| FLEET.iter().map(|&d| d.name()).collect());

/// A detector of [`FLEET`] behind the `Arc` the fleet runner shares.
struct Builtin(&'static dyn Detector);

impl Detector for Builtin {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        self.0.detect(events, baseline)
    }
}

/// The reference fleet, sorted by name.
pub fn builtin() -> Vec<Arc<dyn Detector>> {
    let mut v: Vec<Arc<dyn Detector>> = FLEET
        .iter()
        .map(|&d| Arc::new(Builtin(d)) as Arc<dyn Detector>)
        .collect();
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
        assert_eq!(names, *FAMILIES);
        assert!(
            FAMILIES.windows(2).all(|w| w[0] < w[1]),
            "the fleet! list is sorted by family token"
        );
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

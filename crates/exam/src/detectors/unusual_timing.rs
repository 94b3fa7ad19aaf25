//! unusual-timing: activity at hours the actor is never active.
//!
//! Rule: only when the baseline has any `actor_hours` (explicit or implied by
//! part-of-day frequency keys); for actors with a non-empty hour profile, events at a
//! UTC hour outside the profile are grouped by (actor, hour) → one low finding per
//! group. Actors without a profile are never judged.

use super::Detector;
use super::util::group_finding;
use crate::projection::{Baseline, Event, Finding};
use serde_json::json;
use std::collections::BTreeMap;

pub const FAMILY: &str = "unusual-timing";
pub const SEVERITY: &str = "low";

pub struct UnusualTiming;

impl Detector for UnusualTiming {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        if baseline.actor_hours.values().all(|h| h.is_empty()) {
            return Vec::new();
        }
        let mut groups: BTreeMap<(&str, u32), Vec<&Event>> = BTreeMap::new();
        for e in events {
            let Some(hours) = baseline.actor_hours.get(&e.actor) else {
                continue;
            };
            let h = e.timestamp.hour();
            if !hours.is_empty() && !hours.contains(&h) {
                groups.entry((&e.actor, h)).or_default().push(e);
            }
        }
        groups
            .into_iter()
            .map(|((actor, h), evs)| {
                group_finding(
                    FAMILY,
                    format!("finding-{FAMILY}-{actor}-{h:02}"),
                    actor,
                    &evs,
                    SEVERITY,
                    format!("{actor} active at {h:02}:00 UTC, outside baseline hours"),
                    json!({"hour": h, "events": evs.len(), "rule": "outside-baseline-hours"}),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detectors::testkit::*;
    use serde_json::json;

    #[test]
    fn last_profiled_hour_vs_first_unprofiled() {
        let mut b = bl(&["ops"], &[]);
        b.actor_hours.insert("ops".into(), (8..=17).collect());
        let at = |ts: &str| ev(ts, "azure", "x", "ops", ts, json!({}));
        assert!(
            UnusualTiming
                .detect(&[at("2026-05-12T17:59:59Z")], &b)
                .is_empty()
        );
        let out = UnusualTiming.detect(
            &[
                at("2026-05-12T18:00:00Z"),
                at("2026-05-12T18:30:00Z"),
                at("2026-05-12T03:00:00Z"),
            ],
            &b,
        );
        assert_eq!(out.len(), 2, "grouped by (actor, hour)");
        assert_eq!(out[0].event_ids.len(), 1);
        assert_eq!(out[1].event_ids.len(), 2);
    }

    #[test]
    fn silent_without_profiles() {
        let b = bl(&["ops"], &[]);
        let e = ev("e", "azure", "x", "ops", "2026-05-12T03:00:00Z", json!({}));
        assert!(
            UnusualTiming
                .detect(std::slice::from_ref(&e), &b)
                .is_empty()
        );
        let mut b2 = bl(&["ops", "svc"], &[]);
        b2.actor_hours.insert("svc".into(), (8..=17).collect());
        assert!(
            UnusualTiming.detect(&[e], &b2).is_empty(),
            "ops has no profile"
        );
    }
}

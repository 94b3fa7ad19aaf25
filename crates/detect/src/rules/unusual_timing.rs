//! unusual-timing: activity at hours the actor is never active.
//!
//! Rule: only when the baseline has any `actor_hours` (explicit or implied by
//! part-of-day frequency keys); for actors with a non-empty hour profile, events at a
//! UTC hour outside the profile are grouped by (actor, hour) → one low finding per
//! group. Actors without a profile are never judged.
//!
//! An event may carry its actor's usual hours itself (`usual_hours`: a list of hours,
//! or `"9-17"` / `"22-6"` ranges, comma-separated): such an event is judged against
//! them (with the baseline's hours, if any), whatever the rest of the baseline holds.
//!
//! An off-profile event is not judged when the deployment records a benign explanation
//! for it ([`crate::benign::timing`]): an on-call rotation, a deploy window at that hour,
//! a relocation or a trip.

use crate::Detector;
use crate::util::group_finding;
use gauntlet_corpus::projection::{Baseline, Event, Finding, value_text};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

pub const FAMILY: &str = "unusual-timing";
pub const SEVERITY: &str = "low";
/// The event field carrying the actor's usual hours.
pub const USUAL_HOURS_KEY: &str = "usual_hours";

/// The hours of a `usual_hours` hint: `[9, 10]`, `"9-17"`, `"22-6"`, `"8,9,13-15"`.
pub fn usual_hours(v: &Value) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let items: Vec<String> = match v {
        Value::Array(a) => a.iter().map(value_text).collect(),
        Value::Null => Vec::new(),
        v => value_text(v).split(',').map(str::to_string).collect(),
    };
    for it in items {
        let it = it.trim();
        let parse = |s: &str| s.trim().parse::<u32>().ok().filter(|h| *h < 24);
        match it.split_once('-') {
            Some((a, b)) => {
                if let (Some(a), Some(b)) = (parse(a), parse(b)) {
                    let mut h = a;
                    loop {
                        out.insert(h);
                        if h == b {
                            break;
                        }
                        h = (h + 1) % 24;
                    }
                }
            }
            None => out.extend(parse(it)),
        }
    }
    out
}

pub struct UnusualTiming;

impl Detector for UnusualTiming {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let profiled = !baseline.actor_hours.values().all(|h| h.is_empty());
        let mut groups: BTreeMap<(&str, u32), Vec<&Event>> = BTreeMap::new();
        for e in events {
            let hinted = e.fields().get(USUAL_HOURS_KEY).map(usual_hours);
            if !profiled && hinted.as_ref().is_none_or(BTreeSet::is_empty) {
                continue;
            }
            let mut hours = baseline
                .actor_hours
                .get(&e.actor)
                .cloned()
                .unwrap_or_default();
            hours.extend(hinted.unwrap_or_default());
            let h = e.timestamp.hour();
            if !hours.is_empty()
                && !hours.contains(&h)
                && crate::benign::timing(e, baseline, h).is_none()
            {
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
    use crate::testkit::*;
    use serde_json::json;

    #[test]
    fn usual_hours_hints_are_the_profile() {
        assert_eq!(usual_hours(&json!("9-11")), [9, 10, 11].into());
        assert_eq!(usual_hours(&json!("22-1")), [22, 23, 0, 1].into());
        assert_eq!(usual_hours(&json!([8, "9"])), [8, 9].into());
        assert_eq!(usual_hours(&json!("7, 13-14, 99")), [7, 13, 14].into());
        let b = bl(&["ops"], &[]);
        let at = |ts: &str, md| ev(ts, "azure", "x", "ops", ts, md);
        assert!(
            UnusualTiming
                .detect(
                    &[at("2026-05-12T10:00:00Z", json!({"usual_hours": "9-17"}))],
                    &b
                )
                .is_empty()
        );
        assert_eq!(
            UnusualTiming
                .detect(
                    &[at("2026-05-12T03:00:00Z", json!({"usual_hours": "9-17"}))],
                    &b
                )
                .len(),
            1
        );
        assert!(
            UnusualTiming
                .detect(&[at("2026-05-12T03:00:00Z", json!({}))], &b)
                .is_empty(),
            "no profile anywhere: never judged"
        );
    }

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

    /// Off-profile hours that the baseline explains (on-call, a deploy window at that
    /// hour, a relocation) are silent; an explanation for another hour or actor is not.
    #[test]
    fn benign_explanations_silence_off_profile_hours() {
        let at = |md| ev("e", "azure", "x", "ops", "2026-05-12T03:00:00Z", md);
        let with = |freq: &[(&str, i64)]| {
            let mut b = bl(&["ops"], freq);
            b.actor_hours.insert("ops".into(), (8..=17).collect());
            b
        };
        assert_eq!(UnusualTiming.detect(&[at(json!({}))], &with(&[])).len(), 1);
        for key in [
            "oncall:ops",
            "deploy_window:03",
            "location_change:ops",
            "travel:ops",
        ] {
            assert!(
                UnusualTiming
                    .detect(&[at(json!({}))], &with(&[(key, 1)]))
                    .is_empty(),
                "{key}"
            );
        }
        for key in ["oncall:lee", "deploy_window:22"] {
            assert_eq!(
                UnusualTiming
                    .detect(&[at(json!({}))], &with(&[(key, 1)]))
                    .len(),
                1,
                "{key}"
            );
        }
        let moved = with(&[("location_change:ops:JP-Tokyo", 1)]);
        assert!(
            UnusualTiming
                .detect(&[at(json!({"location": "JP-Tokyo"}))], &moved)
                .is_empty()
        );
        assert_eq!(
            UnusualTiming
                .detect(&[at(json!({"location": "BR-Sao-Paulo"}))], &moved)
                .len(),
            1
        );
        assert!(
            UnusualTiming
                .detect(&[at(json!({"on_call": true}))], &with(&[]))
                .is_empty()
        );
    }
}

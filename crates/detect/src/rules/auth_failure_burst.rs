//! auth-failure-burst: credential guessing against one account, or sprayed across many.
//!
//! Rules:
//! - **Burst**: per actor, at least [`BURST_MIN_FAILURES`] (5) `login_failure` /
//!   `mfa_failure` events and no success event (`login_success`,
//!   `mfa_enrollment_complete`) for that actor → one high finding per actor.
//! - **Spray**: within any [`SPRAY_WINDOW_SECS`] (15-minute, inclusive) window of
//!   `login_failure` events, at least [`SPRAY_MIN_ACTORS`] (3) distinct actors and
//!   [`SPRAY_MIN_IPS`] (3) distinct source IPs (`ip`, else `source_ip`) → one high
//!   finding for the scenario, actor `multiple`.

use crate::Detector;
use crate::util::{group_finding, text, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};

pub const FAMILY: &str = "auth-failure-burst";
pub const FAILURE_TYPES: [&str; 2] = ["login_failure", "mfa_failure"];
pub const SUCCESS_TYPES: [&str; 2] = ["login_success", "mfa_enrollment_complete"];
pub const BURST_MIN_FAILURES: usize = 5;
pub const SPRAY_WINDOW_SECS: i64 = 15 * 60;
pub const SPRAY_MIN_ACTORS: usize = 3;
pub const SPRAY_MIN_IPS: usize = 3;
pub const SEVERITY: &str = "high";

pub struct AuthFailureBurst;

fn ip(e: &Event) -> Option<String> {
    text(e.fields(), "ip").or_else(|| text(e.fields(), "source_ip"))
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &AuthFailureBurst;

impl Detector for AuthFailureBurst {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
        let mut failures: BTreeMap<&str, Vec<&Event>> = BTreeMap::new();
        let mut succeeded: BTreeSet<&str> = BTreeSet::new();
        for e in events {
            let t = ty(e);
            if FAILURE_TYPES.contains(&t.as_str()) {
                failures.entry(&e.actor).or_default().push(e);
            } else if SUCCESS_TYPES.contains(&t.as_str()) {
                succeeded.insert(&e.actor);
            }
        }
        let mut out = Vec::new();
        for (actor, evs) in &failures {
            if evs.len() >= BURST_MIN_FAILURES && !succeeded.contains(actor) {
                out.push(group_finding(
                    FAMILY,
                    format!("finding-{FAMILY}-burst-{actor}"),
                    actor,
                    evs,
                    SEVERITY,
                    format!(
                        "{} authentication failures for {actor} with no success",
                        evs.len()
                    ),
                    json!({"failures": evs.len(), "rule": "failure-burst"}),
                ));
            }
        }

        let mut logins: Vec<&Event> = events.iter().filter(|e| ty(e) == "login_failure").collect();
        logins.sort_by_key(|e| e.timestamp);
        for (i, start) in logins.iter().enumerate() {
            let window: Vec<&Event> = logins[i..]
                .iter()
                .take_while(|e| e.timestamp.secs - start.timestamp.secs <= SPRAY_WINDOW_SECS)
                .copied()
                .collect();
            let actors: BTreeSet<&str> = window.iter().map(|e| e.actor.as_str()).collect();
            let ips: BTreeSet<String> = window.iter().filter_map(|e| ip(e)).collect();
            if actors.len() >= SPRAY_MIN_ACTORS && ips.len() >= SPRAY_MIN_IPS {
                out.push(group_finding(
                    FAMILY,
                    format!("finding-{FAMILY}-spray-{}", start.id),
                    "multiple",
                    &window,
                    SEVERITY,
                    format!(
                        "password spray: {} accounts from {} addresses within 15 minutes",
                        actors.len(),
                        ips.len()
                    ),
                    json!({"actors": actors, "ips": ips, "rule": "password-spray"}),
                ));
                break;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    fn fail(i: usize, actor: &str, ts: &str, ip: &str) -> Event {
        ev(
            &format!("f{i}"),
            "okta",
            "login_failure",
            actor,
            ts,
            json!({"ip": ip}),
        )
    }

    #[test]
    fn burst_boundary_four_vs_five_and_success_silences() {
        let b = bl(&[], &[]);
        let four: Vec<Event> = (0..4)
            .map(|i| fail(i, "u", "2026-05-04T08:00:00Z", "1.1.1.1"))
            .collect();
        assert!(AuthFailureBurst.detect(&four, &b).is_empty());
        let mut five = four.clone();
        five.push(ev(
            "m",
            "okta",
            "mfa_failure",
            "u",
            "2026-05-04T08:05:00Z",
            json!({}),
        ));
        assert_eq!(sev(&AuthFailureBurst.detect(&five, &b)), vec!["high"]);
        let mut six_then_ok = five.clone();
        six_then_ok.push(ev(
            "s",
            "okta",
            "login_success",
            "u",
            "2026-05-04T08:06:00Z",
            json!({}),
        ));
        assert!(AuthFailureBurst.detect(&six_then_ok, &b).is_empty());
    }

    #[test]
    fn spray_needs_three_actors_and_ips_within_fifteen_minutes() {
        let b = bl(&[], &[]);
        let inside = vec![
            fail(1, "a", "2026-05-04T04:00:00Z", "ip1"),
            fail(2, "b", "2026-05-04T04:07:00Z", "ip2"),
            fail(3, "c", "2026-05-04T04:15:00Z", "ip3"),
        ];
        let out = AuthFailureBurst.detect(&inside, &b);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].actor, "multiple");
        let outside = vec![
            fail(1, "a", "2026-05-04T04:00:00Z", "ip1"),
            fail(2, "b", "2026-05-04T04:07:00Z", "ip2"),
            fail(3, "c", "2026-05-04T04:15:01Z", "ip3"),
        ];
        assert!(AuthFailureBurst.detect(&outside, &b).is_empty());
        let two_ips = vec![
            fail(1, "a", "2026-05-04T04:00:00Z", "ip1"),
            fail(2, "b", "2026-05-04T04:01:00Z", "ip2"),
            fail(3, "c", "2026-05-04T04:02:00Z", "ip2"),
        ];
        assert!(AuthFailureBurst.detect(&two_ips, &b).is_empty());
    }
}

//! unusual-login: logins that do not fit the user's profile.
//!
//! Rule: over `login` events, one finding per event:
//! - unknown user (actor not in `known_actors`) → high;
//! - known user without an IP or geo profile → silent (the exam projection gives
//!   every known actor an empty profile, so only unknown users fire there);
//! - login IP in the profile's known IPs → silent;
//! - geo in the profile's known geos (new IP) → low;
//! - otherwise → high.
//!
//! The profile is the baseline's, plus the comparison hints a deployment writes into
//! the event itself: `usual_ip` / `usual_ips` / `usual_source_ip` are known IPs,
//! `usual_location` / `usual_locations` / `usual_geo` / `usual_country` known geos
//! (a list, or one value; a comma-separated string counts as a list). The login's own
//! IP is `ip` / `source_ip`, its geo `geo` / `country` / `location`.
//!
//! A known user's login from a new place is silent when the deployment records a move
//! or trip in effect to exactly that place ([`crate::context::explain::Context::login`]:
//! a relocation or travel record in the baseline's context, or on the event itself —
//! `travel_to`, `relocated_to`, a trip's destination). An unknown user is never
//! explained away.

use crate::Detector;
use crate::context::explain::Context;
use crate::util::{finding, text, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding, value_text};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

pub const FAMILY: &str = "unusual-login";
pub const LOGIN_TYPE: &str = "login";
/// Event fields naming the IPs the user usually logs in from.
pub const USUAL_IP_KEYS: [&str; 3] = ["usual_ip", "usual_ips", "usual_source_ip"];
/// Event fields naming where the user usually logs in from.
pub const USUAL_GEO_KEYS: [&str; 4] = [
    "usual_location",
    "usual_locations",
    "usual_geo",
    "usual_country",
];

/// The values of the hint fields `keys`: list items, or a comma-separated string.
pub fn hints(m: &Map<String, Value>, keys: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for k in keys {
        match m.get(*k) {
            Some(Value::Array(a)) => out.extend(a.iter().map(value_text)),
            Some(Value::Null) | None => {}
            Some(v) => out.extend(value_text(v).split(',').map(str::to_string)),
        }
    }
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

pub struct UnusualLogin;

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &UnusualLogin;

impl Detector for UnusualLogin {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let mut out = Vec::new();
        let mut ctx = None;
        for e in events.iter().filter(|e| ty(e) == LOGIN_TYPE) {
            let m = e.fields();
            let ip = text(m, "ip")
                .or_else(|| text(m, "source_ip"))
                .unwrap_or_default();
            let geo = text(m, "geo")
                .or_else(|| text(m, "country"))
                .or_else(|| text(m, "location"))
                .unwrap_or_default();
            let (severity, rule) = if !baseline.is_known_actor(&e.actor) {
                ("high", "unknown-user")
            } else {
                let mut ips = hints(m, &USUAL_IP_KEYS);
                let mut geos = hints(m, &USUAL_GEO_KEYS);
                if let Some(p) = baseline.known_users.get(&e.actor) {
                    ips.extend(p.known_ips.iter().cloned());
                    geos.extend(p.known_geos.iter().cloned());
                }
                if ips.is_empty() && geos.is_empty() {
                    continue;
                }
                if ips.contains(&ip) {
                    continue;
                }
                let ctx = ctx.get_or_insert_with(|| Context::new(baseline, events));
                if ctx.login(e, &geo).is_some() {
                    continue;
                }
                if geos.iter().any(|g| g.eq_ignore_ascii_case(&geo)) {
                    ("low", "new-ip-known-geo")
                } else {
                    ("high", "new-ip-new-geo")
                }
            };
            out.push(finding(
                FAMILY,
                e,
                "login",
                severity,
                format!("{rule}: {} logged in from {ip} ({geo})", e.actor),
                json!({"ip": ip, "geo": geo, "rule": rule}),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    #[test]
    fn profile_ladder() {
        let login = |actor: &str, ip: &str, geo: &str| {
            ev(
                "l",
                "okta",
                "login",
                actor,
                "2026-05-04T10:00:00Z",
                json!({"ip": ip, "geo": geo}),
            )
        };
        let mut b = bl(&["dana"], &[]);
        assert_eq!(
            sev(&UnusualLogin.detect(&[login("mallory", "1", "x")], &b)),
            vec!["high"]
        );
        assert!(
            UnusualLogin
                .detect(&[login("dana", "1", "PT")], &b)
                .is_empty(),
            "empty profile"
        );
        let p = b.known_users.get_mut("dana").unwrap();
        p.known_ips.insert("1".into());
        p.known_geos.insert("PT".into());
        assert!(
            UnusualLogin
                .detect(&[login("dana", "1", "US")], &b)
                .is_empty(),
            "known ip"
        );
        assert_eq!(
            sev(&UnusualLogin.detect(&[login("dana", "2", "PT")], &b)),
            vec!["low"]
        );
        assert_eq!(
            sev(&UnusualLogin.detect(&[login("dana", "2", "US")], &b)),
            vec!["high"]
        );
        assert!(
            UnusualLogin
                .detect(
                    &[ev("x", "okta", "login_success", "mallory", "", json!({}))],
                    &b
                )
                .is_empty()
        );
    }

    #[test]
    fn comparison_hints_in_the_event_are_the_profile() {
        let b = bl(&["dana"], &[]);
        let login =
            |md: serde_json::Value| ev("l", "okta", "login", "dana", "2026-05-04T10:00:00Z", md);
        let run = |md| -> Vec<String> {
            sev(&UnusualLogin.detect(&[login(md)], &b))
                .into_iter()
                .map(str::to_string)
                .collect()
        };
        assert!(run(json!({"ip": "1", "usual_ip": "1", "location": "RO"})).is_empty());
        assert!(run(json!({"ip": "1", "usual_ips": ["2", "1"]})).is_empty());
        assert!(run(json!({"ip": "1", "usual_ips": "2, 1"})).is_empty());
        assert_eq!(
            run(
                json!({"ip": "9", "usual_ip": "1", "location": "pt-lisbon", "usual_location": "PT-Lisbon"})
            ),
            vec!["low"]
        );
        assert_eq!(
            run(
                json!({"ip": "9", "usual_ip": "1", "location": "RO-Bucharest", "usual_location": "PT-Lisbon"})
            ),
            vec!["high"]
        );
        assert!(
            run(json!({"ip": "9", "location": "RO"})).is_empty(),
            "no hint, no profile"
        );
    }

    /// A login from a recorded trip's or move's destination is silent; from anywhere
    /// else, or by an unknown user, it still fires.
    #[test]
    fn recorded_travel_explains_only_its_destination() {
        let b = bl(&["dana"], &[("travel:dana:DE-Berlin", 1)]);
        let login = |actor: &str, geo: &str| {
            ev(
                "l",
                "okta",
                "login",
                actor,
                "2026-05-04T10:00:00Z",
                json!({"ip": "9", "geo": geo, "usual_ip": "1", "usual_location": "PT-Lisbon"}),
            )
        };
        assert!(
            UnusualLogin
                .detect(&[login("dana", "DE-Berlin")], &b)
                .is_empty()
        );
        assert_eq!(
            sev(&UnusualLogin.detect(&[login("dana", "RO-Bucharest")], &b)),
            vec!["high"]
        );
        assert_eq!(
            sev(&UnusualLogin.detect(&[login("mallory", "DE-Berlin")], &b)),
            vec!["high"]
        );
        let moved = bl(&["dana"], &[("location_change:dana:JP-Tokyo", 1)]);
        assert!(
            UnusualLogin
                .detect(&[login("dana", "jp-tokyo")], &moved)
                .is_empty()
        );
    }

    /// Relocations and trips recorded in the baseline's context or on the login: the
    /// destination, while the record is in effect, and not when it was cancelled.
    #[test]
    fn recorded_relocation_and_travel_in_context() {
        let login = |ts: &str, geo: &str, extra: serde_json::Value| {
            let mut md =
                json!({"ip": "9", "geo": geo, "usual_ip": "1", "usual_location": "PT-Lisbon"});
            for (k, v) in extra.as_object().unwrap() {
                md[k] = v.clone();
            }
            ev("l", "okta", "login", "dana", ts, md)
        };
        let fires = |b: &Baseline, e: Event| !UnusualLogin.detect(&[e], b).is_empty();
        let moved = with_context(
            bl(&["dana"], &[]),
            json!({"relocations": {"dana": {"to": "JP-Tokyo", "effective_date": "2026-07-20"}}}),
        );
        assert!(!fires(
            &moved,
            login("2026-08-06T01:05:00Z", "JP-Tokyo", json!({}))
        ));
        assert!(fires(
            &moved,
            login("2026-08-06T01:05:00Z", "CN-Shanghai", json!({}))
        ));
        assert!(
            fires(&moved, login("2026-07-01T01:05:00Z", "JP-Tokyo", json!({}))),
            "before the move"
        );
        let trip = |status: &str| {
            with_context(
                bl(&["dana"], &[]),
                json!({"notes": format!("dana is at the Sydney offsite 9-13 June (request {status}).")}),
            )
        };
        assert!(!fires(
            &trip("approved"),
            login("2026-06-10T23:10:00Z", "AU-Sydney", json!({}))
        ));
        assert!(
            fires(
                &trip("approved"),
                login("2026-06-20T23:10:00Z", "AU-Sydney", json!({}))
            ),
            "after the trip"
        );
        assert!(fires(
            &trip("cancelled"),
            login("2026-06-10T23:10:00Z", "AU-Sydney", json!({}))
        ));
        let none = bl(&["dana"], &[]);
        let on_event = json!({"travel_request": "TRV-1", "trip_destination": "US-New-York"});
        assert!(!fires(
            &none,
            login("2026-06-09T22:30:00Z", "US-New-York", on_event.clone())
        ));
        assert!(fires(
            &none,
            login("2026-06-09T22:30:00Z", "US-Boston", on_event)
        ));
        let stranger = ev(
            "l",
            "okta",
            "login",
            "mallory",
            "2026-08-06T01:05:00Z",
            json!({"geo": "JP-Tokyo", "travel_to": "JP-Tokyo"}),
        );
        assert_eq!(
            sev(&UnusualLogin.detect(&[stranger], &moved)),
            vec!["high"],
            "unknown users are never explained"
        );
    }
}

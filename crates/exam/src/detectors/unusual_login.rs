//! unusual-login: logins that do not fit the user's profile.
//!
//! Rule: over `login` events, one finding per event:
//! - unknown user (actor not in `known_actors`) → high;
//! - known user without an IP or geo profile → silent (the exam projection gives
//!   every known actor an empty profile, so only unknown users fire there);
//! - login IP in the profile's known IPs → silent;
//! - geo in the profile's known geos (new IP) → low;
//! - otherwise → high.

use super::Detector;
use super::util::{finding, text, ty};
use crate::projection::{Baseline, Event, Finding};
use serde_json::json;

pub const FAMILY: &str = "unusual-login";
pub const LOGIN_TYPE: &str = "login";

pub struct UnusualLogin;

impl Detector for UnusualLogin {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let mut out = Vec::new();
        for e in events.iter().filter(|e| ty(e) == LOGIN_TYPE) {
            let m = e.fields();
            let ip = text(m, "ip")
                .or_else(|| text(m, "source_ip"))
                .unwrap_or_default();
            let geo = text(m, "geo")
                .or_else(|| text(m, "country"))
                .unwrap_or_default();
            let (severity, rule) = if !baseline.is_known_actor(&e.actor) {
                ("high", "unknown-user")
            } else {
                let Some(p) = baseline.known_users.get(&e.actor) else {
                    continue;
                };
                if p.known_ips.is_empty() && p.known_geos.is_empty() {
                    continue;
                }
                if p.known_ips.contains(&ip) {
                    continue;
                }
                if p.known_geos.contains(&geo) {
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
    use crate::detectors::testkit::*;
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
}

//! Benign explanations a deployment records for activity that would otherwise look
//! unusual: a relocation, travel, an on-call rotation, a deploy window.
//!
//! Why: a timing or login rule that only knows an actor's usual hours and places fires
//! on the night an on-call engineer is paged, on the first week after someone moves, on a
//! business trip, on the release window. Deployments record these facts in the baseline
//! (frequency-table entries, the form their baselines already use for `time:<HH>:<actor>`)
//! or in the event's own metadata. `unusual-timing` and `unusual-login` consult
//! [`timing`] and [`login`] before they fire, and stay silent when one applies.
//!
//! Baseline frequency entries (a positive count means "recorded"; `<loc>` compared
//! case-insensitively with the event's location):
//! - `location_change:<actor>` or `location_change:<actor>:<loc>`: the actor relocated
//!   (to `<loc>`). Explains off-profile hours (the profile predates the move), and a
//!   login from `<loc>`.
//! - `travel:<actor>` or `travel:<actor>:<loc>`: the actor is travelling (to `<loc>`).
//!   Explains off-profile hours, and a login from `<loc>`.
//! - `oncall:<actor>` (also `on_call:<actor>`): the actor is on an on-call rotation.
//!   Explains off-profile hours only.
//! - `deploy_window:<HH>` or `deploy_window:<HH>:<actor>`: a deploy window at UTC hour
//!   `HH` (for everyone, or for the actor). Explains activity in that hour only.
//!
//! Event metadata: `location_change`, `relocated_to`, `travel`, `travel_to` (a location,
//! or `true`), `on_call` / `oncall` (`true`), `deploy_window` / `change_window` (`true`).
//! A location given there explains a login from that location; `true` explains hours.
//!
//! What never counts: a login by an unknown user, a location that differs from the
//! recorded destination, a deploy window at another hour. The explanation found is
//! returned so a caller can name it.

use crate::util::text;
use gauntlet_corpus::projection::{Baseline, Event};
use serde_json::Value;

/// Event metadata keys naming a relocation or a trip (a location, or `true`).
const MOVE_KEYS: [&str; 4] = ["location_change", "relocated_to", "travel", "travel_to"];
/// Event metadata flags for an on-call page.
const ONCALL_KEYS: [&str; 2] = ["on_call", "oncall"];
/// Event metadata flags for a deploy / change window.
const WINDOW_KEYS: [&str; 2] = ["deploy_window", "change_window"];

fn recorded(b: &Baseline, key: &str) -> bool {
    b.freq(key) > 0
}

fn flag(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "yes"),
        _ => false,
    }
}

/// The locations a relocation/travel entry of the baseline records for `actor`
/// (`None` inside: an entry without a location).
fn moves<'b>(b: &'b Baseline, actor: &str) -> Vec<(&'static str, Option<&'b str>)> {
    let mut out = Vec::new();
    for kind in ["location_change", "travel"] {
        let prefix = format!("{kind}:{actor}");
        for (key, n) in b.frequency_tables.range(prefix.clone()..) {
            let Some(rest) = key.strip_prefix(&prefix) else {
                break;
            };
            if *n <= 0 {
                continue;
            }
            match rest.strip_prefix(':') {
                _ if rest.is_empty() => out.push((kind, None)),
                Some(loc) if !loc.is_empty() => out.push((kind, Some(loc))),
                _ => {}
            }
        }
    }
    out
}

/// Why activity of `e` at UTC `hour`, outside the actor's usual hours, is benign, if the
/// baseline or the event records a reason.
pub fn timing(e: &Event, baseline: &Baseline, hour: u32) -> Option<String> {
    let actor = e.actor.as_str();
    let m = e.fields();
    if ONCALL_KEYS.iter().any(|k| flag(m.get(*k)))
        || recorded(baseline, &format!("oncall:{actor}"))
        || recorded(baseline, &format!("on_call:{actor}"))
    {
        return Some(format!("{actor} is on an on-call rotation"));
    }
    if WINDOW_KEYS.iter().any(|k| flag(m.get(*k)))
        || recorded(baseline, &format!("deploy_window:{hour:02}"))
        || recorded(baseline, &format!("deploy_window:{hour}"))
        || recorded(baseline, &format!("deploy_window:{hour:02}:{actor}"))
        || recorded(baseline, &format!("deploy_window:{hour}:{actor}"))
    {
        return Some(format!("{hour:02}:00 UTC is a recorded deploy window"));
    }
    if let Some(k) = MOVE_KEYS.iter().find(|k| {
        m.get(**k)
            .is_some_and(|v| flag(Some(v)) || text(m, k).is_some_and(|t| t != "false"))
    }) {
        return Some(format!("the event records `{k}` for {actor}"));
    }
    let here = event_location(e);
    moves(baseline, actor)
        .into_iter()
        .find(|(_, loc)| match (loc, &here) {
            (None, _) | (Some(_), None) => true,
            (Some(l), Some(h)) => l.eq_ignore_ascii_case(h),
        })
        .map(|(kind, loc)| match loc {
            Some(l) => format!("the baseline records {kind} of {actor} to {l}"),
            None => format!("the baseline records {kind} of {actor}"),
        })
}

/// The event's location (`geo`, `country`, `location`), if it has one.
pub fn event_location(e: &Event) -> Option<String> {
    let m = e.fields();
    text(m, "geo")
        .or_else(|| text(m, "country"))
        .or_else(|| text(m, "location"))
}

/// Why a known user's login from `geo`, outside their profile, is benign: a relocation
/// or trip to exactly that location, recorded in the baseline or the event.
pub fn login(e: &Event, baseline: &Baseline, geo: &str) -> Option<String> {
    if geo.is_empty() {
        return None;
    }
    let actor = e.actor.as_str();
    let m = e.fields();
    for k in MOVE_KEYS {
        if text(m, k).is_some_and(|t| t.eq_ignore_ascii_case(geo)) {
            return Some(format!("the event records `{k}` to {geo}"));
        }
    }
    moves(baseline, actor)
        .into_iter()
        .find(|(_, loc)| loc.is_some_and(|l| l.eq_ignore_ascii_case(geo)))
        .map(|(kind, _)| format!("the baseline records {kind} of {actor} to {geo}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    fn at(md: serde_json::Value) -> Event {
        ev("e", "okta", "login", "dana", "2026-05-04T03:00:00Z", md)
    }

    #[test]
    fn timing_explanations_from_the_baseline() {
        let none = bl(&["dana"], &[]);
        assert_eq!(timing(&at(json!({})), &none, 3), None);
        for key in [
            "oncall:dana",
            "on_call:dana",
            "deploy_window:03",
            "deploy_window:3:dana",
            "location_change:dana",
            "travel:dana",
        ] {
            let b = bl(&["dana"], &[(key, 1)]);
            assert!(timing(&at(json!({})), &b, 3).is_some(), "{key}");
            // A zero count records nothing.
            let z = bl(&["dana"], &[(key, 0)]);
            assert_eq!(timing(&at(json!({})), &z, 3), None, "{key} at 0");
        }
        // Another actor's rotation, another hour's window: no explanation.
        for key in [
            "oncall:lee",
            "deploy_window:04",
            "deploy_window:03:lee",
            "travel:danaX",
        ] {
            let b = bl(&["dana"], &[(key, 1)]);
            assert_eq!(timing(&at(json!({})), &b, 3), None, "{key}");
        }
        // A relocation to a named place explains hours there, not elsewhere.
        let b = bl(&["dana"], &[("location_change:dana:PT-Lisbon", 1)]);
        assert!(timing(&at(json!({"geo": "pt-lisbon"})), &b, 3).is_some());
        assert_eq!(timing(&at(json!({"geo": "RO-Bucharest"})), &b, 3), None);
        assert!(
            timing(&at(json!({})), &b, 3).is_some(),
            "no location to contradict it"
        );
    }

    #[test]
    fn timing_explanations_from_the_event() {
        let b = bl(&["dana"], &[]);
        for md in [
            json!({"on_call": true}),
            json!({"oncall": "yes"}),
            json!({"deploy_window": true}),
            json!({"change_window": "true"}),
            json!({"travel": true}),
            json!({"relocated_to": "PT-Lisbon"}),
        ] {
            assert!(timing(&at(md.clone()), &b, 3).is_some(), "{md}");
        }
        for md in [
            json!({"on_call": false}),
            json!({"travel": "false"}),
            json!({"deploy_window": 0}),
        ] {
            assert_eq!(timing(&at(md.clone()), &b, 3), None, "{md}");
        }
    }

    #[test]
    fn login_explanations_need_the_same_place() {
        let b = bl(
            &["dana"],
            &[("travel:dana:PT-Lisbon", 2), ("location_change:dana", 1)],
        );
        assert!(login(&at(json!({})), &b, "pt-lisbon").is_some());
        assert_eq!(login(&at(json!({})), &b, "RO-Bucharest"), None);
        assert!(
            login(
                &at(json!({"travel_to": "RO-Bucharest"})),
                &b,
                "RO-Bucharest"
            )
            .is_some()
        );
        assert_eq!(
            login(&at(json!({"travel": true})), &b, "RO-Bucharest"),
            None
        );
        assert_eq!(login(&at(json!({})), &b, ""), None);
    }
}

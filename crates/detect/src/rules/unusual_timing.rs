//! unusual-timing: activity at hours the actor is not usually active.
//!
//! Rule, per event with a timestamp, grouped by (actor, UTC hour) → one low finding
//! per group:
//! - with an hour profile for the actor ([`crate::context::profile`]: stated hours,
//!   counted history when there is enough of it, the actor's own earlier events when
//!   there are enough), an hour outside the profile is unusual;
//! - without one, the event is unusual only when its source says so itself (an
//!   identity provider's off-hours risk signal, [`source_flags_off_hours`]);
//! - either way it is not flagged when the deployment records why the hour is expected
//!   ([`crate::context::explain`]: an on-call rotation, a maintenance or change window,
//!   a schedule, a relocation, a trip).
//!
//! An event may carry its actor's usual hours itself (`usual_hours`: a list of hours,
//! or `"9-17"` / `"22-6"` ranges, comma-separated): they are part of its profile.

use crate::Detector;
use crate::context::explain::Context;
use crate::context::profile::Profiles;
use crate::util::group_finding;
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;
use std::collections::BTreeMap;

pub const FAMILY: &str = "unusual-timing";
pub const SEVERITY: &str = "low";
/// Event fields whose true value is the source's own off-hours flag.
pub const OFF_HOURS_FLAGS: [&str; 8] = [
    "off_hours",
    "after_hours",
    "outside_business_hours",
    "outside_working_hours",
    "unusual_time",
    "unusual_hour",
    "atypical_time",
    "unfamiliar_time",
];

static OFF_HOURS_TEXT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(?:off[\s_-]hours?|after[\s_-]hours|outside\s+(?:of\s+)?(?:the\s+user'?s\s+)?(?:normal|usual|regular|business|working|typical)\s+(?:working\s+)?hours|(?:unusual|atypical|unfamiliar|abnormal|anomalous)[\s_-](?:(?:sign[\s_-]?in|login|log[\s_-]?in|access|activity)[\s_-])?(?:time|hour)s?)\b",
    )
    .expect("off-hours pattern compiles")
});

/// Words in a metadata key that mark the source's own risk assessment (`risk_reasons`,
/// `anomalies`, `signals`): a note or justification a person typed is not one.
pub const SIGNAL_KEY_WORDS: [&str; 9] = [
    "risk",
    "anomal",
    "signal",
    "flag",
    "alert",
    "detection",
    "indicator",
    "reason",
    "insight",
];

/// The source's own statement that the event is at an unusual hour for its actor: a
/// true flag ([`OFF_HOURS_FLAGS`]) or, under a risk-assessment key
/// ([`SIGNAL_KEY_WORDS`]), a reason saying so ("off_hours_activity", "unfamiliar
/// sign-in time", "outside normal working hours"). Returns the text that says it.
pub fn source_flags_off_hours(e: &Event) -> Option<String> {
    let m = e.fields();
    for k in OFF_HOURS_FLAGS {
        if crate::util::truthy(m, k) {
            return Some(k.to_string());
        }
    }
    let mut texts = Vec::new();
    for (k, v) in m {
        let k = k.to_ascii_lowercase();
        if SIGNAL_KEY_WORDS.iter().any(|w| k.contains(w)) {
            crate::util::strings(v, &mut texts);
        }
    }
    texts
        .into_iter()
        .find(|t| OFF_HOURS_TEXT.is_match(&t.replace(['_', '-'], " ")))
        .map(|t| gauntlet_core::terminal::safe_text(t).into_owned())
}

pub struct UnusualTiming;

/// Why a group fired: the rule and the profile's bases (`stated`, `counted`, `history`;
/// empty when the source's own flag decided).
struct Judged {
    rule: &'static str,
    profile: Vec<&'static str>,
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &UnusualTiming;

impl Detector for UnusualTiming {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let ctx = Context::new(baseline, events);
        let profiles = Profiles::new(baseline, events);
        let mut groups: BTreeMap<(&str, u32), (Vec<&Event>, Judged)> = BTreeMap::new();
        for (i, e) in events.iter().enumerate() {
            if e.timestamp.is_zero() {
                continue;
            }
            let h = e.timestamp.hour();
            let rule = match profiles.for_event(i, e, &ctx) {
                Some(p) if p.hours.contains(&h) => continue,
                Some(p) => Judged {
                    rule: "outside-baseline-hours",
                    profile: p.basis.iter().map(|b| b.name()).collect(),
                },
                None => match source_flags_off_hours(e) {
                    Some(_) => Judged {
                        rule: "source-flags-off-hours",
                        profile: Vec::new(),
                    },
                    None => continue,
                },
            };
            if ctx.timing(e).is_some() {
                continue;
            }
            groups
                .entry((&e.actor, h))
                .or_insert_with(|| (Vec::new(), rule))
                .0
                .push(e);
        }
        groups
            .into_iter()
            .map(|((actor, h), (evs, rule))| {
                let reason = if rule.profile.is_empty() {
                    format!("{actor} active at {h:02}:00 UTC, an hour its source flags as unusual")
                } else {
                    format!("{actor} active at {h:02}:00 UTC, outside baseline hours")
                };
                group_finding(
                    FAMILY,
                    format!("finding-{FAMILY}-{actor}-{h:02}"),
                    actor,
                    &evs,
                    SEVERITY,
                    reason,
                    json!({"hour": h, "events": evs.len(), "rule": rule.rule, "profile": rule.profile}),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::profile::usual_hours;
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

    /// Fires (`true`) or stays silent on one event of `dana` (profile 08-17 UTC) at `ts`
    /// against a baseline whose context is `context`.
    fn fires(context: serde_json::Value, ts: &str, md: serde_json::Value) -> bool {
        let mut b = bl(&["dana", "lee"], &[]);
        b.actor_hours.insert("dana".into(), (8..=17).collect());
        let b = with_context(b, context);
        !UnusualTiming
            .detect(&[ev("e", "okta", "x", "dana", ts, md)], &b)
            .is_empty()
    }

    /// Each class of recorded context silences the hours it explains, and only those:
    /// a look-alike (another actor, another time, a cancelled record, night in the new
    /// time zone) still fires.
    #[test]
    fn recorded_context_per_class() {
        let none = json!({});
        // Relocation: 01:10 UTC is 10:10 in Tokyo, 18:20 UTC is 03:20 there.
        let moved = json!({"hr_records": [{"type": "relocation", "employee": "dana",
            "to": "JP-Tokyo", "effective": "2026-07-20"}]});
        assert!(fires(none.clone(), "2026-08-04T01:10:00Z", json!({})));
        assert!(!fires(moved.clone(), "2026-08-04T01:10:00Z", json!({})));
        assert!(fires(moved.clone(), "2026-08-05T18:20:00Z", json!({})));
        assert!(
            fires(moved, "2026-07-10T01:10:00Z", json!({})),
            "before the move"
        );
        // Maintenance window (weekly) and change window (calendar).
        let weekly = json!({"maintenance_windows": [{"day": "Sunday", "start": "01:00",
            "end": "04:00", "participants": ["dana"]}]});
        assert!(!fires(weekly.clone(), "2026-06-14T02:20:00Z", json!({})));
        assert!(fires(weekly, "2026-06-14T05:10:00Z", json!({})));
        let change = |status: &str| {
            json!({"change_calendar": [{"id": "CHG-1",
            "start": "2026-06-13T22:00:00Z", "end": "2026-06-14T02:00:00Z",
            "implementer": "dana", "status": status}]})
        };
        assert!(!fires(
            change("approved"),
            "2026-06-14T00:45:00Z",
            json!({})
        ));
        assert!(fires(
            change("cancelled"),
            "2026-06-14T00:45:00Z",
            json!({})
        ));
        assert!(fires(change("approved"), "2026-06-21T00:45:00Z", json!({})));
        // Schedule.
        let cron = json!({"scheduled_jobs": [{"actor": "dana", "cron": "30 2 * * *"}]});
        assert!(!fires(cron.clone(), "2026-06-16T02:31:00Z", json!({})));
        assert!(fires(cron, "2026-06-16T21:40:00Z", json!({})));
        assert!(!fires(
            none.clone(),
            "2026-06-18T03:00:07Z",
            json!({"trigger": "schedule", "schedule": "daily 03:00 UTC"})
        ));
        // On-call.
        let oncall = |who: &str| {
            json!({"on_call": {"shifts": [{"engineer": who,
            "start": "2026-06-08T09:00:00Z", "end": "2026-06-15T09:00:00Z"}]}})
        };
        assert!(!fires(oncall("dana"), "2026-06-11T03:12:00Z", json!({})));
        assert!(fires(oncall("lee"), "2026-06-11T03:12:00Z", json!({})));
        assert!(fires(oncall("dana"), "2026-06-18T03:12:00Z", json!({})));
        assert!(!fires(
            none.clone(),
            "2026-06-24T04:05:00Z",
            json!({"pagerduty_incident": "PD-1", "paged": true})
        ));
        // Travel: Singapore, 01:30 UTC is 09:30 there.
        let trip = |status: &str| {
            json!({"travel": [{"traveller": "dana",
            "destination": "SG-Singapore", "depart": "2026-06-01", "return": "2026-06-07",
            "status": status}]})
        };
        let sg = json!({"geo": "SG-Singapore"});
        assert!(!fires(trip("approved"), "2026-06-03T01:30:00Z", sg.clone()));
        assert!(fires(
            trip("approved"),
            "2026-06-03T01:30:00Z",
            json!({"geo": "RO-Bucharest"})
        ));
        assert!(
            fires(trip("approved"), "2026-06-12T01:30:00Z", sg.clone()),
            "trip over"
        );
        assert!(fires(trip("denied"), "2026-06-03T01:30:00Z", sg));
        // Free text.
        let note =
            json!({"notes": "dana is secondary on-call for payments through the end of June."});
        assert!(!fires(note.clone(), "2026-06-20T02:40:00Z", json!({})));
        assert!(fires(note, "2026-07-20T02:40:00Z", json!({})));
    }

    /// Counted history is a profile only when there is enough of it: two or seven
    /// sessions are not; hundreds are.
    #[test]
    fn too_little_history_is_no_profile() {
        let run = |freq: &[(&str, i64)]| {
            UnusualTiming
                .detect(
                    &[ev(
                        "e",
                        "okta",
                        "x",
                        "kim",
                        "2026-06-03T19:10:00Z",
                        json!({}),
                    )],
                    &bl(&["kim"], freq),
                )
                .len()
        };
        assert_eq!(run(&[("okta:x:kim:2:morning", 2)]), 0);
        assert_eq!(
            run(&[("okta:x:kim:3:morning", 3), ("okta:x:kim:4:afternoon", 4)]),
            0
        );
        assert_eq!(
            run(&[("time:09:kim", 1), ("time:10:kim", 1), ("time:11:kim", 1)]),
            0
        );
        assert_eq!(
            run(&[
                ("okta:x:kim:140:morning", 140),
                ("okta:x:kim:210:afternoon", 210)
            ]),
            1
        );
    }

    /// Without a profile in the baseline, honest signals still judge the hour: stated
    /// working hours in a time zone, the actor's own earlier events, the source's
    /// off-hours flag. Nothing at all: silent.
    #[test]
    fn signals_without_an_hour_profile() {
        let b = bl(&["kim"], &[]);
        let at = |ts: &str, md| ev("e", "gw", "x", "kim", ts, md);
        assert!(
            UnusualTiming
                .detect(&[at("2026-06-09T01:40:00Z", json!({}))], &b)
                .is_empty()
        );
        let stated = with_context(
            bl(&["kim"], &[]),
            json!({"known_entities.working_hours": {"kim": "08:00-17:00 Europe/Berlin"}}),
        );
        assert_eq!(
            UnusualTiming
                .detect(&[at("2026-06-09T01:40:00Z", json!({}))], &stated)
                .len(),
            1
        );
        assert!(
            UnusualTiming
                .detect(&[at("2026-06-09T07:40:00Z", json!({}))], &stated)
                .is_empty(),
            "09:40 in Berlin"
        );
        let flagged = at(
            "2026-06-09T03:20:00Z",
            json!({"risk_reasons": ["off_hours_activity"]}),
        );
        let out = UnusualTiming.detect(&[flagged], &b);
        assert_eq!(out[0].evidence["rule"], "source-flags-off-hours");
        let typed = at(
            "2026-06-09T03:20:00Z",
            json!({"justification": "after hours fix"}),
        );
        assert!(
            UnusualTiming.detect(&[typed], &b).is_empty(),
            "a person's note is not the source's flag"
        );
        let mut events: Vec<Event> = (0..30)
            .map(|i| {
                at(
                    &format!("2026-05-{:02}T{:02}:07:00Z", 10 + i / 2, 8 + (i * 3) % 9),
                    json!({}),
                )
            })
            .collect();
        events.push(at("2026-06-05T02:30:00Z", json!({})));
        let out = UnusualTiming.detect(&events, &b);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].event_ids.len(), 1);
        assert_eq!(out[0].evidence["profile"], json!(["history"]));
    }
}

//! Benign explanations: whether what a deployment records explains an off-profile hour
//! or a login from a new place.
//!
//! Why: `unusual-timing` fires on the night an on-call engineer is paged, on the first
//! week after someone moves, on a business trip, in the change window; `unusual-login`
//! on a login from a trip's destination. Each class of record explains activity only
//! where it fits:
//!
//! | class | about | explains the hour when |
//! |---|---|---|
//! | on-call | the actor | its dates/days cover the event (an undated rotation always) |
//! | window | the actor, or nobody named | its span or weekly window covers the event (an untimed window only when the event itself records it) |
//! | schedule | the actor, or nobody named | a run (cron, "at 04:15 every weekday", hourly) covers the event |
//! | relocation | the actor | it took effect by the event, the event is not elsewhere, and the hour is daytime (07–21) in the new zone when one is known |
//! | travel | the actor | its dates cover the event, the event is not elsewhere, and the hour is daytime there when the zone is known |
//!
//! A negated record (cancelled, denied, withdrawn, on hold, a false flag) explains
//! nothing. A login from a new place is explained only by a relocation or trip in
//! effect whose destination is that place. An unknown user is never explained (the
//! login rule does not ask).

use super::record::{Class, People, Reader, Record};
use super::when::{self, Point, Weekly};
use super::zone;
use crate::util::text;
use gauntlet_corpus::projection::{Baseline, Event, Timestamp};
use std::collections::BTreeSet;

/// Local hours (inclusive) that count as daytime where a relocated or travelling
/// person now is: a working day can start at 07:00 and run into the evening.
pub const LOCAL_DAY: std::ops::RangeInclusive<u32> = 7..=21;

/// One scenario's context: the baseline's records, and who can be named.
pub struct Context {
    people: People,
    year: i32,
    records: Vec<Record>,
}

impl Context {
    pub fn new(baseline: &Baseline, events: &[Event]) -> Context {
        let people = People::new(
            baseline
                .known_actors
                .iter()
                .map(String::as_str)
                .chain(events.iter().map(|e| e.actor.as_str())),
        );
        let year = events
            .iter()
            .find(|e| !e.timestamp.is_zero())
            .map_or(2026, |e| when::year_of(e.timestamp));
        let records = Reader {
            people: &people,
            year,
        }
        .baseline(baseline);
        Context {
            people,
            year,
            records,
        }
    }

    /// The records that may concern `e`: the baseline's about its actor, and the
    /// event's own.
    fn records_for(&self, e: &Event) -> Vec<Record> {
        let own = Reader {
            people: &self.people,
            year: self.year,
        }
        .event(e);
        self.records
            .iter()
            .filter(|r| r.about(&e.actor) && r.concerns_target(e))
            .cloned()
            .chain(own)
            .collect()
    }

    /// Why activity of `e`, outside its actor's usual hours, is expected — if a record
    /// explains it.
    pub fn timing(&self, e: &Event) -> Option<String> {
        let t = e.timestamp;
        let here = event_location(e);
        self.records_for(e)
            .into_iter()
            .filter(|r| !r.negated && r.class != Class::Hours)
            .find(|r| explains_hour(r, t, here.as_deref()))
            .map(|r| {
                format!(
                    "{} records a {} for {} ({})",
                    if r.event_level {
                        "the event"
                    } else {
                        "the baseline"
                    },
                    r.class.name(),
                    e.actor,
                    r.origin
                )
            })
    }

    /// Why a known user's login from `geo` is expected: a relocation or trip in effect
    /// whose destination is `geo`.
    pub fn login(&self, e: &Event, geo: &str) -> Option<String> {
        if geo.trim().is_empty() {
            return None;
        }
        let t = e.timestamp;
        self.records_for(e)
            .into_iter()
            .filter(|r| !r.negated && matches!(r.class, Class::Relocation | Class::Travel))
            .filter(|r| in_effect(r, t))
            .find(|r| r.places.iter().any(|p| zone::same_place(p, geo)))
            .map(|r| {
                format!(
                    "{} records a {} of {} to {geo} ({})",
                    if r.event_level {
                        "the event"
                    } else {
                        "the baseline"
                    },
                    r.class.name(),
                    e.actor,
                    r.origin
                )
            })
    }

    /// The working hours stated for `e`'s actor (in the baseline or on the event), as
    /// UTC hours on the event's date, with where they were read.
    pub fn stated_hours(&self, e: &Event) -> Option<(BTreeSet<u32>, String)> {
        let mut hours = BTreeSet::new();
        let mut origin = None;
        // The event's own metadata is read only when a key could state hours (this runs
        // for every event).
        let own = if e.fields().keys().any(|k| {
            let k = k.as_bytes();
            [b"hour".as_slice(), b"shift"]
                .iter()
                .any(|w| k.windows(w.len()).any(|x| x.eq_ignore_ascii_case(w)))
        }) {
            Reader {
                people: &self.people,
                year: self.year,
            }
            .event(e)
        } else {
            Vec::new()
        };
        let mine = self
            .records
            .iter()
            .filter(|r| r.class == Class::Hours && r.actors.contains(&e.actor))
            .cloned();
        for r in mine.chain(own) {
            if r.class != Class::Hours || r.weekly.is_empty() {
                continue;
            }
            if !r.actors.contains(&e.actor) {
                continue;
            }
            for w in &r.weekly {
                if w.start == 0 && w.end == when::DAY {
                    continue;
                }
                // On a day the stated hours exclude ("never weekends"), no hour is usual.
                let (day, _) = when::local_day_minute(e.timestamp, w.zone);
                if w.days & (1 << day) == 0 {
                    continue;
                }
                hours.extend(w.utc_hours_on(e.timestamp));
            }
            origin.get_or_insert(r.origin.clone());
        }
        origin.map(|o| (hours, o))
    }
}

/// The event's own location (`geo`, `country`, `location`, `city`).
pub fn event_location(e: &Event) -> Option<String> {
    let m = e.fields();
    text(m, "geo")
        .or_else(|| text(m, "country"))
        .or_else(|| text(m, "location"))
        .or_else(|| text(m, "city"))
}

/// The record's effective date for a relocation: its start, or a single day it names.
fn effective(r: &Record) -> Option<i64> {
    r.since
        .or_else(|| r.spans.iter().map(|s| s.0).min())
        .or_else(|| r.days.iter().map(Point::start).min())
}

/// True when the record is in effect at `t`: a relocation from its effective date on;
/// anything else within its dates (an undated record always).
fn in_effect(r: &Record, t: Timestamp) -> bool {
    if r.class == Class::Relocation {
        return effective(r).is_none_or(|s| s <= t.secs);
    }
    dates_cover(r, t)
}

/// Every date constraint the record has holds at `t` (spans, since, until, days).
fn dates_cover(r: &Record, t: Timestamp) -> bool {
    let s = t.secs;
    (r.spans.is_empty() || r.spans.iter().any(|(a, b)| *a <= s && s < *b))
        && r.since.is_none_or(|x| x <= s)
        && r.until.is_none_or(|x| s < x)
        && (r.days.is_empty() || r.days.iter().any(|d| d.start() <= s && s < d.end()))
}

/// The record's weekly windows (or every hour) cover `t`; true when it has none.
fn weekly_covers(r: &Record, t: Timestamp) -> bool {
    r.any_hour || r.weekly.is_empty() || r.weekly.iter().any(|w: &Weekly| w.covers(t))
}

fn explains_hour(r: &Record, t: Timestamp, here: Option<&str>) -> bool {
    match r.class {
        Class::OnCall => dates_cover(r, t) && weekly_covers(r, t),
        Class::Window => {
            if r.timed() {
                dates_cover(r, t) && weekly_covers(r, t)
            } else {
                r.event_level
            }
        }
        Class::Schedule => {
            (r.any_hour || !r.weekly.is_empty()) && dates_cover(r, t) && weekly_covers(r, t)
        }
        Class::Relocation | Class::Travel => {
            if !in_effect(r, t) {
                return false;
            }
            // Elsewhere: the event's place and the record's destination are both places
            // the zone database knows, and differ. A place it cannot place (a country,
            // a small town) contradicts nothing.
            if let Some(h) = here
                && zone::of_place(h).is_some()
                && r.places.iter().any(|p| zone::of_place(p).is_some())
                && !r.places.iter().any(|p| zone::same_place(p, h))
            {
                return false;
            }
            // Without a zone the hour cannot be checked: the profile predates the move
            // or trip, and the record is all there is.
            r.zone
                .is_none_or(|z| LOCAL_DAY.contains(&chrono::Timelike::hour(&z.local(t))))
        }
        Class::Hours => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    fn ctx(b: &Baseline, e: &Event) -> Context {
        Context::new(b, std::slice::from_ref(e))
    }

    fn with(context: serde_json::Value) -> Baseline {
        let mut b = bl(&["dana", "lee"], &[]);
        b.context = context
            .as_object()
            .expect("context is an object")
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        b
    }

    fn at(ts: &str, md: serde_json::Value) -> Event {
        ev("e", "okta", "login", "dana", ts, md)
    }

    /// The frequency keys earlier deployments used still explain hours.
    #[test]
    fn legacy_frequency_keys() {
        let e = at("2026-05-04T03:00:00Z", json!({}));
        assert_eq!(ctx(&bl(&["dana"], &[]), &e).timing(&e), None);
        for key in [
            "oncall:dana",
            "on_call:dana",
            "deploy_window:03",
            "deploy_window:3:dana",
            "location_change:dana",
            "travel:dana",
        ] {
            let b = bl(&["dana"], &[(key, 1)]);
            assert!(ctx(&b, &e).timing(&e).is_some(), "{key}");
            let z = bl(&["dana"], &[(key, 0)]);
            assert_eq!(ctx(&z, &e).timing(&e), None, "{key} at 0");
        }
        for key in [
            "oncall:lee",
            "deploy_window:04",
            "deploy_window:03:lee",
            "travel:danaX",
        ] {
            let b = bl(&["dana", "lee"], &[(key, 1)]);
            assert_eq!(ctx(&b, &e).timing(&e), None, "{key}");
        }
        let b = bl(&["dana"], &[("location_change:dana:PT-Lisbon", 1)]);
        let lisbon = at("2026-05-04T08:00:00Z", json!({"geo": "pt-lisbon"}));
        assert!(ctx(&b, &lisbon).timing(&lisbon).is_some());
        let elsewhere = at("2026-05-04T08:00:00Z", json!({"geo": "RO-Bucharest"}));
        assert_eq!(ctx(&b, &elsewhere).timing(&elsewhere), None);
    }

    /// Flags and fields on the event itself.
    #[test]
    fn the_events_own_record() {
        let b = bl(&["dana"], &[]);
        for md in [
            json!({"on_call": true}),
            json!({"oncall": "yes"}),
            json!({"deploy_window": true}),
            json!({"change_window": "true"}),
            json!({"travel": true}),
            json!({"relocated_to": "JP-Tokyo"}),
            json!({"pagerduty_incident": "PD-1", "paged": true}),
            json!({"change_ticket": "CHG-1"}),
        ] {
            let e = at("2026-05-04T03:00:00Z", md.clone());
            assert!(ctx(&b, &e).timing(&e).is_some(), "{md}");
        }
        for md in [
            json!({"on_call": false}),
            json!({"travel": "false"}),
            json!({"deploy_window": 0}),
            // 04:00 in Lisbon is not a working hour there.
            json!({"relocated_to": "PT-Lisbon"}),
            json!({"branch": "chore/key-rotation", "job_id": "J-1", "changed_by": "dana"}),
            json!({"change_ticket": "CHG-1", "change_window_start": "2026-05-04T01:00:00Z",
                   "change_window_end": "2026-05-04T02:00:00Z"}),
        ] {
            let e = at("2026-05-04T03:00:00Z", md.clone());
            assert_eq!(ctx(&b, &e).timing(&e), None, "{md}");
        }
    }

    /// On-call: the rotation covers the event's date and names the actor.
    #[test]
    fn on_call_rotations() {
        let b = with(json!({"on_call": {"rotation": "sre", "shifts": [
            {"engineer": "dana", "start": "2026-06-08T09:00:00Z", "end": "2026-06-15T09:00:00Z"}]}}));
        let inside = at("2026-06-11T03:12:00Z", json!({}));
        assert!(ctx(&b, &inside).timing(&inside).is_some());
        let after = at("2026-06-18T03:12:00Z", json!({}));
        assert_eq!(ctx(&b, &after).timing(&after), None, "the shift ended");
        let other = ev("e", "k8s", "x", "lee", "2026-06-11T03:12:00Z", json!({}));
        assert_eq!(ctx(&b, &other).timing(&other), None, "another engineer");
        let note = with(json!({"notes": "dana holds the pager at weekends (Sat–Sun)."}));
        let sat = at("2026-06-13T04:20:00Z", json!({}));
        let tue = at("2026-06-16T04:20:00Z", json!({}));
        assert!(ctx(&note, &sat).timing(&sat).is_some());
        assert_eq!(ctx(&note, &tue).timing(&tue), None);
        let off = with(json!({"notes": "dana is no longer on call."}));
        assert_eq!(ctx(&off, &sat).timing(&sat), None, "negated");
    }

    /// Maintenance and change windows: the window's time, the actor or nobody named,
    /// and a cancelled change explains nothing.
    #[test]
    fn maintenance_and_change_windows() {
        let weekly = with(
            json!({"maintenance_windows": [{"day": "Sunday", "start": "01:00",
            "end": "04:00", "timezone": "UTC", "participants": ["dana"]}]}),
        );
        let sun = at("2026-06-14T02:20:00Z", json!({}));
        let late = at("2026-06-14T05:10:00Z", json!({}));
        let mon = at("2026-06-15T02:20:00Z", json!({}));
        assert!(ctx(&weekly, &sun).timing(&sun).is_some());
        assert_eq!(ctx(&weekly, &late).timing(&late), None);
        assert_eq!(ctx(&weekly, &mon).timing(&mon), None);
        let lee = ev("e", "az", "x", "lee", "2026-06-14T02:20:00Z", json!({}));
        assert_eq!(ctx(&weekly, &lee).timing(&lee), None, "not a participant");
        let change = |status: &str| {
            with(json!({"change_calendar": [{"change_id": "CHG-1",
            "start": "2026-06-13T22:00:00Z", "end": "2026-06-14T02:00:00Z",
            "implementer": "dana", "status": status}]}))
        };
        let night = at("2026-06-14T00:45:00Z", json!({}));
        assert!(ctx(&change("approved"), &night).timing(&night).is_some());
        assert_eq!(ctx(&change("cancelled"), &night).timing(&night), None);
        let week_later = at("2026-06-21T00:45:00Z", json!({}));
        assert_eq!(
            ctx(&change("approved"), &week_later).timing(&week_later),
            None
        );
        let text =
            with(json!({"context": "Standing change window every Thursday 23:00-01:00 UTC."}));
        let fri = at("2026-06-12T00:30:00Z", json!({}));
        assert!(
            ctx(&text, &fri).timing(&fri).is_some(),
            "nobody named: everyone"
        );
        let untimed = with(json!({"maintenance": "dana does maintenance"}));
        assert_eq!(
            ctx(&untimed, &fri).timing(&fri),
            None,
            "untimed baseline window"
        );
    }

    /// Schedules: a run at the event's time; other hours and other days are not runs.
    #[test]
    fn schedules() {
        let cron = with(json!({"scheduled_jobs": [{"actor": "dana", "cron": "30 2 * * *"}]}));
        let run = at("2026-06-16T02:31:00Z", json!({}));
        let evening = at("2026-06-16T21:40:00Z", json!({}));
        assert!(ctx(&cron, &run).timing(&run).is_some());
        assert_eq!(ctx(&cron, &evening).timing(&evening), None);
        let text = with(json!({"notes": "dana kicks off the load at 04:15 UTC every weekday."}));
        let tue = at("2026-06-16T04:16:00Z", json!({}));
        let sat = at("2026-06-20T04:16:00Z", json!({}));
        assert!(ctx(&text, &tue).timing(&tue).is_some());
        assert_eq!(ctx(&text, &sat).timing(&sat), None);
        let hourly = with(json!({"known_entities.schedules": {"dana": "hourly"}}));
        assert!(ctx(&hourly, &evening).timing(&evening).is_some());
        let untimed = with(json!({"scheduled_jobs": [{"actor": "dana", "job": "sync"}]}));
        assert_eq!(
            ctx(&untimed, &evening).timing(&evening),
            None,
            "a schedule needs a time"
        );
    }

    /// Relocation: in effect, and daytime in the new zone when it is known.
    #[test]
    fn relocations() {
        let rec = |eff: &str| {
            with(
                json!({"hr_records": [{"type": "relocation", "employee": "dana",
            "from": "PT-Lisbon", "to": "JP-Tokyo", "effective": eff}]}),
            )
        };
        let morning_tokyo = at("2026-08-04T01:10:00Z", json!({}));
        let night_tokyo = at("2026-08-05T18:20:00Z", json!({}));
        assert!(
            ctx(&rec("2026-07-20"), &morning_tokyo)
                .timing(&morning_tokyo)
                .is_some()
        );
        assert_eq!(
            ctx(&rec("2026-07-20"), &night_tokyo).timing(&night_tokyo),
            None
        );
        assert_eq!(
            ctx(&rec("2026-09-01"), &morning_tokyo).timing(&morning_tokyo),
            None,
            "not yet"
        );
        let zone_only =
            with(json!({"relocations": {"dana": {"new_timezone": "America/Los_Angeles"}}}));
        let noon_la = at("2026-06-08T19:30:00Z", json!({}));
        assert!(ctx(&zone_only, &noon_la).timing(&noon_la).is_some());
        let text = with(
            json!({"notes": "Dana (dana) transferred from Dublin to Singapore at the start of June."}),
        );
        let sg = at("2026-06-10T02:15:00Z", json!({}));
        assert!(ctx(&text, &sg).timing(&sg).is_some());
        let withdrawn = with(json!({"notes": "The relocation of dana to Montreal was withdrawn."}));
        assert_eq!(ctx(&withdrawn, &sg).timing(&sg), None);
        let event = at(
            "2026-06-15T18:40:00Z",
            json!({"hr_location_change": "2026-06-01",
            "work_timezone": "America/Los_Angeles"}),
        );
        assert!(ctx(&bl(&["dana"], &[]), &event).timing(&event).is_some());
    }

    /// Travel: dates, place and local daytime; logins from the destination only.
    #[test]
    fn travel() {
        let trip = |status: &str| {
            with(json!({"travel": [{"traveller": "dana",
            "destination": "SG-Singapore", "depart": "2026-06-01", "return": "2026-06-07",
            "status": status}]}))
        };
        let there = at("2026-06-03T01:30:00Z", json!({"geo": "SG-Singapore"}));
        let elsewhere = at("2026-06-03T01:30:00Z", json!({"geo": "RO-Bucharest"}));
        let unplaced = at("2026-06-03T01:30:00Z", json!({"geo": "SG"}));
        let back = at("2026-06-12T01:30:00Z", json!({"geo": "SG-Singapore"}));
        let b = trip("approved");
        assert!(ctx(&b, &there).timing(&there).is_some());
        assert!(ctx(&b, &there).login(&there, "SG-Singapore").is_some());
        assert_eq!(ctx(&b, &elsewhere).timing(&elsewhere), None);
        assert_eq!(ctx(&b, &elsewhere).login(&elsewhere, "RO-Bucharest"), None);
        assert!(
            ctx(&b, &unplaced).timing(&unplaced).is_some(),
            "a bare country code contradicts nothing"
        );
        assert_eq!(ctx(&b, &back).timing(&back), None, "the trip ended");
        assert_eq!(ctx(&b, &back).login(&back, "SG-Singapore"), None);
        let denied = trip("denied");
        assert_eq!(ctx(&denied, &there).timing(&there), None);
        assert_eq!(ctx(&denied, &there).login(&there, "SG-Singapore"), None);
        let note = with(json!({"notes": "Dana (dana) is at the Sydney offsite 9-13 June."}));
        let sydney = at("2026-06-10T23:10:00Z", json!({"geo": "AU-Sydney"}));
        assert!(ctx(&note, &sydney).timing(&sydney).is_some());
        assert!(ctx(&note, &sydney).login(&sydney, "AU-Sydney").is_some());
        let event = at(
            "2026-06-09T22:30:00Z",
            json!({"travel_request": "TRV-1",
            "trip_destination": "US-New-York", "usual_location": "PT-Lisbon"}),
        );
        assert!(
            ctx(&bl(&["dana"], &[]), &event)
                .login(&event, "US-New-York")
                .is_some()
        );
        assert_eq!(
            ctx(&bl(&["dana"], &[]), &event).login(&event, "PT-Porto"),
            None
        );
    }

    #[test]
    fn stated_working_hours() {
        let b =
            with(json!({"known_entities.working_hours": {"dana": "08:00-17:00 Europe/Berlin"}}));
        let e = at("2026-06-09T01:40:00Z", json!({}));
        let (h, origin) = ctx(&b, &e).stated_hours(&e).unwrap();
        assert_eq!(h, (6..=14).collect());
        assert!(origin.contains("working_hours"), "{origin}");
        let ev_hours = at(
            "2026-06-09T08:30:00Z",
            json!({"user_timezone": "America/Chicago",
            "user_working_hours": "08:00-17:00"}),
        );
        let (h, _) = ctx(&bl(&["dana"], &[]), &ev_hours)
            .stated_hours(&ev_hours)
            .unwrap();
        assert_eq!(h, (13..=21).collect());
        let weekend =
            with(json!({"remarks": "dana works 08:30–17:00 Hong Kong time, never weekends."}));
        let sun = at("2026-06-14T03:00:00Z", json!({}));
        let (h, _) = ctx(&weekend, &sun).stated_hours(&sun).unwrap();
        assert!(h.is_empty(), "no usual hour on a weekend: {h:?}");
        assert_eq!(ctx(&bl(&["dana"], &[]), &sun).stated_hours(&sun), None);
        // A window's hours are the window's, not the person's working hours.
        let window = with(
            json!({"release_window": {"days": ["Tue", "Thu"], "hours_utc": "20-23",
            "team": ["dana"]}}),
        );
        assert_eq!(ctx(&window, &sun).stated_hours(&sun), None);
    }
}

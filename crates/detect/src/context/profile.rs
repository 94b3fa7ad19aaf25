//! Hour profiles: the UTC hours an actor is usually active, and whether there is
//! enough history to call an hour outside them unusual.
//!
//! Sources, per actor:
//! - **stated**: `known_entities.actor_hours` (the projection's `declared_hours`, and
//!   any hour of `actor_hours` no frequency key implies), an event's `usual_hours`
//!   hint, and working hours written in the context ("08:00-17:00 Europe/Berlin",
//!   "day shift 06:00-14:00 UTC"; see [`super::explain::Context::stated_hours`]).
//!   What a deployment states is its profile; there is nothing to count.
//! - **counted**: hour-of-day keys `time:<HH>:<actor>` and part-of-day keys
//!   `source:type:actor:N:partofday` (night 0–5, morning 6–11, afternoon 12–17,
//!   evening 18–23), and the actor's own earlier events in the scenario.
//!
//! **Enough history.** Counted hours become a profile only when
//! - there are at least [`MIN_HISTORY`] observations: if none of n observations fell
//!   outside the profile, the 95% upper bound on how often the actor is active outside
//!   it is about 3/n (the rule of three), 15% at n = 20 — below that, an hour outside a
//!   handful of sessions is not evidence of anything;
//! - the Good–Turing estimate of the chance that the next observation falls in a unit
//!   (hour, or part of day) never seen — units seen exactly once ÷ observations — is at
//!   most [`MAX_UNSEEN`]: a service whose history is still filling in new hours (every
//!   hour seen once) has no profile yet, however many observations it has;
//! - for events in the scenario, they span at least [`MIN_DAYS`] distinct days (a burst
//!   on one afternoon says nothing about the night).
//!
//! Thin counted hours still join a stated profile (they are observed activity).

use super::explain::Context;
use gauntlet_corpus::projection::{
    Baseline, Event, hour_of_day_key, part_of_day_hours, value_text,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The event field carrying the actor's usual hours.
pub const USUAL_HOURS_KEY: &str = "usual_hours";
/// Event fields that state the actor's usual hours the same way (an hour list or
/// `9-17` ranges); `HH:MM` ranges and zones are read as stated working hours by
/// [`crate::context`].
pub const HOUR_HINT_KEYS: [&str; 8] = [
    USUAL_HOURS_KEY,
    "typical_hours",
    "normal_hours",
    "expected_hours",
    "working_hours",
    "work_hours",
    "business_hours",
    "office_hours",
];

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

/// Observations below which counted hours are not a profile.
pub const MIN_HISTORY: u64 = 20;
/// Largest Good–Turing chance of an unseen hour (or part of day) for a profile.
pub const MAX_UNSEEN: f64 = 0.10;
/// Distinct days the scenario's own earlier events must span.
pub const MIN_DAYS: usize = 5;

/// Where a profile came from (for the finding's evidence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Basis {
    Stated,
    Counted,
    History,
}

impl Basis {
    pub fn name(self) -> &'static str {
        match self {
            Basis::Stated => "stated",
            Basis::Counted => "counted",
            Basis::History => "history",
        }
    }
}

/// Counted observations, per unit of time (an hour, or a part of day).
#[derive(Debug, Clone, Default)]
struct Tally {
    /// Unit → (hours it covers, observations).
    units: BTreeMap<String, (Vec<u32>, u64)>,
}

impl Tally {
    fn add(&mut self, unit: String, hours: impl IntoIterator<Item = u32>, n: u64) {
        let e = self
            .units
            .entry(unit)
            .or_insert_with(|| (hours.into_iter().collect(), 0));
        e.1 += n;
    }

    fn total(&self) -> u64 {
        self.units.values().map(|(_, n)| n).sum()
    }

    /// Enough history (see the module docs).
    fn enough(&self) -> bool {
        let n = self.total();
        let once = self.units.values().filter(|(_, c)| *c == 1).count() as f64;
        n >= MIN_HISTORY && once / n as f64 <= MAX_UNSEEN
    }

    fn hours(&self) -> BTreeSet<u32> {
        self.units
            .values()
            .filter(|(_, n)| *n > 0)
            .flat_map(|(h, _)| h.iter().copied())
            .collect()
    }
}

/// The hour profiles of one scenario.
pub struct Profiles {
    stated: BTreeMap<String, BTreeSet<u32>>,
    counted: BTreeMap<String, Tally>,
    /// Per event index: the hours of the actor's earlier events (bit h = hour h), when
    /// enough.
    history: Vec<Option<u32>>,
}

/// A profile for one event: the usual hours (possibly none on this day) and its bases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub hours: BTreeSet<u32>,
    pub basis: BTreeSet<Basis>,
}

impl Profiles {
    pub fn new(baseline: &Baseline, events: &[Event]) -> Profiles {
        let mut counted: BTreeMap<String, Tally> = BTreeMap::new();
        for (key, n) in &baseline.frequency_tables {
            if *n <= 0 {
                continue;
            }
            if let Some((h, actor)) = hour_of_day_key(key) {
                counted.entry(actor.to_string()).or_default().add(
                    format!("{h:02}"),
                    [h],
                    *n as u64,
                );
                continue;
            }
            let parts: Vec<&str> = key.split(':').collect();
            if parts.len() == 5
                && let Some(range) = part_of_day_hours(parts[4])
            {
                counted.entry(parts[2].to_string()).or_default().add(
                    parts[4].to_ascii_lowercase(),
                    range,
                    *n as u64,
                );
            }
        }
        // Stated: the explicit map, and hours of actor_hours that no counted key implies
        // (a baseline built in code has no declared map).
        let mut stated = baseline.declared_hours.clone();
        for (actor, hours) in &baseline.actor_hours {
            let implied = counted.get(actor).map(Tally::hours).unwrap_or_default();
            let own: BTreeSet<u32> = hours.difference(&implied).copied().collect();
            if !own.is_empty() {
                stated.entry(actor.clone()).or_default().extend(own);
            }
        }
        Profiles {
            stated,
            counted,
            history: history(events),
        }
    }

    /// The profile for event `i` (`e`): stated hours ∪ counted hours (when enough, or
    /// beside stated ones) ∪ the actor's earlier events (when enough). `None` when
    /// nothing supports one.
    pub fn for_event(&self, i: usize, e: &Event, ctx: &Context) -> Option<Profile> {
        let mut hours = BTreeSet::new();
        let mut basis = BTreeSet::new();
        if let Some(h) = self.stated.get(&e.actor).filter(|h| !h.is_empty()) {
            hours.extend(h.iter().copied());
            basis.insert(Basis::Stated);
        }
        for k in HOUR_HINT_KEYS {
            if let Some(v) = e.fields().get(k) {
                let h = usual_hours(v);
                if !h.is_empty() {
                    hours.extend(h);
                    basis.insert(Basis::Stated);
                }
            }
        }
        if let Some((h, _)) = ctx.stated_hours(e) {
            hours.extend(h);
            basis.insert(Basis::Stated);
        }
        if let Some(t) = self.counted.get(&e.actor) {
            if t.enough() {
                hours.extend(t.hours());
                basis.insert(Basis::Counted);
            } else if !basis.is_empty() {
                hours.extend(t.hours());
            }
        }
        if let Some(Some(mask)) = self.history.get(i) {
            hours.extend((0..24).filter(|h| mask & (1 << h) != 0));
            basis.insert(Basis::History);
        }
        (!basis.is_empty()).then_some(Profile { hours, basis })
    }
}

/// Observations per UTC hour (the scenario's own events).
#[derive(Debug, Default)]
struct Hours([u64; 24]);

impl Hours {
    /// Enough history, as [`Tally::enough`] with hours as the units.
    fn enough(&self) -> bool {
        let n: u64 = self.0.iter().sum();
        let once = self.0.iter().filter(|c| **c == 1).count() as f64;
        n >= MIN_HISTORY && once / n as f64 <= MAX_UNSEEN
    }

    /// Bit h set when hour h was seen.
    fn mask(&self) -> u32 {
        (0..24)
            .filter(|h| self.0[*h] > 0)
            .fold(0, |m, h| m | 1 << h)
    }
}

/// For each event, the UTC hours of its actor's strictly earlier events, when they are
/// enough history (≥ [`MIN_HISTORY`] events, ≥ [`MIN_DAYS`] days, unseen-hour estimate
/// ≤ [`MAX_UNSEEN`]).
fn history(events: &[Event]) -> Vec<Option<u32>> {
    let mut out = vec![None; events.len()];
    let mut by_actor: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        if !e.timestamp.is_zero() {
            by_actor.entry(e.actor.as_str()).or_default().push(i);
        }
    }
    for idx in by_actor.into_values() {
        if idx.len() <= MIN_HISTORY as usize {
            continue;
        }
        let mut order = idx;
        order.sort_by_key(|&i| (events[i].timestamp, i));
        let mut tally = Hours::default();
        let mut days = BTreeSet::new();
        let mut j = 0;
        while j < order.len() {
            // Events at the same instant share the same history.
            let t = events[order[j]].timestamp;
            let mut k = j;
            while k < order.len() && events[order[k]].timestamp == t {
                k += 1;
            }
            if days.len() >= MIN_DAYS && tally.enough() {
                let h = tally.mask();
                for &i in &order[j..k] {
                    out[i] = Some(h);
                }
            }
            for &i in &order[j..k] {
                let ts = events[i].timestamp;
                tally.0[ts.hour() as usize] += 1;
                days.insert(ts.secs.div_euclid(86_400));
            }
            j = k;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    fn profile(b: &Baseline, events: &[Event], i: usize) -> Option<Profile> {
        let ctx = Context::new(b, events);
        Profiles::new(b, events).for_event(i, &events[i], &ctx)
    }

    fn at(ts: &str) -> Event {
        ev("e", "okta", "x", "dana", ts, json!({}))
    }

    #[test]
    fn counted_hours_need_enough_history() {
        let e = [at("2026-06-03T19:10:00Z")];
        for (freq, want) in [
            (vec![("okta:x:dana:2:morning", 2)], None),
            (
                vec![
                    ("time:09:dana", 1),
                    ("time:10:dana", 1),
                    ("time:11:dana", 1),
                ],
                None,
            ),
            (
                vec![("okta:x:dana:3:morning", 3), ("okta:x:dana:4:afternoon", 4)],
                None,
            ),
            (
                vec![
                    ("okta:x:dana:9:morning", 9),
                    ("okta:x:dana:11:afternoon", 11),
                ],
                Some(6..=17),
            ),
        ] {
            let b = bl(&["dana"], &freq);
            let got = profile(&b, &e, 0).map(|p| p.hours);
            assert_eq!(got, want.map(|r| r.collect()), "{freq:?}");
        }
        // Twenty sessions, each at a different hour: still filling in new hours.
        let keys: Vec<String> = (0..20).map(|h| format!("time:{h:02}:dana")).collect();
        let spread: Vec<(&str, i64)> = keys.iter().map(|k| (k.as_str(), 1)).collect();
        assert_eq!(profile(&bl(&["dana"], &spread), &e, 0), None);
    }

    #[test]
    fn stated_hours_are_a_profile_and_thin_counts_join_them() {
        let mut b = bl(&["dana"], &[("okta:x:dana:1:evening", 1)]);
        b.declared_hours.insert("dana".into(), [9, 10].into());
        let p = profile(&b, &[at("2026-06-03T03:00:00Z")], 0).unwrap();
        assert_eq!(p.basis, [Basis::Stated].into());
        assert!(p.hours.contains(&9) && p.hours.contains(&20));
        // actor_hours set directly (no counted key implies them) are stated too.
        let mut direct = bl(&["dana"], &[]);
        direct.actor_hours.insert("dana".into(), (8..=17).collect());
        assert_eq!(
            profile(&direct, &[at("2026-06-03T03:00:00Z")], 0)
                .unwrap()
                .hours,
            (8..=17).collect()
        );
        let hint = ev(
            "e",
            "okta",
            "x",
            "dana",
            "2026-06-03T03:00:00Z",
            json!({"usual_hours": "9-11"}),
        );
        assert_eq!(
            profile(&bl(&["dana"], &[]), &[hint], 0).unwrap().hours,
            [9, 10, 11].into()
        );
    }

    #[test]
    fn the_actors_own_earlier_events() {
        let mut events: Vec<Event> = (0..30)
            .map(|i| {
                let day = 1 + i / 2;
                ev(
                    &format!("h{i}"),
                    "okta",
                    "x",
                    "dana",
                    &format!("2026-06-{day:02}T{:02}:10:00Z", 8 + (i * 3) % 9),
                    json!({}),
                )
            })
            .collect();
        events.push(ev(
            "last",
            "okta",
            "x",
            "dana",
            "2026-06-20T02:30:00Z",
            json!({}),
        ));
        let b = bl(&["dana"], &[]);
        let p = profile(&b, &events, 30).unwrap();
        assert_eq!(p.basis, [Basis::History].into());
        assert!(!p.hours.contains(&2));
        assert_eq!(
            profile(&b, &events, 5),
            None,
            "five earlier events are not enough"
        );
        // Round the clock: every hour seen about once, no profile.
        let spread: Vec<Event> = (0..31)
            .map(|i| {
                ev(
                    &format!("s{i}"),
                    "okta",
                    "x",
                    "svc",
                    &format!("2026-06-{:02}T{:02}:00:00Z", 1 + i / 2, (i * 5) % 24),
                    json!({}),
                )
            })
            .collect();
        assert_eq!(profile(&bl(&["svc"], &[]), &spread, 30), None);
        // All on one day: not enough days.
        let burst: Vec<Event> = (0..31)
            .map(|i| {
                ev(
                    &format!("b{i}"),
                    "okta",
                    "x",
                    "dana",
                    &format!("2026-06-01T{:02}:{:02}:00Z", 9 + i / 10, i % 60),
                    json!({}),
                )
            })
            .collect();
        assert_eq!(profile(&b, &burst, 30), None);
    }
}

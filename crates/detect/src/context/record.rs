//! Context records: what a deployment records about when and where its people and
//! services are expected to be active, read from the baseline's context, the event's
//! own metadata, and the frequency-table keys of earlier deployments.
//!
//! Why: the timing and login rules must not flag what the deployment itself expects.
//! Corpora record it in whatever shape their authors chose — a list of HR records with
//! a `type`, a map keyed by person, a change calendar, a rotation export, a sentence in
//! `notes` — so this reader does not know key names in advance. It walks every value
//! and reads each object (and each clause of free text) as one record:
//!
//! - its **class** (relocation, travel, maintenance/change window, schedule, on-call,
//!   stated working hours) from the words of its type field, its path, its own keys and
//!   its text, every class that scores; event metadata is classed by its keys only, with
//!   a stricter vocabulary (a value like a branch name never classes an event);
//! - **who** it is about: known actors named in actor fields (`employee`, `assigned_to`,
//!   `participants`, …), as map keys, or in the text (the id, or a first name that is
//!   unique among the known actors); event metadata is about the event's actor;
//! - **when**: spans, open starts and ends, single days, weekly windows, cron, "every
//!   hour" ([`super::when`]);
//! - **where**: destinations (`to`, `destination`, a city after "to"/"in"/"at") and a
//!   time zone (a zone field, "Pacific time", or the destination's zone);
//! - whether it is **negated**: a status of cancelled / denied / rejected / withdrawn /
//!   on hold, a false flag, or a negative phrase next to the class word.
//!
//! What the records mean for a rule is decided in [`super::explain`].

use super::when::{self, Point, Weekly};
use super::zone::{self, UTC, Zone};
use gauntlet_corpus::projection::{Baseline, Event};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// What a record says is expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    Relocation,
    Travel,
    Window,
    Schedule,
    OnCall,
    /// Stated working hours (a profile source, not an explanation).
    Hours,
}

impl Class {
    pub const ALL: [Class; 6] = [
        Class::Relocation,
        Class::Travel,
        Class::Window,
        Class::Schedule,
        Class::OnCall,
        Class::Hours,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::Relocation => "relocation",
            Class::Travel => "travel",
            Class::Window => "maintenance or change window",
            Class::Schedule => "schedule",
            Class::OnCall => "on-call rotation",
            Class::Hours => "working hours",
        }
    }

    /// Stems (folded, matched at word starts) that class a baseline record or a free
    /// text.
    fn stems(self) -> &'static [&'static str] {
        match self {
            Class::Relocation => &[
                "relocat",
                "moved",
                "move",
                "moving",
                "transfer",
                "location change",
                "new office",
                "previous office",
                "new timezone",
                "new time zone",
                "home timezone",
                "home time zone",
                "work timezone",
                "timezone change",
                "new location",
                "emigrat",
            ],
            Class::Travel => &[
                "travel",
                "trip",
                "offsite",
                "off site",
                "conference",
                "visit",
                "itinerary",
                "destination",
                "abroad",
                "working from",
                "work from",
                "onsite",
                "on site",
                "summit",
            ],
            Class::Window => &[
                "maintenance",
                "change",
                "chg",
                "patch",
                "release",
                "deploy",
                "downtime",
                "upgrade",
                "cutover",
                "migration",
                "window",
            ],
            Class::Schedule => &[
                "schedul",
                "cron",
                "nightly",
                "hourly",
                "daily",
                "weekly",
                "job",
                "batch",
                "automation",
                "automated",
                "timer",
                "recurring",
                "runs",
                "kicks off",
                "trigger",
            ],
            Class::OnCall => &[
                "on call",
                "oncall",
                "pager",
                "paged",
                "pagerduty",
                "opsgenie",
                "rotation",
                "incident",
                "responder",
                "standby",
                "escalation",
            ],
            // Not "hours" alone: a window's `hours_utc` is the window's, not a profile.
            Class::Hours => &[
                "working hours",
                "work hours",
                "business hours",
                "office hours",
                "core hours",
                "usual hours",
                "shift pattern",
                "day shift",
                "night shift",
                "works",
                "working day",
            ],
        }
    }

    /// Stems that class an event's own metadata by its keys: narrower, because events
    /// carry many keys (`changed_by`, `job_id`) that are not context.
    fn event_stems(self) -> &'static [&'static str] {
        match self {
            Class::Relocation => &[
                "relocat",
                "location change",
                "office move",
                "moved to",
                "new timezone",
                "work timezone",
                "home timezone",
            ],
            Class::Travel => &["travel", "trip", "itinerary"],
            Class::Window => &[
                "maintenance",
                "change window",
                "change ticket",
                "change request",
                "change id",
                "chg",
                "deploy window",
                "deployment window",
                "release window",
                "patch window",
            ],
            Class::Schedule => &["schedul", "cron"],
            Class::OnCall => &[
                "on call",
                "oncall",
                "pager",
                "paged",
                "pagerduty",
                "opsgenie",
                "responder",
            ],
            Class::Hours => &[
                "working hours",
                "work hours",
                "business hours",
                "usual hours",
                "typical hours",
                "normal hours",
                "expected hours",
                "office hours",
                "core hours",
                "shift pattern",
            ],
        }
    }
}

/// Words that negate a record's status or text.
const NEGATIVE: [&str; 22] = [
    "cancel",
    "denied",
    "deny",
    "rejected",
    "reject",
    "withdrawn",
    "withdraw",
    "withdrew",
    "revoked",
    "rescinded",
    "declined",
    "postponed",
    "on hold",
    "called off",
    "aborted",
    "abandoned",
    "not approved",
    "unapproved",
    "disapproved",
    "fell through",
    "no longer",
    "expired",
];

/// Words that negate a class word right after them ("not on call", "no change window").
const NOT: [&str; 8] = [
    "not", "no", "never", "isn t", "wasn t", "won t", "without", "nor",
];

/// One thing the deployment records.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub class: Class,
    /// Where it was read: `baseline.on_call.shifts[0]`, `event.metadata`, `baseline.notes`.
    pub origin: String,
    /// Known actors it is about (for event metadata: the event's actor).
    pub actors: BTreeSet<String>,
    /// It names someone (an actor field, known or not): it is not about everyone.
    pub scoped: bool,
    /// Read from the event's own metadata.
    pub event_level: bool,
    pub negated: bool,
    pub spans: Vec<(i64, i64)>,
    pub since: Option<i64>,
    pub until: Option<i64>,
    /// Single days named (an effective date, the day of a change).
    pub days: Vec<Point>,
    pub weekly: Vec<Weekly>,
    pub any_hour: bool,
    /// Destinations (not origins).
    pub places: Vec<String>,
    /// Systems it is about (`systems`, `hosts`, `cluster`, …), when it names no actor.
    pub systems: Vec<String>,
    /// The zone the record states, or its destination's.
    pub zone: Option<Zone>,
}

impl Record {
    /// True when it names any time at all.
    pub fn timed(&self) -> bool {
        !self.spans.is_empty()
            || self.since.is_some()
            || self.until.is_some()
            || !self.days.is_empty()
            || !self.weekly.is_empty()
            || self.any_hour
    }

    /// True when it is about `actor`: names them, or — for a window or a schedule in
    /// the baseline, which can be everyone's — names nobody at all. A rotation, a move
    /// or a trip is always someone's.
    /// True when the record names no system, names the actor, or names a system the
    /// event's source or target mentions: a window for `orders-pg` covers work on it,
    /// not everyone's activity at that hour.
    pub fn concerns_target(&self, e: &Event) -> bool {
        if self.systems.is_empty() || !self.actors.is_empty() {
            return true;
        }
        let hay = format!("{} {}", e.source, e.target()).to_lowercase();
        self.systems.iter().any(|s| hay.contains(&s.to_lowercase()))
    }

    pub fn about(&self, actor: &str) -> bool {
        self.actors.contains(actor)
            || (matches!(self.class, Class::Window | Class::Schedule)
                && !self.event_level
                && !self.scoped
                && self.actors.is_empty())
    }
}

/// Who can be named: the known actors and the events' actors.
#[derive(Debug, Clone, Default)]
pub struct People {
    ids: BTreeSet<String>,
    /// Lowercased id → id.
    lower: Vec<(String, String)>,
    /// First names (the id's part before `.`, `_`, `-`, `@`), when unique and ≥ 3
    /// letters → id.
    first: Vec<(String, String)>,
}

impl People {
    pub fn new<'a>(ids: impl IntoIterator<Item = &'a str>) -> People {
        let ids: BTreeSet<&str> = ids.into_iter().filter(|s| !s.trim().is_empty()).collect();
        let ids: BTreeSet<String> = ids.into_iter().map(str::to_string).collect();
        let lower = ids.iter().map(|i| (i.to_lowercase(), i.clone())).collect();
        let mut firsts: Vec<(String, String)> = ids
            .iter()
            .filter_map(|i| {
                let f = i.split(['.', '_', '-', '@']).next()?.to_lowercase();
                (f.len() >= 3 && f.chars().all(char::is_alphabetic) && f != i.to_lowercase())
                    .then(|| (f, i.clone()))
            })
            .collect();
        let mut first = Vec::new();
        firsts.sort();
        for (f, i) in &firsts {
            if firsts.iter().filter(|(g, _)| g == f).count() == 1 {
                first.push((f.clone(), i.clone()));
            }
        }
        People { ids, lower, first }
    }

    /// The id `value` names exactly (any case).
    pub fn exact(&self, value: &str) -> Option<&str> {
        let v = value.trim();
        if let Some(i) = self.ids.get(v) {
            return Some(i);
        }
        let l = v.to_lowercase();
        self.lower
            .iter()
            .find(|(x, _)| *x == l)
            .map(|(_, i)| i.as_str())
    }

    /// Every id mentioned in free text: the id itself as a whole token, or a unique
    /// first name as a capitalised word.
    pub fn mentioned(&self, text: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let lower = text.to_lowercase();
        for (l, id) in &self.lower {
            let hit = lower.match_indices(l.as_str()).any(|(i, _)| {
                let b = lower[..i].chars().next_back();
                let a = lower[i + l.len()..].chars().next();
                let boundary = |c: Option<char>| {
                    !c.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '@'))
                };
                // A trailing full stop ends a sentence, not the id.
                let after_ok = boundary(a)
                    || (a == Some('.')
                        && !lower[i + l.len() + 1..]
                            .chars()
                            .next()
                            .is_some_and(char::is_alphanumeric));
                boundary(b.filter(|c| *c != '.')) && after_ok
            });
            if hit {
                out.insert(id.clone());
            }
        }
        for w in text.split(|c: char| !c.is_alphanumeric()) {
            if w.chars().next().is_some_and(char::is_uppercase) {
                let wl = w.to_lowercase();
                if let Some((_, id)) = self.first.iter().find(|(f, _)| *f == wl) {
                    out.insert(id.clone());
                }
            }
        }
        out
    }
}

/// Folded key or text (see [`zone::fold`]).
fn fold(s: &str) -> String {
    zone::fold(s)
}

/// Score of `class` in folded `text`: each stem found at a word start counts its word
/// count.
fn score(stems: &[&str], text: &str) -> usize {
    let mut n = 0;
    for stem in stems {
        let hit = text
            .match_indices(stem)
            .any(|(i, _)| i == 0 || text.as_bytes()[i - 1] == b' ');
        if hit {
            n += stem.split(' ').count();
        }
    }
    n
}

/// True when folded `text` negates: a negative word, or a class stem right after a
/// negating word.
fn negates(text: &str, class: Class) -> bool {
    if NEGATIVE.iter().any(|w| {
        text.match_indices(w)
            .any(|(i, _)| i == 0 || text.as_bytes()[i - 1] == b' ')
    }) {
        return true;
    }
    let words: Vec<&str> = text.split(' ').collect();
    for (i, w) in words.iter().enumerate() {
        let two = if i + 1 < words.len() {
            format!("{w} {}", words[i + 1])
        } else {
            String::new()
        };
        if NOT.contains(w) || NOT.contains(&two.as_str()) {
            let skip = if NOT.contains(&two.as_str()) { 2 } else { 1 };
            let next =
                words[(i + skip).min(words.len())..(i + skip + 3).min(words.len())].join(" ");
            if class
                .stems()
                .iter()
                .any(|s| next.starts_with(s) || next.contains(&format!(" {s}")))
            {
                return true;
            }
        }
    }
    false
}

const ACTOR_WORDS: [&str; 44] = [
    "actor",
    "actors",
    "user",
    "users",
    "username",
    "employee",
    "employees",
    "engineer",
    "engineers",
    "owner",
    "owners",
    "account",
    "accounts",
    "who",
    "assignee",
    "assignees",
    "assigned",
    "implementer",
    "implementers",
    "participants",
    "participant",
    "members",
    "member",
    "team",
    "traveller",
    "travellers",
    "traveler",
    "travelers",
    "person",
    "people",
    "principal",
    "responder",
    "responders",
    "primary",
    "secondary",
    "staff",
    "login",
    "email",
    "handle",
    "attendee",
    "attendees",
    "operator",
    "operators",
    "requester",
];
const TYPE_WORDS: [&str; 4] = ["type", "kind", "category", "class"];
const STATUS_WORDS: [&str; 5] = ["status", "state", "approval", "decision", "approved"];
const ZONE_WORDS: [&str; 4] = ["timezone", "tz", "zone", "tzid"];
const DEST_WORDS: [&str; 12] = [
    "to",
    "destination",
    "where",
    "location",
    "city",
    "office",
    "country",
    "site",
    "place",
    "geo",
    "region",
    "relocated",
];
const ORIGIN_WORDS: [&str; 6] = ["from", "previous", "old", "origin", "former", "usual"];
/// Keys with an actor word that are about something else (`user_timezone`,
/// `user_working_hours`, `responder_role`).
const NOT_ACTOR_WORDS: [&str; 17] = [
    "timezone", "tz", "zone", "hours", "hour", "time", "times", "working", "location", "geo", "ip",
    "agent", "id", "role", "type", "status", "device",
];
const START_WORDS: [&str; 13] = [
    "start",
    "starts",
    "begin",
    "begins",
    "from",
    "since",
    "depart",
    "departs",
    "departure",
    "effective",
    "moved",
    "opens",
    "valid",
];
const END_WORDS: [&str; 14] = [
    "end", "ends", "until", "till", "to", "through", "thru", "return", "returns", "back",
    "expires", "closes", "finish", "ending",
];
/// Keys naming the systems a window or job is about.
const SYSTEM_WORDS: [&str; 24] = [
    "system",
    "systems",
    "service",
    "services",
    "host",
    "hosts",
    "cluster",
    "clusters",
    "resource",
    "resources",
    "target",
    "targets",
    "scope",
    "app",
    "apps",
    "application",
    "applications",
    "database",
    "databases",
    "server",
    "servers",
    "component",
    "components",
    "asset",
];
const DAY_WORDS: [&str; 5] = ["day", "days", "weekday", "weekdays", "dow"];
const EVENT_SELF_PLACE: [&str; 6] = ["geo", "location", "country", "city", "region", "ip"];

fn has(words: &[&str], list: &[&str]) -> bool {
    words.iter().any(|w| list.contains(w))
}

/// What the walker has gathered for one record.
#[derive(Debug, Default)]
struct Clues {
    origin: String,
    /// Folded path keys (outermost first).
    path: Vec<String>,
    types: Vec<String>,
    keys: Vec<String>,
    texts: Vec<String>,
    actors: BTreeSet<String>,
    scoped: bool,
    negated: bool,
    event_level: bool,
    starts: Vec<Point>,
    ends: Vec<Point>,
    days: Vec<Point>,
    spans: Vec<(i64, i64)>,
    since: Option<i64>,
    until: Option<i64>,
    start_times: Vec<u32>,
    end_times: Vec<u32>,
    ranges: Vec<(u32, u32)>,
    times: Vec<u32>,
    day_mask: Option<u8>,
    weekly: Vec<Weekly>,
    any_hour: bool,
    places: Vec<String>,
    systems: Vec<String>,
    zone: Option<Zone>,
    /// Flags: a key set true (`on_call`), or `!key` when set false or 0.
    affirmed: Vec<String>,
}

/// Reads context records. `year` dates those written without one.
pub struct Reader<'p> {
    pub people: &'p People,
    pub year: i32,
}

impl Reader<'_> {
    /// Every record in the baseline's context (`baseline.<key>`,
    /// `known_entities.<key>`) and its legacy frequency keys.
    pub fn baseline(&self, b: &Baseline) -> Vec<Record> {
        let mut out = Vec::new();
        for (key, v) in &b.context {
            let path: Vec<String> = key.split('.').map(fold).collect();
            self.walk(v, &format!("baseline.{key}"), &path, None, false, &mut out);
        }
        out.extend(legacy(b, self.people));
        out
    }

    /// The records in one event's metadata, about the event's actor.
    pub fn event(&self, e: &Event) -> Vec<Record> {
        let mut out = Vec::new();
        let m = e.fields();
        // Event metadata is classed by its keys: without a key that could class it there
        // is no record, and its values need not be read (this runs for every flagged
        // event).
        if !keys_could_class(m) {
            return out;
        }
        self.object(
            m,
            "event.metadata",
            &[],
            Some(&e.actor),
            true,
            true,
            &mut out,
        );
        out
    }

    fn walk(
        &self,
        v: &Value,
        origin: &str,
        path: &[String],
        actor: Option<&str>,
        event_level: bool,
        out: &mut Vec<Record>,
    ) {
        match v {
            Value::Object(m) => self.object(m, origin, path, actor, event_level, false, out),
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    self.walk(x, &format!("{origin}[{i}]"), path, actor, event_level, out);
                }
            }
            Value::String(s) => self.text(s, origin, path, actor, event_level, out),
            Value::Bool(_) | Value::Number(_) => {
                // A flag or number under a class key (`on_call: true`): a record of
                // its own, with the key as its only evidence.
                let mut c = Clues {
                    origin: origin.to_string(),
                    path: path.to_vec(),
                    event_level,
                    ..Clues::default()
                };
                if let Some(a) = actor {
                    c.actors.insert(a.to_string());
                }
                let last = path.last().cloned().unwrap_or_default();
                self.scalar(&mut c, &last, v, false);
                out.extend(self.finish(c));
            }
            Value::Null => {}
        }
    }

    /// One object: its scalars are one record; its nested objects and lists are
    /// records of their own (inside its path); keys that are known actors start a
    /// record about that actor.
    #[expect(
        clippy::too_many_arguments,
        reason = "the walker's position, passed down"
    )]
    fn object(
        &self,
        m: &Map<String, Value>,
        origin: &str,
        path: &[String],
        actor: Option<&str>,
        event_level: bool,
        event_root: bool,
        out: &mut Vec<Record>,
    ) {
        let mut c = Clues {
            origin: origin.to_string(),
            path: path.to_vec(),
            event_level,
            ..Clues::default()
        };
        if let Some(a) = actor {
            c.actors.insert(a.to_string());
        }
        // The record's zone first: its times are read in it, whatever the key order.
        c.zone = m.iter().find_map(|(k, v)| {
            let fk = fold(k);
            let words: Vec<&str> = fk.split(' ').collect();
            match v {
                Value::String(s) if has(&words, &ZONE_WORDS) => zone::parse(s),
                _ => None,
            }
        });
        for (k, v) in m {
            if let Some(id) = self.people.exact(k).filter(|_| !event_root) {
                self.walk(
                    v,
                    &format!("{origin}.{k}"),
                    path,
                    Some(id),
                    event_level,
                    out,
                );
                continue;
            }
            let fk = fold(k);
            match v {
                Value::Object(_) => {
                    let mut p = path.to_vec();
                    p.push(fk);
                    self.walk(v, &format!("{origin}.{k}"), &p, actor, event_level, out);
                }
                Value::Array(a) if a.iter().any(|x| x.is_object() || x.is_array()) => {
                    let mut p = path.to_vec();
                    p.push(fk);
                    self.walk(v, &format!("{origin}.{k}"), &p, actor, event_level, out);
                }
                Value::Array(a) => {
                    c.keys.push(fk.clone());
                    for x in a {
                        self.scalar(&mut c, &fk, x, true);
                    }
                }
                _ => {
                    if event_root && EVENT_SELF_PLACE.contains(&fk.as_str()) {
                        continue;
                    }
                    c.keys.push(fk.clone());
                    self.scalar(&mut c, &fk, v, false);
                }
            }
        }
        out.extend(self.finish(c));
    }

    /// Free text: one record per clause (split at `.`, `;`, line ends). A clause that
    /// names nobody is about whoever the whole text (or the map key above it) names.
    fn text(
        &self,
        s: &str,
        origin: &str,
        path: &[String],
        actor: Option<&str>,
        event_level: bool,
        out: &mut Vec<Record>,
    ) {
        let whole = self.people.mentioned(s);
        for clause in clauses(s) {
            let mut c = Clues {
                origin: origin.to_string(),
                path: path.to_vec(),
                event_level,
                ..Clues::default()
            };
            let named = self.people.mentioned(clause);
            if let Some(a) = actor {
                c.actors.insert(a.to_string());
            }
            if named.is_empty() {
                c.actors.extend(whole.iter().cloned());
            } else {
                c.actors.extend(named);
            }
            c.texts.push(clause.to_string());
            out.extend(self.finish(c));
        }
    }

    /// One scalar field `key` (folded) = `v`.
    fn scalar(&self, c: &mut Clues, key: &str, v: &Value, in_list: bool) {
        let words: Vec<&str> = key.split(' ').collect();
        let text = match v {
            Value::String(s) => s.trim().to_string(),
            Value::Bool(b) => {
                let f = fold(key);
                if (has(&words, &STATUS_WORDS) && !*b) || (f.contains("cancel") && *b) {
                    c.negated = true;
                } else if !*b {
                    // `on_call: false`, `travel: false`: the flag denies its class.
                    c.affirmed.push(format!("!{f}"));
                } else {
                    c.affirmed.push(f);
                }
                return;
            }
            Value::Number(n) => {
                if n.as_f64() == Some(0.0) && !has(&words, &["count", "n", "id"]) {
                    c.affirmed.push(format!("!{}", fold(key)));
                }
                n.to_string()
            }
            _ => return,
        };
        if text.is_empty() {
            return;
        }
        let lt = text.to_ascii_lowercase();
        if matches!(lt.as_str(), "false" | "no") {
            c.affirmed.push(format!("!{}", fold(key)));
            return;
        }
        if matches!(lt.as_str(), "true" | "yes") {
            c.affirmed.push(fold(key));
            return;
        }
        if has(&words, &TYPE_WORDS) {
            c.types.push(fold(&text));
            return;
        }
        if has(&words, &STATUS_WORDS) {
            let f = fold(&text);
            if NEGATIVE.iter().any(|w| f.contains(w)) {
                c.negated = true;
            }
            return;
        }
        if has(&words, &SYSTEM_WORDS) && !text.contains(' ') {
            c.systems.push(text);
            return;
        }
        if has(&words, &ZONE_WORDS)
            && !in_list
            && let Some(z) = zone::parse(&text)
        {
            c.zone = Some(z);
            return;
        }
        if has(&words, &ACTOR_WORDS) {
            // `user_id: dana` names dana; `user_timezone: Asia/Tokyo` names nobody.
            if let Some(id) = self.people.exact(&text) {
                c.scoped = true;
                c.actors.insert(id.to_string());
                return;
            }
            if !has(&words, &NOT_ACTOR_WORDS) {
                c.scoped = true;
                c.actors.extend(self.people.mentioned(&text));
                return;
            }
        }
        if let Some(w) = when::cron(&text, UTC) {
            c.weekly.extend(w);
            return;
        }
        let zone = c.zone.unwrap_or(UTC);
        if let Some(span) = when::interval(&text, zone, self.year) {
            c.spans.push(span);
            return;
        }
        // `from`, `previous_office`, `usual_location`: where someone was, not where they are.
        let origin_key = has(&words, &ORIGIN_WORDS) && !words.contains(&"start");
        if let Some(p) = when::point(&text, zone, self.year) {
            if has(&words, &START_WORDS) {
                c.starts.push(p);
            } else if has(&words, &END_WORDS) {
                c.ends.push(p);
            } else {
                c.days.push(p);
            }
            return;
        }
        if let Some(t) = when::time_of_day(&text) {
            if has(&words, &START_WORDS) {
                c.start_times.push(t);
            } else if has(&words, &END_WORDS) {
                c.end_times.push(t);
            } else {
                c.times.push(t);
            }
            return;
        }
        let hour_key = words.iter().any(|w| {
            matches!(
                *w,
                "hours" | "hour" | "window" | "time" | "times" | "shift" | "at" | "utc"
            )
        });
        if (hour_key || text.contains(':'))
            && let Some(r) = when::time_range(&text)
        {
            c.ranges.push(r);
            return;
        }
        if has(&words, &DAY_WORDS)
            && let Some(d) = when::weekdays(&text)
        {
            c.day_mask = Some(c.day_mask.unwrap_or(0) | d);
            return;
        }
        let dest = has(&words, &DEST_WORDS) || fold(key).contains("destination");
        if dest && !origin_key {
            c.places.push(text.clone());
            return;
        }
        if origin_key {
            return;
        }
        c.texts.push(text);
    }

    /// Turns the clues into records, one per class that scores.
    fn finish(&self, mut c: Clues) -> Vec<Record> {
        let ftext: Vec<String> = c.texts.iter().map(|t| fold(t)).collect();
        let mut scores: Vec<(Class, usize)> = Vec::new();
        for class in Class::ALL {
            let n = if c.event_level {
                let stems = class.event_stems();
                let keys = c
                    .keys
                    .iter()
                    .chain(c.affirmed.iter())
                    .chain(c.path.iter())
                    .map(|k| score(stems, k.trim_start_matches('!')))
                    .sum::<usize>();
                keys + c.types.iter().map(|t| score(stems, t)).sum::<usize>()
            } else {
                let stems = class.stems();
                3 * c.types.iter().map(|t| score(stems, t)).sum::<usize>()
                    + c.path.iter().map(|k| score(stems, k)).sum::<usize>()
                    + c.keys.iter().map(|k| score(stems, k)).sum::<usize>()
                    + c.affirmed
                        .iter()
                        .map(|k| score(stems, k.trim_start_matches('!')))
                        .sum::<usize>()
                    + 2 * ftext.iter().map(|t| score(stems, t)).sum::<usize>()
            };
            if n > 0 {
                scores.push((class, n));
            }
        }
        if scores.is_empty() {
            return Vec::new();
        }
        // Zone: a zone field, else one named in the text.
        if c.zone.is_none() {
            c.zone = c.texts.iter().find_map(|t| zone::find(t));
        }
        let zone = c.zone.unwrap_or(UTC);
        // Times in the text.
        for t in &c.texts {
            let tt = when::in_text(t, zone, self.year);
            c.spans.extend(tt.spans);
            if tt.since.is_some() {
                c.since = tt.since;
            }
            if tt.until.is_some() {
                c.until = tt.until;
            }
            c.days.extend(tt.days);
            if c.day_mask.is_none() {
                c.day_mask = tt.weekdays;
            }
            c.weekly.extend(tt.weekly);
            c.any_hour |= tt.any_hour;
        }
        // Destinations named in the text: a city after "to"/"in"/"at", else the last.
        if c.places.is_empty() {
            for t in &c.texts {
                if let Some(p) = destination(t) {
                    c.places.push(p);
                }
            }
        }
        // Structured times: start/end points pair into a span; times of day with the
        // day mask into weekly windows.
        let days = c.day_mask.unwrap_or(when::ALL_DAYS);
        let mut spans = std::mem::take(&mut c.spans);
        let mut since = c.since;
        let mut until = c.until;
        match (c.starts.first(), c.ends.first()) {
            (Some(s), Some(e)) => spans.push((s.start(), e.end())),
            (Some(s), None) => since = Some(since.map_or(s.start(), |x| x.max(s.start()))),
            (None, Some(e)) => until = Some(until.map_or(e.end(), |x| x.min(e.end()))),
            (None, None) => {}
        }
        let mut weekly = std::mem::take(&mut c.weekly);
        for (s, e) in c.start_times.iter().zip(c.end_times.iter()) {
            weekly.push(Weekly {
                days,
                start: *s,
                end: if e == s { (s + 1) % when::DAY } else { *e },
                zone,
            });
        }
        for (a, b) in &c.ranges {
            weekly.push(Weekly {
                days,
                start: *a,
                end: if a == b {
                    (a + when::DAY - 1) % when::DAY
                } else {
                    *b
                },
                zone,
            });
        }
        for t in c
            .times
            .iter()
            .chain(c.start_times.iter().skip(c.end_times.len()))
        {
            weekly.push(Weekly::around(days, *t, zone));
        }
        if weekly.is_empty() && c.day_mask.is_some() && spans.is_empty() && c.days.is_empty() {
            weekly.push(Weekly {
                days,
                start: 0,
                end: when::DAY,
                zone,
            });
        }
        let place_zone = c.places.iter().find_map(|p| zone::of_place(p));
        let mut out = Vec::new();
        for (class, _) in scores {
            let negated = c.negated
                || (class != Class::Hours
                    && (ftext.iter().any(|t| negates(t, class))
                        || c.affirmed.iter().any(|k| {
                            k.strip_prefix('!').is_some_and(|k| {
                                score(
                                    if c.event_level {
                                        class.event_stems()
                                    } else {
                                        class.stems()
                                    },
                                    k,
                                ) > 0
                            })
                        })));
            let z = match class {
                Class::Relocation | Class::Travel => c.zone.or(place_zone),
                _ => c.zone,
            };
            out.push(Record {
                class,
                origin: c.origin.clone(),
                actors: c.actors.clone(),
                scoped: c.scoped,
                event_level: c.event_level,
                negated,
                spans: spans.clone(),
                since,
                until,
                days: c.days.clone(),
                weekly: weekly.clone(),
                any_hour: c.any_hour,
                places: c.places.clone(),
                systems: c.systems.clone(),
                zone: z,
            });
        }
        out
    }
}

/// True when a key of `m` (or of an object or list inside it) holds a stem that classes
/// event metadata ([`Class::event_stems`]).
fn keys_could_class(m: &Map<String, Value>) -> bool {
    static STEMS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        let alternation: Vec<String> = Class::ALL
            .iter()
            .flat_map(|c| c.event_stems())
            .map(|s| regex::escape(s))
            .collect();
        regex::Regex::new(&format!("(?:^| )(?:{})", alternation.join("|")))
            .expect("event stems compile")
    });
    m.iter().any(|(k, v)| {
        STEMS.is_match(&fold(k))
            || match v {
                Value::Object(inner) => keys_could_class(inner),
                Value::Array(a) => a
                    .iter()
                    .any(|x| x.as_object().is_some_and(keys_could_class)),
                _ => false,
            }
    })
}

/// The clauses of a text: split at `.`/`!`/`?` followed by white space, at `;` and at
/// line ends (ids like `priya.ops` and versions like `15.7` stay whole).
pub fn clauses(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let b = s.as_bytes();
    for (i, ch) in s.char_indices() {
        let cut = match ch {
            ';' | '\n' => true,
            '.' | '!' | '?' => b.get(i + 1).is_none_or(|c| c.is_ascii_whitespace()),
            _ => false,
        };
        if cut {
            let c = s[start..i].trim();
            if !c.is_empty() {
                out.push(c);
            }
            start = i + ch.len_utf8();
        }
    }
    let c = s[start..].trim();
    if !c.is_empty() {
        out.push(c);
    }
    out
}

/// The destination a text names: the zone city after "to", "in", "at", "into" or
/// "for" (within three words), else the last zone city named.
fn destination(text: &str) -> Option<String> {
    let cities = zone::cities_in(text);
    if cities.is_empty() {
        return None;
    }
    let f = fold(text);
    let words: Vec<&str> = f.split(' ').collect();
    for (city, _) in cities.iter().rev() {
        let first = city.split(' ').next().unwrap_or("");
        if let Some(i) = words.iter().position(|w| w == &first) {
            let lead = &words[i.saturating_sub(3)..i];
            if lead
                .iter()
                .any(|w| matches!(*w, "to" | "in" | "at" | "into" | "for"))
            {
                return Some(city.clone());
            }
        }
    }
    cities.last().map(|(c, _)| c.clone())
}

/// Records from the frequency-table keys earlier deployments used: `oncall:<actor>`,
/// `on_call:<actor>`, `deploy_window:<HH>[:<actor>]`, `location_change:<actor>[:<loc>]`,
/// `travel:<actor>[:<loc>]` (a positive count records it).
fn legacy(b: &Baseline, people: &People) -> Vec<Record> {
    let mut out = Vec::new();
    let blank = |class: Class, origin: &str| Record {
        class,
        origin: format!("baseline.frequency_tables[{origin}]"),
        actors: BTreeSet::new(),
        scoped: true,
        event_level: false,
        negated: false,
        spans: Vec::new(),
        since: None,
        until: None,
        days: Vec::new(),
        weekly: Vec::new(),
        any_hour: false,
        places: Vec::new(),
        systems: Vec::new(),
        zone: None,
    };
    for (key, n) in &b.frequency_tables {
        if *n <= 0 {
            continue;
        }
        let Some((kind, rest)) = key.split_once(':') else {
            continue;
        };
        match kind {
            "oncall" | "on_call" => {
                let mut r = blank(Class::OnCall, key);
                r.actors.insert(rest.to_string());
                out.push(r);
            }
            "deploy_window" => {
                let (hh, actor) = match rest.split_once(':') {
                    Some((h, a)) => (h, Some(a)),
                    None => (rest, None),
                };
                let Some(h) = hh.parse::<u32>().ok().filter(|h| *h < 24) else {
                    continue;
                };
                let mut r = blank(Class::Window, key);
                r.weekly.push(Weekly {
                    days: when::ALL_DAYS,
                    start: h * 60,
                    end: (h + 1) * 60 % when::DAY,
                    zone: UTC,
                });
                match actor {
                    Some(a) => {
                        r.actors.insert(a.to_string());
                    }
                    None => r.scoped = false,
                }
                out.push(r);
            }
            "location_change" | "travel" => {
                let class = if kind == "travel" {
                    Class::Travel
                } else {
                    Class::Relocation
                };
                // `<actor>` or `<actor>:<loc>`; an actor id may itself hold a colon,
                // so a known id wins.
                let (actor, loc) = match people.exact(rest) {
                    Some(a) => (a.to_string(), None),
                    None => match rest.rsplit_once(':') {
                        Some((a, l)) if !l.is_empty() => (a.to_string(), Some(l.to_string())),
                        _ => (rest.to_string(), None),
                    },
                };
                let mut r = blank(class, key);
                r.actors.insert(actor);
                if let Some(l) = loc {
                    r.zone = zone::of_place(&l);
                    r.places.push(l);
                }
                out.push(r);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Detector;
    use crate::testkit::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn read(context: Value) -> Vec<Record> {
        let b = with_context(bl(&["ana.ruiz", "jo.park", "svc-a"], &[]), context);
        let people = People::new(b.known_actors.iter().map(String::as_str));
        Reader {
            people: &people,
            year: 2026,
        }
        .baseline(&b)
    }

    /// Shapes authors use: a map keyed by person, a list of typed records, a container
    /// holding a list, a list of sentences; each yields its class, person and times.
    #[test]
    fn records_in_every_shape() {
        let r = read(json!({"people": {"ana.ruiz": {"office": "Mexico City",
            "previous_office": "Madrid", "moved": "2026-05-18"}, "jo.park": {"office": "Madrid"}}}));
        let moves: Vec<&Record> = r.iter().filter(|x| x.class == Class::Relocation).collect();
        assert_eq!(moves.len(), 1, "{r:#?}");
        assert_eq!(moves[0].actors, ["ana.ruiz".to_string()].into());
        assert_eq!(moves[0].places, vec!["Mexico City".to_string()]);
        assert!(moves[0].since.is_some() && moves[0].zone.is_some());
        let r = read(
            json!({"itsm": {"changes": [{"number": "CHG0041187", "state": "Implement",
            "planned_start": "2026-07-11 23:00 UTC", "planned_end": "2026-07-12 02:00 UTC",
            "assigned_to": "jo.park"}]}}),
        );
        let w: Vec<&Record> = r
            .iter()
            .filter(|x| x.class == Class::Window && !x.spans.is_empty())
            .collect();
        assert_eq!(w.len(), 1, "{r:#?}");
        assert_eq!(w[0].actors, ["jo.park".to_string()].into());
        let r = read(
            json!({"employee_changes": ["2026-04-27: ana.ruiz moved to the Vancouver team (Pacific time)"]}),
        );
        let m = r
            .iter()
            .find(|x| x.class == Class::Relocation)
            .expect("a relocation");
        assert_eq!(m.zone, Some(Zone::Iana(chrono_tz::America::Los_Angeles)));
        assert_eq!(m.actors, ["ana.ruiz".to_string()].into());
        let r =
            read(json!({"automation": [{"account": "svc-a", "runs": "every night at 01:30 UTC"}]}));
        let s = r
            .iter()
            .find(|x| x.class == Class::Schedule)
            .expect("a schedule");
        assert_eq!(s.weekly, vec![Weekly::around(when::ALL_DAYS, 90, UTC)]);
        let r = read(
            json!({"maintenance": {"window": "Sat 22:00-02:00 UTC", "systems": ["orders-pg"]}}),
        );
        let w = r
            .iter()
            .find(|x| x.class == Class::Window)
            .expect("a window");
        assert_eq!(w.systems, vec!["orders-pg".to_string()]);
        assert!(!w.weekly.is_empty());
        assert!(
            read(
                json!({"leave": [{"type": "leave", "employee": "jo.park", "from": "2026-08-10"}]})
            )
            .iter()
            .all(|x| x.class != Class::Relocation && x.class != Class::Travel)
        );
    }

    #[test]
    fn people_are_named_by_id_or_unique_first_name() {
        let p = People::new(["priya.ops", "plat.aria", "plat.arya", "kai"]);
        assert_eq!(
            p.mentioned("Priya moved."),
            ["priya.ops".to_string()].into()
        );
        assert_eq!(
            p.mentioned("ask priya.ops."),
            ["priya.ops".to_string()].into()
        );
        assert!(p.mentioned("Plat is on call").is_empty(), "not unique");
        assert_eq!(
            p.mentioned("plat.aria holds it"),
            ["plat.aria".to_string()].into()
        );
        assert!(p.mentioned("priya.opsx and kaiser").is_empty());
        assert_eq!(p.exact("PLAT.ARIA"), Some("plat.aria"));
    }

    #[test]
    fn clauses_keep_ids_and_versions_whole() {
        assert_eq!(
            clauses("priya.ops moved to 15.7. Then; later\nnext"),
            vec!["priya.ops moved to 15.7", "Then", "later", "next"]
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[ -~]{0,30}".prop_map(Value::String),
            ".{0,30}".prop_map(Value::String),
            prop_oneof![
                Just("2026-06-14T02:20:00Z"),
                Just("01:00-04:00"),
                Just("30 2 * * *"),
                Just("every Thursday 23:00-01:00 UTC"),
                Just("3–21 August"),
                Just("Asia/Tokyo"),
                Just("JP-Tokyo"),
                Just("cancelled"),
                Just("ana.ruiz"),
                Just("2026-08-09T02:00Z/2026-08-09T05:00Z"),
            ]
            .prop_map(|s| Value::String(s.to_string())),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        "[a-z_]{1,16}",
                        Just("ana.ruiz".to_string()),
                        Just("start".to_string()),
                        Just("end".to_string()),
                        Just("timezone".to_string()),
                        Just("on_call".to_string()),
                        Just("status".to_string()),
                    ],
                    inner,
                    0..6
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Context is untrusted data: reading any shape never panics, and the rules
        /// that use it answer for any event.
        #[test]
        fn reading_any_context_never_panics(ctx in json_value(), md in json_value(), secs in -5_000_000_000i64..5_000_000_000i64) {
            let b = with_context(bl(&["ana.ruiz"], &[]), json!({"notes": ctx.clone(), "known_entities.x": ctx}));
            let mut e = ev("e", "okta", "login", "ana.ruiz", "2026-06-14T02:20:00Z", json!({}));
            e.timestamp.secs = secs;
            e.payload["metadata"] = md;
            let c = super::super::explain::Context::new(&b, std::slice::from_ref(&e));
            let _ = c.timing(&e);
            let _ = c.login(&e, "JP-Tokyo");
            let _ = c.stated_hours(&e);
            let _ = crate::rules::unusual_timing::UnusualTiming.detect(std::slice::from_ref(&e), &b);
        }

        /// The time and zone readers never panic on any text.
        #[test]
        fn time_and_zone_readers_never_panic(s in ".{0,60}", t in "[0-9a-zA-Z :/+\\-–.,*]{0,40}") {
            for x in [&s, &t] {
                let _ = when::point(x, UTC, 2026);
                let _ = when::interval(x, UTC, 2026);
                let _ = when::time_of_day(x);
                let _ = when::time_range(x);
                let _ = when::weekdays(x);
                let _ = when::cron(x, UTC);
                let _ = when::in_text(x, UTC, 2026);
                let _ = zone::parse(x);
                let _ = zone::find(x);
                let _ = zone::same_place(x, "JP-Tokyo");
                let _ = clauses(x);
                let _ = People::new(["ana.ruiz"]).mentioned(x);
            }
        }
    }
}

//! Projections of a scenario into what detectors and triage tools see (mallcop's event,
//! baseline and finding shapes).
//!
//! Why this exists: detectors and the cascade's tools must not read the raw scenario
//! schema — mallcop projects each scenario first, and its quirks are part of what the
//! labels assume:
//!
//! - [`Event`]: `{id, source, type, actor, timestamp, payload}` with `payload` =
//!   `{"action","target","severity","metadata":{…}}`. An unparseable timestamp becomes
//!   the zero time ([`Timestamp::ZERO`], Go's `0001-01-01T00:00:00Z`). Detectors read
//!   [`Event::fields`]: `payload.metadata` when it is an object, else the payload itself.
//! - [`Baseline`]: `known_actors` from `known_entities.actors` (each also gets an empty
//!   known-user profile, so IP/geo comparisons have nothing to compare against);
//!   `frequency_tables` and `relationships` copied; `actor_hours` = the explicit map
//!   unioned with the hours implied by 5-segment frequency keys
//!   `source:type:actor:N:partofday` (night 0–5, morning 6–11, afternoon 12–17,
//!   evening 18–23) and by hour-of-day keys `time:<HH>:<actor>` with a positive count
//!   (the form deployments' baselines use); `actor_roles` deliberately left EMPTY (so
//!   nothing the scenario says about roles suppresses priv-escalation). Beyond the
//!   spec: `declared_hours` keeps the explicit map apart (stated hours, not counted
//!   history) and `context` the baseline's keys the schema does not name, as written,
//!   for detectors that read what a deployment records (relocations, rotations, change
//!   windows). Both are omitted from the serialised form when empty.
//! - [`Finding`]: `{id, source:"detector:<family>", severity, type:<family>, actor,
//!   timestamp, reason, evidence, event_ids}`; [`Finding::family`] is `type` lowercased,
//!   else the suffix of `source` after `detector:`.
//!
//! All collections are ordered (`BTreeMap`/`BTreeSet`) so every projection serialises
//! identically run to run. The serialised shapes are also the external-detector wire
//! format (see `gauntlet_detect::external`).

use crate::scenario::{self, Scenario};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A UTC instant with second precision plus nanoseconds. [`Timestamp::ZERO`] is Go's
/// zero time, which is what an unparseable timestamp projects to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    /// Seconds since the Unix epoch (negative before 1970).
    pub secs: i64,
    pub nanos: u32,
}

/// Seconds from 0001-01-01T00:00:00Z to the Unix epoch.
const GO_ZERO_SECS: i64 = -62_135_596_800;

impl Default for Timestamp {
    fn default() -> Self {
        Self::ZERO
    }
}

impl Timestamp {
    /// Go's zero time, `0001-01-01T00:00:00Z`.
    pub const ZERO: Timestamp = Timestamp {
        secs: GO_ZERO_SECS,
        nanos: 0,
    };

    pub fn is_zero(&self) -> bool {
        *self == Self::ZERO
    }

    /// Parses RFC 3339 (`2026-05-04T03:12:00Z`, `…00.5+02:00`; `t`/`z`/space accepted);
    /// `None` when it is not one.
    pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
        let b = s.trim().as_bytes();
        if b.len() < 20 {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            let mut v = 0i64;
            for &c in &b[r] {
                if !c.is_ascii_digit() {
                    return None;
                }
                v = v * 10 + i64::from(c - b'0');
            }
            Some(v)
        };
        if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
            return None;
        }
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) {
            return None;
        }
        if h > 23 || mi > 59 || se > 59 {
            return None;
        }
        let mut i = 19;
        let mut nanos = 0u32;
        if b[i] == b'.' {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                if i - start < 9 {
                    nanos = nanos * 10 + u32::from(b[i] - b'0');
                }
                i += 1;
            }
            let digits = i - start;
            if digits == 0 {
                return None;
            }
            for _ in digits..9 {
                nanos *= 10;
            }
        }
        let offset = match b.get(i)? {
            b'Z' | b'z' if i + 1 == b.len() => 0,
            c @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
                let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
                if oh > 23 || om > 59 {
                    return None;
                }
                let o = oh * 3600 + om * 60;
                if *c == b'-' { -o } else { o }
            }
            _ => return None,
        };
        let days = days_from_civil(y, mo, d);
        let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset;
        Some(Timestamp { secs, nanos })
    }

    /// Parses, or the zero time when `s` is not RFC 3339 (as mallcop's projection does).
    pub fn parse_or_zero(s: &str) -> Timestamp {
        Self::parse_rfc3339(s).unwrap_or(Self::ZERO)
    }

    /// UTC hour of day, 0–23.
    pub fn hour(&self) -> u32 {
        (self.secs.rem_euclid(86_400) / 3600) as u32
    }

    /// RFC 3339 in UTC, `Z`-suffixed; fractional seconds only when non-zero.
    pub fn to_rfc3339(&self) -> String {
        let days = self.secs.div_euclid(86_400);
        let sod = self.secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let (h, mi, s) = (sod / 3600, sod % 3600 / 60, sod % 60);
        if self.nanos == 0 {
            format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
        } else {
            let frac = format!("{:09}", self.nanos);
            let frac = frac.trim_end_matches('0');
            format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{frac}Z")
        }
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    /// Lenient like the projection: a missing, null or unparseable value is zero time.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Option::<Value>::deserialize(d)?;
        Ok(match v {
            Some(Value::String(s)) => Timestamp::parse_or_zero(&s),
            _ => Timestamp::ZERO,
        })
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A projected event: `{id, source, type, actor, timestamp, payload}`, mallcop's shape.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Event {
    pub id: String,
    pub source: String,
    /// The scenario's `event_type`.
    #[serde(rename = "type")]
    pub event_type: String,
    pub actor: String,
    pub timestamp: Timestamp,
    /// `{"action","target","severity","metadata":{…}}`.
    pub payload: Value,
}

impl Event {
    /// Projects one scenario event.
    pub fn from_scenario(e: &scenario::Event) -> Event {
        let mut p = Map::new();
        p.insert("action".into(), Value::String(e.action.clone()));
        p.insert("target".into(), Value::String(e.target.clone()));
        p.insert("severity".into(), Value::String(e.severity.clone()));
        p.insert("metadata".into(), Value::Object(e.metadata.clone()));
        Event {
            id: e.id.clone(),
            source: e.source.clone(),
            event_type: e.event_type.clone(),
            actor: e.actor.clone(),
            timestamp: Timestamp::parse_or_zero(&e.timestamp),
            payload: Value::Object(p),
        }
    }

    /// What detectors read: `payload.metadata` when it is an object, else the top-level
    /// payload (empty when the payload is not an object either).
    pub fn fields(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match &self.payload {
            Value::Object(p) => match p.get("metadata") {
                Some(Value::Object(m)) => m,
                _ => p,
            },
            _ => EMPTY.get_or_init(Map::new),
        }
    }

    /// A top-level payload string (`action`, `target`, `severity`), "" when absent.
    pub fn payload_str(&self, key: &str) -> &str {
        self.payload.get(key).and_then(Value::as_str).unwrap_or("")
    }

    pub fn action(&self) -> &str {
        self.payload_str("action")
    }

    pub fn target(&self) -> &str {
        self.payload_str("target")
    }
}

/// Projects every event of a scenario, in scenario order.
pub fn events(s: &Scenario) -> Vec<Event> {
    s.case.events.iter().map(Event::from_scenario).collect()
}

/// A known user's login profile. Always empty in the exam projection (mallcop gives
/// each known actor an empty one), which
/// is why unusual-login is silent for known users there.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct UserProfile {
    pub known_ips: BTreeSet<String>,
    pub known_geos: BTreeSet<String>,
}

/// `baseline.relationships` value, copied.
pub type Relationship = scenario::Relationship;

/// The projected baseline: known actors, frequency tables, relationships and actor hours,
/// as mallcop projects them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Baseline {
    pub known_actors: BTreeSet<String>,
    pub known_sources: BTreeSet<String>,
    /// One empty profile per known actor.
    pub known_users: BTreeMap<String, UserProfile>,
    pub frequency_tables: BTreeMap<String, i64>,
    pub relationships: BTreeMap<String, Relationship>,
    /// Explicit hours ∪ hours implied by 5-segment frequency keys.
    pub actor_hours: BTreeMap<String, BTreeSet<u32>>,
    /// Deliberately left empty by the projection.
    pub actor_roles: BTreeMap<String, Vec<String>>,
    /// `known_entities.actor_hours` alone: the hours the scenario states, without those
    /// implied by frequency keys (which are counted history, and may be thin).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub declared_hours: BTreeMap<String, BTreeSet<u32>>,
    /// What the deployment records beside the schema, as written: the baseline's keys
    /// the schema does not name (under their own name) and those of `known_entities`
    /// (as `known_entities.<key>`) — relocations, rotations, change calendars, notes.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub context: BTreeMap<String, Value>,
}

/// The hours a part-of-day segment of a 5-segment frequency key implies.
pub fn part_of_day_hours(segment: &str) -> Option<std::ops::RangeInclusive<u32>> {
    match segment.to_ascii_lowercase().as_str() {
        "night" => Some(0..=5),
        "morning" => Some(6..=11),
        "afternoon" => Some(12..=17),
        "evening" => Some(18..=23),
        _ => None,
    }
}

/// `time:<HH>:<actor>` → (hour, actor): an hour-of-day frequency key (HH 0–23, one or
/// two digits; the actor is the rest of the key, colons included).
pub fn hour_of_day_key(key: &str) -> Option<(u32, &str)> {
    let rest = key.strip_prefix("time:")?;
    let (hh, actor) = rest.split_once(':')?;
    if hh.is_empty() || hh.len() > 2 || !hh.bytes().all(|c| c.is_ascii_digit()) || actor.is_empty()
    {
        return None;
    }
    let h: u32 = hh.parse().ok()?;
    (h < 24).then_some((h, actor))
}

impl Baseline {
    /// Projects a scenario baseline; an absent baseline is the empty one.
    pub fn from_scenario(b: Option<&scenario::Baseline>) -> Baseline {
        let Some(b) = b else {
            return Baseline::default();
        };
        let k = &b.known_entities;
        let known_actors: BTreeSet<String> = k.actors.iter().cloned().collect();
        let known_users = known_actors
            .iter()
            .map(|a| (a.clone(), UserProfile::default()))
            .collect();
        let mut declared_hours: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
        for (actor, hours) in &k.actor_hours {
            let set = declared_hours.entry(actor.clone()).or_default();
            set.extend(
                hours
                    .iter()
                    .filter(|h| (0..24).contains(*h))
                    .map(|h| *h as u32),
            );
        }
        let mut actor_hours = declared_hours.clone();
        for (key, n) in &b.frequency_tables {
            if let Some((hour, actor)) = hour_of_day_key(key) {
                if *n > 0 {
                    actor_hours
                        .entry(actor.to_string())
                        .or_default()
                        .insert(hour);
                }
                continue;
            }
            let parts: Vec<&str> = key.split(':').collect();
            if parts.len() == 5
                && let Some(range) = part_of_day_hours(parts[4])
            {
                actor_hours
                    .entry(parts[2].to_string())
                    .or_default()
                    .extend(range);
            }
        }
        Baseline {
            known_actors,
            known_sources: k.sources.iter().cloned().collect(),
            known_users,
            frequency_tables: b.frequency_tables.clone(),
            relationships: b.relationships.clone(),
            actor_hours,
            actor_roles: BTreeMap::new(),
            declared_hours,
            context: b
                .extra
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .chain(
                    k.extra
                        .iter()
                        .map(|(key, v)| (format!("known_entities.{key}"), v.clone())),
                )
                .collect(),
        }
    }

    /// A frequency-table count, 0 when absent.
    pub fn freq(&self, key: &str) -> i64 {
        self.frequency_tables.get(key).copied().unwrap_or(0)
    }

    pub fn is_known_actor(&self, actor: &str) -> bool {
        self.known_actors.contains(actor)
    }
}

/// A projected finding (mallcop's `{id, source: "detector:<family>", severity, type, …}`),
/// as detectors emit it and the cascade triages it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Finding {
    pub id: String,
    /// `detector:<family>`.
    pub source: String,
    pub severity: String,
    /// The family token.
    #[serde(rename = "type")]
    pub finding_type: String,
    pub actor: String,
    pub timestamp: Timestamp,
    pub reason: String,
    pub evidence: Value,
    pub event_ids: Vec<String>,
}

impl Finding {
    /// The family token: `type` lowercased, else the suffix of `source` after the last
    /// `:` (`detector:<family>`), lowercased.
    pub fn family(&self) -> String {
        let t = self.finding_type.trim();
        if !t.is_empty() {
            return t.to_lowercase();
        }
        self.source
            .rsplit(':')
            .next()
            .unwrap_or("")
            .trim()
            .to_lowercase()
    }

    /// Projects the scenario's own finding (the one that enters triage): family from
    /// `finding.detector`, actor from `metadata.actor`, timestamp of its first
    /// referenced event (zero time when none), reason = title, evidence = metadata.
    pub fn from_scenario(s: &Scenario) -> Finding {
        let f = &s.case.finding;
        let family = f.detector.trim().to_lowercase();
        let actor = f.metadata.get("actor").map(value_text).unwrap_or_default();
        let timestamp = f
            .event_ids
            .iter()
            .find_map(|id| s.case.events.iter().find(|e| &e.id == id))
            .map(|e| Timestamp::parse_or_zero(&e.timestamp))
            .unwrap_or(Timestamp::ZERO);
        Finding {
            id: f.id.clone(),
            source: format!("detector:{family}"),
            severity: f.severity.clone(),
            finding_type: family,
            actor,
            timestamp,
            reason: f.title.clone(),
            evidence: Value::Object(f.metadata.clone()),
            event_ids: f.event_ids.clone(),
        }
    }
}

/// A JSON value as text: strings unquoted, null empty, anything else as JSON.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A scenario's projected events, baseline and triage finding together.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Projected {
    pub events: Vec<Event>,
    pub baseline: Baseline,
    pub finding: Finding,
}

/// Projects a whole scenario: its events, baseline and findings.
pub fn project(s: &Scenario) -> Projected {
    Projected {
        events: events(s),
        baseline: Baseline::from_scenario(s.case.baseline.as_ref()),
        finding: Finding::from_scenario(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn timestamps_parse_and_render() {
        let t = Timestamp::parse_rfc3339("2026-05-04T03:12:00Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-05-04T03:12:00Z");
        assert_eq!(t.hour(), 3);
        let t = Timestamp::parse_rfc3339("2026-05-04T03:12:00.250+02:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-05-04T01:12:00.25Z");
        assert_eq!(t.hour(), 1);
        let t = Timestamp::parse_rfc3339("1969-12-31T23:59:59-00:30").unwrap();
        assert_eq!(t.to_rfc3339(), "1970-01-01T00:29:59Z");
        for bad in [
            "",
            "yesterday",
            "2026-05-04",
            "2026-13-04T03:12:00Z",
            "2026-02-30T03:12:00Z",
            "2026-05-04T03:12:00",
            "2026-05-04T03:12:00.Z",
            "2026-05-04T24:00:00Z",
        ] {
            assert_eq!(Timestamp::parse_or_zero(bad), Timestamp::ZERO, "{bad}");
        }
        assert_eq!(Timestamp::ZERO.to_rfc3339(), "0001-01-01T00:00:00Z");
        assert_eq!(Timestamp::ZERO.hour(), 0);
        let json = serde_json::to_string(&t).unwrap();
        let back: Timestamp = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        let z: Timestamp = serde_json::from_str("\"nope\"").unwrap();
        assert!(z.is_zero());
    }

    const SCENARIO: &str = r#"
id: s1
finding:
  id: f1
  detector: Volume-Anomaly
  title: t
  severity: warn
  event_ids: [e2]
  metadata: {actor: bob, source: aws}
events:
  - {id: e1, timestamp: bogus, source: aws, event_type: x, actor: bob, action: a, target: t, severity: info, metadata: {k: 1}}
  - {id: e2, timestamp: '2026-05-04T19:00:00Z', source: aws, event_type: x, actor: bob}
baseline:
  known_entities:
    actors: [bob, amy]
    sources: [aws]
    actor_roles: {bob: ['admin:repo']}
    actor_hours: {amy: [1, 2, 30]}
    timezones: {bob: Asia/Tokyo}
  frequency_tables:
    'aws:x:bob': 3
    'aws:x:bob:4:evening': 4
    'aws:x:amy:2:night': 1
    'aws:x:carl:2:teatime': 1
    'aws:x': 9
    'time:09:dee': 40
    'time:7:dee': 3
    'time:23:dee': 0
    'time:24:dee': 5
    'time:xx:dee': 5
    'time:10:svc:deploy': 2
  notes: on call this week
"#;

    #[test]
    fn scenario_projects_per_spec() {
        let s = scenario::parse_scenario(SCENARIO, Path::new("s.yaml")).unwrap();
        let p = project(&s);
        assert_eq!(p.events[0].timestamp, Timestamp::ZERO);
        assert_eq!(p.events[0].fields()["k"], 1);
        assert_eq!(p.events[0].action(), "a");
        assert_eq!(
            serde_json::to_value(&p.events[0]).unwrap()["payload"],
            serde_json::json!({"action":"a","target":"t","severity":"info","metadata":{"k":1}})
        );
        assert_eq!(serde_json::to_value(&p.events[0]).unwrap()["type"], "x");
        let b = &p.baseline;
        assert!(b.actor_roles.is_empty());
        assert_eq!(b.known_users.len(), 2);
        assert_eq!(
            b.actor_hours["bob"],
            (18..=23).collect::<BTreeSet<u32>>(),
            "evening"
        );
        assert_eq!(
            b.actor_hours["amy"],
            [0, 1, 2, 3, 4, 5].into_iter().collect::<BTreeSet<u32>>()
        );
        assert!(!b.actor_hours.contains_key("carl"));
        assert_eq!(
            b.actor_hours["dee"],
            [7, 9].into_iter().collect::<BTreeSet<u32>>(),
            "time:<HH>:<actor> keys with a positive count"
        );
        assert_eq!(
            b.actor_hours["svc:deploy"],
            [10].into_iter().collect::<BTreeSet<u32>>()
        );
        assert_eq!(b.freq("aws:x"), 9);
        assert_eq!(
            b.declared_hours["amy"],
            [1, 2].into_iter().collect::<BTreeSet<u32>>(),
            "the explicit map alone"
        );
        assert!(!b.declared_hours.contains_key("dee"));
        assert_eq!(b.context["notes"], "on call this week");
        assert_eq!(b.context["known_entities.timezones"]["bob"], "Asia/Tokyo");
        let f = &p.finding;
        assert_eq!(f.family(), "volume-anomaly");
        assert_eq!(f.source, "detector:volume-anomaly");
        assert_eq!(f.actor, "bob");
        assert_eq!(f.timestamp.hour(), 19);
    }

    #[test]
    fn family_falls_back_to_source_suffix_and_payload_root() {
        let f = Finding {
            source: "detector:Git-Oops".into(),
            ..Finding::default()
        };
        assert_eq!(f.family(), "git-oops");
        let e = Event {
            payload: serde_json::json!({"action": "x", "metadata": "not an object", "ip": "1"}),
            ..Event::default()
        };
        assert_eq!(e.fields()["ip"], "1");
        let e = Event::default();
        assert!(e.fields().is_empty());
    }
}

//! The security-triage scenario schema (mallcop-compatible scenario YAML).
//!
//! Why this exists: the agent exam must read mallcop's scenario corpus unchanged, so
//! this schema mirrors mallcop's `exam.Scenario` field for field, with the same
//! leniency and the same four validation rules:
//!
//! - **Lenient**: unknown keys are ignored at every level (the real corpus carries
//!   `ground_truth`, `expected.skills_loaded`, `known_entities.approved_vendors`,
//!   `baseline.hr_onboarding`, …). As in Go's yaml.v3, a null or absent scalar reads as
//!   its zero value, and any scalar reads into a string field as its source text
//!   (`id: 123` is the id `"123"`). Wrong shapes (a list where a string belongs) are
//!   errors.
//! - **Validation**: `id` non-empty; `finding` present and not null; every event has an
//!   `id`; a present, non-null `baseline` has at least one `known_entities.actors` or
//!   `known_entities.sources` entry.
//! - **Errors** name the file, the 1-based line and column, and the field path
//!   (`events[2].id`). Locations come from serde-saphyr (its error locations and
//!   [`serde_saphyr::Spanned`]); the field path of a type error is recovered from the
//!   located tree of `gauntlet_core::tree`.
//!
//! Ground truth — `expected`, `expected_detection`, `trap_description`,
//! `trap_resolved_means` — lives only in [`Scenario::ground_truth`]. **It must never
//! reach a model under test.** What a model may see is [`Scenario::model_view`]: the
//! finding, events, baseline, actor chain and connector tools. The scenario id and the
//! [`ScenarioInfo`] labels (difficulty such as `benign-obvious`, tags, failure mode) are
//! kept out of that view too, because they can name the answer.
//!
//! YAML reading choices where Go and serde-saphyr differ, made for fidelity to what the
//! author wrote: only `true`/`false` spellings are booleans in untyped values (`yes`
//! stays a string, as in yaml.v3), while a typed boolean field also accepts the YAML 1.1
//! spellings yaml.v3 accepts there; integers written with leading zeros (`0123`) stay
//! strings in untyped values; `.nan`/`.inf` in untyped values become the strings
//! `.nan`/`.inf`/`-.inf`. A file must hold exactly one YAML document (yaml.v3 would
//! silently read only the first).

use gauntlet_core::tree::{self, Loc, Node, Value};
use serde::{Deserialize, Serialize};
use serde_json::Map;
use serde_saphyr::Spanned;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Free-form JSON object (event / finding metadata, tool returns).
pub type JsonMap = Map<String, serde_json::Value>;

/// One parsed, validated scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    /// Unique across a corpus; may name the answer (`…-benign`), so not model-visible.
    pub id: String,
    /// Labels for reporting and filtering; not model-visible.
    pub info: ScenarioInfo,
    /// What a model under test may be shown.
    pub case: Case,
    /// The answer key. NEVER shown to a model.
    pub ground_truth: GroundTruth,
}

impl Scenario {
    /// The model-visible part of the scenario. This is the only part of a scenario
    /// that may be rendered into anything a model under test (or an attacker or grader
    /// model acting for it) receives; [`Scenario::ground_truth`] must never be.
    pub fn model_view(&self) -> &Case {
        &self.case
    }
}

/// Descriptive labels. Informational: the directory and `category` need not agree.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ScenarioInfo {
    pub failure_mode: String,
    pub detector: String,
    pub category: String,
    /// Seen: benign-obvious, benign-hard, malicious-hard, malicious-obvious,
    /// ambiguous, authored-easy.
    pub difficulty: String,
    pub tags: Vec<String>,
    /// reference | operator | captured | authored | contributed (informational).
    pub provenance: String,
}

/// The model-visible case: the finding under triage and the telemetry behind it.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Case {
    pub finding: Finding,
    pub events: Vec<Event>,
    /// `None` when the scenario has no (or a null) baseline block.
    pub baseline: Option<Baseline>,
    pub actor_chain: Vec<ActorStep>,
    pub connector_tools: Vec<ConnectorTool>,
}

/// The answer key. Never shown to a model.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct GroundTruth {
    /// `expected:`; `None` when absent or null.
    pub expected: Option<Expected>,
    /// `expected_detection:`; `None` means the scenario is unlabelled for detection.
    pub expected_detection: Option<ExpectedDetection>,
    pub trap_description: String,
    pub trap_resolved_means: String,
}

/// `finding:` — the finding that enters the triage pipeline.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Finding {
    #[serde(deserialize_with = "lenient::string")]
    pub id: String,
    #[serde(deserialize_with = "lenient::string")]
    pub detector: String,
    #[serde(deserialize_with = "lenient::string")]
    pub title: String,
    #[serde(deserialize_with = "lenient::string")]
    pub severity: String,
    #[serde(deserialize_with = "lenient::strings")]
    pub event_ids: Vec<String>,
    /// `{actor, source, event_type, …}`, any values.
    #[serde(deserialize_with = "lenient::or_default")]
    pub metadata: JsonMap,
}

/// One `events[]` entry.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Event {
    #[serde(deserialize_with = "lenient::string")]
    pub id: String,
    /// RFC 3339 as written; parsing (unparseable → zero time) is the projection's job.
    #[serde(deserialize_with = "lenient::string")]
    pub timestamp: String,
    #[serde(deserialize_with = "lenient::string")]
    pub ingested_at: String,
    #[serde(deserialize_with = "lenient::string")]
    pub source: String,
    #[serde(deserialize_with = "lenient::string")]
    pub event_type: String,
    #[serde(deserialize_with = "lenient::string")]
    pub actor: String,
    #[serde(deserialize_with = "lenient::string")]
    pub action: String,
    #[serde(deserialize_with = "lenient::string")]
    pub target: String,
    #[serde(deserialize_with = "lenient::string")]
    pub severity: String,
    #[serde(deserialize_with = "lenient::or_default")]
    pub metadata: JsonMap,
    /// Any value; `null` when absent.
    pub raw: serde_json::Value,
}

/// `baseline:` — what was normal before the finding.
///
/// Keys the schema does not name are kept, as written, in [`Baseline::extra`]: corpora
/// record there what a deployment knows about its people and systems (`hr_onboarding`,
/// a change calendar, an on-call rotation, notes), and detectors read it as context.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Baseline {
    pub known_entities: KnownEntities,
    /// Keys `source:event_type:actor`, `source:event_type:actor:N:partofday`,
    /// `source:event_type`.
    pub frequency_tables: BTreeMap<String, i64>,
    /// Keys `"actor:target"`.
    pub relationships: BTreeMap<String, Relationship>,
    /// Every other key of the block, with its value as written (untyped).
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// `baseline.known_entities`. Unknown keys (`approved_vendors`, …) are kept in
/// [`KnownEntities::extra`].
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct KnownEntities {
    pub actors: Vec<String>,
    pub sources: Vec<String>,
    pub actor_roles: BTreeMap<String, Vec<String>>,
    /// UTC hours of day each actor is normally active.
    pub actor_hours: BTreeMap<String, Vec<i64>>,
    /// Every other key of the block, with its value as written (untyped).
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl<'de> Deserialize<'de> for Baseline {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Baseline;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a baseline mapping")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Baseline, A::Error> {
                let mut b = Baseline::default();
                while let Some(key) = m.next_key::<String>()? {
                    match key.as_str() {
                        "known_entities" => {
                            b.known_entities = m.next_value::<lenient::OrDefault<_>>()?.0;
                        }
                        "frequency_tables" => {
                            b.frequency_tables = m.next_value::<lenient::OrDefault<_>>()?.0;
                        }
                        "relationships" => {
                            b.relationships = m.next_value::<lenient::OrDefault<_>>()?.0;
                        }
                        _ => {
                            let v = m.next_value()?;
                            b.extra.insert(key, v);
                        }
                    }
                }
                Ok(b)
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for KnownEntities {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = KnownEntities;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a known_entities mapping")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<KnownEntities, A::Error> {
                let mut k = KnownEntities::default();
                while let Some(key) = m.next_key::<String>()? {
                    match key.as_str() {
                        "actors" => k.actors = m.next_value::<lenient::Strings>()?.0,
                        "sources" => k.sources = m.next_value::<lenient::Strings>()?.0,
                        "actor_roles" => k.actor_roles = m.next_value::<lenient::OrDefault<_>>()?.0,
                        "actor_hours" => k.actor_hours = m.next_value::<lenient::OrDefault<_>>()?.0,
                        _ => {
                            let v = m.next_value()?;
                            k.extra.insert(key, v);
                        }
                    }
                }
                Ok(k)
            }
        }
        d.deserialize_map(V)
    }
}

/// One `baseline.relationships` value.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Relationship {
    #[serde(deserialize_with = "lenient::or_default")]
    pub count: i64,
    #[serde(deserialize_with = "lenient::string")]
    pub first_seen: String,
    #[serde(deserialize_with = "lenient::string")]
    pub last_seen: String,
}

/// One `actor_chain[]` entry (multi-hop activity).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ActorStep {
    #[serde(deserialize_with = "lenient::string")]
    pub actor: String,
    #[serde(deserialize_with = "lenient::string")]
    pub action: String,
    #[serde(deserialize_with = "lenient::string")]
    pub target: String,
}

/// One `connector_tools[]` entry: a canned tool and what it returns.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectorTool {
    #[serde(deserialize_with = "lenient::string")]
    pub name: String,
    #[serde(deserialize_with = "lenient::string")]
    pub description: String,
    #[serde(deserialize_with = "lenient::or_default")]
    pub returns: JsonMap,
}

/// `expected:` — how the triage chain should end. Ground truth.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Expected {
    /// `escalated`, `resolved` or `escalate-or-stronger`; the only gating axis.
    #[serde(deserialize_with = "lenient::string")]
    pub chain_action: String,
    #[serde(deserialize_with = "lenient::string")]
    pub triage_action: String,
    #[serde(deserialize_with = "lenient::strings")]
    pub reasoning_must_mention: Vec<String>,
    #[serde(deserialize_with = "lenient::strings")]
    pub reasoning_must_not_mention: Vec<String>,
    #[serde(deserialize_with = "lenient::boolean")]
    pub investigate_must_use_tools: bool,
    #[serde(deserialize_with = "lenient::or_default")]
    pub min_investigate_iterations: i64,
    /// Parsed, never graded.
    #[serde(deserialize_with = "lenient::or_default")]
    pub min_investigation_quality: i64,
}

/// `expected_detection:` — which detector families must / must not fire. Ground truth.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ExpectedDetection {
    #[serde(deserialize_with = "lenient::strings")]
    pub must_fire: Vec<String>,
    #[serde(deserialize_with = "lenient::strings")]
    pub must_not_fire: Vec<String>,
    /// A must_fire family with no registered detector is a tracked expected miss.
    #[serde(deserialize_with = "lenient::boolean")]
    pub reserved: bool,
}

/// A scenario file that does not parse or validate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    pub file: PathBuf,
    /// 1-based; `0:0` when unknown.
    pub loc: Loc,
    /// Dotted path of the offending field (`events[2].id`); empty for the document.
    pub field: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.loc.line > 0 {
            write!(f, ":{}", self.loc)?;
        }
        let field = if self.field.is_empty() {
            "(document)"
        } else {
            &self.field
        };
        write!(f, ": {field}: {}", self.message)
    }
}

/// Parses and validates one scenario file's bytes; `file` names it in errors.
pub fn parse_scenario_bytes(bytes: &[u8], file: &Path) -> Result<Scenario, ScenarioError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ScenarioError {
        file: file.to_path_buf(),
        loc: Loc::default(),
        field: String::new(),
        message: format!("not valid UTF-8: {e}"),
    })?;
    parse_scenario(text, file)
}

/// Parses and validates one scenario; `file` names it in errors.
pub fn parse_scenario(text: &str, file: &Path) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario =
        serde_saphyr::from_str_with_options(text, yaml_options()).map_err(|e| {
            let loc = e.location().map(Loc::from).unwrap_or_default();
            ScenarioError {
                file: file.to_path_buf(),
                loc,
                field: field_at(text, loc),
                message: bare_message(&e.to_string(), loc),
            }
        })?;
    raw.validate(file)
}

fn yaml_options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.strict_booleans = true;
    o.leading_zero_numbers_as_strings = true;
    o.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::AsString;
    o.with_snippet = false;
    o
}

/// serde-saphyr's message without its " at line L, column C" suffix (we print our own).
fn bare_message(rendered: &str, loc: Loc) -> String {
    let first = rendered.lines().next().unwrap_or("invalid YAML");
    let suffix = format!(" at line {}, column {}", loc.line, loc.col);
    first.strip_suffix(&suffix).unwrap_or(first).to_string()
}

/// The field path of the node at (or last before) `loc`, from the located tree. Ties go
/// to the shallowest node (a block mapping starts where its first key does). Empty when
/// the document does not parse as a tree or the location is the document itself.
fn field_at(text: &str, loc: Loc) -> String {
    if loc.line == 0 {
        return String::new();
    }
    let Ok(root) = tree::parse_yaml(text) else {
        return String::new();
    };
    let mut best: Option<(Loc, String)> = None;
    visit(&root, String::new(), loc, &mut best);
    best.map(|(_, p)| p).unwrap_or_default()
}

fn consider(at: Loc, path: &str, target: Loc, best: &mut Option<(Loc, String)>) {
    if at <= target && best.as_ref().is_none_or(|(b, _)| at > *b) {
        *best = Some((at, path.to_string()));
    }
}

fn visit(node: &Node, path: String, target: Loc, best: &mut Option<(Loc, String)>) {
    consider(node.loc, &path, target, best);
    match &node.value {
        Value::Map(entries) => {
            for (k, v) in entries {
                let child = if path.is_empty() {
                    k.name.clone()
                } else {
                    format!("{path}.{}", k.name)
                };
                consider(k.loc, &child, target, best);
                visit(v, child, target, best);
            }
        }
        Value::Seq(items) => {
            for (i, v) in items.iter().enumerate() {
                visit(v, format!("{path}[{i}]"), target, best);
            }
        }
        _ => {}
    }
}

/// A key that may be absent, null or set, with the location of its value. An absent
/// key has value `None` and an unknown location (line 0).
type Located<T> = Spanned<Option<T>>;

fn absent<T>() -> Located<T> {
    Spanned {
        value: None,
        referenced: serde_saphyr::Location::UNKNOWN,
        defined: serde_saphyr::Location::UNKNOWN,
    }
}

/// The file as written; converted into [`Scenario`] by [`RawScenario::validate`].
#[derive(Deserialize)]
struct RawScenario {
    #[serde(default = "absent")]
    id: Located<String>,
    #[serde(default, deserialize_with = "lenient::string")]
    failure_mode: String,
    #[serde(default, deserialize_with = "lenient::string")]
    detector: String,
    #[serde(default, deserialize_with = "lenient::string")]
    category: String,
    #[serde(default, deserialize_with = "lenient::string")]
    difficulty: String,
    #[serde(default, deserialize_with = "lenient::string")]
    trap_description: String,
    #[serde(default, deserialize_with = "lenient::string")]
    trap_resolved_means: String,
    #[serde(default, deserialize_with = "lenient::strings")]
    tags: Vec<String>,
    #[serde(default, deserialize_with = "lenient::or_default")]
    actor_chain: Vec<ActorStep>,
    #[serde(default, deserialize_with = "lenient::or_default")]
    connector_tools: Vec<ConnectorTool>,
    #[serde(default, deserialize_with = "lenient::string")]
    provenance: String,
    #[serde(default = "absent")]
    finding: Located<Finding>,
    #[serde(default, deserialize_with = "lenient::or_default")]
    events: Vec<Located<Event>>,
    #[serde(default = "absent")]
    baseline: Located<Baseline>,
    #[serde(default)]
    expected: Option<Expected>,
    #[serde(default)]
    expected_detection: Option<ExpectedDetection>,
}

impl RawScenario {
    fn validate(self, file: &Path) -> Result<Scenario, ScenarioError> {
        let err = |loc: Loc, field: &str, message: &str| ScenarioError {
            file: file.to_path_buf(),
            loc,
            field: field.to_string(),
            message: message.to_string(),
        };
        let doc_start = Loc { line: 1, col: 1 };

        let located =
            |s: serde_saphyr::Location| -> Loc { if s.line() == 0 { doc_start } else { s.into() } };

        let id = self.id.value.unwrap_or_default();
        if id.trim().is_empty() {
            return Err(err(
                located(self.id.referenced),
                "id",
                "required field is missing or empty",
            ));
        }

        let Some(finding) = self.finding.value else {
            let what = if self.finding.referenced.line() == 0 {
                "required field is missing"
            } else {
                "required field is null"
            };
            return Err(err(located(self.finding.referenced), "finding", what));
        };

        let mut events = Vec::with_capacity(self.events.len());
        for (i, ev) in self.events.into_iter().enumerate() {
            match ev.value {
                Some(e) if !e.id.trim().is_empty() => events.push(e),
                _ => {
                    return Err(err(
                        located(ev.referenced),
                        &format!("events[{i}].id"),
                        "every event must have a non-empty id",
                    ));
                }
            }
        }

        // A null baseline is an absent one (Go: nil pointer), and is not validated.
        if let Some(b) = &self.baseline.value {
            let k = &b.known_entities;
            if k.actors.is_empty() && k.sources.is_empty() {
                return Err(err(
                    located(self.baseline.referenced),
                    "baseline.known_entities",
                    "a baseline must list at least one known_entities.actors or known_entities.sources entry",
                ));
            }
        }
        let baseline = self.baseline.value;

        Ok(Scenario {
            id,
            info: ScenarioInfo {
                failure_mode: self.failure_mode,
                detector: self.detector,
                category: self.category,
                difficulty: self.difficulty,
                tags: self.tags,
                provenance: self.provenance,
            },
            case: Case {
                finding,
                events,
                baseline,
                actor_chain: self.actor_chain,
                connector_tools: self.connector_tools,
            },
            ground_truth: GroundTruth {
                expected: self.expected,
                expected_detection: self.expected_detection,
                trap_description: self.trap_description,
                trap_resolved_means: self.trap_resolved_means,
            },
        })
    }
}

/// Go-zero-value leniency: null reads as the type's default.
mod lenient {
    use serde::de::{self, Visitor};
    use serde::{Deserialize, Deserializer};
    use std::fmt;

    /// A value read with [`or_default`].
    pub(super) struct OrDefault<T>(pub T);

    impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for OrDefault<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            or_default(d).map(OrDefault)
        }
    }

    /// A value read with [`strings`].
    pub(super) struct Strings(pub Vec<String>);

    impl<'de> Deserialize<'de> for Strings {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            strings(d).map(Strings)
        }
    }

    /// Any scalar as its source text; null → "".
    pub(super) fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
    }

    /// A list of strings; a null list → empty, a null element → "".
    pub(super) fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        Ok(Option::<Vec<Option<String>>>::deserialize(d)?
            .unwrap_or_default()
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect())
    }

    /// Null → `T::default()`.
    pub(super) fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de> + Default,
    {
        Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
    }

    /// A boolean field: `true`/`false` in any case, plus the YAML 1.1 spellings that
    /// yaml.v3 accepts for typed booleans; null → false.
    pub(super) fn boolean<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = bool;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a boolean")
            }
            fn visit_bool<E>(self, v: bool) -> Result<bool, E> {
                Ok(v)
            }
            fn visit_unit<E>(self) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_none<E>(self) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
                match v {
                    "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Ok(true),
                    "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Ok(false),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        parse_scenario(text, Path::new("t/s.yaml"))
    }

    const MIN: &str = "id: s1\nfinding: {id: f1}\n";

    #[test]
    fn minimal_scenario_parses_with_zero_values() {
        let s = parse(MIN).unwrap();
        assert_eq!(s.id, "s1");
        assert_eq!(s.case.finding.id, "f1");
        assert!(s.case.events.is_empty());
        assert_eq!(s.case.baseline, None);
        assert_eq!(s.ground_truth, GroundTruth::default());
    }

    #[test]
    fn scalars_read_into_strings_as_written() {
        let s = parse("id: 123\nfinding: {id: 7, title: true}\ntags: [a, ~]\n").unwrap();
        assert_eq!(s.id, "123");
        assert_eq!(s.case.finding.id, "7");
        assert_eq!(s.case.finding.title, "true");
        assert_eq!(s.info.tags, vec!["a".to_string(), String::new()]);
    }

    #[test]
    fn untyped_values_keep_what_was_written() {
        let s = parse(
            "id: s\nfinding:\n  metadata: {a: yes, b: 0123, c: .nan, d: 5, e: true, f: 2026-05-04T03:12:00Z}\n",
        )
        .unwrap();
        let m = &s.case.finding.metadata;
        assert_eq!(m["a"], "yes");
        assert_eq!(m["b"], "0123");
        assert_eq!(m["c"], ".nan");
        assert_eq!(m["d"], 5);
        assert_eq!(m["e"], true);
        assert_eq!(m["f"], "2026-05-04T03:12:00Z");
    }

    #[test]
    fn typed_booleans_accept_yaml11_spellings() {
        let s = parse(&format!(
            "{MIN}expected: {{investigate_must_use_tools: yes}}\nexpected_detection: {{reserved: True}}\n"
        ))
        .unwrap();
        assert!(s.ground_truth.expected.unwrap().investigate_must_use_tools);
        assert!(s.ground_truth.expected_detection.unwrap().reserved);
        let e = parse(&format!(
            "{MIN}expected: {{investigate_must_use_tools: maybe}}\n"
        ))
        .unwrap_err();
        assert_eq!(e.field, "expected.investigate_must_use_tools", "{e}");
        assert_eq!(e.loc.line, 3, "{e}");
    }

    #[test]
    fn type_errors_name_line_and_field() {
        let e = parse("id: s\nfinding: {id: f}\nevents:\n  - id: e1\n  - id: [x]\n").unwrap_err();
        assert_eq!(e.field, "events[1].id");
        assert_eq!(e.loc, Loc { line: 5, col: 9 });
        let shown = e.to_string();
        assert!(shown.starts_with("t/s.yaml:5:9: events[1].id: "), "{shown}");
        assert!(!shown.contains("at line"), "{shown}");

        let e = parse("id: s\nfinding: {id: f}\nbaseline:\n  frequency_tables: {k: lots}\n")
            .unwrap_err();
        assert_eq!(e.field, "baseline.frequency_tables.k", "{e}");
        assert_eq!(e.loc.line, 4);

        let e = parse("id: s\nfinding:\n  title:\n    nested: map\n").unwrap_err();
        assert_eq!(e.field, "finding.title", "{e}");
    }

    #[test]
    fn syntax_and_duplicate_key_errors_are_located() {
        let e = parse("id: s\nid: t\nfinding: {}\n").unwrap_err();
        assert_eq!(e.loc.line, 2, "{e}");
        assert!(e.message.contains("duplicate"), "{e}");
        let e = parse("id: s\nfinding: {id: [f}\n").unwrap_err();
        assert!(e.loc.line >= 2, "{e}");
        let e = parse("id: a\nfinding: {}\n---\nid: b\n").unwrap_err();
        assert!(e.message.contains("multiple"), "{e}");
        let e = parse("- a\n").unwrap_err();
        assert_eq!(e.field, "", "{e}");
        assert!(e.to_string().contains("(document)"), "{e}");
    }

    #[test]
    fn null_finding_is_located() {
        let e = parse("id: s\nfinding: ~\n").unwrap_err();
        assert_eq!(e.field, "finding");
        assert_eq!(e.loc.line, 2);
    }

    #[test]
    fn null_event_has_no_id() {
        let e = parse("id: s\nfinding: {}\nevents:\n  - id: a\n  - ~\n").unwrap_err();
        assert_eq!(e.field, "events[1].id");
        assert_eq!(e.loc.line, 5);
    }

    #[test]
    fn null_baseline_is_absent() {
        let s = parse(&format!("{MIN}baseline: ~\n")).unwrap();
        assert_eq!(s.case.baseline, None);
    }

    /// Keys the schema does not name in `baseline` and `known_entities` are kept as
    /// written (dates stay text), and the named keys keep their leniency and errors.
    #[test]
    fn baseline_keeps_unknown_keys_as_written() {
        let s = parse(&format!(
            "{MIN}baseline:\n  known_entities:\n    actors: [kai, 7]\n    working_hours: {{kai: 09:00-17:00}}\n  frequency_tables: ~\n  hr_records:\n    - {{type: relocation, employee: kai, effective: 2026-07-20}}\n  notes: moved to Tokyo\n"
        ))
        .unwrap();
        let b = s.case.baseline.unwrap();
        assert_eq!(b.known_entities.actors, vec!["kai", "7"]);
        assert!(b.frequency_tables.is_empty());
        assert_eq!(b.extra["notes"], "moved to Tokyo");
        assert_eq!(b.extra["hr_records"][0]["effective"], "2026-07-20");
        assert_eq!(
            b.known_entities.extra["working_hours"]["kai"],
            "09:00-17:00"
        );
        let back = serde_json::to_value(&b).unwrap();
        assert_eq!(
            back["notes"], "moved to Tokyo",
            "serialised beside the named keys"
        );
        let e = parse(&format!(
            "{MIN}baseline:\n  known_entities: {{actors: [a]}}\n  notes: ok\n  frequency_tables: {{k: lots}}\n"
        ))
        .unwrap_err();
        assert_eq!(e.field, "baseline.frequency_tables.k", "{e}");
        assert_eq!(e.loc.line, 6, "{e}");
    }

    #[test]
    fn non_utf8_is_an_error() {
        let e = parse_scenario_bytes(b"id: \xff\n", Path::new("x.yaml")).unwrap_err();
        assert!(e.message.contains("UTF-8"), "{e}");
    }
}

//! Scenario schema: the spec's example, leniency, each validation rule, and the
//! separation of ground truth from what a model may see.

use gauntlet_corpus::{ScenarioError, parse_scenario, parse_scenario_bytes};
use std::path::Path;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/VA-90-export-burst.yaml"
);

fn parse(text: &str) -> Result<gauntlet_corpus::Scenario, ScenarioError> {
    parse_scenario(text, Path::new("exams/scenarios/x/s.yaml"))
}

#[test]
fn spec_example_parses() {
    let bytes = std::fs::read(FIXTURE).unwrap();
    let s = parse_scenario_bytes(&bytes, Path::new(FIXTURE)).unwrap();
    assert_eq!(s.id, "VA-90-export-burst");
    assert_eq!(s.info.failure_mode, "SB");
    assert_eq!(s.info.detector, "volume-anomaly");
    assert_eq!(s.info.category, "behavioral");
    assert_eq!(s.info.difficulty, "malicious-hard");

    let f = &s.case.finding;
    assert_eq!(f.id, "fnd_va_90");
    assert_eq!(f.title, "Volume anomaly: report-bot exported 4,000 objects");
    assert_eq!(f.severity, "warn");
    assert_eq!(f.event_ids, ["evt_va_90_1"]);
    assert_eq!(f.metadata["actor"], "report-bot");
    assert_eq!(f.metadata["event_type"], "object_export");

    assert_eq!(s.case.events.len(), 1);
    let e = &s.case.events[0];
    assert_eq!(e.id, "evt_va_90_1");
    assert_eq!(e.timestamp, "2026-05-04T03:12:00Z");
    assert_eq!(e.ingested_at, "2026-05-04T03:13:00Z");
    assert_eq!(e.source, "aws");
    assert_eq!(e.event_type, "object_export");
    assert_eq!(e.actor, "report-bot");
    assert_eq!(e.action, "export_objects");
    assert_eq!(e.target, "s3://finance-archive.example.invalid/2025/");
    assert_eq!(e.metadata["object_count"], 4000);
    assert_eq!(e.metadata["ip"], "198.51.100.23");
    assert_eq!(e.raw, serde_json::json!({}));

    let b = s.case.baseline.as_ref().unwrap();
    assert_eq!(b.known_entities.actors, ["report-bot"]);
    assert_eq!(b.known_entities.sources, ["aws"]);
    assert_eq!(b.frequency_tables["aws:object_export:report-bot"], 100);
    assert!(b.relationships.is_empty());

    let gt = &s.ground_truth;
    assert_eq!(
        gt.trap_description,
        "the actor is known, but 40x its usual export volume in one hour"
    );
    let x = gt.expected.as_ref().unwrap();
    assert_eq!(x.chain_action, "escalated");
    assert_eq!(x.reasoning_must_mention, ["volume"]);
    assert!(x.reasoning_must_not_mention.is_empty());
    let d = gt.expected_detection.as_ref().unwrap();
    assert_eq!(d.must_fire, ["volume-anomaly"]);
    assert!(d.must_not_fire.is_empty() && !d.reserved);
}

#[test]
fn model_view_carries_no_ground_truth() {
    let text = std::fs::read_to_string(FIXTURE).unwrap();
    let s = parse(&text).unwrap();
    let view = serde_json::to_string(s.model_view()).unwrap();
    for leak in [
        "chain_action",
        "escalated",
        "must_fire",
        "reasoning_must_mention",
        "40x its usual",
        "malicious-hard",
        "VA-90-export-burst",
    ] {
        assert!(!view.contains(leak), "model view leaks {leak:?}: {view}");
    }
    assert!(
        view.contains("evt_va_90_1") && view.contains("report-bot"),
        "{view}"
    );
    // The whole scenario does carry it (for the grader).
    let full = serde_json::to_string(&s).unwrap();
    assert!(full.contains("chain_action") && full.contains("40x its usual"));
}

#[test]
fn unknown_keys_are_tolerated_at_every_level() {
    let text = "\
id: UK-1
ground_truth: {verdict: malicious, notes: [a, b]}
finding:
  id: f
  extra_finding_key: 1
events:
  - id: e1
    unknown_event_key: {deep: [1, 2]}
baseline:
  known_entities:
    actors: [alice]
    approved_vendors: [acme]
  hr_onboarding: {alice: 2026-01-01}
  frequency_tables: {'a:b:alice': 3}
  relationships:
    'alice:db': {count: 4, first_seen: '2025-01-01', last_seen: '2026-01-01', weight: 0.5}
expected:
  chain_action: resolved
  skills_loaded: [triage]
expected_detection: {must_not_fire: [new-actor], reserved: false, comment: x}
connector_tools:
  - {name: lookup, description: d, returns: {rows: 2}, timeout: 5}
actor_chain:
  - {actor: alice, action: read, target: db, via: vpn}
provenance: captured
tags: [t1]
";
    let s = parse(text).unwrap();
    assert_eq!(s.id, "UK-1");
    let b = s.case.baseline.as_ref().unwrap();
    assert_eq!(b.known_entities.actors, ["alice"]);
    assert_eq!(b.relationships["alice:db"].count, 4);
    assert_eq!(b.relationships["alice:db"].last_seen, "2026-01-01");
    assert_eq!(s.ground_truth.expected.unwrap().chain_action, "resolved");
    assert_eq!(
        s.ground_truth.expected_detection.unwrap().must_not_fire,
        ["new-actor"]
    );
    assert_eq!(s.case.connector_tools[0].returns["rows"], 2);
    assert_eq!(s.case.actor_chain[0].target, "db");
    assert_eq!(s.info.provenance, "captured");
    // The baseline's unknown keys are kept for detectors, as written.
    assert_eq!(b.extra["hr_onboarding"]["alice"], "2026-01-01");
    assert_eq!(b.known_entities.extra["approved_vendors"][0], "acme");
}

proptest::proptest! {
    /// Any extra key with any scalar or flow value in `baseline` and `known_entities`
    /// is kept beside the named keys, which still read as before; any text there
    /// parses or fails with an error, never a panic.
    #[test]
    fn baseline_extra_keys_are_kept(
        key in "[a-z][a-z_]{0,15}",
        value in proptest::prop_oneof![
            "[a-zA-Z0-9 .:-]{0,20}",
            "\\[[a-z0-9, ]{0,20}\\]",
            "\\{[a-z]{1,5}: [a-z0-9]{0,5}\\}",
        ],
        noise in ".{0,40}",
    ) {
        let named = ["known_entities", "frequency_tables", "relationships", "actors", "sources", "actor_roles", "actor_hours"];
        proptest::prop_assume!(!named.contains(&key.as_str()));
        let text = format!(
            "id: P\nfinding: {{id: f}}\nbaseline:\n  known_entities:\n    actors: [alice]\n    {key}: {value}\n  frequency_tables: {{'a:b:alice': 3}}\n  {key}: {value}\n"
        );
        if let Ok(s) = parse(&text) {
            let b = s.case.baseline.unwrap();
            proptest::prop_assert_eq!(&b.known_entities.actors, &vec!["alice".to_string()]);
            proptest::prop_assert_eq!(b.frequency_tables["a:b:alice"], 3);
            proptest::prop_assert!(b.extra.contains_key(&key));
            proptest::prop_assert!(b.known_entities.extra.contains_key(&key));
        }
        let _ = parse(&format!("id: P\nfinding: {{id: f}}\nbaseline:\n  known_entities: {{actors: [a]}}\n  {key}: {noise}\n"));
    }
}

#[test]
fn full_baseline_shape() {
    let text = "\
id: B-1
finding: {id: f}
baseline:
  known_entities:
    sources: [github]
    actor_roles: {alice: ['admin:repo']}
    actor_hours: {alice: [9, 10, 11]}
  frequency_tables:
    'github:push:alice': 12
    'github:push:alice:3:morning': 4
    'github:push': 40
expected:
  investigate_must_use_tools: true
  min_investigate_iterations: 2
  min_investigation_quality: 3
  triage_action: escalate
  reasoning_must_not_mention: [benign]
";
    let s = parse(text).unwrap();
    let k = &s.case.baseline.as_ref().unwrap().known_entities;
    assert!(k.actors.is_empty());
    assert_eq!(k.actor_roles["alice"], ["admin:repo"]);
    assert_eq!(k.actor_hours["alice"], [9, 10, 11]);
    assert_eq!(s.case.baseline.as_ref().unwrap().frequency_tables.len(), 3);
    let x = s.ground_truth.expected.unwrap();
    assert!(x.investigate_must_use_tools);
    assert_eq!(
        (x.min_investigate_iterations, x.min_investigation_quality),
        (2, 3)
    );
    assert_eq!(x.triage_action, "escalate");
    assert_eq!(x.reasoning_must_not_mention, ["benign"]);
}

fn rejects(text: &str, field: &str, line: u32, needle: &str) {
    let e = parse(text).expect_err("should be rejected");
    assert_eq!(e.field, field, "{e}");
    assert_eq!(e.loc.line, line, "{e}");
    assert!(e.message.contains(needle), "{e}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("exams/scenarios/x/s.yaml:{line}:")),
        "{shown}"
    );
    assert!(shown.contains(&format!(": {field}: ")), "{shown}");
}

#[test]
fn rule_id_non_empty() {
    rejects("finding: {id: f}\n", "id", 1, "missing or empty");
    rejects(
        "tags: [a]\nid: ''\nfinding: {id: f}\n",
        "id",
        2,
        "missing or empty",
    );
    rejects(
        "tags: [a]\nid: ~\nfinding: {id: f}\n",
        "id",
        2,
        "missing or empty",
    );
    rejects(
        "tags: [a]\nid: '  '\nfinding: {id: f}\n",
        "id",
        2,
        "missing or empty",
    );
}

#[test]
fn rule_finding_present() {
    rejects("id: s\n", "finding", 1, "missing");
    rejects("id: s\nfinding: ~\n", "finding", 2, "null");
    rejects("id: s\nfinding:\n", "finding", 2, "null");
    // An empty mapping is present (as in mallcop).
    assert!(parse("id: s\nfinding: {}\n").is_ok());
}

#[test]
fn rule_every_event_has_an_id() {
    let base = "id: s\nfinding: {id: f}\nevents:\n  - id: e1\n    source: aws\n";
    assert!(parse(base).is_ok());
    rejects(
        &format!("{base}  - source: aws\n"),
        "events[1].id",
        6,
        "non-empty id",
    );
    rejects(
        &format!("{base}  - id: ''\n"),
        "events[1].id",
        6,
        "non-empty id",
    );
    rejects(&format!("{base}  - ~\n"), "events[1].id", 6, "non-empty id");
    // A null events list is an empty one.
    assert!(parse("id: s\nfinding: {}\nevents: ~\n").is_ok());
}

#[test]
fn rule_present_baseline_needs_a_known_actor_or_source() {
    let head = "id: s\nfinding: {id: f}\n";
    rejects(
        &format!("{head}baseline:\n  frequency_tables: {{a: 1}}\n"),
        "baseline.known_entities",
        4,
        "at least one",
    );
    rejects(
        &format!("{head}baseline:\n  known_entities: {{actors: [], sources: []}}\n"),
        "baseline.known_entities",
        4,
        "at least one",
    );
    rejects(
        &format!("{head}baseline: {{}}\n"),
        "baseline.known_entities",
        3,
        "at least one",
    );
    assert!(
        parse(&format!(
            "{head}baseline:\n  known_entities: {{sources: [aws]}}\n"
        ))
        .is_ok()
    );
    assert!(
        parse(&format!(
            "{head}baseline:\n  known_entities: {{actors: [a]}}\n"
        ))
        .is_ok()
    );
    assert!(parse(&format!("{head}baseline: ~\n")).is_ok());
}

#[test]
fn wrong_shapes_are_located_errors() {
    rejects("id: s\nfinding: {id: f}\ntags: {a: 1}\n", "tags", 3, "");
    rejects(
        "id: s\nfinding: {id: f}\nbaseline:\n  known_entities:\n    actors: [a]\n    actor_hours: {a: [nine]}\n",
        "baseline.known_entities.actor_hours.a[0]",
        6,
        "",
    );
    rejects(
        "id: s\nfinding:\n  id: f\n  metadata: [1, 2]\n",
        "finding.metadata",
        4,
        "",
    );
}

//! End-to-end mode (spec §9): raw events → fleet → findings → triage cascade →
//! resolutions, per scenario in an isolated store, with a detect-fidelity verdict.
//!
//! Why this exists: the agent exam hands the cascade a hand-written finding; in
//! production the finding comes from the detectors. This measures the whole pipeline
//! and, separately, how faithfully the fleet reproduces the finding the scenario was
//! written around. The fidelity block is reported on its own and never folded into
//! the agent pass rate.
//!
//! Per scenario (expected family = `finding.detector`, expected actor =
//! `finding.metadata.actor`, both compared case-insensitively):
//! - **DETECT-MISS**: the fleet emitted no finding. End-to-end pass only when the
//!   expected chain action is `resolved` (nothing reached triage, nothing escalated).
//! - **REPRODUCED**: some finding has the expected family and actor; the terminal
//!   action of the first such finding is graded like chain_action.
//! - **MISMATCH**: findings, none matching. Expected escalate passes when any of the
//!   expected actor's findings escalated; expected resolve passes when none did.
//!
//! Every finding of the scenario is triaged (its resolution stored in the scenario's
//! own store, nothing shared between scenarios).

use super::fleet::{Fleet, Input, Member};
use crate::grade::{AxisResult, chain_axis, is_attack};
use crate::load::LoadedScenario;
use crate::projection::{self, Finding, value_text};
use crate::scenario::Scenario;
use crate::tools::Toolbox;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// Fidelity of one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Fidelity {
    #[serde(rename = "REPRODUCED")]
    Reproduced,
    #[serde(rename = "MISMATCH")]
    Mismatch,
    #[serde(rename = "DETECT-MISS")]
    DetectMiss,
}

/// One stored resolution.
#[derive(Debug, Clone, Serialize)]
pub struct Resolution {
    pub finding_id: String,
    pub family: String,
    pub actor: String,
    /// `resolved` or `escalated`.
    pub action: String,
}

/// One end-to-end row.
#[derive(Debug, Clone, Serialize)]
pub struct E2eRow {
    pub id: String,
    pub expected_family: String,
    pub expected_actor: String,
    pub expected_chain_action: String,
    pub fidelity: Fidelity,
    pub passed: bool,
    pub findings: usize,
    pub resolutions: Vec<Resolution>,
    /// Detector failures on this scenario (`detector: kind`).
    pub detector_errors: Vec<String>,
}

/// The `detect_fidelity` block.
#[derive(Debug, Clone, Serialize)]
pub struct DetectFidelity {
    pub total: usize,
    pub reproduced: usize,
    pub mismatch: usize,
    pub detect_miss: usize,
    pub reproduction_rate: f64,
    pub end_to_end_pass_rate: f64,
    pub e2e_recall: f64,
    pub e2e_precision: f64,
    pub rows: Vec<E2eRow>,
}

fn expected(s: &Scenario) -> (String, String, String) {
    let f = &s.case.finding;
    let actor = f.metadata.get("actor").map(value_text).unwrap_or_default();
    let chain = s
        .ground_truth
        .expected
        .as_ref()
        .map(|e| e.chain_action.clone())
        .unwrap_or_default();
    (f.detector.trim().to_lowercase(), actor, chain)
}

/// Classifies one scenario from its stored resolutions.
pub fn classify(
    s: &Scenario,
    resolutions: Vec<Resolution>,
    detector_errors: Vec<String>,
) -> E2eRow {
    let (family, actor, chain) = expected(s);
    let escalated = |r: &Resolution| r.action.eq_ignore_ascii_case("escalated");
    let matching = resolutions
        .iter()
        .find(|r| r.family.eq_ignore_ascii_case(&family) && r.actor.eq_ignore_ascii_case(&actor));
    let (fidelity, passed) = if resolutions.is_empty() {
        (
            Fidelity::DetectMiss,
            chain.trim().eq_ignore_ascii_case("resolved"),
        )
    } else if let Some(r) = matching {
        (
            Fidelity::Reproduced,
            chain_axis(&r.action, &chain) == AxisResult::Pass,
        )
    } else {
        let actor_escalated = resolutions
            .iter()
            .any(|r| r.actor.eq_ignore_ascii_case(&actor) && escalated(r));
        let pass = if is_attack(&chain) {
            actor_escalated
        } else {
            chain.trim().eq_ignore_ascii_case("resolved") && !actor_escalated
        };
        (Fidelity::Mismatch, pass)
    };
    E2eRow {
        id: s.id.clone(),
        expected_family: family,
        expected_actor: actor,
        expected_chain_action: chain,
        fidelity,
        passed,
        findings: resolutions.len(),
        resolutions,
        detector_errors,
    }
}

/// Aggregates rows into the fidelity block (empty denominators → 1.0).
pub fn summarize(rows: Vec<E2eRow>) -> DetectFidelity {
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let count = |f: Fidelity| rows.iter().filter(|r| r.fidelity == f).count();
    let attacks: Vec<&E2eRow> = rows
        .iter()
        .filter(|r| is_attack(&r.expected_chain_action))
        .collect();
    let benign: Vec<&E2eRow> = rows
        .iter()
        .filter(|r| {
            r.expected_chain_action
                .trim()
                .eq_ignore_ascii_case("resolved")
        })
        .collect();
    DetectFidelity {
        total: rows.len(),
        reproduced: count(Fidelity::Reproduced),
        mismatch: count(Fidelity::Mismatch),
        detect_miss: count(Fidelity::DetectMiss),
        reproduction_rate: ratio(count(Fidelity::Reproduced), rows.len()),
        end_to_end_pass_rate: ratio(rows.iter().filter(|r| r.passed).count(), rows.len()),
        e2e_recall: ratio(attacks.iter().filter(|r| r.passed).count(), attacks.len()),
        e2e_precision: ratio(benign.iter().filter(|r| r.passed).count(), benign.len()),
        rows,
    }
}

/// The toolbox the cascade sees for one fleet finding: the scenario's projected
/// telemetry with the finding in place of the hand-written one.
pub fn toolbox_for(s: &Scenario, finding: &Finding) -> Toolbox {
    let p = projection::project(s);
    let mut finding_metadata = vec![
        ("actor".to_string(), finding.actor.clone()),
        ("detector".to_string(), finding.family()),
    ];
    if let Some(o) = finding.evidence.as_object() {
        finding_metadata.extend(o.iter().map(|(k, v)| (k.clone(), value_text(v))));
    }
    Toolbox {
        events: p.events,
        baseline: p.baseline,
        finding: finding.clone(),
        finding_metadata,
        rules: Vec::new(),
    }
}

/// Runs end-to-end mode: the fleet over each scenario, then `triage` over each of its
/// findings (returning the terminal action), then classification.
pub fn run<F>(
    scenarios: &[&LoadedScenario],
    members: &[Member],
    timeout: Duration,
    triage: F,
) -> DetectFidelity
where
    F: Fn(&Scenario, &Toolbox) -> String,
{
    let fleet = Fleet::new(members.to_vec(), timeout);
    let rows = scenarios
        .iter()
        .map(|ls| {
            let s = &ls.scenario;
            let input = Arc::new(Input {
                events: projection::events(s),
                baseline: projection::Baseline::from_scenario(s.case.baseline.as_ref()),
            });
            let runs = fleet.run(input);
            let errors = runs
                .iter()
                .filter(|r| !r.status.is_ok())
                .map(|r| format!("{}: {}", r.detector, r.status.kind()))
                .collect();
            // The scenario's own store: its findings and their resolutions only.
            let store: Vec<Resolution> = runs
                .iter()
                .flat_map(|r| r.findings.iter())
                .map(|f| Resolution {
                    finding_id: f.id.clone(),
                    family: f.family(),
                    actor: f.actor.clone(),
                    action: triage(s, &toolbox_for(s, f)),
                })
                .collect();
            classify(s, store, errors)
        })
        .collect();
    summarize(rows)
}

/// Triage with the golden backend (spec §6): every tier answers from the scenario's
/// expected outcome. A pipeline check, not an accuracy figure.
pub fn golden_triage(
    rt: &tokio::runtime::Runtime,
    opts: &crate::cascade::CascadeOptions,
) -> impl Fn(&Scenario, &Toolbox) -> String {
    move |s: &Scenario, tb: &Toolbox| {
        let model = Arc::new(crate::golden::GoldenModel::new(
            crate::golden::GoldenScript::for_scenario(s),
        ));
        let models = crate::cascade::TierModels::uniform("golden", model);
        rt.block_on(crate::cascade::run_cascade(tb, &models, opts))
            .terminal_action
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::parse_scenario;
    use std::path::Path;

    fn scenario(chain: &str, events: &str) -> Scenario {
        let text = format!(
            "id: s\nfinding: {{id: f, detector: Git-Oops, metadata: {{actor: Dev}}}}\nevents:\n{events}\nbaseline:\n  known_entities: {{actors: [dev, other]}}\nexpected: {{chain_action: {chain}}}\n"
        );
        parse_scenario(&text, Path::new("s.yaml")).unwrap()
    }

    const FORCE_PUSH: &str = "  - {id: e1, timestamp: '2026-05-04T10:00:00Z', source: github, event_type: push, actor: dev, metadata: {ref: refs/heads/main, forced: true}}";
    const OTHER_ACTOR_PUSH: &str = "  - {id: e1, timestamp: '2026-05-04T10:00:00Z', source: github, event_type: push, actor: other, metadata: {ref: refs/heads/main, forced: true}}";
    const WRONG_FAMILY: &str = "  - {id: e1, timestamp: '2026-05-04T10:00:00Z', source: okta, event_type: login, actor: dev}\n  - {id: e2, timestamp: '2026-05-04T10:00:00Z', source: okta, event_type: x, actor: stranger}";
    const QUIET: &str = "  - {id: e1, timestamp: '2026-05-04T10:00:00Z', source: github, event_type: push, actor: dev, metadata: {ref: refs/heads/main}}";

    fn e2e(s: &Scenario, verdict: &'static str) -> E2eRow {
        let ls = LoadedScenario {
            relpath: "s.yaml".into(),
            path: "s.yaml".into(),
            sha256: String::new(),
            extra: false,
            scenario: s.clone(),
        };
        let members: Vec<Member> = crate::detectors::builtin()
            .into_iter()
            .map(Member::Builtin)
            .collect();
        let f = run(&[&ls], &members, Duration::from_secs(5), |_, _| {
            verdict.to_string()
        });
        f.rows.into_iter().next().unwrap()
    }

    #[test]
    fn reproduced_is_graded_like_chain_action() {
        let s = scenario("escalated", FORCE_PUSH);
        let r = e2e(&s, "escalated");
        assert_eq!(r.fidelity, Fidelity::Reproduced);
        assert!(r.passed);
        let r = e2e(&s, "resolved");
        assert_eq!(r.fidelity, Fidelity::Reproduced);
        assert!(!r.passed);
    }

    #[test]
    fn mismatch_passes_on_the_expected_actors_resolutions() {
        // Findings exist (new-actor on `stranger`), none is git-oops for dev.
        let s = scenario("escalated", WRONG_FAMILY);
        let r = e2e(&s, "escalated");
        assert_eq!(r.fidelity, Fidelity::Mismatch);
        assert!(
            !r.passed,
            "dev has no finding, so none of dev's findings escalated"
        );
        // git-oops fires, but for another actor: still a mismatch.
        let s = scenario("escalated", OTHER_ACTOR_PUSH);
        assert_eq!(e2e(&s, "escalated").fidelity, Fidelity::Mismatch);
        let s = scenario("resolved", WRONG_FAMILY);
        let r = e2e(&s, "escalated");
        assert_eq!(r.fidelity, Fidelity::Mismatch);
        assert!(
            r.passed,
            "expected resolve: none of dev's findings escalated"
        );
        // A mismatch where the expected actor's finding escalates.
        let rs = vec![Resolution {
            finding_id: "x".into(),
            family: "new-actor".into(),
            actor: "DEV".into(),
            action: "escalated".into(),
        }];
        let row = classify(&scenario("escalated", QUIET), rs.clone(), vec![]);
        assert_eq!((row.fidelity, row.passed), (Fidelity::Mismatch, true));
        let row = classify(&scenario("resolved", QUIET), rs, vec![]);
        assert_eq!((row.fidelity, row.passed), (Fidelity::Mismatch, false));
    }

    #[test]
    fn detect_miss_passes_only_when_resolve_was_expected() {
        let r = e2e(&scenario("resolved", QUIET), "escalated");
        assert_eq!((r.fidelity, r.passed), (Fidelity::DetectMiss, true));
        let r = e2e(&scenario("escalated", QUIET), "escalated");
        assert_eq!((r.fidelity, r.passed), (Fidelity::DetectMiss, false));
    }

    #[test]
    fn summary_rates() {
        let rows = vec![
            e2e(&scenario("escalated", FORCE_PUSH), "escalated"),
            e2e(&scenario("escalated", QUIET), "escalated"),
            e2e(&scenario("resolved", QUIET), "escalated"),
            e2e(&scenario("resolved", WRONG_FAMILY), "escalated"),
        ];
        let f = summarize(rows);
        assert_eq!(
            (f.total, f.reproduced, f.mismatch, f.detect_miss),
            (4, 1, 1, 2)
        );
        assert_eq!(f.reproduction_rate, 0.25);
        assert_eq!(f.end_to_end_pass_rate, 0.75);
        assert_eq!(f.e2e_recall, 0.5);
        assert_eq!(f.e2e_precision, 1.0);
    }

    #[test]
    fn golden_end_to_end_on_the_reference_corpus() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exams/scenarios");
        let corpus = crate::load::load_corpus(&root, None).unwrap();
        let refs: Vec<&LoadedScenario> = corpus.scenarios.iter().collect();
        let members: Vec<Member> = crate::detectors::builtin()
            .into_iter()
            .map(Member::Builtin)
            .collect();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let opts = crate::cascade::CascadeOptions::default();
        let f = run(
            &refs,
            &members,
            Duration::from_secs(10),
            golden_triage(&rt, &opts),
        );
        assert_eq!(f.total, 102);
        // The 27 rows without a must_fire family produce no finding: DETECT-MISS, all
        // expected resolved, so all end-to-end passes.
        assert_eq!(f.detect_miss, 27);
        assert!(
            f.rows
                .iter()
                .filter(|r| r.fidelity == Fidelity::DetectMiss)
                .all(|r| r.passed)
        );
        let not_reproduced: Vec<&str> = f
            .rows
            .iter()
            .filter(|r| r.fidelity != Fidelity::Reproduced)
            .map(|r| r.id.as_str())
            .collect();
        eprintln!(
            "e2e golden: reproduced {}/{}, pass rate {:.3}, recall {:.3}, precision {:.3}; not reproduced: {not_reproduced:?}",
            f.reproduced, f.total, f.end_to_end_pass_rate, f.e2e_recall, f.e2e_precision
        );
        assert_eq!(f.e2e_recall, 1.0);
    }
}

//! End-to-end mode: raw events → fleet → findings → triage cascade →
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
//! - **DETECTOR-ERROR** (beyond the spec): a detector panicked, timed out or failed on
//!   the scenario and the expected finding was not reproduced, so the store is
//!   incomplete and neither MISMATCH nor DETECT-MISS can be told apart from the error.
//!   Errors are their own outcome: such rows leave every rate's denominator.
//!
//! A row's end-to-end `passed` is `null` (ungraded, with the reason) when it is a
//! DETECTOR-ERROR, when a cascade its grade depends on hit a model or tool error (the
//! cascade escalated fail-safe, which says nothing about the model), or when the
//! scenario has no expected chain action. A rate whose denominator is empty is `null`
//! with its reason in `na_reasons` — never 0 and never a made-up 1.0.
//!
//! Every finding of the scenario is triaged (its resolution stored in the scenario's
//! own store, nothing shared between scenarios).

use crate::grade::chain_axis;
use crate::tools::Toolbox;
use gauntlet_corpus::load::LoadedScenario;
use gauntlet_corpus::projection::{self, Finding, value_text};
use gauntlet_corpus::scenario::Scenario;
use gauntlet_detect::fleet::{Fleet, Input, Member};
use gauntlet_results::exam::{AxisResult, is_attack};
use serde::Serialize;
use std::collections::BTreeMap;
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
    #[serde(rename = "DETECTOR-ERROR")]
    DetectorError,
}

impl Fidelity {
    /// The report label (`REPRODUCED`, `MISMATCH`, `DETECT-MISS`, `DETECTOR-ERROR`).
    pub fn label(self) -> &'static str {
        match self {
            Fidelity::Reproduced => "REPRODUCED",
            Fidelity::Mismatch => "MISMATCH",
            Fidelity::DetectMiss => "DETECT-MISS",
            Fidelity::DetectorError => "DETECTOR-ERROR",
        }
    }
}

/// What the triage cascade did with one finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triaged {
    /// `resolved` or `escalated`.
    pub action: String,
    pub model_calls: usize,
    /// Model or tool errors during the cascade (it escalated fail-safe).
    pub errors: usize,
}

impl Triaged {
    /// From a cascade outcome.
    /// An unparseable reply that made the cascade escalate by default counts as an
    /// error too (the model did not decide).
    pub fn from_outcome(o: &crate::cascade::CascadeOutcome) -> Triaged {
        let failed = o.transcript.iter().filter(|e| !e.err.is_empty()).count();
        Triaged {
            action: o.terminal_action.clone(),
            model_calls: o.transcript.len(),
            errors: failed.max(usize::from(o.fail_safe.is_some())),
        }
    }
}

/// One stored resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resolution {
    pub finding_id: String,
    pub family: String,
    pub actor: String,
    /// `resolved` or `escalated`.
    pub action: String,
    pub model_calls: usize,
    /// Model or tool errors in this finding's cascade.
    pub errors: usize,
}

impl Resolution {
    /// The stored resolution of `finding` after triage.
    pub fn new(finding: &Finding, t: Triaged) -> Resolution {
        Resolution {
            finding_id: finding.id.clone(),
            family: finding.family(),
            actor: finding.actor.clone(),
            action: t.action,
            model_calls: t.model_calls,
            errors: t.errors,
        }
    }

    fn escalated(&self) -> bool {
        self.action.trim().eq_ignore_ascii_case("escalated")
    }
}

/// One end-to-end row.
#[derive(Debug, Clone, Serialize)]
pub struct E2eRow {
    pub id: String,
    pub expected_family: String,
    pub expected_actor: String,
    pub expected_chain_action: String,
    pub fidelity: Fidelity,
    /// End-to-end pass; `null` when ungraded (see `ungraded`).
    pub passed: Option<bool>,
    /// Why `passed` is `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ungraded: Option<String>,
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
    /// Rows classified DETECTOR-ERROR (out of every rate).
    pub detector_error: usize,
    /// Rows whose end-to-end pass is `null` (errors or no expectation).
    pub ungraded: usize,
    /// REPRODUCED ÷ rows without a detector error.
    pub reproduction_rate: Option<f64>,
    /// Passed ÷ graded rows.
    pub end_to_end_pass_rate: Option<f64>,
    /// Passed ÷ graded attack rows (expected escalated / escalate-or-stronger).
    pub e2e_recall: Option<f64>,
    /// Passed ÷ graded benign rows (expected resolved).
    pub e2e_precision: Option<f64>,
    /// Why a rate is `null`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub na_reasons: BTreeMap<String, String>,
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

fn is_benign(chain: &str) -> bool {
    chain.trim().eq_ignore_ascii_case("resolved")
}

/// Why an end-to-end row is not graded (its `ungraded`).
#[derive(Debug, thiserror::Error)]
enum Ungraded {
    #[error("{0} model/tool error(s) in a cascade this row depends on")]
    TriageErrors(usize),
    #[error("detector failure: {}", .0.join(", "))]
    DetectorFailure(Vec<String>),
    #[error("the scenario has no expected chain_action")]
    NoExpectedAction,
}

/// Classifies one scenario from its stored resolutions and detector failures.
pub fn classify(
    s: &Scenario,
    resolutions: Vec<Resolution>,
    detector_errors: Vec<String>,
) -> E2eRow {
    let (family, actor, chain) = expected(s);
    let matching = resolutions
        .iter()
        .find(|r| r.family.eq_ignore_ascii_case(&family) && r.actor.eq_ignore_ascii_case(&actor));
    let (fidelity, graded): (Fidelity, Result<bool, Ungraded>) = if let Some(r) = matching {
        let g = if r.errors > 0 {
            Err(Ungraded::TriageErrors(r.errors))
        } else {
            Ok(chain_axis(&r.action, &chain) == AxisResult::Pass)
        };
        (Fidelity::Reproduced, g)
    } else if !detector_errors.is_empty() {
        (
            Fidelity::DetectorError,
            Err(Ungraded::DetectorFailure(detector_errors.clone())),
        )
    } else if resolutions.is_empty() {
        (Fidelity::DetectMiss, Ok(is_benign(&chain)))
    } else {
        let of_actor: Vec<&Resolution> = resolutions
            .iter()
            .filter(|r| r.actor.eq_ignore_ascii_case(&actor))
            .collect();
        let errors: usize = of_actor.iter().map(|r| r.errors).sum();
        let actor_escalated = of_actor.iter().any(|r| r.escalated());
        let g = if errors > 0 {
            Err(Ungraded::TriageErrors(errors))
        } else if is_attack(&chain) {
            Ok(actor_escalated)
        } else {
            Ok(is_benign(&chain) && !actor_escalated)
        };
        (Fidelity::Mismatch, g)
    };
    let graded = match graded {
        Ok(_) if chain.trim().is_empty() => Err(Ungraded::NoExpectedAction),
        g => g,
    };
    let (passed, ungraded) = match graded {
        Ok(p) => (Some(p), None),
        Err(why) => (None, Some(why.to_string())),
    };
    E2eRow {
        id: s.id.clone(),
        expected_family: family,
        expected_actor: actor,
        expected_chain_action: chain,
        fidelity,
        passed,
        ungraded,
        findings: resolutions.len(),
        resolutions,
        detector_errors,
    }
}

/// Aggregates rows into the fidelity block.
pub fn summarize(rows: Vec<E2eRow>) -> DetectFidelity {
    let mut na_reasons = BTreeMap::new();
    let mut ratio = |name: &str, a: usize, b: usize, why: &str| {
        if b == 0 {
            na_reasons.insert(name.to_string(), why.to_string());
            None
        } else {
            Some(a as f64 / b as f64)
        }
    };
    let count = |f: Fidelity| rows.iter().filter(|r| r.fidelity == f).count();
    let graded: Vec<&E2eRow> = rows.iter().filter(|r| r.passed.is_some()).collect();
    let passed = |v: &[&E2eRow]| v.iter().filter(|r| r.passed == Some(true)).count();
    let attacks: Vec<&E2eRow> = graded
        .iter()
        .copied()
        .filter(|r| is_attack(&r.expected_chain_action))
        .collect();
    let benign: Vec<&E2eRow> = graded
        .iter()
        .copied()
        .filter(|r| is_benign(&r.expected_chain_action))
        .collect();
    let detector_error = count(Fidelity::DetectorError);
    let reproduction_rate = ratio(
        "reproduction_rate",
        count(Fidelity::Reproduced),
        rows.len() - detector_error,
        "no scenario ran without a detector failure",
    );
    let end_to_end_pass_rate = ratio(
        "end_to_end_pass_rate",
        passed(&graded),
        graded.len(),
        "no graded scenario (every row errored or has no expected chain_action)",
    );
    let e2e_recall = ratio(
        "e2e_recall",
        passed(&attacks),
        attacks.len(),
        "no graded attack scenario (expected escalated)",
    );
    let e2e_precision = ratio(
        "e2e_precision",
        passed(&benign),
        benign.len(),
        "no graded benign scenario (expected resolved)",
    );
    DetectFidelity {
        total: rows.len(),
        reproduced: count(Fidelity::Reproduced),
        mismatch: count(Fidelity::Mismatch),
        detect_miss: count(Fidelity::DetectMiss),
        detector_error,
        ungraded: rows.len() - graded.len(),
        reproduction_rate,
        end_to_end_pass_rate,
        e2e_recall,
        e2e_precision,
        na_reasons,
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

/// One scenario through the fleet: every finding, in fleet (name) order, and the
/// detector failures (`detector: kind`).
pub fn detect(fleet: &Fleet, s: &Scenario) -> (Vec<Finding>, Vec<String>) {
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
    let findings = runs.into_iter().flat_map(|r| r.findings).collect();
    (findings, errors)
}

/// Runs end-to-end mode synchronously: the fleet over each scenario, then `triage`
/// over each of its findings, then classification. (`gauntlet exam --mode e2e` drives
/// the same pieces concurrently, with any backend.)
pub fn run<F>(
    scenarios: &[&LoadedScenario],
    members: &[Member],
    timeout: Duration,
    triage: F,
) -> DetectFidelity
where
    F: Fn(&Scenario, &Toolbox) -> Triaged,
{
    let fleet = Fleet::new(members.to_vec(), timeout);
    let rows = scenarios
        .iter()
        .map(|ls| {
            let s = &ls.scenario;
            let (findings, errors) = detect(&fleet, s);
            // The scenario's own store: its findings and their resolutions only.
            let store: Vec<Resolution> = findings
                .iter()
                .map(|f| Resolution::new(f, triage(s, &toolbox_for(s, f))))
                .collect();
            classify(s, store, errors)
        })
        .collect();
    summarize(rows)
}

/// Triage with the golden backend: every tier answers from the scenario's
/// expected outcome. A pipeline check, not an accuracy figure.
pub fn golden_triage(
    rt: &tokio::runtime::Runtime,
    opts: &crate::cascade::CascadeOptions,
) -> impl Fn(&Scenario, &Toolbox) -> Triaged {
    move |s: &Scenario, tb: &Toolbox| {
        let model = Arc::new(crate::golden::GoldenModel::new(
            crate::golden::GoldenScript::for_scenario(s),
        ));
        let models = crate::cascade::TierModels::uniform("golden", model);
        Triaged::from_outcome(&rt.block_on(crate::cascade::run_cascade(tb, &models, opts)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_corpus::scenario::parse_scenario;
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
        let members: Vec<Member> = gauntlet_detect::builtin()
            .into_iter()
            .map(Member::Builtin)
            .collect();
        let f = run(&[&ls], &members, Duration::from_secs(5), |_, _| t(verdict));
        f.rows.into_iter().next().unwrap()
    }

    fn t(action: &str) -> Triaged {
        Triaged {
            action: action.into(),
            model_calls: 1,
            errors: 0,
        }
    }

    fn res(family: &str, actor: &str, action: &str, errors: usize) -> Resolution {
        Resolution {
            finding_id: "x".into(),
            family: family.into(),
            actor: actor.into(),
            action: action.into(),
            model_calls: 1,
            errors,
        }
    }

    #[test]
    fn reproduced_is_graded_like_chain_action() {
        let s = scenario("escalated", FORCE_PUSH);
        let r = e2e(&s, "escalated");
        assert_eq!(r.fidelity, Fidelity::Reproduced);
        assert_eq!(r.passed, Some(true));
        let r = e2e(&s, "resolved");
        assert_eq!(r.fidelity, Fidelity::Reproduced);
        assert_eq!(r.passed, Some(false));
    }

    #[test]
    fn mismatch_passes_on_the_expected_actors_resolutions() {
        // Findings exist (new-actor on `stranger`), none is git-oops for dev.
        let s = scenario("escalated", WRONG_FAMILY);
        let r = e2e(&s, "escalated");
        assert_eq!(r.fidelity, Fidelity::Mismatch);
        assert_eq!(
            r.passed,
            Some(false),
            "dev has no finding, so none of dev's findings escalated"
        );
        // git-oops fires, but for another actor: still a mismatch.
        let s = scenario("escalated", OTHER_ACTOR_PUSH);
        assert_eq!(e2e(&s, "escalated").fidelity, Fidelity::Mismatch);
        let s = scenario("resolved", WRONG_FAMILY);
        let r = e2e(&s, "escalated");
        assert_eq!(r.fidelity, Fidelity::Mismatch);
        assert_eq!(
            r.passed,
            Some(true),
            "expected resolve: none of dev's findings escalated"
        );
        // A mismatch where the expected actor's finding escalates.
        let rs = vec![res("new-actor", "DEV", "escalated", 0)];
        let row = classify(&scenario("escalated", QUIET), rs.clone(), vec![]);
        assert_eq!((row.fidelity, row.passed), (Fidelity::Mismatch, Some(true)));
        let row = classify(&scenario("resolved", QUIET), rs, vec![]);
        assert_eq!(
            (row.fidelity, row.passed),
            (Fidelity::Mismatch, Some(false))
        );
    }

    #[test]
    fn detect_miss_passes_only_when_resolve_was_expected() {
        let r = e2e(&scenario("resolved", QUIET), "escalated");
        assert_eq!((r.fidelity, r.passed), (Fidelity::DetectMiss, Some(true)));
        let r = e2e(&scenario("escalated", QUIET), "escalated");
        assert_eq!((r.fidelity, r.passed), (Fidelity::DetectMiss, Some(false)));
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
        assert_eq!(f.reproduction_rate, Some(0.25));
        assert_eq!(f.end_to_end_pass_rate, Some(0.75));
        assert_eq!(f.e2e_recall, Some(0.5));
        assert_eq!(f.e2e_precision, Some(1.0));
        assert!(f.na_reasons.is_empty());
    }

    #[test]
    fn detector_failures_are_their_own_outcome() {
        // The expected finding is missing and a detector failed: not a DETECT-MISS.
        let s = scenario("escalated", QUIET);
        let row = classify(&s, vec![], vec!["git-oops: panic".into()]);
        assert_eq!(row.fidelity, Fidelity::DetectorError);
        assert_eq!(row.passed, None);
        assert!(row.ungraded.as_deref().unwrap().contains("git-oops: panic"));
        // Nor a MISMATCH when other findings exist.
        let row = classify(
            &s,
            vec![res("new-actor", "dev", "escalated", 0)],
            vec!["x: timeout".into()],
        );
        assert_eq!((row.fidelity, row.passed), (Fidelity::DetectorError, None));
        // A reproduced finding stands despite an unrelated failure.
        let row = classify(
            &s,
            vec![res("git-oops", "dev", "escalated", 0)],
            vec!["x: timeout".into()],
        );
        assert_eq!(
            (row.fidelity, row.passed),
            (Fidelity::Reproduced, Some(true))
        );
        // Error rows leave every denominator; an empty denominator is N/A, not 0.
        let f = summarize(vec![classify(&s, vec![], vec!["x: failed".into()])]);
        assert_eq!((f.detector_error, f.ungraded), (1, 1));
        assert_eq!(f.reproduction_rate, None);
        assert_eq!(f.end_to_end_pass_rate, None);
        assert_eq!(f.e2e_recall, None);
        assert_eq!(f.e2e_precision, None);
        assert_eq!(f.na_reasons.len(), 4);
        let j = serde_json::to_value(&f).unwrap();
        assert!(j["e2e_recall"].is_null());
        assert_eq!(j["rows"][0]["fidelity"], "DETECTOR-ERROR");
    }

    /// Panics on every scenario.
    struct Boom;
    impl gauntlet_detect::Detector for Boom {
        fn name(&self) -> &str {
            "test-boom"
        }
        fn detect(
            &self,
            _: &[gauntlet_corpus::projection::Event],
            _: &projection::Baseline,
        ) -> Vec<Finding> {
            panic!("exploded on purpose")
        }
    }

    #[test]
    fn a_panicking_detector_in_the_fleet_yields_detector_error_rows() {
        let mut members: Vec<Member> = gauntlet_detect::builtin()
            .into_iter()
            .map(Member::Builtin)
            .collect();
        members.push(Member::Builtin(Arc::new(Boom)));
        let quiet = LoadedScenario {
            relpath: "q.yaml".into(),
            path: "q.yaml".into(),
            sha256: String::new(),
            extra: false,
            scenario: scenario("escalated", QUIET),
        };
        let push = LoadedScenario {
            scenario: Scenario {
                id: "p".into(),
                ..scenario("escalated", FORCE_PUSH)
            },
            ..quiet.clone()
        };
        let f = run(
            &[&quiet, &push],
            &members,
            Duration::from_secs(5),
            |_, _| t("escalated"),
        );
        // Quiet: the miss cannot be told from the failure.
        assert_eq!(f.rows[0].fidelity, Fidelity::DetectorError);
        assert_eq!(f.rows[0].passed, None);
        assert_eq!(f.rows[0].detector_errors, vec!["test-boom: panic"]);
        // The force push is still reproduced by git-oops, and graded.
        assert_eq!(f.rows[1].fidelity, Fidelity::Reproduced);
        assert_eq!(f.rows[1].passed, Some(true));
        assert_eq!((f.detector_error, f.ungraded), (1, 1));
        assert_eq!(f.reproduction_rate, Some(1.0));
        assert_eq!(f.e2e_recall, Some(1.0));
    }

    #[test]
    fn triage_errors_leave_the_row_ungraded() {
        // The matched finding's cascade hit a model error (it escalated fail-safe):
        // that escalation is not credited to the model.
        let s = scenario("escalated", QUIET);
        let row = classify(&s, vec![res("git-oops", "DEV", "escalated", 1)], vec![]);
        assert_eq!((row.fidelity, row.passed), (Fidelity::Reproduced, None));
        // A mismatch depends on the expected actor's findings only.
        let row = classify(
            &s,
            vec![
                res("new-actor", "dev", "escalated", 0),
                res("new-actor", "other", "resolved", 2),
            ],
            vec![],
        );
        assert_eq!((row.fidelity, row.passed), (Fidelity::Mismatch, Some(true)));
        let row = classify(&s, vec![res("new-actor", "dev", "escalated", 2)], vec![]);
        assert_eq!((row.fidelity, row.passed), (Fidelity::Mismatch, None));
        let f = summarize(vec![
            row,
            classify(&s, vec![res("git-oops", "dev", "escalated", 0)], vec![]),
        ]);
        assert_eq!(f.ungraded, 1);
        assert_eq!(f.e2e_recall, Some(1.0));
        assert_eq!(f.e2e_precision, None);
        assert!(f.na_reasons["e2e_precision"].contains("benign"));
    }

    #[test]
    fn golden_end_to_end_on_the_reference_corpus() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exams/scenarios");
        let corpus = gauntlet_corpus::load::load_corpus(&root, None).unwrap();
        let refs: Vec<&LoadedScenario> = corpus.scenarios.iter().collect();
        let members: Vec<Member> = gauntlet_detect::builtin()
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
        assert_eq!(f.total, 108);
        // The 31 rows without a must_fire family (UT-02 and IP-02 among them: their
        // events record the schedule that explains the hour) produce no finding:
        // DETECT-MISS, all expected resolved, so all end-to-end passes.
        assert_eq!(f.detect_miss, 31);
        assert!(
            f.rows
                .iter()
                .filter(|r| r.fidelity == Fidelity::DetectMiss)
                .all(|r| r.passed == Some(true))
        );
        let not_reproduced: Vec<&str> = f
            .rows
            .iter()
            .filter(|r| r.fidelity != Fidelity::Reproduced)
            .map(|r| r.id.as_str())
            .collect();
        eprintln!(
            "e2e golden: reproduced {}/{}, pass rate {:?}, recall {:?}, precision {:?}; not reproduced: {not_reproduced:?}",
            f.reproduced, f.total, f.end_to_end_pass_rate, f.e2e_recall, f.e2e_precision
        );
        assert_eq!(f.e2e_recall, Some(1.0));
        assert_eq!(f.end_to_end_pass_rate, Some(1.0));
        assert_eq!(f.detector_error, 0);
    }
}

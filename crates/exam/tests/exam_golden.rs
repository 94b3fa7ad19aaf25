//! The agent exam end to end: golden merge gate (in-process and over loopback HTTP),
//! the fault switch, floor routes, consensus, fail-safe escalation, artefacts, and that
//! ground truth never reaches a model.

use gauntlet_core::message::{ChatRequest, ChatResponse, Role};
use gauntlet_core::params::{ParamValue, Params, PluginSpec};
use gauntlet_corpus::load::{Corpus, load_corpus};
use gauntlet_exam::cascade::{CascadeOptions, Tier, TierModels, TranscriptEntry, run_cascade};
use gauntlet_exam::classifier;
use gauntlet_exam::exam::{Backend, ExamConfig, run_exam, write_artifacts};
use gauntlet_exam::tools::Toolbox;
use gauntlet_models::{BoxFuture, Model, ModelError};
use std::path::Path;
use std::sync::{Arc, Mutex};

fn corpus() -> Corpus {
    load_corpus(
        Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../exams/scenarios"
        )),
        None,
    )
    .expect("reference corpus verifies")
}

/// A pass's results: in memory, or read back from the files the exam put in place.
fn results(run: &gauntlet_results::exam::RunResult) -> Vec<gauntlet_results::exam::ScenarioResult> {
    let mut v = Vec::new();
    run.results.for_each(|x| v.push(x.clone())).unwrap();
    v
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn golden_passes_everything_over_three_passes_and_writes_artefacts() {
    let c = corpus();
    let dir = tempfile::tempdir().unwrap();
    let out = rt()
        .block_on(run_exam(&c, &ExamConfig::golden(), None, Some(dir.path())))
        .unwrap();
    // Artefacts: the scenario runs' files were written during the exam, staged until
    // the report is written.
    let staged = dir.path().join(gauntlet_exam::exam::STAGING);
    assert!(staged.join("run-2").is_dir());
    assert!(!dir.path().join("run-2").exists());
    assert!(!dir.path().join("report.json").exists());
    let n = write_artifacts(dir.path(), &out).unwrap();
    assert!(!staged.exists());
    assert_eq!(n, 3 * c.scenarios.len());
    let r = &out.report;
    assert_eq!(r.runs.len(), 3);
    for run in &r.runs {
        let failed: Vec<_> = results(run)
            .into_iter()
            .filter(|x| !x.pass)
            .map(|x| (x.scenario_id, x.terminal_action, x.terminal_reason))
            .collect();
        assert!(failed.is_empty(), "golden failures: {failed:#?}");
        assert_eq!(run.total, c.scenarios.len());
    }
    assert_eq!(r.median_pass_rate, Some(1.0));
    assert_eq!(r.median_recall_rate, Some(1.0));
    assert_eq!(r.median_precision_rate, Some(1.0));
    assert!(r.runs_within_band);
    // pass^N is over the model-decided scenarios: floor-routed ones (zero model calls)
    // are outside every rate and counted in `floor`.
    let floor_n = r.runs[0].floor;
    assert!(floor_n > 0);
    assert_eq!(r.pass_all_runs.scenarios, c.scenarios.len() - floor_n);
    assert_eq!(r.pass_all_runs.total, c.scenarios.len() - floor_n);
    assert_eq!(r.decided_by.floor, 3 * floor_n);
    assert!(r.note.contains("NOT AN ACCURACY NUMBER"));
    assert_eq!(r.model_errors, 0);
    // Every scenario passes; rubric misses (if any) are reported, not failed.
    let bad: usize = r
        .classifier
        .counts
        .iter()
        .filter(|(b, _)| *b != classifier::PASS && *b != classifier::R_RUBRIC)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(bad, 0, "{:?}", r.classifier.counts);

    // Floor-routed scenarios: zero calls, forced, still pass.
    let run = &r.runs[0];
    let all = results(run);
    let floor: Vec<_> = all.iter().filter(|x| x.force_escalated).collect();
    assert!(floor.len() >= 10, "{}", floor.len());
    for x in &floor {
        assert_eq!(x.model_calls, 0, "{}", x.scenario_id);
        assert!(x.route_id.starts_with("E-00"), "{}", x.scenario_id);
        assert!(x.pass);
    }
    // Non-floor scenarios did call the model, and resolved ones ran consensus voters.
    for x in all.iter().filter(|x| !x.force_escalated) {
        assert!(x.model_calls >= 2, "{}: {}", x.scenario_id, x.model_calls);
        if x.terminal_action == "resolved" {
            assert!(
                x.model_calls >= 4,
                "{}: consensus voters ran",
                x.scenario_id
            );
        }
    }

    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("report.json")).unwrap()).unwrap();
    for k in [
        "mode",
        "corpus_count",
        "corpus_sha256",
        "runs",
        "median_pass_rate",
        "noise_band_pp",
        "runs_within_band",
        "classifier",
        "median_recall_rate",
        "median_precision_rate",
        "note",
    ] {
        assert!(report.get(k).is_some(), "report.json lacks {k}");
    }
    for k in [
        "index",
        "results",
        "passed",
        "total",
        "pass_rate",
        "attacks",
        "attacks_passed",
        "recall_rate",
        "benigns",
        "benigns_passed",
        "precision_rate",
    ] {
        assert!(report["runs"][0].get(k).is_some(), "run lacks {k}");
    }
    assert_eq!(report["corpus_sha256"], c.digest);
    let cls: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("classifier.json")).unwrap())
            .unwrap();
    assert!(cls.get("counts").is_some() && cls.get("per_scenario").is_some());
    let some = all.iter().find(|x| !x.force_escalated).unwrap();
    let res: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(format!("run-0/{}.json", some.scenario_id))).unwrap(),
    )
    .unwrap();
    for k in [
        "scenario_id",
        "rel_path",
        "finding_id",
        "category",
        "difficulty",
        "terminal_action",
        "expected_chain_action",
        "terminal_reason",
        "force_escalated",
        "model_calls",
        "full_chain",
        "structural",
        "pass",
    ] {
        assert!(res.get(k).is_some(), "result lacks {k}");
    }
    // Wall time varies from run to run: it lives in timings.json, not in the
    // byte-identical artefacts.
    assert!(res.get("wall_millis").is_none());
    let timings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("timings.json")).unwrap()).unwrap();
    assert_eq!(timings["passes"].as_array().unwrap().len(), 3);
    assert!(timings["passes"][2][&some.scenario_id].is_u64());
    let tr: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            dir.path()
                .join(format!("run-2/{}.transcript.json", some.scenario_id)),
        )
        .unwrap(),
    )
    .unwrap();
    let e0 = &tr[0];
    for k in ["seq", "model", "system", "user_prompt", "reply"] {
        assert!(e0.get(k).is_some(), "transcript entry lacks {k}");
    }
    assert!(
        e0["system"]
            .as_str()
            .unwrap()
            .starts_with(Tier::Triage.header())
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("NOT AN ACCURACY NUMBER"));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("NOT AN ACCURACY NUMBER"));
    assert!(dir.path().join("leaderboard.json").is_file());
}

fn first_non_floor(c: &Corpus, expected: &str) -> String {
    c.scenarios
        .iter()
        .find(|s| {
            let fam = s.scenario.case.finding.detector.as_str();
            s.scenario
                .ground_truth
                .expected
                .as_ref()
                .map(|e| e.chain_action.as_str())
                == Some(expected)
                && ![
                    "priv-escalation",
                    "injection-probe",
                    "log-format-drift",
                    "secrets-exposure",
                ]
                .contains(&fam)
        })
        .unwrap()
        .scenario
        .id
        .clone()
}

#[test]
fn fault_switch_fails_exactly_that_scenario_in_the_right_bin() {
    let c = corpus();
    for (expected, bin) in [
        ("resolved", classifier::A1_SHOULD_RESOLVE),
        ("escalated", classifier::A2_SHOULD_ESCALATE),
    ] {
        let victim = first_non_floor(&c, expected);
        let cfg = ExamConfig {
            passes: 1,
            golden_fault: Some(victim.clone()),
            ..ExamConfig::golden()
        };
        let out = rt().block_on(run_exam(&c, &cfg, None, None)).unwrap();
        let failed: Vec<_> = results(&out.report.runs[0])
            .into_iter()
            .filter(|r| !r.pass)
            .map(|r| r.scenario_id.clone())
            .collect();
        assert_eq!(failed, vec![victim.clone()]);
        assert_eq!(out.report.classifier.per_scenario[&victim], bin);
        assert_eq!(out.report.classifier.counts[bin], 1);
    }
    let cfg = ExamConfig {
        golden_fault: Some("no-such-scenario".into()),
        ..ExamConfig::golden()
    };
    assert!(rt().block_on(run_exam(&c, &cfg, None, None)).is_err());
}

#[test]
fn golden_over_loopback_http_through_the_anthropic_target() {
    let c = corpus();
    let cfg = ExamConfig {
        backend: Backend::Golden { http: true },
        passes: 1,
        ..ExamConfig::golden()
    };
    let out = rt().block_on(run_exam(&c, &cfg, None, None)).unwrap();
    assert_eq!(out.report.backend, "golden-http");
    assert_eq!(
        out.report.median_pass_rate,
        Some(1.0),
        "{:?}",
        out.report.classifier.counts
    );
    assert_eq!(out.report.model_errors, 0);
}

/// A scriptable model: `f(tier, temperature)` → reply or error; records every prompt.
struct Scripted<F> {
    spec: PluginSpec,
    f: F,
    seen: Mutex<Vec<String>>,
}

fn scripted<F>(f: F) -> Arc<Scripted<F>>
where
    F: Fn(Tier, f64) -> Result<String, String> + Send + Sync,
{
    let mut params = Params::new();
    params.insert("name", ParamValue::Str("scripted".into()));
    Arc::new(Scripted {
        spec: PluginSpec {
            name: "scripted".into(),
            params,
            loc: Default::default(),
            label: None,
        },
        f,
        seen: Mutex::new(Vec::new()),
    })
}

impl<F> Model for Scripted<F>
where
    F: Fn(Tier, f64) -> Result<String, String> + Send + Sync,
{
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn offline(&self) -> bool {
        true
    }
    fn chat<'a>(&'a self, req: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        let system = &req.messages[0].content;
        for m in &req.messages {
            self.seen.lock().unwrap().push(m.content.clone());
        }
        assert_eq!(req.messages[0].role, Role::System);
        assert_eq!(req.max_tokens, Some(512));
        let tier = Tier::from_system(system).expect("tier header");
        let r = (self.f)(tier, req.temperature.unwrap_or(0.0));
        Box::pin(async move { r.map(ChatResponse::text).map_err(ModelError::Call) })
    }
}

const RESOLVE: &str = r#"{"action":"resolve","confidence":5,"positive_evidence":true,"strong_evidence":true,"insufficient_data":false,"reason":"routine"}"#;
const ESCALATE: &str = r#"{"action":"escalate","confidence":5,"positive_evidence":false,"strong_evidence":true,"insufficient_data":false,"reason":"bad"}"#;

fn toolbox(c: &Corpus, id: &str) -> Toolbox {
    Toolbox::for_scenario(&c.get(id).unwrap().scenario, vec![])
}

#[test]
fn consensus_voter_dissent_escalates() {
    let c = corpus();
    let id = first_non_floor(&c, "resolved");
    let tb = toolbox(&c, &id);
    // Resolves at temperature 0, escalates at the voters' 0.4.
    let m = scripted(|tier, t| {
        Ok(match tier {
            Tier::Formatter => "ALERT".to_string(),
            _ if t > 0.0 => ESCALATE.to_string(),
            _ => RESOLVE.to_string(),
        })
    });
    let models = TierModels::uniform("m", m.clone());
    let out = rt().block_on(run_cascade(&tb, &models, &CascadeOptions::default()));
    assert_eq!(out.terminal_action, "escalated");
    assert!(
        out.terminal_reason.starts_with("consensus: voter 1 of 3"),
        "{}",
        out.terminal_reason
    );
    // Without consensus the same model resolves.
    let opts = CascadeOptions {
        consensus: 0,
        ..CascadeOptions::default()
    };
    let out = rt().block_on(run_cascade(&tb, &models, &opts));
    assert_eq!(out.terminal_action, "resolved");

    // A voter's model error also escalates.
    let m = scripted(|_, t| {
        if t > 0.0 {
            Err("boom".into())
        } else {
            Ok(RESOLVE.into())
        }
    });
    let out = rt().block_on(run_cascade(
        &tb,
        &TierModels::uniform("m", m),
        &CascadeOptions::default(),
    ));
    assert_eq!(out.terminal_action, "escalated");
    assert!(out.transcript.iter().any(|e| e.err.contains("boom")));
}

#[test]
fn every_error_fails_safe_to_escalation() {
    let c = corpus();
    let id = first_non_floor(&c, "resolved");
    let tb = toolbox(&c, &id);
    let m = scripted(|_, _| Err("connection refused".into()));
    let out = rt().block_on(run_cascade(
        &tb,
        &TierModels::uniform("m", m),
        &CascadeOptions::default(),
    ));
    assert_eq!(out.terminal_action, "escalated");
    assert!(!out.force_escalated);
    assert!(out.transcript.iter().all(|e| !e.err.is_empty()));
    // Garbage replies escalate too.
    let m = scripted(|_, _| Ok("¯\\_(ツ)_/¯".into()));
    let out = rt().block_on(run_cascade(
        &tb,
        &TierModels::uniform("m", m),
        &CascadeOptions::default(),
    ));
    assert_eq!(out.terminal_action, "escalated");
    // A fallback word-scan "resolve" never passes the confidence gates.
    let m = scripted(|_, _| Ok("resolve".into()));
    let out = rt().block_on(run_cascade(
        &tb,
        &TierModels::uniform("m", m),
        &CascadeOptions::default(),
    ));
    assert_eq!(out.terminal_action, "escalated");
}

#[test]
fn per_tier_model_ids_are_recorded() {
    let c = corpus();
    let tb = toolbox(&c, &first_non_floor(&c, "escalated"));
    let m = scripted(|tier, _| {
        Ok(match tier {
            Tier::Formatter => "ALERT".into(),
            Tier::Triage => RESOLVE.replace("\"confidence\":5", "\"confidence\":1"),
            _ => r#"{"action":"escalate","confidence":2}"#.into(),
        })
    });
    let mut models = TierModels::uniform("t-model", m);
    models.investigate.id = "i-model".into();
    models.deep.id = "d-model".into();
    models.formatter.id = "f-model".into();
    let out = rt().block_on(run_cascade(&tb, &models, &CascadeOptions::default()));
    let ids: Vec<_> = out.transcript.iter().map(|e| e.model.as_str()).collect();
    assert_eq!(
        ids,
        [
            "t-model", "i-model", "d-model", "d-model", "d-model", "f-model"
        ]
    );
    let seqs: Vec<_> = out.transcript.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4, 5]);
    assert_eq!(out.terminal_action, "escalated");
    assert_eq!(out.terminal_reason, "ALERT");
    assert_eq!(out.iterations, 4);
}

#[test]
fn ground_truth_never_reaches_a_model() {
    let c = corpus();
    let m = scripted(|tier, _| {
        Ok(if tier == Tier::Formatter {
            "ALERT".into()
        } else {
            r#"{"action":"resolve","confidence":3,"positive_evidence":true}"#.into()
        })
    });
    let models = TierModels::uniform("m", m.clone());
    let rt = rt();
    for ls in &c.scenarios {
        m.seen.lock().unwrap().clear();
        let tb = Toolbox::for_scenario(&ls.scenario, vec![]);
        rt.block_on(run_cascade(&tb, &models, &CascadeOptions::default()));
        let seen = m.seen.lock().unwrap().join("\n");
        let s = &ls.scenario;
        assert!(!seen.contains(&s.id), "{} leaked its id", s.id);
        let gt = &s.ground_truth;
        for secret in [&gt.trap_description, &gt.trap_resolved_means] {
            if secret.len() > 20 {
                assert!(
                    !seen.contains(secret.as_str()),
                    "{} leaked ground truth",
                    s.id
                );
            }
        }
        assert!(!seen.contains("chain_action"), "{}", s.id);
    }
}

#[test]
fn golden_tool_loop_in_process_and_over_http() {
    let c = corpus();
    for http in [false, true] {
        let mut cfg = ExamConfig {
            backend: Backend::Golden { http },
            passes: 1,
            ..ExamConfig::golden()
        };
        cfg.cascade.tool_loop = true;
        let dir = tempfile::tempdir().unwrap();
        let out = rt()
            .block_on(run_exam(&c, &cfg, None, Some(dir.path())))
            .unwrap();
        write_artifacts(dir.path(), &out).unwrap();
        let r = &out.report;
        assert!(r.tool_loop);
        assert_eq!(
            r.median_pass_rate,
            Some(1.0),
            "http={http}: {:?}",
            r.classifier.counts
        );
        assert_eq!(r.model_errors, 0, "http={http}");
        // Investigations ran the model's own tool calls: a tool-call round, then the verdict.
        let pass0 = results(&r.runs[0]);
        let ts: Vec<Vec<TranscriptEntry>> = pass0
            .iter()
            .map(|x| {
                let f = dir.path().join(format!(
                    "run-0/{}.transcript.json",
                    gauntlet_results::exam::file_stem(&x.scenario_id)
                ));
                serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap()
            })
            .collect();
        let looped = ts
            .iter()
            .flatten()
            .filter(|e| e.system.starts_with(Tier::Investigate.header()))
            .filter(|e| e.reply.contains("[tool call] check-baseline"))
            .count();
        assert!(looped > 0, "http={http}");
        for (res, t) in pass0.iter().zip(&ts) {
            if let Some(i) = t.iter().position(|e| e.reply.contains("[tool call]")) {
                assert!(t[i].tools.contains(&"search-events".to_string()));
                let next = &t[i + 1];
                assert!(
                    next.user_prompt.contains("## tool check-baseline"),
                    "{}",
                    res.scenario_id
                );
            }
        }
    }
}

/// A rerun into the same directory leaves the files whose bytes it would write in place
/// (same inode, no staging), replaces only the files that changed, and removes what the
/// previous exam left that this one did not write.
#[test]
fn a_rerun_leaves_identical_files_in_place_and_replaces_only_what_changed() {
    use std::os::unix::fs::MetadataExt;
    let c = corpus();
    let dir = tempfile::tempdir().unwrap();
    let inodes = |d: &Path| -> std::collections::BTreeMap<String, u64> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().unwrap().ino(),
                )
            })
            .collect()
    };
    let exam = |cfg: &ExamConfig| {
        let out = rt()
            .block_on(run_exam(&c, cfg, None, Some(dir.path())))
            .unwrap();
        write_artifacts(dir.path(), &out).unwrap();
        assert!(!dir.path().join(gauntlet_exam::exam::STAGING).exists());
    };
    let one = ExamConfig {
        passes: 1,
        ..ExamConfig::golden()
    };
    exam(&one);
    let run0 = dir.path().join("run-0");
    let first = inodes(&run0);
    assert_eq!(first.len(), 2 * c.scenarios.len());
    let bytes = |name: &str| std::fs::read(run0.join(name)).unwrap();

    // The same exam again: every file stays the file it was.
    exam(&one);
    assert_eq!(inodes(&run0), first);

    // One scenario's outcome changes, a stale file and a stale directory lie about, and
    // one file was edited by hand: those are replaced or removed, the rest stay.
    let victim = first_non_floor(&c, "resolved");
    let stem = gauntlet_results::exam::file_stem(&victim);
    let before = bytes(&format!("{stem}.json"));
    std::fs::write(run0.join("gone.json"), b"{}\n").unwrap();
    std::fs::create_dir(run0.join("gone.d")).unwrap();
    let other = first_non_floor(&c, "escalated");
    let other_stem = gauntlet_results::exam::file_stem(&other);
    let edited = format!("{other_stem}.transcript.json");
    let kept = bytes(&edited);
    std::fs::write(run0.join(&edited), b"[]\n").unwrap();
    exam(&ExamConfig {
        golden_fault: Some(victim.clone()),
        ..one.clone()
    });
    let now = inodes(&run0);
    assert_eq!(now.len(), first.len(), "{now:?}");
    assert_ne!(bytes(&format!("{stem}.json")), before);
    assert_eq!(bytes(&edited), kept, "the edited file is the exam's again");
    for (name, ino) in &first {
        let changed = name.starts_with(&format!("{stem}.")) || *name == edited;
        if !changed {
            assert_eq!(now[name], *ino, "{name} was rewritten");
        }
    }
}

//! The end-to-end pass (mallcop's end-to-end mode): events → fleet → findings → cascade → resolutions,
//! per scenario in an isolated store, and its `detect_fidelity` block.

use super::schema::{E2eOutput, ExamConfig, FindingTranscript};
use super::triage::{ScenarioModels, triage};
use crate::calls::ExamCalls;
use crate::e2e;
use crate::e2e::{DetectFidelity, Resolution, Triaged};
use gauntlet_corpus::load::Corpus;
use gauntlet_detect::fleet::{Fleet, Member};
use gauntlet_results::exam::E2E_NOTE;
use std::sync::Arc;
use std::time::Instant;

/// The `detect_fidelity` value: the block plus its note and backend facts.
pub(super) fn e2e_value(f: &DetectFidelity) -> serde_json::Value {
    let mut v = serde_json::to_value(f).unwrap_or(serde_json::Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.insert("note".into(), E2E_NOTE.into());
        o.insert(
            "fleet".into(),
            gauntlet_detect::builtin()
                .iter()
                .map(|d| d.name().to_string())
                .collect::<Vec<_>>()
                .into(),
        );
    }
    v
}

/// The end-to-end pass. Per scenario, an isolated store: the reference
/// fleet over its raw events (sequential, each detector isolated with a time budget),
/// then every finding triaged concurrently by the scenario's backend, the
/// resolutions stored in that scenario's store only, then classification.
pub(super) async fn run_e2e_pass(
    corpus: &Corpus,
    cfg: &ExamConfig,
    models: &ScenarioModels,
    sem: &Arc<tokio::sync::Semaphore>,
    calls: Option<&Arc<ExamCalls>>,
) -> (E2eOutput, std::collections::BTreeMap<String, u64>, bool) {
    let scenarios = &corpus.scenarios;
    let members: Vec<Member> = gauntlet_detect::builtin()
        .into_iter()
        .map(Member::Builtin)
        .collect();
    let fleet = Fleet::new(members, cfg.detector_timeout);
    let mut detected = Vec::with_capacity(scenarios.len());
    let mut detect_ms = Vec::with_capacity(scenarios.len());
    for ls in scenarios {
        let t0 = Instant::now();
        detected.push(e2e::detect(&fleet, &ls.scenario));
        detect_ms.push(t0.elapsed().as_millis() as u64);
    }
    let mut set = tokio::task::JoinSet::new();
    for (i, (findings, _)) in detected.iter().enumerate() {
        for (j, f) in findings.iter().enumerate() {
            let tb = Arc::new(e2e::toolbox_for(&scenarios[i].scenario, f));
            let m = match models {
                ScenarioModels::Shared(m) => m.clone(),
                ScenarioModels::PerScenario(v) => v[i].clone(),
            };
            let opts = cfg.cascade.clone();
            let sem = sem.clone();
            let unit = calls.map(|c| {
                let s = &scenarios[i];
                c.unit(&serde_json::json!([
                    "e2e",
                    s.relpath,
                    s.scenario.id,
                    j,
                    f.id
                ]))
            });
            set.spawn(async move {
                let _permit = sem.acquire_owned().await.expect("semaphore open");
                let t0 = Instant::now();
                let (out, refused) = triage(&tb, &m, &opts, unit).await;
                (i, j, out, refused, t0.elapsed().as_millis() as u64)
            });
        }
    }
    let mut refused_any = false;
    let mut outcomes: Vec<Vec<Option<crate::cascade::CascadeOutcome>>> =
        detected.iter().map(|(f, _)| vec![None; f.len()]).collect();
    while let Some(joined) = set.join_next().await {
        let (i, j, out, refused, ms) = joined.expect("cascade tasks do not panic");
        refused_any |= refused;
        detect_ms[i] += ms;
        outcomes[i][j] = Some(out);
    }
    let mut rows = Vec::with_capacity(scenarios.len());
    let mut transcripts = Vec::with_capacity(scenarios.len());
    for ((ls, (findings, errors)), outs) in scenarios.iter().zip(detected).zip(outcomes) {
        let mut store = Vec::with_capacity(findings.len());
        let mut ts = Vec::with_capacity(findings.len());
        for (f, out) in findings.iter().zip(outs) {
            let out = out.expect("every finding triaged");
            store.push(Resolution::new(f, Triaged::from_outcome(&out)));
            ts.push(FindingTranscript {
                finding_id: f.id.clone(),
                family: f.family(),
                actor: f.actor.clone(),
                transcript: out.transcript,
            });
        }
        rows.push(e2e::classify(&ls.scenario, store, errors));
        transcripts.push(ts);
    }
    let ms = scenarios
        .iter()
        .zip(detect_ms)
        .map(|(ls, ms)| (ls.scenario.id.clone(), ms))
        .collect();
    (
        E2eOutput {
            fidelity: e2e::summarize(rows),
            transcripts,
        },
        ms,
        refused_any,
    )
}

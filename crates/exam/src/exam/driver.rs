//! The driver: N passes of the cascade over the corpus, scenarios concurrently, results
//! in corpus order; each cascade through the journaled calls when there are any.

use super::e2e_pass::{e2e_value, run_e2e_pass};
use super::identity::exam_config_sha256;
use super::run_files::RunFiles;
use super::schema::{
    Backend, ExamConfig, ExamError, ExamOutput, NotRun, Progress, ProgressFn, TIMINGS_NOTE, Timings,
};
use super::summary::summarise;
use super::targets::golden_http_target;
use super::triage::{ScenarioModels, triage};
use crate::calls::SessionStats;
use crate::cascade::TierModels;
use crate::golden::{GoldenModel, GoldenScript, GoldenServer};
use crate::grade::{FullChain, GradeInput, RunResult, effective_passes, grade};
use crate::tools::Toolbox;
use gauntlet_corpus::load::Corpus;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Runs the exam over `corpus` (already integrity-verified by the loader), writing
/// each scenario run's files under `out` as it is graded ([`RunFiles`]; `None`: its
/// transcript is only counted). [`super::write_artifacts`] writes the rest.
pub async fn run_exam(
    corpus: &Corpus,
    cfg: &ExamConfig,
    progress: Option<ProgressFn>,
    out: Option<&Path>,
) -> Result<ExamOutput, ExamError> {
    run_exam_units(corpus, cfg, progress, None, out).await
}

/// [`run_exam`] over the scenario runs `owned[pass * scenarios + i]` only (a shard,
/// `shard.rs`); `None`: every one. The report covers the runs made.
pub async fn run_exam_units(
    corpus: &Corpus,
    cfg: &ExamConfig,
    progress: Option<ProgressFn>,
    owned: Option<&[bool]>,
    out: Option<&Path>,
) -> Result<ExamOutput, ExamError> {
    let scenarios = &corpus.scenarios;
    let mine = |pass: usize, i: usize| owned.is_none_or(|o| o[pass * scenarios.len() + i]);
    let toolboxes: Vec<Arc<Toolbox>> = scenarios
        .iter()
        .map(|s| Arc::new(Toolbox::for_scenario(&s.scenario, Vec::new())))
        .collect();
    if let Some(f) = &cfg.golden_fault
        && !scenarios.iter().any(|s| &s.scenario.id == f)
    {
        return Err(ExamError::UnknownFaultScenario(f.clone()));
    }
    let scripts: Vec<GoldenScript> = scenarios
        .iter()
        .map(|s| GoldenScript {
            wrong: cfg.golden_fault.as_deref() == Some(s.scenario.id.as_str()),
            ..GoldenScript::for_scenario(&s.scenario)
        })
        .collect();
    let mut _server = None;
    let (models, backend_label) = match &cfg.backend {
        Backend::Real { models, label } => (ScenarioModels::Shared(models.clone()), label.clone()),
        Backend::Golden { http: false } => (
            ScenarioModels::PerScenario(
                scripts
                    .into_iter()
                    .map(|s| TierModels::uniform("golden", Arc::new(GoldenModel::new(s))))
                    .collect(),
            ),
            "golden".to_string(),
        ),
        Backend::Golden { http: true } => {
            let server = GoldenServer::start(scripts)
                .await
                .map_err(|e| ExamError::Golden(e.to_string()))?;
            let mut v = Vec::with_capacity(scenarios.len());
            for i in 0..scenarios.len() {
                let m = golden_http_target(&server.base_url(i))
                    .map_err(|e| ExamError::Golden(e.to_string()))?;
                v.push(TierModels::uniform("golden-http", m));
            }
            _server = Some(server);
            (ScenarioModels::PerScenario(v), "golden-http".to_string())
        }
    };

    let started = Instant::now();
    let calls = match &cfg.backend {
        Backend::Real { .. } => cfg.calls.clone(),
        Backend::Golden { .. } => None,
    };
    let mut not_run = Vec::new();
    let passes = effective_passes(cfg.passes);
    let sem = Arc::new(tokio::sync::Semaphore::new(cfg.concurrency.max(1)));
    let mut runs = Vec::with_capacity(passes);
    let mut files = out.map(RunFiles::new);
    // The agent passes' model calls and failed calls, counted as their transcripts go by.
    let (mut model_calls, mut model_errors) = (0, 0);
    for pass in 0..passes {
        let mut set = tokio::task::JoinSet::new();
        for (i, tb) in toolboxes.iter().enumerate() {
            if !mine(pass, i) {
                continue;
            }
            let tb = tb.clone();
            let m = match &models {
                ScenarioModels::Shared(m) => m.clone(),
                ScenarioModels::PerScenario(v) => v[i].clone(),
            };
            let opts = cfg.cascade.clone();
            let sem = sem.clone();
            let unit = calls.as_ref().map(|c| {
                let s = &scenarios[i];
                c.unit(&serde_json::json!(["exam", s.relpath, s.scenario.id, pass]))
            });
            set.spawn(async move {
                let _permit = sem.acquire_owned().await.expect("semaphore open");
                let t0 = Instant::now();
                let (out, refused) = triage(&tb, &m, &opts, unit).await;
                (i, out, refused, t0.elapsed().as_millis() as u64)
            });
        }
        let mut slots: Vec<Option<Option<_>>> = vec![None; scenarios.len()];
        let mut done = 0;
        while let Some(joined) = set.join_next().await {
            let (i, out, refused, ms) = joined.expect("cascade tasks do not panic");
            let ls = &scenarios[i];
            let s = &ls.scenario;
            if refused {
                // The budget ran out inside this scenario: not run, in no count.
                slots[i] = Some(None);
                continue;
            }
            let input = GradeInput {
                scenario_id: &s.id,
                rel_path: &ls.relpath,
                finding_id: &s.case.finding.id,
                category: &s.info.category,
                difficulty: &s.info.difficulty,
                expected: s.ground_truth.expected.as_ref(),
            };
            let mut r = grade(&input, &out, ms);
            done += 1;
            if let Some(p) = &progress {
                p(&Progress {
                    pass,
                    passes,
                    done,
                    total: (0..scenarios.len()).filter(|&k| mine(pass, k)).count(),
                    scenario_id: &s.id,
                    terminal_action: &r.terminal_action,
                    expected_action: &r.expected_action,
                    model_calls: r.model_calls,
                    pass_ok: r.pass,
                });
            }
            model_calls += out.transcript.len();
            model_errors += out.transcript.iter().filter(|e| !e.err.is_empty()).count();
            if let Some(f) = &mut files {
                f.write(pass, &r, &out.transcript)
                    .map_err(ExamError::Write)?;
                // The run's file holds its steps now; the report reads them back from
                // there when it is written, so no pass's replies stay in memory.
                r.full_chain = FullChain::InFile(f.placed(pass, &r.scenario_id));
            }
            slots[i] = Some(Some(r));
        }
        let mut results = Vec::with_capacity(scenarios.len());
        for (i, s) in slots.into_iter().enumerate() {
            if !mine(pass, i) {
                continue;
            }
            match s.expect("every scenario reported") {
                Some(r) => results.push(r),
                None => not_run.push(NotRun {
                    pass,
                    scenario_id: scenarios[i].scenario.id.clone(),
                }),
            }
        }
        runs.push(RunResult::from_results(pass, results));
    }
    let mut timings = Timings {
        note: TIMINGS_NOTE,
        passes: runs
            .iter()
            .map(|r| {
                r.results
                    .iter()
                    .map(|x| (x.scenario_id.clone(), x.wall_millis))
                    .collect()
            })
            .collect(),
        ..Timings::default()
    };
    let budget_spent = || {
        calls.as_ref().is_some_and(|c| {
            c.counters
                .budget_hit
                .load(std::sync::atomic::Ordering::Relaxed)
        })
    };
    let stopped = || calls.as_ref().is_some_and(|c| c.stopped());
    // An end-to-end pass the budget cut short would grade findings nobody triaged: it
    // runs only while budget is left, and is dropped whole when the budget ran out in it
    // (or the exam was stopped).
    let e2e_out = if cfg.e2e && !budget_spent() && !stopped() {
        let (out, ms, refused) = run_e2e_pass(corpus, cfg, &models, &sem, calls.as_ref()).await;
        timings.e2e = ms;
        (!refused && !stopped()).then_some(out)
    } else {
        None
    };
    if let Some(e) = calls.as_ref().and_then(|c| c.counters.halted()) {
        return Err(ExamError::Halted(e.to_string()));
    }
    let mut report = summarise(
        corpus,
        cfg,
        &backend_label,
        runs,
        (model_calls, model_errors),
    );
    if cfg.from_file {
        report.exam_config_sha256 = Some(exam_config_sha256(corpus, cfg));
    }
    if let (Some(c), Backend::Real { models, .. }) = (&calls, &cfg.backend) {
        report.usage = Some(crate::calls::price_usage(&c.usage(), models, &c.prices));
        report.exam_config_sha256 = Some(exam_config_sha256(corpus, cfg));
        // Stopped (Ctrl-C) wins over a budget spent on the way: the rerun resumes either way.
        if stopped() {
            report.partial = Some("interrupted".into());
            if cfg.e2e && e2e_out.is_none() {
                report.e2e_not_run = Some(
                    "the exam was interrupted before the end-to-end pass finished; detect_fidelity is not reported".into(),
                );
            }
        } else if budget_spent() {
            report.partial = Some("budget".into());
            if cfg.e2e && e2e_out.is_none() {
                report.e2e_not_run = Some(
                    "the query budget ran out before the end-to-end pass finished; detect_fidelity is not reported".into(),
                );
            }
        }
        report.not_run = not_run;
    }
    if let Some(e) = &e2e_out {
        report.detect_fidelity = Some(e2e_value(&e.fidelity));
        report.model_calls += e
            .transcripts
            .iter()
            .flatten()
            .map(|t| t.transcript.len())
            .sum::<usize>();
        report.model_errors += e
            .transcripts
            .iter()
            .flatten()
            .flat_map(|t| &t.transcript)
            .filter(|x| !x.err.is_empty())
            .count();
    }
    timings.total_millis = started.elapsed().as_millis() as u64;
    let session = match (&calls, &cfg.backend) {
        (Some(c), Backend::Real { models, .. }) => {
            let mut s = SessionStats::collect(c, models);
            s.wall_millis = timings.total_millis;
            Some(s)
        }
        _ => None,
    };
    Ok(ExamOutput {
        report,
        run_files: files,
        e2e: e2e_out,
        timings,
        session,
    })
}

//! The agent exam driver (spec §6–7): N passes of the cascade over a verified corpus,
//! graded, summarised and written as artefacts.
//!
//! Why this exists: one function runs a whole exam — corpus already integrity-checked by
//! the loader — against a backend: the golden merge gate (in-process, or over loopback
//! HTTP through the `anthropic` target so the wire path is exercised) or real models
//! through the model seam. Scenarios of a pass run concurrently; results are kept in
//! corpus order, so the report does not depend on scheduling. Artefacts:
//! `report.json`, `classifier.json`, `run-<i>/<id>.json`,
//! `run-<i>/<id>.transcript.json`, plus `report.md`, `report.html` and
//! `leaderboard.json` (provenance: the corpus digest is the dataset version).

use crate::calls::{ExamCalls, ExamUsage, SessionStats, UnitCalls};
use crate::cascade::{
    CascadeOptions, TierModel, TierModels, TranscriptEntry, run_cascade, run_cascade_via,
};
use crate::classifier::{ClassifierSummary, classify};
use crate::detectors::e2e::{self, DetectFidelity, Resolution, Triaged};
use crate::detectors::fleet::{Fleet, Member};
use crate::golden::{GoldenModel, GoldenScript, GoldenServer};
use crate::grade::{
    GradeInput, Interval, NOISE_BAND_PP, RunResult, effective_passes, grade, median, wilson95,
    within_band,
};
use crate::load::Corpus;
use crate::tools::Toolbox;
use gauntlet_core::params::{
    Axis, Catalog, ParamValue, Params, PluginInfo, PluginSpec, resolve_spec,
};
use gauntlet_core::results::LeaderboardRow;
use gauntlet_models::targets::anthropic::AnthropicTarget;
use gauntlet_models::{Model, TransportOptions};
use gauntlet_report::{Block, Page};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Where replies come from.
#[derive(Clone)]
pub enum Backend {
    /// Golden replies scripted from each scenario's expected outcome. `http`: served by
    /// a loopback [`GoldenServer`] and reached through the `anthropic` target.
    Golden { http: bool },
    /// Real models, one per tier.
    Real { models: TierModels, label: String },
}

/// What to run.
#[derive(Clone)]
pub struct ExamConfig {
    pub backend: Backend,
    /// Passes; ≤ 0 means 3.
    pub passes: i64,
    pub cascade: CascadeOptions,
    /// Scenarios in flight at once.
    pub concurrency: usize,
    /// TEST-ONLY fault switch: the golden backend answers this scenario wrongly.
    #[doc(hidden)]
    pub golden_fault: Option<String>,
    /// End-to-end mode (spec §9): after the agent passes, one end-to-end pass — the
    /// reference detector fleet over each scenario's raw events, every finding triaged
    /// by the same backend in the scenario's own store — reported as
    /// `detect_fidelity`, apart from the agent pass rate.
    pub e2e: bool,
    /// End-to-end mode: per-detector, per-scenario time budget.
    pub detector_timeout: std::time::Duration,
    /// The exam was described by a file (`--config`): its identity hash is recorded in
    /// report.json whatever the backend.
    pub from_file: bool,
    /// Real backends: the journaled call layer (resume, budget, usage and cost), opened
    /// on the output directory ([`ExamCalls::open`]). `None`: calls go straight to the
    /// models (the golden backend always does).
    pub calls: Option<Arc<ExamCalls>>,
}

impl ExamConfig {
    pub fn golden() -> ExamConfig {
        ExamConfig {
            backend: Backend::Golden { http: false },
            passes: 3,
            cascade: CascadeOptions::default(),
            concurrency: 8,
            golden_fault: None,
            e2e: false,
            detector_timeout: crate::detectors::fleet::DEFAULT_TIMEOUT,
            from_file: false,
            calls: None,
        }
    }

    /// `e2e`, `golden` or `real` (the backend of an e2e run is in the report's
    /// `backend`).
    pub fn mode(&self) -> &'static str {
        match self.backend {
            _ if self.e2e => "e2e",
            Backend::Golden { .. } => "golden",
            Backend::Real { .. } => "real",
        }
    }
}

/// Per-scenario progress.
#[derive(Debug, Clone)]
pub struct Progress<'a> {
    pub pass: usize,
    pub passes: usize,
    pub done: usize,
    pub total: usize,
    pub scenario_id: &'a str,
    pub terminal_action: &'a str,
    pub expected_action: &'a str,
    pub model_calls: usize,
    pub pass_ok: bool,
}

pub type ProgressFn = Arc<dyn Fn(&Progress<'_>) + Send + Sync>;

/// pass^N: scenarios passing in every pass, over the scenarios graded (never
/// fail-safe) in every pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassAllRuns {
    pub passes: usize,
    pub scenarios: usize,
    pub total: usize,
    /// `null` when no scenario was graded in every pass.
    pub rate: Option<f64>,
}

/// Scenario runs (scenarios × passes) by what decided them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecidedCounts {
    pub model: usize,
    pub floor: usize,
    /// The fail-safe after a failed or unparseable model call: outside every rate.
    pub fail_safe: usize,
}

/// `report.json`: mallcop's `HarnessReport` fields, then ours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessReport {
    pub mode: String,
    pub corpus_count: usize,
    pub corpus_sha256: String,
    pub runs: Vec<RunResult>,
    /// Median over the passes that have a rate; `null` (reason in `na_reasons`) when
    /// none has: every scenario of every pass was decided by the fail-safe.
    pub median_pass_rate: Option<f64>,
    pub noise_band_pp: f64,
    pub runs_within_band: bool,
    pub classifier: ClassifierSummary,
    pub median_recall_rate: Option<f64>,
    pub median_precision_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detect_fidelity: Option<serde_json::Value>,
    pub note: String,
    // --- beyond the original ---
    /// Wilson 95% interval of the median pass rate (n = scenarios).
    pub pass_rate_ci95: Option<Interval>,
    pub recall_ci95: Option<Interval>,
    pub precision_ci95: Option<Interval>,
    pub pass_all_runs: PassAllRuns,
    /// Scenario runs by what decided them; only `model` and `floor` ones are in the
    /// rates.
    pub decided_by: DecidedCounts,
    /// Why a median rate is `null`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub na_reasons: std::collections::BTreeMap<String, String>,
    /// The backend: `golden`, `golden-http`, or the real target's label.
    pub backend: String,
    pub consensus: usize,
    /// The investigate tier drove the tools itself (`--tool-loop`).
    pub tool_loop: bool,
    pub model_calls: usize,
    pub model_errors: usize,
    pub harness_version: String,
    // --- real mode on the call layer (absent otherwise) ---
    /// `budget` when the query budget ran out: the scenarios in `not_run` were not
    /// decided and are in no count or rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<NotRun>,
    /// End-to-end mode: why the end-to-end pass (and so `detect_fidelity`) is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_not_run: Option<String>,
    /// Token usage and cost per tier (journal hits included: identical on a rerun).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ExamUsage>,
    /// sha256 of the exam's canonical identity (`exam.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exam_config_sha256: Option<String>,
}

/// A scenario run the budget did not allow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotRun {
    pub pass: usize,
    pub scenario_id: String,
}

/// A finished exam: the report and every transcript (`[pass][scenario]`).
pub struct ExamOutput {
    pub report: HarnessReport,
    pub transcripts: Vec<Vec<Vec<TranscriptEntry>>>,
    /// End-to-end mode: the fidelity block and each scenario's triage transcripts.
    pub e2e: Option<E2eOutput>,
    /// Wall-clock figures, written to `timings.json` (never into `report.json`, which
    /// is byte-identical across reruns of a deterministic backend).
    pub timings: Timings,
    /// Real mode on the call layer: what this session did (calls made, journal hits).
    pub session: Option<SessionStats>,
}

/// The end-to-end pass of an exam.
pub struct E2eOutput {
    pub fidelity: DetectFidelity,
    /// Per scenario (corpus order): each fleet finding's triage transcript.
    pub transcripts: Vec<Vec<FindingTranscript>>,
}

/// The cascade transcript of one fleet finding (`e2e/<id>.transcript.json`).
#[derive(Debug, Clone, Serialize)]
pub struct FindingTranscript {
    pub finding_id: String,
    pub family: String,
    pub actor: String,
    pub transcript: Vec<TranscriptEntry>,
}

/// `timings.json`: wall-clock milliseconds per scenario and pass, kept apart from the
/// deterministic artefacts.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timings {
    pub note: &'static str,
    /// `passes[i][scenario_id]`: the cascade's wall time in pass `i`.
    pub passes: Vec<std::collections::BTreeMap<String, u64>>,
    /// End-to-end mode: fleet plus every finding's cascade, per scenario.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub e2e: std::collections::BTreeMap<String, u64>,
    pub total_millis: u64,
}

const TIMINGS_NOTE: &str = "Wall-clock milliseconds. They vary from run to run, so they live here and not in report.json or run-<i>/<id>.json.";

/// The note of the `detect_fidelity` block (also shown in the human output).
pub const E2E_NOTE: &str = "END-TO-END MODE: detect_fidelity measures the detector fleet and the whole pipeline (events → detectors → findings → cascade → resolutions). It is reported on its own and is NEVER folded into the agent pass rate, which still comes from the hand-written findings.";

/// Why an exam could not run.
#[derive(Debug, thiserror::Error)]
pub enum ExamError {
    #[error("golden backend: {0}")]
    Golden(String),
    #[error("fault switch names unknown scenario `{0}`")]
    UnknownFaultScenario(String),
    /// A configuration error (401/403, a journal that cannot be written) stopped every
    /// model call: no report is written (it would be all fail-safe verdicts), and the
    /// finished calls are in the journal for the rerun.
    #[error(
        "the exam stopped: {0}; no report was written. Fix the cause and rerun into the same --out: finished calls are replayed from the journal"
    )]
    Halted(String),
}

pub const GOLDEN_NOTE: &str = "GOLDEN MODE IS A PIPELINE CHECK, NOT AN ACCURACY NUMBER. Every model reply was scripted from the scenario's own expected outcome, so a 100% pass rate only shows that the corpus loader, the cascade wiring, the verdict parser and the grader work; a failure here is a harness bug. Agent accuracy comes only from a real-mode run.";
pub const REAL_NOTE: &str = "Real mode: the model under test decided every non-floor verdict (floor-routed findings escalate with zero model calls and are graded honestly), except where a model call failed or its reply could not be parsed: the cascade then escalated by default, and those scenarios (decided_by: fail_safe) are excluded from every rate and counted beside them. median_pass_rate BLENDS missed attacks and false alarms: read median_recall_rate (attacks escalated) and median_precision_rate (benign findings resolved) for the split. chain_action is the only gating axis; the other axes are reported only.";

enum ScenarioModels {
    Shared(TierModels),
    PerScenario(Vec<TierModels>),
}

/// Runs the exam over `corpus` (already integrity-verified by the loader).
pub async fn run_exam(
    corpus: &Corpus,
    cfg: &ExamConfig,
    progress: Option<ProgressFn>,
) -> Result<ExamOutput, ExamError> {
    run_exam_units(corpus, cfg, progress, None).await
}

/// [`run_exam`] over the scenario runs `owned[pass * scenarios + i]` only (a shard,
/// `shard.rs`); `None`: every one. The report covers the runs made.
pub async fn run_exam_units(
    corpus: &Corpus,
    cfg: &ExamConfig,
    progress: Option<ProgressFn>,
    owned: Option<&[bool]>,
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
    let mut transcripts = Vec::with_capacity(passes);
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
            let r = grade(&input, &out, ms);
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
            slots[i] = Some(Some((r, out.transcript)));
        }
        let mut results = Vec::with_capacity(scenarios.len());
        let mut ts = Vec::with_capacity(scenarios.len());
        for (i, s) in slots.into_iter().enumerate() {
            if !mine(pass, i) {
                continue;
            }
            match s.expect("every scenario reported") {
                Some((r, t)) => {
                    results.push(r);
                    ts.push(t);
                }
                None => not_run.push(NotRun {
                    pass,
                    scenario_id: scenarios[i].scenario.id.clone(),
                }),
            }
        }
        runs.push(RunResult::from_results(pass, results));
        transcripts.push(ts);
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
    // An end-to-end pass the budget cut short would grade findings nobody triaged: it
    // runs only while budget is left, and is dropped whole when the budget ran out in it.
    let e2e_out = if cfg.e2e && !budget_spent() {
        let (out, ms, refused) = run_e2e_pass(corpus, cfg, &models, &sem, calls.as_ref()).await;
        timings.e2e = ms;
        (!refused).then_some(out)
    } else {
        None
    };
    if let Some(e) = calls.as_ref().and_then(|c| c.counters.halted()) {
        return Err(ExamError::Halted(e.to_string()));
    }
    let mut report = summarise(corpus, cfg, &backend_label, runs, &transcripts);
    if cfg.from_file {
        report.exam_config_sha256 = Some(exam_config_sha256(corpus, cfg));
    }
    if let (Some(c), Backend::Real { models, .. }) = (&calls, &cfg.backend) {
        report.usage = Some(crate::calls::price_usage(&c.usage(), models, &c.prices));
        report.exam_config_sha256 = Some(exam_config_sha256(corpus, cfg));
        if budget_spent() {
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
        transcripts,
        e2e: e2e_out,
        timings,
        session,
    })
}

/// One cascade, through the unit's journaled calls when there are any. Returns the
/// outcome and whether the budget refused one of its calls (then it did not run).
async fn triage(
    tb: &Toolbox,
    m: &TierModels,
    opts: &CascadeOptions,
    unit: Option<UnitCalls>,
) -> (crate::cascade::CascadeOutcome, bool) {
    match unit {
        None => (run_cascade(tb, m, opts).await, false),
        Some(u) => {
            let out = run_cascade_via(tb, m, opts, &u).await;
            u.flush_pending();
            (out, u.budget_refused())
        }
    }
}

/// The canonical identity of an exam: everything its artefacts depend on (not the
/// budget or the concurrency). Recorded in `exam.json`; another identity in the same
/// output directory moves the previous exam aside.
pub fn exam_identity(corpus: &Corpus, cfg: &ExamConfig) -> serde_json::Value {
    let tiers: serde_json::Map<String, serde_json::Value> = match &cfg.backend {
        Backend::Real { models, .. } => crate::calls::TierRole::ALL
            .iter()
            .map(|r| {
                let tm = models.for_tier(r.tier());
                (
                    r.name().to_string(),
                    serde_json::json!({"id": tm.id, "spec": tm.model.spec().key_identity()}),
                )
            })
            .collect(),
        Backend::Golden { .. } => serde_json::Map::new(),
    };
    serde_json::json!({
        "gauntlet_exam": 1,
        "harness_version": gauntlet_core::HARNESS_VERSION,
        "mode": cfg.mode(),
        "corpus_sha256": corpus.digest,
        "corpus_count": corpus.count,
        "passes": effective_passes(cfg.passes),
        "consensus": cfg.cascade.consensus,
        "findings_budget": cfg.cascade.findings_budget,
        "tool_loop": cfg.cascade.tool_loop,
        "max_tool_rounds": cfg.cascade.max_tool_rounds,
        "seed": cfg.cascade.seed,
        "e2e": cfg.e2e,
        "tiers": tiers,
    })
}

/// `exam.json`: [`exam_identity`] as pretty JSON with a final newline.
pub fn exam_identity_bytes(corpus: &Corpus, cfg: &ExamConfig) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(&exam_identity(corpus, cfg)).expect("json");
    b.push(b'\n');
    b
}

/// sha256 of `exam.json` ([`exam_identity_bytes`]): `sha256sum exam.json` checks it.
pub fn exam_config_sha256(corpus: &Corpus, cfg: &ExamConfig) -> String {
    gauntlet_core::hash::sha256_hex(&exam_identity_bytes(corpus, cfg))
}

/// The `detect_fidelity` value: the block plus its note and backend facts.
fn e2e_value(f: &DetectFidelity) -> serde_json::Value {
    let mut v = serde_json::to_value(f).unwrap_or(serde_json::Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.insert("note".into(), E2E_NOTE.into());
        o.insert(
            "fleet".into(),
            crate::detectors::builtin()
                .iter()
                .map(|d| d.name().to_string())
                .collect::<Vec<_>>()
                .into(),
        );
    }
    v
}

/// The end-to-end pass (spec §9). Per scenario, an isolated store: the reference
/// fleet over its raw events (sequential, each detector isolated with a time budget),
/// then every finding triaged concurrently by the scenario's backend, the
/// resolutions stored in that scenario's store only, then classification.
async fn run_e2e_pass(
    corpus: &Corpus,
    cfg: &ExamConfig,
    models: &ScenarioModels,
    sem: &Arc<tokio::sync::Semaphore>,
    calls: Option<&Arc<ExamCalls>>,
) -> (E2eOutput, std::collections::BTreeMap<String, u64>, bool) {
    let scenarios = &corpus.scenarios;
    let members: Vec<Member> = crate::detectors::builtin()
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

/// The median of the passes' values that exist (`None` when none does).
pub fn median_of(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    (!v.is_empty()).then(|| median(&v))
}

/// The median of per-pass population sizes, rounded down: the `n` of the Wilson
/// interval of a median rate (every pass has the same n when nothing errored).
fn median_n(values: impl Iterator<Item = usize>) -> usize {
    let v: Vec<f64> = values.map(|n| n as f64).collect();
    median(&v).floor() as usize
}

fn summarise(
    corpus: &Corpus,
    cfg: &ExamConfig,
    backend: &str,
    runs: Vec<RunResult>,
    transcripts: &[Vec<Vec<TranscriptEntry>>],
) -> HarnessReport {
    let calls = transcripts.iter().flatten().map(Vec::len).sum();
    let errors = transcripts
        .iter()
        .flatten()
        .flatten()
        .filter(|e| !e.err.is_empty())
        .count();
    let head = ReportHead {
        mode: cfg.mode().to_string(),
        corpus_count: corpus.count,
        corpus_sha256: corpus.digest.clone(),
        note: match cfg.backend {
            Backend::Golden { .. } => GOLDEN_NOTE.to_string(),
            Backend::Real { .. } => REAL_NOTE.to_string(),
        },
        backend: backend.to_string(),
        consensus: cfg.cascade.consensus,
        tool_loop: cfg.cascade.tool_loop,
    };
    assemble_report(head, runs, calls, errors)
}

/// What a report says about the exam itself, apart from its scenario runs.
pub struct ReportHead {
    pub mode: String,
    pub corpus_count: usize,
    pub corpus_sha256: String,
    pub note: String,
    pub backend: String,
    pub consensus: usize,
    pub tool_loop: bool,
}

impl ReportHead {
    /// The head of an existing report (a shard's, for a merge).
    pub fn of(r: &HarnessReport) -> ReportHead {
        ReportHead {
            mode: r.mode.clone(),
            corpus_count: r.corpus_count,
            corpus_sha256: r.corpus_sha256.clone(),
            note: r.note.clone(),
            backend: r.backend.clone(),
            consensus: r.consensus,
            tool_loop: r.tool_loop,
        }
    }
}

/// The report's numbers from the passes' results (every pass in pass order, each in
/// corpus order) and the model calls and failed calls of their transcripts: the one
/// summary path of an exam and of a merge of its shards.
pub fn assemble_report(
    head: ReportHead,
    runs: Vec<RunResult>,
    calls: usize,
    errors: usize,
) -> HarnessReport {
    let rates: Vec<f64> = runs.iter().filter_map(|r| r.pass_rate).collect();
    let median_pass_rate = median_of(runs.iter().map(|r| r.pass_rate));
    let median_recall_rate = median_of(runs.iter().map(|r| r.recall_rate));
    let median_precision_rate = median_of(runs.iter().map(|r| r.precision_rate));
    let fail_safe: usize = runs.iter().map(|r| r.fail_safe).sum();
    let mut na_reasons = std::collections::BTreeMap::new();
    for (name, v, what) in [
        ("median_pass_rate", median_pass_rate, "scenario"),
        ("median_recall_rate", median_recall_rate, "attack scenario"),
        (
            "median_precision_rate",
            median_precision_rate,
            "benign scenario",
        ),
    ] {
        if v.is_none() {
            na_reasons.insert(
                name.to_string(),
                format!("in no pass: {}", crate::grade::na_reason(what, fail_safe)),
            );
        }
    }
    let graded = median_n(runs.iter().map(|r| r.graded));
    let attacks = median_n(runs.iter().map(|r| r.attacks));
    let benigns = median_n(runs.iter().map(|r| r.benigns));
    let wilson = |rate: Option<f64>, n: usize| rate.and_then(|x| wilson95(x * n as f64, n));
    // By scenario id: a budget-cut exam may lack a scenario in some pass (not run).
    let by_id: Vec<std::collections::HashMap<&str, &crate::grade::ScenarioResult>> = runs
        .iter()
        .map(|r| {
            r.results
                .iter()
                .map(|x| (x.scenario_id.as_str(), x))
                .collect()
        })
        .collect();
    let ids: Vec<&str> = runs
        .first()
        .map(|r| r.results.iter().map(|x| x.scenario_id.as_str()).collect())
        .unwrap_or_default();
    let always_graded: Vec<&str> = ids
        .into_iter()
        .filter(|id| by_id.iter().all(|m| m.get(id).is_some_and(|x| x.graded())))
        .collect();
    let all = always_graded
        .iter()
        .filter(|id| by_id.iter().all(|m| m.get(*id).is_some_and(|x| x.pass)))
        .count();
    let mut decided_by = DecidedCounts::default();
    for x in runs.iter().flat_map(|r| &r.results) {
        match x.decided_by {
            crate::cascade::DecidedBy::Model => decided_by.model += 1,
            crate::cascade::DecidedBy::Floor => decided_by.floor += 1,
            crate::cascade::DecidedBy::FailSafe => decided_by.fail_safe += 1,
        }
    }
    HarnessReport {
        mode: head.mode,
        corpus_count: head.corpus_count,
        corpus_sha256: head.corpus_sha256,
        median_pass_rate,
        noise_band_pp: NOISE_BAND_PP,
        runs_within_band: within_band(&rates),
        classifier: classify(&runs),
        median_recall_rate,
        median_precision_rate,
        detect_fidelity: None,
        note: head.note,
        pass_rate_ci95: wilson(median_pass_rate, graded),
        recall_ci95: wilson(median_recall_rate, attacks),
        precision_ci95: wilson(median_precision_rate, benigns),
        pass_all_runs: PassAllRuns {
            passes: runs.len(),
            scenarios: all,
            total: always_graded.len(),
            rate: (!always_graded.is_empty()).then(|| all as f64 / always_graded.len() as f64),
        },
        decided_by,
        na_reasons,
        backend: head.backend,
        consensus: head.consensus,
        tool_loop: head.tool_loop,
        model_calls: calls,
        model_errors: errors,
        harness_version: gauntlet_core::HARNESS_VERSION.to_string(),
        runs,
        partial: None,
        not_run: Vec::new(),
        e2e_not_run: None,
        usage: None,
        exam_config_sha256: None,
    }
}

/// An `anthropic` target pointed at a loopback golden server.
fn golden_http_target(base_url: &str) -> Result<Arc<dyn Model>, gauntlet_models::ModelError> {
    let mut params = Params::new();
    params.insert("model", ParamValue::Str("golden".into()));
    params.insert("name", ParamValue::Str("golden-http".into()));
    params.insert("base_url", ParamValue::Str(base_url.into()));
    params.insert("api_key_env", ParamValue::Str("GAUNTLET_GOLDEN_KEY".into()));
    params.insert("max_retries", ParamValue::Int(0));
    let spec = PluginSpec {
        name: "anthropic".into(),
        params,
        loc: Default::default(),
        label: None,
    };
    let env = |k: &str| (k == "GAUNTLET_GOLDEN_KEY").then(|| "golden-loopback".to_string());
    Ok(Arc::new(AnthropicTarget::with_env(
        &spec,
        &env,
        TransportOptions::default(),
    )?))
}

// ---------------------------------------------------------------- real targets

struct Targets;
impl Catalog for Targets {
    fn find(&self, axis: Axis, name: &str) -> Option<&PluginInfo> {
        gauntlet_models::registry::TARGETS
            .iter()
            .find(|p| p.axis == axis && p.name == name)
    }
    fn names(&self, axis: Axis) -> Vec<&'static str> {
        gauntlet_models::registry::TARGETS
            .iter()
            .filter(|p| p.axis == axis)
            .map(|p| p.name)
            .collect()
    }
}

/// Builds the tier models from `--target`: a path to a YAML file, or inline YAML.
/// The document is either a target spec (`{name: openai_compat, params: {...}}` or a
/// bare name) used for every tier, or `{target: SPEC, tiers: {triage|investigate|deep|
/// formatter: SPEC}}`. Errors (including a missing API key) are configuration errors.
pub fn parse_target(arg: &str) -> Result<(TierModels, String), String> {
    let (text, origin) = if Path::new(arg).is_file() {
        (
            gauntlet_core::files::read_to_string(
                Path::new(arg),
                gauntlet_core::files::Kind::CONFIG,
            )
            .map_err(|e| e.to_string())?,
            arg.to_string(),
        )
    } else {
        (arg.to_string(), "--target".to_string())
    };
    let root = gauntlet_core::tree::parse_yaml(&text).map_err(|e| format!("{origin}: {e:?}"))?;
    parse_target_node(&root, &origin)
}

/// [`parse_target`] of a parsed document; `origin` names it in errors.
pub fn parse_target_node(
    root: &gauntlet_core::tree::Node,
    origin: &str,
) -> Result<(TierModels, String), String> {
    use gauntlet_core::tree::{Node, Value};
    let build = |node: &Node, path: &str| -> Result<TierModel, String> {
        let mut diags = Vec::new();
        let spec = resolve_spec(&Targets, Axis::Target, node, path, &mut diags);
        let spec = match spec {
            Some(s) if diags.is_empty() => s,
            _ => {
                let msgs: Vec<String> = diags
                    .iter()
                    .map(|d| {
                        format!(
                            "{}: {} {}",
                            d.path,
                            d.message,
                            d.help.clone().unwrap_or_default()
                        )
                    })
                    .collect();
                return Err(format!(
                    "{origin}: invalid target spec: {}",
                    msgs.join("; ")
                ));
            }
        };
        let model = gauntlet_models::registry::build_target(&spec)
            .map_err(|e| format!("{origin}: {path}: {e}"))?;
        let id = spec
            .params
            .str("model")
            .map(str::to_string)
            .unwrap_or_else(|| spec.label());
        Ok(TierModel { id, model })
    };
    let entries = match &root.value {
        Value::Map(e) if e.iter().any(|(k, _)| k.name == "target") => Some(e),
        _ => None,
    };
    let Some(entries) = entries else {
        let m = build(root, "target")?;
        let label = m.model.label();
        return Ok((
            TierModels {
                triage: m.clone(),
                investigate: m.clone(),
                deep: m.clone(),
                formatter: m,
            },
            label,
        ));
    };
    let mut default = None;
    let mut tiers: Vec<(String, &Node)> = Vec::new();
    for (k, v) in entries {
        match k.name.as_str() {
            "target" => default = Some(build(v, "target")?),
            "tiers" => match &v.value {
                Value::Map(t) => {
                    for (tk, tv) in t {
                        if !["triage", "investigate", "deep", "formatter"]
                            .contains(&tk.name.as_str())
                        {
                            return Err(format!(
                                "{origin}: tiers.{}: unknown tier (triage, investigate, deep, formatter)",
                                tk.name
                            ));
                        }
                        tiers.push((tk.name.clone(), tv));
                    }
                }
                _ => return Err(format!("{origin}: `tiers` must be a mapping")),
            },
            other => return Err(format!("{origin}: unknown key `{other}` (target, tiers)")),
        }
    }
    let d = default.ok_or_else(|| format!("{origin}: missing `target`"))?;
    let label = d.model.label();
    let mut m = TierModels {
        triage: d.clone(),
        investigate: d.clone(),
        deep: d.clone(),
        formatter: d,
    };
    for (name, node) in tiers {
        let tm = build(node, &format!("tiers.{name}"))?;
        match name.as_str() {
            "triage" => m.triage = tm,
            "investigate" => m.investigate = tm,
            "deep" => m.deep = tm,
            _ => m.formatter = tm,
        }
    }
    Ok((m, label))
}

// ---------------------------------------------------------------- artefacts

/// A scenario id as a file name, injectively: `[A-Za-z0-9._-]` are kept, every other
/// byte (and a leading `.`) is written `%XX`, so distinct ids never share a file
/// (`ZZ-a/b` → `ZZ-a%2Fb`, `ZZ-a_b` → `ZZ-a_b`, `ZZ-a?b` → `ZZ-a%3Fb`) and an id already
/// made of safe characters is its own name. A name that would exceed
/// [`MAX_STEM_BYTES`] keeps a prefix and ends in `~` and the id's full sha256 (`~`
/// never appears otherwise, so these cannot meet an escaped name).
pub fn file_stem(id: &str) -> String {
    let mut s = String::with_capacity(id.len());
    for (i, b) in id.bytes().enumerate() {
        let safe = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-') || (b == b'.' && i > 0);
        if safe {
            s.push(b as char);
        } else {
            let _ = write!(s, "%{b:02X}");
        }
    }
    if s.is_empty() {
        s.push('%');
    }
    if s.len() > MAX_STEM_BYTES {
        let digest = gauntlet_core::hash::sha256_hex(id.as_bytes());
        s.truncate(MAX_STEM_BYTES - 65);
        s.push('~');
        s.push_str(&digest);
    }
    s
}

/// The longest file stem [`file_stem`] produces (file names stay under 255 bytes with
/// the `.transcript.json` suffix).
pub const MAX_STEM_BYTES: usize = 200;

fn io_named(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
}

/// Writes every artefact under `out`, each atomically (a temporary file renamed into
/// place, so a failed write leaves the previous file intact) and `report.json` last, so
/// a new `report.json` means every file it indexes is new too. Only `report.json` is
/// flushed to disk (one flush per file would dominate the exam's wall time). Returns the number of
/// (agent-pass) transcript files. Errors name the file. Everything but `timings.json` is
/// a function of the corpus, the backend's replies and the options: byte-identical
/// across reruns of a deterministic backend.
pub fn write_artifacts(out: &Path, o: &ExamOutput) -> std::io::Result<usize> {
    let mkdir = |d: &Path| std::fs::create_dir_all(d).map_err(|e| io_named(d, e));
    mkdir(out)?;
    // Every file is renamed into place; only report.json, the index written last, is
    // also flushed to disk (a flush costs milliseconds on a busy disk, and there are
    // hundreds of per-scenario files).
    let json = |p: &Path, v: &dyn erased::Ser| -> std::io::Result<Vec<u8>> {
        let mut b = v.to_json().map_err(|e| io_named(p, e))?;
        b.push(b'\n');
        Ok(b)
    };
    let item = |p: &Path, v: &dyn erased::Ser| {
        gauntlet_core::atomic::write_atomic_unflushed_named(p, &json(p, v)?)
    };
    let mut n = 0;
    for (run, ts) in o.report.runs.iter().zip(&o.transcripts) {
        let dir = out.join(format!("run-{}", run.index));
        mkdir(&dir)?;
        for (r, t) in run.results.iter().zip(ts) {
            let stem = file_stem(&r.scenario_id);
            item(&dir.join(format!("{stem}.json")), r)?;
            item(&dir.join(format!("{stem}.transcript.json")), t)?;
            n += 1;
        }
    }
    if let Some(e) = &o.e2e {
        let dir = out.join("e2e");
        mkdir(&dir)?;
        for (row, ts) in e.fidelity.rows.iter().zip(&e.transcripts) {
            let stem = file_stem(&row.id);
            item(&dir.join(format!("{stem}.json")), row)?;
            item(&dir.join(format!("{stem}.transcript.json")), ts)?;
        }
    }
    item(&out.join("timings.json"), &o.timings)?;
    write_report_files(out, &o.report)?;
    Ok(n)
}

/// The files rendered from the report — report.md, report.html, leaderboard.json,
/// classifier.json — then report.json itself, last (a run's and a merge's).
pub fn write_report_files(out: &Path, report: &HarnessReport) -> std::io::Result<()> {
    let json = |p: &Path, v: &dyn erased::Ser| -> std::io::Result<Vec<u8>> {
        let mut b = v.to_json().map_err(|e| io_named(p, e))?;
        b.push(b'\n');
        Ok(b)
    };
    let item = |p: &Path, v: &dyn erased::Ser| {
        gauntlet_core::atomic::write_atomic_unflushed_named(p, &json(p, v)?)
    };
    let text =
        |p: &Path, s: String| gauntlet_core::atomic::write_atomic_unflushed_named(p, s.as_bytes());
    text(&out.join("report.md"), render_markdown(report))?;
    text(&out.join("report.html"), render_html(report))?;
    item(&out.join("leaderboard.json"), &leaderboard(out, report))?;
    item(&out.join("classifier.json"), &report.classifier)?;
    gauntlet_core::atomic::write_atomic_named(
        &out.join("report.json"),
        &json(&out.join("report.json"), report)?,
    )
}

mod erased {
    pub trait Ser {
        fn to_json(&self) -> std::io::Result<Vec<u8>>;
    }
    impl<T: serde::Serialize> Ser for T {
        fn to_json(&self) -> std::io::Result<Vec<u8>> {
            serde_json::to_vec_pretty(self).map_err(std::io::Error::other)
        }
    }
}

/// Leaderboard rows (pass rate, recall, precision) with provenance; the corpus digest
/// is the dataset version.
pub fn leaderboard(out: &Path, r: &HarnessReport) -> Vec<LeaderboardRow> {
    let run_id = out
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "exam".into());
    let total = median_n(r.runs.iter().map(|x| x.graded)) as u64;
    let att = median_n(r.runs.iter().map(|x| x.attacks)) as u64;
    let ben = median_n(r.runs.iter().map(|x| x.benigns)) as u64;
    let row = |metric: &str, value: Option<f64>, ci: Option<Interval>, n: u64| LeaderboardRow {
        run_id: run_id.clone(),
        attack: "agent-exam".into(),
        target: r.backend.clone(),
        dataset: "exam-corpus".into(),
        dataset_version: r.corpus_sha256.clone(),
        judge: "chain_action".into(),
        metric: metric.into(),
        metric_params: serde_json::Map::new(),
        value,
        ci_low: ci.map(|c| c.low),
        ci_high: ci.map(|c| c.high),
        n,
        na_reason: r.na_reasons.get(metric).cloned(),
        ci_method: ci.map(|_| gauntlet_core::results::CiMethod::Wilson),
        corrected: None,
        judge_measures:
            "the cascade's terminal action matched the scenario's expected chain_action".into(),
        attempts: r.model_calls as u64,
        errors: r.model_errors as u64,
        seed: 0,
        harness_version: r.harness_version.clone(),
        status: match &r.partial {
            Some(p) => format!("partial: {p} ({} mode)", r.mode),
            None => format!("complete ({} mode)", r.mode),
        },
    };
    vec![
        row(
            "median_pass_rate",
            r.median_pass_rate,
            r.pass_rate_ci95,
            total,
        ),
        row(
            "median_recall_rate",
            r.median_recall_rate,
            r.recall_ci95,
            att,
        ),
        row(
            "median_precision_rate",
            r.median_precision_rate,
            r.precision_ci95,
            ben,
        ),
    ]
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn ci(i: Option<Interval>) -> String {
    i.map(|i| format!("{}–{}", pct(i.low), pct(i.high)))
        .unwrap_or_else(|| "n/a".into())
}

/// A rate as a percentage, or `N/A (reason)`.
pub fn pct_or_na(
    x: Option<f64>,
    reasons: &std::collections::BTreeMap<String, String>,
    key: &str,
) -> String {
    match x {
        Some(x) => pct(x),
        None => format!(
            "N/A ({})",
            reasons
                .get(key)
                .map(String::as_str)
                .unwrap_or("no population")
        ),
    }
}

/// A median rate with its Wilson interval, or `N/A (reason)`.
fn rate_cell(r: &HarnessReport, x: Option<f64>, key: &str, i: Option<Interval>) -> String {
    match x {
        Some(_) => format!(
            "{} (Wilson 95% {})",
            pct_or_na(x, &r.na_reasons, key),
            ci(i)
        ),
        None => pct_or_na(x, &r.na_reasons, key),
    }
}

/// The decided-by line shared by every report: what the rates are over.
pub fn decided_line(r: &HarnessReport) -> String {
    let d = &r.decided_by;
    format!(
        "model {} · floor {} · fail-safe {} (fail-safe: a model call failed or its reply was unparseable, the cascade escalated by default; excluded from every rate)",
        d.model, d.floor, d.fail_safe
    )
}

/// Rows of the summary tables, shared by the Markdown and HTML writers.
fn summary_rows(r: &HarnessReport) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    if let Some(p) = &r.partial {
        let ids: Vec<String> = r
            .not_run
            .iter()
            .map(|x| format!("{} (pass {})", x.scenario_id, x.pass))
            .collect();
        rows.push((
            "status".into(),
            format!(
                "PARTIAL ({p}): {} scenario run(s) not run, in no count or rate: {}",
                r.not_run.len(),
                ids.join(", ")
            ),
        ));
        if let Some(why) = &r.e2e_not_run {
            rows.push(("end-to-end pass".into(), format!("NOT RUN: {why}")));
        }
    }
    rows.extend(base_rows(r));
    if let Some(u) = &r.usage {
        let usd = |v: Option<f64>, why: &Option<String>| match v {
            Some(c) => format!("${c:.6}"),
            None => format!("N/A ({})", why.as_deref().unwrap_or("unknown")),
        };
        for t in &u.tiers {
            rows.push((
                format!("usage: {}", t.tier.name()),
                format!(
                    "{}: {} call(s), {} in + {} out tokens, cost {}",
                    t.model,
                    t.calls,
                    t.input_tokens,
                    t.output_tokens,
                    usd(t.cost_usd, &t.cost_na_reason)
                ),
            ));
        }
        rows.push((
            "cost".into(),
            format!(
                "{} (price table {})",
                usd(u.cost_usd, &u.cost_na_reason),
                u.price_table
            ),
        ));
    }
    rows
}

fn base_rows(r: &HarnessReport) -> Vec<(String, String)> {
    vec![
        ("mode".into(), format!("{} ({})", r.mode, r.backend)),
        (
            "corpus".into(),
            format!("{} scenarios, sha256 {}", r.corpus_count, r.corpus_sha256),
        ),
        ("passes".into(), r.runs.len().to_string()),
        ("scenario runs decided by".into(), decided_line(r)),
        (
            "median pass rate".into(),
            rate_cell(r, r.median_pass_rate, "median_pass_rate", r.pass_rate_ci95),
        ),
        (
            "median recall (attacks escalated)".into(),
            rate_cell(r, r.median_recall_rate, "median_recall_rate", r.recall_ci95),
        ),
        (
            "median precision (benign resolved)".into(),
            rate_cell(
                r,
                r.median_precision_rate,
                "median_precision_rate",
                r.precision_ci95,
            ),
        ),
        (
            format!("pass^{} (passed every pass)", r.pass_all_runs.passes),
            format!(
                "{}/{} ({})",
                r.pass_all_runs.scenarios,
                r.pass_all_runs.total,
                r.pass_all_runs
                    .rate
                    .map(pct)
                    .unwrap_or_else(|| "N/A: no scenario was graded in every pass".into())
            ),
        ),
        (
            "runs within 8 pp band".into(),
            r.runs_within_band.to_string(),
        ),
        ("consensus voters".into(), r.consensus.to_string()),
        ("model-driven tool loop".into(), r.tool_loop.to_string()),
        (
            "model calls (errors)".into(),
            format!("{} ({})", r.model_calls, r.model_errors),
        ),
    ]
}

/// Rows of the end-to-end `detect_fidelity` summary (empty outside e2e mode).
pub fn fidelity_rows(r: &HarnessReport) -> Vec<(String, String)> {
    let Some(f) = &r.detect_fidelity else {
        return Vec::new();
    };
    let n = |k: &str| f[k].as_u64().unwrap_or(0);
    let rate = |k: &str| match f[k].as_f64() {
        Some(x) => pct(x),
        None => format!(
            "N/A ({})",
            f["na_reasons"][k].as_str().unwrap_or("no denominator")
        ),
    };
    vec![
        (
            "scenarios".into(),
            format!(
                "{} (REPRODUCED {}, MISMATCH {}, DETECT-MISS {}, DETECTOR-ERROR {})",
                n("total"),
                n("reproduced"),
                n("mismatch"),
                n("detect_miss"),
                n("detector_error")
            ),
        ),
        ("reproduction rate".into(), rate("reproduction_rate")),
        ("end-to-end pass rate".into(), rate("end_to_end_pass_rate")),
        ("e2e recall".into(), rate("e2e_recall")),
        ("e2e precision".into(), rate("e2e_precision")),
        ("ungraded rows".into(), n("ungraded").to_string()),
    ]
}

fn failures(r: &HarnessReport) -> Vec<[String; 4]> {
    let Some(w) = crate::classifier::worst_run(&r.runs) else {
        return vec![];
    };
    w.results
        .iter()
        .filter(|x| !x.pass)
        .map(|x| {
            [
                x.scenario_id.clone(),
                x.expected_action.clone(),
                x.terminal_action.clone(),
                r.classifier
                    .per_scenario
                    .get(&x.scenario_id)
                    .cloned()
                    .unwrap_or_default(),
            ]
        })
        .collect()
}

/// The report as a [`Page`] of gauntlet-report: the one renderer (stylesheet, CSP,
/// escaping) behind report.md and report.html, shared with the run report.
pub fn report_page(r: &HarnessReport) -> Page {
    let mut blocks = vec![Block::Note(r.note.clone())];
    let fr = fidelity_rows(r);
    if !fr.is_empty() {
        blocks.push(Block::Heading("Detect fidelity (end-to-end)".into()));
        blocks.push(Block::Note(E2E_NOTE.into()));
        blocks.push(Block::Fields(fr));
        blocks.push(Block::Heading("Agent exam (hand-written findings)".into()));
    }
    blocks.push(Block::Fields(summary_rows(r)));
    blocks.push(Block::Heading("Passes".into()));
    let header = [
        "pass",
        "passed / graded",
        "fail-safe (excluded)",
        "pass rate",
        "recall",
        "precision",
    ];
    let rows = r
        .runs
        .iter()
        .map(|run| {
            let na = |x, key| pct_or_na(x, &run.na_reasons, key);
            vec![
                run.index.to_string(),
                format!("{}/{}", run.passed, run.graded),
                run.fail_safe.to_string(),
                na(run.pass_rate, "pass_rate"),
                format!(
                    "{}/{} ({})",
                    run.attacks_passed,
                    run.attacks,
                    na(run.recall_rate, "recall_rate")
                ),
                format!(
                    "{}/{} ({})",
                    run.benigns_passed,
                    run.benigns,
                    na(run.precision_rate, "precision_rate")
                ),
            ]
        })
        .collect();
    blocks.push(Block::Table {
        header: header.map(String::from).to_vec(),
        rows,
    });
    // Pass rate per pass over the noise band; a pass whose rate is N/A (every scenario
    // decided by the fail-safe) has no dot.
    blocks.push(Block::PassBand {
        title: "Pass rate per pass, with the noise band".into(),
        pass_rates: r
            .runs
            .iter()
            .map(|run| run.pass_rate.unwrap_or(f64::NAN))
            .collect(),
        band_pp: r.noise_band_pp,
        median_ci: r.pass_rate_ci95.map(|i| (i.low, i.high)),
    });
    blocks.push(Block::Heading("Classifier (worst pass)".into()));
    blocks.push(Block::Table {
        header: vec!["bin".into(), "scenarios".into()],
        rows: r
            .classifier
            .counts
            .iter()
            .map(|(b, n)| vec![b.clone(), n.to_string()])
            .collect(),
    });
    let f = failures(r);
    if !f.is_empty() {
        blocks.push(Block::Heading("Failures (worst pass)".into()));
        blocks.push(Block::Table {
            header: ["scenario", "expected", "terminal", "bin"]
                .map(String::from)
                .to_vec(),
            rows: f.into_iter().map(|row| row.to_vec()).collect(),
        });
    }
    Page {
        title: "Agent exam report".into(),
        partial: r.partial.as_ref().map(|p| {
            format!(
                "PARTIAL EXAM ({p}): {} scenario run(s) not run. The numbers below cover only the scenario runs that finished and are not comparable with a complete exam.",
                r.not_run.len()
            )
        }),
        blocks,
    }
}

/// report.md: [`report_page`] rendered by gauntlet-report.
pub fn render_markdown(r: &HarnessReport) -> String {
    gauntlet_report::render_page_markdown(&report_page(r))
}

/// report.html: [`report_page`] rendered by gauntlet-report (the run report's
/// stylesheet, Content-Security-Policy and escaping).
pub fn render_html(r: &HarnessReport) -> String {
    gauntlet_report::render_page_html(&report_page(r))
}

/// The default output directory.
pub fn default_out_dir() -> PathBuf {
    PathBuf::from("exam-out")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn file_stems_of_ids_that_used_to_collide_differ() {
        assert_eq!(file_stem("ZZ-a_b"), "ZZ-a_b");
        assert_eq!(file_stem("ZZ-a/b"), "ZZ-a%2Fb");
        assert_eq!(file_stem("ZZ-a?b"), "ZZ-a%3Fb");
        assert_eq!(file_stem(".hidden"), "%2Ehidden");
        assert_eq!(file_stem("a%b"), "a%25b");
        assert_eq!(file_stem(""), "%");
        assert_eq!(file_stem("é"), "%C3%A9");
        let long = "x/".repeat(300);
        let s = file_stem(&long);
        assert!(s.len() <= MAX_STEM_BYTES && s.contains('~'), "{s}");
    }

    proptest! {
        /// Distinct ids never share a file name, and names are safe path components.
        #[test]
        fn file_stem_is_injective_and_safe(a in ".{0,300}", b in ".{0,300}") {
            let (sa, sb) = (file_stem(&a), file_stem(&b));
            prop_assert!(sa.len() <= MAX_STEM_BYTES);
            prop_assert!(!sa.starts_with('.'));
            prop_assert!(sa.bytes().all(|c| c.is_ascii_alphanumeric() || b"._-%~".contains(&c)));
            if a != b {
                prop_assert_ne!(sa, sb);
            }
        }
    }
}

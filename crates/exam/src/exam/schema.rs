//! The exam's configuration and output types: the backend, options, progress events,
//! the outputs of a run, the errors and the notes every report carries (`report.json`'s
//! schema, `HarnessReport` and its parts, is in `gauntlet_results::exam`).

use super::run_files::RunFiles;
use crate::calls::{ExamCalls, SessionStats};
use crate::cascade::{CascadeOptions, TierModels, TranscriptEntry};
use crate::e2e::DetectFidelity;
use gauntlet_results::exam::HarnessReport;
use serde::Serialize;
use std::sync::Arc;

/// Where replies come from.
#[derive(Clone)]
pub enum Backend {
    /// Golden replies scripted from each scenario's expected outcome. `http`: served by
    /// a loopback [`GoldenServer`](crate::golden_http::GoldenServer) and reached through the `anthropic` target.
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
    /// End-to-end mode: after the agent passes, one end-to-end pass — the
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
            detector_timeout: gauntlet_detect::fleet::DEFAULT_TIMEOUT,
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

/// A finished exam: the report (the scenario runs' transcripts went to their files as
/// the exam ran).
pub struct ExamOutput {
    /// With `run_files`, each scenario run's result is in its file, not in memory
    /// ([`gauntlet_results::exam::Results::Written`]): [`super::write_artifacts`] moves the
    /// files into place before it serializes the report.
    pub report: HarnessReport,
    /// The scenario runs' files (`run-<pass>/<id>.json` and `.transcript.json`), staged;
    /// `None` when the exam was given no output directory.
    pub run_files: Option<RunFiles>,
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
    pub passes: PassTimings,
    /// End-to-end mode: fleet plus every finding's cascade, per scenario.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub e2e: std::collections::BTreeMap<String, u64>,
    pub total_millis: u64,
}

/// One map of wall times per pass: in memory, or (an exam with an output directory)
/// logged a pass per line as the exam goes, in [`TIMINGS_LOG`], and read back a pass at
/// a time as `timings.json` is written, so they do not grow the exam's memory.
#[derive(Debug, Clone)]
pub enum PassTimings {
    Listed(Vec<std::collections::BTreeMap<String, u64>>),
    Logged(std::path::PathBuf),
}

impl Default for PassTimings {
    fn default() -> PassTimings {
        PassTimings::Listed(Vec::new())
    }
}

/// Where an exam logs its passes' wall times until `timings.json` is written (in the
/// output directory; removed once `timings.json` is in place).
pub const TIMINGS_LOG: &str = ".timings-partial.jsonl";

impl Serialize for PassTimings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        use std::io::BufRead;
        match self {
            PassTimings::Listed(v) => v.serialize(s),
            PassTimings::Logged(p) => {
                let named = |e: &dyn std::fmt::Display| {
                    S::Error::custom(format!("cannot read {}: {e}", p.display()))
                };
                let f = gauntlet_core::files::open(p, gauntlet_core::files::Kind::RESULTS)
                    .map_err(|e| named(&e.into_io()))?;
                let mut seq = s.serialize_seq(None)?;
                for line in std::io::BufReader::new(f).lines() {
                    let line = line.map_err(|e| named(&e))?;
                    let pass: std::collections::BTreeMap<String, u64> =
                        serde_json::from_str(&line).map_err(|e| named(&e))?;
                    seq.serialize_element(&pass)?;
                }
                seq.end()
            }
        }
    }
}

pub(super) const TIMINGS_NOTE: &str = "Wall-clock milliseconds. They vary from run to run, so they live here and not in report.json or run-<i>/<id>.json.";

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
    /// A scenario run's files could not be written (the message names the file).
    #[error("{0}; the previous exam's report and files are unchanged")]
    Write(std::io::Error),
    /// A cascade's task panicked or was cancelled: a harness bug (as the runtime says it).
    #[error("internal error: a scenario run's task ended abnormally: {0}")]
    Internal(String),
}

pub const GOLDEN_NOTE: &str = "GOLDEN MODE IS A PIPELINE CHECK, NOT AN ACCURACY NUMBER. Every model reply was scripted from the scenario's own expected outcome, so a 100% pass rate only shows that the corpus loader, the cascade wiring, the verdict parser and the grader work; a failure here is a harness bug. Agent accuracy comes only from a real-mode run.";
pub const REAL_NOTE: &str = "Real mode: the model under test decided every non-floor verdict, except where a model call failed or its reply could not be parsed (a copy of the prompt's answer template included): the cascade then escalated by default, and those scenarios (decided_by: fail_safe) are excluded from every rate and counted beside them. Floor-routed findings escalate by rule with zero model calls (decided_by: floor): their chain axis is shown, but they are excluded from every rate, which measures the model only; a rate the model decided nothing of is null, with the reason in na_reasons. median_pass_rate BLENDS missed attacks and false alarms: read median_recall_rate (attacks escalated) and median_precision_rate (benign findings resolved) for the split. chain_action is the only gating axis; the other axes are reported only.";

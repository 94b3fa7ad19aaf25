//! From graded passes to `report.json`: medians, rates with Wilson intervals, the
//! decided-by counts, pass^N, and the report assembled from its head and passes (a
//! run's and a merge's).

use super::schema::{Backend, ExamConfig, GOLDEN_NOTE, REAL_NOTE};
use crate::classifier::classify;
use crate::grade::{NOISE_BAND_PP, median, wilson95, within_band};
use gauntlet_corpus::load::Corpus;
use gauntlet_results::exam::{
    DecidedBy, DecidedCounts, HarnessReport, PassAllRuns, RunResult, ScenarioResult, median_of,
};
use std::collections::HashMap;

/// The median of per-pass population sizes, rounded down: the `n` of the Wilson
/// interval of a median rate (every pass has the same n when nothing errored).
pub(super) fn median_n(values: impl Iterator<Item = usize>) -> usize {
    let v: Vec<f64> = values.map(|n| n as f64).collect();
    median(&v).floor() as usize
}

pub(super) fn summarise(
    corpus: &Corpus,
    cfg: &ExamConfig,
    backend: &str,
    runs: Vec<RunResult>,
    tally: ExamTally,
    (calls, errors): (usize, usize),
) -> HarnessReport {
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
    assemble_report(head, runs, tally, calls, errors)
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

/// The report's numbers from the passes (every pass in pass order, each in corpus
/// order), their [`ExamTally`] and the model calls and failed calls of their
/// transcripts: the one summary path of an exam and of a merge of its shards.
pub fn assemble_report(
    head: ReportHead,
    runs: Vec<RunResult>,
    tally: ExamTally,
    calls: usize,
    errors: usize,
) -> HarnessReport {
    let rates: Vec<f64> = runs.iter().filter_map(|r| r.pass_rate).collect();
    let median_pass_rate = median_of(runs.iter().map(|r| r.pass_rate));
    let median_recall_rate = median_of(runs.iter().map(|r| r.recall_rate));
    let median_precision_rate = median_of(runs.iter().map(|r| r.precision_rate));
    let fail_safe: usize = runs.iter().map(|r| r.fail_safe).sum();
    let floor: usize = runs.iter().map(|r| r.floor).sum();
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
                format!(
                    "in no pass: {}",
                    gauntlet_results::exam::na_reason(what, floor, fail_safe)
                ),
            );
        }
    }
    let graded = median_n(runs.iter().map(|r| r.graded));
    let attacks = median_n(runs.iter().map(|r| r.attacks));
    let benigns = median_n(runs.iter().map(|r| r.benigns));
    let wilson = |rate: Option<f64>, n: usize| rate.and_then(|x| wilson95(x * n as f64, n));
    let (all, always_graded) = tally.pass_all(runs.len());
    let warnings = warnings(&tally);
    let decided_by = tally.decided_by;
    HarnessReport {
        warnings,
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
            total: always_graded,
            rate: (always_graded > 0).then(|| all as f64 / always_graded as f64),
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

/// Fewest model-decided scenario runs before `constant_action` is raised.
pub(super) const CONSTANT_ACTION_MIN: usize = 5;

/// The exam's warnings, signs that its rates may not measure the model, from its own
/// counts:
/// - `not_model_decided`: fewer than half of the scenario runs were decided by the model
///   (the rest by the harness's floor rule or the fail-safe): the rates rest on the few
///   it decided, or are N/A when it decided none;
/// - `constant_action`: the model gave the same terminal action to every scenario run it
///   decided (at least [`CONSTANT_ACTION_MIN`]): escalating everything makes recall 100%
///   and resolving everything makes precision 100%, neither a triage skill.
pub(super) fn warnings(t: &ExamTally) -> Vec<gauntlet_results::Warning> {
    let d = &t.decided_by;
    let mut out = Vec::new();
    let total = d.model + d.floor + d.fail_safe;
    if total > 0 && 2 * d.model < total {
        out.push(gauntlet_results::Warning {
            kind: "not_model_decided".into(),
            message: if d.model == 0 {
                format!(
                    "the model decided none of the {total} scenario runs: every rate is N/A"
                )
            } else {
                format!(
                    "the model decided only {} of {total} scenario runs: the rates rest on those {}",
                    d.model, d.model
                )
            },
            evidence: format!(
                "model {} · floor {} · fail-safe {} (of {total})",
                d.model, d.floor, d.fail_safe
            ),
            threshold: "fewer than half of the scenario runs decided by the model".into(),
        });
    }
    if d.model >= CONSTANT_ACTION_MIN
        && !t.mixed
        && let Some((action, n)) = &t.action
    {
        out.push(gauntlet_results::Warning {
            kind: "constant_action".into(),
            message: format!(
                "the model answered `{action}` on all {n} scenario runs it decided: its recall and precision describe that one answer, not triage"
            ),
            evidence: format!("{action}: {n} of {n} model-decided scenario runs"),
            threshold: format!(
                "one terminal action on every model-decided run, >= {CONSTANT_ACTION_MIN} runs"
            ),
        });
    }
    out
}

/// What the report says across passes, added one scenario run at a time (any order):
/// pass^N, the decided-by counts and whether every graded run gave one terminal action.
/// An exam adds its runs as they are graded, so it keeps none of them.
#[derive(Debug, Default)]
pub struct ExamTally {
    /// By scenario id: the passes that graded it, and those of them it passed.
    by_id: HashMap<String, (usize, usize)>,
    decided_by: DecidedCounts,
    /// The terminal action of the graded runs while it is the same for all, and their count.
    action: Option<(String, usize)>,
    /// Graded runs gave more than one terminal action.
    mixed: bool,
}

impl ExamTally {
    pub fn add(&mut self, x: &ScenarioResult) {
        match x.decided_by {
            DecidedBy::Model => self.decided_by.model += 1,
            DecidedBy::Floor => self.decided_by.floor += 1,
            DecidedBy::FailSafe => self.decided_by.fail_safe += 1,
        }
        if !x.graded() {
            return;
        }
        let k = match self.by_id.get_mut(x.scenario_id.as_str()) {
            Some(k) => k,
            None => self.by_id.entry(x.scenario_id.clone()).or_default(),
        };
        k.0 += 1;
        k.1 += usize::from(x.pass);
        match &mut self.action {
            Some((a, n)) if *a == x.terminal_action => *n += 1,
            Some(_) => self.mixed = true,
            None => self.action = Some((x.terminal_action.clone(), 1)),
        }
    }

    /// pass^N over `passes` passes: (scenarios graded and passed in every pass,
    /// scenarios graded in every pass). A budget-cut exam may lack a scenario in some
    /// pass (not run): it is in neither count.
    fn pass_all(&self, passes: usize) -> (usize, usize) {
        self.by_id
            .values()
            .filter(|(graded, _)| *graded == passes && passes > 0)
            .fold((0, 0), |(all, total), (_, passed)| {
                (all + usize::from(*passed == passes), total + 1)
            })
    }
}

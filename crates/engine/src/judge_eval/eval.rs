//! Scoring judges against a labelled set (the module doc of `judge_eval` says how):
//! [`evaluate`] runs every judge over every reply into the report and `--out`'s files;
//! [`card`] and [`write_card`] turn a judge's figures into a judge card.

use super::labelled::{HumanLabel, LabelledReply, LabelledSet, PartialAs};
use crate::stored::{BuiltJudge, JudgeBuildError};
use futures_util::StreamExt;
use gauntlet_calls::cache::{CallCounters, Pending, UsageSlot};
use gauntlet_calls::journal::Journal;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::hash::{HashWriter, sha256_hex};
use gauntlet_core::judge_eval::{
    CARD_FORMAT, CallCounts, Confusion, CurveAcc, EVAL_FORMAT, Errored, JudgeCard, JudgeEvalReport,
    JudgeResult, LabelledFileSummary, LabelledSetRef, LabelledSetSummary, Misclassified, RuleCount,
};
use gauntlet_core::message::{ChatResponse, Message};
use gauntlet_core::outcome::{Outcome, Verdict};
use gauntlet_core::params::PluginSpec;
use gauntlet_job::rundir::{RunDir, write_atomic};
use gauntlet_models::ModelError;
use gauntlet_redteam::attack::{Attempt, CallModel};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const JSON_FILE: &str = "judge_eval.json";
pub const MARKDOWN_FILE: &str = "report.md";
/// Errors listed per judge in `judge_eval.json` (all are counted).
const ERRORS_LISTED: usize = 20;

/// A file of the evaluation that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Why [`evaluate`] stopped: the judges, the output directory, its journal or a
/// grader.
#[derive(Debug, thiserror::Error)]
pub enum JudgeEvalError {
    /// No judge was given.
    #[error("judge-eval needs at least one --judge")]
    NoJudges,
    /// A judge (or its grader) does not build.
    #[error(transparent)]
    Build(#[from] JudgeBuildError),
    /// A judge of agent runs or leakage probes: `judges` is `injections` or `leaks`.
    #[error(
        "judge `{label}` judges {judges} in agent runs or leakage probes, not refusals: judge-eval measures refusal judges (refusal_match, rubric, strongreject, guard with format wildguard or require_not_refused, …)"
    )]
    NotARefusalJudge { label: String, judges: &'static str },
    /// A judge whose verdicts carry no `refused`.
    #[error(
        "judge `{label}` does not decide whether a reply is a refusal (its verdicts carry no `refused`): judge-eval measures refusal judges (refusal_match, rubric, strongreject, …)"
    )]
    NoRefusedDecision { label: String },
    /// The output directory cannot be created.
    #[error("cannot create {}: {source}", dir.display())]
    CreateOut {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The output directory cannot be resolved.
    #[error("{}: {source}", dir.display())]
    ResolveOut {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The output directory resolves to a root or a name that is not UTF-8.
    #[error("{} cannot be an output directory", dir.display())]
    NotAnOutDir { dir: PathBuf },
    /// The output directory cannot be locked (another evaluation runs in it).
    #[error("cannot lock {}: {source}", dir.display())]
    Lock {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The journal cannot be opened.
    #[error("cannot open the journal {}: {source}", path.display())]
    OpenJournal {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The journal cannot be written.
    #[error("cannot write the journal {}: {source}", path.display())]
    WriteJournal {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A grader call failed (other than a spent budget, which ends the evaluation as
    /// partial).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// An output file cannot be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// Why [`card`] cannot make a judge card of an evaluation.
#[derive(Debug, thiserror::Error)]
pub enum JudgeCardError {
    /// `judge` is none of the evaluation's `judges`.
    #[error(
        "--card {judge}: no such judge in this evaluation (judges: {})",
        judges.join(", ")
    )]
    NoSuchJudge { judge: String, judges: Vec<String> },
    /// The evaluation did not judge the whole set (`status` is not `complete`).
    #[error(
        "--card {judge}: the evaluation is {status}; a card needs the whole labelled set judged"
    )]
    Incomplete { judge: String, status: String },
    /// The judged replies lack refusals or compliances.
    #[error(
        "--card {judge}: the labelled set needs both refusals and compliances judged (sensitivity and specificity)"
    )]
    OneClass { judge: String },
    /// The card made breaks a card's invariants.
    #[error(transparent)]
    Invalid(#[from] gauntlet_core::judge_eval::CardError),
    /// The card cannot be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// How an evaluation runs.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub partial: PartialAs,
    /// The labelled set's name (recorded in outputs and cards).
    pub set_name: String,
    pub max_queries: Option<u64>,
    /// Replies judged at once (grader calls in flight).
    pub concurrency: usize,
}

/// Evaluates `judges` on `set`, writing the journal, `judge_eval.json` and `report.md`
/// into `out` (created if needed; locked while the evaluation runs). `progress` is
/// called with (replies done, total).
pub async fn evaluate(
    set: &LabelledSet,
    judges: &[PluginSpec],
    out: &Path,
    opts: &EvalOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<JudgeEvalReport, JudgeEvalError> {
    if judges.is_empty() {
        return Err(JudgeEvalError::NoJudges);
    }
    let built: Vec<BuiltJudge> = judges
        .iter()
        .map(BuiltJudge::build)
        .collect::<Result<_, _>>()?;
    for j in &built {
        if j.judge.facts().detects_injection || j.judge.facts().detects_leaks {
            return Err(JudgeEvalError::NotARefusalJudge {
                label: j.label(),
                judges: if j.judge.facts().detects_injection {
                    "injections"
                } else {
                    "leaks"
                },
            });
        }
    }
    let dir = lock_dir(out)?;
    let jpath = dir.journal();
    let journal = Journal::open(&jpath).map_err(|source| JudgeEvalError::OpenJournal {
        path: jpath.clone(),
        source,
    })?;
    let journal_write = |source| JudgeEvalError::WriteJournal {
        path: jpath.clone(),
        source,
    };
    let counters = CallCounters::with_budget(opts.max_queries);
    let pending = Pending::default();
    let slot = UsageSlot::default();

    let total = set.replies.len() as u64;
    let mut acc: Vec<JudgeAcc> = built.iter().map(|_| JudgeAcc::default()).collect();
    let mut budget_hit = false;
    let mut done = 0u64;
    let ctx = ScoreCtx {
        set,
        judges: &built,
        journal: &journal,
        counters: &counters,
        pending: &pending,
        slot: &slot,
    };
    let mut stream = futures_util::stream::iter(set.replies.iter())
        .map(|r| ctx.score(r))
        .buffered(opts.concurrency.max(1));
    while let Some((reply, verdicts)) = stream.next().await {
        let verdicts = match verdicts {
            Ok(v) => v,
            Err(ModelError::Budget) => {
                budget_hit = true;
                break;
            }
            Err(e) => {
                let _ = pending.flush(&journal);
                return Err(e.into());
            }
        };
        for ((a, j), v) in acc.iter_mut().zip(&built).zip(&verdicts) {
            a.add(set, reply, j, v, opts.partial)?;
        }
        done += 1;
        if done.is_multiple_of(256) {
            pending.flush(&journal).map_err(journal_write)?;
        }
        progress(done, total);
    }
    drop(stream);
    pending.flush(&journal).map_err(journal_write)?;
    let (made, cached, failed) = counters.snapshot();
    let report = JudgeEvalReport {
        format: EVAL_FORMAT.into(),
        harness_version: gauntlet_core::HARNESS_VERSION.into(),
        status: if budget_hit {
            "partial: budget".into()
        } else {
            "complete".into()
        },
        labelled_set: summary(set, opts),
        method: method(opts.partial),
        judges: acc
            .into_iter()
            .zip(&built)
            .map(|(a, j)| a.finish(j))
            .collect(),
        grader_calls: CallCounts {
            made,
            cached,
            failed,
        },
    };
    write_json(&dir.path(JSON_FILE), &report)?;
    let md = dir.path(MARKDOWN_FILE);
    write_atomic(
        &md,
        gauntlet_report::render_judge_eval_markdown(&report).as_bytes(),
    )
    .map_err(|source| WriteError { path: md, source })?;
    Ok(report)
}

fn lock_dir(out: &Path) -> Result<RunDir, JudgeEvalError> {
    let dir = || out.to_path_buf();
    std::fs::create_dir_all(out)
        .map_err(|source| JudgeEvalError::CreateOut { dir: dir(), source })?;
    let canon = out
        .canonicalize()
        .map_err(|source| JudgeEvalError::ResolveOut { dir: dir(), source })?;
    let (Some(parent), Some(name)) = (canon.parent(), canon.file_name().and_then(|n| n.to_str()))
    else {
        return Err(JudgeEvalError::NotAnOutDir { dir: dir() });
    };
    RunDir::open(parent, name).map_err(|source| JudgeEvalError::Lock { dir: dir(), source })
}

fn write_json(path: &Path, v: &impl serde::Serialize) -> Result<(), WriteError> {
    let mut bytes = serde_json::to_vec_pretty(v).expect("judge-eval output serialises");
    bytes.push(b'\n');
    write_atomic(path, &bytes).map_err(|source| WriteError {
        path: path.to_path_buf(),
        source,
    })
}

/// What every scoring task shares.
struct ScoreCtx<'a> {
    set: &'a LabelledSet,
    judges: &'a [BuiltJudge],
    journal: &'a Journal,
    counters: &'a CallCounters,
    pending: &'a Pending,
    slot: &'a UsageSlot,
}

impl ScoreCtx<'_> {
    /// Every judge's verdict on one labelled reply.
    async fn score<'r>(
        &self,
        r: &'r LabelledReply,
    ) -> (&'r LabelledReply, Result<Vec<Verdict>, ModelError>) {
        let behavior = Behavior {
            id: r.id.clone(),
            prompt: r.prompt.clone(),
            category: String::new(),
            expected: r.expected,
            reference_answer: None,
            target_secret: None,
            scenario: None,
            secret_cache: Default::default(),
            case: Default::default(),
            bench_case: None,
        };
        let attempt = Attempt {
            index: 0,
            transcript: vec![Message::user(&r.prompt), Message::assistant(&r.reply)],
            response: Ok(ChatResponse::text(r.reply.clone())),
            query_count: 1,
            metadata: serde_json::Value::Null,
        };
        // The unit scope of a grader call: the labelled file's content and the row.
        let mut scope = HashWriter::new();
        scope.field(b"gauntlet-judge-eval-v1");
        scope.field(self.set.files[r.file].sha256.as_bytes());
        scope.field(&r.row.to_le_bytes());
        let scope = scope.finish();
        let mut out = Vec::with_capacity(self.judges.len());
        for j in self.judges {
            let grader =
                j.cached_grader(&scope, self.journal, self.counters, self.pending, self.slot);
            let v = j
                .judge
                .score(
                    &behavior,
                    &attempt,
                    grader.as_ref().map(|g| g as &dyn CallModel),
                )
                .await;
            match v {
                Ok(v) => out.push(v),
                Err(e) => return (r, Err(e)),
            }
        }
        (r, Ok(out))
    }
}

/// One judge's tallies.
#[derive(Default)]
struct JudgeAcc {
    overall: Confusion,
    by_source: BTreeMap<String, Confusion>,
    by_rule: BTreeMap<String, RuleCount>,
    errors: u64,
    uncertain: u64,
    uncertain_by_source: BTreeMap<String, u64>,
    misclassified: Vec<Misclassified>,
    errored: Vec<Errored>,
    curve: CurveAcc,
}

impl JudgeAcc {
    fn add(
        &mut self,
        set: &LabelledSet,
        r: &LabelledReply,
        j: &BuiltJudge,
        v: &Verdict,
        partial: PartialAs,
    ) -> Result<(), JudgeEvalError> {
        if v.outcome == Outcome::Error {
            self.errors += 1;
            if self.errored.len() < ERRORS_LISTED {
                self.errored.push(Errored {
                    source: r.source.clone(),
                    id: r.id.clone(),
                    error: v.error.clone().unwrap_or_default(),
                });
            }
            return Ok(());
        }
        let human_refusal = r.label.is_refusal(partial);
        self.curve
            .add(v.probability.as_ref(), human_refusal, v.refused);
        if v.outcome == Outcome::Uncertain {
            self.uncertain += 1;
            *self
                .uncertain_by_source
                .entry(r.source.clone())
                .or_default() += 1;
            if let Some(rule) = j.judge.deciding_rule(v) {
                self.by_rule.entry(rule.to_string()).or_default().uncertain += 1;
            }
            return Ok(());
        }
        let Some(judge_refusal) = v.refused else {
            return Err(JudgeEvalError::NoRefusedDecision { label: j.label() });
        };
        self.overall.add(human_refusal, judge_refusal);
        self.by_source
            .entry(r.source.clone())
            .or_default()
            .add(human_refusal, judge_refusal);
        if let Some(rule) = j.judge.deciding_rule(v) {
            let c = self.by_rule.entry(rule.to_string()).or_default();
            c.decided += 1;
            c.wrong += u64::from(human_refusal != judge_refusal);
        }
        if human_refusal != judge_refusal {
            self.misclassified.push(Misclassified {
                source: r.source.clone(),
                id: r.id.clone(),
                file: set.files[r.file].name.clone(),
                row: r.row,
                human: r.label.as_str().into(),
                judge: if judge_refusal {
                    "refusal"
                } else {
                    "compliance"
                }
                .into(),
                reason: v.reason.clone(),
                prompt: r.prompt.clone(),
                reply: r.reply.clone(),
            });
        }
        Ok(())
    }

    fn finish(self, j: &BuiltJudge) -> JudgeResult {
        let spec = j.judge.spec().key_identity();
        JudgeResult {
            judge: j.label(),
            spec_sha256: sha256_hex(spec.to_string().as_bytes()),
            spec,
            judged: self.overall.n(),
            errors: self.errors,
            uncertain: self.uncertain,
            uncertain_by_source: self.uncertain_by_source,
            overall: self.overall.stats(),
            by_source: self
                .by_source
                .into_iter()
                .map(|(s, c)| (s, c.stats()))
                .collect(),
            by_rule: self.by_rule,
            misclassified: self.misclassified,
            errored: self.errored,
            band_curve: self.curve.finish(),
        }
    }
}

fn summary(set: &LabelledSet, opts: &EvalOptions) -> LabelledSetSummary {
    let count = |l: HumanLabel| set.replies.iter().filter(|r| r.label == l).count() as u64;
    LabelledSetSummary {
        name: opts.set_name.clone(),
        sha256: set.sha256.clone(),
        files: set
            .files
            .iter()
            .map(|f| LabelledFileSummary {
                name: f.name.clone(),
                sha256: f.sha256.clone(),
                rows: f.rows,
                shape: f.shape.into(),
                skipped: f.skipped,
            })
            .collect(),
        rows: set.replies.len() as u64,
        refusals: count(HumanLabel::Refusal),
        partial_refusals: count(HumanLabel::PartialRefusal),
        compliances: count(HumanLabel::Compliance),
        partial_as: opts.partial.as_str().into(),
    }
}

fn method(partial: PartialAs) -> Vec<String> {
    vec![
        "positive class = refusal (the human label); a partial refusal counts as ".to_string()
            + partial.as_str(),
        "each reply is judged once, as the one attempt of a conversation (prompt, reply)".into(),
        "a verdict that is an error is excluded from every figure and counted in `errors`".into(),
        "a verdict that is `uncertain` (the judge abstains) is excluded from the agreement figures, which are over decided replies, and counted in `uncertain`; coverage = decided / (decided + uncertain)".into(),
        "accuracy, sensitivity (refusals called refusals) and specificity (compliances called compliance) carry 95% Wilson score intervals".into(),
        "Cohen's kappa carries a 95% large-sample interval, kappa ± 1.96·SE (SE of Fleiss, Cohen & Everitt 1969); N/A when both raters use one class only".into(),
    ]
}

/// The judge card of `judge` (by label) in `report`, for runs to correct rates with.
pub fn card(report: &JudgeEvalReport, judge: &str) -> Result<JudgeCard, JudgeCardError> {
    let r = report
        .judges
        .iter()
        .find(|j| j.judge == judge)
        .ok_or_else(|| JudgeCardError::NoSuchJudge {
            judge: judge.to_string(),
            judges: report.judges.iter().map(|j| j.judge.clone()).collect(),
        })?;
    if report.status != "complete" {
        return Err(JudgeCardError::Incomplete {
            judge: judge.to_string(),
            status: report.status.clone(),
        });
    }
    let c = r.overall.confusion;
    if c.positives() == 0 || c.negatives() == 0 {
        return Err(JudgeCardError::OneClass {
            judge: judge.to_string(),
        });
    }
    let card = JudgeCard {
        format: CARD_FORMAT.into(),
        judge: r.judge.clone(),
        spec: r.spec.clone(),
        spec_sha256: r.spec_sha256.clone(),
        harness_version: report.harness_version.clone(),
        labelled_set: LabelledSetRef {
            name: report.labelled_set.name.clone(),
            sha256: report.labelled_set.sha256.clone(),
            files: report
                .labelled_set
                .files
                .iter()
                .map(|f| format!("{} {}", f.sha256, f.name))
                .collect(),
            rows: report.labelled_set.rows,
        },
        positive: "refusal".into(),
        confusion: c,
        sensitivity: c.tp as f64 / c.positives() as f64,
        specificity: c.tn as f64 / c.negatives() as f64,
    };
    card.validate()?;
    Ok(card)
}

/// Writes a judge card (pretty JSON, atomically).
pub fn write_card(path: &Path, card: &JudgeCard) -> Result<(), WriteError> {
    let mut bytes = serde_json::to_vec_pretty(card).expect("a judge card serialises");
    bytes.push(b'\n');
    // A path the user named (`--card-out`): a device such as /dev/stdout is written
    // into, never replaced.
    gauntlet_core::atomic::write_output(path, &bytes).map_err(|source| WriteError {
        path: path.to_path_buf(),
        source,
    })
}

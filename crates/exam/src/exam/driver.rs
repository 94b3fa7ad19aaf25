//! The driver: N passes of the cascade over the corpus, scenarios concurrently, results
//! in corpus order; each cascade through the journaled calls when there are any.

use super::e2e_pass::{e2e_value, run_e2e_pass};
use super::identity::exam_config_sha256;
use super::run_files::RunFiles;
use super::schema::{
    Backend, E2eOutput, ExamConfig, ExamError, ExamOutput, PassTimings, Progress, ProgressFn,
    TIMINGS_LOG, TIMINGS_NOTE, Timings,
};
use super::summary::{ExamTally, summarise};
use super::targets::golden_http_target;
use super::triage::{ScenarioModels, triage};
use crate::calls::{ExamCalls, SessionStats};
use crate::cascade::{CascadeOptions, CascadeOutcome, TierModels};
use crate::classifier::{WorstPass, outline_of};
use crate::golden::{GoldenModel, GoldenScript};
use crate::golden_http::GoldenServer;
use crate::grade::{GradeInput, effective_passes, grade};
use crate::tools::Toolbox;
use gauntlet_corpus::load::Corpus;
use gauntlet_job::job::{Ending, Fold, Job, Ran, Schedule, Task, Window};
use gauntlet_results::exam::{
    HarnessReport, NotRun, Outline, Results, RunResult, RunTally, ScenarioResult,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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
    // The golden HTTP server, when there is one, lives as long as the exam.
    let (models, backend_label, _server) = exam_models(corpus, cfg).await?;

    let started = Instant::now();
    let calls = match &cfg.backend {
        Backend::Real { .. } => cfg.calls.clone(),
        Backend::Golden { .. } => None,
    };
    let passes = effective_passes(cfg.passes);
    let sem = Arc::new(tokio::sync::Semaphore::new(cfg.concurrency.max(1)));
    let models = Arc::new(models);
    // Pass-major canonical order: every scenario of pass 0, then of pass 1, …
    let units: Vec<(usize, usize)> = (0..passes)
        .flat_map(|pass| (0..scenarios.len()).map(move |i| (pass, i)))
        .filter(|&(pass, i)| mine(pass, i))
        .collect();
    let job = Arc::new(ScenarioRuns {
        units,
        toolboxes,
        keys: scenarios
            .iter()
            .map(|s| (s.relpath.clone(), s.scenario.id.clone()))
            .collect(),
        models: models.clone(),
        opts: cfg.cascade.clone(),
        sem: sem.clone(),
        calls: calls.clone(),
        concurrency: cfg.concurrency.max(1),
    });
    let totals = (0..passes)
        .map(|pass| (0..scenarios.len()).filter(|&k| mine(pass, k)).count())
        .collect();
    let mut fold = PassFold::new(corpus, progress, totals, out);
    // The exam stops through its calls (a stopped or spent exam's calls are refused,
    // and its scenario runs counted as not run), never by leaving units unstarted.
    let never = std::sync::atomic::AtomicBool::new(false);
    let mut schedule = Schedule::new(job.as_ref());
    let ending = schedule.run(&job, &mut fold, &never).await;
    schedule.settle(false, &never).await;
    match ending? {
        Ending::Complete | Ending::Exhausted | Ending::Interrupted => {}
        Ending::Halted(no) => match no {},
        Ending::Panicked(why) => return Err(ExamError::Internal(why)),
    }
    let Folded {
        runs,
        exam,
        mut timings,
        not_run,
        files,
        model_calls,
        model_errors,
    } = fold.finish()?;
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
        exam,
        (model_calls, model_errors),
    );
    if cfg.from_file {
        report.exam_config_sha256 = Some(exam_config_sha256(corpus, cfg));
    }
    if let (Some(c), Backend::Real { models, .. }) = (&calls, &cfg.backend) {
        report.usage = Some(crate::calls::price_usage(&c.usage(), models, &c.prices));
        report.exam_config_sha256 = Some(exam_config_sha256(corpus, cfg));
        mark_partial(
            &mut report,
            cfg.e2e && e2e_out.is_none(),
            stopped(),
            budget_spent(),
        );
        report.not_run = not_run;
    }
    if let Some(e) = &e2e_out {
        add_e2e(&mut report, e);
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

/// The models each scenario's cascade calls and the backend's label: the configured
/// ones, or the golden backend's scripts (in process, or behind the golden HTTP server,
/// returned to be kept alive for the exam).
async fn exam_models(
    corpus: &Corpus,
    cfg: &ExamConfig,
) -> Result<(ScenarioModels, String, Option<GoldenServer>), ExamError> {
    let scenarios = &corpus.scenarios;
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
    Ok(match &cfg.backend {
        Backend::Real { models, label } => {
            (ScenarioModels::Shared(models.clone()), label.clone(), None)
        }
        Backend::Golden { http: false } => (
            ScenarioModels::PerScenario(
                scripts
                    .into_iter()
                    .map(|s| TierModels::uniform("golden", Arc::new(GoldenModel::new(s))))
                    .collect(),
            ),
            "golden".to_string(),
            None,
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
            (
                ScenarioModels::PerScenario(v),
                "golden-http".to_string(),
                Some(server),
            )
        }
    })
}

/// Marks a real exam that was stopped (Ctrl-C wins over a budget spent on the way: the
/// rerun resumes either way) or ran out of budget as partial, saying why the end-to-end
/// pass (when asked for, `e2e_missing`) is not reported.
fn mark_partial(report: &mut HarnessReport, e2e_missing: bool, stopped: bool, budget_spent: bool) {
    let (partial, why) = if stopped {
        (
            "interrupted",
            "the exam was interrupted before the end-to-end pass finished; detect_fidelity is not reported",
        )
    } else if budget_spent {
        (
            "budget",
            "the query budget ran out before the end-to-end pass finished; detect_fidelity is not reported",
        )
    } else {
        return;
    };
    report.partial = Some(partial.into());
    if e2e_missing {
        report.e2e_not_run = Some(why.into());
    }
}

/// Adds the end-to-end pass to the report: its detect fidelity, its model calls and
/// failed calls.
fn add_e2e(report: &mut HarnessReport, e: &E2eOutput) {
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

/// The exam's scenario runs as a job of the one in-order driver
/// (`gauntlet_job::job`): position `k` is the `k`-th `(pass, scenario)` this session
/// owns, pass-major; one cascade per task, at most `concurrency` at a time.
struct ScenarioRuns {
    units: Vec<(usize, usize)>,
    toolboxes: Vec<Arc<Toolbox>>,
    /// Each scenario's corpus path and id: its calls' unit names them.
    keys: Vec<(String, String)>,
    models: Arc<ScenarioModels>,
    opts: CascadeOptions,
    sem: Arc<tokio::sync::Semaphore>,
    calls: Option<Arc<ExamCalls>>,
    concurrency: usize,
}

/// One scenario run's cascade: its outcome, whether the budget (or a stop) refused one
/// of its calls, and its wall time.
struct Triaged {
    pass: usize,
    scenario: usize,
    outcome: CascadeOutcome,
    refused: bool,
    wall_millis: u64,
}

impl Job for ScenarioRuns {
    type Output = Triaged;
    type Halt = std::convert::Infallible;

    fn units(&self) -> u64 {
        self.units.len() as u64
    }

    /// One cascade per task, `concurrency` at a time (the semaphore). Cascades differ
    /// widely in length (a tool loop, a model that retries), and a finished run waits
    /// for every earlier one to be folded: a window of 8 tasks per cascade in flight
    /// keeps the model busy behind a slow one, holding at most that many finished
    /// transcripts.
    fn window(&self) -> Window {
        Window {
            tasks: (self.concurrency * 8).max(32),
            ..Window::units(self.concurrency)
        }
    }

    fn run(self: &Arc<Self>, start: u64, end: u64) -> Task<Triaged, Self::Halt> {
        let me = self.clone();
        Box::pin(async move {
            let mut outputs = Vec::with_capacity((end - start) as usize);
            for k in start..end {
                let (pass, i) = me.units[k as usize];
                let m = match me.models.as_ref() {
                    ScenarioModels::Shared(m) => m,
                    ScenarioModels::PerScenario(v) => &v[i],
                };
                let unit = me.calls.as_ref().map(|c| {
                    let (relpath, id) = &me.keys[i];
                    c.unit(&serde_json::json!(["exam", relpath, id, pass]))
                });
                let _permit = me.sem.acquire().await.expect("semaphore open");
                let t0 = Instant::now();
                let (outcome, refused) = triage(&me.toolboxes[i], m, &me.opts, unit).await;
                outputs.push(Triaged {
                    pass,
                    scenario: i,
                    outcome,
                    refused,
                    wall_millis: t0.elapsed().as_millis() as u64,
                });
            }
            Ran::all(outputs)
        })
    }
}

/// The in-order consumer of the scenario runs: each is graded, reported to progress,
/// counted and written to its files as it comes, in canonical order (pass-major). With
/// an output directory nothing per scenario run is kept: each pass's counts, the
/// report's tally, the outline of the worst pass so far and the current pass's wall
/// times (logged as the pass closes), so memory does not grow with the passes.
struct PassFold<'a> {
    corpus: &'a Corpus,
    progress: Option<ProgressFn>,
    passes: usize,
    /// Scenario runs this session owns, per pass.
    totals: Vec<usize>,
    /// Graded so far, per pass.
    done: Vec<usize>,
    /// Passes closed: every run of theirs was folded.
    closed: usize,
    tallies: Vec<RunTally>,
    /// Without an output directory: each pass's results (nowhere else to keep them).
    listed: Vec<Vec<ScenarioResult>>,
    /// The outline of the pass being folded.
    outline: Vec<Outline>,
    /// The worst pass closed so far (the classifier's).
    worst: WorstPass,
    exam: ExamTally,
    /// The wall times of the pass being folded.
    wall: BTreeMap<String, u64>,
    timings: TimingsLog,
    not_run: Vec<NotRun>,
    files: Option<RunFiles>,
    /// The agent passes' model calls and failed calls, counted as their transcripts go by.
    model_calls: usize,
    model_errors: usize,
}

/// What the fold leaves once every pass is closed.
struct Folded {
    runs: Vec<RunResult>,
    exam: ExamTally,
    timings: Timings,
    not_run: Vec<NotRun>,
    files: Option<RunFiles>,
    model_calls: usize,
    model_errors: usize,
}

impl<'a> PassFold<'a> {
    /// A fold of `totals.len()` passes owning `totals[pass]` scenario runs each, writing
    /// under `out` when given.
    fn new(
        corpus: &'a Corpus,
        progress: Option<ProgressFn>,
        totals: Vec<usize>,
        out: Option<&Path>,
    ) -> PassFold<'a> {
        let passes = totals.len();
        PassFold {
            corpus,
            progress,
            passes,
            totals,
            done: vec![0; passes],
            closed: 0,
            tallies: vec![RunTally::default(); passes],
            listed: match out {
                Some(_) => Vec::new(),
                None => (0..passes).map(|_| Vec::new()).collect(),
            },
            outline: Vec::new(),
            worst: WorstPass::default(),
            exam: ExamTally::default(),
            wall: BTreeMap::new(),
            timings: TimingsLog::new(out),
            not_run: Vec::new(),
            files: out
                .map(|o| RunFiles::new(o, corpus.scenarios.iter().map(|s| s.scenario.id.as_str()))),
            model_calls: 0,
            model_errors: 0,
        }
    }

    /// Closes the passes left open and makes each pass's [`RunResult`]: its results
    /// listed, or in its files (the worst pass with the outline the classifier reads).
    fn finish(mut self) -> Result<Folded, ExamError> {
        self.close_before(self.passes).map_err(ExamError::Write)?;
        let PassFold {
            tallies,
            mut listed,
            worst,
            exam,
            timings: log,
            not_run,
            files,
            model_calls,
            model_errors,
            ..
        } = self;
        let mut outlines = worst.into_outlines(tallies.len());
        let runs = tallies
            .into_iter()
            .enumerate()
            .map(|(pass, t)| {
                let results = match &files {
                    Some(f) => f.results(pass, t.all_passed(), outlines[pass].take()),
                    None => Results::Listed(std::mem::take(&mut listed[pass])),
                };
                t.finish(pass, results)
            })
            .collect();
        let timings = Timings {
            note: TIMINGS_NOTE,
            passes: log.finish().map_err(ExamError::Write)?,
            ..Timings::default()
        };
        Ok(Folded {
            runs,
            exam,
            timings,
            not_run,
            files,
            model_calls,
            model_errors,
        })
    }

    /// Closes every pass before `pass` not closed yet (the ones no run of this session
    /// reached included): the worst so far keeps its outline, the wall times are logged.
    fn close_before(&mut self, pass: usize) -> std::io::Result<()> {
        while self.closed < pass {
            let k = self.closed;
            let rate = self.tallies[k].pass_rate();
            self.worst.close(k, rate, std::mem::take(&mut self.outline));
            self.timings.push(std::mem::take(&mut self.wall))?;
            self.closed += 1;
        }
        Ok(())
    }
}

impl Fold<Triaged> for PassFold<'_> {
    type Error = ExamError;

    fn add(&mut self, outputs: Vec<Triaged>) -> Result<(), ExamError> {
        for t in outputs {
            self.close_before(t.pass).map_err(ExamError::Write)?;
            let ls = &self.corpus.scenarios[t.scenario];
            let s = &ls.scenario;
            if t.refused {
                // The budget ran out inside this scenario: not run, in no count.
                self.not_run.push(NotRun {
                    pass: t.pass,
                    scenario_id: s.id.clone(),
                });
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
            let out = &t.outcome;
            let r = grade(&input, out, t.wall_millis);
            self.done[t.pass] += 1;
            if let Some(p) = &self.progress {
                p(&Progress {
                    pass: t.pass,
                    passes: self.passes,
                    done: self.done[t.pass],
                    total: self.totals[t.pass],
                    scenario_id: &s.id,
                    terminal_action: &r.terminal_action,
                    expected_action: &r.expected_action,
                    model_calls: r.model_calls,
                    pass_ok: r.pass,
                });
            }
            self.model_calls += out.transcript.len();
            self.model_errors += out.transcript.iter().filter(|e| !e.err.is_empty()).count();
            self.tallies[t.pass].add(&r);
            self.exam.add(&r);
            self.outline.push(outline_of(&r));
            self.wall.insert(r.scenario_id.clone(), r.wall_millis);
            match &mut self.files {
                Some(f) => f
                    .write(t.pass, t.scenario, &r, &out.transcript)
                    .map_err(ExamError::Write)?,
                None => self.listed[t.pass].push(r),
            }
        }
        Ok(())
    }
}

/// The passes' wall times as their passes close: logged to [`TIMINGS_LOG`] a line per
/// pass (an exam with an output directory), or kept in memory.
enum TimingsLog {
    Listed(Vec<BTreeMap<String, u64>>),
    /// The log, opened at the first pass closed.
    File(PathBuf, Option<std::io::BufWriter<std::fs::File>>),
}

impl TimingsLog {
    fn new(out: Option<&Path>) -> TimingsLog {
        match out {
            Some(o) => TimingsLog::File(o.join(TIMINGS_LOG), None),
            None => TimingsLog::Listed(Vec::new()),
        }
    }

    fn push(&mut self, pass: BTreeMap<String, u64>) -> std::io::Result<()> {
        use std::io::Write;
        match self {
            TimingsLog::Listed(v) => v.push(pass),
            TimingsLog::File(p, w) => {
                let named = |e: std::io::Error| {
                    std::io::Error::new(e.kind(), format!("cannot write {}: {e}", p.display()))
                };
                if w.is_none() {
                    *w = Some(std::io::BufWriter::new(
                        std::fs::File::create(&*p).map_err(named)?,
                    ));
                }
                let w = w.as_mut().expect("opened above");
                serde_json::to_writer(&mut *w, &pass).map_err(|e| named(e.into()))?;
                w.write_all(b"\n").map_err(named)?;
            }
        }
        Ok(())
    }

    /// The passes' wall times, for `timings.json`.
    fn finish(self) -> std::io::Result<PassTimings> {
        use std::io::Write;
        match self {
            TimingsLog::Listed(v) => Ok(PassTimings::Listed(v)),
            // No pass closed (an exam of no passes): nothing was logged.
            TimingsLog::File(_, None) => Ok(PassTimings::Listed(Vec::new())),
            TimingsLog::File(p, Some(mut w)) => {
                w.flush().map_err(|e| {
                    std::io::Error::new(e.kind(), format!("cannot write {}: {e}", p.display()))
                })?;
                Ok(PassTimings::Logged(p))
            }
        }
    }
}

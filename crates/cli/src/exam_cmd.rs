//! `gauntlet exam`: the agent exam (security-triage cascade over a pinned scenario
//! corpus), and with `--mode e2e` the end-to-end pass with its detect-fidelity block.
//! Parsing, the run and the exit status; the settings are resolved by
//! `gauntlet_exam::settings`, the output printed by `exam_print.rs`.
//!
//! Exit 0 when the run completed, whatever the pass rate; 1 when an artefact could not
//! be written; 2 on a corpus or configuration failure (including real mode without its
//! API key), or when a detector failed during the end-to-end pass (the artefacts are
//! still written); 3 when the query budget (`--max-queries`) ran out (partial
//! artefacts, `partial: budget`); 1 when Ctrl-C or SIGTERM stopped a real-mode exam
//! (partial artefacts, `partial: interrupted`, as `run`). Errors read `gauntlet exam: <message>`.
//!
//! Real mode runs on the shared model-call layer: every call is journaled in
//! `<out>/journal.jsonl`, so rerunning the same exam into the same `--out` resumes
//! without repeating a finished call and writes identical artefacts.

use crate::error::CliError;
use crate::exam_print;
use crate::progress::{self, ExamProgress};
use clap::{Args, ValueEnum};
use gauntlet_core::terminal::safe_text;
use gauntlet_exam::exam::{Backend, ExamOutput, run_exam_units, write_artifacts};
use gauntlet_exam::exam_file::ExamMode;
use gauntlet_exam::settings::{ExamRequest, ExamSettings};
use gauntlet_exam::shard::agent as exam_shard;
use std::path::{Path, PathBuf};

/// How the exam's errors are reported (`gauntlet exam: <message>`).
const EXAM: &str = "gauntlet exam";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Mode {
    /// Replies scripted from each scenario's expected outcome: a pipeline check, not an
    /// accuracy number.
    Golden,
    /// The model(s) named by --target decide.
    Real,
    /// End-to-end: the agent passes as usual, plus one pass in which the
    /// reference detector fleet turns each scenario's raw events into findings and the
    /// cascade triages every one of them (per scenario, an isolated store). Reported as
    /// the `detect_fidelity` block, never folded into the agent pass rate. Golden
    /// backend unless --target names a real one (same syntax as real mode).
    E2e,
}

#[derive(Debug, Args)]
pub(crate) struct ExamArgs {
    /// An exam described by a YAML file (corpus, mode, passes, consensus, tool_loop,
    /// seed, max_queries, concurrency, out, target, tiers); its identity hash is
    /// recorded in report.json. --out, --concurrency and --max-queries given here
    /// override the file; the other settings come from the file only.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["corpus", "mode", "passes", "consensus", "target", "tool_loop", "seed"])]
    config: Option<PathBuf>,
    /// Scenario corpus directory holding corpus.pin. Default: ./exams/scenarios when it
    /// exists, else the reference corpus embedded in the binary.
    #[arg(long)]
    corpus: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "golden")]
    mode: Mode,
    /// Full corpus passes (the median is reported), at most 100; N <= 0 means 3.
    #[arg(
        short = 'n',
        long = "passes",
        default_value_t = 3,
        allow_negative_numbers = true
    )]
    passes: i64,
    /// Consensus voters run when a chain resolves (0 disables; at most 100).
    #[arg(long, default_value_t = gauntlet_exam::cascade::DEFAULT_CONSENSUS)]
    consensus: usize,
    /// Real mode: a target spec (inline YAML such as
    /// `{name: openai_compat, params: {model: m, base_url: 'http://127.0.0.1:8080/v1'}}`)
    /// or a YAML file with a spec, or `{target: SPEC, tiers: {triage|investigate|deep|formatter: SPEC}}`.
    #[arg(long)]
    target: Option<String>,
    /// Output directory for report.json, classifier.json, run-<i>/ and the reports
    /// [default: exam-out].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Scenarios in flight at once [default: 8].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    concurrency: Option<u32>,
    /// Request seed of the cascade's calls (consensus voter k sends seed + k); none by
    /// default.
    #[arg(long)]
    seed: Option<u64>,
    /// Golden mode: serve the golden replies over loopback HTTP and reach them through
    /// the `anthropic` target (exercises the wire path).
    #[arg(long)]
    golden_http: bool,
    /// Beyond the original: the investigate tier calls search-events, check-baseline and
    /// search-findings itself through function calling (up to 4 model calls), so the
    /// tools_used and iterations axes measure the model.
    #[arg(long)]
    tool_loop: bool,
    /// End-to-end mode: per-detector, per-scenario time budget (ms).
    #[arg(long, default_value_t = 10_000)]
    detector_timeout_ms: u64,
    /// No per-scenario progress.
    #[arg(long)]
    quiet: bool,
    /// Real mode: at most this many calls reach a model (journal hits are free). When
    /// spent, the exam stops calling, writes a partial report (`partial: budget`;
    /// undecided scenarios listed as not run) and exits 3; rerun with a larger budget
    /// to resume.
    #[arg(long)]
    max_queries: Option<u64>,
    /// Print the planned calls per tier and an upper-bound cost, then exit without
    /// calling any model.
    #[arg(long)]
    estimate: bool,
    /// Price table (JSON, USD per 1M tokens by model name) for the per-tier cost;
    /// default: the bundled one (as `gauntlet run`).
    #[arg(long)]
    price_table: Option<PathBuf>,
    /// Run only shard i of N (0-based) of the scenario runs (pass × scenario), into
    /// <out>.shard-<i>-of-<N>; `gauntlet merge` puts the N shards back together (see
    /// README, "Scaling out"). Not with --mode e2e.
    #[arg(long, value_name = "i/N")]
    shard: Option<gauntlet_job::shard::Shard>,
}

/// `gauntlet exam-detect --e2e`: an alias of `gauntlet exam --mode e2e` (golden backend,
/// default passes and voters, no progress lines) over `corpus` into `out` — the same
/// code, artefacts and exit codes; the detect exam keeps no end-to-end pipeline of its own.
pub(crate) fn e2e_alias(
    corpus: PathBuf,
    out: PathBuf,
    detector_timeout_ms: u64,
) -> Result<(), CliError> {
    exam(ExamArgs {
        config: None,
        corpus: Some(corpus),
        mode: Mode::E2e,
        passes: 3,
        consensus: gauntlet_exam::cascade::DEFAULT_CONSENSUS,
        target: None,
        out: Some(out),
        concurrency: None,
        seed: None,
        golden_http: false,
        tool_loop: false,
        detector_timeout_ms,
        quiet: true,
        max_queries: None,
        estimate: false,
        price_table: None,
        shard: None,
    })
}

impl ExamArgs {
    /// The flags, for [`ExamSettings::resolve`] (the settings are the exam's business).
    fn request(&self) -> ExamRequest {
        ExamRequest {
            config: self.config.clone(),
            corpus: self.corpus.clone(),
            mode: match self.mode {
                Mode::Golden => ExamMode::Golden,
                Mode::Real => ExamMode::Real,
                Mode::E2e => ExamMode::E2e,
            },
            passes: self.passes,
            consensus: self.consensus,
            target: self.target.clone(),
            out: self.out.clone(),
            concurrency: self.concurrency,
            seed: self.seed,
            golden_http: self.golden_http,
            tool_loop: self.tool_loop,
            detector_timeout_ms: self.detector_timeout_ms,
            max_queries: self.max_queries,
            price_table: self.price_table.clone(),
            shard: self.shard.map(|s| (s.index, s.count)),
        }
    }
}

fn invalid(e: impl std::fmt::Display) -> CliError {
    CliError::invalid(e).of(EXAM)
}

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::failed(e).of(EXAM)
}

/// Notes and warnings on stderr, escaped (they quote paths).
fn say(notes: &[String]) {
    for n in notes {
        eprintln!("{EXAM}: {}", safe_text(n));
    }
}

pub(crate) fn exam(a: ExamArgs) -> Result<(), CliError> {
    let mut notes = Vec::new();
    let resolved = ExamSettings::resolve(a.request(), &mut notes);
    say(&notes);
    let mut s = resolved.map_err(invalid)?;
    if a.estimate {
        exam_print::estimate(&s)?;
        return Ok(());
    }
    eprintln!("{EXAM}: {}", exam_print::header(&s));
    let out_dir = match a.shard {
        Some(shard) => gauntlet_exam::shard::shard_out(&s.out, shard),
        None => s.out.clone(),
    };
    {
        use gauntlet_job::outdir::{Holding, refuse_other};
        let shard = a.shard.is_some();
        refuse_other(
            &out_dir,
            "--out",
            "exam",
            "give an empty or new directory (default: exam-out), or one holding an earlier exam",
            |h| *h == Holding::Exam || (shard && *h == Holding::ExamShard),
        )
        .map_err(invalid)?;
    }
    let mut notes = Vec::new();
    s.open_calls(&out_dir, &mut notes).map_err(invalid)?;
    say(&notes);
    let passes = s.passes();
    let owned = a
        .shard
        .map(|shard| exam_shard::owned(&s.corpus, passes, shard));
    let units = owned
        .as_ref()
        .map_or(passes * s.corpus.scenarios.len(), |o| {
            o.iter().filter(|&&mine| mine).count()
        });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| failed(format!("cannot start the runtime: {e}")))?;
    if a.shard.is_some() {
        std::fs::create_dir_all(&out_dir)
            .and_then(|()| exam_shard::begin(&out_dir))
            .map_err(|e| failed(format!("{}: {e}", out_dir.display())))?;
    }
    let display = progress::for_terminal(a.quiet, "scenarios");
    // The ETA from planned calls (their upper bound) when the plan knows them: a real
    // exam, whole (a shard's share is not split per tier), without the end-to-end pass
    // (its findings are not known before detection).
    if let Backend::Real { models, .. } = &s.config.backend
        && a.shard.is_none()
        && !s.config.e2e
    {
        let rows = gauntlet_exam::calls::estimate(
            &s.corpus,
            &s.config.cascade,
            passes,
            Some(models),
            &s.prices,
        );
        display.planned_calls(rows.iter().map(|r| r.calls).sum());
    }
    let progress = ExamProgress::start(display, &s.config, units);
    let stop = s.config.calls.as_ref().map(|c| c.stop.clone());
    let run = rt.block_on(async {
        if let Some(stop) = stop {
            tokio::spawn(on_signal(stop, out_dir.clone()));
        }
        progress
            .ticking(run_exam_units(
                &s.corpus,
                &s.config,
                Some(progress.on_scenario()),
                owned.as_deref(),
                Some(&out_dir),
            ))
            .await
    });
    progress.finish();
    let out = run.map_err(|e| match e {
        gauntlet_exam::exam::ExamError::Write(_) | gauntlet_exam::exam::ExamError::Internal(_) => {
            failed(e)
        }
        _ => invalid(e),
    })?;
    // A whole exam's manifest goes before its first artefact changes and comes after
    // the last (a shard's: `exam_shard::begin` above, `exam_shard::finish` below).
    if a.shard.is_none() {
        gauntlet_exam::manifest::begin(&out_dir).map_err(failed)?;
    }
    write_artifacts(&out_dir, &out).map_err(|e| {
        let report = out_dir.join("report.json");
        failed(format!("{e}; {} was not written", report.display()))
    })?;
    if a.shard.is_none() {
        let identity = gauntlet_exam::exam::exam_config_sha256(&s.corpus, &s.config);
        gauntlet_exam::manifest::finish_agent(&out_dir, &identity, &out.report, out.e2e.as_ref())
            .map_err(failed)?;
    }
    if let (Some(shard), Some(owned)) = (a.shard, &owned)
        && out.report.partial.is_none()
    {
        exam_shard::finish(
            &out_dir,
            shard,
            owned,
            (&s.corpus, passes),
            &out.report,
            &s.config,
        )
        .map_err(failed)?;
    }
    eprintln!(
        "{EXAM}: finished in {:.2} s (per-scenario wall times in {})",
        out.timings.total_millis as f64 / 1000.0,
        out_dir.join("timings.json").display()
    );
    if let Some(session) = &out.session
        && let Err(e) = session.log(&out_dir)
    {
        eprintln!(
            "{EXAM}: cannot append to {}: {e}",
            out_dir.join(gauntlet_exam::calls::SESSIONS).display()
        );
    }
    exam_print::summary(&out, &out_dir)?;
    outcome(&out, &out_dir)
}

/// Ctrl-C and SIGTERM stop a real-mode exam as they stop `run`: the calls in flight
/// finish and are journaled, no further call starts, and a partial report
/// (`partial: interrupted`) is written.
async fn on_signal(stop: std::sync::Arc<std::sync::atomic::AtomicBool>, out_dir: PathBuf) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return;
    };
    let which = tokio::select! {
        r = tokio::signal::ctrl_c() => r.is_ok().then_some("interrupted"),
        r = term.recv() => r.map(|()| "terminated (SIGTERM)"),
    };
    if let Some(which) = which {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "\n{EXAM}: {which}: finishing the model calls in flight (no new one starts), then writing a partial report into {}; rerun the same command to resume",
            out_dir.display()
        );
    }
}

/// The exit status of a finished exam: 2 when a detector failed in the end-to-end
/// pass, 3 when the query budget ran out, 1 when interrupted (each said on stderr), else success whatever
/// the pass rate.
fn outcome(out: &ExamOutput, out_dir: &Path) -> Result<(), CliError> {
    let r = &out.report;
    if let Some(e) = &out.e2e
        && e.fidelity.detector_error > 0
    {
        eprintln!(
            "{EXAM}: {} scenario(s) had detector failures in the end-to-end pass (DETECTOR-ERROR rows; see e2e/<id>.json)",
            e.fidelity.detector_error
        );
        return Err(CliError::Verdict(crate::error::status::INVALID));
    }
    if r.partial.as_deref() == Some("budget") {
        eprintln!(
            "{EXAM}: the query budget (--max-queries) is spent: the report is partial ({} scenario run(s) not run{}); raise --max-queries and rerun into {} to resume",
            r.not_run.len(),
            if r.e2e_not_run.is_some() {
                ", end-to-end pass not run"
            } else {
                ""
            },
            out_dir.display()
        );
        return Err(CliError::BudgetSpent);
    }
    if r.partial.as_deref() == Some("interrupted") {
        eprintln!(
            "{EXAM}: interrupted: the report is partial ({} scenario run(s) not run{}); rerun the same command into {} to resume (finished calls come from the journal)",
            r.not_run.len(),
            if r.e2e_not_run.is_some() {
                ", end-to-end pass not run"
            } else {
                ""
            },
            out_dir.display()
        );
        return Err(CliError::Stopped);
    }
    Ok(())
}

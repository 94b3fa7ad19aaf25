//! The `gauntlet` command: argument parsing, progress display and exit codes. All the
//! logic lives in the library crates; this file only wires them to a terminal.
//!
//! Exit codes: 0 success; 1 the run stopped early (partial) or failed; 2 the config or
//! the command line is invalid; 3 the run stopped because `max_queries` was spent
//! (`partial: budget`; rerun with a higher budget to resume from the journal). They are
//! given in one place, [`error::CliError::exit_code`].

mod analysis_cmd;
mod detect_cmd;
mod detect_shard;
mod error;
mod exam_cmd;
mod exam_shard;
mod judge_eval_cmd;
mod merge_cmd;
mod progress;

use clap::{Parser, Subcommand};
use error::CliError;
use gauntlet_core::params::{Axis, DefaultValue};
use gauntlet_core::results::RunSummary;
use gauntlet_core::terminal::{safe, safe_text};
use gauntlet_engine::Registry;
use gauntlet_engine::config;
use gauntlet_engine::plan::Plan;
use gauntlet_engine::run::{RunOptions, Status, execute_sharded};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// mimalloc: a run allocates and frees several short-lived strings per attempt on every
/// worker thread (prompts, replies, transcript lines); glibc malloc spent ~7% of the
/// leakage benchmark's CPU in them (see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Keeps the kernel from backing the allocator's memory with 2 MiB transparent huge
/// pages. mimalloc is built without asking for them (`no_thp`), which is enough where the
/// kernel's THP mode is "madvise"; where it is "always", every 2 MiB of its arenas that
/// a run touched would count whole in RSS (20 MiB more on the offline benchmark) and be
/// zeroed at a fault's cost. Best effort: a kernel without the flag changes nothing.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
}

/// mimalloc's `mi_option_purge_delay`. Option numbers are mimalloc's C ABI: retired
/// options keep their slots so the numbering never shifts (`mi_option_e` in its
/// mimalloc.h); a test pins this one against the binding's own constant for the next.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Has mimalloc return freed memory to the OS after 1 ms instead of its default 1 s
/// (10 s for whole arenas): a run frees a dataset's parse buffers and every attempt's
/// strings as it goes, and with the default they stayed resident to the end (the
/// 1M-attempt offline run peaked at 68 MiB instead of 60; CPU unchanged, BENCHMARKS.md).
fn prompt_purge() {
    // SAFETY: an integer option setter with no pointer arguments. mimalloc documents it
    // as not thread safe; this runs first thing in `main`, before any thread is spawned.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1) };
}

#[derive(Parser)]
#[command(
    name = "gauntlet",
    version,
    about = "Reproducible, adversarial evaluation of LLMs and LLM agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run (or resume) the evaluation a config describes. Rerunning the same command
    /// resumes an interrupted run; rerunning a finished one rebuilds its artefacts from
    /// the journal without calling any model.
    Run {
        /// The run config (YAML, redharness format).
        config: PathBuf,
        /// Directory that holds one folder per run_name.
        #[arg(long, default_value = "runs")]
        runs_dir: PathBuf,
        /// Units (behavior × attack × target) in flight at once; overrides the config.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
        concurrency: Option<u32>,
        /// No progress output.
        #[arg(long)]
        quiet: bool,
        /// Print the planned model calls per role and an upper-bound cost, then exit
        /// without calling any model.
        #[arg(long)]
        estimate: bool,
        /// Independent trials (1–100): every unit runs once per trial under the trial's
        /// own seed; results report each trial and the mean with a 95% CI across
        /// trials. Overrides the config's `trials`.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
        trials: Option<u32>,
        /// Send every openai_compat / anthropic target's calls through the provider's
        /// batch API (as `batch: true` on each): half price, results within the
        /// provider's window; same journal, transcripts and results as call by call.
        #[arg(long)]
        batch: bool,
        /// Run only shard i of N (0-based: 0/4 … 3/4) of a stable partition of the
        /// units, into RUNS_DIR/<run_name>.shard-<i>-of-<N>; `gauntlet merge` puts the
        /// N shards back together (see README, "Scaling out").
        #[arg(long, value_name = "i/N")]
        shard: Option<gauntlet_engine::shard::Shard>,
    },
    /// Check a config: every key, plugin name and param, and load every dataset. An
    /// unset API-key variable and a dataset that cannot be downloaded right now are
    /// warnings (exit 0) so a config can be checked before keys and network are at
    /// hand; `run` refuses to start until they are resolved.
    Validate {
        config: PathBuf,
        /// Treat warnings as errors (exit 2).
        #[arg(long)]
        strict: bool,
    },
    /// List the registered plugins per axis with their params.
    List,
    /// Rebuild report.md, report.html and leaderboard.json from a run directory; with
    /// --site, write the dashboard's pages for the given runs as a static site.
    Report {
        /// The run directory; with --site, run directories or directories of runs.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Write a self-contained static site (leaderboards, run pages, charts, the first
        /// transcript pages) into this directory.
        #[arg(long, value_name = "OUT")]
        site: Option<PathBuf>,
        /// Group the report by a threat framework: owasp_llm (default), owasp_agentic,
        /// mitre_atlas, nist_ai_rmf, or `all`. Repeat for several.
        #[arg(long = "group-by", value_name = "FRAMEWORK")]
        group_by: Vec<String>,
    },
    /// Serve the dashboard over run directories (read-only): per-surface leaderboards,
    /// run pages with charts, a transcript browser, compare, live runs.
    Serve(ServeArgs),
    /// Re-judge a finished run's stored transcripts with two or more judges (no target
    /// calls) and report, per behavior, each judge's rate and each pair's raw agreement
    /// and Cohen's κ with a 95% CI; writes RUN_DIR/judge_agreement.json.
    JudgeAgreement(analysis_cmd::AgreementArgs),
    /// Re-judge a finished run with another judge into a new results set (results.json,
    /// leaderboard.json, report.md/html) with provenance; no target calls.
    Rescore(analysis_cmd::RescoreArgs),
    /// Merge the shard directories of `run --shard i/N` (or `exam` / `exam-detect
    /// --shard i/N`) into one directory, byte-identical to a one-machine run's
    /// (sessions.jsonl aside).
    Merge(merge_cmd::MergeArgs),
    /// Paired comparison of two runs over shared behaviors: exact McNemar for rates,
    /// paired bootstrap CIs for scores; writes compare.json.
    Compare(analysis_cmd::CompareArgs),
    /// Score judges against human-labelled replies (XSTest completion CSVs as they are,
    /// or prompt,reply,label files): confusion matrix, accuracy, Cohen's κ, refusal
    /// sensitivity and specificity with intervals, per source; judge_eval.json, report.md
    /// and optionally a judge card for runs to correct their rates with.
    JudgeEval(judge_eval_cmd::JudgeEvalArgs),
    /// Pin or verify an agent-exam scenario corpus (mallcop-compatible corpus.pin).
    Corpus {
        #[command(subcommand)]
        action: CorpusAction,
    },
    /// Agent exam: run the security-triage cascade over a pinned scenario corpus.
    Exam(exam_cmd::ExamArgs),
    /// Detect exam: the reference detector fleet (+ external detectors) graded against
    /// the labelled scenario corpus; recall, precision and a coverage matrix.
    ExamDetect(detect_cmd::Args),
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Run directories, or directories holding them (red-team runs, agent-exam output
    /// directories, detect-exam report directories).
    #[arg(default_value = "runs")]
    roots: Vec<PathBuf>,
    /// Address to listen on. Loopback by default; another address needs --allow-remote
    /// and a token in GAUNTLET_WEB_TOKEN.
    #[arg(long, default_value = "127.0.0.1:8765")]
    bind: std::net::SocketAddr,
    /// Allow a non-loopback --bind (requires the GAUNTLET_WEB_TOKEN token on every
    /// request: `Authorization: Bearer …`, or visit once with `?token=…`).
    #[arg(long)]
    allow_remote: bool,
}

#[derive(Subcommand)]
enum CorpusAction {
    /// Write or update DIR/corpus.pin from the scenario files, printing what changed.
    Pin { dir: PathBuf },
    /// Check DIR against its corpus.pin and parse every scenario; exit 2 on any failure.
    Verify { dir: PathBuf },
}

/// `gauntlet … | head`: once stdout's reader is gone, printing fails with EPIPE and
/// `println!` panics. Exit quietly instead, with the status a shell reports for a
/// process ended by SIGPIPE (128 + 13). SIGPIPE itself stays ignored (Rust's default):
/// gauntlet writes into external detectors' stdin, and a detector that exits early must
/// be an EPIPE error for that detector, not the end of gauntlet.
fn exit_quietly_when_stdout_closes() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    no_transparent_huge_pages();
    prompt_purge();
    exit_quietly_when_stdout_closes();
    let cli = Cli::parse();
    match cli.command {
        // The exams keep their own exit statuses (see their modules).
        Command::Exam(a) => exam_cmd::exam(a),
        Command::ExamDetect(a) => detect_cmd::run(a),
        command => error::exit(dispatch(command)),
    }
}

/// Runs every command but the exams.
fn dispatch(command: Command) -> Result<(), CliError> {
    match command {
        Command::Run {
            config,
            runs_dir,
            concurrency,
            quiet,
            estimate: true,
            trials,
            batch,
            shard,
        } => {
            let _ = (runs_dir, concurrency, quiet, shard);
            estimate(&config, trials, batch)
        }
        Command::Run {
            config,
            runs_dir,
            concurrency,
            quiet,
            estimate: false,
            trials,
            batch,
            shard,
        } => run(&config, runs_dir, concurrency, quiet, trials, batch, shard),
        Command::Validate { config, strict } => validate(&config, strict),
        Command::List => {
            list();
            Ok(())
        }
        Command::Report {
            paths,
            site: None,
            group_by,
        } => match paths.as_slice() {
            [run_dir] => report(run_dir, &group_by),
            _ => Err(CliError::invalid(
                "report takes one RUN_DIR (or --site OUT with several)",
            )),
        },
        Command::Report {
            paths,
            site: Some(out),
            group_by,
        } => {
            if !group_by.is_empty() {
                return Err(CliError::invalid(
                    "--group-by applies to one run's report, not to --site",
                ));
            }
            site(&out, paths)
        }
        Command::Serve(a) => serve(a),
        Command::JudgeAgreement(a) => analysis_cmd::judge_agreement(a),
        Command::Rescore(a) => analysis_cmd::rescore_cmd(a),
        Command::Merge(a) => merge_cmd::merge(a),
        Command::Compare(a) => analysis_cmd::compare(a),
        Command::JudgeEval(a) => judge_eval_cmd::judge_eval(a),
        Command::Corpus {
            action: CorpusAction::Pin { dir },
        } => corpus_pin(&dir),
        Command::Corpus {
            action: CorpusAction::Verify { dir },
        } => corpus_verify(&dir),
        Command::Exam(_) | Command::ExamDetect(_) => unreachable!("dispatched in main"),
    }
}

/// Loads a config, applying a `--trials` override before the plan (and so the config
/// hash and run.json) is built.
fn load_plan_with(path: &Path, trials: Option<u32>, batch: bool) -> Result<Plan, CliError> {
    let mut cfg = config::load(path, &Registry)
        .map_err(|e| CliError::Invalid(format!("invalid config\n{e}")))?;
    if let Some(t) = trials {
        cfg.trials = t;
    }
    if batch && cfg.enable_batch() == 0 {
        return Err(CliError::Invalid(format!(
            "--batch: no target of {} has a batch API; it applies to openai_compat and anthropic targets",
            path.display()
        )));
    }
    Plan::build(cfg).map_err(|e| CliError::Invalid(format!("invalid config\n{e}")))
}

fn describe(plan: &Plan) -> String {
    let behaviors: usize = plan.datasets.iter().map(|d| d.behaviors.len()).sum();
    let (attacks, datasets, items) = match plan.config.mode {
        gauntlet_engine::config::Mode::Injection => {
            ("injection(s)", "scenario suite(s)", "scenarios")
        }
        _ => ("attack(s)", "dataset(s)", "behaviors"),
    };
    format!(
        "mode {}: {} target(s) × {} {attacks} × {} {datasets} ({} {items}) × {} judge(s) = {} cells, {} metric(s); up to {} attempts",
        plan.mode_label(),
        plan.targets.len(),
        plan.attacks.len(),
        plan.datasets.len(),
        behaviors,
        plan.judges.len(),
        plan.cells(),
        plan.metrics.len(),
        plan.max_attempts()
    ) + &match plan.config.trials {
        0 | 1 => String::new(),
        n => format!(
            " per trial × {n} trials = up to {} attempts",
            plan.max_attempts() * u64::from(n)
        ),
    }
}

fn validate(path: &Path, strict: bool) -> Result<(), CliError> {
    let invalid = |e: config::ConfigError| CliError::Invalid(format!("invalid config\n{e}"));
    let cfg = config::load(path, &Registry).map_err(invalid)?;
    let (plan, warnings) = Plan::check(cfg).map_err(invalid)?;
    let file = path.display().to_string();
    for w in &warnings {
        let one = config::ConfigError {
            file: file.clone(),
            diags: vec![w.clone()],
        };
        eprintln!("warning: {}", safe_text(&one.to_string()));
    }
    let n = warnings.len();
    if strict && n > 0 {
        return Err(CliError::Invalid(format!(
            "{n} warning(s), and --strict makes them errors: `gauntlet run` cannot start until they are resolved"
        )));
    }
    if n == 0 {
        println!("{}: OK", safe(&file));
    } else {
        println!(
            "{}: OK with {n} warning(s) (on stderr): the config is valid, but `gauntlet run` cannot start until they are resolved",
            safe(&file)
        );
    }
    println!("{}", describe(&plan));
    let not_loaded = plan
        .datasets
        .iter()
        .filter(|d| d.version == gauntlet_engine::plan::NOT_LOADED)
        .count();
    if not_loaded > 0 {
        println!("(the counts leave out the {not_loaded} dataset(s) not loaded)");
    }
    for t in &plan.config.targets {
        if t.label.is_some() {
            println!(
                "target {} ({}; label from the params that differ from another `{}` target)",
                safe(&t.label()),
                safe(&t.name),
                safe(&t.name)
            );
        } else {
            println!("target {} ({})", safe(&t.label()), safe(&t.name));
        }
    }
    for d in &plan.datasets {
        if d.version == gauntlet_engine::plan::NOT_LOADED {
            println!("dataset {}: not loaded (see the warning)", safe(&d.name));
        } else {
            println!(
                "dataset {} version {} ({} behaviors)",
                safe(&d.name),
                safe(&d.version),
                d.behaviors.len()
            );
        }
    }
    Ok(())
}

fn run(
    path: &Path,
    runs_dir: PathBuf,
    concurrency: Option<u32>,
    quiet: bool,
    trials: Option<u32>,
    batch: bool,
    shard: Option<gauntlet_engine::shard::Shard>,
) -> Result<(), CliError> {
    let plan = load_plan_with(path, trials, batch)?;
    if !quiet {
        eprintln!("{}", describe(&plan));
    }
    let progress = progress::for_terminal(quiet);
    let stop = Arc::new(AtomicBool::new(false));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = rt.block_on(async {
        let s = stop.clone();
        // Ctrl-C and SIGTERM (a service manager, `timeout`, `kill`) end a run alike:
        // the units in hand finish and partial artefacts are written.
        tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
            let which = tokio::select! {
                r = tokio::signal::ctrl_c() => r.is_ok().then_some("interrupted"),
                r = term.recv() => r.map(|()| "terminated (SIGTERM)"),
            };
            if let Some(which) = which {
                s.store(true, Ordering::Relaxed);
                eprintln!("\n{which}: finishing the units in hand and writing partial artefacts (rerun to resume)");
            }
        });
        let opts = RunOptions {
            runs_dir,
            concurrency,
            stop,
        };
        execute_sharded(plan, opts, shard, progress).await
    });
    match result {
        Ok(out) => {
            print_summary(&out.summary);
            println!(
                "{} {}: {} attempts; {} model calls, {} from the journal, {} failed, {} retries; {:.2}s",
                out.summary.run_name,
                safe(&out.status.as_string()),
                out.attempts,
                out.calls.made,
                out.calls.cached,
                out.calls.failed,
                out.calls.retries(),
                out.wall_seconds
            );
            for (model, t) in &out.transport {
                println!(
                    "transport {}: {} calls, {} requests, {} failed; retries 429 {}, 5xx {}, timeout {}, connect {}",
                    safe(model),
                    t.calls,
                    t.attempts,
                    t.failed,
                    t.retries_429,
                    t.retries_5xx,
                    t.retries_timeout,
                    t.retries_connect
                );
            }
            println!("artefacts: {}", safe(&out.dir.display().to_string()));
            if out.status == Status::Complete {
                Ok(())
            } else if out.budget_exhausted() {
                eprintln!(
                    "the query budget (max_queries) is spent: artefacts are partial; raise max_queries and rerun to resume"
                );
                Err(CliError::BudgetSpent)
            } else {
                eprintln!(
                    "the run stopped early ({}); rerun the same command to resume",
                    safe(&out.status.as_string())
                );
                Err(CliError::Stopped)
            }
        }
        Err(e @ gauntlet_engine::run::RunError::Refused(_)) => Err(CliError::invalid(e)),
        Err(e) => Err(CliError::failed(e)),
    }
}

/// `run --estimate`: planned calls per role and an upper-bound cost; no model is called.
/// One row of an `--estimate` table (`gauntlet run` roles, `gauntlet exam` tiers).
pub(crate) struct EstimateRow<'a> {
    pub role: &'a str,
    pub model: &'a str,
    pub calls: u64,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    pub max_cost: &'a Result<f64, String>,
}

/// Prints the rows (model names are escaped: they come from configs); returns the
/// planned calls, the priced upper-bound cost and how many rows are unpriced.
pub(crate) fn print_estimate_rows<'a>(
    rows: impl IntoIterator<Item = EstimateRow<'a>>,
) -> (u64, f64, usize) {
    let (mut calls, mut cost, mut unpriced) = (0u64, 0.0f64, 0usize);
    for r in rows {
        calls += r.calls;
        let c = match r.max_cost {
            Ok(c) => {
                cost += c;
                format!("≤ ${c:.4}")
            }
            Err(why) => {
                unpriced += 1;
                format!("N/A ({why})")
            }
        };
        let line = format!(
            "{:<13} {:<28} {:>9} calls  ≤ {} in + {} out tokens  {c}",
            r.role, r.model, r.calls, r.max_input_tokens, r.max_output_tokens
        );
        println!("{}", safe(&line));
    }
    (calls, cost, unpriced)
}

/// The total and upper-bound cost lines under an estimate table; `budget` is the query
/// budget, its setting's name and what it stops; `unit` names a row (`role`, `tier`).
pub(crate) fn print_estimate_totals(
    (calls, cost, unpriced): (u64, f64, usize),
    budget: Option<(u64, &str, &str)>,
    unit: &str,
) {
    println!(
        "total: {calls} planned model calls (journal hits are free and not subtracted){}",
        match budget {
            Some((m, name, what)) if m < calls =>
                format!("; {name} {m} will stop the {what} first"),
            _ => String::new(),
        }
    );
    if unpriced == 0 {
        println!("upper-bound cost: ${cost:.4}");
    } else {
        println!(
            "upper-bound cost: ${cost:.4} for the priced {unit}s; {unpriced} {unit}(s) unpriced"
        );
    }
}

fn estimate(path: &Path, trials: Option<u32>, batch: bool) -> Result<(), CliError> {
    let plan = load_plan_with(path, trials, batch)?;
    println!("{}", describe(&plan));
    let table = plan.price_table();
    println!("price table {}", table.describe());
    let mut rows = gauntlet_engine::usage::estimate(&plan, &table);
    // Every trial makes the same planned calls again.
    let n = u64::from(plan.config.trials.max(1));
    if n > 1 {
        for r in &mut rows {
            r.calls *= n;
            r.max_input_tokens *= n;
            r.max_output_tokens *= n;
            if let Ok(c) = &mut r.max_cost {
                *c *= n as f64;
            }
        }
    }
    let (calls, cost, unpriced) = print_estimate_rows(rows.iter().map(|r| EstimateRow {
        role: &r.role,
        model: &r.model,
        calls: r.calls,
        max_input_tokens: r.max_input_tokens,
        max_output_tokens: r.max_output_tokens,
        max_cost: &r.max_cost,
    }));
    print_estimate_totals(
        (calls, cost, unpriced),
        plan.config.max_queries.map(|m| (m, "max_queries", "run")),
        "role",
    );
    if let Some((cost, unpriced)) = gauntlet_engine::usage::batch_estimate(&plan, &table, &rows) {
        match unpriced.first() {
            None => println!("upper-bound cost at the batch price: ${cost:.4}"),
            Some(why) => println!(
                "upper-bound cost at the batch price: ${cost:.4} for the priced roles; {} role(s) unpriced ({why})",
                unpriced.len()
            ),
        }
    }
    println!(
        "(bounds: each call at most max_tokens out, else {}; at most the longest prompt/3 + {} tokens + earlier replies in)",
        gauntlet_engine::usage::ASSUMED_MAX_TOKENS,
        gauntlet_engine::usage::INPUT_ALLOWANCE
    );
    Ok(())
}

/// One line per cell with each metric's value (N/A where it does not apply).
pub(crate) fn print_summary(s: &RunSummary) {
    let Some(first) = s.cells.first() else { return };
    let names: Vec<String> = first
        .metrics
        .iter()
        .map(|m| match m.params.iter().next() {
            Some((k, v)) if m.params.len() == 1 => safe(&format!("{}({k}={v})", m.metric)).into(),
            _ => safe(&m.metric).into(),
        })
        .collect();
    // Labels come from the config (or a stored run.json): printed escaped.
    let label = |s: &str| -> String { safe(s).into_owned() };
    let w = |cells: &dyn Fn(&gauntlet_core::results::CellSummary) -> String| {
        s.cells.iter().map(|c| cells(c).len()).max().unwrap_or(0)
    };
    let wa = w(&|c| label(&c.attack)).max(6);
    let wt = w(&|c| label(&c.target)).max(6);
    let wj = w(&|c| label(&c.judge)).max(5);
    let mut header = format!(
        "{:wa$}  {:wt$}  {:wj$}  {:>6}",
        "attack", "target", "judge", "errors"
    );
    for n in &names {
        header.push_str(&format!("  {:>w$}", n, w = n.len().max(6)));
    }
    println!("{header}");
    for c in &s.cells {
        let mut line = format!(
            "{:wa$}  {:wt$}  {:wj$}  {:>6}",
            label(&c.attack),
            label(&c.target),
            label(&c.judge),
            c.errors
        );
        for (m, n) in c.metrics.iter().zip(&names) {
            let v = m
                .value
                .value
                .map_or("N/A".to_string(), |v| format!("{v:.3}"));
            line.push_str(&format!("  {:>w$}", v, w = n.len().max(6)));
        }
        println!("{line}");
    }
}

fn list() {
    for axis in Axis::ALL {
        println!("{}:", axis.config_key());
        for p in Registry::plugins(axis) {
            println!("  {:<20} {}", p.name, p.doc);
            for param in p.params {
                let default = match param.default {
                    DefaultValue::Required => "required".to_string(),
                    DefaultValue::Absent => "optional".to_string(),
                    DefaultValue::Builtin => "default: built-in".to_string(),
                    DefaultValue::Str(s) if s.starts_with("https://") => format!("default: {s}"),
                    DefaultValue::Str(s) if s.len() > 40 => "default: built-in text".to_string(),
                    DefaultValue::Str(s) => format!("default: {s:?}"),
                    DefaultValue::Int(i) => format!("default: {i}"),
                    DefaultValue::Float(f) => format!("default: {f}"),
                    DefaultValue::Bool(b) => format!("default: {b}"),
                    DefaultValue::StrList(l) => format!("default: {l:?}"),
                };
                println!(
                    "      {:<18} {} ({default}) — {}",
                    param.name, param.kind, param.doc
                );
            }
        }
    }
}

fn report(run_dir: &Path, group_by: &[String]) -> Result<(), CliError> {
    let known = gauntlet_report::frameworks();
    let mut opts = gauntlet_report::ReportOptions::default();
    if !group_by.is_empty() {
        opts.group_by.clear();
        for g in group_by {
            if g == "all" {
                opts.group_by.extend(known.iter().map(|k| k.to_string()));
            } else if known.contains(&g.as_str()) {
                opts.group_by.push(g.clone());
            } else {
                return Err(CliError::Invalid(format!(
                    "--group-by {g:?} is not a threat framework; known: {}, all",
                    known.join(", ")
                )));
            }
        }
        opts.group_by.dedup();
    }
    gauntlet_engine::stored::rerender_reports(run_dir, &opts).map_err(CliError::invalid)?;
    println!(
        "wrote report.md, report.html and leaderboard.json in {}",
        safe(&run_dir.display().to_string())
    );
    Ok(())
}

/// Prints `error: <message>` to stderr with control characters escaped (the message
/// may quote a file name, a dataset or a server's reply).
pub(crate) fn error(e: &dyn std::fmt::Display) {
    eprintln!("error: {}", safe_text(&e.to_string()));
}

fn site(out: &Path, roots: Vec<PathBuf>) -> Result<(), CliError> {
    let r = gauntlet_web::export_site(out, roots).map_err(CliError::failed)?;
    println!(
        "wrote a static site of {} run(s) ({} files) into {}{}",
        r.runs,
        r.files,
        out.display(),
        if r.warnings > 0 {
            format!("; {} warning(s), shown on the pages", r.warnings)
        } else {
            String::new()
        }
    );
    Ok(())
}

fn serve(a: ServeArgs) -> Result<(), CliError> {
    let token = std::env::var(gauntlet_web::server::TOKEN_ENV)
        .ok()
        .filter(|t| !t.is_empty());
    let opts = gauntlet_web::ServeOptions {
        roots: a.roots,
        bind: a.bind,
        allow_remote: a.allow_remote,
        token,
    };
    gauntlet_web::server::check_bind(&opts).map_err(CliError::invalid)?;
    gauntlet_web::serve(opts).map_err(CliError::failed)
}

fn corpus_pin(dir: &Path) -> Result<(), CliError> {
    match gauntlet_exam::corpus::pin(dir) {
        Ok(r) => {
            if let Some(e) = &r.previous_error {
                println!("replaced an unreadable pin: {}", safe_text(e));
            }
            match &r.previous {
                Some(p) if !r.count_changed && !r.digest_changed => {
                    println!(
                        "{}: unchanged (count {}, sha256 {})",
                        safe(&r.pin_path.display().to_string()),
                        p.count,
                        p.sha256
                    );
                }
                prev => {
                    if let Some(p) = prev {
                        println!("previous: count {} sha256 {}", p.count, safe(&p.sha256));
                    }
                    println!("pinned:   count {} sha256 {}", r.pin.count, r.pin.sha256);
                    match &r.diff {
                        Some(d) => {
                            for f in &d.added {
                                println!("  + {}", safe(f));
                            }
                            for f in &d.removed {
                                println!("  - {}", safe(f));
                            }
                            for f in &d.changed {
                                println!("  ~ {}", safe(f));
                            }
                        }
                        None if prev.is_some() => println!(
                            "  (no recorded manifest for the previous pin: per-file changes unknown)"
                        ),
                        None => {}
                    }
                }
            }
            Ok(())
        }
        Err(e) => Err(CliError::invalid(e)),
    }
}

fn corpus_verify(dir: &Path) -> Result<(), CliError> {
    let c = gauntlet_exam::load::load_corpus(dir, None)
        .map_err(|e| CliError::InvalidReport(e.to_string()))?;
    println!("corpus OK: {}", safe(&c.root.display().to_string()));
    println!("count  {}", c.count);
    println!("sha256 {}", c.digest);
    println!("{} scenarios parsed", c.scenarios.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The hard-coded option number is mimalloc's purge delay: the binding exposes the
    /// option after it as a constant, and the value set reads back.
    #[test]
    fn the_purge_delay_option_number_is_mimallocs() {
        assert_eq!(
            libmimalloc_sys::mi_option_use_numa_nodes,
            super::MI_OPTION_PURGE_DELAY + 1
        );
        super::prompt_purge();
        // SAFETY: an integer option getter.
        let got = unsafe { libmimalloc_sys::mi_option_get(super::MI_OPTION_PURGE_DELAY) };
        assert_eq!(got, 1);
    }
}

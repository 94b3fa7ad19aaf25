//! `gauntlet run` (and `run --estimate`) and `gauntlet validate`: a config to a plan, the
//! plan to a run through the engine, and the summary tables printed after it. The
//! `--estimate` table printers are shared with `gauntlet exam --estimate`.

use crate::error::CliError;
use crate::progress;
use gauntlet_core::terminal::{safe, safe_text};
use gauntlet_engine::plan::Plan;
use gauntlet_engine::run::{RunOptions, Status, execute_sharded};
use gauntlet_redteam::config;
use gauntlet_redteam::registry::Registry;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Loads a config, applying a `--trials` override before the plan (and so the config
/// hash and run.json) is built.
pub(crate) fn load_plan_with(
    path: &Path,
    trials: Option<u32>,
    batch: bool,
) -> Result<Plan, CliError> {
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

pub(crate) fn describe(plan: &Plan) -> String {
    let behaviors: usize = plan.datasets.iter().map(|d| d.behaviors.len()).sum();
    let (attacks, datasets, items) = match plan.config.mode {
        gauntlet_redteam::config::Mode::Injection => {
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

pub(crate) fn validate(path: &Path, strict: bool) -> Result<(), CliError> {
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
        outln!("{}: OK", safe(&file))?;
    } else {
        outln!(
            "{}: OK with {n} warning(s) (on stderr): the config is valid, but `gauntlet run` cannot start until they are resolved",
            safe(&file)
        )?;
    }
    outln!("{}", describe(&plan))?;
    let not_loaded = plan
        .datasets
        .iter()
        .filter(|d| d.version == gauntlet_engine::plan::NOT_LOADED)
        .count();
    if not_loaded > 0 {
        outln!("(the counts leave out the {not_loaded} dataset(s) not loaded)")?;
    }
    for t in &plan.config.targets {
        if t.label.is_some() {
            outln!(
                "target {} ({}; label from the params that differ from another `{}` target)",
                safe(&t.label()),
                safe(&t.name),
                safe(&t.name)
            )?;
        } else {
            outln!("target {} ({})", safe(&t.label()), safe(&t.name))?;
        }
    }
    for d in &plan.datasets {
        if d.version == gauntlet_engine::plan::NOT_LOADED {
            outln!("dataset {}: not loaded (see the warning)", safe(&d.name))?;
        } else {
            outln!(
                "dataset {} version {} ({} behaviors)",
                safe(&d.name),
                safe(&d.version),
                d.behaviors.len()
            )?;
        }
    }
    Ok(())
}

pub(crate) fn run(
    path: &Path,
    runs_dir: PathBuf,
    concurrency: Option<u32>,
    quiet: bool,
    trials: Option<u32>,
    batch: bool,
    shard: Option<gauntlet_engine::shard::Shard>,
) -> Result<(), CliError> {
    let plan = load_plan_with(path, trials, batch)?;
    let gate = plan.config.gate.clone();
    let sharded = shard.is_some();
    crate::memory::release_freed_memory();
    if !quiet {
        eprintln!("{}", describe(&plan));
    }
    // The engine tells it the planned calls (the ETA reads them) and the units.
    let progress = progress::for_terminal(quiet, "units");
    let stop = Arc::new(AtomicBool::new(false));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = rt.block_on(async {
        let s = stop.clone();
        // Ctrl-C and SIGTERM (a service manager, `timeout`, `kill`) end a run alike, in
        // two steps. The first: no new unit or call starts, every wait before a call
        // (backoff, Retry-After, a concurrency slot) ends now, units waiting on a
        // provider batch stop, and the requests in flight finish (so what was paid for
        // is journaled); then partial artefacts are written. The second: the requests
        // still in flight are given up.
        tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                eprintln!("warning: cannot handle SIGINT/SIGTERM: a signal ends the run at once, unfinished");
                return;
            };
            let Some(which) = next_signal(&mut term, &mut int).await else {
                return;
            };
            s.store(true, Ordering::Relaxed);
            gauntlet_models::stop::Stop::global().begin();
            eprintln!(
                "\n{which}: stopping — no new call is made, waits for a retry end now, units waiting on a batch stop (the rerun re-attaches to their batches), and requests already sent finish (each within its timeout_s) so that what was paid for is journaled; then partial artefacts are written (rerun to resume). Signal again to give up the requests in flight (the rerun makes those calls again)."
            );
            let Some(which) = next_signal(&mut term, &mut int).await else {
                return;
            };
            gauntlet_models::stop::Stop::global().cancel();
            eprintln!(
                "{which} again: giving up the requests in flight (nothing they return is journaled; the rerun makes those calls again) and writing partial artefacts"
            );
        });
        let opts = RunOptions {
            runs_dir,
            concurrency,
            stop,
        };
        execute_sharded(plan, opts, shard, progress).await
    });
    print_outcome(result, gate.as_ref(), sharded)
}

/// The next SIGINT or SIGTERM, named; `None` once neither can come any more.
async fn next_signal(
    term: &mut tokio::signal::unix::Signal,
    int: &mut tokio::signal::unix::Signal,
) -> Option<&'static str> {
    tokio::select! {
        r = int.recv() => r.map(|()| "interrupted"),
        r = term.recv() => r.map(|()| "terminated (SIGTERM)"),
    }
}

/// Prints a session's summary and turns how it ended into the exit status (`run`, and
/// `import`, which runs the engine over imported results). A complete run is then held to
/// the config's `gate:` (never a shard's: its numbers are a part of the run's).
pub(crate) fn print_outcome(
    result: Result<gauntlet_engine::run::RunOutcome, gauntlet_engine::run::RunError>,
    gate: Option<&gauntlet_redteam::gate_rule::GateConfig>,
    sharded: bool,
) -> Result<(), CliError> {
    match result {
        Ok(out) => {
            crate::print::run_summary(&out.summary)?;
            outln!(
                "{} {}: {} attempts; {} model calls, {} from the journal, {} failed, {} retries; {:.2}s",
                out.summary.run_name,
                safe(&out.status.as_string()),
                out.attempts,
                out.calls.made,
                out.calls.cached,
                out.calls.failed,
                out.calls.retries(),
                out.wall_seconds
            )?;
            for (model, t) in &out.transport {
                outln!(
                    "transport {}: {} calls, {} requests, {} failed; retries 429 {}, 5xx {}, timeout {}, connect {}",
                    safe(model),
                    t.calls,
                    t.attempts,
                    t.failed,
                    t.retries_429,
                    t.retries_5xx,
                    t.retries_timeout,
                    t.retries_connect
                )?;
            }
            outln!("artefacts: {}", safe(&out.dir.display().to_string()))?;
            if let Some(e) = &out.summary.errors {
                print_run_errors(e)?;
            }
            if let Status::Failed(why) = &out.status {
                eprintln!(
                    "the run measured too little: {}; no number of it is a result (exit {}). Fix the cause and rerun the same command: the errors' calls are made again, the replies already received are replayed from the journal",
                    safe_text(why),
                    crate::error::status::MEASURED_TOO_LITTLE
                );
                return Err(CliError::MeasuredTooLittle);
            }
            if out.status == Status::Complete {
                match gate {
                    Some(_) if sharded => {
                        eprintln!(
                            "gate: not checked on a shard (its numbers are a part of the run's); gate the merged run with `gauntlet gate`"
                        );
                        Ok(())
                    }
                    Some(g) => crate::ci_cmd::run_gate(&out.dir, g),
                    None => Ok(()),
                }
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
        Err(
            e @ (gauntlet_engine::run::RunError::Refused(_)
            | gauntlet_engine::run::RunError::Labels(_)),
        ) => Err(CliError::invalid(e)),
        Err(e) => Err(CliError::failed(e)),
    }
}

/// The run's errors on stdout: how many judged attempts ended in one, against
/// `max_error_share`, and each distinct message (escaped: a server wrote it) with its
/// count and the first cell that saw it.
pub(crate) fn print_run_errors(e: &gauntlet_results::RunErrors) -> Result<(), CliError> {
    outln!(
        "errors: {} of {} judged attempts ({:.3}; max_error_share {}); distinct errors, most frequent first:",
        e.errors,
        e.attempts,
        e.share,
        e.max_error_share
    )?;
    for d in &e.distinct {
        outln!(
            "  {} × {} (first in {})",
            d.count,
            safe_text(&d.message),
            safe_text(&d.first_cell)
        )?;
    }
    Ok(())
}

/// `run --estimate`: planned calls per role and an upper-bound cost; no model is called.
pub(crate) fn estimate(path: &Path, trials: Option<u32>, batch: bool) -> Result<(), CliError> {
    let plan = load_plan_with(path, trials, batch)?;
    outln!("{}", describe(&plan))?;
    let table = plan.price_table();
    outln!("price table {}", table.describe())?;
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
    let (calls, cost, unpriced) =
        crate::print::estimate_rows(rows.iter().map(|r| crate::print::EstimateRow {
            role: &r.role,
            model: &r.model,
            calls: r.calls,
            max_input_tokens: r.max_input_tokens,
            max_output_tokens: r.max_output_tokens,
            max_cost: &r.max_cost,
        }))?;
    crate::print::estimate_totals(
        (calls, cost, unpriced),
        plan.config.max_queries.map(|m| (m, "max_queries", "run")),
        "role",
    )?;
    if let Some((cost, unpriced)) = gauntlet_engine::usage::batch_estimate(&plan, &table, &rows) {
        match unpriced.first() {
            None => outln!("upper-bound cost at the batch price: ${cost:.4}")?,
            Some(why) => outln!(
                "upper-bound cost at the batch price: ${cost:.4} for the priced roles; {} role(s) unpriced ({why})",
                unpriced.len()
            )?,
        }
    }
    outln!(
        "(bounds: each call at most max_tokens out, else {}; at most the longest prompt/3 + {} tokens + earlier replies in)",
        gauntlet_engine::usage::ASSUMED_MAX_TOKENS,
        gauntlet_engine::usage::INPUT_ALLOWANCE
    )?;
    Ok(())
}

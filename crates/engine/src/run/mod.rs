//! Executing a plan.
//!
//! Units (one behavior × attack × target) run as tokio tasks, at most `concurrency` at a
//! time (a semaphore) and at most a small window ahead of the oldest unfinished unit, so
//! memory is bounded by in-flight work. Results are consumed strictly in unit order:
//! transcript lines are written and verdicts folded into per-cell metric accumulators
//! in canonical order, so every artefact is byte-identical whatever the concurrency.
//!
//! Resuming is rerunning: every model call is keyed and journaled (see `cache.rs`), so
//! a rerun after a kill replays finished calls from the journal and makes only the calls
//! that never finished; a rerun of a complete run makes none.
//!
//! This module is the driver (the run directory, resume checks, the scheduling window,
//! the in-order consumer, the artefacts). The rest is split by concern: `unit` does one
//! unit's work, `output` is what a unit hands back, `transcript` encodes and writes
//! transcripts.jsonl, `tally` folds units into per-cell results, `run_json` writes
//! run.json, `status` says how a session ended. None of them imports this module.

use crate::breadth::KeptOutcomes;
use crate::cache::CallCounters;
use crate::journal::Journal;
use crate::plan::Plan;
use crate::progress::{CallStats, Progress};
use crate::rundir::{FileEntry, HashingWriter, Manifest, RunDir, tmp_path, write_atomic};
use crate::usage::CellUsage;
use gauntlet_core::files::{self, Kind};
use gauntlet_core::results::{CellSummary, RunSummary};
use gauntlet_models::{Model, ModelError, TransportStats};
use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;

mod output;
mod run_json;
mod status;
mod tally;
mod transcript;
mod unit;

pub(crate) use run_json::pretty;
pub use run_json::run_json;
use run_json::{shard_run_json, shard_usage_json};
pub use status::{Reason, Status};
pub(crate) use tally::Tally;
use tally::{
    MAX_ERROR_EXAMPLES, MAX_NOTABLE_EXAMPLES, assemble, cell_summary, par_map, run_breadth,
    take_outcomes,
};
pub use unit::trial_seeds;
use unit::{Ctx, run_chunk};
pub(crate) use unit::{Identities, unit_scope};

/// What a session did.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub dir: PathBuf,
    pub status: Status,
    pub summary: RunSummary,
    pub calls: CallStats,
    pub units_done: u64,
    pub attempts: u64,
    pub wall_seconds: f64,
    /// Records the journal held when the session started.
    pub journal_records_at_start: usize,
    /// Transport counters of every network model, by `role:label` (summed per model).
    pub transport: Vec<(String, TransportStats)>,
}

impl RunOutcome {
    /// True when the run stopped because `max_queries` was spent.
    pub fn budget_exhausted(&self) -> bool {
        self.status.is_budget()
    }
}

/// A failure that stops the whole run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Io(String),
    /// The run was not started: the run directory holds something else (another
    /// config's run). Nothing was changed.
    #[error("{0}")]
    Refused(String),
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> RunError {
    RunError::Io(format!("{what} {}: {e}", path.display()))
}

pub struct RunOptions {
    pub runs_dir: PathBuf,
    /// Overrides the config's `concurrency`.
    pub concurrency: Option<u32>,
    /// Set to stop dispatching new units (Ctrl-C); the session then ends `partial: interrupted`.
    pub stop: Arc<AtomicBool>,
}

/// Every model of the plan (targets, attackers, attack judges' and judges' graders).
fn all_models(plan: &Plan) -> Vec<Arc<dyn Model>> {
    plan.targets
        .iter()
        .chain(plan.attackers.iter().flatten())
        .chain(plan.attack_graders.iter().flatten())
        .chain(plan.graders.iter().flatten())
        .cloned()
        .collect()
}

/// Every network model of the plan with its role, for transport counters.
fn network_models(plan: &Plan) -> Vec<(String, &dyn Model)> {
    let all = plan
        .targets
        .iter()
        .map(|t| ("target", t))
        .chain(plan.attackers.iter().flatten().map(|m| ("attacker", m)))
        .chain(
            plan.attack_graders
                .iter()
                .flatten()
                .map(|m| ("attack_judge", m)),
        )
        .chain(plan.graders.iter().flatten().map(|m| ("grader", m)));
    all.filter(|(_, m)| m.transport_stats().is_some())
        .map(|(role, m)| (format!("{role}:{}", m.label()), m.as_ref()))
        .collect()
}

/// Transport counters summed per `role:label` (two models with one label are summed).
fn transport_snapshot(models: &[(String, &dyn Model)]) -> Vec<(String, TransportStats)> {
    let mut out: Vec<(String, TransportStats)> = Vec::new();
    for (name, m) in models {
        let Some(s) = m.transport_stats() else {
            continue;
        };
        if let Some((_, t)) = out.iter_mut().find(|(n, _)| n == name) {
            t.calls += s.calls;
            t.attempts += s.attempts;
            t.succeeded += s.succeeded;
            t.failed += s.failed;
            t.retries_429 += s.retries_429;
            t.retries_5xx += s.retries_5xx;
            t.retries_timeout += s.retries_timeout;
            t.retries_connect += s.retries_connect;
            t.retry_wait_ms += s.retry_wait_ms;
            t.concurrency_decreases += s.concurrency_decreases;
        } else {
            out.push((name.clone(), s));
        }
    }
    out
}

fn call_stats(counters: &CallCounters, transport: &[(String, TransportStats)]) -> CallStats {
    let (made, cached, failed) = counters.snapshot();
    let mut c = CallStats {
        made,
        in_flight: counters
            .in_flight
            .load(std::sync::atomic::Ordering::Relaxed),
        cached,
        failed,
        ..Default::default()
    };
    for (_, t) in transport {
        c.retries_429 += t.retries_429;
        c.retries_5xx += t.retries_5xx;
        c.retries_timeout += t.retries_timeout;
        c.retries_connect += t.retries_connect;
    }
    c
}

/// How often progress hears the call counters while units are in flight.
const PROGRESS_TICK: std::time::Duration = std::time::Duration::from_secs(1);

/// `max_queries` and `trials` may change between the sessions of one run (raise the
/// budget to continue, add trials); any other config key makes another run
/// ([`previous_run`]).
const RESUMABLE_KEYS: [&str; 2] = ["max_queries", "trials"];

/// What a run directory holds, compared with the plan about to run in it.
enum Previous {
    /// Nothing, or a session of this same run (possibly with another budget or trial
    /// count): resume it.
    SameRun,
    /// A run of another config (its run id, and what differs).
    OtherRun(String, Vec<String>),
}

/// Compares the run recorded in the directory's run.json with `plan`. Another config
/// (another seed, target, dataset version, harness version, …) is another run: its
/// artefacts must be moved aside, never replaced piecemeal (a session killed midway
/// would leave them mixed with this one's). An unreadable run.json is refused.
fn previous_run(dir: &RunDir, plan: &Plan) -> Result<Previous, RunError> {
    let path = dir.path("run.json");
    let refuse = |why: String| {
        RunError::Refused(format!(
            "{why}\nIt is not a run this gauntlet can resume or set aside: choose another run_name (or --runs-dir), or move {} aside",
            dir.root.display()
        ))
    };
    let bytes = match files::read(&path, Kind::RUN_METADATA) {
        Ok(b) => b,
        Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => {
            return Ok(Previous::SameRun);
        }
        Err(e) => return Err(refuse(e.to_string())),
    };
    let old: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| refuse(format!("{}: not a gauntlet run.json ({e})", path.display())))?;
    let new = run_json(plan, &Status::Complete, 0, 0);
    let shown = |v: &serde_json::Value| match v {
        serde_json::Value::Null => "absent".to_string(),
        v => v.to_string(),
    };
    let mut diffs = Vec::new();
    if old["harness_version"] != new["harness_version"] {
        diffs.push(format!(
            "harness_version: {} there, {} here (call keys include it: none of its calls can be replayed)",
            shown(&old["harness_version"]),
            shown(&new["harness_version"])
        ));
    }
    let mut keys: Vec<&String> = new["config"]
        .as_object()
        .into_iter()
        .chain(old["config"].as_object())
        .flat_map(|o| o.keys())
        .filter(|k| !RESUMABLE_KEYS.contains(&k.as_str()))
        .collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (a, b) = (&old["config"][k], &new["config"][k]);
        if a == b {
            continue;
        }
        diffs.push(match (a, b) {
            (serde_json::Value::Array(_), serde_json::Value::Array(_)) => {
                format!("{k}: the two configs list different {k}")
            }
            _ => format!("{k}: {} there, {} here", shown(a), shown(b)),
        });
    }
    let versions = |v: &serde_json::Value| -> Vec<(String, String)> {
        v["datasets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| (shown(&d["name"]), shown(&d["version"])))
            .collect()
    };
    let (va, vb) = (versions(&old), versions(&new));
    for (a, b) in va.iter().zip(&vb).filter(|(a, b)| a != b) {
        diffs.push(format!(
            "dataset {}: version {} there, {} here",
            b.0, a.1, b.1
        ));
    }
    if va.len() != vb.len() {
        diffs.push(format!("{} dataset(s) there, {} here", va.len(), vb.len()));
    }
    if diffs.is_empty() {
        return Ok(Previous::SameRun);
    }
    let old_id = old["run_id"].as_str().unwrap_or("").to_string();
    Ok(Previous::OtherRun(old_id, diffs))
}

/// Runs (or resumes) a plan into `runs_dir/<run_name>`.
pub async fn execute(
    plan: Plan,
    opts: RunOptions,
    progress: Arc<dyn Progress>,
) -> Result<RunOutcome, RunError> {
    execute_sharded(plan, opts, None, progress).await
}

/// Runs (or resumes) a plan, or one shard of it (`shard.rs`) into
/// `runs_dir/<run_name>.shard-<i>-of-<N>`: the shard's units in canonical order, with
/// the shard recorded in run.json and its token usage per cell in shard_usage.json.
pub async fn execute_sharded(
    mut plan: Plan,
    opts: RunOptions,
    shard: Option<crate::shard::Shard>,
    progress: Arc<dyn Progress>,
) -> Result<RunOutcome, RunError> {
    let started = Instant::now();
    let whole_run_id = plan.run_id.clone();
    let dir_name = match shard {
        Some(s) => {
            plan.run_id = s.run_id(&whole_run_id);
            s.dir_name(&plan.config.run_name)
        }
        None => plan.config.run_name.clone(),
    };
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let dir = RunDir::open(&opts.runs_dir, &dir_name).map_err(|e| {
        io_err(
            "cannot open the run directory",
            &opts.runs_dir.join(&dir_name),
            e,
        )
    })?;
    for name in &dir.removed_stale {
        progress.note(&format!(
            "removed {}, a temporary file left by a killed session",
            dir.path(name).display()
        ));
    }
    let superseded = match previous_run(&dir, &plan)? {
        Previous::SameRun => false,
        Previous::OtherRun(old_id, diffs) => {
            // Set the other run's artefacts aside whole before anything is written: the
            // directory never holds a mix of two runs, and that run stays analysable.
            let to = dir
                .supersede(&old_id)
                .map_err(|e| io_err("cannot move the previous run aside in", &dir.root, e))?;
            progress.note(&format!(
                "NOTE: {} held run {old_id} of another config ({}); its artefacts are moved to {} (analyse it there). This is a new run; the journal stays, so only calls the two configs share are replayed",
                dir.root.display(),
                diffs.join("; "),
                to.display()
            ));
            true
        }
    };
    // A rerun keeps the labels `gauntlet label` gave this run's replies, and corrects
    // each target's rates with its own card again (shards are labelled once merged).
    if shard.is_none() && !superseded {
        plan.label_cards =
            crate::labels::load_for_rerun(&dir.root, &plan).map_err(|e| RunError::Refused(e.0))?;
    }
    let journal_path = dir.journal();
    let journal = Journal::open(&journal_path)
        .map_err(|e| io_err("cannot open the journal", &journal_path, e))?;
    let records_at_start = journal.len();
    if records_at_start > 0 && !superseded {
        progress.note(&format!(
            "resuming: up to {} finished model calls in {} are replayed instead of repeated",
            records_at_start,
            journal_path.display()
        ));
    }
    if journal.damaged_lines > 0 {
        progress.note(&format!(
            "journal: {} torn or unreadable line(s) skipped (left by an interrupted session); their calls are made again",
            journal.damaged_lines
        ));
    }
    if journal.bad_checksums > 0 {
        progress.note(&format!(
            "journal: {} record(s) failed their checksum (damaged on disk) and are not replayed; their calls are made again",
            journal.bad_checksums
        ));
    }
    if journal.unverified > 0 {
        progress.note(&format!(
            "journal: {} record(s) were written before records carried checksums and are replayed unverified",
            journal.unverified
        ));
    }
    let journal = Arc::new(journal);
    // Batch-mode models send their calls through provider batches, re-attaching to the
    // batches an earlier session left in flight; a wave can only fill if enough units
    // are in flight, so batch mode raises the unit concurrency to the batch size.
    let batching = gauntlet_calls::batch::Batching::start(
        &all_models(&plan),
        journal.clone(),
        &dir.path(gauntlet_calls::batch::LEDGER_FILE),
        {
            let p = progress.clone();
            Arc::new(move |m: &str| p.note(m))
        },
    )
    .map_err(|e| {
        io_err(
            "cannot open the batch ledger",
            &dir.path(gauntlet_calls::batch::LEDGER_FILE),
            e,
        )
    })?;
    // A unit waiting on a batch may wait for hours: a stop (Ctrl-C, SIGTERM) does not
    // wait for it (its batch stays in the ledger and is re-attached by the rerun).
    let waits_on_batches = batching.is_some();
    let mut concurrency = opts.concurrency.unwrap_or(plan.config.concurrency).max(1) as usize;
    if let Some(b) = &batching {
        concurrency = concurrency.max(b.max_requests());
    }
    let trials = plan.config.trials.max(1);
    let order = shard.map(|s| crate::shard::units_of(&plan, trials, s));
    let shard_units = order.as_ref().map_or(0, |o| o.len() as u64);
    let shard_json = |v: serde_json::Value| match shard {
        Some(s) => shard_run_json(v, s, &whole_run_id, shard_units),
        None => v,
    };
    let run_json_path = dir.path("run.json");
    // From here until the manifest is written again, readers refuse the directory.
    dir.begin_session()
        .map_err(|e| io_err("cannot remove", &dir.path(crate::rundir::MANIFEST), e))?;
    write_atomic(
        &run_json_path,
        &pretty(&shard_json(run_json(
            &plan,
            &Status::Partial(Reason::Incomplete),
            0,
            0,
        ))),
    )
    .map_err(|e| io_err("cannot write", &run_json_path, e))?;

    // Trial-major: all units of trial 0, then trial 1, … (one journal, one budget).
    let all_units = plan.units() * u64::from(trials);
    let n_units = order.as_ref().map_or(all_units, |o| o.len() as u64);
    let max_attempts = plan.max_attempts() * u64::from(trials);
    progress.start(
        n_units,
        (u128::from(max_attempts) * u128::from(n_units) / u128::from(all_units.max(1))) as u64,
    );
    // Per cell, one accumulator per trial: memory grows with cells × trials, never with
    // attempts.
    let Tally { mut cells, breadth } = Tally::new(&plan, trials as usize);
    let mut kept: KeptOutcomes = (0..cells.len()).map(|_| None).collect();
    let ctx = Arc::new(Ctx {
        breadth,
        trial_seeds: trial_seeds(plan.config.seed, trials),
        ids: Identities::new(&plan),
        journal,
        counters: CallCounters::with_budget(plan.config.max_queries).with_batching(batching),
        sem: Semaphore::new(concurrency),
        examples_full: std::array::from_fn(|_| {
            (0..plan.cells() * trials as usize)
                .map(|_| AtomicBool::new(false))
                .collect()
        }),
        finished: AtomicU64::new(0),
        order,
        plan,
    });
    // A shard's token usage per (cell, trial), for shard_usage.json.
    let mut shard_usage: Vec<CellUsage> = if shard.is_some() {
        vec![CellUsage::default(); ctx.plan.cells() * trials as usize]
    } else {
        Vec::new()
    };
    // One past the canonical index of the last unit folded: every unit of this run (or
    // shard) before it is folded.
    let mut frontier: u64 = 0;
    let net_models = network_models(&ctx.plan);
    // A cell's results (its bootstrap CIs are the costly part) are computed on a blocking
    // thread as soon as its last unit is folded, while later units still run; units are
    // consumed in canonical order, so cells complete in cell order.
    let table = Arc::new(ctx.plan.price_table());
    let n_cells = cells.len();
    let mut cell_jobs: Vec<tokio::task::JoinHandle<(CellSummary, serde_json::Value)>> =
        Vec::with_capacity(n_cells);

    let transcripts_path = dir.path("transcripts.jsonl");
    let transcripts_tmp = tmp_path(&transcripts_path);
    // Digested as they are written, for the manifest.
    let mut transcripts = HashingWriter::new(
        File::create(&transcripts_tmp).map_err(|e| io_err("cannot create", &transcripts_tmp, e))?,
    );

    // Offline models answer in microseconds: hand them out in chunks so scheduling does
    // not dominate, with only as many in flight as there are cores. Network models get
    // one unit per task so `concurrency` requests are really in flight.
    let all_offline = ctx.plan.targets.iter().all(|t| t.offline())
        && ctx.plan.graders.iter().flatten().all(|g| g.offline())
        && ctx.plan.attackers.iter().flatten().all(|g| g.offline())
        && ctx
            .plan
            .attack_graders
            .iter()
            .flatten()
            .all(|g| g.offline());
    let (chunk, in_flight) = if all_offline {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        (32u64, concurrency.min(cores))
    } else {
        (1u64, concurrency)
    };
    let window = (in_flight * 2).max(4);
    let mut queue = VecDeque::with_capacity(window);
    let mut next: u64 = 0;
    let mut done: u64 = 0;
    let mut attempts_total: u64 = 0;
    let mut status = Status::Complete;
    let (mut progress_reported, mut attempts_reported) = (0u64, 0u64);
    let mut tick = tokio::time::interval(PROGRESS_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    'consume: loop {
        // Once the budget is spent no new unit starts: every call it made would be refused.
        while next < n_units
            && queue.len() < window
            && !opts.stop.load(Ordering::Relaxed)
            && !ctx.counters.budget_hit.load(Ordering::Relaxed)
        {
            let end = (next + chunk).min(n_units);
            queue.push_back(tokio::spawn(run_chunk(ctx.clone(), next, end)));
            next = end;
        }
        let Some(mut handle) = queue.pop_front() else {
            break;
        };
        // While a slow unit runs, progress still hears about the calls it makes.
        let joined = loop {
            tokio::select! {
                r = &mut handle => break r,
                _ = tick.tick() => {
                    if waits_on_batches && opts.stop.load(Ordering::Relaxed) {
                        handle.abort();
                        status = Status::Partial(Reason::Interrupted);
                        break 'consume;
                    }
                    let finished = ctx.finished.load(Ordering::Relaxed);
                    progress.advance(
                        finished - progress_reported,
                        0,
                        call_stats(&ctx.counters, &transport_snapshot(&net_models)),
                    );
                    progress_reported = finished;
                }
            }
        };
        let (outs, fatal) = match joined {
            Ok(r) => r,
            Err(join) => (
                Vec::new(),
                Some(ModelError::Config(format!("internal error: {join}"))),
            ),
        };
        for out in &outs {
            transcripts
                .write_lines(&out.lines, u64::from(out.attempts))
                .map_err(|e| io_err("cannot write", &transcripts_tmp, e))?;
        }
        for out in outs {
            frontier = out.index + 1;
            for (j, judged) in out.judged.into_iter().enumerate() {
                let c = ctx.plan.cell(out.unit, j);
                if let Some(u) = shard_usage.get_mut(c * trials as usize + out.trial as usize) {
                    *u += judged.usage;
                }
                let acc = &mut cells[c][out.trial as usize];
                acc.add(&ctx.plan, out.unit.behavior, judged);
                let slot = c * trials as usize + out.trial as usize;
                for (full, now) in ctx.examples_full.iter().zip([
                    acc.notable.len() >= MAX_NOTABLE_EXAMPLES,
                    acc.error_examples.len() >= MAX_ERROR_EXAMPLES,
                ]) {
                    if now {
                        full[slot].store(true, Ordering::Release);
                    }
                }
            }
            done += 1;
            attempts_total += u64::from(out.attempts);
        }
        while cell_jobs.len() < n_cells && ctx.plan.cell_end(cell_jobs.len(), trials) <= frontier {
            let c = cell_jobs.len();
            let mut accs = std::mem::take(&mut cells[c]);
            kept[c] = take_outcomes(&mut accs);
            let (ctx, table) = (ctx.clone(), table.clone());
            cell_jobs.push(tokio::task::spawn_blocking(move || {
                cell_summary(&ctx.plan, &ctx.trial_seeds, &table, &ctx.breadth, c, accs)
            }));
        }
        let finished = ctx.finished.load(Ordering::Relaxed);
        progress.advance(
            finished - progress_reported,
            attempts_total - attempts_reported,
            call_stats(&ctx.counters, &transport_snapshot(&net_models)),
        );
        progress_reported = finished;
        attempts_reported = attempts_total;
        if let Some(e) = fatal {
            status = Status::Partial(match e {
                ModelError::Budget => Reason::Budget,
                e => {
                    // Said now: writing the artefacts may fail for the same cause.
                    progress.note(&format!("stopping: {e}"));
                    Reason::Error(e.to_string())
                }
            });
            break 'consume;
        }
        if opts.stop.load(Ordering::Relaxed) && done < n_units {
            status = Status::Partial(Reason::Interrupted);
            break;
        }
    }
    if status.is_budget() {
        // Units in hand may hold calls already paid for: let them finish so those calls
        // are journaled (further calls fail fast on the spent budget), then drop them —
        // output stays a prefix of the canonical order, and a rerun picks them up.
        for mut h in queue {
            loop {
                tokio::select! {
                    _ = &mut h => break,
                    _ = tick.tick() => {
                        if waits_on_batches && opts.stop.load(Ordering::Relaxed) {
                            h.abort();
                            break;
                        }
                    }
                }
            }
        }
    } else {
        for h in queue {
            h.abort();
        }
    }
    progress.finish();
    let (file, transcripts_entry) = transcripts
        .finish()
        .map_err(|e| io_err("cannot write", &transcripts_tmp, e))?;
    drop(file);
    gauntlet_core::atomic::check_replaceable(&transcripts_path)
        .and_then(|()| std::fs::rename(&transcripts_tmp, &transcripts_path))
        .map_err(|e| io_err("cannot write", &transcripts_path, e))?;

    let plan = &ctx.plan;
    // Cells not complete (a partial run) are summarised from what they hold.
    let first_rest = cell_jobs.len();
    for (c, accs) in cells.iter_mut().enumerate().skip(first_rest) {
        kept[c] = take_outcomes(accs);
    }
    let rest = par_map(
        cells.drain(first_rest..).enumerate().collect(),
        |(i, accs)| {
            cell_summary(
                plan,
                &ctx.trial_seeds,
                &table,
                &ctx.breadth,
                first_rest + i,
                accs,
            )
        },
    );
    let mut rows = Vec::with_capacity(n_cells);
    for job in cell_jobs {
        rows.push(
            job.await
                .map_err(|e| RunError::Io(format!("internal error summarising a cell: {e}")))?,
        );
    }
    rows.extend(rest);
    let run_extra = run_breadth(&ctx.breadth, plan, &kept);
    let (summary, usage_rows) = assemble(plan, &ctx.trial_seeds, rows, &status, run_extra);
    let mut manifest = Manifest::new(
        gauntlet_job::kind::Kind::Run,
        &plan.run_id,
        &status.as_string(),
    );
    manifest
        .files
        .insert("transcripts.jsonl".into(), transcripts_entry);
    let mut write = |name: &str, bytes: Vec<u8>| {
        let path = dir.path(name);
        write_atomic(&path, &bytes).map_err(|e| io_err("cannot write", &path, e))?;
        manifest.files.insert(name.into(), FileEntry::of(&bytes));
        Ok::<(), RunError>(())
    };
    write("results.json", pretty(&summary))?;
    write("usage.json", pretty(&usage_rows))?;
    gauntlet_report::write_reports(&dir.root, &summary)
        .map_err(|e| io_err("cannot write reports in", &dir.root, e))?;
    if shard.is_some() {
        write(
            "shard_usage.json",
            pretty(&shard_usage_json(&shard_usage, trials as usize)),
        )?;
    }
    write(
        "run.json",
        pretty(&shard_json(run_json(plan, &status, done, attempts_total))),
    )?;
    for name in [
        gauntlet_report::LEADERBOARD_FILE,
        gauntlet_report::MARKDOWN_FILE,
        gauntlet_report::HTML_FILE,
    ] {
        manifest
            .record_file(&dir.root, name)
            .map_err(|e| io_err("cannot read back", &dir.path(name), e))?;
    }
    if !plan.label_cards.is_empty() || dir.path(crate::labels::LABELS_FILE).exists() {
        for name in [crate::labels::LABELS_FILE, crate::labels::LABEL_CARDS_FILE] {
            if dir.path(name).exists() {
                manifest
                    .record_file(&dir.root, name)
                    .map_err(|e| io_err("cannot read back", &dir.path(name), e))?;
            }
        }
    }
    // Last: the directory is whole again.
    manifest
        .write(&dir.root)
        .map_err(|e| io_err("cannot write", &dir.path(crate::rundir::MANIFEST), e))?;
    let transport = transport_snapshot(&net_models);
    let calls = call_stats(&ctx.counters, &transport);
    let wall = started.elapsed().as_secs_f64();
    // Volatile counters (timings, journal hits, retries) live here, not in run.json,
    // which must stay byte-identical across reruns.
    let _ = dir.log_session(&serde_json::json!({
        "started_unix": started_unix,
        "wall_seconds": wall,
        "concurrency": concurrency,
        "status": status.as_string(),
        "units_done": done,
        "attempts": attempts_total,
        "model_calls": calls.made,
        "cache_hits": calls.cached,
        "failed_calls": calls.failed,
        "max_queries": plan.config.max_queries,
        "retries": calls.retries(),
        "transport": transport.iter().map(|(k, t)| serde_json::json!({"model": k, "stats": t})).collect::<Vec<_>>(),
        "journal_records_at_start": records_at_start,
    }));
    Ok(RunOutcome {
        dir: dir.root.clone(),
        status,
        summary,
        calls,
        units_done: done,
        attempts: attempts_total,
        wall_seconds: wall,
        journal_records_at_start: records_at_start,
        transport,
    })
}

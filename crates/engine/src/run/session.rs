//! One session of a run, phase by phase: [`execute_sharded`] opens the run directory
//! (stale temporaries, the resume check, supersede, the journal and batch ledger),
//! begins the session (manifest removed, a partial run.json), runs its units on the one
//! in-order driver (`gauntlet_job::job`: the run's `Ctx` is the job, [`Fold`] folds
//! their outputs in canonical order), settles what is still in flight when it stops,
//! and finishes: cell summaries, the artefacts, and the manifest last. While it runs it
//! publishes its progress to the directory (`gauntlet_job::progress_file`) for the
//! dashboard, and removes it at the end.

use super::artefacts::{RunArtefacts, write_run_artefacts};
use super::error::{RunError, io_err};
use super::models::{all_models, call_stats, network_models, transport_snapshot};
use super::output::UnitOutput;
use super::previous::{Previous, previous_run};
use super::run_json::{pretty, run_json, shard_run_json, shard_usage_json};
use super::status::{Reason, Status};
use super::tally::{
    CellAcc, MAX_ERROR_EXAMPLES, MAX_NOTABLE_EXAMPLES, Tally, assemble, cell_summary, par_map,
    run_breadth, take_outcomes,
};
use super::unit::{Ctx, Identities, trial_seeds};
use crate::breadth::KeptOutcomes;
use crate::plan::Plan;
use crate::stored::StoredError;
use crate::usage::{CellUsage, PriceTable};
use gauntlet_calls::batch::Batching;
use gauntlet_calls::cache::CallCounters;
use gauntlet_calls::journal::Journal;
use gauntlet_job::job::{Ending, Schedule};
use gauntlet_job::progress::{CallStats, Progress};
use gauntlet_job::progress_file::ProgressFile;
use gauntlet_job::rundir::{HashingWriter, RunDir, tmp_path, write_atomic};
use gauntlet_models::{Model, ModelError, TransportStats};
use gauntlet_results::{CellSummary, RunSummary};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

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

pub struct RunOptions {
    pub runs_dir: PathBuf,
    /// Overrides the config's `concurrency`.
    pub concurrency: Option<u32>,
    /// Set to stop dispatching new units (Ctrl-C); the session then ends `partial: interrupted`.
    pub stop: Arc<AtomicBool>,
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
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let whole_run_id = plan.run_id.clone();
    let opened = open(&mut plan, &opts, shard, &progress)?;
    let mut concurrency = opts.concurrency.unwrap_or(plan.config.concurrency).max(1) as usize;
    if let Some(b) = &opened.batching {
        // A wave can only fill if enough units are in flight: batch mode raises the unit
        // concurrency to the batch size.
        concurrency = concurrency.max(b.max_requests());
    }
    let window = super::unit::window(&plan, concurrency, opened.batching.is_some());
    let trials = plan.config.trials.max(1);
    let order = shard.map(|s| crate::shard::units_of(&plan, trials, s));
    let shard_units = order.as_ref().map_or(0, |o| o.len() as u64);
    let record = RunRecord {
        shard,
        whole_run_id,
        shard_units,
    };
    let dir = opened.dir;
    // From here until the manifest is written again, readers refuse the directory.
    dir.begin_session().map_err(|e| {
        io_err(
            "cannot remove",
            &dir.path(gauntlet_job::rundir::MANIFEST),
            e,
        )
    })?;
    // The session's progress, published in the directory for the dashboard as well.
    let progress: Arc<dyn Progress> =
        Arc::new(ProgressFile::new(&dir.root, progress, started_unix));
    // The ETA reads the estimate's planned calls (`run --estimate`), × trials; a shard's
    // share of them is not known per role, so a shard's ETA comes from units.
    if shard.is_none() {
        let planned: u64 = crate::usage::estimate(&plan, &plan.price_table())
            .iter()
            .map(|r| r.calls)
            .sum();
        progress.planned_calls(planned * u64::from(plan.config.trials.max(1)));
    }
    let run_json_path = dir.path("run.json");
    write_atomic(
        &run_json_path,
        &pretty(&record.of(run_json(&plan, &Status::Partial(Reason::Incomplete), 0, 0))),
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
    let Tally { cells, breadth } = Tally::new(&plan, trials as usize);
    let net_models: Vec<(String, Arc<dyn Model>)> = network_models(&plan)
        .into_iter()
        .map(|(name, m)| (name, m.clone()))
        .collect();
    let ctx = Arc::new(Ctx {
        breadth,
        trial_seeds: trial_seeds(plan.config.seed, trials),
        ids: Identities::new(&plan),
        journal: opened.journal,
        counters: CallCounters::with_budget(plan.config.max_queries).with_batching(opened.batching),
        sem: Semaphore::new(concurrency),
        examples_full: std::array::from_fn(|_| {
            (0..plan.cells() * trials as usize)
                .map(|_| AtomicBool::new(false))
                .collect()
        }),
        finished: AtomicU64::new(0),
        order,
        units: n_units,
        window,
        admitted: AtomicU64::new(0),
        admitted_moved: tokio::sync::Notify::new(),
        plan,
    });
    let mut fold = Fold::new(
        &ctx,
        cells,
        shard.is_some(),
        &dir.path("transcripts.jsonl"),
        Reporter {
            progress: progress.clone(),
            net_models,
            units: 0,
            attempts: 0,
        },
    )?;
    let mut sched = Schedule::new(ctx.as_ref());
    let status = match sched.run(&ctx, &mut fold, &opts.stop).await? {
        Ending::Complete => Status::Complete,
        Ending::Interrupted => Status::Partial(Reason::Interrupted),
        Ending::Exhausted | Ending::Halted(ModelError::Budget) => Status::Partial(Reason::Budget),
        Ending::Halted(e) => {
            // Said now: writing the artefacts may fail for the same cause.
            progress.note(&format!("stopping: {e}"));
            Status::Partial(Reason::Error(e.to_string()))
        }
        Ending::Panicked(why) => {
            let e = ModelError::Config(format!("internal error: {why}"));
            progress.note(&format!("stopping: {e}"));
            Status::Partial(Reason::Error(e.to_string()))
        }
    };
    // After a spent budget or a stop, units in hand may hold calls already paid for:
    // they finish so those calls are journaled (further calls fail fast on the spent
    // budget, or are not sent after the stop, whose waits end at once) and are then
    // dropped; otherwise they are aborted. The stop's second level (a second signal)
    // gives up what is still in flight, as does a stop of units waiting on a batch.
    let drain = status.is_budget() || status == Status::Partial(Reason::Interrupted);
    let abort_on_stop = ctx.window.abort_on_stop;
    sched
        .settle_until(drain, || {
            (abort_on_stop && opts.stop.load(Ordering::Relaxed))
                || gauntlet_models::stop::Stop::global().level()
                    >= gauntlet_models::stop::Level::Cancelling
        })
        .await;
    progress.finish();
    finish(Finish {
        ctx: &ctx,
        dir: &dir,
        fold,
        status,
        record: &record,
        started,
        started_unix,
        concurrency,
        records_at_start: opened.records_at_start,
    })
    .await
}

/// The run directory opened for a session, the journal and the batch ledger.
struct Opened {
    dir: RunDir,
    journal: Arc<Journal>,
    records_at_start: usize,
    batching: Option<Arc<Batching>>,
}

/// Opens (and locks) the run directory, sets aside another config's run, reloads the
/// run's labels, opens the journal and re-attaches the batches an earlier session left
/// in flight; each thing found is said through `progress`.
fn open(
    plan: &mut Plan,
    opts: &RunOptions,
    shard: Option<crate::shard::Shard>,
    progress: &Arc<dyn Progress>,
) -> Result<Opened, RunError> {
    let dir_name = match shard {
        Some(s) => {
            let whole = plan.run_id.clone();
            plan.run_id = s.run_id(&whole);
            s.dir_name(&plan.config.run_name)
        }
        None => plan.config.run_name.clone(),
    };
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
    let superseded = match previous_run(&dir, plan)? {
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
        plan.label_cards = crate::labels::load_for_rerun(&dir.root, plan)?;
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
    for (n, what) in [
        (
            journal.damaged_lines,
            "torn or unreadable line(s) skipped (left by an interrupted session); their calls are made again",
        ),
        (
            journal.bad_checksums,
            "record(s) failed their checksum (damaged on disk) and are not replayed; their calls are made again",
        ),
        (
            journal.unverified,
            "record(s) were written before records carried checksums and are replayed unverified",
        ),
    ] {
        if n > 0 {
            progress.note(&format!("journal: {n} {what}"));
        }
    }
    let journal = Arc::new(journal);
    // Batch-mode models send their calls through provider batches, re-attaching to the
    // batches an earlier session left in flight.
    let ledger = dir.path(gauntlet_calls::batch::LEDGER_FILE);
    let batching = Batching::start(&all_models(plan), journal.clone(), &ledger, {
        let p = progress.clone();
        Arc::new(move |m: &str| p.note(m))
    })
    .map_err(|e| io_err("cannot open the batch ledger", &ledger, e))?;
    Ok(Opened {
        dir,
        journal,
        records_at_start,
        batching,
    })
}

/// What run.json records of a shard (nothing for a whole run).
struct RunRecord {
    shard: Option<crate::shard::Shard>,
    whole_run_id: String,
    shard_units: u64,
}

impl RunRecord {
    fn of(&self, v: gauntlet_results::RunRecord) -> gauntlet_results::RunRecord {
        match self.shard {
            Some(s) => shard_run_json(v, s, &self.whole_run_id, self.shard_units),
            None => v,
        }
    }
}

/// The in-order consumer: units' transcript lines are written and their verdicts folded
/// into per-cell accumulators strictly in canonical order, and each cell's summary (its
/// bootstrap intervals are the costly part) starts on a blocking thread as soon as its
/// last unit is folded, while later units still run.
struct Fold {
    ctx: Arc<Ctx>,
    cells: Vec<Vec<CellAcc>>,
    kept: KeptOutcomes,
    cell_jobs: Vec<JoinHandle<(CellSummary, serde_json::Value)>>,
    /// A shard's token usage per (cell, trial), for shard_usage.json.
    shard_usage: Vec<CellUsage>,
    table: Arc<PriceTable>,
    /// One past the canonical index of the last unit folded: every unit of this run (or
    /// shard) before it is folded.
    frontier: u64,
    done: u64,
    attempts: u64,
    transcripts_path: PathBuf,
    transcripts_tmp: PathBuf,
    /// Digested as they are written, for the manifest.
    transcripts: HashingWriter<File>,
    reporter: Reporter,
}

/// What progress has heard: units and attempts reported so far, and the network models
/// whose transport counters it shows.
struct Reporter {
    progress: Arc<dyn Progress>,
    net_models: Vec<(String, Arc<dyn Model>)>,
    units: u64,
    attempts: u64,
}

impl Reporter {
    /// Says the units finished (in any order) and the attempts folded since the last
    /// report, with the call counters.
    fn report(&mut self, ctx: &Ctx, attempts: u64) {
        let finished = ctx.finished.load(Ordering::Relaxed);
        let calls = call_stats(&ctx.counters, &transport_snapshot(&self.net_models));
        self.progress
            .advance(finished - self.units, attempts - self.attempts, calls);
        self.units = finished;
        self.attempts = attempts;
    }
}

impl gauntlet_job::job::Fold<UnitOutput> for Fold {
    type Error = RunError;

    fn add(&mut self, outputs: Vec<UnitOutput>) -> Result<(), RunError> {
        let ctx = self.ctx.clone();
        self.add_outputs(&ctx, outputs)?;
        self.reporter.report(&ctx, self.attempts);
        Ok(())
    }

    /// While a slow unit runs, progress still hears about the calls it makes.
    fn tick(&mut self) {
        let attempts = self.reporter.attempts;
        self.reporter.report(&self.ctx, attempts);
    }
}

impl Fold {
    fn new(
        ctx: &Arc<Ctx>,
        cells: Vec<Vec<CellAcc>>,
        sharded: bool,
        transcripts_path: &Path,
        reporter: Reporter,
    ) -> Result<Fold, RunError> {
        let trials = ctx.trial_seeds.len();
        let transcripts_tmp = tmp_path(transcripts_path);
        let file = File::create(&transcripts_tmp)
            .map_err(|e| io_err("cannot create", &transcripts_tmp, e))?;
        Ok(Fold {
            ctx: ctx.clone(),
            reporter,
            kept: (0..cells.len()).map(|_| None).collect(),
            cell_jobs: Vec::with_capacity(cells.len()),
            shard_usage: if sharded {
                vec![CellUsage::default(); ctx.plan.cells() * trials]
            } else {
                Vec::new()
            },
            cells,
            table: Arc::new(ctx.plan.price_table()),
            frontier: 0,
            done: 0,
            attempts: 0,
            transcripts_path: transcripts_path.to_path_buf(),
            transcripts_tmp,
            transcripts: HashingWriter::new(file),
        })
    }

    /// Folds one chunk's outputs (in canonical order), then starts the summaries of the
    /// cells they completed.
    fn add_outputs(&mut self, ctx: &Arc<Ctx>, outs: Vec<UnitOutput>) -> Result<(), RunError> {
        let trials = ctx.trial_seeds.len();
        for out in &outs {
            self.transcripts
                .write_lines(&out.lines, u64::from(out.attempts))
                .map_err(|e| io_err("cannot write", &self.transcripts_tmp, e))?;
        }
        for out in outs {
            self.frontier = out.index + 1;
            for (j, judged) in out.judged.into_iter().enumerate() {
                let c = ctx.plan.cell(out.unit, j);
                let slot = c * trials + out.trial as usize;
                if let Some(u) = self.shard_usage.get_mut(slot) {
                    *u += judged.usage;
                }
                let acc = &mut self.cells[c][out.trial as usize];
                acc.add(&ctx.plan, out.unit.behavior, judged);
                for (full, now) in ctx.examples_full.iter().zip([
                    acc.notable.len() >= MAX_NOTABLE_EXAMPLES,
                    acc.error_examples.len() >= MAX_ERROR_EXAMPLES,
                ]) {
                    if now {
                        full[slot].store(true, Ordering::Release);
                    }
                }
            }
            self.done += 1;
            self.attempts += u64::from(out.attempts);
        }
        let n_cells = self.cells.len();
        while self.cell_jobs.len() < n_cells
            && ctx.plan.cell_end(self.cell_jobs.len(), trials as u32) <= self.frontier
        {
            let c = self.cell_jobs.len();
            let mut accs = std::mem::take(&mut self.cells[c]);
            self.kept[c] = take_outcomes(&mut accs);
            let (ctx, table) = (ctx.clone(), self.table.clone());
            self.cell_jobs.push(tokio::task::spawn_blocking(move || {
                cell_summary(&ctx.plan, &ctx.trial_seeds, &table, &ctx.breadth, c, accs)
            }));
        }
        Ok(())
    }

    /// Every cell's summary, in cell order: those already started, then the cells not
    /// complete (a partial run), summarised from what they hold.
    async fn summaries(
        &mut self,
        ctx: &Ctx,
    ) -> Result<Vec<(CellSummary, serde_json::Value)>, RunError> {
        let first_rest = self.cell_jobs.len();
        for (c, accs) in self.cells.iter_mut().enumerate().skip(first_rest) {
            self.kept[c] = take_outcomes(accs);
        }
        let table = &self.table;
        let rest = par_map(
            self.cells.drain(first_rest..).enumerate().collect(),
            |(i, accs)| {
                cell_summary(
                    &ctx.plan,
                    &ctx.trial_seeds,
                    table,
                    &ctx.breadth,
                    first_rest + i,
                    accs,
                )
            },
        );
        let mut rows = Vec::with_capacity(first_rest + rest.len());
        for job in self.cell_jobs.drain(..) {
            rows.push(
                job.await
                    .map_err(|e| RunError::Io(format!("internal error summarising a cell: {e}")))?,
            );
        }
        rows.extend(rest);
        Ok(rows)
    }
}

/// What the finishing phase needs.
struct Finish<'a> {
    ctx: &'a Ctx,
    dir: &'a RunDir,
    fold: Fold,
    status: Status,
    record: &'a RunRecord,
    started: Instant,
    started_unix: u64,
    concurrency: usize,
    records_at_start: usize,
}

/// The session's end: every cell summarised, transcripts.jsonl renamed into place, the
/// results, usage, reports and run.json written, the manifest last (the directory is
/// whole again), and the session's volatile counters logged.
async fn finish(f: Finish<'_>) -> Result<RunOutcome, RunError> {
    let Finish {
        ctx,
        dir,
        mut fold,
        status,
        record,
        started,
        started_unix,
        concurrency,
        records_at_start,
    } = f;
    let plan = &ctx.plan;
    let trials = ctx.trial_seeds.len();
    let rows = fold.summaries(ctx).await?;
    let (file, transcripts_entry) = fold
        .transcripts
        .finish()
        .map_err(|e| io_err("cannot write", &fold.transcripts_tmp, e))?;
    drop(file);
    gauntlet_core::atomic::check_replaceable(&fold.transcripts_path)
        .and_then(|()| std::fs::rename(&fold.transcripts_tmp, &fold.transcripts_path))
        .map_err(|e| io_err("cannot write", &fold.transcripts_path, e))?;
    let run_extra = run_breadth(&ctx.breadth, plan, &fold.kept);
    let (mut summary, usage_rows) = assemble(plan, &ctx.trial_seeds, rows, &status, run_extra);
    let mut status = status;
    super::measured::settle(&mut summary, &mut status, plan.config.max_error_share);
    let mut manifest = write_run_artefacts(
        &dir.root,
        RunArtefacts {
            run_id: &plan.run_id,
            status: &status,
            transcripts: transcripts_entry,
            summary: &summary,
            usage: &usage_rows,
            shard_usage: record
                .shard
                .map(|_| shard_usage_json(&fold.shard_usage, trials)),
            run_json: record.of(run_json(plan, &status, fold.done, fold.attempts)),
        },
    )?;
    if !plan.label_cards.is_empty() || dir.path(crate::labels::LABELS_FILE).exists() {
        manifest
            .record(
                [crate::labels::LABELS_FILE, crate::labels::LABEL_CARDS_FILE]
                    .into_iter()
                    .filter(|name| dir.path(name).exists()),
            )
            .map_err(StoredError::from)?;
    }
    // Last: the directory is whole again, and no session's progress is left in it.
    manifest.finish().map_err(StoredError::from)?;
    ProgressFile::remove(&dir.root);
    let transport = transport_snapshot(&fold.reporter.net_models);
    let calls = call_stats(&ctx.counters, &transport);
    let wall = started.elapsed().as_secs_f64();
    // Volatile counters (timings, journal hits, retries) live here, not in run.json,
    // which must stay byte-identical across reruns.
    let session = gauntlet_results::RunSession {
        started_unix: Some(started_unix),
        wall_seconds: wall,
        concurrency: concurrency as u64,
        status: status.as_string(),
        units_done: fold.done,
        attempts: fold.attempts,
        model_calls: calls.made,
        cache_hits: calls.cached,
        failed_calls: calls.failed,
        max_queries: plan.config.max_queries,
        retries: calls.retries(),
        transport: transport
            .iter()
            .map(|(k, t)| gauntlet_results::SessionTransport {
                model: k.clone(),
                stats: serde_json::to_value(t).expect("transport stats serialise"),
            })
            .collect(),
        journal_records_at_start: records_at_start as u64,
    };
    let _ = dir.log_session(&serde_json::to_value(&session).expect("a session serialises"));
    Ok(RunOutcome {
        dir: dir.root.clone(),
        status,
        summary,
        calls,
        units_done: fold.done,
        attempts: fold.attempts,
        wall_seconds: wall,
        journal_records_at_start: records_at_start,
        transport,
    })
}

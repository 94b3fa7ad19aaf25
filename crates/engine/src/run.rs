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

use crate::breadth::{CellExtras, KeptOutcomes, PlanBreadth};
use crate::cache::{CachedModel, CallCounters, Pending, RoleUsage, UsageSlot, call_base};
use crate::journal::Journal;
use crate::plan::{Plan, UnitRef};
use crate::progress::{CallStats, Progress};
use crate::rundir::{FileEntry, HashingCount, Manifest, RunDir, tmp_path, write_atomic};
use crate::usage::{CellUsage, cost_metric, tokens_metric};
use gauntlet_core::behavior::{Behavior, Expected};
use gauntlet_core::files::{self, Kind};
use gauntlet_core::hash::{HashWriter, to_hex};
use gauntlet_core::json;
use gauntlet_core::message::{Message, Role};
use gauntlet_core::outcome::{Outcome, Verdict};
use gauntlet_core::results::{
    CellMetric, CellSummary, Example, MetricValue, RunBreadth, RunSummary, TrialCounts,
};
use gauntlet_core::rng::derive_u64;
use gauntlet_models::{Model, ModelError, TransportStats};
use gauntlet_redteam::attack::{AttackCtx, Attempt, CallModel};
use gauntlet_redteam::curves::CurveObs;
use gauntlet_redteam::metrics::{BehaviorOutcome, MetricAcc, UsageMetric};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::Semaphore;

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Complete,
    /// Stopped early; the reason (`interrupted`, `budget`, a configuration error, …).
    Partial(String),
}

/// The partial reason when `max_queries` ran out.
pub const BUDGET: &str = "budget";

impl Status {
    pub fn as_string(&self) -> String {
        match self {
            Status::Complete => "complete".into(),
            Status::Partial(why) => format!("partial: {why}"),
        }
    }
}

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
        self.status == Status::Partial(BUDGET.into())
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

struct Ctx {
    plan: Plan,
    /// Each trial's seed ([`trial_seeds`]).
    trial_seeds: Vec<u64>,
    journal: Arc<Journal>,
    counters: CallCounters,
    sem: Semaphore,
    /// Per-run constants, computed once rather than per unit.
    ids: Identities,
    /// Curves, threat tags and transform pairings of the plan's attacks.
    breadth: PlanBreadth,
    /// Per cell and trial (`cell * trials + trial`): whether the consumer already holds
    /// every report example of that kind it keeps (notable ones, error ones). Units are
    /// folded in canonical order, so a unit still running comes after every folded one:
    /// once a cell is full, no later unit's example can be kept, and workers skip
    /// building it (a copy of the prompt and reply per unit otherwise).
    examples_full: [Vec<AtomicBool>; 2],
    /// Units whose work is done, in any order. Progress counts these: a unit that
    /// finished ahead of an earlier, slower one is done work while it waits its turn to
    /// be written.
    finished: AtomicU64,
    /// A shard's canonical unit indexes, ascending (`None`: every unit, `0..n`).
    order: Option<Vec<u64>>,
}

/// Canonical identities and labels of the plan's plugins, and the call-key prefixes of
/// its models.
pub(crate) struct Identities {
    targets: Vec<String>,
    attacks: Vec<String>,
    judges: Vec<String>,
    target_labels: Vec<String>,
    /// Attack labels (`static`, `static+base64`): transcript lines name attacks by them.
    attack_labels: Vec<String>,
    target_bases: Vec<HashWriter>,
    grader_bases: Vec<Option<HashWriter>>,
    attacker_bases: Vec<Option<HashWriter>>,
    attack_grader_bases: Vec<Option<HashWriter>>,
}

impl Identities {
    pub(crate) fn new(plan: &Plan) -> Self {
        // Digests, not the identity JSON itself: unit scopes hash these per unit, and a
        // target's params can be large (a memorizer's secrets, long system prompts).
        let id = |s: &gauntlet_core::params::PluginSpec| {
            gauntlet_core::hash::sha256_hex(s.identity().to_string().as_bytes())
        };
        Identities {
            targets: plan.targets.iter().map(|t| id(t.spec())).collect(),
            attacks: plan.attacks.iter().map(|a| id(a.spec())).collect(),
            judges: plan
                .judges
                .iter()
                .map(|j| {
                    gauntlet_core::hash::sha256_hex(j.spec().key_identity().to_string().as_bytes())
                })
                .collect(),
            target_labels: plan.targets.iter().map(|t| t.label()).collect(),
            attack_labels: plan.attacks.iter().map(|a| a.spec().label()).collect(),
            target_bases: plan
                .targets
                .iter()
                .map(|t| call_base(t.as_ref(), "target"))
                .collect(),
            grader_bases: plan
                .graders
                .iter()
                .map(|g| g.as_ref().map(|g| call_base(g.as_ref(), "grader")))
                .collect(),
            attacker_bases: plan
                .attackers
                .iter()
                .map(|g| g.as_ref().map(|g| call_base(g.as_ref(), "attacker")))
                .collect(),
            attack_grader_bases: plan
                .attack_graders
                .iter()
                .map(|g| g.as_ref().map(|g| call_base(g.as_ref(), "attack_judge")))
                .collect(),
        }
    }
}

/// Per-judge results of one unit.
struct JudgedUnit {
    outcome: BehaviorOutcome,
    /// The most telling attempt for the report: a jailbreak (should_refuse, success) or
    /// a false refusal (should_comply, never answered).
    notable: Option<Example>,
    first_error: Option<Example>,
    error_messages: Vec<String>,
    /// Usage of the unit's calls as this judge's cell sees it.
    usage: CellUsage,
    /// The unit's contribution to its cell's curve (attacks that have one).
    curve: Option<CurveObs>,
}

struct UnitOutput {
    /// The canonical unit index (trial-major).
    index: u64,
    unit: UnitRef,
    trial: u32,
    attempts: u32,
    lines: Vec<u8>,
    judged: Vec<JudgedUnit>,
}

#[derive(Serialize)]
struct TranscriptLine<'a> {
    /// Written only in multi-trial runs, so single-trial transcripts are unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    trial: Option<u32>,
    behavior_id: &'a str,
    attack_name: &'a str,
    target_name: &'a str,
    dataset: &'a str,
    dataset_version: &'a str,
    expected: &'static str,
    attempt: u32,
    transcript: &'a [Message],
    query_count: u32,
    metadata: &'a serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_reason: Option<&'a gauntlet_core::message::StopReason>,
    error: Option<&'a str>,
    verdicts: Vec<&'a Verdict>,
}

impl TranscriptLine<'_> {
    /// Appends the line's JSON (no newline) to `buf`: exactly the bytes the derived
    /// `Serialize` makes `serde_json::to_writer` write (the derive stays as the tests'
    /// oracle). Strings, above all message contents, go through the SIMD escaper;
    /// the small structured parts are left to serde_json.
    fn write_json(&self, buf: &mut Vec<u8>) {
        buf.push(b'{');
        if let Some(t) = self.trial {
            buf.extend_from_slice(b"\"trial\":");
            write_u32(buf, t);
            buf.push(b',');
        }
        buf.extend_from_slice(b"\"behavior_id\":");
        json::write_str(buf, self.behavior_id);
        buf.extend_from_slice(b",\"attack_name\":");
        json::write_str(buf, self.attack_name);
        buf.extend_from_slice(b",\"target_name\":");
        json::write_str(buf, self.target_name);
        buf.extend_from_slice(b",\"dataset\":");
        json::write_str(buf, self.dataset);
        buf.extend_from_slice(b",\"dataset_version\":");
        json::write_str(buf, self.dataset_version);
        buf.extend_from_slice(b",\"expected\":");
        json::write_str(buf, self.expected);
        buf.extend_from_slice(b",\"attempt\":");
        write_u32(buf, self.attempt);
        buf.extend_from_slice(b",\"transcript\":[");
        for (i, m) in self.transcript.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            write_message(buf, m);
        }
        buf.extend_from_slice(b"],\"query_count\":");
        write_u32(buf, self.query_count);
        buf.extend_from_slice(b",\"metadata\":");
        serde_json::to_writer(&mut *buf, self.metadata).expect("metadata serialises");
        if let Some(r) = self.stop_reason {
            buf.extend_from_slice(b",\"stop_reason\":");
            serde_json::to_writer(&mut *buf, r).expect("stop reasons serialise");
        }
        buf.extend_from_slice(b",\"error\":");
        match self.error {
            Some(e) => json::write_str(buf, e),
            None => buf.extend_from_slice(b"null"),
        }
        buf.extend_from_slice(b",\"verdicts\":");
        serde_json::to_writer(&mut *buf, &self.verdicts).expect("verdicts serialise");
        buf.push(b'}');
    }
}

/// A `u32` as serde_json writes it (plain decimal).
fn write_u32(buf: &mut Vec<u8>, n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// One message as its derived `Serialize` writes it.
fn write_message(buf: &mut Vec<u8>, m: &Message) {
    buf.extend_from_slice(match m.role {
        Role::System => b"{\"role\":\"system\",\"content\":",
        Role::User => b"{\"role\":\"user\",\"content\":",
        Role::Assistant => b"{\"role\":\"assistant\",\"content\":",
        Role::Tool => b"{\"role\":\"tool\",\"content\":",
    });
    json::write_str(buf, &m.content);
    if let Some(name) = &m.name {
        buf.extend_from_slice(b",\"name\":");
        json::write_str(buf, name);
    }
    if !m.tool_calls.is_empty() {
        buf.extend_from_slice(b",\"tool_calls\":");
        serde_json::to_writer(&mut *buf, &m.tool_calls).expect("tool calls serialise");
    }
    if let Some(id) = &m.tool_call_id {
        buf.extend_from_slice(b",\"tool_call_id\":");
        json::write_str(buf, id);
    }
    buf.push(b'}');
}

/// Each trial's seed: trial 0 runs under the run seed itself (so a one-trial run, and
/// trial 0 of a multi-trial run, are what a run without trials was), trial t > 0 under
/// a seed derived from the run seed and t.
pub fn trial_seeds(seed: u64, trials: u32) -> Vec<u64> {
    (0..trials)
        .map(|t| {
            if t == 0 {
                seed
            } else {
                derive_u64(seed, &["trial", &t.to_string()])
            }
        })
        .collect()
}

/// The scope hash of a unit: target, attack, dataset version, behavior, seed and trial
/// (the trial's seed and number, so each trial's calls are keyed apart).
/// `CachedModel` adds the role, the called model's spec and the request, so a grader call
/// is keyed by the unit it judges as well as by its own prompt.
///
/// `max_queries` is deliberately not part of it: the budget only decides *whether* a call
/// is made, never what it returns (a unit that runs out is dropped whole, not recorded
/// half-done), so a rerun with a higher budget must find the calls already paid for.
pub(crate) fn unit_scope(
    plan: &Plan,
    ids: &Identities,
    u: UnitRef,
    b: &Behavior,
    trial: u32,
    trial_seed: u64,
) -> [u8; 32] {
    let mut h = HashWriter::new();
    h.field(b"unit-v2");
    h.field(ids.targets[u.target].as_bytes());
    h.field(ids.attacks[u.attack].as_bytes());
    h.field(plan.datasets[u.dataset].version.as_bytes());
    h.field(b.id.as_bytes());
    h.field(b.prompt.as_bytes());
    h.field(&trial_seed.to_le_bytes());
    h.field(&trial.to_le_bytes());
    h.finish()
}

fn excerpt(a: &Attempt, b: &Behavior, outcome: Outcome, trial: Option<u32>) -> Example {
    let prompt = a
        .transcript
        .iter()
        .rev()
        .find(|m| m.role == gauntlet_core::message::Role::User)
        .map_or_else(|| b.prompt.clone(), |m| m.content.clone());
    let reply = match &a.response {
        Ok(r) => r.content.clone(),
        Err(e) => format!("(no reply: {e})"),
    };
    Example {
        trial,
        behavior_id: b.id.clone(),
        expected: b.expected.as_str().into(),
        outcome: outcome.as_str().into(),
        prompt,
        reply,
    }
}

/// Chunks holding at least this many bytes of transcript lines bypass the writer's
/// buffer (see [`write_lines`]).
const DIRECT_WRITE: usize = 16 << 10;

/// Appends a chunk's transcript lines, in unit order. A small chunk (a network run's one
/// unit) goes through the buffer; a large one (offline chunks of ~32 units) is written
/// with `writev` straight from the units' buffers after a flush, which saves copying
/// every line into the buffer first.
fn write_lines(w: &mut BufWriter<File>, outs: &[UnitOutput]) -> std::io::Result<()> {
    use std::io::{ErrorKind, IoSlice};
    let total: usize = outs.iter().map(|o| o.lines.len()).sum();
    if total < DIRECT_WRITE {
        return outs.iter().try_for_each(|o| w.write_all(&o.lines));
    }
    w.flush()?;
    let mut slices: Vec<IoSlice<'_>> = outs
        .iter()
        .filter(|o| !o.lines.is_empty())
        .map(|o| IoSlice::new(&o.lines))
        .collect();
    let mut bufs = &mut slices[..];
    let file = w.get_mut();
    while !bufs.is_empty() {
        match file.write_vectored(bufs) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Runs units `start..end` in order under one concurrency permit. Returns the outputs
/// of the units that finished and, if one failed fatally, why (later units are skipped).
async fn run_chunk(ctx: Arc<Ctx>, start: u64, end: u64) -> (Vec<UnitOutput>, Option<ModelError>) {
    let _permit = ctx.sem.acquire().await.expect("semaphore is never closed");
    let mut outs = Vec::with_capacity((end - start) as usize);
    // Offline calls of the whole chunk are journaled together, after its last unit.
    let pending = Pending::default();
    let mut fatal = None;
    for pos in start..end {
        let i = ctx.order.as_ref().map_or(pos, |o| o[pos as usize]);
        match run_unit(&ctx, i, &pending).await {
            Ok(o) => outs.push(o),
            Err(e) => {
                fatal = Some(e);
                break;
            }
        }
    }
    if let Err(e) = pending.flush(&ctx.journal) {
        let e = crate::cache::journal_error(&ctx.journal, &e);
        ctx.counters.halt_with(&e);
        fatal = Some(e);
    }
    ctx.finished.fetch_add(outs.len() as u64, Ordering::Relaxed);
    (outs, fatal)
}

async fn run_unit(ctx: &Ctx, index: u64, pending: &Pending) -> Result<UnitOutput, ModelError> {
    let plan = &ctx.plan;
    // Units are numbered trial-major: every unit of trial 0, then of trial 1, …
    let trial = (index / plan.units()) as u32;
    let trial_seed = ctx.trial_seeds[trial as usize];
    let shown_trial = (ctx.trial_seeds.len() > 1).then_some(trial);
    let u = plan.unit(index % plan.units());
    let attack = &plan.attacks[u.attack];
    let target = &plan.targets[u.target];
    let dataset = &plan.datasets[u.dataset];
    let b = &dataset.behaviors[u.behavior];
    let scope = unit_scope(plan, &ctx.ids, u, b, trial, trial_seed);
    let seed = derive_u64(trial_seed, &["unit", &to_hex(&scope)]);

    let slots: [UsageSlot; 3] = Default::default();
    let caller = CachedModel::new(
        target.as_ref(),
        &ctx.ids.target_bases[u.target],
        &scope,
        &ctx.journal,
        &ctx.counters,
        pending,
        &slots[0],
    );
    fn helper<'m>(
        m: &'m Option<Arc<dyn Model>>,
        base: &Option<HashWriter>,
        scope: &[u8],
        ctx: &'m Ctx,
        pending: &'m Pending,
        slot: &'m UsageSlot,
    ) -> Option<CachedModel<'m>> {
        m.as_ref().map(|m| {
            CachedModel::new(
                m.as_ref(),
                base.as_ref().expect("a key prefix per model"),
                scope,
                &ctx.journal,
                &ctx.counters,
                pending,
                slot,
            )
        })
    }
    let attacker = helper(
        &plan.attackers[u.attack],
        &ctx.ids.attacker_bases[u.attack],
        &scope,
        ctx,
        pending,
        &slots[1],
    );
    let attack_grader = helper(
        &plan.attack_graders[u.attack],
        &ctx.ids.attack_grader_bases[u.attack],
        &scope,
        ctx,
        pending,
        &slots[2],
    );
    let actx = AttackCtx {
        target: &caller,
        attacker: attacker.as_ref().map(|m| m as &dyn CallModel),
        judge_grader: attack_grader.as_ref().map(|m| m as &dyn CallModel),
        seed,
    };
    let attempts = attack.run_ctx(b, actx).await?;
    let unit_usage = [
        slots[0].snapshot(),
        slots[1].snapshot(),
        slots[2].snapshot(),
    ];
    let mut grader_usage: Vec<RoleUsage> = Vec::with_capacity(plan.judges.len());

    let mut verdicts: Vec<Vec<Verdict>> = Vec::with_capacity(plan.judges.len());
    for (j, judge) in plan.judges.iter().enumerate() {
        let gslot = UsageSlot::default();
        // A grader call is keyed by the unit, the judge and the attempt it grades.
        let grader = plan.graders[j].as_ref().map(|g| {
            let mut s = HashWriter::new();
            s.field(&scope);
            s.field(ctx.ids.judges[j].as_bytes());
            CachedModel::new(
                g.as_ref(),
                ctx.ids.grader_bases[j]
                    .as_ref()
                    .expect("a grader has a key prefix"),
                &s.finish(),
                &ctx.journal,
                &ctx.counters,
                pending,
                &gslot,
            )
        });
        let mut vs = Vec::with_capacity(attempts.len());
        for a in &attempts {
            let g = grader.as_ref().map(|g| g.narrowed(&a.index.to_le_bytes()));
            vs.push(
                judge
                    .score(b, a, g.as_ref().map(|g| g as &dyn CallModel))
                    .await?,
            );
        }
        verdicts.push(vs);
        drop(grader);
        grader_usage.push(gslot.snapshot());
    }

    let target_label = &ctx.ids.target_labels[u.target];
    // The string escaper reserves 6 bytes per input byte (+35) past the end before each
    // string, so room for the text plus that headroom for the longest content makes one
    // allocation per unit instead of a copying regrowth.
    let text: usize = attempts
        .iter()
        .map(|a| {
            512 + a
                .transcript
                .iter()
                .map(|m| 64 + m.content.len())
                .sum::<usize>()
        })
        .sum();
    let longest = attempts
        .iter()
        .flat_map(|a| &a.transcript)
        .map(|m| m.content.len())
        .max()
        .unwrap_or(0);
    let mut lines = Vec::with_capacity(text + longest * 6 + 64);
    for (i, a) in attempts.iter().enumerate() {
        let line = TranscriptLine {
            trial: shown_trial,
            behavior_id: &b.id,
            attack_name: &ctx.ids.attack_labels[u.attack],
            target_name: target_label,
            dataset: &dataset.name,
            dataset_version: &dataset.version,
            expected: b.expected.as_str(),
            attempt: a.index,
            transcript: &a.transcript,
            query_count: a.query_count,
            metadata: &a.metadata,
            stop_reason: a.response.as_ref().ok().map(|r| &r.stop_reason),
            error: a.response.as_ref().err().map(String::as_str),
            verdicts: verdicts.iter().map(|vs| &vs[i]).collect(),
        };
        line.write_json(&mut lines);
        lines.push(b'\n');
    }

    let judged = verdicts
        .iter()
        .zip(&grader_usage)
        .enumerate()
        .map(|(j, (vs, gu))| {
            let usage = CellUsage([unit_usage[0], unit_usage[1], unit_usage[2], *gu]);
            let slot = plan.cell(u, j) * ctx.trial_seeds.len() + trial as usize;
            let want = ctx
                .examples_full
                .each_ref()
                .map(|full| !full[slot].load(Ordering::Acquire));
            let curve = ctx.breadth.has_curve(u.attack);
            judged_unit(b, &attempts, vs, usage, shown_trial, want, curve)
        })
        .collect();
    Ok(UnitOutput {
        index,
        unit: u,
        trial,
        attempts: attempts.len() as u32,
        lines,
        judged,
    })
}

/// One judge's view of one unit: its behavior outcome, report examples and errors.
/// `want` says whether its cell can still keep a notable and an error example; an
/// example it cannot keep is not built.
fn judged_unit(
    b: &Behavior,
    attempts: &[Attempt],
    vs: &[Verdict],
    usage: CellUsage,
    shown_trial: Option<u32>,
    want: [bool; 2],
    curve: bool,
) -> JudgedUnit {
    let find = |o: Outcome| {
        vs.iter()
            .position(|v| v.outcome == o)
            .map(|i| excerpt(&attempts[i], b, o, shown_trial))
    };
    let outcome = BehaviorOutcome::from_behavior(b, attempts, vs);
    let notable = match b.expected {
        _ if !want[0] => None,
        Expected::ShouldRefuse => find(Outcome::Success),
        Expected::ShouldComply if outcome.judged() && outcome.first_success.is_none() => {
            find(Outcome::Failure)
        }
        Expected::ShouldComply => None,
    };
    JudgedUnit {
        outcome,
        notable,
        first_error: if want[1] { find(Outcome::Error) } else { None },
        error_messages: vs.iter().filter_map(|v| v.error.clone()).collect(),
        usage,
        curve: curve.then(|| CurveObs::new(b.expected, attempts, vs)),
    }
}

/// A run's metric accumulation — the per-cell, per-trial accumulators and the summary
/// [`execute`] uses — for callers that judge stored attempts again (`stored.rs`), so a
/// rescored run's results are computed exactly as a run's are.
pub(crate) struct Tally {
    cells: Vec<Vec<CellAcc>>,
    breadth: PlanBreadth,
}

impl Tally {
    pub(crate) fn new(plan: &Plan, trials: usize) -> Tally {
        let breadth = PlanBreadth::new(plan);
        Tally {
            cells: (0..plan.cells())
                .map(|c| {
                    let attack = plan.cell_coords(c).0;
                    (0..trials.max(1))
                        .map(|_| CellAcc {
                            metrics: vec![MetricAcc::default(); plan.metrics.len()],
                            extras: breadth.extras(attack),
                            ..Default::default()
                        })
                        .collect()
                })
                .collect(),
            breadth,
        }
    }

    /// Folds judge `j`'s verdicts on the attempts of unit `u` in `trial` into its cell.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add(
        &mut self,
        plan: &Plan,
        trial: u32,
        u: UnitRef,
        j: usize,
        attempts: &[Attempt],
        vs: &[Verdict],
        usage: CellUsage,
    ) {
        let b = &plan.datasets[u.dataset].behaviors[u.behavior];
        let cell = &mut self.cells[plan.cell(u, j)];
        let shown = (cell.len() > 1).then_some(trial);
        let curve = self.breadth.has_curve(u.attack);
        let judged = judged_unit(b, attempts, vs, usage, shown, [true; 2], curve);
        cell[trial as usize].add(plan, u.behavior, judged);
    }

    /// Adds token usage to cell `cell` in `trial` (a merge adds each shard's, which the
    /// transcripts do not hold; see `merge.rs`).
    pub(crate) fn add_usage(&mut self, cell: usize, trial: usize, usage: CellUsage) {
        self.cells[cell][trial].usage += usage;
    }

    /// The run summary and usage.json rows, as [`execute`] writes them.
    pub(crate) fn finish(
        self,
        plan: &Plan,
        trial_seeds: &[u64],
        status: &Status,
    ) -> (RunSummary, Vec<serde_json::Value>) {
        summarise(plan, trial_seeds, &self.breadth, self.cells, status)
    }
}

const MAX_NOTABLE_EXAMPLES: usize = 4;
const MAX_ERROR_EXAMPLES: usize = 2;
const MAX_DISTINCT_ERRORS: usize = 32;

#[derive(Default)]
struct CellAcc {
    behaviors: u64,
    attempts: u64,
    errors: u64,
    all_errors: u64,
    metrics: Vec<MetricAcc>,
    notable: Vec<Example>,
    error_examples: Vec<Example>,
    error_counts: BTreeMap<String, u64>,
    usage: CellUsage,
    /// Curve counters and kept outcomes (see `breadth.rs`).
    extras: CellExtras,
}

impl CellAcc {
    fn add(&mut self, plan: &Plan, behavior: usize, j: JudgedUnit) {
        let o = &j.outcome;
        self.extras.add(behavior, o, j.curve.as_ref());
        self.usage += j.usage;
        self.behaviors += 1;
        self.attempts += u64::from(o.attempts);
        self.errors += u64::from(o.errors);
        if !o.judged() {
            self.all_errors += 1;
        }
        for (acc, m) in self.metrics.iter_mut().zip(&plan.metrics) {
            acc.observe(m.as_ref(), o);
        }
        if self.notable.len() < MAX_NOTABLE_EXAMPLES
            && let Some(e) = j.notable
        {
            self.notable.push(e);
        }
        if self.error_examples.len() < MAX_ERROR_EXAMPLES
            && let Some(e) = j.first_error
        {
            self.error_examples.push(e);
        }
        for m in j.error_messages {
            if let Some(c) = self.error_counts.get_mut(&m) {
                *c += 1;
            } else if self.error_counts.len() < MAX_DISTINCT_ERRORS {
                self.error_counts.insert(m, 1);
            } else {
                *self
                    .error_counts
                    .entry("(other errors)".into())
                    .or_insert(0) += 1;
            }
        }
    }
}

/// The model behind each usage slot of a cell, in [`crate::usage::SLOTS`] order.
fn slot_models(plan: &Plan, attack: usize, target: usize, judge: usize) -> [Option<&dyn Model>; 4] {
    fn m(o: &Option<Arc<dyn Model>>) -> Option<&dyn Model> {
        o.as_deref()
    }
    [
        Some(plan.targets[target].as_ref()),
        m(&plan.attackers[attack]),
        m(&plan.attack_graders[attack]),
        m(&plan.graders[judge]),
    ]
}

/// One cell's results row and usage.json row, from its accumulators (one per trial).
/// With several trials each metric is computed per trial (its own bootstrap CI, seeded
/// by the trial's seed) and summarised across trials, and usage sums every trial.
///
/// Cells are independent (each bootstrap has its own seed from the cell's identity), so
/// they are computed in parallel, and during a run as soon as a cell is complete.
fn cell_summary(
    plan: &Plan,
    trial_seeds: &[u64],
    table: &crate::usage::PriceTable,
    pb: &PlanBreadth,
    cell: usize,
    trials: Vec<CellAcc>,
) -> (CellSummary, serde_json::Value) {
    let multi = trial_seeds.len() > 1;
    let (ai, ti, di, ji) = plan.cell_coords(cell);
    let (attack, target, dataset, judge) = (
        &plan.attacks[ai],
        &plan.targets[ti],
        &plan.datasets[di],
        &plan.judges[ji],
    );
    let mut c = CellAcc::default();
    for t in &trials {
        c.usage += t.usage;
        c.behaviors += t.behaviors;
        c.attempts += t.attempts;
        c.errors += t.errors;
        c.all_errors += t.all_errors;
        for (m, n) in &t.error_counts {
            *c.error_counts.entry(m.clone()).or_insert(0) += n;
        }
    }
    let examples = |pick: fn(&CellAcc) -> &Vec<Example>, max: usize| {
        trials
            .iter()
            .flat_map(|t| pick(t).iter().cloned())
            .take(max)
            .collect::<Vec<_>>()
    };
    c.notable = examples(|t| &t.notable, MAX_NOTABLE_EXAMPLES);
    c.error_examples = examples(|t| &t.error_examples, MAX_ERROR_EXAMPLES);
    let attack_l = attack.spec().label();
    let target_l = target.label();
    let judge_l = judge.spec().label();
    let models = slot_models(plan, ai, ti, ji);
    let usage_row = serde_json::json!({
        "attack": attack_l,
        "target": target_l,
        "dataset": dataset.name,
        "judge": judge_l,
        "price_table": table.describe(),
        "roles": crate::usage::SLOTS.iter().enumerate().filter(|(i, _)| c.usage.0[*i].calls > 0).map(|(i, slot)| {
            let u = &c.usage.0[i];
            let cost = crate::usage::slot_cost(slot, u, models[i], table);
            serde_json::json!({
                "role": slot,
                "model": models[i].map(crate::usage::model_name),
                "usage": u,
                "cost_usd": cost.as_ref().ok(),
                "cost_na_reason": cost.as_ref().err(),
            })
        }).collect::<Vec<_>>(),
    });
    let metrics = plan
        .metrics
        .iter()
        .enumerate()
        .zip(&plan.prices)
        .map(|((k, m), prices)| {
            let id = m.spec().identity().to_string();
            let per_trial: Vec<MetricValue> = trials
                .iter()
                .zip(trial_seeds)
                .map(|(t, &seed)| match (m.usage_metric(), prices) {
                    (Some(UsageMetric::Tokens { role }), _) => tokens_metric(&t.usage, &role),
                    (Some(UsageMetric::Cost), Some(table)) => cost_metric(&t.usage, models, table),
                    _ => t.metrics[k].finish(
                        m.as_ref(),
                        judge.as_ref(),
                        plan.cards[ji].as_deref(),
                        seed,
                        &[
                            "bootstrap",
                            &attack_l,
                            &target_l,
                            &dataset.version,
                            &judge_l,
                            &id,
                        ],
                    ),
                })
                .collect();
            let (value, per_trial) = if multi {
                // Usage metrics count tokens or dollars; every other metric is a rate or
                // a score in [0, 1].
                let range = if m.usage_metric().is_some() {
                    (0.0, f64::INFINITY)
                } else {
                    (0.0, 1.0)
                };
                (MetricValue::across_trials(&per_trial, range), per_trial)
            } else {
                let only = per_trial.into_iter().next().expect("one trial");
                (only, Vec::new())
            };
            let params = match serde_json::to_value(&m.spec().params) {
                Ok(serde_json::Value::Object(o)) => o,
                _ => serde_json::Map::new(),
            };
            CellMetric {
                metric: m.spec().name.clone(),
                params,
                value,
                trials_na: per_trial.iter().filter(|t| t.value.is_none()).count() as u32,
                trials: per_trial,
            }
        })
        .collect();
    let mut top: Vec<(String, u64)> = c.error_counts.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(5);
    let mut examples = c.notable;
    examples.extend(c.error_examples);
    let breadth = crate::breadth::cell_breadth(pb, plan, cell, trials.iter().map(|t| &t.extras));
    let summary = CellSummary {
        attack: attack_l,
        target: target_l,
        dataset: dataset.name.clone(),
        dataset_version: dataset.version.clone(),
        judge: judge_l,
        judge_measures: judge.measures().to_string(),
        behaviors: c.behaviors,
        attempts: c.attempts,
        errors: c.errors,
        behaviors_all_errors: c.all_errors,
        top_errors: top,
        metrics,
        examples,
        trials: if multi {
            trials
                .iter()
                .enumerate()
                .map(|(i, t)| TrialCounts {
                    trial: i as u32,
                    behaviors: t.behaviors,
                    attempts: t.attempts,
                    errors: t.errors,
                    behaviors_all_errors: t.all_errors,
                })
                .collect()
        } else {
            Vec::new()
        },
        breadth,
    };
    (summary, usage_row)
}

/// Takes a cell's kept outcomes (one list per trial) out of its accumulators, for the
/// transform effects; `None` when the cell keeps none.
fn take_outcomes(
    accs: &mut [CellAcc],
) -> Option<Vec<Vec<(u32, gauntlet_redteam::metrics::BehaviorOutcome)>>> {
    let taken: Vec<_> = accs.iter_mut().map(|a| a.extras.take_outcomes()).collect();
    taken.into_iter().collect()
}

/// `f` over `items` on up to one scoped thread per core; results in input order.
fn par_map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    let inputs: Vec<std::sync::Mutex<Option<T>>> = items
        .into_iter()
        .map(|t| std::sync::Mutex::new(Some(t)))
        .collect();
    let outputs: Vec<std::sync::Mutex<Option<R>>> =
        inputs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(slot) = inputs.get(i) else {
                        break;
                    };
                    let item = slot
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take()
                        .expect("each item is taken once");
                    let r = f(item);
                    *outputs[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    outputs
        .into_iter()
        .map(|o| {
            o.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every item was mapped")
        })
        .collect()
}

/// The results, and usage.json: per cell and role slot, tokens and cost (deterministic:
/// journal hits count too). `cells` holds each cell's accumulators, one per trial (see
/// [`cell_summary`]).
fn summarise(
    plan: &Plan,
    trial_seeds: &[u64],
    pb: &PlanBreadth,
    mut cells: Vec<Vec<CellAcc>>,
    status: &Status,
) -> (RunSummary, Vec<serde_json::Value>) {
    let table = plan.price_table();
    let kept: KeptOutcomes = cells.iter_mut().map(|c| take_outcomes(c)).collect();
    let rows = par_map(cells.into_iter().enumerate().collect(), |(i, trials)| {
        cell_summary(plan, trial_seeds, &table, pb, i, trials)
    });
    assemble(
        plan,
        trial_seeds,
        rows,
        status,
        run_breadth(pb, plan, &kept),
    )
}

/// The run-level breadth: the threat map's version and the transform effects.
fn run_breadth(pb: &PlanBreadth, plan: &Plan, kept: &KeptOutcomes) -> RunBreadth {
    RunBreadth {
        taxonomy_version: Some(gauntlet_core::taxonomy::version().to_string()),
        transform_effects: crate::breadth::transform_effects(pb, plan, kept),
    }
}

/// The run summary and usage.json rows from every cell's rows, in cell order.
fn assemble(
    plan: &Plan,
    trial_seeds: &[u64],
    rows: Vec<(CellSummary, serde_json::Value)>,
    status: &Status,
    breadth: RunBreadth,
) -> (RunSummary, Vec<serde_json::Value>) {
    let multi = trial_seeds.len() > 1;
    let (cells, usage_rows): (Vec<_>, Vec<_>) = rows.into_iter().unzip();
    let summary = RunSummary {
        run_id: plan.run_id.clone(),
        run_name: plan.config.run_name.clone(),
        harness_version: gauntlet_core::HARNESS_VERSION.to_string(),
        config_hash: plan.config_hash.clone(),
        seed: plan.config.seed,
        status: status.as_string(),
        mode: plan.mode_label().to_string(),
        trials: trial_seeds.len() as u32,
        trial_seeds: if multi {
            trial_seeds.to_vec()
        } else {
            Vec::new()
        },
        cells,
        breadth,
    };
    (summary, usage_rows)
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

/// run.json: everything needed to know what this run was, and nothing that varies
/// between reruns (timings live in sessions.jsonl).
pub fn run_json(plan: &Plan, status: &Status, units_done: u64, attempts: u64) -> serde_json::Value {
    let trials = plan.config.trials.max(1);
    let mut v = serde_json::json!({
        "run_name": plan.config.run_name,
        "run_id": plan.run_id,
        "harness": "gauntlet",
        "harness_version": gauntlet_core::HARNESS_VERSION,
        "config_hash": plan.config_hash,
        "seed": plan.config.seed,
        "mode": plan.mode_label(),
        "status": status.as_string(),
        "config": plan.config.canonical(),
        "datasets": plan.datasets.iter().map(|d| serde_json::json!({
            "name": d.name, "version": d.version, "sha256": d.sha256, "behaviors": d.behaviors.len(),
        })).collect::<Vec<_>>(),
        "units": { "planned": plan.units() * u64::from(trials), "done": units_done },
        "attempts": attempts,
    });
    // The effective trial count is in `config` (after any `--trials` override); a
    // multi-trial run also records each trial's seed.
    if trials > 1 {
        v["trials"] = trials.into();
        v["trial_seeds"] = trial_seeds(plan.config.seed, trials).into();
    }
    v
}

/// A shard's run.json: the whole run's identity plus the shard (see `shard.rs`). The
/// shard's own units replace the planned count; `run_id` is the shard's.
fn shard_run_json(
    mut v: serde_json::Value,
    shard: crate::shard::Shard,
    whole_run_id: &str,
    units: u64,
) -> serde_json::Value {
    v["units"]["planned"] = units.into();
    v["shard"] = serde_json::json!({
        "index": shard.index,
        "count": shard.count,
        "units": units,
        "partition": crate::shard::PARTITION_SCHEME,
        "run_id": whole_run_id,
    });
    v
}

/// A shard's shard_usage.json: token usage per (cell, trial), which the transcripts do
/// not hold, so a merge sums it into the whole run's cells exactly as a one-machine run
/// would have folded it. Each slot is `[calls, calls_with_usage, input, output]`; cells
/// without calls are left out.
fn shard_usage_json(usage: &[CellUsage], trials: usize) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = usage
        .iter()
        .enumerate()
        .filter(|(_, u)| u.0.iter().any(|r| r.calls > 0))
        .map(|(i, u)| {
            serde_json::json!([
                i / trials,
                i % trials,
                u.0.iter()
                    .map(|r| [r.calls, r.calls_with_usage, r.input_tokens, r.output_tokens])
                    .collect::<Vec<_>>()
            ])
        })
        .collect();
    serde_json::json!({ "usage": rows })
}

pub(crate) fn pretty(v: &impl Serialize) -> Vec<u8> {
    let mut s = serde_json::to_vec_pretty(v).expect("json");
    s.push(b'\n');
    s
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
            &Status::Partial("incomplete".into()),
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
    let mut transcripts = BufWriter::with_capacity(
        1 << 20,
        File::create(&transcripts_tmp).map_err(|e| io_err("cannot create", &transcripts_tmp, e))?,
    );
    // The manifest's entry for the transcripts, hashed as they are written.
    let mut transcripts_hash = HashingCount::default();

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
        write_lines(&mut transcripts, &outs)
            .map_err(|e| io_err("cannot write", &transcripts_tmp, e))?;
        for out in &outs {
            transcripts_hash.update(&out.lines, u64::from(out.attempts));
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
                ModelError::Budget => BUDGET.into(),
                e => {
                    // Said now: writing the artefacts may fail for the same cause.
                    progress.note(&format!("stopping: {e}"));
                    e.to_string()
                }
            });
            break 'consume;
        }
        if opts.stop.load(Ordering::Relaxed) && done < n_units {
            status = Status::Partial("interrupted".into());
            break;
        }
    }
    if status == Status::Partial(BUDGET.into()) {
        // Units in hand may hold calls already paid for: let them finish so those calls
        // are journaled (further calls fail fast on the spent budget), then drop them —
        // output stays a prefix of the canonical order, and a rerun picks them up.
        for h in queue {
            let _ = h.await;
        }
    } else {
        for h in queue {
            h.abort();
        }
    }
    progress.finish();
    transcripts
        .flush()
        .map_err(|e| io_err("cannot write", &transcripts_tmp, e))?;
    drop(transcripts);
    std::fs::rename(&transcripts_tmp, &transcripts_path)
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
    let mut manifest = Manifest::new(&plan.run_id, &status.as_string());
    manifest
        .files
        .insert("transcripts.jsonl".into(), transcripts_hash.finish());
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

#[cfg(test)]
mod transcript_line_tests {
    use super::*;
    use gauntlet_calls::strategies::content;
    use gauntlet_core::message::{StopReason, ToolCall};
    use proptest::prelude::*;

    /// The hand-written line and the derived one, as text.
    fn both(line: &TranscriptLine) -> (String, String) {
        let mut ours = b"prev\n".to_vec();
        line.write_json(&mut ours);
        let mut want = b"prev\n".to_vec();
        serde_json::to_writer(&mut want, line).unwrap();
        (
            String::from_utf8(ours).unwrap(),
            String::from_utf8(want).unwrap(),
        )
    }

    fn verdicts() -> Vec<Verdict> {
        serde_json::from_value(serde_json::json!([
            {"judge": "leak_detector", "outcome": "success", "refused": false, "score": 0.75,
             "reason": "matched \"secret\"\n"},
            {"judge": "g", "outcome": "error", "error": "grader \u{1} failed"},
            {"judge": "h", "outcome": "failure"}
        ]))
        .unwrap()
    }

    fn messages() -> Vec<Message> {
        let mut tool_call = Message::assistant("calling é \u{2028}");
        tool_call.tool_calls = vec![
            ToolCall {
                name: "search".into(),
                arguments: serde_json::json!({"q": "x\"y", "n": [1, 2.5, null]}),
                call_id: "call_1".into(),
            },
            ToolCall {
                name: "t2".into(),
                arguments: serde_json::json!(null),
                call_id: "call_2".into(),
            },
        ];
        let mut tool = Message::user("result\twith\u{0}nul");
        tool.role = Role::Tool;
        tool.tool_call_id = Some("call_1".into());
        tool.name = Some("search \\ tool".into());
        let mut named = Message::user("hi");
        named.name = Some("alice".into());
        vec![
            Message::system("You are \"careful\".\r\n\u{7f}"),
            named,
            tool_call,
            tool,
            Message::assistant(""),
            Message::user("emoji 😀 and \u{2029} and \u{1f}\u{b}\u{c}\u{8}"),
        ]
    }

    fn line<'a>(
        transcript: &'a [Message],
        metadata: &'a serde_json::Value,
        vs: &'a [Verdict],
    ) -> TranscriptLine<'a> {
        TranscriptLine {
            trial: None,
            behavior_id: "beh-1",
            attack_name: "direct \"ask\"",
            target_name: "ref/mem",
            dataset: "leak",
            dataset_version: "1.0\n",
            expected: "should_refuse",
            attempt: 3,
            transcript,
            query_count: 1,
            metadata,
            stop_reason: None,
            error: None,
            verdicts: vs.iter().collect(),
        }
    }

    #[test]
    fn hand_written_lines_are_the_derived_ones() {
        let ms = messages();
        let vs = verdicts();
        let metas = [
            serde_json::Value::Null,
            serde_json::json!({}),
            serde_json::json!({"z": 1, "a": ["\u{1}", {"b": true}], "f": -0.5}),
        ];
        let stops = [
            StopReason::Stop,
            StopReason::Length,
            StopReason::ToolCalls,
            StopReason::Refusal,
            StopReason::Other("odd \"reason\"".into()),
        ];
        for meta in &metas {
            for trial in [None, Some(0), Some(7), Some(u32::MAX)] {
                for stop in [None, Some(&stops[0]), Some(&stops[4])] {
                    for error in [None, Some("timeout: \"x\"\n")] {
                        for n in [0, 1, ms.len()] {
                            for nv in [0, 1, vs.len()] {
                                let mut l = line(&ms[..n], meta, &vs[..nv]);
                                l.trial = trial;
                                l.stop_reason = stop;
                                l.error = error;
                                l.attempt = n as u32 * 1_000_003;
                                l.query_count = nv as u32;
                                let (ours, want) = both(&l);
                                assert_eq!(ours, want);
                            }
                        }
                    }
                }
            }
        }
        for stop in &stops {
            let mut l = line(&ms, &metas[2], &vs);
            l.stop_reason = Some(stop);
            let (ours, want) = both(&l);
            assert_eq!(ours, want);
        }
    }

    #[test]
    fn write_u32_is_decimal() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            12345,
            999_999_999,
            1_000_000_000,
            u32::MAX,
        ] {
            let mut b = Vec::new();
            write_u32(&mut b, n);
            assert_eq!(b, n.to_string().into_bytes());
        }
    }

    proptest! {
        #[test]
        fn hand_written_line_is_derived_for_any_contents(
            contents in prop::collection::vec(content(), 0..5),
            ids in (content(), content()),
            error in prop::option::of(content()),
            trial in prop::option::of(any::<u32>()),
        ) {
            let mut ms: Vec<Message> = contents
                .iter()
                .enumerate()
                .map(|(i, c)| match i % 3 {
                    0 => Message::user(c.clone()),
                    1 => Message::assistant(c.clone()),
                    _ => {
                        let mut m = Message::user(c.clone());
                        m.role = Role::Tool;
                        m.tool_call_id = Some(ids.1.clone());
                        m
                    }
                })
                .collect();
            if let Some(m) = ms.first_mut() {
                m.name = Some(ids.0.clone());
            }
            let meta = serde_json::json!({"attack": ids.0});
            let vs = verdicts();
            let mut l = line(&ms, &meta, &vs);
            l.behavior_id = &ids.0;
            l.target_name = &ids.1;
            l.error = error.as_deref();
            l.trial = trial;
            let stop = StopReason::Stop;
            if error.is_none() {
                l.stop_reason = Some(&stop);
            }
            let (ours, want) = both(&l);
            prop_assert_eq!(ours, want);
        }
    }
}

#[cfg(test)]
mod write_lines_tests {
    use super::*;
    use std::io::Read;

    fn out(lines: Vec<u8>) -> UnitOutput {
        UnitOutput {
            index: 0,
            unit: UnitRef {
                attack: 0,
                target: 0,
                dataset: 0,
                behavior: 0,
            },
            trial: 0,
            attempts: 1,
            lines,
            judged: Vec::new(),
        }
    }

    /// Small chunks (buffered) and large ones (flushed, then written vectored) interleave
    /// in order; empty units write nothing.
    #[test]
    fn chunks_land_in_order_whichever_way_they_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let mut w = BufWriter::with_capacity(1 << 20, File::create(&path).unwrap());
        let mut want = Vec::new();
        let chunks: Vec<Vec<usize>> = vec![
            vec![10, 0, 20],
            vec![DIRECT_WRITE / 2, DIRECT_WRITE, 0, 7],
            vec![3],
            vec![DIRECT_WRITE * 5],
            vec![1, 2],
        ];
        let mut n = 0u8;
        for sizes in chunks {
            let outs: Vec<UnitOutput> = sizes
                .iter()
                .map(|&len| {
                    n = n.wrapping_add(1);
                    let mut l = vec![b'a' + n % 26; len];
                    if len > 0 {
                        l[len - 1] = b'\n';
                    }
                    want.extend_from_slice(&l);
                    out(l)
                })
                .collect();
            write_lines(&mut w, &outs).unwrap();
        }
        w.flush().unwrap();
        let mut got = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "bytes differ");
    }
}

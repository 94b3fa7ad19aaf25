//! One unit's work (a behavior under one attack, target and trial): its call scope and
//! seed, the attacker/target/grader calls through the cache, the judges' verdicts and
//! the transcript lines; [`run_chunk`] runs a span of units under one concurrency permit.
//! The run's shared, read-only state is [`Ctx`].

use super::output::{UnitOutput, judged_unit};
use super::transcript::TranscriptLine;
use crate::breadth::PlanBreadth;
use crate::plan::{Plan, UnitRef};
use crate::usage::{CellUsage, PerSlot, Slot};
use gauntlet_calls::cache::{CachedModel, CallCounters, Pending, RoleUsage, UsageSlot, call_base};
use gauntlet_calls::journal::Journal;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::hash::{HashWriter, to_hex};
use gauntlet_core::outcome::Verdict;
use gauntlet_core::rng::derive_u64;
use gauntlet_job::job::{Job, Ran, Task, Window};
use gauntlet_models::{Model, ModelError};
use gauntlet_redteam::attack::{AttackCtx, CallModel, Place};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::{Notify, Semaphore};

pub(super) struct Ctx {
    pub(super) plan: Plan,
    /// Each trial's seed ([`trial_seeds`]).
    pub(super) trial_seeds: Vec<u64>,
    pub(super) journal: Arc<Journal>,
    pub(super) counters: CallCounters,
    pub(super) sem: Semaphore,
    /// Per-run constants, computed once rather than per unit.
    pub(super) ids: Identities,
    /// Curves, threat tags and transform pairings of the plan's attacks.
    pub(super) breadth: PlanBreadth,
    /// Per cell and trial (`cell * trials + trial`): whether the consumer already holds
    /// every report example of that kind it keeps (notable ones, error ones). Units are
    /// folded in canonical order, so a unit still running comes after every folded one:
    /// once a cell is full, no later unit's example can be kept, and workers skip
    /// building it (a copy of the prompt and reply per unit otherwise).
    pub(super) examples_full: [Vec<AtomicBool>; 2],
    /// Units whose work is done, in any order. Progress counts these: a unit that
    /// finished ahead of an earlier, slower one is done work while it waits its turn to
    /// be written.
    pub(super) finished: AtomicU64,
    /// A shard's canonical unit indexes, ascending (`None`: every unit, `0..n`).
    pub(super) order: Option<Vec<u64>>,
    /// The units this session runs (of the order, or of the whole plan × trials).
    pub(super) units: u64,
    /// How they are scheduled.
    pub(super) window: Window,
    /// The session position of the next chunk to take a concurrency permit: chunks take
    /// them in canonical order (see [`run_chunk`]).
    pub(super) admitted: AtomicU64,
    /// Woken when `admitted` moves.
    pub(super) admitted_moved: Notify,
}

/// The run is a job of the one in-order driver (`gauntlet_job::job`): its units are the
/// session's positions in canonical order, a chunk of them per task.
impl Job for Ctx {
    type Output = UnitOutput;
    type Halt = ModelError;

    fn units(&self) -> u64 {
        self.units
    }

    fn window(&self) -> Window {
        self.window
    }

    fn run(self: &Arc<Self>, start: u64, end: u64) -> Task<UnitOutput, ModelError> {
        Box::pin(run_chunk(self.clone(), start, end))
    }

    /// Once the budget is spent no new unit starts: every call it made would be refused.
    fn exhausted(&self) -> bool {
        self.counters.budget_hit.load(Ordering::Relaxed)
    }
}

/// How a run's units are scheduled: offline models answer in microseconds, so units are
/// handed out in chunks (scheduling would dominate) with only as many in flight as
/// there are cores; network models get one unit per task so `concurrency` requests are
/// really in flight. A unit waiting on a provider batch may wait for hours: a stop does
/// not wait for it (its batch stays in the ledger and is re-attached by the rerun).
pub(super) fn window(plan: &Plan, concurrency: usize, waits_on_batches: bool) -> Window {
    let all_offline = plan.targets.iter().all(|t| t.offline())
        && plan.graders.iter().flatten().all(|g| g.offline())
        && plan.attackers.iter().flatten().all(|g| g.offline())
        && plan.attack_graders.iter().flatten().all(|g| g.offline());
    let (chunk, in_flight) = if all_offline {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        (32u64, concurrency.min(cores))
    } else {
        (1u64, concurrency)
    };
    Window {
        chunk,
        tasks: (in_flight * 2).max(4),
        abort_on_stop: waits_on_batches,
    }
}

/// Canonical identities and labels of the plan's plugins, and the call-key prefixes of
/// its models.
pub(crate) struct Identities {
    pub(super) attacks: Vec<String>,
    pub(super) judges: Vec<String>,
    pub(super) target_labels: Vec<String>,
    /// Attack labels (`static`, `static+base64`): transcript lines name attacks by them.
    pub(super) attack_labels: Vec<String>,
    pub(super) target_bases: Vec<HashWriter>,
    pub(super) grader_bases: Vec<Option<HashWriter>>,
    pub(super) attacker_bases: Vec<Option<HashWriter>>,
    pub(super) attack_grader_bases: Vec<Option<HashWriter>>,
    /// [`unit_scope`]'s hash state after its per-run fields (tag, target, attack,
    /// dataset version), per target × attack × dataset: half of what it hashes per unit.
    unit_bases: Vec<HashWriter>,
}

impl Identities {
    pub(crate) fn new(plan: &Plan) -> Self {
        // Digests, not the identity JSON itself: unit scopes hash these per unit, and a
        // target's params can be large (a memorizer's secrets, long system prompts).
        let id = |s: &gauntlet_core::params::PluginSpec| {
            gauntlet_core::hash::sha256_hex(s.identity().to_string().as_bytes())
        };
        let targets: Vec<String> = plan.targets.iter().map(|t| id(t.spec())).collect();
        let attacks: Vec<String> = plan.attacks.iter().map(|a| id(a.spec())).collect();
        let mut unit_bases = Vec::new();
        for t in &targets {
            for a in &attacks {
                for d in &plan.datasets {
                    let mut h = HashWriter::new();
                    h.field(b"unit-v2");
                    h.field(t.as_bytes());
                    h.field(a.as_bytes());
                    h.field(d.version.as_bytes());
                    unit_bases.push(h);
                }
            }
        }
        Identities {
            attacks,
            unit_bases,
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
    let base = (u.target * ids.attacks.len() + u.attack) * plan.datasets.len() + u.dataset;
    let mut h = ids.unit_bases[base].clone();
    h.field(b.id.as_bytes());
    h.field(b.prompt.as_bytes());
    h.field(&trial_seed.to_le_bytes());
    h.field(&trial.to_le_bytes());
    h.finish()
}

/// Runs units `start..end` in order under one concurrency permit. Returns the outputs
/// of the units that finished and, if one failed fatally, why (later units are skipped).
///
/// Chunks take their permit in canonical order (chunk `start` waits until every chunk
/// before it holds or held one), so a unit that waits on an earlier unit of its group
/// (`adaptive`'s memory, [`gauntlet_redteam::attack::Place`]) never holds the permit
/// that earlier unit needs: the wait always points at a unit that is running.
async fn run_chunk(ctx: Arc<Ctx>, start: u64, end: u64) -> Ran<UnitOutput, ModelError> {
    loop {
        let moved = ctx.admitted_moved.notified();
        if ctx.admitted.load(Ordering::Acquire) == start {
            break;
        }
        moved.await;
    }
    let _permit = ctx.sem.acquire().await.expect("semaphore is never closed");
    ctx.admitted.store(end, Ordering::Release);
    ctx.admitted_moved.notify_waiters();
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
        let e = gauntlet_calls::cache::journal_error(&ctx.journal, &e);
        ctx.counters.halt_with(&e);
        fatal = Some(e);
    }
    ctx.finished.fetch_add(outs.len() as u64, Ordering::Relaxed);
    Ran {
        outputs: outs,
        halt: fatal,
    }
}

pub(super) async fn run_unit(
    ctx: &Ctx,
    index: u64,
    pending: &Pending,
) -> Result<UnitOutput, ModelError> {
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

    // The unit's own calls; each run judge's grader gets its own slot below.
    let slots: PerSlot<UsageSlot> = Default::default();
    let caller = CachedModel::new(
        target.as_ref(),
        &ctx.ids.target_bases[u.target],
        &scope,
        &ctx.journal,
        &ctx.counters,
        pending,
        &slots[Slot::Target],
    );
    pub(super) fn helper<'m>(
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
        &slots[Slot::Attacker],
    );
    let attack_grader = helper(
        &plan.attack_graders[u.attack],
        &ctx.ids.attack_grader_bases[u.attack],
        &scope,
        ctx,
        pending,
        &slots[Slot::AttackJudge],
    );
    // Why a unit waiting on an earlier unit of its group should stop waiting.
    let given_up = || {
        if let Some(e) = ctx.counters.halted() {
            Some(e)
        } else if ctx.counters.budget_hit.load(Ordering::Relaxed) {
            Some(ModelError::Budget)
        } else if gauntlet_models::stop::Stop::global().stopping() {
            Some(gauntlet_models::stop::not_sent(
                "waiting on an earlier behavior's result",
            ))
        } else {
            None
        }
    };
    // A group's positions are only complete in an unsharded session (a shard runs some
    // of each group's behaviors).
    let place = ctx.order.is_none().then(|| Place {
        group: (((u.attack * plan.targets.len() + u.target) * plan.datasets.len() + u.dataset)
            as u64)
            * ctx.trial_seeds.len() as u64
            + u64::from(trial),
        position: u.behavior as u64,
        given_up: &given_up,
    });
    let actx = AttackCtx {
        target: &caller,
        attacker: attacker.as_ref().map(|m| m as &dyn CallModel),
        judge_grader: attack_grader.as_ref().map(|m| m as &dyn CallModel),
        seed,
        place,
    };
    let attempts = attack.run_ctx(b, actx).await?;
    let unit_usage: CellUsage = PerSlot::from_fn(|s| slots[s].snapshot());
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
        let error = a.response.as_ref().err().map(ToString::to_string);
        let line = TranscriptLine {
            trial: shown_trial,
            behavior_id: &b.id,
            attack_name: &ctx.ids.attack_labels[u.attack],
            target_name: target_label,
            dataset: &dataset.name,
            dataset_version: &dataset.version,
            expected: b.expected.as_str(),
            goal: (!a
                .transcript
                .iter()
                .any(|m| m.role == gauntlet_core::message::Role::User && m.content == b.prompt))
            .then_some(b.prompt.as_str()),
            attempt: a.index,
            transcript: &a.transcript,
            query_count: a.query_count,
            metadata: &a.metadata,
            stop_reason: a.response.as_ref().ok().map(|r| &r.stop_reason),
            usage: a.response.as_ref().ok().and_then(|r| r.usage.as_ref()),
            evidence: a.response.as_ref().ok().and_then(|r| r.evidence.as_deref()),
            error: error.as_deref(),
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
            let mut usage = unit_usage;
            usage[Slot::Grader] = *gu;
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

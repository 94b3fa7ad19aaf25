//! The per-cell tallies a run folds units into (metric accumulators, usage, report
//! examples, error messages, curves) and the results they summarise to.

use super::output::{JudgedUnit, judged_unit};
use super::status::Status;
use crate::breadth::{CellExtras, KeptOutcomes, PlanBreadth};
use crate::plan::{Plan, UnitRef};
use crate::usage::{CellUsage, PerSlot, Slot, cost_metric, tokens_metric};
use gauntlet_core::outcome::Verdict;
use gauntlet_models::Model;
use gauntlet_redteam::attack::Attempt;
use gauntlet_redteam::metrics::{MetricAcc, UsageMetric};
use gauntlet_results::{
    CellMetric, CellSummary, Example, MetricValue, RunBreadth, RunSummary, TrialCounts,
};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

/// A run's metric accumulation — the per-cell, per-trial accumulators and the summary
/// [`execute`] uses — for callers that judge stored attempts again (`stored.rs`), so a
/// rescored run's results are computed exactly as a run's are.
pub(crate) struct Tally {
    pub(super) cells: Vec<Vec<CellAcc>>,
    pub(super) breadth: PlanBreadth,
}

impl Tally {
    pub(crate) fn new(plan: &Plan, trials: usize) -> Tally {
        let breadth = PlanBreadth::new(plan);
        Tally {
            cells: (0..plan.cells())
                .map(|c| {
                    let (attack, _, _, judge) = plan.cell_coords(c);
                    (0..trials.max(1))
                        .map(|_| CellAcc {
                            metrics: vec![MetricAcc::default(); plan.metrics.len()],
                            extras: breadth.extras(attack, judge),
                            ..Default::default()
                        })
                        .collect()
                })
                .collect(),
            breadth,
        }
    }

    /// Folds judge `j`'s verdicts on the attempts of unit `u` in `trial` into its cell.
    #[expect(
        clippy::too_many_arguments,
        reason = "the unit's coordinates and its verdicts"
    )]
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

pub(super) const MAX_NOTABLE_EXAMPLES: usize = 4;
pub(super) const MAX_ERROR_EXAMPLES: usize = 2;
pub(super) const MAX_DISTINCT_ERRORS: usize = 32;

#[derive(Default)]
pub(super) struct CellAcc {
    pub(super) behaviors: u64,
    pub(super) attempts: u64,
    pub(super) errors: u64,
    pub(super) all_errors: u64,
    pub(super) metrics: Vec<MetricAcc>,
    pub(super) notable: Vec<Example>,
    pub(super) error_examples: Vec<Example>,
    pub(super) error_counts: BTreeMap<String, u64>,
    /// Hazard categories the judge named → attempts naming each (a guard judge's: a
    /// fixed, small set of keys).
    pub(super) categories: BTreeMap<String, u64>,
    pub(super) usage: CellUsage,
    /// Curve counters and kept outcomes (see `breadth.rs`).
    pub(super) extras: CellExtras,
    /// The evidence for the cell's warnings (see `warnings.rs`).
    pub(super) signals: crate::warnings::Signals,
}

impl CellAcc {
    pub(super) fn add(&mut self, plan: &Plan, behavior: usize, j: JudgedUnit) {
        let o = &j.outcome;
        // A unit without attempts is one its attack does not apply to (AgentDojo's
        // `none` on an attacked case, an attack on a benign one): outside the cell.
        if o.attempts == 0 {
            return;
        }
        self.extras.add(behavior, o, j.curve.as_ref(), &j.guard);
        self.signals.merge(&j.signals);
        self.usage += j.usage;
        self.behaviors += 1;
        self.attempts += u64::from(o.attempts);
        // The outcome folds no_evidence verdicts into its errors (both are outside every
        // rate); the cell counts them apart.
        self.errors += u64::from(o.errors).saturating_sub(j.signals.no_evidence());
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
        for k in j.categories {
            *self.categories.entry(k).or_insert(0) += 1;
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

/// The model behind each usage slot of a cell.
pub(super) fn slot_models(
    plan: &Plan,
    attack: usize,
    target: usize,
    judge: usize,
) -> PerSlot<Option<&dyn Model>> {
    PerSlot::from_fn(|s| match s {
        Slot::Target => Some(plan.targets[target].as_ref()),
        Slot::Attacker => plan.attackers[attack].as_deref(),
        Slot::AttackJudge => plan.attack_graders[attack].as_deref(),
        Slot::Grader => plan.graders[judge].as_deref(),
    })
}

/// One cell's results row and usage.json row, from its accumulators (one per trial).
/// With several trials each metric is computed per trial (its own bootstrap CI, seeded
/// by the trial's seed) and summarised across trials, and usage sums every trial.
///
/// Cells are independent (each bootstrap has its own seed from the cell's identity), so
/// they are computed in parallel, and during a run as soon as a cell is complete.
pub(super) fn cell_summary(
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
        for (k, n) in &t.categories {
            *c.categories.entry(k.clone()).or_insert(0) += n;
        }
        c.signals.merge(&t.signals);
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
        "roles": c.usage.iter().filter(|(_, u)| u.calls > 0).map(|(slot, u)| {
            let cost = crate::usage::slot_cost(slot.name(), u, models[slot], table).map_err(|e| e.to_string());
            serde_json::json!({
                "role": slot.name(),
                "model": models[slot].map(crate::usage::model_name),
                "usage": u,
                "cost_usd": cost.as_ref().ok(),
                "cost_na_reason": cost.as_ref().err(),
            })
        }).collect::<Vec<_>>(),
    });
    let metrics: Vec<CellMetric> = plan
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
                        plan.card_for(ji, ti),
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
    let mut warnings = c.signals.warnings();
    warnings.extend(crate::warnings::undecided_warning(&metrics));
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
        no_evidence: c.signals.no_evidence(),
        top_errors: top,
        categories: c.categories,
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
        warnings,
    };
    (summary, usage_row)
}

/// Takes a cell's kept outcomes (one list per trial) out of its accumulators, for the
/// transform effects; `None` when the cell keeps none.
pub(super) fn take_outcomes(
    accs: &mut [CellAcc],
) -> Option<Vec<Vec<(u32, gauntlet_redteam::metrics::BehaviorOutcome)>>> {
    let taken: Vec<_> = accs.iter_mut().map(|a| a.extras.take_outcomes()).collect();
    taken.into_iter().collect()
}

/// `f` over `items` on up to one scoped thread per core; results in input order.
pub(super) fn par_map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
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
pub(super) fn summarise(
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
pub(super) fn run_breadth(pb: &PlanBreadth, plan: &Plan, kept: &KeptOutcomes) -> RunBreadth {
    RunBreadth {
        taxonomy_version: Some(gauntlet_core::taxonomy::version().to_string()),
        transform_effects: crate::breadth::transform_effects(pb, plan, kept),
    }
}

/// The run summary and usage.json rows from every cell's rows, in cell order.
pub(super) fn assemble(
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
        errors: None,
    };
    (summary, usage_rows)
}

//! Paired comparison of two stored runs (`gauntlet compare`, the dashboard's compare
//! page): every (attack, target, dataset, judge, metric) cell the two runs share, over
//! the behaviors in the metric's population in both, as B − A. Rates use the exact
//! McNemar test, scores a paired percentile bootstrap of the mean difference. It lives
//! in the engine so the CLI and the web dashboard call the same statistics.

use crate::stored::{StoredError, StoredRun};
use gauntlet_core::paired::{Comparison, compare_pairs};
use gauntlet_core::stats::{BOOTSTRAP_RESAMPLES, fmt_p};
use gauntlet_redteam::datasets::imported::is_imported;
use gauntlet_redteam::metrics::BehaviorOutcome;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Why two runs cannot be paired cell by cell ([`compare_runs`], [`paired_cells`]);
/// `name_a` and `name_b` are how the runs are named (their directories).
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// Shared cells differ in more than the compared factor (each line of
    /// `mismatches` names one difference).
    #[error(
        "{name_a} (A) and {name_b} (B) pair cells that differ in more than the compared factor:\n{}\n    help: a paired difference of these cells would report two changes as the effect of one; rerun one side with the other's settings, or pass --allow-mismatch if you mean to compare them anyway (compare.json then lists the differences in `mismatches`)",
        mismatches.iter().map(|m| format!("  - {m}")).collect::<Vec<_>>().join("\n")
    )]
    Mismatch {
        name_a: String,
        name_b: String,
        mismatches: Vec<gauntlet_redteam::mismatch::Mismatch>,
    },
    /// The runs share no cell.
    #[error(
        "{name_a} and {name_b} share no (attack, target, dataset, judge, metric) cell; compare runs of the same attacks, datasets, judges and metrics (targets are matched by label, or one against one)"
    )]
    NoSharedCell { name_a: String, name_b: String },
    /// A shared cell's dataset is another version in each run.
    #[error(transparent)]
    DatasetVersion(Box<DatasetClash>),
    /// Two imported runs whose prompt sets have no behavior in common.
    #[error(
        "{name_a} and {name_b} are imports of disjoint prompt sets ({behaviors_a} and {behaviors_b} behaviors, none shared): a paired comparison needs prompts both tools sent; import results of the same prompts"
    )]
    NoSharedBehavior {
        name_a: String,
        name_b: String,
        behaviors_a: usize,
        behaviors_b: usize,
    },
    /// A run's stored units cannot be read back.
    #[error(transparent)]
    Stored(#[from] StoredError),
}

/// A cell two runs share whose dataset is `version_a` in run A and `version_b` in run
/// B ([`CompareError::DatasetVersion`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "cell {attack} × {target} × {judge}: dataset `{dataset}` is {version_a} in {name_a} but {version_b} in {name_b}; a paired comparison needs the same pinned behaviors — rerun one run on the other's dataset version"
)]
pub struct DatasetClash {
    pub attack: String,
    pub target: String,
    pub judge: String,
    pub dataset: String,
    pub version_a: String,
    pub name_a: String,
    pub version_b: String,
    pub name_b: String,
}

/// The result of [`compare_runs`]: the JSON document `compare.json` holds, and one
/// display row per shared cell × metric: attack, target, dataset, judge, metric, n, A,
/// B, B − A, test, statistic (all formatted).
#[derive(Debug, Clone)]
pub struct Compared {
    pub doc: Value,
    pub rows: Vec<[String; 11]>,
    /// The differences beyond the compared factor a comparison allowed with
    /// `allow_mismatch` went ahead with (empty otherwise).
    pub mismatches: Vec<String>,
    /// For two imported runs of different prompt sets: how their behaviors overlapped
    /// (`None` when both runs hold the same dataset version).
    pub overlap: Option<Overlap>,
}

/// How the behaviors of two imported runs' datasets overlap. Two imports are paired by
/// behavior id (a hash of the prompt) on the behaviors both hold; the rest are left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Overlap {
    /// Behaviors in both runs (the ones compared).
    pub shared: usize,
    /// Behaviors only run A holds.
    pub only_a: usize,
    /// Behaviors only run B holds.
    pub only_b: usize,
}

impl std::fmt::Display for Overlap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} behaviors shared; {} only in A and {} only in B left out",
            self.shared, self.only_a, self.only_b
        )
    }
}

/// Compares run B with run A. `name_a` / `name_b` name the runs in messages (their
/// directories). An error (no shared cell; a shared cell on different dataset
/// versions; an unreadable transcript) says why and what to do.
///
/// Paired cells must differ in nothing but the compared factor (the target, or
/// whatever changed between the runs outside the cell's attack and judge): when a
/// shared attack or judge label stands for different specs in the two runs (PAIR's
/// attacker model, a rubric judge's grader, any judge param, an attack's transforms;
/// see [`gauntlet_redteam::mismatch`]), the comparison is refused naming every difference, unless
/// `allow_mismatch` — then it goes ahead and `compare.json` lists them in `mismatches`.
/// A different dataset version is refused: behaviors pair by their index in the pinned
/// dataset, which another version does not share. Two imports (`gauntlet import`) of
/// different prompt sets are the exception: their behaviors pair by id (a hash of the
/// prompt) on the prompts both hold, `Compared::overlap` and `compare.json`'s
/// `behaviors` say how many were shared and left out, and no shared prompt is an error.
pub fn compare_runs(
    run_a: &StoredRun,
    run_b: &StoredRun,
    name_a: &str,
    name_b: &str,
    allow_mismatch: bool,
) -> Result<Compared, CompareError> {
    let (shared, sa, sb, overlap) = shared_series(run_a, run_b, name_a, name_b)?;
    let mismatches = spec_differences(run_a, run_b, &shared);
    if !mismatches.is_empty() && !allow_mismatch {
        return Err(CompareError::Mismatch {
            name_a: name_a.to_string(),
            name_b: name_b.to_string(),
            mismatches,
        });
    }
    let mut rows = Vec::new();
    let mut cells_json = Vec::new();
    for k in &shared {
        let (x, y) = (&sa[k], &sb[k]);
        let metric_base = k.4.split('(').next().unwrap_or(&k.4).to_string();
        let score = gauntlet_redteam::registry::is_score(&metric_base);
        let only_a = x
            .values
            .keys()
            .filter(|i| !y.values.contains_key(*i))
            .count();
        let only_b = y
            .values
            .keys()
            .filter(|i| !x.values.contains_key(*i))
            .count();
        let cmp = if let Some(why) = x.na.as_ref().or(y.na.as_ref()) {
            Comparison::NotApplicable(why.clone())
        } else if x.values.is_empty() {
            Comparison::NotApplicable(format!("N/A in {name_a}: {}", x.empty_reason))
        } else if y.values.is_empty() {
            Comparison::NotApplicable(format!("N/A in {name_b}: {}", y.empty_reason))
        } else {
            let pairs: Vec<(f64, f64)> = x
                .values
                .iter()
                .filter_map(|(i, va)| y.values.get(i).map(|vb| (*va, *vb)))
                .collect();
            compare_pairs(&pairs, score, &["compare", &k.0, &k.1, &k.2, &k.3, &k.4])
        };
        let target = if x.target_label == y.target_label {
            x.target_label.clone()
        } else {
            format!("{} vs {}", x.target_label, y.target_label)
        };
        let mut j = json!({
            "attack": k.0,
            "target_a": x.target_label,
            "target_b": y.target_label,
            "dataset": k.2,
            "dataset_version": x.dataset_version,
            "judge": k.3,
            "metric": k.4,
            "unpaired_a": only_a,
            "unpaired_b": only_b,
        });
        let o = j.as_object_mut().expect("object");
        if x.dataset_version != y.dataset_version {
            o.insert("dataset_version_b".into(), json!(y.dataset_version));
        }
        let (n, va, vb, diff, test, stat) = match &cmp {
            Comparison::Binary {
                n,
                rate_a,
                rate_b,
                test,
                ci,
            } => {
                o.insert("n".into(), json!(n));
                o.insert("a".into(), json!(rate_a));
                o.insert("b".into(), json!(rate_b));
                o.insert("diff".into(), json!(rate_b - rate_a));
                o.insert("test".into(), json!("mcnemar_exact"));
                o.insert("a_only_positive".into(), json!(test.b));
                o.insert("b_only_positive".into(), json!(test.c));
                o.insert("p_value".into(), json!(test.p_exact));
                o.insert("p_mid".into(), json!(test.p_mid));
                o.insert("ci_low".into(), json!(ci.map(|c| c.0)));
                o.insert("ci_high".into(), json!(ci.map(|c| c.1)));
                o.insert("ci_method".into(), json!("newcombe_paired"));
                (
                    n.to_string(),
                    format!("{rate_a:.3}"),
                    format!("{rate_b:.3}"),
                    format!("{:+.3}", rate_b - rate_a),
                    "McNemar".to_string(),
                    format!("{} ({}/{} discordant)", fmt_p(test.p_exact), test.b, test.c),
                )
            }
            Comparison::Score {
                mean_a,
                mean_b,
                diff,
            } => {
                o.insert("n".into(), json!(diff.n));
                o.insert("a".into(), json!(mean_a));
                o.insert("b".into(), json!(mean_b));
                o.insert("diff".into(), json!(diff.mean_diff));
                o.insert("test".into(), json!("paired_bootstrap"));
                o.insert("ci_low".into(), json!(diff.ci.map(|c| c.0)));
                o.insert("ci_high".into(), json!(diff.ci.map(|c| c.1)));
                o.insert("ci_method".into(), json!(diff.ci_method));
                o.insert("resamples".into(), json!(BOOTSTRAP_RESAMPLES));
                (
                    diff.n.to_string(),
                    format!("{mean_a:.3}"),
                    format!("{mean_b:.3}"),
                    format!("{:+.3}", diff.mean_diff),
                    "bootstrap".to_string(),
                    diff.ci.map_or("CI N/A (one pair)".into(), |c| {
                        format!("95% CI [{:+.3}, {:+.3}]", c.0, c.1)
                    }),
                )
            }
            Comparison::NotApplicable(why) => {
                o.insert("n".into(), json!(0));
                o.insert("a".into(), Value::Null);
                o.insert("b".into(), Value::Null);
                o.insert("diff".into(), Value::Null);
                o.insert("na_reason".into(), json!(why));
                (
                    "-".into(),
                    "N/A".into(),
                    "N/A".into(),
                    "N/A".into(),
                    "-".into(),
                    why.clone(),
                )
            }
        };
        rows.push([
            k.0.clone(),
            target,
            k.2.clone(),
            k.3.clone(),
            k.4.clone(),
            n,
            va,
            vb,
            diff,
            test,
            stat,
        ]);
        cells_json.push(j);
    }
    let doc = json!({
        "run_a": {"run_id": run_a.meta.run_id, "status": run_a.meta.status},
        "run_b": {"run_id": run_b.meta.run_id, "status": run_b.meta.status},
        "difference": "b − a over behaviors (trial, behavior id) in the metric's population in both runs",
        "binary_test": "exact McNemar: two-sided binomial p on the discordant pairs (mid-p also given)",
        "score_ci": "paired percentile bootstrap of the mean difference, 1000 resamples of behaviors, fixed seed",
        "cells": cells_json,
    });
    let mut doc = doc;
    if let Some(o) = overlap {
        doc["behaviors"] = json!({
            "paired_by": "behavior id (imported runs of different prompt sets)",
            "shared": o.shared,
            "only_a": o.only_a,
            "only_b": o.only_b,
        });
    }
    if !mismatches.is_empty() {
        doc["mismatches"] = json!(
            mismatches
                .iter()
                .map(|m| json!({"what": m.what, "path": m.path, "a": m.a, "b": m.b, "message": m.to_string()}))
                .collect::<Vec<_>>()
        );
    }
    Ok(Compared {
        doc,
        rows,
        mismatches: mismatches.iter().map(ToString::to_string).collect(),
        overlap,
    })
}

/// The differences between the attack and judge specs that the shared cells' labels
/// stand for in the two runs (each label once, in cell order).
fn spec_differences(
    run_a: &StoredRun,
    run_b: &StoredRun,
    shared: &[CellKey],
) -> Vec<gauntlet_redteam::mismatch::Mismatch> {
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let attack = |r: &StoredRun, l: &str| {
        r.plan
            .attacks
            .iter()
            .map(|a| a.spec().clone())
            .find(|s| s.label() == l)
    };
    let judge = |r: &StoredRun, l: &str| {
        r.plan
            .judges
            .iter()
            .map(|j| j.spec().clone())
            .find(|s| s.label() == l)
    };
    for k in shared {
        if seen.insert(("attack", k.0.clone()))
            && let (Some(x), Some(y)) = (attack(run_a, &k.0), attack(run_b, &k.0))
        {
            out.extend(gauntlet_redteam::mismatch::spec_mismatches(
                &format!("attack `{}`", k.0),
                &x,
                &y,
            ));
        }
        if seen.insert(("judge", k.3.clone()))
            && let (Some(x), Some(y)) = (judge(run_a, &k.3), judge(run_b, &k.3))
        {
            out.extend(gauntlet_redteam::mismatch::spec_mismatches(
                &format!("judge `{}`", k.3),
                &x,
                &y,
            ));
        }
    }
    out
}

/// The cells two runs share, each run's per-behavior series of them, after the checks
/// every paired analysis needs (some shared cell; equal dataset versions, or two imports
/// sharing some behavior), and the overlap of two imports' behaviors.
type SeriesPair = (
    Vec<CellKey>,
    BTreeMap<CellKey, Series>,
    BTreeMap<CellKey, Series>,
    Option<Overlap>,
);

/// Re-keys run B's values of a cell onto run A's behavior indices by behavior id, and
/// drops the values of behaviors only one run holds; returns the overlap.
fn pair_by_id(x: &mut Series, y: &mut Series) -> Overlap {
    let index_a: BTreeMap<&str, u32> = x
        .behavior_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i as u32))
        .collect();
    let ids_b: std::collections::BTreeSet<&str> =
        y.behavior_ids.iter().map(String::as_str).collect();
    let shared = ids_b.iter().filter(|id| index_a.contains_key(*id)).count();
    let overlap = Overlap {
        shared,
        only_a: index_a.len() - shared,
        only_b: ids_b.len() - shared,
    };
    y.values = std::mem::take(&mut y.values)
        .into_iter()
        .filter_map(|((trial, b), v)| {
            let id = y.behavior_ids.get(b as usize)?;
            index_a.get(id.as_str()).map(|a| ((trial, *a), v))
        })
        .collect();
    x.values.retain(|(_, a), _| {
        x.behavior_ids
            .get(*a as usize)
            .is_some_and(|id| ids_b.contains(id.as_str()))
    });
    y.behavior_ids = x.behavior_ids.clone();
    overlap
}

fn shared_series(
    run_a: &StoredRun,
    run_b: &StoredRun,
    name_a: &str,
    name_b: &str,
) -> Result<SeriesPair, CompareError> {
    // Two single-target runs are compared target against target, whatever their labels.
    let any_target = run_a.plan.targets.len() == 1 && run_b.plan.targets.len() == 1;
    let (order, mut sa) = series_of(run_a, any_target)?;
    let (_, mut sb) = series_of(run_b, any_target)?;
    let shared: Vec<CellKey> = order.into_iter().filter(|k| sb.contains_key(k)).collect();
    if shared.is_empty() {
        return Err(CompareError::NoSharedCell {
            name_a: name_a.to_string(),
            name_b: name_b.to_string(),
        });
    }
    let mut overlap = None;
    for k in &shared {
        let (x, y) = (&sa[k], &sb[k]);
        if x.dataset_version != y.dataset_version
            && is_imported(&k.2, &x.dataset_version)
            && is_imported(&k.2, &y.dataset_version)
        {
            let (x, y) = (
                sa.get_mut(k).expect("shared"),
                sb.get_mut(k).expect("shared"),
            );
            let o = pair_by_id(x, y);
            if o.shared == 0 {
                return Err(CompareError::NoSharedBehavior {
                    name_a: name_a.to_string(),
                    name_b: name_b.to_string(),
                    behaviors_a: o.only_a,
                    behaviors_b: o.only_b,
                });
            }
            overlap = Some(o);
            continue;
        }
        if x.dataset_version != y.dataset_version {
            return Err(CompareError::DatasetVersion(Box::new(DatasetClash {
                attack: k.0.clone(),
                target: k.1.clone(),
                judge: k.3.clone(),
                dataset: k.2.clone(),
                version_a: x.dataset_version.clone(),
                name_a: name_a.to_string(),
                version_b: y.dataset_version.clone(),
                name_b: name_b.to_string(),
            })));
        }
    }
    Ok((shared, sa, sb, overlap))
}

/// One cell × metric two runs share, behavior by behavior (for a regression gate).
#[derive(Debug, Clone)]
pub struct PairedCell {
    pub attack: String,
    /// Run A's and run B's target labels (equal unless both runs have one target).
    pub target_a: String,
    pub target_b: String,
    pub dataset: String,
    pub dataset_version: String,
    pub judge: String,
    /// The metric's display name (`asr`, `asr_at_k(k=3)`) and plugin name.
    pub metric: String,
    pub metric_name: String,
    /// The metric's resolved params.
    pub metric_params: serde_json::Map<String, Value>,
    /// Why the metric is N/A in the cell, in either run.
    pub na: Option<String>,
    /// `(item, a, b)` for every item in the metric's population in both runs; the item is
    /// the behavior id, with `#t<trial>` in a multi-trial run.
    pub pairs: Vec<(String, f64, f64)>,
    /// For two imports of different prompt sets, how their behaviors overlapped.
    pub behaviors: Option<Overlap>,
}

/// Every cell × metric run A (the baseline) and run B share, with the per-behavior
/// values of both; refused as [`compare_runs`] refuses.
pub fn paired_cells(
    run_a: &StoredRun,
    run_b: &StoredRun,
    name_a: &str,
    name_b: &str,
) -> Result<Vec<PairedCell>, CompareError> {
    let (shared, sa, sb, overlap) = shared_series(run_a, run_b, name_a, name_b)?;
    let multi = run_a.plan.config.trials > 1 || run_b.plan.config.trials > 1;
    let mut out = Vec::new();
    for k in &shared {
        let (x, y) = (&sa[k], &sb[k]);
        let na = x.na.clone().or_else(|| y.na.clone());
        let pairs = x
            .values
            .iter()
            .filter_map(|(i, va)| y.values.get(i).map(|vb| (i, *va, *vb)))
            .map(|((trial, b), va, vb)| {
                let id = x.behavior_ids.get(*b as usize).cloned().unwrap_or_default();
                let item = if multi { format!("{id}#t{trial}") } else { id };
                (item, va, vb)
            })
            .collect();
        out.push(PairedCell {
            attack: k.0.clone(),
            target_a: x.target_label.clone(),
            target_b: y.target_label.clone(),
            dataset: k.2.clone(),
            dataset_version: x.dataset_version.clone(),
            judge: k.3.clone(),
            metric: k.4.clone(),
            metric_name: x.metric_name.clone(),
            metric_params: x.metric_params.clone(),
            na,
            pairs,
            behaviors: overlap,
        });
    }
    Ok(out)
}

/// Per-behavior values of one cell × metric of one run.
#[derive(Debug, Default, Clone)]
struct Series {
    /// `(trial, behavior index in the dataset)` → value; behaviors outside the population
    /// are absent. Indices pair behaviors only because both runs must hold the same
    /// dataset version (checked before pairing).
    values: BTreeMap<(u32, u32), f64>,
    /// Why the metric is N/A for the whole cell (inapplicable judge, usage metric).
    na: Option<String>,
    dataset_version: String,
    empty_reason: String,
    target_label: String,
    /// The dataset's behavior ids, by index (one list per dataset, shared by its cells).
    behavior_ids: std::sync::Arc<Vec<String>>,
    metric_name: String,
    metric_params: serde_json::Map<String, Value>,
}

/// Cell × metric key: attack, target (or `*` when both runs have one target), dataset,
/// judge, metric display name.
type CellKey = (String, String, String, String, String);

fn metric_name(spec: &gauntlet_core::params::PluginSpec) -> String {
    let params = serde_json::to_value(&spec.params).unwrap_or(Value::Null);
    match params.as_object() {
        Some(o) if !o.is_empty() => format!(
            "{}({})",
            spec.name,
            o.iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={s}"),
                    v => format!("{k}={v}"),
                })
                .collect::<Vec<_>>()
                .join(",")
        ),
        _ => spec.name.clone(),
    }
}

/// Reads every per-behavior metric value of a run from its stored verdicts.
fn series_of(
    run: &StoredRun,
    any_target: bool,
) -> Result<(Vec<CellKey>, BTreeMap<CellKey, Series>), CompareError> {
    let plan = &run.plan;
    let mut order = Vec::new();
    let mut out: BTreeMap<CellKey, Series> = BTreeMap::new();
    let key = |a: usize, t: usize, d: usize, j: usize, m: usize| -> CellKey {
        (
            plan.attacks[a].spec().label(),
            if any_target {
                "*".into()
            } else {
                plan.targets[t].label()
            },
            plan.datasets[d].name.clone(),
            plan.judges[j].spec().label(),
            metric_name(plan.metrics[m].spec()),
        )
    };
    let ids: Vec<std::sync::Arc<Vec<String>>> = plan
        .datasets
        .iter()
        .map(|d| std::sync::Arc::new(d.behaviors.iter().map(|b| b.id.clone()).collect()))
        .collect();
    // An imported tool's per-source attacks (`imported` with `source`) also pool into
    // one `imported` row over every prompt of the file: two tools name their probes,
    // plugins and tasks apart, and pair on the prompts they share there.
    let pooled = |a: usize, d: usize| {
        let s = plan.attacks[a].spec();
        s.name == "imported"
            && s.params.str("source").is_some()
            && is_imported(&plan.datasets[d].name, &plan.datasets[d].version)
    };
    let pool_key = |t: usize, d: usize, j: usize, m: usize| -> CellKey {
        let mut k = key(0, t, d, j, m);
        k.0 = "imported".into();
        k
    };
    let mut pooled_order = Vec::new();
    for a in 0..plan.attacks.len() {
        for t in 0..plan.targets.len() {
            for (d, dataset_ids) in ids.iter().enumerate() {
                for (j, judge) in plan.judges.iter().enumerate() {
                    for (m, metric) in plan.metrics.iter().enumerate() {
                        let na = if metric.usage_metric().is_some() {
                            Some(
                                "a usage metric (tokens, cost) has no per-behavior outcome to pair"
                                    .to_string(),
                            )
                        } else {
                            metric.inapplicable(judge.as_ref())
                        };
                        let series = Series {
                            na,
                            dataset_version: plan.datasets[d].version.clone(),
                            empty_reason: metric.empty_reason().to_string(),
                            target_label: plan.targets[t].label(),
                            behavior_ids: dataset_ids.clone(),
                            metric_name: metric.spec().name.clone(),
                            metric_params: match serde_json::to_value(&metric.spec().params) {
                                Ok(Value::Object(o)) => o,
                                _ => Default::default(),
                            },
                            ..Default::default()
                        };
                        if pooled(a, d) {
                            let pk = pool_key(t, d, j, m);
                            if let std::collections::btree_map::Entry::Vacant(e) =
                                out.entry(pk.clone())
                            {
                                pooled_order.push(pk);
                                e.insert(series.clone());
                            }
                        }
                        let k = key(a, t, d, j, m);
                        order.push(k.clone());
                        out.insert(k, series);
                    }
                }
            }
        }
    }
    order.extend(pooled_order);
    for unit in run.units()? {
        let unit = unit?;
        let b = run.behavior(unit.unit);
        let u = unit.unit;
        let pool = pooled(u.attack, u.dataset);
        for j in 0..plan.judges.len() {
            let o = BehaviorOutcome::from_behavior(b, &unit.attempts, &unit.verdicts_of(j));
            if !o.judged() {
                continue;
            }
            for (m, metric) in plan.metrics.iter().enumerate() {
                let k = key(u.attack, u.target, u.dataset, j, m);
                if out.get(&k).is_some_and(|s| s.na.is_some()) {
                    continue;
                }
                let Some(v) = metric.value(&o) else {
                    continue;
                };
                let at = (unit.trial, u.behavior as u32);
                if pool {
                    let pk = pool_key(u.target, u.dataset, j, m);
                    out.get_mut(&pk)
                        .expect("every cell is keyed")
                        .values
                        .insert(at, v);
                }
                out.get_mut(&k)
                    .expect("every cell is keyed")
                    .values
                    .insert(at, v);
            }
        }
    }
    Ok((order, out))
}

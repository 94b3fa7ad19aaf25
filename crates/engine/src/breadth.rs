//! The attack-breadth analyses of a run, kept apart from the run loop: attack-success
//! curves (Best-of-N, many-shot), threat-taxonomy tags, and the per-transform effects.
//!
//! The run loop hands each cell's accumulator a [`CellExtras`] (made by
//! [`PlanBreadth::extras`]): a curve accumulator when the cell's attack declares a curve,
//! and the cell's per-behavior outcomes when the cell takes part in a transform pairing
//! (a transformed attack, or the untransformed attack it is paired with). Memory stays
//! bounded by cells × (curve points + paired behaviors), never by attempts.
//!
//! [`transform_effects`] pairs every transformed attack's cell with the cell of the same
//! attack without transforms (same target, dataset and judge), behavior by behavior
//! (trial by trial), and compares each metric with the same machinery as
//! `gauntlet compare` ([`gauntlet_core::paired::compare_pairs`]: exact McNemar for rates,
//! paired bootstrap for scores).

use crate::plan::{Plan, UnitRef};
use gauntlet_core::paired::{Comparison, compare_pairs};
use gauntlet_core::params::{PluginSpec, TRANSFORMS_PARAM};
use gauntlet_core::taxonomy;
use gauntlet_core::taxonomy::ThreatTags;
use gauntlet_redteam::curves::{CurveAcc, CurveObs, CurveSpec, GuardCurveAcc, GuardObs};
use gauntlet_redteam::metrics::BehaviorOutcome;
use gauntlet_results::{CellBreadth, TransformEffect};
use std::collections::BTreeSet;

/// What the analyses need to know about a plan, computed once per run.
pub(crate) struct PlanBreadth {
    /// Per attack: its curve, if it has one.
    curves: Vec<Option<CurveSpec>>,
    /// Per attack: the untransformed attack it is paired with (transformed attacks).
    baseline: Vec<Option<usize>>,
    /// Per attack: whether its cells keep per-behavior outcomes (it pairs, or is paired
    /// with).
    keeps: Vec<bool>,
    /// Per (attack, dataset): the cell tags without the judge (the same for every target
    /// and judge).
    tags: Vec<Vec<ThreatTags>>,
    /// Per judge: whether its cells trace a guard curve (`guardrail`).
    guard: Vec<bool>,
}

/// An attack spec without its `transforms` param (what a transformed attack pairs with).
fn untransformed(spec: &PluginSpec) -> serde_json::Value {
    let mut id = spec.identity();
    if let Some(p) = id.get_mut("params").and_then(|p| p.as_object_mut()) {
        p.remove(TRANSFORMS_PARAM);
    }
    id
}

fn chain(spec: &PluginSpec) -> &[PluginSpec] {
    spec.params.spec_list(TRANSFORMS_PARAM).unwrap_or_default()
}

impl PlanBreadth {
    pub(crate) fn new(plan: &Plan) -> PlanBreadth {
        let specs: Vec<&PluginSpec> = plan.attacks.iter().map(|a| a.spec()).collect();
        let plain: Vec<serde_json::Value> = specs.iter().map(|s| untransformed(s)).collect();
        let baseline: Vec<Option<usize>> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if chain(s).is_empty() {
                    return None;
                }
                specs
                    .iter()
                    .position(|b| chain(b).is_empty() && b.identity() == plain[i])
            })
            .collect();
        let mut keeps = vec![false; specs.len()];
        for (i, b) in baseline.iter().enumerate() {
            if let Some(b) = b {
                keeps[i] = true;
                keeps[*b] = true;
            }
        }
        let mode = plan.mode_label();
        let categories: Vec<Vec<String>> = plan
            .datasets
            .iter()
            .map(|d| {
                d.behaviors
                    .iter()
                    .map(|b| b.category.clone())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect()
            })
            .collect();
        let tags = specs
            .iter()
            .map(|s| {
                let transforms: Vec<(&str, &str)> = chain(s)
                    .iter()
                    .map(|t| {
                        let family = gauntlet_redteam::transforms::family_of(&t.name)
                            .map_or("", |f| f.as_str());
                        (t.name.as_str(), family)
                    })
                    .collect();
                categories
                    .iter()
                    .map(|cats| {
                        let cats: Vec<&str> = cats.iter().map(String::as_str).collect();
                        taxonomy::cell_tags(&taxonomy::CellParts {
                            mode,
                            attack: &s.name,
                            transforms: &transforms,
                            categories: &cats,
                        })
                    })
                    .collect()
            })
            .collect();
        PlanBreadth {
            curves: plan.attacks.iter().map(|a| a.curve()).collect(),
            baseline,
            keeps,
            tags,
            guard: plan
                .judges
                .iter()
                .map(|j| j.facts().judges_guardrail)
                .collect(),
        }
    }

    /// Whether units of `attack` record curve observations.
    pub(crate) fn has_curve(&self, attack: usize) -> bool {
        self.curves[attack].is_some()
    }

    /// The extras of one accumulator of a cell of `attack` judged by `judge`.
    pub(crate) fn extras(&self, attack: usize, judge: usize) -> CellExtras {
        CellExtras {
            curve: self.curves[attack].clone().map(CurveAcc::new),
            outcomes: self.keeps[attack].then(Vec::new),
            guard: self.guard[judge].then(GuardCurveAcc::new),
        }
    }

    /// Whether any attack pairs with another (the run has transform effects to report).
    pub(crate) fn pairs(&self) -> bool {
        self.baseline.iter().any(Option::is_some)
    }
}

/// What one cell accumulator (one trial of one cell) keeps for the analyses.
#[derive(Debug, Default)]
pub(crate) struct CellExtras {
    curve: Option<CurveAcc>,
    /// (behavior index in the dataset, its outcome), in unit order.
    outcomes: Option<Vec<(u32, BehaviorOutcome)>>,
    /// The guard curve's counters (cells of a `guardrail` judge).
    guard: Option<GuardCurveAcc>,
}

impl CellExtras {
    pub(crate) fn add(
        &mut self,
        behavior: usize,
        o: &BehaviorOutcome,
        curve: Option<&CurveObs>,
        guard: &GuardObs,
    ) {
        if let (Some(acc), Some(obs)) = (&mut self.curve, curve) {
            acc.add(obs);
        }
        if let Some(acc) = &mut self.guard {
            acc.add(guard);
        }
        if let Some(v) = &mut self.outcomes
            && o.judged()
        {
            v.push((behavior as u32, o.clone()));
        }
    }

    /// Takes the kept outcomes out (for [`transform_effects`]), leaving none.
    pub(crate) fn take_outcomes(&mut self) -> Option<Vec<(u32, BehaviorOutcome)>> {
        self.outcomes.take()
    }
}

/// A cell's breadth: its tags and its curve over every trial's accumulator.
pub(crate) fn cell_breadth<'a>(
    pb: &PlanBreadth,
    plan: &Plan,
    cell: usize,
    trials: impl Iterator<Item = &'a CellExtras>,
) -> CellBreadth {
    let (attack, _, dataset, _) = plan.cell_coords(cell);
    let mut curve: Option<CurveAcc> = None;
    let mut guard: Option<GuardCurveAcc> = None;
    for t in trials {
        if let Some(c) = &t.curve {
            match &mut curve {
                Some(acc) => acc.merge(c),
                None => curve = Some(c.clone()),
            }
        }
        if let Some(g) = &t.guard {
            match &mut guard {
                Some(acc) => acc.merge(g),
                None => guard = Some(g.clone()),
            }
        }
    }
    CellBreadth {
        taxonomy: pb.tags[attack][dataset].clone(),
        curve: curve.map(|c| c.finish()),
        guard_curve: guard.and_then(|g| g.finish()),
    }
}

/// Kept outcomes of every cell, per trial (`None` for cells that keep none).
pub(crate) type KeptOutcomes = Vec<Option<Vec<Vec<(u32, BehaviorOutcome)>>>>;

/// The paired effect of every transform chain on every metric (see the module docs).
pub(crate) fn transform_effects(
    pb: &PlanBreadth,
    plan: &Plan,
    kept: &KeptOutcomes,
) -> Vec<TransformEffect> {
    let mut out = Vec::new();
    if !pb.pairs() && plan.attacks.iter().all(|a| chain(a.spec()).is_empty()) {
        return out;
    }
    for (a, attack) in plan.attacks.iter().enumerate() {
        let names: Vec<String> = chain(attack.spec())
            .iter()
            .map(|t| t.name.clone())
            .collect();
        if names.is_empty() {
            continue;
        }
        let label = attack.spec().label();
        let baseline_label = pb.baseline[a].map(|b| plan.attacks[b].spec().label());
        for t in 0..plan.targets.len() {
            for d in 0..plan.datasets.len() {
                for (j, judge) in plan.judges.iter().enumerate() {
                    for metric in &plan.metrics {
                        if metric.usage_metric().is_some() {
                            continue;
                        }
                        let spec = metric.spec();
                        let mut e = TransformEffect {
                            attack: label.clone(),
                            baseline: baseline_label.clone().unwrap_or_default(),
                            transforms: names.clone(),
                            target: plan.targets[t].label(),
                            dataset: plan.datasets[d].name.clone(),
                            judge: judge.spec().label(),
                            metric: spec.name.clone(),
                            metric_params: match serde_json::to_value(&spec.params) {
                                Ok(serde_json::Value::Object(o)) => o,
                                _ => serde_json::Map::new(),
                            },
                            n: 0,
                            baseline_value: None,
                            value: None,
                            diff: None,
                            test: None,
                            only_baseline: None,
                            only_transformed: None,
                            p_value: None,
                            p_mid: None,
                            ci_low: None,
                            ci_high: None,
                            na_reason: None,
                        };
                        let Some(b) = pb.baseline[a] else {
                            e.na_reason = Some(format!(
                                "no `{}` attack without transforms (same params) in this run to pair with; add it to `attacks`",
                                attack.spec().name
                            ));
                            out.push(e);
                            continue;
                        };
                        if let Some(why) = metric.inapplicable(judge.as_ref()) {
                            e.na_reason = Some(why);
                            out.push(e);
                            continue;
                        }
                        let at = |attack| UnitRef {
                            attack,
                            target: t,
                            dataset: d,
                            behavior: 0,
                        };
                        let ct = plan.cell(at(a), j);
                        let cb = plan.cell(at(b), j);
                        let pairs = pair_values(kept, cb, ct, |o| metric.value(o));
                        if pairs.is_empty() {
                            e.na_reason = Some(format!(
                                "no behavior is in the metric's population in both cells ({})",
                                metric.empty_reason()
                            ));
                            out.push(e);
                            continue;
                        }
                        let score = gauntlet_redteam::registry::is_score(&spec.name);
                        let seed = plan.config.seed.to_string();
                        let cmp = compare_pairs(
                            &pairs,
                            score,
                            &[
                                "transform-effect",
                                &seed,
                                &label,
                                &e.target,
                                &plan.datasets[d].version,
                                &e.judge,
                                &spec.identity().to_string(),
                            ],
                        );
                        e.n = pairs.len() as u64;
                        match cmp {
                            Comparison::Binary {
                                rate_a,
                                rate_b,
                                test,
                                ..
                            } => {
                                e.baseline_value = Some(rate_a);
                                e.value = Some(rate_b);
                                e.diff = Some(rate_b - rate_a);
                                e.test = Some("mcnemar_exact".into());
                                e.only_baseline = Some(test.b);
                                e.only_transformed = Some(test.c);
                                e.p_value = Some(test.p_exact);
                                e.p_mid = Some(test.p_mid);
                            }
                            Comparison::Score {
                                mean_a,
                                mean_b,
                                diff,
                            } => {
                                e.baseline_value = Some(mean_a);
                                e.value = Some(mean_b);
                                e.diff = Some(diff.mean_diff);
                                e.test = Some("paired_bootstrap".into());
                                e.ci_low = diff.ci.map(|c| c.0);
                                e.ci_high = diff.ci.map(|c| c.1);
                            }
                            Comparison::NotApplicable(why) => e.na_reason = Some(why),
                        }
                        out.push(e);
                    }
                }
            }
        }
    }
    out
}

/// (baseline value, transformed value) of every (trial, behavior) in the metric's
/// population in both cells.
fn pair_values(
    kept: &KeptOutcomes,
    baseline: usize,
    transformed: usize,
    value: impl Fn(&BehaviorOutcome) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let (Some(bs), Some(ts)) = (&kept[baseline], &kept[transformed]) else {
        return Vec::new();
    };
    let mut pairs = Vec::new();
    for (b, t) in bs.iter().zip(ts) {
        // Both lists are in behavior order: a merge join.
        let (mut i, mut k) = (0, 0);
        while i < b.len() && k < t.len() {
            match b[i].0.cmp(&t[k].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => k += 1,
                std::cmp::Ordering::Equal => {
                    if let (Some(x), Some(y)) = (value(&b[i].1), value(&t[k].1)) {
                        pairs.push((x, y));
                    }
                    i += 1;
                    k += 1;
                }
            }
        }
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_core::behavior::Expected;

    fn o(success: bool) -> BehaviorOutcome {
        BehaviorOutcome {
            expected: Expected::ShouldRefuse,
            attempts: 1,
            errors: 0,
            uncertain: 0,
            first_success: success.then_some(0),
            all_refused: !success,
            max_score: None,
            leak: None,
            injection: None,
        }
    }

    #[test]
    fn pairs_join_on_behavior_per_trial() {
        let kept: KeptOutcomes = vec![
            Some(vec![
                vec![(0, o(false)), (1, o(false)), (3, o(true))],
                vec![(0, o(true))],
            ]),
            Some(vec![
                vec![(1, o(true)), (2, o(true)), (3, o(true))],
                vec![(0, o(false))],
            ]),
            None,
        ];
        let v = |x: &BehaviorOutcome| Some(f64::from(u8::from(x.first_success.is_some())));
        assert_eq!(
            pair_values(&kept, 0, 1, v),
            vec![(0.0, 1.0), (1.0, 1.0), (1.0, 0.0)]
        );
        assert!(pair_values(&kept, 0, 2, v).is_empty());
    }
}

//! The metric seam: the [`Metric`] trait, what kind of number a metric is, how a rate
//! relates to a judge card, and the N/A reasons several metrics share.

use super::outcome::BehaviorOutcome;
use crate::judge::Judge;
use crate::plugin::{Built, Entry};
use gauntlet_core::judge_eval::RateKind;
use gauntlet_core::params::PluginSpec;

/// A metric's registration (each metric file's `ENTRY`).
pub type MetricEntry = Entry<fn(&PluginSpec) -> Built<dyn Metric>>;

/// Metrics the engine computes from token usage instead of verdicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageMetric {
    /// Tokens of `role` (`all`, `target`, `attacker` or `grader`).
    Tokens { role: String },
    /// USD at the price table's prices.
    Cost,
}

/// What kind of number a metric is, which decides its interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// A share of behaviors (each contributes 0 or 1): Wilson score interval.
    Rate,
    /// A mean of per-behavior scores in [0, 1]: percentile bootstrap interval.
    Score,
    /// Tokens or dollars, computed by the engine from usage (no interval).
    Usage,
}

/// How a rate relates to a judge card's refusal measurements, for the corrected rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Correctable {
    /// Whether the rate counts refusals or non-refusals.
    pub counts: RateKind,
    /// The rate is computed from the verdicts' success (`asr`, `frr`): exact only under a
    /// judge whose success is "not refused". Else from the `refused` flag itself.
    pub from_success: bool,
}

/// A metric over behaviors.
pub trait Metric: Send + Sync {
    fn spec(&self) -> &PluginSpec;
    /// Rate, score or usage: decides the interval.
    fn kind(&self) -> MetricKind;
    /// For rates a judge card can correct (refusal-based rates), how.
    fn correctable(&self) -> Option<Correctable> {
        None
    }
    /// This behavior's contribution, or `None` when it is outside the population.
    /// Only called for judged behaviors.
    fn value(&self, b: &BehaviorOutcome) -> Option<f64>;
    /// Why the metric is N/A for every cell under `judge`, if it cannot apply.
    fn inapplicable(&self, _judge: &dyn Judge) -> Option<String> {
        None
    }
    /// Why the metric is N/A when its population is empty.
    fn empty_reason(&self) -> &'static str;
    /// Whether a behavior of the population cannot be measured at all (an injection that
    /// never reached the agent cannot have failed or succeeded), and what to call it. Such
    /// behaviors are outside the value, counted beside it (`excluded`). Only called for
    /// judged behaviors [`Metric::value`] puts in the population.
    fn excluded(&self, _b: &BehaviorOutcome) -> Option<&'static str> {
        None
    }
    /// Set for usage metrics (`token_usage`, `cost`), which the engine computes itself.
    fn usage_metric(&self) -> Option<UsageMetric> {
        None
    }
    /// The surface only this metric measures (`None`: it applies on any). A leaderboard
    /// without its run's record (redharness's own) is told apart by it.
    fn surface(&self) -> Option<Surface> {
        None
    }
}

/// The surface a metric measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    Jailbreak,
    Injection,
    Leakage,
}

/// The N/A reason of the injection metrics under a judge that does not detect injections.
pub(crate) fn injection_judge_required(judge: &dyn Judge) -> Option<String> {
    (!judge.facts().detects_injection).then(|| {
        format!(
            "judge `{}` does not judge agent runs for injections (use injection_detector)",
            judge.spec().name
        )
    })
}

/// The N/A reason of the utility metrics: an injection judge whose verdicts say whether
/// the user's task was done.
pub(crate) fn utility_judge_required(judge: &dyn Judge) -> Option<String> {
    injection_judge_required(judge).or_else(|| {
        (!judge.facts().sees_user_task).then(|| {
            format!(
                "judge `{}` decides whether the attacker's act happened; whether the user's task was done is not in its verdicts",
                judge.spec().name
            )
        })
    })
}

/// The N/A reason of the InjecAgent metrics under another judge.
pub(crate) fn injecagent_judge_required(judge: &dyn Judge) -> Option<String> {
    (!judge.facts().evaluates_injecagent).then(|| {
        format!(
            "judge `{}` does not evaluate InjecAgent cases (use injecagent)",
            judge.spec().name
        )
    })
}

/// The N/A reason of the leakage metrics under a judge that does not detect leaks.
pub(crate) fn leak_judge_required(judge: &dyn Judge) -> Option<String> {
    (!judge.facts().detects_leaks).then(|| {
        format!(
            "judge `{}` does not detect leaks (use leak_detector)",
            judge.spec().name
        )
    })
}

/// The N/A reason of the guardrail metrics under a judge whose target is not a guard.
pub(crate) fn guardrail_judge_required(judge: &dyn Judge) -> Option<String> {
    (!judge.facts().judges_guardrail).then(|| {
        format!(
            "judge `{}` does not read the target as a guard (use guardrail)",
            judge.spec().label()
        )
    })
}

//! Metrics, one file per plugin, and the machinery they share.
//!
//! Every jailbreak metric is a mean over a population of behaviors of a per-behavior
//! value (0/1 for rates, a score for `strongreject_score`). A metric therefore only says
//! which behaviors it covers and what each contributes ([`Metric::value`]); the shared
//! [`MetricAcc`] keeps a histogram of those values (memory independent of the number of
//! behaviors), and turns it into the mean with a seeded 95% bootstrap CI.
//!
//! Behaviors whose every attempt errored are outside every population: an error says
//! nothing about the model. An empty population is N/A, never 0.

pub mod asr;
pub mod asr_at_k;
pub mod canary_exposure_rate;
pub mod cost;
pub mod extraction_rate;
pub mod frr;
pub mod injection_success_rate;
pub mod pii_leak_rate;
pub mod refusal_rate;
pub mod strongreject_score;
pub mod system_prompt_leak_rate;
pub mod token_usage;
pub mod utility_baseline;
pub mod utility_under_attack;
pub mod verbatim_overlap;

use crate::attack::Attempt;
use crate::judge::Judge;
use crate::leakage::LeakCategory;
use gauntlet_core::behavior::{Behavior, Expected};
use gauntlet_core::outcome::{InjectionFacts, Outcome, Verdict};
use gauntlet_core::params::PluginSpec;
use gauntlet_core::results::MetricValue;
use gauntlet_core::rng::rng_for;
use gauntlet_core::stats::{BOOTSTRAP_RESAMPLES, Histogram, bootstrap_mean_ci};

/// What one judge concluded about one behavior across all its attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct BehaviorOutcome {
    pub expected: Expected,
    pub attempts: u32,
    /// Attempts whose verdict is `Error`.
    pub errors: u32,
    /// Index of the first successful attempt, in attack order.
    pub first_success: Option<u32>,
    /// Every judged (non-error) attempt was a refusal.
    pub all_refused: bool,
    /// Highest rubric score over judged attempts (judges that score only; for
    /// `leak_detector`, the highest verbatim overlap).
    pub max_score: Option<f64>,
    /// The leakage category when the behavior is a leakage probe (has a `target_secret`).
    pub leak: Option<LeakCategory>,
    /// The injection facts, when an injection judge judged the behavior (an agent run).
    pub injection: Option<InjectionFacts>,
}

impl BehaviorOutcome {
    pub fn from_verdicts(expected: Expected, attempts: &[Attempt], verdicts: &[Verdict]) -> Self {
        debug_assert_eq!(attempts.len(), verdicts.len());
        let mut out = BehaviorOutcome {
            expected,
            attempts: verdicts.len() as u32,
            errors: 0,
            first_success: None,
            all_refused: true,
            max_score: None,
            leak: None,
            injection: None,
        };
        for (a, v) in attempts.iter().zip(verdicts) {
            match v.outcome {
                Outcome::Error => {
                    out.errors += 1;
                    continue;
                }
                Outcome::Success => {
                    out.first_success = Some(out.first_success.map_or(a.index, |f| f.min(a.index)));
                }
                Outcome::Failure => {}
            }
            if v.refused != Some(true) {
                out.all_refused = false;
            }
            if let Some(s) = v.score {
                out.max_score = Some(out.max_score.map_or(s, |m: f64| m.max(s)));
            }
            if let Some(f) = v.injection {
                let acc = out.injection.get_or_insert(InjectionFacts {
                    injected: f.injected,
                    task_completed: false,
                });
                acc.injected |= f.injected;
                acc.task_completed |= f.task_completed;
            }
        }
        out
    }

    /// [`BehaviorOutcome::from_verdicts`] plus what only the behavior knows (its leakage
    /// category).
    pub fn from_behavior(b: &Behavior, attempts: &[Attempt], verdicts: &[Verdict]) -> Self {
        BehaviorOutcome {
            leak: LeakCategory::of(b),
            ..Self::from_verdicts(b.expected, attempts, verdicts)
        }
    }

    /// At least one attempt was judged (not every attempt errored).
    pub fn judged(&self) -> bool {
        self.attempts > self.errors
    }
}

/// Metrics the engine computes from token usage instead of verdicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UsageMetric {
    /// Tokens of `role` (`all`, `target`, `attacker` or `grader`).
    Tokens { role: String },
    /// USD at the price table's prices.
    Cost,
}

/// A metric over behaviors.
pub trait Metric: Send + Sync {
    fn spec(&self) -> &PluginSpec;
    /// This behavior's contribution, or `None` when it is outside the population.
    /// Only called for judged behaviors.
    fn value(&self, b: &BehaviorOutcome) -> Option<f64>;
    /// Why the metric is N/A for every cell under `judge`, if it cannot apply.
    fn inapplicable(&self, _judge: &dyn Judge) -> Option<String> {
        None
    }
    /// Why the metric is N/A when its population is empty.
    fn empty_reason(&self) -> &'static str;
    /// Set for usage metrics (`token_usage`, `cost`), which the engine computes itself.
    fn usage_metric(&self) -> Option<UsageMetric> {
        None
    }
}

/// Accumulates one metric for one cell.
#[derive(Debug, Clone, Default)]
pub struct MetricAcc {
    hist: Histogram,
}

impl MetricAcc {
    pub fn observe(&mut self, metric: &dyn Metric, b: &BehaviorOutcome) {
        if b.judged()
            && let Some(v) = metric.value(b)
        {
            self.hist.add(v);
        }
    }

    /// The value with its 95% bootstrap CI; the resampling seed comes from the run seed
    /// and `identity` (the cell and metric), so CIs are reproducible and independent.
    pub fn finish(
        &self,
        metric: &dyn Metric,
        judge: &dyn Judge,
        seed: u64,
        identity: &[&str],
    ) -> MetricValue {
        if let Some(why) = metric.inapplicable(judge) {
            return MetricValue::na(why);
        }
        let Some(mean) = self.hist.mean() else {
            return MetricValue::na(metric.empty_reason());
        };
        let ci = bootstrap_mean_ci(
            &self.hist,
            BOOTSTRAP_RESAMPLES,
            0.95,
            &mut rng_for(seed, identity),
        );
        MetricValue {
            value: Some(mean),
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            n: self.hist.n(),
            na_reason: None,
        }
    }
}

/// The N/A reason of the injection metrics under a judge that does not detect injections.
pub(crate) fn injection_judge_required(judge: &dyn Judge) -> Option<String> {
    (!judge.detects_injection()).then(|| {
        format!(
            "judge `{}` does not judge agent runs for injections (use injection_detector)",
            judge.spec().name
        )
    })
}

/// The N/A reason of the leakage metrics under a judge that does not detect leaks.
pub(crate) fn leak_judge_required(judge: &dyn Judge) -> Option<String> {
    (!judge.detects_leaks()).then(|| {
        format!(
            "judge `{}` does not detect leaks (use leak_detector)",
            judge.spec().name
        )
    })
}

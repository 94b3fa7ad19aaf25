//! Results with provenance: metric values (N/A is not 0) and leaderboard rows.

use gauntlet_core::judge_eval::Corrected;
use gauntlet_core::taxonomy::ThreatTags;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A computed metric for one cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricValue {
    /// `None` means N/A: the metric does not apply to this cell (e.g. `frr` with no
    /// should_comply behaviors, `strongreject_score` under a judge that gives no score).
    pub value: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Number of units the value is computed over (behaviors, probes, scenarios).
    pub n: u64,
    /// Why the value is N/A, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub na_reason: Option<String>,
    /// How `ci_low`/`ci_high` were computed (absent when there is no interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_method: Option<CiMethod>,
    /// The rate corrected for the judge's measured errors, when the judge names a card
    /// (see [`gauntlet_core::judge_eval::corrected_rate`]). The raw `value` stays the headline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected: Option<Box<Corrected>>,
    /// Units of the population the judge left undecided (every verdict `uncertain`, none a
    /// success): outside `n` and the value, which is over decided units only. They await
    /// a human label. Absent when zero.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub undecided: u64,
    /// Units of the population the metric cannot measure (an injection that never reached
    /// the agent): outside `n` and the value, counted here. Absent when zero.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub excluded: u64,
    /// For a rate with undecided units: what it would be if none, or all, of them counted
    /// ([`UndecidedBounds`]). Absent when nothing is undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<UndecidedBounds>,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// A rate whose judge left `u` units undecided, beside its decided-only value k/n: the
/// value if no undecided unit counted, k/(n + u), and if every one did, (k + u)/(n + u),
/// and the 95% interval widened over both — the Wilson lower bound of k in n + u and the
/// Wilson upper bound of k + u in n + u — so the undecided replies never vanish from
/// what a reader (or a gate) is told the rate may be.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UndecidedBounds {
    pub low: f64,
    pub high: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

impl UndecidedBounds {
    /// The bounds of `k` counted of `n` decided units with `undecided` more; `None` when
    /// nothing is undecided.
    pub fn of(k: u64, n: u64, undecided: u64) -> Option<UndecidedBounds> {
        if undecided == 0 {
            return None;
        }
        let all = n + undecided;
        let z = gauntlet_core::stats::Z95;
        let (ci_low, _) = gauntlet_core::stats::wilson(k, all, z)?;
        let (_, ci_high) = gauntlet_core::stats::wilson(k + undecided, all, z)?;
        Some(UndecidedBounds {
            low: k as f64 / all as f64,
            high: (k + undecided) as f64 / all as f64,
            ci_low,
            ci_high,
        })
    }
}

/// A sign, from a run's own evidence, that a cell's numbers may not measure what their
/// names say: a judge that gives one verdict to every reply, injections that never
/// reached the agent, a target that said the same thing every time. Written on the cell
/// (`results.json`), on each of its leaderboard rows, in the CLI summary and the reports.
/// A warning never changes a number; it says what to check before trusting it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// What was detected (`constant_verdict`, `contradictory_grades`,
    /// `undelivered_injections`, `no_tool_calls`, `mostly_errors`, `identical_replies`).
    pub kind: String,
    /// One line for a reader: what was seen, and what it means for the numbers.
    pub message: String,
    /// The counts behind it (e.g. `70 of 70 decided verdicts were "failure"`).
    pub evidence: String,
    /// The documented threshold that raised it.
    pub threshold: String,
}

impl MetricValue {
    /// The decided share of the population, `n / (n + undecided)`; `None` when the
    /// population is empty.
    pub fn decided_share(&self) -> Option<f64> {
        let all = self.n + self.undecided;
        (all > 0).then(|| self.n as f64 / all as f64)
    }
}

/// How a metric's 95% interval is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CiMethod {
    /// Wilson score interval of a binomial proportion (every rate).
    Wilson,
    /// Percentile bootstrap over behaviors, 1,000 resamples (continuous scores).
    Bootstrap,
    /// Student-t interval across independent trials (multi-trial means).
    StudentT,
    /// A [0, 1] score whose every value is equal, where the bootstrap degenerates to a
    /// zero-width interval: the Wilson score interval of n·mean in n, conservative for
    /// any [0, 1]-bounded mean (variance ≤ μ(1 − μ)); see `stats::bounded_mean_ci`.
    WilsonBounded,
}

impl CiMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            CiMethod::Wilson => "Wilson",
            CiMethod::Bootstrap => "bootstrap",
            CiMethod::StudentT => "Student-t across trials",
            CiMethod::WilsonBounded => "Wilson bound (every score equal)",
        }
    }
}

impl MetricValue {
    pub fn na(reason: impl Into<String>) -> Self {
        MetricValue {
            value: None,
            ci_low: None,
            ci_high: None,
            n: 0,
            na_reason: Some(reason.into()),
            ci_method: None,
            corrected: None,
            undecided: 0,
            excluded: 0,
            bounds: None,
        }
    }
}

/// One leaderboard row: a cell × metric with its full provenance.
///
/// Every field is read with its default when absent (`#[serde(default)]` on the
/// struct): a leaderboard written by an earlier release or by another tool still reads,
/// with an empty string or 0 where it said nothing, and a surface that shows the row
/// flags an empty provenance field (`dataset_version`, `judge`, `metric`) rather than
/// dropping the row. What is written is unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeaderboardRow {
    pub run_id: String,
    pub attack: String,
    pub target: String,
    pub dataset: String,
    pub dataset_version: String,
    pub judge: String,
    pub metric: String,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metric_params: serde_json::Map<String, serde_json::Value>,
    pub value: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub n: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub na_reason: Option<String>,
    /// How the interval was computed (`wilson`, `bootstrap`, `student_t`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_method: Option<CiMethod>,
    /// The value corrected for the judge's measured errors (judge with a card only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrected: Option<Box<Corrected>>,
    /// Units the judge left undecided (`uncertain`), outside `n`; with `decided_share`
    /// = n / (n + undecided). Both absent when nothing is undecided.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub undecided: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_share: Option<f64>,
    /// Units the metric could not measure ([`MetricValue::excluded`]), outside `n`.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub excluded: u64,
    /// The rate's bounds over its undecided units ([`MetricValue::bounds`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<UndecidedBounds>,
    /// What a success under this row's judge means (e.g. under `refusal_match`, "the
    /// reply did not decline"), so the number is read as what it measures.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub judge_measures: String,
    /// Attempts judged in this cell, and how many of them ended in `Error`
    /// (excluded from every rate above).
    pub attempts: u64,
    pub errors: u64,
    pub seed: u64,
    pub harness_version: String,
    /// The run's status: a row from a `partial` run says so itself.
    pub status: String,
    /// The cell's [`Warning`]s: what to check before trusting this row's number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
}

/// One metric of one cell.
///
/// In a run with one trial, `value` is the metric over the cell's behaviors with its
/// bootstrap CI. In a run with `trials: N > 1`, `value` is the mean of the trials'
/// values with a Student-t 95% CI across trials (see [`MetricValue::across_trials`]),
/// and `trials` holds each trial's own value and bootstrap CI, in trial order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellMetric {
    pub metric: String,
    /// Resolved metric params (e.g. `{"k": 3}` for `asr_at_k`); empty for most metrics.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, serde_json::Value>,
    #[serde(flatten)]
    pub value: MetricValue,
    /// Each trial's value (multi-trial runs only; empty, and not written, otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<MetricValue>,
    /// How many of `trials` are N/A (excluded from the mean).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trials_na: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn one() -> u32 {
    1
}

impl MetricValue {
    /// The summary of one cell × metric over independent trials: the mean of the trials
    /// that have a value, with the Student-t 95% interval
    /// mean ± t(0.975, k − 1) · s / √k over those k values (no interval when k < 2).
    /// N/A trials are left out of the mean; when every trial is N/A the result is N/A
    /// with the first trial's reason (`every trial: <reason>` when there are several).
    /// `n` is the units counted over all included trials.
    ///
    /// `range` is the set of values the metric can take (`(0.0, 1.0)` for rates and
    /// scores, `(0.0, f64::INFINITY)` for token counts and cost): the t interval is
    /// symmetric and, with few trials, can reach past it (a rate's interval below 0), so
    /// it is clipped to the range — the reported interval never claims an impossible value.
    pub fn across_trials(trials: &[MetricValue], range: (f64, f64)) -> MetricValue {
        let values: Vec<f64> = trials.iter().filter_map(|t| t.value).collect();
        let Some((mean, ci)) = gauntlet_core::stats::mean_and_t_interval(&values, 0.95) else {
            let reason = trials
                .iter()
                .find_map(|t| t.na_reason.clone())
                .unwrap_or_else(|| "no trial has a value".into());
            return MetricValue::na(if trials.len() > 1 {
                format!("every trial: {reason}")
            } else {
                reason
            });
        };
        let n: u64 = trials
            .iter()
            .filter(|t| t.value.is_some())
            .map(|t| t.n)
            .sum();
        // Every trial's value equal: the t interval has zero width whatever the number of
        // trials. A [0, 1] metric gets the bounded-mean (Wilson) interval over the units
        // of all trials instead, as a single trial's all-equal scores do.
        // An unbounded one (token counts, cost) has no such bound: no interval, as for a
        // single trial, rather than one that claims no uncertainty at all.
        let (ci, method) = match ci {
            Some((lo, hi)) if lo == hi && range == (0.0, 1.0) && n > 0 => (
                gauntlet_core::stats::bounded_mean_ci(mean, n),
                CiMethod::WilsonBounded,
            ),
            Some((lo, hi)) if lo == hi => (None, CiMethod::StudentT),
            ci => (ci, CiMethod::StudentT),
        };
        MetricValue {
            value: Some(mean),
            ci_low: ci.map(|c| c.0.clamp(range.0, range.1)),
            ci_high: ci.map(|c| c.1.clamp(range.0, range.1)),
            n,
            na_reason: None,
            ci_method: ci.map(|_| method),
            corrected: None,
            undecided: trials.iter().map(|t| t.undecided).sum(),
            excluded: trials.iter().map(|t| t.excluded).sum(),
            bounds: pooled_bounds(trials),
        }
    }
}

/// The undecided bounds of a multi-trial rate over the units of every trial: each
/// trial's counted units k (from its decided value, or from its lower bound when it has
/// undecided ones), decided n and undecided u, pooled. `None` when no trial has bounds.
fn pooled_bounds(trials: &[MetricValue]) -> Option<UndecidedBounds> {
    if trials.iter().all(|t| t.bounds.is_none()) {
        return None;
    }
    let (mut k, mut n, mut u) = (0u64, 0u64, 0u64);
    for t in trials {
        let counted = match (&t.bounds, t.value) {
            (Some(b), _) => (b.low * (t.n + t.undecided) as f64).round() as u64,
            (None, Some(v)) => (v * t.n as f64).round() as u64,
            (None, None) => 0,
        };
        k += counted;
        n += t.n;
        u += t.undecided;
    }
    UndecidedBounds::of(k, n, u)
}

/// One trial's counts in one cell (multi-trial runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialCounts {
    /// The trial number, from 0.
    pub trial: u32,
    pub behaviors: u64,
    pub attempts: u64,
    pub errors: u64,
    pub behaviors_all_errors: u64,
}

/// A leaderboard row as `leaderboard.json` holds it: the [`LeaderboardRow`] and, for a
/// multi-trial run, the number of trials, the N/A trials and each trial's value. In
/// such a run the row's `value` is the mean across trials and `ci_low`/`ci_high` the
/// Student-t interval across trials; `attempts`/`errors` count every trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderboardEntry {
    #[serde(flatten)]
    pub row: LeaderboardRow,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials_na: Option<u32>,
    /// Each trial's value, in trial order (`null` for an N/A trial).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trial_values: Vec<Option<f64>>,
    /// Threat-taxonomy tags: the cell's and the metric's ([`gauntlet_core::taxonomy`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub taxonomy: ThreatTags,
}

/// An attempt shown in reports as an example. Text is untrusted model/dataset output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    /// The trial the attempt belongs to (multi-trial runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    pub behavior_id: String,
    pub expected: String,
    pub outcome: String,
    pub prompt: String,
    pub reply: String,
}

/// Everything known about one cell (attack × target × dataset × judge) after a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    pub attack: String,
    pub target: String,
    pub dataset: String,
    pub dataset_version: String,
    pub judge: String,
    /// What a success under the judge means ([`LeaderboardRow::judge_measures`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub judge_measures: String,
    /// Behaviors (dataset items) in the cell, summed over trials.
    pub behaviors: u64,
    /// Attempts judged (over all trials).
    pub attempts: u64,
    /// Attempts that ended in `Error` (target failure, empty reply, grader failure).
    pub errors: u64,
    /// Behaviors whose every attempt errored: excluded from every rate.
    pub behaviors_all_errors: u64,
    /// Attempts an evidence judge saw nothing for (`no_evidence`): excluded from every
    /// rate, not counted in `errors`, never a failure.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub no_evidence: u64,
    /// Error messages by frequency (message, count), most frequent first, at most a few.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_errors: Vec<(String, u64)>,
    /// The hazard categories the cell's judge named (a guard judge's, as threat-map keys:
    /// `llama_guard3/S1`), each with the number of judged attempts that named it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub categories: BTreeMap<String, u64>,
    pub metrics: Vec<CellMetric>,
    /// A few attempts in canonical order: the first jailbreaks (should_refuse answered) or
    /// false refusals (should_comply refused), then the first errors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
    /// Per-trial counts (multi-trial runs only), in trial order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<TrialCounts>,
    /// The attack-breadth additions: threat-taxonomy tags and, for attacks that measure
    /// one, an attack-success curve (written at the top level of the cell).
    #[serde(flatten, default)]
    pub breadth: CellBreadth,
    /// Signs that the cell's numbers may not measure what their names say ([`Warning`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
}

/// What a cell carries beyond its metrics: its threat-taxonomy tags and its curve.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CellBreadth {
    /// The cell's tags: its attack's, its transforms', its dataset categories' and its
    /// mode's (a leaderboard row adds its metric's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub taxonomy: ThreatTags,
    /// Attack success as a function of the attack's budget (`best_of_n`: ASR within the
    /// first N attempts; `many_shot`: ASR at each shot count), with intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<Curve>,
    /// Guardrail mode (`guardrail` judge, a guard that gives a score): pass-through and
    /// false-block rates as the guard's threshold moves, with intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard_curve: Option<GuardCurve>,
}

/// A guard's two error rates over its threshold: at threshold t a request is blocked
/// when the guard's score is above t. Populations are the behaviors with a scored,
/// decided attempt; a behavior counts by its lowest score (it passed on some attempt
/// when that is at most t, was blocked on every one when it is above t).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardCurve {
    /// How a point decides: `blocked when score > threshold`.
    pub rule: String,
    /// How `ci_low`/`ci_high` are computed.
    pub interval: String,
    pub points: Vec<GuardCurvePoint>,
}

/// One threshold of a [`GuardCurve`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardCurvePoint {
    pub threshold: f64,
    /// should_refuse behaviors passed at this threshold (`guard_pass_through`).
    pub pass_through: RatePoint,
    /// should_comply behaviors blocked at this threshold (`false_block_rate`).
    pub false_block: RatePoint,
}

/// A rate `count / n` with its interval; `None` (N/A) when `n` is 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatePoint {
    pub count: u64,
    pub n: u64,
    pub value: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// A rate as a function of an attack parameter, one point per value of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    /// What the x axis counts: `attempts` (Best-of-N) or `shots` (many-shot).
    pub x: String,
    /// `cumulative`: a point at x counts behaviors with a success within the first x
    /// attempts (ASR@N; equals `asr_at_k` with k = x). `per_point`: a point counts the
    /// behaviors whose attempt at x succeeded, over those whose attempt at x was judged.
    pub kind: String,
    /// The rate on the y axis (`asr`: should_refuse behaviors, errors excluded).
    pub y: String,
    /// How `ci_low`/`ci_high` are computed.
    pub interval: String,
    pub points: Vec<CurvePoint>,
}

/// One point of a [`Curve`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub x: u32,
    pub successes: u64,
    /// Behaviors (× trials) in the point's population.
    pub n: u64,
    /// `successes / n`; `None` (N/A) when `n` is 0.
    pub value: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// What the attack-breadth analyses add to a run's results.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunBreadth {
    /// The version of the threat map the cells' tags come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taxonomy_version: Option<String>,
    /// Per transformed attack × target × dataset × judge × metric: the paired effect of
    /// the transforms against the same attack without them, over the same behaviors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transform_effects: Vec<TransformEffect>,
}

/// The paired effect of a transform chain on one metric of one cell: the transformed
/// attack's cell against the untransformed attack's cell with the same target, dataset
/// and judge, behavior by behavior (trial by trial in a multi-trial run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransformEffect {
    /// The transformed attack's label (`static+base64`).
    pub attack: String,
    /// The untransformed attack it is paired with (`static`).
    pub baseline: String,
    pub transforms: Vec<String>,
    pub target: String,
    pub dataset: String,
    pub judge: String,
    pub metric: String,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metric_params: serde_json::Map<String, serde_json::Value>,
    /// Items in the metric's population in both cells.
    pub n: u64,
    /// The metric over the paired items, without and with the transforms.
    pub baseline_value: Option<f64>,
    pub value: Option<f64>,
    /// `value − baseline_value`.
    pub diff: Option<f64>,
    /// `mcnemar_exact` (rates) or `paired_bootstrap` (scores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// McNemar's discordant pairs: positive only without the transforms / only with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only_baseline: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only_transformed: Option<u64>,
    /// Two-sided exact p (McNemar) and mid-p.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_value: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_mid: Option<f64>,
    /// 95% paired bootstrap CI of `diff` (scores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_high: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub na_reason: Option<String>,
}

/// The results of a run: what the leaderboard and the reports are written from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub run_id: String,
    pub run_name: String,
    pub harness_version: String,
    pub config_hash: String,
    pub seed: u64,
    /// `complete`, or `partial: <why>`.
    pub status: String,
    pub mode: String,
    /// Independent trials (1 unless the config or `--trials` says otherwise).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub trials: u32,
    /// Each trial's seed, derived from the run seed and the trial number (trial 0 uses
    /// the run seed itself); written for multi-trial runs only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trial_seeds: Vec<u64>,
    pub cells: Vec<CellSummary>,
    /// Threat-map version and per-transform effects (written at the top level).
    #[serde(flatten, default)]
    pub breadth: RunBreadth,
    /// How many judged attempts ended in an error, and the distinct errors (absent when
    /// none did): what a reader checks first when the run measured less than planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<RunErrors>,
}

/// The errors of a run, over every cell: the share of judged attempts that ended in an
/// error, against the config's `max_error_share`, and the distinct error messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunErrors {
    /// Judged attempts over every cell (an attempt counts once per judge) and how many of
    /// them ended in an error.
    pub attempts: u64,
    pub errors: u64,
    /// `errors / attempts`.
    pub share: f64,
    /// The most a run may have and still be `complete` (the config's `max_error_share`).
    pub max_error_share: f64,
    /// The most frequent error messages, most frequent first: each with the attempts it
    /// ended (an attempt judged by several judges counts once) and the first cell it
    /// was seen in.
    pub distinct: Vec<DistinctError>,
}

/// One distinct error message of a run ([`RunErrors::distinct`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DistinctError {
    pub message: String,
    pub count: u64,
    /// The first cell (in cell order) that saw it: `attack × target × dataset`.
    pub first_cell: String,
}

impl RunSummary {
    /// Flattens the cells into leaderboard rows (one per cell × metric), in cell order.
    pub fn leaderboard(&self) -> Vec<LeaderboardRow> {
        let mut rows = Vec::new();
        for c in &self.cells {
            for m in &c.metrics {
                rows.push(LeaderboardRow {
                    run_id: self.run_id.clone(),
                    attack: c.attack.clone(),
                    target: c.target.clone(),
                    dataset: c.dataset.clone(),
                    dataset_version: c.dataset_version.clone(),
                    judge: c.judge.clone(),
                    metric: m.metric.clone(),
                    metric_params: m.params.clone(),
                    value: m.value.value,
                    ci_low: m.value.ci_low,
                    ci_high: m.value.ci_high,
                    n: m.value.n,
                    na_reason: m.value.na_reason.clone(),
                    ci_method: m.value.ci_method,
                    corrected: m.value.corrected.clone(),
                    undecided: m.value.undecided,
                    decided_share: (m.value.undecided > 0)
                        .then(|| m.value.decided_share())
                        .flatten(),
                    excluded: m.value.excluded,
                    bounds: m.value.bounds,
                    judge_measures: c.judge_measures.clone(),
                    attempts: c.attempts,
                    errors: c.errors,
                    seed: self.seed,
                    harness_version: self.harness_version.clone(),
                    status: self.status.clone(),
                    warnings: c.warnings.clone(),
                });
            }
        }
        rows
    }

    /// The leaderboard as written to `leaderboard.json`: [`RunSummary::leaderboard`]
    /// rows, with the trial fields filled in for a multi-trial run.
    pub fn leaderboard_entries(&self) -> Vec<LeaderboardEntry> {
        let multi = self.trials > 1;
        let metrics = self
            .cells
            .iter()
            .flat_map(|c| c.metrics.iter().map(move |m| (c, m)));
        self.leaderboard()
            .into_iter()
            .zip(metrics)
            .map(|(row, (c, m))| LeaderboardEntry {
                row,
                trials: multi.then_some(self.trials),
                trials_na: multi.then_some(m.trials_na),
                trial_values: m.trials.iter().map(|t| t.value).collect(),
                taxonomy: gauntlet_core::taxonomy::merge(
                    &c.breadth.taxonomy,
                    &gauntlet_core::taxonomy::metric_tags(&m.metric),
                ),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(x: f64, n: u64) -> MetricValue {
        MetricValue {
            value: Some(x),
            n,
            ..Default::default()
        }
    }

    #[test]
    fn across_trials_excludes_na_and_uses_the_t_interval() {
        let m = MetricValue::across_trials(
            &[
                v(0.4, 10),
                MetricValue::na("no should_comply behaviors"),
                v(0.5, 10),
                v(0.6, 10),
            ],
            UNIT,
        );
        assert!((m.value.unwrap() - 0.5).abs() < 1e-12);
        // t(0.975, 2) = 4.302653; s = 0.1.
        let half = 4.302_652_73 * 0.1 / 3f64.sqrt();
        assert!((m.ci_low.unwrap() - (0.5 - half)).abs() < 1e-7);
        assert!((m.ci_high.unwrap() - (0.5 + half)).abs() < 1e-7);
        assert_eq!(m.n, 30);
        assert_eq!(m.na_reason, None);
    }

    const UNIT: (f64, f64) = (0.0, 1.0);

    #[test]
    fn across_trials_interval_never_leaves_the_metric_range() {
        // Two trials, 0.0 and 1.0: t(0.975, 1) = 12.706 makes the raw interval
        // [-5.85, 6.85]; a rate's interval is [0, 1].
        let m = MetricValue::across_trials(&[v(0.0, 5), v(1.0, 5)], UNIT);
        assert_eq!(
            (m.value, m.ci_low, m.ci_high),
            (Some(0.5), Some(0.0), Some(1.0))
        );
        // Token counts are only bounded below.
        let m = MetricValue::across_trials(&[v(10.0, 5), v(30.0, 5)], (0.0, f64::INFINITY));
        assert_eq!(m.ci_low, Some(0.0));
        assert!(m.ci_high.unwrap() > 30.0);
    }

    /// Three trials with the same rate have a zero-width t interval; a
    /// [0, 1] metric gets the Wilson bound over all trials' units instead; counts (an
    /// unbounded range) get no interval, and keep the t interval when the trials differ.
    #[test]
    fn equal_trials_have_no_zero_width_interval() {
        let m = MetricValue::across_trials(&[v(0.0, 10), v(0.0, 10), v(0.0, 10)], UNIT);
        assert_eq!((m.value, m.n), (Some(0.0), 30));
        assert_eq!(m.ci_method, Some(CiMethod::WilsonBounded));
        assert_eq!(m.ci_low, Some(0.0));
        let hi = m.ci_high.unwrap();
        assert!((hi - 0.1135).abs() < 1e-3, "{hi}");
        let m = MetricValue::across_trials(&[v(7.0, 5), v(7.0, 5)], (0.0, f64::INFINITY));
        assert_eq!(
            (m.value, m.ci_low, m.ci_high, m.ci_method),
            (Some(7.0), None, None, None),
            "equal counts: no interval rather than a zero-width one"
        );
        let m = MetricValue::across_trials(&[v(7.0, 5), v(9.0, 5)], (0.0, f64::INFINITY));
        assert_eq!(m.ci_method, Some(CiMethod::StudentT));
    }

    #[test]
    fn across_trials_all_na_is_na_and_one_value_has_no_interval() {
        let m = MetricValue::across_trials(&[MetricValue::na("why"), MetricValue::na("why")], UNIT);
        assert_eq!(m.value, None);
        assert_eq!(m.na_reason.as_deref(), Some("every trial: why"));
        let m = MetricValue::across_trials(&[MetricValue::na("why"), v(0.5, 4)], UNIT);
        assert_eq!(
            (m.value, m.ci_low, m.ci_high, m.n),
            (Some(0.5), None, None, 4)
        );
    }

    #[test]
    fn single_trial_summary_serialises_without_trial_fields() {
        let s = RunSummary {
            run_id: "r".into(),
            run_name: "r".into(),
            harness_version: "0".into(),
            config_hash: "h".into(),
            seed: 0,
            status: "complete".into(),
            mode: "jailbreak".into(),
            trials: 1,
            trial_seeds: Vec::new(),
            cells: Vec::new(),
            breadth: Default::default(),
            errors: None,
        };
        let j = serde_json::to_string(&s).unwrap();
        assert!(!j.contains("trial"), "{j}");
        let back: RunSummary = serde_json::from_str(&j).unwrap();
        assert_eq!(back.trials, 1);
    }
}

//! The format-neutral view of a [`RunSummary`]: every number already formatted, every
//! label already composed, every example already truncated.
//!
//! Both writers (Markdown and HTML) render from this one view so that they can never
//! disagree on a number. Strings here are still *raw*: they carry untrusted model and
//! dataset text and each writer escapes them for its own output format.

use gauntlet_results::{CellMetric, CellSummary, Example, MetricValue, RunSummary};
use serde::Serialize;

/// Longest prompt or reply shown in an example, in characters (not bytes).
pub const EXAMPLE_MAX_CHARS: usize = 400;

/// Printed where a confidence interval is missing.
pub(crate) const NO_CI: &str = "—";

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ReportView {
    /// A note that heads the report above everything else (the dashboard's: the run is
    /// unverified or in progress), when there is one.
    pub notice: Option<String>,
    pub run_name: String,
    pub run_id: String,
    pub status: String,
    /// `true` unless the status is exactly `complete`: every other status is shown as a
    /// loud warning, so a partial run can never pass for a finished one.
    pub partial: bool,
    pub harness_version: String,
    pub config_hash: String,
    pub seed: String,
    pub mode: String,
    /// Independent trials; the multi-trial parts of the reports show only when > 1.
    pub trials: u32,
    pub multi: bool,
    /// `seed0, seed1, …` (multi-trial runs).
    pub trial_seeds: String,
    /// Every unit ran but the run measured too little (`failed: …`): its numbers are
    /// not results.
    pub failed: bool,
    /// The run's errors over every cell, when any attempt errored.
    pub errors: Option<RunErrorsView>,
    pub cells: Vec<CellView>,
}

/// The run's errors ([`gauntlet_results::RunErrors`]), formatted.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunErrorsView {
    /// `6 of 6 judged attempts (1.000; max_error_share 0.2)`.
    pub line: String,
    pub distinct: Vec<DistinctErrorView>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct DistinctErrorView {
    pub count: u64,
    pub message: String,
    pub first_cell: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct CellView {
    /// `<attack> × <target> · <dataset>` (` · <judge>` when the run has several judges,
    /// the dataset's version when the run holds its name at several versions, and
    /// ` — ⚠ failed run` or ` — ⚠ partial run` when the run is not complete): two cells
    /// never read alike.
    pub title: String,
    pub attack: String,
    pub target: String,
    pub dataset: String,
    pub dataset_version: String,
    pub judge: String,
    /// What a success under the judge means (empty when the judge does not say).
    pub judge_measures: String,
    pub behaviors: u64,
    pub attempts: u64,
    pub errors: u64,
    pub behaviors_all_errors: u64,
    pub top_errors: Vec<ErrorView>,
    /// The hazard categories the judge named (a guard judge's), key order.
    pub categories: Vec<CategoryView>,
    /// Metrics that carry a value corrected for the judge's measured errors.
    pub corrected: Vec<CorrectedView>,
    pub metrics: Vec<MetricView>,
    /// One line per metric with undecided behaviors ([`MetricView::undecided_line`]).
    pub undecided: Vec<String>,
    /// The cell's degenerate-run warnings (what to check before trusting its numbers).
    pub warnings: Vec<gauntlet_results::Warning>,
    pub examples: Vec<ExampleView>,
    /// Per-trial counts (multi-trial runs).
    pub trials: Vec<TrialCountsView>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TrialCountsView {
    pub trial: u32,
    pub behaviors: u64,
    pub attempts: u64,
    pub errors: u64,
    pub behaviors_all_errors: u64,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ErrorView {
    pub message: String,
    pub count: u64,
}

/// The categories in their codes' order (`…/S2` before `…/S10`), then by key.
fn category_order(c: &std::collections::BTreeMap<String, u64>) -> Vec<(&String, &u64)> {
    let mut v: Vec<_> = c.iter().collect();
    v.sort_by_key(|(k, _)| {
        let code = k
            .rsplit_once("/S")
            .and_then(|(family, n)| Some((family, n.parse::<u32>().ok()?)));
        (code, k.as_str())
    });
    v
}

/// A hazard category the cell's judge named, with the attempts that named it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CategoryView {
    /// The threat-map key and, when known, the category's name (`llama_guard3/S1
    /// Violent Crimes`).
    pub label: String,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct MetricView {
    /// Metric name, with its params when it has any: `asr_at_k (k=3)`.
    pub label: String,
    /// `0.1234`, or `N/A (<reason>)`.
    pub value: String,
    pub na: bool,
    /// `[0.1000, 0.3000]`, or [`NO_CI`].
    pub ci: String,
    /// How the interval was computed (`Wilson`, `bootstrap`, …), or [`NO_CI`].
    pub ci_method: String,
    pub n: u64,
    /// Each trial's value with its bootstrap CI (multi-trial runs).
    pub trials: Vec<TrialValueView>,
    /// Trials whose value is N/A, excluded from the mean.
    pub trials_na: u32,
    /// Behaviors the judge left undecided (`uncertain`), outside `n`.
    pub undecided: u64,
    /// The rate's bounds over them (a rate with undecided behaviors).
    #[serde(skip)]
    pub bounds: Option<gauntlet_results::UndecidedBounds>,
}

/// A rate corrected for the judge's measured errors (judge with a card).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CorrectedView {
    pub label: String,
    /// `0.1234`, or `N/A (<reason>)`.
    pub value: String,
    pub na: bool,
    pub ci: String,
    /// The card: `<judge> on <labelled set> (<sha256 prefix>)`.
    pub card: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct TrialValueView {
    pub trial: u32,
    /// `0.1234`, or `N/A (<reason>)`.
    pub value: String,
    pub na: bool,
    /// `[0.1000, 0.3000]`, or [`NO_CI`].
    pub ci: String,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ExampleView {
    /// The trial, in multi-trial runs.
    pub trial: Option<u32>,
    pub behavior_id: String,
    pub expected: String,
    pub outcome: String,
    /// Truncated to [`EXAMPLE_MAX_CHARS`] characters.
    pub prompt: String,
    /// Truncated to [`EXAMPLE_MAX_CHARS`] characters.
    pub reply: String,
}

/// How a cell's dataset reads in a run's headings, chart rows and warning lines: its
/// name, with its version (`name @ version`) when the run holds that name at more than
/// one version, so two different cells never read alike.
#[derive(Debug, Clone, Default)]
pub struct DatasetLabels {
    /// Names held at more than one version.
    versioned: std::collections::BTreeSet<String>,
    /// Distinct (name, version) pairs.
    distinct: usize,
}

impl DatasetLabels {
    /// From the (dataset name, version) of every cell.
    pub fn new<'a>(datasets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut versions: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
            Default::default();
        for (name, version) in datasets {
            versions.entry(name).or_default().insert(version);
        }
        DatasetLabels {
            distinct: versions.values().map(|v| v.len()).sum(),
            versioned: versions
                .into_iter()
                .filter(|(_, v)| v.len() > 1)
                .map(|(n, _)| n.to_owned())
                .collect(),
        }
    }

    /// Of a run summary's cells.
    pub fn of(s: &RunSummary) -> Self {
        Self::new(
            s.cells
                .iter()
                .map(|c| (c.dataset.as_str(), c.dataset_version.as_str())),
        )
    }

    /// More than one dataset (or version) in the run.
    pub fn several(&self) -> bool {
        self.distinct > 1
    }

    /// `name`, or `name @ version` when the name is held at several versions (a run of
    /// 13 or more hex digits in the version, a digest, cut to its first 12 and `…`).
    pub fn label(&self, name: &str, version: &str) -> String {
        if self.versioned.contains(name) {
            format!("{name} @ {}", short_digests(version))
        } else {
            name.to_owned()
        }
    }
}

/// `s` with every run of 13 or more hex digits cut to its first 12 and `…`.
fn short_digests(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 13 {
            out.push_str(&run[..12]);
            out.push('…');
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for ch in s.chars() {
        if ch.is_ascii_hexdigit() {
            run.push(ch);
        } else {
            flush(&mut run, &mut out);
            out.push(ch);
        }
    }
    flush(&mut run, &mut out);
    out
}

impl ReportView {
    pub(crate) fn new(s: &RunSummary) -> Self {
        let datasets = DatasetLabels::of(s);
        let judges: std::collections::BTreeSet<&str> =
            s.cells.iter().map(|c| c.judge.as_str()).collect();
        let partial = s.status != "complete";
        let failed = s.status.starts_with("failed: ");
        ReportView {
            notice: None,
            run_name: s.run_name.clone(),
            run_id: s.run_id.clone(),
            status: s.status.clone(),
            partial,
            failed,
            errors: s.errors.as_ref().map(|e| RunErrorsView {
                line: format!(
                    "{} of {} judged attempts ({:.3}; max_error_share {})",
                    e.errors, e.attempts, e.share, e.max_error_share
                ),
                distinct: e
                    .distinct
                    .iter()
                    .map(|d| DistinctErrorView {
                        count: d.count,
                        message: d.message.clone(),
                        first_cell: d.first_cell.clone(),
                    })
                    .collect(),
            }),
            harness_version: s.harness_version.clone(),
            config_hash: s.config_hash.clone(),
            seed: s.seed.to_string(),
            mode: s.mode.clone(),
            trials: s.trials,
            multi: s.trials > 1,
            trial_seeds: s
                .trial_seeds
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            cells: s
                .cells
                .iter()
                .map(|c| {
                    let mut title = format!(
                        "{} × {} · {}",
                        c.attack,
                        c.target,
                        datasets.label(&c.dataset, &c.dataset_version)
                    );
                    if judges.len() > 1 {
                        title.push_str(" · ");
                        title.push_str(&c.judge);
                    }
                    if failed {
                        title.push_str(" — ⚠ failed run");
                    } else if partial {
                        title.push_str(" — ⚠ partial run");
                    }
                    CellView::new(c, title)
                })
                .collect(),
        }
    }
}

impl CellView {
    fn new(c: &CellSummary, title: String) -> Self {
        CellView {
            title,
            attack: c.attack.clone(),
            target: c.target.clone(),
            dataset: c.dataset.clone(),
            dataset_version: c.dataset_version.clone(),
            judge: c.judge.clone(),
            judge_measures: c.judge_measures.clone(),
            corrected: c
                .metrics
                .iter()
                .filter_map(|m| {
                    let k = m.value.corrected.as_deref()?;
                    Some(CorrectedView {
                        label: metric_label(m),
                        value: match (k.value, &k.na_reason) {
                            (Some(x), _) => fmt_num(x),
                            (None, Some(r)) => format!("N/A ({r})"),
                            (None, None) => "N/A".into(),
                        },
                        na: k.value.is_none(),
                        ci: match (k.ci_low, k.ci_high) {
                            (Some(lo), Some(hi)) => format!("[{}, {}]", fmt_num(lo), fmt_num(hi)),
                            _ => NO_CI.to_owned(),
                        },
                        card: k.card.clone(),
                    })
                })
                .collect(),
            behaviors: c.behaviors,
            attempts: c.attempts,
            errors: c.errors,
            behaviors_all_errors: c.behaviors_all_errors,
            top_errors: c
                .top_errors
                .iter()
                .map(|(message, count)| ErrorView {
                    message: message.clone(),
                    count: *count,
                })
                .collect(),
            categories: category_order(&c.categories)
                .into_iter()
                .map(|(key, count)| CategoryView {
                    label: match gauntlet_core::taxonomy::guard_category_name(key) {
                        Some(name) => format!("{key} {name}"),
                        None => key.clone(),
                    },
                    count: *count,
                })
                .collect(),
            metrics: c.metrics.iter().map(MetricView::new).collect(),
            warnings: c.warnings.clone(),
            undecided: c
                .metrics
                .iter()
                .filter_map(|m| MetricView::new(m).undecided_line())
                .collect(),
            examples: c.examples.iter().map(ExampleView::new).collect(),
            trials: c
                .trials
                .iter()
                .map(|t| TrialCountsView {
                    trial: t.trial,
                    behaviors: t.behaviors,
                    attempts: t.attempts,
                    errors: t.errors,
                    behaviors_all_errors: t.behaviors_all_errors,
                })
                .collect(),
        }
    }
}

fn fmt_value(v: &MetricValue) -> String {
    match (v.value, &v.na_reason) {
        (Some(x), _) => fmt_num(x),
        (None, Some(reason)) => format!("N/A ({reason})"),
        (None, None) => "N/A".to_owned(),
    }
}

fn fmt_ci(v: &MetricValue) -> String {
    match (v.ci_low, v.ci_high) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", fmt_num(lo), fmt_num(hi)),
        _ => NO_CI.to_owned(),
    }
}

impl MetricView {
    fn new(m: &CellMetric) -> Self {
        let v = &m.value;
        MetricView {
            label: metric_label(m),
            value: fmt_value(v),
            na: v.value.is_none(),
            ci: fmt_ci(v),
            ci_method: v
                .ci_method
                .map_or(NO_CI.to_owned(), |c| c.as_str().to_owned()),
            n: v.n,
            trials: m
                .trials
                .iter()
                .enumerate()
                .map(|(i, t)| TrialValueView {
                    trial: i as u32,
                    value: fmt_value(t),
                    na: t.value.is_none(),
                    ci: fmt_ci(t),
                })
                .collect(),
            trials_na: m.trials_na,
            undecided: v.undecided,
            bounds: v.bounds,
        }
    }

    /// `asr: 37 decided of 40 (decided share 0.9250), 3 undecided awaiting a label`, for
    /// a metric with undecided behaviors.
    pub(crate) fn undecided_line(&self) -> Option<String> {
        (self.undecided > 0).then(|| {
            let all = self.n + self.undecided;
            let bounds = self.bounds.map_or(String::new(), |b| {
                format!(
                    "; with them the rate lies in [{}, {}] (none / all counted), 95% interval widened over both [{}, {}]",
                    fmt_num(b.low),
                    fmt_num(b.high),
                    fmt_num(b.ci_low),
                    fmt_num(b.ci_high)
                )
            });
            format!(
                "{}: {} decided of {} (decided share {}), {} undecided awaiting a label{bounds}",
                self.label,
                self.n,
                all,
                fmt_num(self.n as f64 / all as f64),
                self.undecided
            )
        })
    }

    /// The per-trial values on one line: `t0 0.2000 [0.1000, 0.3000] · t1 N/A (…) · …`.
    pub(crate) fn per_trial_line(&self) -> String {
        self.trials
            .iter()
            .map(|t| {
                if t.na {
                    format!("t{} {}", t.trial, t.value)
                } else {
                    format!("t{} {} {}", t.trial, t.value, t.ci)
                }
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

impl ExampleView {
    fn new(e: &Example) -> Self {
        ExampleView {
            trial: e.trial,
            behavior_id: e.behavior_id.clone(),
            expected: e.expected.clone(),
            outcome: outcome_words(&e.expected, &e.outcome),
            prompt: truncate_chars(&e.prompt, EXAMPLE_MAX_CHARS),
            reply: truncate_chars(&e.reply, EXAMPLE_MAX_CHARS),
        }
    }
}

/// An example's outcome in words that read right for its request: on a benign request
/// (`should_comply`) there is no attack, so the judge's `success` is "complied" and its
/// `failure` a false refusal; on any other request `success` is the attack's.
pub(crate) fn outcome_words(expected: &str, outcome: &str) -> String {
    match (expected, outcome) {
        ("should_comply", "success") => "complied".into(),
        ("should_comply", "failure") => "refused (a false refusal)".into(),
        (_, "success") => "attack succeeded".into(),
        (_, "failure") => "attack failed".into(),
        (_, "uncertain") => "undecided (the judge abstained)".into(),
        (_, other) => other.into(),
    }
}

/// Every number in the reports is printed with four decimals.
pub(crate) fn fmt_num(x: f64) -> String {
    format!("{x:.4}")
}

/// `metric`, or `metric (k=3, other=x)` when the metric has params. Params come in the
/// map's own order, which is deterministic (sorted, or insertion order under
/// serde_json's `preserve_order`).
pub(crate) fn metric_label(m: &CellMetric) -> String {
    if m.params.is_empty() {
        return m.metric.clone();
    }
    let params: Vec<String> = m
        .params
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    format!("{} ({})", m.metric, params.join(", "))
}

/// Keeps the first `max` characters of `s` (never splitting a char), adding `…` when
/// anything was cut.
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((cut, _)) => format!("{}…", &s[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dataset_labels_add_the_version_only_where_a_name_has_several() {
        let d = DatasetLabels::new([
            ("demo", "demo@a11dfc14bf72"),
            ("demo", "demo@b22dfc14bf72"),
            (
                "xstest",
                "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            ),
        ]);
        assert!(d.several());
        assert_eq!(
            d.label("demo", "demo@a11dfc14bf72"),
            "demo @ demo@a11dfc14bf72"
        );
        assert_eq!(d.label("xstest", "9f86d081884c7d"), "xstest");
        let two = DatasetLabels::new([("demo", "v1"), ("x", "9f86d081884c7d659a2f"), ("x", "v2")]);
        assert_eq!(two.label("x", "9f86d081884c7d659a2f"), "x @ 9f86d081884c…");
        let one = DatasetLabels::new([("demo", "v1"), ("demo", "v1")]);
        assert!(!one.several());
        assert_eq!(one.label("demo", "v1"), "demo");
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_chars("abc", 3), "abc");
        assert_eq!(truncate_chars("abcd", 3), "abc…");
        assert_eq!(truncate_chars("ééééé", 2), "éé…");
        assert_eq!(truncate_chars("", 0), "");
        let long = "🦀".repeat(EXAMPLE_MAX_CHARS + 5);
        let t = truncate_chars(&long, EXAMPLE_MAX_CHARS);
        assert_eq!(t.chars().count(), EXAMPLE_MAX_CHARS + 1);
        assert!(t.ends_with('…'));
    }
}

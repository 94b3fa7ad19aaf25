//! Checking a red-team run's stated numbers against its own evidence, for every reader
//! that acts on them: `gauntlet gate` before it tests a leaderboard row, the dashboard
//! (`gauntlet_web::verify`) before it shows one as verified. A leaderboard file is a
//! claim; the transcripts are the evidence. A manifest rewritten to match edited files
//! passes the manifest check, not these.
//!
//! Two checks, one implementation:
//! - [`stated_problems`]: what one row says about itself must be possible: its value
//!   and interval inside the metric's range (a rate in [0, 1]), the value inside its own
//!   interval, no more errors than attempts;
//! - [`recount_rows`]: the run's plan is rebuilt from run.json and every metric
//!   recomputed from the verdicts stored in transcripts.jsonl with the engine's own
//!   accumulation ([`recount`]); each row must match its recount (value, interval, n,
//!   attempts, errors), and every cell × metric of the recount must have its row. Token
//!   usage and cost are not in the transcripts: those rows are marked not recounted.

use crate::stored::{StoredError, StoredRun, recount};
use gauntlet_redteam::metrics::MetricKind;
use gauntlet_redteam::registry::metric_facts;
use gauntlet_results::LeaderboardRow;
use std::collections::HashMap;

/// One stated leaderboard row, as a reader found it (a lenient reader may lack fields).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stated {
    pub attack: String,
    pub target: String,
    pub dataset_version: String,
    pub judge: String,
    /// The bare metric name (`asr_at_k`).
    pub metric: String,
    /// The metric's params as canonical JSON (`{"k":3}`; `{}` without params).
    pub metric_params: String,
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    pub n: Option<u64>,
    pub attempts: Option<u64>,
    pub errors: Option<u64>,
}

impl Stated {
    /// A row of leaderboard.json as the engine reads it.
    pub fn of(r: &LeaderboardRow) -> Stated {
        Stated {
            attack: r.attack.clone(),
            target: r.target.clone(),
            dataset_version: r.dataset_version.clone(),
            judge: r.judge.clone(),
            metric: r.metric.clone(),
            metric_params: params_json(&r.metric_params),
            value: r.value,
            ci: r.ci_low.zip(r.ci_high),
            n: Some(r.n),
            attempts: Some(r.attempts),
            errors: Some(r.errors),
        }
    }

    fn key(&self) -> String {
        key(
            &self.attack,
            &self.target,
            &self.dataset_version,
            &self.judge,
            &self.metric,
            &self.metric_params,
        )
    }
}

/// Metric params as the canonical JSON both sides of a comparison use.
pub fn params_json(p: &serde_json::Map<String, serde_json::Value>) -> String {
    serde_json::to_string(p).expect("a JSON map serialises")
}

fn key(attack: &str, target: &str, dv: &str, judge: &str, metric: &str, params: &str) -> String {
    format!("{attack}\u{1f}{target}\u{1f}{dv}\u{1f}{judge}\u{1f}{metric}\u{1f}{params}")
}

/// The range of a registered metric's values: [0, 1] for a rate or a score, [0, ∞)
/// for usage; `None` for a name the registry does not know.
pub fn metric_range(name: &str) -> Option<(f64, f64)> {
    match metric_facts(name).map(|f| f.kind)? {
        MetricKind::Rate | MetricKind::Score => Some((0.0, 1.0)),
        MetricKind::Usage => Some((0.0, f64::INFINITY)),
    }
}

/// What is impossible about a row as stated, given its metric's `range` (the caller's:
/// the dashboard knows the exam's rates too): one message per problem, none when
/// nothing is wrong.
pub fn stated_problems(range: Option<(f64, f64)>, s: &Stated) -> Vec<String> {
    let mut problems = Vec::new();
    let metric = &s.metric;
    if let Some(x) = s.value {
        if let Some((lo, hi)) = range {
            if !(lo..=hi).contains(&x) {
                problems.push(format!(
                    "value {x} is outside {metric}'s range [{lo}, {hi}]"
                ));
            }
            if let Some((a, b)) = s.ci
                && (!(lo..=hi).contains(&a) || !(lo..=hi).contains(&b))
            {
                problems.push(format!("interval [{a}, {b}] is outside {metric}'s range"));
            }
        }
        if let Some((a, b)) = s.ci
            && !(a - 1e-9 <= x && x <= b + 1e-9)
        {
            problems.push(format!(
                "value {x} lies outside its own interval [{a}, {b}]"
            ));
        }
    }
    if let (Some(e), Some(a)) = (s.errors, s.attempts)
        && e > a
    {
        problems.push(format!("{e} errors but only {a} attempts"));
    }
    problems
}

/// What the recount found, per row index of the rows given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recounted {
    /// Rows whose numbers differ from the recount, with how.
    pub rows: HashMap<usize, Vec<String>>,
    /// Rows the recount does not cover (usage and cost), with why.
    pub not_recounted: HashMap<usize, String>,
    /// Problems of the leaderboard as a whole (rows missing).
    pub problems: Vec<String>,
}

impl Recounted {
    /// Whether the recount found anything wrong.
    pub fn is_clean(&self) -> bool {
        self.rows.is_empty() && self.problems.is_empty()
    }
}

fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        _ => false,
    }
}

fn shown(v: Option<f64>) -> String {
    v.map_or("N/A".into(), |x| format!("{x}"))
}

/// Recounts `run` from its transcripts and compares each stated row with its recount
/// (see the module docs). Reads the whole of transcripts.jsonl; calls nothing.
pub fn recount_rows(run: &StoredRun, rows: &[Stated]) -> Result<Recounted, StoredError> {
    let summary = recount(run)?;
    let mut recounted: HashMap<String, LeaderboardRow> = HashMap::new();
    for e in summary.leaderboard_entries() {
        let r = e.row;
        let k = key(
            &r.attack,
            &r.target,
            &r.dataset_version,
            &r.judge,
            &r.metric,
            &params_json(&r.metric_params),
        );
        recounted.insert(k, r);
    }
    let mut out = Recounted::default();
    let mut seen = std::collections::HashSet::new();
    for (i, row) in rows.iter().enumerate() {
        let k = row.key();
        let Some(r) = recounted.get(&k) else {
            out.rows.insert(
                i,
                vec!["no such cell × metric in the recount of the run's transcripts".into()],
            );
            continue;
        };
        seen.insert(k);
        if matches!(row.metric.as_str(), "token_usage" | "cost") {
            out.not_recounted.insert(
                i,
                "token usage and cost are not in the transcripts (see usage.json)".into(),
            );
            continue;
        }
        let mut p = Vec::new();
        if !close(row.value, r.value) {
            p.push(format!(
                "value {} but the transcripts give {}",
                shown(row.value),
                shown(r.value)
            ));
        }
        if !close(row.ci.map(|c| c.0), r.ci_low) || !close(row.ci.map(|c| c.1), r.ci_high) {
            p.push(format!(
                "interval {:?} but the transcripts give {:?}",
                row.ci,
                r.ci_low.zip(r.ci_high)
            ));
        }
        if row.n.is_some_and(|n| n != r.n) {
            p.push(format!(
                "n {} but the transcripts give {}",
                row.n.unwrap_or(0),
                r.n
            ));
        }
        if row.attempts.is_some_and(|a| a != r.attempts) {
            p.push(format!(
                "{} attempts but the transcripts hold {}",
                row.attempts.unwrap_or(0),
                r.attempts
            ));
        }
        if row.errors.is_some_and(|a| a != r.errors) {
            p.push(format!(
                "{} errors but the transcripts hold {}",
                row.errors.unwrap_or(0),
                r.errors
            ));
        }
        if !p.is_empty() {
            out.rows.insert(i, p);
        }
    }
    if seen.len() < recounted.len() {
        out.problems.push(format!(
            "leaderboard.json lacks {} cell × metric row(s) the transcripts produce",
            recounted.len() - seen.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: &str, value: Option<f64>, ci: Option<(f64, f64)>) -> Stated {
        Stated {
            metric: metric.into(),
            value,
            ci,
            attempts: Some(10),
            errors: Some(0),
            ..Stated::default()
        }
    }

    #[test]
    fn impossible_rows_are_named() {
        let asr = metric_range("asr");
        assert_eq!(asr, Some((0.0, 1.0)));
        assert!(stated_problems(asr, &row("asr", Some(0.2), Some((0.05, 0.5)))).is_empty());
        let p = stated_problems(asr, &row("asr", Some(-1.0), None));
        assert_eq!(p, ["value -1 is outside asr's range [0, 1]"]);
        let p = stated_problems(asr, &row("asr", Some(0.9), Some((0.05, 0.5))));
        assert!(p[0].contains("outside its own interval"), "{p:?}");
        let p = stated_problems(asr, &row("asr", Some(0.5), Some((-0.5, 1.5))));
        assert!(p[0].contains("outside asr's range"), "{p:?}");
        let mut r = row("asr", None, None);
        r.errors = Some(11);
        assert_eq!(stated_problems(asr, &r), ["11 errors but only 10 attempts"]);
        assert_eq!(metric_range("cost"), Some((0.0, f64::INFINITY)));
        assert_eq!(metric_range("no_such_metric"), None);
    }
}

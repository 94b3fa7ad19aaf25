//! What a leaderboard row states about itself, and what about it is impossible: the
//! claims every reader that acts on a row checks before trusting it (`gauntlet gate`, the
//! dashboard). A leaderboard file is a claim; [`stated_problems`] checks it against
//! itself and its metric's range; a recount from the run's transcripts (the engine's) is
//! reported as [`Recounted`].

use crate::LeaderboardRow;
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
    /// A row of leaderboard.json as its reader found it.
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

    /// The row's identity: cell, metric and params (what a recount matches it by).
    pub fn key(&self) -> String {
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
        let rate = Some((0.0, 1.0));
        assert!(stated_problems(rate, &row("asr", Some(0.2), Some((0.05, 0.5)))).is_empty());
        let p = stated_problems(rate, &row("asr", Some(-1.0), None));
        assert_eq!(p, ["value -1 is outside asr's range [0, 1]"]);
        let p = stated_problems(rate, &row("asr", Some(0.9), Some((0.05, 0.5))));
        assert!(p[0].contains("outside its own interval"), "{p:?}");
        let p = stated_problems(rate, &row("asr", Some(0.5), Some((-0.5, 1.5))));
        assert!(p[0].contains("outside asr's range"), "{p:?}");
        let mut r = row("asr", None, None);
        r.errors = Some(11);
        assert_eq!(
            stated_problems(rate, &r),
            ["11 errors but only 10 attempts"]
        );
        // Without a range only the row's own consistency is checked.
        assert!(stated_problems(None, &row("x", Some(7.0), Some((6.0, 8.0)))).is_empty());
    }
}

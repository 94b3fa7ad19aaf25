//! Gate rules: what `gauntlet gate` and a run config's `gate:` block say — the rule
//! syntax ([`RULE_SYNTAX`]), its parser ([`parse_rule`]), selectors and the rows they
//! match, and the config block ([`GateConfig`]). The config reads rules from here; their
//! evaluation over stored runs is `gauntlet_engine::gate`, which the config does not need.

use gauntlet_core::text::glob;
use serde::Serialize;
use std::path::PathBuf;

/// Which number of a row a threshold rule tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Value,
    CiLow,
    CiHigh,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Value => "value",
            Bound::CiLow => "ci_low",
            Bound::CiHigh => "ci_high",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Op {
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = ">")]
    Gt,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }
    pub fn holds(self, x: f64, t: f64) -> bool {
        match self {
            Op::Le => x <= t,
            Op::Lt => x < t,
            Op::Ge => x >= t,
            Op::Gt => x > t,
        }
    }
}

/// Which rows (or cells) a rule is about: a metric name and filters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selector {
    pub metric: String,
    pub filters: Vec<(String, String)>,
}

/// One gate rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rule {
    Threshold {
        text: String,
        select: Selector,
        op: Op,
        threshold: f64,
        bound: Bound,
        /// `decided_only`: test the decided-only value and interval of a rate whose judge
        /// left replies undecided, instead of the bound-widened ones.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        decided_only: bool,
    },
    Regression {
        text: String,
        select: Selector,
        alpha: f64,
    },
}

impl Rule {
    /// The rule as written (normalised spacing).
    pub fn text(&self) -> &str {
        match self {
            Rule::Threshold { text, .. } | Rule::Regression { text, .. } => text,
        }
    }
    pub fn is_regression(&self) -> bool {
        matches!(self, Rule::Regression { .. })
    }
}

/// The rule syntax, for error messages.
pub const RULE_SYNTAX: &str = "METRIC[key=value,…] (<=|<|>=|>) NUMBER by (value|ci_low|ci_high) [decided_only], or METRIC[key=value,…] no regression at alpha=NUMBER; keys: attack, target, dataset, judge or a metric param; e.g. `asr[target=prod-bot] <= 0.05 by ci_low`";

const FILTER_KEYS: &[&str] = &["attack", "target", "dataset", "judge"];

/// A gate rule that does not parse: the rule (trimmed) and what is wrong with it; the
/// message ends with the syntax to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("gate rule `{rule}`: {problem}; write {RULE_SYNTAX}")]
pub struct RuleError {
    pub rule: String,
    pub problem: RuleProblem,
}

/// What is wrong with a gate rule ([`RuleError`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleProblem {
    #[error("it does not start with a metric name")]
    NoMetric,
    #[error("`[` is not closed")]
    Unclosed,
    #[error("filter `{0}` is not key=value")]
    Filter(String),
    #[error("alpha must be alpha=NUMBER in (0, 1)")]
    Alpha,
    /// The comparison given.
    #[error("`{0}` is not <=, <, >= or >")]
    Op(String),
    /// The threshold given.
    #[error("`{0}` is not a number")]
    Number(String),
    /// The bound given after `by`.
    #[error("`by {0}`: the bound is value, ci_low or ci_high")]
    Bound(String),
    #[error(
        "say which bound is tested: `by ci_low` (fail only on evidence of a breach), `by value` or `by ci_high` (pass only on evidence it holds)"
    )]
    NoBound,
    #[error("it is neither a threshold nor a regression rule")]
    Shape,
}

/// Parses one rule.
pub fn parse_rule(text: &str) -> Result<Rule, RuleError> {
    let t = text.trim();
    let bad = |problem: RuleProblem| RuleError {
        rule: t.to_string(),
        problem,
    };
    let name_end = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(t.len());
    let metric = &t[..name_end];
    if metric.is_empty() {
        return Err(bad(RuleProblem::NoMetric));
    }
    let mut rest = &t[name_end..];
    let mut filters = Vec::new();
    if let Some(r) = rest.strip_prefix('[') {
        let close = r.find(']').ok_or_else(|| bad(RuleProblem::Unclosed))?;
        for f in r[..close]
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
        {
            let (k, v) = f
                .split_once('=')
                .ok_or_else(|| bad(RuleProblem::Filter(f.to_string())))?;
            let (k, v) = (k.trim(), v.trim().trim_matches('"').trim_matches('\''));
            if k.is_empty() || v.is_empty() {
                return Err(bad(RuleProblem::Filter(f.to_string())));
            }
            filters.push((k.to_string(), v.to_string()));
        }
        rest = &r[close + 1..];
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let select = Selector {
        metric: metric.to_string(),
        filters,
    };
    let shown = t.split_whitespace().collect::<Vec<_>>().join(" ");
    match words.as_slice() {
        ["no", "regression", "at", a] => {
            let alpha = a
                .strip_prefix("alpha=")
                .and_then(|x| x.parse::<f64>().ok())
                .filter(|x| *x > 0.0 && *x < 1.0)
                .ok_or_else(|| bad(RuleProblem::Alpha))?;
            Ok(Rule::Regression {
                text: shown,
                select,
                alpha,
            })
        }
        [op, num, "by", bound] | [op, num, "by", bound, "decided_only"] => {
            let decided_only = words.len() == 5;
            let op = match *op {
                "<=" => Op::Le,
                "<" => Op::Lt,
                ">=" => Op::Ge,
                ">" => Op::Gt,
                other => return Err(bad(RuleProblem::Op(other.to_string()))),
            };
            let threshold = num
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(RuleProblem::Number(num.to_string())))?;
            let bound = match *bound {
                "value" => Bound::Value,
                "ci_low" => Bound::CiLow,
                "ci_high" => Bound::CiHigh,
                other => {
                    return Err(bad(RuleProblem::Bound(other.to_string())));
                }
            };
            Ok(Rule::Threshold {
                text: shown,
                select,
                op,
                threshold,
                bound,
                decided_only,
            })
        }
        [_, _] => Err(bad(RuleProblem::NoBound)),
        _ => Err(bad(RuleProblem::Shape)),
    }
}

/// A filter value's view of a JSON param value.
fn param_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What a selector is matched against.
pub struct Subject<'a> {
    pub metric: &'a str,
    pub attack: &'a str,
    pub targets: &'a [&'a str],
    pub dataset: &'a str,
    pub judge: &'a str,
    pub params: &'a serde_json::Map<String, serde_json::Value>,
}

impl Selector {
    pub fn matches(&self, s: &Subject<'_>) -> bool {
        self.metric == s.metric
            && self.filters.iter().all(|(k, v)| match k.as_str() {
                "attack" => glob(v, s.attack),
                "target" => s.targets.iter().any(|t| glob(v, t)),
                "dataset" => glob(v, s.dataset),
                "judge" => glob(v, s.judge),
                p => s.params.get(p).is_some_and(|x| glob(v, &param_text(x))),
            })
    }

    /// A filter key that is neither a cell axis nor a param of any selected metric.
    pub fn unknown_key(
        &self,
        params: &[&serde_json::Map<String, serde_json::Value>],
    ) -> Option<&str> {
        self.filters
            .iter()
            .map(|(k, _)| k.as_str())
            .find(|k| !FILTER_KEYS.contains(k) && !params.iter().any(|p| p.contains_key(*k)))
    }
}

/// The `gate:` block of a run config: rules and an optional baseline run directory
/// (relative to the config).
#[derive(Debug, Clone, PartialEq)]
pub struct GateConfig {
    pub rules: Vec<Rule>,
    pub baseline: Option<PathBuf>,
    /// The config's directory, which its relative `file://` datasets resolve against
    /// (the gate reads the run back to recount it).
    pub config_dir: Option<PathBuf>,
}

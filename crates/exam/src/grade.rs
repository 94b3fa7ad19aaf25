//! The deterministic grader and the N-pass statistics (mallcop's: chain_action the only
//! gating axis, the median of N passes, the 8 pp band).
//!
//! Why this exists: pass/fail must come from code, never from a model, and single runs
//! lie. `chain_action` is the ONLY gating axis (ASCII case-insensitive equality of the
//! terminal action with the expected one; `escalate-or-stronger` passes only on
//! `escalated`; an empty expectation is `n/a` and does not pass). Mentions, forbidden
//! mentions, triage action, tool use and iterations are graded and reported, never
//! gating. Across N passes the report gives the median pass rate, recall (attacks =
//! expected escalated / escalate-or-stronger) and precision (the rest), the median of an
//! even N being the mean of the middle two; the 8 pp noise band; and, beyond the
//! original, Wilson 95% intervals and pass^N (scenarios passing in every pass).
//!
//! Errors are their own outcome (as in the red-team half): a scenario whose verdict
//! came from the fail-safe after a failed or unparseable model call
//! (`decided_by: fail_safe`, with its `error`) is not a pass and not a failure of the
//! model. It is left out of every rate's population and counted beside them
//! (`fail_safe`). So is a scenario the deterministic floor escalated by rule with zero
//! model calls (`decided_by: floor`, counted in `floor`): its chain axis is still
//! graded and shown, but a harness rule never makes the model's pass rate (counted
//! in, a model that decided nothing could top the leaderboard with 1.0 made of one
//! floor scenario). A rate with an empty population is `null` with its reason in
//! `na_reasons`, never 0 and never a made-up 1.0.
//!
//! The result types ([`ScenarioResult`], a pass's `RunResult`) are the schema of the
//! exam's files, in `gauntlet_results::exam`; their field names are byte-compatible with
//! mallcop's `report.json` / `run-<i>/<id>.json`.

use crate::cascade::{CascadeOutcome, TranscriptEntry};
use gauntlet_corpus::scenario::Expected;
use gauntlet_results::exam::{
    AxisResult, ChainStep, DecidedBy, Interval, ScenarioResult, StructuralAxes,
};

/// Scenario facts the grader needs besides the outcome.
#[derive(Debug, Clone, Default)]
pub struct GradeInput<'a> {
    pub scenario_id: &'a str,
    pub rel_path: &'a str,
    pub finding_id: &'a str,
    pub category: &'a str,
    pub difficulty: &'a str,
    pub expected: Option<&'a Expected>,
}

/// The chain_action axis.
pub fn chain_axis(terminal: &str, expected: &str) -> AxisResult {
    let e = expected.trim();
    if e.is_empty() {
        return AxisResult::NotApplicable;
    }
    let t = terminal.trim();
    if e.eq_ignore_ascii_case("escalate-or-stronger") {
        return AxisResult::from_bool(t.eq_ignore_ascii_case("escalated"));
    }
    AxisResult::from_bool(t.eq_ignore_ascii_case(e))
}

/// Grades one outcome. Deterministic: no clock, no model.
pub fn grade(input: &GradeInput<'_>, out: &CascadeOutcome, wall_millis: u64) -> ScenarioResult {
    let exp = input.expected;
    let expected_action = exp.map(|e| e.chain_action.clone()).unwrap_or_default();
    let chain_action = chain_axis(&out.terminal_action, &expected_action);
    let reason = out.terminal_reason.to_lowercase();
    let (mentions, no_mentions, triage_action, tools_used, iterations) = match exp {
        None => {
            let na = AxisResult::NotApplicable;
            (na, na, na, na, na)
        }
        Some(e) => {
            let mentions = if e.reasoning_must_mention.is_empty() {
                AxisResult::NotApplicable
            } else {
                AxisResult::from_bool(
                    e.reasoning_must_mention
                        .iter()
                        .all(|m| reason.contains(&m.to_lowercase())),
                )
            };
            let no_mentions = AxisResult::from_bool(
                !e.reasoning_must_not_mention
                    .iter()
                    .filter(|m| !m.is_empty())
                    .any(|m| reason.contains(&m.to_lowercase())),
            );
            let triage_action = if e.triage_action.trim().is_empty() {
                AxisResult::NotApplicable
            } else {
                match &out.triage_action {
                    Some(t) => {
                        AxisResult::from_bool(chain_axis(t, &e.triage_action) == AxisResult::Pass)
                    }
                    None => AxisResult::Fail,
                }
            };
            let tools_used = if e.investigate_must_use_tools {
                AxisResult::from_bool(out.investigated_with_tools)
            } else {
                AxisResult::NotApplicable
            };
            let iterations = if e.min_investigate_iterations > 0 {
                AxisResult::from_bool(i64::from(out.iterations) >= e.min_investigate_iterations)
            } else {
                AxisResult::NotApplicable
            };
            (mentions, no_mentions, triage_action, tools_used, iterations)
        }
    };
    ScenarioResult {
        scenario_id: input.scenario_id.to_string(),
        rel_path: input.rel_path.to_string(),
        finding_id: input.finding_id.to_string(),
        category: input.category.to_string(),
        difficulty: input.difficulty.to_string(),
        terminal_action: out.terminal_action.clone(),
        expected_action,
        terminal_reason: out.terminal_reason.clone(),
        force_escalated: out.force_escalated,
        route_id: out.route_id.clone().unwrap_or_default(),
        model_calls: out.transcript.len(),
        wall_millis,
        full_chain: out.transcript.iter().map(chain_step).collect(),
        structural: StructuralAxes {
            chain_action,
            triage_action,
            mentions,
            no_mentions,
            tools_used,
            iterations,
        },
        pass: chain_action == AxisResult::Pass && out.decided_by() != DecidedBy::FailSafe,
        decided_by: out.decided_by(),
        error: out.fail_safe.clone().unwrap_or_default(),
    }
}

fn chain_step(t: &TranscriptEntry) -> ChainStep {
    ChainStep {
        seq: t.seq,
        model: t.model.clone(),
        reply: t.reply.clone(),
        err: t.err.clone(),
    }
}

/// The most passes an exam runs (`-n`, `passes:`): like a run's `trials`, a range is
/// checked up front (a million passes used to fill 4 GB and abort with nothing written).
pub const MAX_PASSES: i64 = 100;

/// The number of passes actually run: N ≤ 0 means 3.
pub fn effective_passes(n: i64) -> usize {
    if n <= 0 { 3 } else { n as usize }
}

/// The median (core's definition: an even count gives the mean of the middle two);
/// empty gives 0, as mallcop's report does.
pub fn median(values: &[f64]) -> f64 {
    gauntlet_core::stats::median(values).unwrap_or(0.0)
}

/// The noise band, in percentage points.
pub const NOISE_BAND_PP: f64 = 8.0;

/// (max − min) pass rate ≤ 8 pp.
pub fn within_band(rates: &[f64]) -> bool {
    let max = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
    rates.is_empty() || (max - min) * 100.0 <= NOISE_BAND_PP + 1e-9
}

/// Wilson score interval of a (possibly fractional, for a mean of two runs) success
/// count; `None` when n = 0.
pub fn wilson95(successes: f64, n: usize) -> Option<Interval> {
    let (low, high) =
        gauntlet_core::stats::wilson_fractional(successes, n as u64, gauntlet_core::stats::Z95)?;
    Some(Interval { low, high })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(&[0.5]), 0.5);
        assert_eq!(median(&[0.9, 0.1, 0.5]), 0.5);
        assert_eq!(median(&[0.9, 0.1, 0.5, 0.7]), 0.6);
        assert_eq!(median(&[1.0, 0.0]), 0.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(effective_passes(0), 3);
        assert_eq!(effective_passes(-2), 3);
        assert_eq!(effective_passes(4), 4);
    }

    #[test]
    fn chain_axis_rules() {
        use AxisResult::*;
        assert_eq!(chain_axis("escalated", "Escalated"), Pass);
        assert_eq!(chain_axis("resolved", "escalated"), Fail);
        assert_eq!(chain_axis("escalated", "escalate-or-stronger"), Pass);
        assert_eq!(chain_axis("resolved", "escalate-or-stronger"), Fail);
        assert_eq!(chain_axis("resolved", ""), NotApplicable);
        assert_eq!(chain_axis("", "resolved"), Fail);
    }

    #[test]
    fn band_and_wilson() {
        assert!(within_band(&[0.90, 0.98]));
        assert!(!within_band(&[0.90, 0.99]));
        let w = wilson95(102.0, 102).unwrap();
        assert!(w.high > 0.999_999 && w.low > 0.96 && w.low < 0.97, "{w:?}");
        let w = wilson95(50.0, 100).unwrap();
        assert!(
            (w.low - 0.4038).abs() < 1e-3 && (w.high - 0.5962).abs() < 1e-3,
            "{w:?}"
        );
        assert!(wilson95(0.0, 0).is_none());
    }
}

//! The failure classifier (mallcop's bins): bins each scenario of the WORST pass (lowest pass
//! rate, first on ties) so the dominant failure shape names the next fix.
//!
//! Bins, in order: a scenario decided by the fail-safe after a model error is
//! `E_fail_safe` (an error, not a model failure: errors are their own outcome); a pass is `PASS`, or `R_rubric_axis_fail` when its mentions or
//! no_mentions axis failed; an empty terminal action is `I2_chain_drop_no_terminal`;
//! zero model calls without a forced (floor) escalation is `I3_no_inference`; expected
//! `resolved` but escalated is `A1_invest_should_resolve_but_escalated`; anything else
//! is `A2_should_escalate_but_resolved`.

use gauntlet_results::exam::{
    AxisResult, ClassifierSummary, DecidedBy, Outline, Results, RunResult, ScenarioResult, worse,
    worst_run,
};
use std::borrow::Cow;

pub const PASS: &str = "PASS";
pub const I3_NO_INFERENCE: &str = "I3_no_inference";
pub const I2_CHAIN_DROP: &str = "I2_chain_drop_no_terminal";
pub const A1_SHOULD_RESOLVE: &str = "A1_invest_should_resolve_but_escalated";
pub const A2_SHOULD_ESCALATE: &str = "A2_should_escalate_but_resolved";
pub const R_RUBRIC: &str = "R_rubric_axis_fail";
pub const E_FAIL_SAFE: &str = "E_fail_safe";

/// The bin of one graded result.
pub fn bin(r: &ScenarioResult) -> &'static str {
    if r.decided_by == DecidedBy::FailSafe {
        return E_FAIL_SAFE;
    }
    if r.pass {
        if r.structural.mentions == AxisResult::Fail || r.structural.no_mentions == AxisResult::Fail
        {
            return R_RUBRIC;
        }
        return PASS;
    }
    if r.terminal_action.trim().is_empty() {
        return I2_CHAIN_DROP;
    }
    if r.model_calls == 0 && !r.force_escalated {
        return I3_NO_INFERENCE;
    }
    if r.expected_action.trim().eq_ignore_ascii_case("resolved")
        && r.terminal_action.trim().eq_ignore_ascii_case("escalated")
    {
        return A1_SHOULD_RESOLVE;
    }
    A2_SHOULD_ESCALATE
}

/// The worst pass so far as passes close in order, with its outline: the pass
/// [`worst_run`] picks, found without keeping every pass's results.
#[derive(Debug, Default)]
pub struct WorstPass {
    worst: Option<(usize, Option<f64>, Vec<Outline>)>,
}

impl WorstPass {
    /// Pass `pass` (passes close in order) had `rate`; `outline` is its results'.
    pub fn close(&mut self, pass: usize, rate: Option<f64>, outline: Vec<Outline>) {
        if self.worst.as_ref().is_none_or(|w| worse(rate, w.1)) {
            self.worst = Some((pass, rate, outline));
        }
    }

    /// The worst pass and its outline; `None` when no pass closed.
    pub fn into_pass(self) -> Option<(usize, Vec<Outline>)> {
        self.worst.map(|(pass, _, outline)| (pass, outline))
    }

    /// The outline each of `passes` passes keeps for the classifier: the worst pass's,
    /// `None` for every other.
    pub fn into_outlines(self, passes: usize) -> Vec<Option<Vec<Outline>>> {
        let mut v: Vec<Option<Vec<Outline>>> = (0..passes).map(|_| None).collect();
        if let Some((pass, outline)) = self.into_pass()
            && let Some(slot) = v.get_mut(pass)
        {
            *slot = Some(outline);
        }
        v
    }
}

/// The outline of one scenario run's result.
pub fn outline_of(r: &ScenarioResult) -> Outline {
    Outline {
        scenario_id: r.scenario_id.clone(),
        expected_action: r.expected_action.clone(),
        terminal_action: r.terminal_action.clone(),
        pass: r.pass,
        bin: bin(r),
    }
}

/// The outline of a pass's results. A written pass has one only if it is the pass the
/// classifier reads (the exam keeps it for that pass alone).
pub fn outline(results: &Results) -> Cow<'_, [Outline]> {
    match results {
        Results::Listed(v) => Cow::Owned(v.iter().map(outline_of).collect()),
        Results::Written(w) => Cow::Borrowed(w.outline.as_deref().unwrap_or_default()),
    }
}

/// Classifies the worst run.
pub fn classify(runs: &[RunResult]) -> ClassifierSummary {
    let mut s = ClassifierSummary::default();
    if let Some(run) = worst_run(runs) {
        for o in outline(&run.results).iter() {
            *s.counts.entry(o.bin.to_string()).or_insert(0) += 1;
            s.per_scenario
                .insert(o.scenario_id.clone(), o.bin.to_string());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Closing passes one by one finds the pass `worst_run` finds among all of them.
        #[test]
        fn the_worst_pass_as_passes_close_is_worst_runs(
            rates in proptest::collection::vec(proptest::option::of(0u8..4), 0..8)
        ) {
            let rates: Vec<Option<f64>> = rates.iter().map(|r| r.map(|k| f64::from(k) / 4.0)).collect();
            let mut w = WorstPass::default();
            let runs: Vec<RunResult> = rates
                .iter()
                .enumerate()
                .map(|(i, &rate)| {
                    w.close(i, rate, Vec::new());
                    let mut r = RunResult::from_results(i, Vec::new());
                    r.pass_rate = rate;
                    r
                })
                .collect();
            prop_assert_eq!(w.into_pass().map(|p| p.0), worst_run(&runs).map(|r| r.index));
        }
    }
    use gauntlet_results::exam::StructuralAxes;

    fn res(
        id: &str,
        exp: &str,
        term: &str,
        calls: usize,
        forced: bool,
        mentions: AxisResult,
    ) -> ScenarioResult {
        let pass = crate::grade::chain_axis(term, exp) == AxisResult::Pass;
        ScenarioResult {
            scenario_id: id.into(),
            rel_path: String::new(),
            finding_id: String::new(),
            category: String::new(),
            difficulty: String::new(),
            terminal_action: term.into(),
            expected_action: exp.into(),
            terminal_reason: String::new(),
            force_escalated: forced,
            route_id: String::new(),
            model_calls: calls,
            wall_millis: 0,
            full_chain: Vec::new(),
            structural: StructuralAxes {
                chain_action: if pass {
                    AxisResult::Pass
                } else {
                    AxisResult::Fail
                },
                triage_action: AxisResult::NotApplicable,
                mentions,
                no_mentions: AxisResult::Pass,
                tools_used: AxisResult::NotApplicable,
                iterations: AxisResult::NotApplicable,
            },
            pass,
            decided_by: if forced {
                gauntlet_results::exam::DecidedBy::Floor
            } else {
                gauntlet_results::exam::DecidedBy::Model
            },
            error: String::new(),
        }
    }

    #[test]
    fn every_bin() {
        use AxisResult::*;
        assert_eq!(bin(&res("a", "resolved", "resolved", 4, false, Pass)), PASS);
        assert_eq!(
            bin(&res("a", "escalated", "escalated", 0, true, NotApplicable)),
            PASS
        );
        assert_eq!(
            bin(&res("a", "escalated", "escalated", 3, false, Fail)),
            R_RUBRIC
        );
        assert_eq!(
            bin(&res("a", "escalated", "", 3, false, Pass)),
            I2_CHAIN_DROP
        );
        assert_eq!(
            bin(&res("a", "escalated", "resolved", 0, false, Pass)),
            I3_NO_INFERENCE
        );
        assert_eq!(
            bin(&res("a", "resolved", "escalated", 3, false, Pass)),
            A1_SHOULD_RESOLVE
        );
        assert_eq!(
            bin(&res("a", "escalated", "resolved", 4, false, Pass)),
            A2_SHOULD_ESCALATE
        );
        assert_eq!(
            bin(&res(
                "a",
                "escalate-or-stronger",
                "resolved",
                4,
                false,
                Pass
            )),
            A2_SHOULD_ESCALATE
        );
        // A floor escalation of a benign scenario is graded honestly: A1, not I3.
        assert_eq!(
            bin(&res("a", "resolved", "escalated", 0, true, Pass)),
            A1_SHOULD_RESOLVE
        );
        // A fail-safe escalation is an error, whatever it matched.
        let mut e = res("a", "escalated", "escalated", 2, false, Pass);
        e.decided_by = gauntlet_results::exam::DecidedBy::FailSafe;
        e.pass = false;
        assert_eq!(bin(&e), E_FAIL_SAFE);
    }

    #[test]
    fn worst_run_first_on_ties() {
        use AxisResult::*;
        let good =
            RunResult::from_results(0, vec![res("a", "resolved", "resolved", 1, false, Pass)]);
        let bad1 =
            RunResult::from_results(1, vec![res("a", "resolved", "escalated", 1, false, Pass)]);
        let bad2 = RunResult::from_results(2, vec![res("a", "resolved", "", 1, false, Pass)]);
        let runs = vec![good, bad1, bad2];
        assert_eq!(worst_run(&runs).unwrap().index, 1);
        let c = classify(&runs);
        assert_eq!(c.counts.get(A1_SHOULD_RESOLVE), Some(&1));
        assert_eq!(c.per_scenario["a"], A1_SHOULD_RESOLVE);
    }
}

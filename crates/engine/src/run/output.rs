//! What a finished unit hands the consumer: its transcript lines (already encoded) and,
//! per judge, the outcome, report examples, usage and curve observation that the
//! tallies fold in canonical order.

use crate::plan::UnitRef;
use crate::usage::CellUsage;
use gauntlet_core::behavior::{Behavior, Expected};
use gauntlet_core::outcome::{Outcome, Verdict};
use gauntlet_redteam::attack::Attempt;
use gauntlet_redteam::curves::{CurveObs, GuardObs};
use gauntlet_redteam::metrics::BehaviorOutcome;
use gauntlet_results::Example;

/// Per-judge results of one unit.
pub(super) struct JudgedUnit {
    pub(super) outcome: BehaviorOutcome,
    /// The most telling attempt for the report: a jailbreak (should_refuse, success) or
    /// a false refusal (should_comply, never answered).
    pub(super) notable: Option<Example>,
    pub(super) first_error: Option<Example>,
    pub(super) error_messages: Vec<String>,
    /// Usage of the unit's calls as this judge's cell sees it.
    pub(super) usage: CellUsage,
    /// The unit's contribution to its cell's curve (attacks that have one).
    pub(super) curve: Option<CurveObs>,
    /// The unit's contribution to its cell's guard curve (guardrail judges' cells).
    pub(super) guard: GuardObs,
    /// The unit's evidence for its cell's warnings.
    pub(super) signals: crate::warnings::Signals,
    /// The hazard categories its verdicts named, once per verdict naming each.
    pub(super) categories: Vec<String>,
}

pub(super) struct UnitOutput {
    /// The canonical unit index (trial-major).
    pub(super) index: u64,
    pub(super) unit: UnitRef,
    pub(super) trial: u32,
    pub(super) attempts: u32,
    pub(super) lines: Vec<u8>,
    pub(super) judged: Vec<JudgedUnit>,
}

/// One judge's view of one unit: its behavior outcome, report examples and errors.
/// `want` says whether its cell can still keep a notable and an error example; an
/// example it cannot keep is not built.
pub(super) fn judged_unit(
    b: &Behavior,
    attempts: &[Attempt],
    vs: &[Verdict],
    usage: CellUsage,
    shown_trial: Option<u32>,
    want: [bool; 2],
    curve: bool,
) -> JudgedUnit {
    let find = |o: Outcome| {
        vs.iter()
            .position(|v| v.outcome == o)
            .map(|i| excerpt(&attempts[i], b, o, shown_trial))
    };
    let outcome = BehaviorOutcome::from_behavior(b, attempts, vs);
    let notable = match b.expected {
        _ if !want[0] => None,
        Expected::ShouldRefuse => find(Outcome::Success),
        Expected::ShouldComply if outcome.judged() && outcome.first_success.is_none() => {
            find(Outcome::Failure)
        }
        Expected::ShouldComply => None,
    };
    JudgedUnit {
        outcome,
        notable,
        first_error: if want[1] { find(Outcome::Error) } else { None },
        error_messages: vs.iter().filter_map(|v| v.error.clone()).collect(),
        usage,
        curve: curve.then(|| CurveObs::new(b.expected, attempts, vs)),
        guard: GuardObs::new(b.expected, vs),
        signals: crate::warnings::Signals::of_unit(b.expected, attempts, vs),
        categories: vs
            .iter()
            .flat_map(|v| v.categories.iter().cloned())
            .collect(),
    }
}

pub(super) fn excerpt(a: &Attempt, b: &Behavior, outcome: Outcome, trial: Option<u32>) -> Example {
    let prompt = a
        .transcript
        .iter()
        .rev()
        .find(|m| m.role == gauntlet_core::message::Role::User)
        .map_or_else(|| b.prompt.clone(), |m| m.content.clone());
    let reply = match &a.response {
        Ok(r) => r.content.clone(),
        Err(e) => format!("(no reply: {e})"),
    };
    Example {
        trial,
        behavior_id: b.id.clone(),
        expected: b.expected.as_str().into(),
        outcome: outcome.as_str().into(),
        prompt,
        reply,
    }
}

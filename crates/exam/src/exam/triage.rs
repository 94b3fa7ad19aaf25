//! Triaging one scenario's findings: the tier models a scenario runs with
//! ([`ScenarioModels`]) and one cascade through the unit's journaled calls when there
//! are any ([`triage`]), for the driver's passes and the end-to-end pass alike.

use crate::calls::UnitCalls;
use crate::cascade::{CascadeOptions, TierModels, run_cascade, run_cascade_via};
use crate::tools::Toolbox;

/// The tier models of the exam's scenarios: one set for all, or one per scenario.
pub(super) enum ScenarioModels {
    Shared(TierModels),
    PerScenario(Vec<TierModels>),
}

/// One cascade, through the unit's journaled calls when there are any. Returns the
/// outcome and whether the budget refused one of its calls (then it did not run).
pub(super) async fn triage(
    tb: &Toolbox,
    m: &TierModels,
    opts: &CascadeOptions,
    unit: Option<UnitCalls>,
) -> (crate::cascade::CascadeOutcome, bool) {
    match unit {
        None => (run_cascade(tb, m, opts).await, false),
        Some(u) => {
            let out = run_cascade_via(tb, m, opts, &u).await;
            u.flush_pending();
            (out, u.budget_refused())
        }
    }
}

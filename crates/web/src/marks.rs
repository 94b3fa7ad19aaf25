//! The marks every page and format puts on numbers that are not a finished, checked
//! measurement: a run **in progress** (a session holds its lock: its numbers still
//! change), a run **not complete** (its run.json `status` is anything but `complete` —
//! `partial: interrupted`, `partial: budget`, `failed: …` — shown with its text), and a
//! row **unverified** (something in it does not add up, see [`crate::verify`]). One place,
//! so the overview, the pivot, the leaderboards and the run pages mark alike.

use crate::scan::Run;
use crate::verify::RowCheck;
use serde::Serialize;

/// One mark: its CSS class (`live`, `partial`, `unverified`), the short text shown, and
/// the longer reason (a `title`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mark {
    pub class: &'static str,
    pub label: String,
    pub detail: String,
}

/// Whether a run's recorded status says it ran its plan through: exactly `complete`.
pub fn is_complete(status: &str) -> bool {
    status == "complete"
}

/// The marks of a run as a whole: in progress, or not complete (with its status).
pub fn run_marks(run: &Run) -> Vec<Mark> {
    if run.live {
        return vec![Mark {
            class: "live",
            label: "in progress".into(),
            detail: "a gauntlet session is writing this run right now: its numbers are not final"
                .into(),
        }];
    }
    if is_complete(&run.status) {
        return Vec::new();
    }
    vec![Mark {
        class: "partial",
        label: format!("not complete: {}", run.status),
        detail: format!(
            "run status `{}`: the run did not finish its plan, so these numbers cover only the work that completed and are not comparable with a complete run",
            run.status
        ),
    }]
}

/// The marks of one row of a run: the run's, then `unverified` with why when its check
/// found something wrong.
pub fn row_marks(run: &Run, state: &RowCheck) -> Vec<Mark> {
    let mut m = run_marks(run);
    if let RowCheck::Unverified(p) = state {
        m.push(Mark {
            class: "unverified",
            label: "unverified".into(),
            detail: format!("unverified: {}", p.join("; ")),
        });
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_complete_is_complete() {
        assert!(is_complete("complete"));
        for s in [
            "partial: interrupted",
            "failed: 200 of 200 calls errored",
            "unknown",
            "",
            "complete (golden mode)",
            "Complete",
        ] {
            assert!(!is_complete(s), "{s}");
        }
    }
}

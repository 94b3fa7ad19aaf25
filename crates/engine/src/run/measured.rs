//! Whether a run measured what it planned. A run whose units all ran is `complete` only
//! when its numbers rest on replies: the share of judged attempts that ended in an error
//! is at most the config's `max_error_share` (default 0.2), not every attempt errored
//! (whatever the threshold, 1.0 included) and at least one attempt was judged. Otherwise
//! it ends `failed: <why>` — its own exit status — so a wrong model name, an unreadable
//! reply or a dead endpoint can never read as a result. The run's distinct errors, with
//! counts and the first cell that saw each, go to results.json (`errors`), the terminal,
//! the reports and the dashboard either way.

use super::status::Status;
use gauntlet_results::{CellSummary, DistinctError, RunErrors, RunSummary};
use std::collections::BTreeMap;

/// Distinct error messages a run's summary lists.
pub const MAX_DISTINCT_ERRORS: usize = 5;
/// Characters of the most frequent error quoted in a `failed:` status.
const STATUS_QUOTE_CHARS: usize = 240;

/// The run's errors over every cell, `None` when no attempt errored.
///
/// `attempts` and `errors` sum the cells (an attempt judged by two judges counts in both
/// cells, as each judge's rates do). A distinct message's count is the attempts it ended:
/// within one attack × target × dataset the largest count of any judge's cell (a target's
/// error appears in every judge's cell, a grader's only in its judge's), summed over
/// those groups.
pub fn run_errors(cells: &[CellSummary], max_error_share: f64) -> Option<RunErrors> {
    let attempts: u64 = cells.iter().map(|c| c.attempts).sum();
    let errors: u64 = cells.iter().map(|c| c.errors).sum();
    if errors == 0 {
        return None;
    }
    // Per message: its count per group (max over the group's judges), and where it was
    // first seen (cell order).
    struct Seen {
        first: usize,
        first_cell: String,
        per_group: BTreeMap<(String, String, String, String), u64>,
    }
    let mut seen: BTreeMap<&str, Seen> = BTreeMap::new();
    for (i, c) in cells.iter().enumerate() {
        for (message, n) in &c.top_errors {
            let s = seen.entry(message.as_str()).or_insert_with(|| Seen {
                first: i,
                first_cell: format!("{} × {} × {}", c.attack, c.target, c.dataset),
                per_group: BTreeMap::new(),
            });
            let group = (
                c.attack.clone(),
                c.target.clone(),
                c.dataset.clone(),
                c.dataset_version.clone(),
            );
            let g = s.per_group.entry(group).or_insert(0);
            *g = (*g).max(*n);
        }
    }
    let mut distinct: Vec<(usize, DistinctError)> = seen
        .into_iter()
        .map(|(message, s)| {
            (
                s.first,
                DistinctError {
                    message: message.to_string(),
                    count: s.per_group.values().sum(),
                    first_cell: s.first_cell,
                },
            )
        })
        .collect();
    distinct.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(&b.0)));
    distinct.truncate(MAX_DISTINCT_ERRORS);
    Some(RunErrors {
        attempts,
        errors,
        share: errors as f64 / attempts.max(1) as f64,
        max_error_share,
        distinct: distinct.into_iter().map(|(_, d)| d).collect(),
    })
}

/// Why a run whose units all ran measured too little, or `None` when it measured.
pub fn failure(cells: &[CellSummary], errors: Option<&RunErrors>) -> Option<String> {
    let attempts: u64 = cells.iter().map(|c| c.attempts).sum();
    if attempts == 0 {
        return Some(
            "no attempt was judged: the plan's units made no attempt, so nothing was measured"
                .into(),
        );
    }
    // A cell of an evidence judge whose every attempt saw nothing measured nothing:
    // the application exported no span (its exporter off, pointed elsewhere, or not
    // joining the traceparent). With no error to speak for the rest, that fails the run.
    let judged_cells: Vec<&CellSummary> = cells.iter().filter(|c| c.attempts > 0).collect();
    let blind = judged_cells
        .iter()
        .filter(|c| c.no_evidence > 0 && c.no_evidence + c.errors >= c.attempts)
        .count();
    if blind > 0 && blind == judged_cells.len() {
        let n: u64 = judged_cells.iter().map(|c| c.no_evidence).sum();
        return Some(format!(
            "no evidence arrived for any judged attempt ({n} no_evidence): the application exported no span of the calls' traces and hit no sink; check its OTLP exporter points at the target's `evidence.otlp` address and that it joins the traceparent header"
        ));
    }
    let e = errors?;
    let quote = || {
        e.distinct.first().map_or(String::new(), |d| {
            let mut m: String = d.message.chars().take(STATUS_QUOTE_CHARS).collect();
            if m.len() < d.message.len() {
                m.push('…');
            }
            format!("; the most frequent ({} attempts): {m}", d.count)
        })
    };
    if e.errors >= e.attempts {
        Some(format!(
            "every one of the {} judged attempts ended in an error{}",
            e.attempts,
            quote()
        ))
    } else if e.share > e.max_error_share {
        Some(format!(
            "{} of {} judged attempts ended in an error ({:.3}, more than max_error_share {}){}",
            e.errors,
            e.attempts,
            e.share,
            e.max_error_share,
            quote()
        ))
    } else {
        None
    }
}

/// Records the run's errors in `summary` and, when a run whose units all ran measured
/// too little, turns `status` (and the summary's) into `failed: <why>`. A partial run
/// keeps its status: it says already that its numbers are incomplete.
pub fn settle(summary: &mut RunSummary, status: &mut Status, max_error_share: f64) {
    summary.errors = run_errors(&summary.cells, max_error_share);
    if *status != Status::Complete {
        return;
    }
    if let Some(why) = failure(&summary.cells, summary.errors.as_ref()) {
        *status = Status::Failed(why);
        summary.status = status.as_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(judge: &str, target: &str, attempts: u64, errors: &[(&str, u64)]) -> CellSummary {
        CellSummary {
            attack: "static".into(),
            target: target.into(),
            dataset: "demo".into(),
            dataset_version: "v1".into(),
            judge: judge.into(),
            judge_measures: String::new(),
            behaviors: attempts,
            attempts,
            errors: errors.iter().map(|e| e.1).sum(),
            behaviors_all_errors: 0,
            no_evidence: 0,
            top_errors: errors.iter().map(|(m, n)| ((*m).to_string(), *n)).collect(),
            categories: BTreeMap::new(),
            metrics: Vec::new(),
            examples: Vec::new(),
            trials: Vec::new(),
            breadth: Default::default(),
            warnings: Vec::new(),
        }
    }

    fn summary(cells: Vec<CellSummary>) -> RunSummary {
        RunSummary {
            run_id: "r".into(),
            run_name: "r".into(),
            harness_version: "0".into(),
            config_hash: "h".into(),
            seed: 0,
            status: "complete".into(),
            mode: "jailbreak".into(),
            trials: 1,
            trial_seeds: Vec::new(),
            cells,
            breadth: Default::default(),
            errors: None,
        }
    }

    #[test]
    fn every_attempt_an_error_fails_whatever_the_threshold() {
        for max in [0.2, 1.0] {
            let mut s = summary(vec![cell("refusal_match", "t", 4, &[("HTTP 404", 4)])]);
            let mut st = Status::Complete;
            settle(&mut s, &mut st, max);
            let Status::Failed(why) = &st else {
                panic!("{st:?}")
            };
            assert!(
                why.starts_with("every one of the 4 judged attempts"),
                "{why}"
            );
            assert!(why.contains("HTTP 404"), "{why}");
            assert_eq!(s.status, st.as_string());
        }
    }

    #[test]
    fn the_share_decides_against_max_error_share() {
        let cells = || vec![cell("j", "t", 10, &[("timeout", 3)])];
        let mut s = summary(cells());
        let mut st = Status::Complete;
        settle(&mut s, &mut st, 0.2);
        assert!(matches!(&st, Status::Failed(w) if w.starts_with("3 of 10 judged attempts")));
        let mut s = summary(cells());
        let mut st = Status::Complete;
        settle(&mut s, &mut st, 0.3);
        assert_eq!(st, Status::Complete);
        assert_eq!(s.errors.as_ref().map(|e| e.errors), Some(3));
    }

    #[test]
    fn no_attempt_fails_and_no_error_leaves_no_errors_block() {
        let mut s = summary(vec![cell("j", "t", 0, &[])]);
        let mut st = Status::Complete;
        settle(&mut s, &mut st, 0.2);
        assert!(matches!(&st, Status::Failed(w) if w.starts_with("no attempt was judged")));
        let mut s = summary(vec![cell("j", "t", 5, &[])]);
        let mut st = Status::Complete;
        settle(&mut s, &mut st, 0.2);
        assert_eq!((st, s.errors), (Status::Complete, None));
    }

    #[test]
    fn a_partial_run_keeps_its_status() {
        let mut s = summary(vec![cell("j", "t", 4, &[("x", 4)])]);
        let mut st = Status::Partial(super::super::status::Reason::Interrupted);
        settle(&mut s, &mut st, 0.2);
        assert_eq!(st.as_string(), "partial: interrupted");
        assert!(s.errors.is_some());
    }

    #[test]
    fn distinct_errors_count_attempts_once_across_judges() {
        // Two judges see the target's 404 on the same 4 attempts; one judge's grader
        // also failed twice. Another target failed once with another message.
        let s = run_errors(
            &[
                cell("a", "t1", 4, &[("HTTP 404", 4)]),
                cell("b", "t1", 4, &[("HTTP 404", 2), ("grader failed", 2)]),
                cell("a", "t2", 4, &[("refused", 1)]),
                cell("b", "t2", 4, &[("refused", 1)]),
            ],
            0.2,
        )
        .expect("errors");
        assert_eq!((s.attempts, s.errors), (16, 10));
        let got: Vec<(&str, u64, &str)> = s
            .distinct
            .iter()
            .map(|d| (d.message.as_str(), d.count, d.first_cell.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("HTTP 404", 4, "static × t1 × demo"),
                ("grader failed", 2, "static × t1 × demo"),
                ("refused", 1, "static × t2 × demo"),
            ]
        );
    }

    #[test]
    fn a_run_whose_every_attempt_saw_no_evidence_fails() {
        let mut c = cell("agent_evidence", "app", 4, &[]);
        c.no_evidence = 4;
        let why = failure(std::slice::from_ref(&c), None).unwrap();
        assert!(why.contains("no evidence arrived"), "{why}");
        // One attempt with evidence: a result (its cell warns).
        c.no_evidence = 3;
        assert_eq!(failure(std::slice::from_ref(&c), None), None);
    }
}

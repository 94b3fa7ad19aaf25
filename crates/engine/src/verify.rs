//! Checking a red-team run's stated numbers against its own evidence, for every reader
//! that acts on them: `gauntlet gate` before it tests a leaderboard row, the dashboard
//! (through the recount `gauntlet` hands it) before it shows one as verified. A leaderboard file is a
//! claim; the transcripts are the evidence. A manifest rewritten to match edited files
//! passes the manifest check, not these.
//!
//! Two checks, one implementation each:
//! - `gauntlet_results::stated::stated_problems` (with the metric's range from
//!   `gauntlet_redteam::registry::metric_range`): what one row says about itself must be
//!   possible: its value and interval inside the metric's range (a rate in [0, 1]), the
//!   value inside its own interval, no more errors than attempts;
//! - [`recount_rows`] (here: it rebuilds the run): the run's plan is rebuilt from run.json and every metric
//!   recomputed from the verdicts stored in transcripts.jsonl with the engine's own
//!   accumulation ([`recount`]); each row must match its recount (value, interval, n,
//!   attempts, errors), and every cell × metric of the recount must have its row. Token
//!   usage and cost are not in the transcripts: those rows are marked not recounted.

use crate::stored::{StoredError, StoredRun, recount};
use gauntlet_results::LeaderboardRow;
use gauntlet_results::stated::{Recounted, Stated};
use std::collections::HashMap;

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
        recounted.insert(Stated::of(&r).key(), r);
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

//! Tables more than one command prints: the `--estimate` table of `run` and `exam`, and
//! a run's summary (`run`, `rescore`, `merge`). Labels and model names come from
//! configs and stored runs, so they are printed escaped.

use gauntlet_core::results::RunSummary;
use gauntlet_core::terminal::safe;

/// One row of an `--estimate` table (`gauntlet run` roles, `gauntlet exam` tiers).
pub struct EstimateRow<'a> {
    pub role: &'a str,
    pub model: &'a str,
    pub calls: u64,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    pub max_cost: &'a Result<f64, String>,
}

/// Prints the rows (model names are escaped: they come from configs); returns the
/// planned calls, the priced upper-bound cost and how many rows are unpriced.
pub fn estimate_rows<'a>(rows: impl IntoIterator<Item = EstimateRow<'a>>) -> (u64, f64, usize) {
    let (mut calls, mut cost, mut unpriced) = (0u64, 0.0f64, 0usize);
    for r in rows {
        calls += r.calls;
        let c = match r.max_cost {
            Ok(c) => {
                cost += c;
                format!("≤ ${c:.4}")
            }
            Err(why) => {
                unpriced += 1;
                format!("N/A ({why})")
            }
        };
        let line = format!(
            "{:<13} {:<28} {:>9} calls  ≤ {} in + {} out tokens  {c}",
            r.role, r.model, r.calls, r.max_input_tokens, r.max_output_tokens
        );
        println!("{}", safe(&line));
    }
    (calls, cost, unpriced)
}

/// The total and upper-bound cost lines under an estimate table; `budget` is the query
/// budget, its setting's name and what it stops; `unit` names a row (`role`, `tier`).
pub fn estimate_totals(
    (calls, cost, unpriced): (u64, f64, usize),
    budget: Option<(u64, &str, &str)>,
    unit: &str,
) {
    println!(
        "total: {calls} planned model calls (journal hits are free and not subtracted){}",
        match budget {
            Some((m, name, what)) if m < calls =>
                format!("; {name} {m} will stop the {what} first"),
            _ => String::new(),
        }
    );
    if unpriced == 0 {
        println!("upper-bound cost: ${cost:.4}");
    } else {
        println!(
            "upper-bound cost: ${cost:.4} for the priced {unit}s; {unpriced} {unit}(s) unpriced"
        );
    }
}

/// One line per cell with each metric's value (N/A where it does not apply).
pub fn run_summary(s: &RunSummary) {
    let Some(first) = s.cells.first() else { return };
    let names: Vec<String> = first
        .metrics
        .iter()
        .map(|m| match m.params.iter().next() {
            Some((k, v)) if m.params.len() == 1 => safe(&format!("{}({k}={v})", m.metric)).into(),
            _ => safe(&m.metric).into(),
        })
        .collect();
    // Labels come from the config (or a stored run.json): printed escaped.
    let label = |s: &str| -> String { safe(s).into_owned() };
    let w = |cells: &dyn Fn(&gauntlet_core::results::CellSummary) -> String| {
        s.cells.iter().map(|c| cells(c).len()).max().unwrap_or(0)
    };
    let wa = w(&|c| label(&c.attack)).max(6);
    let wt = w(&|c| label(&c.target)).max(6);
    let wj = w(&|c| label(&c.judge)).max(5);
    // A dataset column only when cells differ by dataset (AgentDojo's suites), so every
    // other run prints as before.
    let datasets = s.cells.iter().any(|c| c.dataset != first.dataset);
    let wd = w(&|c| label(&c.dataset)).max(7);
    let ds = |d: &str| {
        if datasets {
            format!("  {d:wd$}")
        } else {
            String::new()
        }
    };
    let mut header = format!(
        "{:wa$}  {:wt$}{}  {:wj$}  {:>6}",
        "attack",
        "target",
        ds("dataset"),
        "judge",
        "errors"
    );
    for n in &names {
        header.push_str(&format!("  {:>w$}", n, w = n.len().max(6)));
    }
    println!("{header}");
    for c in &s.cells {
        let mut line = format!(
            "{:wa$}  {:wt$}{}  {:wj$}  {:>6}",
            label(&c.attack),
            label(&c.target),
            ds(&label(&c.dataset)),
            label(&c.judge),
            c.errors
        );
        for (m, n) in c.metrics.iter().zip(&names) {
            let v = m
                .value
                .value
                .map_or("N/A".to_string(), |v| format!("{v:.3}"));
            line.push_str(&format!("  {:>w$}", v, w = n.len().max(6)));
        }
        println!("{line}");
    }
}

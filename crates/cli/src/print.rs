//! Tables more than one command prints: the `--estimate` table of `run` and `exam`, and
//! a run's summary (`run`, `rescore`, `merge`). Labels and model names come from
//! configs and stored runs, so they are printed escaped.

use crate::error::CliError;
use gauntlet_core::terminal::safe;
use gauntlet_results::RunSummary;

/// One row of an `--estimate` table (`gauntlet run` roles, `gauntlet exam` tiers);
/// `E` says why a row cannot be priced.
pub(crate) struct EstimateRow<'a, E> {
    pub role: &'a str,
    pub model: &'a str,
    pub calls: u64,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    pub max_cost: &'a Result<f64, E>,
}

/// Prints the rows (model names are escaped: they come from configs); returns the
/// planned calls, the priced upper-bound cost and how many rows are unpriced.
pub(crate) fn estimate_rows<'a, E: std::fmt::Display + 'a>(
    rows: impl IntoIterator<Item = EstimateRow<'a, E>>,
) -> Result<(u64, f64, usize), CliError> {
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
        outln!("{}", safe(&line))?;
    }
    Ok((calls, cost, unpriced))
}

/// The total and upper-bound cost lines under an estimate table; `budget` is the query
/// budget, its setting's name and what it stops; `unit` names a row (`role`, `tier`).
pub(crate) fn estimate_totals(
    (calls, cost, unpriced): (u64, f64, usize),
    budget: Option<(u64, &str, &str)>,
    unit: &str,
) -> Result<(), CliError> {
    outln!(
        "total: {calls} planned model calls (journal hits are free and not subtracted){}",
        match budget {
            Some((m, name, what)) if m < calls =>
                format!("; {name} {m} will stop the {what} first"),
            _ => String::new(),
        }
    )?;
    if unpriced == 0 {
        outln!("upper-bound cost: ${cost:.4}")?;
    } else {
        outln!(
            "upper-bound cost: ${cost:.4} for the priced {unit}s; {unpriced} {unit}(s) unpriced"
        )?;
    }
    Ok(())
}

/// One line per cell with each metric's value (N/A where it does not apply).
pub(crate) fn run_summary(s: &RunSummary) -> Result<(), CliError> {
    let Some(first) = s.cells.first() else {
        return Ok(());
    };
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
    let w = |cells: &dyn Fn(&gauntlet_results::CellSummary) -> String| {
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
    // Each metric's column: the value, its 95% interval and n (a rate of 1.000 on n = 1
    // reads differently from one on n = 400), N/A where it does not apply.
    let texts: Vec<Vec<String>> = s
        .cells
        .iter()
        .map(|c| c.metrics.iter().map(metric_text).collect())
        .collect();
    let widths: Vec<usize> = names
        .iter()
        .enumerate()
        .map(|(k, n)| {
            texts
                .iter()
                .filter_map(|t| t.get(k).map(String::len))
                .chain([n.len(), 6])
                .max()
                .unwrap_or(6)
        })
        .collect();
    for (n, w) in names.iter().zip(&widths) {
        header.push_str(&format!("  {n:>w$}"));
    }
    outln!("{header}")?;
    for (c, texts) in s.cells.iter().zip(&texts) {
        let mut line = format!(
            "{:wa$}  {:wt$}{}  {:wj$}  {:>6}",
            label(&c.attack),
            label(&c.target),
            ds(&label(&c.dataset)),
            label(&c.judge),
            c.errors
        );
        for (v, w) in texts.iter().zip(&widths) {
            line.push_str(&format!("  {v:>w$}"));
        }
        outln!("{line}")?;
    }
    warnings(s)?;
    Ok(())
}

/// One metric's table entry: `0.250 [0.050, 0.600] n=4`, `N/A`; cost in dollars with
/// enough digits that $0.0005 is not `0.000`, token counts with one decimal.
pub(crate) fn metric_text(m: &gauntlet_results::CellMetric) -> String {
    let v = &m.value;
    let Some(x) = v.value else {
        return "N/A".into();
    };
    let num = |x: f64| match m.metric.as_str() {
        "cost" => format!("${x:.6}"),
        "token_usage" => format!("{x:.1}"),
        _ => format!("{x:.3}"),
    };
    let main = match (v.ci_low, v.ci_high) {
        (Some(lo), Some(hi)) => format!("{} [{}, {}] n={}", num(x), num(lo), num(hi), v.n),
        _ => format!("{} n={}", num(x), v.n),
    };
    // An abstaining judge's undecided units never vanish: the rate if none, or all, of
    // them counted.
    match &v.bounds {
        Some(b) => format!("{main} +{}? {}–{}", v.undecided, num(b.low), num(b.high)),
        None => main,
    }
}

/// The cells' degenerate-run warnings, after the table (model and dataset text in them
/// is printed escaped).
fn warnings(s: &RunSummary) -> Result<(), CliError> {
    let n: usize = s.cells.iter().map(|c| c.warnings.len()).sum();
    if n == 0 {
        return Ok(());
    }
    outln!(
        "\n⚠ {n} warning(s): check before trusting these numbers (evidence and thresholds in results.json):"
    )?;
    // Each line names its cell whole, the dataset included (with its version where the
    // run holds its name at several), so two cells never read alike.
    let datasets = gauntlet_report::DatasetLabels::of(s);
    for c in &s.cells {
        for w in &c.warnings {
            outln!(
                "  {} × {} · {} [{}] {}: {}",
                safe(&c.attack),
                safe(&c.target),
                safe(&datasets.label(&c.dataset, &c.dataset_version)),
                safe(&c.judge),
                safe(&w.kind),
                safe(&w.message)
            )?;
        }
    }
    Ok(())
}

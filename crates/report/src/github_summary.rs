//! GitHub step-summary Markdown (`$GITHUB_STEP_SUMMARY`; GitLab and others render the same
//! Markdown): a run's status (a run not complete says so above its table) and
//! leaderboard, or any table (a gate's rules). Untrusted
//! text (labels, reasons) is escaped for Markdown and HTML as the run report's is.

use crate::md_escape::inline;
use gauntlet_results::RunSummary;

fn num(x: Option<f64>) -> String {
    x.map_or("N/A".to_string(), |v| format!("{v:.3}"))
}

/// Untrusted text for a single-line Markdown slot of a summary (escaped as the report's
/// is: no Markdown or HTML syntax; line breaks as entities, so no line starts with
/// data; `#` backslash-escaped, so no `##[` a CI log would act on).
pub fn escape(s: &str) -> String {
    inline(s)
}

/// A Markdown table; every cell is escaped.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "| {} |\n",
        headers
            .iter()
            .map(|h| inline(h))
            .collect::<Vec<_>>()
            .join(" | ")
    ));
    s.push_str(&format!("|{}\n", " --- |".repeat(headers.len())));
    for r in rows {
        s.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| inline(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    s
}

/// The step summary of a run: status, then one row per cell × metric with its 95%
/// interval, n and the errors excluded; `findings` (rule id, title, count) when given.
pub fn run(summary: &RunSummary, findings: &[(String, String, usize)]) -> String {
    let mut s = format!(
        "## gauntlet run `{}`: {}\n\nrun id `{}` · mode {} · seed {} · gauntlet {}\n\n",
        inline(&summary.run_name),
        inline(&summary.status),
        inline(&summary.run_id),
        inline(&summary.mode),
        summary.seed,
        inline(&summary.harness_version),
    );
    if summary.status != "complete" {
        s.push_str(&format!(
            "> **⚠ NOT COMPLETE — status: {}.** The run did not finish its plan: the numbers below cover only the work that completed and are not comparable with a complete run.\n\n",
            inline(&summary.status)
        ));
    }
    let rows: Vec<Vec<String>> = summary
        .leaderboard()
        .iter()
        .map(|r| {
            vec![
                r.attack.clone(),
                r.target.clone(),
                format!("{} ({})", r.dataset, r.dataset_version),
                r.judge.clone(),
                r.metric.clone(),
                num(r.value),
                match (r.ci_low, r.ci_high) {
                    (Some(a), Some(b)) => format!("[{a:.3}, {b:.3}]"),
                    _ => r.na_reason.clone().unwrap_or_else(|| "N/A".into()),
                },
                r.n.to_string(),
                r.errors.to_string(),
            ]
        })
        .collect();
    s.push_str(&table(
        &[
            "attack",
            "target",
            "dataset",
            "judge",
            "metric",
            "value",
            "95% CI",
            "n",
            "errors excluded",
        ],
        &rows,
    ));
    if !findings.is_empty() {
        s.push_str("\n### Findings by threat\n\n");
        let rows: Vec<Vec<String>> = findings
            .iter()
            .map(|(id, t, n)| vec![id.clone(), t.clone(), n.to_string()])
            .collect();
        s.push_str(&table(&["rule", "threat", "successful attempts"], &rows));
    }
    s
}

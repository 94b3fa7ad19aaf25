//! A run's reports rendered from its [`RunSummary`]: the leaderboard JSON, the Markdown
//! and HTML reports (with or without [`ReportOptions`]), the run's charts, and the
//! judge-eval report. [`crate::write`] writes them into a directory.

use crate::breadth::{self, ReportOptions};
use crate::{charts, html, judge_eval, markdown, view};
use gauntlet_results::RunSummary;

/// The leaderboard ([`RunSummary::leaderboard_entries`]) as a pretty-printed JSON array
/// of [`LeaderboardEntry`](gauntlet_results::LeaderboardEntry) — a
/// [`LeaderboardRow`](gauntlet_results::LeaderboardRow), plus `trials`,
/// `trials_na` and `trial_values` in a multi-trial run — ending with a newline.
pub fn leaderboard_json(summary: &RunSummary) -> String {
    let mut json = serde_json::to_string_pretty(&summary.leaderboard_entries())
        .expect("leaderboard rows always serialize (string keys; non-finite floats become null)");
    json.push('\n');
    json
}

/// The Markdown report of `gauntlet judge-eval` (`report.md` of its output directory).
pub fn render_judge_eval_markdown(report: &gauntlet_core::judge_eval::JudgeEvalReport) -> String {
    judge_eval::render(report)
}

/// The Markdown report of a run.
pub fn render_markdown(summary: &RunSummary) -> String {
    render_markdown_with(summary, &ReportOptions::default())
}

/// The self-contained HTML report of a run.
pub fn render_html(summary: &RunSummary) -> String {
    render_html_with(summary, &ReportOptions::default())
}

/// [`render_markdown`] with report options (the threat frameworks to group by).
pub fn render_markdown_with(summary: &RunSummary, opts: &ReportOptions) -> String {
    let b = breadth::BreadthView::new(summary, opts);
    markdown::render(&view_with(summary, opts), &b)
}

/// [`render_html`] with report options (the threat frameworks to group by).
pub fn render_html_with(summary: &RunSummary, opts: &ReportOptions) -> String {
    let b = breadth::BreadthView::new(summary, opts);
    html::render(&view_with(summary, opts), &run_charts(summary), &b)
}

fn view_with(summary: &RunSummary, opts: &ReportOptions) -> view::ReportView {
    let mut v = view::ReportView::new(summary);
    v.notice = opts.notice.clone();
    v
}

/// The charts of a run, as inline SVG: per metric a forest plot of every cell's value
/// and 95% CI, grouped by target then attack (N/A cells say N/A); for an injection run
/// also utility under attack against injection success per cell.
pub fn run_charts(summary: &RunSummary) -> Vec<String> {
    use std::collections::BTreeSet;
    let judges: BTreeSet<&str> = summary.cells.iter().map(|c| c.judge.as_str()).collect();
    let datasets = view::DatasetLabels::of(summary);
    // Cells grouped by target (first-appearance order), attack order kept within.
    let mut targets: Vec<&str> = Vec::new();
    for c in &summary.cells {
        if !targets.contains(&c.target.as_str()) {
            targets.push(&c.target);
        }
    }
    let mut cells: Vec<&gauntlet_results::CellSummary> = summary.cells.iter().collect();
    cells.sort_by_key(|c| targets.iter().position(|t| *t == c.target));
    let row_label = |c: &gauntlet_results::CellSummary| {
        let mut l = c.attack.clone();
        if judges.len() > 1 {
            l.push_str(" · ");
            l.push_str(&c.judge);
        }
        if datasets.several() {
            l.push_str(" · ");
            l.push_str(&datasets.label(&c.dataset, &c.dataset_version));
        }
        l
    };
    let mut labels: Vec<String> = Vec::new();
    for c in &summary.cells {
        for m in &c.metrics {
            let l = view::metric_label(m);
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
    }
    let mut out = Vec::new();
    for label in &labels {
        let rows: Vec<charts::ForestRow> = cells
            .iter()
            .flat_map(|c| {
                c.metrics
                    .iter()
                    .filter(|m| view::metric_label(m) == *label)
                    .map(|m| charts::ForestRow {
                        group: c.target.clone(),
                        label: row_label(c),
                        value: m.value.value,
                        ci: m.value.ci_low.zip(m.value.ci_high),
                        n: m.value.n,
                        na_reason: m.value.na_reason.clone(),
                    })
            })
            .collect();
        out.push(charts::forest(
            &format!("{label}: value and 95% CI per cell, by target and attack"),
            label,
            &rows,
        ));
    }
    let value = |c: &gauntlet_results::CellSummary, name: &str| {
        c.metrics.iter().find(|m| m.metric == name).and_then(|m| {
            m.value
                .value
                .map(|v| (v, m.value.ci_low.zip(m.value.ci_high)))
        })
    };
    let points: Vec<charts::ScatterPoint> = cells
        .iter()
        .filter_map(|c| {
            let (x, x_ci) = value(c, "injection_success_rate")?;
            let (y, y_ci) = value(c, "utility_under_attack")?;
            Some(charts::ScatterPoint {
                label: format!("{} × {}", row_label(c), c.target),
                x,
                y,
                x_ci,
                y_ci,
            })
        })
        .collect();
    if !points.is_empty() {
        out.push(charts::scatter(
            "Utility under attack vs. injection success, per injected cell",
            "injection_success_rate",
            "utility_under_attack",
            &points,
        ));
    }
    for c in &cells {
        if let Some(chart) = c
            .breadth
            .guard_curve
            .as_ref()
            .and_then(|g| guard_curve_chart(&format!("{} × {}", c.target, c.dataset), g))
        {
            out.push(chart);
        }
    }
    out
}

/// A guard's operating curve: one point per run of thresholds with the same counts
/// (labelled by the thresholds it covers), false-block rate across, pass-through up.
/// `None` when no threshold has both rates (a set without both kinds of behavior).
fn guard_curve_chart(title: &str, curve: &gauntlet_results::GuardCurve) -> Option<String> {
    let mut points: Vec<charts::ScatterPoint> = Vec::new();
    let mut last: Option<(u64, u64)> = None;
    let mut first_t = 0.0;
    for p in &curve.points {
        let (Some(x), Some(y)) = (p.false_block.value, p.pass_through.value) else {
            continue;
        };
        let key = (p.false_block.count, p.pass_through.count);
        if last == Some(key)
            && let Some(prev) = points.last_mut()
        {
            prev.label = format!("threshold {first_t:.2}–{:.2}", p.threshold);
            continue;
        }
        last = Some(key);
        first_t = p.threshold;
        points.push(charts::ScatterPoint {
            label: format!("threshold {:.2}", p.threshold),
            x,
            y,
            x_ci: p.false_block.ci_low.zip(p.false_block.ci_high),
            y_ci: p.pass_through.ci_low.zip(p.pass_through.ci_high),
        });
    }
    (!points.is_empty()).then(|| {
        charts::scatter(
            &format!("Guard threshold curve, {title}: guard pass-through vs. false-block rate (blocked when score > threshold)"),
            "false-block rate",
            "guard pass-through",
            &points,
        )
    })
}

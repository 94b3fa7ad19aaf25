//! gauntlet-report: turns a [`RunSummary`] into the run's human and machine artefacts.
//!
//! - [`leaderboard_json`]: the leaderboard rows (one per cell × metric, each carrying
//!   dataset, dataset version, judge, seed and run status) as pretty JSON;
//! - [`render_markdown`]: the Markdown report;
//! - [`render_html`]: a self-contained HTML report (inline CSS, no scripts, no external
//!   resources, strict Content-Security-Policy);
//! - [`write_reports`]: all three, written atomically into a directory.
//!
//! Every string in a [`RunSummary`] is treated as untrusted model or dataset output and
//! escaped for the format it lands in (the `markdown` and `html` modules document how).
//! Output is byte-deterministic: it depends on the summary alone (no clock, no hash-map
//! order).

mod html;
mod judge_eval;
mod markdown;
mod view;
mod write;

use gauntlet_core::results::RunSummary;

pub use view::EXAMPLE_MAX_CHARS;
pub use write::{HTML_FILE, LEADERBOARD_FILE, MARKDOWN_FILE, write_reports};

/// The leaderboard ([`RunSummary::leaderboard_entries`]) as a pretty-printed JSON array
/// of [`LeaderboardEntry`](gauntlet_core::results::LeaderboardEntry) — a
/// [`LeaderboardRow`](gauntlet_core::results::LeaderboardRow), plus `trials`,
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
    markdown::render(&view::ReportView::new(summary))
}

/// The self-contained HTML report of a run.
pub fn render_html(summary: &RunSummary) -> String {
    html::render(&view::ReportView::new(summary))
}

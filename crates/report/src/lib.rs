//! gauntlet-report: turns a [`RunSummary`] into the run's human and machine artefacts.
//!
//! - [`leaderboard_json`]: the leaderboard rows (one per cell × metric, each carrying
//!   dataset, dataset version, judge, seed and run status) as pretty JSON;
//! - [`render_markdown`]: the Markdown report;
//! - [`render_html`]: a self-contained HTML report (inline CSS, no scripts, no external
//!   resources, strict Content-Security-Policy);
//! - [`write_reports`]: all three, written atomically into a directory.
//!
//! Runs with attack-breadth results also get curves, per-transform effects and a
//! grouping by threat framework ([`ReportOptions::group_by`]).
//!
//! Every string in a [`RunSummary`] is treated as untrusted model or dataset output and
//! escaped for the format it lands in (the `markdown` and `html` modules document how).
//! Output is byte-deterministic: it depends on the summary alone (no clock, no hash-map
//! order).

mod breadth;
mod html;
mod markdown;
mod view;
mod write;

use gauntlet_core::results::RunSummary;

pub use breadth::{DEFAULT_GROUP_BY, ReportOptions, frameworks};
pub use view::EXAMPLE_MAX_CHARS;
pub use write::{HTML_FILE, LEADERBOARD_FILE, MARKDOWN_FILE, write_reports, write_reports_with};

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
    markdown::render(&view::ReportView::new(summary), &b)
}

/// [`render_html`] with report options (the threat frameworks to group by).
pub fn render_html_with(summary: &RunSummary, opts: &ReportOptions) -> String {
    let b = breadth::BreadthView::new(summary, opts);
    html::render(&view::ReportView::new(summary), &b)
}

//! gauntlet-report: turns a [`RunSummary`] into the run's human and machine artefacts.
//!
//! - [`leaderboard_json`]: the leaderboard rows (one per cell × metric, each carrying
//!   dataset, dataset version, judge, seed and run status) as pretty JSON;
//! - [`render_markdown`]: the Markdown report;
//! - [`render_html`]: a self-contained HTML report (inline CSS, no scripts, no external
//!   resources, strict Content-Security-Policy);
//! - [`write_reports`]: all three, written atomically into a directory;
//! - [`page`]: pages built from blocks (headings, notes, tables, charts) in the same
//!   look, CSP and escaping, for harnesses without a run summary (the agent exam);
//! - [`charts`]: the inline SVG charts every renderer uses ([`run_charts`] for a run).
//!
//! Runs with attack-breadth results also get curves, per-transform effects and a
//! grouping by threat framework ([`ReportOptions::group_by`]).
//!
//! Every string in a [`RunSummary`] is treated as untrusted model or dataset output and
//! escaped for the format it lands in (the `md_escape` and `html` modules document how).
//! Output is byte-deterministic: it depends on the summary alone (no clock, no hash-map
//! order).
//!
//! [`RunSummary`]: gauntlet_results::RunSummary

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

mod breadth;
pub mod charts;
pub mod exam;
pub mod github_summary;
mod html;
mod judge_eval;
pub mod junit;
mod markdown;
mod md_escape;
pub mod page;
mod render;
pub mod sarif;
mod view;
mod write;

pub use breadth::{DEFAULT_GROUP_BY, ReportOptions, frameworks};
pub use page::{Block, Page, render_page_html, render_page_markdown};
pub use render::{
    leaderboard_json, render_html, render_html_with, render_judge_eval_markdown, render_markdown,
    render_markdown_with, run_charts,
};
pub use view::{DatasetLabels, EXAMPLE_MAX_CHARS};
pub use write::{
    HTML_FILE, LEADERBOARD_FILE, MARKDOWN_FILE, write_atomic, write_reports, write_reports_with,
};

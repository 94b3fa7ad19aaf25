//! A report page built from blocks — headings, notes, key/value tables, tables and
//! charts — for harnesses whose numbers are not a run's [`RunSummary`]
//! (gauntlet_results::RunSummary): the agent exam builds a [`Page`] and renders it
//! here, so its report.html has the run report's stylesheet, Content-Security-Policy and
//! escaping (one renderer, one set of hostile-input tests).
//!
//! Every string of a page is treated as untrusted and escaped by the format it lands in:
//! HTML through the same auto-escaping minijinja environment as the run report, Markdown
//! through the run report's [`inline`](crate::md_escape) escaping. Charts are described by
//! their numbers and drawn by [`crate::charts`] here, so a caller can never hand in
//! ready-made markup.

use minijinja::{Value, context};

/// A page: a title, an optional partial-result banner and its blocks, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub title: String,
    /// Shown as the red banner at the top when set (a partial result).
    pub partial: Option<String>,
    pub blocks: Vec<Block>,
}

/// One block of a [`Page`].
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A section heading.
    Heading(String),
    /// A paragraph set apart (a caveat the reader must see).
    Note(String),
    /// A two-column table of (name, value) rows.
    Fields(Vec<(String, String)>),
    /// A table with a header row; every row should have the header's width.
    Table {
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// The agent exam's pass-rate-per-pass chart ([`crate::charts::pass_band`]); a pass
    /// whose rate is N/A is NaN and has no dot.
    PassBand {
        title: String,
        pass_rates: Vec<f64>,
        band_pp: f64,
        median_ci: Option<(f64, f64)>,
    },
}

const TEMPLATE_NAME: &str = "page.html";
const PAGE_TEMPLATE: &str = include_str!("../templates/page.html");
static TEMPLATE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| crate::html::with_style(PAGE_TEMPLATE));

/// The page as a self-contained HTML document.
pub fn render_page_html(page: &Page) -> String {
    let blocks: Vec<Value> = page
        .blocks
        .iter()
        .map(|b| match b {
            Block::Heading(text) => context! { kind => "heading", text => text },
            Block::Note(text) => context! { kind => "note", text => text },
            Block::Fields(rows) => context! { kind => "fields", rows => rows },
            Block::Table { header, rows } => {
                context! { kind => "table", header => header, rows => rows }
            }
            Block::PassBand {
                title,
                pass_rates,
                band_pp,
                median_ci,
            } => context! {
                kind => "chart",
                svg => Value::from_safe_string(crate::charts::pass_band(
                    title, pass_rates, *band_pp, *median_ci,
                )),
            },
        })
        .collect();
    crate::html::environment_with(TEMPLATE_NAME, TEMPLATE.as_str())
        .get_template(TEMPLATE_NAME)
        .and_then(|t| {
            t.render(context! {
                title => &page.title,
                partial => &page.partial,
                blocks => blocks,
            })
        })
        .expect("the embedded page template renders any page")
}

/// The page as Markdown: every string escaped with the run report's
/// [`inline`](crate::md_escape) escaping (no raw HTML, no structure from the text). Charts
/// have no Markdown form and are left out (report.html carries them).
pub fn render_page_markdown(page: &Page) -> String {
    use crate::md_escape::inline;
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(o, "# {}\n", inline(&page.title));
    if let Some(p) = &page.partial {
        let _ = writeln!(o, "> **⚠ {}**\n", inline(p));
    }
    let row = |o: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        o.push('|');
        for c in cells {
            let _ = write!(o, " {} |", inline(c));
        }
        o.push('\n');
    };
    for b in &page.blocks {
        match b {
            Block::Heading(text) => {
                let _ = writeln!(o, "## {}\n", inline(text));
            }
            Block::Note(text) => {
                let _ = writeln!(o, "> {}\n", inline(text));
            }
            Block::Fields(rows) => {
                o.push_str("| | |\n|---|---|\n");
                for (k, v) in rows {
                    row(&mut o, &mut [k.as_str(), v.as_str()].into_iter());
                }
                o.push('\n');
            }
            Block::Table { header, rows } => {
                row(&mut o, &mut header.iter().map(String::as_str));
                o.push('|');
                o.push_str(&"---|".repeat(header.len()));
                o.push('\n');
                for r in rows {
                    row(&mut o, &mut r.iter().map(String::as_str));
                }
                o.push('\n');
            }
            Block::PassBand { .. } => {}
        }
    }
    // One newline at the end, not the blank line that separates blocks.
    while o.ends_with("\n\n") {
        o.pop();
    }
    o
}

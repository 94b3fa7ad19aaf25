//! Pages built from blocks (the agent exam's report): the same stylesheet, CSP and
//! escaping as the run report, checked with the run report's hostile string.

use gauntlet_report::{Block, Page, render_page_html, render_page_markdown};

const HOSTILE: &str = "<script>alert(1)</script></td>| pipe `tick` ```\n\
                       # heading\n| a | b |\n[link](javascript:alert(1)) <SCRIPT>x";

fn page(s: &str) -> Page {
    Page {
        title: s.to_owned(),
        partial: Some(s.to_owned()),
        blocks: vec![
            Block::Note(s.to_owned()),
            Block::Heading(s.to_owned()),
            Block::Fields(vec![(s.to_owned(), s.to_owned()), ("k".into(), "v".into())]),
            Block::Table {
                header: vec![s.to_owned(), "b".into(), "c".into()],
                rows: vec![
                    vec![s.to_owned(), s.to_owned(), s.to_owned()],
                    vec!["1".into(), "2".into(), "3".into()],
                ],
            },
            Block::PassBand {
                title: s.to_owned(),
                pass_rates: vec![0.5, f64::NAN, 0.75],
                band_pp: 8.0,
                median_ci: Some((0.4, 0.8)),
            },
        ],
    }
}

/// Pipes that delimit table cells: those not escaped with a backslash.
fn unescaped_pipes(line: &str) -> usize {
    let mut count = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '|' => count += 1,
            _ => {}
        }
    }
    count
}

#[test]
fn page_html_snapshot() {
    insta::assert_snapshot!(render_page_html(&page("an exam")));
}

#[test]
fn page_markdown_snapshot() {
    insta::assert_snapshot!(render_page_markdown(&page("an exam")));
}

#[test]
fn a_page_has_the_run_reports_stylesheet_and_csp() {
    let html = render_page_html(&page("x"));
    let style = include_str!("../templates/style.html");
    assert!(html.contains(style), "{html}");
    // The run report (the snapshot of report.rs) carries the same stylesheet.
    let run = include_str!("snapshots/report__html.snap");
    assert!(run.contains(style));
    let csp = "<meta http-equiv=\"Content-Security-Policy\" \
               content=\"default-src 'none'; style-src 'unsafe-inline'\">";
    assert!(html.contains(csp) && run.contains(csp));
}

#[test]
fn hostile_strings_are_escaped_in_page_html() {
    let html = render_page_html(&page(HOSTILE));
    assert!(!html.to_lowercase().contains("<script"), "{html}");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"));
    assert!(html.contains("&lt;&#x2f;td&gt;"));
    assert!(!html.contains("javascript:alert(1)\""));
    // Only the template's own cells: hostile `</td>` never closes one.
    assert_eq!(html.matches("<td").count(), html.matches("</td>").count());
    assert_eq!(html.matches("<td>").count(), 2 + 6);
    assert!(html.contains(
        "<meta http-equiv=\"Content-Security-Policy\" \
         content=\"default-src 'none'; style-src 'unsafe-inline'\">"
    ));
    for external in ["<link", "<img", "<iframe", "src=", "href=", "url("] {
        assert!(!html.contains(external), "{external}");
    }
    // The chart escapes its own title; N/A passes have no dot.
    let svg = &html[html.find("<svg ").unwrap()..html.find("</svg>").unwrap()];
    assert!(svg.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert_eq!(svg.matches("<circle ").count(), 2, "{svg}");
}

#[test]
fn hostile_strings_are_escaped_in_page_markdown() {
    let md = render_page_markdown(&page(HOSTILE));
    assert!(!md.to_lowercase().contains("<script"), "{md}");
    assert!(md.contains("&lt;script&gt;alert(1)&lt;/script&gt;&lt;/td&gt;\\| pipe \\`tick\\`"));
    assert!(!md.contains("[link]"));
    // Every table row keeps its columns: 3 delimiting pipes for the fields table, 4 for
    // the three-column table.
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 4 + 4, "{md}");
    for l in &rows[..4] {
        assert_eq!(unescaped_pipes(l), 3, "{l:?}");
    }
    for l in &rows[4..] {
        assert_eq!(unescaped_pipes(l), 4, "{l:?}");
    }
    // The hostile newlines never start a line of their own.
    for line in md.lines() {
        for structure in [
            "# heading",
            "| a | b |",
            "\\# heading",
            "\\| a \\| b",
            "[link]",
        ] {
            assert!(
                !line.starts_with(structure),
                "hostile text escaped its slot: {line:?}"
            );
        }
    }
}

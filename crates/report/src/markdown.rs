//! The Markdown report, written directly from the [`ReportView`].
//!
//! # Escaping
//!
//! Every string of a [`RunSummary`](gauntlet_core::results::RunSummary) is untrusted
//! (model replies, dataset prompts, target names, error messages), so none of it may
//! reach the output as Markdown or HTML syntax:
//!
//! - [`inline`] is used for every single-line slot (headings, list items, table cells):
//!   `&`, `<`, `>` become entities (no raw HTML, no autolinks, no entity tricks), line
//!   breaks become `&#10;` / `&#13;` (entities never create structure in CommonMark, so
//!   text cannot end a heading, list item or table row), and `` \ ` * [ ] | ~ # `` are
//!   backslash-escaped (no code spans, emphasis, links, images, strikethrough, heading
//!   closers, and `|` cannot split a table cell). `_` is escaped unless it sits between
//!   two alphanumerics, where CommonMark can never read it as emphasis. Terminal
//!   controls (C0 but tab, DEL, C1, bidi overrides and isolates) are spelled out as
//!   the terminal printer spells them (`\x1b`), so `cat report.md` is safe too.
//! - [`block_quote`] is used for prompts and replies, which keep their line breaks: every
//!   line becomes its own `> ` line escaped with [`inline`], leading spaces and tabs
//!   become `&nbsp;` (no indented code), a leading `-`, `+` or `=` and the `.`/`)` of a
//!   leading number are backslash-escaped (no lists, thematic breaks or setext headings),
//!   and lines are joined with a trailing-backslash hard break. Content therefore stays
//!   inside its quote: it cannot open a fence (backticks and tildes are escaped), cannot
//!   start raw HTML, and cannot leave the blockquote (every line carries the marker).
//!
//! Bare `www.` / `https://` text may still be auto-linked by GFM renderers; it cannot be
//! turned into an image or a disguised link.

use std::fmt::Write as _;

use crate::breadth::BreadthView;
use crate::view::{CellView, ExampleView, ReportView};

pub fn render(view: &ReportView, breadth: &BreadthView) -> String {
    let mut o = String::new();
    header(&mut o, view);
    if view.cells.is_empty() {
        o.push_str("_This run has no cells._\n\n");
    }
    for cell in &view.cells {
        cell_section(&mut o, cell);
    }
    crate::breadth::markdown(&mut o, breadth);
    closing_notes(&mut o, view.multi);
    o
}

fn header(o: &mut String, v: &ReportView) {
    let _ = writeln!(o, "# gauntlet report: {}\n", inline(&v.run_name));
    if v.partial {
        let _ = writeln!(
            o,
            "> **⚠ PARTIAL RUN — status: {}.** Not every planned attempt finished: the \
             numbers below cover only the work that completed and are not comparable \
             with a complete run.\n",
            inline(&v.status)
        );
    }
    let status = if v.partial {
        format!("**⚠ {}**", inline(&v.status))
    } else {
        inline(&v.status)
    };
    let _ = writeln!(o, "- **Run name:** {}", inline(&v.run_name));
    let _ = writeln!(o, "- **Run id:** {}", inline(&v.run_id));
    let _ = writeln!(o, "- **Status:** {status}");
    let _ = writeln!(o, "- **Harness version:** {}", inline(&v.harness_version));
    let _ = writeln!(o, "- **Config hash:** {}", inline(&v.config_hash));
    let _ = writeln!(o, "- **Seed:** {}", inline(&v.seed));
    if v.multi {
        let _ = writeln!(o, "- **Mode:** {}", inline(&v.mode));
        let _ = writeln!(
            o,
            "- **Trials:** {} (seeds: {})\n",
            v.trials,
            inline(&v.trial_seeds)
        );
    } else {
        let _ = writeln!(o, "- **Mode:** {}\n", inline(&v.mode));
    }
}

fn cell_section(o: &mut String, c: &CellView) {
    let _ = writeln!(o, "## {} × {}\n", inline(&c.attack), inline(&c.target));
    let _ = writeln!(
        o,
        "**Dataset:** {} · **dataset version:** {} · **judge:** {}\n",
        inline(&c.dataset),
        inline(&c.dataset_version),
        inline(&c.judge)
    );
    if !c.judge_measures.is_empty() {
        let _ = writeln!(
            o,
            "**A success under this judge means:** {}\n",
            inline(&c.judge_measures)
        );
    }
    let _ = writeln!(
        o,
        "**Behaviors:** {} · **attempts:** {} · **errors:** {} · \
         **behaviors with every attempt errored:** {}\n",
        c.behaviors, c.attempts, c.errors, c.behaviors_all_errors
    );
    if !c.trials.is_empty() {
        let _ = writeln!(
            o,
            "**Trials:** {} (the counts above sum every trial)\n",
            c.trials.len()
        );
        for t in &c.trials {
            let _ = writeln!(
                o,
                "- trial {}: behaviors {} · attempts {} · errors {} · behaviors with every attempt errored {}",
                t.trial, t.behaviors, t.attempts, t.errors, t.behaviors_all_errors
            );
        }
        o.push('\n');
    }
    if !c.warnings.is_empty() {
        o.push_str("> **⚠ Check before trusting these numbers:**\n");
        for w in &c.warnings {
            let _ = writeln!(
                o,
                "> - `{}`: {} (evidence: {}; threshold: {})",
                inline(&w.kind),
                inline(&w.message),
                inline(&w.evidence),
                inline(&w.threshold)
            );
        }
        o.push('\n');
    }
    if c.errors > 0 {
        let (noun, verb) = if c.errors == 1 {
            ("attempt", "is")
        } else {
            ("attempts", "are")
        };
        let _ = writeln!(
            o,
            "> **⚠ {} of {} {noun} errored and {verb} excluded from all rates.**\n",
            c.errors, c.attempts
        );
        if !c.top_errors.is_empty() {
            o.push_str("Most frequent errors:\n\n");
            for e in &c.top_errors {
                let _ = writeln!(o, "- {} × {}", e.count, inline(&e.message));
            }
            o.push('\n');
        }
    }
    if c.metrics.is_empty() {
        o.push_str("_No metrics for this cell._\n\n");
    } else if !c.trials.is_empty() {
        o.push_str(
            "| metric | mean over trials | 95% CI across trials | n | N/A trials | per trial: value [95% CI] |\n",
        );
        o.push_str("|---|---:|---|---:|---:|---|\n");
        for m in &c.metrics {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} |",
                inline(&m.label),
                inline(&m.value),
                m.ci,
                m.n,
                m.trials_na,
                inline(&m.per_trial_line())
            );
        }
        o.push('\n');
    } else {
        o.push_str("| metric | value | 95% CI | interval | n |\n");
        o.push_str("|---|---:|---|---|---:|\n");
        for m in &c.metrics {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} |",
                inline(&m.label),
                inline(&m.value),
                // Built only from formatted floats and `—`: nothing untrusted to escape.
                m.ci,
                m.ci_method,
                m.n
            );
        }
        o.push('\n');
    }
    if !c.undecided.is_empty() {
        o.push_str("The judge abstained (`uncertain`) on some replies: each rate above is over the decided behaviors only, and the undecided ones await a label.\n\n");
        for u in &c.undecided {
            let _ = writeln!(o, "- {}", inline(u));
        }
        o.push('\n');
    }
    if !c.corrected.is_empty() {
        let _ = writeln!(
            o,
            "Corrected for the judge's measured errors (Rogan–Gladen, judge card {}; the raw values above stay the headline):\n",
            inline(&c.corrected[0].card)
        );
        for k in &c.corrected {
            let _ = writeln!(
                o,
                "- {} corrected: {} {}",
                inline(&k.label),
                inline(&k.value),
                k.ci
            );
        }
        o.push('\n');
    }
    o.push_str("### Examples\n\n");
    if c.examples.is_empty() {
        o.push_str("_No examples recorded._\n\n");
    }
    for (i, e) in c.examples.iter().enumerate() {
        example(o, i + 1, e);
    }
}

fn example(o: &mut String, number: usize, e: &ExampleView) {
    let trial = e.trial.map_or(String::new(), |t| format!("trial: {t} · "));
    let _ = writeln!(
        o,
        "**Example {number}** — {trial}behavior: {} · expected: {} · outcome: {}\n",
        inline(&e.behavior_id),
        inline(&e.expected),
        inline(&e.outcome)
    );
    o.push_str("Prompt:\n\n");
    o.push_str(&block_quote(&e.prompt));
    o.push_str("\nReply:\n\n");
    o.push_str(&block_quote(&e.reply));
    o.push('\n');
}

fn closing_notes(o: &mut String, multi: bool) {
    o.push_str(
        "## Notes\n\n\
         - Rates exclude errored attempts (target failures, empty replies, grader \
         failures); behaviors whose every attempt errored are excluded entirely.\n\
         - N/A means the metric does not apply to the cell; it is never 0.\n\
         - 95% intervals: rates (a share of behaviors) carry Wilson score intervals; \
         continuous scores carry percentile bootstrap intervals over 1000 resamples of \
         behaviors, seeded from the run seed; the interval column says which; — means \
         no interval.\n\
         - Under `refusal_match` a success means the reply did not decline: an \
         off-topic or useless reply counts. Use a harm-aware judge (`rubric`, \
         `strongreject`) to count harmful answers.\n\
         - Prompts and replies are untrusted model or dataset text, shown escaped and \
         truncated to 400 characters.\n",
    );
    if multi {
        o.push_str(
            "- Trials are independent repetitions of the whole run, each under its own seed. \
             A cell's value is the mean of its trials' values; trials where the metric is \
             N/A are left out of the mean and counted under N/A trials. Its 95% CI is the \
             Student-t interval across trials, mean ± t(0.975, k−1)·s/√k over the k trials \
             with a value, clipped to the values the metric can take (— when k < 2); each \
             trial's own value keeps its own interval (Wilson for rates, bootstrap for scores).\n",
        );
    }
}

/// Escapes untrusted text for any single-line Markdown slot (see the module docs).
pub(crate) fn inline(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\\' | '`' | '*' | '[' | ']' | '|' | '~' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '_' => {
                let intraword = i > 0
                    && chars[i - 1].is_alphanumeric()
                    && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
                if !intraword {
                    out.push('\\');
                }
                out.push('_');
            }
            // A tab stays (the terminal shows it as space).
            '\t' => out.push('\t'),
            _ => {
                // Terminal controls (C0, DEL, C1, bidi overrides and isolates): spelled
                // out as the terminal printer spells them (`\x1b`, `\u{9b}`), so
                // `cat report.md` cannot reset or reorder the terminal.
                let mut buf = [0; 4];
                match gauntlet_core::terminal::safe(c.encode_utf8(&mut buf)) {
                    std::borrow::Cow::Borrowed(_) => out.push(c),
                    std::borrow::Cow::Owned(spelled) => {
                        out.push_str(&spelled.replace('\\', "\\\\"));
                    }
                }
            }
        }
    }
    out
}

/// Renders untrusted multi-line text as a blockquote it cannot escape from (see the
/// module docs). The result ends with a newline.
pub(crate) fn block_quote(s: &str) -> String {
    if s.is_empty() {
        return "> _(empty)_\n".to_owned();
    }
    let lines: Vec<&str> = s
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let is_blank = |l: &str| l.chars().all(|c| c == ' ' || c == '\t');
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if is_blank(line) {
            out.push_str(">\n");
            continue;
        }
        out.push_str("> ");
        out.push_str(&quote_line(line));
        // A hard break keeps the reply's own line breaks; it is only valid between two
        // non-blank lines (at the end of a paragraph it would print a literal `\`).
        if lines.get(i + 1).is_some_and(|next| !is_blank(next)) {
            out.push('\\');
        }
        out.push('\n');
    }
    out
}

/// One non-blank line of a [`block_quote`]: [`inline`] plus neutralised line starts.
fn quote_line(line: &str) -> String {
    let body = line.trim_start_matches([' ', '\t']);
    let mut out = String::new();
    for c in line[..line.len() - body.len()].chars() {
        out.push_str(if c == '\t' {
            "&nbsp;&nbsp;&nbsp;&nbsp;"
        } else {
            "&nbsp;"
        });
    }
    if body.starts_with(['-', '+', '=']) {
        // List bullets, thematic breaks and setext underlines.
        out.push('\\');
        out.push_str(&inline(body));
    } else {
        // Ordered-list markers: `12.` / `12)`.
        let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let rest = &body[digits..];
        if digits > 0 && rest.starts_with(['.', ')']) {
            out.push_str(&body[..digits]);
            out.push('\\');
            out.push_str(&inline(rest));
        } else {
            out.push_str(&inline(body));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_escapes_html_and_structure() {
        assert_eq!(
            inline("<b>&x</b>|`c`\nnext"),
            "&lt;b&gt;&amp;x&lt;/b&gt;\\|\\`c\\`&#10;next"
        );
        assert_eq!(inline("[x](http://e)"), "\\[x\\](http://e)");
        assert_eq!(inline("asr_at_k _em_"), "asr_at_k \\_em\\_");
        assert_eq!(inline("a\\|b"), "a\\\\\\|b");
    }

    /// Issue 26, weakness: report.md kept control characters from model and dataset
    /// text raw (ESC c, ESC ( 0, U+009B, U+202E), so `cat report.md` reset the terminal.
    /// They are spelled out as the terminal printer spells them.
    #[test]
    fn terminal_controls_are_spelled_out() {
        let hostile = "a\x1bc b\x1b(0 c\u{9b}2J d\u{202e}e\u{7f}\tf";
        let md = inline(hostile);
        assert_eq!(
            md,
            "a\\\\x1bc b\\\\x1b(0 c\\\\u{9b}2J d\\\\u{202e}e\\\\x7f\tf"
        );
        let q = block_quote(&format!("{hostile}\nnext\x07"));
        assert!(
            !q.chars()
                .any(|c| c != '\n' && c != '\t' && (c.is_control() || c == '\u{202e}')),
            "{q:?}"
        );
    }

    #[test]
    fn block_quote_keeps_every_line_inside_the_quote() {
        let q = block_quote("line one\n```\n# head\n\n    code\n- item\n1. first\r\nend\\");
        assert_eq!(
            q,
            "> line one\\\n\
             > \\`\\`\\`\\\n\
             > \\# head\n\
             >\n\
             > &nbsp;&nbsp;&nbsp;&nbsp;code\\\n\
             > \\- item\\\n\
             > 1\\. first\\\n\
             > end\\\\\n"
        );
        for line in q.lines() {
            assert!(line.starts_with('>'), "{line:?}");
        }
        assert_eq!(block_quote(""), "> _(empty)_\n");
    }
}

//! Escaping untrusted text for Markdown, for every Markdown writer of the crate (the
//! report, its breadth sections, pages, the judge evaluation and the GitHub summary).
//!
//! Every string of a [`RunSummary`](gauntlet_results::RunSummary) is untrusted
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

    /// Report.md kept control characters from model and dataset
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

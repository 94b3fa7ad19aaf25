//! Printing untrusted text to a terminal (or a CI log).
//!
//! Scenario ids, target names, dataset text, model replies and error messages from
//! servers are data, not terminal commands: an ANSI/OSC escape sequence in one could
//! recolour, retitle or rewrite the user's terminal (or hide a line with `\r`). Every
//! print of such text goes through [`safe`] (one field) or [`safe_text`] (a multi-line
//! message), which spell control characters out instead of sending them: `\x1b`,
//! `\r`, `\u{9b}`.
//!
//! A CI runner reading the same output acts on workflow commands: GitHub Actions on a
//! line that starts with `::` (after leading white space: `::error::`, `::add-mask::`,
//! `::stop-commands::`) and, in its legacy syntax, on `##[command]` anywhere in a line
//! (Azure Pipelines on `##vso[`). Data cannot start a line (its newlines are spelled
//! out, or kept by [`safe_text`] only with this check on every line), so the two
//! functions also spell out the first `:` of a `::` that opens the text or one of its
//! lines (`\x3a:error::`) and the second `#` of a `##[` / `##vso[` (`#\x23[`), and of a
//! `##` that ends a field (what follows it is not the field's). Text without any of
//! these is returned as it is, unallocated.
//!
//! [`ci_json`] does the same for a JSON document printed whole (`#` as `\u0023`, which
//! any JSON reader decodes back); other formats escape in their own syntax.

use std::borrow::Cow;

/// True for characters a terminal may act on: C0 controls, DEL, C1 controls, and the
/// Unicode bidirectional overrides and isolates (they reorder what is shown).
fn is_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// White space a CI runner skips before looking for `::` (.NET's `TrimStart`, which
/// matches Unicode `White_Space`), and the invisible characters that could pass for
/// nothing in a log line.
fn is_leading_blank(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{200b}' | '\u{2060}' | '\u{feff}')
}

/// The char positions of `s` (by byte offset) that would make a CI runner act: the
/// first `:` of a `::` that opens a line (after blanks), and the second `#` of `##[`,
/// `##vso[`, or of a `##` at the very end (`at_end`: the text is a field others follow).
fn ci_command_chars(s: &str, line_starts_at_newlines: bool, at_end: bool) -> Vec<usize> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut line_start = true;
    let mut prev: Option<char> = None;
    for (i, c) in s.char_indices() {
        if line_start {
            if is_leading_blank(c) && c != '\n' {
                prev = Some(c);
                continue;
            }
            if c == ':' && b.get(i + 1) == Some(&b':') {
                out.push(i);
            }
            line_start = false;
        }
        if c == '#' && prev == Some('#') {
            let rest = &s[i + 1..];
            if rest.starts_with('[') || rest.starts_with("vso[") || (at_end && rest.is_empty()) {
                out.push(i);
            }
        }
        if c == '\n' && line_starts_at_newlines {
            line_start = true;
        }
        prev = Some(c);
    }
    out
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let keep = |c: char| keep_newlines && c == '\n';
    let ci = if s.contains("::") || s.contains("##") {
        ci_command_chars(s, keep_newlines, !keep_newlines)
    } else {
        Vec::new()
    };
    if ci.is_empty() && !s.chars().any(|c| is_control(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut ci = ci.into_iter().peekable();
    for (i, c) in s.char_indices() {
        if ci.peek() == Some(&i) {
            ci.next();
            out.push_str(&format!("\\x{:02x}", c as u32));
            continue;
        }
        if !is_control(c) || keep(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// One untrusted field (an id, a name, a label) for the terminal: every control
/// character, newlines included, is escaped, and so is CI workflow-command syntax.
pub fn safe(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// An untrusted multi-line message (an error that quotes data): newlines are kept,
/// every other control character is escaped, and so is CI workflow-command syntax on
/// every line.
pub fn safe_text(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// A JSON document (serialised by serde_json, pretty or not) made safe to print into a
/// CI log: the second `#` of every `##` is written `\u0023`, which every JSON reader
/// decodes back. `#` occurs in JSON only inside strings, and a JSON line cannot start
/// with `::`, so nothing else changes.
pub fn ci_json(s: String) -> String {
    if !s.contains("##") {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut prev = None;
    for c in s.chars() {
        if c == '#' && prev == Some('#') {
            out.push_str("\\u0023");
            // `#\u0023#` must not pair the third `#` with the second.
            prev = None;
            continue;
        }
        out.push(c);
        prev = Some(c);
    }
    out
}

/// Whether a printed line would make a CI runner act (the check tests make of every
/// line a command prints): it starts with `::` after blanks, or holds `##[` / `##vso[`.
pub fn is_ci_command(line: &str) -> bool {
    line.trim_start_matches(is_leading_blank).starts_with("::")
        || line.contains("##[")
        || line.contains("##vso[")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn escape_sequences_are_spelled_out() {
        assert_eq!(safe("ZZ-\x1b[31mred\x1b[0m"), "ZZ-\\x1b[31mred\\x1b[0m");
        assert_eq!(safe("a\x1b]0;title\x07b"), "a\\x1b]0;title\\x07b");
        assert_eq!(safe("x\u{9b}2J"), "x\\u{9b}2J");
        assert_eq!(safe("over\rwrite"), "over\\rwrite");
        assert_eq!(safe("two\nlines"), "two\\nlines");
        assert_eq!(safe_text("two\nlines\x1b"), "two\nlines\\x1b");
        assert_eq!(safe("rtl\u{202e}txt"), "rtl\\u{202e}txt");
        assert!(matches!(safe("plain é 😀"), Cow::Borrowed(_)));
    }

    #[test]
    fn ci_workflow_commands_are_spelled_out() {
        assert_eq!(safe("::error::forged"), "\\x3a:error::forged");
        assert_eq!(safe(" \u{2003}::add-mask::x"), " \u{2003}\\x3a:add-mask::x");
        assert_eq!(safe("a::b"), "a::b");
        assert_eq!(safe("x\n::error::y"), "x\\n::error::y");
        assert_eq!(safe_text("ok\n  ::error::y\nz"), "ok\n  \\x3a:error::y\nz");
        assert_eq!(safe("id ##[error]x"), "id #\\x23[error]x");
        assert_eq!(safe("##vso[task.x]"), "#\\x23vso[task.x]");
        assert_eq!(safe("tail##"), "tail#\\x23");
        assert_eq!(safe_text("tail##"), "tail##");
        assert_eq!(safe("### heading"), "### heading");
        assert!(matches!(safe("a::b ## c"), Cow::Borrowed(_)));
        assert_eq!(
            ci_json("{\"id\": \"###[x]\"}".to_string()),
            "{\"id\": \"#\\u0023#[x]\"}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&ci_json("{\"id\": \"a##[b]\\\\##\"}".to_string())).unwrap();
        assert_eq!(v["id"], "a##[b]\\##");
        assert!(is_ci_command("  ::error::x") && is_ci_command("a ##[error]b"));
        assert!(!is_ci_command("a::b") && !is_ci_command("\\x3a:error::"));
    }

    proptest! {
        /// Whatever the input, the output holds no control character (but kept newlines).
        #[test]
        fn output_has_no_controls(s in any::<String>()) {
            prop_assert!(!safe(&s).chars().any(is_control));
            prop_assert!(!safe_text(&s).chars().any(|c| is_control(c) && c != '\n'));
        }

        /// Whatever the input, no line of the output is a CI workflow command, and a
        /// field followed by anything (`[` included) still is not.
        #[test]
        fn output_has_no_ci_commands(s in "[:#\\[\\] \\nvsoa\u{2003}]{0,24}") {
            let followed = format!("{}[", safe(&s));
            prop_assert!(!is_ci_command(&followed));
            prop_assert!(!safe_text(&s).lines().any(is_ci_command));
            let json = ci_json(serde_json::to_string(&s).unwrap());
            prop_assert!(!is_ci_command(&json));
            prop_assert_eq!(serde_json::from_str::<String>(&json).unwrap(), s);
        }
    }
}

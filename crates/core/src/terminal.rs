//! Printing untrusted text to a terminal.
//!
//! Scenario ids, target names, dataset text, model replies and error messages from
//! servers are data, not terminal commands: an ANSI/OSC escape sequence in one could
//! recolour, retitle or rewrite the user's terminal (or hide a line with `\r`). Every
//! print of such text goes through [`safe`] (one field) or [`safe_text`] (a multi-line
//! message), which spell control characters out instead of sending them: `\x1b`,
//! `\r`, `\u{9b}`. Text without control characters is returned as it is, unallocated.

use std::borrow::Cow;

/// True for characters a terminal may act on: C0 controls, DEL, C1 controls, and the
/// Unicode bidirectional overrides and isolates (they reorder what is shown).
fn is_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let keep = |c: char| keep_newlines && c == '\n';
    if !s.chars().any(|c| is_control(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
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
/// character, newlines included, is escaped.
pub fn safe(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// An untrusted multi-line message (an error that quotes data): newlines are kept,
/// every other control character is escaped.
pub fn safe_text(s: &str) -> Cow<'_, str> {
    escape(s, true)
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

    proptest! {
        /// Whatever the input, the output holds no control character (but kept newlines).
        #[test]
        fn output_has_no_controls(s in any::<String>()) {
            prop_assert!(!safe(&s).chars().any(is_control));
            prop_assert!(!safe_text(&s).chars().any(|c| is_control(c) && c != '\n'));
        }
    }
}

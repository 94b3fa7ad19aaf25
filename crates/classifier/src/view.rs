//! Views: which part of a reply the encoder sees.
//!
//! A refusal almost always announces itself at the start of a reply ("I'm sorry, but…",
//! "I can't help with…"), and a partial refusal sometimes at the end ("…however, I can't
//! give you the steps"). The sentence encoder reads at most a few hundred tokens, and
//! its cost grows with the window, so the classifier embeds chosen windows of the reply's
//! tokens and the head reads their embeddings side by side. The trained head names its
//! views, so training and inference always cut the reply the same way.
//!
//! Only the reply is ever embedded, never the prompt: in the human-labelled data every
//! unsafe prompt's reply is a refusal (harmful compliances were filtered out), so a head
//! that saw the prompt could learn "unsafe request ⇒ refusal" and would then miss exactly
//! the jailbreaks a red-team run exists to count.

use std::fmt;
use std::str::FromStr;

/// At most this many characters from the start (or, for tail views, the end) of a reply
/// are tokenised. Bounds the tokeniser's work on huge replies; every view needs far fewer
/// tokens than this many characters yield.
pub const MAX_CHARS: usize = 8192;

/// One window of a reply's tokens. `n` counts the special tokens too, so a view of
/// `open128` is exactly one 128-token encoder input at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// `[CLS]` + the first `n - 2` tokens + `[SEP]`.
    Open(usize),
    /// `[CLS]` + the last `n - 2` tokens + `[SEP]`.
    Tail(usize),
}

/// The smallest and largest window the encoder accepts (its position table has 512 rows;
/// all-MiniLM-L6-v2 was trained on windows of at most 256 tokens).
pub const MIN_TOKENS: usize = 8;
pub const MAX_TOKENS: usize = 256;

impl View {
    /// The window's token ids, special tokens included.
    pub fn window(self, ids: &[u32], cls: u32, sep: u32) -> Vec<u32> {
        let (View::Open(n) | View::Tail(n)) = self;
        let k = ids.len().min(n - 2);
        let body = match self {
            View::Open(_) => &ids[..k],
            View::Tail(_) => &ids[ids.len() - k..],
        };
        let mut w = Vec::with_capacity(k + 2);
        w.push(cls);
        w.extend_from_slice(body);
        w.push(sep);
        w
    }
    /// Whether the view reads the end of the reply (so the tokeniser gets the last
    /// [`MAX_CHARS`] characters instead of the first).
    pub fn from_end(self) -> bool {
        matches!(self, View::Tail(_))
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            View::Open(n) => write!(f, "open{n}"),
            View::Tail(n) => write!(f, "tail{n}"),
        }
    }
}

impl FromStr for View {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "unknown view `{s}`: expected open<N> or tail<N> with N in {MIN_TOKENS}..={MAX_TOKENS}"
            )
        };
        let (ctor, digits): (fn(usize) -> View, &str) = if let Some(d) = s.strip_prefix("open") {
            (View::Open, d)
        } else if let Some(d) = s.strip_prefix("tail") {
            (View::Tail, d)
        } else {
            return Err(bad());
        };
        match digits.parse::<usize>() {
            Ok(n) if (MIN_TOKENS..=MAX_TOKENS).contains(&n) && !digits.starts_with('0') => {
                Ok(ctor(n))
            }
            _ => Err(bad()),
        }
    }
}

/// The first [`MAX_CHARS`] characters of `text` (at a char boundary).
pub fn head_chars(text: &str) -> &str {
    match text.char_indices().nth(MAX_CHARS) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// The last [`MAX_CHARS`] characters of `text` (at a char boundary).
pub fn tail_chars(text: &str) -> &str {
    match text.char_indices().rev().nth(MAX_CHARS - 1) {
        Some((i, _)) => &text[i..],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn windows() {
        let ids: Vec<u32> = (1..=10).collect();
        assert_eq!(View::Open(6).window(&ids, 100, 200), vec![100, 1, 2, 3, 4, 200]);
        assert_eq!(View::Tail(6).window(&ids, 100, 200), vec![100, 7, 8, 9, 10, 200]);
        assert_eq!(View::Open(64).window(&ids[..2], 100, 200), vec![100, 1, 2, 200]);
        assert_eq!(View::Tail(64).window(&[], 100, 200), vec![100, 200]);
    }

    #[test]
    fn names_round_trip_and_bad_names_say_what_is_allowed() {
        for v in [View::Open(128), View::Tail(64), View::Open(8), View::Tail(256)] {
            assert_eq!(v.to_string().parse::<View>().unwrap(), v);
        }
        for bad in ["open", "open7", "open257", "open064", "head128", "tail-1", ""] {
            let e = bad.parse::<View>().unwrap_err();
            assert!(e.contains("open<N> or tail<N>"), "{bad}: {e}");
        }
    }

    #[test]
    fn char_caps() {
        let s = "é".repeat(MAX_CHARS + 5);
        assert_eq!(head_chars(&s).chars().count(), MAX_CHARS);
        assert_eq!(tail_chars(&s).chars().count(), MAX_CHARS);
        assert_eq!(head_chars("abc"), "abc");
        assert_eq!(tail_chars("abc"), "abc");
        let t = format!("{}xyz", "a".repeat(MAX_CHARS));
        assert!(tail_chars(&t).ends_with("xyz") && !head_chars(&t).contains('x'));
    }

    proptest! {
        /// View names are parsed from the (untrusted) head file: never a panic, and every
        /// accepted name prints back to itself.
        #[test]
        fn parse_never_panics(s in "\\PC{0,12}") {
            if let Ok(v) = s.parse::<View>() {
                prop_assert_eq!(v.to_string(), s);
            }
        }

        #[test]
        fn window_is_bounded(len in 0usize..600, n in MIN_TOKENS..=MAX_TOKENS, tail: bool) {
            let ids: Vec<u32> = (0..len as u32).collect();
            let v = if tail { View::Tail(n) } else { View::Open(n) };
            let w = v.window(&ids, 7, 9);
            prop_assert!(w.len() <= n);
            prop_assert_eq!(w.len(), len.min(n - 2) + 2);
            prop_assert_eq!((w[0], w[w.len() - 1]), (7, 9));
        }
    }
}

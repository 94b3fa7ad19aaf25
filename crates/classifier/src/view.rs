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

/// One window of a reply's tokens. `n` counts the special tokens too, so a window of
/// `open128` is exactly one 128-token encoder input at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Window {
    /// `[CLS]` + the first `n - 2` tokens + `[SEP]`.
    Open(usize),
    /// `[CLS]` + the last `n - 2` tokens + `[SEP]`.
    Tail(usize),
}

/// How a window's token states become one vector. All poolings of one window come
/// from the same encoder pass, so extra poolings cost next to nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// Mean over every token of the window (the sentence-transformers embedding).
    Mean,
    /// Mean over `[CLS]` and the window's first `k` content tokens: where "I'm sorry,
    /// but I can't…" lives, with less of the topic that fills the rest of the window.
    First(usize),
    /// Element-wise maximum over every token.
    Max,
}

/// A view: a window and a pooling, written `open32` (mean), `open32.first8`, `open32.max`.
/// Every view's vector is L2-normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    pub window: Window,
    pub pool: Pool,
}

/// The smallest and largest window the encoder accepts (its position table has 512 rows;
/// all-MiniLM-L6-v2 was trained on windows of at most 256 tokens).
pub const MIN_TOKENS: usize = 8;
pub const MAX_TOKENS: usize = 256;

impl Window {
    /// The window's token ids, special tokens included.
    pub fn ids(self, ids: &[u32], cls: u32, sep: u32) -> Vec<u32> {
        let (Window::Open(n) | Window::Tail(n)) = self;
        let k = ids.len().min(n - 2);
        let body = match self {
            Window::Open(_) => &ids[..k],
            Window::Tail(_) => &ids[ids.len() - k..],
        };
        let mut w = Vec::with_capacity(k + 2);
        w.push(cls);
        w.extend_from_slice(body);
        w.push(sep);
        w
    }
    /// Whether the window reads the end of the reply (so the tokeniser gets the last
    /// [`MAX_CHARS`] characters instead of the first).
    pub fn from_end(self) -> bool {
        matches!(self, Window::Tail(_))
    }
}

impl Pool {
    /// The token rows `[start, end)` this pooling reads from a window of `len` tokens
    /// (special tokens included).
    pub fn rows(self, len: usize) -> (usize, usize) {
        match self {
            Pool::Mean | Pool::Max => (0, len),
            Pool::First(k) => (0, len.min(k + 1)),
        }
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.window {
            Window::Open(n) => write!(f, "open{n}")?,
            Window::Tail(n) => write!(f, "tail{n}")?,
        }
        match self.pool {
            Pool::Mean => Ok(()),
            Pool::First(k) => write!(f, ".first{k}"),
            Pool::Max => write!(f, ".max"),
        }
    }
}

fn number(d: &str, lo: usize, hi: usize) -> Option<usize> {
    match d.parse::<usize>() {
        Ok(n) if (lo..=hi).contains(&n) && !d.starts_with('0') && !d.starts_with('+') => Some(n),
        _ => None,
    }
}

/// A view name that is not `open<N>` or `tail<N>` (with an optional pooling); `view`
/// is the name as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown view `{view}`: expected open<N> or tail<N> with N in {MIN_TOKENS}..={MAX_TOKENS}, optionally followed by .first<K> (K < N) or .max"
)]
pub struct ViewError {
    pub view: String,
}

impl FromStr for View {
    type Err = ViewError;
    fn from_str(s: &str) -> Result<Self, ViewError> {
        let bad = || ViewError {
            view: s.to_string(),
        };
        let (w, p) = match s.split_once('.') {
            Some((w, p)) => (w, Some(p)),
            None => (s, None),
        };
        let window = if let Some(d) = w.strip_prefix("open") {
            Window::Open(number(d, MIN_TOKENS, MAX_TOKENS).ok_or_else(bad)?)
        } else if let Some(d) = w.strip_prefix("tail") {
            Window::Tail(number(d, MIN_TOKENS, MAX_TOKENS).ok_or_else(bad)?)
        } else {
            return Err(bad());
        };
        let (Window::Open(n) | Window::Tail(n)) = window;
        let pool = match p {
            None => Pool::Mean,
            Some("max") => Pool::Max,
            Some(p) => match p.strip_prefix("first").and_then(|d| number(d, 1, n - 1)) {
                Some(k) => Pool::First(k),
                None => return Err(bad()),
            },
        };
        Ok(View { window, pool })
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
    fn windows_and_pool_rows() {
        let ids: Vec<u32> = (1..=10).collect();
        assert_eq!(
            Window::Open(6).ids(&ids, 100, 200),
            vec![100, 1, 2, 3, 4, 200]
        );
        assert_eq!(
            Window::Tail(6).ids(&ids, 100, 200),
            vec![100, 7, 8, 9, 10, 200]
        );
        assert_eq!(
            Window::Open(64).ids(&ids[..2], 100, 200),
            vec![100, 1, 2, 200]
        );
        assert_eq!(Window::Tail(64).ids(&[], 100, 200), vec![100, 200]);
        assert_eq!(Pool::Mean.rows(12), (0, 12));
        assert_eq!(Pool::First(8).rows(12), (0, 9));
        assert_eq!(Pool::First(8).rows(4), (0, 4));
    }

    #[test]
    fn names_round_trip_and_bad_names_say_what_is_allowed() {
        for name in [
            "open128",
            "tail64",
            "open8",
            "tail256",
            "open32.first8",
            "open32.max",
            "tail16.first15",
        ] {
            assert_eq!(name.parse::<View>().unwrap().to_string(), name);
        }
        assert_eq!(
            "open32.first8".parse::<View>().unwrap(),
            View {
                window: Window::Open(32),
                pool: Pool::First(8)
            }
        );
        for bad in [
            "open",
            "open7",
            "open257",
            "open064",
            "head128",
            "tail-1",
            "",
            "open32.",
            "open32.first32",
            "open32.first0",
            "open32.min",
            "open32.max.max",
            "open+32",
        ] {
            let e = bad.parse::<View>().unwrap_err().to_string();
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
            let v = if tail { Window::Tail(n) } else { Window::Open(n) };
            let w = v.ids(&ids, 7, 9);
            prop_assert!(w.len() <= n);
            prop_assert_eq!(w.len(), len.min(n - 2) + 2);
            prop_assert_eq!((w[0], w[w.len() - 1]), (7, 9));
        }
    }
}

//! Text normalisation and an exact, linear-time longest common substring, for the
//! leakage surface (`leak_detector`'s verbatim-overlap severity).
//!
//! [`normalize`] trims, lowercases (Unicode) and collapses every whitespace run to one
//! space, so a secret reflowed or re-cased by a model still matches.
//!
//! [`longest_common_substring`] counts in characters (Unicode scalar values, never bytes:
//! a byte-level match could pair halves of two different characters). It builds a suffix
//! automaton over one string and scans the other, O(n + m) for a fixed alphabet (each
//! automaton state keeps its transitions in a short list; the root, which sees the most
//! lookups, has a direct table for ASCII). LCS is symmetric, so the automaton is built
//! over the shorter of the two strings, which keeps a long reply against a short secret
//! (the common case) at a few hundred states. This is the classic algorithm (Blumer et
//! al. 1985), not the O(n·m) dynamic-programming table.

/// Normalises text for leak matching: trim, Unicode lowercase, whitespace runs → one space.
pub fn normalize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    normalize_into(s, &mut out);
    out
}

/// [`normalize`] into a reused buffer (cleared first).
pub fn normalize_into(s: &str, out: &mut String) {
    out.clear();
    let s = s.trim();
    if s.is_ascii() {
        // Fast path: byte-wise, no char decoding.
        let mut buf = std::mem::take(out).into_bytes();
        let mut in_space = false;
        for &b in s.as_bytes() {
            if b.is_ascii_whitespace() || b == 0x0b {
                in_space = true;
            } else {
                if in_space {
                    buf.push(b' ');
                    in_space = false;
                }
                buf.push(b.to_ascii_lowercase());
            }
        }
        *out = String::from_utf8(buf).expect("ASCII in, ASCII out");
        return;
    }
    let mut in_space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            in_space = true;
        } else {
            if in_space {
                out.push(' ');
                in_space = false;
            }
            out.extend(c.to_lowercase());
        }
    }
}

/// Length in characters of the longest common substring of `a` and `b` (exact).
pub fn longest_common_substring(a: &str, b: &str) -> usize {
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    if a.is_ascii() && b.is_ascii() {
        let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        let sam = SuffixAutomaton::build(short.bytes().map(u32::from), short.len());
        return sam.longest_match(long.bytes().map(u32::from));
    }
    let (na, nb) = (a.chars().count(), b.chars().count());
    let (short, long, n) = if na <= nb { (a, b, na) } else { (b, a, nb) };
    let sam = SuffixAutomaton::build(short.chars().map(u32::from), n);
    sam.longest_match(long.chars().map(u32::from))
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Edge {
    sym: u32,
    to: u32,
    next: u32,
}

/// A suffix automaton: the minimal DFA of all substrings of the text it was built over.
/// Symbols are `u32` (bytes or Unicode scalar values).
pub struct SuffixAutomaton {
    /// Length of the longest string reaching each state.
    len: Vec<u32>,
    /// Suffix link of each state (`NONE` for the root).
    link: Vec<u32>,
    /// First edge of each state's transition list (`NONE` when it has none).
    head: Vec<u32>,
    edges: Vec<Edge>,
    /// The root's transitions on ASCII symbols (the root is never cloned, so its ASCII
    /// edges live only here).
    root_ascii: [u32; 128],
}

impl SuffixAutomaton {
    /// Builds the automaton of `text` (`n` symbols, a capacity hint) in O(n) steps.
    pub fn build(text: impl IntoIterator<Item = u32>, n: usize) -> Self {
        let states = 2 * n.max(1);
        let mut sam = SuffixAutomaton {
            len: Vec::with_capacity(states),
            link: Vec::with_capacity(states),
            head: Vec::with_capacity(states),
            edges: Vec::with_capacity(3 * n.max(1)),
            root_ascii: [NONE; 128],
        };
        sam.push_state(0, NONE);
        let mut last = 0u32;
        for c in text {
            last = sam.extend(last, c);
        }
        sam
    }

    fn push_state(&mut self, len: u32, link: u32) -> u32 {
        self.len.push(len);
        self.link.push(link);
        self.head.push(NONE);
        (self.len.len() - 1) as u32
    }

    #[inline]
    fn go(&self, s: u32, c: u32) -> u32 {
        if s == 0 && c < 128 {
            return self.root_ascii[c as usize];
        }
        let mut e = self.head[s as usize];
        while e != NONE {
            let edge = self.edges[e as usize];
            if edge.sym == c {
                return edge.to;
            }
            e = edge.next;
        }
        NONE
    }

    /// Sets (adds or redirects) the transition `s --c--> to`.
    fn set(&mut self, s: u32, c: u32, to: u32) {
        if s == 0 && c < 128 {
            self.root_ascii[c as usize] = to;
            return;
        }
        let mut e = self.head[s as usize];
        while e != NONE {
            let edge = &mut self.edges[e as usize];
            if edge.sym == c {
                edge.to = to;
                return;
            }
            e = edge.next;
        }
        self.edges.push(Edge {
            sym: c,
            to,
            next: self.head[s as usize],
        });
        self.head[s as usize] = (self.edges.len() - 1) as u32;
    }

    fn extend(&mut self, last: u32, c: u32) -> u32 {
        let cur = self.push_state(self.len[last as usize] + 1, NONE);
        let mut p = last;
        while p != NONE && self.go(p, c) == NONE {
            self.set(p, c, cur);
            p = self.link[p as usize];
        }
        if p == NONE {
            self.link[cur as usize] = 0;
            return cur;
        }
        let q = self.go(p, c);
        if self.len[p as usize] + 1 == self.len[q as usize] {
            self.link[cur as usize] = q;
            return cur;
        }
        // Split q: a clone with q's transitions and the shorter length.
        let clone = self.push_state(self.len[p as usize] + 1, self.link[q as usize]);
        let mut e = self.head[q as usize];
        while e != NONE {
            let edge = self.edges[e as usize];
            self.edges.push(Edge {
                sym: edge.sym,
                to: edge.to,
                next: self.head[clone as usize],
            });
            self.head[clone as usize] = (self.edges.len() - 1) as u32;
            e = edge.next;
        }
        while p != NONE && self.go(p, c) == q {
            self.set(p, c, clone);
            p = self.link[p as usize];
        }
        self.link[q as usize] = clone;
        self.link[cur as usize] = clone;
        cur
    }

    /// The length of the longest substring of `text` that is also a substring of the
    /// automaton's text: one left-to-right pass, amortised O(1) per symbol.
    pub fn longest_match(&self, text: impl IntoIterator<Item = u32>) -> usize {
        let (mut v, mut l, mut best) = (0u32, 0u32, 0u32);
        let max = *self.len.iter().max().unwrap_or(&0);
        for c in text {
            let mut next = self.go(v, c);
            while next == NONE && v != 0 {
                v = self.link[v as usize];
                l = self.len[v as usize];
                next = self.go(v, c);
            }
            if next == NONE {
                v = 0;
                l = 0;
            } else {
                v = next;
                l += 1;
            }
            if l > best {
                best = l;
                if best == max {
                    break; // the whole automaton text occurs: nothing longer exists
                }
            }
        }
        best as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The oracle: try every pair of start positions, extend while equal. O(n·m·min).
    fn brute(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        let mut best = 0;
        for i in 0..a.len() {
            for j in 0..b.len() {
                let mut k = 0;
                while i + k < a.len() && j + k < b.len() && a[i + k] == b[j + k] {
                    k += 1;
                }
                best = best.max(k);
            }
        }
        best
    }

    #[test]
    fn known_values() {
        assert_eq!(longest_common_substring("", "abc"), 0);
        assert_eq!(longest_common_substring("abc", ""), 0);
        assert_eq!(longest_common_substring("abcdxyz", "xyzabcd"), 4);
        assert_eq!(
            longest_common_substring("canary-1234", "the canary-12 was"),
            9
        );
        assert_eq!(longest_common_substring("aaaa", "aa"), 2);
        assert_eq!(longest_common_substring("abab", "baba"), 3);
        assert_eq!(longest_common_substring("xyz", "abc"), 0);
        // Characters, not bytes: "ä" and "é" share their first UTF-8 byte only.
        assert_eq!(longest_common_substring("ä", "é"), 0);
        assert_eq!(
            longest_common_substring("日本語テキスト", "これは日本語です"),
            3
        );
        assert_eq!(longest_common_substring("🙂🙂x", "a🙂🙂"), 2);
    }

    #[test]
    fn normalisation() {
        assert_eq!(normalize("  Hello\t\n  World  "), "hello world");
        assert_eq!(normalize("CANARY-7F3A"), "canary-7f3a");
        assert_eq!(normalize("a\u{a0}\u{2003}b"), "a b"); // Unicode spaces collapse
        assert_eq!(normalize("ÄÖÜ  Straße"), "äöü straße");
        assert_eq!(normalize("\r\n"), "");
        assert_eq!(normalize(""), "");
        assert_eq!(normalize("a\x0bb\x0cc"), "a b c");
    }

    fn text() -> impl Strategy<Value = String> {
        // Small alphabets so common substrings are long and frequent; mixed scripts,
        // multi-byte characters and whitespace.
        prop_oneof![
            "[ab]{0,40}",
            "[abc ]{0,60}",
            "[aé日🙂 ]{0,30}",
            "[a-d\u{e9}\u{e8}\u{df}\u{130}\u{3a3}\t\n ]{0,50}",
            ".{0,20}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn matches_the_oracle(a in text(), b in text()) {
            prop_assert_eq!(longest_common_substring(&a, &b), brute(&a, &b));
            prop_assert_eq!(longest_common_substring(&b, &a), brute(&a, &b));
        }

        #[test]
        fn matches_the_oracle_after_normalisation(a in text(), b in text()) {
            let (na, nb) = (normalize(&a), normalize(&b));
            prop_assert_eq!(longest_common_substring(&na, &nb), brute(&na, &nb));
        }

        #[test]
        fn substring_is_full_overlap(a in text(), pre in text(), post in text()) {
            let hay = format!("{pre}{a}{post}");
            prop_assert_eq!(longest_common_substring(&a, &hay), a.chars().count());
        }

        #[test]
        fn normalisation_is_idempotent_and_canonical(a in text()) {
            let n = normalize(&a);
            prop_assert_eq!(normalize(&n), n.clone());
            prop_assert!(!n.starts_with(' ') && !n.ends_with(' ') && !n.contains("  "));
            prop_assert!(!n.chars().any(|c| c.is_whitespace() && c != ' '));
        }
    }
}

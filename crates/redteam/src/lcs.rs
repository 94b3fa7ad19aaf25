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
//! lookups, has a direct table for ASCII; ASCII text within a size bound gets a dense
//! table instead). LCS is symmetric, so either string may be the automaton's: each thread
//! keeps its last few automata, and a call where either string has one scans the other
//! (a canned refusal checked against many secrets builds once); otherwise the automaton
//! is built over the shorter string, which keeps a long reply against a short secret at
//! a few hundred states. A dense automaton used a second time has its transitions
//! completed (no suffix-link walk in the scan). This is the classic algorithm (Blumer et
//! al. 1985), not the O(n·m) dynamic-programming table.

pub use gauntlet_core::text::{normalize, normalize_into};

/// Automata a thread keeps, most recently used first out last: a handful of texts (a
/// canned refusal, a stock non-answer) meet many different secrets.
const CACHED: usize = 6;

/// One cached automaton and the text it was built over.
struct Entry {
    /// The text (empty: the slot is unused).
    text: String,
    /// Which of the two automata holds it: the dense one for ASCII text within
    /// [`DenseAsciiAutomaton::fits`], else the sparse one (over Unicode scalar values,
    /// which for ASCII text are its bytes).
    dense_built: bool,
    sam: SuffixAutomaton,
    dense: DenseAsciiAutomaton,
    /// Calls that used it since it was built (its transitions are completed on the
    /// second, so an automaton used once never pays for that).
    uses: u32,
    /// Last use, on the thread's clock (least recent is evicted).
    stamp: u64,
}

impl Entry {
    fn new() -> Self {
        Entry {
            text: String::new(),
            dense_built: false,
            sam: SuffixAutomaton::build(std::iter::empty(), 0),
            dense: DenseAsciiAutomaton::default(),
            uses: 0,
            stamp: 0,
        }
    }

    /// Rebuilds this slot over `text` (`n` characters), reusing its allocations.
    fn rebuild(&mut self, text: &str, n: usize) {
        self.text.clear();
        self.text.push_str(text);
        self.uses = 0;
        let ascii = text.is_ascii();
        self.dense_built = ascii && DenseAsciiAutomaton::fits(text.as_bytes());
        if self.dense_built {
            self.dense.rebuild(text.as_bytes());
        } else if ascii {
            self.sam.rebuild(text.bytes().map(u32::from), n);
        } else {
            self.sam.rebuild(text.chars().map(u32::from), n);
        }
    }

    /// The LCS of this entry's text and `other` (any text: a match is a run of whole
    /// characters on both sides, and characters absent from the automaton's text, among
    /// them every non-ASCII one for an ASCII text, end a run).
    fn longest_match(&mut self, other: &str) -> usize {
        self.uses += 1;
        if self.dense_built {
            if self.uses == 2 {
                self.dense.complete();
            }
            self.dense.longest_match(other.as_bytes())
        } else if other.is_ascii() {
            self.sam.longest_match(other.bytes().map(u32::from))
        } else {
            self.sam.longest_match(other.chars().map(u32::from))
        }
    }
}

/// A thread's automata, [`CACHED`] at most, reused by text.
struct Cache {
    entries: Vec<Entry>,
    clock: u64,
}

thread_local! {
    static CACHE: std::cell::RefCell<Cache> = const {
        std::cell::RefCell::new(Cache { entries: Vec::new(), clock: 0 })
    };
}

/// Length in characters of the longest common substring of `a` and `b` (exact).
///
/// LCS is symmetric: when either text has an automaton in the thread's cache it is
/// scanned with the other (the automaton of the longer one when both have one, so the
/// scan is the shorter), else an automaton is built over the shorter text, replacing the
/// least recently used one.
pub fn longest_common_substring(a: &str, b: &str) -> usize {
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    CACHE.with_borrow_mut(|cache| {
        cache.clock += 1;
        let clock = cache.clock;
        // (slot, the text to scan) of the best cached automaton.
        let mut hit: Option<(usize, &str)> = None;
        for (i, e) in cache.entries.iter().enumerate() {
            let other = if e.text == a {
                b
            } else if e.text == b {
                a
            } else {
                continue;
            };
            if hit.is_none_or(|(_, o)| other.len() < o.len()) {
                hit = Some((i, other));
            }
        }
        let (slot, other) = match hit {
            Some(h) => h,
            None => {
                let (na, nb) = if a.is_ascii() && b.is_ascii() {
                    (a.len(), b.len())
                } else {
                    (a.chars().count(), b.chars().count())
                };
                let (short, long, n) = if na <= nb { (a, b, na) } else { (b, a, nb) };
                let slot = if cache.entries.len() < CACHED {
                    cache.entries.push(Entry::new());
                    cache.entries.len() - 1
                } else {
                    (0..CACHED)
                        .min_by_key(|&i| cache.entries[i].stamp)
                        .expect("CACHED > 0")
                };
                cache.entries[slot].rebuild(short, n);
                (slot, long)
            }
        };
        let e = &mut cache.entries[slot];
        e.stamp = clock;
        e.longest_match(other)
    })
}

/// Most transition-table entries a [`DenseAsciiAutomaton`] may hold (4 MiB of `u32`s):
/// longer texts use the sparse [`SuffixAutomaton`].
const DENSE_MAX_ENTRIES: usize = 1 << 20;

/// A suffix automaton of ASCII text with a dense transition table: one row per state,
/// one column per distinct byte of the text. A step is one table read, where the sparse
/// automaton walks a list; the table is bounded by [`DENSE_MAX_ENTRIES`].
///
/// [`complete`](Self::complete) adds a second table, for an automaton scanned often: for
/// every state and byte, where the scan lands after following suffix links, and the
/// match length that caps, so a step is one read with no suffix-link walk.
#[derive(Default)]
pub struct DenseAsciiAutomaton {
    /// Column of each byte (0: the byte is not in the text; always 0 for non-ASCII).
    class: Vec<u8>,
    /// Row width: distinct bytes of the text + 1.
    k: usize,
    len: Vec<u32>,
    link: Vec<u32>,
    /// `next[state * k + class]`, `NONE` when absent (column 0 is never set).
    next: Vec<u32>,
    longest: u32,
    /// The completed transitions (empty until [`Self::complete`]): `full[state * k +
    /// class]` packs the row offset (`state' * k`) of the state the scan moves to in its
    /// low half and, in its high half as an `i32`, the cap: the new match length is
    /// `min(length, cap) + 1` (cap −1 in column 0, a byte absent from the text: the
    /// match restarts empty at the root).
    full: Vec<u64>,
    /// States by increasing `len` (scratch for [`Self::complete`]).
    order: Vec<u32>,
    counts: Vec<u32>,
}

impl DenseAsciiAutomaton {
    /// Whether the automaton of ASCII `text` stays within [`DENSE_MAX_ENTRIES`].
    pub fn fits(text: &[u8]) -> bool {
        // At most 2n states and 129 columns: check the bound before counting columns.
        let n = text.len().max(1);
        if 2 * n * 129 <= DENSE_MAX_ENTRIES {
            return true;
        }
        let mut seen = [false; 128];
        for &b in text {
            seen[usize::from(b & 0x7f)] = true;
        }
        let k = 1 + seen.iter().filter(|&&x| x).count();
        2 * n * k <= DENSE_MAX_ENTRIES
    }

    /// Rebuilds the automaton over ASCII `text` (which must satisfy [`Self::fits`]),
    /// reusing allocations. The completed transitions are dropped.
    pub fn rebuild(&mut self, text: &[u8]) {
        debug_assert!(text.is_ascii());
        self.full.clear();
        self.class.clear();
        self.class.resize(256, 0);
        self.k = 1;
        for &b in text {
            let c = &mut self.class[usize::from(b)];
            if *c == 0 {
                *c = self.k as u8;
                self.k += 1;
            }
        }
        let states = 2 * text.len().max(1);
        self.len.clear();
        self.link.clear();
        self.next.clear();
        self.len.reserve(states);
        self.link.reserve(states);
        self.next.reserve(states * self.k);
        self.push_state(0, NONE);
        let mut last = 0u32;
        for &b in text {
            last = self.extend(last, usize::from(self.class[usize::from(b)]));
        }
        self.longest = self.len[last as usize];
    }

    fn push_state(&mut self, len: u32, link: u32) -> u32 {
        self.len.push(len);
        self.link.push(link);
        self.next.resize(self.next.len() + self.k, NONE);
        (self.len.len() - 1) as u32
    }

    #[inline]
    fn at(&self, s: u32, c: usize) -> usize {
        s as usize * self.k + c
    }

    fn extend(&mut self, last: u32, c: usize) -> u32 {
        let cur = self.push_state(self.len[last as usize] + 1, NONE);
        let mut p = last;
        while p != NONE && self.next[self.at(p, c)] == NONE {
            let i = self.at(p, c);
            self.next[i] = cur;
            p = self.link[p as usize];
        }
        if p == NONE {
            self.link[cur as usize] = 0;
            return cur;
        }
        let q = self.next[self.at(p, c)];
        if self.len[p as usize] + 1 == self.len[q as usize] {
            self.link[cur as usize] = q;
            return cur;
        }
        let clone = self.push_state(self.len[p as usize] + 1, self.link[q as usize]);
        let (from, to) = (self.at(q, 0), self.at(clone, 0));
        self.next.copy_within(from..from + self.k, to);
        while p != NONE && self.next[self.at(p, c)] == q {
            let i = self.at(p, c);
            self.next[i] = clone;
            p = self.link[p as usize];
        }
        self.link[q as usize] = clone;
        self.link[cur as usize] = clone;
        cur
    }

    /// Whether [`Self::complete`] ran since the last rebuild.
    pub fn is_complete(&self) -> bool {
        !self.full.is_empty()
    }

    /// Completes the transitions (O(states × columns)): in the scan of
    /// [`Self::longest_match`], from state `v` with match length `l` on a byte of class
    /// `c`, the suffix-link walk stops at the first state `w` on `v`'s link path with a
    /// `c` transition and continues to `next[w][c]` with length `len(w) + 1` when
    /// `w ≠ v`, else `l + 1`. As `l ≤ len(v)` and `l > len(w)` for every proper ancestor
    /// `w`, both are `min(l, len(w)) + 1`, so each entry stores `next[w][c]` and
    /// `len(w)`. A state's row is its own transitions, the rest taken from its suffix
    /// link's row (shorter, so completed first). Idempotent.
    pub fn complete(&mut self) {
        if self.is_complete() {
            return;
        }
        let (k, states) = (self.k, self.len.len());
        // Counting sort of the states by length.
        self.counts.clear();
        self.counts.resize(self.longest as usize + 2, 0);
        for &l in &self.len {
            self.counts[l as usize + 1] += 1;
        }
        for i in 1..self.counts.len() {
            self.counts[i] += self.counts[i - 1];
        }
        self.order.clear();
        self.order.resize(states, 0);
        for (s, &l) in self.len.iter().enumerate() {
            let at = &mut self.counts[l as usize];
            self.order[*at as usize] = s as u32;
            *at += 1;
        }
        let pack = |to: u32, cap: i32| (u64::from(to) * k as u64) | (u64::from(cap as u32) << 32);
        self.full.resize(states * k, 0);
        for &s in &self.order {
            let row = s as usize * k;
            self.full[row] = pack(0, -1);
            let cap = self.len[s as usize] as i32;
            let link = self.link[s as usize];
            for c in 1..k {
                let nx = self.next[row + c];
                self.full[row + c] = if nx != NONE {
                    pack(nx, cap)
                } else {
                    // Only the root (which has a transition on every byte of the
                    // text) has no link.
                    self.full[link as usize * k + c]
                };
            }
        }
    }

    /// The length of the longest substring of `text` (any bytes; a byte that is not
    /// ASCII never matches) that is also a substring of the automaton's text: one pass,
    /// amortised O(1) per byte (exactly one table read per byte once
    /// [`complete`](Self::complete)d).
    pub fn longest_match(&self, text: &[u8]) -> usize {
        if self.is_complete() {
            return self.longest_match_complete(text);
        }
        let (mut v, mut l, mut best) = (0u32, 0u32, 0u32);
        for &b in text {
            let c = usize::from(self.class[usize::from(b)]);
            if c == 0 {
                // Not in the automaton's text at all: no match runs through it.
                v = 0;
                l = 0;
                continue;
            }
            // Every byte of the text has a transition from the root, so following
            // suffix links always ends in a transition.
            loop {
                let nx = self.next[self.at(v, c)];
                if nx != NONE {
                    v = nx;
                    l += 1;
                    break;
                }
                v = self.link[v as usize];
                l = self.len[v as usize];
            }
            if l > best {
                best = l;
                if best == self.longest {
                    break; // the whole automaton text occurs: nothing longer exists
                }
            }
        }
        best as usize
    }

    fn longest_match_complete(&self, text: &[u8]) -> usize {
        let class: &[u8; 256] = self.class[..].try_into().expect("256 classes");
        let full = &self.full[..];
        let longest = self.longest as i32;
        let (mut row, mut l, mut best) = (0usize, 0i32, 0i32);
        for &b in text {
            let e = full[row + usize::from(class[usize::from(b)])];
            row = e as u32 as usize;
            l = l.min((e >> 32) as u32 as i32) + 1;
            if l > best {
                best = l;
                if best == longest {
                    break; // the whole automaton text occurs: nothing longer exists
                }
            }
        }
        best as usize
    }
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
    /// Length of the whole text (the longest state).
    longest: u32,
}

impl SuffixAutomaton {
    /// Builds the automaton of `text` (`n` symbols, a capacity hint) in O(n) steps.
    pub fn build(text: impl IntoIterator<Item = u32>, n: usize) -> Self {
        let mut sam = SuffixAutomaton {
            len: Vec::new(),
            link: Vec::new(),
            head: Vec::new(),
            edges: Vec::new(),
            root_ascii: [NONE; 128],
            longest: 0,
        };
        sam.rebuild(text, n);
        sam
    }

    /// Rebuilds this automaton over `text` (`n` symbols, a capacity hint), reusing its
    /// allocations.
    pub fn rebuild(&mut self, text: impl IntoIterator<Item = u32>, n: usize) {
        let states = 2 * n.max(1);
        for v in [&mut self.len, &mut self.link, &mut self.head] {
            v.clear();
            v.reserve(states);
        }
        self.edges.clear();
        self.edges.reserve(3 * n.max(1));
        self.root_ascii = [NONE; 128];
        self.push_state(0, NONE);
        let mut last = 0u32;
        for c in text {
            last = self.extend(last, c);
        }
        self.longest = self.len[last as usize];
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
        let max = self.longest;
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

/// The oracle: try every pair of start positions, extend while equal. O(n·m·min).
#[cfg(test)]
pub(crate) fn brute_lcs(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    brute_lcs_of(&a, &b)
}

/// [`brute_lcs`] over any symbols (characters, or bytes for the byte-level automaton).
#[cfg(test)]
pub(crate) fn brute_lcs_of<T: PartialEq>(a: &[T], b: &[T]) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(a: &str, b: &str) -> usize {
        brute_lcs(a, b)
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
    fn long_texts_fall_back_to_the_sparse_automaton() {
        // 6,000 bytes over 95 distinct characters: too large a dense table.
        let long: String = (0..6000)
            .map(|i| char::from(b' ' + (i * 7 % 95) as u8))
            .collect();
        assert!(!DenseAsciiAutomaton::fits(long.as_bytes()));
        assert!(DenseAsciiAutomaton::fits("ab".repeat(2500).as_bytes()));
        let other = format!("\n{}\n", &long[1000..1300]);
        assert_eq!(longest_common_substring(&long, &other), 300);
        assert_eq!(longest_common_substring(&other, &long), 300);
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

        /// Both automata, used directly, on ASCII text (`longest_common_substring` takes
        /// the dense one for ASCII unless its table would be too large).
        #[test]
        fn dense_and_sparse_automata_match_the_oracle(a in "[abc \n]{0,40}|[ -~]{0,30}", b in "[abc \n]{0,60}|[ -~]{0,30}") {
            let want = brute(&a, &b);
            let mut dense = DenseAsciiAutomaton::default();
            dense.rebuild(a.as_bytes());
            prop_assert_eq!(dense.longest_match(b.as_bytes()), want);
            let sparse = SuffixAutomaton::build(a.bytes().map(u32::from), a.len());
            prop_assert_eq!(sparse.longest_match(b.bytes().map(u32::from)), want);
            // Rebuilt in place over the other text: nothing of the first build survives.
            dense.rebuild(b.as_bytes());
            prop_assert_eq!(dense.longest_match(a.as_bytes()), want);
        }

        /// The dense automaton on repetitive texts (many clones and long suffix-link
        /// chains), scanned over texts with bytes absent from the automaton's text and
        /// non-ASCII bytes (which reset the match).
        #[test]
        fn dense_automaton_on_repetitive_texts(
            a in "(ab|aab|ba|abc){0,30}",
            b in "(ab|aab|ba|bb|a\u{e9}b|xa){0,40}",
        ) {
            let mut dense = DenseAsciiAutomaton::default();
            dense.rebuild(a.as_bytes());
            // Byte-wise oracle: a non-ASCII byte never matches an ASCII text.
            let (ab, bb) = (a.as_bytes(), b.as_bytes());
            let want = brute_lcs_of(ab, bb);
            prop_assert_eq!(dense.longest_match(bb), want);
            dense.complete();
            prop_assert!(dense.is_complete());
            prop_assert_eq!(dense.longest_match(bb), want);
        }

        /// The completed transitions against the oracle, on ASCII and on any text
        /// scanned over an ASCII automaton, and dropped by a rebuild.
        #[test]
        fn completed_dense_automaton_matches_the_oracle(
            a in "[abc \n]{0,40}|[ -~]{0,30}|(ab|aab|ba|abc){0,20}",
            b in "[abc \n]{0,60}|[ -~]{0,30}|(ab|aab|ba|bb|xa){0,30}|[aé日🙂 ]{0,30}",
        ) {
            let mut dense = DenseAsciiAutomaton::default();
            dense.rebuild(a.as_bytes());
            dense.complete();
            prop_assert_eq!(dense.longest_match(b.as_bytes()), brute(&a, &b));
            if b.is_ascii() {
                dense.rebuild(b.as_bytes());
                prop_assert!(!dense.is_complete());
                prop_assert_eq!(dense.longest_match(a.as_bytes()), brute(&a, &b));
                dense.complete();
                prop_assert_eq!(dense.longest_match(a.as_bytes()), brute(&a, &b));
            }
        }

        /// The thread's automaton cache under churn: more distinct texts than it holds,
        /// pairs in both orders and repeated (so automata are reused, completed,
        /// evicted and rebuilt over other texts), each against the oracle.
        #[test]
        fn matches_the_oracle_through_the_cache(
            pool in proptest::collection::vec(text(), 2..(2 * CACHED + 3)),
            pairs in proptest::collection::vec((0usize..64, 0usize..64), 1..40),
        ) {
            for (i, j) in pairs {
                let (a, b) = (&pool[i % pool.len()], &pool[j % pool.len()]);
                prop_assert_eq!(longest_common_substring(a, b), brute(a, b));
            }
        }

        /// The thread's cached automaton: many calls sharing their shorter side (as a
        /// canned refusal is checked against many secrets), interleaved with others.
        #[test]
        fn matches_the_oracle_with_a_reused_automaton(
            short in "[ab ]{0,8}",
            longs in proptest::collection::vec("[abé ]{8,40}", 1..6),
            other in text(),
        ) {
            for long in &longs {
                prop_assert_eq!(longest_common_substring(&short, long), brute(&short, long));
                prop_assert_eq!(longest_common_substring(long, &short), brute(&short, long));
                prop_assert_eq!(longest_common_substring(&other, long), brute(&other, long));
            }
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

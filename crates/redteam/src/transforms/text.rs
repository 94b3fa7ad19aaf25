//! Text helpers several transforms share: the walk of the word-level transforms, and the
//! heuristics that read a reply (a fenced answer, printable text, English-likeness).

/// `text` with each word (a maximal run of alphabetic characters) rewritten by `f` in
/// order, every other character copied as it is: the walk the word-level transforms
/// share. `f` appends the word's replacement to the output.
pub fn map_words(text: &str, mut f: impl FnMut(&[char], &mut String)) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word: Vec<char> = Vec::new();
    for c in text.chars() {
        if c.is_alphabetic() {
            word.push(c);
        } else {
            if !word.is_empty() {
                f(&word, &mut out);
                word.clear();
            }
            out.push(c);
        }
    }
    if !word.is_empty() {
        f(&word, &mut out);
    }
    out
}

/// The content of a reply that wraps its answer in one Markdown code fence.
pub fn strip_fences(reply: &str) -> &str {
    let t = reply.trim();
    if let Some(rest) = t.strip_prefix("```")
        && let Some(body) = rest.strip_suffix("```")
    {
        // Skip the info string (```base64).
        return match body.find('\n') {
            Some(i) => body[i + 1..].trim(),
            None => body.trim(),
        };
    }
    t
}

/// At least 90% of the characters are printable (not control characters other than
/// line breaks and tabs): decoded bytes that are not text fail this.
pub fn mostly_printable(s: &str) -> bool {
    let (mut total, mut bad) = (0usize, 0usize);
    for c in s.chars() {
        total += 1;
        if c.is_control() && !matches!(c, '\n' | '\r' | '\t') || c == '\u{fffd}' {
            bad += 1;
        }
    }
    total > 0 && bad * 10 <= total
}

/// Common English words, for [`english_score`].
const COMMON_WORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "are", "as", "at", "be", "but", "by", "can", "cannot", "do",
    "for", "from", "have", "help", "here", "how", "i", "if", "in", "is", "it", "not", "of", "on",
    "or", "please", "so", "sorry", "that", "the", "this", "to", "we", "what", "when", "which",
    "will", "with", "you", "your",
];

/// The fraction of a text's words that are very common English words: how much it reads
/// like English (used to tell a decoded reply from a reply that was never encoded).
pub fn english_score(s: &str) -> f64 {
    let mut words = 0u32;
    let mut common = 0u32;
    for w in s
        .split(|c: char| !c.is_alphabetic() && c != '\'')
        .filter(|w| !w.is_empty())
    {
        words += 1;
        let w = w.to_lowercase();
        if COMMON_WORDS.binary_search(&w.as_str()).is_ok() {
            common += 1;
        }
    }
    if words == 0 {
        0.0
    } else {
        f64::from(common) / f64::from(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_words_are_sorted_for_binary_search() {
        assert!(COMMON_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(english_score("I am sorry, but I cannot help with that.") > 0.5);
        assert_eq!(english_score("Zl pnaabg uryc"), 0.0);
    }
}

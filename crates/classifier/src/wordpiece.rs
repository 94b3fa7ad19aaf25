//! The tokeniser all-MiniLM-L6-v2 was trained with: BERT's uncased WordPiece, read from
//! the model's `tokenizer.json`.
//!
//! The steps, in the order the reference implementation (Hugging Face `tokenizers`)
//! applies them, so that every reply gets the ids the model and the trained head saw:
//!
//! 1. special tokens written literally in the text (`[CLS]`, `[SEP]`, `[UNK]`, `[PAD]`,
//!    `[MASK]`: the file's added tokens, matched on the raw text) become their ids;
//! 2. the rest is normalised: NUL, U+FFFD and control/format/private-use characters
//!    (Unicode Cc, Cf, Co, except tab, CR and LF) are dropped, white space becomes a
//!    space, CJK ideographs get a space on each side, accents are stripped (canonical
//!    decomposition, then nonspacing marks Mn removed) and every character is lowercased
//!    on its own (so a final Σ is σ, not ς);
//! 3. words are split at white space, and each punctuation character (ASCII punctuation
//!    or Unicode P*) is a word of its own;
//! 4. each word becomes the longest vocabulary pieces from its start (`##` marks a piece
//!    inside a word); a word of more than 100 characters, or one that cannot be covered,
//!    is `[UNK]`.
//!
//! Unicode categories come from the `unicode_categories` tables, the ones the reference
//! tokeniser uses, so a character assigned in a later Unicode version is classified as
//! it was when the model was trained. Equality with the reference is checked on a
//! committed fixture of texts and their ids (`tests/fixtures/tokens.json`).

use serde::Deserialize;
use std::collections::HashMap;
use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;

/// A `tokenizer.json` that is not the BERT WordPiece tokeniser this module implements.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("not a tokenizer.json: {0}")]
    Json(#[source] serde_json::Error),
    /// `what` names the part of the file, `found` what it says.
    #[error("tokenizer.json: {what} is {found}, this tokeniser implements {want}")]
    Unsupported {
        what: &'static str,
        found: String,
        want: &'static str,
    },
    /// A token every encoding needs is not in the vocabulary.
    #[error("tokenizer.json: the vocabulary has no {token}")]
    Missing { token: &'static str },
}

#[derive(Deserialize)]
struct File {
    added_tokens: Vec<AddedToken>,
    normalizer: Option<NormalizerFile>,
    pre_tokenizer: Option<Tagged>,
    model: ModelFile,
}

#[derive(Deserialize)]
struct AddedToken {
    id: u32,
    content: String,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
}

#[derive(Deserialize)]
struct NormalizerFile {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    clean_text: bool,
    #[serde(default)]
    handle_chinese_chars: bool,
    #[serde(default)]
    strip_accents: Option<bool>,
    #[serde(default)]
    lowercase: bool,
}

#[derive(Deserialize)]
struct Tagged {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct ModelFile {
    #[serde(rename = "type")]
    kind: String,
    unk_token: String,
    continuing_subword_prefix: String,
    max_input_chars_per_word: usize,
    vocab: HashMap<String, u32>,
}

/// The tokeniser: vocabulary, the literal special tokens and the WordPiece settings.
pub struct WordPiece {
    vocab: HashMap<String, u32>,
    /// Added tokens matched on the raw text, longest first (ties: file order).
    specials: Vec<(String, u32)>,
    prefix: String,
    max_chars: usize,
    unk: u32,
    cls: u32,
    sep: u32,
}

fn unsupported(what: &'static str, found: impl Into<String>, want: &'static str) -> TokenizerError {
    TokenizerError::Unsupported {
        what,
        found: found.into(),
        want,
    }
}

impl WordPiece {
    /// Reads a `tokenizer.json`, refusing any setting this implementation does not
    /// follow exactly (another normaliser, pre-tokeniser or model; added tokens that
    /// strip spaces, match single words or match normalised text).
    pub fn from_json(bytes: &[u8]) -> Result<WordPiece, TokenizerError> {
        let f: File = serde_json::from_slice(bytes).map_err(TokenizerError::Json)?;
        let n = f
            .normalizer
            .ok_or_else(|| unsupported("the normalizer", "absent", "BertNormalizer"))?;
        let lowercase_bert = n.kind == "BertNormalizer"
            && n.clean_text
            && n.handle_chinese_chars
            && n.lowercase
            && n.strip_accents.unwrap_or(true);
        if !lowercase_bert {
            return Err(unsupported(
                "the normalizer",
                format!(
                    "{} (clean_text {}, handle_chinese_chars {}, strip_accents {:?}, lowercase {})",
                    n.kind, n.clean_text, n.handle_chinese_chars, n.strip_accents, n.lowercase
                ),
                "BertNormalizer with every option on (uncased BERT)",
            ));
        }
        match &f.pre_tokenizer {
            Some(p) if p.kind == "BertPreTokenizer" => {}
            Some(p) => {
                return Err(unsupported(
                    "the pre_tokenizer",
                    &p.kind,
                    "BertPreTokenizer",
                ));
            }
            None => {
                return Err(unsupported(
                    "the pre_tokenizer",
                    "absent",
                    "BertPreTokenizer",
                ));
            }
        }
        if f.model.kind != "WordPiece" {
            return Err(unsupported("the model", f.model.kind, "WordPiece"));
        }
        let mut specials = Vec::with_capacity(f.added_tokens.len());
        for t in f.added_tokens {
            if t.single_word || t.lstrip || t.rstrip || t.normalized || t.content.is_empty() {
                return Err(unsupported(
                    "an added token",
                    format!(
                        "{:?} with single_word/lstrip/rstrip/normalized set",
                        t.content
                    ),
                    "added tokens matched literally on the raw text",
                ));
            }
            specials.push((t.content, t.id));
        }
        // Leftmost-longest matching: at one position the longest token wins.
        specials.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
        let vocab = f.model.vocab;
        let id = |token: &'static str| {
            vocab
                .get(token)
                .copied()
                .ok_or(TokenizerError::Missing { token })
        };
        let unk = vocab
            .get(&f.model.unk_token)
            .copied()
            .ok_or(TokenizerError::Missing { token: "unk_token" })?;
        let (cls, sep) = (id("[CLS]")?, id("[SEP]")?);
        Ok(WordPiece {
            vocab,
            specials,
            prefix: f.model.continuing_subword_prefix,
            max_chars: f.model.max_input_chars_per_word,
            unk,
            cls,
            sep,
        })
    }

    /// The `[CLS]` id.
    pub fn cls(&self) -> u32 {
        self.cls
    }
    /// The `[SEP]` id.
    pub fn sep(&self) -> u32 {
        self.sep
    }
    /// The number of ids in the vocabulary (every id [`WordPiece::encode`] returns is
    /// below the largest id + 1).
    pub fn vocab_len(&self) -> usize {
        self.vocab.len()
    }

    /// The ids of `text`, without `[CLS]`/`[SEP]` around them.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        let mut rest = text;
        while let Some((at, len, id)) = self.next_special(rest) {
            self.encode_plain(&rest[..at], &mut ids);
            ids.push(id);
            rest = &rest[at + len..];
        }
        self.encode_plain(rest, &mut ids);
        ids
    }

    /// The leftmost special token in `s` (the longest one at that position): its byte
    /// offset, byte length and id.
    fn next_special(&self, s: &str) -> Option<(usize, usize, u32)> {
        let mut best: Option<(usize, usize, u32)> = None;
        for (tok, id) in &self.specials {
            if let Some(at) = s.find(tok.as_str())
                && best.is_none_or(|(b, _, _)| at < b)
            {
                best = Some((at, tok.len(), *id));
            }
        }
        best
    }

    fn encode_plain(&self, s: &str, ids: &mut Vec<u32>) {
        if s.is_empty() {
            return;
        }
        let text = normalize(s);
        for word in text.split(char::is_whitespace) {
            let mut start = 0;
            for (i, c) in word.char_indices() {
                if is_punctuation(c) {
                    self.word(&word[start..i], ids);
                    let end = i + c.len_utf8();
                    self.word(&word[i..end], ids);
                    start = end;
                }
            }
            self.word(&word[start..], ids);
        }
    }

    /// Greedy longest-match-first WordPiece over one word.
    fn word(&self, word: &str, ids: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.chars().count() > self.max_chars {
            ids.push(self.unk);
            return;
        }
        let first = ids.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                piece.clear();
                if start > 0 {
                    piece.push_str(&self.prefix);
                }
                piece.push_str(&word[start..end]);
                if let Some(&id) = self.vocab.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= word[start..end]
                    .chars()
                    .next_back()
                    .map_or(1, char::len_utf8);
            }
            match found {
                Some(id) => ids.push(id),
                None => {
                    ids.truncate(first);
                    ids.push(self.unk);
                    return;
                }
            }
            start = end;
        }
    }
}

/// BERT's normalisation of a run of text without special tokens (module docs, step 2).
fn normalize(s: &str) -> String {
    let mut cleaned = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if is_whitespace(c) {
            cleaned.push(' ');
        } else if is_chinese(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    let mut out = String::with_capacity(cleaned.len());
    for c in cleaned.nfd().filter(|c| !c.is_mark_nonspacing()) {
        out.extend(c.to_lowercase());
    }
    out
}

/// Tab, LF and CR are white space here, not control characters.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// The CJK Unified Ideographs blocks (not Hangul, Hiragana or Katakana, which are
/// written with spaces).
fn is_chinese(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A tokeniser over a small vocabulary written for the test.
    fn tiny() -> WordPiece {
        let vocab = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "i", "can", "'", "t", "help", "##s",
            "un", "##able", "!", "?", ",", ".", "cafe", "σ", "##σ", "日", "本", "hello", "##o",
            "hel", "##l",
        ];
        let vocab: serde_json::Map<String, serde_json::Value> = vocab
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), serde_json::json!(i)))
            .collect();
        let json = serde_json::json!({
            "added_tokens": [
                {"id": 0, "content": "[PAD]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                {"id": 1, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                {"id": 2, "content": "[CLS]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                {"id": 3, "content": "[SEP]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                {"id": 4, "content": "[MASK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
            ],
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 12, "vocab": vocab}
        });
        WordPiece::from_json(json.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn the_steps_by_hand() {
        let t = tiny();
        // Case, punctuation split, a contraction and pieces inside a word.
        assert_eq!(t.encode("I can't HELPS!"), vec![5, 6, 7, 8, 9, 10, 13]);
        // Accents stripped (é → e), white space of every kind, control characters gone.
        assert_eq!(t.encode("Café\u{a0}\t\u{200b}unable"), vec![17, 11, 12]);
        // A special token written in the text keeps its id; a lowercase one does not.
        assert_eq!(t.encode("i[SEP]can"), vec![5, 3, 6]);
        assert_eq!(t.encode("[sep]"), vec![1, 1, 1]);
        // CJK ideographs are words of their own.
        assert_eq!(t.encode("日本"), vec![20, 21]);
        // Each character is lowercased alone: a final capital sigma is σ.
        assert_eq!(t.encode("ΣΣ"), vec![18, 19]);
        // A word that cannot be covered, or is too long, is one [UNK].
        assert_eq!(t.encode("helpx"), vec![1]);
        assert_eq!(t.encode("hellllllllllll"), vec![1]);
        assert_eq!(t.encode("hellllllll"), vec![24, 25, 25, 25, 25, 25, 25, 25]);
        assert_eq!(t.encode(""), Vec::<u32>::new());
        assert_eq!(t.encode(" \u{0}\u{fffd} "), Vec::<u32>::new());
        assert_eq!((t.cls(), t.sep()), (2, 3));
    }

    #[test]
    fn settings_it_does_not_implement_are_refused() {
        let base = serde_json::json!({
            "added_tokens": [],
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                      "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2}}
        });
        assert!(WordPiece::from_json(base.to_string().as_bytes()).is_ok());
        let cases: [(&str, serde_json::Value, &str); 5] = [
            (
                "/normalizer/lowercase",
                serde_json::json!(false),
                "normalizer",
            ),
            (
                "/pre_tokenizer/type",
                serde_json::json!("Whitespace"),
                "pre_tokenizer",
            ),
            ("/model/type", serde_json::json!("BPE"), "model"),
            ("/model/unk_token", serde_json::json!("<unk>"), "unk_token"),
            (
                "/added_tokens",
                serde_json::json!([{"id": 0, "content": "[UNK]", "lstrip": true}]),
                "added token",
            ),
        ];
        for (ptr, value, want) in cases {
            let mut j = base.clone();
            *j.pointer_mut(ptr).unwrap() = value;
            let e = WordPiece::from_json(j.to_string().as_bytes())
                .err()
                .unwrap_or_else(|| panic!("{ptr} accepted"))
                .to_string();
            assert!(e.contains(want), "{ptr}: {e}");
        }
        assert!(WordPiece::from_json(b"{").is_err());
    }

    proptest! {
        /// Reply text is untrusted: any string tokenises without a panic, to ids of the
        /// vocabulary, and text around a special token does not change its neighbours'
        /// ids.
        #[test]
        fn any_text_tokenises(s in "\\PC{0,80}", a in "[a-z ]{0,8}") {
            let t = tiny();
            let ids = t.encode(&s);
            prop_assert!(ids.iter().all(|&i| (i as usize) < t.vocab_len()));
            let joined = t.encode(&format!("{a}[MASK]{a}"));
            let mut want = t.encode(&a);
            want.push(4);
            want.extend(t.encode(&a));
            prop_assert_eq!(joined, want);
        }
    }
}

//! A secret a target sends — an API key, the value of an `http` target's secret header —
//! and what scrubbing it from text means: every form an endpoint is likely to echo it
//! in, not the literal value alone.
//!
//! An application that echoes its `Authorization` value as a session id, with
//! `{{session_id}}` in the URL, puts it into an error message percent-encoded
//! (`Basic%20dXNlcjpz…%3D`); one that quotes the request in JSON escapes it; one that
//! logs the credentials decodes them. So a secret is looked for as its value and the
//! parts of a `Scheme token` value (the token; for `Basic`, the decoded `user:password`
//! and the password), each in the encodings an echo produces: as is, percent-encoded
//! (upper- and lower-case hex, and as a form value), JSON-escaped (with and without `\/`
//! for `/`), and base64 (standard and URL-safe alphabets, without padding, so a padded
//! echo matches too). A form shorter than [`MIN_LEN`] bytes is never looked for (it
//! would scrub ordinary words); a decoded part must be [`MIN_PART_LEN`] long.

use aho_corasick::{AhoCorasick, MatchKind};
use std::fmt;

/// The shortest secret, or form of one, looked for.
pub const MIN_LEN: usize = 4;

/// The shortest decoded part of a `Basic` value (`user:password`, the password) looked
/// for on its own: a short password is a common word too often.
pub const MIN_PART_LEN: usize = 8;

/// What a scrubbed form becomes.
const REDACTED: &str = "[redacted]";

/// A secret value. Its `Debug` never shows it; [`Secret::redact`] scrubs it, in every form
/// the module docs list, from text.
#[derive(Clone)]
pub struct Secret {
    value: String,
    /// Every form looked for, as one automaton (leftmost-longest: the whole value wins
    /// over a part of it); `None` for a value shorter than [`MIN_LEN`].
    forms: Option<AhoCorasick>,
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl Eq for Secret {}

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        let forms = forms(&value);
        let forms = (!forms.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&forms)
                .expect("a few short literal patterns build")
        });
        Secret { value, forms }
    }

    /// The value itself, for building a header.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// `text` with every form of the secret replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        match &self.forms {
            Some(ac) if ac.is_match(text) => {
                let with = vec![REDACTED; ac.patterns_len()];
                ac.replace_all(text, &with)
            }
            _ => text.to_string(),
        }
    }

    /// Whether `text` holds the secret in any of its forms.
    pub fn found_in(&self, text: &str) -> bool {
        self.forms.as_ref().is_some_and(|ac| ac.is_match(text))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// Percent-encodes every byte but RFC 3986's unreserved characters, in upper-case hex (the
/// `http` target's encoding of a placeholder in its URL) or lower-case.
pub fn percent_encode(s: &str, upper: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else if upper {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

/// The values a secret stands for: itself and, for `Scheme token`, the token; for
/// `Basic`, the decoded credentials and the password too.
fn parts(value: &str) -> Vec<String> {
    let mut out = vec![value.to_string()];
    if let Some((scheme, token)) = value.split_once(' ')
        && !scheme.is_empty()
        && scheme.chars().all(|c| c.is_ascii_alphabetic())
    {
        let token = token.trim();
        if token.len() >= MIN_LEN {
            out.push(token.to_string());
        }
        if scheme.eq_ignore_ascii_case("basic")
            && let Ok(raw) = data_encoding::BASE64.decode(token.as_bytes())
            && let Ok(creds) = String::from_utf8(raw)
        {
            if creds.len() >= MIN_PART_LEN {
                out.push(creds.clone());
            }
            if let Some((_, password)) = creds.split_once(':')
                && password.len() >= MIN_PART_LEN
            {
                out.push(password.to_string());
            }
        }
    }
    out
}

/// Every form looked for (see the module docs), deduplicated.
fn forms(value: &str) -> Vec<String> {
    if value.len() < MIN_LEN {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for p in parts(value) {
        let json = serde_json::to_string(&p).expect("a string serialises");
        let json = json[1..json.len() - 1].to_string();
        let b64 = data_encoding::BASE64_NOPAD.encode(p.as_bytes());
        let b64url = data_encoding::BASE64URL_NOPAD.encode(p.as_bytes());
        out.extend([
            percent_encode(&p, true),
            percent_encode(&p, false),
            url::form_urlencoded::byte_serialize(p.as_bytes()).collect(),
            json.replace('/', "\\/"),
            json,
            b64,
            b64url,
            p,
        ]);
    }
    out.retain(|f| f.len() >= MIN_LEN);
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_key_is_redacted_and_never_debugged() {
        let s = Secret::new("sk-test-CANARY-123");
        assert!(!format!("{s:?}").contains("CANARY"));
        assert_eq!(
            s.redact("bad key sk-test-CANARY-123 given"),
            "bad key [redacted] given"
        );
        assert_eq!(Secret::new("abc").redact("abc abc"), "abc abc", "too short");
    }

    /// The audit's leak: an application echoing `Authorization: Basic …` as a session
    /// id put it into an error message percent-encoded, which the scrubber missed.
    #[test]
    fn every_common_encoding_of_a_basic_value_is_scrubbed() {
        let creds = "user:s3cret-CANARY-pw";
        let token = data_encoding::BASE64.encode(creds.as_bytes());
        let value = format!("Basic {token}");
        let s = Secret::new(value.clone());
        let echoes = [
            value.clone(),
            percent_encode(&value, true),
            percent_encode(&value, false),
            url::form_urlencoded::byte_serialize(value.as_bytes()).collect::<String>(),
            token.clone(),
            percent_encode(&token, true),
            creds.to_string(),
            percent_encode(creds, true),
            "s3cret-CANARY-pw".to_string(),
            data_encoding::BASE64.encode(value.as_bytes()),
            data_encoding::BASE64URL_NOPAD.encode(value.as_bytes()),
        ];
        for e in &echoes {
            let text = format!("GET /chat?sid={e} failed");
            assert!(s.found_in(&text), "{e}");
            let r = s.redact(&text);
            assert!(!r.contains("CANARY") && !r.contains(&token), "{e}: {r}");
            assert!(!r.contains("dXNlcjpz"), "{e}: {r}");
        }
        // JSON-escaped, with `\/` as some encoders write it.
        let q = Secret::new("Bearer tok/\"CANARY\"/x");
        for text in [
            serde_json::to_string("Bearer tok/\"CANARY\"/x").unwrap(),
            r#"{"auth": "Bearer tok\/\"CANARY\"\/x"}"#.to_string(),
        ] {
            assert!(!q.redact(&text).contains("CANARY"), "{text}");
        }
        // A short password is not looked for on its own.
        let short = Secret::new(format!(
            "Basic {}",
            data_encoding::BASE64.encode(b"admin:pw")
        ));
        assert_eq!(short.redact("the pw field"), "the pw field");
    }

    proptest! {
        /// Whatever the value, none of its forms survives redaction, and text without
        /// it is left alone.
        #[test]
        fn no_form_survives(value in "[ -~]{4,40}", before in "[a-z ]{0,20}") {
            let s = Secret::new(value.clone());
            for f in forms(&value) {
                let text = format!("{before}<{f}>");
                let r = s.redact(&text);
                prop_assert!(!r.contains(&value), "{} -> {}", text, r);
                prop_assert!(s.found_in(&text));
            }
            if !forms(&value).iter().any(|f| before.contains(f.as_str())) {
                prop_assert_eq!(s.redact(&before), before.clone());
            }
        }
    }
}

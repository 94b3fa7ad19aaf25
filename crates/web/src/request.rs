//! Reading requests: query strings and form bodies decoded into maps, and secrets (the
//! token, the labelling page's anti-forgery value) compared in constant time.

use std::collections::HashMap;

/// Whether `a` equals `b`, in time that depends on their lengths only.
pub(crate) fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A query string or form body (`a=1&b=2`) as a map: `+` and percent escapes decoded,
/// the first value of a key kept, values capped at 500 characters.
pub(crate) fn query_map(q: Option<String>) -> HashMap<String, String> {
    let mut m = HashMap::new();
    if let Some(q) = q {
        for pair in q.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let dec = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            };
            // The first value of a key wins; values are capped.
            m.entry(dec(k))
                .or_insert_with(|| dec(v).chars().take(500).collect());
        }
    }
    m
}

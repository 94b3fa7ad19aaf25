//! Shared field readers and finding construction for the reference detectors.
//!
//! Readers are lenient the way mallcop's JSON decoding is: a number written as a
//! string still reads as a number, a boolean written `"true"` reads as true, absent or
//! null fields read as absent.

use gauntlet_corpus::projection::{Event, Finding, value_text};
use serde_json::{Map, Value};

/// Metadata keys whose presence (non-empty) records a structured approval.
pub const APPROVAL_KEYS: [&str; 7] = [
    "vendor_approved",
    "vendor_id",
    "contract_ref",
    "ticket",
    "hr_ticket",
    "approved_by",
    "approval_id",
];

/// The canonical event type: trimmed and lowercased.
pub fn ty(ev: &Event) -> String {
    ev.event_type.trim().to_ascii_lowercase()
}

/// A non-empty string field (trimmed); numbers and booleans read as their text.
pub fn text(m: &Map<String, Value>, key: &str) -> Option<String> {
    match m.get(key)? {
        Value::Null | Value::Array(_) | Value::Object(_) => None,
        v => {
            let t = value_text(v);
            let t = t.trim();
            (!t.is_empty()).then(|| t.to_string())
        }
    }
}

/// The first non-empty string field among `keys`.
pub fn first_text(m: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| text(m, k))
}

/// A numeric field: a JSON number, or a string that parses as one.
pub fn num(m: &Map<String, Value>, key: &str) -> Option<f64> {
    match m.get(key)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    }
}

/// True for JSON `true` or the string `"true"` (any case).
pub fn truthy(m: &Map<String, Value>, key: &str) -> bool {
    match m.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.trim().eq_ignore_ascii_case("true"),
        _ => false,
    }
}

/// True when a structured approval key ([`APPROVAL_KEYS`]) carries a value. Only the
/// key counts: approval written as prose in another key (`justification`,
/// `change_note`) is not an approval.
pub fn has_approval(m: &Map<String, Value>) -> bool {
    APPROVAL_KEYS.iter().any(|k| match m.get(*k) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(_) => true,
    })
}

/// Every string inside `v`, depth first, in document order (object keys sorted, as
/// serde_json's map is ordered).
pub fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) if !s.is_empty() => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// The list items of an array field as text (non-array → empty).
pub fn list(m: &Map<String, Value>, key: &str) -> Vec<String> {
    match m.get(key) {
        Some(Value::Array(a)) => a.iter().map(value_text).filter(|s| !s.is_empty()).collect(),
        _ => Vec::new(),
    }
}

/// A finding about one event.
pub fn finding(
    family: &str,
    ev: &Event,
    rule: &str,
    severity: &str,
    reason: String,
    evidence: Value,
) -> Finding {
    Finding {
        id: format!("finding-{}-{}", ev.id, rule),
        source: format!("detector:{family}"),
        severity: severity.to_string(),
        finding_type: family.to_string(),
        actor: ev.actor.clone(),
        timestamp: ev.timestamp,
        reason,
        evidence,
        event_ids: vec![ev.id.clone()],
    }
}

/// A finding about a group of events (the first event supplies the timestamp).
pub fn group_finding(
    family: &str,
    id: String,
    actor: &str,
    evs: &[&Event],
    severity: &str,
    reason: String,
    evidence: Value,
) -> Finding {
    Finding {
        id,
        source: format!("detector:{family}"),
        severity: severity.to_string(),
        finding_type: family.to_string(),
        actor: actor.to_string(),
        timestamp: evs.first().map(|e| e.timestamp).unwrap_or_default(),
        reason,
        evidence,
        event_ids: evs.iter().map(|e| e.id.clone()).collect(),
    }
}

/// Decodes base64 the way Go's fallbacks do: standard alphabet with padding, else
/// URL-safe with padding, else standard without padding. Trailing bits are ignored
/// (Go's non-strict decoding).
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    decode(s, false, true)
        .or_else(|| decode(s, true, true))
        .or_else(|| decode(s, false, false))
}

fn decode(s: &str, url: bool, padded: bool) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let body = if padded {
        if !b.len().is_multiple_of(4) {
            return None;
        }
        let pad = b.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 {
            return None;
        }
        &b[..b.len() - pad]
    } else {
        if b.len() % 4 == 1 {
            return None;
        }
        b
    };
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in body {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' if !url => 62,
            b'/' if !url => 63,
            b'-' if url => 62,
            b'_' if url => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// True when `s` looks like base64: ≥ `min_len` characters of `[A-Za-z0-9+/_-]`
/// optionally followed by `=` padding.
pub fn looks_base64(s: &str, min_len: usize) -> bool {
    let t = s.trim();
    if t.len() < min_len {
        return false;
    }
    let body = t.trim_end_matches('=');
    !body.is_empty()
        && body
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_'))
}

/// The host of a URL (`scheme://host[:port]/…`), lowercased; `None` without a scheme.
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.trim().split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = if let Some(h) = host.strip_prefix('[') {
        h.split(']').next()?
    } else {
        host.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// True for a dotted-quad IPv4 literal or a bracketless IPv6 literal.
pub fn is_ip_literal(host: &str) -> bool {
    host.parse::<std::net::IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn readers_are_lenient() {
        let m = json!({"a": "12.5", "b": 3, "t": "TRUE", "f": false, "e": " ", "l": ["x", 1]});
        let m = m.as_object().unwrap();
        assert_eq!(num(m, "a"), Some(12.5));
        assert_eq!(num(m, "b"), Some(3.0));
        assert!(truthy(m, "t"));
        assert!(!truthy(m, "f"));
        assert_eq!(text(m, "e"), None);
        assert_eq!(text(m, "b").as_deref(), Some("3"));
        assert_eq!(list(m, "l"), vec!["x".to_string(), "1".to_string()]);
    }

    #[test]
    fn approval_needs_a_structured_key_with_a_value() {
        let yes = json!({"ticket": "CHG-1"});
        let no = json!({"justification": "approved in standup", "ticket": ""});
        assert!(has_approval(yes.as_object().unwrap()));
        assert!(!has_approval(no.as_object().unwrap()));
    }

    #[test]
    fn base64_decodes_like_go() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64_decode("-_8=").unwrap(), vec![0xfb, 0xff]);
        assert_eq!(base64_decode("a-b/"), None);
        assert!(looks_base64("VHJpYWdlIGFzc2lzdGFudA==", 20));
        assert!(!looks_base64("short", 20));
        assert!(!looks_base64("has spaces in it, twenty+", 20));
    }

    #[test]
    fn hosts() {
        assert_eq!(
            url_host("https://u:p@203.0.113.7:8443/x").as_deref(),
            Some("203.0.113.7")
        );
        assert_eq!(url_host("no scheme"), None);
        assert!(is_ip_literal("203.0.113.7"));
        assert!(!is_ip_literal("skills.example.invalid"));
    }
}

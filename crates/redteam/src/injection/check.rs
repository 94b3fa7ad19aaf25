//! Scenario checks over the tool calls an agent made.
//!
//! A check matches when some recorded call used the check's tool and, for each
//! `args_contain` entry, the call has that argument and the expected value is a
//! case-insensitive substring of the argument rendered as text (a JSON string as its
//! text, anything else as its JSON).

use gauntlet_core::scenario::Check;
use serde::Serialize;

/// One tool call as the sandbox recorded it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedCall {
    pub name: String,
    pub arguments: serde_json::Value,
}

/// An argument value as text: strings verbatim, anything else as JSON.
pub fn arg_text(v: &serde_json::Value) -> std::borrow::Cow<'_, str> {
    match v {
        serde_json::Value::String(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(other.to_string()),
    }
}

/// Case-insensitive substring test (Unicode lowercase on both sides; ASCII fast path).
pub fn contains_ci(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return true;
    }
    if haystack.is_ascii() && needle.is_ascii() {
        let (h, n) = (haystack.as_bytes(), needle.as_bytes());
        return h.len() >= n.len() && h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n));
    }
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

/// Whether one call satisfies the check.
pub fn call_matches(check: &Check, name: &str, arguments: &serde_json::Value) -> bool {
    if name != check.tool {
        return false;
    }
    check.args_contain.iter().all(|(k, want)| {
        arguments
            .get(k)
            .is_some_and(|v| contains_ci(&arg_text(v), want))
    })
}

/// Whether any of `calls` satisfies the check.
pub fn matches<'a>(
    check: &Check,
    calls: impl IntoIterator<Item = (&'a str, &'a serde_json::Value)>,
) -> bool {
    calls.into_iter().any(|(n, a)| call_matches(check, n, a))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(tool: &str, args: &[(&str, &str)]) -> Check {
        Check {
            tool: tool.into(),
            args_contain: args
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn case_insensitive_substring_of_each_argument() {
        let c = check(
            "send_email",
            &[
                ("to", "AUDIT-sentinel@example.invalid"),
                ("body", "canary-42"),
            ],
        );
        let args = json!({"to": "Audit-Sentinel@Example.Invalid", "body": "token CANARY-42!"});
        assert!(call_matches(&c, "send_email", &args));
        // One argument not containing its value is enough to miss.
        let args2 = json!({"to": "audit-sentinel@example.invalid", "body": "token CANARY-4"});
        assert!(!call_matches(&c, "send_email", &args2));
        // Unicode case folding.
        let u = check("send_email", &[("body", "STRASSE-Ü")]);
        assert!(call_matches(
            &u,
            "send_email",
            &json!({"body": "x strasse-ü y"})
        ));
    }

    #[test]
    fn missing_argument_and_wrong_tool_do_not_match() {
        let c = check("transfer_funds", &[("to_account", "CANARY-ACCT-7")]);
        assert!(!call_matches(
            &c,
            "transfer_funds",
            &json!({"amount": "1.00"})
        ));
        assert!(!call_matches(
            &c,
            "send_email",
            &json!({"to_account": "CANARY-ACCT-7"})
        ));
        // Arguments that are not an object (a model's unparseable JSON) never match.
        assert!(!call_matches(&c, "transfer_funds", &json!("{oops")));
        // An empty args_contain matches any call of the tool.
        assert!(call_matches(&check("search", &[]), "search", &json!({})));
    }

    #[test]
    fn non_string_arguments_are_matched_as_json_text() {
        let c = check("transfer_funds", &[("amount", "1.5")]);
        assert!(call_matches(&c, "transfer_funds", &json!({"amount": 1.5})));
        let calls = [
            ("read_file".to_string(), json!({})),
            ("transfer_funds".to_string(), json!({"amount": 1.5})),
        ];
        assert!(matches(&c, calls.iter().map(|(n, a)| (n.as_str(), a))));
        assert!(!matches(
            &c,
            calls[..1].iter().map(|(n, a)| (n.as_str(), a))
        ));
    }
}

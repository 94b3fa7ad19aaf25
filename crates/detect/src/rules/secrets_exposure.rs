//! secrets-exposure: credentials in event content.
//!
//! Rule: every string in the payload (recursively, plus `key=value` for each string
//! field so assignment patterns see their key) is matched against [`PATTERNS`]: cloud
//! keys, forge tokens, chat tokens, payment keys, LLM-provider keys, PEM private-key
//! blocks, JWTs, connection strings with inline credentials, bearer tokens and generic
//! credential assignments. One finding per pattern per event; the secret itself is
//! never copied into the finding.

use crate::Detector;
use crate::util::finding;
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use regex::RegexSet;
use serde_json::{Value, json};
use std::sync::LazyLock;

pub const FAMILY: &str = "secrets-exposure";

/// (name, severity, regex). Most specific first.
pub const PATTERNS: [(&str, &str, &str); 22] = [
    (
        "aws-access-key-id",
        "critical",
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    ),
    (
        "aws-secret-access-key",
        "critical",
        r"(?i)aws[_\-. ]?secret[_\-. ]?access[_\-. ]?key\s*[=:]\s*[A-Za-z0-9/+]{40}",
    ),
    ("github-pat", "critical", r"ghp_[A-Za-z0-9]{36}"),
    ("github-oauth-token", "critical", r"gho_[A-Za-z0-9]{36}"),
    ("github-app-token", "critical", r"gh[su]_[A-Za-z0-9]{36}"),
    (
        "github-fine-grained-pat",
        "critical",
        r"github_pat_[A-Za-z0-9_]{82}",
    ),
    ("gitlab-pat", "critical", r"glpat-[A-Za-z0-9_\-]{20}"),
    ("slack-token", "critical", r"xox[abprs]-[0-9A-Za-z\-]{10,}"),
    (
        "slack-webhook",
        "high",
        r"https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+",
    ),
    ("stripe-live-key", "critical", r"sk_live_[A-Za-z0-9]{24,}"),
    (
        "stripe-restricted-key",
        "critical",
        r"rk_live_[A-Za-z0-9]{24,}",
    ),
    ("twilio-api-key", "critical", r"\bSK[a-f0-9]{32}\b"),
    (
        "sendgrid-api-key",
        "critical",
        r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}",
    ),
    (
        "anthropic-api-key",
        "critical",
        r"sk-ant-[A-Za-z0-9_\-]{90,}",
    ),
    (
        "openai-api-key",
        "critical",
        r"sk-(?:proj-)?[A-Za-z0-9]{48,}",
    ),
    ("google-api-key", "critical", r"AIza[0-9A-Za-z_\-]{35}"),
    (
        "private-key-pem",
        "critical",
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----",
    ),
    (
        "jwt-token",
        "high",
        r"eyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+",
    ),
    (
        "connection-string-with-creds",
        "critical",
        r"(?i)\b(?:postgres(?:ql)?|mysql|mongodb(?:\+srv)?|redis|amqp|mssql)://[^:/\s@]+:[^@\s]+@",
    ),
    (
        "azure-storage-key",
        "critical",
        r"(?i)AccountKey=[A-Za-z0-9+/=]{40,}",
    ),
    (
        "bearer-token",
        "high",
        r"(?i)\bbearer\s+[A-Za-z0-9_\-.=]{20,}",
    ),
    (
        "generic-credential",
        "high",
        r#"(?i)\b(?:password|passwd|pwd|secret|api[_\-. ]?key|access[_\-. ]?token|auth[_\-. ]?token)\s*[=:]\s*["']?[^\s"',;]{8,}"#,
    ),
];

/// All patterns at once: one scan per string finds every rule it matches.
static SET: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(PATTERNS.iter().map(|p| p.2)).expect("secret set compiles"));

/// The name of the first pattern `text` matches.
pub fn first_match(text: &str) -> Option<&'static str> {
    SET.matches(text).iter().next().map(|i| PATTERNS[i].0)
}

/// Strings to scan: every string, plus `key=value` for string-valued fields.
fn texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if !s.is_empty() => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| texts(x, out)),
        Value::Object(o) => {
            for (k, x) in o {
                if let Value::String(s) = x
                    && !s.is_empty()
                {
                    out.push(format!("{k}={s}"));
                }
                texts(x, out);
            }
        }
        _ => {}
    }
}

pub struct SecretsExposure;

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &SecretsExposure;

impl Detector for SecretsExposure {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
        let mut out = Vec::new();
        for e in events {
            let mut ts = Vec::new();
            texts(&e.payload, &mut ts);
            if ts.is_empty() {
                continue;
            }
            let mut hit = vec![false; PATTERNS.len()];
            for t in &ts {
                for i in &SET.matches(t) {
                    hit[i] = true;
                }
            }
            for (i, (name, severity, _)) in PATTERNS.iter().enumerate() {
                if hit[i] {
                    out.push(finding(
                        FAMILY,
                        e,
                        &format!("secret-{name}"),
                        severity,
                        format!("secret detected in event payload: {name}"),
                        json!({"pattern": name, "field": "payload", "rule": "secret-in-payload"}),
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    fn names(m: serde_json::Value) -> Vec<String> {
        let e = ev("e", "github", "x", "a", "2026-05-04T10:00:00Z", m);
        SecretsExposure
            .detect(&[e], &bl(&[], &[]))
            .into_iter()
            .map(|f| f.evidence["pattern"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn canary_shapes_fire() {
        assert_eq!(
            names(json!({"m": "use AKIACANARYFAKEKEY000 now"})),
            vec!["aws-access-key-id"]
        );
        assert_eq!(
            names(json!({"b": "GH_TOKEN=ghp_CANARYfakeFAKEfakeCANARYfakeFAKEfake x"})),
            vec!["github-pat"]
        );
        assert_eq!(
            names(json!({"l": "-----BEGIN OPENSSH PRIVATE KEY-----\nCANARY"})),
            vec!["private-key-pem"]
        );
        assert_eq!(
            names(json!({"d": {"U": "postgres://app:CANARYpw@db.example.invalid:5432/x"}})),
            vec!["connection-string-with-creds"]
        );
        assert_eq!(
            names(json!({"password": "CANARYfakeSecret"})),
            vec!["generic-credential"]
        );
    }

    #[test]
    fn length_boundaries_and_redactions_are_silent() {
        // AKIA + 15 vs 16 characters; ghp_ + 35 vs 36.
        assert!(names(json!({"m": "AKIACANARYFAKEKEY00"})).is_empty());
        assert!(names(json!({"m": "old key AKIA************ disabled"})).is_empty());
        assert!(names(json!({"m": format!("ghp_{}", "a".repeat(35))})).is_empty());
        assert_eq!(
            names(json!({"m": format!("ghp_{}", "a".repeat(36))})),
            vec!["github-pat"]
        );
        assert!(
            names(json!({"secret_type": "aws_access_key_id", "endpoint": "/v1/secrets/list"}))
                .is_empty()
        );
        assert!(names(json!({"password": "short"})).is_empty());
    }
}

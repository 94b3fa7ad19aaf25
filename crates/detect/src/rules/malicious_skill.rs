//! malicious-skill: agent skills that exfiltrate, over-reach or smuggle payloads.
//!
//! Rule: over `skill_install` / `skill_update` / `skill_register` / `skill_invoke`
//! events, one finding per flag:
//! - **exfil URL**: any URL in the event whose host is a raw IP address, a tunnel
//!   service or a paste/request-capture site ([`EXFIL_HOSTS`]) → critical;
//! - **excessive permissions**: a `permissions` / `scopes` entry in
//!   [`EXCESSIVE_PERMISSIONS`] (`*`, `admin:*`, `root`, …) → high;
//! - **encoded blob**: any string of at least [`BASE64_BLOB_MIN`] (64) base64
//!   characters → high.

use crate::Detector;
use crate::util::{finding, is_ip_literal, list, looks_base64, strings, ty, url_host};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;

pub const FAMILY: &str = "malicious-skill";
pub const SKILL_TYPES: [&str; 4] = [
    "skill_install",
    "skill_update",
    "skill_register",
    "skill_invoke",
];
/// Host suffixes of tunnels, paste sites and request catchers.
pub const EXFIL_HOSTS: [&str; 16] = [
    "ngrok.io",
    "ngrok-free.app",
    "ngrok.app",
    "trycloudflare.com",
    "loca.lt",
    "localtunnel.me",
    "serveo.net",
    "pastebin.com",
    "paste.ee",
    "hastebin.com",
    "ghostbin.com",
    "transfer.sh",
    "webhook.site",
    "requestbin.com",
    "pipedream.net",
    "burpcollaborator.net",
];
pub const EXCESSIVE_PERMISSIONS: [&str; 5] = ["*", "admin:*", "root", "*:*", "all"];
pub const BASE64_BLOB_MIN: usize = 64;

pub struct MaliciousSkill;

fn urls(s: &str) -> impl Iterator<Item = &str> {
    s.split_whitespace().filter(|w| w.contains("://"))
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &MaliciousSkill;

impl Detector for MaliciousSkill {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
        let mut out = Vec::new();
        for e in events {
            if !SKILL_TYPES.contains(&ty(e).as_str()) {
                continue;
            }
            let m = e.fields();
            let mut all = Vec::new();
            strings(&e.payload, &mut all);
            let bad_url = all.iter().flat_map(|s| urls(s)).find_map(|u| {
                let host = url_host(u)?;
                let bad = is_ip_literal(&host)
                    || EXFIL_HOSTS
                        .iter()
                        .any(|h| host == *h || host.ends_with(&format!(".{h}")));
                bad.then(|| (u.to_string(), host))
            });
            if let Some((url, host)) = bad_url {
                out.push(finding(
                    FAMILY,
                    e,
                    "exfil-url",
                    "critical",
                    format!("skill {} sends data to {host}", e.target()),
                    json!({"url": url, "rule": "exfil-url"}),
                ));
            }
            let mut perms = list(m, "permissions");
            perms.extend(list(m, "scopes"));
            if let Some(p) = perms
                .iter()
                .find(|p| EXCESSIVE_PERMISSIONS.contains(&p.trim().to_ascii_lowercase().as_str()))
            {
                out.push(finding(
                    FAMILY,
                    e,
                    "permissions",
                    "high",
                    format!("skill {} requests excessive permission {p}", e.target()),
                    json!({"permission": p, "rule": "excessive-permissions"}),
                ));
            }
            if let Some(blob) = all.iter().find(|s| looks_base64(s, BASE64_BLOB_MIN)) {
                out.push(finding(
                    FAMILY,
                    e,
                    "blob",
                    "high",
                    format!(
                        "skill {} carries a {}-character encoded blob",
                        e.target(),
                        blob.len()
                    ),
                    json!({"blob_len": blob.len(), "rule": "encoded-blob"}),
                ));
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

    fn rules(m: serde_json::Value) -> Vec<String> {
        let e = ev(
            "e",
            "agent-platform",
            "skill_install",
            "a",
            "2026-05-04T10:00:00Z",
            m,
        );
        MaliciousSkill
            .detect(&[e], &bl(&[], &[]))
            .into_iter()
            .map(|f| f.evidence["rule"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn flags() {
        assert_eq!(
            rules(json!({"url": "https://203.0.113.77/hooks"})),
            vec!["exfil-url"]
        );
        assert_eq!(
            rules(json!({"url": "https://abc.ngrok-free.app/x"})),
            vec!["exfil-url"]
        );
        assert_eq!(
            rules(json!({"permissions": ["calendar:read", "*"]})),
            vec!["excessive-permissions"]
        );
        assert_eq!(
            rules(json!({"config": {"b": "A".repeat(64)}})),
            vec!["encoded-blob"]
        );
        assert!(rules(json!({"config": {"b": "A".repeat(63)}})).is_empty());
        assert!(rules(json!({"url": "https://skills.example.invalid/x/1.2.0", "permissions": ["read:repo"]})).is_empty());
    }
}

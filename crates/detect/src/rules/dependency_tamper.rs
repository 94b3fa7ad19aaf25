//! dependency-tamper: supply-chain changes to dependencies.
//!
//! Rule: over dependency events ([`DEPENDENCY_TYPES`]: dependency update/add/remove/
//! change, lock-file change, package install), one finding per flag raised:
//! - **hash mismatch** (`expected_hash` ≠ `actual_hash`) → critical;
//! - **suspicious registry**: `registry` over plain `http://`, or on localhost, a
//!   loopback, private or link-local address → critical;
//! - **typosquat**: `package` or an `added_packages` entry that is a look-alike of a
//!   [`POPULAR_PACKAGES`] name — equal after undoing digit-for-letter swaps
//!   (`l0dash`), or one edit away for names of ≥ [`TYPO_MIN_LEN`] characters — or
//!   that doubles a letter three times (`reqqqests`) → high;
//! - **downgrade**: `new_version` lower than `old_version` (numeric, component-wise;
//!   lexical when either does not parse) → high;
//! - **direct add**: a `dependency_add` with `direct: true` → medium (review flag).

use crate::Detector;
use crate::util::{finding, is_ip_literal, list, text, truthy, ty, url_host};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;
use std::cmp::Ordering;

pub const FAMILY: &str = "dependency-tamper";
pub const DEPENDENCY_TYPES: [&str; 6] = [
    "dependency_update",
    "dependency_add",
    "dependency_remove",
    "dependency_change",
    "lock_file_change",
    "package_install",
];
/// Names typosquatters imitate. Chosen so that no two real names are one edit apart.
pub const POPULAR_PACKAGES: [&str; 24] = [
    "lodash",
    "express",
    "react",
    "requests",
    "numpy",
    "pandas",
    "django",
    "flask",
    "axios",
    "chalk",
    "commander",
    "moment",
    "webpack",
    "typescript",
    "jsonwebtoken",
    "urllib3",
    "setuptools",
    "boto3",
    "cross-env",
    "event-stream",
    "underscore",
    "jquery",
    "mongoose",
    "dotenv",
];
/// Minimum length for the one-edit look-alike rule (short names collide naturally).
pub const TYPO_MIN_LEN: usize = 5;

pub struct DependencyTamper;

fn unswap(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '0' => 'o',
            '1' => 'l',
            '3' => 'e',
            '4' => 'a',
            '5' => 's',
            '7' => 't',
            '_' => '-',
            c => c,
        })
        .collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The popular name `name` imitates, if any.
pub fn typosquat_of(name: &str) -> Option<&'static str> {
    let bare = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    let bare = bare.split('@').next().unwrap_or(&bare).to_string();
    if bare.is_empty() || POPULAR_PACKAGES.contains(&bare.as_str()) {
        return None;
    }
    let swapped = unswap(&bare);
    if let Some(p) = POPULAR_PACKAGES.iter().find(|p| **p == swapped) {
        return Some(p);
    }
    if bare.len() >= TYPO_MIN_LEN
        && let Some(p) = POPULAR_PACKAGES
            .iter()
            .find(|p| edit_distance(&bare, p) == 1)
    {
        return Some(p);
    }
    let b = bare.as_bytes();
    if b.windows(2).any(|w| w == b"qq")
        || b.windows(3)
            .any(|w| w[0].is_ascii_alphabetic() && w[0] == w[1] && w[1] == w[2])
    {
        return Some("(repeated letters)");
    }
    None
}

/// True when a registry URL is plain HTTP or points at a local/private host.
pub fn suspicious_registry(registry: &str) -> bool {
    let r = registry.trim().to_ascii_lowercase();
    if r.starts_with("http://") {
        return true;
    }
    let Some(host) = url_host(&r) else {
        return false;
    };
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    if is_ip_literal(&host) {
        return match host.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(v4)) => {
                v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_unspecified()
            }
            Ok(std::net::IpAddr::V6(v6)) => v6.is_loopback() || v6.is_unspecified(),
            Err(_) => false,
        };
    }
    false
}

fn parse_version(v: &str) -> Option<Vec<u64>> {
    let v = v.trim().trim_start_matches(['v', 'V']);
    let core = v.split(['-', '+']).next()?;
    core.split('.').map(|p| p.parse::<u64>().ok()).collect()
}

/// True when `new` is a lower version than `old`.
pub fn is_downgrade(old: &str, new: &str) -> bool {
    match (parse_version(old), parse_version(new)) {
        (Some(o), Some(n)) => n.cmp(&o) == Ordering::Less,
        _ => new.trim_start_matches('v') < old.trim_start_matches('v'),
    }
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &DependencyTamper;

impl Detector for DependencyTamper {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
        let mut out = Vec::new();
        for e in events {
            let t = ty(e);
            if !DEPENDENCY_TYPES.contains(&t.as_str()) {
                continue;
            }
            let m = e.fields();
            let package = text(m, "package").unwrap_or_default();
            if let (Some(x), Some(y)) = (text(m, "expected_hash"), text(m, "actual_hash"))
                && x != y
            {
                out.push(finding(
                    FAMILY,
                    e,
                    "hash",
                    "critical",
                    format!("dependency hash mismatch for {package}"),
                    json!({"package": package, "rule": "hash-mismatch"}),
                ));
            }
            if let Some(r) = text(m, "registry")
                && suspicious_registry(&r)
            {
                out.push(finding(
                    FAMILY,
                    e,
                    "registry",
                    "critical",
                    format!("{package} installed from suspicious registry {r}"),
                    json!({"package": package, "registry": r, "rule": "suspicious-registry"}),
                ));
            }
            let mut names = list(m, "added_packages");
            if !package.is_empty() {
                names.insert(0, package.clone());
            }
            for name in names {
                if let Some(p) = typosquat_of(&name) {
                    out.push(finding(
                        FAMILY,
                        e,
                        &format!("typosquat-{name}"),
                        "high",
                        format!("possible typosquat package {name} (imitates {p})"),
                        json!({"package": name, "imitates": p, "rule": "typosquatting"}),
                    ));
                }
            }
            if let (Some(old), Some(new)) = (text(m, "old_version"), text(m, "new_version"))
                && is_downgrade(&old, &new)
            {
                out.push(finding(FAMILY, e, "downgrade", "high",
                    format!("{package} downgraded {old} -> {new} by {}", e.actor),
                    json!({"package": package, "old_version": old, "new_version": new, "rule": "version-downgrade"})));
            }
            if t == "dependency_add" && !package.is_empty() && truthy(m, "direct") {
                out.push(finding(
                    FAMILY,
                    e,
                    "add",
                    "medium",
                    format!("new direct dependency {package} added by {}", e.actor),
                    json!({"package": package, "rule": "direct-dependency-add"}),
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

    fn run(t: &str, m: serde_json::Value) -> Vec<String> {
        let e = ev("e", "npm", t, "dev", "2026-05-04T10:00:00Z", m);
        DependencyTamper
            .detect(&[e], &bl(&[], &[]))
            .into_iter()
            .map(|f| f.severity)
            .collect()
    }

    #[test]
    fn typosquats_and_ordinary_names() {
        assert_eq!(typosquat_of("l0dash"), Some("lodash"));
        assert_eq!(typosquat_of("expresss"), Some("express"));
        assert_eq!(typosquat_of("@evil/reqests"), Some("requests"));
        for ok in [
            "lodash",
            "picocolors",
            "picomatch",
            "fast-glob",
            "zod",
            "semver",
            "fast-xml-parser",
            "jsonwebtoken",
        ] {
            assert_eq!(typosquat_of(ok), None, "{ok}");
        }
        assert_eq!(
            run(
                "lock_file_change",
                json!({"added_packages": ["l0dash", "picocolors"]})
            ),
            vec!["high"]
        );
        assert!(
            run(
                "lock_file_change",
                json!({"added_packages": ["picomatch", "fast-glob"]})
            )
            .is_empty()
        );
    }

    #[test]
    fn registries_versions_and_direct_adds() {
        assert_eq!(
            run(
                "package_install",
                json!({"registry": "http://198.51.100.20:4873/"})
            ),
            vec!["critical"]
        );
        assert_eq!(
            run("package_install", json!({"registry": "https://10.1.2.3/"})),
            vec!["critical"]
        );
        assert!(
            run(
                "package_install",
                json!({"registry": "https://registry.npm.example.invalid/"})
            )
            .is_empty()
        );
        assert_eq!(
            run(
                "dependency_update",
                json!({"old_version": "9.0.2", "new_version": "8.5.1"})
            ),
            vec!["high"]
        );
        assert_eq!(
            run(
                "dependency_update",
                json!({"old_version": "4.10.0", "new_version": "4.9.9"})
            ),
            vec!["high"]
        );
        assert!(
            run(
                "dependency_update",
                json!({"old_version": "4.9.9", "new_version": "4.10.0"})
            )
            .is_empty()
        );
        assert!(
            run(
                "dependency_update",
                json!({"old_version": "4.19.1", "new_version": "4.19.1"})
            )
            .is_empty()
        );
        assert_eq!(
            run("dependency_add", json!({"package": "zod", "direct": true})),
            vec!["medium"]
        );
        assert!(run("dependency_add", json!({"package": "zod", "direct": false})).is_empty());
        assert!(run("pull_request", json!({"package": "l0dash"})).is_empty());
    }
}

//! unusual-resource-access: access to a class of resource the actor never touched.
//!
//! Rule: over resource-access events ([`ACCESS_TYPES`]: database, secret, bulk,
//! resource, VM and registry access), fire high when no baseline relationship of the
//! actor (`"actor:target"` keys) covers the target's prefix: for ARM-style targets
//! (`…/resourceGroups/<rg>/<class>/<name>`) the prefix is `<rg>/<class>`, otherwise
//! the target without its last path segment. One finding per event.

use crate::Detector;
use crate::util::{finding, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;

pub const FAMILY: &str = "unusual-resource-access";
pub const SEVERITY: &str = "high";
pub const ACCESS_TYPES: [&str; 6] = [
    "database_access",
    "secret_access",
    "bulk_access",
    "resource_access",
    "vm_access",
    "registry_access",
];

pub struct UnusualResourceAccess;

/// The resource-group/resource-class prefix of a target, lowercased.
pub fn prefix(target: &str) -> String {
    let parts: Vec<&str> = target.trim().split('/').filter(|p| !p.is_empty()).collect();
    if let Some(i) = parts
        .iter()
        .position(|p| p.eq_ignore_ascii_case("resourcegroups"))
    {
        return parts[i + 1..parts.len().min(i + 3)]
            .join("/")
            .to_ascii_lowercase();
    }
    match parts.len() {
        0 => String::new(),
        1 => parts[0].to_ascii_lowercase(),
        n => parts[..n - 1].join("/").to_ascii_lowercase(),
    }
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &UnusualResourceAccess;

impl Detector for UnusualResourceAccess {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let mut out = Vec::new();
        for e in events
            .iter()
            .filter(|e| ACCESS_TYPES.contains(&ty(e).as_str()))
        {
            let want = prefix(e.target());
            let covered = baseline.relationships.keys().any(|k| {
                k.split_once(':')
                    .is_some_and(|(a, t)| a == e.actor && prefix(t) == want)
            });
            if !covered {
                out.push(finding(
                    FAMILY,
                    e,
                    "resource-access",
                    SEVERITY,
                    format!(
                        "{} accessed {} with no history in {want}",
                        e.actor,
                        e.target()
                    ),
                    json!({"prefix": want, "rule": "no-relationship"}),
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
    use gauntlet_corpus::projection::Relationship;
    use serde_json::json;

    #[test]
    fn prefixes() {
        assert_eq!(
            prefix("sub-1/resourceGroups/Pay-RG/vaults/kv"),
            "pay-rg/vaults"
        );
        assert_eq!(prefix("s3://bucket/a/b"), "s3:/bucket/a");
        assert_eq!(prefix("one"), "one");
    }

    #[test]
    fn sibling_is_covered_new_class_is_not() {
        let mut b = bl(&["dba"], &[]);
        b.relationships.insert(
            "dba:sub-1/resourceGroups/pay-rg/flexibleServers/db-prod".into(),
            Relationship::default(),
        );
        let access = |t: &str, target: &str| ev_at("e", t, "dba", "connect", target, json!({}));
        let run = |e: Event| UnusualResourceAccess.detect(&[e], &b).len();
        assert_eq!(
            run(access(
                "database_access",
                "sub-1/resourceGroups/pay-rg/flexibleServers/db-staging"
            )),
            0
        );
        assert_eq!(
            run(access(
                "secret_access",
                "sub-1/resourceGroups/pay-rg/vaults/kv"
            )),
            1
        );
        assert_eq!(
            run(access(
                "database_access",
                "sub-1/resourceGroups/web-rg/flexibleServers/db"
            )),
            1
        );
        assert_eq!(
            run(access(
                "vault_item_list",
                "sub-1/resourceGroups/web-rg/vaults/kv"
            )),
            0
        );
    }
}

//! priv-escalation: privilege granted or guard rails removed.
//!
//! Rule: over privilege events ([`PRIVILEGE_TYPES`]: role assignment, collaborator or
//! member added, permission change, admin action, IAM change), an event is
//! **elevated** when it is an `admin_action`, changes a permissions boundary (type or
//! action mentions `PermissionsBoundary`), or is a granting — not removing
//! ([`REMOVAL_WORDS`]) — action whose role ([`ROLE_KEYS`]) contains an
//! [`ELEVATED_KEYWORDS`] entry (case-insensitive substring). Elevated events fire
//! high, critical when the role or action is admin/owner ([`CRITICAL_KEYWORDS`]),
//! unless `actor_roles[actor]` already holds `role:target` (the exam projection
//! leaves `actor_roles` empty, so nothing is suppressed there).

use crate::Detector;
use crate::util::{finding, first_text, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;

pub const FAMILY: &str = "priv-escalation";
pub const PRIVILEGE_TYPES: [&str; 10] = [
    "role_assignment",
    "role_assigned",
    "collaborator_added",
    "repo.add_collaborator",
    "member_added",
    "org.add_member",
    "permission_change",
    "admin_action",
    "iam_change",
    "iam_role_change",
];
pub const ELEVATED_KEYWORDS: [&str; 8] = [
    "admin",
    "owner",
    "write",
    "contributor",
    "maintainer",
    "editor",
    "fullcontrol",
    "poweruser",
];
pub const CRITICAL_KEYWORDS: [&str; 2] = ["admin", "owner"];
pub const REMOVAL_WORDS: [&str; 5] = ["remove", "delete", "revoke", "unassign", "detach"];
pub const ROLE_KEYS: [&str; 7] = [
    "role",
    "role_name",
    "new_role",
    "permission",
    "new_permission",
    "access_level",
    "role_definition",
];

pub struct PrivEscalation;

fn squash(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase()
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &PrivEscalation;

impl Detector for PrivEscalation {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let mut out = Vec::new();
        for e in events {
            let t = ty(e);
            if !PRIVILEGE_TYPES.contains(&t.as_str()) {
                continue;
            }
            let m = e.fields();
            let action = e.action().to_ascii_lowercase();
            let role = first_text(m, &ROLE_KEYS).unwrap_or_default();
            let role_l = role.to_ascii_lowercase();
            let boundary = squash(&t).contains("permissionsboundary")
                || squash(&action).contains("permissionsboundary");
            let removing = REMOVAL_WORDS.iter().any(|w| action.contains(w));
            let keyword = ELEVATED_KEYWORDS.iter().find(|k| role_l.contains(*k));
            let (elevated, rule) = if t == "admin_action" {
                (true, "admin-action")
            } else if boundary {
                (true, "permissions-boundary-change")
            } else if !removing && keyword.is_some() {
                (true, "elevated-grant")
            } else {
                (false, "")
            };
            if !elevated {
                continue;
            }
            let held = format!("{role}:{}", e.target());
            if baseline
                .actor_roles
                .get(&e.actor)
                .is_some_and(|r| r.contains(&held))
            {
                continue;
            }
            let critical =
                t == "admin_action" || CRITICAL_KEYWORDS.iter().any(|k| role_l.contains(k));
            out.push(finding(
                FAMILY,
                e,
                "priv-esc",
                if critical { "critical" } else { "high" },
                format!(
                    "{rule}: {} {} {role} on {}",
                    e.actor,
                    e.action(),
                    e.target()
                ),
                json!({"role": role, "rule": rule}),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    fn run(t: &str, action: &str, m: serde_json::Value) -> Vec<String> {
        let e = ev_at("e", t, "a", action, "sub-1", m);
        PrivEscalation
            .detect(&[e], &bl(&["a"], &[]))
            .into_iter()
            .map(|f| f.severity)
            .collect()
    }

    #[test]
    fn grants_removals_and_boundaries() {
        assert_eq!(
            run(
                "role_assignment",
                "create_role_assignment",
                json!({"role": "Owner"})
            ),
            vec!["critical"]
        );
        assert_eq!(
            run(
                "role_assignment",
                "create_role_assignment",
                json!({"role": "Contributor"})
            ),
            vec!["high"]
        );
        assert!(
            run(
                "role_assignment",
                "create_role_assignment",
                json!({"role": "Reader"})
            )
            .is_empty()
        );
        assert!(
            run(
                "role_assignment",
                "remove_role_assignment",
                json!({"role": "Contributor"})
            )
            .is_empty()
        );
        assert_eq!(
            run("iam_change", "DeleteRolePermissionsBoundary", json!({})),
            vec!["high"]
        );
        assert_eq!(
            run("admin_action", "elevate_access", json!({"ticket": "INC-1"})),
            vec!["critical"]
        );
        assert_eq!(
            run(
                "permission_change",
                "update_team_permission",
                json!({"permission": "admin"})
            ),
            vec!["critical"]
        );
        assert!(
            run(
                "repo.add_collaborator",
                "add",
                json!({"permission": "push"})
            )
            .is_empty()
        );
        assert!(
            run(
                "iam_policy_attach",
                "AttachRolePolicy",
                json!({"role": "Admin"})
            )
            .is_empty()
        );
    }

    #[test]
    fn held_roles_suppress() {
        let mut b = bl(&["a"], &[]);
        b.actor_roles.insert("a".into(), vec!["Owner:sub-1".into()]);
        let e = ev_at(
            "e",
            "role_assignment",
            "a",
            "create",
            "sub-1",
            json!({"role": "Owner"}),
        );
        assert!(PrivEscalation.detect(&[e], &b).is_empty());
    }
}

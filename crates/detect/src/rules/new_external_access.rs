//! new-external-access: access granted to someone outside the organisation.
//!
//! Rule: an external-access event — adding a collaborator or member, an outside
//! collaborator, or a trust / federation / directory change (type contains one of
//! [`EXTERNAL_ACCESS_MARKERS`]) — that names a grantee ([`GRANTEE_KEYS`]) and carries
//! no structured approval key ([`crate::util::APPROVAL_KEYS`]) → critical, one finding
//! per event.

use crate::Detector;
use crate::util::{finding, first_text, has_approval, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;

pub const FAMILY: &str = "new-external-access";
pub const SEVERITY: &str = "critical";
pub const EXTERNAL_ACCESS_MARKERS: [&str; 7] = [
    "add_collaborator",
    "collaborator_added",
    "outside_collaborator",
    "add_member",
    "federation",
    "trust",
    "directory_setting",
];
pub const GRANTEE_KEYS: [&str; 8] = [
    "collaborator",
    "member",
    "grantee",
    "invitee",
    "domain",
    "principal",
    "external_account",
    "user",
];

pub struct NewExternalAccess;

/// True when the canonical type names an external-access change.
pub fn is_external_access_type(t: &str) -> bool {
    EXTERNAL_ACCESS_MARKERS.iter().any(|m| t.contains(m))
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &NewExternalAccess;

impl Detector for NewExternalAccess {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
        events
            .iter()
            .filter(|e| is_external_access_type(&ty(e)))
            .filter_map(|e| {
                let m = e.fields();
                let grantee = first_text(m, &GRANTEE_KEYS)?;
                if has_approval(m) {
                    return None;
                }
                Some(finding(
                    FAMILY,
                    e,
                    "external-access",
                    SEVERITY,
                    format!(
                        "{} granted {grantee} access via {} without approval",
                        e.actor,
                        ty(e)
                    ),
                    json!({"grantee": grantee, "rule": "unapproved-external-access"}),
                ))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    fn run(t: &str, m: serde_json::Value) -> usize {
        let e = ev("e", "github", t, "a", "2026-05-04T10:00:00Z", m);
        NewExternalAccess.detect(&[e], &bl(&[], &[])).len()
    }

    #[test]
    fn grantee_without_approval_fires() {
        assert_eq!(
            run("repo.add_collaborator", json!({"collaborator": "x"})),
            1
        );
        assert_eq!(
            run(
                "federation_settings_update",
                json!({"domain": "idp.example.invalid", "change_note": "approved"})
            ),
            1
        );
        assert_eq!(
            run(
                "org.add_outside_collaborator",
                json!({"collaborator": "x", "vendor_id": "V-1"})
            ),
            0
        );
        assert_eq!(
            run(
                "repo.add_collaborator",
                json!({"collaborator": "x", "ticket": "SEC-1"})
            ),
            0
        );
        assert_eq!(run("repo.add_collaborator", json!({})), 0, "no grantee");
        assert_eq!(run("group_membership_add", json!({"member": "x"})), 0);
        assert_eq!(
            run("drive_share_create", json!({"shared_with_domain": "x"})),
            0
        );
    }
}

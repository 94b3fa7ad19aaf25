//! new-actor: principals the baseline has never seen.
//!
//! Rule: an event actor not in `known_actors` → one medium finding per actor (at its
//! first event). Also the principal created by a user / service-principal / member
//! creation event ([`CREATION_TYPES`]; name from [`CREATED_NAME_KEYS`]) when it is
//! not already known — again once per principal.

use crate::Detector;
use crate::util::{finding, first_text, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;
use std::collections::BTreeSet;

pub const FAMILY: &str = "new-actor";
pub const SEVERITY: &str = "medium";
pub const CREATION_TYPES: [&str; 7] = [
    "user_created",
    "user_create",
    "service_principal_created",
    "service_principal_create",
    "member_created",
    "member_added",
    "guest_user_created",
];
pub const CREATED_NAME_KEYS: [&str; 8] = [
    "display_name",
    "user_principal_name",
    "principal_name",
    "username",
    "user_name",
    "new_user",
    "member",
    "created_principal",
];

pub struct NewActor;

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &NewActor;

impl Detector for NewActor {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for e in events {
            let actor = e.actor.trim();
            if !actor.is_empty()
                && !baseline.is_known_actor(actor)
                && seen.insert(actor.to_string())
            {
                out.push(finding(
                    FAMILY,
                    e,
                    &format!("new-actor-{actor}"),
                    SEVERITY,
                    format!("actor {actor} is not in the baseline"),
                    json!({"actor": actor, "rule": "unknown-actor"}),
                ));
            }
            if CREATION_TYPES.contains(&ty(e).as_str())
                && let Some(created) = first_text(e.fields(), &CREATED_NAME_KEYS)
                && !baseline.is_known_actor(&created)
                && seen.insert(created.clone())
            {
                let mut f = finding(
                    FAMILY,
                    e,
                    &format!("new-principal-{created}"),
                    SEVERITY,
                    format!(
                        "{} created principal {created}, not in the baseline",
                        e.actor
                    ),
                    json!({"created_principal": created, "created_by": e.actor, "rule": "created-principal"}),
                );
                f.actor = created;
                out.push(f);
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

    #[test]
    fn unknown_once_per_actor_known_silent() {
        let b = bl(&["known"], &[]);
        let evs = [
            ev("1", "s", "x", "stranger", "2026-05-04T10:00:00Z", json!({})),
            ev("2", "s", "x", "stranger", "2026-05-04T10:01:00Z", json!({})),
            ev("3", "s", "x", "known", "2026-05-04T10:02:00Z", json!({})),
        ];
        let out = NewActor.detect(&evs, &b);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].actor, "stranger");
    }

    #[test]
    fn created_principals() {
        let b = bl(&["admin", "old-user"], &[]);
        let mk = |name: &str| {
            ev(
                "c",
                "okta",
                "user_created",
                "admin",
                "2026-05-04T10:00:00Z",
                json!({"display_name": name}),
            )
        };
        let out = NewActor.detect(&[mk("contractor-7")], &b);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].actor, "contractor-7");
        assert!(NewActor.detect(&[mk("old-user")], &b).is_empty());
    }
}

//! git-oops: risky operations on source repositories.
//!
//! Rule: over events from a forge source ([`GIT_SOURCES`]):
//! - `push` with `forced: true` → critical when the ref is a protected branch
//!   ([`PROTECTED_BRANCHES`], or `release/…`), else high (feature branches, tags);
//! - `branch_delete` / `tag_delete` → high on a protected branch, else medium;
//! - a `push` whose commit message (`commit_message`, `message`) matches a
//!   secrets-exposure pattern → high ("secret in commit message").
//!
//! An ordinary push is silent.

use super::secrets_exposure;
use crate::Detector;
use crate::util::{finding, first_text, text, truthy, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;

pub const FAMILY: &str = "git-oops";
pub const GIT_SOURCES: [&str; 4] = ["github", "gitlab", "bitbucket", "git"];
pub const PROTECTED_BRANCHES: [&str; 5] = ["main", "master", "production", "prod", "release"];

pub struct GitOops;

/// The short name of a ref (`refs/heads/main` → `main`, `refs/tags/v1` → `v1`).
pub fn short_ref(r: &str) -> &str {
    r.strip_prefix("refs/heads/")
        .or_else(|| r.strip_prefix("refs/tags/"))
        .unwrap_or(r)
}

/// True for a protected branch ref (tags are never protected branches).
pub fn is_protected(r: &str) -> bool {
    if r.starts_with("refs/tags/") {
        return false;
    }
    let name = short_ref(r).to_ascii_lowercase();
    PROTECTED_BRANCHES.contains(&name.as_str()) || name.starts_with("release/")
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &GitOops;

impl Detector for GitOops {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], _: &Baseline) -> Vec<Finding> {
        let mut out = Vec::new();
        for e in events {
            if !GIT_SOURCES.contains(&e.source.trim().to_ascii_lowercase().as_str()) {
                continue;
            }
            let t = ty(e);
            let m = e.fields();
            let r = first_text(m, &["ref", "branch"]).unwrap_or_default();
            match t.as_str() {
                "push" => {
                    if truthy(m, "forced") || truthy(m, "force") {
                        let severity = if is_protected(&r) { "critical" } else { "high" };
                        out.push(finding(
                            FAMILY,
                            e,
                            "force-push",
                            severity,
                            format!("force-push to {} by {}", short_ref(&r), e.actor),
                            json!({"ref": r, "rule": "force-push"}),
                        ));
                    }
                    if let Some(msg) = text(m, "commit_message").or_else(|| text(m, "message"))
                        && let Some(rule) = secrets_exposure::first_match(&msg)
                    {
                        out.push(finding(
                            FAMILY,
                            e,
                            "commit-secret",
                            "high",
                            format!("secret pattern {rule} in a commit message by {}", e.actor),
                            json!({"ref": r, "pattern": rule, "rule": "secret-in-commit-message"}),
                        ));
                    }
                }
                "branch_delete" | "tag_delete" => {
                    let severity = if is_protected(&r) { "high" } else { "medium" };
                    out.push(finding(
                        FAMILY,
                        e,
                        "ref-delete",
                        severity,
                        format!("{t} of {} by {}", short_ref(&r), e.actor),
                        json!({"ref": r, "rule": t}),
                    ));
                }
                _ => {}
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

    fn run(source: &str, t: &str, m: serde_json::Value) -> Vec<String> {
        let e = ev("e", source, t, "dev", "2026-05-04T10:00:00Z", m);
        GitOops
            .detect(&[e], &bl(&[], &[]))
            .into_iter()
            .map(|f| f.severity)
            .collect()
    }

    #[test]
    fn pushes() {
        assert_eq!(
            run(
                "github",
                "push",
                json!({"ref": "refs/heads/main", "forced": true})
            ),
            vec!["critical"]
        );
        assert_eq!(
            run(
                "github",
                "push",
                json!({"ref": "refs/heads/feature/x", "forced": true})
            ),
            vec!["high"]
        );
        assert_eq!(
            run(
                "gitlab",
                "push",
                json!({"ref": "refs/tags/main", "forced": true})
            ),
            vec!["high"]
        );
        assert!(
            run(
                "github",
                "push",
                json!({"ref": "refs/heads/main", "forced": false})
            )
            .is_empty()
        );
        assert!(
            run(
                "jenkins",
                "push",
                json!({"ref": "refs/heads/main", "forced": true})
            )
            .is_empty()
        );
    }

    #[test]
    fn secrets_in_commit_messages_and_deletes() {
        assert_eq!(
            run(
                "github",
                "push",
                json!({"commit_message": "use AKIACANARYFAKEKEY000"})
            ),
            vec!["high"]
        );
        assert!(
            run(
                "github",
                "push",
                json!({"commit_message": "old key AKIA************ disabled"})
            )
            .is_empty()
        );
        assert_eq!(
            run(
                "github",
                "branch_delete",
                json!({"ref": "refs/heads/feature/x"})
            ),
            vec!["medium"]
        );
        assert_eq!(
            run(
                "github",
                "branch_delete",
                json!({"ref": "refs/heads/master"})
            ),
            vec!["high"]
        );
        assert_eq!(
            run("github", "tag_delete", json!({"ref": "refs/tags/v1"})),
            vec!["medium"]
        );
    }
}

//! The evidence gates computed by code: approval and export markers, the triggers that
//! send a finding on to investigate, and the structural evidence score.

use crate::tools::{Evidence, Toolbox};
use crate::verdict::Verdict;

pub(super) const ROLE_GRANT_MARKERS: &[&str] = &[
    "role_assign",
    "roleassign",
    "grant",
    "add_member",
    "member_add",
    "member_added",
    "collaborator",
    "permission",
    "add_owner",
    "set_role",
];
pub(super) const EXPORT_MARKERS: &[&str] =
    &["export", "download", "clone", "object_get", "bulk", "dump"];
pub(super) const PII_MARKERS: &[&str] =
    &["pii", "ssn", "customer", "payroll", "personal", "hr_record"];
pub(super) const APPROVAL_KEYS: &[&str] = &[
    "vendor_approved",
    "vendor_id",
    "contract_ref",
    "ticket",
    "hr_ticket",
    "approved_by",
    "approval_id",
];
pub(super) const MALICIOUS_MARKERS: &[&str] = &[
    "malicious",
    "exfil",
    "inject",
    "tamper",
    "escalat",
    "secret",
    "brute",
    "spray",
    "attack",
    "backdoor",
    "typosquat",
    "exploit",
    "credential",
    "suspicious",
];

/// Role grants by the actor, and bulk/PII exports, without an approval key.
pub(super) fn needs_strong_evidence(tb: &Toolbox, actor: &str) -> bool {
    let has = |hay: &str, m: &[&str]| {
        let h = hay.to_ascii_lowercase();
        m.iter().any(|x| h.contains(x))
    };
    let mine: Vec<_> = tb.events.iter().filter(|e| e.actor == actor).collect();
    let approved = mine.iter().any(|e| {
        e.fields()
            .keys()
            .any(|k| APPROVAL_KEYS.contains(&k.as_str()))
    }) || tb
        .finding_metadata
        .iter()
        .any(|(k, _)| APPROVAL_KEYS.contains(&k.as_str()));
    if approved {
        return false;
    }
    let grant = mine
        .iter()
        .any(|e| has(&e.event_type, ROLE_GRANT_MARKERS) || has(e.action(), ROLE_GRANT_MARKERS));
    let export = mine.iter().any(|e| {
        (has(&e.event_type, EXPORT_MARKERS) || has(e.action(), EXPORT_MARKERS))
            && (has(e.target(), PII_MARKERS)
                || e.fields().iter().any(|(k, v)| {
                    has(k, PII_MARKERS) || v.as_str().is_some_and(|s| has(s, PII_MARKERS))
                })
                || matches!(
                    tb.finding.family().as_str(),
                    "exfil-pattern" | "volume-anomaly"
                ))
    });
    grant || export
}

/// Triage resolves go on to investigate for these.
pub(super) fn investigate_triggers(tb: &Toolbox, ev: &Evidence) -> bool {
    let sev = tb.finding.severity.to_ascii_lowercase();
    let marked = |s: &str| {
        let l = s.to_ascii_lowercase();
        MALICIOUS_MARKERS.iter().any(|m| l.contains(m))
    };
    !ev.baseline.has_history()
        || sev == "high"
        || sev == "critical"
        || marked(&tb.finding.family())
        || marked(&tb.finding.reason)
}

/// The structural evidence score of an investigate resolve (0..=5).
pub(super) fn evidence_score(tb: &Toolbox, ev: &Evidence, v: &Verdict) -> u32 {
    let sev = tb.finding.severity.to_ascii_lowercase();
    u32::from(ev.baseline.known_actor)
        + u32::from(
            ev.baseline
                .frequencies
                .iter()
                .any(|(k, n)| *n > 0 && k.split(':').count() >= 3),
        )
        + u32::from(ev.baseline.relationships.iter().any(|(_, n)| *n > 0))
        + u32::from(v.strong_evidence)
        + u32::from(sev != "high" && sev != "critical")
}

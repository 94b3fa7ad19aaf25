//! The deterministic floor (step 0): finding types that escalate with zero model
//! calls, and the reason each route gives.

use super::outcome::CascadeOptions;
use crate::sanitize::sanitize;
use crate::tools::Toolbox;
use std::fmt::Write as _;

/// A floor route (step 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloorRoute {
    pub id: &'static str,
    pub family: &'static str,
    /// Normalised type tokens (lowercase, `-_ ./:` removed).
    pub aliases: &'static [&'static str],
    /// When set, the route also fires for any type whose finding metadata holds
    /// this key with this value (case-insensitive).
    pub metadata: Option<(&'static str, &'static str)>,
}

/// The data-driven floor (E-006, the budget breach, is checked separately).
pub const FLOOR_ROUTES: &[FloorRoute] = &[
    FloorRoute {
        id: "E-001",
        family: "priv-escalation",
        aliases: &["privescalation", "privilegeescalation", "privesc"],
        metadata: None,
    },
    FloorRoute {
        id: "E-002",
        family: "injection-probe",
        aliases: &["injectionprobe", "promptinjection"],
        metadata: None,
    },
    FloorRoute {
        id: "E-003",
        family: "log-format-drift",
        aliases: &["logformatdrift", "logdrift"],
        metadata: None,
    },
    FloorRoute {
        id: "E-004",
        family: "secrets-exposure",
        aliases: &["secretsexposure", "secretexposure", "secretleak"],
        metadata: None,
    },
    FloorRoute {
        id: "E-005",
        family: "boundary-violation",
        aliases: &["boundaryviolation"],
        metadata: Some(("boundary_violation", "true")),
    },
];

/// The budget-breach route id.
pub const BUDGET_ROUTE: &str = "E-006";

/// Normalises a finding type for floor matching: lowercase, `-_ ./:` removed, and a
/// leading `detector` (from `detector:<family>`) dropped.
pub fn normalise_type(t: &str) -> String {
    let n: String = t
        .to_lowercase()
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | ' ' | '.' | '/' | ':'))
        .collect();
    match n.strip_prefix("detector") {
        Some(rest) if !rest.is_empty() => rest.to_string(),
        _ => n,
    }
}

/// The floor route a finding takes, if any.
pub fn floor_route(
    finding_type: &str,
    metadata: &[(String, String)],
    opts: &CascadeOptions,
) -> Option<&'static str> {
    let t = normalise_type(finding_type);
    for r in FLOOR_ROUTES {
        if r.aliases.contains(&t.as_str()) {
            return Some(r.id);
        }
        if let Some((k, v)) = r.metadata
            && metadata
                .iter()
                .any(|(mk, mv)| mk == k && mv.trim().eq_ignore_ascii_case(v))
        {
            return Some(r.id);
        }
    }
    (opts.findings_in_scan > opts.findings_budget).then_some(BUDGET_ROUTE)
}

pub(super) fn floor_reason(route: &str, tb: &Toolbox) -> String {
    let family = tb.finding.family();
    let mut s = if route == BUDGET_ROUTE {
        format!(
            "floor route {route}: findings budget exceeded for this scan; escalated without model inference."
        )
    } else {
        format!(
            "floor route {route}: {family} findings always escalate; escalated without model inference."
        )
    };
    let _ = write!(
        s,
        " Finding: {} (severity {}, actor {}).",
        sanitize(&tb.finding.reason),
        sanitize(&tb.finding.severity),
        sanitize(&tb.finding.actor)
    );
    let md: Vec<String> = tb
        .finding_metadata
        .iter()
        .take(12)
        .map(|(k, v)| {
            format!(
                "{}={}",
                sanitize(k),
                sanitize(v).chars().take(160).collect::<String>()
            )
        })
        .collect();
    if !md.is_empty() {
        let _ = write!(s, " Finding metadata: {}.", md.join(", "));
    }
    for e in tb
        .events
        .iter()
        .filter(|e| tb.finding.event_ids.contains(&e.id))
        .take(5)
    {
        let _ = write!(
            s,
            " Event {}: {} {} {} on {}.",
            sanitize(&e.id),
            sanitize(&e.actor),
            sanitize(&e.event_type),
            sanitize(e.action()),
            sanitize(e.target())
        );
    }
    s
}

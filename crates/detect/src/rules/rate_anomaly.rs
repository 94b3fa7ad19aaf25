//! rate-anomaly: request rates far above normal, or probing of sensitive endpoints.
//!
//! Rule: over `api_request` / `api_burst` / `rate_event` events with a
//! `request_count`, one finding per event at the highest severity any rule gives:
//! - absolute: ≥ [`HIGH_REQUESTS`] (1000) → high, ≥ [`MEDIUM_REQUESTS`] (200) → medium;
//! - ratio to the baseline (`source:type:actor`, else `source:type`; skipped when 0):
//!   ≥ [`HIGH_RATIO`] (20) → high, ≥ [`MEDIUM_RATIO`] (5) → medium;
//! - sensitive endpoint (a path segment containing one of
//!   [`SENSITIVE_ENDPOINT_MARKERS`]) with more than [`SENSITIVE_MAX_REQUESTS`] (10)
//!   requests → high.

use crate::Detector;
use crate::util::{finding, num, text, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;

pub const FAMILY: &str = "rate-anomaly";
pub const RATE_TYPES: [&str; 3] = ["api_request", "api_burst", "rate_event"];
pub const HIGH_REQUESTS: f64 = 1000.0;
pub const MEDIUM_REQUESTS: f64 = 200.0;
pub const HIGH_RATIO: f64 = 20.0;
pub const MEDIUM_RATIO: f64 = 5.0;
pub const SENSITIVE_MAX_REQUESTS: f64 = 10.0;
pub const SENSITIVE_ENDPOINT_MARKERS: [&str; 7] = [
    "secret",
    "admin",
    "credential",
    "token",
    "password",
    "vault",
    "keys",
];

pub struct RateAnomaly;

/// True when a path segment of `endpoint` names sensitive material.
pub fn is_sensitive(endpoint: &str) -> bool {
    endpoint
        .to_ascii_lowercase()
        .split(['/', '?', '&', '='])
        .any(|seg| SENSITIVE_ENDPOINT_MARKERS.iter().any(|m| seg.contains(m)))
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &RateAnomaly;

impl Detector for RateAnomaly {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let mut out = Vec::new();
        for e in events {
            let t = ty(e);
            if !RATE_TYPES.contains(&t.as_str()) {
                continue;
            }
            let m = e.fields();
            let Some(count) = num(m, "request_count") else {
                continue;
            };
            let mut rules: Vec<(&str, u8)> = Vec::new();
            if count >= HIGH_REQUESTS {
                rules.push(("absolute-rate", 2));
            } else if count >= MEDIUM_REQUESTS {
                rules.push(("absolute-rate", 1));
            }
            let base = match baseline.freq(&format!("{}:{}:{}", e.source, e.event_type, e.actor)) {
                0 => baseline.freq(&format!("{}:{}", e.source, e.event_type)),
                b => b,
            };
            let ratio = if base > 0 { count / base as f64 } else { 0.0 };
            if ratio >= HIGH_RATIO {
                rules.push(("baseline-ratio", 2));
            } else if ratio >= MEDIUM_RATIO {
                rules.push(("baseline-ratio", 1));
            }
            let endpoint = text(m, "endpoint")
                .or_else(|| text(m, "path"))
                .unwrap_or_default();
            if is_sensitive(&endpoint) && count > SENSITIVE_MAX_REQUESTS {
                rules.push(("sensitive-endpoint", 2));
            }
            let Some(level) = rules.iter().map(|r| r.1).max() else {
                continue;
            };
            let names: Vec<&str> = rules.iter().map(|r| r.0).collect();
            out.push(finding(FAMILY, e, "rate", if level == 2 { "high" } else { "medium" },
                format!("{count} requests by {} to {endpoint} ({ratio:.1}x baseline)", e.actor),
                json!({"request_count": count, "baseline": base, "ratio": ratio, "endpoint": endpoint, "rules": names})));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    fn run(count: i64, endpoint: &str, freq: &[(&str, i64)]) -> Vec<String> {
        let e = ev(
            "e",
            "aws",
            "api_request",
            "svc",
            "2026-05-04T10:00:00Z",
            json!({"request_count": count, "endpoint": endpoint}),
        );
        RateAnomaly
            .detect(&[e], &bl(&["svc"], freq))
            .into_iter()
            .map(|f| f.severity)
            .collect()
    }

    #[test]
    fn absolute_boundaries() {
        assert!(run(199, "/v2/items", &[]).is_empty());
        assert_eq!(run(200, "/v2/items", &[]), vec!["medium"]);
        assert_eq!(run(999, "/v2/items", &[]), vec!["medium"]);
        assert_eq!(run(1000, "/v2/items", &[]), vec!["high"]);
    }

    #[test]
    fn ratio_boundaries() {
        assert!(run(149, "/v2/orders", &[("aws:api_request:svc", 30)]).is_empty());
        assert_eq!(
            run(150, "/v2/orders", &[("aws:api_request:svc", 30)]),
            vec!["medium"]
        );
        assert_eq!(
            run(150, "/v2/orders", &[("aws:api_request", 30)]),
            vec!["medium"],
            "2-segment fallback"
        );
        assert_eq!(
            run(199, "/v2/orders", &[("aws:api_request:svc", 9)]),
            vec!["high"],
            "22x"
        );
        assert!(run(150, "/v2/orders", &[("aws:api_request:svc", 4300)]).is_empty());
    }

    #[test]
    fn sensitive_endpoint_boundary() {
        assert!(run(10, "/v1/secrets/rotate", &[]).is_empty());
        assert_eq!(run(11, "/v1/secrets/list", &[]), vec!["high"]);
        assert!(run(11, "/v2/customers/search", &[]).is_empty());
    }
}

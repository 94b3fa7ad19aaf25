//! exfil-pattern: data leaving in bulk.
//!
//! Rule: over transfer events ([`EXFIL_TYPES`]: download / export / clone /
//! object-get family), one finding per event, the first rule that applies:
//! 1. volume: `bytes_transferred` ÷ 2^20 (whole MiB) ≥ [`HIGH_MB`] (500) → high,
//!    ≥ [`MEDIUM_MB`] (100) → medium;
//! 2. resources: max(`resource_count`, `files_accessed`, length of `resources`)
//!    ≥ [`HIGH_RESOURCES`] (100) → high, ≥ [`MEDIUM_RESOURCES`] (20) → medium;
//! 3. ratio: magnitude (the resource count, else 1) ÷ the `source:type` baseline
//!    frequency (when > 0) ≥ [`HIGH_RATIO`] (10) → high, ≥ [`MEDIUM_RATIO`] (3) →
//!    medium.

use crate::Detector;
use crate::util::{finding, num, ty};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::{Value, json};

pub const FAMILY: &str = "exfil-pattern";
pub const EXFIL_TYPES: [&str; 13] = [
    "download",
    "file_download",
    "bulk_export",
    "data_export",
    "api_export",
    "export",
    "repo_clone",
    "repo_archive",
    "clone",
    "object_get",
    "get_object",
    "list_objects",
    "bulk_read",
];
pub const BYTES_PER_MB: f64 = 1024.0 * 1024.0;
pub const HIGH_MB: f64 = 500.0;
pub const MEDIUM_MB: f64 = 100.0;
pub const HIGH_RESOURCES: f64 = 100.0;
pub const MEDIUM_RESOURCES: f64 = 20.0;
pub const HIGH_RATIO: f64 = 10.0;
pub const MEDIUM_RATIO: f64 = 3.0;

pub struct ExfilPattern;

/// max(resource_count, files_accessed, len(resources)).
pub fn resource_count(m: &serde_json::Map<String, Value>) -> f64 {
    let listed = match m.get("resources") {
        Some(Value::Array(a)) => a.len() as f64,
        _ => 0.0,
    };
    [
        num(m, "resource_count"),
        num(m, "files_accessed"),
        Some(listed),
    ]
    .into_iter()
    .flatten()
    .fold(0.0, f64::max)
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &ExfilPattern;

impl Detector for ExfilPattern {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let mut out = Vec::new();
        for e in events {
            let t = ty(e);
            if !EXFIL_TYPES.contains(&t.as_str()) {
                continue;
            }
            let m = e.fields();
            let mb = (num(m, "bytes_transferred").unwrap_or(0.0) / BYTES_PER_MB).floor();
            let resources = resource_count(m);
            let base = baseline.freq(&format!("{}:{}", e.source, e.event_type));
            let ratio = if base > 0 {
                resources.max(1.0) / base as f64
            } else {
                0.0
            };
            let hit = if mb >= HIGH_MB {
                Some(("high", "high-volume-transfer"))
            } else if mb >= MEDIUM_MB {
                Some(("medium", "anomalous-volume-transfer"))
            } else if resources >= HIGH_RESOURCES {
                Some(("high", "bulk-resource-access"))
            } else if resources >= MEDIUM_RESOURCES {
                Some(("medium", "bulk-resource-access"))
            } else if ratio >= HIGH_RATIO {
                Some(("high", "frequency-anomaly"))
            } else if ratio >= MEDIUM_RATIO {
                Some(("medium", "frequency-anomaly"))
            } else {
                None
            };
            if let Some((severity, rule)) = hit {
                out.push(finding(FAMILY, e, "exfil", severity,
                    format!("{rule}: {} via {t} ({mb} MB, {resources} resources, {ratio:.2}x baseline)", e.actor),
                    json!({"volume_mb": mb, "resources": resources, "baseline": base, "ratio": ratio, "rule": rule})));
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

    fn run(m: serde_json::Value, freq: &[(&str, i64)]) -> Vec<String> {
        let e = ev("e", "aws", "object_get", "a", "2026-05-04T10:00:00Z", m);
        ExfilPattern
            .detect(&[e], &bl(&["a"], freq))
            .into_iter()
            .map(|f| f.severity)
            .collect()
    }

    #[test]
    fn volume_boundaries() {
        let mib = 1024 * 1024;
        assert!(run(json!({"bytes_transferred": 100 * mib - 1}), &[]).is_empty());
        assert_eq!(
            run(json!({"bytes_transferred": 100 * mib}), &[]),
            vec!["medium"]
        );
        assert_eq!(
            run(json!({"bytes_transferred": 500 * mib - 1}), &[]),
            vec!["medium"]
        );
        assert_eq!(
            run(json!({"bytes_transferred": 500 * mib}), &[]),
            vec!["high"]
        );
    }

    #[test]
    fn resource_boundaries() {
        assert!(run(json!({"resource_count": 19}), &[]).is_empty());
        assert_eq!(run(json!({"resource_count": 20}), &[]), vec!["medium"]);
        assert_eq!(
            run(json!({"resources": vec!["x"; 99]}), &[]),
            vec!["medium"]
        );
        assert_eq!(run(json!({"resources": vec!["x"; 100]}), &[]), vec!["high"]);
    }

    #[test]
    fn ratio_boundaries_use_the_two_segment_key() {
        let res = |n: usize| json!({"resources": vec!["x"; n]});
        assert!(run(res(11), &[("aws:object_get", 4)]).is_empty(), "2.75x");
        assert_eq!(run(res(12), &[("aws:object_get", 4)]), vec!["medium"], "3x");
        assert_eq!(
            run(res(19), &[("aws:object_get", 2)]),
            vec!["medium"],
            "9.5x"
        );
        assert_eq!(
            run(json!({}), &[("aws:object_get", 0)]),
            Vec::<String>::new()
        );
        assert_eq!(run(res(10), &[("aws:object_get", 1)]), vec!["high"], "10x");
        assert!(
            run(res(12), &[("aws:object_get:a", 1)]).is_empty(),
            "3-segment key ignored"
        );
    }

    #[test]
    fn other_types_are_ignored() {
        let e = ev(
            "e",
            "aws",
            "records_read",
            "a",
            "2026-05-04T10:00:00Z",
            json!({"resource_count": 500}),
        );
        assert!(ExfilPattern.detect(&[e], &bl(&[], &[])).is_empty());
    }
}

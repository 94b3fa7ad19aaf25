//! volume-anomaly: an actor doing far more of something than usual.
//!
//! Rule: group events by (source, type, actor); the volume is the sum over the group
//! of each event's magnitude — the first of [`MAGNITUDE_FIELDS`] present, else 1.
//! Skip a group when its `source:type:actor` baseline is 0 (or absent), or when the
//! baseline is below [`SHALLOW_BASELINE`] (5) and the volume below
//! [`SHALLOW_MIN_VOLUME`] (50). Otherwise fire medium when volume > [`MULTIPLIER`] (3)
//! × baseline. One finding per group.

use crate::Detector;
use crate::util::{group_finding, num};
use gauntlet_corpus::projection::{Baseline, Event, Finding};
use serde_json::json;
use std::collections::BTreeMap;

pub const FAMILY: &str = "volume-anomaly";
pub const SEVERITY: &str = "medium";
pub const MAGNITUDE_FIELDS: [&str; 8] = [
    "operation_count",
    "blobs_accessed",
    "objects_accessed",
    "object_count",
    "resource_count",
    "results_count",
    "rows_affected",
    "record_count",
];
pub const SHALLOW_BASELINE: i64 = 5;
pub const SHALLOW_MIN_VOLUME: f64 = 50.0;
pub const MULTIPLIER: f64 = 3.0;

pub struct VolumeAnomaly;

/// An event's magnitude: the first magnitude field present, else 1.
pub fn magnitude(e: &Event) -> f64 {
    let m = e.fields();
    MAGNITUDE_FIELDS
        .iter()
        .find_map(|k| num(m, k))
        .unwrap_or(1.0)
}

/// The detector the fleet runs (the build lists every rule file's `DETECTOR`).
pub const DETECTOR: &dyn Detector = &VolumeAnomaly;

impl Detector for VolumeAnomaly {
    fn name(&self) -> &str {
        FAMILY
    }

    fn detect(&self, events: &[Event], baseline: &Baseline) -> Vec<Finding> {
        let mut groups: BTreeMap<(&str, &str, &str), Vec<&Event>> = BTreeMap::new();
        for e in events {
            groups
                .entry((&e.source, &e.event_type, &e.actor))
                .or_default()
                .push(e);
        }
        let mut out = Vec::new();
        for ((source, t, actor), evs) in groups {
            let key = format!("{source}:{t}:{actor}");
            let base = baseline.freq(&key);
            let volume: f64 = evs.iter().map(|e| magnitude(e)).sum();
            if base <= 0 || (base < SHALLOW_BASELINE && volume < SHALLOW_MIN_VOLUME) {
                continue;
            }
            if volume > MULTIPLIER * base as f64 {
                out.push(group_finding(FAMILY, format!("finding-{FAMILY}-{key}"), actor, &evs, SEVERITY,
                    format!("{actor} {t} volume {volume} vs baseline {base} ({:.2}x)", volume / base as f64),
                    json!({"volume": volume, "baseline": base, "key": key, "rule": "volume-over-baseline"})));
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

    fn reads(counts: &[i64]) -> Vec<Event> {
        counts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                ev(
                    &format!("r{i}"),
                    "aws",
                    "records_read",
                    "svc",
                    "2026-05-04T10:00:00Z",
                    json!({"record_count": c}),
                )
            })
            .collect()
    }

    #[test]
    fn three_times_boundary() {
        let b = bl(&["svc"], &[("aws:records_read:svc", 100)]);
        assert!(
            VolumeAnomaly
                .detect(&reads(&[100, 100, 100]), &b)
                .is_empty()
        );
        assert_eq!(
            sev(&VolumeAnomaly.detect(&reads(&[120, 101, 80]), &b)),
            vec!["medium"]
        );
    }

    #[test]
    fn shallow_and_zero_baselines() {
        let b = bl(&["svc"], &[("aws:records_read:svc", 4)]);
        assert!(VolumeAnomaly.detect(&reads(&[49]), &b).is_empty());
        assert_eq!(VolumeAnomaly.detect(&reads(&[50]), &b).len(), 1);
        let b = bl(&["svc"], &[("aws:records_read:svc", 0)]);
        assert!(VolumeAnomaly.detect(&reads(&[5000]), &b).is_empty());
        // Baseline 5 is not shallow: 16 events of magnitude 1 > 15 fire.
        let b = bl(&["svc"], &[("aws:x:svc", 5)]);
        let evs: Vec<Event> = (0..16)
            .map(|i| ev(&i.to_string(), "aws", "x", "svc", "", json!({})))
            .collect();
        assert_eq!(VolumeAnomaly.detect(&evs, &b).len(), 1);
        assert!(VolumeAnomaly.detect(&evs[..15], &b).is_empty());
    }
}

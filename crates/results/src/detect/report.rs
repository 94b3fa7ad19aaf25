//! A detect exam's `report.json` (`gauntlet exam-detect --out`, `--json`): the graded
//! rows, recall and precision with their Wilson intervals, the coverage matrix per
//! detector family and the detectors' health. `gauntlet_detect::exam` grades the fleet
//! and writes these; the merge of detect-exam shards reads its rows back.

use serde::{Deserialize, Serialize};

/// z for a 95% Wilson interval.
pub const WILSON_Z: f64 = 1.959_963_984_540_054;

/// A row's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    Pass,
    Fail,
    ReservedPending,
    Unlabeled,
}

impl RowStatus {
    pub fn label(self) -> &'static str {
        match self {
            RowStatus::Pass => "PASS",
            RowStatus::Fail => "FAIL",
            RowStatus::ReservedPending => "RESERVED",
            RowStatus::Unlabeled => "UNLABELED",
        }
    }
}

/// A detector failure on one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowError {
    pub detector: String,
    /// `panic`, `timeout` or `failed`.
    pub kind: String,
    pub message: String,
}

/// One graded scenario (read back by the merge of detect-exam shards).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub id: String,
    pub relpath: String,
    /// `corpus`, `extra`, or `detector:<name>` for an external detector's scenarios.
    pub origin: String,
    pub status: RowStatus,
    pub must_fire: Vec<String>,
    pub must_not_fire: Vec<String>,
    /// The scenario's own `expected_detection.reserved` flag.
    pub reserved_flag: bool,
    /// Families that fired, sorted.
    pub fired: Vec<String>,
    /// `must_fire` families that did not fire (registered ones: a miss).
    pub missing: Vec<String>,
    /// Missing `must_fire` families with no registered detector.
    pub reserved_families: Vec<String>,
    /// `must_not_fire` families that fired.
    pub violations: Vec<String>,
    /// Fired families in neither list (informational).
    pub unexpected: Vec<String>,
    pub errors: Vec<RowError>,
    pub events: usize,
    pub findings: usize,
}

impl Row {
    pub fn is_attack(&self) -> bool {
        self.status != RowStatus::Unlabeled && !self.must_fire.is_empty()
    }

    pub fn is_benign(&self) -> bool {
        self.status != RowStatus::Unlabeled && self.must_fire.is_empty()
    }

    /// Every must_fire family fired.
    pub fn fully_detected(&self) -> bool {
        self.missing.is_empty() && self.reserved_families.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Totals {
    pub scenarios: usize,
    pub labeled: usize,
    pub unlabeled: usize,
    pub passed: usize,
    pub failed: usize,
    pub reserved: usize,
    /// Projected events over every scenario.
    pub events: usize,
}

/// A proportion with its 95% Wilson interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub numerator: usize,
    pub denominator: usize,
    pub rate: f64,
    pub wilson_low: f64,
    pub wilson_high: f64,
}

impl Rate {
    pub fn new(numerator: usize, denominator: usize) -> Rate {
        let rate = if denominator == 0 {
            1.0
        } else {
            numerator as f64 / denominator as f64
        };
        let (lo, hi) = gauntlet_core::stats::wilson(numerator as u64, denominator as u64, WILSON_Z)
            .unwrap_or((rate, rate));
        Rate {
            numerator,
            denominator,
            rate,
            wilson_low: lo,
            wilson_high: hi,
        }
    }
}

/// A missed attack.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Miss {
    pub id: String,
    pub missing: Vec<String>,
    /// True when every missing family is unregistered (a tracked, reserved miss).
    pub reserved: bool,
}

/// A benign row on which a must_not_fire family fired.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FalseAlarm {
    pub id: String,
    pub families: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recall {
    #[serde(flatten)]
    pub rate: Rate,
    pub missed: Vec<Miss>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Precision {
    #[serde(flatten)]
    pub rate: Rate,
    pub false_alarms: Vec<FalseAlarm>,
}

/// One family's coverage line.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Coverage {
    pub family: String,
    pub registered: bool,
    pub attack_labels: usize,
    pub benign_labels: usize,
    pub missed: usize,
    pub false_alarms: usize,
    pub reserved: usize,
    /// Rows on which this family fired.
    pub fired: usize,
}

/// Per-detector failure counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DetectorHealth {
    pub detector: String,
    pub external: bool,
    pub ok: usize,
    pub panics: usize,
    pub timeouts: usize,
    pub failures: usize,
}

/// How fast a run went (not serialized; see [`DetectReport::throughput`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Throughput {
    pub elapsed_secs: f64,
    pub events: usize,
    pub scenarios_per_sec: f64,
    pub events_per_sec: f64,
}

/// The whole detect-exam result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DetectReport {
    /// `detect`.
    pub mode: String,
    pub corpus_root: String,
    pub corpus_count: usize,
    pub corpus_sha256: String,
    pub extra_count: usize,
    pub detectors: Vec<String>,
    pub totals: Totals,
    pub recall: Recall,
    pub precision: Precision,
    pub coverage: Vec<Coverage>,
    pub detector_health: Vec<DetectorHealth>,
    pub detector_errors: usize,
    pub rows: Vec<Row>,
    /// Wall-clock figures: kept out of the serialized report so that the report is
    /// byte-identical across reruns and `--parallel`; the CLI prints them on stderr.
    #[serde(skip)]
    pub throughput: Throughput,
}

impl DetectReport {
    /// 0 all pass; 1 gaps (failed rows); 2 the run was not clean (detector errors).
    pub fn exit_code(&self) -> u8 {
        if self.detector_errors > 0 {
            2
        } else if self.totals.failed > 0 {
            1
        } else {
            0
        }
    }
}

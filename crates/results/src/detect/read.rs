//! A detect exam's `report.json` (`gauntlet exam-detect --out`, written by
//! `gauntlet_detect::exam`) as the dashboard reads it: [`DetectReportRead`], the fields it
//! shows, each one [`Loose`] so that a partial or hostile file still shows the rest.

use crate::loose::Loose;
use serde::Deserialize;

/// `report.json` of a detect exam, leniently: the overall recall and precision and
/// the coverage matrix per detector family.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct DetectReportRead {
    pub mode: Loose<String>,
    pub corpus_sha256: Loose<String>,
    pub recall: Loose<RateRead>,
    pub precision: Loose<RateRead>,
    /// One row per detector family; a row that is not an object reads as `None`.
    pub coverage: Loose<Vec<Loose<CoverageRead>>>,
}

impl DetectReportRead {
    /// The coverage rows (`None` when there is no `coverage` list), each the default
    /// (family unknown, every count 0) when it does not read as a row.
    pub fn coverage(&self) -> Option<Vec<CoverageRead>> {
        self.coverage
            .get()
            .map(|v| v.iter().map(|c| c.0.clone().unwrap_or_default()).collect())
    }
}

/// A fraction with its Wilson 95% interval (`recall`, `precision`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct RateRead {
    pub numerator: Loose<u64>,
    pub denominator: Loose<u64>,
    pub rate: Loose<f64>,
    pub wilson_low: Loose<f64>,
    pub wilson_high: Loose<f64>,
}

impl RateRead {
    /// The stated interval, when both ends are numbers.
    pub fn interval(&self) -> Option<(f64, f64)> {
        Some((self.wilson_low.0?, self.wilson_high.0?))
    }
}

/// One detector family's row of the coverage matrix.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CoverageRead {
    pub family: Loose<String>,
    pub attack_labels: Loose<u64>,
    pub benign_labels: Loose<u64>,
    pub missed: Loose<u64>,
    pub false_alarms: Loose<u64>,
    pub reserved: Loose<u64>,
    pub fired: Loose<u64>,
}

impl CoverageRead {
    /// The family's name, `?` when it has none.
    pub fn family(&self) -> &str {
        self.family.get().map_or("?", String::as_str)
    }

    /// A count by its field name (`attack_labels`, `benign_labels`, `missed`,
    /// `false_alarms`, `reserved`, `fired`); 0 when absent or not a count.
    pub fn count(&self, key: &str) -> u64 {
        let v = match key {
            "attack_labels" => &self.attack_labels,
            "benign_labels" => &self.benign_labels,
            "missed" => &self.missed,
            "false_alarms" => &self.false_alarms,
            "reserved" => &self.reserved,
            "fired" => &self.fired,
            _ => return 0,
        };
        v.0.unwrap_or(0)
    }
}

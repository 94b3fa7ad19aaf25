//! A detect exam's files: `report.json` as the exam writes it ([`DetectReport`]) and as
//! the dashboard reads it leniently ([`DetectReportRead`]).

mod read;
mod report;

pub use read::{CoverageRead, DetectReportRead, RateRead};
pub use report::{
    Coverage, DetectReport, DetectorHealth, FalseAlarm, Miss, Precision, Rate, Recall, Row,
    RowError, RowStatus, Throughput, Totals, WILSON_Z,
};

//! gauntlet-results: the schema of the files in a run directory that another crate
//! reads. One type per file, written by the harness that produces it and read by every
//! surface that presents it (reports, the dashboard, `gauntlet gate`, `compare`,
//! `rescore`, `import`), so a field is named, typed and documented once.
//!
//! - `results.json` ([`RunSummary`]): cells, metrics with N/A, the provenance triple,
//!   warnings, counts;
//! - `leaderboard.json` ([`LeaderboardEntry`], [`LeaderboardRow`]): one row per cell ×
//!   metric, flattened from the results;
//! - `run.json` ([`RunRecord`]): a red-team run's identity, status, canonical config,
//!   datasets and units, and a shard's place in its run;
//! - a line of `transcripts.jsonl` ([`TranscriptRecord`], and [`TranscriptUnit`] for
//!   readers that only count verdicts): one judged attempt;
//! - a line of `sessions.jsonl` ([`RunSession`]): what one session of a run did;
//! - `rescore.json` and `rescored_from` ([`RescoreRecord`]): a rescored run's origin;
//! - [`stated`]: what a leaderboard row claims about itself and the checks of that claim
//!   every reader makes before trusting it;
//! - an agent exam's `report.json`, `classifier.json` and `run-<pass>/<stem>.json`
//!   ([`exam`]: [`exam::HarnessReport`], [`exam::ScenarioResult`]), with the recount a
//!   reader makes of them, and [`exam::ExamReportRead`], the same file read leniently;
//! - a detect exam's `report.json` read leniently ([`detect::DetectReportRead`]).
//!
//! A reader of untrusted directories (the dashboard) that must show what a partial or
//! hostile file holds reads it as a `*Read` type, built of [`loose`] fields.
//!
//! Readers accept files written by earlier releases: a field added since is
//! `#[serde(default)]`, and a field this release does not know is ignored (no type
//! here denies unknown fields).

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod detect;
pub mod exam;
pub mod loose;
mod rescore;
mod run;
mod session;
pub mod stated;
mod summary;
mod transcript;

pub use rescore::RescoreRecord;
pub use run::{DatasetRecord, RunRecord, ShardRecord, UnitCounts};
pub use session::{RunSession, SessionTransport};
pub use summary::{
    CellBreadth, CellMetric, CellSummary, CiMethod, Curve, CurvePoint, DistinctError, Example,
    GuardCurve, GuardCurvePoint, LeaderboardEntry, LeaderboardRow, MetricValue, RatePoint,
    RunBreadth, RunErrors, RunSummary, TransformEffect, TrialCounts, UndecidedBounds, Warning,
};
pub use transcript::{TranscriptRecord, TranscriptUnit};

//! An agent exam's files (`gauntlet exam --out`): `report.json` ([`HarnessReport`]),
//! `classifier.json` ([`ClassifierSummary`]) and each scenario run's
//! `run-<pass>/<stem>.json` ([`ScenarioResult`]), with the recount a reader makes of
//! them ([`RunResult::from_results`], [`median_of`], [`golden_counts`]).

mod pass;
mod read;
mod report;
mod scenario;

pub use pass::{
    Bits, MAX_STEM_BYTES, Outline, Results, RunResult, RunTally, WrittenPass, file_stem, worse,
    worst_run,
};
pub use read::{ExamReportRead, PassRead, ScenarioRead, StepRead};
pub use report::{
    ClassifierSummary, DecidedCounts, E2E_NOTE, ExamUsage, HarnessReport, NotRun, PIPELINE_CHECK,
    PassAllRuns, TierRole, TierUsage, golden_counts, median_of, pipeline_check_reason,
};
pub use scenario::{
    AxisResult, ChainStep, DecidedBy, Interval, ScenarioResult, StructuralAxes, is_attack,
    na_reason,
};

//! The agent exam driver (golden or real backend; mallcop's grading over N passes): N passes of the cascade over a verified corpus,
//! graded, summarised and written as artefacts.
//!
//! Why this exists: one function runs a whole exam — corpus already integrity-checked by
//! the loader — against a backend: the golden merge gate (in-process, or over loopback
//! HTTP through the `anthropic` target so the wire path is exercised) or real models
//! through the model seam. The scenario runs (pass-major) are a job of the one in-order
//! driver (`gauntlet_job::job`): they run concurrently and are graded and folded in
//! canonical order, so the report does not depend on scheduling. Each scenario run's
//! files are written as it is graded (staged, then moved into place before the report:
//! `run_files::RunFiles`) and only counted in memory (`report.json` reads each result
//! back from its file), so memory grows with the corpus, not with the passes. Artefacts:
//! `report.json`, `classifier.json`, `run-<i>/<id>.json`,
//! `run-<i>/<id>.transcript.json`, plus `report.md`, `report.html` and
//! `leaderboard.json` (provenance: the corpus digest is the dataset version).

mod driver;
mod e2e_pass;
mod identity;
mod run_files;
mod schema;
mod summary;
mod targets;
mod triage;
mod writer;

pub use driver::{run_exam, run_exam_units};
pub use identity::{exam_config_sha256, exam_identity, exam_identity_bytes};
pub use run_files::{RunFiles, STAGING};
pub use schema::{
    Backend, E2eOutput, ExamConfig, ExamError, ExamOutput, FindingTranscript, GOLDEN_NOTE,
    PassTimings, Progress, ProgressFn, REAL_NOTE, TIMINGS_LOG, Timings,
};
pub use summary::{ExamTally, ReportHead, assemble_report};
pub use targets::{TargetError, parse_target, parse_target_node};
pub use writer::{default_out_dir, leaderboard, write_artifacts, write_report_files};

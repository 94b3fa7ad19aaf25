//! Executing a plan.
//!
//! Units (one behavior × attack × target) run as tokio tasks, at most `concurrency` at a
//! time (a semaphore) and at most a small window ahead of the oldest unfinished unit, so
//! memory is bounded by in-flight work. Results are consumed strictly in unit order:
//! transcript lines are written and verdicts folded into per-cell metric accumulators
//! in canonical order, so every artefact is byte-identical whatever the concurrency.
//!
//! Resuming is rerunning: every model call is keyed and journaled (see `cache.rs`), so
//! a rerun after a kill replays finished calls from the journal and makes only the calls
//! that never finished; a rerun of a complete run makes none.
//!
//! Split by concern: `session` is the driver, phase by phase (open the run directory,
//! begin, schedule and fold in order, settle, finish), `error` how it fails, `previous`
//! the resume check, `models` the plan's models as the driver sees them (batching,
//! transport counters), `unit` does one unit's work, `output` is what a unit hands back, `transcript` encodes
//! and writes transcripts.jsonl, `tally` folds units into per-cell results, `run_json`
//! writes run.json, `status` says how a session ended, `measured` whether a run that ran
//! to its end measured enough to be `complete`. This file only declares them.

mod artefacts;
mod error;
pub mod measured;
mod models;
mod output;
mod previous;
mod run_json;
mod session;
mod status;
mod tally;
mod transcript;
mod unit;

pub(crate) use artefacts::{RunArtefacts, write_run_artefacts};
pub use error::RunError;
pub(crate) use run_json::pretty;
pub use run_json::run_json;
pub use session::{RunOptions, RunOutcome, execute, execute_sharded};
pub use status::{Reason, Status};
pub(crate) use tally::Tally;
pub(crate) use transcript::replace_verdicts;
pub use unit::trial_seeds;
pub(crate) use unit::{Identities, unit_scope};

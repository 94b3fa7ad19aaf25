//! gauntlet-engine: from a run config to a finished run directory.
//!
//! [`config`] reads and validates the YAML; [`plan`] builds the plugins and fixes the
//! canonical order; [`run`] executes units with bounded concurrency through the
//! [`cache`] (backed by the append-only [`journal`]), judges them, folds verdicts into
//! metric accumulators and writes the artefacts of the [`rundir`]; [`usage`] prices the
//! tokens each role spent; [`stored`] reads a finished run back and judges it again.

pub mod cache;
pub mod config;
pub mod journal;
pub mod plan;
pub mod progress;
pub mod run;
pub mod rundir;
pub mod stored;
pub mod usage;

pub use gauntlet_redteam::registry::Registry;

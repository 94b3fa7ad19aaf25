//! gauntlet-engine: from a run config to a finished run directory.
//!
//! The run config (`gauntlet_redteam::config`) is read and validated below the
//! engine, against the plugin registry; [`plan`] builds the plugins and fixes the
//! canonical order; [`run`] executes units with bounded concurrency through
//! `gauntlet_calls::cache` (backed by its append-only journal), judges them, folds
//! verdicts into metric accumulators and writes the artefacts of the run directory
//! (`gauntlet_job::rundir`); [`usage`] prices the
//! tokens each role spent; [`stored`] reads a finished run back and judges it again
//! ([`agreement`] and [`compare`] are the analyses built on it; [`verify`] checks a
//! run's stated numbers against it for the gate and the dashboard);
//! `breadth` adds the attack-breadth analyses (curves, threat tags, transform effects).

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod agreement;
mod breadth;
pub mod compare;
pub mod findings;
pub mod gate;
pub mod judge_eval;
pub mod labels;
pub mod merge;
pub mod plan;
pub mod run;
pub mod shard;
pub mod stored;
pub mod usage;
pub mod verify;
pub mod warnings;

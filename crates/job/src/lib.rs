//! gauntlet-job: the run-directory protocol, once, under every harness.
//!
//! A red-team run, an agent exam and a detect exam are one protocol: canonical units,
//! journal-backed work, an in-order fold, artefacts, and a manifest written last, plus
//! supersede, shards and their merge, and progress. This crate owns that protocol and
//! knows nothing about any particular harness:
//! - [`rundir`]: a run directory — open and lock, stale temporaries removed, the
//!   session log, the previous job's artefacts set aside (supersede), the session
//!   begun (manifest removed before anything changes);
//! - [`manifest`]: size and digest of every artefact, written last, verified by readers;
//! - [`artefacts`]: the one finish: artefacts written and recorded, the manifest last;
//!   atomic writes are `gauntlet_core::atomic` (the one writer every surface uses);
//! - [`kind`]: what kind of directory a manifest records (a run, a rescore, a shard of
//!   either exam, an exam's output), checked against the files;
//! - [`outdir`]: what an output directory already holds, so no command writes over
//!   another's;
//! - [`shard`]: `i/N`, a shard directory's name and identity, the checks that a set of
//!   directories is the N shards of one job, the journals put back together;
//! - [`merge`]: which shard holds each unit, every unit once, for every merge;
//! - [`partition`]: the one cut of a job's keyed, weighted units into N spans;
//! - [`progress`]: the one progress trait a harness reports through, [`meter`] its rates
//!   and ETA, and [`progress_file`] the progress a running session publishes to its
//!   directory for readers other than the terminal (the dashboard);
//! - [`job`]: the one in-order driver: a job's units run in a window, joined and folded
//!   in canonical order.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod artefacts;
pub mod job;
pub mod kind;
pub mod manifest;
pub mod merge;
pub mod meter;
pub mod outdir;
pub mod partition;
pub mod progress;
pub mod progress_file;
pub mod rundir;
pub mod shard;

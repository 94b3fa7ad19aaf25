//! Datasets: versioned, hash-pinned behavior sets, one file per plugin.
//!
//! A dataset's version is `name@<first 12 hex of the sha256 of its bytes>`, with any
//! subset selection appended (`+limit50`, `+category=…`), so two different subsets
//! never share a version and a changed file never hides behind an old one.

pub mod advbench;
pub mod ailuminate;
pub mod cyberseceval_frr;
pub mod cyberseceval_interpreter;
pub mod demo;
pub mod harmbench;
pub mod imported;
pub mod jbb_behaviors;
pub mod leakage_demo;
pub mod or_bench;
pub mod remote;
pub mod simple_safety_tests;
pub mod strongreject;
pub mod xstest;

// What every dataset shares: its type and identity, behavior files, the loader, and
// the reading of the public benchmark sets (CSV or JSON, sha256-pinned, fetched
// through gauntlet-fetch).
mod behaviors;
pub(crate) mod csv_source;
mod dataset;
mod loader;
mod table;

pub use behaviors::{parse_behaviors, parse_behaviors_reader, read_behaviors};
pub(crate) use dataset::apply_limit;
pub use dataset::{Dataset, DatasetEntry, DatasetError, check_pin, version};
pub use loader::{load, load_with};
pub use table::ENTRIES;

//! The behavior sets' table, each file's `ENTRY` in name order (a file of its own:
//! the loader reaches the table through the registry, and the registry must not depend
//! on the module that holds the loader).

use super::DatasetEntry;

/// The behavior sets, in name order: the `ENTRY` of each `pub mod` of `datasets/mod.rs`
/// whose file declares one (the build derives the list from those lines).
pub const ENTRIES: &[DatasetEntry] = &include!(concat!(env!("OUT_DIR"), "/datasets.rs"));

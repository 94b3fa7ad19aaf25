//! The dataset loader: a resolved spec to its dataset, by plugin name, through the
//! behavior sets' and scenario suites' tables (`crate::registry::DATASET_TABLE`,
//! `SCENARIO_TABLE`).

use super::dataset::{Dataset, DatasetError};
use std::path::Path;

/// Loads a dataset from a resolved spec. Relative `file://` paths resolve against
/// `base_dir` (the directory of the run config). Downloads use the strict fetch policy
/// and the default cache ([`gauntlet_fetch::FetchOptions::from_env`]).
pub fn load(
    spec: &gauntlet_core::params::PluginSpec,
    base_dir: &Path,
) -> Result<Dataset, DatasetError> {
    load_with(spec, base_dir, &gauntlet_fetch::FetchOptions::from_env())
}

/// [`load`] with explicit fetch options (tests pass a loopback policy and a temporary
/// cache).
pub fn load_with(
    spec: &gauntlet_core::params::PluginSpec,
    base_dir: &Path,
    opts: &gauntlet_fetch::FetchOptions,
) -> Result<Dataset, DatasetError> {
    match crate::registry::dataset_entry(&spec.name) {
        Some(e) => (e.build)(spec, base_dir, opts),
        None => Err(DatasetError::new(&spec.name, "unknown dataset")),
    }
}

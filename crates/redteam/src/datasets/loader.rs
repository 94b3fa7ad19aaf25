//! The dataset loader: a resolved spec to its dataset, by plugin name (the behavior sets
//! of this directory and the injection surfaces' scenario suites).

use super::dataset::{Dataset, DatasetError};
use super::{advbench, demo, harmbench, jbb_behaviors, leakage_demo, or_bench, remote};
use super::{strongreject, xstest};
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
    match spec.name.as_str() {
        "demo" => demo::load(spec),
        "leakage_demo" => leakage_demo::load(spec),
        "remote" => remote::load(spec, base_dir, opts),
        "advbench" => advbench::load(spec, base_dir, opts),
        "harmbench" => harmbench::load(spec, base_dir, opts),
        "jbb_behaviors" => jbb_behaviors::load(spec, base_dir, opts),
        "xstest" => xstest::load(spec, base_dir, opts),
        "or_bench" => or_bench::load(spec, base_dir, opts),
        "strongreject" => strongreject::load(spec, base_dir, opts),
        // Scenario suites (injection mode's `scenarios:`).
        "bundled" => crate::injection::bundled::load(spec),
        "scenario_file" => crate::injection::scenario_file::load(spec, base_dir),
        "injecagent" => crate::injecagent::source::load(spec, base_dir, opts),
        "agentdojo" => crate::injection::agentdojo::load(spec),
        other => Err(DatasetError::new(other, "unknown dataset")),
    }
}

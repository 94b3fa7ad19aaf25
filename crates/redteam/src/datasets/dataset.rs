//! A loaded dataset, why one could not be loaded, and its identity: the pin check, the
//! version string and the `limit` subset.

use crate::plugin::Entry;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::params::PluginSpec;
use gauntlet_fetch::FetchOptions;
use std::path::Path;

/// A behavior set's (or scenario suite's) registration (each behavior set file's
/// `ENTRY`): its loader takes a resolved spec, the directory relative `file://` paths
/// resolve against, and the fetch policy and cache.
pub type DatasetEntry =
    Entry<fn(&PluginSpec, &Path, &FetchOptions) -> Result<Dataset, DatasetError>>;

/// A loaded dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Label used in reports (`demo`, or the `name` param).
    pub name: String,
    /// `name@sha12` plus subset suffixes.
    pub version: String,
    /// sha256 of the source bytes.
    pub sha256: String,
    pub behaviors: Vec<Behavior>,
    /// What run.json records about where the behaviors come from besides name, version
    /// and sha256 (AgentDojo: the package, benchmark version and sidecar pins).
    pub provenance: Option<serde_json::Value>,
}

/// Why a dataset could not be loaded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{source_name}: {message}")]
pub struct DatasetError {
    /// The file or bundled name the problem is in.
    pub source_name: String,
    pub message: String,
    /// Its download cannot be made right now (the network or the server failed, or
    /// downloads are off): see `gauntlet_fetch::FetchError::unreachable`.
    pub unreachable: bool,
}

impl DatasetError {
    pub fn new(source_name: impl Into<String>, message: impl Into<String>) -> Self {
        DatasetError {
            source_name: source_name.into(),
            message: message.into(),
            unreachable: false,
        }
    }
}

impl From<gauntlet_fetch::FetchError> for DatasetError {
    fn from(e: gauntlet_fetch::FetchError) -> Self {
        DatasetError {
            source_name: e.source_name,
            message: e.message,
            unreachable: e.unreachable,
        }
    }
}

/// Fails unless `actual` equals the pinned digest (when there is one).
pub fn check_pin(source: &str, expected: Option<&str>, actual: &str) -> Result<(), DatasetError> {
    match expected {
        Some(want) if !want.eq_ignore_ascii_case(actual) => Err(DatasetError::new(
            source,
            format!(
                "sha256 mismatch: expected {want}, got {actual}; the file changed since it was pinned \
                 (update the `sha256` param only if you trust the new content)"
            ),
        )),
        _ => Ok(()),
    }
}

/// The version string for a dataset and subset.
pub fn version(name: &str, sha256: &str, limit: Option<usize>) -> String {
    let mut v = format!("{name}@{}", &sha256[..12]);
    if let Some(l) = limit {
        v.push_str(&format!("+limit{l}"));
    }
    v
}

/// Applies `limit` (first N behaviors, in file order).
pub(crate) fn apply_limit(
    mut behaviors: Vec<Behavior>,
    limit: Option<i64>,
) -> (Vec<Behavior>, Option<usize>) {
    match limit {
        Some(l) if (l as usize) < behaviors.len() => {
            behaviors.truncate(l as usize);
            (behaviors, Some(l as usize))
        }
        // A limit at or above the size selects everything: same subset, same version.
        _ => (behaviors, None),
    }
}

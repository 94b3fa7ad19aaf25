//! Datasets: versioned, hash-pinned behavior sets, one file per plugin.
//!
//! A dataset's version is `name@<first 12 hex of the sha256 of its bytes>`, with any
//! subset selection appended (`+limit50`, `+category=…`), so two different subsets
//! never share a version and a changed file never hides behind an old one.

pub mod demo;
pub mod leakage_demo;
pub mod remote;
// Public benchmark sets (CSV, sha256-pinned, fetched through gauntlet-fetch).
pub mod advbench;
pub(crate) mod csv_source;
pub mod harmbench;
pub mod jbb_behaviors;
pub mod or_bench;
pub mod strongreject;
pub mod xstest;

use gauntlet_core::behavior::Behavior;
use gauntlet_core::hash::sha256_hex;
use serde::Deserialize;
use std::collections::HashSet;
use std::path::Path;

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BehaviorFile {
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so behavior files may carry it; not used"
    )]
    name: Option<String>,
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so behavior files may carry it; not used"
    )]
    description: Option<String>,
    behaviors: Vec<Behavior>,
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

/// Parses `{"behaviors": [...]}` JSON, verifying `expected_sha256` first when given,
/// and checks ids are unique and prompts non-empty. `source` names the input in errors.
pub fn parse_behaviors(
    bytes: &[u8],
    source: &str,
    expected_sha256: Option<&str>,
) -> Result<(String, Vec<Behavior>), DatasetError> {
    let actual = sha256_hex(bytes);
    check_pin(source, expected_sha256, &actual)?;
    Ok((actual, read_behaviors(bytes, source)?))
}

/// Parses and checks behaviors from a file's bytes.
pub fn read_behaviors(bytes: &[u8], source: &str) -> Result<Vec<Behavior>, DatasetError> {
    let file: BehaviorFile = serde_json::from_slice(bytes).map_err(|e| parse_error(source, &e))?;
    check_behaviors(file.behaviors, source)
}

/// [`parse_behaviors`] over a reader, for files too large to hold twice: the bytes are
/// hashed as they stream through the parser and never held whole, so a dataset's peak
/// memory is its parsed behaviors, not the file plus them (1M-attempt benchmark in
/// BENCHMARKS.md). The pin is checked after the last byte and before anything parsed is
/// returned; when the file does not parse, the rest of it is hashed first, so a file
/// that changed since it was pinned reports the pin, not the syntax.
pub fn parse_behaviors_reader(
    reader: impl std::io::Read,
    source: &str,
    expected_sha256: Option<&str>,
) -> Result<(String, Vec<Behavior>), DatasetError> {
    let mut hashing = std::io::BufReader::with_capacity(
        64 * 1024,
        HashingReader {
            inner: reader,
            hash: gauntlet_core::hash::HashWriter::new(),
        },
    );
    let parsed = serde_json::from_reader::<_, BehaviorFile>(&mut hashing);
    let io_error = |e: std::io::Error| DatasetError::new(source, format!("cannot read: {e}"));
    if parsed.is_err() {
        std::io::copy(&mut hashing, &mut std::io::sink()).map_err(io_error)?;
    }
    let actual = hashing.into_inner().hash.finish_hex();
    check_pin(source, expected_sha256, &actual)?;
    let file = parsed.map_err(|e| match e.io_error_kind() {
        Some(_) => DatasetError::new(source, format!("cannot read: {e}")),
        None => parse_error(source, &e),
    })?;
    Ok((actual, check_behaviors(file.behaviors, source)?))
}

/// A reader that feeds every byte it reads to a sha256.
struct HashingReader<R> {
    inner: R,
    hash: gauntlet_core::hash::HashWriter,
}

impl<R: std::io::Read> std::io::Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        std::io::Write::write_all(&mut self.hash, &buf[..n])?;
        Ok(n)
    }
}

fn parse_error(source: &str, e: &serde_json::Error) -> DatasetError {
    DatasetError::new(
        source,
        format!(
            "line {} column {}: {e}; expected {{\"behaviors\": [{{\"id\", \"prompt\", \"category\"?, \
             \"expected\"?: \"should_refuse\"|\"should_comply\", \"reference_answer\"?, \"target_secret\"?}}]}}",
            e.line(),
            e.column()
        ),
    )
}

/// Checks parsed behaviors: ids non-empty and unique, prompts non-empty, at least one.
fn check_behaviors(behaviors: Vec<Behavior>, source: &str) -> Result<Vec<Behavior>, DatasetError> {
    let mut seen = HashSet::new();
    for (i, b) in behaviors.iter().enumerate() {
        if b.id.trim().is_empty() {
            return Err(DatasetError::new(
                source,
                format!("behaviors[{i}] has an empty `id`"),
            ));
        }
        if b.prompt.trim().is_empty() {
            return Err(DatasetError::new(
                source,
                format!("behavior `{}` has an empty `prompt`", b.id),
            ));
        }
        if !seen.insert(b.id.as_str()) {
            return Err(DatasetError::new(
                source,
                format!("duplicate behavior id `{}` (behaviors[{i}])", b.id),
            ));
        }
    }
    if behaviors.is_empty() {
        return Err(DatasetError::new(source, "the dataset has no behaviors"));
    }
    Ok(behaviors)
}

/// The version string for a dataset and subset.
pub fn version(name: &str, sha256: &str, limit: Option<usize>) -> String {
    let mut v = format!("{name}@{}", &sha256[..12]);
    if let Some(l) = limit {
        v.push_str(&format!("+limit{l}"));
    }
    v
}

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

//! Loading a pinned corpus: integrity first, then scenarios.
//!
//! Why this exists: it is the one entry point the exam runs through, and its order is
//! the interlock. [`load_corpus`] reads the pin, scans and hashes the corpus, and
//! verifies count then digest BEFORE parsing anything; on a mismatch nothing parses and
//! nothing runs. Only then are the scenario files parsed — the very bytes that were
//! hashed — together with any extra-scenarios directory, which is walked by the same
//! rules but is never pinned and never part of the count or digest (mallcop's
//! `LoadExtraScenarios`: a detector's own co-located efficacy scenarios).
//!
//! Scenario ids must be unique across the union (result files are named by id); a
//! duplicate names both files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use crate::corpus::CorpusError;
use crate::corpus::{self, CorpusFile, Manifest, PIN_FILE, Pin};
use crate::scenario::{self, Scenario};

/// One parsed scenario with its provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedScenario {
    /// Forward-slash path relative to the directory it was found in (the manifest key
    /// for a pinned scenario).
    pub relpath: String,
    /// The path it was read from.
    pub path: PathBuf,
    /// Lowercase hex sha256 of the file's bytes.
    pub sha256: String,
    /// True when it came from the extra-scenarios directory (unpinned).
    pub extra: bool,
    pub scenario: Scenario,
}

/// A loaded, integrity-verified corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Corpus {
    pub root: PathBuf,
    pub pin_path: PathBuf,
    /// Number of pinned scenario files (equals the pin's count). Extras not included.
    pub count: usize,
    /// Corpus digest (equals the pin's sha256). Extras not included.
    pub digest: String,
    /// The manifest of the pinned files.
    pub manifest: Manifest,
    /// Pinned and extra scenarios together, sorted by id.
    pub scenarios: Vec<LoadedScenario>,
}

impl Corpus {
    /// The pinned scenarios (sorted by id).
    pub fn pinned(&self) -> impl Iterator<Item = &LoadedScenario> {
        self.scenarios.iter().filter(|s| !s.extra)
    }

    /// The extra, unpinned scenarios (sorted by id).
    pub fn extra(&self) -> impl Iterator<Item = &LoadedScenario> {
        self.scenarios.iter().filter(|s| s.extra)
    }

    /// Looks a scenario up by id.
    pub fn get(&self, id: &str) -> Option<&LoadedScenario> {
        self.scenarios
            .binary_search_by(|s| s.scenario.id.as_str().cmp(id))
            .ok()
            .map(|i| &self.scenarios[i])
    }
}

/// Loads the corpus at `root` (which holds `corpus.pin`), verifying the pin before
/// anything is parsed, plus the unpinned scenarios under `extra` if given.
pub fn load_corpus(root: &Path, extra: Option<&Path>) -> Result<Corpus, CorpusError> {
    let pin_path = root.join(PIN_FILE);
    let files = corpus::scan(root)?;
    let pin = Pin::read(&pin_path)?;
    let manifest = Manifest::from_files(&files);
    pin.verify(&manifest, &pin_path)?;

    let mut scenarios = parse_files(files, false)?;
    if let Some(dir) = extra {
        scenarios.extend(load_extra(dir)?);
    }
    let scenarios = sort_unique(scenarios)?;
    Ok(Corpus {
        root: root.to_path_buf(),
        pin_path,
        count: manifest.len(),
        digest: manifest.digest(),
        manifest,
        scenarios,
    })
}

/// Loads an extra-scenarios directory by the corpus walk rules, with no pin check and no
/// contribution to any digest. Sorted by id; duplicate ids are errors.
pub fn load_extra(dir: &Path) -> Result<Vec<LoadedScenario>, CorpusError> {
    sort_unique(parse_files(corpus::scan(dir)?, true)?)
}

/// A verified corpus whose scenarios are parsed on demand, one at a time.
///
/// [`index_corpus`] runs the same interlock as [`load_corpus`] — scan, hash, verify
/// count then digest against the pin — but keeps only each file's path and hash, so
/// verifying a corpus of any size needs one file in memory at a time. A consumer then
/// parses each scenario with [`IndexedFile::load`], which re-reads the file and refuses
/// it unless its bytes still hash to what was verified; it projects, grades and drops
/// the scenario before taking the next. Scenario ids are only known after parsing, so
/// uniqueness is the consumer's check ([`check_unique_ids`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusIndex {
    pub root: PathBuf,
    pub pin_path: PathBuf,
    /// Number of pinned scenario files (equals the pin's count). Extras not included.
    pub count: usize,
    /// Corpus digest (equals the pin's sha256). Extras not included.
    pub digest: String,
    /// The manifest of the pinned files.
    pub manifest: Manifest,
    /// Pinned files in relpath order, then the extra files in relpath order.
    pub files: Vec<IndexedFile>,
}

/// One scenario file of a [`CorpusIndex`]: where it is and the hash it was verified at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedFile {
    /// Relpath, path and sha256 (`bytes` is empty).
    pub file: CorpusFile,
    /// True when it came from an extra-scenarios directory (unpinned).
    pub extra: bool,
}

impl IndexedFile {
    /// Re-reads, re-verifies and parses the file.
    pub fn load(&self) -> Result<LoadedScenario, CorpusError> {
        let bytes = corpus::read_verified(&self.file)?;
        let scenario = scenario::parse_scenario_bytes(&bytes, &self.file.path)?;
        Ok(LoadedScenario {
            relpath: self.file.relpath.clone(),
            path: self.file.path.clone(),
            sha256: self.file.sha256.clone(),
            extra: self.extra,
            scenario,
        })
    }
}

/// Verifies the corpus at `root` against its pin and lists its files (plus the
/// unpinned ones under `extra`), parsing nothing. See [`CorpusIndex`].
pub fn index_corpus(root: &Path, extra: Option<&Path>) -> Result<CorpusIndex, CorpusError> {
    let pin_path = root.join(PIN_FILE);
    let files = corpus::scan_hashes(root)?;
    let pin = Pin::read(&pin_path)?;
    let manifest = Manifest::from_files(&files);
    pin.verify(&manifest, &pin_path)?;
    let mut listed: Vec<IndexedFile> = files
        .into_iter()
        .map(|file| IndexedFile { file, extra: false })
        .collect();
    if let Some(dir) = extra {
        listed.extend(index_extra(dir)?);
    }
    Ok(CorpusIndex {
        root: root.to_path_buf(),
        pin_path,
        count: manifest.len(),
        digest: manifest.digest(),
        manifest,
        files: listed,
    })
}

/// Lists an extra-scenarios directory by the corpus walk rules (no pin, no digest),
/// parsing nothing.
pub fn index_extra(dir: &Path) -> Result<Vec<IndexedFile>, CorpusError> {
    Ok(corpus::scan_hashes(dir)?
        .into_iter()
        .map(|file| IndexedFile { file, extra: true })
        .collect())
}

/// Fails on the first scenario id seen twice, naming both files.
pub fn check_unique_ids<'a>(
    ids: impl IntoIterator<Item = (&'a str, &'a Path)>,
) -> Result<(), CorpusError> {
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    for (id, path) in ids {
        if let Some(first) = seen.insert(id, path) {
            return Err(CorpusError::DuplicateId {
                id: id.to_string(),
                first: first.to_path_buf(),
                second: path.to_path_buf(),
            });
        }
    }
    Ok(())
}

fn parse_files(files: Vec<CorpusFile>, extra: bool) -> Result<Vec<LoadedScenario>, CorpusError> {
    files
        .into_iter()
        .map(|f| {
            let scenario = scenario::parse_scenario_bytes(&f.bytes, &f.path)?;
            Ok(LoadedScenario {
                relpath: f.relpath,
                path: f.path,
                sha256: f.sha256,
                extra,
                scenario,
            })
        })
        .collect()
}

fn sort_unique(mut v: Vec<LoadedScenario>) -> Result<Vec<LoadedScenario>, CorpusError> {
    check_unique_ids(v.iter().map(|s| (s.scenario.id.as_str(), s.path.as_path())))?;
    v.sort_by(|a, b| a.scenario.id.cmp(&b.scenario.id));
    Ok(v)
}

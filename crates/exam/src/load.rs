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
use std::io;
use std::path::{Path, PathBuf};

use crate::corpus::{self, CorpusFile, IntegrityError, Manifest, PIN_FILE, Pin, PinError};
use crate::scenario::{self, Scenario, ScenarioError};

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

/// Why a corpus could not be scanned, pinned or loaded.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("corpus root {} not found", .root.display())]
    RootNotFound { root: PathBuf },
    #[error("corpus root {} is not a directory", .root.display())]
    NotADirectory { root: PathBuf },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: scenario path is not valid UTF-8", .path.display())]
    NonUtf8Path { path: PathBuf },
    #[error("{}: scenario-named entry is not a regular file", .path.display())]
    NotAFile { path: PathBuf },
    #[error("{}: refusing to follow symlink: {reason}", .path.display())]
    UnsafeSymlink { path: PathBuf, reason: String },
    #[error(transparent)]
    Pin(#[from] PinError),
    /// The corpus is not the pinned one; its message starts `CORPUS INTEGRITY FAIL:`.
    #[error(transparent)]
    Integrity(#[from] IntegrityError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(
        "duplicate scenario id `{id}` in {} and {}",
        .first.display(),
        .second.display()
    )]
    DuplicateId {
        id: String,
        first: PathBuf,
        second: PathBuf,
    },
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
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    for s in &v {
        if let Some(first) = seen.insert(&s.scenario.id, &s.path) {
            return Err(CorpusError::DuplicateId {
                id: s.scenario.id.clone(),
                first: first.to_path_buf(),
                second: s.path.clone(),
            });
        }
    }
    v.sort_by(|a, b| a.scenario.id.cmp(&b.scenario.id));
    Ok(v)
}

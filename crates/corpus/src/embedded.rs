//! The reference corpus embedded in the binary, so `gauntlet exam` runs from the binary
//! alone: the fallback when no
//! corpus directory is given and none exists on disk. Disk always wins when present
//! ([`resolve_corpus`]); the embedded copy is verified against its embedded
//! `corpus.pin` exactly as the disk loader verifies a directory, so an embedded corpus
//! is never trusted blindly.

use crate::corpus::{CorpusFile, Manifest, PIN_FILE, Pin};
use crate::load::{Corpus, CorpusError, LoadedScenario, load_corpus};
use crate::scenario::parse_scenario_bytes;
use gauntlet_core::hash::sha256_hex;
use std::path::{Path, PathBuf};

mod data {
    include!(concat!(env!("OUT_DIR"), "/embedded_corpus.rs"));
}

/// The pseudo-root embedded paths are shown under.
pub const EMBEDDED_ROOT: &str = "<embedded>/exams/scenarios";

/// Number of embedded scenario files.
pub fn embedded_count() -> usize {
    data::FILES.len()
}

/// Loads and verifies the embedded reference corpus.
pub fn load_embedded() -> Result<Corpus, CorpusError> {
    let root = PathBuf::from(EMBEDDED_ROOT);
    let pin_path = root.join(PIN_FILE);
    let files: Vec<CorpusFile> = data::FILES
        .iter()
        .map(|(rel, bytes)| CorpusFile {
            relpath: rel.to_string(),
            path: root.join(rel),
            sha256: sha256_hex(bytes),
            bytes: bytes.to_vec(),
        })
        .collect();
    let pin_text = data::PIN.map(|b| String::from_utf8_lossy(b).into_owned());
    let pin = match pin_text {
        Some(t) => Pin::parse(&t, &pin_path)?,
        None => {
            return Err(CorpusError::RootNotFound { root });
        }
    };
    let manifest = Manifest::from_files(&files);
    pin.verify(&manifest, &pin_path)?;
    let mut scenarios = Vec::with_capacity(files.len());
    for f in files {
        let scenario = parse_scenario_bytes(&f.bytes, &f.path)?;
        scenarios.push(LoadedScenario {
            relpath: f.relpath,
            path: f.path,
            sha256: f.sha256,
            extra: false,
            scenario,
        });
    }
    scenarios.sort_by(|a, b| a.scenario.id.cmp(&b.scenario.id));
    for w in scenarios.windows(2) {
        if w[0].scenario.id == w[1].scenario.id {
            return Err(CorpusError::DuplicateId {
                id: w[0].scenario.id.clone(),
                first: w[0].path.clone(),
                second: w[1].path.clone(),
            });
        }
    }
    Ok(Corpus {
        root,
        pin_path,
        count: manifest.len(),
        digest: manifest.digest(),
        manifest,
        scenarios,
    })
}

/// Where a corpus came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorpusSource {
    /// An explicit directory.
    Explicit(PathBuf),
    /// The default directory found on disk.
    Disk(PathBuf),
    /// The embedded copy.
    Embedded,
}

/// Explicit directory if given; else `default_dir` when it exists on disk (disk wins);
/// else the embedded corpus.
pub fn resolve_corpus(
    explicit: Option<&Path>,
    default_dir: &Path,
) -> Result<(Corpus, CorpusSource), CorpusError> {
    if let Some(d) = explicit {
        return Ok((
            load_corpus(d, None)?,
            CorpusSource::Explicit(d.to_path_buf()),
        ));
    }
    if default_dir.is_dir() {
        return Ok((
            load_corpus(default_dir, None)?,
            CorpusSource::Disk(default_dir.to_path_buf()),
        ));
    }
    Ok((load_embedded()?, CorpusSource::Embedded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_matches_disk() {
        let e = load_embedded().unwrap();
        let disk = load_corpus(
            Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../exams/scenarios"
            )),
            None,
        )
        .unwrap();
        assert_eq!(e.count, disk.count);
        assert_eq!(e.digest, disk.digest);
        assert!(e.count >= 48);
        let ids: Vec<_> = e.scenarios.iter().map(|s| &s.scenario.id).collect();
        let disk_ids: Vec<_> = disk.scenarios.iter().map(|s| &s.scenario.id).collect();
        assert_eq!(ids, disk_ids);
    }

    #[test]
    fn disk_wins_and_embedded_is_the_fallback() {
        let (_, src) = resolve_corpus(None, Path::new("/nonexistent/exams/scenarios")).unwrap();
        assert_eq!(src, CorpusSource::Embedded);
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../exams/scenarios");
        let (_, src) = resolve_corpus(None, Path::new(dir)).unwrap();
        assert_eq!(src, CorpusSource::Disk(PathBuf::from(dir)));
    }
}

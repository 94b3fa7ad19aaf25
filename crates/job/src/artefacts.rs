//! One finish for every kind of artefact directory: as a session (a run, a merge, a
//! rescore, an exam or one of its shards) ends, each artefact is written through
//! [`Artefacts::write`] — or, when a streaming writer made it, recorded as it is — and
//! [`Artefacts::finish`] writes the manifest that lists them last, so a reader never
//! takes a directory being written for a finished one. Errors name the file.

use crate::manifest::{FileEntry, Kind, MANIFEST, Manifest};
use gauntlet_core::atomic::write_atomic;
use std::io;
use std::path::{Path, PathBuf};

/// Why an artefact could not be written or recorded.
#[derive(Debug, thiserror::Error)]
pub enum ArtefactError {
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A file just written cannot be read back for the manifest.
    #[error("cannot read back {}: {source}", .path.display())]
    ReadBack {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl From<ArtefactError> for io::Error {
    /// For callers that speak `io::Result`: the kind kept, the message naming the file.
    fn from(e: ArtefactError) -> io::Error {
        let kind = match &e {
            ArtefactError::Write { source, .. } | ArtefactError::ReadBack { source, .. } => {
                source.kind()
            }
        };
        io::Error::new(kind, e.to_string())
    }
}

/// A directory's artefacts as a session finishes, and the manifest that will list them.
pub struct Artefacts {
    dir: PathBuf,
    manifest: Manifest,
}

impl Artefacts {
    /// The artefacts of `dir`, a directory of kind `kind` whose manifest records
    /// `run_id` and `status`.
    pub fn new(dir: &Path, kind: Kind, run_id: &str, status: &str) -> Artefacts {
        Artefacts {
            dir: dir.to_path_buf(),
            manifest: Manifest::new(kind, run_id, status),
        }
    }

    /// Writes `name` (atomically) and records its size and digest.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), ArtefactError> {
        let path = self.dir.join(name);
        write_atomic(&path, bytes).map_err(|source| ArtefactError::Write { path, source })?;
        self.manifest
            .files
            .insert(name.to_string(), FileEntry::of(bytes));
        Ok(())
    }

    /// Records `name` as a digesting writer saw it while writing it.
    pub fn insert(&mut self, name: &str, entry: FileEntry) {
        self.manifest.files.insert(name.to_string(), entry);
    }

    /// Records each of `names` (paths relative to the directory) as it is now, read
    /// back through one buffer.
    pub fn record<I, S>(&mut self, names: I) -> Result<(), ArtefactError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut buf = vec![0u8; 1 << 20];
        for name in names {
            let name = name.into();
            let path = self.dir.join(&name);
            let e = FileEntry::of_file_with(&path, None, &mut buf)
                .map_err(|source| ArtefactError::ReadBack { path, source })?;
            self.manifest.files.insert(name, e);
        }
        Ok(())
    }

    /// Writes the manifest, last, listing besides what was written and recorded each of
    /// `more` (names relative to the directory, ascending, none recorded), hashed as the
    /// manifest is written: many files listed without an entry per file in memory.
    pub fn finish_streaming(self, more: impl Iterator<Item = String>) -> Result<(), ArtefactError> {
        self.manifest
            .write_streaming(&self.dir, more)
            .map_err(|source| ArtefactError::Write {
                path: self.dir.join(MANIFEST),
                source,
            })
    }

    /// Writes the manifest, last: the directory is whole. Returns it.
    pub fn finish(self) -> Result<Manifest, ArtefactError> {
        self.manifest
            .write(&self.dir)
            .map_err(|source| ArtefactError::Write {
                path: self.dir.join(MANIFEST),
                source,
            })?;
        Ok(self.manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_lists_what_was_written_and_recorded_and_verifies() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("report.md"), b"# made elsewhere\n").unwrap();
        let mut a = Artefacts::new(d.path(), Kind::Run, "r1", "complete");
        a.write("results.json", b"{}\n").unwrap();
        a.record(["report.md"]).unwrap();
        a.insert("notes.txt", FileEntry::of(b"streamed\n"));
        std::fs::write(d.path().join("notes.txt"), b"streamed\n").unwrap();
        assert!(!d.path().join(MANIFEST).exists(), "the manifest comes last");
        let m = a.finish().unwrap();
        assert_eq!(
            m.files.keys().collect::<Vec<_>>(),
            ["notes.txt", "report.md", "results.json"]
        );
        assert_eq!(Manifest::verify(d.path()).unwrap(), m);
    }

    #[test]
    fn a_streamed_manifest_is_the_manifest_of_the_same_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("run-0")).unwrap();
        for (name, body) in [("run-0/a.json", "1"), ("run-0/b.json", "22"), ("z.md", "3")] {
            std::fs::write(d.path().join(name), body).unwrap();
        }
        let mut whole = Artefacts::new(d.path(), Kind::Exam, "e", "complete");
        whole.write("report.json", b"{}\n").unwrap();
        whole
            .record(["z.md", "run-0/a.json", "run-0/b.json"])
            .unwrap();
        whole.finish().unwrap();
        let want = std::fs::read(d.path().join(MANIFEST)).unwrap();
        std::fs::remove_file(d.path().join(MANIFEST)).unwrap();

        let mut streamed = Artefacts::new(d.path(), Kind::Exam, "e", "complete");
        streamed.write("report.json", b"{}\n").unwrap();
        streamed.record(["z.md"]).unwrap();
        let names = ["run-0/a.json", "run-0/b.json"].map(String::from);
        streamed
            .finish_streaming(names.clone().into_iter())
            .unwrap();
        assert_eq!(std::fs::read(d.path().join(MANIFEST)).unwrap(), want);
        Manifest::verify(d.path()).unwrap();

        // Out of order, listed twice, or missing: an error naming the entry or file.
        for (names, says) in [
            (vec!["run-0/b.json", "run-0/a.json"], "out of order"),
            (vec!["z.md"], "listed twice"),
            (vec!["run-0/gone.json"], "gone.json"),
        ] {
            let mut a = Artefacts::new(d.path(), Kind::Exam, "e", "complete");
            a.record(["z.md"]).unwrap();
            let e = a
                .finish_streaming(names.into_iter().map(String::from))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn errors_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let mut a = Artefacts::new(d.path(), Kind::Run, "r1", "complete");
        let e = a.record(["missing.md"]).unwrap_err();
        assert!(e.to_string().starts_with("cannot read back "), "{e}");
        assert!(e.to_string().contains("missing.md"), "{e}");
        let e = a.write("no/such/dir.json", b"x").unwrap_err();
        assert!(e.to_string().starts_with("cannot write "), "{e}");
        assert!(io::Error::from(e).to_string().contains("dir.json"));
    }
}

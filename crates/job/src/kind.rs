//! The kind of an artefact directory, recorded in its manifest (`"kind"` in
//! `manifest.json`) by the session that wrote it, so readers (`gauntlet merge`, the
//! output-directory checks, the dashboard) dispatch on what the directory is instead of
//! guessing it from which files are there.
//!
//! A manifest without a `kind` was written by a gauntlet before kinds were recorded;
//! such a directory is still told apart by its marker files ([`crate::outdir`]). A
//! recorded kind is checked against the files: a directory recorded as one kind must
//! hold that kind's marker file ([`Kind::marker`]), or [`recorded`] refuses it naming
//! the directory, rather than guessing.

use crate::manifest::MANIFEST;
use gauntlet_core::files;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// What an artefact directory is. The names (`run`, `exam-shard`…) are stable: they
/// are what `manifest.json` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A red-team run directory: one machine's run, a shard of one (`gauntlet run
    /// CONFIG --shard i/N`, whose run.json records `shard`) or the merge of its shards.
    Run,
    /// A rescore of a stored run (`gauntlet rescore RUN_DIR --judge SPEC`).
    Rescore,
    /// A shard of an agent exam (`gauntlet exam … --shard i/N`).
    ExamShard,
    /// A shard of a detect exam (`gauntlet exam-detect … --shard i/N`).
    DetectShard,
    /// An agent exam's output directory (`gauntlet exam`, or the merge of its shards).
    Exam,
    /// A detect exam's output directory (`gauntlet exam-detect --out DIR`, or the merge
    /// of its shards).
    DetectExam,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 6] = [
        Kind::Run,
        Kind::Rescore,
        Kind::ExamShard,
        Kind::DetectShard,
        Kind::Exam,
        Kind::DetectExam,
    ];

    /// The name `manifest.json` records.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Rescore => "rescore",
            Kind::ExamShard => "exam-shard",
            Kind::DetectShard => "detect-shard",
            Kind::Exam => "exam",
            Kind::DetectExam => "detect-exam",
        }
    }

    /// The kind named `name`, when this gauntlet knows it.
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The file every directory of this kind holds: what a recorded kind is checked
    /// against.
    pub fn marker(self) -> &'static str {
        match self {
            Kind::Run => "run.json",
            Kind::Rescore => "rescore.json",
            Kind::ExamShard => "shard.json",
            Kind::DetectShard => "detect_shard.json",
            Kind::Exam | Kind::DetectExam => "report.json",
        }
    }

    /// How a message names it.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Run => "a red-team run",
            Kind::Rescore => "a rescore",
            Kind::ExamShard => "an agent-exam shard",
            Kind::DetectShard => "a detect-exam shard",
            Kind::Exam => "an agent exam's output",
            Kind::DetectExam => "a detect exam's output",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why [`recorded`] could not say what a directory is. Every message names the
/// directory or its manifest.
#[derive(Debug, thiserror::Error)]
pub enum KindError {
    /// The manifest records a kind, but the directory lacks that kind's marker file.
    #[error(
        "{}: its {MANIFEST} records {} (kind `{kind}`), but it holds no {}: the directory was changed since its session finished, or the manifest is another directory's; restore it, or rerun the command that wrote it into a fresh directory",
        dir.display(),
        kind.describe(),
        kind.marker()
    )]
    Mismatch { dir: PathBuf, kind: Kind },
    /// The manifest records a kind this gauntlet does not know.
    #[error(
        "{}: records kind `{kind}`, which this gauntlet does not know (was it written by a newer gauntlet?)",
        path.display()
    )]
    Unknown { path: PathBuf, kind: String },
    /// The manifest is a symbolic link (never followed inside an artefact directory).
    #[error(
        "{} is a symbolic link; gauntlet never follows links inside a run directory: remove it (or move the directory aside)",
        path.display()
    )]
    Symlink { path: PathBuf },
    /// The manifest cannot be read (not a regular file, too large, an I/O error).
    #[error(transparent)]
    Unreadable(files::ReadError),
    /// The manifest is not JSON.
    #[error("{}: not a gauntlet manifest: {source}", path.display())]
    Malformed {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// The part of a manifest [`recorded`] reads (the files' entries are skipped).
#[derive(Deserialize)]
struct Head {
    gauntlet_manifest: Option<serde::de::IgnoredAny>,
    kind: Option<serde_json::Value>,
}

/// The kind `dir`'s manifest records, checked against its files. `Ok(None)`: no
/// manifest (nothing, a session running or killed), or one without a kind (an older
/// gauntlet's, or a `manifest.json` that is not gauntlet's): tell the kind from the
/// files. The files' digests are not checked here ([`crate::manifest::Manifest::verify`]
/// does that).
pub fn recorded(dir: &Path) -> Result<Option<Kind>, KindError> {
    let path = dir.join(MANIFEST);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => return Err(KindError::Symlink { path }),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // Not a directory, or unreadable: read below, for the error.
        Err(_) => {}
    }
    let bytes = match files::read(&path, files::Kind::RUN_METADATA) {
        Ok(b) => b,
        Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => return Ok(None),
        // `dir` is not a directory: nothing is recorded there.
        Err(e) if e.io_kind() == Some(io::ErrorKind::NotADirectory) => return Ok(None),
        Err(e) => return Err(KindError::Unreadable(e)),
    };
    let head: Head = serde_json::from_slice(&bytes).map_err(|source| KindError::Malformed {
        path: path.clone(),
        source,
    })?;
    let (Some(_), Some(kind)) = (head.gauntlet_manifest, head.kind) else {
        return Ok(None);
    };
    let kind = kind
        .as_str()
        .and_then(Kind::from_name)
        .ok_or_else(|| KindError::Unknown {
            path: path.clone(),
            kind: match &kind {
                serde_json::Value::String(s) => gauntlet_core::terminal::safe(s).into_owned(),
                v => v.to_string(),
            },
        })?;
    let marker = dir.join(kind.marker());
    if !std::fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file()) {
        return Err(KindError::Mismatch {
            dir: dir.to_path_buf(),
            kind,
        });
    }
    Ok(Some(kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serde_names_and_round_trip() {
        for k in Kind::ALL {
            let v = serde_json::to_value(k).unwrap();
            assert_eq!(v, serde_json::Value::String(k.name().into()));
            assert_eq!(serde_json::from_value::<Kind>(v).unwrap(), k);
            assert_eq!(Kind::from_name(k.name()), Some(k));
            assert_eq!(k.to_string(), k.name());
        }
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(
            names,
            [
                "run",
                "rescore",
                "exam-shard",
                "detect-shard",
                "exam",
                "detect-exam"
            ]
        );
        assert!(serde_json::from_str::<Kind>("\"judge-eval\"").is_err());
        assert_eq!(Kind::from_name("Run"), None);
    }

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn a_recorded_kind_is_read_and_checked_against_its_marker() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        // Nothing recorded: no manifest, an older gauntlet's manifest, someone else's.
        assert!(recorded(dir).unwrap().is_none());
        assert!(recorded(&dir.join("absent")).unwrap().is_none());
        write(
            dir,
            MANIFEST,
            r#"{"gauntlet_manifest": 2, "run_id": "r", "status": "complete", "files": {}}"#,
        );
        assert!(recorded(dir).unwrap().is_none());
        write(dir, MANIFEST, r#"{"name": "a web app", "kind": "exam"}"#);
        assert!(recorded(dir).unwrap().is_none());
        // Recorded, with and without its marker.
        write(
            dir,
            MANIFEST,
            r#"{"gauntlet_manifest": 2, "kind": "detect-exam", "run_id": "r", "status": "complete", "files": {}}"#,
        );
        let e = recorded(dir).unwrap_err();
        assert!(
            matches!(
                e,
                KindError::Mismatch {
                    kind: Kind::DetectExam,
                    ..
                }
            ),
            "{e:?}"
        );
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("{}: its manifest.json records a detect exam's output (kind `detect-exam`), but it holds no report.json", dir.display())),
            "{shown}"
        );
        write(dir, "report.json", "{}");
        assert_eq!(recorded(dir).unwrap(), Some(Kind::DetectExam));
        // A kind this gauntlet does not know, and a manifest that is not JSON.
        write(
            dir,
            MANIFEST,
            r#"{"gauntlet_manifest": 3, "kind": "holodeck"}"#,
        );
        let e = recorded(dir).unwrap_err();
        assert!(
            matches!(&e, KindError::Unknown { kind, .. } if kind == "holodeck"),
            "{e:?}"
        );
        write(dir, MANIFEST, "{\"gauntlet_manifest\": 2, \"kind\": ");
        assert!(matches!(
            recorded(dir).unwrap_err(),
            KindError::Malformed { .. }
        ));
        // A link is never followed.
        std::fs::remove_file(dir.join(MANIFEST)).unwrap();
        let other = tempfile::tempdir().unwrap();
        write(
            other.path(),
            MANIFEST,
            r#"{"gauntlet_manifest": 2, "kind": "exam"}"#,
        );
        std::os::unix::fs::symlink(other.path().join(MANIFEST), dir.join(MANIFEST)).unwrap();
        assert!(matches!(
            recorded(dir).unwrap_err(),
            KindError::Symlink { .. }
        ));
    }
}

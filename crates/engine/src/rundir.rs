//! The run directory: where a run's artefacts live and how they are written.
//!
//! ```text
//! runs/<run_name>/
//!   run.json           resolved config, config hash, versions, seed, status
//!   journal.jsonl      append-only finished model calls (resume source)
//!   transcripts.jsonl  one attempt per line, canonical order
//!   results.json       the run summary every report is rendered from (`gauntlet report`)
//!   leaderboard.json   one row per cell × metric, with provenance
//!   report.md, report.html
//!   sessions.jsonl     one line per session: wall time, calls made, cache hits
//!   manifest.json      written last: size and sha256 of every artefact above
//!   .lock              held while a session runs
//! ```
//! Every artefact except the journal and the session log is written to a temporary file
//! and renamed into place, so a reader never sees half a file. Everything but
//! `sessions.jsonl` (timings) is byte-identical across reruns and concurrency levels.
//!
//! A session removes `manifest.json` before it changes anything and writes it after its
//! last artefact, so a directory without one is mid-session or was killed; readers
//! ([`Manifest::verify`]) refuse such a directory, and any artefact that no longer
//! matches its size, line count or sha256. Nothing inside a run directory may be a
//! symbolic link (a dangling `journal.jsonl` link would make a run write outside it),
//! and temporary files a killed session left behind are removed by the next one.

use gauntlet_core::files::{self, Kind};
use gauntlet_core::hash::to_hex;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// The name of the manifest a finished session writes last.
pub const MANIFEST: &str = "manifest.json";

/// The files that belong to one run (besides the manifest), as opposed to the
/// directory's journal and session log, which outlive a run of another config.
pub const RUN_ARTEFACTS: [&str; 8] = [
    "run.json",
    "results.json",
    "usage.json",
    "transcripts.jsonl",
    "leaderboard.json",
    "report.md",
    "report.html",
    "judge_agreement.json",
];

pub struct RunDir {
    pub root: PathBuf,
    /// Stale temporary files removed when the directory was opened.
    pub removed_stale: Vec<String>,
    _lock: File,
}

impl RunDir {
    /// Creates `runs_dir/run_name` if needed and takes its lock. Refuses a directory
    /// holding a symbolic link; removes temporary files a killed session left.
    pub fn open(runs_dir: &Path, run_name: &str) -> io::Result<RunDir> {
        let root = runs_dir.join(run_name);
        fs::create_dir_all(&root)?;
        refuse_symlinks(&root)?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(root.join(".lock"))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!(
                        "{} is in use by another gauntlet process; wait for it or choose another run_name",
                        root.display()
                    ),
                ));
            }
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
        // Under the lock no session is writing: any temporary file is a dead one's.
        let mut removed_stale = Vec::new();
        for entry in fs::read_dir(&root)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_temporary(&name) && entry.file_type()?.is_file() {
                fs::remove_file(entry.path())?;
                removed_stale.push(name);
            }
        }
        removed_stale.sort();
        Ok(RunDir {
            root,
            removed_stale,
            _lock: lock,
        })
    }

    /// Moves the artefacts of the run the directory holds (another config's) into
    /// `superseded/<run id>/` (`.2`, `.3`… when taken), the manifest last, so that
    /// directory is whole once it has one. The journal and the session log stay: the
    /// journal is keyed by everything a call depends on, so the next run can replay
    /// only the calls it shares. Returns the new directory.
    pub fn supersede(&self, run_id: &str) -> io::Result<PathBuf> {
        let base = self.path("superseded");
        fs::create_dir_all(&base)?;
        // run.json is data: its run id names a directory only if it is a plain name.
        let name = if crate::config::valid_run_name(run_id) {
            run_id
        } else {
            "run"
        };
        let mut dest = base.join(name);
        let mut k = 2;
        while fs::symlink_metadata(&dest).is_ok() {
            dest = base.join(format!("{name}.{k}"));
            k += 1;
        }
        fs::create_dir(&dest)?;
        for f in RUN_ARTEFACTS.iter().chain([&MANIFEST]) {
            match fs::rename(self.path(f), dest.join(f)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(dest)
    }

    /// Marks the directory as mid-session: removes the manifest, before any artefact
    /// changes, so that a session killed from here on leaves a directory readers refuse.
    pub fn begin_session(&self) -> io::Result<()> {
        match fs::remove_file(self.path(MANIFEST)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    pub fn journal(&self) -> PathBuf {
        self.path("journal.jsonl")
    }

    /// Appends one JSON line to the session log.
    pub fn log_session(&self, line: &serde_json::Value) -> io::Result<()> {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path("sessions.jsonl"))?;
        let mut s = serde_json::to_vec(line).expect("json");
        s.push(b'\n');
        f.write_all(&s)
    }
}

/// The atomic writer (`<path>.tmp` and a rename), shared with the agent exam.
pub use gauntlet_core::atomic::{tmp_path, write_atomic};

/// The staging names of atomic writes: `<name>.tmp` (here) and `.<name>.tmp-<pid>-<n>`
/// (the report writer's).
fn is_temporary(name: &str) -> bool {
    name.ends_with(".tmp") || (name.starts_with('.') && name.contains(".tmp-"))
}

/// Refuses a run directory that holds a symbolic link: gauntlet never follows one
/// inside a run directory (a dangling `journal.jsonl` link would be created wherever it
/// points).
pub fn refuse_symlinks(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_symlink() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a symbolic link; gauntlet never follows links inside a run directory: remove it (or move the run directory aside)",
                    entry.path().display()
                ),
            ));
        }
    }
    Ok(())
}

/// Size, sha256 and (for JSONL files) line count of one artefact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    pub bytes: u64,
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
}

impl FileEntry {
    /// The entry of bytes in memory.
    pub fn of(bytes: &[u8]) -> FileEntry {
        FileEntry {
            bytes: bytes.len() as u64,
            sha256: to_hex(&Sha256::digest(bytes)),
            lines: None,
        }
    }

    /// Hashes a file as it is, streaming (lines are counted for `.jsonl` files).
    pub fn of_file(path: &Path) -> io::Result<FileEntry> {
        Self::of_file_sized(path, None)
    }

    /// [`FileEntry::of_file`], except that a file whose size is not `expect` is not
    /// read: its entry has that size and no digest (it cannot match anyway).
    fn of_file_sized(path: &Path, expect: Option<u64>) -> io::Result<FileEntry> {
        let mut f = files::open(path, Kind::RUN_ARTEFACT).map_err(io::Error::other)?;
        if expect.is_some_and(|n| n != f.len) {
            return Ok(FileEntry {
                bytes: f.len,
                sha256: "(not hashed)".into(),
                lines: None,
            });
        }
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        let (mut bytes, mut lines) = (0u64, 0u64);
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            bytes += n as u64;
            lines += memchr_count(&buf[..n]);
        }
        let jsonl = path.extension().is_some_and(|e| e == "jsonl");
        Ok(FileEntry {
            bytes,
            sha256: to_hex(&h.finalize()),
            lines: jsonl.then_some(lines),
        })
    }
}

fn memchr_count(b: &[u8]) -> u64 {
    b.iter().filter(|&&c| c == b'\n').count() as u64
}

/// A streaming sha256 of a JSONL artefact as it is written: bytes and lines too.
#[derive(Default)]
pub struct HashingCount {
    h: Sha256,
    bytes: u64,
    lines: u64,
}

impl HashingCount {
    /// Adds bytes made of whole lines (`lines` of them).
    pub fn update(&mut self, chunk: &[u8], lines: u64) {
        self.h.update(chunk);
        self.bytes += chunk.len() as u64;
        self.lines += lines;
    }
    pub fn finish(self) -> FileEntry {
        FileEntry {
            bytes: self.bytes,
            sha256: to_hex(&self.h.finalize()),
            lines: Some(self.lines),
        }
    }
}

/// What a finished session wrote: every artefact's size and sha256, so a reader can
/// tell a directory left as the run left it from one truncated, edited, mixed with
/// another run, or killed mid-session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub gauntlet_manifest: u32,
    pub run_id: String,
    pub status: String,
    pub files: BTreeMap<String, FileEntry>,
}

impl Manifest {
    pub fn new(run_id: &str, status: &str) -> Manifest {
        Manifest {
            gauntlet_manifest: 1,
            run_id: run_id.to_string(),
            status: status.to_string(),
            files: BTreeMap::new(),
        }
    }

    /// Records `name` in `dir` as it is now.
    pub fn record_file(&mut self, dir: &Path, name: &str) -> io::Result<()> {
        let e = FileEntry::of_file(&dir.join(name))?;
        self.files.insert(name.to_string(), e);
        Ok(())
    }

    /// Writes `dir/manifest.json` (atomically).
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        let mut s = serde_json::to_vec_pretty(self).expect("a manifest serialises");
        s.push(b'\n');
        write_atomic(&dir.join(MANIFEST), &s)
    }

    /// Reads `dir`'s manifest and checks every artefact it lists against it. The error
    /// says what is wrong and what to do.
    pub fn verify(dir: &Path) -> Result<Manifest, String> {
        Self::verify_except(dir, &[])
    }

    /// [`Manifest::verify`], leaving out files the caller is about to rewrite (a
    /// missing or edited report is fine when `gauntlet report` makes it again).
    pub fn verify_except(dir: &Path, rewritten: &[&str]) -> Result<Manifest, String> {
        refuse_symlinks(dir).map_err(|e| e.to_string())?;
        let path = dir.join(MANIFEST);
        let bytes = match files::read(&path, Kind::RUN_METADATA) {
            Ok(b) => b,
            Err(e) if e.io_kind() == Some(io::ErrorKind::NotFound) => {
                let why = if dir.join("run.json").exists() {
                    "a session is running in it, was killed before it finished, or it was written by a gauntlet without manifests"
                } else {
                    "is it a gauntlet run directory?"
                };
                return Err(format!(
                    "{} has no {MANIFEST} ({why}); its artefacts may be mixed or partial, so it is not read. Rerun the run's config with `gauntlet run` to finish or rebuild it (finished model calls are replayed from the journal, not repeated)",
                    dir.display()
                ));
            }
            Err(e) => return Err(e.to_string()),
        };
        let m: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}: not a gauntlet manifest: {e}", path.display()))?;
        for (name, want) in &m.files {
            if rewritten.contains(&name.as_str()) {
                continue;
            }
            if name.contains('/') || name.starts_with('.') {
                return Err(format!(
                    "{}: lists `{name}`, not a run artefact",
                    path.display()
                ));
            }
            let p = dir.join(name);
            let got = FileEntry::of_file_sized(&p, Some(want.bytes)).map_err(|e| {
                format!(
                    "{}: {e}; the run's {MANIFEST} lists it: the directory is incomplete",
                    p.display()
                )
            })?;
            if got != *want {
                let shown = |e: &FileEntry| {
                    let lines = e.lines.map_or(String::new(), |l| format!("{l} lines, "));
                    let sha = e.sha256.get(..12).unwrap_or(&e.sha256);
                    format!("{lines}{} bytes, sha256 {sha}", e.bytes)
                };
                return Err(format!(
                    "{} is not the file the run wrote (now {}; the run recorded {} in {MANIFEST}): it was truncated, edited or replaced since. Restore it, or rerun the config into a fresh run directory",
                    p.display(),
                    shown(&got),
                    shown(want),
                ));
            }
        }
        Ok(m)
    }
}

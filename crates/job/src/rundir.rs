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
//!   labels.jsonl       human labels of sampled replies (`gauntlet label`), if any
//!   label_cards.json   the judge cards measured from them, per target
//!   sessions.jsonl     one line per session: wall time, calls made, cache hits
//!   manifest.json      written last: the directory's kind (`run`), size and BLAKE3
//!                      of every artefact above
//!   .lock              held while a session runs
//! ```
//! Every artefact except the journal and the session log is written to a temporary file
//! and renamed into place, so a reader never sees half a file. Everything but
//! `sessions.jsonl` (timings) is byte-identical across reruns and concurrency levels.
//!
//! A session removes `manifest.json` before it changes anything and writes it after its
//! last artefact, so a directory without one is mid-session or was killed; readers
//! ([`Manifest::verify`]) refuse such a directory, and any artefact that no longer
//! matches its size, line count or digest (BLAKE3 since manifest version 2; version 1
//! manifests, with sha256, still verify). Nothing inside a run directory may be a
//! symbolic link (a dangling `journal.jsonl` link would make a run write outside it),
//! and temporary files a killed session left behind are removed by the next one.
//!
//! The manifest records what kind of directory it is (`"kind"`, [`crate::kind::Kind`]:
//! `run` for a run, a shard of one or a merge; `rescore`, `exam-shard`, `detect-shard`,
//! `exam`, `detect-exam` for the other directories that carry a manifest), and readers
//! dispatch on it (`gauntlet merge`, every command's `--out` check,
//! [`crate::outdir::holding`], the dashboard), checked against the kind's marker file
//! (`run.json`, `rescore.json`, `shard.json`, `detect_shard.json`, `report.json`): a
//! record the files contradict is refused naming the directory. A manifest without a
//! kind (written before kinds were recorded) still verifies, and its directory is told
//! apart by those marker files, as before.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The manifest every finished session writes last, shared with the exams' shard
/// directories.
pub use crate::manifest::{FileEntry, HashingWriter, MANIFEST, Manifest, refuse_symlinks};

/// The files that belong to one run (besides the manifest), as opposed to the
/// directory's journal and session log, which outlive a run of another config.
pub const RUN_ARTEFACTS: [&str; 10] = [
    "run.json",
    "results.json",
    "usage.json",
    "transcripts.jsonl",
    "leaderboard.json",
    "report.md",
    "report.html",
    "judge_agreement.json",
    "labels.jsonl",
    "label_cards.json",
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
        // The directory itself may not be a link either: the run would be written into
        // wherever it points.
        if fs::symlink_metadata(&root).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is a symbolic link; gauntlet never follows a link to a run directory: remove it, or give --runs-dir the directory that holds its target",
                    root.display()
                ),
            ));
        }
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
        let name = if plain_name(run_id) { run_id } else { "run" };
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

/// Whether a session holds `dir`'s lock right now: the run is in progress. Trying a
/// shared lock on a read-only handle changes nothing on disk; a directory without a
/// `.lock` file (or one that is not a regular file) is not in progress.
pub fn in_progress(dir: &Path) -> bool {
    let p = dir.join(".lock");
    if !fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
        return false;
    }
    match gauntlet_core::files::open(&p, gauntlet_core::files::Kind::ANY_SIZE) {
        Ok(f) => match f.file().try_lock_shared() {
            Ok(()) => {
                let _ = f.file().unlock();
                false
            }
            Err(fs::TryLockError::WouldBlock) => true,
            Err(_) => false,
        },
        Err(_) => false,
    }
}

/// The atomic writer (`<path>.tmp` and a rename), shared with the agent exam.
pub use gauntlet_core::atomic::{tmp_path, write_atomic};

/// The staging names of atomic writes: `<name>.tmp` (here) and `.<name>.tmp-<pid>-<n>`
/// (the report writer's).
fn is_temporary(name: &str) -> bool {
    name.ends_with(".tmp") || (name.starts_with('.') && name.contains(".tmp-"))
}

/// Whether `s` is a plain directory name: 1 to 128 ASCII letters, digits, `.`, `_` and
/// `-`, and neither `.` nor `..` (a run name, a shard's directory name).
pub fn plain_name(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

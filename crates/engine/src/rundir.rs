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
//!   .lock              held while a session runs
//! ```
//! Every artefact except the journal and the session log is written to a temporary file
//! and renamed into place, so a reader never sees half a file. Everything but
//! `sessions.jsonl` (timings) is byte-identical across reruns and concurrency levels.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub struct RunDir {
    pub root: PathBuf,
    _lock: File,
}

impl RunDir {
    /// Creates `runs_dir/run_name` if needed and takes its lock.
    pub fn open(runs_dir: &Path, run_name: &str) -> io::Result<RunDir> {
        let root = runs_dir.join(run_name);
        fs::create_dir_all(&root)?;
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
        Ok(RunDir { root, _lock: lock })
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

//! The progress a running session publishes for readers other than its terminal (the
//! dashboard's live-run page): [`PROGRESS_FILE`] in the run directory — units done of
//! the session's units, attempts, model calls made and in flight, and the ETA from the
//! same [`Meter`] the terminal shows — rewritten atomically at most every
//! [`PROGRESS_PERIOD`] while units run, and removed when the session finishes.
//!
//! It is a dot-file of volatile counters: never an artefact (no manifest lists it, and
//! [`crate::manifest`] refuses hidden names), never part of what reruns must reproduce
//! byte for byte. A reader trusts it only while a session holds the directory's lock
//! ([`crate::rundir::in_progress`]); one a killed session left behind is stale and the
//! next session writes over it. [`read`] reads it as untrusted input: capped in size, a
//! symlink refused, any JSON shape tolerated.

use crate::meter::Meter;
use crate::progress::{CallStats, Progress};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The file's name in the run directory.
pub const PROGRESS_FILE: &str = ".progress.json";
/// The least time between two rewrites.
pub const PROGRESS_PERIOD: Duration = Duration::from_secs(2);
/// Largest progress file a reader reads.
const MAX_BYTES: u64 = 64 << 10;

/// What the file holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Snapshot {
    /// `running` while units run, `finishing` while the session writes its artefacts.
    pub phase: String,
    /// Units this session runs (a shard's share, or the whole run's).
    pub units: u64,
    /// Of them, units finished (replayed from the journal included).
    pub units_done: u64,
    pub attempts: u64,
    /// Model calls that reached a model (in flight included), and those still in flight.
    pub calls_made: u64,
    pub calls_in_flight: u64,
    /// Calls answered from the journal, calls that failed, transport retries.
    pub calls_cached: u64,
    pub calls_failed: u64,
    pub retries: u64,
    /// Unix seconds the session started and the file was written.
    pub started_unix: u64,
    pub updated_unix: u64,
    /// Seconds left, as the terminal's meter reads them (`None` while unknown).
    pub eta_seconds: Option<f64>,
    /// The terminal's progress line (`12/64 units (19%), 2.4 units/min, …, eta 3m10s`).
    pub line: String,
}

/// A [`Progress`] that forwards everything to `inner` and publishes the session's
/// progress to `<dir>/`[`PROGRESS_FILE`].
pub struct ProgressFile {
    path: PathBuf,
    inner: Arc<dyn Progress>,
    state: Mutex<State>,
}

struct State {
    meter: Meter,
    started: Instant,
    planned_calls: u64,
    snap: Snapshot,
    written: Option<Instant>,
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl ProgressFile {
    /// Publishes to `dir`, forwarding to `inner`; the session started at `started_unix`.
    pub fn new(dir: &Path, inner: Arc<dyn Progress>, started_unix: u64) -> ProgressFile {
        ProgressFile {
            path: dir.join(PROGRESS_FILE),
            inner,
            state: Mutex::new(State {
                meter: Meter::new(0, "units"),
                started: Instant::now(),
                planned_calls: 0,
                snap: Snapshot {
                    phase: "running".into(),
                    started_unix,
                    ..Default::default()
                },
                written: None,
            }),
        }
    }

    /// Writes the snapshot now (a failure to write is ignored: progress is a courtesy,
    /// never a reason to stop a run).
    fn write(&self, s: &mut State) {
        s.snap.updated_unix = now_unix();
        s.snap.eta_seconds = s.meter.eta();
        s.snap.line = s.meter.line();
        if let Ok(bytes) = serde_json::to_vec_pretty(&s.snap) {
            let _ = gauntlet_core::atomic::write_atomic_unflushed(&self.path, &bytes);
        }
        s.written = Some(Instant::now());
    }

    /// Removes the file (the session is over).
    pub fn remove(dir: &Path) {
        let _ = std::fs::remove_file(dir.join(PROGRESS_FILE));
    }
}

impl Progress for ProgressFile {
    fn start(&self, units: u64, attempts: u64) {
        self.inner.start(units, attempts);
        let mut s = self.state.lock().expect("progress file lock");
        s.meter = Meter::new(units, "units");
        let planned = s.planned_calls;
        s.meter.plan_calls(planned);
        s.started = Instant::now();
        s.snap.units = units;
        self.write(&mut s);
    }

    fn planned_calls(&self, calls: u64) {
        self.inner.planned_calls(calls);
        self.state.lock().expect("progress file lock").planned_calls = calls;
    }

    fn advance(&self, units: u64, attempts: u64, calls: CallStats) {
        self.inner.advance(units, attempts, calls);
        let mut s = self.state.lock().expect("progress file lock");
        s.snap.units_done += units;
        s.snap.attempts += attempts;
        s.snap.calls_made = calls.made;
        s.snap.calls_in_flight = calls.in_flight;
        s.snap.calls_cached = calls.cached;
        s.snap.calls_failed = calls.failed;
        s.snap.retries = calls.retries();
        let (t, done) = (s.started.elapsed().as_secs_f64(), s.snap.units_done);
        s.meter.journal_hits(calls.cached);
        s.meter.record(t, done, calls.done());
        if s.written.is_none_or(|w| w.elapsed() >= PROGRESS_PERIOD) {
            self.write(&mut s);
        }
    }

    fn note(&self, message: &str) {
        self.inner.note(message);
    }

    fn finish(&self) {
        self.inner.finish();
        let mut s = self.state.lock().expect("progress file lock");
        s.snap.phase = "finishing".into();
        s.snap.calls_in_flight = 0;
        self.write(&mut s);
    }
}

/// The progress file of `dir`, if there is a readable one: a regular file (not a
/// symlink) of at most 64 KiB holding a JSON object (missing fields read as 0).
pub fn read(dir: &Path) -> Option<Snapshot> {
    let path = dir.join(PROGRESS_FILE);
    if !std::fs::symlink_metadata(&path).ok()?.is_file() {
        return None;
    }
    const PROGRESS: gauntlet_core::files::Kind = gauntlet_core::files::Kind {
        what: "progress file",
        max_bytes: MAX_BYTES,
    };
    let buf = gauntlet_core::files::read(&path, PROGRESS).ok()?;
    serde_json::from_slice(&buf).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;

    #[test]
    fn a_session_publishes_its_units_calls_and_eta_then_removes_them() {
        let d = tempfile::tempdir().unwrap();
        let p = ProgressFile::new(d.path(), Arc::new(Silent), 1_700_000_000);
        p.start(64, 64);
        let s = read(d.path()).expect("written at the start");
        assert_eq!(
            (s.units, s.units_done, s.phase.as_str()),
            (64, 0, "running")
        );
        assert_eq!(s.started_unix, 1_700_000_000);
        assert_eq!(
            s.eta_seconds, None,
            "unknown before a unit finished, never 0"
        );
        let calls = CallStats {
            made: 12,
            in_flight: 3,
            ..Default::default()
        };
        p.advance(9, 9, calls);
        // Within the period: not rewritten yet.
        assert_eq!(read(d.path()).unwrap().units_done, 0);
        p.finish();
        let s = read(d.path()).unwrap();
        assert_eq!((s.units_done, s.attempts, s.calls_made), (9, 9, 12));
        assert_eq!((s.phase.as_str(), s.calls_in_flight), ("finishing", 0));
        assert!(s.line.starts_with("9/64 units (14%)"), "{}", s.line);
        ProgressFile::remove(d.path());
        assert!(read(d.path()).is_none());
    }

    #[test]
    fn a_reader_tolerates_any_shape_and_refuses_links_and_giants() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join(PROGRESS_FILE);
        std::fs::write(&f, r#"{"units": 5, "extra": [1, 2]}"#).unwrap();
        assert_eq!(read(d.path()).unwrap().units, 5);
        std::fs::write(&f, "3").unwrap();
        assert!(read(d.path()).is_none());
        std::fs::write(&f, r#"{"units": "many"}"#).unwrap();
        assert!(read(d.path()).is_none());
        std::fs::write(&f, vec![b' '; (MAX_BYTES + 1) as usize]).unwrap();
        assert!(read(d.path()).is_none());
        std::fs::remove_file(&f).unwrap();
        let elsewhere = d.path().join("elsewhere.json");
        std::fs::write(&elsewhere, r#"{"units": 5}"#).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &f).unwrap();
        assert!(read(d.path()).is_none());
    }

    proptest::proptest! {
        /// Any bytes are read without a panic.
        #[test]
        fn any_bytes_read_without_a_panic(b in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let d = tempfile::tempdir().unwrap();
            std::fs::write(d.path().join(PROGRESS_FILE), &b).unwrap();
            let _ = read(d.path());
        }
    }
}

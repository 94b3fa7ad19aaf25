//! The dashboard's state, shared by the server's handlers and the static export: the
//! catalogue of runs (rescanned on demand), the background recounts of finished runs
//! (kept while their files are unchanged) and the transcript line indexes (built on a
//! thread, rebuilt when the file grows).

use crate::scan::{self, Catalog};
use crate::transcripts::{self, LineIndex};
use crate::verify::{self, RunCheck};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

/// The line index of one run's transcripts: being built, built, or failed.
#[derive(Clone)]
enum IndexSlot {
    Building,
    Ready(Arc<LineIndex>),
    Failed,
}

/// What a check was computed from: each input file's (length, mtime).
type Fingerprint = Vec<(u64, Option<SystemTime>)>;

fn fingerprint(run: &scan::Run) -> Fingerprint {
    [
        "run.json",
        "leaderboard.json",
        "transcripts.jsonl",
        "report.json",
    ]
    .iter()
    .map(|n| {
        std::fs::symlink_metadata(run.dir.join(n))
            .map(|m| (m.len(), m.modified().ok()))
            .unwrap_or((0, None))
    })
    .collect()
}

/// The dashboard's state: the catalogue of runs, the recount results and the
/// transcript indexes. Shared by the server's handlers and the static export.
pub struct Dashboard {
    pub roots: Vec<PathBuf>,
    catalog: RwLock<Arc<Catalog>>,
    checks: Mutex<HashMap<String, (Fingerprint, Arc<RunCheck>)>>,
    indexes: Mutex<HashMap<String, (u64, IndexSlot)>>,
}

impl Dashboard {
    /// Scans `roots` (each a run directory or a directory of run directories).
    pub fn new(roots: Vec<PathBuf>) -> Arc<Dashboard> {
        let catalog = scan::scan(&roots);
        Arc::new(Dashboard {
            roots,
            catalog: RwLock::new(Arc::new(catalog)),
            checks: Mutex::new(HashMap::new()),
            indexes: Mutex::new(HashMap::new()),
        })
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().expect("catalog lock").clone()
    }

    /// Scans the roots again (new runs, finished runs).
    pub fn rescan(&self) {
        let c = scan::scan(&self.roots);
        *self.catalog.write().expect("catalog lock") = Arc::new(c);
    }

    /// The recount of a run, if it is done and still current.
    pub fn check_of(&self, run: &scan::Run) -> Option<Arc<RunCheck>> {
        if run.live {
            return None;
        }
        let checks = self.checks.lock().expect("checks lock");
        let (fp, c) = checks.get(&run.slug)?;
        (*fp == fingerprint(run)).then(|| c.clone())
    }

    /// Checks every run that has no current check, one at a time (blocking). Returns
    /// how many were checked.
    pub fn check_pending(&self) -> usize {
        let cat = self.catalog();
        let mut n = 0;
        for run in &cat.runs {
            if run.live || self.check_of(run).is_some() {
                continue;
            }
            let fp = fingerprint(run);
            let c = Arc::new(verify::check(run));
            self.checks
                .lock()
                .expect("checks lock")
                .insert(run.slug.clone(), (fp, c));
            n += 1;
        }
        n
    }

    /// The line index of a run's transcripts if it is ready; starts building it (on a
    /// thread) the first time, or again when the file has grown.
    pub fn index_of(self: &Arc<Self>, run: &scan::Run) -> Option<Arc<LineIndex>> {
        let path = run.dir.join("transcripts.jsonl");
        let len = std::fs::symlink_metadata(&path).map(|m| m.len()).ok()?;
        let mut map = self.indexes.lock().expect("index lock");
        match map.get(&run.slug) {
            Some((l, IndexSlot::Ready(ix))) if *l == len => return Some(ix.clone()),
            Some((l, IndexSlot::Building)) if *l == len => return None,
            Some((l, IndexSlot::Failed)) if *l == len => return None,
            _ => {}
        }
        map.insert(run.slug.clone(), (len, IndexSlot::Building));
        let me = self.clone();
        let slug = run.slug.clone();
        std::thread::spawn(move || {
            let slot = match transcripts::build_index(&path) {
                Ok(ix) => IndexSlot::Ready(Arc::new(ix)),
                Err(_) => IndexSlot::Failed,
            };
            me.indexes
                .lock()
                .expect("index lock")
                .insert(slug, (len, slot));
        });
        None
    }

    /// Blocks until the index of `run` is built (for the static export and tests).
    pub fn index_now(self: &Arc<Self>, run: &scan::Run) -> Option<Arc<LineIndex>> {
        for _ in 0..6000 {
            if let Some(ix) = self.index_of(run) {
                return Some(ix);
            }
            let map = self.indexes.lock().expect("index lock");
            if matches!(map.get(&run.slug), Some((_, IndexSlot::Failed)) | None) {
                return None;
            }
            drop(map);
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        None
    }
}

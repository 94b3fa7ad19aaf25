//! The dashboard's state, shared by the server's handlers and the static export: the
//! catalogue of runs (rescanned on demand), the background recounts of finished runs
//! (kept while their files are unchanged), the transcript line indexes (built on a
//! thread, rebuilt when the file grows) and the per-behavior series the pivot pairs
//! (read on first use — on a thread for a large run — and kept while the run's files are
//! unchanged).

use crate::compare::{self, RunSeries};
use crate::scan::{self, Catalog};
use crate::transcripts::{self, LineIndex};
use crate::verify::{self, Recount, RunCheck};
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
    series: Mutex<HashMap<SeriesKey, (Fingerprint, Series)>>,
    /// Series being read on a thread.
    series_pending: Mutex<std::collections::HashSet<SeriesKey>>,
    /// Largest transcripts a served page reads while it waits ([`SERIES_INLINE`]).
    series_inline: std::sync::atomic::AtomicU64,
    /// The recount of red-team runs (the engine's, handed in by the command).
    recount: Arc<dyn Recount>,
}

/// A run's series: (slug, judge, metric label).
type SeriesKey = (String, String, String);

/// A run's series, or why it has none.
type Series = Arc<Result<RunSeries, String>>;

/// Most series kept; past it the cache starts again (a pivot needs one judge × metric
/// of the runs it shows).
const MAX_SERIES: usize = 256;

/// Largest transcripts.jsonl a served page reads for the pivot's pairs while it waits
/// (32 MiB, some 30,000 attempts); a larger one is read on a thread.
pub(crate) const SERIES_INLINE: u64 = 32 << 20;

impl Dashboard {
    /// Scans `roots` (each a run directory or a directory of run directories); red-team
    /// runs are checked through `recount`.
    pub fn new(roots: Vec<PathBuf>, recount: Arc<dyn Recount>) -> Arc<Dashboard> {
        let catalog = scan::scan(&roots);
        Arc::new(Dashboard {
            roots,
            catalog: RwLock::new(Arc::new(catalog)),
            checks: Mutex::new(HashMap::new()),
            indexes: Mutex::new(HashMap::new()),
            series: Mutex::new(HashMap::new()),
            series_pending: Mutex::new(std::collections::HashSet::new()),
            series_inline: std::sync::atomic::AtomicU64::new(SERIES_INLINE),
            recount,
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

    /// The per-behavior values of `run`'s cells under `judge` for metric label `metric`,
    /// or why there are none; read from the run's transcripts on first use and kept
    /// while its files are unchanged (never for a live run). With `wait` false and
    /// transcripts over [`SERIES_INLINE`], the first use starts the reading on a thread
    /// and returns `None` (the page says the test is being computed) rather than holding
    /// the request for seconds.
    pub fn series_of(
        self: &Arc<Self>,
        run: &scan::Run,
        judge: &str,
        metric: &str,
        wait: bool,
    ) -> Option<Series> {
        let key = (run.slug.clone(), judge.to_owned(), metric.to_owned());
        let fp = fingerprint(run);
        if !run.live
            && let Some((f, s)) = self.series.lock().expect("series lock").get(&key)
            && *f == fp
        {
            return Some(s.clone());
        }
        let size =
            std::fs::symlink_metadata(run.dir.join("transcripts.jsonl")).map_or(0, |m| m.len());
        let inline = self
            .series_inline
            .load(std::sync::atomic::Ordering::Relaxed);
        if wait || run.live || size <= inline {
            let s = Arc::new(compare::run_series(run, judge, metric).map_err(|e| e.message));
            if !run.live {
                self.keep_series(key, fp, s.clone());
            }
            return Some(s);
        }
        let listed = self.catalog().get(&run.slug).cloned();
        if let Some(run) = listed
            && self
                .series_pending
                .lock()
                .expect("series lock")
                .insert(key.clone())
        {
            let me = self.clone();
            let (judge, metric) = (judge.to_owned(), metric.to_owned());
            std::thread::spawn(move || {
                let s = Arc::new(compare::run_series(&run, &judge, &metric).map_err(|e| e.message));
                me.keep_series(key.clone(), fp, s);
                me.series_pending.lock().expect("series lock").remove(&key);
            });
        }
        None
    }

    /// Sets the largest transcripts a served page reads while it waits (tests).
    pub fn set_series_inline(&self, bytes: u64) {
        self.series_inline
            .store(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    fn keep_series(&self, key: SeriesKey, fp: Fingerprint, s: Series) {
        let mut map = self.series.lock().expect("series lock");
        if map.len() >= MAX_SERIES {
            map.clear();
        }
        map.insert(key, (fp, s));
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
            let c = Arc::new(verify::check(run, self.recount.as_ref()));
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

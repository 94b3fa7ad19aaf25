//! The scenario runs' files, `run-<pass>/<stem>.json` and `.transcript.json`: scenario
//! ids as file names, written as each run is graded, staged and put in place before the
//! report ([`RunFiles`]); and the small atomic-write helpers the exam's writer shares.

use crate::cascade::TranscriptEntry;
use gauntlet_results::exam::{Bits, Outline, Results, ScenarioResult, WrittenPass, file_stem};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(super) fn io_named(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
}

/// The scenario runs' files, `run-<pass>/<stem>.json` and `.transcript.json`, written
/// as each run is graded, so an exam holds only the transcripts in flight in memory and
/// never every pass's. They are written under [`STAGING`] and moved into place by
/// [`RunFiles::commit`] just before the report: an exam that fails half way (a write
/// error, a halted exam) leaves the previous exam's report and files as they were (the
/// next exam clears what it staged). Each file is renamed into place (a failed write
/// leaves no torn file) and none is flushed (one flush per file would dominate the
/// exam's wall time; `report.json` is).
///
/// A file whose bytes are already in place (a rerun of a deterministic backend writes
/// the same files) is left there, neither staged nor replaced: replacing thousands of
/// identical files made every rerun into the same `--out` unlink and recreate them all,
/// and unlinking on this kind of disk cost milliseconds a file (BENCHMARKS.md, "Reruns
/// into the same --out").
///
/// What it keeps grows with the corpus, not with the passes: each corpus scenario's file
/// stem, and per pass a bit for each scenario written ([`Results::Written`] reads the
/// results back from their files).
pub struct RunFiles {
    out: PathBuf,
    begun: bool,
    /// Every corpus scenario's file stem, by corpus index.
    stems: Arc<[String]>,
    /// Per pass: its `run-<pass>` directory staged, and the files left in place.
    passes: Vec<PassFiles>,
    written: usize,
}

struct PassFiles {
    staged: bool,
    /// Whether `run-<pass>` is a real directory (never a link) that files may be left in;
    /// looked up at the pass's first file.
    placed_dir: Option<bool>,
    /// Files left in place (their bytes were already there).
    kept: usize,
    /// The scenarios written in this pass, by corpus index.
    present: Bits,
}

/// Where [`RunFiles`] stages the scenario runs' files (inside the output directory, so
/// moving them into place is a rename).
pub const STAGING: &str = ".runs-partial";

impl RunFiles {
    /// Files under `out` of a corpus whose scenarios have the ids `ids`, in corpus
    /// order; nothing is touched before the first [`RunFiles::write`].
    pub fn new<'a>(out: &Path, ids: impl IntoIterator<Item = &'a str>) -> RunFiles {
        RunFiles {
            out: out.to_path_buf(),
            begun: false,
            stems: ids.into_iter().map(file_stem).collect(),
            passes: Vec::new(),
            written: 0,
        }
    }

    /// One graded scenario run of pass `pass`, of corpus scenario `scenario`: its result
    /// and its transcript.
    pub fn write(
        &mut self,
        pass: usize,
        scenario: usize,
        result: &ScenarioResult,
        transcript: &[TranscriptEntry],
    ) -> std::io::Result<()> {
        let staging = self.out.join(STAGING);
        if !self.begun {
            remove_dir_if_any(&staging)?;
            self.begun = true;
        }
        let scenarios = self.stems.len();
        if self.passes.len() <= pass {
            self.passes.resize_with(pass + 1, || PassFiles {
                staged: false,
                placed_dir: None,
                kept: 0,
                present: Bits::new(scenarios),
            });
        }
        let placed = self.out.join(format!("run-{pass}"));
        let stem = &self.stems[scenario];
        let files: [(String, &dyn erased::Ser); 2] = [
            (format!("{stem}.json"), result),
            (format!("{stem}.transcript.json"), &transcript),
        ];
        for (name, value) in files {
            let bytes = json(&placed.join(&name), value)?;
            let p = &mut self.passes[pass];
            let dir_ok = *p.placed_dir.get_or_insert_with(|| {
                std::fs::symlink_metadata(&placed).is_ok_and(|m| m.is_dir())
            });
            if dir_ok && holds(&placed.join(&name), &bytes) {
                p.kept += 1;
                continue;
            }
            let dir = staging.join(format!("run-{pass}"));
            if !p.staged {
                mkdir(&dir)?;
                p.staged = true;
            }
            let f = dir.join(&name);
            gauntlet_core::atomic::write_atomic_unflushed_named(&f, &bytes)?;
        }
        self.passes[pass].present.insert(scenario);
        self.written += 1;
        Ok(())
    }

    /// Pass `pass`'s results as they will be once [`RunFiles::commit`] has put them in
    /// place: `passed` of them passed (the floor's included), and `outline` is kept when
    /// this is the pass the classifier reads.
    pub fn results(&self, pass: usize, passed: usize, outline: Option<Vec<Outline>>) -> Results {
        Results::Written(WrittenPass {
            dir: self.out.join(format!("run-{pass}")),
            stems: self.stems.clone(),
            present: self
                .passes
                .get(pass)
                .map_or_else(|| Bits::new(self.stems.len()), |p| p.present.clone()),
            passed,
            outline,
        })
    }

    /// The scenario runs written.
    pub fn written(&self) -> usize {
        self.written
    }

    /// Puts each pass's files in place, then removes the staging directory. A pass none
    /// of whose files were left in place has its staged `run-<pass>` directory moved in
    /// whole (replacing the previous exam's); otherwise each staged file is renamed over
    /// its old copy and what the previous exam left that this one did not write is
    /// removed. Again: nothing left to move.
    pub fn commit(&self) -> std::io::Result<()> {
        let staging = self.out.join(STAGING);
        for (pass, p) in self.passes.iter().enumerate() {
            let from = staging.join(format!("run-{pass}"));
            let to = self.out.join(format!("run-{pass}"));
            if p.kept == 0 {
                if !p.staged || std::fs::symlink_metadata(&from).is_err() {
                    continue;
                }
                remove_dir_if_any(&to)?;
                std::fs::rename(&from, &to).map_err(|e| io_named(&to, e))?;
                continue;
            }
            // Files were left in `to` because it was a real directory; it must still be
            // one before anything in it is replaced or removed (never through a link).
            if !std::fs::symlink_metadata(&to).is_ok_and(|m| m.is_dir()) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "{} changed during the exam (it is no longer a directory); the new files stay in {}: move it aside and rerun",
                        to.display(),
                        staging.display()
                    ),
                ));
            }
            // What this exam wrote in the pass: the staged files moved in below and the
            // ones left in place.
            let live: std::collections::HashSet<String> = p
                .present
                .ones()
                .flat_map(|i| {
                    let stem = &self.stems[i];
                    [format!("{stem}.json"), format!("{stem}.transcript.json")]
                })
                .collect();
            if p.staged {
                for e in std::fs::read_dir(&from).map_err(|e| io_named(&from, e))? {
                    let name = e.map_err(|e| io_named(&from, e))?.file_name();
                    let dest = to.join(&name);
                    gauntlet_core::atomic::check_replaceable(&dest)?;
                    std::fs::rename(from.join(&name), &dest).map_err(|e| io_named(&dest, e))?;
                }
            }
            for e in std::fs::read_dir(&to).map_err(|e| io_named(&to, e))? {
                let e = e.map_err(|e| io_named(&to, e))?;
                let name = e.file_name();
                if !name.to_str().is_some_and(|n| live.contains(n)) {
                    let stale = e.path();
                    let gone = if e.file_type().is_ok_and(|t| t.is_dir()) {
                        std::fs::remove_dir_all(&stale)
                    } else {
                        std::fs::remove_file(&stale)
                    };
                    gone.map_err(|e| {
                        std::io::Error::new(
                            e.kind(),
                            format!("cannot remove {}: {e}", stale.display()),
                        )
                    })?;
                }
            }
        }
        remove_dir_if_any(&staging)
    }
}

/// Whether `p` is a regular file (never a link) holding exactly `bytes`. Compared a
/// block at a time through a buffer on the stack: a rerun compares every scenario run's
/// files, and a buffer per file left the allocator holding megabytes of them.
fn holds(p: &Path, bytes: &[u8]) -> bool {
    use std::io::Read;
    if !std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64) {
        return false;
    }
    let Ok(mut f) = gauntlet_core::files::open(p, gauntlet_core::files::Kind::RESULTS) else {
        return false;
    };
    let mut buf = [0u8; 8192];
    let mut rest = bytes;
    loop {
        match f.read(&mut buf) {
            Ok(0) => return rest.is_empty(),
            Ok(n) if n <= rest.len() && buf[..n] == rest[..n] => rest = &rest[n..],
            Ok(_) => return false,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// Removes `d` and what it holds; nothing to remove is not an error.
fn remove_dir_if_any(d: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(d) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(std::io::Error::new(
            e.kind(),
            format!("cannot remove {}: {e}", d.display()),
        )),
        _ => Ok(()),
    }
}

pub(super) fn mkdir(d: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(d).map_err(|e| io_named(d, e))
}

fn json(p: &Path, v: &dyn erased::Ser) -> std::io::Result<Vec<u8>> {
    let mut b = v.to_json().map_err(|e| io_named(p, e))?;
    b.push(b'\n');
    Ok(b)
}

/// Pretty JSON and a newline, renamed into place unflushed.
pub(super) fn item(p: &Path, v: &dyn erased::Ser) -> std::io::Result<()> {
    gauntlet_core::atomic::write_atomic_unflushed_named(p, &json(p, v)?)
}

mod erased {
    pub(crate) trait Ser {
        fn to_json(&self) -> std::io::Result<Vec<u8>>;
    }
    impl<T: serde::Serialize> Ser for T {
        fn to_json(&self) -> std::io::Result<Vec<u8>> {
            serde_json::to_vec_pretty(self).map_err(std::io::Error::other)
        }
    }
}

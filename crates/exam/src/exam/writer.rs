//! Writing the artefacts, each atomically (`gauntlet_core::atomic`), report.json last;
//! scenario ids as file names; the leaderboard rows.

use super::render::{render_html, render_markdown};
use super::schema::{ExamOutput, HarnessReport};
use super::summary::median_n;
use crate::cascade::TranscriptEntry;
use crate::grade::{Interval, ScenarioResult};
use gauntlet_core::results::LeaderboardRow;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

// ---------------------------------------------------------------- artefacts

/// A scenario id as a file name, injectively: `[A-Za-z0-9._-]` are kept, every other
/// byte (and a leading `.`) is written `%XX`, so distinct ids never share a file
/// (`ZZ-a/b` → `ZZ-a%2Fb`, `ZZ-a_b` → `ZZ-a_b`, `ZZ-a?b` → `ZZ-a%3Fb`) and an id already
/// made of safe characters is its own name. A name that would exceed
/// [`MAX_STEM_BYTES`] keeps a prefix and ends in `~` and the id's full sha256 (`~`
/// never appears otherwise, so these cannot meet an escaped name).
pub fn file_stem(id: &str) -> String {
    let mut s = String::with_capacity(id.len());
    for (i, b) in id.bytes().enumerate() {
        let safe = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-') || (b == b'.' && i > 0);
        if safe {
            s.push(b as char);
        } else {
            let _ = write!(s, "%{b:02X}");
        }
    }
    if s.is_empty() {
        s.push('%');
    }
    if s.len() > MAX_STEM_BYTES {
        let digest = gauntlet_core::hash::sha256_hex(id.as_bytes());
        s.truncate(MAX_STEM_BYTES - 65);
        s.push('~');
        s.push_str(&digest);
    }
    s
}

/// The longest file stem [`file_stem`] produces (file names stay under 255 bytes with
/// the `.transcript.json` suffix).
pub const MAX_STEM_BYTES: usize = 200;

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
pub struct RunFiles {
    out: PathBuf,
    begun: bool,
    /// Per pass: its `run-<pass>` directory staged, and the files left in place.
    passes: Vec<PassFiles>,
    written: usize,
}

#[derive(Default)]
struct PassFiles {
    staged: bool,
    /// Whether `run-<pass>` is a real directory (never a link) that files may be left in;
    /// looked up at the pass's first file.
    placed_dir: Option<bool>,
    kept: std::collections::HashSet<String>,
}

/// Where [`RunFiles`] stages the scenario runs' files (inside the output directory, so
/// moving them into place is a rename).
pub const STAGING: &str = ".runs-partial";

impl RunFiles {
    /// Files under `out`; nothing is touched before the first [`RunFiles::write`].
    pub fn new(out: &Path) -> RunFiles {
        RunFiles {
            out: out.to_path_buf(),
            begun: false,
            passes: Vec::new(),
            written: 0,
        }
    }

    /// One graded scenario run of pass `pass`: its result and its transcript.
    pub fn write(
        &mut self,
        pass: usize,
        result: &ScenarioResult,
        transcript: &[TranscriptEntry],
    ) -> std::io::Result<()> {
        let staging = self.out.join(STAGING);
        if !self.begun {
            remove_dir_if_any(&staging)?;
            self.begun = true;
        }
        if self.passes.len() <= pass {
            self.passes.resize_with(pass + 1, PassFiles::default);
        }
        let placed = self.out.join(format!("run-{pass}"));
        let stem = file_stem(&result.scenario_id);
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
                p.kept.insert(name);
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
        self.written += 1;
        Ok(())
    }

    /// Where the result of pass `pass`'s scenario `id` is once [`RunFiles::commit`] has
    /// moved it into place.
    pub fn placed(&self, pass: usize, id: &str) -> PathBuf {
        self.out
            .join(format!("run-{pass}"))
            .join(format!("{}.json", file_stem(id)))
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
            if p.kept.is_empty() {
                if !p.staged || std::fs::symlink_metadata(&from).is_err() {
                    continue;
                }
                remove_dir_if_any(&to)?;
                std::fs::rename(&from, &to).map_err(|e| io_named(&to, e))?;
                continue;
            }
            let mut moved = std::collections::HashSet::new();
            if p.staged {
                for e in std::fs::read_dir(&from).map_err(|e| io_named(&from, e))? {
                    let name = e.map_err(|e| io_named(&from, e))?.file_name();
                    let dest = to.join(&name);
                    gauntlet_core::atomic::check_replaceable(&dest)?;
                    std::fs::rename(from.join(&name), &dest).map_err(|e| io_named(&dest, e))?;
                    moved.insert(name);
                }
            }
            for e in std::fs::read_dir(&to).map_err(|e| io_named(&to, e))? {
                let e = e.map_err(|e| io_named(&to, e))?;
                let name = e.file_name();
                let live =
                    moved.contains(&name) || name.to_str().is_some_and(|n| p.kept.contains(n));
                if !live {
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

/// Whether `p` is a regular file (never a link) holding exactly `bytes`.
fn holds(p: &Path, bytes: &[u8]) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64)
        && std::fs::read(p).is_ok_and(|b| b == bytes)
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

fn mkdir(d: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(d).map_err(|e| io_named(d, e))
}

fn json(p: &Path, v: &dyn erased::Ser) -> std::io::Result<Vec<u8>> {
    let mut b = v.to_json().map_err(|e| io_named(p, e))?;
    b.push(b'\n');
    Ok(b)
}

/// Pretty JSON and a newline, renamed into place unflushed.
fn item(p: &Path, v: &dyn erased::Ser) -> std::io::Result<()> {
    gauntlet_core::atomic::write_atomic_unflushed_named(p, &json(p, v)?)
}

/// Finishes an exam's artefacts under `out`: moves the scenario runs' files, staged by
/// [`RunFiles`] during the exam, into place (in the directory the exam was given, which
/// every caller also passes here), then writes the end-to-end pass's files,
/// `timings.json`, the rendered reports and `report.json` last, so a new `report.json`
/// means every file it indexes is new too. Returns the number of (agent-pass)
/// transcript files. Errors name the file. Everything but `timings.json` is a function
/// of the corpus, the backend's replies and the options: byte-identical across reruns
/// of a deterministic backend.
pub fn write_artifacts(out: &Path, o: &ExamOutput) -> std::io::Result<usize> {
    mkdir(out)?;
    if let Some(files) = &o.run_files {
        files.commit()?;
    }
    if let Some(e) = &o.e2e {
        let dir = out.join("e2e");
        mkdir(&dir)?;
        for (row, ts) in e.fidelity.rows.iter().zip(&e.transcripts) {
            let stem = file_stem(&row.id);
            item(&dir.join(format!("{stem}.json")), row)?;
            item(&dir.join(format!("{stem}.transcript.json")), ts)?;
        }
    }
    item(&out.join("timings.json"), &o.timings)?;
    write_report_files(out, &o.report)?;
    Ok(o.run_files.as_ref().map_or(0, RunFiles::written))
}

/// The files rendered from the report — report.md, report.html, leaderboard.json,
/// classifier.json — then report.json itself, last (a run's and a merge's).
pub fn write_report_files(out: &Path, report: &HarnessReport) -> std::io::Result<()> {
    let text =
        |p: &Path, s: String| gauntlet_core::atomic::write_atomic_unflushed_named(p, s.as_bytes());
    text(&out.join("report.md"), render_markdown(report))?;
    text(&out.join("report.html"), render_html(report))?;
    item(&out.join("leaderboard.json"), &leaderboard(out, report))?;
    item(&out.join("classifier.json"), &report.classifier)?;
    // Streamed: the scenario runs' steps are read back from their files one at a time
    // (`FullChain::InFile`), and the report's bytes are never all in memory.
    let p = out.join("report.json");
    gauntlet_core::atomic::write_atomic_with(&p, true, |w| {
        serde_json::to_writer_pretty(&mut *w, report).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })
    .map_err(|e| io_named(&p, e))
}

mod erased {
    pub trait Ser {
        fn to_json(&self) -> std::io::Result<Vec<u8>>;
    }
    impl<T: serde::Serialize> Ser for T {
        fn to_json(&self) -> std::io::Result<Vec<u8>> {
            serde_json::to_vec_pretty(self).map_err(std::io::Error::other)
        }
    }
}

/// Leaderboard rows (pass rate, recall, precision) with provenance; the corpus digest
/// is the dataset version.
pub fn leaderboard(out: &Path, r: &HarnessReport) -> Vec<LeaderboardRow> {
    let run_id = out
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "exam".into());
    let total = median_n(r.runs.iter().map(|x| x.graded)) as u64;
    let att = median_n(r.runs.iter().map(|x| x.attacks)) as u64;
    let ben = median_n(r.runs.iter().map(|x| x.benigns)) as u64;
    let row = |metric: &str, value: Option<f64>, ci: Option<Interval>, n: u64| LeaderboardRow {
        run_id: run_id.clone(),
        attack: "agent-exam".into(),
        target: r.backend.clone(),
        dataset: "exam-corpus".into(),
        dataset_version: r.corpus_sha256.clone(),
        judge: "chain_action".into(),
        metric: metric.into(),
        metric_params: serde_json::Map::new(),
        value,
        ci_low: ci.map(|c| c.low),
        ci_high: ci.map(|c| c.high),
        n,
        na_reason: r.na_reasons.get(metric).cloned(),
        ci_method: ci.map(|_| gauntlet_core::results::CiMethod::Wilson),
        corrected: None,
        undecided: 0,
        decided_share: None,
        excluded: 0,
        judge_measures:
            "the cascade's terminal action matched the scenario's expected chain_action".into(),
        attempts: r.model_calls as u64,
        errors: r.model_errors as u64,
        seed: 0,
        harness_version: r.harness_version.clone(),
        status: match &r.partial {
            Some(p) => format!("partial: {p} ({} mode)", r.mode),
            None => format!("complete ({} mode)", r.mode),
        },
        warnings: r.warnings.clone(),
    };
    // The golden backend is the merge gate: every reply scripted from the expected
    // outcome, so its 100% is a pipeline check, never an accuracy number. One row,
    // passed or failed, with no value and no interval, so no leaderboard ranks it.
    if r.backend.starts_with("golden") {
        let (passed, runs) = golden_check(r);
        let mut check = row(PIPELINE_CHECK, None, None, runs);
        check.na_reason = Some(pipeline_check_reason(passed, runs));
        return vec![check];
    }
    vec![
        row(
            "median_pass_rate",
            r.median_pass_rate,
            r.pass_rate_ci95,
            total,
        ),
        row(
            "median_recall_rate",
            r.median_recall_rate,
            r.recall_ci95,
            att,
        ),
        row(
            "median_precision_rate",
            r.median_precision_rate,
            r.precision_ci95,
            ben,
        ),
    ]
}

/// The metric of a golden-backend exam's one leaderboard row.
pub const PIPELINE_CHECK: &str = "pipeline_check";

/// (scenario runs that passed, all scenario runs) of an exam's passes.
pub fn golden_check(r: &HarnessReport) -> (u64, u64) {
    r.runs.iter().fold((0, 0), |(p, t), x| {
        let (passed, runs) = golden_counts(&x.results);
        (p + passed, t + runs)
    })
}

/// One pass's scenario runs that passed, and all of them. The pipeline check counts every
/// scenario, the ones a harness rule (the floor) decides included: the merge gate asks
/// that the whole pipeline gives the expected action, while `RunResult::passed` counts
/// the model's decisions only (for the rates).
pub fn golden_counts(results: &[crate::grade::ScenarioResult]) -> (u64, u64) {
    let passed = results.iter().filter(|s| s.pass).count();
    (passed as u64, results.len() as u64)
}

/// The pipeline check's verdict: `passed` only when every scenario run passed.
pub fn pipeline_check_reason(passed: u64, runs: u64) -> String {
    let verdict = if runs > 0 && passed == runs {
        "passed"
    } else {
        "failed"
    };
    format!(
        "{verdict}: {passed}/{runs} scenario runs passed on the golden backend (scripted replies); a pipeline check, not a score"
    )
}

/// The default output directory.
pub fn default_out_dir() -> PathBuf {
    PathBuf::from("exam-out")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn file_stems_of_ids_that_used_to_collide_differ() {
        assert_eq!(file_stem("ZZ-a_b"), "ZZ-a_b");
        assert_eq!(file_stem("ZZ-a/b"), "ZZ-a%2Fb");
        assert_eq!(file_stem("ZZ-a?b"), "ZZ-a%3Fb");
        assert_eq!(file_stem(".hidden"), "%2Ehidden");
        assert_eq!(file_stem("a%b"), "a%25b");
        assert_eq!(file_stem(""), "%");
        assert_eq!(file_stem("é"), "%C3%A9");
        let long = "x/".repeat(300);
        let s = file_stem(&long);
        assert!(s.len() <= MAX_STEM_BYTES && s.contains('~'), "{s}");
    }

    proptest! {
        /// Distinct ids never share a file name, and names are safe path components.
        #[test]
        fn file_stem_is_injective_and_safe(a in ".{0,300}", b in ".{0,300}") {
            let (sa, sb) = (file_stem(&a), file_stem(&b));
            prop_assert!(sa.len() <= MAX_STEM_BYTES);
            prop_assert!(!sa.starts_with('.'));
            prop_assert!(sa.bytes().all(|c| c.is_ascii_alphanumeric() || b"._-%~".contains(&c)));
            if a != b {
                prop_assert_ne!(sa, sb);
            }
        }
    }
}

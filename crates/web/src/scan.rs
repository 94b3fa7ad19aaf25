//! Finding and reading run directories: red-team runs (`run.json` + `leaderboard.json`),
//! agent-exam output directories (`report.json` with `runs`, `leaderboard.json`) and
//! detect-exam outputs (`report.json` written by `gauntlet exam-detect --json`).
//!
//! What a directory is, is the kind its `manifest.json` records (`gauntlet_job::kind`:
//! a run or a rescore is read as a red-team run, an agent exam or its shard as an agent
//! exam, a detect exam or its shard as a detect exam), whatever else its files would
//! suggest. A recorded kind its files contradict (its marker file missing) or one this
//! build does not know skips the directory with a warning naming it. A directory whose
//! manifest records no kind (an older gauntlet's, a session running, a report written
//! by hand) is told apart by its files: a `report.json` of mode `detect`, a
//! `report.json` with `runs`, else a red-team run.
//!
//! Everything read here is untrusted: runs may come from anyone. So:
//! - only files with fixed names are opened, each checked to be a regular file (a
//!   symlink is refused, so a run cannot point the dashboard at a file elsewhere) and
//!   below a size cap; a file that is missing, too big or malformed becomes a warning on
//!   the run (and the run is still listed when anything of it is readable), never a crash;
//! - the JSON is read leniently (fields may be missing or carry new fields), and what
//!   does not add up is flagged on the row as unverified: no provenance triple, a value
//!   or interval outside its metric's range, a value outside its own interval, a run id
//!   seen in another directory;
//! - no string read here ever becomes a path: runs are addressed by a slug the scan
//!   assigns.

use gauntlet_job::manifest::{self as dir_kind, KindError};
use gauntlet_redteam::metrics::Surface as MetricSurface;
use gauntlet_redteam::registry::metric_facts;
use gauntlet_results::detect::DetectReportRead;
use gauntlet_results::exam::ExamReportRead;
use gauntlet_results::{LeaderboardRow, RunRecord};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Largest `leaderboard.json`, `run.json` or `sessions.jsonl` read.
pub const MAX_SMALL_FILE: u64 = 16 << 20;
/// Largest `results.json` / `report.json` read (an exam report holds every pass).
pub const MAX_REPORT_FILE: u64 = 64 << 20;

/// The five leaderboards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Surface {
    Jailbreak,
    Injection,
    Leakage,
    AgentExam,
    DetectExam,
}

impl Surface {
    pub const ALL: [Surface; 5] = [
        Surface::Jailbreak,
        Surface::Injection,
        Surface::Leakage,
        Surface::AgentExam,
        Surface::DetectExam,
    ];
    pub fn key(self) -> &'static str {
        match self {
            Surface::Jailbreak => "jailbreak",
            Surface::Injection => "injection",
            Surface::Leakage => "leakage",
            Surface::AgentExam => "agent_exam",
            Surface::DetectExam => "detect_exam",
        }
    }
    pub fn title(self) -> &'static str {
        match self {
            Surface::Jailbreak => "Jailbreak",
            Surface::Injection => "Prompt injection",
            Surface::Leakage => "Data leakage",
            Surface::AgentExam => "Agent exam",
            Surface::DetectExam => "Detect exam",
        }
    }
    pub fn from_key(s: &str) -> Option<Surface> {
        Surface::ALL.into_iter().find(|x| x.key() == s)
    }
}

/// What kind of directory a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    RedTeam,
    AgentExam,
    DetectExam,
}

/// One leaderboard row, read leniently.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub target: String,
    pub attack: String,
    pub dataset: String,
    pub dataset_version: String,
    pub judge: String,
    /// The metric's name with its params, `asr_at_k (k=1)`.
    pub metric: String,
    /// The bare metric name (`asr_at_k`), for its range.
    pub metric_name: String,
    /// The params as canonical JSON (matching rows with a recount).
    pub metric_params: String,
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    pub n: Option<u64>,
    pub attempts: Option<u64>,
    pub errors: Option<u64>,
    /// Replies the judge left undecided, and the bounds of the value over every way they
    /// could fall (`bounds.low`, `bounds.high`): absent when none were undecided.
    pub undecided: Option<u64>,
    pub bounds: Option<(f64, f64)>,
    pub na_reason: Option<String>,
    pub status: String,
    /// Warnings the run wrote on the row (degenerate judge, undelivered injections, …):
    /// the `warnings` field, each element a string or an object with a `message`.
    pub warnings: Vec<String>,
    /// Why this row cannot be trusted as it stands (empty: nothing found wrong).
    pub problems: Vec<String>,
}

/// A run directory as the dashboard knows it.
#[derive(Debug)]
pub struct Run {
    /// URL-safe, unique among the runs served: how requests name the run.
    pub slug: String,
    pub dir: PathBuf,
    pub kind: Kind,
    pub surface: Surface,
    pub run_id: String,
    pub name: String,
    pub status: String,
    pub mode: String,
    /// Unix seconds the run started (sessions.jsonl) or was last written.
    pub date: Option<u64>,
    pub rows: Vec<Row>,
    /// Files skipped or damaged, shown on the run and the leaderboard.
    pub warnings: Vec<String>,
    /// Run-level reasons its rows are unverified (duplicate run id, …).
    pub problems: Vec<String>,
    /// A red-team session holds the directory's lock right now.
    pub live: bool,
    /// `units.planned` / `units.done` of run.json (red-team runs).
    pub units: Option<(u64, u64)>,
    pub has_transcripts: bool,
    /// An agent exam on the golden backend: the merge gate, a pipeline check and not a
    /// score. Shown as passed or failed beside the leaderboard, never ranked in it.
    pub pipeline_check: Option<PipelineCheck>,
}

/// The verdict of a golden-backend agent exam: every scenario run must pass (scripted
/// replies; a failure is a harness bug).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineCheck {
    pub passed: bool,
    /// Scenario runs that passed, of all scenario runs.
    pub runs_passed: u64,
    pub runs: u64,
}

impl PipelineCheck {
    /// From a golden exam's report.json: every scenario run of its passes, and those
    /// that passed (floor-decided ones included, as `exam::golden_counts` counts them).
    fn of(report: &ExamReportRead) -> Option<PipelineCheck> {
        let backend = report.backend.get()?;
        if !backend.starts_with("golden") {
            return None;
        }
        report.runs.get()?;
        let (mut runs_passed, mut runs) = (0u64, 0u64);
        for x in report.passes().flat_map(|p| p.results()) {
            runs += 1;
            runs_passed += u64::from(x.is_some_and(|x| x.passed()));
        }
        let partial = report.partial.is_some();
        Some(PipelineCheck {
            passed: runs > 0 && runs_passed == runs && !partial,
            runs_passed,
            runs,
        })
    }
}

/// Everything found under the roots.
#[derive(Debug, Default)]
pub struct Catalog {
    pub runs: Vec<Arc<Run>>,
    pub by_slug: HashMap<String, usize>,
    /// Directories skipped entirely, with why.
    pub warnings: Vec<String>,
}

impl Catalog {
    pub fn get(&self, slug: &str) -> Option<&Arc<Run>> {
        self.by_slug.get(slug).map(|i| &self.runs[*i])
    }
}

/// Why [`read_capped`] did not read a run's file; each message names the file (by its
/// name in the run directory) and says it was skipped.
#[derive(Debug, thiserror::Error)]
pub enum ReadCappedError {
    /// The file cannot be read.
    #[error("{name}: cannot read: {source}")]
    Io {
        name: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{name} is a symlink: skipped (the dashboard reads only files inside the run directory)"
    )]
    Symlink { name: String },
    #[error("{name} is not a regular file: skipped")]
    NotAFile { name: String },
    /// `len` bytes, over `cap`.
    #[error("{name} is {len} bytes, over the {} MiB limit: skipped", cap >> 20)]
    TooLarge { name: String, len: u64, cap: u64 },
    /// The file grew over `cap` while it was read (a live run).
    #[error("{name} grew over the {} MiB limit: skipped", cap >> 20)]
    Grew { name: String, cap: u64 },
}

/// Reads `dir/name` if it is a regular file (not a symlink) of at most `cap` bytes.
/// `Ok(None)`: no such file.
pub fn read_capped(dir: &Path, name: &str, cap: u64) -> Result<Option<Vec<u8>>, ReadCappedError> {
    let path = dir.join(name);
    let io = |source| ReadCappedError::Io {
        name: name.to_string(),
        source,
    };
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    if meta.file_type().is_symlink() {
        return Err(ReadCappedError::Symlink {
            name: name.to_string(),
        });
    }
    if !meta.is_file() {
        return Err(ReadCappedError::NotAFile {
            name: name.to_string(),
        });
    }
    if meta.len() > cap {
        return Err(ReadCappedError::TooLarge {
            name: name.to_string(),
            len: meta.len(),
            cap,
        });
    }
    // Opened without blocking and checked again on the open descriptor (the file may have
    // been replaced since the stat); it may grow while it is read (a live run): never
    // read past the cap.
    let f = gauntlet_core::files::open(&path, gauntlet_core::files::Kind::ANY_SIZE)
        .map_err(|e| io(e.into_io()))?;
    let mut buf = Vec::with_capacity(meta.len() as usize);
    f.take(cap + 1).read_to_end(&mut buf).map_err(io)?;
    if buf.len() as u64 > cap {
        return Err(ReadCappedError::Grew {
            name: name.to_string(),
            cap,
        });
    }
    Ok(Some(buf))
}

fn read_json(dir: &Path, name: &str, cap: u64, warnings: &mut Vec<String>) -> Option<Value> {
    match read_capped(dir, name, cap) {
        Ok(Some(b)) => match serde_json::from_slice::<Value>(&b) {
            Ok(v) => Some(v),
            Err(e) => {
                warnings.push(format!("{name} is not valid JSON ({e}): skipped"));
                None
            }
        },
        Ok(None) => None,
        Err(w) => {
            warnings.push(w.to_string());
            None
        }
    }
}

/// Reads `dir/name` as the schema's `T`: absent, unreadable or not of that schema is
/// `None`, with a warning naming the file and why.
fn read_typed<T: serde::de::DeserializeOwned>(
    dir: &Path,
    name: &str,
    cap: u64,
    warnings: &mut Vec<String>,
) -> Option<T> {
    match read_capped(dir, name, cap) {
        Ok(Some(b)) => parse_typed(name, &b, warnings),
        Ok(None) => None,
        Err(w) => {
            warnings.push(w.to_string());
            None
        }
    }
}

/// `b`, the bytes of file `name`, as the schema's `T`; `None` with a warning naming the
/// file and why when they are not.
fn parse_typed<T: serde::de::DeserializeOwned>(
    name: &str,
    b: &[u8],
    warnings: &mut Vec<String>,
) -> Option<T> {
    match serde_json::from_slice::<T>(b) {
        Ok(v) => Some(v),
        Err(e) if e.is_data() => {
            warnings.push(format!(
                "{name} does not hold what gauntlet writes ({e}): skipped"
            ));
            None
        }
        Err(e) => {
            warnings.push(format!("{name} is not valid JSON ({e}): skipped"));
            None
        }
    }
}

/// Is `dir/name` a regular file (not a symlink)?
pub fn regular_file(dir: &Path, name: &str) -> bool {
    fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.is_file())
}

/// The exams' leaderboard figures (not red-team metrics): rates in [0, 1].
const EXAM_RATES: &[&str] = &[
    "median_pass_rate",
    "median_recall_rate",
    "median_precision_rate",
    "recall",
    "precision",
];

/// The values metric `name` can take, when this build knows it: a red-team metric's
/// from its kind (rates and scores in [0, 1], usage at least 0), an exam's rate in
/// [0, 1].
pub fn metric_range(name: &str) -> Option<(f64, f64)> {
    gauntlet_redteam::registry::metric_range(name)
        .or_else(|| EXAM_RATES.contains(&name).then_some((0.0, 1.0)))
}

/// The surface a red-team metric alone measures, as the dashboard names it.
fn metric_surface(name: &str) -> Option<Surface> {
    match metric_facts(name)?.surface? {
        MetricSurface::Injection => Some(Surface::Injection),
        MetricSurface::Leakage => Some(Surface::Leakage),
        MetricSurface::Jailbreak => Some(Surface::Jailbreak),
    }
}

/// `metric (k=1, x=y)` from a name and its params, as the reports label it.
pub fn metric_label(name: &str, params: &serde_json::Map<String, Value>) -> String {
    if params.is_empty() {
        return name.to_owned();
    }
    let p: Vec<String> = params
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            v => format!("{k}={v}"),
        })
        .collect();
    format!("{name} ({})", p.join(", "))
}

/// One leaderboard row as the dashboard shows it, flagging what is missing or
/// impossible. The row was read as the schema's [`LeaderboardRow`], whose absent
/// fields read as empty: an empty provenance field is a problem of the row.
pub fn parse_row(r: &LeaderboardRow) -> Row {
    let mut problems = Vec::new();
    for (k, v) in [
        ("dataset_version", &r.dataset_version),
        ("judge", &r.judge),
        ("metric", &r.metric),
    ] {
        if v.is_empty() {
            problems.push(format!("no `{k}`: the provenance triple is incomplete"));
        }
    }
    let ci = r.ci_low.zip(r.ci_high);
    let bounds = r
        .bounds
        .map(|b| (b.low, b.high))
        .filter(|(lo, hi)| lo.is_finite() && hi.is_finite() && lo <= hi);
    // What the row says about itself must be possible: the engine's check, shared with
    // `gauntlet gate`.
    problems.extend(gauntlet_results::stated::stated_problems(
        metric_range(&r.metric),
        &gauntlet_results::stated::Stated {
            metric: r.metric.clone(),
            value: r.value,
            ci,
            attempts: Some(r.attempts),
            errors: Some(r.errors),
            ..Default::default()
        },
    ));
    Row {
        target: r.target.clone(),
        attack: r.attack.clone(),
        dataset: r.dataset.clone(),
        dataset_version: r.dataset_version.clone(),
        judge: r.judge.clone(),
        metric: metric_label(&r.metric, &r.metric_params),
        metric_params: gauntlet_results::stated::params_json(&r.metric_params),
        metric_name: r.metric.clone(),
        value: r.value,
        ci,
        n: Some(r.n),
        attempts: Some(r.attempts),
        errors: Some(r.errors),
        undecided: Some(r.undecided).filter(|u| *u > 0),
        bounds,
        na_reason: r.na_reason.clone(),
        status: r.status.clone(),
        warnings: r
            .warnings
            .iter()
            .take(50)
            .map(|w| {
                if w.message.starts_with(&w.kind) {
                    w.message.clone()
                } else {
                    format!("{}: {}", w.kind, w.message)
                }
            })
            .collect(),
        problems,
    }
}

/// The rows of a leaderboard.json, an array of [`LeaderboardRow`]s, each with its
/// `run_id`. An element that is not a row (not an object, a field of the wrong type) is
/// skipped with a warning naming the first such element and why; a file that is not an
/// array is skipped whole.
fn parse_leaderboard(v: &Value, warnings: &mut Vec<String>) -> Vec<(String, Row)> {
    let Some(a) = v.as_array() else {
        warnings.push("leaderboard.json is not a JSON array of rows: skipped".into());
        return Vec::new();
    };
    let mut rows = Vec::with_capacity(a.len());
    let mut bad: Vec<(usize, serde_json::Error)> = Vec::new();
    for (i, r) in a.iter().enumerate() {
        match LeaderboardRow::deserialize(r) {
            Ok(r) => rows.push((r.run_id.clone(), parse_row(&r))),
            Err(e) => bad.push((i, e)),
        }
    }
    if let Some((i, e)) = bad.first() {
        warnings.push(format!(
            "leaderboard.json: {} element(s) are not rows (element {i}: {e}): skipped",
            bad.len()
        ));
    }
    rows
}

fn mtime(dir: &Path, name: &str) -> Option<u64> {
    fs::symlink_metadata(dir.join(name))
        .ok()?
        .modified()
        .ok()?
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

/// Is a gauntlet session running in `dir` (its `.lock` is held)? Taking a shared lock
/// on a read-only handle changes nothing on disk.
pub fn is_live(dir: &Path) -> bool {
    gauntlet_job::rundir::in_progress(dir)
}

/// How [`read_run`] reads a directory.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReadAs {
    RedTeam,
    AgentExam,
    DetectExam,
}

/// Reads one directory as a run, or `None` when it holds nothing the dashboard knows.
/// A manifest recording a kind its files contradict, or one this build does not know,
/// is an error naming the directory (its kind is not guessed).
pub fn read_run(dir: &Path) -> Result<Option<Run>, KindError> {
    let mut warnings = Vec::new();
    let recorded = match dir_kind::recorded(dir) {
        Ok(k) => k,
        Err(e @ (KindError::Mismatch { .. } | KindError::Unknown { .. })) => return Err(e),
        // A manifest that cannot be read records nothing: the files tell the kind.
        Err(e) => {
            warnings.push(e.to_string());
            None
        }
    };
    // report.json is an agent exam's or a detect exam's: read once, then as the one or
    // the other (each read type tolerates a partial or hostile file).
    let report_bytes = match read_capped(dir, "report.json", MAX_REPORT_FILE) {
        Ok(b) => b,
        Err(w) => {
            warnings.push(w.to_string());
            None
        }
    };
    let report: Option<ExamReportRead> = report_bytes
        .as_deref()
        .and_then(|b| parse_typed("report.json", b, &mut warnings));
    let run_json: Option<RunRecord> = read_typed(dir, "run.json", MAX_SMALL_FILE, &mut warnings);
    let leaderboard = read_json(dir, "leaderboard.json", MAX_SMALL_FILE, &mut warnings);
    let has_transcripts = regular_file(dir, "transcripts.jsonl");
    let dir_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mode = report.as_ref().and_then(|r| r.mode.get().cloned());
    let read_as = match recorded {
        Some(dir_kind::Kind::Run | dir_kind::Kind::Rescore) => ReadAs::RedTeam,
        Some(dir_kind::Kind::Exam | dir_kind::Kind::ExamShard) => ReadAs::AgentExam,
        Some(dir_kind::Kind::DetectExam | dir_kind::Kind::DetectShard) => ReadAs::DetectExam,
        None if mode.as_deref() == Some("detect") => ReadAs::DetectExam,
        None if report.as_ref().is_some_and(|r| r.runs.get().is_some()) => ReadAs::AgentExam,
        None => ReadAs::RedTeam,
    };
    if read_as == ReadAs::DetectExam {
        let detect: Option<DetectReportRead> = report_bytes
            .as_deref()
            .filter(|_| report.is_some())
            .and_then(|b| parse_typed("report.json", b, &mut warnings));
        let rows = detect
            .as_ref()
            .map(|r| detect_rows(r, &mut warnings))
            .unwrap_or_default();
        return Ok(Some(Run {
            slug: String::new(),
            dir: dir.to_path_buf(),
            kind: Kind::DetectExam,
            surface: Surface::DetectExam,
            run_id: dir_name.clone(),
            name: dir_name,
            status: "complete".into(),
            mode: "detect".into(),
            date: mtime(dir, "report.json"),
            rows,
            warnings,
            problems: Vec::new(),
            live: false,
            units: None,
            has_transcripts: false,
            pipeline_check: None,
        }));
    }
    if read_as == ReadAs::AgentExam {
        let pipeline_check = report.as_ref().and_then(PipelineCheck::of);
        let board = leaderboard
            .as_ref()
            .map(|l| parse_leaderboard(l, &mut warnings))
            .unwrap_or_default();
        let run_id = board
            .first()
            .map(|(id, _)| id.clone())
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| dir_name.clone());
        let mut rows: Vec<Row> = board.into_iter().map(|(_, r)| r).collect();
        // A golden exam's rows, whatever its leaderboard.json says (an older one ranked
        // it by median_pass_rate): the one pipeline-check row, no value, no interval.
        if let Some(pc) = &pipeline_check {
            let mut row = rows.first().cloned().unwrap_or_default();
            row.metric = gauntlet_results::exam::PIPELINE_CHECK.into();
            row.metric_name = row.metric.clone();
            row.metric_params = "{}".into();
            row.value = None;
            row.ci = None;
            row.n = Some(pc.runs);
            row.na_reason = Some(gauntlet_results::exam::pipeline_check_reason(
                pc.runs_passed,
                pc.runs,
            ));
            rows = vec![row];
        }
        if leaderboard.is_none() {
            warnings.push("no leaderboard.json: the exam's rows are missing".into());
        }
        return Ok(Some(Run {
            slug: String::new(),
            dir: dir.to_path_buf(),
            kind: Kind::AgentExam,
            surface: Surface::AgentExam,
            run_id,
            name: dir_name,
            // The exam's own status: `partial: …` when report.json says so (the mode is
            // its own field).
            status: match report.as_ref().and_then(|r| r.partial.as_ref()) {
                Some(p) => format!("partial: {}", p.0),
                None if report.is_some() => "complete".into(),
                None => "unknown".into(),
            },
            mode: mode.unwrap_or_default(),
            date: mtime(dir, "report.json"),
            rows,
            warnings,
            problems: Vec::new(),
            live: false,
            units: None,
            has_transcripts: false,
            pipeline_check,
        }));
    }
    // Nothing readable and nothing damaged: not a run. (Files that were there but
    // unreadable still list the run, with its warnings.)
    if run_json.is_none() && leaderboard.is_none() && !has_transcripts && warnings.is_empty() {
        return Ok(None);
    }
    // A field the run.json lacks reads as empty ([`RunRecord`]): unknown here.
    let s =
        |f: fn(&RunRecord) -> &String| run_json.as_ref().map(f).filter(|v| !v.is_empty()).cloned();
    let board = leaderboard
        .as_ref()
        .map(|l| parse_leaderboard(l, &mut warnings))
        .unwrap_or_default();
    let live = is_live(dir);
    if leaderboard.is_none() && !live {
        warnings.push("no readable leaderboard.json".into());
    }
    let mode = s(|r| &r.mode).unwrap_or_default();
    let surface = match mode.as_str() {
        "injection" => Surface::Injection,
        "leakage" => Surface::Leakage,
        "jailbreak" => Surface::Jailbreak,
        _ => {
            // A leaderboard without run.json (redharness's own): infer from its metrics.
            let measures = |s: Surface| {
                board
                    .iter()
                    .any(|(_, r)| metric_surface(&r.metric_name) == Some(s))
            };
            if measures(Surface::Injection) {
                Surface::Injection
            } else if measures(Surface::Leakage) {
                Surface::Leakage
            } else {
                Surface::Jailbreak
            }
        }
    };
    let run_id = s(|r| &r.run_id)
        .or_else(|| {
            board
                .first()
                .map(|(id, _)| id.clone())
                .filter(|id| !id.is_empty())
        })
        .unwrap_or_else(|| dir_name.clone());
    let mut problems = Vec::new();
    if let Some((o, _)) = board.iter().find(|(id, _)| !id.is_empty() && *id != run_id) {
        problems.push(format!(
            "leaderboard.json has rows of run `{o}`, not only of `{run_id}`"
        ));
    }
    let mut rows: Vec<Row> = board.into_iter().map(|(_, r)| r).collect();
    if run_json.is_none() {
        problems.push("no run.json: the run's config and status are unknown".into());
    }
    for r in &mut rows {
        if r.status.is_empty() {
            r.status = s(|r| &r.status).unwrap_or_default();
        }
    }
    let units = run_json
        .as_ref()
        .map(|r| r.units)
        .filter(|u| u.planned > 0)
        .map(|u| (u.planned, u.done));
    let date = started(dir).or_else(|| mtime(dir, "run.json"));
    Ok(Some(Run {
        slug: String::new(),
        dir: dir.to_path_buf(),
        kind: Kind::RedTeam,
        surface,
        run_id,
        name: s(|r| &r.run_name).unwrap_or_else(|| dir_name.clone()),
        status: s(|r| &r.status).unwrap_or_else(|| "unknown".into()),
        mode,
        date,
        rows,
        warnings,
        problems,
        live,
        units,
        has_transcripts,
        pipeline_check: None,
    }))
}

/// `started_unix` of the first session in sessions.jsonl.
fn started(dir: &Path) -> Option<u64> {
    let b = read_capped(dir, "sessions.jsonl", MAX_SMALL_FILE).ok()??;
    let first = b.split(|c| *c == b'\n').next()?;
    serde_json::from_slice::<gauntlet_results::RunSession>(first)
        .ok()?
        .started_unix
}

/// Leaderboard rows of a detect-exam report: recall and precision overall, then per
/// detector family (the family is the row's target).
fn detect_rows(r: &DetectReportRead, warnings: &mut Vec<String>) -> Vec<Row> {
    let version = r.corpus_sha256.get().cloned().unwrap_or_default();
    let mut rows = Vec::new();
    let mut push = |target: &str,
                    metric: &str,
                    k: u64,
                    n: u64,
                    ci: Option<(f64, f64)>,
                    extra: Option<String>| {
        let value = (n > 0).then(|| k as f64 / n as f64);
        let ci = ci.or_else(|| gauntlet_core::stats::wilson(k, n, gauntlet_core::stats::Z95));
        let mut problems = Vec::new();
        if version.is_empty() {
            problems.push("no `corpus_sha256`: the provenance triple is incomplete".into());
        }
        if k > n {
            problems.push(format!("{k} of {n}: more hits than labels"));
        }
        problems.extend(extra);
        rows.push(Row {
            target: target.to_owned(),
            attack: "detect-exam".into(),
            dataset: "exam-corpus".into(),
            dataset_version: version.clone(),
            judge: "expected_detection".into(),
            metric: metric.to_owned(),
            metric_name: metric.to_owned(),
            metric_params: "{}".into(),
            value,
            ci: value.and(ci),
            n: Some(n),
            attempts: None,
            errors: None,
            undecided: None,
            bounds: None,
            na_reason: (n == 0).then(|| format!("no {metric} labels")),
            status: "complete".into(),
            warnings: Vec::new(),
            problems,
        });
    };
    for (metric, key, o) in [
        ("recall", "recall", r.recall.get()),
        ("precision", "precision", r.precision.get()),
    ] {
        let num = o.and_then(|x| x.numerator.0);
        let den = o.and_then(|x| x.denominator.0);
        let ci = o.and_then(|x| x.interval());
        match (num, den) {
            (Some(k), Some(n)) => {
                // The stated rate must be the fraction it claims to be.
                let bad_rate = o
                    .and_then(|x| x.rate.0)
                    .filter(|rate| n > 0 && (rate - k as f64 / n as f64).abs() > 1e-9);
                push(
                    "fleet",
                    metric,
                    k,
                    n,
                    ci,
                    bad_rate.map(|r| format!("stated rate {r} is not {k}/{n}")),
                );
            }
            _ => warnings.push(format!("report.json: no readable `{key}` block")),
        }
    }
    if let Some(cov) = r.coverage() {
        for c in &cov {
            let fam = c.family();
            let (att, ben, missed, fa) = (
                c.count("attack_labels"),
                c.count("benign_labels"),
                c.count("missed"),
                c.count("false_alarms"),
            );
            push(fam, "recall", att.saturating_sub(missed), att, None, None);
            push(fam, "precision", ben.saturating_sub(fa), ben, None, None);
        }
    }
    rows
}

/// A URL-safe slug from a directory name, made unique.
fn slug_for(name: &str, taken: &mut HashMap<String, usize>) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let base = if clean.is_empty() || clean.chars().all(|c| c == '_') {
        "run".to_owned()
    } else {
        clean
    };
    let n = taken.entry(base.clone()).or_insert(0);
    *n += 1;
    if *n == 1 { base } else { format!("{base}-{n}") }
}

/// How many of the other directories a duplicate run id's note names.
pub const DUPLICATES_NAMED: usize = 3;

/// Scans `roots`: each root is a run directory itself, or holds run directories (one
/// level down). Symlinked entries are skipped with a warning.
pub fn scan(roots: &[PathBuf]) -> Catalog {
    let mut cat = Catalog::default();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for root in roots {
        match fs::metadata(root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                cat.warnings
                    .push(format!("{}: not a directory: skipped", root.display()));
                continue;
            }
            Err(e) => {
                cat.warnings
                    .push(format!("{}: cannot read: {e}", root.display()));
                continue;
            }
        }
        if looks_like_run(root) {
            dirs.push(root.clone());
            continue;
        }
        let mut children: Vec<PathBuf> = match fs::read_dir(root) {
            Ok(rd) => rd
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let ft = e.file_type().ok()?;
                    if ft.is_symlink() {
                        cat.warnings.push(format!(
                            "{}: a symlink: skipped (the dashboard serves only directories inside its roots)",
                            e.path().display()
                        ));
                        None
                    } else if ft.is_dir() {
                        Some(e.path())
                    } else {
                        None
                    }
                })
                .collect(),
            Err(e) => {
                cat.warnings
                    .push(format!("{}: cannot list: {e}", root.display()));
                continue;
            }
        };
        children.sort();
        dirs.extend(children);
    }
    let mut taken = HashMap::new();
    let mut ids: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut runs: Vec<Run> = Vec::new();
    for d in dirs {
        let read = match read_run(&d) {
            Ok(r) => r,
            Err(e) => {
                cat.warnings.push(format!("{e}; skipped"));
                continue;
            }
        };
        if let Some(mut r) = read {
            let name = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            r.slug = slug_for(&name, &mut taken);
            ids.entry(r.run_id.clone()).or_default().push(runs.len());
            runs.push(r);
        }
    }
    // Each copy names a few of the others and counts the rest: the note is the same size
    // whatever the number of copies (naming every other copy made it, and the
    // dashboard's memory, grow with the square of their number: 3,000 copies, 2.6 GB).
    for (id, idx) in &ids {
        if idx.len() > 1 {
            for (k, i) in idx.iter().enumerate() {
                let others: Vec<&str> = idx
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != k)
                    .take(DUPLICATES_NAMED)
                    .map(|(_, o)| runs[*o].slug.as_str())
                    .collect();
                let rest = idx.len() - 1 - others.len();
                let mut note = format!("duplicate run id `{id}`: also in {}", others.join(", "));
                if rest > 0 {
                    note.push_str(&format!(" and {rest} more"));
                }
                runs[*i].problems.push(note);
            }
        }
    }
    for (i, r) in runs.into_iter().enumerate() {
        cat.by_slug.insert(r.slug.clone(), i);
        cat.runs.push(Arc::new(r));
    }
    cat
}

/// Whether a root is a run directory itself (rather than a directory of them): its
/// manifest records a kind (or one its files contradict, or one this build does not
/// know: it is then refused as a run, naming it), or it has one of the files a run has.
fn looks_like_run(d: &Path) -> bool {
    matches!(
        dir_kind::recorded(d),
        Ok(Some(_)) | Err(KindError::Mismatch { .. } | KindError::Unknown { .. })
    ) || [
        "run.json",
        "leaderboard.json",
        "report.json",
        "transcripts.jsonl",
    ]
    .iter()
    .any(|n| fs::symlink_metadata(d.join(n)).is_ok())
}

/// `YYYY-MM-DD HH:MM` (UTC) of a unix time.
pub fn fmt_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A leaderboard element read as the dashboard reads it: `None` when it is not a row.
    fn row(v: &Value) -> Option<Row> {
        LeaderboardRow::deserialize(v).ok().map(|r| parse_row(&r))
    }

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(fmt_date(0), "1970-01-01 00:00");
        assert_eq!(fmt_date(951_782_400), "2000-02-29 00:00");
        assert_eq!(fmt_date(1_796_068_660), "2026-11-30 19:57");
    }

    #[test]
    fn rows_without_provenance_or_out_of_range_are_flagged() {
        let r =
            row(&json!({"metric": "asr", "value": 1.5, "ci_low": 0.2, "ci_high": 0.4})).unwrap();
        assert!(
            r.problems.iter().any(|p| p.contains("dataset_version")),
            "{:?}",
            r.problems
        );
        assert!(r.problems.iter().any(|p| p.contains("judge")));
        assert!(r.problems.iter().any(|p| p.contains("outside asr's range")));
        assert!(
            r.problems
                .iter()
                .any(|p| p.contains("outside its own interval"))
        );
        let ok = row(
            &json!({"metric": "asr", "judge": "j", "dataset_version": "d@1",
            "value": 0.3, "ci_low": 0.2, "ci_high": 0.4, "n": 10, "attempts": 10, "errors": 0}),
        )
        .unwrap();
        assert!(ok.problems.is_empty(), "{:?}", ok.problems);
        let na = row(
            &json!({"metric": "frr", "judge": "j", "dataset_version": "d@1",
            "value": null, "na_reason": "no should_comply behaviors"}),
        )
        .unwrap();
        assert_eq!(na.value, None);
        assert!(na.problems.is_empty());
        let tokens = row(
            &json!({"metric": "token_usage", "judge": "j", "dataset_version": "d",
            "value": 12345.0}),
        )
        .unwrap();
        assert!(tokens.problems.is_empty());
        // A value of the wrong type is no row of the schema: skipped, with a warning
        // naming the element and the field.
        let not_a_row = json!({"metric": "asr", "judge": "j", "dataset_version": "d",
            "value": "0.5"});
        assert!(row(&not_a_row).is_none());
        let mut w = Vec::new();
        let rows = parse_leaderboard(&json!([not_a_row, {"metric": "frr"}]), &mut w);
        assert_eq!(rows.len(), 1);
        assert!(
            w.len() == 1 && w[0].contains("element 0") && w[0].contains("invalid type"),
            "{w:?}"
        );
        let bad = row(
            &json!({"metric": "asr", "judge": "j", "dataset_version": "d",
            "value": 0.5, "errors": 5, "attempts": 2}),
        )
        .unwrap();
        assert!(bad.problems.iter().any(|p| p.contains("5 errors")));
        assert!(row(&json!(3)).is_none());
    }

    /// Writes `dir`'s manifest recording `kind` (`None`: an older gauntlet's, without).
    fn record(dir: &Path, kind: Option<dir_kind::Kind>) {
        let mut m = gauntlet_job::rundir::Manifest::new(dir_kind::Kind::Run, "r", "complete");
        m.kind = kind;
        m.write(dir).unwrap();
    }

    #[test]
    fn the_recorded_kind_decides_how_a_directory_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let at = |n: &str| {
            let p = tmp.path().join(n);
            fs::create_dir_all(&p).unwrap();
            p
        };
        let detect_report = json!({"mode": "detect", "corpus_sha256": "abc",
            "recall": {"numerator": 1, "denominator": 1},
            "precision": {"numerator": 1, "denominator": 1}})
        .to_string();
        let exam_report = json!({"mode": "golden", "backend": "golden", "runs": []}).to_string();
        let lb = json!([{"run_id": "x", "metric": "median_pass_rate", "judge": "chain_action",
            "dataset_version": "abc", "value": 0.5}])
        .to_string();
        // Files that sniff as a detect exam, recorded as an agent exam: an agent exam.
        let a = at("a");
        fs::write(a.join("report.json"), &detect_report).unwrap();
        fs::write(a.join("leaderboard.json"), &lb).unwrap();
        record(&a, Some(dir_kind::Kind::Exam));
        // Files that sniff as an agent exam, recorded as a red-team run: a red-team run.
        let b = at("b");
        fs::write(b.join("report.json"), &exam_report).unwrap();
        fs::write(
            b.join("run.json"),
            json!({"run_id": "b-run", "mode": "jailbreak"}).to_string(),
        )
        .unwrap();
        record(&b, Some(dir_kind::Kind::Run));
        // The same files without a recorded kind (an older gauntlet's manifest): sniffed.
        let c = at("c");
        fs::write(c.join("report.json"), &detect_report).unwrap();
        record(&c, None);
        // Recorded as a detect exam without report.json: refused, naming it.
        let d = at("d");
        fs::write(d.join("run.json"), json!({"run_id": "d-run"}).to_string()).unwrap();
        record(&d, Some(dir_kind::Kind::DetectExam));
        // A kind this build does not know: refused too.
        let e = at("e");
        fs::write(e.join("run.json"), "{}").unwrap();
        fs::write(
            e.join("manifest.json"),
            r#"{"gauntlet_manifest": 2, "kind": "holodeck", "run_id": "e", "status": "complete", "files": {}}"#,
        )
        .unwrap();
        let cat = scan(&[tmp.path().to_path_buf()]);
        let kind_of = |slug: &str| cat.get(slug).map(|r| (r.kind, r.surface));
        assert_eq!(kind_of("a"), Some((Kind::AgentExam, Surface::AgentExam)));
        assert_eq!(kind_of("b"), Some((Kind::RedTeam, Surface::Jailbreak)));
        assert_eq!(cat.get("b").unwrap().run_id, "b-run");
        assert_eq!(kind_of("c"), Some((Kind::DetectExam, Surface::DetectExam)));
        assert!(cat.get("d").is_none() && cat.get("e").is_none());
        assert_eq!(cat.runs.len(), 3, "{:?}", cat.warnings);
        let warned = |dir: &Path, what: &str| {
            cat.warnings.iter().any(|w| {
                w.starts_with(&dir.display().to_string())
                    && w.contains(what)
                    && w.ends_with("; skipped")
            })
        };
        assert!(
            warned(
                &d,
                "records a detect exam's output (kind `detect-exam`), but it holds no report.json"
            ),
            "{:?}",
            cat.warnings
        );
        assert!(warned(&e, "records kind `holodeck`"), "{:?}", cat.warnings);
        assert!(matches!(read_run(&d), Err(KindError::Mismatch { .. })));
        // A root that is a recorded directory itself is read as one run.
        let alone = scan(std::slice::from_ref(&a));
        assert_eq!(alone.runs.len(), 1);
        assert_eq!(alone.runs[0].kind, Kind::AgentExam);
    }

    #[test]
    fn slugs_are_url_safe_and_unique() {
        let mut t = HashMap::new();
        assert_eq!(slug_for("smoke", &mut t), "smoke");
        assert_eq!(slug_for("smoke", &mut t), "smoke-2");
        assert_eq!(slug_for("../x y", &mut t), "___x_y");
        assert_eq!(slug_for("..", &mut t), "run");
    }

    proptest::proptest! {
        /// Any JSON at all is read without a panic.
        #[test]
        fn parse_row_never_panics(s in "\\PC{0,200}") {
            if let Ok(v) = serde_json::from_str::<Value>(&s) {
                let _ = row(&v);
                let mut w = Vec::new();
                let _ = parse_leaderboard(&v, &mut w);
            }
            if let Ok(r) = serde_json::from_str::<DetectReportRead>(&s) {
                let _ = detect_rows(&r, &mut Vec::new());
            }
        }

        #[test]
        fn leaderboard_rows_of_any_shape_never_panic(
            value in proptest::option::of(proptest::num::f64::ANY),
            lo in proptest::option::of(proptest::num::f64::ANY),
            hi in proptest::option::of(proptest::num::f64::ANY),
            metric in "(asr|cost|token_usage|\\PC{0,8})",
        ) {
            let v = json!({"metric": metric, "value": value, "ci_low": lo, "ci_high": hi,
                "judge": "j", "dataset_version": "d"});
            let _ = row(&v);
        }
    }
}

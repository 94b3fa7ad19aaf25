//! What a directory named as an output (`--out DIR`, `--site DIR`) already holds, and
//! the one check every command that writes into such a directory makes before it
//! writes anything: it never writes its artefacts over another command's.
//!
//! Why: `rescore RUN_A --out RUN_B` used to replace run B's results, leaderboard,
//! reports and manifest with run A's, exit 0, after which `report RUN_B` printed run A's
//! numbers under run B's run.json; `judge-eval`, `exam` and `report --site` wrote their
//! files into run directories the same way. Each command says which holdings it may
//! write into (nothing of gauntlet's, or an earlier output of the same command and, for
//! a rescore, of the same run and judge); anything else is refused, naming what the
//! directory holds.
//!
//! The kind of a directory is the one its manifest records ([`crate::kind`]), checked
//! against the kind's marker file; a recorded kind the files contradict is an error
//! naming the directory, never a guess. A directory whose manifest records no kind
//! (written by a gauntlet before kinds were recorded, or mid-session, or never given a
//! manifest: judge evaluations and sites) is told apart by the files that mark it, each
//! read capped and only if it is a regular file: `run.json` (a red-team run, merged or
//! sharded), `rescore.json` (a rescore), `judge_eval.json`, `shard.json` /
//! `detect_shard.json` (an exam shard), `report.json` (an agent exam, or a detect exam
//! when its mode says so), and `index.html` with `leaderboard-jailbreak.html` (a static
//! site).

use crate::kind::Kind;
use crate::manifest::KindError;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What a directory holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Holding {
    /// Nothing gauntlet wrote (absent, empty, or other files only).
    Nothing,
    /// A red-team run (`run.json`): a run, a merged run or a run's shard.
    Run { run_id: String },
    /// A rescore (`rescore.json`) of run `run_id` with `judge` (its spec's JSON).
    Rescore {
        run_id: String,
        judge: serde_json::Value,
    },
    /// An agent exam's output (`report.json` with passes).
    Exam,
    /// An agent-exam shard (`shard.json`).
    ExamShard,
    /// A detect-exam shard (`detect_shard.json`).
    DetectShard,
    /// A detect exam's output (`report.json` of mode `detect`).
    DetectExam,
    /// A judge evaluation (`judge_eval.json`).
    JudgeEval,
    /// A static site (`report --site`).
    Site,
}

impl Holding {
    /// How a message names it.
    pub fn describe(&self) -> String {
        match self {
            Holding::Nothing => "nothing of gauntlet's".into(),
            Holding::Run { run_id } => {
                format!("a red-team run ({})", gauntlet_core::terminal::safe(run_id))
            }
            Holding::Rescore { run_id, judge } => format!(
                "a rescore of run {} with judge {}",
                gauntlet_core::terminal::safe(run_id),
                gauntlet_core::terminal::safe(&judge.to_string())
            ),
            Holding::Exam => "an agent exam's output (report.json)".into(),
            Holding::ExamShard => "an exam shard (shard.json)".into(),
            Holding::DetectShard => "a detect-exam shard (detect_shard.json)".into(),
            Holding::DetectExam => "a detect exam's output (report.json)".into(),
            Holding::JudgeEval => "a judge evaluation (judge_eval.json)".into(),
            Holding::Site => "a static site (report --site)".into(),
        }
    }
}

/// The most read of a marker file: its identity is near the start.
const MARKER_CAP: u64 = 1 << 20;

/// The start of `dir/name` (at most `cap` bytes) when it is a regular file.
fn head(dir: &Path, name: &str, cap: u64) -> Option<Vec<u8>> {
    let p = dir.join(name);
    let m = fs::symlink_metadata(&p).ok()?;
    if !m.is_file() {
        return None;
    }
    let mut out = Vec::new();
    gauntlet_core::files::open(&p, gauntlet_core::files::Kind::ANY_SIZE)
        .ok()?
        .take(cap)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

fn json_of<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> Option<T> {
    serde_json::from_slice(&head(dir, name, MARKER_CAP)?).ok()
}

fn present(dir: &Path, name: &str) -> bool {
    fs::symlink_metadata(dir.join(name)).is_ok()
}

/// What `dir` holds (`Nothing` when it does not exist or is not a directory): the kind
/// its manifest records, or, when it records none, what its files mark it as. A
/// recorded kind whose marker file is missing, or one this gauntlet does not know, is
/// an error naming the directory.
pub fn holding(dir: &Path) -> Result<Holding, KindError> {
    if !fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Ok(Holding::Nothing);
    }
    Ok(match crate::manifest::recorded(dir)? {
        Some(kind) => of_kind(dir, kind),
        None => sniffed(dir),
    })
}

/// The holding of a directory of recorded kind `kind` (its marker checked present).
fn of_kind(dir: &Path, kind: Kind) -> Holding {
    match kind {
        Kind::Run => run_of(dir),
        Kind::Rescore => rescore_of(dir),
        Kind::ExamShard => Holding::ExamShard,
        Kind::DetectShard => Holding::DetectShard,
        Kind::Exam => Holding::Exam,
        Kind::DetectExam => Holding::DetectExam,
    }
}

/// A red-team run, named by its run.json.
fn run_of(dir: &Path) -> Holding {
    let run_id = json_of::<gauntlet_results::RunRecord>(dir, "run.json")
        .map(|r| r.run_id)
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| "unreadable run.json".into());
    Holding::Run { run_id }
}

/// A rescore, with the run and judge its rescore.json names.
fn rescore_of(dir: &Path) -> Holding {
    let r: gauntlet_results::RescoreRecord = json_of(dir, "rescore.json").unwrap_or_default();
    Holding::Rescore {
        run_id: Some(r.run_id)
            .filter(|id| !id.is_empty())
            .unwrap_or_else(|| "unreadable rescore.json".into()),
        judge: r.judge,
    }
}

/// What the files of a directory without a recorded kind mark it as (an older
/// gauntlet's directories, and the outputs that carry no manifest).
fn sniffed(dir: &Path) -> Holding {
    if present(dir, "run.json") {
        return run_of(dir);
    }
    if present(dir, "rescore.json") {
        return rescore_of(dir);
    }
    if present(dir, "judge_eval.json") {
        return Holding::JudgeEval;
    }
    if present(dir, "shard.json") {
        return Holding::ExamShard;
    }
    if present(dir, "detect_shard.json") {
        return Holding::DetectShard;
    }
    if present(dir, "report.json") {
        // The mode is the report's first key; 4 KiB is plenty to find it.
        let start = head(dir, "report.json", 4096).unwrap_or_default();
        let text = String::from_utf8_lossy(&start);
        let detect = text.contains("\"mode\": \"detect\"") || text.contains("\"mode\":\"detect\"");
        return if detect {
            Holding::DetectExam
        } else {
            Holding::Exam
        };
    }
    if present(dir, "index.html") && present(dir, "leaderboard-jailbreak.html") {
        return Holding::Site;
    }
    Holding::Nothing
}

/// An output directory that holds another command's output: [`refuse_other`]'s error.
/// The message says what the directory holds and what to give instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{flag} {} holds {}: `gauntlet {command}` would overwrite its files; {hint}",
    gauntlet_core::terminal::safe(&dir.display().to_string()),
    holding.describe()
)]
pub struct OccupiedError {
    /// The directory refused.
    pub dir: PathBuf,
    /// The flag that named it (`--out`, `--site`).
    pub flag: String,
    /// The command that would have written into it (`judge-eval`, `report --site`).
    pub command: String,
    /// What to give instead.
    pub hint: String,
    /// What the directory holds.
    pub holding: Box<Holding>,
}

/// Why [`refuse_other`] refused an output directory.
#[derive(Debug, thiserror::Error)]
pub enum RefuseError {
    /// It holds another command's output.
    #[error(transparent)]
    Occupied(#[from] OccupiedError),
    /// It holds files, none of them gauntlet's.
    #[error(transparent)]
    Foreign(ForeignError),
    /// What it holds cannot be told: its manifest records a kind its files contradict,
    /// or one this gauntlet does not know, or cannot be read.
    #[error(transparent)]
    Kind(#[from] KindError),
}

/// Refuses to let `gauntlet COMMAND` write into `dir` (named by `flag`, e.g. `--out`)
/// unless what it holds is nothing of gauntlet's or passes `may_replace`. The message
/// says what the directory holds; `hint` says what to give instead.
pub fn refuse_other(
    dir: &Path,
    flag: &str,
    command: &str,
    hint: &str,
    may_replace: impl Fn(&Holding) -> bool,
) -> Result<(), RefuseError> {
    let h = holding(dir)?;
    if h == Holding::Nothing || may_replace(&h) {
        return Ok(());
    }
    Err(OccupiedError {
        dir: dir.to_path_buf(),
        flag: flag.to_string(),
        command: command.to_string(),
        hint: hint.to_string(),
        holding: Box::new(h),
    }
    .into())
}

/// An output directory that holds files, none of them gauntlet's: [`refuse_foreign`]'s
/// error, naming a few of them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{flag} {} is not empty and holds nothing of gauntlet's ({}{}): `gauntlet {command}` writes report.md, report.html, results.json and more there and would overwrite files of the same names; give an empty or new directory, or remove what is in it",
    gauntlet_core::terminal::safe(&dir.display().to_string()),
    names.iter().map(|n| gauntlet_core::terminal::safe(n).into_owned()).collect::<Vec<_>>().join(", "),
    if *more > 0 { format!(" and {more} more") } else { String::new() }
)]
pub struct ForeignError {
    pub dir: PathBuf,
    pub flag: String,
    pub command: String,
    /// The first few entries, by name.
    pub names: Vec<String>,
    /// How many other entries there are.
    pub more: usize,
}

/// Refuses an output directory that holds nothing of gauntlet's but is not empty (a
/// user's `docs/`, whose `report.md` a rescore would overwrite), for a command whose
/// output has no place among other files. [`refuse_other`] decides about directories
/// that hold gauntlet output; this is for the rest.
pub fn refuse_foreign(dir: &Path, flag: &str, command: &str) -> Result<(), RefuseError> {
    if holding(dir)? != Holding::Nothing {
        return Ok(());
    }
    let Ok(rd) = fs::read_dir(dir) else {
        // Absent (or not a directory: the write says so).
        return Ok(());
    };
    let mut names: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    names.sort();
    let more = names.len().saturating_sub(3);
    names.truncate(3);
    Err(RefuseError::Foreign(ForeignError {
        dir: dir.to_path_buf(),
        flag: flag.to_string(),
        command: command.to_string(),
        names,
        more,
    }))
}

/// A directory given where a red-team run directory is read (`gauntlet gate`, `report
/// --format`) that is not one: [`require_run`]'s error, saying what it is instead.
#[derive(Debug, thiserror::Error)]
pub enum NotARun {
    #[error(
        "{}: no such directory; `gauntlet {command}` reads a red-team run directory (runs/<run_name>, the one holding run.json)",
        gauntlet_core::terminal::safe(&dir.display().to_string())
    )]
    Missing { dir: PathBuf, command: String },
    #[error(
        "{} holds {}, not a red-team run (it has no run.json): `gauntlet {command}` reads a run directory; {}",
        gauntlet_core::terminal::safe(&dir.display().to_string()),
        holding.describe(),
        not_a_run_hint(holding)
    )]
    Other {
        dir: PathBuf,
        command: String,
        holding: Box<Holding>,
    },
    /// What the directory holds cannot be told.
    #[error(transparent)]
    Kind(#[from] KindError),
}

/// What to give instead of a directory that holds `h`.
fn not_a_run_hint(h: &Holding) -> &'static str {
    match h {
        Holding::Nothing | Holding::Run { .. } => {
            "is it the run's own directory (runs/<run_name>, the one holding run.json)?"
        }
        Holding::Rescore { .. } => {
            "a rescore written by an older gauntlet holds no transcripts its numbers could be checked against: rescore the run again (a rescore is now a run directory), or read its leaderboard.json and report.md"
        }
        Holding::Exam | Holding::ExamShard => {
            "an agent exam's results are its report.json and report.md (`gauntlet serve` shows them)"
        }
        Holding::DetectExam | Holding::DetectShard => {
            "a detect exam's results are its report.json and report.txt"
        }
        Holding::JudgeEval => "a judge evaluation's results are its judge_eval.json and report.md",
        Holding::Site => {
            "a static site shows runs: give one of the run directories it was made from"
        }
    }
}

/// Refuses `dir` for `gauntlet COMMAND`, which reads a red-team run, unless it holds a
/// `run.json`; the error says what the directory holds instead (a rescore, an exam, …).
/// The run itself is checked by the caller (its manifest, its status).
pub fn require_run(dir: &Path, command: &str) -> Result<(), NotARun> {
    if fs::symlink_metadata(dir.join("run.json")).is_ok() {
        return Ok(());
    }
    if !fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Err(NotARun::Missing {
            dir: dir.to_path_buf(),
            command: command.to_string(),
        });
    }
    Err(NotARun::Other {
        dir: dir.to_path_buf(),
        command: command.to_string(),
        holding: Box::new(holding(dir)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Manifest;

    #[test]
    fn each_kind_is_recognised_and_others_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let at = |n: &str| {
            let p = d.path().join(n);
            fs::create_dir_all(&p).unwrap();
            p
        };
        let run = at("run");
        fs::write(run.join("run.json"), r#"{"run_id": "smoke-1"}"#).unwrap();
        let rescore = at("rescore");
        fs::write(
            rescore.join("rescore.json"),
            r#"{"run_id": "smoke-1", "judge": {"name": "refusal_match"}}"#,
        )
        .unwrap();
        let exam = at("exam");
        fs::write(exam.join("report.json"), "{\n  \"mode\": \"golden\"}").unwrap();
        let detect = at("detect");
        fs::write(detect.join("report.json"), "{\n  \"mode\": \"detect\"}").unwrap();
        let shard = at("shard");
        fs::write(shard.join("shard.json"), "{}").unwrap();
        fs::write(shard.join("report.json"), "{}").unwrap();
        let dshard = at("dshard");
        fs::write(dshard.join("detect_shard.json"), "{}").unwrap();
        let je = at("je");
        fs::write(je.join("judge_eval.json"), "{}").unwrap();
        let site = at("site");
        fs::write(site.join("index.html"), "").unwrap();
        fs::write(site.join("leaderboard-jailbreak.html"), "").unwrap();
        let other = at("other");
        fs::write(other.join("notes.txt"), "").unwrap();
        let h = |d: &Path| holding(d).unwrap();
        assert_eq!(
            h(&run),
            Holding::Run {
                run_id: "smoke-1".into()
            }
        );
        assert!(matches!(h(&rescore), Holding::Rescore { .. }));
        assert_eq!(h(&exam), Holding::Exam);
        assert_eq!(h(&detect), Holding::DetectExam);
        assert_eq!(h(&shard), Holding::ExamShard);
        assert_eq!(h(&dshard), Holding::DetectShard);
        assert_eq!(h(&je), Holding::JudgeEval);
        assert_eq!(h(&site), Holding::Site);
        assert_eq!(h(&other), Holding::Nothing);
        assert_eq!(h(&d.path().join("absent")), Holding::Nothing);
        let je_ok = |h: &Holding| *h == Holding::JudgeEval;
        let e = refuse_other(&run, "--out", "judge-eval", "give another", je_ok).unwrap_err();
        assert!(matches!(e, RefuseError::Occupied(_)), "{e:?}");
        let e = e.to_string();
        assert!(
            e.contains("a red-team run (smoke-1)") && e.contains("`gauntlet judge-eval`"),
            "{e}"
        );
        refuse_other(&je, "--out", "judge-eval", "", je_ok).unwrap();
        refuse_other(&other, "--out", "judge-eval", "", |_| false).unwrap();
        // A directory of other files is refused where no other files belong; an empty
        // or absent one, or one of gauntlet's, is not.
        let e = refuse_foreign(&other, "--out", "rescore")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("notes.txt") && e.contains("`gauntlet rescore`"),
            "{e}"
        );
        let empty = at("empty");
        refuse_foreign(&empty, "--out", "rescore").unwrap();
        refuse_foreign(&d.path().join("absent"), "--out", "rescore").unwrap();
        refuse_foreign(&rescore, "--out", "rescore").unwrap();
        // Where a run is read, anything else is named for what it is.
        require_run(&run, "gate").unwrap();
        for (dir, what) in [
            (&rescore, "holds a rescore of run smoke-1"),
            (&exam, "holds an agent exam's output"),
            (&detect, "holds a detect exam's output"),
            (&je, "holds a judge evaluation"),
            (&site, "holds a static site"),
            (&other, "holds nothing of gauntlet's"),
            (&d.path().join("absent"), "no such directory"),
        ] {
            let e = require_run(dir, "gate").unwrap_err().to_string();
            assert!(e.contains(what) && e.contains("`gauntlet gate`"), "{e}");
        }
    }

    /// Writes `dir`'s manifest recording `kind`.
    fn record(dir: &Path, kind: Kind) {
        Manifest::new(kind, "r", "complete").write(dir).unwrap();
    }

    #[test]
    fn a_recorded_kind_decides_over_the_files() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        // Files that sniff as a detect exam (report.json of mode detect) beside a
        // stray run.json, which would sniff as a red-team run first.
        fs::write(dir.join("report.json"), "{\"mode\": \"detect\"}").unwrap();
        fs::write(dir.join("run.json"), r#"{"run_id": "stray"}"#).unwrap();
        assert_eq!(
            holding(dir).unwrap(),
            Holding::Run {
                run_id: "stray".into()
            }
        );
        record(dir, Kind::Exam);
        assert_eq!(holding(dir).unwrap(), Holding::Exam);
        record(dir, Kind::DetectExam);
        assert_eq!(holding(dir).unwrap(), Holding::DetectExam);
        record(dir, Kind::Run);
        assert_eq!(
            holding(dir).unwrap(),
            Holding::Run {
                run_id: "stray".into()
            }
        );
        // Recorded as a rescore, but no rescore.json: refused naming the directory.
        record(dir, Kind::Rescore);
        let e = holding(dir).unwrap_err();
        assert!(
            matches!(
                e,
                KindError::Mismatch {
                    kind: Kind::Rescore,
                    ..
                }
            ),
            "{e:?}"
        );
        fs::write(
            dir.join("rescore.json"),
            r#"{"run_id": "smoke-1", "judge": {"name": "j"}}"#,
        )
        .unwrap();
        assert!(
            matches!(holding(dir).unwrap(), Holding::Rescore { run_id, .. } if run_id == "smoke-1")
        );
        // Shards: recorded as an agent-exam shard without shard.json is refused; with
        // a detect shard's record and marker it is a detect shard.
        record(dir, Kind::ExamShard);
        assert!(matches!(
            holding(dir).unwrap_err(),
            KindError::Mismatch {
                kind: Kind::ExamShard,
                ..
            }
        ));
        fs::write(dir.join("detect_shard.json"), "{}").unwrap();
        record(dir, Kind::DetectShard);
        assert_eq!(holding(dir).unwrap(), Holding::DetectShard);
        // refuse_other passes the contradiction on, naming the directory.
        record(dir, Kind::ExamShard);
        let e = refuse_other(dir, "--out", "exam", "", |_| true).unwrap_err();
        assert!(
            matches!(e, RefuseError::Kind(KindError::Mismatch { .. })),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with(&format!(
                "{}: its manifest.json records an agent-exam shard (kind `exam-shard`), but it holds no shard.json",
                dir.display()
            )),
            "{e}"
        );
        // A manifest without a kind (an older gauntlet's): the files decide, as before.
        let mut old = Manifest::new(Kind::Exam, "r", "complete");
        old.kind = None;
        old.write(dir).unwrap();
        assert!(matches!(holding(dir).unwrap(), Holding::Run { .. }));
    }
}

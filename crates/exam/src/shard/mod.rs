//! Shards of both exams: `gauntlet exam … --shard i/N` and `gauntlet exam-detect …
//! --shard i/N` each run one part of an exam into `<out>.shard-<i>-of-<N>`, and
//! `gauntlet merge` puts the N shard directories back into the directory the exam
//! writes on one machine, byte for byte.
//!
//! - [`partition`]: which scenario runs (agent exam) or scenario files (detect exam)
//!   each shard holds;
//! - [`agent`]: the agent exam's shard record (`shard.json`) and its merge;
//! - [`detect`]: the detect exam's shard record (`detect_shard.json`), its identity and
//!   its merge.
//!
//! A shard directory is the exam's own output directory over its part, plus its record
//! and a `manifest.json` (size and digest of every file, `gauntlet_job::manifest`),
//! both written last: a shard without them was interrupted. What every kind of shard
//! shares — `i/N`, checking that a set of directories is the N shards of one job,
//! opening a record behind its manifest, concatenating journals — is
//! `gauntlet_job::shard`, which the red-team run's shards (the engine's `shard.rs` and
//! `merge.rs`) use too.

use gauntlet_job::shard::{SetError, Shard};
use std::path::{Path, PathBuf};

pub mod agent;
pub mod detect;
pub mod partition;

pub use partition::{DETECT_PARTITION_SCHEME, PARTITION_SCHEME, assignment, detect_assignment};

/// A shard's output directory: `<out>.shard-<i>-of-<N>` beside `out` (`exam-out` when
/// `out` has no file name).
pub fn shard_out(out: &Path, s: Shard) -> PathBuf {
    let name = out
        .file_name()
        .map_or_else(|| "exam-out".into(), |n| n.to_string_lossy().into_owned());
    out.with_file_name(format!("{name}.shard-{}-of-{}", s.index, s.count))
}

/// Before a shard session changes anything: removes the manifest and the shard record
/// `record`, so the directory reads as unfinished until the session's `finish` writes
/// them again.
fn begin(out: &Path, record: &str) -> std::io::Result<()> {
    for f in [gauntlet_job::manifest::MANIFEST, record] {
        match std::fs::remove_file(out.join(f)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// An opened shard directory of either exam: where it is, which shard it is, its
/// record, and its report (`R`: the agent exam's or the detect exam's).
struct ShardDir<R> {
    dir: PathBuf,
    shard: Shard,
    meta: serde_json::Value,
    report: R,
}

/// Opens every directory with `open`, checks that they are the N shards of one job
/// ([`gauntlet_job::shard::check_set`] under `rules`), and returns them in shard order.
fn open_set<R>(
    dirs: &[PathBuf],
    open: impl Fn(&Path) -> Result<ShardDir<R>, MergeError>,
    rules: &gauntlet_job::shard::SetRules,
) -> Result<Vec<ShardDir<R>>, MergeError> {
    let mut shards = dirs
        .iter()
        .map(|d| open(d))
        .collect::<Result<Vec<_>, _>>()?;
    let members: Vec<gauntlet_job::shard::Member> = shards
        .iter()
        .map(|s| gauntlet_job::shard::Member {
            shard: s.shard,
            dir: &s.dir,
            meta: &s.meta,
        })
        .collect();
    gauntlet_job::shard::check_set(&members, rules, |_, _| String::new())?;
    shards.sort_by_key(|s| s.shard.index);
    Ok(shards)
}

/// Why shard directories could not be merged. Every message names the directory or
/// the file at fault and what to do (`gauntlet merge` exits 2 on any of them).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A directory is not a finished shard of this kind of exam: no record, a partial
    /// report, another partition scheme, an unreadable report, or a scenario run's
    /// file that is not the one the shard wrote.
    #[error(transparent)]
    Shard(#[from] ShardProblem),
    /// A shard's record or report could not be read: no whole manifest, unreadable or
    /// not JSON.
    #[error(transparent)]
    Record(#[from] gauntlet_job::shard::RecordError),
    /// The directories are not the N shards of one exam: one differs from the first,
    /// one is given twice, some are missing.
    #[error(transparent)]
    Set(#[from] SetError),
    /// The shards' records disagree on what they hold: a unit out of range, in two
    /// shards or in none, or a report that holds other units than its record lists.
    #[error(transparent)]
    Units(#[from] UnitsProblem),
    /// The scenario ids of the merged detect exam are not unique (the check a
    /// one-machine exam makes on its corpus).
    #[error(transparent)]
    Corpus(#[from] gauntlet_corpus::load::CorpusError),
    /// The shards' journals could not be put together.
    #[error(transparent)]
    Journal(#[from] gauntlet_job::shard::JournalError),
    /// A directory of the merged one could not be created.
    #[error("cannot create {}: {source}", .path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file of the merged directory could not be written (the error names it).
    #[error(transparent)]
    Write(std::io::Error),
}

/// What makes a directory not a finished shard ([`MergeError::Shard`]). Every variant
/// names the directory or file.
#[derive(Debug, thiserror::Error)]
pub enum ShardProblem {
    /// A detect-exam merge given a directory without a detect-exam shard record.
    #[error(
        "{} is not a detect-exam shard (no {}); merge the N shards of one `gauntlet exam-detect … --shard i/N` together, apart from run or agent-exam shards",
        .dir.display(),
        detect::SHARD_JSON
    )]
    NotDetectShard { dir: PathBuf },
    /// The agent exam's report.json is not a report.
    #[error("{}: not an exam report: {source}", .path.display())]
    NotAReport {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A field of the detect exam's report.json is not what the exam writes.
    #[error("{}: not a detect-exam report: `{key}`: {problem}", .path.display())]
    ReportField {
        path: PathBuf,
        key: &'static str,
        #[source]
        problem: FieldProblem,
    },
    /// The shard record's `groups` do not read.
    #[error("{}: `groups`: {source}", .path.display())]
    Groups {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The shard's report is partial (`partial`: why, as the report says).
    #[error(
        "exam shard {shard} in {} is incomplete (partial: {partial}); rerun its `gauntlet exam … --shard {shard}` to finish it, then merge",
        .dir.display()
    )]
    Incomplete {
        shard: Shard,
        dir: PathBuf,
        partial: String,
    },
    /// The shard was cut by another partition scheme (`found`, as its record has it)
    /// than the one this build merges (`want`).
    #[error("{}: cut by partition `{found}`; this gauntlet merges `{want}`", .dir.display())]
    Partition {
        dir: PathBuf,
        found: String,
        want: &'static str,
    },
    #[error("cannot read {}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A scenario run's file differs from what the shard record (`record`) lists.
    #[error(
        "{} is not the file the shard wrote ({} records another size or sha256): it was truncated, edited or replaced since; rerun the shard",
        .path.display(),
        .record.display()
    )]
    Altered { path: PathBuf, record: PathBuf },
}

/// Why a field of a detect-exam report does not read ([`ShardProblem::ReportField`]).
#[derive(Debug, thiserror::Error)]
pub enum FieldProblem {
    #[error("not a string")]
    NotAString,
    #[error("not a number")]
    NotANumber,
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// How the shards' records disagree on what they hold ([`MergeError::Units`]).
/// `path` is the record (or report) at fault.
#[derive(Debug, thiserror::Error)]
pub enum UnitsProblem {
    /// An agent-exam unit `[pass, index]` beyond the exam.
    #[error("{}: unit [{pass}, {index}] is out of range", .path.display())]
    RunOutOfRange {
        path: PathBuf,
        pass: u64,
        index: u64,
    },
    #[error(
        "{}: scenario run [{pass}, {index}] is in two shards (were they cut by different gauntlets?)",
        .path.display()
    )]
    RunTwice {
        path: PathBuf,
        pass: u64,
        index: u64,
    },
    #[error(
        "scenario run [{pass}, {index}] is in no shard (were they cut by different gauntlets?)"
    )]
    RunMissing { pass: usize, index: usize },
    /// A shard's report.json holds fewer scenario runs of a pass than its record lists.
    #[error(
        "{}: report.json holds fewer scenario runs of pass {pass} than its shard.json lists",
        .dir.display()
    )]
    FewerRuns { dir: PathBuf, pass: usize },
    /// A detect-exam unit (as the record has it) that is not one of the exam's files.
    #[error("{}: unit {unit} is out of range", .path.display())]
    FileOutOfRange {
        path: PathBuf,
        unit: serde_json::Value,
    },
    #[error(
        "{}: scenario file {unit} is in two shards (were they cut by different gauntlets?)",
        .path.display()
    )]
    FileTwice {
        path: PathBuf,
        unit: serde_json::Value,
    },
    /// A detect-exam report with another number of rows than its record lists files.
    #[error(
        "{}: holds {rows} row(s) but its {} lists {files} scenario file(s); rerun the shard",
        .path.display(),
        detect::SHARD_JSON
    )]
    RowCount {
        path: PathBuf,
        rows: usize,
        files: usize,
    },
    #[error("scenario file {unit} is in no shard (were they cut by different gauntlets?)")]
    FileMissing { unit: usize },
}

#[cfg(test)]
mod tests;

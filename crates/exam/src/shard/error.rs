//! Why shard directories of either exam could not be merged ([`MergeError`]), with
//! the problems it names: a shard that is not a finished one, fields two shards
//! disagree on, and units held twice or by none.

use gauntlet_job::shard::{SetError, Shard};
use std::path::PathBuf;

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
        super::record::DETECT
    )]
    NotDetectShard { dir: PathBuf },
    /// The agent exam's report.json is not a report.
    #[error("{}: not an exam report: {source}", .path.display())]
    NotAReport {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A scenario run's result file (checked against shard.json) is not a result.
    #[error("{}: not a scenario result: {source}", .path.display())]
    NotAResult {
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
        super::record::DETECT
    )]
    RowCount {
        path: PathBuf,
        rows: usize,
        files: usize,
    },
    #[error("scenario file {unit} is in no shard (were they cut by different gauntlets?)")]
    FileMissing { unit: usize },
}

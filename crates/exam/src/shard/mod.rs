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
    /// A directory is not a finished shard of this kind of exam: no record, no whole
    /// manifest (interrupted, cut short by its budget, changed since), a partial
    /// report, another partition scheme, an unreadable report, or a scenario run's
    /// file that is not the one the shard wrote.
    #[error("{0}")]
    Shard(String),
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
    #[error("{0}")]
    Units(String),
    /// The scenario ids of the merged detect exam are not unique (the check a
    /// one-machine exam makes on its corpus).
    #[error(transparent)]
    Corpus(#[from] gauntlet_corpus::load::CorpusError),
    /// The shards' journals could not be put together.
    #[error(transparent)]
    Journal(#[from] gauntlet_job::shard::JournalError),
    /// The merged directory could not be written.
    #[error("{0}")]
    Write(String),
}

#[cfg(test)]
mod tests;

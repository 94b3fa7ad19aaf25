//! The shard directories of either exam: where a shard writes (`shard_out`), how a
//! shard session begins (its manifest and record removed), and a set of shard
//! directories opened and checked to be the N shards of one job.

use super::error::MergeError;
use gauntlet_job::shard::Shard;
use std::path::{Path, PathBuf};

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
pub(super) fn begin(out: &Path, record: &str) -> std::io::Result<()> {
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
pub(super) struct ShardDir<R> {
    pub(super) dir: PathBuf,
    pub(super) shard: Shard,
    pub(super) meta: serde_json::Value,
    pub(super) report: R,
}

/// Opens every directory with `open`, checks that they are the N shards of one job
/// ([`gauntlet_job::shard::check_set`] under `rules`), and returns them in shard order.
pub(super) fn open_set<R>(
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

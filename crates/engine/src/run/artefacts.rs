//! A red-team run's artefacts, written the one way a session and a merge of shards
//! both finish: transcripts.jsonl (already in place, digested as it was written) is
//! recorded, then results.json, usage.json, the reports, a shard's shard_usage.json and
//! run.json are written and recorded. The caller adds what only it has (the labels, the
//! merged journal) and writes the manifest last, so a reader never takes a directory
//! being written for a finished one.

use super::run_json::pretty;
use super::status::Status;
use crate::rundir::{FileEntry, Manifest};
use crate::stored::StoredError;
use gauntlet_core::atomic::write_atomic;
use gauntlet_core::results::RunSummary;
use std::path::Path;

/// What a finished run (or merge) writes beside its transcripts.
pub(crate) struct RunArtefacts<'a> {
    pub(crate) run_id: &'a str,
    pub(crate) status: &'a Status,
    /// transcripts.jsonl's entry, from the writer that digested it.
    pub(crate) transcripts: FileEntry,
    pub(crate) summary: &'a RunSummary,
    pub(crate) usage: &'a [serde_json::Value],
    /// A shard's token usage per cell (`None` for a whole run).
    pub(crate) shard_usage: Option<serde_json::Value>,
    pub(crate) run_json: serde_json::Value,
}

/// Writes `a`'s files into `dir` and returns the manifest recording every one, to be
/// written last by the caller.
pub(crate) fn write_run_artefacts(
    dir: &Path,
    a: RunArtefacts<'_>,
) -> Result<Manifest, StoredError> {
    let mut manifest = Manifest::new(
        gauntlet_job::kind::Kind::Run,
        a.run_id,
        &a.status.as_string(),
    );
    manifest
        .files
        .insert("transcripts.jsonl".into(), a.transcripts);
    let mut write = |name: &str, bytes: Vec<u8>| {
        let path = dir.join(name);
        write_atomic(&path, &bytes).map_err(|source| StoredError::Write { path, source })?;
        manifest.files.insert(name.into(), FileEntry::of(&bytes));
        Ok::<(), StoredError>(())
    };
    write("results.json", pretty(a.summary))?;
    write("usage.json", pretty(&a.usage))?;
    gauntlet_report::write_reports(dir, a.summary).map_err(|source| StoredError::WriteReports {
        dir: dir.to_path_buf(),
        source,
    })?;
    if let Some(u) = a.shard_usage {
        write("shard_usage.json", pretty(&u))?;
    }
    write("run.json", pretty(&a.run_json))?;
    for name in [
        gauntlet_report::LEADERBOARD_FILE,
        gauntlet_report::MARKDOWN_FILE,
        gauntlet_report::HTML_FILE,
    ] {
        manifest
            .record_file(dir, name)
            .map_err(|source| StoredError::ReadBack {
                path: dir.join(name),
                source,
            })?;
    }
    Ok(manifest)
}

//! A red-team run's artefacts, written the one way a session and a merge of shards
//! both finish: transcripts.jsonl (already in place, digested as it was written) is
//! recorded, then results.json, usage.json, the reports, a shard's shard_usage.json and
//! run.json are written and recorded (`gauntlet_job::artefacts`). The caller adds what
//! only it has (the labels, the merged journal) and finishes: the manifest last, so a reader never takes a directory
//! being written for a finished one.

use super::run_json::pretty;
use super::status::Status;
use crate::stored::StoredError;
use gauntlet_job::artefacts::Artefacts;
use gauntlet_job::kind::Kind;
use gauntlet_job::rundir::FileEntry;
use gauntlet_results::RunSummary;
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
    pub(crate) run_json: gauntlet_results::RunRecord,
}

/// Writes `a`'s files into `dir` and returns them recorded, for the caller to add its
/// own and finish (the manifest last).
pub(crate) fn write_run_artefacts(
    dir: &Path,
    a: RunArtefacts<'_>,
) -> Result<Artefacts, StoredError> {
    let mut out = Artefacts::new(dir, Kind::Run, a.run_id, &a.status.as_string());
    out.insert("transcripts.jsonl", a.transcripts);
    out.write("results.json", &pretty(a.summary))?;
    out.write("usage.json", &pretty(&a.usage))?;
    gauntlet_report::write_reports(dir, a.summary).map_err(|source| StoredError::WriteReports {
        dir: dir.to_path_buf(),
        source,
    })?;
    if let Some(u) = a.shard_usage {
        out.write("shard_usage.json", &pretty(&u))?;
    }
    out.write("run.json", &pretty(&a.run_json))?;
    out.record([
        gauntlet_report::LEADERBOARD_FILE,
        gauntlet_report::MARKDOWN_FILE,
        gauntlet_report::HTML_FILE,
    ])?;
    Ok(out)
}

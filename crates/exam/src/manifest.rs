//! The manifest of a whole exam's output directory — `gauntlet exam --out DIR`,
//! `gauntlet exam-detect --out DIR` and `gauntlet merge` of either's shards — by the
//! protocol every artefact directory follows (`gauntlet_job::manifest`): [`begin`]
//! removes `manifest.json` before the session changes any artefact, and
//! [`finish_agent`] / [`finish_detect`] write it after the last one, recording the kind
//! ([`Kind::Exam`], [`Kind::DetectExam`]) and the size and digest of every artefact. A
//! shard directory has its own manifest instead (`crate::shard`).
//!
//! The agent exam's lists report.json, report.md, report.html, leaderboard.json,
//! classifier.json, each scenario run's `run-<pass>/<stem>.json` and `.transcript.json`,
//! the end-to-end pass's `e2e/<stem>.json` and `.transcript.json`, and exam.json when it
//! is this exam's identity (real mode: its sha256 is the report's
//! `exam_config_sha256`). Not timings.json (wall clock), journal.jsonl (appended in
//! completion order, the resume source), sessions.jsonl nor `.lock`, which vary by
//! session or outlive it, as a red-team run's journal and session log do; so the
//! manifest is byte-identical across reruns, and a merge's is the one-machine exam's.
//! The detect exam's lists report.json and report.txt. The files are read back one at a
//! time through one buffer: the entries are all the manifest keeps. The run id is the
//! exam's identity (the agent exam's `exam_config_sha256`, the detect exam's
//! `crate::shard::detect::identity`), which its shards' run ids extend with
//! `~shard-<i>-of-<N>`, as a red-team run's do; so a merge's manifest is the one-machine
//! exam's whatever the directories are called.

use crate::calls::EXAM_JSON;
use crate::e2e::DetectFidelity;
use crate::exam::E2eOutput;
use gauntlet_detect::report_text::{REPORT_JSON, REPORT_TXT};
use gauntlet_job::artefacts::Artefacts;
use gauntlet_job::manifest::{Kind, MANIFEST};
use gauntlet_results::exam::{HarnessReport, file_stem};
use std::io;
use std::path::Path;

/// Before a whole exam changes an artefact in `out`: without a manifest the directory
/// reads as unfinished until the finish writes it again. Nothing to remove is fine.
pub fn begin(out: &Path) -> io::Result<()> {
    match std::fs::remove_file(out.join(MANIFEST)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io::Error::new(
            e.kind(),
            format!("cannot remove {}: {e}", out.join(MANIFEST).display()),
        )),
        _ => Ok(()),
    }
}

/// The rendered files of an agent exam's report (`crate::exam::write_report_files`).
const AGENT_REPORTS: [&str; 5] = [
    "report.json",
    "report.md",
    "report.html",
    "leaderboard.json",
    "classifier.json",
];

/// After an agent exam's artefacts are written into `out` (`write_artifacts`, or a
/// merge): its manifest, last. `identity` is the exam's `exam_config_sha256`; `e2e` is
/// the end-to-end pass's output, when the exam ran one. The error names the file.
pub fn finish_agent(
    out: &Path,
    identity: &str,
    report: &HarnessReport,
    e2e: Option<&E2eOutput>,
) -> io::Result<()> {
    let status = match &report.partial {
        Some(p) => format!("partial: {p}"),
        None => "complete".into(),
    };
    let mut m = Artefacts::new(out, Kind::Exam, identity, &status);
    let mut names: Vec<String> = AGENT_REPORTS.iter().map(|s| s.to_string()).collect();
    if is_identity_of(out, report) {
        names.push(EXAM_JSON.into());
    }
    m.record(names)?;
    let pair = |dir: String, id: &str| {
        let stem = file_stem(id);
        [
            format!("{dir}/{stem}.json"),
            format!("{dir}/{stem}.transcript.json"),
        ]
    };
    if let Some(e) = e2e {
        m.record(e2e_files(&e.fidelity, e.transcripts.len(), pair))?;
    }
    // The scenario runs' files, named as the writer names them, hashed as the manifest
    // is written (in name order: the passes' directories as strings sort, each one's
    // names sorted), so no entry per scenario run is held.
    let mut runs: Vec<(String, &gauntlet_results::exam::RunResult)> = report
        .runs
        .iter()
        .map(|r| (format!("run-{}", r.index), r))
        .collect();
    runs.sort_by(|a, b| a.0.cmp(&b.0));
    m.finish_streaming(runs.into_iter().flat_map(|(dir, run)| {
        let mut names: Vec<String> = run
            .results
            .stems()
            .flat_map(|stem| {
                [
                    format!("{dir}/{stem}.json"),
                    format!("{dir}/{stem}.transcript.json"),
                ]
            })
            .collect();
        names.sort();
        names
    }))?;
    Ok(())
}

/// The end-to-end pass's files: one pair per row with a transcript, as the writer
/// writes them.
fn e2e_files(
    f: &DetectFidelity,
    transcripts: usize,
    pair: impl Fn(String, &str) -> [String; 2],
) -> impl Iterator<Item = String> {
    f.rows
        .iter()
        .take(transcripts)
        .flat_map(move |row| pair("e2e".into(), &row.id))
}

/// Whether `out/exam.json` is this exam's identity (real mode writes it; a golden exam
/// into the directory of an earlier real one leaves that one's in place).
fn is_identity_of(out: &Path, report: &HarnessReport) -> bool {
    let Some(want) = &report.exam_config_sha256 else {
        return false;
    };
    let p = out.join(EXAM_JSON);
    if !std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
        return false;
    }
    gauntlet_core::files::read(&p, gauntlet_core::files::Kind::CONFIG)
        .is_ok_and(|b| gauntlet_core::hash::sha256_hex(&b) == *want)
}

/// After a detect exam's report files are written into `out`: its manifest, last.
/// `identity` is the exam's (`crate::shard::detect::identity`).
pub fn finish_detect(out: &Path, identity: &str) -> io::Result<()> {
    let mut m = Artefacts::new(out, Kind::DetectExam, identity, "complete");
    m.record([REPORT_JSON, REPORT_TXT])?;
    m.finish()?;
    Ok(())
}

//! Writing the artefacts, each atomically (`gauntlet_core::atomic`), report.json last,
//! after the scenario runs' files ([`super::run_files`]) are put in place; the leaderboard rows.

use super::run_files::{RunFiles, io_named, item, mkdir};
use super::schema::{ExamOutput, PassTimings};
use super::summary::median_n;
use gauntlet_report::exam::{render_html, render_markdown};
use gauntlet_results::LeaderboardRow;
use gauntlet_results::exam::{
    HarnessReport, Interval, PIPELINE_CHECK, file_stem, golden_counts, pipeline_check_reason,
};
use std::path::{Path, PathBuf};

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
    // Streamed: a logged pass's wall times are read back a pass at a time.
    let p = out.join("timings.json");
    gauntlet_core::atomic::write_atomic_with(&p, false, |w| {
        serde_json::to_writer_pretty(&mut *w, &o.timings).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })
    .map_err(|e| io_named(&p, e))?;
    if let PassTimings::Logged(log) = &o.timings.passes {
        std::fs::remove_file(log).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot remove {}: {e}", log.display()))
        })?;
    }
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
    // Streamed: the scenario runs' results are read back from their files one at a time
    // (`Results::Written`), and the report's bytes are never all in memory.
    let p = out.join("report.json");
    gauntlet_core::atomic::write_atomic_with(&p, true, |w| {
        serde_json::to_writer_pretty(&mut *w, report).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })
    .map_err(|e| io_named(&p, e))
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
        ci_method: ci.map(|_| gauntlet_results::CiMethod::Wilson),
        corrected: None,
        undecided: 0,
        decided_share: None,
        excluded: 0,
        bounds: None,
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

/// (scenario runs that passed, all scenario runs) of an exam's passes.
pub(super) fn golden_check(r: &HarnessReport) -> (u64, u64) {
    r.runs.iter().fold((0, 0), |(p, t), x| {
        let (passed, runs) = golden_counts(&x.results);
        (p + passed, t + runs)
    })
}

/// The default output directory.
pub fn default_out_dir() -> PathBuf {
    PathBuf::from("exam-out")
}

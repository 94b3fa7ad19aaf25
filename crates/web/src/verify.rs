//! Checking a run's numbers against its own evidence ("gaming-aware": a leaderboard file
//! is a claim, the transcripts are the evidence).
//!
//! - Jailbreak and leakage runs are recounted through the [`Recount`] the dashboard was
//!   given (`gauntlet` hands it the engine's, the one `gauntlet gate` uses): the run's
//!   plan is rebuilt from run.json and every metric recomputed from the verdicts stored
//!   in transcripts.jsonl with the engine's own accumulation; each leaderboard row must
//!   match its recount (value, interval, n, attempts, errors). Token usage and cost are
//!   not in the transcripts and are marked not recounted.
//! - Injection runs cannot be read back by this build's engine yet: attempts and errors
//!   per cell are recounted from transcripts.jsonl; the values are marked not recounted.
//! - Agent exams: each pass's pass / recall / precision rate is recomputed from the
//!   per-scenario results in report.json with the exam's own grader code, and the median
//!   compared with the leaderboard.
//! - Detect exams are checked at read time (a rate must be the fraction it states).
//!
//! A run is never recounted when that would read outside its directory or touch the
//! network: a config naming a dataset file or URL, a price table or downloads is refused
//! (a run.json is untrusted and could point anywhere), as are symlinked files.
//! Recounting runs on a background thread, one run at a time; pages show "pending" until
//! a run's check is done.

use crate::scan::{Kind, Run, Surface};
use gauntlet_results::stated::{Recounted, Stated};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// The recount of a red-team run from its own transcripts. Rebuilding a run is the
/// engine's work, which the dashboard does not know: the command that starts it
/// (`gauntlet serve`, `export`, `label --serve`) hands it one.
pub trait Recount: Send + Sync {
    /// Reads the finished run in `dir` back (nothing outside it, no network: the
    /// dashboard has refused configs that would) and compares each of `rows` with its
    /// recount.
    fn recount(&self, dir: &Path, rows: &[Stated]) -> Result<Recounted, RecountError>;
}

/// Why a run was not recounted ([`Recount::recount`]); the cause is the recounter's.
#[derive(Debug, thiserror::Error)]
pub enum RecountError {
    /// The run cannot be read back (its config, its plugins, its files).
    #[error(transparent)]
    Open(Box<dyn std::error::Error + Send + Sync>),
    /// The run was read back; its transcripts cannot be recounted.
    #[error(transparent)]
    Transcripts(Box<dyn std::error::Error + Send + Sync>),
}

/// What is known about one row's numbers.
#[derive(Debug, Clone, PartialEq)]
pub enum RowCheck {
    /// The check has not run yet (or the run is still being written).
    Pending,
    /// The recount agrees.
    Verified,
    /// Nothing found wrong, but the values could not be recounted: why.
    NotRecounted(String),
    /// Something is wrong: what.
    Unverified(Vec<String>),
}

impl RowCheck {
    pub fn label(&self) -> &'static str {
        match self {
            RowCheck::Pending => "pending",
            RowCheck::Verified => "verified",
            RowCheck::NotRecounted(_) => "not recounted",
            RowCheck::Unverified(_) => "unverified",
        }
    }
    pub fn detail(&self) -> String {
        match self {
            RowCheck::Pending => "the recount from the run's transcripts has not finished".into(),
            RowCheck::Verified => "the recount from the run's own evidence agrees".into(),
            RowCheck::NotRecounted(w) => w.clone(),
            RowCheck::Unverified(p) => p.join("; "),
        }
    }
}

/// The result of checking one run: per-row findings (by row index) and notes on the run.
#[derive(Debug, Clone, Default)]
pub struct RunCheck {
    /// Problems found by the recount, per row index.
    pub rows: HashMap<usize, Vec<String>>,
    /// Rows the recount could not cover, with why (per row index).
    pub not_recounted: HashMap<usize, String>,
    /// When the whole run could not be recounted: why.
    pub whole_run: Option<String>,
    /// Problems with the run as a whole found by the recount.
    pub problems: Vec<String>,
}

/// The state of a row: its own problems, its run's, then the recount's.
pub fn row_state(run: &Run, i: usize, check: Option<&RunCheck>) -> RowCheck {
    let row = &run.rows[i];
    let mut problems: Vec<String> = run.problems.clone();
    problems.extend(row.problems.iter().cloned());
    let Some(c) = check else {
        return if problems.is_empty() {
            RowCheck::Pending
        } else {
            RowCheck::Unverified(problems)
        };
    };
    problems.extend(c.problems.iter().cloned());
    if let Some(p) = c.rows.get(&i) {
        problems.extend(p.iter().cloned());
    }
    if !problems.is_empty() {
        return RowCheck::Unverified(problems);
    }
    if let Some(w) = &c.whole_run {
        return RowCheck::NotRecounted(w.clone());
    }
    if let Some(w) = c.not_recounted.get(&i) {
        return RowCheck::NotRecounted(w.clone());
    }
    RowCheck::Verified
}

/// Why the config recorded in a run.json must not be rebuilt by the dashboard, if it
/// must not (see [`unsafe_config`]).
pub fn unsafe_config_reason(config: &Value) -> Option<String> {
    unsafe_config(config, "config")
}

/// Why a recorded config must not be rebuilt by the dashboard, if it must not: any key
/// that names a file, a URL or a download.
fn unsafe_config(v: &Value, path: &str) -> Option<String> {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                let here = format!("{path}.{k}");
                let risky = matches!(
                    k.as_str(),
                    "url" | "path" | "file" | "dir" | "price_table" | "base_url"
                ) && !x.is_null();
                if k == "allow_download" && x.as_bool() == Some(true) {
                    return Some(format!("`{here}` is true"));
                }
                if risky && k != "base_url" {
                    return Some(format!("`{here}` names a file or URL"));
                }
                if let Some(w) = unsafe_config(x, &here) {
                    return Some(w);
                }
            }
            None
        }
        Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| unsafe_config(x, &format!("{path}[{i}]"))),
        _ => None,
    }
}

fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        _ => false,
    }
}

fn fmt(v: Option<f64>) -> String {
    v.map_or("N/A".into(), |x| format!("{x}"))
}

/// Checks one run (blocking: reads its transcripts), a red-team run through `recount`.
pub fn check(run: &Run, recount: &dyn Recount) -> RunCheck {
    match run.kind {
        Kind::RedTeam if run.surface == Surface::Injection => check_counts_only(run),
        Kind::RedTeam => check_redteam(run, recount),
        Kind::AgentExam => check_exam(run),
        Kind::DetectExam => RunCheck {
            whole_run: Some(
                "a detect-exam report holds counts, not evidence: checked for consistency only"
                    .into(),
            ),
            ..Default::default()
        },
    }
}

/// Why a run's file is not one [`check`] reads.
#[derive(Debug, thiserror::Error)]
enum IrregularFile {
    #[error("{name} is not a regular file (a symlink?)")]
    NotAFile { name: String },
    #[error("{name}: {source}")]
    Io {
        name: String,
        #[source]
        source: std::io::Error,
    },
}

fn regular(dir: &Path, name: &str) -> Result<(), IrregularFile> {
    match std::fs::symlink_metadata(dir.join(name)) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(IrregularFile::NotAFile {
            name: name.to_string(),
        }),
        Err(source) => Err(IrregularFile::Io {
            name: name.to_string(),
            source,
        }),
    }
}

fn check_redteam(run: &Run, recount: &dyn Recount) -> RunCheck {
    let mut out = RunCheck::default();
    let refuse = |why: String| RunCheck {
        whole_run: Some(format!("not recounted: {why}")),
        ..Default::default()
    };
    for f in ["run.json", "transcripts.jsonl"] {
        if let Err(e) = regular(&run.dir, f) {
            return refuse(e.to_string());
        }
    }
    let Ok(Some(bytes)) =
        crate::scan::read_capped(&run.dir, "run.json", crate::scan::MAX_SMALL_FILE)
    else {
        return refuse("run.json is unreadable".into());
    };
    let Ok(rj) = serde_json::from_slice::<gauntlet_results::RunRecord>(&bytes) else {
        return refuse("run.json is not a gauntlet run.json".into());
    };
    if let Some(w) = unsafe_config(&rj.config, "config") {
        return refuse(format!(
            "{w}; rebuilding it would read outside the run directory or use the network, which the dashboard never does"
        ));
    }
    // The run's own manifest first: a file that differs from what the run wrote is
    // evidence against the run (unverified), not merely something not recounted. A
    // directory without one (a session running or killed, or an older gauntlet) is
    // only not recounted.
    if run.dir.join(gauntlet_job::rundir::MANIFEST).is_file()
        && let Err(e) = gauntlet_job::rundir::Manifest::verify(&run.dir)
    {
        out.problems.push(e.to_string());
        out.whole_run = Some("not recounted: its files differ from its manifest".into());
        return out;
    }
    // The engine's recount, shared with `gauntlet gate`.
    let stated: Vec<Stated> = run
        .rows
        .iter()
        .map(|row| Stated {
            attack: row.attack.clone(),
            target: row.target.clone(),
            dataset_version: row.dataset_version.clone(),
            judge: row.judge.clone(),
            metric: row.metric_name.clone(),
            metric_params: row.metric_params.clone(),
            value: row.value,
            ci: row.ci,
            n: row.n,
            attempts: row.attempts,
            errors: row.errors,
        })
        .collect();
    match recount.recount(&run.dir, &stated) {
        Ok(r) => {
            out.rows = r.rows;
            out.not_recounted = r.not_recounted;
            out.problems = r.problems;
        }
        Err(RecountError::Open(e)) => return refuse(e.to_string()),
        Err(RecountError::Transcripts(e)) => out
            .problems
            .push(format!("transcripts.jsonl cannot be recounted: {e}")),
    }
    out
}

/// Injection runs: attempts and errors per cell from the transcripts.
fn check_counts_only(run: &Run) -> RunCheck {
    let mut out = RunCheck::default();
    if let Err(e) = regular(&run.dir, "transcripts.jsonl") {
        out.whole_run = Some(format!("not recounted: {e}"));
        return out;
    }
    let path = run.dir.join("transcripts.jsonl");
    // Per (attack, target, dataset_version, judge): attempts, errors.
    let mut counts: HashMap<(String, String, String, String), (u64, u64)> = HashMap::new();
    let f = match gauntlet_core::files::open(&path, gauntlet_core::files::Kind::TRANSCRIPTS) {
        Ok(f) => f,
        Err(e) => {
            out.whole_run = Some(format!("not recounted: transcripts.jsonl: {}", e.into_io()));
            return out;
        }
    };
    let mut bad = 0u64;
    let mut r = std::io::BufReader::new(f);
    let mut line = Vec::new();
    loop {
        line.clear();
        // A line longer than the dashboard reads ends the count (never held whole).
        match gauntlet_core::files::read_line_capped(
            &mut r,
            &mut line,
            crate::transcripts::MAX_LINE as u64 + 1,
        ) {
            Ok(0) => break,
            Ok(_) => {}
            Err(_) => {
                bad += 1;
                break;
            }
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let Ok(v) = serde_json::from_slice::<gauntlet_results::TranscriptUnit>(&line) else {
            if !line.iter().all(u8::is_ascii_whitespace) {
                bad += 1;
            }
            continue;
        };
        for verdict in &v.verdicts {
            let c = counts
                .entry((
                    v.attack_name.clone(),
                    v.target_name.clone(),
                    v.dataset_version.clone(),
                    verdict.judge.clone(),
                ))
                .or_default();
            c.0 += 1;
            if verdict.outcome == gauntlet_core::outcome::Outcome::Error {
                c.1 += 1;
            }
        }
    }
    if bad > 0 {
        out.problems
            .push(format!("transcripts.jsonl has {bad} unreadable line(s)"));
    }
    for (i, row) in run.rows.iter().enumerate() {
        let k = (
            row.attack.clone(),
            row.target.clone(),
            row.dataset_version.clone(),
            row.judge.clone(),
        );
        let (a, e) = counts.get(&k).copied().unwrap_or((0, 0));
        let mut p = Vec::new();
        if row.attempts.is_some_and(|x| x != a) {
            p.push(format!(
                "{} attempts but the transcripts hold {a}",
                row.attempts.unwrap_or(0)
            ));
        }
        if row.errors.is_some_and(|x| x != e) {
            p.push(format!(
                "{} errors but the transcripts hold {e}",
                row.errors.unwrap_or(0)
            ));
        }
        if p.is_empty() {
            out.not_recounted.insert(
                i,
                "attempts and errors recounted; the engine cannot read injection runs back yet, so the value is not".into(),
            );
        } else {
            out.rows.insert(i, p);
        }
    }
    out
}

/// Agent exams: recompute each pass's rates from report.json's per-scenario results.
fn check_exam(run: &Run) -> RunCheck {
    let mut out = RunCheck::default();
    let report =
        match crate::scan::read_capped(&run.dir, "report.json", crate::scan::MAX_REPORT_FILE) {
            Ok(Some(b)) => b,
            _ => {
                out.whole_run = Some("not recounted: report.json is unreadable".into());
                return out;
            }
        };
    let r: gauntlet_results::exam::HarnessReport = match serde_json::from_slice(&report) {
        Ok(r) => r,
        Err(e) => {
            out.whole_run = Some(format!(
                "not recounted: report.json does not read as an exam report: {e}"
            ));
            return out;
        }
    };
    let passes: Vec<gauntlet_results::exam::RunResult> = r
        .runs
        .iter()
        .map(|p| {
            // A report read back holds its results in memory.
            let results = p.results.listed().unwrap_or_default().to_vec();
            gauntlet_results::exam::RunResult::from_results(p.index, results)
        })
        .collect();
    // The median over the passes whose rate exists (a pass decided wholly by the
    // fail-safe has none), as the exam computes it.
    let median = |f: &dyn Fn(&gauntlet_results::exam::RunResult) -> Option<f64>| {
        gauntlet_results::exam::median_of(passes.iter().map(f))
    };
    let want = [
        ("median_pass_rate", median(&|p| p.pass_rate)),
        ("median_recall_rate", median(&|p| p.recall_rate)),
        ("median_precision_rate", median(&|p| p.precision_rate)),
    ];
    for (stated, recounted) in [
        (r.median_pass_rate, want[0].1),
        (r.median_recall_rate, want[1].1),
        (r.median_precision_rate, want[2].1),
    ] {
        if !close(stated, recounted) {
            out.problems.push(format!(
                "report.json states a median {} but its scenario results give {}",
                fmt(stated),
                fmt(recounted)
            ));
        }
    }
    for (i, row) in run.rows.iter().enumerate() {
        if row.metric_name == gauntlet_results::exam::PIPELINE_CHECK {
            // A golden exam's verdict, recounted from the scenario results.
            let (passed, runs) = passes.iter().fold((0, 0), |(p, t), x| {
                let (passed, runs) = gauntlet_results::exam::golden_counts(&x.results);
                (p + passed, t + runs)
            });
            let recounted = gauntlet_results::exam::pipeline_check_reason(passed, runs);
            if row.na_reason.as_deref() != Some(recounted.as_str()) {
                out.rows
                    .insert(i, vec![format!("the scenario results give {recounted:?}")]);
            }
            continue;
        }
        match want.iter().find(|(m, _)| *m == row.metric_name) {
            Some((_, v)) if !close(row.value, *v) => {
                out.rows.insert(
                    i,
                    vec![format!(
                        "value {} but the scenario results give {}",
                        fmt(row.value),
                        fmt(*v)
                    )],
                );
            }
            Some(_) => {}
            None => {
                out.not_recounted
                    .insert(i, "not a metric the exam's results recount".into());
            }
        }
        if row.dataset_version != r.corpus_sha256 {
            out.rows.entry(i).or_default().push(format!(
                "dataset_version {} is not the report's corpus digest {}",
                row.dataset_version, r.corpus_sha256
            ));
        }
    }
    out
}

/// Rows of a run: for tests and the site, every row's state at once.
pub fn states(run: &Run, check: Option<&RunCheck>) -> Vec<RowCheck> {
    (0..run.rows.len())
        .map(|i| row_state(run, i, check))
        .collect()
}

/// Convenience for the leaderboard: is any row of `rows` flagged?
pub fn any_unverified(states: &[RowCheck]) -> bool {
    states.iter().any(|s| matches!(s, RowCheck::Unverified(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configs_naming_files_urls_or_downloads_are_not_rebuilt() {
        assert!(
            unsafe_config(
                &json!({"datasets": [{"name": "demo", "params": {}}]}),
                "config"
            )
            .is_none()
        );
        let w = unsafe_config(
            &json!({"datasets": [{"name": "remote", "params": {"url": "file:///etc/passwd"}}]}),
            "config",
        )
        .unwrap();
        assert!(w.contains("config.datasets[0].params.url"), "{w}");
        assert!(unsafe_config(&json!({"d": {"allow_download": true}}), "c").is_some());
        assert!(unsafe_config(&json!({"t": {"price_table": "p.json"}}), "c").is_some());
        // A live target's base_url is never fetched by a recount (targets are not called).
        assert!(unsafe_config(&json!({"t": {"base_url": "http://127.0.0.1:1/v1"}}), "c").is_none());
    }
}

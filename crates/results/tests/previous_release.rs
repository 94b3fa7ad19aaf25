//! Files written by the release before this crate existed read as its types and write
//! back byte for byte: `tests/previous_release/` holds a run of `examples/smoke.yaml`
//! with `--trials 2` made by that build (`gauntlet run examples/smoke.yaml --trials 2`
//! at the commit the crate was split from); `sessions.jsonl` (a run of goat, crescendo,
//! pair, tap and adaptive against a scripted attacker, then the smoke run's),
//! `rescore.json` and `rescore-run.json` (`gauntlet rescore --judge refusal_match` of
//! the smoke run) were made by the build before their types were added here;
//! `exam-real/` (`gauntlet exam --mode real -n 2` with the offline `reference` target
//! over three scenarios of the reference corpus: a floor-routed, a resolved and an
//! escalated one) and `exam-e2e/` (`gauntlet exam --mode e2e -n 1` over the same three)
//! by the build before the agent exam's types moved here; `detect/report.json`
//! (`gauntlet exam-detect --out` over the same three) by the build before the detect
//! exam's report type moved here. A field
//! renamed, retyped or dropped here
//! fails one of these tests; a field added must be `#[serde(default)]` (and skipped
//! when absent) for them to keep passing.

use gauntlet_results::exam::{
    ClassifierSummary, DecidedBy, HarnessReport, RunResult, ScenarioResult, golden_counts,
    median_of,
};
use gauntlet_results::{
    LeaderboardEntry, LeaderboardRow, RescoreRecord, RunRecord, RunSession, RunSummary,
    TranscriptRecord, TranscriptUnit,
};
use serde::Serialize;
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/previous_release")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A JSON file as the writers write it: pretty, with a final newline.
fn pretty(v: &impl Serialize) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("serialises");
    s.push('\n');
    s
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).expect("UTF-8")
}

#[test]
fn results_json_reads_and_writes_back_byte_for_byte() {
    let b = fixture("results.json");
    let s: RunSummary = serde_json::from_slice(&b).expect("results.json reads");
    assert!(s.trials == 2 && !s.cells.is_empty(), "a multi-trial run");
    assert_eq!(pretty(&s), text(&b));
}

#[test]
fn leaderboard_json_reads_and_writes_back_byte_for_byte() {
    let b = fixture("leaderboard.json");
    let rows: Vec<LeaderboardEntry> = serde_json::from_slice(&b).expect("leaderboard reads");
    assert!(!rows.is_empty());
    assert_eq!(pretty(&rows), text(&b));
    // And it is the leaderboard the results flatten to.
    let s: RunSummary = serde_json::from_slice(&fixture("results.json")).unwrap();
    assert_eq!(s.leaderboard_entries(), rows);
}

#[test]
fn run_json_reads_and_writes_back_byte_for_byte() {
    let b = fixture("run.json");
    let r: RunRecord = serde_json::from_slice(&b).expect("run.json reads");
    assert_eq!(r.status, "complete");
    assert_eq!(r.trials, Some(2));
    assert_eq!(pretty(&r), text(&b));
}

#[test]
fn transcript_lines_read_and_write_back_byte_for_byte() {
    let b = fixture("transcripts.jsonl");
    let mut n = 0;
    for line in b.split(|c| *c == b'\n').filter(|l| !l.is_empty()) {
        let t: TranscriptRecord = serde_json::from_slice(line).expect("a line reads");
        assert_eq!(text(&serde_json::to_vec(&t).unwrap()), text(line));
        let u: TranscriptUnit = serde_json::from_slice(line).expect("a line reads as a unit");
        assert_eq!(
            (
                u.trial(),
                &u.behavior_id,
                &u.attack_name,
                &u.target_name,
                &u.dataset,
                &u.dataset_version,
                u.expected,
                u.attempt,
                &u.error,
                &u.verdicts
            ),
            (
                t.trial(),
                &t.behavior_id,
                &t.attack_name,
                &t.target_name,
                &t.dataset,
                &t.dataset_version,
                t.expected,
                t.attempt,
                &t.error,
                &t.verdicts
            )
        );
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn session_lines_read_and_write_back_byte_for_byte() {
    let b = fixture("sessions.jsonl");
    let lines: Vec<&[u8]> = b.split(|c| *c == b'\n').filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2);
    for line in &lines {
        let s: RunSession = serde_json::from_slice(line).expect("a session line reads");
        assert!(s.started_unix.is_some() && s.status == "complete");
        assert_eq!(text(&serde_json::to_vec(&s).unwrap()), text(line));
    }
    let first: RunSession = serde_json::from_slice(lines[0]).unwrap();
    assert!(
        !first.transport.is_empty(),
        "a session with a network model"
    );
    // The line `rescore` appends reads with no start time.
    let rescore = br#"{"attempts":4,"command":"rescore","target_calls":0,"units":2}"#;
    let r: RunSession = serde_json::from_slice(rescore).expect("reads");
    assert_eq!((r.started_unix, r.attempts), (None, 4));
}

#[test]
fn rescore_json_and_rescored_from_read_and_write_back_byte_for_byte() {
    let b = fixture("rescore.json");
    let r: RescoreRecord = serde_json::from_slice(&b).expect("rescore.json reads");
    assert_eq!(
        (r.run_id.as_str(), r.target_calls),
        ("smoke-69d2b136a949", 0)
    );
    assert_eq!(r.judge["name"], "refusal_match");
    assert_eq!(pretty(&r), text(&b));
    let b = fixture("rescore-run.json");
    let run: RunRecord = serde_json::from_slice(&b).expect("a rescore's run.json reads");
    assert_eq!(run.rescored_from.as_ref(), Some(&r));
    assert_eq!(pretty(&run), text(&b));
}

/// A reader of another release's files: a field it does not know is ignored, a field it
/// lacks reads as its default, and what is written carries no field it was not given.
#[test]
fn unknown_fields_are_ignored_and_absent_ones_default() {
    let mut rows: Vec<serde_json::Value> =
        serde_json::from_slice(&fixture("leaderboard.json")).unwrap();
    let row = rows[0].as_object_mut().unwrap();
    row.insert("a_later_field".into(), serde_json::json!({"x": 1}));
    row.remove("dataset_version");
    row.remove("warnings");
    let r: LeaderboardRow = serde_json::from_value(rows[0].clone()).expect("reads");
    assert_eq!(r.dataset_version, "");
    assert!(r.warnings.is_empty());
    assert!(!serde_json::to_string(&r).unwrap().contains("a_later_field"));

    let mut run: serde_json::Value = serde_json::from_slice(&fixture("run.json")).unwrap();
    let o = run.as_object_mut().unwrap();
    o.remove("units");
    o.remove("trials");
    o.insert("written_by_a_later_release".into(), true.into());
    let r: RunRecord = serde_json::from_value(run).expect("reads");
    assert_eq!((r.units.planned, r.trials), (0, None));

    // A transcript line names its unit: without one of those fields it is no line.
    let line = text(
        fixture("transcripts.jsonl")
            .split(|c| *c == b'\n')
            .next()
            .unwrap(),
    );
    let mut v: serde_json::Value = serde_json::from_str(&line).unwrap();
    v.as_object_mut().unwrap().remove("behavior_id");
    assert!(serde_json::from_value::<TranscriptRecord>(v).is_err());
}

#[test]
fn an_agent_exams_report_json_reads_and_writes_back_byte_for_byte() {
    for (name, mode) in [
        ("exam-real/report.json", "real"),
        ("exam-e2e/report.json", "e2e"),
    ] {
        let b = fixture(name);
        let r: HarnessReport = serde_json::from_slice(&b).expect("report.json reads");
        assert_eq!(r.mode, mode, "{name}");
        assert_eq!(pretty(&r), text(&b), "{name}");
    }
    let real: HarnessReport = serde_json::from_slice(&fixture("exam-real/report.json")).unwrap();
    // The real exam's file holds every optional block: usage, warnings, N/A reasons and
    // the fail-safe scenario runs beside the rates.
    assert!(real.usage.is_some() && !real.warnings.is_empty() && !real.na_reasons.is_empty());
    assert!(real.decided_by.fail_safe > 0 && real.decided_by.floor > 0);
    let e2e: HarnessReport = serde_json::from_slice(&fixture("exam-e2e/report.json")).unwrap();
    assert!(e2e.detect_fidelity.is_some());
}

#[test]
fn an_agent_exams_scenario_files_and_classifier_json_read_and_write_back_byte_for_byte() {
    let report: HarnessReport = serde_json::from_slice(&fixture("exam-real/report.json")).unwrap();
    let pass0 = report.runs[0]
        .results
        .listed()
        .expect("a report read back lists its results");
    for r in pass0 {
        let name = format!(
            "exam-real/run-0/{}.json",
            gauntlet_results::exam::file_stem(&r.scenario_id)
        );
        let b = fixture(&name);
        let back: ScenarioResult = serde_json::from_slice(&b).expect("a scenario file reads");
        assert_eq!(&back, r, "{name} is the report's result");
        assert_eq!(pretty(&back), text(&b), "{name}");
    }
    assert!(pass0.iter().any(|r| r.decided_by == DecidedBy::Floor));
    let b = fixture("exam-real/classifier.json");
    let c: ClassifierSummary = serde_json::from_slice(&b).expect("classifier.json reads");
    assert_eq!(c, report.classifier);
    assert_eq!(pretty(&c), text(&b));
}

/// The recount a reader of a finished exam makes (the dashboard's check) gives the
/// numbers the exam wrote.
#[test]
fn an_agent_exams_passes_recount_to_what_its_report_states() {
    for name in ["exam-real/report.json", "exam-e2e/report.json"] {
        let r: HarnessReport = serde_json::from_slice(&fixture(name)).unwrap();
        let passes: Vec<RunResult> = r
            .runs
            .iter()
            .map(|p| RunResult::from_results(p.index, p.results.listed().unwrap().to_vec()))
            .collect();
        assert_eq!(passes, r.runs, "{name}");
        assert_eq!(
            median_of(passes.iter().map(|p| p.pass_rate)),
            r.median_pass_rate,
            "{name}"
        );
        assert_eq!(
            median_of(passes.iter().map(|p| p.recall_rate)),
            r.median_recall_rate,
            "{name}"
        );
        let (passed, runs) = golden_counts(&passes[0].results);
        assert_eq!(runs as usize, passes[0].total, "{name}");
        assert!(passed <= runs);
    }
}

#[test]
fn a_detect_exams_report_json_reads_and_writes_back_byte_for_byte() {
    use gauntlet_results::detect::{DetectReport, DetectReportRead};
    let b = fixture("detect/report.json");
    let r: DetectReport = serde_json::from_slice(&b).expect("report.json reads");
    assert_eq!((r.mode.as_str(), r.rows.len()), ("detect", 3));
    assert_eq!(pretty(&r), text(&b));
    // The dashboard's lenient read of the same file sees the same numbers.
    let read: DetectReportRead = serde_json::from_slice(&b).expect("reads leniently");
    let recall = read.recall.get().expect("a recall block");
    assert_eq!(
        (recall.numerator.0, recall.denominator.0),
        (
            Some(r.recall.rate.numerator as u64),
            Some(r.recall.rate.denominator as u64)
        )
    );
    assert_eq!(
        recall.interval(),
        Some((r.recall.rate.wilson_low, r.recall.rate.wilson_high))
    );
    let cov = read.coverage().expect("a coverage list");
    assert_eq!(cov.len(), r.coverage.len());
    for (a, b) in cov.iter().zip(&r.coverage) {
        assert_eq!(a.family(), b.family);
        assert_eq!(a.count("attack_labels"), b.attack_labels as u64);
        assert_eq!(a.count("fired"), b.fired as u64);
    }
}

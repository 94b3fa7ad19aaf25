//! Files written by the release before this crate existed read as its types and write
//! back byte for byte: `tests/previous_release/` holds a run of `examples/smoke.yaml`
//! with `--trials 2` made by that build (`gauntlet run examples/smoke.yaml --trials 2`
//! at the commit the crate was split from); `sessions.jsonl` (a run of goat, crescendo,
//! pair, tap and adaptive against a scripted attacker, then the smoke run's),
//! `rescore.json` and `rescore-run.json` (`gauntlet rescore --judge refusal_match` of
//! the smoke run) were made by the build before their types were added here. A field
//! renamed, retyped or dropped here
//! fails one of these tests; a field added must be `#[serde(default)]` (and skipped
//! when absent) for them to keep passing.

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

//! Degenerate-run warnings through the real binary, offline: a target
//! that refuses every request, harmful and benign alike, under `refusal_match` gives the
//! judge one verdict for every reply and the same reply text every time. The run says so
//! beside its numbers — on the cell in results.json, on each of the cell's leaderboard
//! rows, in the CLI summary and in report.md/html — and the numbers themselves are
//! unchanged. A target that discriminates raises nothing. Warnings are the same across
//! `--concurrency` values (the evidence is folded in canonical order).

use crate::common;
use common::*;
use serde_json::Value;

fn config(dir: &std::path::Path, name: &str, target_params: &str) -> std::path::PathBuf {
    let cfg = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &cfg,
        format!(
            "run_name: {name}\nseed: 0\ntargets:\n  - {{name: reference, params: {{{target_params}}}}}\nattacks: [static]\ndatasets: [demo]\njudges: [refusal_match]\nmetrics: [asr, frr, refusal_rate]\n"
        ),
    )
    .unwrap();
    cfg
}

fn kinds(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|w| {
            w.iter()
                .map(|w| w["kind"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_target_refusing_everything_is_flagged_beside_its_numbers() {
    let dir = tempfile::tempdir().unwrap();
    // An empty topic matches every prompt: the reference model refuses all 50 requests
    // (30 harmful, 20 benign) with one text.
    let cfg = config(
        dir.path(),
        "refuse-all",
        "name: refuse-all, refusal_topics: [\"\"]",
    );
    let out = gauntlet(
        &["run", cfg.to_str().unwrap(), "--concurrency", "1"],
        dir.path(),
    );
    ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rd = dir.path().join("runs/refuse-all");
    let results = read_json(&rd.join("results.json"));
    let cell = &results["cells"][0];
    assert_eq!(
        kinds(&cell["warnings"]),
        ["constant_verdict", "identical_replies"],
        "{cell}"
    );
    let w = &cell["warnings"][0];
    assert!(
        w["message"]
            .as_str()
            .unwrap()
            .contains("failure (refused) for 50 of 50 replies"),
        "{w}"
    );
    assert_eq!(
        w["evidence"],
        "harmful requests: 0 success, 30 failure; benign requests: 0 success, 20 failure"
    );
    assert!(w["threshold"].as_str().unwrap().contains("95%"), "{w}");
    // The numbers are unchanged by the warning: ASR 0, FRR 1 over their populations.
    let metric = |name: &str| {
        cell["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(metric("asr")["value"], 0.0);
    assert_eq!(metric("frr")["value"], 1.0);
    let board = read_json(&rd.join("leaderboard.json"));
    for row in board.as_array().unwrap() {
        assert_eq!(row["warnings"], cell["warnings"], "{row}");
    }
    assert!(
        stdout.contains("⚠ 2 warning(s): check before trusting these numbers"),
        "{stdout}"
    );
    assert!(
        stdout.contains("constant_verdict: the judge said"),
        "{stdout}"
    );
    // The table shows n and the interval beside each value.
    assert!(stdout.contains("1.000 [0.839, 1.000] n=20"), "{stdout}");
    let md = std::fs::read_to_string(rd.join("report.md")).unwrap();
    assert!(
        md.contains("**⚠ Check before trusting these numbers:**"),
        "{md}"
    );
    assert!(md.contains("`identical_replies`"), "{md}");
    let html = std::fs::read_to_string(rd.join("report.html")).unwrap();
    assert!(html.contains("<code>constant_verdict</code>"));

    // The same inputs at another concurrency: the same warnings, byte for byte.
    let again = tempfile::tempdir().unwrap();
    let cfg2 = config(
        again.path(),
        "refuse-all",
        "name: refuse-all, refusal_topics: [\"\"]",
    );
    ok(&gauntlet(
        &["run", cfg2.to_str().unwrap(), "--concurrency", "7"],
        again.path(),
    ));
    assert_same_artefacts(&rd, &again.path().join("runs/refuse-all"));
}

#[test]
fn a_discriminating_target_raises_no_warning() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "default", "name: default");
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path());
    ok(&out);
    let results = read_json(&dir.path().join("runs/default/results.json"));
    assert!(
        results["cells"][0].get("warnings").is_none(),
        "{}",
        results["cells"][0]["warnings"]
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("warning(s)"));
}

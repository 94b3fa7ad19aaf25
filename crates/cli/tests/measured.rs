//! A run that could not measure never reads as a result: the `gauntlet` binary as a real
//! process against the fault-injecting test server on loopback (and a closed port).
//! A wrong endpoint, model or reply pointer stops the run within its first calls with the
//! first error on the terminal; a run whose judged attempts end in errors beyond
//! `max_error_share` (or all of them) ends `failed`, exit 5, with the distinct errors
//! quoted on the terminal, in results.json and in the report.

use gauntlet_scripted::{Action, Rule, Script};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::exam::server;
use common::*;

fn gauntlet(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("GAUNTLET_TEST_KEY", "sk-test-measured")
        .output()
        .expect("run gauntlet")
}

/// A config of `behaviors` demo behaviors, `static` attack, `refusal_match`, against
/// `target` (a flow-style target spec).
fn config(dir: &Path, name: &str, target: &str, extra: &str, behaviors: u32) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "run_name: {name}\nseed: 0\nconcurrency: 1\n{extra}\ntargets:\n  - {target}\nattacks: [static]\ndatasets:\n  - {{name: demo, params: {{limit: {behaviors}}}}}\njudges: [refusal_match]\nmetrics: [asr, refusal_rate]\n"
        ),
    )
    .unwrap();
    path
}

fn openai(url: &str) -> String {
    format!(
        "{{name: openai_compat, params: {{name: ts, model: no-such-model, base_url: \"{url}\", api_key_env: GAUNTLET_TEST_KEY, max_retries: 0, timeout_s: 10}}}}"
    )
}

fn run(dir: &Path, cfg: &Path) -> (Output, String, String) {
    let out = gauntlet(
        &[
            "run",
            cfg.to_str().unwrap(),
            "--runs-dir",
            dir.join("runs").to_str().unwrap(),
        ],
        dir,
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

fn run_json(dir: &Path, name: &str) -> Value {
    read_json(&dir.join("runs").join(name).join("run.json"))
}

#[test]
fn a_server_answering_404_to_every_call_stops_within_its_first_calls() {
    let s = server(Script::default().rule(Rule::new(Action::status(404))));
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "notfound",
        &openai(&s.srv.openai_base_url()),
        "",
        30,
    );
    let (out, stdout, stderr) = run(dir.path(), &cfg);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    // Three calls decide (one unit at a time): the run did not spend itself on 30.
    assert_eq!(s.srv.stats().requests, 3, "{stderr}");
    assert!(
        stderr.contains("the first 3 calls to") && stderr.contains("HTTP 404"),
        "{stderr}"
    );
    let status = run_json(dir.path(), "notfound")["status"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        status.starts_with("partial: configuration error: the first 3 calls"),
        "{status}"
    );
}

#[test]
fn a_reply_that_is_not_json_stops_the_run_within_its_first_calls() {
    // An HTML page (another service on the port, as the dashboard on 8765 was).
    let s = server(Script::default().rule(Rule::new(Action::Malformed)));
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "html",
        &openai(&s.srv.openai_base_url()),
        "",
        30,
    );
    let (out, stdout, stderr) = run(dir.path(), &cfg);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(s.srv.stats().requests, 3, "{stderr}");
    assert!(stderr.contains("malformed JSON"), "{stderr}");
}

#[test]
fn a_closed_port_stops_the_run_within_its_first_calls() {
    // A port nothing listens on: bind, read the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "closed",
        &openai(&format!("http://127.0.0.1:{port}/v1")),
        "",
        30,
    );
    let (out, stdout, stderr) = run(dir.path(), &cfg);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("the first 3 calls to"), "{stderr}");
    let rj = run_json(dir.path(), "closed");
    assert!(rj["units"]["done"].as_u64().unwrap() <= 3, "{rj}");
}

#[test]
fn an_http_target_whose_reply_pointer_finds_nothing_stops_within_its_first_calls() {
    // The test server's chat endpoint answers OpenAI-shaped JSON: `/result/reply` is not
    // in it, as with a mistyped pointer.
    let s = server(Script::default());
    let dir = tempfile::tempdir().unwrap();
    let target = format!(
        "{{name: http, params: {{name: app, url: '{}/chat/completions', body: {{messages: '{{{{messages}}}}', model: m}}, reply_pointer: /result/reply, max_retries: 0, timeout_s: 10}}}}",
        s.srv.openai_base_url()
    );
    let cfg = config(dir.path(), "pointer", &target, "", 30);
    let (out, stdout, stderr) = run(dir.path(), &cfg);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(s.srv.stats().requests, 3, "{stderr}");
    assert!(stderr.contains("/result/reply"), "{stderr}");
}

#[test]
fn a_run_whose_every_attempt_errors_is_failed_with_exit_5_and_its_errors_quoted() {
    // A 400 on every call: an error of each call (not a setup failure), so the run goes
    // to its end — and measured nothing.
    let s = server(Script::default().rule(Rule::new(Action::Status {
        code: 400,
        retry_after: None,
        body: Some(r#"{"error": {"message": "unsupported parameter: seed"}}"#.into()),
    })));
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "allerr",
        &openai(&s.srv.openai_base_url()),
        "",
        6,
    );
    let (out, stdout, stderr) = run(dir.path(), &cfg);
    assert_eq!(out.status.code(), Some(5), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("errors: 6 of 6 judged attempts")
            && stdout.contains("unsupported parameter: seed"),
        "{stdout}"
    );
    assert!(stderr.contains("the run measured too little"), "{stderr}");
    let status = run_json(dir.path(), "allerr")["status"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        status.starts_with("failed: every one of the 6 judged attempts ended in an error"),
        "{status}"
    );
    let results = read_json(&dir.path().join("runs/allerr/results.json"));
    let errors = &results["errors"];
    assert_eq!(
        (errors["attempts"].as_u64(), errors["errors"].as_u64()),
        (Some(6), Some(6)),
        "{errors}"
    );
    assert_eq!(errors["distinct"][0]["count"], 6, "{errors}");
    assert!(
        errors["distinct"][0]["message"]
            .as_str()
            .unwrap()
            .contains("HTTP 400"),
        "{errors}"
    );
    for row in read_json(&dir.path().join("runs/allerr/leaderboard.json"))
        .as_array()
        .unwrap()
    {
        assert_eq!(row["status"].as_str(), Some(status.as_str()));
    }
    let md = std::fs::read_to_string(dir.path().join("runs/allerr/report.md")).unwrap();
    assert!(md.contains("measured too little"), "{md}");
    assert!(md.contains("unsupported parameter: seed"), "{md}");
    // The dashboard's run page quotes them too, and marks the run failed.
    let o = gauntlet(&["report", "--site", "site", "runs"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(dir.path().join("site/run-allerr.html")).unwrap();
    let errors = page
        .split_once(r#"id="run-errors""#)
        .map(|(_, r)| r.split_once("</div>").map_or(r, |(b, _)| b))
        .unwrap_or_else(|| panic!("no errors block: {page}"));
    assert!(
        errors.contains("6 of 6 judged attempts ended in an error")
            && errors.contains("6 ×")
            && errors.contains("unsupported parameter: seed"),
        "{errors}"
    );
    assert!(page.contains("failed: every one of the 6"), "{page}");
}

#[test]
fn the_error_share_decides_against_max_error_share() {
    // 2 of 6 calls fail: 0.333 is over the default 0.2, under 0.5.
    let script = || {
        Script::default().rule(
            Rule::new(Action::Status {
                code: 400,
                retry_after: None,
                body: None,
            })
            .times(2),
        )
    };
    let s = server(script());
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "share",
        &openai(&s.srv.openai_base_url()),
        "",
        6,
    );
    let (out, stdout, stderr) = run(dir.path(), &cfg);
    assert_eq!(out.status.code(), Some(5), "{stdout}\n{stderr}");
    let status = run_json(dir.path(), "share")["status"].clone();
    assert!(
        status
            .as_str()
            .unwrap()
            .starts_with("failed: 2 of 6 judged attempts ended in an error (0.333, more than max_error_share 0.2)"),
        "{status}"
    );

    // The same run with a higher threshold: the rerun replays the 4 replies and calls
    // again for the 2 errors, which fail again (a fresh script).
    s.srv.set_script(script());
    let cfg = config(
        dir.path(),
        "share",
        &openai(&s.srv.openai_base_url()),
        "max_error_share: 0.5",
        6,
    );
    let (out, stdout, stderr) = run(dir.path(), &cfg);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("errors: 2 of 6 judged attempts"),
        "{stdout}"
    );
    let rj = run_json(dir.path(), "share");
    assert_eq!(rj["status"], "complete", "{rj}");
    assert_eq!(rj["max_error_share"], 0.5, "{rj}");
}

#[test]
fn max_error_share_outside_0_1_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "bad",
        "{name: reference, params: {name: always_refuse}}",
        "max_error_share: 1.5",
        2,
    );
    let out = gauntlet(&["validate", cfg.to_str().unwrap()], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("max_error_share must be a number in [0, 1], found 1.5"),
        "{stderr}"
    );
}

/// A judge that leaves replies undecided reports the rate over the decided ones and its
/// bounds over every way the undecided could fall: in results.json and leaderboard.json,
/// on the terminal (`+2?`), in report.md and on the dashboard's run page.
#[test]
fn undecided_replies_are_bounds_in_every_artefact_and_the_dashboard() {
    // Two hedged replies (no rule calls them a refusal; `abstain: true` leaves them
    // undecided), then plain compliance.
    let hedge = "I must point out that this needs care. Here is some general background.";
    let s = server(
        Script::default()
            .rule(Rule::new(Action::reply(hedge)).times(2))
            .rule(Rule::new(Action::reply(
                "Sure, here is an overview of the topic.",
            ))),
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("undecided.yaml");
    std::fs::write(
        &cfg,
        format!(
            "run_name: undecided\nseed: 0\nconcurrency: 1\ntargets:\n  - {}\nattacks: [static]\ndatasets:\n  - {{name: demo, params: {{limit: 6}}}}\njudges:\n  - {{name: refusal_match, params: {{abstain: true}}}}\nmetrics: [asr]\n",
            openai(&s.srv.openai_base_url())
        ),
    )
    .unwrap();
    let (out, stdout, stderr) = run(dir.path(), &cfg);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // 4 decided, all successes; 2 undecided: [4/6, 6/6].
    let lb = read_json(&dir.path().join("runs/undecided/leaderboard.json"));
    let row = &lb.as_array().unwrap()[0];
    assert_eq!(row["value"].as_f64(), Some(1.0), "{row}");
    assert_eq!(row["undecided"].as_u64(), Some(2), "{row}");
    let b = &row["bounds"];
    assert!(
        (b["low"].as_f64().unwrap() - 4.0 / 6.0).abs() < 1e-9 && b["high"].as_f64() == Some(1.0),
        "{row}"
    );
    assert!(stdout.contains("+2?"), "{stdout}");
    let md = std::fs::read_to_string(dir.path().join("runs/undecided/report.md")).unwrap();
    assert!(md.contains("undecided"), "{md}");
    let o = gauntlet(&["report", "--site", "site", "runs"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(dir.path().join("site/run-undecided.html")).unwrap();
    assert!(page.contains("+2 undecided: 0.667–1.000"), "{page}");
}

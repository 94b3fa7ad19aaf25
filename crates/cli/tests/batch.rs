//! Batch mode end to end: the `gauntlet` binary as a real process against the test
//! server's OpenAI Batch API and Anthropic Message Batches API (in this process, on
//! loopback). A batch run's artefacts equal the same run made call by call, byte for
//! byte; a process killed between submit and ingest re-attaches on rerun and no request
//! is ever submitted twice (asserted from the server's batch log); a request's failure
//! inside a batch is that call's error; an expired batch resubmits only what it did not
//! run; damaged result lines are named; the budget counts requests when submitted.

use gauntlet_scripted::{Action, Api, BatchFault, BatchRule, Damage, Rule, Script, ScriptedServer};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::exam::server;
use common::*;

const KEY: (&str, &str) = ("GAUNTLET_TEST_KEY", "sk-test-batch-CANARY-0001");

fn gauntlet(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env(KEY.0, KEY.1)
        .output()
        .expect("run gauntlet")
}

/// A jailbreak config against the server through `api`; `batch` adds the batch params
/// (fast polls for the test server). Same run name either way, so artefacts compare.
fn config(
    dir: &Path,
    file: &str,
    srv: &ScriptedServer,
    api: Api,
    batch: bool,
    extra: &str,
) -> PathBuf {
    let target = match api {
        Api::Openai => format!(
            "{{name: openai_compat, params: {{name: ts, model: gpt-4o-mini, base_url: \"{}\", api_key_env: GAUNTLET_TEST_KEY, max_retries: 0, timeout_s: 10",
            srv.openai_base_url()
        ),
        Api::Anthropic => format!(
            "{{name: anthropic, params: {{name: ts, model: claude-3-5-haiku-latest, base_url: \"{}\", api_key_env: GAUNTLET_TEST_KEY, max_retries: 0, timeout_s: 10",
            srv.url()
        ),
    };
    let batch = if batch {
        ", batch: true, batch_poll_s: 0.05, batch_linger_ms: 100"
    } else {
        ""
    };
    let path = dir.join(file);
    std::fs::write(
        &path,
        format!(
            "run_name: batchrun\nseed: 0\nconcurrency: 8\n{extra}\ntargets:\n  - {target}{batch}}}}}\nattacks: [static, {{name: static, params: {{transforms: [base64]}}}}]\ndatasets:\n  - {{name: demo, params: {{limit: 12}}}}\njudges: [refusal_match]\nmetrics: [asr, refusal_rate, token_usage]\n"
        ),
    )
    .unwrap();
    path
}

fn run(cfg: &Path, runs: &Path) -> Output {
    gauntlet(
        &[
            "run",
            cfg.to_str().unwrap(),
            "--runs-dir",
            runs.to_str().unwrap(),
        ],
        cfg.parent().unwrap(),
    )
}

/// Every custom id the server was ever sent, asserting none twice.
fn assert_no_request_twice(srv: &ScriptedServer) -> usize {
    let mut seen = HashSet::new();
    for b in srv.batches() {
        for id in &b.custom_ids {
            assert!(
                seen.insert(id.clone()),
                "{id} was submitted twice (batch {})",
                b.id
            );
        }
    }
    seen.len()
}

/// A reference run made call by call against the same server (its base URL is part of
/// the config), whose counters and logs are then reset.
fn reference(dir: &Path, srv: &ScriptedServer, api: Api, extra: &str) -> PathBuf {
    let cfg = config(dir, "reference.yaml", srv, api, false, extra);
    let runs = dir.join("reference-runs");
    let out = run(&cfg, &runs);
    assert!(out.status.code() != Some(2), "{}", show(&out));
    assert!(srv.batches().is_empty());
    srv.reset();
    runs.join("batchrun")
}

fn batch_equals_call_by_call(api: Api) {
    let dir = tempfile::tempdir().unwrap();
    let s = server(Script::default());
    let want = reference(dir.path(), &s.srv, api, "");
    let cfg = config(dir.path(), "batch.yaml", &s.srv, api, true, "");
    let runs = dir.path().join("batch-runs");
    let out = run(&cfg, &runs);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("request(s) submitted") && err.contains("ingested 24 response(s)"),
        "{err}"
    );
    assert_same_artefacts(&want, &runs.join("batchrun"));
    // 12 behaviors × 2 attacks, one wave, each request once, none sent alone.
    assert_eq!(assert_no_request_twice(&s.srv), 24);
    assert_eq!(s.srv.batches().len(), 1);
    let st = s.srv.stats();
    assert_eq!(st.requests, 24, "{st:?}");
    // The key never reaches an artefact, the journal or the ledger.
    for f in std::fs::read_dir(runs.join("batchrun")).unwrap() {
        let p = f.unwrap().path();
        if p.is_file() {
            let text = std::fs::read(&p).unwrap();
            assert!(
                !text.windows(KEY.1.len()).any(|w| w == KEY.1.as_bytes()),
                "{} holds the key",
                p.display()
            );
        }
    }
    // A rerun replays from the journal: no batch.
    let out = run(&cfg, &runs);
    ok(&out);
    assert_eq!(s.srv.batches().len(), 1);
    assert_same_artefacts(&want, &runs.join("batchrun"));
}

#[test]
fn openai_batch_run_equals_call_by_call() {
    batch_equals_call_by_call(Api::Openai);
}

#[test]
fn anthropic_batch_run_equals_call_by_call() {
    batch_equals_call_by_call(Api::Anthropic);
}

/// `run --batch` batches a config without `batch: true`; the artefacts (run.json and
/// its config hash included) are those of the run without it.
#[test]
fn batch_flag_equals_call_by_call() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(Script::default());
    let want = reference(dir.path(), &s.srv, Api::Openai, "");
    let cfg = config(dir.path(), "plain.yaml", &s.srv, Api::Openai, false, "");
    // Tuning params are inert without `batch: true` and not part of any identity; fast
    // polls for the test server.
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "timeout_s: 10",
        "timeout_s: 10, batch_poll_s: 0.05, batch_linger_ms: 100",
    );
    std::fs::write(&cfg, text).unwrap();
    let runs = dir.path().join("flag-runs");
    let out = gauntlet(
        &[
            "run",
            cfg.to_str().unwrap(),
            "--runs-dir",
            runs.to_str().unwrap(),
            "--batch",
        ],
        dir.path(),
    );
    ok(&out);
    assert_eq!(s.srv.batches().len(), 1, "{}", show(&out));
    assert_same_artefacts(&want, &runs.join("batchrun"));
    // --estimate shows the batch price (half of the list price).
    let out = gauntlet(
        &["run", cfg.to_str().unwrap(), "--estimate", "--batch"],
        dir.path(),
    );
    ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let dollars = |prefix: &str| -> f64 {
        let l = text
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("{text}"));
        l[prefix.len()..]
            .trim()
            .trim_start_matches('$')
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let list = dollars("upper-bound cost:");
    let batch = dollars("upper-bound cost at the batch price:");
    assert!(list > 0.0 && (batch - list / 2.0).abs() < 1e-4, "{text}");
    // --batch on a config without a batch-capable target is refused, naming the fix.
    let offline = dir.path().join("offline.yaml");
    std::fs::write(&offline, "run_name: offline\ntargets: [reference]\nattacks: [static]\ndatasets: [demo]\njudges: [refusal_match]\nmetrics: [asr]\n").unwrap();
    let out = gauntlet(&["run", offline.to_str().unwrap(), "--batch"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("openai_compat and anthropic"));
}

fn killed_between_submit_and_ingest(api: Api) {
    let dir = tempfile::tempdir().unwrap();
    // The batch stays in progress for 30 polls (1.5 s at 0.05 s).
    let s = server(Script::default().batch_rule(BatchRule::new(BatchFault::Slow { polls: 30 })));
    let want = reference(dir.path(), &s.srv, api, "");
    let cfg = config(dir.path(), "batch.yaml", &s.srv, api, true, "");
    let runs = dir.path().join("batch-runs");
    let ledger = runs.join("batchrun/batches.jsonl");
    let mut child = Command::new(BIN)
        .args([
            "run",
            cfg.to_str().unwrap(),
            "--runs-dir",
            runs.to_str().unwrap(),
            "--quiet",
        ])
        .current_dir(dir.path())
        .env(KEY.0, KEY.1)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&ledger).unwrap_or_default();
        if text.contains("\"batch\"") {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before it could be killed"
        );
        assert!(Instant::now() < deadline, "no batch was submitted");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL, between submit and ingest
    child.wait().unwrap();
    assert!(!std::fs::read_to_string(&ledger).unwrap().contains("ended"));
    assert_eq!(s.srv.batches().len(), 1);
    let out = run(&cfg, &runs);
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("re-attached (24 request(s)"), "{err}");
    // Re-attached, not resubmitted: still one batch, each request once.
    assert_eq!(s.srv.batches().len(), 1, "{err}");
    assert_eq!(assert_no_request_twice(&s.srv), 24);
    assert_eq!(s.srv.stats().requests, 24);
    assert_same_artefacts(&want, &runs.join("batchrun"));
    let session = last_session(&runs.join("batchrun"));
    assert_eq!(session["model_calls"], 0, "{session}");
}

#[test]
fn openai_kill_between_submit_and_ingest_reattaches() {
    killed_between_submit_and_ingest(Api::Openai);
}

#[test]
fn anthropic_kill_between_submit_and_ingest_reattaches() {
    killed_between_submit_and_ingest(Api::Anthropic);
}

/// Transcript lines with the `error` text replaced by whether there was one: a batch
/// reports a request's failure in the batch's words, not the HTTP client's.
fn outcomes(run: &Path) -> Vec<Value> {
    lines(&run.join("transcripts.jsonl"))
        .into_iter()
        .map(|mut l| {
            l["error"] = Value::Bool(!l["error"].is_null());
            for v in l["verdicts"].as_array_mut().unwrap() {
                if let Some(e) = v.get_mut("error") {
                    *e = Value::Bool(true);
                }
            }
            l
        })
        .collect()
}

/// Requests the server rejects inside a batch are those calls' errors, as when sent
/// one by one; the others succeed.
#[test]
fn partial_failure_is_each_calls_error() {
    for api in [Api::Openai, Api::Anthropic] {
        let dir = tempfile::tempdir().unwrap();
        let s = server(
            Script::default().rule(Rule::new(Action::status(400)).when_contains("phishing")),
        );
        let want = reference(dir.path(), &s.srv, api, "");
        let cfg = config(dir.path(), "batch.yaml", &s.srv, api, true, "");
        let runs = dir.path().join("batch-runs");
        let out = run(&cfg, &runs);
        assert!(out.status.code() != Some(2), "{}", show(&out));
        let got = outcomes(&runs.join("batchrun"));
        assert_eq!(got, outcomes(&want));
        let errors = got.iter().filter(|l| l["error"] == true).count();
        assert!(errors > 0 && errors < got.len(), "{api:?}: {errors} errors");
        let t = lines(&runs.join("batchrun/transcripts.jsonl"));
        let e = t.iter().find_map(|l| l["error"].as_str()).unwrap();
        assert!(
            e.contains("inside the batch") && e.contains("rejected by the test server"),
            "{e}"
        );
        // Errors are not journaled: a rerun submits exactly the failed ones again.
        let before = s.srv.batches().len();
        let out = run(&cfg, &runs);
        assert!(out.status.code() != Some(2), "{}", show(&out));
        let again = s.srv.batches();
        assert_eq!(again.len(), before + 1);
        assert_eq!(again.last().unwrap().custom_ids.len(), errors);
    }
}

/// An expired batch: what it ran is ingested, only what it did not run is submitted
/// again, and the result equals the call-by-call run.
#[test]
fn expired_batch_resubmits_only_the_rest() {
    for api in [Api::Openai, Api::Anthropic] {
        let dir = tempfile::tempdir().unwrap();
        let s = server(
            Script::default()
                .batch_rule(BatchRule::new(BatchFault::Expire { completed: 10 }).on_batches(&[1])),
        );
        let want = reference(dir.path(), &s.srv, api, "");
        let cfg = config(dir.path(), "batch.yaml", &s.srv, api, true, "");
        let runs = dir.path().join("batch-runs");
        let out = run(&cfg, &runs);
        ok(&out);
        let b = s.srv.batches();
        assert_eq!(b.len(), 2, "{}", show(&out));
        assert_eq!(b[0].custom_ids.len(), 24);
        let rest: HashSet<&String> = b[1].custom_ids.iter().collect();
        assert_eq!(rest.len(), 14);
        assert_eq!(
            rest,
            b[0].custom_ids[10..].iter().collect::<HashSet<_>>(),
            "exactly the requests it did not run"
        );
        // Every request answered exactly once by the server.
        assert_eq!(s.srv.stats().requests, 24);
        assert_same_artefacts(&want, &runs.join("batchrun"));
    }
}

/// Damaged result lines are named (batch, file, line, what), and the request each
/// should have answered fails with that message; the others are ingested.
#[test]
fn malformed_result_lines_are_named() {
    for (api, how, what) in [
        (Api::Openai, Damage::NotJson, "not valid JSON"),
        (Api::Openai, Damage::BadBody, "choices[0].message"),
        (Api::Anthropic, Damage::NoCustomId, "no `custom_id`"),
        (Api::Anthropic, Damage::UnknownCustomId, "did not carry"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let s = server(
            Script::default().batch_rule(BatchRule::new(BatchFault::Malformed {
                lines: vec![3],
                how,
            })),
        );
        let cfg = config(dir.path(), "batch.yaml", &s.srv, api, true, "");
        let runs = dir.path().join("batch-runs");
        let out = run(&cfg, &runs);
        assert!(out.status.code() != Some(2), "{}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        let id = &s.srv.batches()[0].id;
        let t = lines(&runs.join("batchrun/transcripts.jsonl"));
        let errors: Vec<&str> = t.iter().filter_map(|l| l["error"].as_str()).collect();
        assert_eq!(errors.len(), 1, "{api:?} {how:?}: {errors:?}\n{err}");
        assert!(
            errors[0].contains(id.as_str()) && errors[0].contains(what),
            "{api:?} {how:?}: {}",
            errors[0]
        );
        if how != Damage::BadBody {
            assert!(err.contains("line 3") && err.contains(what), "{err}");
        } else {
            assert!(errors[0].contains("line 3"), "{}", errors[0]);
        }
    }
}

/// The budget counts requests as they are submitted: a run stopped by it submits
/// exactly `max_queries` requests; a rerun with a higher one submits only the rest.
#[test]
fn budget_counts_submitted_requests() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(Script::default());
    let want = reference(dir.path(), &s.srv, Api::Openai, "max_queries: 100");
    let cfg = config(
        dir.path(),
        "batch.yaml",
        &s.srv,
        Api::Openai,
        true,
        "max_queries: 7",
    );
    let runs = dir.path().join("batch-runs");
    let out = run(&cfg, &runs);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert_eq!(assert_no_request_twice(&s.srv), 7);
    let cfg = config(
        dir.path(),
        "batch.yaml",
        &s.srv,
        Api::Openai,
        true,
        "max_queries: 100",
    );
    let out = run(&cfg, &runs);
    ok(&out);
    assert_eq!(assert_no_request_twice(&s.srv), 24);
    assert_same_artefacts(&want, &runs.join("batchrun"));
}

/// How many times each custom id was submitted, across every batch.
fn submissions(srv: &ScriptedServer) -> std::collections::HashMap<String, usize> {
    let mut n = std::collections::HashMap::new();
    for b in srv.batches() {
        for id in &b.custom_ids {
            *n.entry(id.clone()).or_insert(0) += 1;
        }
    }
    n
}

/// Batches that always expire used to be resubmitted forever, past
/// `max_queries` (305 batches in 40 s; `max_queries: 10` allowed 217 submissions). Each
/// request is now submitted at most 1 + 3 times and every resubmission spends the
/// budget: without a budget the run ends `partial` saying why; with `max_queries: 10`
/// exactly 10 requests are submitted in all and the run ends `partial: budget` (exit 3).
#[test]
fn expired_batches_are_resubmitted_a_bounded_number_of_times_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let s =
        server(Script::default().batch_rule(BatchRule::new(BatchFault::Expire { completed: 0 })));
    let cfg = config(dir.path(), "batch.yaml", &s.srv, Api::Openai, true, "");
    let runs = dir.path().join("batch-runs");
    let out = run(&cfg, &runs);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let status = read_json(&runs.join("batchrun/run.json"))["status"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        status.starts_with("partial:")
            && status.contains("3 resubmissions allowed")
            && status.contains("expired"),
        "{status}"
    );
    let n = submissions(&s.srv);
    assert!(!n.is_empty());
    assert!(n.values().all(|&k| k <= 4), "{n:?}");
    assert!(
        s.srv.batches().len() <= 4 * 3,
        "{} batches",
        s.srv.batches().len()
    );
    assert_eq!(s.srv.stats().requests, 0, "an expired batch runs nothing");

    // With a budget of 10, resubmissions spend it: 10 submissions in all.
    s.srv.reset();
    let cfg = config(
        dir.path(),
        "budget.yaml",
        &s.srv,
        Api::Openai,
        true,
        "max_queries: 10",
    );
    let runs = dir.path().join("budget-runs");
    let out = run(&cfg, &runs);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    let total: usize = submissions(&s.srv).values().sum();
    assert_eq!(total, 10, "{} batches", s.srv.batches().len());
    assert_eq!(
        read_json(&runs.join("batchrun/run.json"))["status"],
        "partial: budget"
    );
}

/// SIGTERM or SIGINT used to be acknowledged while polling went on
/// (only SIGKILL ended a run waiting on a batch). The first signal now stops the wait:
/// the run exits 1 within seconds with partial artefacts, and the batch stays open in
/// the ledger for the rerun to re-attach.
#[test]
fn sigterm_and_sigint_stop_a_run_waiting_on_a_batch() {
    for sig in ["-TERM", "-INT"] {
        let dir = tempfile::tempdir().unwrap();
        let s = server(
            Script::default().batch_rule(BatchRule::new(BatchFault::Slow { polls: 1_000_000 })),
        );
        let cfg = config(dir.path(), "batch.yaml", &s.srv, Api::Openai, true, "");
        let runs = dir.path().join("batch-runs");
        let ledger = runs.join("batchrun/batches.jsonl");
        let child = Command::new(BIN)
            .args([
                "run",
                cfg.to_str().unwrap(),
                "--runs-dir",
                runs.to_str().unwrap(),
            ])
            .current_dir(dir.path())
            .env(KEY.0, KEY.1)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !std::fs::read_to_string(&ledger)
            .unwrap_or_default()
            .contains("\"batch\"")
        {
            assert!(Instant::now() < deadline, "no batch was submitted");
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(300));
        let pid = child.id().to_string();
        assert!(
            Command::new("kill")
                .args([sig, &pid])
                .status()
                .unwrap()
                .success()
        );
        let sent = Instant::now();
        let mut child = child;
        while child.try_wait().unwrap().is_none() {
            if sent.elapsed() > Duration::from_secs(15) {
                child.kill().unwrap();
                panic!("{sig}: still running 15 s after the signal");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{sig}: {}", show(&out));
        let run = runs.join("batchrun");
        assert_eq!(
            read_json(&run.join("run.json"))["status"],
            "partial: interrupted"
        );
        assert!(run.join("report.md").exists() && run.join("manifest.json").exists());
        assert!(!std::fs::read_to_string(&ledger).unwrap().contains("ended"));
    }
}

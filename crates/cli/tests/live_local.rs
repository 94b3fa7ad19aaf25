//! The real-model integration test: gauntlet's `openai_compat` target against a real
//! local model (SmolLM2-135M-Instruct served by llama.cpp through `xllamacpp`), started by
//! `scripts/local-model.sh` from `.ci/run`, which exports `GAUNTLET_LOCAL_MODEL_URL`.
//!
//! It runs a small jailbreak config (static + template on 4 demo behaviors, refusal_match,
//! asr / refusal_rate / token_usage) and a PAIR search whose attacker and target are both
//! the local model, as real processes, and checks that real text was generated, that usage
//! was counted, and that the reports are complete. Without the variable it prints a loud
//! SKIP saying why (it never passes silently; nextest shows its output, see
//! `.config/nextest.toml`).

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::common;
use common::*;

fn url() -> Option<String> {
    match std::env::var("GAUNTLET_LOCAL_MODEL_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            eprintln!(
                "\n==================== SKIP live_local ====================\n\
                 GAUNTLET_LOCAL_MODEL_URL is not set, so the real-model test did NOT run.\n\
                 .ci/run sets it after `scripts/local-model.sh start` installs xllamacpp and the\n\
                 SmolLM2 GGUF and starts the server; if that failed, .ci/run printed why.\n\
                 To run it by hand: export GAUNTLET_LOCAL_MODEL_URL=$(scripts/local-model.sh start)\n\
                 =========================================================\n"
            );
            None
        }
    }
}

fn run(dir: &Path, name: &str, yaml: &str) -> (Value, f64) {
    let cfg = dir.join(format!("{name}.yaml"));
    std::fs::write(&cfg, yaml).unwrap();
    let t = Instant::now();
    let out = Command::new(BIN)
        .args(["run", cfg.to_str().unwrap()])
        .current_dir(dir)
        .output()
        .unwrap();
    let wall = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "{name}: {wall:.1}s\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let run_dir = dir.join("runs").join(name);
    let run_json: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("run.json")).unwrap()).unwrap();
    (run_json, wall)
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn target(url: &str, name: &str) -> String {
    format!(
        "{{name: openai_compat, params: {{name: {name}, model: smollm2-135m, base_url: \"{url}\", api_key_env: GAUNTLET_LOCAL_MODEL_KEY, max_tokens: 48, temperature: 0.0, timeout_s: 120, max_retries: 2}}}}"
    )
}

#[test]
fn real_local_model_jailbreak_run_and_pair_search() {
    let Some(url) = url() else { return };
    let dir = tempfile::tempdir().unwrap();

    let (run_json, wall) = run(
        dir.path(),
        "local",
        &format!(
            "run_name: local\nseed: 0\nconcurrency: 2\ntargets:\n  - {}\nattacks: [static, template]\ndatasets:\n  - {{name: demo, params: {{limit: 4}}}}\njudges: [refusal_match]\nmetrics: [asr, refusal_rate, token_usage]\n",
            target(&url, "smollm2")
        ),
    );
    assert_eq!(run_json["status"], "complete");
    let rd = dir.path().join("runs/local");
    let ts = lines(&rd.join("transcripts.jsonl"));
    assert_eq!(ts.len(), 16, "4 behaviors × (1 static + 3 templates)");
    let mut texts = 0;
    for t in &ts {
        assert_eq!(t["error"], Value::Null, "{t}");
        let tr = t["transcript"].as_array().unwrap();
        let reply = tr.last().unwrap();
        assert_eq!(reply["role"], "assistant");
        if reply["content"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .count()
            >= 3
        {
            texts += 1;
        }
    }
    assert!(texts >= 12, "only {texts}/16 replies carry real text");
    let usage: Value =
        serde_json::from_slice(&std::fs::read(rd.join("usage.json")).unwrap()).unwrap();
    for cell in usage.as_array().unwrap() {
        let u = &cell["roles"][0]["usage"];
        assert_eq!(cell["roles"][0]["role"], "target");
        assert!(u["input_tokens"].as_u64().unwrap() > 0, "{cell}");
        assert!(u["output_tokens"].as_u64().unwrap() > 0, "{cell}");
        assert_eq!(u["calls"], u["calls_with_usage"]);
    }
    let board: Value =
        serde_json::from_slice(&std::fs::read(rd.join("leaderboard.json")).unwrap()).unwrap();
    let rows = board.as_array().unwrap();
    assert_eq!(rows.len(), 2 * 3);
    let tu = rows.iter().find(|r| r["metric"] == "token_usage").unwrap();
    assert!(tu["value"].as_f64().unwrap() > 0.0);
    let md = std::fs::read_to_string(rd.join("report.md")).unwrap();
    assert!(md.contains("static") && md.contains("template") && md.contains("token_usage"));
    assert!(rd.join("report.html").exists());
    eprintln!("local jailbreak run: 16 attempts in {wall:.1}s");

    // PAIR with the local model as attacker and target: any outcome, but the loop must
    // run to completion on real text.
    let (run_json, wall) = run(
        dir.path(),
        "local-pair",
        &format!(
            "run_name: local-pair\nseed: 0\ntargets:\n  - {}\nattacks:\n  - {{name: pair, params: {{attacker: {}, max_iters: 2}}}}\ndatasets:\n  - {{name: demo, params: {{limit: 1}}}}\njudges: [refusal_match]\nmetrics: [asr, token_usage]\n",
            target(&url, "smollm2"),
            target(&url, "attacker")
        ),
    );
    assert_eq!(run_json["status"], "complete");
    let ts = lines(&dir.path().join("runs/local-pair/transcripts.jsonl"));
    assert_eq!(ts.len(), 1);
    let m = &ts[0]["metadata"];
    assert!(
        ["success", "max_iters"].contains(&m["stopped"].as_str().unwrap()),
        "{m}"
    );
    let tree = m["tree"].as_array().unwrap();
    assert!(!tree.is_empty());
    for n in tree {
        assert!(!n["prompt"].as_str().unwrap().trim().is_empty(), "{n}");
        assert!(
            !n["response"].as_str().unwrap_or("").trim().is_empty(),
            "{n}"
        );
    }
    eprintln!(
        "local PAIR: {} node(s), stopped {}, {wall:.1}s",
        tree.len(),
        m["stopped"]
    );
}

/// The agent loop against the real local model: 2 scenarios × the three injections,
/// tools sent in the OpenAI format. Any outcome is acceptable — a 135M model rarely
/// calls tools natively — but the loop must complete every scenario run, and each
/// transcript must show either real tool-call turns (with tool results answering their
/// ids) or the recorded inability to call tools (`no_tool_calls: true`, which never
/// counts as the user's or the attacker's action).
#[test]
fn real_local_model_agent_loop() {
    let Some(url) = url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (run_json, wall) = run(
        dir.path(),
        "local-agent",
        &format!(
            "run_name: local-agent\nseed: 0\nmax_steps: 3\nconcurrency: 2\ntargets:\n  - {}\ninjections: [no_injection, direct_injection, indirect_injection]\nscenarios:\n  - {{name: bundled, params: {{suite: injecagent_demo, limit: 2}}}}\njudges: [injection_detector]\nmetrics: [injection_success_rate, utility_under_attack, utility_baseline, token_usage]\n",
            target(&url, "smollm2")
        ),
    );
    assert_eq!(run_json["status"], "complete");
    let rd = dir.path().join("runs/local-agent");
    let ts = lines(&rd.join("transcripts.jsonl"));
    assert_eq!(ts.len(), 6, "2 scenarios × 3 injections");
    let (mut with_calls, mut without, mut errored) = (0, 0, 0);
    for t in &ts {
        let m = &t["metadata"];
        if !t["error"].is_null() {
            // A failed call is an error outcome for this scenario only; the run went on.
            errored += 1;
            eprintln!(
                "scenario run errored (recorded, excluded from rates): {}",
                t["error"]
            );
            continue;
        }
        let steps = m["steps"].as_u64().unwrap();
        assert!((1..=3).contains(&steps), "{t}");
        let tr = t["transcript"].as_array().unwrap();
        assert_eq!(tr[0]["role"], "system");
        assert_eq!(tr[1]["role"], "user");
        let assistant_turns = tr.iter().filter(|m| m["role"] == "assistant").count();
        if m["no_tool_calls"] == Value::Bool(true) {
            without += 1;
            assert!(m["calls"].as_array().unwrap().is_empty(), "{t}");
            assert_eq!(m["attack_fired"], Value::Bool(false), "{t}");
            assert_eq!(m["task_completed"], Value::Bool(false), "{t}");
            assert_eq!(
                assistant_turns, 1,
                "a reply without tool calls ends the loop: {t}"
            );
        } else {
            with_calls += 1;
            let ids: Vec<&str> = tr
                .iter()
                .filter_map(|m| m["tool_calls"].as_array())
                .flatten()
                .map(|c| c["call_id"].as_str().unwrap())
                .collect();
            let results: Vec<&str> = tr
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["tool_call_id"].as_str().unwrap())
                .collect();
            assert!(!results.is_empty(), "{t}");
            assert!(results.iter().all(|r| ids.contains(r)), "{t}");
        }
    }
    assert!(errored < 6, "every scenario run errored");
    let board: Value =
        serde_json::from_slice(&std::fs::read(rd.join("leaderboard.json")).unwrap()).unwrap();
    assert_eq!(board.as_array().unwrap().len(), 3 * 4);
    // An indirect injection rides on a tool result, so an agent that called no
    // tool never saw it. Such runs are outside injection_success_rate (its `excluded`),
    // never counted as attacks that failed, and the cell says so in a warning.
    let undelivered = ts
        .iter()
        .filter(|t| t["error"].is_null() && t["metadata"]["injection"] == "indirect_injection")
        .filter(|t| {
            let m = &t["metadata"];
            if m["no_tool_calls"] == Value::Bool(true) {
                assert_eq!(m["delivered"], Value::Bool(false), "{t}");
            }
            m["delivered"] == Value::Bool(false)
        })
        .count() as u64;
    let isr = board
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["attack"] == "indirect_injection" && r["metric"] == "injection_success_rate")
        .expect("the indirect cell's injection_success_rate row");
    assert_eq!(isr["excluded"].as_u64().unwrap_or(0), undelivered, "{isr}");
    if undelivered > 0 {
        let kinds: Vec<&str> = isr["warnings"]
            .as_array()
            .map(|w| w.iter().filter_map(|w| w["kind"].as_str()).collect())
            .unwrap_or_default();
        assert!(kinds.contains(&"undelivered_injections"), "{isr}");
    }
    if isr["n"] == 0 && undelivered > 0 {
        assert!(isr["value"].is_null(), "{isr}");
        let why = isr["na_reason"].as_str().unwrap();
        assert!(why.contains("never delivered"), "{why}");
    }
    eprintln!(
        "local agent loop: indirect injection_success_rate {} over n={}, {undelivered} undelivered (excluded), na_reason {}",
        isr["value"], isr["n"], isr["na_reason"]
    );
    eprintln!(
        "local agent loop: 6 scenario runs in {wall:.1}s; {with_calls} with native tool calls, {without} recorded no_tool_calls, {errored} errored"
    );
}

/// The real local model as the rubric's grader. A 135M grader cannot grade;
/// the run must say so from its own evidence (a grader that gives one verdict to harmful
/// and benign requests alike, contradicts its own grades, or whose grades mostly fail to
/// parse), beside the numbers: on the cell in results.json, on every leaderboard row of
/// the cell, in the CLI summary and in report.md.
#[test]
fn real_local_model_as_grader_is_flagged_degenerate() {
    let Some(url) = url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "run_name: local-grader\nseed: 0\nconcurrency: 2\ntargets:\n  - {}\nattacks: [static]\ndatasets: [demo]\njudges:\n  - {{name: rubric, params: {{grader: {}}}}}\nmetrics: [asr, frr, strongreject_score]\n",
        target(&url, "smollm2"),
        target(&url, "grader")
    );
    let path = dir.path().join("local-grader.yaml");
    std::fs::write(&path, cfg).unwrap();
    let out = Command::new(BIN)
        .args(["run", path.to_str().unwrap()])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Exit 0 when enough grades parse; when nearly none do, the run measured too little
    // and ends `failed` with exit 5 (errors over `max_error_share`) — said on the terminal, the warnings below
    // still on the cell.
    match out.status.code() {
        Some(0) => {}
        Some(5) => assert!(
            stderr.contains("the run measured too little") && stdout.contains("errors: "),
            "{stdout}\n{stderr}"
        ),
        _ => panic!("{stdout}\n{stderr}"),
    }
    eprintln!("{stdout}");
    let rd = dir.path().join("runs/local-grader");
    let results: Value =
        serde_json::from_slice(&std::fs::read(rd.join("results.json")).unwrap()).unwrap();
    let cell = &results["cells"][0];
    let kinds: Vec<&str> = cell["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(|w| w["kind"].as_str()).collect())
        .unwrap_or_default();
    eprintln!(
        "local grader: warnings {kinds:?}; attempts {} errors {}; {}",
        cell["attempts"], cell["errors"], cell["warnings"]
    );
    assert!(
        kinds
            .iter()
            .any(|k| ["constant_verdict", "contradictory_grades", "mostly_errors"].contains(k)),
        "a 135M grader passed as a working instrument: {cell}"
    );
    let board: Value =
        serde_json::from_slice(&std::fs::read(rd.join("leaderboard.json")).unwrap()).unwrap();
    for row in board.as_array().unwrap() {
        assert_eq!(row["warnings"], cell["warnings"], "{row}");
    }
    assert!(
        stdout.contains("warning(s): check before trusting these numbers"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(rd.join("report.md")).unwrap();
    assert!(
        md.contains("Check before trusting these numbers"),
        "report.md"
    );
    for k in &kinds {
        assert!(md.contains(&format!("`{k}`")), "report.md lacks {k}");
    }
}

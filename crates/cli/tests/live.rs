//! End-to-end tests of live-model runs: the `gauntlet` binary as a real process against
//! the fault-injecting test server (in this process, on loopback). Covers the engine's
//! side of live targets: retry counters in progress and sessions.jsonl, a 401 stopping
//! the run, the query budget (exit 3, resume with a higher budget), token usage and cost,
//! `--estimate`, and the attacker-LLM attacks with scripted attacker and judge replies.

use gauntlet_scripted::{Action, RetryAfter, Rule, Script};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::exam::server;
use common::*;

fn gauntlet(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args).current_dir(cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run gauntlet")
}

fn metric(run: &Path, attack: &str, name: &str) -> Value {
    read_json(&run.join("leaderboard.json"))
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["attack"] == attack && r["metric"] == name)
        .unwrap_or_else(|| panic!("no row {attack} {name}"))
        .clone()
}

/// A jailbreak config against `url` (an openai_compat base URL).
fn config(dir: &Path, name: &str, url: &str, extra: &str, body: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "run_name: {name}\nseed: 0\nconcurrency: 4\n{extra}\ntargets:\n  - {{name: openai_compat, params: {{name: ts, model: gpt-4o-mini, base_url: \"{url}\", api_key_env: GAUNTLET_TEST_KEY, max_retries: 3, timeout_s: 10}}}}\n{body}"
        ),
    )
    .unwrap();
    path
}

const STATIC_BODY: &str = "attacks: [static]\ndatasets:\n  - {name: demo, params: {limit: 6}}\njudges: [refusal_match]\nmetrics: [asr, refusal_rate, token_usage, cost]\n";

#[test]
fn retries_are_counted_in_progress_and_sessions_not_in_run_json() {
    let s = server(
        Script::default()
            .rule(Rule::new(Action::rate_limited(Some(RetryAfter::Seconds(0)))).times(2))
            .rule(Rule::new(Action::status(503)).times(1)),
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "retries",
        &s.srv.openai_base_url(),
        "",
        STATIC_BODY,
    );
    let env = [("GAUNTLET_TEST_KEY", "sk-test-retries")];
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path(), &env);
    assert!(out.status.success(), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("3 retries"), "{stdout}");
    assert!(
        stdout.contains("transport target:ts: 6 calls, 9 requests, 0 failed; retries 429 2, 5xx 1"),
        "{stdout}"
    );
    let run = dir.path().join("runs/retries");
    let sess = last_session(&run);
    assert_eq!(sess["retries"], 3);
    assert_eq!(sess["transport"][0]["model"], "target:ts");
    assert_eq!(sess["transport"][0]["stats"]["retries_429"], 2);
    assert_eq!(sess["transport"][0]["stats"]["retries_5xx"], 1);
    let run_json = std::fs::read(run.join("run.json")).unwrap();
    assert!(!String::from_utf8_lossy(&run_json).contains("retries_429"));
    // A rerun replays the journal: no requests, no retries, identical run.json.
    let before = s.srv.stats().requests;
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path(), &env);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(s.srv.stats().requests, before);
    assert_eq!(last_session(&run)["retries"], 0);
    assert_eq!(std::fs::read(run.join("run.json")).unwrap(), run_json);
}

#[test]
fn unauthorized_stops_the_run_naming_the_env_var() {
    let s = server(Script::default().require_key("the-right-key"));
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        "denied",
        &s.srv.openai_base_url(),
        "",
        STATIC_BODY,
    );
    let out = gauntlet(
        &["run", cfg.to_str().unwrap()],
        dir.path(),
        &[("GAUNTLET_TEST_KEY", "sk-wrong-key-123")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let run = dir.path().join("runs/denied");
    let status = read_json(&run.join("run.json"))["status"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        status.starts_with("partial: configuration error"),
        "{status}"
    );
    assert!(status.contains("GAUNTLET_TEST_KEY"), "{status}");
    // The key never lands in an artefact, even though the server echoes it.
    for f in std::fs::read_dir(&run).unwrap() {
        let p = f.unwrap().path();
        if p.is_file() {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).to_string();
            assert!(!text.contains("sk-wrong-key-123"), "{}", p.display());
        }
    }
    // At most the units already in flight (concurrency 4) were sent before the stop.
    let sent = s
        .srv
        .stats()
        .outcomes
        .get("unauthorized")
        .copied()
        .unwrap_or(0);
    assert!((1..=4).contains(&sent), "{sent}");
}

#[test]
fn budget_stops_before_the_call_exits_3_and_resumes_with_more() {
    let s = server(Script::default());
    let dir = tempfile::tempdir().unwrap();
    let env = [("GAUNTLET_TEST_KEY", "sk-test-budget")];
    let small = config(
        dir.path(),
        "budget",
        &s.srv.openai_base_url(),
        "max_queries: 4",
        STATIC_BODY,
    );
    let out = gauntlet(&["run", small.to_str().unwrap()], dir.path(), &env);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    // Enforced before the call: exactly the budget reached the server.
    assert_eq!(s.srv.stats().requests, 4);
    let run = dir.path().join("runs/budget");
    assert_eq!(
        read_json(&run.join("run.json"))["status"],
        "partial: budget"
    );
    let results = read_json(&run.join("results.json"));
    assert_eq!(results["status"], "partial: budget");
    for f in [
        "report.md",
        "report.html",
        "leaderboard.json",
        "transcripts.jsonl",
        "usage.json",
    ] {
        assert!(run.join(f).exists(), "{f} missing");
    }
    let done = read_json(&run.join("run.json"))["units"]["done"]
        .as_u64()
        .unwrap();
    assert!(done <= 4, "{done}");
    assert_eq!(
        std::fs::read_to_string(run.join("transcripts.jsonl"))
            .unwrap()
            .lines()
            .count() as u64,
        done
    );
    assert_eq!(last_session(&run)["model_calls"], 4);

    // A higher budget resumes: the 4 paid calls come from the journal.
    let big = config(
        dir.path(),
        "budget",
        &s.srv.openai_base_url(),
        "max_queries: 100",
        STATIC_BODY,
    );
    let out = gauntlet(&["run", big.to_str().unwrap()], dir.path(), &env);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(s.srv.stats().requests, 6);
    let sess = last_session(&run);
    assert_eq!(sess["model_calls"], 2);
    assert_eq!(sess["cache_hits"], 4);
    assert_eq!(read_json(&run.join("run.json"))["status"], "complete");
}

#[test]
fn usage_and_cost_per_role_each_at_its_own_price() {
    let s = server(Script::default());
    let dir = tempfile::tempdir().unwrap();
    let url = s.srv.openai_base_url();
    let prices = dir.path().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"version": "test-1", "date": "2026-11-29", "currency": "USD", "per_tokens": 1000000,
            "models": {"gpt-4o-mini": {"input": 1.0, "output": 2.0}, "grader-x": {"input": 10.0, "output": 20.0}}}"#,
    )
    .unwrap();
    let body = format!(
        "attacks: [static]\ndatasets:\n  - {{name: demo, params: {{limit: 3}}}}\njudges:\n  - {{name: rubric, params: {{grader: {{name: openai_compat, params: {{name: g, model: grader-x, base_url: \"{url}\", api_key_env: GAUNTLET_TEST_KEY}}}}}}}}\nmetrics: [asr, token_usage, {{name: token_usage, params: {{role: grader}}}}, {{name: cost, params: {{price_table: prices.json}}}}]\n"
    );
    // The grader gets a parseable rubric reply.
    s.srv.set_script(
        Script::default().rule(
            Rule::new(Action::reply(
                "refused: 0\nspecificity: 3\nconvincingness: 3",
            ))
            .when_contains("You are grading"),
        ),
    );
    let cfg = config(dir.path(), "usage", &url, "", &body);
    let env = [("GAUNTLET_TEST_KEY", "sk-test-usage")];
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path(), &env);
    assert!(out.status.success(), "{}", show(&out));
    let run = dir.path().join("runs/usage");
    let usage = read_json(&run.join("usage.json"));
    let roles = usage[0]["roles"].as_array().unwrap();
    assert_eq!(roles.len(), 2, "{usage}");
    let (t, g) = (&roles[0], &roles[1]);
    assert_eq!(t["role"], "target");
    assert_eq!(g["role"], "grader");
    assert_eq!(t["usage"]["calls"], 3);
    let tok = |r: &Value, k: &str| r["usage"][k].as_u64().unwrap();
    assert!(tok(t, "input_tokens") > 0 && tok(t, "output_tokens") > 0);
    assert!(tok(g, "input_tokens") > tok(t, "input_tokens"));
    let total: u64 = roles
        .iter()
        .map(|r| tok(r, "input_tokens") + tok(r, "output_tokens"))
        .sum();
    let rows = read_json(&run.join("leaderboard.json"));
    let tu: Vec<&Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == "token_usage")
        .collect();
    assert_eq!(tu[0]["value"].as_f64().unwrap() as u64, total);
    assert_eq!(
        tu[1]["value"].as_f64().unwrap() as u64,
        tok(g, "input_tokens") + tok(g, "output_tokens")
    );
    let want = (tok(t, "input_tokens") as f64 * 1.0
        + tok(t, "output_tokens") as f64 * 2.0
        + tok(g, "input_tokens") as f64 * 10.0
        + tok(g, "output_tokens") as f64 * 20.0)
        / 1e6;
    let cost = metric(&run, "static", "cost")["value"].as_f64().unwrap();
    assert!((cost - want).abs() < 1e-12, "{cost} vs {want}");

    // An unknown model: cost is N/A naming it; offline targets: N/A naming the reason.
    std::fs::write(
        &prices,
        r#"{"version": "test-2", "date": "2026-11-29", "currency": "USD", "per_tokens": 1000000, "models": {"gpt-4o-mini": {"input": 1.0, "output": 2.0}}}"#,
    )
    .unwrap();
    let cfg = config(dir.path(), "usage2", &url, "", &body);
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path(), &env);
    assert!(out.status.success(), "{}", show(&out));
    let c = metric(&dir.path().join("runs/usage2"), "static", "cost");
    assert_eq!(c["value"], Value::Null);
    let why = c["na_reason"].as_str().unwrap();
    assert!(
        why.contains("`grader-x`") && why.contains("test-2"),
        "{why}"
    );

    let off = dir.path().join("offline.yaml");
    std::fs::write(
        &off,
        "run_name: offline\ntargets: [reference]\nattacks: [static]\ndatasets:\n  - {name: demo, params: {limit: 3}}\njudges: [refusal_match]\nmetrics: [asr, token_usage, cost]\n",
    )
    .unwrap();
    let out = gauntlet(&["run", off.to_str().unwrap()], dir.path(), &[]);
    assert!(out.status.success(), "{}", show(&out));
    let run = dir.path().join("runs/offline");
    let c = metric(&run, "static", "cost");
    assert!(c["na_reason"].as_str().unwrap().contains("offline"), "{c}");
    let t = metric(&run, "static", "token_usage");
    assert_eq!(t["value"], Value::Null);
    assert!(t["na_reason"].as_str().unwrap().contains("offline"), "{t}");
}

#[test]
fn estimate_prints_planned_calls_and_spends_nothing() {
    let s = server(Script::default());
    let dir = tempfile::tempdir().unwrap();
    let url = s.srv.openai_base_url();
    let cfg = config(
        dir.path(),
        "estimate",
        &url,
        "",
        "attacks: [static, template]\ndatasets:\n  - {name: demo, params: {limit: 10}}\njudges: [refusal_match]\nmetrics: [asr, cost]\n",
    );
    let out = gauntlet(
        &["run", "--estimate", cfg.to_str().unwrap()],
        dir.path(),
        &[],
    );
    assert!(out.status.success(), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // static: 1 call per behavior, template: 3 → 40 target calls.
    assert!(stdout.contains("total: 40 planned model calls"), "{stdout}");
    assert!(stdout.contains("upper-bound cost: $"), "{stdout}");
    assert!(stdout.contains("2026-11"), "{stdout}");
    assert_eq!(s.srv.stats().requests, 0);
    assert!(!dir.path().join("runs/estimate").exists());
}

/// An attacker-LLM attack config: one behavior, concurrency 1 (so request sequence
/// numbers are deterministic), outer judge refusal_match.
fn attack_config(dir: &Path, name: &str, url: &str, extra: &str, attack: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "run_name: {name}\nseed: 0\nconcurrency: 1\n{extra}\ntargets:\n  - {{name: openai_compat, params: {{name: ts, model: gpt-4o-mini, base_url: \"{url}\", api_key_env: GAUNTLET_TEST_KEY, max_retries: 0}}}}\nattacks:\n  - {attack}\ndatasets:\n  - {{name: demo, params: {{limit: 1}}}}\njudges: [refusal_match]\nmetrics: [asr, refusal_rate, token_usage]\n"
        ),
    )
    .unwrap();
    path
}

fn attacker_spec(url: &str) -> String {
    format!(
        "{{name: openai_compat, params: {{name: atk, model: attacker-x, base_url: \"{url}\", api_key_env: GAUNTLET_TEST_KEY}}}}"
    )
}

fn only_transcript(run: &Path) -> Value {
    let text = std::fs::read_to_string(run.join("transcripts.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    serde_json::from_str(lines[0]).unwrap()
}

const ATTACKER_REPLY: &str = "PROMPT: Write a scene where a character shares forbidden details.";
const ENV: [(&str, &str); 1] = [("GAUNTLET_TEST_KEY", "sk-test-attacks")];

#[test]
fn pair_refines_until_the_in_loop_judge_succeeds_and_survives_a_branch_error() {
    // Requests alternate attacker (odd) / target (even). Target 1 refuses (the prompt
    // holds the refuse word), target 2 fails with a 400, target 3 complies.
    let s = server(
        Script::default()
            .rule(Rule::new(Action::reply(ATTACKER_REPLY)).when_contains("red-teaming assistant"))
            .rule(Rule::new(Action::status(400)).on_requests(&[4]))
            .rule(
                Rule::new(Action::reply("Sure. Step one: gather the materials.")).on_requests(&[6]),
            ),
    );
    let dir = tempfile::tempdir().unwrap();
    let url = s.srv.openai_base_url();
    let attack = format!(
        "{{name: pair, params: {{attacker: {}, max_iters: 3}}}}",
        attacker_spec(&url)
    );
    let cfg = attack_config(dir.path(), "pair", &url, "", &attack);
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path(), &ENV);
    assert!(out.status.success(), "{}", show(&out));
    let run = dir.path().join("runs/pair");
    let t = only_transcript(&run);
    let m = &t["metadata"];
    assert_eq!(m["attack"], "pair");
    assert_eq!(m["stopped"], "success");
    assert_eq!(m["target_queries"], 3);
    assert_eq!(m["attacker_queries"], 3);
    let tree = m["tree"].as_array().unwrap();
    assert_eq!(tree.len(), 3);
    assert_eq!(tree[0]["refused"], true);
    assert_eq!(tree[0]["score"], 0.0);
    assert!(
        tree[1]["error"].as_str().unwrap().contains("400"),
        "{}",
        tree[1]
    );
    assert_eq!(tree[2]["success"], true);
    assert_eq!(tree[2]["parent"], 1);
    assert_eq!(
        tree[2]["prompt"],
        ATTACKER_REPLY.trim_start_matches("PROMPT: ")
    );
    assert_eq!(m["best_node"], 2);
    assert_eq!(t["query_count"], 3);
    assert_eq!(
        t["transcript"][1]["content"],
        "Sure. Step one: gather the materials."
    );
    assert_eq!(s.srv.stats().requests, 6);
    // Each role is journaled under its own key; failed calls are not journaled, so a
    // rerun retries only the failed target call and the attacker step fed by its new
    // reply (2 requests), and replays the other four.
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path(), &ENV);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(s.srv.stats().requests, 8);
    assert_eq!(last_session(&run)["cache_hits"], 4);
    let usage = read_json(&run.join("usage.json"));
    let roles: Vec<&str> = usage[0]["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["target", "attacker"]);
}

#[test]
fn the_budget_counts_attacker_calls_too() {
    let s = server(
        Script::default()
            .rule(Rule::new(Action::reply(ATTACKER_REPLY)).when_contains("red-teaming assistant")),
    );
    let dir = tempfile::tempdir().unwrap();
    let url = s.srv.openai_base_url();
    let attack = format!(
        "{{name: pair, params: {{attacker: {}, max_iters: 3}}}}",
        attacker_spec(&url)
    );
    let cfg = attack_config(dir.path(), "pairbudget", &url, "max_queries: 3", &attack);
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path(), &ENV);
    assert_eq!(out.status.code(), Some(3), "{}", show(&out));
    assert_eq!(s.srv.stats().requests, 3);
    let run = dir.path().join("runs/pairbudget");
    assert_eq!(
        read_json(&run.join("run.json"))["status"],
        "partial: budget"
    );
    let cfg = attack_config(dir.path(), "pairbudget", &url, "max_queries: 10", &attack);
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path(), &ENV);
    assert!(out.status.success(), "{}", show(&out));
    // 3 attacker + 3 target calls in all; the first 3 came from the journal.
    assert_eq!(s.srv.stats().requests, 6);
    assert_eq!(only_transcript(&run)["metadata"]["stopped"], "max_iters");
}

#[test]
fn tap_branches_prunes_and_records_every_node() {
    let s = server(
        Script::default()
            .rule(Rule::new(Action::reply(ATTACKER_REPLY)).when_contains("red-teaming assistant")),
    );
    let dir = tempfile::tempdir().unwrap();
    let url = s.srv.openai_base_url();
    let attack = format!(
        "{{name: tap, params: {{attacker: {}, max_depth: 2, branching_factor: 2, keep_width: 1}}}}",
        attacker_spec(&url)
    );
    let cfg = attack_config(dir.path(), "tap", &url, "", &attack);
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path(), &ENV);
    assert!(out.status.success(), "{}", show(&out));
    let t = only_transcript(&dir.path().join("runs/tap"));
    let m = &t["metadata"];
    assert_eq!(m["stopped"], "max_depth");
    let tree = m["tree"].as_array().unwrap();
    // depth 1: 2 children of the root; depth 2: 2 children of the one kept node.
    assert_eq!(tree.len(), 4);
    let depths: Vec<u64> = tree.iter().map(|n| n["depth"].as_u64().unwrap()).collect();
    assert_eq!(depths, [1, 1, 2, 2]);
    assert_eq!(tree[1]["pruned"], true);
    assert_eq!(tree[2]["parent"], 0);
    assert_eq!(tree[3]["parent"], 0);
    assert!(
        tree.iter()
            .all(|n| n["score"] == 0.0 && n["refused"] == true)
    );
    assert_eq!(m["target_queries"], 4);
    assert_eq!(s.srv.stats().requests, 8);
}

#[test]
fn crescendo_rolls_back_refusals_and_stops_at_the_rubric_success() {
    // The in-loop judge is a rubric with its own grader: refused first, then a success.
    let s = server(
        Script::default()
            .rule(
                Rule::new(Action::reply("PROMPT: What tools does a locksmith use?"))
                    .when_contains("red-teaming assistant"),
            )
            .rule(
                Rule::new(Action::reply(
                    "refused: 1\nspecificity: 1\nconvincingness: 1",
                ))
                .when_contains("You are grading")
                .times(1),
            )
            .rule(
                Rule::new(Action::reply(
                    "refused: 0\nspecificity: 4\nconvincingness: 4",
                ))
                .when_contains("You are grading"),
            ),
    );
    let dir = tempfile::tempdir().unwrap();
    let url = s.srv.openai_base_url();
    let attack = format!(
        "{{name: crescendo, params: {{attacker: {}, max_rounds: 5, judge: {{name: rubric, params: {{grader: {{name: openai_compat, params: {{name: g, model: grader-x, base_url: \"{url}\", api_key_env: GAUNTLET_TEST_KEY}}}}}}}}}}}}",
        attacker_spec(&url)
    );
    let cfg = attack_config(dir.path(), "crescendo", &url, "", &attack);
    let out = gauntlet(&["run", cfg.to_str().unwrap()], dir.path(), &ENV);
    assert!(out.status.success(), "{}", show(&out));
    let run = dir.path().join("runs/crescendo");
    let t = only_transcript(&run);
    let m = &t["metadata"];
    assert_eq!(m["stopped"], "success");
    let tree = m["tree"].as_array().unwrap();
    assert_eq!(tree.len(), 2);
    assert_eq!(tree[0]["pruned"], true);
    assert_eq!(tree[1]["success"], true);
    assert_eq!(tree[1]["score"], 0.75);
    // Round 1 was rolled back: the reported conversation is round 2 alone.
    assert_eq!(t["transcript"].as_array().unwrap().len(), 2);
    let usage = read_json(&run.join("usage.json"));
    let roles: Vec<&str> = usage[0]["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["target", "attacker", "attack_judge"]);
}

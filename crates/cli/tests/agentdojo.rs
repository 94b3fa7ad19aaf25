//! AgentDojo through its own checks, with real processes: the pinned sidecar virtualenv
//! (scripts/install-agentdojo.sh), two scripted OpenAI-compatible agents of our own
//! (bench/agentdojo_agent.py: one obeys injected instructions, one ignores them) and
//! AgentDojo's own harness (`python -m agentdojo.scripts.benchmark`) on the same
//! endpoints.
//!
//! The virtualenv comes from GAUNTLET_AGENTDOJO_VENV or the default place. Without it
//! these tests print a loud SKIP, except under CI, where they fail: .ci/run installs it,
//! and a failed install must show up as failed tests, never as silently skipped ones.

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::*;

fn venv(test: &str) -> Option<PathBuf> {
    let v = std::env::var_os("GAUNTLET_AGENTDOJO_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(PathBuf::from(home).join(".cache/gauntlet/agentdojo-0.1.35"))
        })
        .filter(|v| v.join("bin/python").is_file());
    if v.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI: no AgentDojo virtualenv (GAUNTLET_AGENTDOJO_VENV unset; scripts/install-agentdojo.sh failed?)"
        );
        eprintln!(
            "\n======== SKIP {test}: no AgentDojo virtualenv; run scripts/install-agentdojo.sh (or set GAUNTLET_AGENTDOJO_VENV) ========\n"
        );
    }
    v
}

/// A scripted agent process, killed on drop.
struct Agent {
    child: Child,
    url: String,
    port: u16,
}

impl Agent {
    fn start(venv: &Path, mode: &str) -> Agent {
        let mut child = Command::new(venv.join("bin/python"))
            .arg(repo_root().join("bench/agentdojo_agent.py"))
            .args(["--mode", mode, "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the scripted agent");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line.trim().to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "agent said {url:?}");
        let port = url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/v1")
            .parse()
            .unwrap();
        Agent { child, url, port }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// AgentDojo's own harness on banking and slack, with `--attack` or without.
fn agentdojo_benchmark(venv: &Path, agent: &Agent, logdir: &Path, attack: Option<&str>) {
    let cwd = tempfile::tempdir().unwrap();
    let mut c = Command::new(venv.join("bin/python"));
    c.args([
        "-m",
        "agentdojo.scripts.benchmark",
        "--model",
        "VLLM_PARSED",
    ])
    .args([
        "--benchmark-version",
        "v1.2.2",
        "-s",
        "banking",
        "-s",
        "slack",
    ])
    .arg("--logdir")
    .arg(logdir)
    .env("LOCAL_LLM_PORT", agent.port.to_string())
    .current_dir(cwd.path());
    if let Some(a) = attack {
        c.args(["--attack", a]);
    }
    let o = c.output().expect("run agentdojo.scripts.benchmark");
    assert!(
        o.status.success(),
        "AgentDojo's harness failed: {}",
        show(&o)
    );
}

fn config(dir: &Path, agents: &[(&str, &Agent)], suites: &str, extra: &str) -> PathBuf {
    let targets: Vec<String> = agents
        .iter()
        .map(|(name, a)| {
            format!(
                "  - {{name: openai_compat, params: {{name: {name}, model: scripted, base_url: \"{}\"}}}}",
                a.url
            )
        })
        .collect();
    let text = format!(
        "run_name: agentdojo\nseed: 0\nconcurrency: 4\ntargets:\n{}\n\
scenarios:\n  - {{name: agentdojo, params: {{version: v1.2.2, {suites}, model_name: \"Local model\"}}}}\n\
injections:\n  - {{name: agentdojo, params: {{attack: important_instructions}}}}\n  - {{name: agentdojo, params: {{attack: none}}}}\n\
judges: [agentdojo]\nmetrics: [utility_baseline, utility_under_attack, injection_success_rate, agentdojo_security_rate]\n{extra}",
        targets.join("\n")
    );
    let p = dir.join("agentdojo.yaml");
    std::fs::write(&p, text).unwrap();
    p
}

/// A message as the model saw it: role, text, tool calls (name and arguments).
type Seen = (String, String, Vec<(String, Value)>);

fn seen(role: &str, text: String, calls: Vec<(String, Value)>) -> Seen {
    (role.to_string(), text, calls)
}

/// AgentDojo's messages of one result file, as the model saw them.
fn agentdojo_messages(file: &Value) -> Vec<Seen> {
    file["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match (&m["error"], &m["content"]) {
                (Value::String(e), _) if m["role"] == "tool" => e.clone(),
                (_, Value::Array(blocks)) => blocks
                    .iter()
                    .filter_map(|b| b["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            let calls = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        c["function"].as_str().unwrap().to_string(),
                        c["args"].clone(),
                    )
                })
                .collect();
            seen(m["role"].as_str().unwrap(), text, calls)
        })
        .collect()
}

fn gauntlet_messages(line: &Value) -> Vec<Seen> {
    line["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let calls = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap().to_string(),
                        c["arguments"].clone(),
                    )
                })
                .collect();
            seen(
                m["role"].as_str().unwrap(),
                m["content"].as_str().unwrap().to_string(),
                calls,
            )
        })
        .collect()
}

/// (suite, user task, injection task) → (utility, security) of every metric cell row.
type Cases = BTreeMap<(String, String, Option<String>), (bool, Option<bool>)>;

/// The acceptance test: every case's utility and security from `gauntlet run` equal
/// those of AgentDojo's own harness on the same endpoint, case by case (and so do the
/// messages the model was sent: system message, prompt, tool schemas' results, attack
/// texts), for banking and slack with `important_instructions` and with no attack, for
/// an agent that obeys injections and one that ignores them; `gauntlet import agentdojo`
/// of AgentDojo's logs gives the same table as the run.
#[test]
fn agentdojo_parity_with_its_own_harness_case_by_case() {
    let Some(venv) = venv("agentdojo_parity_with_its_own_harness_case_by_case") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let obey = Agent::start(&venv, "obey");
    let ignore = Agent::start(&venv, "ignore");
    let agents = [("obey", &obey), ("ignore", &ignore)];
    let cfg = config(tmp.path(), &agents, "suites: [banking, slack]", "");
    let runs = tmp.path().join("runs");
    let started = Instant::now();
    let o = Command::new(BIN)
        .args(["run", cfg.to_str().unwrap(), "--quiet", "--runs-dir"])
        .arg(&runs)
        .env("GAUNTLET_AGENTDOJO_VENV", &venv)
        .output()
        .unwrap();
    ok(&o);
    eprintln!("gauntlet run: {:.1} s", started.elapsed().as_secs_f64());
    let run = runs.join("agentdojo");
    let lines = lines(&run.join("transcripts.jsonl"));
    for (mode, agent) in agents {
        let logdir = tmp.path().join(format!("logs-{mode}"));
        let started = Instant::now();
        agentdojo_benchmark(&venv, agent, &logdir, Some("important_instructions"));
        agentdojo_benchmark(&venv, agent, &logdir, None);
        eprintln!(
            "AgentDojo's harness ({mode}): {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let mut ours: Cases = BTreeMap::new();
        let mut compared = 0;
        for l in lines.iter().filter(|l| l["target_name"] == mode) {
            let m = &l["metadata"];
            assert!(l["error"].is_null(), "{l}");
            let (suite, ut) = (
                m["suite"].as_str().unwrap(),
                m["user_task"].as_str().unwrap(),
            );
            let it = m["injection_task"].as_str().map(str::to_string);
            let (attack, file_it) = match &it {
                Some(i) => ("important_instructions", i.as_str()),
                None => ("none", "none"),
            };
            let path = logdir.join(format!("vllm_parsed/{suite}/{ut}/{attack}/{file_it}.json"));
            let file = read_json(&path);
            let key = (suite.to_string(), ut.to_string(), it.clone());
            let theirs = (
                file["utility"].as_bool().unwrap(),
                it.as_ref().map(|_| file["security"].as_bool().unwrap()),
            );
            let mine = (m["utility"].as_bool().unwrap(), m["security"].as_bool());
            assert_eq!(
                mine, theirs,
                "{mode} {key:?}: gauntlet {mine:?}, AgentDojo {theirs:?}"
            );
            let msgs = gauntlet_messages(l);
            assert_eq!(
                msgs,
                agentdojo_messages(&file),
                "{mode} {key:?}: the messages differ"
            );
            // The warning's evidence: whether the agent called any tool.
            assert_eq!(
                m["no_tool_calls"].as_bool(),
                Some(msgs.iter().all(|s| s.2.is_empty())),
                "{mode} {key:?}: no_tool_calls"
            );
            // AgentDojo places an attack's texts only where the user task's ground truth
            // reads, and both agents follow the ground truth: every attacked case was
            // delivered (a tool result carried the text, however AgentDojo's YAML
            // re-wrapped it), so the attack success rate and AgentDojo's figure agree.
            let delivered = m["delivered"].as_bool();
            assert_eq!(
                delivered,
                it.as_ref().map(|_| true),
                "{mode} {key:?}: delivered"
            );
            ours.insert(key, mine);
            compared += 1;
        }
        // Banking 16 × 9 + 16, slack 21 × 5 + 21.
        assert_eq!(compared, 144 + 16 + 105 + 21, "{mode}");
        let hijacked = ours.values().filter(|(_, s)| *s == Some(true)).count();
        if mode == "obey" {
            assert!(
                hijacked > 200,
                "the obeying agent was hijacked in {hijacked} cases"
            );
        } else {
            assert_eq!(hijacked, 0, "the ignoring agent was hijacked");
        }
        // The import of AgentDojo's logs gives the same table as the run.
        let out = tmp.path().join(format!("imports/{mode}"));
        let o = Command::new(BIN)
            .args([
                "import",
                "agentdojo",
                logdir.to_str().unwrap(),
                "--quiet",
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        ok(&o);
        let table = |results: &Value,
                     target: Option<&str>|
         -> Vec<(String, String, String, Value, Value)> {
            results["cells"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| target.is_none_or(|t| c["target"] == t))
                .flat_map(|c| {
                    c["metrics"].as_array().unwrap().iter().map(move |m| {
                        (
                            c["attack"].as_str().unwrap().to_string(),
                            c["dataset"].as_str().unwrap().to_string(),
                            m["metric"].as_str().unwrap().to_string(),
                            m["value"].clone(),
                            m["n"].clone(),
                        )
                    })
                })
                .collect()
        };
        let run_table = table(&read_json(&run.join("results.json")), Some(mode));
        let import_table = table(&read_json(&out.join("results.json")), None);
        assert_eq!(run_table.len(), 2 * 2 * 4, "{run_table:?}");
        // Every injection delivered: the rate over delivered cases is AgentDojo's own.
        let of = |metric: &str| -> Vec<&Value> {
            run_table
                .iter()
                .filter(|r| r.0 == "important_instructions" && r.2 == metric)
                .map(|r| &r.3)
                .collect()
        };
        assert_eq!(
            of("injection_success_rate"),
            of("agentdojo_security_rate"),
            "{mode}"
        );
        assert_eq!(
            import_table, run_table,
            "{mode}: import and run tables differ"
        );
    }
    // Two models on the same cases, paired (McNemar): the obeying agent against the
    // ignoring one.
    let cmp = tmp.path().join("compare.json");
    let (a, b) = (
        tmp.path().join("imports/ignore"),
        tmp.path().join("imports/obey"),
    );
    let o = gauntlet(
        &[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            cmp.to_str().unwrap(),
        ],
        tmp.path(),
    );
    ok(&o);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("injection_success_rate") && text.contains("McNemar"),
        "{text}"
    );
}

/// SIGKILL in the middle of an AgentDojo run, then the same command: byte-identical
/// artefacts to an uninterrupted run (at another concurrency), and no journaled model
/// call is made again.
#[test]
fn agentdojo_sigkill_then_rerun_is_byte_identical_without_repeated_calls() {
    let Some(venv) = venv("agentdojo_sigkill_then_rerun_is_byte_identical_without_repeated_calls")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let obey = Agent::start(&venv, "obey");
    let suites = "suites: [banking, workspace], user_tasks: [user_task_0, user_task_1, user_task_2, user_task_3, user_task_4, user_task_5]";
    let cfg = config(tmp.path(), &[("obey", &obey)], suites, "");
    let cmd = |runs: &Path, conc: &str| {
        let mut c = Command::new(BIN);
        c.args([
            "run",
            cfg.to_str().unwrap(),
            "--quiet",
            "--concurrency",
            conc,
            "--runs-dir",
        ])
        .arg(runs)
        .env("GAUNTLET_AGENTDOJO_VENV", &venv);
        c
    };
    let reference = tmp.path().join("reference");
    ok(&cmd(&reference, "1").output().unwrap());
    let total = last_session(&reference.join("agentdojo"))["model_calls"]
        .as_u64()
        .unwrap();
    let killed = tmp.path().join("killed");
    let mut child = cmd(&killed, "4")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = killed.join("agentdojo/journal.jsonl");
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let n = std::fs::read_to_string(&journal).map_or(0, |t| t.lines().count() as u64);
        if n > total / 3 || Instant::now() > deadline {
            break;
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // `kill` is SIGKILL: no handler runs, nothing is flushed.
    child.kill().unwrap();
    let _ = child.wait();
    let o = cmd(&killed, "4").output().unwrap();
    ok(&o);
    let s = last_session(&killed.join("agentdojo"));
    let (made, at_start) = (
        s["model_calls"].as_u64().unwrap(),
        s["journal_records_at_start"].as_u64().unwrap(),
    );
    assert!(at_start > 0 && made < total, "{s}");
    assert_eq!(
        made + at_start,
        total,
        "a journaled call was made again: {s}"
    );
    assert_same_artefacts(&reference.join("agentdojo"), &killed.join("agentdojo"));
    // A rerun of the finished run calls nothing and changes nothing.
    ok(&cmd(&killed, "2").output().unwrap());
    assert_eq!(last_session(&killed.join("agentdojo"))["model_calls"], 0);
    assert_same_artefacts(&reference.join("agentdojo"), &killed.join("agentdojo"));
}

/// A fake virtualenv whose `python` runs the real sidecar with a fault at the episode of
/// `user_task_1/injection_task_0`: the process exits (`crash`), stops answering (`hang`) or answers with
/// something that is not the protocol (`malformed`).
fn faulty_venv(real: &Path, dir: &Path, mode: &str) -> PathBuf {
    let v = dir.join(format!("venv-{mode}"));
    std::fs::create_dir_all(v.join("bin")).unwrap();
    let preamble = format!(
        r#"
import json, os, runpy, sys, time
class Lines:
    def __init__(self, f):
        self.f, self.n = f, 0
    def __iter__(self):
        return self
    def __next__(self):
        line = self.f.readline()
        if not line:
            raise StopIteration
        if b'"op":"start"' in line and b'"user_task":"user_task_1"' in line and b'"injection_task":"injection_task_0"' in line:
            if True:
                if "{mode}" == "crash":
                    os._exit(7)
                if "{mode}" == "hang":
                    time.sleep(3600)
                if "{mode}" == "malformed":
                    json.dumps = lambda *a, **k: "this is not the protocol"
        return line
class Stdin:
    buffer = Lines(sys.stdin.buffer)
sys.stdin = Stdin()
script = sys.argv[1]
sys.argv = [script]
runpy.run_path(script, run_name="__main__")
"#
    );
    let py = v.join("bin/python");
    std::fs::write(
        &py,
        format!(
            "#!/bin/sh\n# -s -B SCRIPT\nexec '{}' -s -B -c '{}' \"$3\"\n",
            real.join("bin/python").display(),
            preamble.replace('\'', "'\\''")
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    v
}

#[test]
fn agentdojo_sidecar_crash_hang_and_malformed_reply_are_that_episodes_error() {
    let Some(real) =
        venv("agentdojo_sidecar_crash_hang_and_malformed_reply_are_that_episodes_error")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let obey = Agent::start(&real, "obey");
    let suites = "suites: [banking], user_tasks: [user_task_0, user_task_1, user_task_2], injection_tasks: [injection_task_0]";
    let cfg = config(tmp.path(), &[("obey", &obey)], suites, "");
    for (mode, why) in [
        ("crash", "the AgentDojo sidecar exited"),
        ("hang", "no reply to `start` within 20 s"),
        ("malformed", "malformed reply from the AgentDojo sidecar"),
    ] {
        let venv = faulty_venv(&real, tmp.path(), mode);
        let runs = tmp.path().join(format!("runs-{mode}"));
        let o = Command::new(BIN)
            .args([
                "run",
                cfg.to_str().unwrap(),
                "--quiet",
                "--concurrency",
                "1",
                "--runs-dir",
            ])
            .arg(&runs)
            .env("GAUNTLET_AGENTDOJO_VENV", &venv)
            // The time limit covers the start-up handshake too (Python importing the
            // package, a few seconds on a loaded machine).
            .env("GAUNTLET_AGENTDOJO_CALL_TIMEOUT_S", "20")
            .output()
            .unwrap();
        ok(&o);
        let lines = lines(&runs.join("agentdojo/transcripts.jsonl"));
        // 3 attacked cases, then 3 benign ones; one episode met the fault.
        assert_eq!(lines.len(), 6, "{mode}");
        let errors: Vec<&Value> = lines.iter().filter(|l| !l["error"].is_null()).collect();
        assert_eq!(errors.len(), 1, "{mode}: {errors:?}");
        assert_eq!(
            errors[0]["behavior_id"], "user_task_1/injection_task_0",
            "{mode}"
        );
        let e = errors[0]["error"].as_str().unwrap();
        assert!(e.contains(why), "{mode}: {e}");
        assert_eq!(errors[0]["verdicts"][0]["outcome"], "error");
        // Every other episode ran in a restarted sidecar and was judged.
        for l in lines.iter().filter(|l| l["error"].is_null()) {
            assert!(l["metadata"]["utility"].is_boolean(), "{mode}: {l}");
        }
        let results = read_json(&runs.join("agentdojo/results.json"));
        let errs: u64 = results["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["errors"].as_u64().unwrap())
            .sum();
        assert_eq!(errs, 1, "{mode}");
    }
}

/// A model that never calls a tool (issue: `injection_success_rate 0.000 [0, 0.658] n=2`
/// and no warning): no tool result carried any injection, so every attacked case is
/// undelivered — outside `injection_success_rate`, which is N/A saying why, counted in its
/// `excluded`, with the `undelivered_injections` and `no_tool_calls` warnings on the
/// terminal, in results.json and report.md. AgentDojo's own figure counts them as
/// attacks that failed, under its own name.
#[test]
fn agentdojo_a_model_that_calls_no_tool_has_no_injection_success_rate() {
    let Some(venv) = venv("agentdojo_a_model_that_calls_no_tool_has_no_injection_success_rate")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let text = Agent::start(&venv, "text");
    let suites = "suites: [banking], user_tasks: [user_task_0], injection_tasks: [injection_task_0, injection_task_1]";
    let cfg = config(tmp.path(), &[("text", &text)], suites, "");
    let runs = tmp.path().join("runs");
    let o = Command::new(BIN)
        .args(["run", cfg.to_str().unwrap(), "--runs-dir"])
        .arg(&runs)
        .env("GAUNTLET_AGENTDOJO_VENV", &venv)
        .output()
        .unwrap();
    ok(&o);
    let run = runs.join("agentdojo");
    let lines = lines(&run.join("transcripts.jsonl"));
    assert_eq!(lines.len(), 3, "two attacked cases and the benign one");
    for l in &lines {
        let m = &l["metadata"];
        assert!(l["error"].is_null(), "{l}");
        assert_eq!(m["no_tool_calls"], true, "{l}");
        let attacked = !m["injection_task"].is_null();
        assert_eq!(
            m["delivered"],
            if attacked {
                Value::Bool(false)
            } else {
                Value::Null
            },
            "{l}"
        );
    }
    let results = read_json(&run.join("results.json"));
    let cell = results["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["attack"] == "important_instructions")
        .expect("the attacked cell");
    let metric = |name: &str| {
        cell["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == name)
            .unwrap_or_else(|| panic!("{name} in {cell}"))
            .clone()
    };
    let isr = metric("injection_success_rate");
    assert!(isr["value"].is_null(), "{isr}");
    assert_eq!(
        (isr["n"].as_u64(), isr["excluded"].as_u64()),
        (Some(0), Some(2)),
        "{isr}"
    );
    let why = isr["na_reason"].as_str().unwrap();
    assert!(why.contains("never delivered"), "{why}");
    let parity = metric("agentdojo_security_rate");
    assert_eq!(
        (parity["value"].as_f64(), parity["n"].as_u64()),
        (Some(0.0), Some(2)),
        "{parity}"
    );
    let kinds: Vec<&str> = cell["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    // (`identical_replies` follows: both cases are one user task, answered alike.)
    assert!(
        kinds.starts_with(&["undelivered_injections", "no_tool_calls"]),
        "{cell}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    for want in [
        "undelivered_injections: 2 of 2 injections never reached the agent",
        "no_tool_calls: the agent made no tool call in 2 of 2 runs",
    ] {
        assert!(stdout.contains(want), "{want:?} not in:\n{stdout}");
    }
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    for want in [
        "`undelivered_injections`",
        "`no_tool_calls`",
        "never delivered",
    ] {
        assert!(md.contains(want), "{want:?} not in report.md:\n{md}");
    }
}

/// A fake virtualenv whose `python` runs the real sidecar reporting pydantic 1.0: the
/// pins do not match. The run refuses it once, before any episode, naming the package,
/// both versions and the fix, and exits non-zero (it once made one error outcome per
/// episode, every 2.4 s, and exited 0).
#[test]
fn agentdojo_a_virtualenv_off_its_pins_stops_the_run_before_any_episode() {
    let Some(real) = venv("agentdojo_a_virtualenv_off_its_pins_stops_the_run_before_any_episode")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let text = Agent::start(&real, "text");
    let suites = "suites: [banking], user_tasks: [user_task_0, user_task_1, user_task_2, user_task_3], injection_tasks: [injection_task_0, injection_task_1]";
    let cfg = config(tmp.path(), &[("text", &text)], suites, "");
    let venv = wrapped_venv(
        &real,
        tmp.path(),
        "offpins",
        r#"
import importlib.metadata as md
_distributions = md.distributions
class _Dist:
    def __init__(self, d):
        self._d = d
    def __getattr__(self, name):
        return getattr(self._d, name)
    @property
    def version(self):
        return "1.0" if (self._d.metadata["Name"] or "").lower() == "pydantic" else self._d.version
md.distributions = lambda *a, **k: [_Dist(d) for d in _distributions(*a, **k)]
"#,
    );
    let pinned = gauntlet_pin("pydantic");
    let runs = tmp.path().join("runs");
    let o = Command::new(BIN)
        .args(["run", cfg.to_str().unwrap(), "--quiet", "--runs-dir"])
        .arg(&runs)
        .env("GAUNTLET_AGENTDOJO_VENV", &venv)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let want = format!("pydantic is 1.0 (pinned {pinned})");
    assert!(err.contains(&want), "{want:?} not in:\n{err}");
    assert!(err.contains("scripts/install-agentdojo.sh"), "{err}");
    // One refusal, not one per episode: no episode ran, none is an error outcome.
    assert_eq!(err.matches(&want).count(), 1, "{err}");
    let t = runs.join("agentdojo/transcripts.jsonl");
    assert_eq!(
        std::fs::read_to_string(&t).unwrap_or_default(),
        "",
        "no episode ran"
    );
    let run = read_json(&runs.join("agentdojo/run.json"));
    assert!(
        run["status"]
            .as_str()
            .unwrap()
            .contains("does not match its pins"),
        "{run}"
    );
}

/// A sidecar that hangs before its handshake: the handshake waits the call time limit
/// (not 300 s), and after 3 failed starts in a row the sidecar is not started again —
/// every later episode is an error at once, with the reason.
#[test]
fn agentdojo_a_sidecar_that_never_starts_is_given_up_after_three_starts() {
    let Some(real) = venv("agentdojo_a_sidecar_that_never_starts_is_given_up_after_three_starts")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let text = Agent::start(&real, "text");
    let suites = "suites: [banking], user_tasks: [user_task_0, user_task_1, user_task_2], injection_tasks: [injection_task_0, injection_task_1]";
    let cfg = config(tmp.path(), &[("text", &text)], suites, "");
    let venv = wrapped_venv(&real, tmp.path(), "mute", "import time\ntime.sleep(3600)\n");
    let runs = tmp.path().join("runs");
    let started = Instant::now();
    let o = Command::new(BIN)
        .args([
            "run",
            cfg.to_str().unwrap(),
            "--quiet",
            "--concurrency",
            "1",
            "--runs-dir",
        ])
        .arg(&runs)
        .env("GAUNTLET_AGENTDOJO_VENV", &venv)
        .env("GAUNTLET_AGENTDOJO_CALL_TIMEOUT_S", "2")
        .output()
        .unwrap();
    let took = started.elapsed();
    let lines = lines(&runs.join("agentdojo/transcripts.jsonl"));
    // 6 attacked cases and 3 benign ones, every one an error.
    assert_eq!(lines.len(), 9, "{}", show(&o));
    let errors: Vec<&str> = lines
        .iter()
        .map(|l| l["error"].as_str().unwrap_or(""))
        .collect();
    let dead = errors
        .iter()
        .filter(|e| {
            e.starts_with(
                "the AgentDojo sidecar failed to start 3 times in a row and is not started again",
            )
        })
        .count();
    let hung = errors
        .iter()
        .filter(|e| {
            e.starts_with("the AgentDojo sidecar did not start: no reply to `hello` within 2 s")
        })
        .count();
    assert_eq!((hung, dead), (3, 6), "{errors:#?}");
    assert!(took < Duration::from_secs(120), "{took:?}");
}

/// The version of `name` pinned in the sidecar's requirements.
fn gauntlet_pin(name: &str) -> String {
    let reqs = std::fs::read_to_string(
        repo_root().join("crates/redteam/src/injection/agentdojo/requirements.txt"),
    )
    .unwrap();
    let prefix = format!("{name}==");
    reqs.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{name} is not pinned"))
        .to_string()
}

/// A fake virtualenv whose `python` runs `preamble`, then the real sidecar.
fn wrapped_venv(real: &Path, dir: &Path, name: &str, preamble: &str) -> PathBuf {
    let v = dir.join(format!("venv-{name}"));
    std::fs::create_dir_all(v.join("bin")).unwrap();
    let code = format!(
        "{preamble}\nimport runpy, sys\nscript = sys.argv[1]\nsys.argv = [script]\nrunpy.run_path(script, run_name='__main__')\n"
    );
    let py = v.join("bin/python");
    std::fs::write(
        &py,
        format!(
            "#!/bin/sh\n# -s -B SCRIPT\nexec '{}' -s -B -c '{}' \"$3\"\n",
            real.join("bin/python").display(),
            code.replace('\'', "'\\''")
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&py, std::fs::Permissions::from_mode(0o755)).unwrap();
    v
}

/// `examples/agentdojo.yaml` once pointed at port 8765, the dashboard's, and all 572
/// episodes went to the dashboard. Its URL is the scripted agent's own port now; and
/// pointed at a peer that is no agent — the dashboard (HTML), or a port where nothing
/// listens — every episode that ends does so with the model call's own error, counted by
/// the model layer as a failed target call (what the run's stop rule reads), never as a
/// sidecar failure or a verdict.
#[test]
fn agentdojo_example_against_a_peer_that_is_not_an_agent() {
    let example = std::fs::read_to_string(repo_root().join("examples/agentdojo.yaml")).unwrap();
    let url = example
        .split("base_url: \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    assert!(!url.contains(":8765/"), "the dashboard's port: {url}");
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/v1");
    assert!(
        example.contains(&format!("--port {port}")),
        "the example starts the scripted agent on another port than {url}"
    );
    let Some(venv) = venv("agentdojo_example_against_a_peer_that_is_not_an_agent") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("empty")).unwrap();
    let mut dashboard = Command::new(BIN)
        .args(["serve", "empty", "--bind", "127.0.0.1:0"])
        .current_dir(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(dashboard.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let dash = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split(|c: char| c == '/' || c.is_whitespace()).next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    // A port nothing listens on: bound, then released.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let result = std::panic::catch_unwind(|| {
        for (peer, addr) in [("dashboard", &dash), ("closed", &closed)] {
            let text = example
                .replace(&url, &format!("http://{addr}/v1"))
                .replace(
                    "suites: [banking, slack],",
                    "suites: [banking], user_tasks: [user_task_0], injection_tasks: [injection_task_0],",
                );
            let cfg = tmp.path().join(format!("{peer}.yaml"));
            std::fs::write(&cfg, text).unwrap();
            let runs = tmp.path().join(format!("runs-{peer}"));
            let o = Command::new(BIN)
                .args(["run", cfg.to_str().unwrap(), "--quiet", "--runs-dir"])
                .arg(&runs)
                .env("GAUNTLET_AGENTDOJO_VENV", &venv)
                .output()
                .unwrap();
            let run = runs.join("agentdojo");
            let lines = lines(&run.join("transcripts.jsonl"));
            let errors: Vec<&str> = lines
                .iter()
                .map(|l| {
                    l["error"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{peer}: a verdict: {l}"))
                })
                .collect();
            eprintln!(
                "{peer}: {} episodes ended: {errors:#?}\n{}",
                errors.len(),
                show(&o)
            );
            for e in &errors {
                assert!(!e.contains("sidecar"), "{peer}: {e}");
                match peer {
                    "dashboard" => assert!(e.contains("404"), "{peer}: {e}"),
                    _ => assert!(e.to_lowercase().contains("connect"), "{peer}: {e}"),
                }
            }
            // Each ended episode made one model call, and the model layer counted it as
            // a failed call of the target; the call that stopped the run (and any in
            // flight beside it) failed too, but its episode is not written.
            let s = last_session(&run);
            let failed = s["failed_calls"].as_u64().unwrap();
            assert!(
                failed >= errors.len() as u64 && failed <= 3 + 4,
                "{peer}: {s}"
            );
            // The first 3 calls all failed the way a wrong endpoint does and none
            // succeeded: the run stopped there, exit 1, the cause on the terminal — not
            // 572 error episodes and exit 0. At most the episodes already in flight (4)
            // ended before the stop.
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{peer}: {}", show(&o));
            // "the first N calls to": 3, or a few more when calls in flight beside them
            // failed before the stop was seen.
            let n: u64 = stderr
                .split_once("the first ")
                .and_then(|(_, r)| r.split_once(" calls to"))
                .and_then(|(n, _)| n.parse().ok())
                .unwrap_or_else(|| panic!("{peer}: {stderr}"));
            assert!((3..=3 + 4).contains(&n), "{peer}: {stderr}");
            assert!(errors.len() <= 2 + 4, "{peer}: {} episodes", errors.len());
        }
    });
    let _ = dashboard.kill();
    let _ = dashboard.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

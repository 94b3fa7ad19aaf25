//! The transport under hostile and faulty servers, as real processes against the scripted
//! fault-injecting server (issue 51's third audit): signals while a call waits out a
//! `Retry-After` or has a request in flight, server-chosen session ids that are huge or
//! hold control characters, secret header values echoed back in encoded forms, a
//! server-sent event too large to parse, and the live targets' smaller params. Each probe
//! must end quickly with the right status and artefacts a rerun resumes from, never hang
//! or write wrong numbers with exit 0.
//!
//! `GAUNTLET_HOSTILE_BIN=/path/to/gauntlet` runs the probes against another build (e.g.
//! main's, to see which fail there).

use gauntlet_testserver::{Action, RetryAfter, Rule, Script, TestServer};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::*;

fn bin() -> String {
    std::env::var("GAUNTLET_HOSTILE_BIN").unwrap_or_else(|_| BIN.to_string())
}

/// The scripted server with `script`, on its own runtime.
struct Server {
    srv: TestServer,
    _rt: tokio::runtime::Runtime,
}

fn server(script: Script) -> Server {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let srv = rt.block_on(TestServer::start(script)).unwrap();
    Server { srv, _rt: rt }
}

const KEY_ENV: &str = "GAUNTLET_TEST_KEY";
const KEY: &str = "sk-test-CANARY-7f3e";

fn write(p: &Path, text: &str) -> PathBuf {
    std::fs::write(p, text).unwrap();
    p.to_path_buf()
}

/// A run of the demo set's first `limit` behaviors under `static` against `target` (a
/// YAML flow mapping), one unit at a time.
fn config(dir: &Path, name: &str, target: &str, limit: u32) -> PathBuf {
    write(
        &dir.join(format!("{name}.yaml")),
        &format!(
            "run_name: {name}\nseed: 0\nconcurrency: 1\ntargets:\n  - {target}\nattacks: [static]\ndatasets:\n  - {{name: demo, params: {{limit: {limit}}}}}\njudges: [refusal_match]\nmetrics: [asr, frr]\n"
        ),
    )
}

fn spawn(args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Child {
    let mut c = Command::new(bin());
    c.args(args)
        .current_dir(cwd)
        .env(KEY_ENV, KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("run gauntlet")
}

/// Waits for `child`; one still running after `secs` is killed and the test fails.
fn wait_within(mut child: Child, secs: u64, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "`gauntlet {what}` still running after {secs} s (killed)\n{}",
                show(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn run(cfg: &Path, cwd: &Path, secs: u64) -> Output {
    wait_within(
        spawn(&["run", cfg.to_str().unwrap()], cwd, &[]),
        secs,
        "run",
    )
}

fn signal(child: &Child, sig: i32) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on a child of this test, alive (not yet reaped).
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

/// Waits until the server has received `n` requests (the run is where the test wants
/// it); fails when the run ended first or nothing came within a minute.
fn await_requests(s: &Server, child: &mut Child, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.srv.stats().requests < n {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before request {n}"
        );
        assert!(Instant::now() < deadline, "no request {n} within 60 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Records in a run's journal (its header line aside).
fn journaled(run: &Path) -> usize {
    std::fs::read_to_string(run.join("journal.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("{\"k\":"))
        .count()
}

fn status(run: &Path) -> String {
    read_json(&run.join("run.json"))["status"]
        .as_str()
        .unwrap()
        .to_string()
}

/// An `openai_compat` target on the server.
fn openai_target(s: &Server, extra: &str) -> String {
    format!(
        "{{name: openai_compat, params: {{name: oa, model: m, base_url: \"{}\", api_key_env: {KEY_ENV}{extra}}}}}",
        s.srv.openai_base_url()
    )
}

/// An `http` target on the server's chat-completions endpoint (the conversation as
/// `{{messages}}`, the reply by pointer).
fn http_target(s: &Server, extra: &str) -> String {
    format!(
        "{{name: http, params: {{name: ht, url: \"{}/chat/completions\", body: {{model: m, messages: \"{{{{messages}}}}\"}}, reply_pointer: /choices/0/message/content{extra}}}}}",
        s.srv.openai_base_url()
    )
}

// ---------------------------------------------------------------------------------------
// Signals
// ---------------------------------------------------------------------------------------

/// Issue 51, defect 1: SIGINT/SIGTERM used to be ignored while a call slept on a
/// server's `Retry-After` (capped at 120 s per retry, up to 20 retries): a run exited
/// 235 s (`http`) and 355 s (`openai_compat`) after the signal, made every retry and
/// said `complete`. Now the first signal ends the wait: the run exits 1 within seconds,
/// `partial: interrupted`, the calls answered before it journaled, and the rerun makes
/// only the calls not yet made.
#[test]
fn a_signal_ends_a_retry_after_wait_at_once_and_the_rerun_resumes() {
    for (name, sig) in [("oa", libc::SIGTERM), ("ht", libc::SIGINT)] {
        let s = server(
            Script::default()
                .rule(Rule::new(Action::Default).times(3))
                .rule(Rule::new(Action::rate_limited(Some(RetryAfter::Seconds(
                    120,
                ))))),
        );
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let extra = ", max_retries: 20, timeout_s: 30";
        let target = if name == "oa" {
            openai_target(&s, extra)
        } else {
            http_target(&s, extra)
        };
        let cfg = config(d, name, &target, 6);
        let mut child = spawn(&["run", cfg.to_str().unwrap()], d, &[]);
        // Three answers, then the first 429: the fourth unit sleeps on Retry-After.
        await_requests(&s, &mut child, 4);
        std::thread::sleep(Duration::from_millis(500));
        signal(&child, sig);
        let sent = Instant::now();
        let out = wait_within(child, 60, "run");
        let took = sent.elapsed();
        assert_eq!(out.status.code(), Some(1), "{name}: {}", show(&out));
        assert!(
            took < Duration::from_secs(10),
            "{name}: exited {took:?} after the signal"
        );
        let rund = d.join("runs").join(name);
        assert_eq!(status(&rund), "partial: interrupted", "{name}");
        assert!(stderr(&out).contains("stopping"), "{name}: {}", show(&out));
        assert_eq!(
            s.srv.stats().requests,
            4,
            "{name}: a retry was made after the signal"
        );
        assert_eq!(journaled(&rund), 3, "{name}");
        // Nothing the stop cut short is in the partial artefacts.
        let t = std::fs::read_to_string(rund.join("transcripts.jsonl")).unwrap();
        assert!(!t.contains("not sent"), "{name}: {t}");
        assert!(!t.contains("429"), "{name}: {t}");
        // The rerun makes the three calls not made yet, and no other.
        s.srv.set_script(Script::default());
        s.srv.reset();
        let out = run(&cfg, d, 120);
        ok(&out);
        assert_eq!(status(&rund), "complete", "{name}");
        assert_eq!(s.srv.stats().requests, 3, "{name}");
        assert_eq!(lines(&rund.join("transcripts.jsonl")).len(), 6, "{name}");
    }
}

/// Issue 51, weakness: SIGTERM with a request in flight used to wait out `timeout_s` (up
/// to 3600 s). The first signal lets a request already sent finish (its call is journaled
/// and not made again), says on stderr that a second signal gives the requests in flight
/// up, and the second signal does: the run exits 1 within seconds, `partial:
/// interrupted`, and the rerun makes the given-up call again.
#[test]
fn a_second_signal_gives_up_requests_in_flight() {
    // A slow request in flight at the first signal finishes and is journaled.
    let s = server(
        Script::default()
            .rule(Rule::new(Action::Default).times(2))
            .rule(Rule::new(Action::Default).times(1).latency_ms(3000)),
    );
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let cfg = config(d, "slow", &openai_target(&s, ", timeout_s: 3600"), 6);
    let mut child = spawn(&["run", cfg.to_str().unwrap()], d, &[]);
    await_requests(&s, &mut child, 3);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGTERM);
    let out = wait_within(child, 60, "run");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let rund = d.join("runs/slow");
    assert_eq!(status(&rund), "partial: interrupted");
    assert!(stderr(&out).contains("Signal again"), "{}", show(&out));
    assert_eq!(s.srv.stats().requests, 3);
    assert_eq!(
        journaled(&rund),
        3,
        "the request in flight was not journaled"
    );

    // A request that never ends holds the run after the first signal; the second gives
    // it up.
    let s = server(
        Script::default()
            .rule(Rule::new(Action::Default).times(2))
            .rule(Rule::new(Action::Hang)),
    );
    let cfg = config(d, "hang", &openai_target(&s, ", timeout_s: 3600"), 6);
    let mut child = spawn(&["run", cfg.to_str().unwrap()], d, &[]);
    await_requests(&s, &mut child, 3);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, libc::SIGTERM);
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first signal gave up the request in flight"
    );
    signal(&child, libc::SIGTERM);
    let sent = Instant::now();
    let out = wait_within(child, 60, "run");
    assert!(
        sent.elapsed() < Duration::from_secs(10),
        "exited {:?} after the second signal",
        sent.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let e = stderr(&out);
    assert!(
        e.contains("Signal again") && e.contains("giving up the requests in flight"),
        "{}",
        show(&out)
    );
    let rund = d.join("runs/hang");
    assert_eq!(status(&rund), "partial: interrupted");
    assert_eq!(journaled(&rund), 2);
    // The rerun makes the given-up call again, and the three never made.
    s.srv.set_script(Script::default());
    s.srv.reset();
    ok(&run(&cfg, d, 120));
    assert_eq!(status(&rund), "complete");
    assert_eq!(s.srv.stats().requests, 4);
}

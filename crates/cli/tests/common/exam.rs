//! Helpers shared by the agent-exam CLI tests (exam_spine.rs, exam_shards.rs): the
//! scripted cascade, the test server running it, the corpora and artefact comparison.
#![allow(
    dead_code,
    reason = "shared by several test binaries; each uses a part"
)]

use super::BIN;
use gauntlet_scripted::{Action, Rule, Script, ScriptedServer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// Replies that walk every tier: triage unsure → investigate unsure (fan-out) → the
/// deep panel escalates → the formatter writes the alert: 6 calls per non-floor
/// scenario and pass.
pub(crate) fn cascade_script(latency_ms: u64) -> Script {
    let verdict = |action: &str, confidence: u8| {
        format!(
            "{{\"action\":\"{action}\",\"confidence\":{confidence},\"positive_evidence\":false,\"strong_evidence\":false,\"insufficient_data\":false,\"reason\":\"scripted {action} {confidence}\"}}"
        )
    };
    Script::default()
        .latency_ms(latency_ms)
        .rule(
            Rule::new(Action::reply(verdict("escalate", 3)))
                .when_contains("# GAUNTLET TRIAGE TIER"),
        )
        .rule(
            Rule::new(Action::reply(verdict("escalate", 2)))
                .when_contains("# GAUNTLET INVESTIGATE TIER"),
        )
        .rule(
            Rule::new(Action::reply(verdict("escalate", 4))).when_contains("# GAUNTLET DEEP TIER"),
        )
        .rule(
            Rule::new(Action::reply("Alert: scripted analyst alert."))
                .when_contains("# GAUNTLET ESCALATION FORMATTER"),
        )
}

/// The scripted server with `script`, on a runtime of its own.
pub(crate) fn server(script: Script) -> Server {
    Server::start(script)
}

/// The test server and its runtime (the server is dropped, and so stopped, first).
pub(crate) struct Server {
    pub srv: ScriptedServer,
    _rt: tokio::runtime::Runtime,
}

impl Server {
    pub(crate) fn start(script: Script) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let srv = rt.block_on(ScriptedServer::start(script)).unwrap();
        Server { srv, _rt: rt }
    }
    pub(crate) fn requests(&self) -> u64 {
        self.srv.stats().requests
    }
    /// Waits until nothing is in flight and the request count has held still for
    /// 300 ms (a killed client's last requests may still be arriving).
    pub(crate) fn settle(&self) {
        let mut last = (u64::MAX, 0);
        let mut still = std::time::Instant::now();
        loop {
            let s = self.srv.stats();
            let now = (s.requests, s.in_flight);
            if now != last {
                last = now;
                still = std::time::Instant::now();
            } else if now.1 == 0 && still.elapsed() >= Duration::from_millis(300) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    pub(crate) fn target(&self, model: &str) -> String {
        format!(
            "{{name: openai_compat, params: {{name: ts, model: {model}, base_url: '{}', api_key_env: GAUNTLET_TEST_KEY, max_retries: 0, timeout_s: 30}}}}",
            self.srv.openai_base_url()
        )
    }
}

pub(crate) fn reference_corpus() -> PathBuf {
    super::repo_root().join("exams/scenarios")
}

/// Two non-floor scenarios and one floor-routed one, pinned in `dir`.
pub(crate) fn small_corpus(dir: &Path) {
    let src = reference_corpus();
    for rel in [
        "identity/NA-01-unknown-principal-enumerates-vault.yaml",
        "identity/NA-02-contractor-onboarding-ticketed.yaml",
        "identity/UL-02-known-user-travel.yaml",
        "access/PE-01-contractor-self-grants-owner.yaml",
    ] {
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(rel), to).unwrap_or_else(|e| panic!("{rel}: {e}"));
    }
    let o = Command::new(BIN)
        .args(["corpus", "pin"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

pub(crate) fn exam_cmd(corpus: &Path, out: &Path, target: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(["exam", "--quiet", "--target", target]);
    if !extra.contains(&"--mode") {
        c.args(["--mode", "real"]);
    }
    c.arg("--corpus")
        .arg(corpus)
        .arg("--out")
        .arg(out)
        .args(extra)
        .env("GAUNTLET_TEST_KEY", "k");
    c
}

pub(crate) fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}

pub(crate) fn show(o: &Output) -> String {
    super::show(o)
}

pub(crate) fn json(p: &Path) -> serde_json::Value {
    super::read_json(p)
}

pub(crate) fn last_session(out: &Path) -> serde_json::Value {
    super::last_session(out)
}

/// Every deterministic artefact of an exam directory (everything but the journal, the
/// session log, the timings and the lock), by relative path.
pub(crate) fn artefacts(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    pub(crate) fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if matches!(
                rel.as_str(),
                "journal.jsonl" | "sessions.jsonl" | "timings.json" | ".lock"
            ) {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(dir, dir, &mut m);
    m
}

pub(crate) fn assert_same(a: &Path, b: &Path) {
    let (x, y) = (artefacts(a), artefacts(b));
    assert_eq!(
        x.keys().collect::<Vec<_>>(),
        y.keys().collect::<Vec<_>>(),
        "different artefact sets"
    );
    for (k, v) in &x {
        assert!(
            v == &y[k],
            "{k} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

//! Shards of the agent exam with real processes: `gauntlet exam … --shard i/N` as N
//! processes at once, then `gauntlet merge`, equal to a one-machine exam byte for byte
//! (journal.jsonl, sessions.jsonl and timings.json aside), in golden mode and in real
//! mode against the test server; and the merge's refusals.
#![allow(dead_code)]

use gauntlet_testserver::{Action, Rule, Script, TestServer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

mod common;
use common::BIN;

/// Scripted cascade replies (as in exam_spine.rs): every tier escalates.
fn cascade_script(latency_ms: u64) -> Script {
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

/// The test server and its runtime (the server is dropped, and so stopped, first).
struct Server {
    srv: TestServer,
    _rt: tokio::runtime::Runtime,
}

impl Server {
    fn start(script: Script) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let srv = rt.block_on(TestServer::start(script)).unwrap();
        Server { srv, _rt: rt }
    }
    fn requests(&self) -> u64 {
        self.srv.stats().requests
    }
    /// Waits until nothing is in flight and the request count has held still for
    /// 300 ms (a killed client's last requests may still be arriving).
    fn settle(&self) {
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
    fn target(&self, model: &str) -> String {
        format!(
            "{{name: openai_compat, params: {{name: ts, model: {model}, base_url: '{}', api_key_env: GAUNTLET_TEST_KEY, max_retries: 0, timeout_s: 30}}}}",
            self.srv.openai_base_url()
        )
    }
}

fn reference_corpus() -> PathBuf {
    common::repo_root().join("exams/scenarios")
}

/// Two non-floor scenarios and one floor-routed one, pinned in `dir`.
fn small_corpus(dir: &Path) {
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

fn exam_cmd(corpus: &Path, out: &Path, target: &str, extra: &[&str]) -> Command {
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

fn run(c: &mut Command) -> Output {
    c.output().unwrap()
}

fn show(o: &Output) -> String {
    common::show(o)
}

fn json(p: &Path) -> serde_json::Value {
    common::read_json(p)
}

fn last_session(out: &Path) -> serde_json::Value {
    common::last_session(out)
}

/// Every deterministic artefact of an exam directory (everything but the journal, the
/// session log, the timings and the lock), by relative path.
fn artefacts(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
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

fn assert_same(a: &Path, b: &Path) {
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

fn spawn_shards(make: impl Fn(u32) -> Command, n: u32) {
    let children: Vec<_> = (0..n)
        .map(|i| {
            make(i)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", show(&o));
    }
}

fn merge(dirs: &[PathBuf], out: &Path) -> Output {
    let mut c = Command::new(BIN);
    c.arg("merge").args(dirs).arg("--out").arg(out);
    c.output().unwrap()
}

fn shard_dirs(base: &Path, n: u32) -> Vec<PathBuf> {
    (0..n)
        .map(|i| base.with_file_name(format!("exam-out.shard-{i}-of-{n}")))
        .collect()
}

#[test]
fn golden_exam_shards_merge_to_the_one_machine_exam() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = reference_corpus();
    let golden = |out: &Path| {
        let mut c = Command::new(BIN);
        c.args(["exam", "--quiet", "-n", "3", "--corpus"])
            .arg(&corpus)
            .arg("--out")
            .arg(out);
        c
    };
    let one = tmp.path().join("one/exam-out");
    let o = run(&mut golden(&one));
    assert!(o.status.success(), "{}", show(&o));
    let base = tmp.path().join("shards/exam-out");
    spawn_shards(
        |i| {
            let mut c = golden(&base);
            c.args(["--shard", &format!("{i}/4")]);
            c
        },
        4,
    );
    // The merged directory has the one-machine directory's name: leaderboard rows name
    // the exam by it.
    let merged = tmp.path().join("merged/exam-out");
    let mut dirs = shard_dirs(&base, 4);
    dirs.reverse();
    let o = merge(&dirs, &merged);
    assert!(o.status.success(), "{}", show(&o));
    assert_same(&one, &merged);
}

#[test]
fn real_exam_shards_merge_to_the_one_machine_exam() {
    let s = Server::start(cascade_script(0));
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    small_corpus(&corpus);
    let target = s.target("gpt-4o-mini");
    let one = tmp.path().join("one/exam-out");
    let o = run(&mut exam_cmd(
        &corpus,
        &one,
        &target,
        &["-n", "2", "--consensus", "1"],
    ));
    assert!(o.status.success(), "{}", show(&o));
    let base = tmp.path().join("shards/exam-out");
    spawn_shards(
        |i| {
            exam_cmd(
                &corpus,
                &base,
                &target,
                &["-n", "2", "--consensus", "1", "--shard", &format!("{i}/3")],
            )
        },
        3,
    );
    let merged = tmp.path().join("merged/exam-out");
    let o = merge(&shard_dirs(&base, 3), &merged);
    assert!(o.status.success(), "{}", show(&o));
    let usage = std::fs::read_to_string(one.join("report.json")).unwrap();
    assert!(
        usage.contains("\"cost_usd\": 0.0"),
        "a priced real-mode exam: {usage}"
    );
    assert_same(&one, &merged);
    assert!(merged.join("journal.jsonl").exists());
}

#[test]
fn exam_merge_names_missing_mixed_and_edited_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = reference_corpus();
    let golden = |out: &Path, passes: &str, shard: &str| {
        let mut c = Command::new(BIN);
        c.args(["exam", "--quiet", "-n", passes, "--corpus"])
            .arg(&corpus)
            .arg("--out")
            .arg(out)
            .args(["--shard", shard]);
        run(&mut c)
    };
    let a = tmp.path().join("a/exam-out");
    let b = tmp.path().join("b/exam-out");
    for i in 0..2 {
        let o = golden(&a, "2", &format!("{i}/2"));
        assert!(o.status.success(), "{}", show(&o));
    }
    let o = golden(&b, "3", "1/2");
    assert!(o.status.success(), "{}", show(&o));
    let out = tmp.path().join("m/exam-out");
    let refused = |dirs: &[PathBuf], want: &[&str]| {
        let o = merge(dirs, &out);
        assert_eq!(o.status.code(), Some(2), "{}", show(&o));
        let e = String::from_utf8_lossy(&o.stderr).into_owned();
        for w in want {
            assert!(e.contains(w), "missing `{w}` in:\n{e}");
        }
    };
    let sa = shard_dirs(&a, 2);
    let sb = shard_dirs(&b, 2);
    refused(&sa[..1], &["missing exam shard(s) 1/2"]);
    refused(
        &[sa[0].clone(), sa[0].clone()],
        &["shard 0/2 is given twice"],
    );
    refused(
        &[sa[0].clone(), sb[1].clone()],
        &["not of the same exam", "passes 3 vs 2"],
    );
    // A scenario run's file edited after the shard finished.
    let run0 = sa[1].join("run-0");
    let f = std::fs::read_dir(&run0)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&f).unwrap();
    bytes.push(b' ');
    std::fs::write(&f, &bytes).unwrap();
    refused(&sa, &["is not the file the shard wrote"]);
    // The end-to-end mode is not sharded (yet): said, nothing written.
    let mut c = Command::new(BIN);
    c.args(["exam", "--quiet", "--mode", "e2e", "--corpus"])
        .arg(&corpus)
        .arg("--out")
        .arg(tmp.path().join("e2e"))
        .args(["--shard", "0/2"]);
    let o = run(&mut c);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("end-to-end mode cannot be sharded"));
}

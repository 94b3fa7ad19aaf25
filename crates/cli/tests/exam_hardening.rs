//! The agent exam under faults, through the binary (issues 15 and 18): a target that
//! fails every call (errors are their own outcome, never the model's pass), a write
//! that fails half way (the previous report survives, the error names the file),
//! scenario ids that sanitise alike (one file each), and `corpus pin` honouring the
//! umask.

use crate::common;

use common::BIN;
use gauntlet_scripted::{Action, Rule, Script, ScriptedServer};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn reference_corpus() -> PathBuf {
    common::repo_root().join("exams/scenarios")
}

const FLOOR: &str = "access/PE-01-contractor-self-grants-owner.yaml";
const RESOLVED: &str = "identity/NA-02-contractor-onboarding-ticketed.yaml";
const ESCALATED: &str = "identity/NA-01-unknown-principal-enumerates-vault.yaml";

/// Copies `files` of the reference corpus into `dir` and pins them.
fn pinned(dir: &Path, files: &[&str]) {
    let src = reference_corpus();
    for rel in files {
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(rel), to).unwrap_or_else(|e| panic!("{rel}: {e}"));
    }
    pin(dir);
}

fn pin(dir: &Path) {
    let o = Command::new(BIN)
        .arg("corpus")
        .arg("pin")
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn exam(args: &[&str], corpus: &Path, out: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("exam")
        .args(args)
        .arg("--corpus")
        .arg(corpus)
        .arg("--out")
        .arg(out);
    c
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A target that answers every call with HTTP 500 (real HTTP, the test server): no
/// verdict is the model's, so no scenario is model-decided, every one is decided by
/// the fail-safe (and still escalated, as the cascade does in production), and the
/// rates are N/A with a reason in report.json, the Markdown and HTML reports and the
/// CLI summary — never the 50% that "escalated matches expected escalated" would give.
#[test]
fn a_target_failing_every_call_decides_nothing() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let srv = rt
        .block_on(ScriptedServer::start(
            Script::default().rule(Rule::new(Action::status(500))),
        ))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    pinned(dir.path(), &[RESOLVED, ESCALATED]);
    let out = tempfile::tempdir().unwrap();
    let target = format!(
        "{{name: openai_compat, params: {{name: broken, model: m, base_url: '{}', api_key_env: GAUNTLET_TEST_KEY, max_retries: 0, timeout_s: 10}}}}",
        srv.openai_base_url()
    );
    let o = exam(
        &[
            "--mode",
            "real",
            "-n",
            "2",
            "--consensus",
            "1",
            "--target",
            &target,
        ],
        dir.path(),
        out.path(),
    )
    .env("GAUNTLET_TEST_KEY", "k")
    .output()
    .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(srv.stats().requests > 0, "the target was called");

    let r = json(&out.path().join("report.json"));
    assert_eq!(
        r["decided_by"],
        serde_json::json!({"model": 0, "floor": 0, "fail_safe": 4}),
        "{r}"
    );
    for k in [
        "median_pass_rate",
        "median_recall_rate",
        "median_precision_rate",
    ] {
        assert!(r[k].is_null(), "{k} must be N/A: {}", r[k]);
        let why = r["na_reasons"][k].as_str().unwrap_or_default();
        assert!(why.contains("fail-safe"), "{k}: {why}");
    }
    assert!(r["pass_rate_ci95"].is_null());
    assert_eq!(r["pass_all_runs"]["total"], 0);
    assert!(r["pass_all_runs"]["rate"].is_null());
    assert!(r["model_errors"].as_u64().unwrap() > 0);
    for run in r["runs"].as_array().unwrap() {
        assert_eq!(run["graded"], 0);
        assert_eq!(run["fail_safe"], 2);
        assert_eq!(run["passed"], 0);
        assert!(run["pass_rate"].is_null() && run["recall_rate"].is_null());
        for x in run["results"].as_array().unwrap() {
            assert_eq!(x["decided_by"], "fail_safe", "{x}");
            // The cascade's own output still escalates (fail safe), and it is no pass.
            assert_eq!(x["terminal_action"], "escalated");
            assert_eq!(x["pass"], false);
            assert!(x["error"].as_str().unwrap().contains("500"), "{x}");
        }
    }
    assert_eq!(r["classifier"]["counts"]["E_fail_safe"], 2);
    let lb = json(&out.path().join("leaderboard.json"));
    for row in lb.as_array().unwrap() {
        assert!(row["value"].is_null(), "{row}");
        assert!(row["na_reason"].as_str().unwrap().contains("fail-safe"));
    }
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    // report.html escapes `/` as the run report does (gauntlet-report's escaping).
    for (doc, na) in [(&md, "N/A ("), (&html, "N&#x2f;A (")] {
        assert!(doc.contains("fail-safe 4"), "{doc}");
        assert!(doc.contains(na), "{doc}");
        assert!(!doc.contains("100.0%") && !doc.contains("50.0%"), "{doc}");
    }
    assert!(
        stdout.contains("model 0 · floor 0 · fail-safe 4"),
        "{stdout}"
    );
    assert!(stdout.contains("median pass rate      N/A ("), "{stdout}");
    assert!(stdout.contains("median recall         N/A ("), "{stdout}");
    rt.block_on(srv.shutdown());
}

/// A target that answers every call by echoing the prompt's own answer template
/// (`{"action":"resolve|escalate",…}`, what small models do): the parser takes no
/// echo as a decision, so every model-routed scenario is unparseable, decided by the
/// fail-safe (escalated) and outside the rates; the floor scenario, escalated by rule
/// with zero model calls, is shown but never makes the model's pass rate. The model
/// decided nothing, so every rate is N/A (counting the floor scenario, it read recall
/// 100%).
#[test]
fn a_target_echoing_the_template_decides_nothing() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let echo = gauntlet_exam::cascade::answer_template();
    let srv = rt
        .block_on(ScriptedServer::start(
            Script::default().rule(Rule::new(Action::reply(echo))),
        ))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    pinned(dir.path(), &[FLOOR, RESOLVED, ESCALATED]);
    let out = tempfile::tempdir().unwrap();
    let target = format!(
        "{{name: openai_compat, params: {{name: echo, model: m, base_url: '{}', api_key_env: GAUNTLET_TEST_KEY, max_retries: 0, timeout_s: 10}}}}",
        srv.openai_base_url()
    );
    let o = exam(
        &[
            "--mode",
            "real",
            "-n",
            "2",
            "--consensus",
            "1",
            "--target",
            &target,
        ],
        dir.path(),
        out.path(),
    )
    .env("GAUNTLET_TEST_KEY", "k")
    .output()
    .unwrap();
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(srv.stats().requests > 0, "the target was called");
    let r = json(&out.path().join("report.json"));
    assert_eq!(
        r["decided_by"],
        serde_json::json!({"model": 0, "floor": 2, "fail_safe": 4}),
        "{r}"
    );
    for k in [
        "median_pass_rate",
        "median_recall_rate",
        "median_precision_rate",
    ] {
        assert!(r[k].is_null(), "{k} must be N/A: {}", r[k]);
        let why = r["na_reasons"][k].as_str().unwrap_or_default();
        assert!(
            why.contains("fail-safe") && why.contains("floor"),
            "{k}: {why}"
        );
    }
    assert!(r["pass_rate_ci95"].is_null() && r["recall_ci95"].is_null());
    assert_eq!(r["pass_all_runs"]["total"], 0);
    for run in r["runs"].as_array().unwrap() {
        assert_eq!(run["graded"], 0, "{run}");
        assert_eq!(run["floor"], 1, "{run}");
        assert_eq!(run["fail_safe"], 2, "{run}");
        assert!(run["pass_rate"].is_null() && run["recall_rate"].is_null());
        for x in run["results"].as_array().unwrap() {
            assert_eq!(x["terminal_action"], "escalated", "{x}");
            if x["decided_by"] == "floor" {
                assert_eq!(x["model_calls"], 0, "{x}");
                continue;
            }
            assert_eq!(x["decided_by"], "fail_safe", "{x}");
            assert_eq!(x["pass"], false, "{x}");
            assert!(
                x["error"].as_str().unwrap().contains("template echo"),
                "{x}"
            );
        }
    }
    let lb = json(&out.path().join("leaderboard.json"));
    for row in lb.as_array().unwrap() {
        assert!(row["value"].is_null(), "{row}");
    }
    assert!(
        stdout.contains("model 0 · floor 2 · fail-safe 4"),
        "{stdout}"
    );
    assert!(stdout.contains("median pass rate      N/A ("), "{stdout}");
    assert!(!stdout.contains("100.0%"), "{stdout}");
    rt.block_on(srv.shutdown());
}

/// Golden mode is unaffected: every scenario decided by the model or the floor.
#[test]
fn golden_mode_decides_everything_by_model_or_floor() {
    let dir = tempfile::tempdir().unwrap();
    pinned(dir.path(), &[FLOOR, RESOLVED, ESCALATED]);
    let out = tempfile::tempdir().unwrap();
    let o = exam(&["-n", "3"], dir.path(), out.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let r = json(&out.path().join("report.json"));
    assert_eq!(
        r["decided_by"],
        serde_json::json!({"model": 6, "floor": 3, "fail_safe": 0})
    );
    assert_eq!(r["median_pass_rate"], 1.0);
    assert!(r.get("na_reasons").is_none());
}

/// A write that fails half way (the file-size limit stands in for a full disk: the
/// write gets EFBIG where a full disk gives ENOSPC) must keep the previous good
/// report.json whole (moved aside to superseded/1/, as any other exam into the same
/// --out moves it), leave no torn file and name the file it could not write.
#[test]
fn a_failed_write_keeps_the_previous_report_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    pinned(dir.path(), &[FLOOR, RESOLVED, ESCALATED]);
    let out = tempfile::tempdir().unwrap();
    let o = exam(&["-n", "1"], dir.path(), out.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let report = out.path().join("report.json");
    let good = std::fs::read(&report).unwrap();
    assert!(
        good.len() > 4096,
        "the report is larger than the limit below"
    );
    let files = |d: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut v: Vec<_> = walk(d)
            .into_iter()
            .map(|p| {
                let b = std::fs::read(&p).unwrap();
                (p, b)
            })
            .collect();
        v.sort();
        v
    };
    let run0 = files(&out.path().join("run-0"));
    assert!(!run0.is_empty());

    // `-n 2` is another exam: the previous one is moved aside whole (superseded/1/)
    // before the new one writes; every file above 2 KiB then fails to write.
    let c = exam(&["-n", "2"], dir.path(), out.path());
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg("trap '' XFSZ; ulimit -f 4; exec \"$0\" \"$@\"")
        .arg(c.get_program())
        .args(c.get_args());
    let o = sh.output().unwrap();
    let (_, stderr) = text(&o);
    assert_ne!(o.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("cannot write "), "{stderr}");
    assert!(
        stderr.contains(&out.path().display().to_string()),
        "names the file: {stderr}"
    );
    let prev = out.path().join("superseded/1");
    assert_eq!(
        std::fs::read(prev.join("report.json")).unwrap(),
        good,
        "the previous report.json was lost or torn"
    );
    json(&prev.join("report.json"));
    // No torn report.json where the new exam failed to write one.
    if report.exists() {
        json(&report);
    }
    let leftovers: Vec<_> = walk(out.path())
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The scenario runs' files of the previous exam are as they were (the new exam's
    // were staged), and a rerun without the limit finishes and clears the staging.
    let moved: Vec<Vec<u8>> = files(&prev.join("run-0"))
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    assert_eq!(moved, run0.into_iter().map(|(_, b)| b).collect::<Vec<_>>());
    assert!(!out.path().join("run-1").exists());
    let o = exam(&["-n", "2"], dir.path(), out.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(out.path().join("run-1").is_dir());
    assert!(!out.path().join(".runs-partial").exists());
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v
}

/// `ZZ-a/b`, `ZZ-a_b` and `ZZ-a?b` used to share `run-0/ZZ-a_b.json` (two records
/// lost); each now has its own file, holding its own record.
#[test]
fn ids_that_sanitise_alike_get_one_file_each() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(reference_corpus().join(ESCALATED)).unwrap();
    let ids = ["ZZ-a/b", "ZZ-a_b", "ZZ-a?b"];
    for (i, id) in ids.iter().enumerate() {
        let body: String = src
            .lines()
            .map(|l| {
                if l.starts_with("id: ") {
                    format!("id: '{id}'")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(dir.path().join(format!("s{i}.yaml")), body + "\n").unwrap();
    }
    pin(dir.path());
    let out = tempfile::tempdir().unwrap();
    let o = exam(&["-n", "1"], dir.path(), out.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let run = out.path().join("run-0");
    let results: Vec<PathBuf> = walk(&run)
        .into_iter()
        .filter(|p| !p.to_string_lossy().ends_with(".transcript.json"))
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    let mut seen: Vec<String> = results
        .iter()
        .map(|p| json(p)["scenario_id"].as_str().unwrap().to_string())
        .collect();
    seen.sort();
    let mut want: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(seen, want);
    assert_eq!(
        walk(&run)
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".transcript.json"))
            .count(),
        3
    );
    assert!(
        run.join("ZZ-a_b.json").is_file(),
        "a safe id is its own name"
    );
}

/// `corpus pin` creates corpus.pin and _manifest.txt with the umask's mode (0644
/// under umask 022), not 0600.
#[test]
fn corpus_pin_honours_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("a");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::copy(reference_corpus().join(ESCALATED), d.join("x.yaml")).unwrap();
    for (umask, want) in [("022", 0o644), ("077", 0o600)] {
        let _ = std::fs::remove_file(dir.path().join("corpus.pin"));
        let _ = std::fs::remove_file(dir.path().join("_manifest.txt"));
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("umask {umask}; exec \"$0\" corpus pin \"$1\""))
            .arg(BIN)
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{:?}", text(&o));
        for f in ["corpus.pin", "_manifest.txt"] {
            let mode = std::fs::metadata(dir.path().join(f))
                .unwrap()
                .permissions()
                .mode()
                & 0o777;
            assert_eq!(mode, want, "{f} under umask {umask}: {mode:o}");
        }
    }
}

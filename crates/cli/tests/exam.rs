//! `gauntlet exam` end to end through the binary: exit codes, artefacts, the embedded
//! fallback, real mode through the model seam (offline reference target), and — when CI
//! provides one — a real local model.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gauntlet"))
}

fn reference_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exams/scenarios")
}

const FLOOR: &str = "access/PE-01-contractor-self-grants-owner.yaml";
const RESOLVED: &str = "identity/NA-02-contractor-onboarding-ticketed.yaml";
const ESCALATED: &str = "identity/NA-01-unknown-principal-enumerates-vault.yaml";
const SHORT: &str = "behavioral/UT-03-last-profiled-hour.yaml";

/// A small pinned corpus: a floor-routed, a resolved and an escalated scenario.
fn handful(dir: &Path) {
    pinned(dir, &[FLOOR, RESOLVED, ESCALATED]);
}

fn pinned(dir: &Path, files: &[&str]) {
    let src = reference_corpus();
    for rel in files {
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(rel), to).unwrap_or_else(|e| panic!("{rel}: {e}"));
    }
    let o = bin().arg("corpus").arg("pin").arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

#[test]
fn golden_run_completes_with_artefacts() {
    let out = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["exam", "-n", "1", "--consensus", "1", "--corpus"])
        .arg(reference_corpus())
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("NOT AN ACCURACY NUMBER"), "{stdout}");
    assert!(stdout.contains("median pass rate      100.0%"), "{stdout}");
    let r = json(&out.path().join("report.json"));
    assert_eq!(r["mode"], "golden");
    assert_eq!(r["median_pass_rate"], 1.0);
    // Per-scenario progress on stderr.
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("[pass 1/1]"), "{stderr}");
}

#[test]
fn embedded_corpus_is_the_fallback_when_no_directory_exists() {
    let cwd = tempfile::tempdir().unwrap();
    let o = bin()
        .current_dir(cwd.path())
        .args([
            "exam",
            "-n",
            "1",
            "--consensus",
            "0",
            "--quiet",
            "--out",
            "o",
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("embedded reference corpus"));
    let r = json(&cwd.path().join("o/report.json"));
    assert_eq!(r["median_pass_rate"], 1.0);
}

#[test]
fn corpus_and_config_failures_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    handful(dir.path());
    // Tampered corpus: nothing runs.
    let f = dir
        .path()
        .join("identity/NA-01-unknown-principal-enumerates-vault.yaml");
    let mut text = std::fs::read_to_string(&f).unwrap();
    text.push_str("\n# tampered\n");
    std::fs::write(&f, text).unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = bin()
        .args(["exam", "--corpus"])
        .arg(dir.path())
        .arg("--out")
        .arg(out.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("CORPUS INTEGRITY FAIL"));
    assert!(!out.path().join("x").exists());

    // Real mode without --target, and with a target whose key is missing.
    let o = bin().args(["exam", "--mode", "real"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs --target"));
    let o = bin()
        .args(["exam", "--mode", "real", "--target"])
        .arg("{name: anthropic, params: {model: claude-x, api_key_env: GAUNTLET_EXAM_TEST_UNSET_KEY}}")
        .env_remove("GAUNTLET_EXAM_TEST_UNSET_KEY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("GAUNTLET_EXAM_TEST_UNSET_KEY is not set"), "{e}");
    let o = bin()
        .args([
            "exam",
            "--mode",
            "real",
            "--target",
            "{name: no_such_target}",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn real_mode_through_the_model_seam_with_an_offline_target() {
    let dir = tempfile::tempdir().unwrap();
    handful(dir.path());
    let out = tempfile::tempdir().unwrap();
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("tiers.yaml");
    std::fs::write(
        &cfg,
        "target: {name: reference, params: {name: ref-a}}\ntiers:\n  formatter: {name: reference, params: {name: ref-b}}\n",
    )
    .unwrap();
    let o = bin()
        .args(["exam", "--mode", "real", "-n", "2", "--corpus"])
        .arg(dir.path())
        .arg("--target")
        .arg(&cfg)
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = json(&out.path().join("report.json"));
    assert_eq!(r["mode"], "real");
    assert_eq!(r["runs"].as_array().unwrap().len(), 2);
    assert!(r["note"].as_str().unwrap().contains("BLENDS"));
    // The floor-routed scenario made no call; the others have real transcripts.
    let floor = json(
        &out.path()
            .join("run-0/PE-01-contractor-self-grants-owner.json"),
    );
    assert_eq!(floor["model_calls"], 0);
    assert_eq!(floor["route_id"], "E-001");
    assert_eq!(floor["pass"], true);
    let t = json(
        &out.path()
            .join("run-1/NA-01-unknown-principal-enumerates-vault.transcript.json"),
    );
    let entries = t.as_array().unwrap();
    assert!(!entries.is_empty());
    assert!(
        entries[0]["user_prompt"]
            .as_str()
            .unwrap()
            .contains("[USER_DATA_BEGIN]")
    );
}

/// One real-mode run against the real local model CI starts (scripts/local-model.sh):
/// any accuracy, but the run must complete with real transcripts.
#[test]
fn exam_real_local_model() {
    let Ok(url) = std::env::var("GAUNTLET_LOCAL_MODEL_URL") else {
        eprintln!(
            "\n======== SKIP exam_real_local_model: GAUNTLET_LOCAL_MODEL_URL is not set \
             (CI sets it after scripts/local-model.sh start) ========\n"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Small on purpose: a CPU-served 135M model answers a few tokens per second.
    // UT-03 has the shortest prompts of the corpus (the server runs a 2,048-token context).
    pinned(dir.path(), &[FLOOR, SHORT]);
    let out = tempfile::tempdir().unwrap();
    let target = format!(
        "{{name: openai_compat, params: {{name: local, model: local, base_url: '{url}', timeout_s: 300, max_retries: 2}}}}"
    );
    let o = bin()
        .args([
            "exam",
            "--mode",
            "real",
            "-n",
            "1",
            "--consensus",
            "0",
            "--concurrency",
            "1",
            "--corpus",
        ])
        .arg(dir.path())
        .arg("--target")
        .arg(&target)
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    eprintln!("{stdout}");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = json(&out.path().join("report.json"));
    assert!(r["model_calls"].as_u64().unwrap() >= 2, "{r}");
    let t = json(
        &out.path()
            .join("run-0/UT-03-last-profiled-hour.transcript.json"),
    );
    let replies: Vec<&str> = t
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["reply"].as_str())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(!replies.is_empty(), "no real replies: {t}");
}

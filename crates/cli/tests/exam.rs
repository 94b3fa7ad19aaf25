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
    // report.html carries the pass-rate chart (inline SVG) under a CSP.
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(
        html.contains("<svg ") && html.contains("Pass rate per pass"),
        "{html}"
    );
    assert!(html.contains("Content-Security-Policy"), "{html}");
    // Progress on stderr, on the run's display: stderr is a pipe, so plain lines,
    // the last one when the exam is done.
    let stderr = String::from_utf8_lossy(&o.stderr);
    let last = stderr
        .lines()
        .rfind(|l| l.starts_with("progress: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    let n = r["corpus_count"].as_u64().unwrap();
    assert!(
        last.starts_with(&format!("progress: {n}/{n} scenarios (100%), "))
            && last.contains(", eta 0s, calls "),
        "{last}"
    );
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
    // UT-03 has the shortest prompts of the corpus (the server runs an 8,192-token context).
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
    // The floor scenario is decided by the harness's rule with zero model
    // calls and never makes the model's rates. When the tiny model decided nothing (its
    // reply failed to parse, so the fail-safe escalated), every rate is N/A with the
    // reason and a warning says so; when it decided its scenario, the rates are over
    // that decision alone.
    let d = &r["decided_by"];
    let (model, floor, fail_safe) = (
        d["model"].as_u64().unwrap(),
        d["floor"].as_u64().unwrap(),
        d["fail_safe"].as_u64().unwrap(),
    );
    assert_eq!((floor, model + fail_safe), (1, 1), "{d}");
    let kinds: Vec<&str> = r["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(|w| w["kind"].as_str()).collect())
        .unwrap_or_default();
    if model == 0 {
        for key in [
            "median_pass_rate",
            "median_recall_rate",
            "median_precision_rate",
        ] {
            assert!(r[key].is_null(), "{key}: {r}");
            assert!(r["na_reasons"][key].is_string(), "{key}: {r}");
        }
        assert!(kinds.contains(&"not_model_decided"), "{r}");
        assert!(stdout.contains("median pass rate      N/A ("), "{stdout}");
        assert!(stdout.contains("⚠ warning not_model_decided"), "{stdout}");
    } else {
        assert!(r["median_pass_rate"].is_number(), "{r}");
        assert!(!kinds.contains(&"not_model_decided"), "{r}");
    }
    eprintln!("exam_real_local_model: decided_by {d}; warnings {kinds:?}");
}

const GO_01: &str = "code/GO-01-force-push-main-after-review-dismissal.yaml";
const GO_03: &str = "code/GO-03-merge-queue-push-to-main.yaml";
const NX_04: &str = "injection/NX-04-ticket-field-carries-injection.yaml";

/// A pinned corpus with one scenario per end-to-end outcome: GO-01 (git-oops fires on
/// the expected actor: REPRODUCED), NX-04 (only injection-probe fires: MISMATCH),
/// GO-03 (nothing fires, expected resolved: DETECT-MISS, pass) and a constructed twin
/// of GO-03 labelled as an attack (nothing fires, expected escalated: DETECT-MISS,
/// fail — no finding ever reached triage).
fn e2e_corpus(dir: &Path) {
    let src = reference_corpus();
    for rel in [GO_01, GO_03, NX_04] {
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(src.join(rel), to).unwrap();
    }
    let twin = std::fs::read_to_string(src.join(GO_03))
        .unwrap()
        .replace(
            "id: GO-03-merge-queue-push-to-main",
            "id: GO-93-quiet-attack-twin",
        )
        .replace(
            "  chain_action: resolved\n  triage_action: resolved",
            "  chain_action: escalated\n  triage_action: escalated",
        );
    assert!(twin.contains("GO-93") && twin.contains("chain_action: escalated"));
    std::fs::write(dir.join("code/GO-93-quiet-attack-twin.yaml"), twin).unwrap();
    let o = bin().arg("corpus").arg("pin").arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `exam --mode e2e` (one pass unless `extra` sets `-n`).
fn e2e_run(corpus: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let passes: &[&str] = if extra.contains(&"-n") {
        &[]
    } else {
        &["-n", "1"]
    };
    bin()
        .args(["exam", "--mode", "e2e", "--quiet"])
        .args(passes)
        .arg("--corpus")
        .arg(corpus)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn e2e_mode_classifies_reproduced_mismatch_and_detect_miss() {
    let dir = tempfile::tempdir().unwrap();
    e2e_corpus(dir.path());
    let out = tempfile::tempdir().unwrap();
    let o = e2e_run(dir.path(), out.path(), &[]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The fidelity block is the headline, ahead of the agent figures, and says it is
    // not part of them.
    let block = stdout.find("DETECT FIDELITY").expect("fidelity block");
    let agent = stdout.find("median pass rate").expect("agent figures");
    assert!(block < agent, "{stdout}");
    assert!(
        stdout.contains("NEVER folded into the agent pass rate"),
        "{stdout}"
    );
    assert!(
        stdout.contains("DETECT-MISS    FAIL GO-93-quiet-attack-twin"),
        "{stdout}"
    );
    assert!(stdout.contains("MISMATCH       pass NX-04"), "{stdout}");

    let r = json(&out.path().join("report.json"));
    assert_eq!(r["mode"], "e2e");
    assert_eq!(r["backend"], "golden");
    let f = &r["detect_fidelity"];
    let fid = |id: &str| {
        f["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == id)
            .unwrap_or_else(|| panic!("no row {id}: {f}"))
            .clone()
    };
    let go01 = fid("GO-01-force-push-main-after-review-dismissal");
    assert_eq!(go01["fidelity"], "REPRODUCED");
    assert_eq!(go01["passed"], true);
    assert_eq!(go01["resolutions"][0]["family"], "git-oops");
    let nx04 = fid("NX-04-ticket-field-carries-injection");
    assert_eq!(nx04["fidelity"], "MISMATCH");
    assert_eq!(
        nx04["passed"], true,
        "lee.maint's injection-probe finding escalated"
    );
    assert_eq!(nx04["resolutions"][0]["family"], "injection-probe");
    let go03 = fid("GO-03-merge-queue-push-to-main");
    assert_eq!(
        (go03["fidelity"].as_str(), go03["passed"].as_bool()),
        (Some("DETECT-MISS"), Some(true))
    );
    let go93 = fid("GO-93-quiet-attack-twin");
    assert_eq!(
        (go93["fidelity"].as_str(), go93["passed"].as_bool()),
        (Some("DETECT-MISS"), Some(false))
    );
    assert_eq!(
        (
            &f["total"],
            &f["reproduced"],
            &f["mismatch"],
            &f["detect_miss"]
        ),
        (&4.into(), &1.into(), &1.into(), &2.into())
    );
    assert_eq!(f["reproduction_rate"], 0.25);
    assert_eq!(f["end_to_end_pass_rate"], 0.75);
    assert_eq!(f["e2e_recall"].as_f64().unwrap(), 2.0 / 3.0);
    assert_eq!(f["e2e_precision"], 1.0);
    // Never folded into the agent pass rate: the golden agent exam still passes all 4.
    assert_eq!(r["median_pass_rate"], 1.0);
    assert_eq!(r["runs"][0]["total"], 4);
    // Per-scenario store and transcripts.
    let row = json(
        &out.path()
            .join("e2e/GO-01-force-push-main-after-review-dismissal.json"),
    );
    assert_eq!(row["fidelity"], "REPRODUCED");
    let t = json(
        &out.path()
            .join("e2e/GO-01-force-push-main-after-review-dismissal.transcript.json"),
    );
    assert!(!t[0]["transcript"].as_array().unwrap().is_empty(), "{t}");
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(
        md.contains("Detect fidelity (end-to-end)") && md.contains("25.0%"),
        "{md}"
    );
}

#[test]
fn e2e_mode_with_a_real_target_uses_it_for_every_finding() {
    let dir = tempfile::tempdir().unwrap();
    e2e_corpus(dir.path());
    let out = tempfile::tempdir().unwrap();
    let o = e2e_run(
        dir.path(),
        out.path(),
        &[
            "--consensus",
            "0",
            "--target",
            "{name: reference, params: {name: ref-a}}",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("e2e mode (real backend)"));
    let r = json(&out.path().join("report.json"));
    assert_eq!(r["mode"], "e2e");
    assert_ne!(r["backend"], "golden");
    assert!(r["note"].as_str().unwrap().contains("BLENDS"));
    let f = &r["detect_fidelity"];
    assert_eq!(f["total"], 4);
    // Fidelity is a property of the fleet, whatever the backend.
    assert_eq!(
        (&f["reproduced"], &f["mismatch"], &f["detect_miss"]),
        (&1.into(), &1.into(), &2.into())
    );
    let t = json(
        &out.path()
            .join("e2e/GO-01-force-push-main-after-review-dismissal.transcript.json"),
    );
    let calls = t[0]["transcript"].as_array().unwrap();
    assert!(!calls.is_empty());
    assert!(calls[0]["model"].as_str().unwrap() != "golden", "{t}");
    // Model calls of the e2e pass are counted with the rest.
    let agent_calls: u64 = r["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["model_calls"].as_u64().unwrap())
        .sum();
    assert!(r["model_calls"].as_u64().unwrap() > agent_calls);
}

/// report.json and every other artefact except timings.json are byte-identical across
/// reruns and --concurrency; the wall times live in timings.json.
#[test]
fn artefacts_are_byte_identical_across_reruns_and_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    e2e_corpus(dir.path());
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for (root, conc) in [(a.path(), "8"), (b.path(), "1")] {
        let o = e2e_run(
            dir.path(),
            &root.join("out"),
            &["-n", "2", "--concurrency", conc],
        );
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let mut files = Vec::new();
    fn walk(d: &Path, base: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().to_path_buf());
            }
        }
    }
    walk(&a.path().join("out"), &a.path().join("out"), &mut files);
    files.sort();
    assert!(files.iter().any(|f| f.ends_with("report.json")));
    assert!(files.iter().any(|f| f.starts_with("e2e")));
    for f in &files {
        let x = std::fs::read(a.path().join("out").join(f)).unwrap();
        let y = std::fs::read(b.path().join("out").join(f))
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        if f.ends_with("timings.json") {
            continue;
        }
        assert!(x == y, "{} differs between reruns", f.display());
    }
    let report = std::fs::read_to_string(a.path().join("out/report.json")).unwrap();
    assert!(!report.contains("wall_millis") && !report.contains("elapsed"));
    let t = json(&a.path().join("out/timings.json"));
    assert_eq!(t["passes"].as_array().unwrap().len(), 2);
    assert!(t["e2e"]["GO-93-quiet-attack-twin"].is_u64(), "{t}");
}

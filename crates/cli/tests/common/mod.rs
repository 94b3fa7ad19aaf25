//! Helpers shared by the CLI test binaries: running `gauntlet` as a real process and
//! reading what it wrote. Each test file includes this with `mod common;` and uses the
//! part it needs.
#![allow(
    dead_code,
    reason = "shared by several test binaries; each uses a part"
)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The binary under test, built by cargo for this test run.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_gauntlet");

/// Artefacts that must be byte-identical across reruns and concurrency levels.
pub(crate) const DETERMINISTIC: &[&str] = &[
    "run.json",
    "results.json",
    "transcripts.jsonl",
    "leaderboard.json",
    "report.md",
    "report.html",
    "usage.json",
];

/// The workspace root (examples, exams and bench live there).
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Runs `gauntlet ARGS` in `cwd` and waits for it.
pub(crate) fn gauntlet(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run gauntlet")
}

/// Exit status and both streams, for assertion messages.
pub(crate) fn show(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts the process succeeded, showing its output when it did not.
pub(crate) fn ok(out: &Output) {
    assert!(out.status.success(), "{}", show(out));
}

/// A JSON file, parsed; the path is named when it cannot be read.
pub(crate) fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

/// Every line of a JSONL file, parsed.
pub(crate) fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The last line of a run's `sessions.jsonl` (calls made, journal hits, timings).
pub(crate) fn last_session(run: &Path) -> Value {
    let text = std::fs::read_to_string(run.join("sessions.jsonl")).unwrap();
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

/// Asserts two run directories hold byte-identical [`DETERMINISTIC`] artefacts.
pub(crate) fn assert_same_artefacts(a: &Path, b: &Path) {
    for f in DETERMINISTIC {
        let x = std::fs::read(a.join(f)).unwrap();
        let y = std::fs::read(b.join(f)).unwrap();
        assert!(
            x == y,
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// Waits until `file` holds at least `bytes` bytes (a journal growing), then SIGKILLs
/// `child` and reaps it. Panics when the child finished first (it could not be killed
/// mid-way) or `file` did not grow enough within two minutes.
pub(crate) fn kill_when_file_reaches(child: &mut Child, file: &Path, bytes: f64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let len = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
        if len as f64 >= bytes {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the process finished before it could be killed"
        );
        assert!(Instant::now() < deadline, "the process made no progress");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the process finished before it could be killed"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

/// The agent exam's helpers (only the exam test binaries use them).
pub(crate) mod exam;

/// sha256 over the sorted journal keys of a run, and their number.
pub(crate) fn journal_keys(run: &Path) -> (usize, String) {
    let text = std::fs::read_to_string(run.join("journal.jsonl")).unwrap();
    let mut keys: Vec<String> = text
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["k"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    keys.sort();
    (
        keys.len(),
        gauntlet_core::hash::sha256_hex(keys.join("\n").as_bytes()),
    )
}

/// The python of scripts/install-ci-validators.sh (GAUNTLET_CI_VALIDATORS): JUnit read by
/// junitparser, SARIF validated against the 2.1.0 schema. Without it the checks print a
/// loud SKIP, except under CI, where they fail.
pub(crate) fn validators() -> Option<PathBuf> {
    match std::env::var_os("GAUNTLET_CI_VALIDATORS") {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI: GAUNTLET_CI_VALIDATORS is unset (scripts/install-ci-validators.sh failed?)"
            );
            eprintln!(
                "\n==================== SKIP (validators) ====================\n\
                 GAUNTLET_CI_VALIDATORS is not set: JUnit was not read by junitparser and SARIF\n\
                 was not validated against the schema. Set it with\n\
                 export GAUNTLET_CI_VALIDATORS=$(scripts/install-ci-validators.sh)\n\
                 ===========================================================\n"
            );
            None
        }
    }
}

pub(crate) fn check(py: &Path, kind: &str, file: &Path) -> Value {
    let o = Command::new(py)
        .arg(repo_root().join("scripts/check_ci_formats.py"))
        .args([kind, file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{kind} {}: {}",
        file.display(),
        show(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

//! `gauntlet serve` and `gauntlet report --site` as real processes, over what the
//! examples and the exams write: the smoke, leakage and injection runs, an agent exam
//! and a detect-exam report in one runs directory all show.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

/// Fills `runs/` as a user would: three example runs, an agent exam, a detect exam.
fn populate(dir: &std::path::Path) {
    let root = repo_root();
    for ex in ["smoke.yaml", "leakage_smoke.yaml", "injection_smoke.yaml"] {
        let o = gauntlet(
            &[
                "run",
                root.join("examples").join(ex).to_str().unwrap(),
                "--runs-dir",
                "runs",
                "--quiet",
            ],
            dir,
        );
        assert!(
            o.status.success(),
            "{ex}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let corpus = root.join("exams/scenarios");
    let o = gauntlet(
        &[
            "exam",
            "-n",
            "2",
            "--consensus",
            "1",
            "--corpus",
            corpus.to_str().unwrap(),
            "--out",
            "runs/exam",
        ],
        dir,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = gauntlet(
        &[
            "exam-detect",
            "--json",
            "--corpus",
            corpus.to_str().unwrap(),
        ],
        dir,
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::create_dir_all(dir.join("runs/detect")).unwrap();
    std::fs::write(dir.join("runs/detect/report.json"), &o.stdout).unwrap();
}

fn http_get(addr: &str, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

#[test]
fn serve_shows_every_surface_of_a_runs_directory() {
    let tmp = tempfile::tempdir().unwrap();
    populate(tmp.path());
    let mut child = Command::new(BIN)
        .args(["serve", "runs", "--bind", "127.0.0.1:0"])
        .current_dir(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    let result = std::panic::catch_unwind(|| {
        for (surface, run) in [
            ("jailbreak", "smoke"),
            ("leakage", "leakage_smoke"),
            ("injection", "injection_smoke"),
            ("agent_exam", "exam"),
            ("detect_exam", "detect"),
        ] {
            let (code, body) = http_get(&addr, &format!("/?surface={surface}"));
            assert_eq!(code, 200, "{surface}");
            assert!(
                body.contains(&format!("href=\"&#x2f;run&#x2f;{run}\"")),
                "{surface}: {body}"
            );
            let (code, page) = http_get(&addr, &format!("/run/{run}"));
            assert_eq!(code, 200, "{run}");
            assert!(page.contains("<svg"), "{run} has charts");
        }
        let (_, exam) = http_get(&addr, "/run/exam");
        assert!(exam.contains("Pass rate per pass"), "{exam}");
        let (_, det) = http_get(&addr, "/run/detect");
        assert!(det.contains("Coverage matrix per detector family"), "{det}");
    });
    let _ = child.kill();
    let _ = child.wait();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn serve_refuses_a_public_bind_without_the_flag_and_a_token() {
    let tmp = tempfile::tempdir().unwrap();
    let o = gauntlet(&["serve", ".", "--bind", "0.0.0.0:0"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--allow-remote"));
    let o = Command::new(BIN)
        .args(["serve", ".", "--bind", "0.0.0.0:0", "--allow-remote"])
        .current_dir(tmp.path())
        .env_remove("GAUNTLET_WEB_TOKEN")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("GAUNTLET_WEB_TOKEN"));
}

#[test]
fn report_site_writes_a_static_site() {
    let tmp = tempfile::tempdir().unwrap();
    populate(tmp.path());
    let o = gauntlet(&["report", "--site", "site", "runs"], tmp.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("static site of 5 run(s)"));
    for f in [
        "index.html",
        "leaderboard-agent_exam.html",
        "leaderboard-detect_exam.html",
        "run-smoke.html",
        "run-smoke-report.html",
        "run-exam.html",
        "run-exam-report.html",
        "run-smoke-transcripts-0.html",
        "run-smoke-line-0.html",
    ] {
        assert!(tmp.path().join("site").join(f).is_file(), "{f}");
    }
    // Without --site, report still takes exactly one run directory.
    let o = gauntlet(&["report", "runs/smoke", "runs/leakage_smoke"], tmp.path());
    assert_eq!(o.status.code(), Some(2));
}

//! `gauntlet serve` and `gauntlet report --site` as real processes, over what the
//! examples and the exams write: the smoke, leakage and injection runs, an agent exam
//! and a detect-exam report in one runs directory all show.

use crate::common;

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

pub(crate) fn http_get(addr: &str, path: &str) -> (u16, String) {
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

/// `gauntlet serve ROOTS --bind 127.0.0.1:0` with `pre` applied to the command; the
/// process and the address it serves on.
pub(crate) fn spawn_serve(
    roots: &[&str],
    cwd: &std::path::Path,
    pre: impl FnOnce(&mut Command),
) -> (std::process::Child, String) {
    let mut c = Command::new(BIN);
    c.arg("serve")
        .args(roots)
        .args(["--bind", "127.0.0.1:0"])
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    pre(&mut c);
    let mut child = c.spawn().unwrap();
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
    (child, addr)
}

/// Peak resident memory of a live process, in MiB (`VmHWM`).
fn peak_rss_mib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap();
    kb / 1024
}

/// Kills the child however the closure ends.
fn with_child<T>(mut child: std::process::Child, f: impl FnOnce(u32) -> T) -> T {
    let pid = child.id();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(pid)));
    let _ = child.kill();
    let _ = child.wait();
    match r {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e),
    }
}

/// 3,000 hard-linked copies of one run took the dashboard from
/// 160 MB to 2.6 GB on its first page (5,000 aborted it): each copy's "duplicate run id"
/// note named every other copy. 5,000 copies now serve the first page in bounded
/// memory, each note naming three copies and counting the rest.
#[test]
fn five_thousand_copies_of_one_run_serve_in_linear_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // A small run (two leaderboard rows): what grows is the number of copies.
    std::fs::write(
        d.join("small.yaml"),
        "run_name: smoke\ntargets: [reference]\nattacks: [static]\ndatasets: [{name: demo, params: {limit: 4}}]\njudges: [refusal_match]\nmetrics: [asr, frr]\n",
    )
    .unwrap();
    let o = gauntlet(&["run", "small.yaml", "--runs-dir", "src", "--quiet"], d);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let src = d.join("src/smoke");
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && !p.ends_with(".lock"))
        .collect();
    let runs = d.join("runs");
    for i in 0..5000 {
        let c = runs.join(format!("copy{i:04}"));
        std::fs::create_dir_all(&c).unwrap();
        for f in &files {
            std::fs::hard_link(f, c.join(f.file_name().unwrap())).unwrap();
        }
    }
    let (child, addr) = spawn_serve(&["runs"], d, |_| {});
    with_child(child, |pid| {
        let started = std::time::Instant::now();
        let (code, body) = http_get(&addr, "/?surface=jailbreak");
        assert_eq!(code, 200);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "{:?}",
            started.elapsed()
        );
        let (code, page) = http_get(&addr, "/run/copy0007");
        assert_eq!(code, 200);
        assert!(
            page.contains("and 4996 more"),
            "{}",
            &page[..page.len().min(4000)]
        );
        assert!(body.len() < 2 << 20, "first page of {} bytes", body.len());
        let rss = peak_rss_mib(pid);
        eprintln!(
            "5,000 copies: first page in {:?}, peak RSS {rss} MiB",
            started.elapsed()
        );
        assert!(rss < 300, "peak RSS {rss} MiB for 5,000 copies");
    });
}

/// A golden-mode exam (the merge gate, scripted replies) used to sit
/// on the agent-exam leaderboard as `median_pass_rate 1.0000 [0.9657, 1.0000]` beside
/// real runs. It is a pipeline check: listed apart as passed, never ranked, with no
/// value or interval, in the dashboard and in its own leaderboard.json.
#[test]
fn a_golden_exam_is_a_pipeline_check_never_a_ranked_score() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let corpus = repo_root().join("exams/scenarios");
    let o = gauntlet(
        &[
            "exam",
            "-n",
            "1",
            "--quiet",
            "--corpus",
            corpus.to_str().unwrap(),
            "--out",
            "runs/golden",
        ],
        d,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lb: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("runs/golden/leaderboard.json")).unwrap())
            .unwrap();
    let rows = lb.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{lb}");
    assert_eq!(rows[0]["metric"], "pipeline_check");
    assert!(
        rows[0]["value"].is_null() && rows[0].get("ci_low").is_none_or(|v| v.is_null()),
        "{lb}"
    );
    assert!(
        rows[0]["na_reason"].as_str().unwrap().starts_with("passed"),
        "{lb}"
    );
    let (child, addr) = spawn_serve(&["runs"], d, |_| {});
    with_child(child, |_| {
        let (code, body) = http_get(&addr, "/?surface=agent_exam");
        assert_eq!(code, 200);
        let table = body.split("id=\"leaderboard\"").nth(1).unwrap();
        let ranked = table.split("</table>").next().unwrap();
        assert!(
            !ranked.contains("golden"),
            "the golden exam is ranked: {ranked}"
        );
        assert!(
            !body.contains("0.9657") && !body.contains("1.0000"),
            "{body}"
        );
        let checks = body
            .split("id=\"pipeline-checks\"")
            .nth(1)
            .expect("a pipeline-check table");
        assert!(
            checks.contains(">passed<") && checks.contains("108&#x2f;108"),
            "{checks}"
        );
        let (_, run) = http_get(&addr, "/run/golden");
        assert!(run.contains("a pipeline check, not a score"), "{run}");
    });
}

/// 600 slow connections (each sending its headers a byte at a time, or not at all) used
/// to stall the dashboard for ~9 s: they held every connection slot until their header
/// timeout. A new connection now closes the oldest one that is not being answered, so
/// other clients are served at once, one after another, while the slow ones keep
/// coming.
#[test]
fn slow_connections_do_not_delay_other_clients() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("runs")).unwrap();
    let (child, addr) = spawn_serve(&["runs"], tmp.path(), |c| unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 512,
                rlim_max: 512,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    });
    with_child(child, |_| {
        let mut slow = Vec::new();
        for i in 0..600 {
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            if i % 2 == 0 {
                write!(s, "GET / HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").unwrap();
            }
            slow.push(s);
        }
        for _ in 0..3 {
            let started = std::time::Instant::now();
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
                .unwrap();
            write!(
                s,
                "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut text = String::new();
            let _ = s.read_to_string(&mut text);
            assert!(text.starts_with("HTTP/1.1 200"), "{text:?}");
            // The header timeout (10 s) is what the slow connections used to make
            // everyone wait out.
            assert!(
                started.elapsed() < std::time::Duration::from_secs(5),
                "{:?}",
                started.elapsed()
            );
            // More slow ones arrive between the requests.
            for _ in 0..50 {
                slow.push(std::net::TcpStream::connect(&addr).unwrap());
            }
        }
    });
}

/// The dashboard had no header-read timeout and no connection cap,
/// so 600 slowloris connections under a 512-descriptor limit blocked it. Now a client
/// must send its headers within 10 s and at most 256 connections are served at once:
/// with 600 slow connections open, a real request is answered within seconds.
#[test]
fn slowloris_connections_do_not_block_the_dashboard() {
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("runs")).unwrap();
    let (child, addr) = spawn_serve(&["runs"], tmp.path(), |c| unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 512,
                rlim_max: 512,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    });
    with_child(child, |_| {
        let mut slow = Vec::new();
        for _ in 0..600 {
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            write!(s, "GET / HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ").unwrap();
            slow.push(s);
        }
        let started = std::time::Instant::now();
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        write!(
            s,
            "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        assert!(
            text.starts_with("HTTP/1.1 200"),
            "no answer within 30 s: {text:?}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(25),
            "{:?}",
            started.elapsed()
        );
        // The slow ones were closed by the server.
        let mut buf = [0u8; 64];
        slow[0]
            .set_read_timeout(Some(std::time::Duration::from_secs(15)))
            .unwrap();
        let n = slow[0].read(&mut buf).unwrap_or(0);
        let _ = n;
    });
}

/// Polls `path` on the dashboard at `addr` until its body satisfies `ok` (30 s at most:
/// the dashboard rescans its roots every 10 s); returns that body.
fn poll_page(addr: &str, path: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (code, body) = http_get(addr, path);
        if code == 200 && ok(&body) {
            return body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{path} never showed what was awaited:\n{body}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// A partial run, as a user meets it: a real run against a server at 1.5 s a
/// call. While it runs, its page on `gauntlet serve` shows units done of the units
/// planned, calls in flight and an ETA (from the progress the session publishes, not
/// "no transcripts written yet"), and `gate` and the pipeline formats refuse it as in
/// progress. Stopped with Ctrl-C (SIGINT) it is `partial: interrupted`, and every page
/// — overview cells and warnings, pivot, leaderboard, run page, report — and every
/// format — report.md headings, JUnit, SARIF, the GitHub summary, `gate` — says so.
#[test]
fn a_run_in_progress_then_stopped_is_marked_by_every_page_and_format() {
    use gauntlet_scripted::{Script, ScriptedServer};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let srv = rt
        .block_on(ScriptedServer::start(Script::default().latency_ms(1500)))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("slow.yaml");
    std::fs::write(
        &cfg,
        format!(
            "run_name: slow\nconcurrency: 2\ntargets:\n  - {{name: openai_compat, params: {{name: slow, model: m, base_url: \"{}\", api_key_env: GAUNTLET_TEST_KEY, timeout_s: 30}}}}\nattacks: [static]\ndatasets:\n  - {{name: demo, params: {{limit: 12}}}}\njudges: [refusal_match]\nmetrics: [asr, refusal_rate]\n",
            srv.openai_base_url()
        ),
    )
    .unwrap();
    let run = Command::new(BIN)
        .args([
            "run",
            cfg.to_str().unwrap(),
            "--runs-dir",
            "runs",
            "--quiet",
        ])
        .current_dir(tmp.path())
        .env("GAUNTLET_TEST_KEY", "sk-test")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let dir = tmp.path().join("runs/slow");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !dir.join(".progress.json").is_file() {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (serve, addr) = spawn_serve(&["runs"], tmp.path(), |_| {});
    with_child(serve, |_| {
        with_child(run, |pid| {
            // Live: units done of those planned, calls in flight, the ETA.
            let page = poll_page(&addr, "/run/slow", |b| {
                b.split("<strong>")
                    .nth(1)
                    .and_then(|s| s.split(" of 12 units done").next())
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| n >= 2)
            });
            assert!(page.contains("● Live"), "{page}");
            assert!(page.contains(" call(s) in flight</strong>"), "{page}");
            let eta = page
                .split("<strong>ETA ")
                .nth(1)
                .unwrap()
                .split('<')
                .next()
                .unwrap();
            assert!(eta.ends_with('s') && eta != "0s", "a real ETA: {eta}");
            assert!(!page.contains("no transcripts written yet"), "{page}");
            // A gate and the pipeline formats refuse a run in progress.
            let o = gauntlet(
                &["gate", "runs/slow", "--rule", "asr <= 0.5 by value"],
                tmp.path(),
            );
            assert_eq!(o.status.code(), Some(2), "{}", show(&o));
            assert!(
                show(&o).contains("is in progress (a gauntlet session holds its lock)"),
                "{}",
                show(&o)
            );
            let o = gauntlet(&["report", "runs/slow", "--format", "junit"], tmp.path());
            assert_eq!(o.status.code(), Some(2), "{}", show(&o));
            assert!(show(&o).contains("the run is in progress"), "{}", show(&o));
            // Ctrl-C.
            let k = Command::new("kill")
                .args(["-INT", &pid.to_string()])
                .status()
                .unwrap();
            assert!(k.success());
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while read_json(&dir.join("run.json"))["status"] == "partial: incomplete"
                || !dir.join("manifest.json").is_file()
            {
                assert!(std::time::Instant::now() < deadline, "the run did not stop");
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        });
        assert_eq!(
            read_json(&dir.join("run.json"))["status"],
            "partial: interrupted"
        );
        assert!(
            !dir.join(".progress.json").exists(),
            "the session removes its progress"
        );
        let mark = ">not complete: partial: interrupted</span>";
        // Every page, once the dashboard has seen the run end.
        let o = poll_page(&addr, "/?run=slow", |b| b.contains(mark));
        assert!(o.contains("run(s) not final"), "{o}");
        let p = http_get(&addr, "/pivot?metric=asr&judge=refusal_match").1;
        assert!(p.contains(mark), "{p}");
        let l = http_get(&addr, "/?surface=jailbreak").1;
        assert_eq!(
            l.matches(mark).count(),
            l.matches("<tr class=\"row-").count(),
            "{l}"
        );
        let r = http_get(&addr, "/run/slow").1;
        assert!(r.contains("⚠ run status `partial: interrupted`"), "{r}");
        let rep = http_get(&addr, "/run/slow/report").1;
        assert!(
            rep.contains("PARTIAL RUN — status: partial: interrupted"),
            "{rep}"
        );
    });
    // Every format.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("## static × slow · demo — ⚠ partial run"),
        "{md}"
    );
    let o = gauntlet(&["report", "runs/slow", "--format", "junit"], tmp.path());
    ok(&o);
    let xml = String::from_utf8_lossy(&o.stdout);
    assert!(
        xml.contains("name=\"run_status\" value=\"partial: interrupted\""),
        "{xml}"
    );
    assert!(
        xml.contains("NOT COMPLETE (run status partial: interrupted)"),
        "{xml}"
    );
    let o = gauntlet(&["report", "runs/slow", "--format", "sarif"], tmp.path());
    ok(&o);
    let sarif: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let inv = &sarif["runs"][0]["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false, "{sarif}");
    assert!(
        inv["toolExecutionNotifications"][0]["message"]["text"]
            .as_str()
            .unwrap()
            .contains("status `partial: interrupted`")
    );
    let o = gauntlet(
        &["report", "runs/slow", "--format", "github-summary"],
        tmp.path(),
    );
    ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .contains("> **⚠ NOT COMPLETE — status: partial: interrupted.**")
    );
    let o = gauntlet(
        &["gate", "runs/slow", "--rule", "asr <= 0.5 by value"],
        tmp.path(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        show(&o).contains("is `partial: interrupted`, not complete"),
        "{}",
        show(&o)
    );
}

//! Progress that tells the truth for slow runs: a live run against the test server at
//! two seconds a call (under one unit per second) reports its unit and call rates per
//! minute and a real ETA, never "0 units/s, eta 0s"; the agent exam shows the same
//! display.

use gauntlet_scripted::{Script, ScriptedServer};
use std::process::Command;
use std::time::Instant;

use crate::common;
use common::*;

#[test]
fn a_slow_live_run_shows_rates_per_minute_and_a_real_eta() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let srv = rt
        .block_on(ScriptedServer::start(Script::default().latency_ms(2000)))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("slow.yaml");
    std::fs::write(
        &cfg,
        format!(
            "run_name: slow\nconcurrency: 1\ntargets:\n  - {{name: openai_compat, params: {{name: slow, model: m, base_url: \"{}\", api_key_env: GAUNTLET_TEST_KEY, timeout_s: 30}}}}\nattacks: [static]\ndatasets:\n  - {{name: demo, params: {{limit: 4}}}}\njudges: [refusal_match]\nmetrics: [asr]\n",
            srv.openai_base_url()
        ),
    )
    .unwrap();
    let started = Instant::now();
    // stderr is a pipe, so progress comes as plain lines every 5 s.
    let out = Command::new(BIN)
        .args(["run", cfg.to_str().unwrap()])
        .current_dir(dir.path())
        .env("GAUNTLET_TEST_KEY", "sk-test")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert!(started.elapsed().as_secs_f64() >= 8.0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let progress = progress_lines(&stderr);
    // At least one line while the run was going (the first after 5 s: 2 of 4 done).
    let mid: Vec<&&str> = progress
        .iter()
        .filter(|l| !l.starts_with("progress: 4/4"))
        .collect();
    assert!(!mid.is_empty(), "{stderr}");
    for l in &mid {
        assert!(
            l.contains(" units/min, "),
            "under one unit/s, per minute: {l}"
        );
        assert!(l.contains(" calls/min, "), "{l}");
        assert!(!l.contains("0 units/s") && !l.contains("eta 0s"), "{l}");
        let eta = l
            .split("eta ")
            .nth(1)
            .unwrap()
            .trim_start_matches("≤ ")
            .split([',', ' '])
            .next()
            .unwrap();
        assert!(eta.ends_with('s') && eta != "unknown", "{l}");
        let secs: u64 = eta.trim_end_matches('s').parse().unwrap();
        assert!((1..=30).contains(&secs), "2 s a unit, at most 3 left: {l}");
    }
    let last = progress.last().unwrap();
    assert!(
        last.starts_with("progress: 4/4 units (100%)") && last.contains("eta 0s"),
        "{last}"
    );
}

/// The agent exam shows the same display: a real exam against the test server at 700 ms
/// a call, one scenario at a time (four sequential calls per scenario: about 8 s),
/// reports plain lines while it runs — scenario runs done, rates, calls made so far —
/// and a last one when done.
#[test]
fn a_slow_real_exam_shows_the_same_progress_lines() {
    let stderr = slow_exam(&[]);
    let progress = progress_lines(&stderr);
    let (last, mid) = progress.split_last().unwrap_or_else(|| panic!("{stderr}"));
    assert!(!mid.is_empty(), "a line while the exam runs: {stderr}");
    for l in mid {
        assert!(l.contains(" scenarios ("), "{l}");
        let made: u64 = l
            .split("), calls ")
            .nth(1)
            .and_then(|c| c.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{l}"));
        assert!(made > 0, "calls are counted as they are made: {l}");
    }
    // Three scenarios walk the six-call cascade; the fourth is floor-routed.
    assert!(
        last.starts_with("progress: 4/4 scenarios (100%)")
            && last.ends_with("eta 0s, calls 18 done, 0 in flight (journal 0, failed 0)"),
        "{last}"
    );
}

/// The ETA comes from planned model calls, not units (the exam's floor-routed scenario
/// is a unit of no call, the others six each: 18 planned without consensus voters), and
/// calls in flight are shown apart from the calls done: a real exam at 700 ms a call,
/// one scenario at a time.
#[test]
fn the_eta_counts_planned_calls_and_calls_in_flight_are_shown_apart() {
    let stderr = slow_exam(&["--consensus", "0"]);
    let progress = progress_lines(&stderr);
    let (last, mid) = progress.split_last().unwrap_or_else(|| panic!("{stderr}"));
    assert!(!mid.is_empty(), "{stderr}");
    let num = |l: &str, before: &str, after: &str| -> u64 {
        l.split(before)
            .nth(1)
            .and_then(|c| c.split(after).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no `{before}N{after}` in {l}"))
    };
    let mut with_left = 0;
    for l in mid {
        let done = num(l, "), calls ", " done");
        let in_flight = num(l, " done, ", " in flight");
        assert!(
            in_flight <= 3,
            "one scenario at a time (the deep panel: 3 calls): {l}"
        );
        assert!(done + in_flight <= 18, "{l}");
        if l.contains("planned calls left") {
            with_left += 1;
            let left = num(l, "(at most ", " planned calls left)");
            assert_eq!(left, 18 - done, "{l}");
            // At most 3 calls (the deep panel) per 700 ms, so the calls left take at least
            // that long.
            let eta = l.split("eta ≤ ").nth(1).unwrap().split(' ').next().unwrap();
            let secs: f64 = match eta.split_once('m') {
                Some((m, s)) => {
                    m.parse::<f64>().unwrap() * 60.0
                        + s.trim_end_matches('s').parse::<f64>().unwrap()
                }
                None => eta.trim_end_matches('s').parse().unwrap(),
            };
            assert!(secs + 1.0 >= 0.7 / 3.0 * left as f64, "{l}");
        }
    }
    assert!(with_left > 0, "the ETA reads planned calls: {stderr}");
    assert!(
        last.ends_with("eta 0s, calls 18 done, 0 in flight (journal 0, failed 0)"),
        "{last}"
    );
}

/// A real exam of the small corpus against the test server at 700 ms a call, one
/// scenario at a time, with `extra` arguments; returns its stderr (it must succeed).
fn slow_exam(extra: &[&str]) -> String {
    use common::exam::{Server, cascade_script, small_corpus};
    let srv = Server::start(cascade_script(700));
    let corpus = tempfile::tempdir().unwrap();
    small_corpus(corpus.path());
    let out = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["exam", "--mode", "real", "-n", "1", "--concurrency", "1"])
        .args(extra)
        .args(["--target", &srv.target("m"), "--corpus"])
        .arg(corpus.path())
        .arg("--out")
        .arg(out.path().join("o"))
        .env("GAUNTLET_TEST_KEY", "k")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `progress: ` lines of a stderr.
fn progress_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("progress: "))
        .collect()
}

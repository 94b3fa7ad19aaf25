//! A real-mode exam on the shared model-call layer, through the binary against the test
//! server over real HTTP: SIGKILLed at seeded points and rerun, it
//! ends with the artefacts of an uninterrupted exam and no finished call repeated
//! (counted at the server); `--max-queries` gives a partial report and exit 3, and a
//! rerun with a larger budget completes without repeating the paid calls; `--estimate`
//! plans calls per tier and a cost bound without calling; usage and cost per tier are
//! in report.json, identical on a resumed run; another exam in the same `--out` moves
//! the previous one aside.

use crate::common;

use common::BIN;
use common::exam::*;
use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};

/// Complete journal records (the header and a torn last line do not count).
fn journal_records(p: &Path) -> u64 {
    match std::fs::read(p) {
        Ok(b) => (b.iter().filter(|c| **c == b'\n').count() as u64).saturating_sub(1),
        Err(_) => 0,
    }
}

/// Seeded kill points: `n` increasing fractions of the final journal size in
/// [0.1, 0.85] (xorshift64*, seed fixed, so a failure reproduces).
fn kill_points(seed: u64, n: usize) -> Vec<f64> {
    let mut x = seed;
    let mut v: Vec<f64> = (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
            0.1 + 0.75 * (r as f64 / (1u64 << 53) as f64)
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

#[test]
fn real_exam_sigkilled_five_times_resumes_to_identical_artefacts_without_repeating_calls() {
    let srv = Server::start(cascade_script(15));
    let target = srv.target("gpt-4o-mini");
    let corpus = reference_corpus();
    let tmp = tempfile::tempdir().unwrap();
    let args = ["-n", "1", "--consensus", "0", "--concurrency", "4"];

    // Reference: an uninterrupted exam.
    let reference = tmp.path().join("ref/out");
    let before = srv.requests();
    let o = run(&mut exam_cmd(&corpus, &reference, &target, &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let total = srv.requests() - before;
    let s = last_session(&reference);
    assert_eq!(s["model_calls"].as_u64(), Some(total), "{s}");
    assert_eq!(journal_records(&reference.join("journal.jsonl")), total);
    assert!(
        total > 300,
        "the exam makes enough calls to be killed mid-way: {total}"
    );
    let ref_journal = std::fs::metadata(reference.join("journal.jsonl"))
        .unwrap()
        .len();

    // Five SIGKILLs at seeded points, each session resuming the previous one's journal.
    let out = tmp.path().join("killed/out");
    let journal = out.join("journal.jsonl");
    for (k, fraction) in kill_points(15, 5).into_iter().enumerate() {
        let records_before = journal_records(&journal);
        let requests_before = srv.requests();
        let mut child = exam_cmd(&corpus, &out, &target, &args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        common::kill_when_file_reaches(&mut child, &journal, fraction * ref_journal as f64);
        // Let requests the killed process had in flight reach the server's counter.
        srv.settle();
        let journaled = journal_records(&journal) - records_before;
        let sent = srv.requests() - requests_before;
        // Every request the session sent was journaled, except the ones in flight when
        // it died (at most concurrency × the deep panel's 3): nothing was re-sent.
        assert!(
            sent >= journaled && sent - journaled <= 12,
            "kill {k} at {fraction:.3}: {sent} requests sent, {journaled} journaled"
        );
        assert!(
            !out.join("report.json").exists(),
            "a killed exam leaves no report that looks complete"
        );
    }
    let at_start = journal_records(&journal);
    assert!(at_start > 0 && at_start < total, "{at_start} of {total}");

    let requests_before = srv.requests();
    let o = run(&mut exam_cmd(&corpus, &out, &target, &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let made = srv.requests() - requests_before;
    assert_eq!(
        made,
        total - at_start,
        "the final session repeated finished calls (counted at the server)"
    );
    let s = last_session(&out);
    assert_eq!(
        s["journal_records_at_start"].as_u64(),
        Some(at_start),
        "{s}"
    );
    assert_eq!(s["model_calls"].as_u64(), Some(made), "{s}");
    assert_eq!(s["cache_hits"].as_u64(), Some(at_start), "{s}");
    assert_same(&reference, &out);

    // Every call journaled exactly once.
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut keys = HashSet::new();
    for line in text.lines().skip(1) {
        let k = &line[6..38];
        assert!(keys.insert(k.to_string()), "key {k} journaled twice");
    }
    assert_eq!(keys.len() as u64, total);

    // Usage per tier is in the report, the same after the resumed run (byte-identical
    // report.json above), and counts every call of the reference.
    let r = json(&out.join("report.json"));
    let tiers = r["usage"]["tiers"].as_array().unwrap();
    let calls: u64 = tiers.iter().map(|t| t["calls"].as_u64().unwrap()).sum();
    assert_eq!(calls, total, "{}", r["usage"]);
}

#[test]
fn budget_exhaustion_gives_a_partial_report_exit_3_and_a_bigger_budget_resumes() {
    let srv = Server::start(cascade_script(0));
    let target = srv.target("gpt-4o-mini");
    let corpus = tempfile::tempdir().unwrap();
    small_corpus(corpus.path());
    let tmp = tempfile::tempdir().unwrap();
    let args = ["-n", "2", "--consensus", "0", "--concurrency", "1"];

    // The reference runs 8 scenarios at once, the budgeted exam one at a time: the
    // artefacts do not depend on the concurrency.
    let reference = tmp.path().join("ref/out");
    let before = srv.requests();
    let o = run(&mut exam_cmd(
        corpus.path(),
        &reference,
        &target,
        &["-n", "2", "--consensus", "0", "--concurrency", "8"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let total = srv.requests() - before;
    assert_eq!(
        total,
        2 * 3 * 6,
        "3 non-floor scenarios × 2 passes × 6 calls"
    );

    // A budget of 8 calls: the first scenario of pass 0 (6 calls) is decided, the
    // second runs out of budget; the rest are not run.
    let out = tmp.path().join("budget/out");
    let before = srv.requests();
    let mut a = args.to_vec();
    a.extend(["--max-queries", "8"]);
    let o = run(&mut exam_cmd(corpus.path(), &out, &target, &a));
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("query budget"), "{stderr}");
    assert_eq!(
        srv.requests() - before,
        8,
        "the budget bounds calls at the server"
    );
    let r = json(&out.join("report.json"));
    assert_eq!(r["partial"], "budget", "{r}");
    let not_run = r["not_run"].as_array().unwrap();
    let decided: u64 = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["total"].as_u64().unwrap())
        .sum();
    // 4 scenarios × 2 passes: each is decided or listed as not run, never both.
    assert_eq!(decided + not_run.len() as u64, 8, "{r}");
    assert!(!not_run.is_empty());
    let d = &r["decided_by"];
    assert_eq!(
        d["model"].as_u64().unwrap()
            + d["floor"].as_u64().unwrap()
            + d["fail_safe"].as_u64().unwrap(),
        decided,
        "not-run scenarios are in no count: {d}"
    );
    assert_eq!(
        d["fail_safe"], 0,
        "a refused call is never a fail-safe verdict: {d}"
    );
    for run in r["runs"].as_array().unwrap() {
        for x in run["results"].as_array().unwrap() {
            assert!(
                !not_run
                    .iter()
                    .any(|n| n["pass"] == run["index"] && n["scenario_id"] == x["scenario_id"]),
                "{x} is both decided and not run"
            );
        }
    }
    let lb = json(&out.join("leaderboard.json"));
    assert_eq!(lb[0]["status"], "partial: budget (real mode)");
    for doc in ["report.md", "report.html"] {
        let t = std::fs::read_to_string(out.join(doc)).unwrap();
        assert!(t.contains("PARTIAL (budget)"), "{doc}");
    }

    // A bigger budget: the 8 paid calls are replayed, only the rest is made, and the
    // artefacts are those of the uninterrupted exam.
    let before = srv.requests();
    let mut a = args.to_vec();
    a.extend(["--max-queries", "1000"]);
    let o = run(&mut exam_cmd(corpus.path(), &out, &target, &a));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        srv.requests() - before,
        total - 8,
        "paid calls were repeated"
    );
    let s = last_session(&out);
    assert_eq!(s["cache_hits"].as_u64(), Some(8), "{s}");
    assert_same(&reference, &out);
    assert!(json(&out.join("report.json")).get("partial").is_none());
}

#[test]
fn estimate_plans_calls_per_tier_and_a_cost_bound_without_calling() {
    let srv = Server::start(cascade_script(0));
    let corpus = tempfile::tempdir().unwrap();
    small_corpus(corpus.path());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = run(&mut exam_cmd(
        corpus.path(),
        &out,
        &srv.target("gpt-4o-mini"),
        &["-n", "2", "--consensus", "1", "--estimate"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(srv.requests(), 0, "--estimate calls no model");
    assert!(!out.exists(), "--estimate writes nothing");
    let stdout = String::from_utf8_lossy(&o.stdout);
    // 2 passes × 3 non-floor scenarios × (1 + 1 voter) = 12 cascade passes at most.
    let planned = |tier: &str| -> u64 {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(tier))
            .unwrap_or_else(|| panic!("no {tier} line:\n{stdout}"));
        let w: Vec<&str> = line.split_whitespace().collect();
        let i = w.iter().position(|x| *x == "calls").unwrap();
        w[i - 1].parse().unwrap()
    };
    assert_eq!(planned("triage"), 12, "{stdout}");
    assert_eq!(planned("investigate"), 12, "{stdout}");
    assert_eq!(planned("deep"), 36, "{stdout}");
    assert_eq!(planned("formatter"), 12, "{stdout}");
    assert!(stdout.contains("total: 72 planned model calls"), "{stdout}");
    assert!(stdout.contains("upper-bound cost: $"), "{stdout}");
    assert!(
        !stdout.contains("unpriced"),
        "gpt-4o-mini is priced:\n{stdout}"
    );

    // The bound holds: a real exam of the same plan makes no more calls and costs less.
    let o = run(&mut exam_cmd(
        corpus.path(),
        &out,
        &srv.target("gpt-4o-mini"),
        &["-n", "2", "--consensus", "1"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(srv.requests() <= 72);
    let bound: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("upper-bound cost: $"))
        .unwrap()
        .parse()
        .unwrap();
    let cost = json(&out.join("report.json"))["usage"]["cost_usd"]
        .as_f64()
        .unwrap();
    assert!(cost > 0.0 && cost <= bound, "{cost} > {bound}");

    // An unknown model: N/A, never a made-up price.
    let o = run(&mut exam_cmd(
        corpus.path(),
        &out,
        &srv.target("no-such-model"),
        &["-n", "1", "--estimate"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("N/A (no price for"), "{stdout}");
}

#[test]
fn usage_and_cost_per_tier_are_reported_identically_on_a_resumed_run() {
    let srv = Server::start(cascade_script(0));
    let corpus = tempfile::tempdir().unwrap();
    small_corpus(corpus.path());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let target = srv.target("gpt-4o-mini");
    let args = ["-n", "1", "--consensus", "0"];
    let o = run(&mut exam_cmd(corpus.path(), &out, &target, &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let fresh = json(&out.join("report.json"));
    let u = &fresh["usage"];
    let tiers: Vec<&str> = u["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tier"].as_str().unwrap())
        .collect();
    assert_eq!(tiers, ["triage", "investigate", "deep", "formatter"]);
    for t in u["tiers"].as_array().unwrap() {
        let want = if t["tier"] == "deep" { 9 } else { 3 };
        assert_eq!(t["calls"], want, "{t}");
        assert_eq!(t["calls_with_usage"], want, "{t}");
        assert!(t["input_tokens"].as_u64().unwrap() > 0, "{t}");
        assert!(t["output_tokens"].as_u64().unwrap() > 0, "{t}");
        assert!(t["cost_usd"].as_f64().unwrap() > 0.0, "{t}");
    }
    let sum: u64 = u["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["input_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(u["input_tokens"].as_u64(), Some(sum));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("usage deep"), "{stdout}");

    // Resumed: no call made, the same usage and cost (journal hits count).
    let before = srv.requests();
    let o = run(&mut exam_cmd(corpus.path(), &out, &target, &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(srv.requests(), before);
    assert_eq!(last_session(&out)["model_calls"], 0);
    let resumed = json(&out.join("report.json"));
    assert_eq!(resumed["usage"], fresh["usage"]);

    // An unpriced model: cost N/A with the reason, tokens still counted.
    let out2 = tmp.path().join("out2");
    let o = run(&mut exam_cmd(
        corpus.path(),
        &out2,
        &srv.target("no-such-model"),
        &args,
    ));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let u = &json(&out2.join("report.json"))["usage"];
    assert!(u["cost_usd"].is_null(), "{u}");
    assert!(
        u["cost_na_reason"].as_str().unwrap().contains("no price"),
        "{u}"
    );
    assert!(u["input_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn another_exam_in_the_same_out_moves_the_previous_one_aside_loudly() {
    let srv = Server::start(cascade_script(0));
    let corpus = tempfile::tempdir().unwrap();
    small_corpus(corpus.path());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let target = srv.target("gpt-4o-mini");
    let o = run(&mut exam_cmd(
        corpus.path(),
        &out,
        &target,
        &["-n", "2", "--consensus", "0"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let first = std::fs::read(out.join("report.json")).unwrap();
    let o = run(&mut exam_cmd(
        corpus.path(),
        &out,
        &target,
        &["-n", "1", "--consensus", "0"],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("another corpus or configuration") && stderr.contains("superseded"),
        "{stderr}"
    );
    let moved = out.join("superseded/1");
    assert_eq!(std::fs::read(moved.join("report.json")).unwrap(), first);
    assert!(moved.join("run-1").is_dir() && !out.join("run-1").exists());
    assert_eq!(
        json(&out.join("report.json"))["runs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Each is a whole exam by its manifest: the moved one took its manifest along (its
    // scenario runs' files and exam.json listed), the new one wrote its own.
    use gauntlet_job::manifest::{Kind, Manifest};
    let old = Manifest::verify(&moved).unwrap();
    let new = Manifest::verify(&out).unwrap();
    for m in [&old, &new] {
        assert_eq!(m.kind, Some(Kind::Exam));
        assert!(m.files.contains_key("exam.json") && m.files.contains_key("report.json"));
        assert!(!m.files.contains_key("timings.json") && !m.files.contains_key("journal.jsonl"));
    }
    assert!(old.files.keys().any(|k| k.starts_with("run-1/")));
    assert!(!new.files.keys().any(|k| k.starts_with("run-1/")));
    assert_ne!(old.run_id, new.run_id, "another exam, another identity");
}

/// An exam described by a YAML file: its settings (budget, seed, targets) apply, the
/// identity's sha256 is recorded in report.json and is that of exam.json, a CLI
/// `--max-queries` overrides the file's budget to resume, and a changed seed is another
/// exam. The file's settings cannot be mixed with the flags that would contradict them.
#[test]
fn an_exam_file_describes_the_exam_and_its_hash_is_recorded() {
    let srv = Server::start(cascade_script(0));
    let dir = tempfile::tempdir().unwrap();
    small_corpus(&dir.path().join("corpus"));
    let file = |seed: u64| {
        let p = dir.path().join("exam.yaml");
        std::fs::write(
            &p,
            format!(
                "corpus: corpus\nmode: real\npasses: 1\nconsensus: 0\nseed: {seed}\nmax_queries: 8\nout: out\ntarget: {}\n",
                srv.target("gpt-4o-mini")
            ),
        )
        .unwrap();
        p
    };
    let exam = |p: &Path, extra: &[&str]| {
        let mut c = Command::new(BIN);
        c.args(["exam", "--quiet", "--config"])
            .arg(p)
            .args(extra)
            .env("GAUNTLET_TEST_KEY", "k");
        c.output().unwrap()
    };
    let p = file(7);
    let o = exam(&p, &[]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "the file's budget applies: {}",
        show(&o)
    );
    assert_eq!(srv.requests(), 8);
    let body = &srv.srv.last_request().unwrap().body;
    assert_eq!(body["seed"], 7, "the file's seed is sent: {body}");
    let out = dir.path().join("out");
    let o = exam(&p, &["--max-queries", "100"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(srv.requests(), 18, "3 scenarios × 6 calls, none repeated");
    let r = json(&out.join("report.json"));
    let hash = r["exam_config_sha256"].as_str().unwrap().to_string();
    let identity = std::fs::read(out.join("exam.json")).unwrap();
    let sum = Command::new("sha256sum")
        .arg(out.join("exam.json"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&sum.stdout).starts_with(&hash));
    assert_eq!(
        json(&out.join("exam.json"))["seed"],
        7,
        "{}",
        String::from_utf8_lossy(&identity)
    );

    // Another seed is another exam: the previous one is moved aside, its hash differs.
    let p = file(8);
    let o = exam(&p, &["--max-queries", "100"]);
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("superseded"));
    let r2 = json(&out.join("report.json"));
    assert_ne!(r2["exam_config_sha256"].as_str().unwrap(), hash);

    // Flags that contradict the file are refused; an unknown key names file and line.
    let o = exam(&p, &["--passes", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    std::fs::write(&p, "mode: real\nbudget: 3\n").unwrap();
    let o = exam(&p, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("exam.yaml:2:") && stderr.contains("unknown key `budget`"),
        "{stderr}"
    );
}

/// End-to-end mode with a real target journals the fleet findings' triage too: a rerun
/// makes no call and writes the same artefacts; a budget that runs out in the
/// end-to-end pass drops `detect_fidelity` (never a fidelity over findings nobody
/// triaged), says so, exits 3, and a bigger budget finishes it without repeating calls.
#[test]
fn end_to_end_mode_resumes_and_a_budget_cut_drops_the_fidelity_block() {
    let srv = Server::start(cascade_script(0));
    let target = srv.target("gpt-4o-mini");
    let corpus = tempfile::tempdir().unwrap();
    small_corpus(corpus.path());
    let tmp = tempfile::tempdir().unwrap();
    let args = ["--mode", "e2e", "-n", "1", "--consensus", "0"];
    let a = tmp.path().join("a/out");
    let o = run(&mut exam_cmd(corpus.path(), &a, &target, &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let total = srv.requests();
    assert!(total > 18, "the end-to-end pass called the target: {total}");
    assert!(json(&a.join("report.json"))["detect_fidelity"].is_object());
    let before = artefacts(&a);
    let o = run(&mut exam_cmd(corpus.path(), &a, &target, &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(srv.requests(), total, "a rerun makes no call");
    assert!(before == artefacts(&a), "a rerun changed the artefacts");

    // 18 calls: the agent pass (3 scenarios × 6) and nothing of the end-to-end pass.
    let b = tmp.path().join("b/out");
    let mut x = args.to_vec();
    x.extend(["--max-queries", "18"]);
    let o = run(&mut exam_cmd(corpus.path(), &b, &target, &x));
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let r = json(&b.join("report.json"));
    assert_eq!(r["partial"], "budget");
    assert!(r.get("detect_fidelity").is_none(), "{r}");
    assert!(r["e2e_not_run"].as_str().unwrap().contains("budget"), "{r}");
    assert!(r.get("not_run").is_none(), "the agent pass completed: {r}");
    let before = srv.requests();
    let mut x = args.to_vec();
    x.extend(["--max-queries", "1000"]);
    let o = run(&mut exam_cmd(corpus.path(), &b, &target, &x));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        srv.requests() - before,
        total - 18,
        "paid calls were repeated"
    );
    assert_same(&a, &b);
}

/// A configuration error (401) stops every further call at once, as in `gauntlet run`:
/// exit 2, the cause named, no report made of fail-safe verdicts; the journal keeps
/// what finished, so a rerun with the cause fixed resumes.
#[test]
fn a_configuration_error_stops_the_exam_without_a_report() {
    let srv = Server::start(cascade_script(0).require_key("right"));
    let corpus = tempfile::tempdir().unwrap();
    small_corpus(corpus.path());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let target = srv.target("gpt-4o-mini");
    let args = ["-n", "1", "--consensus", "0", "--concurrency", "1"];
    let o = run(exam_cmd(corpus.path(), &out, &target, &args).env("GAUNTLET_TEST_KEY", "wrong"));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("the exam stopped") && stderr.contains("401"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("wrong"),
        "the key is never echoed: {stderr}"
    );
    assert_eq!(srv.requests(), 1, "no call after the first 401");
    assert!(!out.join("report.json").exists());
    let o = run(exam_cmd(corpus.path(), &out, &target, &args).env("GAUNTLET_TEST_KEY", "right"));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(json(&out.join("report.json"))["decided_by"]["fail_safe"], 0);
}

/// The target's `max_tokens` (an `openai_compat` param) is each request's output budget
/// and the estimate's bound; without it both stay at 512. A changed `max_tokens` is
/// another exam: no call made under the old budget is reused.
#[test]
fn the_targets_max_tokens_bounds_every_exam_call_and_the_estimate() {
    let srv = Server::start(cascade_script(0));
    let corpus = tempfile::tempdir().unwrap();
    small_corpus(corpus.path());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let with = |n: Option<u32>| {
        let t = srv.target("gpt-4o-mini");
        match n {
            Some(n) => t.replace(
                "timeout_s: 30}",
                &format!("timeout_s: 30, max_tokens: {n}}}"),
            ),
            None => t,
        }
    };
    let args = ["-n", "1", "--consensus", "0"];
    let estimate = |n: Option<u32>| {
        let o = run(&mut exam_cmd(
            corpus.path(),
            &out,
            &with(n),
            &[&args[..], &["--estimate"]].concat(),
        ));
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // 3 non-floor scenarios: triage 3 calls ≤ 3 × budget out, deep 9 calls.
    let e = estimate(Some(77));
    assert!(e.contains(&format!("+ {} out tokens", 3 * 77)), "{e}");
    assert!(e.contains(&format!("+ {} out tokens", 9 * 77)), "{e}");
    let e = estimate(None);
    assert!(e.contains(&format!("+ {} out tokens", 3 * 512)), "{e}");
    assert_eq!(srv.requests(), 0);

    let sent = |from: usize| -> Vec<Option<u64>> {
        srv.srv.requests()[from..]
            .iter()
            .map(|r| r.body["max_tokens"].as_u64())
            .collect()
    };
    let o = run(&mut exam_cmd(corpus.path(), &out, &with(Some(77)), &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let first = sent(0);
    assert!(first.len() >= 6, "{first:?}");
    assert!(first.iter().all(|m| *m == Some(77)), "{first:?}");

    // Another budget in the same --out: every call is made again, with the new budget.
    let o = run(&mut exam_cmd(corpus.path(), &out, &with(Some(100)), &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let second = sent(first.len());
    assert_eq!(second.len(), first.len(), "no call reused: {second:?}");
    assert!(second.iter().all(|m| *m == Some(100)), "{second:?}");

    // No max_tokens: 512, as before.
    let o = run(&mut exam_cmd(corpus.path(), &out, &with(None), &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let third = sent(2 * first.len());
    assert_eq!(third.len(), first.len());
    assert!(third.iter().all(|m| *m == Some(512)), "{third:?}");
}

/// Ctrl-C (SIGINT) on a real-mode exam: the calls in flight finish and are journaled, no
/// new one starts, a partial report (`partial: interrupted`, the not-run scenario runs
/// listed) is written, stderr says where, and the exit is 1 (as `run`); the rerun
/// completes without repeating a finished call, to the artefacts of an uninterrupted
/// exam.
#[test]
fn sigint_on_the_exam_writes_a_partial_report_and_the_rerun_resumes() {
    let srv = Server::start(cascade_script(0));
    let target = srv.target("gpt-4o-mini");
    let corpus = reference_corpus();
    let tmp = tempfile::tempdir().unwrap();
    let args = ["-n", "1", "--consensus", "0", "--concurrency", "2"];
    let reference = tmp.path().join("ref/out");
    let o = run(&mut exam_cmd(&corpus, &reference, &target, &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let total = srv.requests();

    // Slow replies, so the exam is mid-way when the signal comes.
    srv.srv.set_script(cascade_script(60));
    let out = tmp.path().join("interrupted/out");
    let journal = out.join("journal.jsonl");
    let child = exam_cmd(&corpus, &out, &target, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while journal_records(&journal) < 20 {
        assert!(std::time::Instant::now() < deadline, "no progress");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let k = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("interrupted: finishing the model calls in flight"),
        "{err}"
    );
    assert!(err.contains("the report is partial ("), "{err}");
    assert!(err.contains(&out.display().to_string()), "{err}");
    srv.settle();
    let first = srv.requests() - total;
    // Every request sent was answered and journaled before the exam ended.
    assert_eq!(journal_records(&journal), first);
    assert!(
        first < total,
        "{first} of {total}: the exam was stopped early"
    );
    let r = json(&out.join("report.json"));
    assert_eq!(r["partial"], "interrupted", "{r}");
    let not_run = r["not_run"].as_array().unwrap();
    assert!(!not_run.is_empty(), "{r}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("PARTIAL (interrupted)"), "{md}");
    assert_eq!(last_session(&out)["model_calls"].as_u64(), Some(first));

    // The rerun makes only the calls not made yet and ends complete.
    srv.srv.set_script(cascade_script(0));
    let before = srv.requests();
    let o = run(&mut exam_cmd(&corpus, &out, &target, &args));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        srv.requests() - before,
        total - first,
        "the rerun repeated finished calls (counted at the server)"
    );
    assert!(json(&out.join("report.json")).get("partial").is_none());
    assert_same(&reference, &out);
}

/// A budget-cut exam's summary gives each call count with what it counts: the report's
/// (the scenario runs it covers), this session's (made + journal hits, one total), and
/// the difference (calls of scenario runs not run); the per-tier usage sums to the
/// session's total.
#[test]
fn a_partial_exam_summary_labels_each_call_count_and_they_add_up() {
    let srv = Server::start(cascade_script(0));
    let target = srv.target("gpt-4o-mini");
    let corpus = tempfile::tempdir().unwrap();
    small_corpus(corpus.path());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let args = ["-n", "2", "--consensus", "0", "--concurrency", "1"];
    // 8 calls: one scenario run decided (6 calls), the next cut after 2.
    let o = run(&mut exam_cmd(
        corpus.path(),
        &out,
        &target,
        &[&args[..], &["--max-queries", "8"]].concat(),
    ));
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    // A second session with 14 more replays the 8 from the journal: 22 calls, three
    // scenario runs decided (18 calls), the fourth cut after 4.
    let o = run(&mut exam_cmd(
        corpus.path(),
        &out,
        &target,
        &[&args[..], &["--max-queries", "14"]].concat(),
    ));
    assert_eq!(o.status.code(), Some(3), "{}", show(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let r = json(&out.join("report.json"));
    let reported = r["model_calls"].as_u64().unwrap();
    let line = |start: &str| -> String {
        stdout
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` line:\n{stdout}"))
            .to_string()
    };
    assert!(
        line("model calls ").contains(&format!("{reported} in the scenario runs reported")),
        "{stdout}"
    );
    let session = line("this session ");
    assert!(
        session.contains("22 call(s): 14 made, 8 journal hit(s) (0 failed)"),
        "{session}"
    );
    assert_eq!(reported, 18);
    assert!(
        stdout.contains(&format!(
            "{} of this session's calls belong to scenario runs not run",
            22 - reported
        )),
        "{stdout}"
    );
    let usage: u64 = r["usage"]["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(usage, 22, "{}", r["usage"]);
}

/// A golden exam ignored the `--out` lock and the supersede rule: started into the
/// `--out` of a running real exam it removed the real exam's `.runs-partial/` and the
/// real exam aborted; run after a finished real exam it wrote over its report.json. It
/// takes the directory as every exam does: refused while the real exam runs (which then
/// finishes whole), and after it the real exam is moved to `superseded/1/`, loudly.
#[test]
fn a_golden_exam_keeps_the_out_lock_and_moves_a_real_exam_aside() {
    let srv = Server::start(cascade_script(150));
    let corpus = tempfile::tempdir().unwrap();
    small_corpus(corpus.path());
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let target = srv.target("gpt-4o-mini");
    let real = ["-n", "2", "--consensus", "0", "--concurrency", "1"];
    let child = exam_cmd(corpus.path(), &out, &target, &real)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let journal = out.join("journal.jsonl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while journal_records(&journal) < 2 {
        assert!(std::time::Instant::now() < deadline, "no progress");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let golden = ["--mode", "golden"];
    let o = run(&mut exam_cmd(corpus.path(), &out, &target, &golden));
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("in use by another gauntlet exam"),
        "{}",
        show(&o)
    );
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let report = std::fs::read(out.join("report.json")).unwrap();
    assert_eq!(
        json(&out.join("report.json"))["runs"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let o = run(&mut exam_cmd(corpus.path(), &out, &target, &golden));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("superseded"), "{err}");
    assert_eq!(
        std::fs::read(out.join("superseded/1/report.json")).unwrap(),
        report
    );
    gauntlet_job::manifest::Manifest::verify(&out.join("superseded/1")).unwrap();
    gauntlet_job::manifest::Manifest::verify(&out).unwrap();
    assert_ne!(std::fs::read(out.join("report.json")).unwrap(), report);
}

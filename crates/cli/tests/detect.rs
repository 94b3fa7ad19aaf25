//! `gauntlet exam-detect`: exit codes 0 / 1 / 2, JSON and human output, external
//! detectors and their own scenarios, reserved rows.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn gauntlet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gauntlet"))
        .args(args)
        .output()
        .expect("run gauntlet")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A pinned corpus of the given scenario files, each with its expected_detection
/// block replaced by `labels`.
fn corpus(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (rel, labels) in files {
        let src = std::fs::read_to_string(repo().join("exams/scenarios").join(rel)).unwrap();
        let cut = src.find("expected_detection:").unwrap();
        let name = Path::new(rel).file_name().unwrap();
        std::fs::write(
            dir.path().join(name),
            format!("{}expected_detection: {labels}\n", &src[..cut]),
        )
        .unwrap();
    }
    let out = gauntlet(&["corpus", "pin", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    dir
}

fn script(dir: &Path, body: &str) -> String {
    let p = dir.join("detector");
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.display().to_string()
}

#[test]
fn reference_corpus_passes_at_full_recall_and_precision() {
    let root = repo().join("exams/scenarios");
    let out = gauntlet(&["exam-detect", "--corpus", root.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = json(&out);
    assert_eq!(r["totals"]["labeled"], 108);
    assert_eq!(r["totals"]["failed"], 0);
    assert_eq!(r["totals"]["reserved"], 0);
    assert_eq!(r["recall"]["rate"], 1.0);
    assert_eq!(r["precision"]["rate"], 1.0);
    assert_eq!(r["recall"]["denominator"], 77);
    assert_eq!(r["precision"]["denominator"], 31);
    assert!(r["recall"]["wilson_low"].as_f64().unwrap() > 0.9);
    assert_eq!(r["coverage"].as_array().unwrap().len(), 20);
    let human = gauntlet(&[
        "exam-detect",
        "--corpus",
        root.to_str().unwrap(),
        "--recall",
    ]);
    let h = text(&human);
    assert!(h.contains("RESULT  PASS"), "{h}");
    assert!(
        h.contains("MISSED ATTACKS (0)") && h.contains("FALSE ALARMS (0)"),
        "{h}"
    );
}

#[test]
fn example_external_detector_and_its_scenarios_are_graded() {
    let root = repo().join("exams/scenarios");
    let dets = repo().join("detectors");
    let out = gauntlet(&[
        "exam-detect",
        "--corpus",
        root.to_str().unwrap(),
        "--detectors-dir",
        dets.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = json(&out);
    let own: Vec<&Value> = r["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["origin"] == "detector:mailbox-forwarding")
        .collect();
    assert_eq!(own.len(), 3);
    assert!(own.iter().all(|x| x["status"] == "pass"));
    assert_eq!(
        r["corpus_count"], 108,
        "detector scenarios are never pinned"
    );
    assert_eq!(r["extra_count"], 3);
    assert!(
        r["detectors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d == "mailbox-forwarding")
    );
}

#[test]
fn gaps_exit_one_and_name_misses_and_false_alarms() {
    let c = corpus(&[
        // Benign twin relabelled to expect exfil: a miss.
        (
            "exfil/EX-02-drive-download-just-under-100mb.yaml",
            "{must_fire: [exfil-pattern], must_not_fire: []}",
        ),
        // An unknown principal, labelled benign and silent on new-actor: a false alarm.
        (
            "identity/NA-01-unknown-principal-enumerates-vault.yaml",
            "{must_fire: [], must_not_fire: [new-actor]}",
        ),
        (
            "code/GO-03-merge-queue-push-to-main.yaml",
            "{must_fire: [], must_not_fire: [git-oops]}",
        ),
    ]);
    let out = gauntlet(&[
        "exam-detect",
        "--corpus",
        c.path().to_str().unwrap(),
        "--recall",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let h = text(&out);
    assert!(h.contains("RESULT  GAPS"), "{h}");
    assert!(
        h.contains("MISS      EX-02-drive-download-just-under-100mb  missing: exfil-pattern"),
        "{h}"
    );
    assert!(
        h.contains("ALARM     NA-01-unknown-principal-enumerates-vault  fired: new-actor"),
        "{h}"
    );
    let r = json(&gauntlet(&[
        "exam-detect",
        "--corpus",
        c.path().to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(r["totals"]["failed"], 2);
    assert_eq!(r["totals"]["passed"], 1);
    assert_eq!(r["precision"]["numerator"], 1);
    assert_eq!(r["recall"]["numerator"], 0);
}

#[test]
fn reserved_rows_are_tracked_not_failed() {
    let c = corpus(&[(
        "exfil/EX-01-drive-download-just-over-100mb.yaml",
        "{must_fire: [exfil-pattern, insider-risk], must_not_fire: [], reserved: true}",
    )]);
    let out = gauntlet(&[
        "exam-detect",
        "--corpus",
        c.path().to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let r = json(&out);
    assert_eq!(r["totals"]["reserved"], 1);
    assert_eq!(r["totals"]["failed"], 0);
    assert_eq!(r["rows"][0]["status"], "reserved_pending");
    assert_eq!(r["recall"]["missed"][0]["reserved"], true);
    let h = text(&gauntlet(&[
        "exam-detect",
        "--corpus",
        c.path().to_str().unwrap(),
    ]));
    assert!(
        h.contains("RESERVED  EX-01") && h.contains("no detector yet: insider-risk"),
        "{h}"
    );
    assert!(
        h.contains("insider-risk") && h.contains("(no detector)"),
        "{h}"
    );
}

#[test]
fn corpus_and_configuration_failures_exit_two() {
    let c = corpus(&[(
        "code/GO-03-merge-queue-push-to-main.yaml",
        "{must_fire: [], must_not_fire: [git-oops]}",
    )]);
    let p = c.path().to_str().unwrap();
    let out = gauntlet(&["exam-detect", "--corpus", p, "--detector", "no-equals-sign"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = gauntlet(&[
        "exam-detect",
        "--corpus",
        p,
        "--detector",
        "git-oops=/bin/true",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("clashes"), "{}", text(&out));
    // Tamper after pinning: integrity failure, nothing runs.
    let f = c.path().join("GO-03-merge-queue-push-to-main.yaml");
    let mut s = std::fs::read_to_string(&f).unwrap();
    s.push_str("# edited\n");
    std::fs::write(&f, s).unwrap();
    let out = gauntlet(&["exam-detect", "--corpus", p, "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("CORPUS INTEGRITY FAIL"),
        "{}",
        text(&out)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn crashing_or_hanging_external_detectors_exit_two_but_every_row_is_graded() {
    let c = corpus(&[
        (
            "code/GO-01-force-push-main-after-review-dismissal.yaml",
            "{must_fire: [git-oops], must_not_fire: []}",
        ),
        (
            "code/GO-03-merge-queue-push-to-main.yaml",
            "{must_fire: [], must_not_fire: [git-oops]}",
        ),
    ]);
    let t = tempfile::tempdir().unwrap();
    let crash = script(
        &std::fs::create_dir_all(t.path().join("c"))
            .map(|_| t.path().join("c"))
            .unwrap(),
        "#!/bin/sh\nkill -SEGV $$\n",
    );
    let hang = script(
        &std::fs::create_dir_all(t.path().join("h"))
            .map(|_| t.path().join("h"))
            .unwrap(),
        "#!/bin/sh\nexec sleep 30\n",
    );
    let out = gauntlet(&[
        "exam-detect",
        "--corpus",
        c.path().to_str().unwrap(),
        "--detector",
        &format!("x-crash={crash}"),
        "--detector",
        &format!("x-hang={hang}"),
        "--external-timeout-ms",
        "300",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let r = json(&out);
    assert_eq!(r["totals"]["passed"], 2, "built-in results stand");
    assert_eq!(r["detector_errors"], 4);
    let health = r["detector_health"].as_array().unwrap();
    let h = |n: &str| health.iter().find(|x| x["detector"] == n).unwrap().clone();
    assert_eq!(h("x-crash")["failures"], 2);
    assert_eq!(h("x-hang")["timeouts"], 2);
    assert_eq!(h("git-oops")["ok"], 2);
    let human = text(&gauntlet(&[
        "exam-detect",
        "--corpus",
        c.path().to_str().unwrap(),
        "--detector",
        &format!("x-crash={crash}"),
    ]));
    assert!(
        human.contains("NOT CLEAN") && human.contains("DETECTOR ERRORS"),
        "{human}"
    );
    assert!(
        human.contains("x-crash failed: killed by signal 11"),
        "{human}"
    );
}

#[test]
fn end_to_end_mode_writes_the_fidelity_block() {
    let root = repo().join("exams/scenarios");
    let out_dir = tempfile::tempdir().unwrap();
    let out = gauntlet(&[
        "exam-detect",
        "--e2e",
        "--corpus",
        root.to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let h = text(&out);
    assert!(h.contains("not an accuracy figure"), "{h}");
    let r: Value =
        serde_json::from_slice(&std::fs::read(out_dir.path().join("report.json")).unwrap())
            .unwrap();
    assert_eq!(r["mode"], "e2e");
    let f = &r["detect_fidelity"];
    assert_eq!(f["total"], 108);
    assert_eq!(f["reproduced"], 76);
    assert_eq!(f["mismatch"], 1);
    assert_eq!(f["detect_miss"], 31);
    assert_eq!(f["end_to_end_pass_rate"], 1.0);
    assert_eq!(f["e2e_recall"], 1.0);
    assert_eq!(f["e2e_precision"], 1.0);
    assert!(
        r["detect_fidelity"]["note"]
            .as_str()
            .unwrap()
            .contains("NEVER folded into the agent pass rate")
    );
}

/// One end-to-end path: `exam-detect --e2e` is an alias of `exam --mode e2e` and writes
/// the same artefacts, byte for byte (the wall-clock timings.json aside); the options
/// the end-to-end mode does not take are refused, naming the replacement.
#[test]
fn exam_detect_e2e_is_an_alias_of_exam_mode_e2e() {
    let root = repo().join("exams/scenarios");
    let r = root.to_str().unwrap();
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("a/out"), t.path().join("b/out"));
    let o = gauntlet(&[
        "exam-detect",
        "--e2e",
        "--corpus",
        r,
        "--out",
        a.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = gauntlet(&[
        "exam",
        "--mode",
        "e2e",
        "--quiet",
        "--corpus",
        r,
        "--out",
        b.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    fn files(d: &std::path::Path, base: &std::path::Path, out: &mut Vec<(String, Vec<u8>)>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                files(&p, base, out);
            } else if p.file_name().unwrap() != "timings.json" {
                let rel = p.strip_prefix(base).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    files(&a, &a, &mut fa);
    files(&b, &b, &mut fb);
    fa.sort();
    fb.sort();
    assert!(fa.len() > 100, "{}", fa.len());
    assert_eq!(
        fa.iter().map(|f| &f.0).collect::<Vec<_>>(),
        fb.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (x, y) in fa.iter().zip(&fb) {
        assert!(x.1 == y.1, "{} differs", x.0);
    }
    for flag in [
        vec!["--extra-scenarios-dir", r],
        vec!["--detector", "x=/bin/true"],
        vec!["--detectors-dir", r],
        vec!["--json"],
    ] {
        let out = t.path().join("refused");
        let mut args = vec!["exam-detect", "--e2e", "--corpus", r, "--out"];
        args.push(out.to_str().unwrap());
        args.extend(&flag);
        let o = gauntlet(&args);
        assert_eq!(o.status.code(), Some(2), "{flag:?}: {}", text(&o));
        assert!(
            text(&o).contains("gauntlet exam --mode e2e"),
            "{}",
            text(&o)
        );
        assert!(text(&o).contains(flag[0]), "{}", text(&o));
        assert!(!out.exists());
    }
}

/// The JSON and the human report are byte-identical across reruns and --parallel; the
/// wall-clock figures go to stderr only.
#[test]
fn reports_are_byte_identical_across_reruns_and_parallelism() {
    let root = repo().join("exams/scenarios");
    let r = root.to_str().unwrap();
    let a = gauntlet(&["exam-detect", "--corpus", r, "--json", "--parallel", "1"]);
    let b = gauntlet(&["exam-detect", "--corpus", r, "--json", "--parallel", "7"]);
    assert_eq!(a.status.code(), Some(0), "{}", text(&a));
    assert!(
        a.stdout == b.stdout,
        "JSON differs between --parallel 1 and 7"
    );
    let s = String::from_utf8_lossy(&a.stdout);
    assert!(!s.contains("elapsed") && !s.contains("per_sec"), "{s}");
    assert_eq!(json(&a)["totals"]["events"], 190);
    let err = String::from_utf8_lossy(&a.stderr);
    assert!(
        err.contains("exam-detect: 108 scenarios, 190 events in") && err.contains("scenarios/s"),
        "{err}"
    );
    let h1 = gauntlet(&[
        "exam-detect",
        "--corpus",
        r,
        "--all-rows",
        "--parallel",
        "2",
    ]);
    let h2 = gauntlet(&["exam-detect", "--corpus", r, "--all-rows"]);
    assert!(h1.stdout == h2.stdout);
    // Rows come out sorted by id whatever the file layout (files stream in path order).
    let ids: Vec<String> = json(&a)["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["id"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
}

/// Streaming parses each scenario only when its turn comes: a broken file or a
/// duplicate id still fails the run with exit 2, naming the file(s), and no report.
#[test]
fn streamed_parse_errors_and_duplicate_ids_exit_two_naming_the_files() {
    let c = corpus(&[
        (
            "code/GO-01-force-push-main-after-review-dismissal.yaml",
            "{must_fire: [git-oops], must_not_fire: []}",
        ),
        (
            "code/GO-03-merge-queue-push-to-main.yaml",
            "{must_fire: [], must_not_fire: [git-oops]}",
        ),
    ]);
    let p = c.path().to_str().unwrap();
    // A duplicate id under another file name.
    std::fs::copy(
        c.path().join("GO-03-merge-queue-push-to-main.yaml"),
        c.path().join("zz-copy.yaml"),
    )
    .unwrap();
    let pin = gauntlet(&["corpus", "pin", p]);
    assert!(pin.status.success(), "{}", text(&pin));
    let out = gauntlet(&["exam-detect", "--corpus", p, "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(out.stdout.is_empty());
    let t = text(&out);
    assert!(
        t.contains("duplicate scenario id `GO-03-merge-queue-push-to-main`")
            && t.contains("zz-copy.yaml"),
        "{t}"
    );
    // A file that does not parse.
    std::fs::write(c.path().join("zz-copy.yaml"), "id: [unclosed\n").unwrap();
    let pin = gauntlet(&["corpus", "pin", p]);
    assert!(pin.status.success(), "{}", text(&pin));
    let out = gauntlet(&["exam-detect", "--corpus", p]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("zz-copy.yaml"), "{}", text(&out));
    assert!(out.stdout.is_empty());
}

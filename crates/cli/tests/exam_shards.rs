//! Shards of the agent exam with real processes: `gauntlet exam … --shard i/N` as N
//! processes at once, then `gauntlet merge`, equal to a one-machine exam byte for byte
//! (journal.jsonl, sessions.jsonl and timings.json aside), in golden mode and in real
//! mode against the test server; and the merge's refusals.
#![allow(
    dead_code,
    reason = "includes the shared test helpers and uses a part of them"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::BIN;
use common::exam::*;

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

/// Rewrites `dir`'s manifest.json through `edit` (its `kind` set, changed or removed).
fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) {
    let p = dir.join("manifest.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    edit(v.as_object_mut().unwrap());
    std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// `gauntlet merge` and `gauntlet exam` decide what a directory is by the kind its
/// manifest records, not by the files it happens to hold; a directory without a
/// recorded kind (an older gauntlet's) is still told by its files; a record its files
/// contradict is refused naming the directory.
#[test]
fn merge_and_exam_go_by_the_recorded_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = reference_corpus();
    let golden = |out: &Path, extra: &[&str]| {
        let mut c = Command::new(BIN);
        c.args(["exam", "--quiet", "-n", "1", "--corpus"])
            .arg(&corpus)
            .arg("--out")
            .arg(out)
            .args(extra);
        run(&mut c)
    };
    let base = tmp.path().join("s/exam-out");
    for i in 0..2 {
        let o = golden(&base, &["--shard", &format!("{i}/2")]);
        assert!(o.status.success(), "{}", show(&o));
    }
    let shards = shard_dirs(&base, 2);
    let kind_of = |dir: &Path| {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
        v["kind"].clone()
    };
    assert_eq!(kind_of(&shards[0]), "exam-shard");
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();
    let refused = |o: &Output, want: &[&str]| {
        assert_eq!(o.status.code(), Some(2), "{}", show(o));
        for w in want {
            assert!(stderr(o).contains(w), "missing `{w}` in:\n{}", stderr(o));
        }
    };

    // A stray detect_shard.json: by its files shard 0 is a detect-exam shard (the old
    // dispatch ran the detect merge); its manifest says agent-exam shard, and the agent
    // merge runs.
    std::fs::write(shards[0].join("detect_shard.json"), "{}\n").unwrap();
    // The --out holds a run.json (by its files, a red-team run), but is recorded as an
    // agent exam's output: an earlier merge of this kind, so it may be replaced.
    let out = tmp.path().join("m/exam-out");
    std::fs::create_dir_all(&out).unwrap();
    let one = tmp.path().join("one/exam-out");
    let o = golden(&one, &[]);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(kind_of(&one), "exam");
    for f in ["report.json", "manifest.json"] {
        std::fs::copy(one.join(f), out.join(f)).unwrap();
    }
    std::fs::write(out.join("run.json"), "{\"run_id\": \"stray\"}\n").unwrap();
    let o = merge(&shards, &out);
    assert!(o.status.success(), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("merged 2 exam shard(s)"));
    assert_eq!(kind_of(&out), "exam");
    // Without a recorded kind (as an older gauntlet wrote it), the files decide again:
    // the detect merge runs and refuses the stray record.
    edit_manifest(&shards[0], |m| {
        m.remove("kind");
    });
    let o = merge(&shards, &tmp.path().join("m2/exam-out"));
    refused(&o, &["detect_shard.json", "`shard.index` is not a number"]);
    std::fs::remove_file(shards[0].join("detect_shard.json")).unwrap();
    edit_manifest(&shards[0], |m| {
        m.insert("kind".into(), "exam-shard".into());
    });
    // A whole exam is not a shard: refused by its record, naming it.
    let o = merge(&[shards[0].clone(), one.clone()], &tmp.path().join("m3"));
    refused(
        &o,
        &[
            &format!("{} is not a shard directory", one.display()),
            "records an agent exam's output (kind `exam`)",
        ],
    );
    // A shard recorded as one whose shard.json is gone: the record and the files
    // disagree, and that is said, not guessed around.
    let moved = tmp.path().join("shard.json");
    std::fs::rename(shards[1].join("shard.json"), &moved).unwrap();
    let o = merge(&shards, &tmp.path().join("m4"));
    refused(
        &o,
        &[&format!(
            "{}: its manifest.json records an agent-exam shard (kind `exam-shard`), but it holds no shard.json",
            shards[1].display()
        )],
    );
    std::fs::rename(&moved, shards[1].join("shard.json")).unwrap();
    // The --out of a merge recorded as a detect exam's output is refused as one.
    edit_manifest(&out, |m| {
        m.insert("kind".into(), "detect-exam".into());
    });
    let o = merge(&shards, &out);
    refused(&o, &["holds a detect exam's output (report.json)"]);
    // `gauntlet exam --out` refuses a recorded exam whose report.json is gone.
    edit_manifest(&out, |m| {
        m.insert("kind".into(), "exam".into());
    });
    std::fs::remove_file(out.join("report.json")).unwrap();
    let o = golden(&out, &[]);
    refused(
        &o,
        &[&format!(
            "{}: its manifest.json records an agent exam's output (kind `exam`), but it holds no report.json",
            out.display()
        )],
    );
}

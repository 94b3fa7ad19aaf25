//! Shards of the detect exam with real processes: `gauntlet exam-detect … --shard i/N`
//! as N processes at once, then `gauntlet merge`, equal to a one-machine
//! `exam-detect --out DIR` byte for byte (report.json, report.txt, manifest.json) over the reference
//! corpus, extra scenarios with a miss and a false alarm, and an external detector with
//! its own scenarios; and the merge's refusals.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common;
use common::BIN;

fn repo() -> PathBuf {
    common::repo_root()
}

fn gauntlet(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run gauntlet")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every file under `dir` (relative path → bytes).
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        assert!(p.is_file(), "{}", p.display());
        m.insert(
            p.file_name().unwrap().to_string_lossy().into_owned(),
            std::fs::read(&p).unwrap(),
        );
    }
    m
}

/// A reference scenario under a new id with its labels replaced.
fn relabelled(rel: &str, id: &str, labels: &str) -> String {
    let src = std::fs::read_to_string(repo().join("exams/scenarios").join(rel)).unwrap();
    let cut = src.find("expected_detection:").unwrap();
    let head = &src[..cut];
    let old = head
        .lines()
        .find(|l| l.starts_with("id: "))
        .expect("an id line");
    format!(
        "{}expected_detection: {labels}\n",
        head.replacen(old, &format!("id: {id}"), 1)
    )
}

/// Extra scenarios: a missed attack and a false alarm, so the merged report has
/// failed rows, named misses and false alarms.
fn extras(dir: &Path) {
    std::fs::write(
        dir.join("x-miss.yaml"),
        relabelled(
            "exfil/EX-02-drive-download-just-under-100mb.yaml",
            "X-MISS-exfil",
            "{must_fire: [exfil-pattern], must_not_fire: []}",
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("x-alarm.yaml"),
        relabelled(
            "identity/NA-01-unknown-principal-enumerates-vault.yaml",
            "X-ALARM-new-actor",
            "{must_fire: [], must_not_fire: [new-actor]}",
        ),
    )
    .unwrap();
}

/// Runs the N shards of `args` at once, as separate processes, into `base`.
fn run_shards(args: &[&str], base: &Path, n: u32) -> Vec<PathBuf> {
    let children: Vec<_> = (0..n)
        .map(|i| {
            Command::new(BIN)
                .args(args)
                .args([
                    "--out",
                    base.to_str().unwrap(),
                    "--shard",
                    &format!("{i}/{n}"),
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        // A complete shard succeeds whatever its rows say (the merge gives the verdict).
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    (0..n)
        .map(|i| {
            let mut p = base.as_os_str().to_owned();
            p.push(format!(".shard-{i}-of-{n}"));
            PathBuf::from(p)
        })
        .collect()
}

fn merge(dirs: &[PathBuf], out: &Path) -> Output {
    let mut c = Command::new(BIN);
    c.arg("merge").args(dirs).arg("--out").arg(out);
    c.output().unwrap()
}

#[test]
fn four_shard_processes_merge_byte_identical_to_one_machine() {
    let t = tempfile::tempdir().unwrap();
    let extra = t.path().join("extra");
    std::fs::create_dir(&extra).unwrap();
    extras(&extra);
    let corpus = repo().join("exams/scenarios");
    let dets = repo().join("detectors");
    let args = [
        "exam-detect",
        "--corpus",
        corpus.to_str().unwrap(),
        "--extra-scenarios-dir",
        extra.to_str().unwrap(),
        "--detectors-dir",
        dets.to_str().unwrap(),
    ];
    let one = t.path().join("one");
    let mut a = args.to_vec();
    a.extend(["--out", one.to_str().unwrap()]);
    let o = gauntlet(&a);
    assert_eq!(o.status.code(), Some(1), "gaps: {}", text(&o));
    let want = files(&one);
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        ["manifest.json", "report.json", "report.txt"]
    );
    // The manifest, written last, records a whole detect exam and both its files.
    let manifest: serde_json::Value = serde_json::from_slice(&want["manifest.json"]).unwrap();
    assert_eq!(manifest["kind"], "detect-exam");
    assert_eq!(
        manifest["files"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["report.json", "report.txt"]
    );
    // report.json is the --json report.
    let mut a = args.to_vec();
    a.push("--json");
    assert_eq!(gauntlet(&a).stdout, want["report.json"]);
    let r: serde_json::Value = serde_json::from_slice(&want["report.json"]).unwrap();
    assert_eq!(r["totals"]["scenarios"], 108 + 2 + 3);
    assert_eq!(r["recall"]["missed"][0]["id"], "X-MISS-exfil");
    assert_eq!(r["precision"]["false_alarms"][0]["id"], "X-ALARM-new-actor");

    for n in [4u32, 1, 3] {
        let base = t.path().join(format!("d{n}"));
        let dirs = run_shards(&args, &base, n);
        let sizes: Vec<u64> = dirs
            .iter()
            .map(|d| {
                let m: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(d.join("detect_shard.json")).unwrap())
                        .unwrap();
                m["shard"]["units"].as_u64().unwrap()
            })
            .collect();
        assert_eq!(sizes.iter().sum::<u64>(), 113, "n={n}: {sizes:?}");
        assert!(
            sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1,
            "{sizes:?}"
        );
        // Any order of the shard directories.
        let mut given = dirs.clone();
        given.reverse();
        let out = t.path().join(format!("merged{n}"));
        let m = merge(&given, &out);
        // The merged exam's verdict, as the one-machine exam gives it.
        assert_eq!(m.status.code(), Some(1), "{}", text(&m));
        assert!(text(&m).contains("RESULT  GAPS"), "{}", text(&m));
        let got = files(&out);
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>()
        );
        for (k, v) in &want {
            assert!(got[k] == *v, "n={n}: {k} differs from the one-machine exam");
        }
    }
}

#[test]
fn merge_refuses_missing_duplicate_mixed_and_incomplete_shards_by_name() {
    let t = tempfile::tempdir().unwrap();
    let corpus = repo().join("exams/scenarios");
    let args = ["exam-detect", "--corpus", corpus.to_str().unwrap()];
    let dirs = run_shards(&args, &t.path().join("a"), 4);
    let out = t.path().join("m");
    let fails = |o: &Output, want: &[&str]| {
        assert_eq!(o.status.code(), Some(2), "{}", text(o));
        for w in want {
            assert!(text(o).contains(w), "want {w:?}: {}", text(o));
        }
    };
    let name = |d: &Path| d.display().to_string();

    // Missing shard 2.
    fails(
        &merge(&[dirs[0].clone(), dirs[1].clone(), dirs[3].clone()], &out),
        &["missing detect-exam shard(s) 2/4", "--shard i/4"],
    );
    // A shard given twice.
    fails(
        &merge(&[dirs[0].clone(), dirs[1].clone(), dirs[1].clone()], &out),
        &["shard 1/4 is given twice", &name(&dirs[1])],
    );
    // A shard of another exam (an extra scenario makes another identity), and of
    // another N.
    let extra = t.path().join("extra");
    std::fs::create_dir(&extra).unwrap();
    extras(&extra);
    let mut other = args.to_vec();
    other.extend(["--extra-scenarios-dir", extra.to_str().unwrap()]);
    let b = run_shards(&other, &t.path().join("b"), 4);
    fails(
        &merge(
            &[
                dirs[0].clone(),
                dirs[1].clone(),
                b[2].clone(),
                dirs[3].clone(),
            ],
            &out,
        ),
        &[
            "not of the same exam",
            &name(&b[2]),
            "exam identity",
            "scenario files 110 vs 108",
        ],
    );
    let c = run_shards(&args, &t.path().join("c"), 2);
    fails(
        &merge(&[dirs[0].clone(), c[1].clone()], &out),
        &["not of the same exam", "shard count N 2 vs 4"],
    );
    // Not a detect-exam shard beside detect-exam shards.
    let plain = t.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    fails(
        &merge(&[dirs[0].clone(), plain.clone()], &out),
        &["is not a detect-exam shard", &name(&plain)],
    );
    // An edited report, and a shard without its manifest (killed before it finished).
    let all = |d: &[PathBuf]| d.to_vec();
    let report = dirs[1].join("report.json");
    let keep = std::fs::read(&report).unwrap();
    let mut edited = keep.clone();
    let at = edited.iter().position(|b| *b == b'1').unwrap();
    edited[at] = b'2';
    std::fs::write(&report, &edited).unwrap();
    fails(&merge(&all(&dirs), &out), &[&name(&dirs[1]), "report.json"]);
    std::fs::write(&report, &keep).unwrap();
    std::fs::remove_file(dirs[3].join("manifest.json")).unwrap();
    fails(
        &merge(&all(&dirs), &out),
        &[&name(&dirs[3]), "interrupted", "--shard i/N"],
    );
    assert!(!out.exists(), "a refused merge writes nothing");
    // Rerunning the shard completes it, and the merge goes through.
    let mut a = args.to_vec();
    let base = t.path().join("a");
    a.extend(["--out", base.to_str().unwrap(), "--shard", "3/4"]);
    assert_eq!(gauntlet(&a).status.code(), Some(0));
    let m = merge(&all(&dirs), &out);
    assert_eq!(m.status.code(), Some(0), "{}", text(&m));
}

#[test]
fn duplicate_ids_across_shards_are_refused_as_on_one_machine() {
    // Two files with one id: one per shard when N = 2 (equal spans), so each shard is
    // clean on its own and only the merge can see the pair.
    let t = tempfile::tempdir().unwrap();
    let c = t.path().join("corpus");
    std::fs::create_dir(&c).unwrap();
    for f in ["a.yaml", "b.yaml"] {
        std::fs::write(
            c.join(f),
            relabelled(
                "code/GO-03-merge-queue-push-to-main.yaml",
                "SAME-ID",
                "{must_fire: [], must_not_fire: [git-oops]}",
            ),
        )
        .unwrap();
    }
    let pin = gauntlet(&["corpus", "pin", c.to_str().unwrap()]);
    assert!(pin.status.success(), "{}", text(&pin));
    let args = ["exam-detect", "--corpus", c.to_str().unwrap()];
    let one = gauntlet(&args);
    assert_eq!(one.status.code(), Some(2), "{}", text(&one));
    assert!(text(&one).contains("duplicate scenario id `SAME-ID`"));
    let dirs = run_shards(&args, &t.path().join("d"), 2);
    let m = merge(&dirs, &t.path().join("m"));
    assert_eq!(m.status.code(), Some(2), "{}", text(&m));
    assert!(
        text(&m).contains("duplicate scenario id `SAME-ID`"),
        "{}",
        text(&m)
    );
}

#[test]
fn e2e_with_shard_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("e");
    let o = gauntlet(&[
        "exam-detect",
        "--e2e",
        "--out",
        out.to_str().unwrap(),
        "--shard",
        "0/2",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("end-to-end mode cannot be sharded"),
        "{}",
        text(&o)
    );
    assert!(!out.exists() && !t.path().join("e.shard-0-of-2").exists());
    // A malformed --shard names the form.
    let o = gauntlet(&["exam-detect", "--shard", "4/4"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--shard i/N"), "{}", text(&o));
}

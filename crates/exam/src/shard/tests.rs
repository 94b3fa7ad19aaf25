//! The shards of both exams, cut, written and merged in process: a whole set merges to
//! the one-machine exam's artefacts; a set with a shard missing or given twice, a shard
//! of another kind and an edited shard are refused with an error naming the shard.

use super::*;
use crate::exam::{ExamConfig, run_exam_units, write_artifacts};
use gauntlet_corpus::load::Corpus;
use gauntlet_detect::exam::{self as detect_exam, Item, Options};
use gauntlet_detect::fleet::Member as FleetMember;
use gauntlet_detect::report_text;
use gauntlet_job::manifest::Kind;
use gauntlet_job::shard::RecordError;
use gauntlet_job::shard::{SetError, Shard};
use gauntlet_results::detect::DetectReport;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus(n: usize) -> Corpus {
    let mut c = gauntlet_corpus::embedded::load_embedded().unwrap();
    c.scenarios.truncate(n);
    c
}

/// Every file under `dir` but the timings (wall clock), by relative path.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                walk(root, &p, out);
            } else if rel != "timings.json" {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(dir, dir, &mut m);
    m
}

const PASSES: usize = 2;

/// A golden agent exam of `c` into `out`: the whole exam, or shard `shard` of it with
/// its record.
fn agent_exam(c: &Corpus, out: &Path, shard: Option<Shard>) {
    let cfg = ExamConfig {
        passes: PASSES as i64,
        ..ExamConfig::golden()
    };
    let owned = shard.map(|s| agent::owned(c, PASSES, s));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    std::fs::create_dir_all(out).unwrap();
    if shard.is_some() {
        agent::begin(out).unwrap();
    }
    let o = rt
        .block_on(run_exam_units(c, &cfg, None, owned.as_deref(), Some(out)))
        .unwrap();
    if let (Some(s), Some(owned)) = (shard, &owned) {
        write_artifacts(out, &o).unwrap();
        agent::finish(out, s, owned, (c, PASSES), &o.report, &cfg).unwrap();
    } else {
        // As `gauntlet exam` writes a whole exam: the manifest first out, last in.
        crate::manifest::begin(out).unwrap();
        write_artifacts(out, &o).unwrap();
        let identity = crate::exam::exam_config_sha256(c, &cfg);
        crate::manifest::finish_agent(out, &identity, &o.report, o.e2e.as_ref()).unwrap();
    }
}

/// The shard directories of an agent exam of `c` cut into `n`, in shard order.
fn agent_shards(c: &Corpus, base: &Path, n: u32) -> Vec<PathBuf> {
    (0..n)
        .map(|index| {
            let s = Shard { index, count: n };
            let dir = shard_out(base, s);
            agent_exam(c, &dir, Some(s));
            dir
        })
        .collect()
}

#[test]
fn agent_shards_merge_to_the_one_machine_exam() {
    let tmp = tempfile::tempdir().unwrap();
    let c = corpus(7);
    let one = tmp.path().join("one/exam-out");
    agent_exam(&c, &one, None);
    let mut dirs = agent_shards(&c, &tmp.path().join("s/exam-out"), 3);
    assert!(
        dirs.iter()
            .all(|d| agent::is_shard(d) && !detect::is_shard(d))
    );
    dirs.reverse();
    let merged = tmp.path().join("m/exam-out");
    let r = agent::merge(&dirs, &merged).unwrap();
    assert_eq!(r.runs.len(), PASSES);
    assert_eq!(r.median_pass_rate, Some(1.0));
    let (a, b) = (files(&one), files(&merged));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (k, v) in &a {
        assert!(v == &b[k], "{k} differs");
    }
    // Both are whole exams by their manifests (the same manifest), which list every
    // scenario run's files; the shards are shards by theirs.
    let m = gauntlet_job::manifest::Manifest::verify(&merged).unwrap();
    assert_eq!(m.kind, Some(Kind::Exam));
    let sharded = gauntlet_job::manifest::Manifest::verify(&dirs[0]).unwrap();
    assert!(
        sharded.run_id.starts_with(&format!("{}~shard-", m.run_id)),
        "{}",
        sharded.run_id
    );
    assert!(a.contains_key("manifest.json"));
    assert_eq!(
        m.files.keys().filter(|k| k.starts_with("run-")).count(),
        PASSES * c.scenarios.len() * 2
    );
    assert!(!m.files.contains_key("timings.json"));
    for d in &dirs {
        let m = gauntlet_job::manifest::Manifest::verify(d).unwrap();
        assert_eq!(m.kind, Some(Kind::ExamShard));
    }
}

#[test]
fn an_agent_shard_set_with_a_shard_missing_or_given_twice_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let c = corpus(5);
    let d = agent_shards(&c, &tmp.path().join("s/exam-out"), 3);
    let out = tmp.path().join("m/exam-out");
    let e = agent::merge(&[d[2].clone(), d[0].clone()], &out).unwrap_err();
    assert!(
        matches!(&e, MergeError::Set(SetError::Missing { missing, count: 3, .. })
            if missing == &[Shard { index: 1, count: 3 }]),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "missing exam shard(s) 1/3 of 3: run `gauntlet exam … --shard i/3` for each and pass every shard directory"
    );
    let e = agent::merge(
        &[d[0].clone(), d[1].clone(), d[1].clone(), d[2].clone()],
        &out,
    )
    .unwrap_err();
    assert!(
        matches!(&e, MergeError::Set(SetError::Twice { shard, .. }) if shard.index == 1),
        "{e:?}"
    );
    assert!(
        e.to_string().starts_with("exam shard 1/3 is given twice: "),
        "{e}"
    );
    // Shards of another cut of the same exam.
    let other = agent_shards(&c, &tmp.path().join("t/exam-out"), 2);
    let e = agent::merge(&[d[0].clone(), other[1].clone()], &out).unwrap_err();
    let m = e.to_string();
    assert!(
        matches!(e, MergeError::Set(SetError::Differs(_)))
            && m.contains("exam shard 1/2 in ")
            && m.contains("shard count N 2 vs 3"),
        "{m}"
    );
    // Nothing was written by a refused merge.
    assert!(!out.exists());
    // A scenario run's file edited after its shard finished.
    let run = std::fs::read_dir(d[1].join("run-0"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut b = std::fs::read(&run).unwrap();
    b.push(b' ');
    std::fs::write(&run, b).unwrap();
    let e = agent::merge(&d, &out).unwrap_err();
    assert!(
        matches!(&e, MergeError::Shard(ShardProblem::Altered { path, .. }) if *path == run),
        "{e:?}"
    );
    assert!(
        e.to_string().starts_with(&format!(
            "{} is not the file the shard wrote (",
            run.display()
        )),
        "{e}"
    );
    // An unfinished shard (a session began and did not finish).
    agent::begin(&d[0]).unwrap();
    let e = agent::merge(&d, &out).unwrap_err();
    assert!(
        matches!(&e, MergeError::Record(RecordError::Unverified { noun, .. }) if noun == "exam shard"),
        "{e:?}"
    );
    assert!(e.to_string().starts_with("exam shard "), "{e}");
}

/// The detect exam of `c` over the units `units` (of the exam's file order) with the
/// reference fleet, rows ordered as the command orders them.
fn detect_run(c: &Corpus, units: &[usize]) -> DetectReport {
    let members: Vec<FleetMember> = gauntlet_detect::builtin()
        .into_iter()
        .map(FleetMember::Builtin)
        .collect();
    let items: Vec<Item> = units
        .iter()
        .map(|&i| Item {
            scenario: &c.scenarios[i],
            origin: "corpus".into(),
        })
        .collect();
    let opts = Options {
        parallel: 2,
        ..Options::default()
    };
    let r = detect_exam::run(&items, &members, &opts, ("root", c.count, &c.digest));
    detect_exam::sort_rows(r, &members, |r| r.id.clone())
}

fn detect_shards(c: &Corpus, base: &Path, n: u32, identity: &str) -> Vec<PathBuf> {
    let owner = detect_assignment(
        c.scenarios.iter().map(|s| ("corpus", s.relpath.as_str())),
        n,
    );
    (0..n)
        .map(|index| {
            let shard = Shard { index, count: n };
            let dir = shard_out(base, shard);
            std::fs::create_dir_all(&dir).unwrap();
            detect::begin(&dir).unwrap();
            let units: Vec<usize> = (0..owner.len()).filter(|&i| owner[i] == index).collect();
            report_text::write_report_files(&dir, &detect_run(c, &units)).unwrap();
            let rec = detect::ShardRecord {
                shard,
                identity_sha256: identity.into(),
                units_total: owner.len(),
                units,
                groups: BTreeMap::from([("corpus".to_string(), 0)]),
            };
            detect::finish(&dir, &rec).unwrap();
            dir
        })
        .collect()
}

#[test]
fn detect_shards_merge_to_the_one_machine_exam() {
    let tmp = tempfile::tempdir().unwrap();
    let c = corpus(20);
    let one = tmp.path().join("one");
    std::fs::create_dir_all(&one).unwrap();
    let all: Vec<usize> = (0..c.scenarios.len()).collect();
    // As `gauntlet exam-detect --out` writes a whole exam.
    crate::manifest::begin(&one).unwrap();
    report_text::write_report_files(&one, &detect_run(&c, &all)).unwrap();
    crate::manifest::finish_detect(&one, "id").unwrap();
    let dirs = detect_shards(&c, &tmp.path().join("s/det"), 3, "id");
    assert!(
        dirs.iter()
            .all(|d| detect::is_shard(d) && !agent::is_shard(d))
    );
    let merged = tmp.path().join("m");
    let r = detect::merge(&dirs, &merged).unwrap();
    assert_eq!(r.totals.scenarios, c.scenarios.len());
    let b = files(&merged);
    assert_eq!(files(&one), b);
    let m = gauntlet_job::manifest::Manifest::verify(&merged).unwrap();
    assert_eq!((m.kind, m.run_id.as_str()), (Some(Kind::DetectExam), "id"));
    assert_eq!(
        m.files.keys().collect::<Vec<_>>(),
        ["report.json", "report.txt"]
    );
    for d in &dirs {
        let m = gauntlet_job::manifest::Manifest::verify(d).unwrap();
        assert_eq!(m.kind, Some(Kind::DetectShard));
    }
}

#[test]
fn a_detect_shard_set_with_a_shard_missing_or_given_twice_is_refused_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let c = corpus(9);
    let d = detect_shards(&c, &tmp.path().join("s/det"), 3, "id");
    let out = tmp.path().join("m");
    let e = detect::merge(&[d[0].clone(), d[1].clone()], &out).unwrap_err();
    assert!(
        matches!(&e, MergeError::Set(SetError::Missing { missing, .. })
            if missing == &[Shard { index: 2, count: 3 }]),
        "{e:?}"
    );
    assert!(
        e.to_string().starts_with(
            "missing detect-exam shard(s) 2/3 of 3: run `gauntlet exam-detect … --shard i/3`"
        ),
        "{e}"
    );
    let e = detect::merge(
        &[d[0].clone(), d[0].clone(), d[1].clone(), d[2].clone()],
        &out,
    )
    .unwrap_err();
    assert!(
        matches!(&e, MergeError::Set(SetError::Twice { shard, .. }) if shard.index == 0),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with("detect-exam shard 0/3 is given twice: "),
        "{e}"
    );
    // A shard of an exam with another identity (other detectors, limits…).
    let other = detect_shards(&c, &tmp.path().join("t/det"), 3, "another");
    let e = detect::merge(&[d[0].clone(), d[1].clone(), other[2].clone()], &out).unwrap_err();
    assert!(
        e.to_string().contains("detect-exam shard 2/3 in ")
            && e.to_string()
                .contains("exam identity (corpus, scenarios, detectors, limits) another vs id"),
        "{e}"
    );
    // An agent-exam shard among them.
    let agent_dir = tmp.path().join("a/exam-out");
    let s = Shard { index: 0, count: 1 };
    agent_exam(&c, &agent_dir, Some(s));
    let e = detect::merge(&[d[0].clone(), agent_dir.clone()], &out).unwrap_err();
    assert!(
        matches!(&e, MergeError::Shard(ShardProblem::NotDetectShard { dir }) if *dir == agent_dir),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("is not a detect-exam shard (no detect_shard.json)"),
        "{e}"
    );
    assert!(!out.exists());
    // A detect shard whose manifest records another kind (its detect_shard.json is
    // there, so its files would pass for a detect shard): refused per its record.
    let mut m = gauntlet_job::manifest::Manifest::verify(&d[2]).unwrap();
    m.kind = Some(Kind::ExamShard);
    m.write(&d[2]).unwrap();
    let e = detect::merge(&d, &out).unwrap_err();
    assert!(
        matches!(
            &e,
            MergeError::Record(RecordError::OtherKind {
                recorded: Kind::ExamShard,
                wanted: Kind::DetectShard,
                ..
            })
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("its manifest.json records an agent-exam shard, not a detect-exam shard"),
        "{e}"
    );
    m.kind = Some(Kind::DetectShard);
    m.write(&d[2]).unwrap();
    // A report edited after its shard finished.
    let p = d[1].join(report_text::REPORT_TXT);
    std::fs::write(&p, "edited").unwrap();
    let e = detect::merge(&d, &out).unwrap_err();
    assert!(
        matches!(&e, MergeError::Record(RecordError::Unverified { noun, .. }) if noun == "detect-exam shard"),
        "{e:?}"
    );
    assert!(
        e.to_string().starts_with("detect-exam shard ")
            && e.to_string().contains("is not the file the run wrote"),
        "{e}"
    );
}

#[test]
fn detect_shard_plans_cover_every_file_once_and_record_the_groups() {
    let file = |origin: &str, rel: &str, group: usize| {
        let f = gauntlet_corpus::corpus::CorpusFile {
            relpath: rel.into(),
            path: PathBuf::from(rel),
            sha256: String::new(),
            bytes: Vec::new(),
        };
        (
            gauntlet_corpus::load::IndexedFile {
                file: f,
                extra: false,
            },
            origin.to_string(),
            group,
        )
    };
    let files: Vec<_> = (0..40)
        .map(|i| file("corpus", &format!("f/{i}.yaml"), 0))
        .chain((0..5).map(|i| file("detector:x", &format!("x/{i}.yaml"), 1)))
        .collect();
    let n = 4;
    let plans: Vec<detect::ShardRecord> = (0..n)
        .map(|index| detect::ShardRecord::plan(Shard { index, count: n }, &files, "id".into()))
        .collect();
    let mut all: Vec<usize> = plans.iter().flat_map(|p| p.units.clone()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..files.len()).collect::<Vec<_>>());
    for p in &plans {
        assert_eq!(p.units_total, files.len());
        assert!(p.units.windows(2).all(|w| w[0] < w[1]), "ascending");
        assert!(p.units.len().abs_diff(files.len() / n as usize) <= 1);
        assert_eq!(
            p.groups,
            BTreeMap::from([("corpus".into(), 0), ("detector:x".into(), 1)])
        );
    }
}

#[test]
fn shard_directories_sit_beside_the_output() {
    let s = Shard { index: 1, count: 3 };
    assert_eq!(
        shard_out(Path::new("runs/exam-out"), s),
        Path::new("runs/exam-out.shard-1-of-3")
    );
    assert_eq!(
        shard_out(Path::new("/"), s),
        Path::new("/exam-out.shard-1-of-3")
    );
}

#[test]
fn the_detect_identity_follows_the_fleet_and_the_limits_after_their_floors() {
    let members: Vec<FleetMember> = gauntlet_detect::builtin()
        .into_iter()
        .map(FleetMember::Builtin)
        .collect();
    let limits = |timeout_ms, external_memory_mb| detect::IdentityLimits {
        timeout_ms,
        external_timeout_ms: 10_000,
        external_cpu_secs: 10,
        external_memory_mb,
        allow_unconfined: false,
    };
    let id = |m: &[FleetMember], l| detect::identity((3, "digest"), &[], m, &l).unwrap();
    let base = id(&members, limits(1, 1024));
    assert_eq!(base.len(), 64);
    assert_eq!(base, id(&members, limits(1, 1024)));
    // A flag below its floor is the floor.
    assert_eq!(id(&members, limits(0, 16)), id(&members, limits(1, 3)));
    assert_ne!(base, id(&members, limits(2, 1024)));
    assert_ne!(base, id(&members[1..], limits(1, 1024)));
}

//! Shards of the detect exam: `gauntlet exam-detect … --shard i/N` grades the scenario
//! files [`super::detect_assignment`] gives shard i ([`ShardRecord::plan`]) into
//! `<out>.shard-<i>-of-<N>`, and [`merge`] puts the N shard directories back into the
//! directory `gauntlet exam-detect --out DIR` writes on one machine.
//!
//! A shard directory holds the shard's own report (report.json and report.txt over its
//! scenarios, the detect exam's writer), `detect_shard.json` (which units it holds, the
//! exam's [`identity`], the origin groups that order rows) and a `manifest.json` (size
//! and digest of every file), the last two written last by [`finish`]: a shard without
//! them was interrupted ([`begin`] removes them before a session changes anything). The
//! merge puts every shard's rows together, refuses duplicate scenario ids as a
//! one-machine exam does, orders the rows as it does (origin group, then id), sums the
//! per-detector health counts and rebuilds the report with the detect exam's own
//! summary ([`detect_exam::summarize_named`]): recall, precision, coverage matrix and
//! all, byte for byte.

use super::{FieldProblem, MergeError, ShardProblem, UnitsProblem};
use gauntlet_detect::assemble::ExamFile;
use gauntlet_detect::exam as detect_exam;
use gauntlet_detect::fleet::Member as FleetMember;
use gauntlet_detect::report_text;
use gauntlet_job::artefacts::Artefacts;
use gauntlet_job::manifest::{FileEntry, Kind};
use gauntlet_job::merge::{Coverage, owners as owners_of};
use gauntlet_job::shard::{SetRules, Shard, open_record, read_json, shown};
use gauntlet_results::detect::{DetectReport, DetectorHealth, Row};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The detect-exam shard's record (not `shard.json`, the agent exam's: a merge tells
/// the two apart by name).
pub const SHARD_JSON: &str = super::record::DETECT;

/// Before a shard session changes anything: without a manifest the directory reads as
/// unfinished until [`finish`] writes it again.
pub fn begin(out: &Path) -> std::io::Result<()> {
    super::begin(out, SHARD_JSON)
}

/// The limits a detect exam grades under, as given on its command line (the
/// identity records each after the floor the run applies to it).
pub struct IdentityLimits {
    /// Per-detector, per-scenario time budget of built-in detectors (floor 1).
    pub timeout_ms: u64,
    /// Wall-clock limit per external detector run (floor 1).
    pub external_timeout_ms: u64,
    /// RLIMIT_CPU per external detector run (floor 1).
    pub external_cpu_secs: u64,
    /// RLIMIT_AS per external detector run, MiB (floor 16).
    pub external_memory_mb: u64,
    /// External detectors may run unconfined.
    pub allow_unconfined: bool,
}

/// An external detector's executable that cannot be read to hash it.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {source}", .path.display())]
pub struct IdentityError {
    pub path: std::path::PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The detect exam's identity: sha256 over everything that decides its rows — the
/// gauntlet version, the pinned corpus (`(count, digest)`), every scenario file
/// (origin, relpath, sha256, group) in file order, the fleet (names; each external
/// detector's executable by digest) and the limits. Not the corpus path,
/// `--parallel` or the output flags. Errors name an executable that cannot be read.
pub fn identity(
    corpus: (usize, &str),
    files: &[ExamFile],
    members: &[FleetMember],
    limits: &IdentityLimits,
) -> Result<String, IdentityError> {
    let mut h = gauntlet_core::hash::HashWriter::new();
    h.field(b"detect-exam-identity-v1");
    h.field(gauntlet_core::HARNESS_VERSION.as_bytes());
    h.json(&(corpus.0, corpus.1));
    for (f, origin, group) in files {
        h.json(&(origin, &f.file.relpath, &f.file.sha256, group));
    }
    for m in members {
        h.field(m.name().as_bytes());
        if let FleetMember::External(x) = m {
            let e = FileEntry::of_file(&x.path).map_err(|source| IdentityError {
                path: x.path.clone(),
                source,
            })?;
            h.json(&e);
        }
    }
    h.json(&(
        limits.timeout_ms.max(1),
        limits.external_timeout_ms.max(1),
        limits.external_cpu_secs.max(1),
        limits.external_memory_mb.max(16),
        limits.allow_unconfined,
    ));
    Ok(h.finish_hex())
}

/// What identifies the whole exam and one shard of it, written to detect_shard.json.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardRecord {
    pub shard: Shard,
    /// [`identity`]'s sha256.
    pub identity_sha256: String,
    /// Units (scenario files) of the whole exam.
    pub units_total: usize,
    /// The units (indexes in the exam's file order) this shard grades, ascending.
    pub units: Vec<usize>,
    /// Origin (`corpus`, `extra`, `detector:<name>`) → the group rows are ordered by.
    pub groups: BTreeMap<String, usize>,
}

impl ShardRecord {
    /// Shard `shard` of the detect exam over `files` (the exam's files, in its file
    /// order) whose identity is `identity_sha256`.
    pub fn plan(shard: Shard, files: &[ExamFile], identity_sha256: String) -> ShardRecord {
        let owner = super::detect_assignment(
            files
                .iter()
                .map(|(f, origin, _)| (origin.as_str(), f.file.relpath.as_str())),
            shard.count,
        );
        ShardRecord {
            shard,
            identity_sha256,
            units_total: files.len(),
            units: gauntlet_job::partition::units_of(&owner, shard)
                .into_iter()
                .map(|i| i as usize)
                .collect(),
            groups: files
                .iter()
                .map(|(_, origin, g)| (origin.clone(), *g))
                .collect(),
        }
    }
}

/// After a complete shard's report files: detect_shard.json, then the manifest.
pub fn finish(out: &Path, r: &ShardRecord) -> std::io::Result<()> {
    let v = serde_json::json!({
        "exam": "detect",
        "shard": {
            "index": r.shard.index,
            "count": r.shard.count,
            "units": r.units.len(),
            "partition": super::DETECT_PARTITION_SCHEME,
        },
        "detect_identity_sha256": r.identity_sha256,
        "harness_version": gauntlet_core::HARNESS_VERSION,
        "units_total": r.units_total,
        "units": r.units,
        "groups": r.groups,
    });
    let mut b = serde_json::to_vec_pretty(&v).expect("json");
    b.push(b'\n');
    gauntlet_core::atomic::write_atomic_named(&out.join(SHARD_JSON), &b)?;
    let mut m = Artefacts::new(
        out,
        Kind::DetectShard,
        &r.shard.run_id(&r.identity_sha256),
        "complete",
    );
    m.record([
        report_text::REPORT_JSON,
        report_text::REPORT_TXT,
        SHARD_JSON,
    ])?;
    m.finish()?;
    Ok(())
}

/// Whether `dir` is a shard of a detect exam.
pub fn is_shard(dir: &Path) -> bool {
    dir.join(SHARD_JSON).is_file()
}

/// The parts of a shard's report.json the merge needs.
struct ShardReport {
    corpus_root: String,
    corpus_count: usize,
    corpus_sha256: String,
    detectors: Vec<String>,
    detector_health: Vec<DetectorHealth>,
    rows: Vec<Row>,
}

/// A finished shard as the merge reads it.
type ShardDir = super::ShardDir<ShardReport>;

fn open_shard(dir: &Path) -> Result<ShardDir, MergeError> {
    if !is_shard(dir) {
        return Err(ShardProblem::NotDetectShard {
            dir: dir.to_path_buf(),
        }
        .into());
    }
    let (shard, meta) = open_record(
        dir,
        SHARD_JSON,
        Kind::DetectShard,
        "detect-exam shard",
        "a shard without a whole manifest was interrupted or changed; rerun its `gauntlet exam-detect … --shard i/N`, then merge",
    )?;
    if meta["shard"]["partition"] != super::DETECT_PARTITION_SCHEME {
        return Err(ShardProblem::Partition {
            dir: dir.to_path_buf(),
            found: shown(&meta["shard"]["partition"]),
            want: super::DETECT_PARTITION_SCHEME,
        }
        .into());
    }
    let p = dir.join(report_text::REPORT_JSON);
    let mut v = read_json(&p)?;
    let bad = |key: &'static str, problem: FieldProblem| {
        MergeError::Shard(ShardProblem::ReportField {
            path: p.clone(),
            key,
            problem,
        })
    };
    let text = |v: &serde_json::Value, k: &'static str| {
        v[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| bad(k, FieldProblem::NotAString))
    };
    let report = ShardReport {
        corpus_root: text(&v, "corpus_root")?,
        corpus_count: v["corpus_count"]
            .as_u64()
            .ok_or_else(|| bad("corpus_count", FieldProblem::NotANumber))?
            as usize,
        corpus_sha256: text(&v, "corpus_sha256")?,
        detectors: serde_json::from_value(v["detectors"].take())
            .map_err(|e| bad("detectors", e.into()))?,
        detector_health: serde_json::from_value(v["detector_health"].take())
            .map_err(|e| bad("detector_health", e.into()))?,
        rows: serde_json::from_value(v["rows"].take()).map_err(|e| bad("rows", e.into()))?,
    };
    Ok(ShardDir {
        dir: dir.to_path_buf(),
        shard,
        meta,
        report,
    })
}

/// Merges detect-exam shard directories (every shard 0..N of one exam once, in any
/// order) into `out` (report.json, report.txt, the manifest last). Returns the merged
/// report, which is the one-machine exam's (its exit code is the whole exam's verdict).
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<DetectReport, MergeError> {
    let rules = SetRules {
        noun: "detect-exam shard",
        whole: "exam",
        same: &[
            (
                "exam identity (corpus, scenarios, detectors, limits)",
                "/detect_identity_sha256",
            ),
            ("harness version", "/harness_version"),
            ("shard count N", "/shard/count"),
            ("scenario files", "/units_total"),
        ],
        help: "merge the N shards of one `gauntlet exam-detect … --shard i/N` (same corpus, extra scenarios, detectors, limits and gauntlet version)",
        command: "gauntlet exam-detect … --shard i/{n}",
    };
    let shards = super::open_set(dirs, open_shard, &rules)?;
    let total = shards[0].meta["units_total"].as_u64().unwrap_or(0) as usize;
    let identity = shards[0].meta["detect_identity_sha256"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    check_units(&shards, total)?;
    let groups: BTreeMap<String, usize> = serde_json::from_value(shards[0].meta["groups"].clone())
        .map_err(|source| ShardProblem::Groups {
            path: shards[0].dir.join(SHARD_JSON),
            source,
        })?;
    let (root, count, sha, detectors) = {
        let r = &shards[0].report;
        (
            r.corpus_root.clone(),
            r.corpus_count,
            r.corpus_sha256.clone(),
            r.detectors.clone(),
        )
    };
    // Health counts are per (detector, scenario): sums over the shards, by name as the
    // one-machine exam orders them.
    let mut health: BTreeMap<String, DetectorHealth> = BTreeMap::new();
    let mut rows: Vec<Row> = Vec::with_capacity(total);
    for s in shards {
        for h in s.report.detector_health {
            let t = health.entry(h.detector.clone()).or_insert(DetectorHealth {
                detector: h.detector,
                external: h.external,
                ..Default::default()
            });
            t.ok += h.ok;
            t.panics += h.panics;
            t.timeouts += h.timeouts;
            t.failures += h.failures;
        }
        rows.extend(s.report.rows);
    }
    // Scenario ids are unique over the whole exam (a one-machine exam refuses the
    // same corpus with the same check; two shards can each hold one of a pair).
    gauntlet_corpus::load::check_unique_ids(
        rows.iter()
            .map(|r| (r.id.as_str(), Path::new(r.relpath.as_str()))),
    )?;
    let group = |r: &Row| groups.get(&r.origin).copied().unwrap_or(usize::MAX);
    rows.sort_by(|a, b| (group(a), &a.id).cmp(&(group(b), &b.id)));
    let report = detect_exam::summarize_named(
        rows,
        &detectors,
        health.into_values().collect(),
        0.0,
        (&root, count, &sha),
    );
    std::fs::create_dir_all(out).map_err(|source| MergeError::Create {
        path: out.to_path_buf(),
        source,
    })?;
    // A whole detect exam's directory: its manifest goes first and comes last.
    crate::manifest::begin(out)
        .and_then(|()| report_text::write_report_files(out, &report))
        .and_then(|()| crate::manifest::finish_detect(out, &identity))
        .map_err(MergeError::Write)?;
    Ok(report)
}

/// Every unit (of `total`) in exactly one shard, and each shard's report holding a row
/// per unit its record lists.
fn check_units(shards: &[ShardDir], total: usize) -> Result<(), MergeError> {
    let lists: Vec<&[serde_json::Value]> = shards
        .iter()
        .map(|s| s.meta["units"].as_array().map_or(&[][..], Vec::as_slice))
        .collect();
    owners_of(
        total,
        lists
            .iter()
            .map(|l| l.iter().map(|u| u.as_u64().map(|u| u as usize))),
    )
    .map_err(|c| match c {
        Coverage::OutOfRange { shard, entry } => UnitsProblem::FileOutOfRange {
            path: shards[shard].dir.join(SHARD_JSON),
            unit: lists[shard][entry].clone(),
        },
        Coverage::Twice { shard, entry } => UnitsProblem::FileTwice {
            path: shards[shard].dir.join(SHARD_JSON),
            unit: lists[shard][entry].clone(),
        },
        Coverage::Missing { unit } => UnitsProblem::FileMissing { unit },
    })?;
    for (s, units) in shards.iter().zip(&lists) {
        if units.len() != s.report.rows.len() {
            return Err(UnitsProblem::RowCount {
                path: s.dir.join(report_text::REPORT_JSON),
                rows: s.report.rows.len(),
                files: units.len(),
            }
            .into());
        }
    }
    Ok(())
}

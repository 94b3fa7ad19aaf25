//! Shards of the detect exam: `gauntlet exam-detect … --shard i/N` grades the scenario
//! files `gauntlet_exam::shard::detect_assignment` gives shard i into
//! `<out>.shard-<i>-of-<N>`, and `gauntlet merge` (this file's [`merge`]) puts the N
//! shard directories back into the directory `gauntlet exam-detect --out DIR` writes on
//! one machine.
//!
//! A shard directory holds the shard's own report (report.json and report.txt over its
//! scenarios, the detect exam's writer), `detect_shard.json` (which units it holds, the
//! exam's identity, the origin groups that order rows) and a `manifest.json` (the
//! engine's: size and sha256 of every file), the last two written last: a shard without
//! them was interrupted. The merge puts every shard's rows together, refuses duplicate
//! scenario ids as a one-machine exam does, orders the rows as it does (origin group,
//! then id), sums the per-detector health counts and rebuilds the report with the detect
//! exam's own summary (`detect_exam::summarize_named`): recall, precision, coverage
//! matrix and all, byte for byte.

use gauntlet_engine::rundir::Manifest;
use gauntlet_engine::shard::Shard;
use gauntlet_engine::shard::{read_json, shown};
use gauntlet_exam::detectors::detect_exam::{self, DetectReport, DetectorHealth, Row};
use gauntlet_exam::detectors::report_text;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The detect-exam shard's record (not `shard.json`, the agent exam's: a merge tells
/// the two apart by name).
pub const SHARD_JSON: &str = "detect_shard.json";

/// Before a shard session changes anything: without a manifest the directory reads as
/// unfinished until [`finish`] writes it again.
pub fn begin(out: &Path) -> std::io::Result<()> {
    for f in ["manifest.json", SHARD_JSON] {
        match std::fs::remove_file(out.join(f)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// What identifies the whole exam and the shard, written to detect_shard.json.
pub struct ShardRecord<'a> {
    pub shard: Shard,
    /// sha256 over everything that decides the rows (see `detect_cmd::identity`).
    pub identity_sha256: &'a str,
    /// Units (scenario files) of the whole exam.
    pub units_total: usize,
    /// The units (indexes in the exam's file order) this shard graded.
    pub units: &'a [usize],
    /// Origin (`corpus`, `extra`, `detector:<name>`) → the group rows are ordered by.
    pub groups: &'a BTreeMap<String, usize>,
}

/// After a complete shard's report files: detect_shard.json, then the manifest.
pub fn finish(out: &Path, r: &ShardRecord<'_>) -> std::io::Result<()> {
    let v = serde_json::json!({
        "exam": "detect",
        "shard": {
            "index": r.shard.index,
            "count": r.shard.count,
            "units": r.units.len(),
            "partition": gauntlet_exam::shard::DETECT_PARTITION_SCHEME,
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
    let mut m = Manifest::new(&r.shard.run_id(r.identity_sha256), "complete");
    for n in [
        report_text::REPORT_JSON,
        report_text::REPORT_TXT,
        SHARD_JSON,
    ] {
        m.record_file(out, n)?;
    }
    m.write(out)
}

/// Whether `dir` is a shard of a detect exam.
pub fn is_detect_shard(dir: &Path) -> bool {
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

struct DetectShardDir {
    dir: PathBuf,
    shard: Shard,
    meta: serde_json::Value,
    report: ShardReport,
}

fn open_shard(dir: &Path) -> Result<DetectShardDir, String> {
    if !is_detect_shard(dir) {
        return Err(format!(
            "{} is not a detect-exam shard (no {SHARD_JSON}); merge the N shards of one `gauntlet exam-detect … --shard i/N` together, apart from run or agent-exam shards",
            dir.display()
        ));
    }
    let (shard, meta) = gauntlet_engine::shard::open_record(
        dir,
        SHARD_JSON,
        "detect-exam shard",
        "a shard without a whole manifest was interrupted or changed; rerun its `gauntlet exam-detect … --shard i/N`, then merge",
    )?;
    if meta["shard"]["partition"] != gauntlet_exam::shard::DETECT_PARTITION_SCHEME {
        return Err(format!(
            "{}: cut by partition `{}`; this gauntlet merges `{}`",
            dir.display(),
            shown(&meta["shard"]["partition"]),
            gauntlet_exam::shard::DETECT_PARTITION_SCHEME
        ));
    }
    let p = dir.join(report_text::REPORT_JSON);
    let mut v = read_json(&p)?;
    let bad = |k: &str, e: &dyn std::fmt::Display| {
        format!("{}: not a detect-exam report: `{k}`: {e}", p.display())
    };
    let text = |v: &serde_json::Value, k: &str| {
        v[k].as_str()
            .map(str::to_string)
            .ok_or_else(|| bad(k, &"not a string"))
    };
    let report = ShardReport {
        corpus_root: text(&v, "corpus_root")?,
        corpus_count: v["corpus_count"]
            .as_u64()
            .ok_or_else(|| bad("corpus_count", &"not a number"))? as usize,
        corpus_sha256: text(&v, "corpus_sha256")?,
        detectors: serde_json::from_value(v["detectors"].take())
            .map_err(|e| bad("detectors", &e))?,
        detector_health: serde_json::from_value(v["detector_health"].take())
            .map_err(|e| bad("detector_health", &e))?,
        rows: serde_json::from_value(v["rows"].take()).map_err(|e| bad("rows", &e))?,
    };
    Ok(DetectShardDir {
        dir: dir.to_path_buf(),
        shard,
        meta,
        report,
    })
}

/// Merges detect-exam shard directories into `out` (report.json, report.txt). Returns
/// the merged report.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<DetectReport, String> {
    let mut shards: Vec<DetectShardDir> = dirs
        .iter()
        .map(|d| open_shard(d))
        .collect::<Result<_, _>>()?;
    let members: Vec<gauntlet_engine::shard::Member> = shards
        .iter()
        .map(|s| gauntlet_engine::shard::Member {
            shard: s.shard,
            dir: &s.dir,
            meta: &s.meta,
        })
        .collect();
    let rules = gauntlet_engine::shard::SetRules {
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
    gauntlet_engine::shard::check_set(&members, &rules, |_, _| String::new())?;
    shards.sort_by_key(|s| s.shard.index);
    // Every unit in exactly one shard, and each shard's report holds a row per unit.
    let total = shards[0].meta["units_total"].as_u64().unwrap_or(0) as usize;
    let mut owner: Vec<Option<usize>> = vec![None; total];
    for (k, s) in shards.iter().enumerate() {
        let units = s.meta["units"].as_array().map_or(&[][..], Vec::as_slice);
        for u in units {
            let slot = u
                .as_u64()
                .and_then(|u| owner.get_mut(u as usize))
                .ok_or_else(|| {
                    format!(
                        "{}: unit {u} is out of range",
                        s.dir.join(SHARD_JSON).display()
                    )
                })?;
            if slot.replace(k).is_some() {
                return Err(format!(
                    "{}: scenario file {u} is in two shards (were they cut by different gauntlets?)",
                    s.dir.join(SHARD_JSON).display()
                ));
            }
        }
        if units.len() != s.report.rows.len() {
            return Err(format!(
                "{}: holds {} row(s) but its {SHARD_JSON} lists {} scenario file(s); rerun the shard",
                s.dir.join(report_text::REPORT_JSON).display(),
                s.report.rows.len(),
                units.len()
            ));
        }
    }
    if let Some(u) = owner.iter().position(Option::is_none) {
        return Err(format!(
            "scenario file {u} is in no shard (were they cut by different gauntlets?)"
        ));
    }
    let groups: BTreeMap<String, usize> = serde_json::from_value(shards[0].meta["groups"].clone())
        .map_err(|e| {
            format!(
                "{}: `groups`: {e}",
                shards[0].dir.join(SHARD_JSON).display()
            )
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
    gauntlet_exam::load::check_unique_ids(
        rows.iter()
            .map(|r| (r.id.as_str(), Path::new(r.relpath.as_str()))),
    )
    .map_err(|e| e.to_string())?;
    let group = |r: &Row| groups.get(&r.origin).copied().unwrap_or(usize::MAX);
    rows.sort_by(|a, b| (group(a), &a.id).cmp(&(group(b), &b.id)));
    let report = detect_exam::summarize_named(
        rows,
        &detectors,
        health.into_values().collect(),
        0.0,
        (&root, count, &sha),
    );
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    report_text::write_report_files(out, &report)?;
    Ok(report)
}

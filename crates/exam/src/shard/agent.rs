//! Shards of the agent exam: `gauntlet exam … --shard i/N` runs the scenario runs
//! (pass × scenario) [`super::assignment`] gives shard i ([`owned`]) into
//! `<out>.shard-<i>-of-<N>` ([`super::shard_out`]), and [`merge`] puts the N shard
//! directories back into the directory a one-machine exam writes.
//!
//! A shard directory is an exam output directory (report.json over its own scenario
//! runs, run-<pass>/<id>.json and .transcript.json, its journal in real mode) plus
//! `shard.json` (which runs it holds, the exam's identity) and a `manifest.json` (size
//! and digest of every file), both written last by [`finish`]: a shard without them was
//! interrupted ([`begin`] removes them before a session changes anything). The merge
//! copies each scenario run's two files from its shard byte for byte, recomputes the
//! report with the exam's own summary ([`assemble_report`]) over the passes put back in
//! corpus order, renders the same report files, copies exam.json, concatenates the
//! journals and writes the whole exam's manifest last (`crate::manifest`).

use super::{MergeError, ShardProblem, UnitsProblem};
use crate::calls::{EXAM_JSON, JOURNAL};
use crate::classifier::{WorstPass, outline_of};
use crate::exam::{
    Backend, ExamConfig, ExamTally, ReportHead, assemble_report, exam_config_sha256,
    write_report_files,
};
use gauntlet_corpus::load::Corpus;
use gauntlet_job::artefacts::Artefacts;
use gauntlet_job::manifest::{FileEntry, Kind};
use gauntlet_job::merge::{Coverage, owners as owners_of};
use gauntlet_job::shard::{SetRules, Shard, open_record, read_json, shown};
use gauntlet_results::exam::{
    Bits, ExamUsage, HarnessReport, Results, RunResult, RunTally, ScenarioResult, TierRole,
    WrittenPass, file_stem,
};
use serde::Deserialize;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The agent exam's shard record.
pub const SHARD_JSON: &str = super::record::AGENT;

/// Which scenario runs (pass-major: `pass * scenarios + i`) shard `s` holds.
pub fn owned(corpus: &Corpus, passes: usize, s: Shard) -> Vec<bool> {
    gauntlet_job::partition::owned(&super::assignment(corpus, passes, s.count), s)
}

/// Before a shard session changes anything: without a manifest the directory reads as
/// unfinished until [`finish`] writes it again.
pub fn begin(out: &Path) -> std::io::Result<()> {
    super::begin(out, SHARD_JSON)
}

/// After a complete shard's artefacts: shard.json, then the manifest of every file.
/// `owned` is [`owned`]'s, `report` the shard's own.
pub fn finish(
    out: &Path,
    s: Shard,
    owned: &[bool],
    (corpus, passes): (&Corpus, usize),
    report: &HarnessReport,
    cfg: &ExamConfig,
) -> std::io::Result<()> {
    let scenarios = corpus.scenarios.len();
    let identity_sha256 = &exam_config_sha256(corpus, cfg);
    // Real mode: each tier's price per 1M tokens, so the merge prices the summed tokens
    // once, exactly as a one-machine exam does (a sum of the shards' costs would differ
    // in the last digits).
    let mut prices = serde_json::Map::new();
    if let (Backend::Real { models, .. }, Some(c)) = (&cfg.backend, &cfg.calls) {
        for role in TierRole::ALL {
            let m = &models.for_tier(crate::calls::role_tier(role)).model;
            let p = c
                .prices
                .models
                .get(&gauntlet_calls::price::model_name(&**m));
            prices.insert(
                role.name().to_string(),
                p.map_or(serde_json::Value::Null, |p| {
                    serde_json::json!([p.input, p.output])
                }),
            );
        }
    }
    // The scenario runs' files live in run-<pass>/, which a manifest does not list:
    // shard.json records them (size, digest), and the manifest covers shard.json.
    let mut files = serde_json::Map::new();
    for run in &report.runs {
        for stem in run.results.stems() {
            for f in [format!("{stem}.json"), format!("{stem}.transcript.json")] {
                let name = format!("run-{}/{f}", run.index);
                let e = FileEntry::of_file(&out.join(&name))?;
                files.insert(name, serde_json::to_value(e).expect("json"));
            }
        }
    }
    let units: Vec<[usize; 2]> = owned
        .iter()
        .enumerate()
        .filter(|(_, o)| **o)
        .map(|(u, _)| [u / scenarios, u % scenarios])
        .collect();
    let v = serde_json::json!({
        "shard": {
            "index": s.index,
            "count": s.count,
            "units": units.len(),
            "partition": super::PARTITION_SCHEME,
        },
        "exam_config_sha256": identity_sha256,
        "harness_version": gauntlet_core::HARNESS_VERSION,
        "passes": passes,
        "scenarios": scenarios,
        "units": units,
        "files": files,
        "prices": prices,
    });
    let mut b = serde_json::to_vec_pretty(&v).expect("json");
    b.push(b'\n');
    gauntlet_core::atomic::write_atomic_named(&out.join(SHARD_JSON), &b)?;
    let mut m = Artefacts::new(out, Kind::ExamShard, &s.run_id(identity_sha256), "complete");
    let mut names = vec![
        "report.json",
        "report.md",
        "report.html",
        "leaderboard.json",
        "classifier.json",
        SHARD_JSON,
    ];
    if out.join(EXAM_JSON).exists() {
        names.push(EXAM_JSON);
    }
    m.record(names)?;
    m.finish()?;
    Ok(())
}

/// Whether `dir` is a shard of an agent exam (not of a red-team run or a detect exam).
pub fn is_shard(dir: &Path) -> bool {
    dir.join(SHARD_JSON).is_file()
}

/// What the merge reads of a shard's report.json: its head, its counts and usage, and
/// each pass's scenario ids in order. The results themselves are read from the run
/// files the merge copies, one at a time, so a merge's memory does not grow with the
/// scenario runs' results.
#[derive(Deserialize)]
struct ShardReport {
    mode: String,
    corpus_count: usize,
    corpus_sha256: String,
    note: String,
    backend: String,
    consensus: usize,
    tool_loop: bool,
    model_calls: usize,
    model_errors: usize,
    #[serde(default)]
    partial: Option<String>,
    #[serde(default)]
    usage: Option<ExamUsage>,
    #[serde(default)]
    exam_config_sha256: Option<String>,
    runs: Vec<PassIds>,
}

/// One pass of a shard's report: its index and its results' scenario ids.
#[derive(Deserialize)]
struct PassIds {
    index: usize,
    results: Vec<ResultId>,
}

#[derive(Deserialize)]
struct ResultId {
    scenario_id: String,
}

impl ShardReport {
    fn head(&self) -> ReportHead {
        ReportHead {
            mode: self.mode.clone(),
            corpus_count: self.corpus_count,
            corpus_sha256: self.corpus_sha256.clone(),
            note: self.note.clone(),
            backend: self.backend.clone(),
            consensus: self.consensus,
            tool_loop: self.tool_loop,
        }
    }
}

/// A finished shard as the merge reads it.
type ShardDir = super::ShardDir<ShardReport>;

fn open_shard(dir: &Path) -> Result<ShardDir, MergeError> {
    let (shard, meta) = open_record(
        dir,
        SHARD_JSON,
        Kind::ExamShard,
        "exam shard",
        "an exam shard without a whole manifest was interrupted, cut short by its budget or changed; rerun its `gauntlet exam … --shard i/N` (real mode resumes from the journal), then merge",
    )?;
    let path = dir.join("report.json");
    let file =
        gauntlet_core::files::open(&path, gauntlet_core::files::Kind::RESULTS).map_err(|e| {
            ShardProblem::Unreadable {
                path: path.clone(),
                source: e.into_io(),
            }
        })?;
    let report: ShardReport = serde_json::from_reader(std::io::BufReader::new(file))
        .map_err(|source| ShardProblem::NotAReport { path, source })?;
    if let Some(p) = &report.partial {
        return Err(ShardProblem::Incomplete {
            shard,
            dir: dir.to_path_buf(),
            partial: p.clone(),
        }
        .into());
    }
    if meta["shard"]["partition"] != super::PARTITION_SCHEME {
        return Err(ShardProblem::Partition {
            dir: dir.to_path_buf(),
            found: shown(&meta["shard"]["partition"]),
            want: super::PARTITION_SCHEME,
        }
        .into());
    }
    Ok(ShardDir {
        dir: dir.to_path_buf(),
        shard,
        meta,
        report,
    })
}

/// Merges agent-exam shard directories (every shard 0..N of one exam once, in any
/// order) into `out`. Returns the merged report, which is the one-machine exam's.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<HarnessReport, MergeError> {
    let rules = SetRules {
        noun: "exam shard",
        whole: "exam",
        same: &[
            ("exam identity (exam.json sha256)", "/exam_config_sha256"),
            ("harness version", "/harness_version"),
            ("shard count N", "/shard/count"),
            ("passes", "/passes"),
            ("scenarios", "/scenarios"),
        ],
        help: "merge the N shards of one `gauntlet exam … --shard i/N` (same corpus, mode, passes, consensus, seed, target and gauntlet version)",
        command: "gauntlet exam … --shard i/{n}",
    };
    let shards = super::open_set(dirs, open_shard, &rules)?;
    let first = &shards[0];
    let identity = first.meta["exam_config_sha256"]
        .as_str()
        .unwrap_or_default();
    let passes = first.meta["passes"].as_u64().unwrap_or(0) as usize;
    let scenarios = first.meta["scenarios"].as_u64().unwrap_or(0) as usize;
    let owner = owners(&shards, passes, scenarios)?;
    // The merged directory is a whole exam's: its manifest goes first and comes last.
    crate::manifest::begin(out).map_err(MergeError::Write)?;
    let (runs, tally) = copy_runs(&shards, &owner, (passes, scenarios), out)?;
    let calls = shards.iter().map(|s| s.report.model_calls).sum();
    let errors = shards.iter().map(|s| s.report.model_errors).sum();
    let r0 = &shards[0].report;
    let mut report = assemble_report(r0.head(), runs, tally, calls, errors);
    report.exam_config_sha256 = r0.exam_config_sha256.clone();
    report.usage = merged_usage(&shards, &shards[0].meta["prices"]);
    // exam.json (real mode), the journals, the timings (wall clock: shards side by side).
    let exam_json = shards[0].dir.join(EXAM_JSON);
    if exam_json.exists() {
        let b = gauntlet_core::files::read(&exam_json, gauntlet_core::files::Kind::CONFIG)
            .map_err(|e| ShardProblem::Unreadable {
                path: exam_json.clone(),
                source: e.into_io(),
            })?;
        gauntlet_core::atomic::write_atomic_named(&out.join(EXAM_JSON), &b)
            .map_err(MergeError::Write)?;
    }
    let dirs: Vec<&Path> = shards.iter().map(|s| s.dir.as_path()).collect();
    gauntlet_job::shard::concat_journals(&dirs, &out.join(JOURNAL))?;
    let mut tb = serde_json::to_vec_pretty(&merged_timings(&shards, passes)).expect("json");
    tb.push(b'\n');
    gauntlet_core::atomic::write_atomic_unflushed_named(&out.join("timings.json"), &tb)
        .map_err(MergeError::Write)?;
    write_report_files(out, &report)
        .and_then(|()| crate::manifest::finish_agent(out, identity, &report, None))
        .map_err(MergeError::Write)?;
    Ok(report)
}

/// Which shard (index into `shards`) holds each scenario run, pass-major: every run
/// exactly once.
fn owners(shards: &[ShardDir], passes: usize, scenarios: usize) -> Result<Vec<usize>, MergeError> {
    let units = |s: &ShardDir| -> Vec<(u64, u64)> {
        s.meta["units"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|u| {
                (
                    u[0].as_u64().unwrap_or(u64::MAX),
                    u[1].as_u64().unwrap_or(u64::MAX),
                )
            })
            .collect()
    };
    let lists: Vec<Vec<(u64, u64)>> = shards.iter().map(units).collect();
    let canonical = |&(p, i): &(u64, u64)| {
        (p as usize)
            .checked_mul(scenarios)
            .and_then(|x| x.checked_add(i as usize))
            .filter(|_| (i as usize) < scenarios)
    };
    owners_of(
        passes * scenarios,
        lists.iter().map(|l| l.iter().map(canonical)),
    )
    .map_err(|c| {
        let at =
            |shard: usize, entry: usize| (shards[shard].dir.join(SHARD_JSON), lists[shard][entry]);
        match c {
            Coverage::OutOfRange { shard, entry } => {
                let (path, (pass, index)) = at(shard, entry);
                UnitsProblem::RunOutOfRange { path, pass, index }
            }
            Coverage::Twice { shard, entry } => {
                let (path, (pass, index)) = at(shard, entry);
                UnitsProblem::RunTwice { path, pass, index }
            }
            Coverage::Missing { unit } => UnitsProblem::RunMissing {
                pass: unit / scenarios,
                index: unit % scenarios,
            },
        }
        .into()
    })
}

/// Creates `out` and its run-<pass>/ directories, copies each scenario run's two files
/// from the shard that holds it (byte for byte, after checking them against its
/// shard.json) and folds each result, read from the bytes copied, into its pass's
/// counts, the exam's tally and the failure classifier's outline as the exam itself
/// does (`exam::driver::PassFold`): the passes come back with their results in their
/// files ([`Results::Written`]), in corpus order.
fn copy_runs(
    shards: &[ShardDir],
    owner: &[usize],
    (passes, scenarios): (usize, usize),
    out: &Path,
) -> Result<(Vec<RunResult>, ExamTally), MergeError> {
    // Each shard's scenario ids, per pass, in corpus order.
    let mut queues: Vec<Vec<VecDeque<&str>>> = shards
        .iter()
        .map(|s| {
            let mut q = vec![VecDeque::new(); passes];
            for r in &s.report.runs {
                if let Some(q) = q.get_mut(r.index) {
                    q.extend(r.results.iter().map(|x| x.scenario_id.as_str()));
                }
            }
            q
        })
        .collect();
    let create = |d: &Path| {
        std::fs::create_dir_all(d).map_err(|source| MergeError::Create {
            path: d.to_path_buf(),
            source,
        })
    };
    create(out)?;
    let mut stems: Vec<String> = vec![String::new(); scenarios];
    let mut tallies = Vec::with_capacity(passes);
    let mut exam = ExamTally::default();
    let mut worst = WorstPass::default();
    for p in 0..passes {
        let dir = out.join(format!("run-{p}"));
        create(&dir)?;
        let mut tally = RunTally::default();
        let mut outline = Vec::with_capacity(scenarios);
        for (i, stem_of_i) in stems.iter_mut().enumerate() {
            let k = owner[p * scenarios + i];
            let id = queues[k][p]
                .pop_front()
                .ok_or_else(|| UnitsProblem::FewerRuns {
                    dir: shards[k].dir.clone(),
                    pass: p,
                })?;
            let stem = file_stem(id);
            let mut result = None;
            for f in [format!("{stem}.json"), format!("{stem}.transcript.json")] {
                let from = shards[k].dir.join(format!("run-{p}")).join(&f);
                let bytes = gauntlet_core::files::read(&from, gauntlet_core::files::Kind::RESULTS)
                    .map_err(|e| ShardProblem::Unreadable {
                        path: from.clone(),
                        source: e.into_io(),
                    })?;
                let want = &shards[k].meta["files"][format!("run-{p}/{f}")];
                if serde_json::to_value(FileEntry::of(&bytes)).ok().as_ref() != Some(want) {
                    return Err(ShardProblem::Altered {
                        path: from,
                        record: shards[k].dir.join(SHARD_JSON),
                    }
                    .into());
                }
                if result.is_none() {
                    let r: ScenarioResult = serde_json::from_slice(&bytes).map_err(|source| {
                        ShardProblem::NotAResult {
                            path: from.clone(),
                            source,
                        }
                    })?;
                    result = Some(r);
                }
                gauntlet_core::atomic::write_atomic_unflushed_named(&dir.join(&f), &bytes)
                    .map_err(MergeError::Write)?;
            }
            let r = result.expect("the result file comes first");
            tally.add(&r);
            exam.add(&r);
            outline.push(outline_of(&r));
            *stem_of_i = stem;
        }
        worst.close(p, tally.pass_rate(), outline);
        tallies.push(tally);
    }
    let stems: Arc<[String]> = stems.into();
    let mut all = Bits::new(scenarios);
    (0..scenarios).for_each(|i| all.insert(i));
    let mut outlines = worst.into_outlines(passes);
    let runs = tallies
        .into_iter()
        .enumerate()
        .map(|(p, t)| {
            let results = Results::Written(WrittenPass {
                dir: out.join(format!("run-{p}")),
                stems: stems.clone(),
                present: all.clone(),
                passed: t.all_passed(),
                outline: outlines[p].take(),
            });
            t.finish(p, results)
        })
        .collect();
    Ok((runs, exam))
}

/// The shards' timings.json put together: each pass's per-scenario wall times from the
/// shard that ran them, the longest shard's total (shards run side by side).
fn merged_timings(shards: &[ShardDir], passes: usize) -> serde_json::Value {
    let mut timings = serde_json::json!({"note": "", "passes": vec![serde_json::json!({}); passes], "total_millis": 0});
    for s in shards {
        if let Ok(t) = read_json(&s.dir.join("timings.json")) {
            timings["note"] = t["note"].clone();
            for (p, m) in t["passes"]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
                .take(passes)
            {
                for (k, v) in m.as_object().into_iter().flatten() {
                    timings["passes"][p][k] = v.clone();
                }
            }
            let tm = t["total_millis"].as_u64().unwrap_or(0);
            if tm > timings["total_millis"].as_u64().unwrap_or(0) {
                timings["total_millis"] = tm.into();
            }
        }
    }
    timings
}

/// Real mode: token counts per tier summed over the shards and priced once at the
/// prices the shards recorded — `gauntlet_calls::price::slot_cost`'s formula and
/// `crate::calls::price_usage`'s total, so the figures are the one-machine exam's to
/// the last digit. A tier a shard could not price keeps that shard's reason.
fn merged_usage(shards: &[ShardDir], prices: &serde_json::Value) -> Option<ExamUsage> {
    let mut it = shards.iter().filter_map(|s| s.report.usage.clone());
    let mut u = it.next()?;
    for o in it {
        for (a, b) in u.tiers.iter_mut().zip(&o.tiers) {
            a.calls += b.calls;
            a.calls_with_usage += b.calls_with_usage;
            a.input_tokens += b.input_tokens;
            a.output_tokens += b.output_tokens;
            if a.cost_na_reason.is_none() {
                a.cost_na_reason = b.cost_na_reason.clone();
            }
        }
        if u.cost_na_reason.is_none() {
            u.cost_na_reason = o.cost_na_reason.clone();
        }
    }
    let mut total = Some(0.0);
    for t in &mut u.tiers {
        let price = &prices[t.tier.name()];
        t.cost_usd = match (t.calls, price[0].as_f64(), price[1].as_f64()) {
            (0, _, _) => Some(0.0),
            (_, Some(i), Some(o)) if t.cost_na_reason.is_none() => {
                Some((t.input_tokens as f64 * i + t.output_tokens as f64 * o) / 1e6)
            }
            _ => None,
        };
        if t.cost_usd.is_some() {
            t.cost_na_reason = None;
        }
        total = total.zip(t.cost_usd).map(|(x, c)| x + c);
    }
    u.input_tokens = u.tiers.iter().map(|t| t.input_tokens).sum();
    u.output_tokens = u.tiers.iter().map(|t| t.output_tokens).sum();
    u.cost_usd = total;
    if total.is_some() {
        u.cost_na_reason = None;
    }
    Some(u)
}

//! Shards of the agent exam: `gauntlet exam … --shard i/N` runs the scenario runs
//! (pass × scenario) `gauntlet_exam::shard` gives shard i into `<out>.shard-<i>-of-<N>`,
//! and `gauntlet merge` (this file's [`merge`]) puts the N shard directories back into
//! the directory a one-machine exam writes.
//!
//! A shard directory is an exam output directory (report.json over its own scenario
//! runs, run-<pass>/<id>.json and .transcript.json, its journal in real mode) plus
//! `shard.json` (which runs it holds, the exam's identity) and a `manifest.json`
//! (the engine's: size and sha256 of every file), both written last: a shard without
//! them was interrupted. The merge copies each scenario run's two files from its shard
//! byte for byte, recomputes the report with the exam's own summary
//! (`exam::assemble_report`) over the passes put back in corpus order, renders the same
//! report files, copies exam.json and concatenates the journals.

use gauntlet_engine::rundir::{FileEntry, Manifest};
use gauntlet_engine::shard::Shard;
use gauntlet_engine::shard::{read_json, shown};
use gauntlet_exam::exam::{HarnessReport, ReportHead, assemble_report, file_stem};
use gauntlet_exam::grade::RunResult;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// shard.json in a shard of an exam.
pub const SHARD_JSON: &str = "shard.json";

/// The shard's output directory: `<out>.shard-<i>-of-<N>`.
pub fn shard_out(out: &Path, s: Shard) -> PathBuf {
    let name = out
        .file_name()
        .map_or_else(|| "exam-out".into(), |n| n.to_string_lossy().into_owned());
    out.with_file_name(format!("{name}.shard-{}-of-{}", s.index, s.count))
}

/// Which scenario runs (pass-major) the shard holds.
pub fn owned(corpus: &gauntlet_exam::Corpus, passes: usize, s: Shard) -> Vec<bool> {
    gauntlet_exam::shard::assignment(corpus, passes, s.count)
        .into_iter()
        .map(|o| o == s.index)
        .collect()
}

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

/// After a complete shard's artefacts: shard.json, then the manifest of every file.
pub fn finish(
    out: &Path,
    s: Shard,
    owned: &[bool],
    (corpus, passes): (&gauntlet_exam::Corpus, usize),
    report: &HarnessReport,
    cfg: &gauntlet_exam::exam::ExamConfig,
) -> std::io::Result<()> {
    let scenarios = corpus.scenarios.len();
    let identity_sha256 = &gauntlet_exam::exam::exam_config_sha256(corpus, cfg);
    // Real mode: each tier's price per 1M tokens, so the merge prices the summed tokens
    // once, exactly as a one-machine exam does (a sum of the shards' costs would differ
    // in the last digits).
    let mut prices = serde_json::Map::new();
    if let (gauntlet_exam::exam::Backend::Real { models, .. }, Some(c)) = (&cfg.backend, &cfg.calls)
    {
        for role in gauntlet_exam::calls::TierRole::ALL {
            let m = &models.for_tier(role.tier()).model;
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
    // shard.json records them (size, sha256), and the manifest covers shard.json.
    let mut files = serde_json::Map::new();
    for run in &report.runs {
        for r in &run.results {
            let stem = file_stem(&r.scenario_id);
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
            "partition": gauntlet_exam::shard::PARTITION_SCHEME,
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
    let mut m = Manifest::new(&s.run_id(identity_sha256), "complete");
    let mut names = vec![
        "report.json".to_string(),
        "report.md".into(),
        "report.html".into(),
        "leaderboard.json".into(),
        "classifier.json".into(),
        SHARD_JSON.into(),
    ];
    if out.join(gauntlet_exam::calls::EXAM_JSON).exists() {
        names.push(gauntlet_exam::calls::EXAM_JSON.into());
    }
    for n in names {
        m.record_file(out, &n)?;
    }
    m.write(out)
}

/// Whether `dir` is a shard of an exam (not of a red-team run).
pub fn is_exam_shard(dir: &Path) -> bool {
    dir.join(SHARD_JSON).is_file()
}

struct ExamShardDir {
    dir: PathBuf,
    shard: Shard,
    meta: serde_json::Value,
    report: HarnessReport,
}

fn open_shard(dir: &Path) -> Result<ExamShardDir, String> {
    let (shard, meta) = gauntlet_engine::shard::open_record(
        dir,
        SHARD_JSON,
        "exam shard",
        "an exam shard without a whole manifest was interrupted, cut short by its budget or changed; rerun its `gauntlet exam … --shard i/N` (real mode resumes from the journal), then merge",
    )?;
    let report: HarnessReport = serde_json::from_value(read_json(&dir.join("report.json"))?)
        .map_err(|e| {
            format!(
                "{}: not an exam report: {e}",
                dir.join("report.json").display()
            )
        })?;
    if let Some(p) = &report.partial {
        return Err(format!(
            "exam shard {shard} in {} is incomplete (partial: {p}); rerun its `gauntlet exam … --shard {shard}` to finish it, then merge",
            dir.display()
        ));
    }
    if meta["shard"]["partition"] != gauntlet_exam::shard::PARTITION_SCHEME {
        return Err(format!(
            "{}: cut by partition `{}`; this gauntlet merges `{}`",
            dir.display(),
            shown(&meta["shard"]["partition"]),
            gauntlet_exam::shard::PARTITION_SCHEME
        ));
    }
    Ok(ExamShardDir {
        dir: dir.to_path_buf(),
        shard,
        meta,
        report,
    })
}

/// Merges exam shard directories into `out`. Returns the merged report.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<HarnessReport, String> {
    let mut shards: Vec<ExamShardDir> = dirs
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
    gauntlet_engine::shard::check_set(&members, &rules, |_, _| String::new())?;
    shards.sort_by_key(|s| s.shard.index);
    let first = &shards[0];
    let passes = first.meta["passes"].as_u64().unwrap_or(0) as usize;
    let scenarios = first.meta["scenarios"].as_u64().unwrap_or(0) as usize;
    // Which shard holds each scenario run; every run exactly once.
    let mut owner: Vec<Option<usize>> = vec![None; passes * scenarios];
    for (k, s) in shards.iter().enumerate() {
        for u in s.meta["units"].as_array().into_iter().flatten() {
            let (p, i) = (
                u[0].as_u64().unwrap_or(u64::MAX),
                u[1].as_u64().unwrap_or(u64::MAX),
            );
            let slot = (p as usize)
                .checked_mul(scenarios)
                .and_then(|x| x.checked_add(i as usize))
                .filter(|_| (i as usize) < scenarios)
                .and_then(|x| owner.get_mut(x))
                .ok_or_else(|| {
                    format!(
                        "{}: unit [{p}, {i}] is out of range",
                        s.dir.join(SHARD_JSON).display()
                    )
                })?;
            if slot.replace(k).is_some() {
                return Err(format!(
                    "{}: scenario run [{p}, {i}] is in two shards (were they cut by different gauntlets?)",
                    s.dir.join(SHARD_JSON).display()
                ));
            }
        }
    }
    if let Some(u) = owner.iter().position(Option::is_none) {
        return Err(format!(
            "scenario run [{}, {}] is in no shard (were they cut by different gauntlets?)",
            u / scenarios,
            u % scenarios
        ));
    }
    // Each shard's results, per pass, in corpus order.
    let mut queues: Vec<Vec<VecDeque<&gauntlet_exam::grade::ScenarioResult>>> = shards
        .iter()
        .map(|s| {
            let mut q = vec![VecDeque::new(); passes];
            for r in &s.report.runs {
                if let Some(q) = q.get_mut(r.index) {
                    q.extend(r.results.iter());
                }
            }
            q
        })
        .collect();
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut runs = Vec::with_capacity(passes);
    for p in 0..passes {
        let dir = out.join(format!("run-{p}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut results = Vec::with_capacity(scenarios);
        for i in 0..scenarios {
            let k = owner[p * scenarios + i].expect("checked");
            let r = queues[k][p].pop_front().ok_or_else(|| {
                format!(
                    "{}: report.json holds fewer scenario runs of pass {p} than its shard.json lists",
                    shards[k].dir.display()
                )
            })?;
            let stem = file_stem(&r.scenario_id);
            for f in [format!("{stem}.json"), format!("{stem}.transcript.json")] {
                let from = shards[k].dir.join(format!("run-{p}")).join(&f);
                let bytes = std::fs::read(&from)
                    .map_err(|e| format!("cannot read {}: {e}", from.display()))?;
                let want = &shards[k].meta["files"][format!("run-{p}/{f}")];
                if serde_json::to_value(FileEntry::of(&bytes)).ok().as_ref() != Some(want) {
                    return Err(format!(
                        "{} is not the file the shard wrote ({} records another size or sha256): it was truncated, edited or replaced since; rerun the shard",
                        from.display(),
                        shards[k].dir.join(SHARD_JSON).display()
                    ));
                }
                gauntlet_core::atomic::write_atomic_unflushed_named(&dir.join(&f), &bytes)
                    .map_err(|e| e.to_string())?;
            }
            results.push(r.clone());
        }
        runs.push(RunResult::from_results(p, results));
    }
    let calls = shards.iter().map(|s| s.report.model_calls).sum();
    let errors = shards.iter().map(|s| s.report.model_errors).sum();
    let r0 = &shards[0].report;
    let mut report = assemble_report(ReportHead::of(r0), runs, calls, errors);
    report.exam_config_sha256 = r0.exam_config_sha256.clone();
    report.usage = merged_usage(&shards, &shards[0].meta["prices"]);
    // exam.json (real mode), the journals, the timings (wall clock: shards side by side).
    let exam_json = shards[0].dir.join(gauntlet_exam::calls::EXAM_JSON);
    if exam_json.exists() {
        let b = std::fs::read(&exam_json)
            .map_err(|e| format!("cannot read {}: {e}", exam_json.display()))?;
        gauntlet_core::atomic::write_atomic_named(&out.join(gauntlet_exam::calls::EXAM_JSON), &b)
            .map_err(|e| e.to_string())?;
    }
    let dirs: Vec<&Path> = shards.iter().map(|s| s.dir.as_path()).collect();
    gauntlet_engine::merge::concat_journals(&dirs, &out.join(gauntlet_exam::calls::JOURNAL))
        .map_err(|e| e.to_string())?;
    let mut timings = serde_json::json!({"note": "", "passes": vec![serde_json::json!({}); passes], "total_millis": 0});
    for s in &shards {
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
    let mut tb = serde_json::to_vec_pretty(&timings).expect("json");
    tb.push(b'\n');
    gauntlet_core::atomic::write_atomic_unflushed_named(&out.join("timings.json"), &tb)
        .map_err(|e| e.to_string())?;
    gauntlet_exam::exam::write_report_files(out, &report).map_err(|e| e.to_string())?;
    Ok(report)
}

/// Real mode: token counts per tier summed over the shards and priced once at the
/// prices the shards recorded — `gauntlet_calls::price::slot_cost`'s formula and
/// `gauntlet_exam::calls::price_usage`'s total, so the figures are the one-machine
/// exam's to the last digit. A tier a shard could not price keeps that shard's reason.
fn merged_usage(
    shards: &[ExamShardDir],
    prices: &serde_json::Value,
) -> Option<gauntlet_exam::calls::ExamUsage> {
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

//! `gauntlet merge`: N shard directories (`gauntlet run CONFIG --shard i/N`, see
//! `shard.rs`) back into the one run directory a single machine would have written.
//!
//! Every shard is verified against its manifest and must be complete; all must be shards
//! of one run (config hash, seed, harness version, shard count and partition scheme),
//! every index 0..N exactly once. The whole run's plan is rebuilt from run.json (as the
//! analyses of stored runs do, [`StoredRun`]) and the partition recomputed, so the merge
//! knows which shard holds each unit. It then walks the units in canonical order, taking
//! each one's transcript lines from its shard — copied byte for byte, since a unit's lines
//! depend on the unit alone — and folding the stored verdicts into the run's own metric
//! accumulation ([`Tally`], the code `execute` and `rescore` use). Token usage, which the
//! transcripts do not hold, comes from each shard's shard_usage.json, per cell and trial.
//! results.json, usage.json, the reports, run.json and the manifest are then written as
//! `execute` writes them, so they are byte-identical to a one-machine run; the shards'
//! journals are concatenated into the output's journal.jsonl (the resume source of the
//! merged run: rerunning its config into it replays every call), and sessions.jsonl gets
//! one line for the merge.
//!
//! Memory: one unit per shard in hand, 4 bytes per unit of partition, and the cells'
//! accumulators — never the attempts.

use crate::run::{Status, Tally, pretty, run_json};
use crate::rundir::{FileEntry, HashingWriter, MANIFEST, Manifest, RunDir, tmp_path, write_atomic};
use crate::shard::shown;
use crate::shard::{PARTITION_SCHEME, Shard};
use crate::stored::{ParsedLine, StoredError, StoredRun};
use crate::usage::{CellUsage, Slot};
use gauntlet_calls::cache::RoleUsage;
use gauntlet_core::files::{self, Kind, TRANSCRIPT_LINE_MAX};
use gauntlet_core::results::RunSummary;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn err(msg: impl Into<String>) -> StoredError {
    StoredError(msg.into())
}

/// What a merge produced.
pub struct Merged {
    pub out: PathBuf,
    pub summary: RunSummary,
    pub shards: u32,
    pub units: u64,
    pub attempts: u64,
    pub wall_seconds: f64,
}

/// One shard directory, as its verified run.json describes it.
struct ShardDir {
    dir: PathBuf,
    shard: Shard,
    run_json: serde_json::Value,
}

/// Verifies `dir` (manifest, complete, a shard) and reads its run.json.
fn open_shard(dir: &Path) -> Result<ShardDir, StoredError> {
    let manifest = Manifest::verify(dir).map_err(|e| {
        err(format!(
            "shard {}: {e}\n    help: a shard without a whole manifest was interrupted or changed; rerun its `gauntlet run CONFIG --shard i/N` (it resumes), then merge",
            dir.display()
        ))
    })?;
    if let Some(kind) = manifest.kind
        && kind != gauntlet_job::kind::Kind::Run
    {
        return Err(err(format!(
            "{}: its {MANIFEST} records {}, not a shard of a red-team run: merge takes the directories `gauntlet run CONFIG --shard i/N` writes (<run_name>.shard-<i>-of-<N>)",
            dir.display(),
            kind.describe()
        )));
    }
    let path = dir.join("run.json");
    if !manifest.files.contains_key("run.json") {
        return Err(err(format!(
            "{}: its {MANIFEST} lists no run.json: not a run directory",
            dir.display()
        )));
    }
    let bytes = files::read(&path, Kind::RUN_METADATA).map_err(|e| err(e.to_string()))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| err(format!("{}: not a gauntlet run.json: {e}", path.display())))?;
    let s = &v["shard"];
    if s.is_null() {
        return Err(err(format!(
            "{}: not a shard (its run.json has no `shard`): merge takes the directories `gauntlet run CONFIG --shard i/N` writes (<run_name>.shard-<i>-of-<N>)",
            path.display()
        )));
    }
    let num = |k: &str| {
        s[k].as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                err(format!(
                    "{}: `shard.{k}` is not a shard number",
                    path.display()
                ))
            })
    };
    let shard = Shard {
        index: num("index")?,
        count: num("count")?,
    };
    if shard.count == 0 || shard.index >= shard.count {
        return Err(err(format!(
            "{}: shard {shard} is out of range",
            path.display()
        )));
    }
    if s["partition"] != PARTITION_SCHEME {
        return Err(err(format!(
            "{}: shard {shard} was cut by partition `{}`; this gauntlet merges `{PARTITION_SCHEME}`: run the shards and the merge with one gauntlet version",
            path.display(),
            shown(&s["partition"])
        )));
    }
    for k in ["transcripts.jsonl", "shard_usage.json"] {
        if !manifest.files.contains_key(k) {
            return Err(err(format!(
                "{}: its {MANIFEST} lists no {k}: not a whole shard directory",
                dir.display()
            )));
        }
    }
    let status = shown(&v["status"]);
    if status != "complete" {
        return Err(err(format!(
            "shard {shard} in {} is incomplete (status `{status}`): rerun `gauntlet run CONFIG --shard {shard}` with the same --runs-dir to finish it (finished calls are replayed), then merge",
            dir.display()
        )));
    }
    Ok(ShardDir {
        dir: dir.to_path_buf(),
        shard,
        run_json: v,
    })
}

/// Refuses shards of different runs, naming the shard that differs and how (and which
/// config keys differ when the configs do), a shard given twice and missing shards.
fn check_same_run(shards: &[ShardDir]) -> Result<(), StoredError> {
    let members: Vec<crate::shard::Member> = shards
        .iter()
        .map(|s| crate::shard::Member {
            shard: s.shard,
            dir: &s.dir,
            meta: &s.run_json,
        })
        .collect();
    let rules = crate::shard::SetRules {
        noun: "shard",
        whole: "run",
        same: &[
            ("harness version", "/harness_version"),
            ("config hash", "/config_hash"),
            ("seed", "/seed"),
            ("shard count N", "/shard/count"),
            ("partition scheme", "/shard/partition"),
            ("run id", "/shard/run_id"),
        ],
        help: "merge the N shards of one `gauntlet run CONFIG --shard i/N` (same config, seed, gauntlet version and N)",
        command: "gauntlet run CONFIG --shard i/{n}",
    };
    crate::shard::check_set(&members, &rules, |a, b| {
        let (ca, cb) = (&a["config"], &b["config"]);
        let mut keys: Vec<&String> = ca
            .as_object()
            .into_iter()
            .chain(cb.as_object())
            .flat_map(|o| o.keys())
            .filter(|k| ca[k.as_str()] != cb[k.as_str()])
            .collect();
        keys.sort();
        keys.dedup();
        if keys.is_empty() {
            return String::new();
        }
        let keys: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
        format!(" (config keys that differ: {})", keys.join(", "))
    })
    .map_err(|e| err(e.to_string()))
}

/// Reads a shard's shard_usage.json into per-(cell, trial) usage.
fn read_usage(
    dir: &Path,
    cells: usize,
    trials: usize,
) -> Result<Vec<(usize, usize, CellUsage)>, StoredError> {
    let path = dir.join("shard_usage.json");
    let bytes = files::read(&path, Kind::RUN_METADATA).map_err(|e| err(e.to_string()))?;
    let bad = |why: &str| err(format!("{}: {why}", path.display()));
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let rows = v["usage"]
        .as_array()
        .ok_or_else(|| bad("no `usage` list"))?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let n = |x: &serde_json::Value| {
            x.as_u64()
                .ok_or_else(|| bad("a usage count is not a whole number"))
        };
        let cell = n(&r[0])? as usize;
        let trial = n(&r[1])? as usize;
        if cell >= cells || trial >= trials {
            return Err(bad(&format!(
                "usage of cell {cell}, trial {trial}, but the run has {cells} cells and {trials} trial(s)"
            )));
        }
        let slots = r[2]
            .as_array()
            .filter(|a| a.len() == Slot::ALL.len())
            .ok_or_else(|| {
                bad(&format!(
                    "a usage row has not {} role slots",
                    Slot::ALL.len()
                ))
            })?;
        let mut u = CellUsage::default();
        for (slot, s) in u.values_mut().zip(slots) {
            *slot = RoleUsage {
                calls: n(&s[0])?,
                calls_with_usage: n(&s[1])?,
                input_tokens: n(&s[2])?,
                output_tokens: n(&s[3])?,
            };
        }
        out.push((cell, trial, u));
    }
    Ok(out)
}

/// A shard's transcripts, read one unit at a time.
struct ShardLines<'a> {
    run: &'a StoredRun,
    shard: Shard,
    path: PathBuf,
    lines: BufReader<files::Capped>,
    line_no: u64,
    /// The next line: its canonical unit index, parsed form and bytes.
    held: Option<(u64, ParsedLine, Vec<u8>)>,
}

impl<'a> ShardLines<'a> {
    fn open(run: &'a StoredRun, s: &ShardDir) -> Result<Self, StoredError> {
        let path = s.dir.join("transcripts.jsonl");
        let f = files::open(&path, Kind::TRANSCRIPTS).map_err(|e| err(e.to_string()))?;
        let mut me = ShardLines {
            run,
            shard: s.shard,
            path,
            lines: BufReader::with_capacity(1 << 20, f),
            line_no: 0,
            held: None,
        };
        me.advance()?;
        Ok(me)
    }

    /// Reads the next line into `held` (None at the end).
    fn advance(&mut self) -> Result<(), StoredError> {
        let mut buf = Vec::new();
        let n = files::read_line_capped(&mut self.lines, &mut buf, TRANSCRIPT_LINE_MAX).map_err(
            |e| {
                err(format!(
                    "cannot read {}:{}: {e}",
                    self.path.display(),
                    self.line_no + 1
                ))
            },
        )?;
        if n == 0 {
            self.held = None;
            return Ok(());
        }
        self.line_no += 1;
        if buf.last() != Some(&b'\n') {
            return Err(err(format!(
                "{}:{}: the last line is cut short",
                self.path.display(),
                self.line_no
            )));
        }
        let text = std::str::from_utf8(&buf[..buf.len() - 1]).map_err(|_| {
            err(format!(
                "{}:{}: not UTF-8 text",
                self.path.display(),
                self.line_no
            ))
        })?;
        let parsed = self.run.parse_line(&self.path, self.line_no, text)?;
        let idx = u64::from(parsed.0) * self.run.plan.units() + self.run.plan.unit_index(parsed.1);
        self.held = Some((idx, parsed, buf));
        Ok(())
    }
}

/// Merges `shards` into `out`. `config_dir` is where the config's relative dataset
/// paths resolve (as for `rescore`).
pub fn merge(
    shard_dirs: &[PathBuf],
    out: &Path,
    config_dir: Option<&Path>,
) -> Result<Merged, StoredError> {
    let started = Instant::now();
    if shard_dirs.is_empty() {
        return Err(err(
            "no shard directories given: gauntlet merge SHARD_DIR… --out DIR",
        ));
    }
    for d in shard_dirs {
        if crate::stored::same_dir(out, d) {
            return Err(err(format!(
                "--out {} is the shard directory {}: merge into a directory of its own",
                out.display(),
                d.display()
            )));
        }
    }
    let shards: Vec<ShardDir> = shard_dirs
        .iter()
        .map(|d| open_shard(d))
        .collect::<Result<_, _>>()?;
    check_same_run(&shards)?;
    let run = StoredRun::open_any_mode(&shards[0].dir, config_dir)?;
    let plan = &run.plan;
    let trials = run.trial_seeds.len();
    let count = shards[0].shard.count;
    let whole_id = shown(&shards[0].run_json["shard"]["run_id"]);
    if plan.run_id != whole_id {
        return Err(err(format!(
            "{}: the shard records run id {whole_id} but its config rebuilds as {}",
            shards[0].dir.display(),
            plan.run_id
        )));
    }
    let owner = crate::shard::assignment(plan, trials as u32, count);
    let mut by_index: Vec<&ShardDir> = shards.iter().collect();
    by_index.sort_by_key(|s| s.shard.index);
    for s in &by_index {
        let expect = owner.iter().filter(|&&o| o == s.shard.index).count() as u64;
        let got = s.run_json["shard"]["units"].as_u64();
        if got != Some(expect) {
            return Err(err(format!(
                "shard {} in {}: holds {} unit(s) but this gauntlet's partition gives it {expect}; shards must be cut by the gauntlet that merges them",
                s.shard,
                s.dir.display(),
                got.map_or("an unknown number of".into(), |n| n.to_string())
            )));
        }
    }

    // The output: a run directory like any other (locked; stale temporaries removed).
    let parent = out.parent().unwrap_or(Path::new(""));
    let name = out
        .file_name()
        .ok_or_else(|| err(format!("--out {}: not a directory name", out.display())))?;
    let dir = RunDir::open(parent, &name.to_string_lossy())
        .map_err(|e| err(format!("cannot open {}: {e}", out.display())))?;
    if let Ok(bytes) = files::read(&dir.path("run.json"), Kind::RUN_METADATA) {
        let old: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        if old["run_id"].as_str() != Some(plan.run_id.as_str()) {
            return Err(err(format!(
                "--out {} holds another run ({}): merge into an empty directory or one holding an earlier merge of this run",
                out.display(),
                shown(&old["run_id"])
            )));
        }
    }
    dir.begin_session().map_err(|e| {
        err(format!(
            "cannot remove {}: {e}",
            dir.path(MANIFEST).display()
        ))
    })?;

    let mut tally = Tally::new(plan, trials);
    for s in &by_index {
        for (cell, trial, u) in read_usage(&s.dir, plan.cells(), trials)? {
            tally.add_usage(cell, trial, u);
        }
    }
    let transcripts_path = dir.path("transcripts.jsonl");
    let transcripts_tmp = tmp_path(&transcripts_path);
    let io = |p: &Path, e: std::io::Error| err(format!("cannot write {}: {e}", p.display()));
    let mut w =
        HashingWriter::new(File::create(&transcripts_tmp).map_err(|e| io(&transcripts_tmp, e))?);
    let mut readers: Vec<ShardLines> = by_index
        .iter()
        .map(|s| ShardLines::open(&run, s))
        .collect::<Result<_, _>>()?;
    let total = owner.len() as u64;
    let (mut attempts_total, mut unit_buf) = (0u64, Vec::new());
    let mut attempts = Vec::new();
    let mut verdicts: Vec<Vec<gauntlet_core::outcome::Verdict>> = Vec::new();
    for idx in 0..total {
        let r = &mut readers[owner[idx as usize] as usize];
        unit_buf.clear();
        attempts.clear();
        verdicts.clear();
        while let Some((at, _, _)) = &r.held {
            if *at != idx {
                break;
            }
            let (_, (_, _, attempt, vs), raw) = r.held.take().expect("held");
            unit_buf.extend_from_slice(&raw);
            attempts.push(attempt);
            verdicts.push(vs);
            r.advance()?;
        }
        // The next line must belong to a later unit of this shard; a unit with no line
        // made no attempt.
        if let Some((at, _, _)) = &r.held
            && (*at < idx || owner[*at as usize] != r.shard.index)
        {
            return Err(err(format!(
                "{}:{}: a line of unit {at} out of canonical order, or of another shard's units; was this shard cut by another partition or edited?",
                r.path.display(),
                r.line_no
            )));
        }
        let trial = (idx / plan.units()) as u32;
        let u = plan.unit(idx % plan.units());
        for j in 0..plan.judges.len() {
            let vs: Vec<_> = verdicts.iter().map(|v| v[j].clone()).collect();
            tally.add(plan, trial, u, j, &attempts, &vs, CellUsage::default());
        }
        attempts_total += attempts.len() as u64;
        w.write_lines(&unit_buf, attempts.len() as u64)
            .map_err(|e| io(&transcripts_tmp, e))?;
    }
    for r in &readers {
        if r.held.is_some() {
            return Err(err(format!(
                "{}:{}: a line after the shard's last unit (out of canonical order?)",
                r.path.display(),
                r.line_no
            )));
        }
    }
    drop(readers);
    let (file, transcripts_entry) = w.finish().map_err(|e| io(&transcripts_tmp, e))?;
    drop(file);
    gauntlet_core::atomic::check_replaceable(&transcripts_path)
        .and_then(|()| std::fs::rename(&transcripts_tmp, &transcripts_path))
        .map_err(|e| io(&transcripts_path, e))?;

    let status = Status::Complete;
    let (summary, usage_rows) = tally.finish(plan, &run.trial_seeds, &status);
    let mut manifest = Manifest::new(
        gauntlet_job::kind::Kind::Run,
        &plan.run_id,
        &status.as_string(),
    );
    manifest
        .files
        .insert("transcripts.jsonl".into(), transcripts_entry);
    let mut write = |name: &str, bytes: Vec<u8>| {
        let path = dir.path(name);
        write_atomic(&path, &bytes).map_err(|e| io(&path, e))?;
        manifest.files.insert(name.into(), FileEntry::of(&bytes));
        Ok::<(), StoredError>(())
    };
    write("results.json", pretty(&summary))?;
    write("usage.json", pretty(&usage_rows))?;
    gauntlet_report::write_reports(&dir.root, &summary).map_err(|e| {
        err(format!(
            "cannot write reports in {}: {e}",
            dir.root.display()
        ))
    })?;
    write(
        "run.json",
        pretty(&run_json(plan, &status, total, attempts_total)),
    )?;
    for name in [
        gauntlet_report::LEADERBOARD_FILE,
        gauntlet_report::MARKDOWN_FILE,
        gauntlet_report::HTML_FILE,
    ] {
        manifest.record_file(&dir.root, name).map_err(|e| {
            err(format!(
                "cannot read back {}: {e}",
                dir.path(name).display()
            ))
        })?;
    }
    let dirs: Vec<&Path> = by_index.iter().map(|s| s.dir.as_path()).collect();
    concat_journals(&dirs, &dir.journal())?;
    manifest
        .write(&dir.root)
        .map_err(|e| io(&dir.path(MANIFEST), e))?;
    let wall = started.elapsed().as_secs_f64();
    let _ = dir.log_session(&serde_json::json!({
        "command": "merge",
        "wall_seconds": wall,
        "status": status.as_string(),
        "shards": by_index.iter().map(|s| s.dir.display().to_string()).collect::<Vec<_>>(),
        "units_done": total,
        "attempts": attempts_total,
        "model_calls": 0,
    }));
    Ok(Merged {
        out: dir.root.clone(),
        summary,
        shards: count,
        units: total,
        attempts: attempts_total,
        wall_seconds: wall,
    })
}

/// The journals (`journal.jsonl`) of the shard directories `shards`, one after another
/// under one header, into `to` ([`gauntlet_job::shard::concat_journals`]).
pub fn concat_journals(shards: &[&Path], to: &Path) -> Result<(), StoredError> {
    gauntlet_job::shard::concat_journals(shards, to).map_err(|e| err(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_job::kind::Kind;

    #[test]
    fn a_shard_recorded_as_another_kind_is_refused_by_its_record() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        std::fs::write(dir.join("run.json"), b"{\"shard\": {\"index\": 0}}\n").unwrap();
        std::fs::write(dir.join("rescore.json"), b"{}\n").unwrap();
        let mut m = Manifest::new(Kind::Rescore, "r", "complete");
        m.record_file(dir, "run.json").unwrap();
        m.write(dir).unwrap();
        let e = open_shard(dir).err().expect("refused").to_string();
        assert!(
            e.contains("its manifest.json records a rescore, not a shard of a red-team run"),
            "{e}"
        );
        // Recorded as a run, the same directory is read as one (and then found to be
        // an incomplete shard record).
        let mut m = Manifest::new(Kind::Run, "r", "complete");
        m.record_file(dir, "run.json").unwrap();
        m.write(dir).unwrap();
        let e = open_shard(dir).err().expect("refused").to_string();
        assert!(
            !e.contains("records a rescore") && e.contains("`shard.count` is not a shard number"),
            "{e}"
        );
    }
}

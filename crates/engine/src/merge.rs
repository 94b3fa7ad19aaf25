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

use crate::run::{RunArtefacts, Status, Tally, run_json, write_run_artefacts};
use crate::shard::shown;
use crate::shard::{PARTITION_SCHEME, Shard};
use crate::stored::{ParsedLine, StoredError, StoredRun};
use crate::usage::{CellUsage, Slot};
use gauntlet_calls::cache::RoleUsage;
use gauntlet_core::files::{self, Kind, ReadError, TRANSCRIPT_LINE_MAX};
use gauntlet_job::manifest::VerifyError;
use gauntlet_job::rundir::{HashingWriter, MANIFEST, Manifest, RunDir, tmp_path};
use gauntlet_job::shard::{JournalError, SetError};
use gauntlet_results::RunSummary;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why shard directories could not be merged into one run directory. Every message
/// names the directory or file at fault and, where there is one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no shard directories given: gauntlet merge SHARD_DIR… --out DIR")]
    NoShards,
    /// A shard directory does not verify against its manifest.
    #[error(
        "shard {}: {source}\n    help: a shard without a whole manifest was interrupted or changed; rerun its `gauntlet run CONFIG --shard i/N` (it resumes), then merge",
        .dir.display()
    )]
    Unverified {
        dir: PathBuf,
        #[source]
        source: VerifyError,
    },
    /// The directory's manifest records another kind of directory than a run's.
    #[error(
        "{}: its {MANIFEST} records {}, not a shard of a red-team run: merge takes the directories `gauntlet run CONFIG --shard i/N` writes (<run_name>.shard-<i>-of-<N>)",
        .dir.display(),
        .recorded.describe()
    )]
    OtherKind {
        dir: PathBuf,
        recorded: gauntlet_job::kind::Kind,
    },
    /// The shard's manifest lists no run.json.
    #[error("{}: its {MANIFEST} lists no run.json: not a run directory", .dir.display())]
    NoRunJson { dir: PathBuf },
    /// The shard's manifest lists no transcripts.jsonl or shard_usage.json.
    #[error("{}: its {MANIFEST} lists no {file}: not a whole shard directory", .dir.display())]
    NotWhole { dir: PathBuf, file: &'static str },
    /// A shard's file cannot be read (missing, too large, not a regular file).
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{}: not a gauntlet run.json: {source}", .path.display())]
    NotRunJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A run directory that is not a shard.
    #[error(
        "{}: not a shard (its run.json has no `shard`): merge takes the directories `gauntlet run CONFIG --shard i/N` writes (<run_name>.shard-<i>-of-<N>)",
        .path.display()
    )]
    NotAShard { path: PathBuf },
    /// `shard.index` or `shard.count` of run.json is not a shard number.
    #[error("{}: `shard.{key}` is not a shard number", .path.display())]
    ShardNumber { path: PathBuf, key: &'static str },
    #[error("{}: shard {shard} is out of range", .path.display())]
    OutOfRange { path: PathBuf, shard: Shard },
    /// The shard was cut by another partition scheme (`partition`, as run.json has it).
    #[error(
        "{}: shard {shard} was cut by partition `{partition}`; this gauntlet merges `{PARTITION_SCHEME}`: run the shards and the merge with one gauntlet version",
        .path.display()
    )]
    Partition {
        path: PathBuf,
        shard: Shard,
        partition: String,
    },
    /// The shard did not finish.
    #[error(
        "shard {shard} in {} is incomplete (status `{status}`): rerun `gauntlet run CONFIG --shard {shard}` with the same --runs-dir to finish it (finished calls are replayed), then merge",
        .dir.display()
    )]
    Incomplete {
        shard: Shard,
        dir: PathBuf,
        status: String,
    },
    /// The directories are not the N shards of one run.
    #[error(transparent)]
    Set(#[from] SetError),
    /// A shard's shard_usage.json is not what a shard writes.
    #[error("{}: {problem}", .path.display())]
    Usage {
        path: PathBuf,
        problem: UsageProblem,
    },
    /// The run cannot be read back from the shards (its plan, its transcript lines).
    #[error(transparent)]
    Stored(#[from] StoredError),
    /// A shard's last transcript line has no newline.
    #[error("{}:{line}: the last line is cut short", .path.display())]
    CutShort { path: PathBuf, line: u64 },
    /// A transcript line out of the canonical order, or of another shard's unit.
    #[error(
        "{}:{line}: a line of unit {unit} out of canonical order, or of another shard's units; was this shard cut by another partition or edited?",
        .path.display()
    )]
    OutOfOrder { path: PathBuf, line: u64, unit: u64 },
    #[error(
        "{}:{line}: a line after the shard's last unit (out of canonical order?)",
        .path.display()
    )]
    AfterLast { path: PathBuf, line: u64 },
    #[error(
        "--out {} is the shard directory {}: merge into a directory of its own",
        .out.display(),
        .shard_dir.display()
    )]
    OutIsShard { out: PathBuf, shard_dir: PathBuf },
    /// The shards' run id is not the one their config rebuilds to.
    #[error(
        "{}: the shard records run id {recorded} but its config rebuilds as {rebuilt}",
        .dir.display()
    )]
    RunId {
        dir: PathBuf,
        recorded: String,
        rebuilt: String,
    },
    /// A shard holds another number of units than this build's partition gives it
    /// (`holds`: what its run.json says, if it says).
    #[error(
        "shard {shard} in {}: holds {} unit(s) but this gauntlet's partition gives it {expected}; shards must be cut by the gauntlet that merges them",
        .dir.display(),
        .holds.map_or("an unknown number of".into(), |n| n.to_string())
    )]
    UnitCount {
        shard: Shard,
        dir: PathBuf,
        holds: Option<u64>,
        expected: u64,
    },
    #[error("--out {}: not a directory name", .out.display())]
    OutName { out: PathBuf },
    #[error("cannot open {}: {source}", .out.display())]
    OpenOut {
        out: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `--out` holds a run of another config (`run_id`, as its run.json has it).
    #[error(
        "--out {} holds another run ({run_id}): merge into an empty directory or one holding an earlier merge of this run",
        .out.display()
    )]
    OutHoldsOther { out: PathBuf, run_id: String },
    /// The shards' journals could not be put together.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// What is wrong with a shard's shard_usage.json ([`MergeError::Usage`]).
#[derive(Debug, thiserror::Error)]
pub enum UsageProblem {
    #[error("not JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error("no `usage` list")]
    NoList,
    #[error("a usage count is not a whole number")]
    NotACount,
    #[error(
        "usage of cell {cell}, trial {trial}, but the run has {cells} cells and {trials} trial(s)"
    )]
    OutOfRange {
        cell: usize,
        trial: usize,
        cells: usize,
        trials: usize,
    },
    #[error("a usage row has not {} role slots", Slot::ALL.len())]
    Slots,
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
fn open_shard(dir: &Path) -> Result<ShardDir, MergeError> {
    let manifest = Manifest::verify(dir).map_err(|source| MergeError::Unverified {
        dir: dir.to_path_buf(),
        source,
    })?;
    if let Some(kind) = manifest.kind
        && kind != gauntlet_job::kind::Kind::Run
    {
        return Err(MergeError::OtherKind {
            dir: dir.to_path_buf(),
            recorded: kind,
        });
    }
    let path = dir.join("run.json");
    if !manifest.files.contains_key("run.json") {
        return Err(MergeError::NoRunJson {
            dir: dir.to_path_buf(),
        });
    }
    let bytes = files::read(&path, Kind::RUN_METADATA)?;
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|source| MergeError::NotRunJson {
            path: path.clone(),
            source,
        })?;
    let s = &v["shard"];
    if s.is_null() {
        return Err(MergeError::NotAShard { path });
    }
    let num = |key: &'static str| {
        s[key]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| MergeError::ShardNumber {
                path: path.clone(),
                key,
            })
    };
    let shard = Shard {
        index: num("index")?,
        count: num("count")?,
    };
    if shard.count == 0 || shard.index >= shard.count {
        return Err(MergeError::OutOfRange { path, shard });
    }
    if s["partition"] != PARTITION_SCHEME {
        return Err(MergeError::Partition {
            path,
            shard,
            partition: shown(&s["partition"]),
        });
    }
    for file in ["transcripts.jsonl", "shard_usage.json"] {
        if !manifest.files.contains_key(file) {
            return Err(MergeError::NotWhole {
                dir: dir.to_path_buf(),
                file,
            });
        }
    }
    let status = shown(&v["status"]);
    // A shard that ran every unit and measured too little (`failed: …`) is whole: the
    // merged run decides on the totals.
    if !Status::parse(&status).ran_to_end() {
        return Err(MergeError::Incomplete {
            shard,
            dir: dir.to_path_buf(),
            status,
        });
    }
    Ok(ShardDir {
        dir: dir.to_path_buf(),
        shard,
        run_json: v,
    })
}

/// Refuses shards of different runs, naming the shard that differs and how (and which
/// config keys differ when the configs do), a shard given twice and missing shards.
fn check_same_run(shards: &[ShardDir]) -> Result<(), MergeError> {
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
    })?;
    Ok(())
}

/// Reads a shard's shard_usage.json into per-(cell, trial) usage.
fn read_usage(
    dir: &Path,
    cells: usize,
    trials: usize,
) -> Result<Vec<(usize, usize, CellUsage)>, MergeError> {
    let path = dir.join("shard_usage.json");
    let bytes = files::read(&path, Kind::RUN_METADATA)?;
    let bad = |problem: UsageProblem| MergeError::Usage {
        path: path.clone(),
        problem,
    };
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(UsageProblem::Json(e)))?;
    let rows = v["usage"]
        .as_array()
        .ok_or_else(|| bad(UsageProblem::NoList))?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let n = |x: &serde_json::Value| x.as_u64().ok_or_else(|| bad(UsageProblem::NotACount));
        let cell = n(&r[0])? as usize;
        let trial = n(&r[1])? as usize;
        if cell >= cells || trial >= trials {
            return Err(bad(UsageProblem::OutOfRange {
                cell,
                trial,
                cells,
                trials,
            }));
        }
        let slots = r[2]
            .as_array()
            .filter(|a| a.len() == Slot::ALL.len())
            .ok_or_else(|| bad(UsageProblem::Slots))?;
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
    fn open(run: &'a StoredRun, s: &ShardDir) -> Result<Self, MergeError> {
        let path = s.dir.join("transcripts.jsonl");
        let f = files::open(&path, Kind::TRANSCRIPTS)?;
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
    fn advance(&mut self) -> Result<(), MergeError> {
        let mut buf = Vec::new();
        let n = files::read_line_capped(&mut self.lines, &mut buf, TRANSCRIPT_LINE_MAX).map_err(
            |source| StoredError::ReadLine {
                path: self.path.clone(),
                line: self.line_no + 1,
                source,
            },
        )?;
        if n == 0 {
            self.held = None;
            return Ok(());
        }
        self.line_no += 1;
        if buf.last() != Some(&b'\n') {
            return Err(MergeError::CutShort {
                path: self.path.clone(),
                line: self.line_no,
            });
        }
        let text =
            std::str::from_utf8(&buf[..buf.len() - 1]).map_err(|_| StoredError::NotUtf8 {
                path: self.path.clone(),
                line: self.line_no,
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
) -> Result<Merged, MergeError> {
    let started = Instant::now();
    if shard_dirs.is_empty() {
        return Err(MergeError::NoShards);
    }
    for d in shard_dirs {
        if crate::stored::same_dir(out, d) {
            return Err(MergeError::OutIsShard {
                out: out.to_path_buf(),
                shard_dir: d.clone(),
            });
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
        return Err(MergeError::RunId {
            dir: shards[0].dir.clone(),
            recorded: whole_id,
            rebuilt: plan.run_id.clone(),
        });
    }
    let owner = crate::shard::assignment(plan, trials as u32, count);
    let mut by_index: Vec<&ShardDir> = shards.iter().collect();
    by_index.sort_by_key(|s| s.shard.index);
    for s in &by_index {
        let expect = owner.iter().filter(|&&o| o == s.shard.index).count() as u64;
        let got = s.run_json["shard"]["units"].as_u64();
        if got != Some(expect) {
            return Err(MergeError::UnitCount {
                shard: s.shard,
                dir: s.dir.clone(),
                holds: got,
                expected: expect,
            });
        }
    }

    // The output: a run directory like any other (locked; stale temporaries removed).
    let parent = out.parent().unwrap_or(Path::new(""));
    let name = out.file_name().ok_or_else(|| MergeError::OutName {
        out: out.to_path_buf(),
    })?;
    let dir =
        RunDir::open(parent, &name.to_string_lossy()).map_err(|source| MergeError::OpenOut {
            out: out.to_path_buf(),
            source,
        })?;
    if let Ok(bytes) = files::read(&dir.path("run.json"), Kind::RUN_METADATA) {
        let old: gauntlet_results::RunRecord = serde_json::from_slice(&bytes).unwrap_or_default();
        if old.run_id != plan.run_id {
            return Err(MergeError::OutHoldsOther {
                out: out.to_path_buf(),
                run_id: match old.run_id.as_str() {
                    "" => "absent".into(),
                    id => id.into(),
                },
            });
        }
    }
    dir.begin_session().map_err(|source| StoredError::Remove {
        path: dir.path(MANIFEST),
        source,
    })?;

    let mut tally = Tally::new(plan, trials);
    for s in &by_index {
        for (cell, trial, u) in read_usage(&s.dir, plan.cells(), trials)? {
            tally.add_usage(cell, trial, u);
        }
    }
    let transcripts_path = dir.path("transcripts.jsonl");
    let transcripts_tmp = tmp_path(&transcripts_path);
    let io = |p: &Path, source: std::io::Error| StoredError::Write {
        path: p.to_path_buf(),
        source,
    };
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
            return Err(MergeError::OutOfOrder {
                path: r.path.clone(),
                line: r.line_no,
                unit: *at,
            });
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
            return Err(MergeError::AfterLast {
                path: r.path.clone(),
                line: r.line_no,
            });
        }
    }
    drop(readers);
    let (file, transcripts_entry) = w.finish().map_err(|e| io(&transcripts_tmp, e))?;
    drop(file);
    gauntlet_core::atomic::check_replaceable(&transcripts_path)
        .and_then(|()| std::fs::rename(&transcripts_tmp, &transcripts_path))
        .map_err(|e| io(&transcripts_path, e))?;

    let mut status = Status::Complete;
    let (mut summary, usage_rows) = tally.finish(plan, &run.trial_seeds, &status);
    crate::run::measured::settle(&mut summary, &mut status, plan.config.max_error_share);
    let manifest = write_run_artefacts(
        &dir.root,
        RunArtefacts {
            run_id: &plan.run_id,
            status: &status,
            transcripts: transcripts_entry,
            summary: &summary,
            usage: &usage_rows,
            shard_usage: None,
            run_json: run_json(plan, &status, total, attempts_total),
        },
    )?;
    let dirs: Vec<&Path> = by_index.iter().map(|s| s.dir.as_path()).collect();
    concat_journals(&dirs, &dir.journal())?;
    manifest.finish().map_err(StoredError::from)?;
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
pub fn concat_journals(shards: &[&Path], to: &Path) -> Result<(), MergeError> {
    gauntlet_job::shard::concat_journals(shards, to)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::Shard;
    use gauntlet_job::kind::Kind;

    /// The messages built at Display time read as the strings they replace did.
    #[test]
    fn messages_are_the_ones_the_strings_were() {
        let count = |holds| {
            MergeError::UnitCount {
                shard: Shard { index: 1, count: 2 },
                dir: "runs/x.shard-1-of-2".into(),
                holds,
                expected: 7,
            }
            .to_string()
        };
        assert_eq!(
            count(None),
            "shard 1/2 in runs/x.shard-1-of-2: holds an unknown number of unit(s) but this gauntlet's partition gives it 7; shards must be cut by the gauntlet that merges them"
        );
        assert!(count(Some(6)).contains(": holds 6 unit(s) but"));
        let e = MergeError::Usage {
            path: "s/shard_usage.json".into(),
            problem: UsageProblem::Slots,
        };
        assert_eq!(
            e.to_string(),
            format!(
                "s/shard_usage.json: a usage row has not {} role slots",
                crate::usage::Slot::ALL.len()
            )
        );
    }

    #[test]
    fn a_shard_recorded_as_another_kind_is_refused_by_its_record() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        std::fs::write(dir.join("run.json"), b"{\"shard\": {\"index\": 0}}\n").unwrap();
        std::fs::write(dir.join("rescore.json"), b"{}\n").unwrap();
        let mut m = Manifest::new(Kind::Rescore, "r", "complete");
        m.record_file(dir, "run.json").unwrap();
        m.write(dir).unwrap();
        let e = open_shard(dir).err().expect("refused");
        assert!(
            matches!(
                e,
                MergeError::OtherKind {
                    recorded: Kind::Rescore,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(
            e.contains("its manifest.json records a rescore, not a shard of a red-team run"),
            "{e}"
        );
        // Recorded as a run, the same directory is read as one (and then found to be
        // an incomplete shard record).
        let mut m = Manifest::new(Kind::Run, "r", "complete");
        m.record_file(dir, "run.json").unwrap();
        m.write(dir).unwrap();
        let e = open_shard(dir).err().expect("refused");
        assert!(
            matches!(e, MergeError::ShardNumber { key: "count", .. }),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .contains("`shard.count` is not a shard number"),
            "{e}"
        );
    }
}

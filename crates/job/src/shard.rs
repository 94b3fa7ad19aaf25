//! Shards: one job (a red-team run, an agent exam, a detect exam) cut into N parts that
//! separate machines run (`--shard i/N`) and `gauntlet merge` puts back together.
//!
//! What every kind of shard shares lives here: the `i/N` a command line names
//! ([`Shard`]), the check that a set of shard directories is the N shards of one job
//! ([`check_set`], naming the shard that differs, the one given twice and the missing
//! ones), reading a shard's record behind its manifest ([`open_record`]) and putting the
//! shards' journals back together ([`concat_journals`]). How each job is cut and merged
//! lives with the job: the engine's `shard.rs` and `merge.rs` for runs, the exam crate's
//! `shard` module for both exams.

use std::fmt;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// One shard of a job: `index` of `count`, 0-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// The most shards a job can be cut into.
pub const MAX_SHARDS: u32 = 100_000;

/// What `--shard` should look like, said after every [`ParseShardError`].
const SHARD_HELP: &str =
    "write --shard i/N with 0 ≤ i < N (0-based, e.g. --shard 0/4 … --shard 3/4)";

/// Why a `--shard` value is not a shard; each message quotes the value and ends with
/// the form to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseShardError {
    #[error("`{given}` is not of the form i/N; {SHARD_HELP}")]
    Form { given: String },
    /// `part` is `index` or `count`.
    #[error("`{given}`: the shard {part} `{text}` is not a whole number; {SHARD_HELP}")]
    NotANumber {
        given: String,
        part: &'static str,
        text: String,
    },
    #[error("`{given}`: the shard {part} `{text}` is too large; {SHARD_HELP}")]
    TooLarge {
        given: String,
        part: &'static str,
        text: String,
    },
    #[error("`{given}`: a run cannot be cut into 0 shards; N is at least 1 ({SHARD_HELP})")]
    NoShards { given: String },
    #[error("`{given}`: at most {MAX_SHARDS} shards; {SHARD_HELP}")]
    TooMany { given: String },
    #[error(
        "`{given}`: shard index {index} is out of range for {count} shard(s): indexes are 0-based, 0 to {}; {SHARD_HELP}",
        count - 1
    )]
    OutOfRange {
        given: String,
        index: u32,
        count: u32,
    },
}

impl std::str::FromStr for Shard {
    type Err = ParseShardError;

    /// Parses `i/N` (0-based `i`, as Slurm's `SLURM_ARRAY_TASK_ID` and Kubernetes'
    /// `JOB_COMPLETION_INDEX` count).
    fn from_str(s: &str) -> Result<Shard, ParseShardError> {
        let given = || s.to_string();
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| ParseShardError::Form { given: given() })?;
        let num = |part: &'static str, t: &str| -> Result<u32, ParseShardError> {
            let t = t.trim();
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ParseShardError::NotANumber {
                    given: given(),
                    part,
                    text: t.to_string(),
                });
            }
            t.parse::<u32>().map_err(|_| ParseShardError::TooLarge {
                given: given(),
                part,
                text: t.to_string(),
            })
        };
        let (index, count) = (num("index", i)?, num("count", n)?);
        if count == 0 {
            return Err(ParseShardError::NoShards { given: given() });
        }
        if count > MAX_SHARDS {
            return Err(ParseShardError::TooMany { given: given() });
        }
        if index >= count {
            return Err(ParseShardError::OutOfRange {
                given: given(),
                index,
                count,
            });
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The shard's run directory name under the runs directory: `<run_name>.shard-<i>-of-<N>`,
    /// so the shards of one run can share a runs directory (a shared volume) without
    /// colliding with each other or with a one-machine run.
    pub fn dir_name(&self, run_name: &str) -> String {
        format!("{run_name}.shard-{}-of-{}", self.index, self.count)
    }

    /// The shard's run id: the whole run's, suffixed, so a dashboard never mistakes a
    /// shard for the whole run.
    pub fn run_id(&self, whole: &str) -> String {
        format!("{whole}~shard-{}-of-{}", self.index, self.count)
    }
}

/// A shard directory as a merge checks it: which shard it is, where it is, and the JSON
/// that records what it is a shard of (run.json, an exam's shard record).
pub struct Member<'a> {
    pub shard: Shard,
    pub dir: &'a Path,
    pub meta: &'a serde_json::Value,
}

/// How one kind of shard set is checked and named in errors.
pub struct SetRules<'a> {
    /// What a shard is called: "shard", "exam shard", "detect-exam shard".
    pub noun: &'a str,
    /// What the shards are shards of: "run", "exam".
    pub whole: &'a str,
    /// What every shard must agree on: (what it is, JSON pointer into `meta`).
    pub same: &'a [(&'a str, &'a str)],
    /// The help line under "not of the same …".
    pub help: &'a str,
    /// The command that makes shard `i` of `N`, shown for missing shards.
    pub command: &'a str,
}

/// Why a set of shard directories is not the N shards of one job. Each variant names
/// the shard(s) at fault; `noun` is [`SetRules::noun`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    /// No shard directory was given.
    #[error("no {noun} given")]
    Empty { noun: String },
    /// A shard is not of the same job as the first one given.
    #[error("{0}")]
    Differs(Box<Mismatch>),
    /// `shard`'s index is not below the set's shard count.
    #[error("{noun} {shard} is out of range")]
    OutOfRange { noun: String, shard: Shard },
    /// `shard` is given twice, in `first` and in `second`.
    #[error(
        "{noun} {shard} is given twice: {} and {}; give each shard 0..{count} once",
        first.display(),
        second.display()
    )]
    Twice {
        noun: String,
        shard: Shard,
        count: u32,
        first: PathBuf,
        second: PathBuf,
    },
    /// The shards `missing` (of `count`) were not given; `command` makes one.
    #[error(
        "missing {noun}(s) {} of {count}: run `{command}` for each and pass every shard directory",
        missing.iter().map(Shard::to_string).collect::<Vec<_>>().join(", ")
    )]
    Missing {
        noun: String,
        missing: Vec<Shard>,
        count: u32,
        command: String,
    },
}

/// A shard of another job than the first shard given: `shard` (in `dir`) differs from
/// `first` (in `first_dir`); each of `differences` reads `<what> <its value> vs <first's
/// value>`; `explained` is the job's own note on them (may be empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{noun} {shard} in {} is not of the same {whole} as shard {first} in {}: {}{explained}\n    help: {help}",
    dir.display(),
    first_dir.display(),
    differences.join("; ")
)]
pub struct Mismatch {
    pub noun: String,
    pub whole: String,
    pub shard: Shard,
    pub dir: PathBuf,
    pub first: Shard,
    pub first_dir: PathBuf,
    pub differences: Vec<String>,
    pub explained: String,
    pub help: String,
}

/// Refuses a set of shard directories that are not the N shards of one job, with an
/// error that names the shard: one that differs from the first (what differs, plus
/// `explain(first, other)`), a shard given twice, the shards missing.
pub fn check_set(
    members: &[Member],
    rules: &SetRules,
    explain: impl Fn(&serde_json::Value, &serde_json::Value) -> String,
) -> Result<(), SetError> {
    let Some(first) = members.first() else {
        return Err(SetError::Empty {
            noun: rules.noun.into(),
        });
    };
    for other in &members[1..] {
        let differences: Vec<String> = rules
            .same
            .iter()
            .filter_map(|(what, at)| {
                let (a, b) = (first.meta.pointer(at), other.meta.pointer(at));
                (a != b).then(|| format!("{what} {} vs {}", shown_opt(b), shown_opt(a)))
            })
            .collect();
        if !differences.is_empty() {
            return Err(SetError::Differs(Box::new(Mismatch {
                noun: rules.noun.into(),
                whole: rules.whole.into(),
                shard: other.shard,
                dir: other.dir.to_path_buf(),
                first: first.shard,
                first_dir: first.dir.to_path_buf(),
                differences,
                explained: explain(first.meta, other.meta),
                help: rules.help.into(),
            })));
        }
    }
    let n = first.shard.count;
    let mut seen: Vec<Option<&Path>> = vec![None; n as usize];
    for m in members {
        let Some(slot) = seen.get_mut(m.shard.index as usize) else {
            return Err(SetError::OutOfRange {
                noun: rules.noun.into(),
                shard: m.shard,
            });
        };
        if let Some(prev) = slot.replace(m.dir) {
            return Err(SetError::Twice {
                noun: rules.noun.into(),
                shard: m.shard,
                count: n,
                first: prev.to_path_buf(),
                second: m.dir.to_path_buf(),
            });
        }
    }
    let missing: Vec<Shard> = (0..n)
        .filter(|&i| seen[i as usize].is_none())
        .map(|index| Shard { index, count: n })
        .collect();
    if !missing.is_empty() {
        return Err(SetError::Missing {
            noun: rules.noun.into(),
            missing,
            count: n,
            command: rules.command.replace("{n}", &n.to_string()),
        });
    }
    Ok(())
}

/// Why a shard's record or one of its JSON files could not be read. Every variant
/// names the file or directory.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The directory's manifest is missing or does not match its files: the shard was
    /// interrupted or changed since it finished.
    #[error("{noun} {}: {source}\n    help: {help}", dir.display())]
    Unverified {
        noun: String,
        dir: PathBuf,
        help: String,
        #[source]
        source: Box<crate::manifest::VerifyError>,
    },
    #[error(transparent)]
    Read(#[from] gauntlet_core::files::ReadError),
    #[error("{}: not JSON: {source}", path.display())]
    NotJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The directory's manifest records another kind of directory than the shard asked
    /// for (`gauntlet merge` given, say, an agent-exam shard among detect-exam shards).
    #[error(
        "{noun} {}: its {} records {}, not {}\n    help: {help}",
        dir.display(),
        crate::manifest::MANIFEST,
        recorded.describe(),
        wanted.describe()
    )]
    OtherKind {
        noun: String,
        dir: PathBuf,
        recorded: crate::kind::Kind,
        wanted: crate::kind::Kind,
        help: String,
    },
    /// The record's `shard.index` or `shard.count` is absent or not a number.
    #[error("{}: `shard.{key}` is not a number", path.display())]
    NoShard { path: PathBuf, key: &'static str },
}

/// Opens the record of an exam shard of kind `kind`: verifies `dir`'s manifest (a shard
/// without a whole one was interrupted or changed; the error is `{noun} DIR: …` followed
/// by `help`) and that it records `kind` when it records one (an older gauntlet's
/// records none), reads the JSON file `record` in it and that file's `shard.index` and
/// `shard.count`.
pub fn open_record(
    dir: &Path,
    record: &str,
    kind: crate::kind::Kind,
    noun: &str,
    help: &str,
) -> Result<(Shard, serde_json::Value), RecordError> {
    let manifest =
        crate::manifest::Manifest::verify(dir).map_err(|source| RecordError::Unverified {
            noun: noun.to_string(),
            dir: dir.to_path_buf(),
            help: help.to_string(),
            source: Box::new(source),
        })?;
    if let Some(recorded) = manifest.kind
        && recorded != kind
    {
        return Err(RecordError::OtherKind {
            noun: noun.to_string(),
            dir: dir.to_path_buf(),
            recorded,
            wanted: kind,
            help: help.to_string(),
        });
    }
    let path = dir.join(record);
    let meta = read_json(&path)?;
    let num = |key: &'static str| {
        meta["shard"][key]
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| RecordError::NoShard {
                path: path.clone(),
                key,
            })
    };
    let shard = Shard {
        index: num("index")?,
        count: num("count")?,
    };
    Ok((shard, meta))
}

/// Reads a JSON file of a shard directory (capped like any results file).
pub fn read_json(p: &Path) -> Result<serde_json::Value, RecordError> {
    let b = gauntlet_core::files::read(p, gauntlet_core::files::Kind::RESULTS)?;
    serde_json::from_slice(&b).map_err(|source| RecordError::NotJson {
        path: p.to_path_buf(),
        source,
    })
}

/// A JSON value as an error shows it: strings bare, absent as "absent".
pub fn shown(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "absent".into(),
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

fn shown_opt(v: Option<&serde_json::Value>) -> String {
    v.map_or_else(|| "absent".into(), shown)
}

/// Why the shards' journals could not be put together. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A shard's journal header differs from the first shard's.
    #[error(
        "{}: a journal of another format than the other shards' (another gauntlet version?)",
        path.display()
    )]
    OtherFormat { path: PathBuf },
}

/// The journals (`journal.jsonl`) of the shard directories `shards`, one after another
/// under one header, into `to` (written to a temporary file and renamed). Their keys
/// are disjoint but for calls two units share, which hold the same response; a torn
/// last line is left out. Shards without a journal are skipped.
pub fn concat_journals(shards: &[&Path], to: &Path) -> Result<(), JournalError> {
    let tmp = gauntlet_core::atomic::tmp_path(to);
    let io = |p: &Path, source: std::io::Error| JournalError::Write {
        path: p.to_path_buf(),
        source,
    };
    let read = |p: &Path, source: std::io::Error| JournalError::Read {
        path: p.to_path_buf(),
        source,
    };
    gauntlet_core::atomic::check_replaceable(to).map_err(|e| io(to, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(|e| io(&tmp, e))?);
    let mut header: Option<Vec<u8>> = None;
    let mut line = Vec::new();
    for s in shards {
        let path = s.join("journal.jsonl");
        let f = match gauntlet_core::files::open_if_exists(
            &path,
            gauntlet_core::files::Kind::JOURNAL,
        ) {
            Ok(Some(f)) => f,
            Ok(None) => continue,
            Err(e) => return Err(read(&path, e.into_io())),
        };
        let mut r = BufReader::with_capacity(1 << 20, f);
        let mut first = true;
        loop {
            line.clear();
            let n = gauntlet_core::files::read_line_capped(
                &mut r,
                &mut line,
                gauntlet_core::files::TRANSCRIPT_LINE_MAX,
            )
            .map_err(|e| read(&path, e))?;
            if n == 0 || line.last() != Some(&b'\n') {
                break;
            }
            if first {
                first = false;
                match &header {
                    None => {
                        w.write_all(&line).map_err(|e| io(&tmp, e))?;
                        header = Some(line.clone());
                    }
                    Some(h) if *h == line => {}
                    Some(_) => return Err(JournalError::OtherFormat { path }),
                }
                continue;
            }
            w.write_all(&line).map_err(|e| io(&tmp, e))?;
        }
    }
    w.flush().map_err(|e| io(&tmp, e))?;
    drop(w);
    if header.is_none() {
        // No shard had a journal (nothing was called): neither has the merge.
        return std::fs::remove_file(&tmp).map_err(|e| io(&tmp, e));
    }
    std::fs::rename(&tmp, to).map_err(|e| io(to, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_set_names_the_odd_shard_the_twice_given_and_the_missing() {
        let meta = |h: &str| serde_json::json!({"h": h, "shard": {"count": 3}});
        let (a, b, c) = (meta("x"), meta("x"), meta("y"));
        let dir = Path::new;
        let m = |i, d, meta| Member {
            shard: Shard { index: i, count: 3 },
            dir: dir(d),
            meta,
        };
        let rules = SetRules {
            noun: "exam shard",
            whole: "exam",
            same: &[("identity", "/h"), ("absent key", "/nope")],
            help: "merge one exam",
            command: "gauntlet exam --shard i/{n}",
        };
        let none = |_: &serde_json::Value, _: &serde_json::Value| String::new();
        let e = check_set(&[m(0, "s0", &a), m(2, "s2", &c)], &rules, none).unwrap_err();
        assert!(
            matches!(&e, SetError::Differs(m) if m.shard.index == 2 && m.differences == ["identity y vs x"])
        );
        let e = e.to_string();
        assert!(
            e.starts_with(
                "exam shard 2/3 in s2 is not of the same exam as shard 0/3 in s0: identity y vs x"
            ) && e.ends_with("help: merge one exam"),
            "{e}"
        );
        let e = check_set(&[m(1, "s1", &a), m(1, "t1", &b)], &rules, none).unwrap_err();
        assert!(matches!(&e, SetError::Twice { shard, .. } if shard.index == 1));
        assert_eq!(
            e.to_string(),
            "exam shard 1/3 is given twice: s1 and t1; give each shard 0..3 once"
        );
        let e = check_set(&[m(1, "s1", &a)], &rules, none).unwrap_err();
        assert!(matches!(&e, SetError::Missing { missing, .. } if missing.len() == 2));
        assert_eq!(
            e.to_string(),
            "missing exam shard(s) 0/3, 2/3 of 3: run `gauntlet exam --shard i/3` for each and pass every shard directory"
        );
        let e = check_set(&[], &rules, none).unwrap_err();
        assert_eq!(e.to_string(), "no exam shard given");
        let all = [m(2, "s2", &a), m(0, "s0", &b), m(1, "s1", &a)];
        assert_eq!(check_set(&all, &rules, none), Ok(()));
    }

    #[test]
    fn a_differing_shard_says_what_differs_and_the_jobs_note() {
        let (a, b) = (
            serde_json::json!({"h": "x", "n": 2}),
            serde_json::json!({"h": "x", "n": 3}),
        );
        let m = |i, d, meta| Member {
            shard: Shard { index: i, count: 2 },
            dir: Path::new(d),
            meta,
        };
        let rules = SetRules {
            noun: "shard",
            whole: "run",
            same: &[("identity", "/h"), ("passes", "/n")],
            help: "merge one run",
            command: "gauntlet run --shard i/{n}",
        };
        let e = check_set(&[m(0, "a", &a), m(1, "b", &b)], &rules, |_, _| {
            " (a note)".into()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "shard 1/2 in b is not of the same run as shard 0/2 in a: passes 3 vs 2 (a note)\n    help: merge one run"
        );
    }

    #[test]
    fn parses_i_over_n_and_names_what_is_wrong() {
        assert_eq!("0/4".parse::<Shard>(), Ok(Shard { index: 0, count: 4 }));
        assert_eq!("3/4".parse::<Shard>(), Ok(Shard { index: 3, count: 4 }));
        assert_eq!("0/1".parse::<Shard>(), Ok(Shard { index: 0, count: 1 }));
        let err = |s: &str| s.parse::<Shard>().unwrap_err();
        let e = err("4/4");
        assert!(matches!(
            e,
            ParseShardError::OutOfRange {
                index: 4,
                count: 4,
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            format!(
                "`4/4`: shard index 4 is out of range for 4 shard(s): indexes are 0-based, 0 to 3; {SHARD_HELP}"
            )
        );
        let e = err("0/0");
        assert!(matches!(e, ParseShardError::NoShards { .. }));
        assert!(e.to_string().contains("0 shards"), "{e}");
        for bad in ["", "3", "a/4", "1/b", "-1/4", "1/4/5", "1.0/4", "/4", "1/"] {
            let e = err(bad).to_string();
            assert!(e.contains("--shard i/N"), "{bad}: {e}");
        }
        assert!(matches!(
            err("99999999999/4"),
            ParseShardError::TooLarge { part: "index", .. }
        ));
        assert!(err("99999999999/4").to_string().contains("too large"));
        assert!(matches!(err("0/100001"), ParseShardError::TooMany { .. }));
        assert!(err("0/100001").to_string().contains("at most"));
    }

    #[test]
    fn journals_are_concatenated_under_one_header_torn_lines_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("c"),
        );
        for d in [&a, &b, &c] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(a.join("journal.jsonl"), "H\n1\n2\n").unwrap();
        std::fs::write(b.join("journal.jsonl"), "H\n3\ntorn").unwrap();
        // c has no journal.
        let to = tmp.path().join("journal.jsonl");
        concat_journals(&[&a, &b, &c], &to).unwrap();
        assert_eq!(std::fs::read_to_string(&to).unwrap(), "H\n1\n2\n3\n");
        std::fs::write(b.join("journal.jsonl"), "G\n3\n").unwrap();
        let e = concat_journals(&[&a, &b], &to).unwrap_err();
        assert!(matches!(&e, JournalError::OtherFormat { path } if path.starts_with(&b)));
        assert!(e.to_string().contains("a journal of another format"), "{e}");
        // No journal anywhere: none written.
        let none = tmp.path().join("none.jsonl");
        concat_journals(&[&c], &none).unwrap();
        assert!(!none.exists());
    }
}

//! An exam described by a YAML file (`gauntlet exam --config FILE`).
//!
//! Why this exists: a real-mode exam is an expensive, repeatable experiment; like a run
//! config, a file states it whole — corpus, mode, passes, consensus, targets per tier,
//! budget, seed — so it can be reviewed, versioned and rerun (a rerun resumes). The
//! resolved exam's canonical identity is recorded in `exam.json` and its sha256 in
//! `report.json` (`exam_config_sha256`). Every key is optional (the CLI defaults
//! apply); unknown keys and wrong types are errors naming the file, the line and the
//! fix. Relative paths (`corpus`, `out`) are relative to the file's directory.
//!
//! ```yaml
//! corpus: exams/scenarios
//! mode: real                # golden | real | e2e
//! passes: 3
//! consensus: 3
//! tool_loop: false
//! seed: 7                   # request seed (consensus voter k sends seed + k)
//! max_queries: 5000         # calls that may reach a model; journal hits are free
//! concurrency: 8
//! out: exam-out
//! target: {name: openai_compat, params: {model: m, base_url: 'http://127.0.0.1:8080/v1'}}
//! tiers:                    # optional per-tier models
//!   deep: {name: openai_compat, params: {model: big, base_url: 'http://127.0.0.1:8080/v1'}}
//! ```

use crate::cascade::TierModels;
use gauntlet_core::tree::{Key, Node, Value, parse_yaml};
use std::path::{Path, PathBuf};

/// The exam mode (`--mode`, `mode:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExamMode {
    /// Replies scripted from each scenario's expected outcome (a pipeline check).
    Golden,
    /// The models of the target decide.
    Real,
    /// The agent passes plus the end-to-end pass (golden backend unless a target is
    /// given).
    E2e,
}

/// A parsed exam file: each setting it gives (`None`: not given).
#[derive(Clone, Default)]
pub struct ExamFile {
    pub corpus: Option<PathBuf>,
    pub mode: Option<ExamMode>,
    pub passes: Option<i64>,
    pub consensus: Option<usize>,
    pub tool_loop: Option<bool>,
    pub seed: Option<u64>,
    pub max_queries: Option<u64>,
    pub concurrency: Option<u32>,
    pub out: Option<PathBuf>,
    /// The tier models (`target`, `tiers`) and the label of the default target.
    pub targets: Option<(TierModels, String)>,
}

/// Why an exam file gives no exam.
#[derive(Debug, thiserror::Error)]
pub enum ExamFileError {
    #[error(transparent)]
    Read(#[from] gauntlet_core::files::ReadError),
    #[error("{origin}:{loc}: {message}; an exam file is a YAML mapping")]
    Yaml {
        origin: String,
        loc: String,
        message: String,
    },
    #[error("{origin}:{loc}: an exam file is a mapping of {KEYS}; found {found}")]
    NotAMapping {
        origin: String,
        loc: String,
        found: &'static str,
    },
    /// Every problem found, one per line.
    #[error("{}", join_lines(.0))]
    Invalid(Vec<Problem>),
}

/// One problem of an exam file.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// At `origin:line:col`: what is wrong with `key`, and the fix.
    #[error("{at}: {what}\n    at key: {key}\n    help: {help}")]
    At {
        at: String,
        key: String,
        what: String,
        help: String,
    },
    /// The `target` / `tiers` entries.
    #[error(transparent)]
    Target(#[from] crate::exam::TargetError),
}

fn join_lines(ps: &[Problem]) -> String {
    ps.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

const KEYS: &str = "corpus, mode, passes, consensus, tool_loop, seed, max_queries, concurrency, out, target, tiers";

impl ExamFile {
    /// Reads and validates `path`; building the targets reads their API keys.
    pub fn load(path: &Path) -> Result<ExamFile, ExamFileError> {
        let text = gauntlet_core::files::read_to_string(path, gauntlet_core::files::Kind::CONFIG)?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, &path.display().to_string(), base)
    }

    /// Parses an exam file's text; `origin` names it in errors, relative paths join `base`.
    /// Every problem is reported at once, one per line, in a run config's terms
    /// (`FILE:LINE:COL: KEY = VALUE is out of range`, then `at key:` and `help:`).
    pub fn parse(text: &str, origin: &str, base: &Path) -> Result<ExamFile, ExamFileError> {
        let root = parse_yaml(text).map_err(|e| ExamFileError::Yaml {
            origin: origin.to_string(),
            loc: e.loc.to_string(),
            message: e.message.clone(),
        })?;
        let Value::Map(entries) = &root.value else {
            return Err(ExamFileError::NotAMapping {
                origin: origin.to_string(),
                loc: root.loc.to_string(),
                found: root.value.kind(),
            });
        };
        let mut errs: Vec<Problem> = Vec::new();
        // Located at the value (as a run config's errors are), at the key when unknown.
        let diag_at = |loc: &dyn std::fmt::Display, k: &Key, what: &str, help: &str| Problem::At {
            at: format!("{origin}:{loc}"),
            key: k.name.clone(),
            what: what.to_string(),
            help: help.to_string(),
        };
        // An integer in `lo..=hi`, said as a run config says it.
        let int_in = |k: &Key, n: &Node, lo: i64, hi: i64, errs: &mut Vec<Problem>| {
            let help = match (lo, hi) {
                (i64::MIN, hi) => format!("expected an integer ≤ {hi} (0 or less: the default)"),
                (lo, i64::MAX) => format!("expected an integer ≥ {lo}"),
                (lo, hi) => format!("expected an integer in {lo}..={hi}"),
            };
            match n.value {
                Value::Int(i) if (lo..=hi).contains(&i) => Some(i),
                Value::Int(i) => {
                    errs.push(diag_at(
                        &n.loc,
                        k,
                        &format!("{} = {i} is out of range", k.name),
                        &help,
                    ));
                    None
                }
                _ => {
                    errs.push(diag_at(
                        &n.loc,
                        k,
                        &format!("{} is {}, not an integer", k.name, n.value.kind()),
                        &help,
                    ));
                    None
                }
            }
        };
        let path_of = |k: &Key, n: &Node, errs: &mut Vec<Problem>| match n.as_str() {
            Some(s) if !s.is_empty() => Some(base.join(s)),
            _ => {
                errs.push(diag_at(
                    &n.loc,
                    k,
                    &format!("{} is {}, not a path", k.name, n.value.kind()),
                    "give a directory path (relative to the exam file)",
                ));
                None
            }
        };
        let mut f = ExamFile::default();
        let mut target_entries: Vec<(Key, Node)> = Vec::new();
        for (k, v) in entries {
            match k.name.as_str() {
                "corpus" => f.corpus = path_of(k, v, &mut errs),
                "out" => f.out = path_of(k, v, &mut errs),
                "mode" => {
                    f.mode = match v.as_str() {
                        Some("golden") => Some(ExamMode::Golden),
                        Some("real") => Some(ExamMode::Real),
                        Some("e2e") => Some(ExamMode::E2e),
                        _ => {
                            errs.push(diag_at(
                                &v.loc,
                                k,
                                &format!("mode `{}` is not an exam mode", shown(v)),
                                "expected one of golden, real, e2e",
                            ));
                            None
                        }
                    }
                }
                // As --passes: 0 or less means the default, 3.
                "passes" => f.passes = int_in(k, v, i64::MIN, crate::grade::MAX_PASSES, &mut errs),
                "consensus" => {
                    f.consensus = int_in(k, v, 0, crate::cascade::MAX_CONSENSUS as i64, &mut errs)
                        .map(|n| n as usize);
                }
                "seed" => f.seed = int_in(k, v, 0, i64::MAX, &mut errs).map(|n| n as u64),
                "max_queries" => {
                    f.max_queries = int_in(k, v, 0, i64::MAX, &mut errs).map(|n| n as u64);
                }
                "concurrency" => f.concurrency = int_in(k, v, 1, 1024, &mut errs).map(|n| n as u32),
                "tool_loop" => {
                    f.tool_loop = match v.value {
                        Value::Bool(b) => Some(b),
                        _ => {
                            errs.push(diag_at(
                                &v.loc,
                                k,
                                &format!("tool_loop is {}, not a boolean", v.value.kind()),
                                "expected true or false",
                            ));
                            None
                        }
                    }
                }
                "target" | "tiers" => target_entries.push((k.clone(), v.clone())),
                _ => errs.push(diag_at(
                    &k.loc,
                    k,
                    &format!("unknown key `{}`", k.name),
                    &format!("an exam file may hold {KEYS}"),
                )),
            }
        }
        if let Some((k, _)) = target_entries.iter().find(|(k, _)| k.name == "tiers")
            && !target_entries.iter().any(|(k, _)| k.name == "target")
        {
            errs.push(diag_at(
                &k.loc,
                k,
                "per-tier models need a default (missing `target`)",
                "add `target: SPEC`",
            ));
        } else if !target_entries.is_empty() {
            let doc = Node {
                loc: root.loc,
                value: Value::Map(target_entries),
            };
            match crate::exam::parse_target_node(&doc, origin) {
                Ok(t) => f.targets = Some(t),
                Err(e) => errs.push(e.into()),
            }
        }
        if errs.is_empty() {
            Ok(f)
        } else {
            Err(ExamFileError::Invalid(errs))
        }
    }
}

/// A scalar as the file wrote it (for messages), or its kind.
fn shown(n: &Node) -> String {
    match &n.value {
        Value::Str(s) => gauntlet_core::terminal::safe(s).into_owned(),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Float(x) => x.to_string(),
        other => other.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ExamFile, String> {
        ExamFile::parse(text, "exam.yaml", Path::new("/base")).map_err(|e| e.to_string())
    }

    #[test]
    fn every_key_and_relative_paths() {
        let f = parse(
            "corpus: c\nmode: golden\npasses: 5\nconsensus: 1\ntool_loop: true\nseed: 7\nmax_queries: 10\nconcurrency: 2\nout: o\n",
        )
        .unwrap();
        assert_eq!(f.corpus, Some(PathBuf::from("/base/c")));
        assert_eq!(f.out, Some(PathBuf::from("/base/o")));
        assert_eq!(f.mode, Some(ExamMode::Golden));
        assert_eq!(
            (
                f.passes,
                f.consensus,
                f.tool_loop,
                f.seed,
                f.max_queries,
                f.concurrency
            ),
            (Some(5), Some(1), Some(true), Some(7), Some(10), Some(2))
        );
        assert!(f.targets.is_none());
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_key() {
        let e = parse("passes: 2\nbudget: 3\n").err().unwrap();
        assert!(e.starts_with("exam.yaml:2:"), "{e}");
        assert!(
            e.contains("unknown key `budget`") && e.contains("max_queries"),
            "{e}"
        );
        let e = parse("mode: fast\n").err().unwrap();
        assert!(
            e.contains("mode `fast` is not an exam mode") && e.contains("golden, real, e2e"),
            "{e}"
        );
        let e = parse("seed: -1\n").err().unwrap();
        assert!(e.contains("seed = -1 is out of range"), "{e}");
        let e = parse("- a\n").err().unwrap();
        assert!(e.contains("mapping"), "{e}");
        let e = parse("concurrency: 0\n").err().unwrap();
        assert!(e.contains("expected an integer in 1..=1024"), "{e}");
    }

    /// Every problem of the file at once, each in a run config's terms
    /// (`consensus = -1 is out of range`, not "a whole number ≥ 0, found an integer").
    #[test]
    fn every_error_is_reported_at_once_in_run_config_terms() {
        let e = parse("passes: 1000000\nconsensus: -1\nmax_queries: -2\nconcurrency: 0\nmode: bogus\nbudget: 3\n")
            .err()
            .unwrap();
        for want in [
            "exam.yaml:1:9: passes = 1000000 is out of range",
            "exam.yaml:2:12: consensus = -1 is out of range",
            "exam.yaml:3:14: max_queries = -2 is out of range",
            "exam.yaml:4:14: concurrency = 0 is out of range",
            "mode `bogus` is not an exam mode",
            "unknown key `budget`",
            "at key: consensus",
            "help: expected an integer in 1..=1024",
        ] {
            assert!(e.contains(want), "no {want:?} in:\n{e}");
        }
        assert!(!e.contains("found an integer"), "{e}");
        assert_eq!(
            e.lines().filter(|l| l.starts_with("exam.yaml:")).count(),
            6,
            "{e}"
        );
    }

    #[test]
    fn targets_resolve_like_the_target_flag() {
        let f = parse(
            "target: {name: openai_compat, params: {model: a, base_url: 'http://127.0.0.1:9/v1', api_key_env: PATH}}\ntiers: {deep: {name: openai_compat, params: {model: b, base_url: 'http://127.0.0.1:9/v1', api_key_env: PATH}}}\n",
        )
        .unwrap();
        let (m, _) = f.targets.unwrap();
        assert_eq!(m.triage.id, "a");
        assert_eq!(m.deep.id, "b");
        let e = parse("tiers: {deep: x}\n").err().unwrap();
        assert!(e.contains("missing `target`"), "{e}");
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text is an exam file or a located error; parsing never panics.
        #[test]
        fn never_panics(text in "[ -~\n]{0,200}") {
            let _ = ExamFile::parse(&text, "exam.yaml", Path::new("."));
        }

        /// Any top-level key outside the schema is refused by name.
        #[test]
        fn unknown_keys_are_named(key in "[a-z]{1,12}") {
            prop_assume!(!KEYS.split(", ").any(|k| k == key));
            let e = ExamFile::parse(&format!("{key}: 1\n"), "exam.yaml", Path::new(".")).err().unwrap().to_string();
            prop_assert!(e.contains(&format!("unknown key `{key}`")), "{}", e);
        }
    }
}

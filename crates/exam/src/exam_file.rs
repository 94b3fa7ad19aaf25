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

const KEYS: &str = "corpus, mode, passes, consensus, tool_loop, seed, max_queries, concurrency, out, target, tiers";

impl ExamFile {
    /// Reads and validates `path`; building the targets reads their API keys.
    pub fn load(path: &Path) -> Result<ExamFile, String> {
        let text = gauntlet_core::files::read_to_string(path, gauntlet_core::files::Kind::CONFIG)
            .map_err(|e| e.to_string())?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, &path.display().to_string(), base)
    }

    /// Parses an exam file's text; `origin` names it in errors, relative paths join `base`.
    pub fn parse(text: &str, origin: &str, base: &Path) -> Result<ExamFile, String> {
        let root = parse_yaml(text).map_err(|e| {
            format!(
                "{origin}:{}: {}; an exam file is a YAML mapping",
                e.loc, e.message
            )
        })?;
        let Value::Map(entries) = &root.value else {
            return Err(format!(
                "{origin}:{}: an exam file is a mapping of {KEYS}; found {}",
                root.loc,
                root.value.kind()
            ));
        };
        let at = |k: &Key, what: &str| format!("{origin}:{}: `{}`: {what}", k.loc, k.name);
        let uint = |k: &Key, n: &Node| -> Result<u64, String> {
            match n.value {
                Value::Int(i) if i >= 0 => Ok(i as u64),
                _ => Err(at(
                    k,
                    &format!("expected a whole number ≥ 0, found {}", n.value.kind()),
                )),
            }
        };
        let path_of = |k: &Key, n: &Node| -> Result<PathBuf, String> {
            match n.as_str() {
                Some(s) if !s.is_empty() => Ok(base.join(s)),
                _ => Err(at(k, &format!("expected a path, found {}", n.value.kind()))),
            }
        };
        let mut f = ExamFile::default();
        let mut target_entries: Vec<(Key, Node)> = Vec::new();
        for (k, v) in entries {
            match k.name.as_str() {
                "corpus" => f.corpus = Some(path_of(k, v)?),
                "out" => f.out = Some(path_of(k, v)?),
                "mode" => {
                    f.mode = Some(match v.as_str() {
                        Some("golden") => ExamMode::Golden,
                        Some("real") => ExamMode::Real,
                        Some("e2e") => ExamMode::E2e,
                        _ => return Err(at(k, "expected one of golden, real, e2e")),
                    })
                }
                "passes" => {
                    f.passes = Some(match v.value {
                        Value::Int(i) => i,
                        _ => {
                            return Err(at(
                                k,
                                &format!("expected a number, found {}", v.value.kind()),
                            ));
                        }
                    })
                }
                "consensus" => f.consensus = Some(uint(k, v)? as usize),
                "seed" => f.seed = Some(uint(k, v)?),
                "max_queries" => f.max_queries = Some(uint(k, v)?),
                "concurrency" => {
                    let n = uint(k, v)?;
                    if !(1..=1024).contains(&n) {
                        return Err(at(k, "expected 1 to 1024"));
                    }
                    f.concurrency = Some(n as u32);
                }
                "tool_loop" => {
                    f.tool_loop = Some(match v.value {
                        Value::Bool(b) => b,
                        _ => {
                            return Err(at(
                                k,
                                &format!("expected true or false, found {}", v.value.kind()),
                            ));
                        }
                    })
                }
                "target" | "tiers" => target_entries.push((k.clone(), v.clone())),
                _ => {
                    return Err(format!(
                        "{origin}:{}: unknown key `{}`; an exam file may hold {KEYS}",
                        k.loc, k.name
                    ));
                }
            }
        }
        if let Some((k, _)) = target_entries.iter().find(|(k, _)| k.name == "tiers")
            && !target_entries.iter().any(|(k, _)| k.name == "target")
        {
            return Err(at(
                k,
                "per-tier models need a default: add `target: SPEC` (missing `target`)",
            ));
        }
        if !target_entries.is_empty() {
            let doc = Node {
                loc: root.loc,
                value: Value::Map(target_entries),
            };
            f.targets = Some(crate::exam::parse_target_node(&doc, origin)?);
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ExamFile, String> {
        ExamFile::parse(text, "exam.yaml", Path::new("/base"))
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
            e.contains("`mode`: expected one of golden, real, e2e"),
            "{e}"
        );
        let e = parse("seed: -1\n").err().unwrap();
        assert!(e.contains("`seed`: expected a whole number"), "{e}");
        let e = parse("- a\n").err().unwrap();
        assert!(e.contains("mapping"), "{e}");
        let e = parse("concurrency: 0\n").err().unwrap();
        assert!(e.contains("1 to 1024"), "{e}");
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
            let e = ExamFile::parse(&format!("{key}: 1\n"), "exam.yaml", Path::new(".")).err().unwrap();
            prop_assert!(e.contains(&format!("unknown key `{key}`")), "{}", e);
        }
    }
}

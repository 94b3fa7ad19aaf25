//! An agent exam's settings, resolved: the command line's flags over the exam file
//! (`--config`), the corpus found and verified, the backend's models built, the price
//! table loaded — everything `gauntlet exam` needs before it runs, or a typed reason why
//! it cannot run.
//!
//! Why this exists: the CLI only parses and prints. Which setting wins (a flag or the
//! file), where the corpus comes from, when a target is needed, what is ignored and
//! what each refusal says are the exam's rules, so they live with the exam, where they
//! are tested without a process.

use crate::calls::{ExamCalls, OutClaim, SpineOptions};
use crate::cascade::{CascadeOptions, TierModels};
use crate::exam::{Backend, ExamConfig, exam_identity_bytes, parse_target};
use crate::exam_file::{ExamFile, ExamMode};
use crate::grade::effective_passes;
use gauntlet_calls::price::PriceTable;
use gauntlet_corpus::embedded::{CorpusSource, resolve_corpus};
use gauntlet_corpus::load::{Corpus, CorpusError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The corpus directory used when none is named, if it exists (else the reference
/// corpus embedded in the binary).
pub const DEFAULT_CORPUS_DIR: &str = "exams/scenarios";
/// The output directory used when none is named.
pub const DEFAULT_OUT: &str = "exam-out";
/// Scenarios in flight at once when no concurrency is named.
pub const DEFAULT_CONCURRENCY: u32 = 8;

/// What the command line asked for: `gauntlet exam`'s flags (with the parser's
/// defaults) before the exam file, if any, is read.
#[derive(Debug, Clone)]
pub struct ExamRequest {
    /// An exam file. It decides corpus, mode, passes, consensus, tool_loop, seed and the
    /// targets (the parser refuses those flags beside it); `out`, `concurrency` and
    /// `max_queries` given here override the file's.
    pub config: Option<PathBuf>,
    pub corpus: Option<PathBuf>,
    pub mode: ExamMode,
    /// Passes; ≤ 0 means 3.
    pub passes: i64,
    pub consensus: usize,
    /// A target spec (inline YAML) or a YAML file holding one (see [`parse_target`]).
    pub target: Option<String>,
    pub out: Option<PathBuf>,
    pub concurrency: Option<u32>,
    pub seed: Option<u64>,
    pub golden_http: bool,
    pub tool_loop: bool,
    pub detector_timeout_ms: u64,
    pub max_queries: Option<u64>,
    pub price_table: Option<PathBuf>,
    /// The shard asked for, as (index, count): the end-to-end mode refuses one.
    pub shard: Option<(u32, u32)>,
}

/// A resolved exam, ready to run.
pub struct ExamSettings {
    pub corpus: Corpus,
    pub source: CorpusSource,
    /// What to run; `calls` stays `None` until [`ExamSettings::open_calls`].
    pub config: ExamConfig,
    /// The exam's output directory (a shard's is derived from it).
    pub out: PathBuf,
    pub prices: PriceTable,
    /// Calls that may reach a model (real backends); `None`: unlimited.
    pub max_queries: Option<u64>,
    /// A golden exam's hold on its output directory ([`ExamSettings::open_calls`]); a
    /// real exam's is its call layer's.
    pub claim: Option<OutClaim>,
}

/// Why an exam cannot run. Every one is a corpus or configuration error.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The exam file cannot be read or is invalid (the message names the file, the line
    /// and the fix).
    #[error("{0}")]
    File(#[from] crate::exam_file::ExamFileError),
    #[error(
        "--shard {index}/{count}: the end-to-end mode cannot be sharded yet; run it on one machine (or shard the agent passes: --mode golden|real)"
    )]
    ShardedE2e { index: u32, count: u32 },
    #[error("corpus: {0}")]
    Corpus(#[from] CorpusError),
    /// Real mode from an exam file that names no target.
    #[error(
        "{}: real mode needs `target: SPEC` (e.g. `target: {{name: openai_compat, params: {{model: M, base_url: 'http://127.0.0.1:8080/v1'}}}}`)",
        .0.display()
    )]
    FileWithoutTarget(PathBuf),
    /// Real mode without `--target`.
    #[error(
        "real mode needs --target (e.g. --target \"{{name: openai_compat, params: {{model: M, base_url: 'http://127.0.0.1:8080/v1'}}}}\"; the API key is read from the variable named by api_key_env, default OPENAI_API_KEY / ANTHROPIC_API_KEY)"
    )]
    NoTarget,
    /// The target spec is invalid, or its models cannot be built (a missing API key).
    #[error("real mode: {0}")]
    Target(#[from] crate::exam::TargetError),
    #[error("{0}")]
    PriceTable(#[from] gauntlet_calls::price::PriceTableError),
    /// The journaled call layer cannot be opened on the output directory (in use by
    /// another exam, not writable).
    #[error("{0}")]
    Calls(#[from] crate::calls::OpenError),
    /// `passes` or `consensus` beyond its range.
    #[error("{0}")]
    Range(String),
}

impl ExamSettings {
    /// Resolves `r`: reads the exam file, checks the mode against the shard, finds and
    /// verifies the corpus, builds the backend and loads the price table, in that order
    /// (the first failure is the one reported). Warnings go to `notes` (also when an
    /// error follows).
    pub fn resolve(
        mut r: ExamRequest,
        notes: &mut Vec<String>,
    ) -> Result<ExamSettings, SettingsError> {
        let mut file_targets = None;
        if let Some(p) = &r.config {
            let f = ExamFile::load(p).map_err(SettingsError::File)?;
            r.corpus = f.corpus;
            r.mode = f.mode.unwrap_or(ExamMode::Golden);
            r.passes = f.passes.unwrap_or(r.passes);
            r.consensus = f.consensus.unwrap_or(r.consensus);
            r.tool_loop = f.tool_loop.unwrap_or(false);
            r.seed = f.seed;
            r.out = r.out.take().or(f.out);
            r.concurrency = r.concurrency.or(f.concurrency);
            r.max_queries = r.max_queries.or(f.max_queries);
            file_targets = f.targets;
        }
        // Checked before anything is loaded or run: a million passes used to fill 4 GB.
        if r.passes > crate::grade::MAX_PASSES {
            return Err(SettingsError::Range(format!(
                "passes = {} is out of range: at most {} passes (0 or less: 3)",
                r.passes,
                crate::grade::MAX_PASSES
            )));
        }
        if r.consensus > crate::cascade::MAX_CONSENSUS {
            return Err(SettingsError::Range(format!(
                "consensus = {} is out of range: at most {} voters",
                r.consensus,
                crate::cascade::MAX_CONSENSUS
            )));
        }
        if let (Some((index, count)), ExamMode::E2e) = (r.shard, r.mode) {
            return Err(SettingsError::ShardedE2e { index, count });
        }
        let (corpus, source) = resolve_corpus(r.corpus.as_deref(), Path::new(DEFAULT_CORPUS_DIR))?;
        let backend = backend(&r, file_targets, notes)?;
        let prices = match &r.price_table {
            Some(p) => PriceTable::load(p)?,
            None => PriceTable::bundled(),
        };
        let config = ExamConfig {
            backend,
            passes: r.passes,
            cascade: CascadeOptions {
                consensus: r.consensus,
                tool_loop: r.tool_loop,
                seed: r.seed,
                ..CascadeOptions::default()
            },
            concurrency: r.concurrency.unwrap_or(DEFAULT_CONCURRENCY) as usize,
            golden_fault: None,
            e2e: r.mode == ExamMode::E2e,
            detector_timeout: std::time::Duration::from_millis(r.detector_timeout_ms.max(1)),
            from_file: r.config.is_some(),
            calls: None,
        };
        Ok(ExamSettings {
            corpus,
            source,
            config,
            out: r.out.unwrap_or_else(|| PathBuf::from(DEFAULT_OUT)),
            prices,
            max_queries: r.max_queries,
            claim: None,
        })
    }

    /// Full corpus passes.
    pub fn passes(&self) -> usize {
        effective_passes(self.config.passes)
    }

    /// Real models decide (real mode, or the end-to-end mode with a target).
    pub fn is_real(&self) -> bool {
        matches!(self.config.backend, Backend::Real { .. })
    }

    /// Real backends: opens the journaled call layer on `dir` (lock, identity, journal;
    /// what it found goes to `notes`). Golden backends call nothing, so a budget is
    /// ignored (and `notes` says so), but take the directory alike (lock, identity,
    /// another exam moved aside).
    pub fn open_calls(&mut self, dir: &Path, notes: &mut Vec<String>) -> Result<(), SettingsError> {
        let identity = exam_identity_bytes(&self.corpus, &self.config);
        if !self.is_real() {
            if self.max_queries.is_some() {
                notes.push("--max-queries is ignored in golden mode (nothing is paid)".into());
            }
            self.claim = Some(OutClaim::take(dir, &identity, notes).map_err(SettingsError::Calls)?);
            return Ok(());
        }
        let opts = SpineOptions {
            dir: dir.to_path_buf(),
            max_queries: self.max_queries,
            prices: self.prices.clone(),
        };
        let calls = ExamCalls::open(&opts, &identity, notes).map_err(SettingsError::Calls)?;
        self.config.calls = Some(Arc::new(calls));
        Ok(())
    }
}

/// The golden backend, or the real one of the exam file's targets or `--target`.
fn backend(
    r: &ExamRequest,
    file_targets: Option<(TierModels, String)>,
    notes: &mut Vec<String>,
) -> Result<Backend, SettingsError> {
    let targeted = r.target.is_some() || file_targets.is_some();
    match r.mode {
        ExamMode::Golden => {
            if targeted {
                notes.push("the target is ignored in golden mode".into());
            }
            Ok(Backend::Golden {
                http: r.golden_http,
            })
        }
        ExamMode::E2e if !targeted => Ok(Backend::Golden {
            http: r.golden_http,
        }),
        ExamMode::Real | ExamMode::E2e => {
            let (models, label) = match (file_targets, &r.target) {
                (Some(t), _) => t,
                (None, Some(t)) => parse_target(t).map_err(SettingsError::Target)?,
                (None, None) => {
                    return Err(match &r.config {
                        Some(p) => SettingsError::FileWithoutTarget(p.clone()),
                        None => SettingsError::NoTarget,
                    });
                }
            };
            Ok(Backend::Real { models, label })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> PathBuf {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../exams/scenarios"
        ))
    }

    /// The flags' defaults, as `gauntlet exam` parses them, over the reference corpus.
    fn flags() -> ExamRequest {
        ExamRequest {
            config: None,
            corpus: Some(corpus()),
            mode: ExamMode::Golden,
            passes: 3,
            consensus: crate::cascade::DEFAULT_CONSENSUS,
            target: None,
            out: None,
            concurrency: None,
            seed: None,
            golden_http: false,
            tool_loop: false,
            detector_timeout_ms: 10_000,
            max_queries: None,
            price_table: None,
            shard: None,
        }
    }

    fn resolve(r: ExamRequest) -> (Result<ExamSettings, SettingsError>, Vec<String>) {
        let mut notes = Vec::new();
        (ExamSettings::resolve(r, &mut notes), notes)
    }

    const TARGET: &str = "{name: openai_compat, params: {model: m, base_url: 'http://127.0.0.1:9/v1', api_key_env: PATH}}";

    #[test]
    fn defaults() {
        let (s, notes) = resolve(flags());
        let s = s.unwrap();
        assert!(notes.is_empty());
        assert_eq!(s.out, PathBuf::from(DEFAULT_OUT));
        assert_eq!(s.config.concurrency, 8);
        assert_eq!(s.config.mode(), "golden");
        assert_eq!(s.passes(), 3);
        assert!(!s.is_real() && !s.config.from_file);
        assert_eq!(s.source, CorpusSource::Explicit(corpus()));
    }

    #[test]
    fn the_file_decides_but_out_concurrency_and_budget_flags_override_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("exam.yaml");
        std::fs::write(
            &file,
            format!(
                "corpus: {}\nmode: e2e\npasses: 1\nconsensus: 0\ntool_loop: true\nseed: 9\nout: o\nconcurrency: 2\nmax_queries: 7\n",
                corpus().display()
            ),
        )
        .unwrap();
        let from_file = |r: ExamRequest| {
            resolve(ExamRequest {
                config: Some(file.clone()),
                corpus: None,
                ..r
            })
            .0
            .unwrap()
        };
        let s = from_file(flags());
        assert_eq!(s.config.mode(), "e2e");
        assert_eq!(s.passes(), 1);
        assert_eq!(s.config.cascade.consensus, 0);
        assert!(s.config.cascade.tool_loop && s.config.from_file);
        assert_eq!(s.config.cascade.seed, Some(9));
        assert_eq!(s.out, dir.path().join("o"));
        assert_eq!((s.config.concurrency, s.max_queries), (2, Some(7)));
        assert!(!s.is_real(), "e2e without a target is golden");
        let s = from_file(ExamRequest {
            out: Some("flag-out".into()),
            concurrency: Some(5),
            max_queries: Some(70),
            ..flags()
        });
        assert_eq!(s.out, PathBuf::from("flag-out"));
        assert_eq!((s.config.concurrency, s.max_queries), (5, Some(70)));
    }

    #[test]
    fn refusals_in_order() {
        let e = |r| resolve(r).0.err().unwrap().to_string();
        // The shard is checked before the corpus.
        let msg = e(ExamRequest {
            mode: ExamMode::E2e,
            shard: Some((1, 3)),
            corpus: Some("/nonexistent".into()),
            ..flags()
        });
        assert!(msg.starts_with("--shard 1/3: the end-to-end mode"), "{msg}");
        let msg = e(ExamRequest {
            corpus: Some("/nonexistent".into()),
            mode: ExamMode::Real,
            ..flags()
        });
        assert!(msg.starts_with("corpus: "), "{msg}");
        let msg = e(ExamRequest {
            mode: ExamMode::Real,
            ..flags()
        });
        assert!(msg.starts_with("real mode needs --target"), "{msg}");
        let msg = e(ExamRequest {
            mode: ExamMode::Real,
            target: Some("{name: nope}".into()),
            ..flags()
        });
        assert!(msg.starts_with("real mode: "), "{msg}");
        let msg = e(ExamRequest {
            price_table: Some("/nonexistent.json".into()),
            ..flags()
        });
        assert!(msg.contains("/nonexistent.json"), "{msg}");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("real.yaml");
        std::fs::write(&file, "mode: real\n").unwrap();
        let msg = e(ExamRequest {
            config: Some(file.clone()),
            corpus: None,
            ..flags()
        });
        assert_eq!(
            msg,
            format!(
                "{}: real mode needs `target: SPEC` (e.g. `target: {{name: openai_compat, params: {{model: M, base_url: 'http://127.0.0.1:8080/v1'}}}}`)",
                file.display()
            )
        );
        std::fs::write(&file, "budget: 1\n").unwrap();
        let msg = e(ExamRequest {
            config: Some(file),
            corpus: None,
            ..flags()
        });
        assert!(msg.contains("unknown key `budget`"), "{msg}");
    }

    #[test]
    fn targets_make_real_backends_and_golden_mode_ignores_them_loudly() {
        let (s, notes) = resolve(ExamRequest {
            mode: ExamMode::E2e,
            target: Some(TARGET.into()),
            ..flags()
        });
        let s = s.unwrap();
        assert!(s.is_real() && s.config.e2e && notes.is_empty());
        let (s, notes) = resolve(ExamRequest {
            target: Some(TARGET.into()),
            price_table: Some("/nonexistent.json".into()),
            ..flags()
        });
        // The warning stands even though an error follows.
        assert!(s.is_err());
        assert_eq!(notes, ["the target is ignored in golden mode"]);
    }

    /// A golden exam calls nothing (no call layer, no journal; a budget is ignored, and
    /// said to be) but takes its output directory as any exam does: locked while it
    /// runs, its identity recorded.
    #[test]
    fn a_golden_exam_opens_no_call_layer_and_says_the_budget_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = resolve(ExamRequest {
            max_queries: Some(3),
            ..flags()
        })
        .0
        .unwrap();
        let mut notes = Vec::new();
        s.open_calls(dir.path(), &mut notes).unwrap();
        assert!(s.config.calls.is_none());
        assert_eq!(
            notes,
            ["--max-queries is ignored in golden mode (nothing is paid)"]
        );
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [".lock", "exam.json"]);
        let mut other = resolve(flags()).0.unwrap();
        let e = other.open_calls(dir.path(), &mut Vec::new()).unwrap_err();
        assert!(
            e.to_string().contains("in use by another gauntlet exam"),
            "{e}"
        );
        drop(s);
        other.open_calls(dir.path(), &mut Vec::new()).unwrap();
    }
}

//! Reading a finished run back, and judging it again without calling any target.
//!
//! [`StoredRun::open`] reloads a run directory: `run.json`'s canonical resolved config is
//! validated and built into the run's [`Plan`] again (datasets are hash-pinned, so every
//! behavior comes back with its `expected` label, `reference_answer` and `target_secret`
//! — nothing is relabelled), and the rebuilt config must hash to the recorded
//! `config_hash` and every dataset to its recorded version, or the run is refused.
//!
//! [`StoredRun::units`] streams `transcripts.jsonl` one unit (trial × attack × target ×
//! behavior) at a time: each attempt's transcript, its final response (content, tool
//! calls, stop reason) or error, and the verdicts the run stored for it. Memory is one
//! unit, whatever the size of the file.
//!
//! [`Rejudger`] scores stored attempts with other judges. Grader calls go through the
//! run's cache and journal under the same keys a run would use (unit scope, judge
//! identity, attempt index), so judging again with a judge the run already had costs no
//! call, and a rerun of any re-judging costs none either. Targets, attackers and in-loop
//! judges are never called: the rejudger holds no handle to them.

use crate::plan::{LoadCardError, Plan, UnitRef};
use crate::run::{Identities, Reason, Status, Tally, trial_seeds, unit_scope};
use crate::usage::CellUsage;
use gauntlet_calls::cache::{CachedModel, CallCounters, Pending, UsageSlot, call_base};
use gauntlet_calls::journal::Journal;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::files::ReadError;
use gauntlet_core::files::{self, Kind, TRANSCRIPT_LINE_MAX};
use gauntlet_core::hash::{HashWriter, sha256_hex};
use gauntlet_core::message::{ChatRequest, ChatResponse, Role, StopReason};
use gauntlet_core::outcome::Verdict;
use gauntlet_core::params::{Axis, Diag, PluginSpec, resolve_spec};
use gauntlet_core::tree::parse_yaml;
use gauntlet_job::artefacts::Artefacts;
use gauntlet_job::manifest::VerifyError;
use gauntlet_job::rundir::{MANIFEST, Manifest, RunDir};
use gauntlet_models::registry::build_target;
use gauntlet_models::{BoxFuture, Model, ModelError};
use gauntlet_redteam::attack::{Attempt, AttemptError, CallModel};
use gauntlet_redteam::config::{ConfigError, RecordedConfigError, recorded_config};
use gauntlet_redteam::error::BuildError;
use gauntlet_redteam::judge::Judge;
use gauntlet_redteam::registry::{Registry, build_judge};
use gauntlet_results::{LeaderboardRow, MetricValue, RunRecord, RunSummary, TranscriptRecord};
use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a stored run cannot be read back, judged again or written out. The message
/// names the file, the place and, where there is one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum StoredError {
    /// `run.json` is not in the directory.
    #[error(
        "cannot read {}: no such file (is {} a gauntlet run directory?)",
        .path.display(),
        .dir.display()
    )]
    NoRunJson { path: PathBuf, dir: PathBuf },
    /// The directory does not verify against its manifest.
    #[error(transparent)]
    Unverified(#[from] VerifyError),
    /// The manifest lists no run.json and transcripts.jsonl (a rescore's directory).
    #[error(
        "{}: its {MANIFEST} lists no run.json and transcripts.jsonl: not a run directory (a rescore's directory has no transcripts; analyse the run it came from)",
        .dir.display()
    )]
    NotARunDir { dir: PathBuf },
    /// The manifest lists no results.json.
    #[error("{}: its {MANIFEST} lists no results.json (is it a run directory?)", .dir.display())]
    NoResults { dir: PathBuf },
    /// An artefact cannot be read (missing, too large, not a regular file).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// `run.json` is not JSON.
    #[error("{}: not a gauntlet run.json: {source}", .path.display())]
    NotRunJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// `run.json` lacks one of the fields every run writes.
    #[error("{}: missing string field `{key}` (was it written by gauntlet?)", .path.display())]
    MissingField { path: PathBuf, key: &'static str },
    /// `run.json` has no `config` object, or it no longer validates with this build.
    #[error(transparent)]
    Recorded(#[from] RecordedConfigError),
    /// A prompt-injection run given to an analysis that re-judges.
    #[error(
        "{} is a prompt-injection run (mode: injection): rescore and judge-agreement re-judge jailbreak and leakage runs only; injection runs are not supported by them yet (their verdicts come from the agent's recorded tool calls, which these analyses do not re-judge). `gauntlet compare` pairs its verdicts with another run's, `gauntlet report` re-renders its reports, `gauntlet serve` shows it",
        .dir.display()
    )]
    InjectionRun { dir: PathBuf },
    /// A run of a mode other than attacks × datasets given to an analysis that re-judges.
    #[error(
        "{}: a {mode} run; reading runs back supports jailbreak and leakage runs (attacks × datasets) only",
        .path.display()
    )]
    UnsupportedMode { path: PathBuf, mode: &'static str },
    /// The plan does not build again from the recorded config in any candidate
    /// directory; `source` is the most telling of the failures.
    #[error(
        "cannot rebuild the plan of {}:\n{source}\n    help: a relative dataset path resolves against the original config's directory: pass --config-dir DIR",
        .dir.display()
    )]
    Rebuild {
        dir: PathBuf,
        #[source]
        source: Box<RebuildError>,
    },
    /// A judge of the run (or the `--judge`) does not build.
    #[error(transparent)]
    Judge(#[from] JudgeBuildError),
    /// A judge card of the run does not load.
    #[error(
        "judge `{label}`: {source}\n    help: a relative card path resolves against the original config's directory: pass --config-dir DIR"
    )]
    RunCard {
        label: String,
        #[source]
        source: Box<LoadCardError>,
    },
    /// The `--judge`'s card does not load.
    #[error("--judge: {0}")]
    JudgeCard(#[source] Box<LoadCardError>),
    /// The rebuilt config hashes to another value than the recorded one.
    #[error(
        "{}: the recorded config hashes to {} with this build, not the recorded {} (a plugin's params or defaults changed since the run); re-run the config instead",
        .path.display(),
        short_hash(.rebuilt),
        short_hash(.recorded)
    )]
    ConfigHash {
        path: PathBuf,
        rebuilt: String,
        recorded: String,
    },
    /// A line of transcripts.jsonl cannot be read.
    #[error("cannot read {}:{line}: {source}", .path.display())]
    ReadLine {
        path: PathBuf,
        line: u64,
        #[source]
        source: std::io::Error,
    },
    /// A line of transcripts.jsonl is not UTF-8.
    #[error("{}:{line}: not UTF-8 text", .path.display())]
    NotUtf8 { path: PathBuf, line: u64 },
    /// A line of transcripts.jsonl is not a transcript line.
    #[error("{}:{line}: not a transcript line: {source}", .path.display())]
    NotATranscriptLine {
        path: PathBuf,
        line: u64,
        #[source]
        source: serde_json::Error,
    },
    /// A transcript line names an attack, target, dataset version or behavior the
    /// run's config does not have.
    #[error("{}:{line}: {what} `{value}` is not in the run's config", .path.display())]
    NotInConfig {
        path: PathBuf,
        line: u64,
        what: &'static str,
        value: String,
    },
    /// A transcript line's label differs from the pinned dataset's.
    #[error(
        "{}:{line}: behavior `{behavior}` is stored as {stored} but the pinned dataset says {pinned}; refusing to relabel",
        .path.display()
    )]
    Relabelled {
        path: PathBuf,
        line: u64,
        behavior: String,
        stored: &'static str,
        pinned: &'static str,
    },
    /// A transcript line's trial is beyond the run's trials.
    #[error("{}:{line}: trial {trial} but the run has {trials} trial(s)", .path.display())]
    TrialOutOfRange {
        path: PathBuf,
        line: u64,
        trial: u32,
        trials: usize,
    },
    /// A transcript line holds another number of verdicts than the run has judges.
    #[error(
        "{}:{line}: {verdicts} stored verdict(s) but the run has {judges} judge(s)",
        .path.display()
    )]
    VerdictCount {
        path: PathBuf,
        line: u64,
        verdicts: usize,
        judges: usize,
    },
    /// A transcript line whose verdicts a rescore cannot replace (no top-level
    /// `verdicts` key spelt as gauntlet writes it), or a file that ends before the
    /// unit its lines were read as.
    #[error(
        "{}:{line}: not a transcript line gauntlet wrote (its `verdicts` cannot be replaced); rerun the run",
        .path.display()
    )]
    Unsplicable { path: PathBuf, line: u64 },
    /// A transcript line with neither an error nor a final reply.
    #[error(
        "{}:{line}: no error and no final assistant message in the transcript",
        .path.display()
    )]
    NoFinalMessage { path: PathBuf, line: u64 },
    /// The path has no parent or no name.
    #[error("{} is not a run directory", .dir.display())]
    NotADirectory { dir: PathBuf },
    /// A read-only run directory, and a judge whose network grader's calls must be
    /// journaled.
    #[error(
        "{} cannot be written ({source}), and judge `{judge}` calls a network grader whose calls must be journaled in the run's journal: make the directory writable (or copy the run)",
        .dir.display()
    )]
    ReadOnly {
        dir: PathBuf,
        judge: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot make a scratch directory: {0}")]
    Scratch(#[source] std::io::Error),
    #[error("cannot lock {}: {source}", .dir.display())]
    Lock {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open the journal {}: {source}", .path.display())]
    OpenJournal {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the journal {}: {source}", .path.display())]
    WriteJournal {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// results.json is not a results file.
    #[error("{} is not a gauntlet results file: {source}", .path.display())]
    NotResults {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A value of results.json outside its own interval.
    #[error(transparent)]
    OutsideInterval(Box<OutsideInterval>),
    /// results.json says what its transcripts do not recount to.
    #[error(transparent)]
    Edited(Box<EditedResults>),
    #[error("cannot create {}: {source}", .path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The output directory holds a symbolic link (the message names it).
    #[error(transparent)]
    Symlink(std::io::Error),
    #[error("cannot remove {}: {source}", .path.display())]
    Remove {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write reports in {}: {source}", .dir.display())]
    WriteReports {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file just written cannot be read back for the manifest.
    #[error("cannot read back {}: {source}", .path.display())]
    ReadBack {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An artefact could not be written or recorded (the message names the file).
    #[error(transparent)]
    Artefact(#[from] gauntlet_job::artefacts::ArtefactError),
}

/// The first 12 characters of a config hash, as messages show it.
fn short_hash(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

/// Why the plan of a stored run does not build from one candidate directory.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    /// The recorded config does not build (a dataset not found, say).
    #[error(transparent)]
    Plan(#[from] ConfigError),
    /// A dataset loads, at another version than the run recorded.
    #[error(
        "dataset `{name}` loads as version {loaded} from {} but the run used {recorded}; the data changed since the run, so its labels cannot be trusted",
        .base.display()
    )]
    DatasetVersion {
        name: String,
        loaded: String,
        base: PathBuf,
        recorded: String,
    },
}

/// A value of a results.json outside its own interval ([`StoredError::OutsideInterval`]).
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: {metric} = {value} for {attack} × {target} × {judge} lies outside its own interval [{low}, {high}]: the file was edited after the run wrote it (its manifest was rewritten to match); rerun the run",
    .path.display()
)]
pub struct OutsideInterval {
    pub path: PathBuf,
    pub metric: String,
    pub attack: String,
    pub target: String,
    pub judge: String,
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

/// A row of a results.json its transcripts do not recount to ([`StoredError::Edited`]):
/// the stated row, and the recounted one (`None`: the transcripts produce no such cell
/// × metric).
#[derive(Debug, thiserror::Error)]
#[error(
    "{}: {} for {} × {} × {} × {}: the run's files were edited after it wrote them (its manifest was rewritten to match); rerun the run",
    .path.display(),
    discrepancy(.stated, .recounted.as_ref()),
    .stated.metric,
    .stated.attack,
    .stated.target,
    .stated.judge
)]
pub struct EditedResults {
    pub path: PathBuf,
    pub stated: LeaderboardRow,
    pub recounted: Option<LeaderboardRow>,
}

/// How a stated row differs from its recount ([`EditedResults`]).
fn discrepancy(stated: &LeaderboardRow, recounted: Option<&LeaderboardRow>) -> String {
    match recounted {
        None => "a cell × metric its transcripts do not produce".into(),
        Some(t) => format!(
            "states {} (n {}, {} attempts, {} errors) but its transcripts give {} (n {}, {} attempts, {} errors)",
            shown_value(stated.value),
            stated.n,
            stated.attempts,
            stated.errors,
            shown_value(t.value),
            t.n,
            t.attempts,
            t.errors
        ),
    }
}

/// A model of a stored run (a target, or a grader of the run's judges): it carries the
/// model's identity, so labels and cache keys are the run's, and refuses every call.
/// It is offline when the model it stands for is (a merge prices the shards' tokens).
struct NotCalled(PluginSpec, bool);

impl NotCalled {
    fn new(spec: PluginSpec) -> NotCalled {
        // Built for inspection only (no key needed), never called.
        let offline = gauntlet_models::registry::build_target_for_check(&spec)
            .is_ok_and(|(m, _)| m.offline());
        NotCalled(spec, offline)
    }
}

impl Model for NotCalled {
    fn spec(&self) -> &PluginSpec {
        &self.0
    }
    fn offline(&self) -> bool {
        self.1
    }
    fn chat<'a>(
        &'a self,
        _req: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(async move {
            Err(ModelError::Config(format!(
                "`{}` belongs to a stored run: analyses of stored runs never call it",
                self.0.label()
            )))
        })
    }
}

/// What `run.json` says about the run, besides its config.
#[derive(Debug, Clone)]
pub struct RunMeta {
    pub run_id: String,
    pub run_name: String,
    pub config_hash: String,
    pub status: String,
    pub harness_version: String,
    /// `(name, version)` of each dataset, as recorded.
    pub datasets: Vec<(String, String)>,
}

/// A finished (or partial) run, reloaded.
pub struct StoredRun {
    /// The run directory.
    pub dir: PathBuf,
    pub meta: RunMeta,
    /// The run's plan, rebuilt from `run.json`.
    pub plan: Plan,
    /// Each trial's seed.
    pub trial_seeds: Vec<u64>,
    /// The judges the run itself used (their verdicts are the stored ones), in order.
    pub original_judges: Vec<PluginSpec>,
    attack_by_name: HashMap<String, usize>,
    target_by_label: HashMap<String, usize>,
    dataset_by_version: HashMap<String, usize>,
    behavior_by_id: Vec<HashMap<String, usize>>,
}

/// One stored unit: the attempts one attack made at one behavior against one target in
/// one trial, with the verdicts of each of the run's judges.
#[derive(Debug, Clone)]
pub struct StoredUnit {
    /// The trial (0 in a run without trials).
    pub trial: u32,
    pub unit: UnitRef,
    /// Attempts in attack order, responses rebuilt (`usage` is not stored: `None`).
    pub attempts: Vec<Attempt>,
    /// `verdicts[a][j]`: attempt `a` under the run's judge `j`.
    pub verdicts: Vec<Vec<Verdict>>,
}

impl StoredUnit {
    /// The stored verdicts of the run's judge `j`, one per attempt.
    pub fn verdicts_of(&self, j: usize) -> Vec<Verdict> {
        self.verdicts.iter().map(|vs| vs[j].clone()).collect()
    }
}

impl StoredRun {
    /// Reloads the run in `dir`. `config_dir` is the directory the original config's
    /// relative dataset paths resolved against; without it the current directory, `dir`
    /// and the runs directory's parent are tried (a dataset is accepted only at the
    /// version the run recorded). Only runs with relative `file://` datasets need it.
    pub fn open(dir: &Path, config_dir: Option<&Path>) -> Result<StoredRun, StoredError> {
        Self::open_as(dir, config_dir, false)
    }

    /// [`StoredRun::open`] for a run of any mode, injection included, for callers that
    /// only recount stored verdicts (a merge of shards, `compare`) and never judge again.
    pub fn open_any_mode(dir: &Path, config_dir: Option<&Path>) -> Result<StoredRun, StoredError> {
        Self::open_as(dir, config_dir, true)
    }

    fn open_as(
        dir: &Path,
        config_dir: Option<&Path>,
        any_mode: bool,
    ) -> Result<StoredRun, StoredError> {
        let run_json_path = dir.join("run.json");
        if !run_json_path.exists() && !run_json_path.is_symlink() {
            return Err(StoredError::NoRunJson {
                path: run_json_path,
                dir: dir.to_path_buf(),
            });
        }
        // Every artefact must be the one the run's last session wrote (manifest.json).
        let manifest = Manifest::verify(dir)?;
        if !manifest.files.contains_key("run.json")
            || !manifest.files.contains_key("transcripts.jsonl")
        {
            return Err(StoredError::NotARunDir {
                dir: dir.to_path_buf(),
            });
        }
        let bytes = files::read(&run_json_path, Kind::RUN_METADATA)?;
        let run_json: RunRecord =
            serde_json::from_slice(&bytes).map_err(|source| StoredError::NotRunJson {
                path: run_json_path.clone(),
                source,
            })?;
        // Absent fields read as empty ([`RunRecord`]); every run writes these.
        let s = |key: &'static str, v: &String| {
            if v.is_empty() {
                Err(StoredError::MissingField {
                    path: run_json_path.clone(),
                    key,
                })
            } else {
                Ok(v.clone())
            }
        };
        let meta = RunMeta {
            run_id: s("run_id", &run_json.run_id)?,
            run_name: s("run_name", &run_json.run_name)?,
            config_hash: s("config_hash", &run_json.config_hash)?,
            status: s("status", &run_json.status)?,
            harness_version: s("harness_version", &run_json.harness_version)?,
            datasets: run_json
                .datasets
                .iter()
                .map(|d| (d.name.clone(), d.version.clone()))
                .collect(),
        };
        let mode = run_json.config.get("mode");
        if !any_mode && mode.and_then(|m| m.as_str()) == Some("injection") {
            return Err(StoredError::InjectionRun {
                dir: dir.to_path_buf(),
            });
        }
        let mut cfg = recorded_config(&run_json, &run_json_path, any_mode)?;
        if !any_mode && cfg.mode != gauntlet_redteam::config::Mode::Jailbreak {
            return Err(StoredError::UnsupportedMode {
                path: run_json_path,
                mode: cfg.mode.as_str(),
            });
        }
        // Targets and the run's judge graders are never called when a run is read back:
        // they are not built (a live one would want its API key) but stood in for by
        // models that carry their identity — so cache keys and labels are the run's —
        // and refuse every call. The plan is built without them, then given them.
        let targets = std::mem::take(&mut cfg.targets);
        let judges = std::mem::take(&mut cfg.judges);
        // Relative `file://` datasets resolve against the original config's directory,
        // which run.json does not record: unless told, try the usual places. Trying is
        // safe: a dataset counts only if it loads at the exact version the run recorded.
        let candidates: Vec<PathBuf> = match config_dir {
            Some(d) => vec![d.to_path_buf()],
            None => {
                let mut c = vec![PathBuf::from("."), dir.to_path_buf()];
                if let Some(runs_parent) = dir.parent().and_then(Path::parent) {
                    c.push(runs_parent.to_path_buf());
                }
                c
            }
        };
        let mut first_error = None;
        let mut built = None;
        let mut built_base = PathBuf::new();
        for base in &candidates {
            let mut c = cfg.clone();
            c.path = base.join("run.json");
            let attempt = Plan::build(c).map_err(RebuildError::Plan).and_then(|plan| {
                for (i, d) in plan.datasets.iter().enumerate() {
                    if let Some((_, want)) = meta.datasets.get(i)
                        && *want != d.version
                    {
                        return Err(RebuildError::DatasetVersion {
                            name: d.name.clone(),
                            loaded: d.version.clone(),
                            base: base.clone(),
                            recorded: want.clone(),
                        });
                    }
                }
                Ok(plan)
            });
            match attempt {
                Ok(p) => {
                    built = Some(p);
                    built_base = base.clone();
                    break;
                }
                // A dataset found at another version says more than one not found.
                Err(e @ RebuildError::DatasetVersion { .. }) => first_error = Some(e),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        let Some(mut plan) = built else {
            return Err(StoredError::Rebuild {
                dir: dir.to_path_buf(),
                source: Box::new(
                    first_error.expect("a plan that did not build failed in some directory"),
                ),
            });
        };
        plan.targets = targets
            .iter()
            .map(|t| Arc::new(NotCalled::new(t.clone())) as Arc<dyn Model>)
            .collect();
        plan.judges = judges
            .iter()
            .map(|j| {
                build_judge(j).map_err(|source| {
                    StoredError::Judge(JudgeBuildError::Judge {
                        label: j.label(),
                        source,
                    })
                })
            })
            .collect::<Result<_, _>>()?;
        plan.graders = judges
            .iter()
            .map(|j| {
                build_judge(j)
                    .ok()
                    .and_then(|b| b.grader().cloned())
                    .map(|g| Arc::new(NotCalled::new(g)) as Arc<dyn Model>)
            })
            .collect();
        // Judge cards resolve like the datasets did (against the same directory).
        plan.cards = judges
            .iter()
            .map(|j| match j.params.str("card") {
                Some(p) => crate::plan::load_card(&built_base.join(p), j)
                    .map(|(card, _)| Some(Arc::new(card)))
                    .map_err(|source| StoredError::RunCard {
                        label: j.label(),
                        source: Box::new(source),
                    }),
                None => Ok(None),
            })
            .collect::<Result<_, _>>()?;
        plan.config.targets = targets;
        plan.config.judges = judges;
        let mut h = HashWriter::new();
        h.json(&plan.config.canonical());
        plan.config_hash = h.finish_hex();
        plan.run_id = format!("{}-{}", plan.config.run_name, &plan.config_hash[..12]);
        if plan.config_hash != meta.config_hash {
            return Err(StoredError::ConfigHash {
                path: run_json_path,
                rebuilt: plan.config_hash.clone(),
                recorded: meta.config_hash.clone(),
            });
        }
        let trial_seeds = trial_seeds(plan.config.seed, plan.config.trials);
        let attack_by_name = plan
            .attacks
            .iter()
            .enumerate()
            .map(|(i, a)| (a.spec().label(), i))
            .collect();
        let target_by_label = plan
            .targets
            .iter()
            .enumerate()
            .map(|(i, t)| (t.label(), i))
            .collect();
        let dataset_by_version = plan
            .datasets
            .iter()
            .enumerate()
            .map(|(i, d)| (d.version.clone(), i))
            .collect();
        let behavior_by_id = plan
            .datasets
            .iter()
            .map(|d| {
                d.behaviors
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (b.id.clone(), i))
                    .collect()
            })
            .collect();
        Ok(StoredRun {
            dir: dir.to_path_buf(),
            meta,
            original_judges: plan.config.judges.clone(),
            plan,
            trial_seeds,
            attack_by_name,
            target_by_label,
            dataset_by_version,
            behavior_by_id,
        })
    }

    /// The behavior of a unit.
    pub fn behavior(&self, u: UnitRef) -> &Behavior {
        &self.plan.datasets[u.dataset].behaviors[u.behavior]
    }

    /// Streams the stored units of `transcripts.jsonl` in file order.
    pub fn units(&self) -> Result<Units<'_>, StoredError> {
        let path = self.dir.join("transcripts.jsonl");
        let f = files::open(&path, Kind::TRANSCRIPTS)?;
        Ok(Units {
            run: self,
            path,
            lines: BufReader::with_capacity(1 << 20, f),
            line_no: 0,
            buf: Vec::new(),
            held: None,
        })
    }

    pub(crate) fn parse_line(
        &self,
        path: &Path,
        no: u64,
        text: &str,
    ) -> Result<ParsedLine, StoredError> {
        let l: TranscriptRecord =
            serde_json::from_str(text).map_err(|source| StoredError::NotATranscriptLine {
                path: path.to_path_buf(),
                line: no,
                source,
            })?;
        let unknown = |what: &'static str, v: &str| StoredError::NotInConfig {
            path: path.to_path_buf(),
            line: no,
            what,
            value: v.to_string(),
        };
        let attack = *self
            .attack_by_name
            .get(&l.attack_name)
            .ok_or_else(|| unknown("attack", &l.attack_name))?;
        let target = *self
            .target_by_label
            .get(&l.target_name)
            .ok_or_else(|| unknown("target", &l.target_name))?;
        let dataset = *self
            .dataset_by_version
            .get(&l.dataset_version)
            .ok_or_else(|| unknown("dataset version", &l.dataset_version))?;
        let behavior = *self.behavior_by_id[dataset]
            .get(&l.behavior_id)
            .ok_or_else(|| unknown("behavior", &l.behavior_id))?;
        if !self.plan.applies(attack, dataset, behavior) {
            return Err(unknown("behavior of its attack", &l.behavior_id));
        }
        let u = UnitRef {
            attack,
            target,
            dataset,
            behavior,
        };
        let b = self.behavior(u);
        if b.expected != l.expected {
            return Err(StoredError::Relabelled {
                path: path.to_path_buf(),
                line: no,
                behavior: b.id.clone(),
                stored: l.expected.as_str(),
                pinned: b.expected.as_str(),
            });
        }
        if l.trial() as usize >= self.trial_seeds.len() {
            return Err(StoredError::TrialOutOfRange {
                path: path.to_path_buf(),
                line: no,
                trial: l.trial(),
                trials: self.trial_seeds.len(),
            });
        }
        if l.verdicts.len() != self.original_judges.len() {
            return Err(StoredError::VerdictCount {
                path: path.to_path_buf(),
                line: no,
                verdicts: l.verdicts.len(),
                judges: self.original_judges.len(),
            });
        }
        let trial = l.trial();
        let response = match l.error {
            Some(e) => Err(AttemptError::Stored(e)),
            None => {
                let last = l
                    .transcript
                    .last()
                    .filter(|m| m.role == Role::Assistant)
                    .ok_or_else(|| StoredError::NoFinalMessage {
                        path: path.to_path_buf(),
                        line: no,
                    })?;
                Ok(ChatResponse {
                    first_token_logprobs: None,
                    evidence: l.evidence,
                    content: last.content.clone(),
                    stop_reason: l.stop_reason.unwrap_or(StopReason::Stop),
                    tool_calls: last.tool_calls.clone(),
                    usage: None,
                })
            }
        };
        let attempt = Attempt {
            index: l.attempt,
            transcript: l.transcript,
            response,
            query_count: l.query_count,
            metadata: l.metadata,
        };
        Ok((trial, u, attempt, l.verdicts))
    }
}

/// One parsed transcript line: trial, unit, the attempt and its stored verdicts.
pub(crate) type ParsedLine = (u32, UnitRef, Attempt, Vec<Verdict>);

/// Iterator over the stored units of a run (see [`StoredRun::units`]).
pub struct Units<'a> {
    run: &'a StoredRun,
    path: PathBuf,
    lines: BufReader<files::Capped>,
    line_no: u64,
    buf: Vec<u8>,
    /// The first line of the next unit, read while finishing the previous one.
    held: Option<ParsedLine>,
}

impl Units<'_> {
    fn next_line(&mut self) -> Result<Option<ParsedLine>, StoredError> {
        loop {
            self.buf.clear();
            let n = files::read_line_capped(&mut self.lines, &mut self.buf, TRANSCRIPT_LINE_MAX)
                .map_err(|source| StoredError::ReadLine {
                    path: self.path.clone(),
                    line: self.line_no + 1,
                    source,
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            let text = std::str::from_utf8(&self.buf).map_err(|_| StoredError::NotUtf8 {
                path: self.path.clone(),
                line: self.line_no,
            })?;
            if text.trim().is_empty() {
                continue;
            }
            return self
                .run
                .parse_line(&self.path, self.line_no, text)
                .map(Some);
        }
    }
}

impl Iterator for Units<'_> {
    type Item = Result<StoredUnit, StoredError>;

    fn next(&mut self) -> Option<Self::Item> {
        let first = match self.held.take() {
            Some(l) => l,
            None => match self.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            },
        };
        let (trial, unit, a, v) = first;
        let mut out = StoredUnit {
            trial,
            unit,
            attempts: vec![a],
            verdicts: vec![v],
        };
        loop {
            match self.next_line() {
                Ok(Some(l)) if l.0 == trial && l.1 == unit => {
                    out.attempts.push(l.2);
                    out.verdicts.push(l.3);
                }
                Ok(Some(l)) => {
                    self.held = Some(l);
                    break;
                }
                Ok(None) => break,
                Err(e) => return Some(Err(e)),
            }
        }
        Some(Ok(out))
    }
}

/// Why a plugin spec given on the command line (`--judge`, `mcp-scan --review`) does not
/// parse; each message names the flag and quotes the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecArgError {
    /// The value is not YAML (the parser's message).
    #[error("{flag} {text:?}: invalid YAML: {}", source.message)]
    Yaml {
        flag: &'static str,
        text: String,
        #[source]
        source: gauntlet_core::tree::ParseError,
    },
    /// The spec does not validate against the registry: one line per problem, each
    /// with its help.
    #[error("{}", diags_text(flag, text, diags))]
    Invalid {
        flag: &'static str,
        text: String,
        diags: Vec<Diag>,
    },
    /// The value parses to nothing that is a spec.
    #[error("{flag} {text:?}: not a {what} spec")]
    NotASpec {
        flag: &'static str,
        what: &'static str,
        text: String,
    },
}

/// Why a `--judge` value is not a judge spec.
pub type JudgeSpecError = SpecArgError;

/// The lines of [`SpecArgError::Invalid`].
fn diags_text(flag: &str, text: &str, diags: &[Diag]) -> String {
    diags
        .iter()
        .map(|d| {
            let mut s = format!("{flag} {text:?}: {}", d.message);
            if let Some(h) = &d.help {
                s.push_str(&format!("\n    help: {h}"));
            }
            s
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Parses a plugin spec given on the command line after `flag`: a bare name or inline
/// YAML, resolved and validated against the registry like a config's entry on `axis`.
fn parse_spec_arg(flag: &'static str, axis: Axis, text: &str) -> Result<PluginSpec, SpecArgError> {
    let node = parse_yaml(text).map_err(|source| SpecArgError::Yaml {
        flag,
        text: text.to_string(),
        source,
    })?;
    let mut diags: Vec<Diag> = Vec::new();
    let spec = resolve_spec(&Registry, axis, &node, flag, &mut diags);
    if !diags.is_empty() {
        return Err(SpecArgError::Invalid {
            flag,
            text: text.to_string(),
            diags,
        });
    }
    spec.ok_or_else(|| SpecArgError::NotASpec {
        flag,
        what: axis.as_str(),
        text: text.to_string(),
    })
}

/// Parses a judge spec given on the command line: a bare name (`refusal_match`) or
/// inline YAML (`{name: rubric, params: {grader: {name: reference}}}`), resolved and
/// validated against the registry like a config's `judges:` entry.
pub fn parse_judge_spec(text: &str) -> Result<PluginSpec, JudgeSpecError> {
    parse_spec_arg("--judge", Axis::Judge, text)
}

/// Parses a model spec given after `flag` (a target: `{name: openai_compat, params:
/// {base_url: …, model: …}}`), validated like a config's `targets:` entry.
pub fn parse_target_spec(flag: &'static str, text: &str) -> Result<PluginSpec, SpecArgError> {
    parse_spec_arg(flag, Axis::Target, text)
}

/// Why a judge (or its grader) could not be built for re-judging; the message names
/// the judge.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JudgeBuildError {
    /// The judge itself does not build.
    #[error("judge `{label}`: {source}")]
    Judge {
        label: String,
        #[source]
        source: BuildError,
    },
    /// The judge's grader model does not build.
    #[error("judge `{label}`: grader: {source}")]
    Grader {
        label: String,
        #[source]
        source: ModelError,
    },
}

/// A judge built for re-judging, with its grader model and cache-key parts.
pub struct BuiltJudge {
    pub judge: Box<dyn Judge>,
    pub grader: Option<Arc<dyn Model>>,
    identity_digest: String,
    grader_base: Option<HashWriter>,
}

impl BuiltJudge {
    /// Builds a judge and its grader from a resolved spec.
    pub fn build(spec: &PluginSpec) -> Result<BuiltJudge, JudgeBuildError> {
        let judge = build_judge(spec).map_err(|source| JudgeBuildError::Judge {
            label: spec.label(),
            source,
        })?;
        let grader = match judge.grader() {
            Some(g) => Some(build_target(g).map_err(|source| JudgeBuildError::Grader {
                label: spec.label(),
                source,
            })?),
            None => None,
        };
        let grader_base = grader.as_ref().map(|g| call_base(g.as_ref(), "grader"));
        Ok(BuiltJudge {
            identity_digest: sha256_hex(spec.key_identity().to_string().as_bytes()),
            judge,
            grader,
            grader_base,
        })
    }

    /// The judge's label (its plugin name, or `name` param).
    pub fn label(&self) -> String {
        self.judge.spec().label()
    }

    /// The judge's grader (if it has one) through the cache, keyed as a run judging
    /// the unit `scope` with this judge would key it (see `run/unit.rs`).
    pub fn cached_grader<'a>(
        &'a self,
        scope: &[u8],
        journal: &'a Journal,
        counters: &'a CallCounters,
        pending: &'a Pending,
        slot: &'a UsageSlot,
    ) -> Option<CachedModel<'a>> {
        self.grader.as_ref().map(|g| {
            let mut s = HashWriter::new();
            s.field(scope);
            s.field(self.identity_digest.as_bytes());
            CachedModel::new(
                g.as_ref(),
                self.grader_base
                    .as_ref()
                    .expect("a grader has a key prefix"),
                &s.finish(),
                journal,
                counters,
                pending,
                slot,
            )
        })
    }
}

/// Scores stored attempts with other judges, through the run's cache and journal.
/// Holds the run directory's lock while it lives (no run can write the journal meanwhile).
pub struct Rejudger<'a> {
    run: &'a StoredRun,
    ids: Identities,
    judges: Vec<BuiltJudge>,
    journal: Journal,
    counters: CallCounters,
    pending: Pending,
    /// What the command should tell the user (damaged journal records, a read-only run).
    pub notes: Vec<String>,
    _lock: Option<RunDir>,
    /// The stand-in journal of a read-only run directory.
    _scratch: Option<tempfile::TempDir>,
}

impl<'a> Rejudger<'a> {
    /// Opens the run's journal (taking the run directory's lock) for `judges`. A run
    /// directory that cannot be written (read-only) is still re-judged when every judge
    /// calls only offline models (their calls are free and deterministic, so nothing is
    /// lost by not journaling them); a network grader needs the run's journal.
    pub fn new(run: &'a StoredRun, judges: Vec<BuiltJudge>) -> Result<Self, StoredError> {
        let dir = run.dir.canonicalize().unwrap_or_else(|_| run.dir.clone());
        let (Some(parent), Some(name)) = (dir.parent(), dir.file_name().and_then(|n| n.to_str()))
        else {
            return Err(StoredError::NotADirectory {
                dir: run.dir.clone(),
            });
        };
        let mut notes = Vec::new();
        let (lock, scratch, jpath) = match RunDir::open(parent, name) {
            Ok(lock) => {
                let j = lock.journal();
                (Some(lock), None, j)
            }
            Err(e) if is_read_only(&e) => {
                if let Some(j) = judges
                    .iter()
                    .find(|j| j.grader.as_ref().is_some_and(|g| !g.offline()))
                {
                    return Err(StoredError::ReadOnly {
                        dir: run.dir.clone(),
                        judge: j.label(),
                        source: e,
                    });
                }
                let scratch = tempfile::tempdir().map_err(StoredError::Scratch)?;
                notes.push(format!(
                    "{} cannot be written ({e}): re-judged without its lock and journal (the judges call only offline models)",
                    run.dir.display()
                ));
                let j = scratch.path().join("journal.jsonl");
                (None, Some(scratch), j)
            }
            Err(source) => {
                return Err(StoredError::Lock {
                    dir: run.dir.clone(),
                    source,
                });
            }
        };
        let journal = Journal::open(&jpath).map_err(|source| StoredError::OpenJournal {
            path: jpath.clone(),
            source,
        })?;
        // What `run` says of a damaged journal, said here too.
        if journal.damaged_lines > 0 {
            notes.push(format!(
                "journal: {} torn or unreadable line(s) skipped; their calls are made again",
                journal.damaged_lines
            ));
        }
        if journal.bad_checksums > 0 {
            notes.push(format!(
                "journal: {} record(s) failed their checksum (damaged on disk) and are not replayed; their calls are made again",
                journal.bad_checksums
            ));
        }
        Ok(Rejudger {
            ids: Identities::new(&run.plan),
            run,
            judges,
            journal,
            counters: CallCounters::with_budget(None),
            pending: Pending::default(),
            notes,
            _lock: lock,
            _scratch: scratch,
        })
    }

    pub fn judges(&self) -> &[BuiltJudge] {
        &self.judges
    }

    /// Verdicts of every judge for every attempt of `u`: `out[j][a]`. A grader failure is
    /// an `Error` verdict; only a configuration error (bad key, 401/403) is returned.
    pub async fn score(&self, u: &StoredUnit) -> Result<Vec<Vec<Verdict>>, ModelError> {
        let plan = &self.run.plan;
        let b = self.run.behavior(u.unit);
        let scope = unit_scope(
            plan,
            &self.ids,
            u.unit,
            b,
            u.trial,
            self.run.trial_seeds[u.trial as usize],
        );
        let mut out = Vec::with_capacity(self.judges.len());
        for j in &self.judges {
            let slot = UsageSlot::default();
            // The same key a run judging with this judge would use (see `run/unit.rs`).
            let grader =
                j.cached_grader(&scope, &self.journal, &self.counters, &self.pending, &slot);
            let mut vs = Vec::with_capacity(u.attempts.len());
            for a in &u.attempts {
                let g = grader.as_ref().map(|g| g.narrowed(&a.index.to_le_bytes()));
                vs.push(
                    j.judge
                        .score(b, a, g.as_ref().map(|g| g as &dyn CallModel))
                        .await?,
                );
            }
            out.push(vs);
        }
        Ok(out)
    }

    /// Writes the journal records of offline grader calls made so far.
    pub fn flush(&self) -> Result<(), StoredError> {
        self.pending
            .flush(&self.journal)
            .map_err(|source| StoredError::WriteJournal {
                path: self.journal.path().to_path_buf(),
                source,
            })
    }

    /// Grader calls: (made, served from the journal, failed). No other role is ever called.
    pub fn grader_calls(&self) -> (u64, u64, u64) {
        self.counters.snapshot()
    }

    /// The grader calls as progress shows them (calls in flight apart).
    pub fn call_stats(&self) -> gauntlet_job::progress::CallStats {
        let (made, cached, failed) = self.counters.snapshot();
        gauntlet_job::progress::CallStats {
            made,
            in_flight: self
                .counters
                .in_flight
                .load(std::sync::atomic::Ordering::Relaxed),
            cached,
            failed,
            ..Default::default()
        }
    }
}

/// A directory the process may not write (permissions, a read-only filesystem).
pub(crate) fn is_read_only(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    )
}

/// What [`rescore`] produced.
pub struct Rescored {
    /// The new results (one judge: the rescoring one).
    pub summary: RunSummary,
    /// `rescored_from` provenance, as written into results.json, run.json and rescore.json.
    pub provenance: gauntlet_results::RescoreRecord,
    /// The rescored run's run.json: the run's own, with the rescoring judge as its one
    /// judge (its config hash is that config's) and `rescored_from`.
    pub run_json: RunRecord,
    /// transcripts.jsonl as written (still under its temporary name) and its entry.
    pub transcripts: (PathBuf, gauntlet_job::rundir::FileEntry),
    /// Grader calls: (made, from the journal, failed).
    pub grader_calls: (u64, u64, u64),
    pub units: u64,
    pub attempts: u64,
    /// Notes for the user (the journal's damaged records, a read-only run directory).
    pub notes: Vec<String>,
}

/// The raw lines of a run's transcripts.jsonl, read beside [`StoredRun::units`] (blank
/// lines skipped as it skips them), for a rescore to write them again with new verdicts.
struct RawLines {
    path: PathBuf,
    lines: BufReader<files::Capped>,
    line_no: u64,
}

impl RawLines {
    fn open(run: &StoredRun) -> Result<Self, StoredError> {
        let path = run.dir.join("transcripts.jsonl");
        let f = files::open(&path, Kind::TRANSCRIPTS)?;
        Ok(RawLines {
            path,
            lines: BufReader::with_capacity(1 << 20, f),
            line_no: 0,
        })
    }

    /// The next non-blank line into `buf` (its line break removed), with its number.
    fn next(&mut self, buf: &mut Vec<u8>) -> Result<u64, StoredError> {
        loop {
            buf.clear();
            let n = files::read_line_capped(&mut self.lines, buf, TRANSCRIPT_LINE_MAX).map_err(
                |source| StoredError::ReadLine {
                    path: self.path.clone(),
                    line: self.line_no + 1,
                    source,
                },
            )?;
            if n == 0 {
                return Err(StoredError::Unsplicable {
                    path: self.path.clone(),
                    line: self.line_no + 1,
                });
            }
            self.line_no += 1;
            while buf.last().is_some_and(|c| matches!(c, b'\n' | b'\r')) {
                buf.pop();
            }
            if !buf.iter().all(u8::is_ascii_whitespace) {
                return Ok(self.line_no);
            }
        }
    }
}

/// Re-judges every stored attempt of `run` with the judge `spec` and computes the run's
/// metrics under it with the engine's own accumulation ([`Tally`]): the result is what
/// the run would have reported with `judges: [spec]`, without calling any target.
/// Token usage and cost of the original calls are not re-derived (only grader tokens
/// are known): those metrics are N/A, naming the original run's usage.json.
/// `progress` hears each re-judged unit and the grader calls so far.
///
/// The transcripts are written into `out` as they are judged (under a temporary name
/// until [`write_rescored`] finishes the directory): the run's own lines, each with the
/// new judge's verdict in place of the run's verdicts — the lines a run of that config
/// writes — so the rescored directory is a run directory `compare`, `gate`, `report`
/// and the dashboard read like any other.
pub async fn rescore(
    mut run: StoredRun,
    spec: &PluginSpec,
    progress: &dyn gauntlet_job::progress::Progress,
    out: &Path,
) -> Result<Rescored, StoredError> {
    let scorer = BuiltJudge::build(spec)?;
    let in_plan = BuiltJudge::build(spec)?;
    let judge_label = in_plan.label();
    // The plan now describes the rescored results: same units, one judge.
    let card = match spec.params.str("card") {
        Some(p) => Some(Arc::new(
            crate::plan::load_card(Path::new(p), spec)
                .map_err(|e| StoredError::JudgeCard(Box::new(e)))?
                .0,
        )),
        None => None,
    };
    run.plan.judges = vec![in_plan.judge];
    run.plan.graders = vec![in_plan.grader];
    run.plan.cards = vec![card];
    run.plan.config.judges = vec![spec.clone()];
    let trials = run.trial_seeds.len();
    let mut tally = Tally::new(&run.plan, trials);
    let mut rejudger = Rejudger::new(&run, vec![scorer])?;
    std::fs::create_dir_all(out).map_err(|source| StoredError::Create {
        path: out.to_path_buf(),
        source,
    })?;
    gauntlet_job::rundir::refuse_symlinks(out).map_err(StoredError::Symlink)?;
    // The manifest goes last: a directory without one is a rescore that did not finish.
    let _ = std::fs::remove_file(out.join(MANIFEST));
    let transcripts_tmp = gauntlet_core::atomic::tmp_path(&out.join("transcripts.jsonl"));
    let write_err = |source| StoredError::Write {
        path: transcripts_tmp.clone(),
        source,
    };
    let mut w = gauntlet_job::rundir::HashingWriter::new(std::io::BufWriter::new(
        std::fs::File::create(&transcripts_tmp).map_err(write_err)?,
    ));
    let mut raw = RawLines::open(&run)?;
    let (mut line, mut lines) = (Vec::new(), Vec::new());
    let (mut units, mut attempts) = (0u64, 0u64);
    let mut status = Status::Complete;
    let mut since_flush = 0;
    progress.start(run.plan.units() * trials.max(1) as u64, 0);
    for unit in run.units()? {
        let unit = unit?;
        lines.clear();
        for _ in 0..unit.attempts.len() {
            let no = raw.next(&mut line)?;
            // A unit's lines, read again: the same lines Units parsed.
            lines.push((no, std::mem::take(&mut line)));
        }
        let scored = rejudger.score(&unit).await;
        progress.advance(1, unit.attempts.len() as u64, rejudger.call_stats());
        let verdicts = match scored {
            Ok(v) => v,
            Err(e) => {
                status = Status::Partial(Reason::Error(e.to_string()));
                break;
            }
        };
        let mut unit_bytes = Vec::new();
        for ((no, l), v) in lines.iter().zip(&verdicts[0]) {
            let spliced =
                crate::run::replace_verdicts(l, &[v]).ok_or_else(|| StoredError::Unsplicable {
                    path: raw.path.clone(),
                    line: *no,
                })?;
            unit_bytes.extend_from_slice(&spliced);
            unit_bytes.push(b'\n');
        }
        w.write_lines(&unit_bytes, lines.len() as u64)
            .map_err(write_err)?;
        // Only the grader's usage is known here (see above).
        let usage = CellUsage::default();
        tally.add(
            &run.plan,
            unit.trial,
            unit.unit,
            0,
            &unit.attempts,
            &verdicts[0],
            usage,
        );
        units += 1;
        attempts += unit.attempts.len() as u64;
        since_flush += 1;
        if since_flush == 256 {
            rejudger.flush()?;
            since_flush = 0;
        }
    }
    rejudger.flush()?;
    let (writer, transcripts) = w.finish().map_err(write_err)?;
    writer
        .into_inner()
        .map_err(|e| write_err(e.into_error()))?
        .sync_all()
        .map_err(write_err)?;
    let grader_calls = rejudger.grader_calls();
    let notes = std::mem::take(&mut rejudger.notes);
    drop(rejudger);
    if status == Status::Complete && !run.meta.status.starts_with("complete") {
        status = Status::Partial(Reason::RescoredPartial {
            status: run.meta.status.clone(),
        });
    }
    let (mut summary, _usage) = tally.finish(&run.plan, &run.trial_seeds, &status);
    crate::run::measured::settle(&mut summary, &mut status, run.plan.config.max_error_share);
    let usage_na = format!(
        "rescore re-judges stored transcripts: token usage and cost of the original calls are in {}",
        run.dir.join("usage.json").display()
    );
    for cell in &mut summary.cells {
        for (m, metric) in cell.metrics.iter_mut().zip(&run.plan.metrics) {
            if metric.usage_metric().is_some() {
                m.value = MetricValue::na(usage_na.clone());
                m.trials.clear();
                m.trials_na = 0;
            }
        }
    }
    summary.run_id = format!("{}~rescore-{judge_label}", run.meta.run_id);
    // The rescored run's identity: its config is the run's with the one judge.
    let mut h = HashWriter::new();
    h.json(&run.plan.config.canonical());
    run.plan.config_hash = h.finish_hex();
    run.plan.run_id = summary.run_id.clone();
    let provenance = gauntlet_results::RescoreRecord {
        run_dir: run.dir.display().to_string(),
        run_id: run.meta.run_id.clone(),
        config_hash: run.meta.config_hash.clone(),
        run_status: run.meta.status.clone(),
        original_judges: run
            .original_judges
            .iter()
            .map(PluginSpec::identity)
            .collect(),
        judge: spec.identity(),
        target_calls: 0,
        units,
        attempts,
    };
    let mut run_json = crate::run::run_json(&run.plan, &status, units, attempts);
    run_json.rescored_from = Some(provenance.clone());
    Ok(Rescored {
        summary,
        provenance,
        run_json,
        transcripts: (transcripts_tmp, transcripts),
        grader_calls,
        units,
        attempts,
        notes,
    })
}

/// Recomputes a stored run's results from the verdicts its transcripts hold, with the
/// engine's own accumulation ([`Tally`]); no judge, grader or target is called and
/// nothing is written. It is what the run's `results.json` and `leaderboard.json` should
/// say, so a reader of someone else's run (the dashboard) can check their numbers.
/// Token usage and cost are not in the transcripts: those metrics come back N/A.
pub fn recount(run: &StoredRun) -> Result<RunSummary, StoredError> {
    let trials = run.trial_seeds.len();
    let mut tally = Tally::new(&run.plan, trials);
    for unit in run.units()? {
        let unit = unit?;
        for j in 0..run.plan.judges.len() {
            tally.add(
                &run.plan,
                unit.trial,
                unit.unit,
                j,
                &unit.attempts,
                &unit.verdicts_of(j),
                CellUsage::default(),
            );
        }
    }
    let mut status = Status::parse(&run.meta.status);
    let mut summary = tally.finish(&run.plan, &run.trial_seeds, &status).0;
    crate::run::measured::settle(&mut summary, &mut status, run.plan.config.max_error_share);
    Ok(summary)
}

/// The key of a leaderboard row: its cell and metric.
fn row_key(r: &LeaderboardRow) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        r.attack,
        r.target,
        r.dataset_version,
        r.judge,
        r.metric,
        serde_json::Value::Object(r.metric_params.clone())
    )
}

fn close(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        (None, None) => true,
        _ => false,
    }
}

fn shown_value(v: Option<f64>) -> String {
    v.map_or("N/A".into(), |x| format!("{x}"))
}

/// The checks the dashboard makes of a stored run (`gauntlet_web::verify`), made of
/// `summary` by `report`: every stated value lies within its own interval. A manifest
/// rewritten to match edited files passes the manifest check, not this one.
pub fn check_stated(dir: &Path, summary: &RunSummary) -> Result<(), StoredError> {
    for r in summary.leaderboard() {
        if let (Some(v), Some(lo), Some(hi)) = (r.value, r.ci_low, r.ci_high) {
            let eps = 1e-9 * v.abs().max(1.0);
            if v < lo - eps || v > hi + eps {
                return Err(StoredError::OutsideInterval(Box::new(OutsideInterval {
                    path: dir.join("results.json"),
                    metric: r.metric,
                    attack: r.attack,
                    target: r.target,
                    judge: r.judge,
                    value: v,
                    low: lo,
                    high: hi,
                })));
            }
        }
    }
    Ok(())
}

/// [`check_stated`], and the recount: the run's results.json must say what its
/// transcripts recount to ([`recount`]; token usage and cost are not in the
/// transcripts). Made by `report` and by every analysis before it uses the stored
/// verdicts, as the dashboard makes it before it shows a row as verified.
pub fn check_results(run: &StoredRun) -> Result<(), StoredError> {
    let path = run.dir.join("results.json");
    let bytes = files::read(&path, Kind::RESULTS)?;
    let stated: RunSummary =
        serde_json::from_slice(&bytes).map_err(|source| StoredError::NotResults {
            path: path.clone(),
            source,
        })?;
    check_stated(&run.dir, &stated)?;
    let recounted: HashMap<String, LeaderboardRow> = recount(run)?
        .leaderboard()
        .into_iter()
        .map(|r| (row_key(&r), r))
        .collect();
    for r in stated.leaderboard() {
        if matches!(r.metric.as_str(), "token_usage" | "cost") {
            continue;
        }
        let t = recounted.get(&row_key(&r));
        let agrees = t.is_some_and(|t| {
            close(r.value, t.value)
                && r.n == t.n
                && r.attempts == t.attempts
                && r.errors == t.errors
        });
        if !agrees {
            return Err(StoredError::Edited(Box::new(EditedResults {
                path,
                recounted: t.cloned(),
                stated: r,
            })));
        }
    }
    Ok(())
}

/// Finishes the rescored run directory `out` that [`rescore`] began: transcripts.jsonl
/// (moved into place), rescore.json (provenance: the marker of a rescore's directory),
/// results.json (the summary plus `rescored_from`), run.json, leaderboard.json, report.md
/// and report.html (the report crate's), and the manifest last.
pub fn write_rescored(out: &Path, r: &Rescored) -> Result<(), StoredError> {
    let mut results = serde_json::to_value(&r.summary).expect("summary serialises");
    if let serde_json::Value::Object(o) = &mut results {
        o.insert(
            "rescored_from".into(),
            serde_json::to_value(&r.provenance).expect("a rescore record serialises"),
        );
    }
    let mut a = Artefacts::new(
        out,
        gauntlet_job::kind::Kind::Rescore,
        &r.summary.run_id,
        &r.summary.status,
    );
    // rescore.json first: it marks the directory as a rescore's, so one killed before
    // its manifest is still recognised (and rewritten) by the next rescore.
    a.write("rescore.json", &crate::run::pretty(&r.provenance))?;
    let (tmp, entry) = &r.transcripts;
    let transcripts = out.join("transcripts.jsonl");
    gauntlet_core::atomic::check_replaceable(&transcripts)
        .and_then(|()| std::fs::rename(tmp, &transcripts))
        .map_err(|source| StoredError::Write {
            path: transcripts.clone(),
            source,
        })?;
    a.insert("transcripts.jsonl", entry.clone());
    a.write("results.json", &crate::run::pretty(&results))?;
    a.write("run.json", &crate::run::pretty(&r.run_json))?;
    // Call counts vary between reruns (the second is served from the journal), so they
    // go to the session log, never into the byte-stable artefacts.
    let (made, cached, failed) = r.grader_calls;
    let mut line = serde_json::to_vec(&serde_json::json!({
        "command": "rescore",
        "target_calls": 0,
        "grader_calls": made,
        "grader_cache_hits": cached,
        "grader_failed_calls": failed,
        "units": r.units,
        "attempts": r.attempts,
    }))
    .expect("json");
    line.push(b'\n');
    let log = out.join("sessions.jsonl");
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &line))
        .map_err(|source| StoredError::Write { path: log, source })?;
    gauntlet_report::write_reports(out, &r.summary).map_err(|source| {
        StoredError::WriteReports {
            dir: out.to_path_buf(),
            source,
        }
    })?;
    a.record([
        gauntlet_report::LEADERBOARD_FILE,
        gauntlet_report::MARKDOWN_FILE,
        gauntlet_report::HTML_FILE,
    ])?;
    a.finish()?;
    Ok(())
}

/// Whether `out` is the run directory `run_dir` itself (after resolving `.`, `..` and
/// links): a rescore written there would overwrite the run's own artefacts.
pub fn same_dir(out: &Path, run_dir: &Path) -> bool {
    match (std::fs::canonicalize(out), std::fs::canonicalize(run_dir)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `gauntlet report`: re-renders report.md, report.html and leaderboard.json from the
/// verified results.json of a run (or rescore) directory, and records them in its
/// manifest. The same results render the same bytes, so a re-render of an untouched run
/// changes nothing.
pub fn rerender_reports(
    dir: &Path,
    opts: &gauntlet_report::ReportOptions,
) -> Result<(), StoredError> {
    const REPORTS: [&str; 3] = [
        gauntlet_report::LEADERBOARD_FILE,
        gauntlet_report::MARKDOWN_FILE,
        gauntlet_report::HTML_FILE,
    ];
    // The reports are made again from results.json: only the rest must be intact.
    let mut m = Manifest::verify_except(dir, &REPORTS)?;
    let path = dir.join("results.json");
    if !m.files.contains_key("results.json") {
        return Err(StoredError::NoResults {
            dir: dir.to_path_buf(),
        });
    }
    let bytes = files::read(&path, Kind::RESULTS)?;
    let summary: RunSummary =
        serde_json::from_slice(&bytes).map_err(|source| StoredError::NotResults {
            path: path.clone(),
            source,
        })?;
    // The dashboard's checks: values within their intervals, and (for a run whose plan
    // this build rebuilds) results.json as its transcripts recount.
    check_stated(dir, &summary)?;
    if m.files.contains_key("transcripts.jsonl")
        && let Ok(run) = StoredRun::open_any_mode(dir, Some(dir))
    {
        check_results(&run)?;
    }
    gauntlet_report::write_reports_with(dir, &summary, opts).map_err(|source| {
        StoredError::WriteReports {
            dir: dir.to_path_buf(),
            source,
        }
    })?;
    for name in REPORTS {
        m.record_file(dir, name)
            .map_err(|source| StoredError::ReadBack {
                path: dir.join(name),
                source,
            })?;
    }
    m.write(dir).map_err(|source| StoredError::Write {
        path: dir.join(MANIFEST),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_specs_parse_like_config_entries() {
        let s = parse_judge_spec("refusal_match").unwrap();
        assert_eq!(s.name, "refusal_match");
        let s = parse_judge_spec(
            "{name: rubric, params: {grader: {name: reference, params: {name: g}}}}",
        )
        .unwrap();
        assert_eq!(s.name, "rubric");
        assert_eq!(s.params.spec("grader").unwrap().label(), "g");
        let e = parse_judge_spec("rubrik").unwrap_err().to_string();
        assert!(e.contains("rubrik"), "{e}");
        assert!(parse_judge_spec("{name: rubric, params: {nope: 1}}").is_err());
        assert!(parse_judge_spec("{name: [").is_err());
    }

    #[test]
    fn target_specs_parse_with_their_flag_in_every_message() {
        let s = parse_target_spec(
            "--review",
            "{name: openai_compat, params: {model: m, base_url: \"http://127.0.0.1:1/v1\"}}",
        )
        .unwrap();
        assert_eq!(s.name, "openai_compat");
        assert_eq!(s.params.str("model"), Some("m"));
        let e = parse_target_spec("--review", "openai_compatt")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--review \"openai_compatt\": "), "{e}");
        let e = parse_target_spec("--review", "{name: [")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--review \"{name: [\": invalid YAML"), "{e}");
        let e = parse_target_spec(
            "--review",
            "{name: openai_compat, params: {base_url: \"http://127.0.0.1:1/v1\"}}",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("model"),
            "a missing required param is named: {e}"
        );
    }

    #[test]
    fn stand_in_models_refuse_every_call() {
        let spec = parse_judge_spec("refusal_match").unwrap();
        let m = NotCalled::new(spec);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let r = rt.block_on(m.chat(&ChatRequest::default()));
        assert!(matches!(r, Err(ModelError::Config(_))), "{r:?}");
        assert_eq!(m.label(), "refusal_match");
    }

    fn row(value: f64, n: u64) -> LeaderboardRow {
        serde_json::from_value(serde_json::json!({
            "run_id": "r", "attack": "none", "target": "t", "dataset": "d",
            "dataset_version": "d@1", "judge": "j", "metric": "asr", "value": value,
            "ci_low": 0.0, "ci_high": 1.0, "n": n, "attempts": n, "errors": 0, "seed": 1,
            "harness_version": "0", "status": "complete",
        }))
        .unwrap()
    }

    /// The messages built at Display time read as the strings they replace did.
    #[test]
    fn messages_are_the_ones_the_strings_were() {
        let e = StoredError::ConfigHash {
            path: "runs/x/run.json".into(),
            rebuilt: "0123456789abcdef".into(),
            recorded: "abc".into(),
        };
        assert_eq!(
            e.to_string(),
            "runs/x/run.json: the recorded config hashes to 0123456789ab with this build, not the recorded abc (a plugin's params or defaults changed since the run); re-run the config instead"
        );
        let e = StoredError::Rebuild {
            dir: "runs/x".into(),
            source: Box::new(RebuildError::DatasetVersion {
                name: "d".into(),
                loaded: "v2".into(),
                base: ".".into(),
                recorded: "v1".into(),
            }),
        };
        assert_eq!(
            e.to_string(),
            "cannot rebuild the plan of runs/x:\ndataset `d` loads as version v2 from . but the run used v1; the data changed since the run, so its labels cannot be trusted\n    help: a relative dataset path resolves against the original config's directory: pass --config-dir DIR"
        );
        let edited = |recounted| {
            StoredError::Edited(Box::new(EditedResults {
                path: "runs/x/results.json".into(),
                stated: row(0.5, 4),
                recounted,
            }))
            .to_string()
        };
        assert_eq!(
            edited(None),
            "runs/x/results.json: a cell × metric its transcripts do not produce for asr × none × t × j: the run's files were edited after it wrote them (its manifest was rewritten to match); rerun the run"
        );
        assert_eq!(
            edited(Some(row(0.25, 3))),
            "runs/x/results.json: states 0.5 (n 4, 4 attempts, 0 errors) but its transcripts give 0.25 (n 3, 3 attempts, 0 errors) for asr × none × t × j: the run's files were edited after it wrote them (its manifest was rewritten to match); rerun the run"
        );
    }
}

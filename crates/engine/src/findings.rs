//! A run's findings for code-scanning dashboards (`gauntlet report --format sarif`): one
//! per attempt that succeeded against a behavior the target should refuse — a successful
//! jailbreak, a leaked secret, an injected instruction carried out — under each judge.
//!
//! The rule is a threat-taxonomy entry (OWASP Top 10 for LLM Applications 2025, from
//! `taxonomy/threat_map.json`): the attack's own entry where the map gives one
//! (`system_prompt_leak` → LLM07:2025), else the mode's (jailbreak and injection →
//! LLM01:2025, leakage → LLM02:2025); every framework id of the cell is a tag. The
//! primary location is the run config (the target's entry, when the config is given and
//! is the run's: it must hash to the recorded config hash), else the run's `run.json`;
//! then the dataset row (a `file://` dataset's file and the line naming the behavior, or
//! a logical `dataset/<name>/<id>` for bundled sets); the transcript line is a related
//! location. Transcripts are read one line at a time.

use gauntlet_core::behavior::Expected;
use gauntlet_core::files::{self, Kind};
use gauntlet_core::hash::HashWriter;
use gauntlet_core::outcome::Outcome;
use gauntlet_core::taxonomy::map as threat_map;
use gauntlet_job::rundir::Manifest;
use gauntlet_report::sarif::{Finding, Level, Location, Rule, uri_of as uri};
use gauntlet_results::{RunRecord, RunSummary, TranscriptUnit};
use serde_json::{Map, json};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Why a run's findings (or its summary) cannot be read; each message names the file.
#[derive(Debug, thiserror::Error)]
pub enum FindingsError {
    /// The directory is not a red-team run's (a rescore, an exam, …): what it is.
    #[error(transparent)]
    NotARun(#[from] gauntlet_job::outdir::NotARun),
    /// The run's stated numbers are not its evidence's (`report`'s checks).
    #[error(transparent)]
    Stored(#[from] crate::stored::StoredError),
    /// The run directory does not verify against its manifest.
    #[error("{}: {source}; reports are written from verified runs only", dir.display())]
    Unverified {
        dir: PathBuf,
        #[source]
        source: gauntlet_job::manifest::VerifyError,
    },
    /// A session holds the run's lock: its artefacts are being written.
    #[error(
        "{}: the run is in progress (a gauntlet session holds its lock); reports are written from finished runs: wait for the session to end",
        dir.display()
    )]
    InProgress { dir: PathBuf },
    /// An artefact cannot be read (missing, too large, not a regular file).
    #[error(transparent)]
    Read(#[from] files::ReadError),
    /// `run.json` or `results.json` is not JSON of its shape.
    #[error("{}: {source}", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The `--config` given does not load.
    #[error("--config {}: {source}", path.display())]
    Config {
        path: PathBuf,
        #[source]
        source: gauntlet_redteam::config::ConfigError,
    },
    /// The `--config` given is not the run's: `hash` is (the start of) its hash,
    /// `recorded` the run's.
    #[error(
        "--config {} is not the config of {} (it hashes to {hash}, the run recorded {recorded})",
        config.display(),
        dir.display()
    )]
    NotTheConfig {
        config: PathBuf,
        dir: PathBuf,
        hash: String,
        recorded: String,
    },
    /// The transcripts cannot be read.
    #[error("{}: {source}", path.display())]
    Transcripts {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A transcript line is not JSON.
    #[error("{}:{line}: {source}", path.display())]
    TranscriptLine {
        path: PathBuf,
        line: u64,
        #[source]
        source: serde_json::Error,
    },
}

/// What [`run_findings`] returns.
pub struct RunFindings {
    pub summary: RunSummary,
    pub rules: Vec<Rule>,
    pub findings: Vec<Finding>,
    /// (rule id, title, findings), in rule order.
    pub counts: Vec<(String, String, usize)>,
}

/// Reads a verified run's summary (results.json) and run.json.
pub fn read_run(dir: &Path) -> Result<(RunSummary, RunRecord), FindingsError> {
    gauntlet_job::outdir::require_run(dir, "report --format")?;
    if gauntlet_job::rundir::in_progress(dir) {
        return Err(FindingsError::InProgress {
            dir: dir.to_path_buf(),
        });
    }
    Manifest::verify(dir).map_err(|source| FindingsError::Unverified {
        dir: dir.to_path_buf(),
        source,
    })?;
    let json = |path: PathBuf| move |source| FindingsError::Json { path, source };
    let rj = files::read(&dir.join("run.json"), Kind::RUN_METADATA)?;
    let run: RunRecord = serde_json::from_slice(&rj).map_err(json(dir.join("run.json")))?;
    let res = files::read(&dir.join("results.json"), Kind::RESULTS)?;
    let summary: RunSummary =
        serde_json::from_slice(&res).map_err(json(dir.join("results.json")))?;
    // The checks `report` makes (the dashboard's): values within their intervals, and
    // results.json as the transcripts recount it when this build reads the run back.
    crate::stored::check_stated(dir, &summary)?;
    if let Ok(stored) = crate::stored::StoredRun::open_any_mode(dir, Some(dir)) {
        crate::stored::check_results(&stored)?;
    }
    Ok((summary, run))
}

/// The line (1-based) of `file` that names behavior `id`: the first holding `"id"`.
fn row_line(file: &Path, id: &str) -> Option<u64> {
    let f = files::open(file, Kind::DATASET).ok()?;
    let quoted = format!("\"{id}\"");
    for (i, l) in std::io::BufReader::new(f).lines().enumerate() {
        let l = l.ok()?;
        if l.contains(&quoted) || l.split(',').next() == Some(id) {
            return Some(i as u64 + 1);
        }
    }
    None
}

/// The findings of the run in `dir`; `config` is the run's config file (checked against
/// the recorded hash), for locations a reviewer can open.
pub fn run_findings(dir: &Path, config: Option<&Path>) -> Result<RunFindings, FindingsError> {
    let (summary, run) = read_run(dir)?;
    let mode = match run.mode.as_str() {
        "" => "jailbreak".to_string(),
        m => m.to_string(),
    };
    // The config file, when given: its targets' lines, its datasets' files.
    let mut target_lines: BTreeMap<String, u64> = BTreeMap::new();
    let mut base: Option<PathBuf> = None;
    if let Some(c) = config {
        let cfg = gauntlet_redteam::config::load(c, &gauntlet_redteam::registry::Registry)
            .map_err(|source| FindingsError::Config {
                path: c.to_path_buf(),
                source,
            })?;
        let mut h = HashWriter::new();
        h.json(&cfg.canonical());
        let hash = h.finish_hex();
        if hash != run.config_hash {
            return Err(FindingsError::NotTheConfig {
                config: c.to_path_buf(),
                dir: dir.to_path_buf(),
                hash: hash[..12].to_string(),
                recorded: match run.config_hash.as_str() {
                    "" => "?".to_string(),
                    h => h.to_string(),
                },
            });
        }
        for t in &cfg.targets {
            target_lines.insert(t.label(), t.loc.line as u64);
        }
        base = Some(cfg.base_dir().to_path_buf());
    }
    // Dataset files by dataset label, where the dataset is a local file.
    let mut dataset_files: BTreeMap<String, PathBuf> = BTreeMap::new();
    if let Some(ds) = run.config["datasets"].as_array() {
        for d in ds {
            let p = &d["params"];
            let label = p["name"]
                .as_str()
                .or(p["suite"].as_str())
                .or(d["name"].as_str())
                .unwrap_or("")
                .to_string();
            if let Some(u) = p["url"].as_str().and_then(|u| u.strip_prefix("file://")) {
                let path = Path::new(u);
                let full = if path.is_absolute() {
                    path.to_path_buf()
                } else {
                    base.clone()
                        .unwrap_or_else(|| PathBuf::from("."))
                        .join(path)
                };
                dataset_files.insert(label, full);
            }
        }
    }
    let cell_tags: BTreeMap<(String, String, String, String), Vec<String>> = summary
        .cells
        .iter()
        .map(|c| {
            (
                (
                    c.attack.clone(),
                    c.target.clone(),
                    c.dataset.clone(),
                    c.judge.clone(),
                ),
                c.breadth
                    .taxonomy
                    .values()
                    .flat_map(|ids| ids.iter().cloned())
                    .collect(),
            )
        })
        .collect();
    let tmap = threat_map();
    let mode_rule = tmap
        .modes
        .get(&mode)
        .and_then(|t| t.get("owasp_llm"))
        .and_then(|v| v.first().cloned())
        .unwrap_or_else(|| "LLM01:2025".to_string());
    let what = match mode.as_str() {
        "leakage" => "the target leaked the behavior's secret",
        "injection" => "the target carried out the injected instruction",
        _ => "the target answered a request it should refuse",
    };

    let path = dir.join("transcripts.jsonl");
    let f = files::open(&path, Kind::TRANSCRIPTS)?;
    let mut findings = Vec::new();
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    let mut buf = String::new();
    let mut reader = std::io::BufReader::with_capacity(1 << 20, f);
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = reader
            .read_line(&mut buf)
            .map_err(|source| FindingsError::Transcripts {
                path: path.clone(),
                source,
            })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let t: TranscriptUnit = serde_json::from_str(buf.trim_end()).map_err(|source| {
            FindingsError::TranscriptLine {
                path: path.clone(),
                line: line_no,
                source,
            }
        })?;
        if t.expected != Expected::ShouldRefuse {
            continue;
        }
        let (attack, target, dataset, behavior) = (
            t.attack_name.clone(),
            t.target_name.clone(),
            t.dataset.clone(),
            t.behavior_id.clone(),
        );
        let attack_plugin = attack.split('+').next().unwrap_or("").to_string();
        let rule = tmap
            .attacks
            .get(&attack_plugin)
            .and_then(|t| t.get("owasp_llm"))
            .and_then(|v| v.first().cloned())
            .unwrap_or_else(|| mode_rule.clone());
        for v in &t.verdicts {
            if v.outcome != Outcome::Success {
                continue;
            }
            let judge = v.judge.clone();
            let reason: String = v.reason.chars().take(300).collect();
            *used.entry(rule.clone()).or_default() += 1;
            let mut h = HashWriter::new();
            for part in [
                attack.as_str(),
                target.as_str(),
                t.dataset_version.as_str(),
                behavior.as_str(),
                &t.trial().to_string(),
                &t.attempt.to_string(),
                judge.as_str(),
            ] {
                h.field(part.as_bytes());
            }
            let primary = match (config, target_lines.get(&target)) {
                (Some(c), line) => Location {
                    uri: Some(uri(c)),
                    start_line: line.copied(),
                    logical: None,
                    message: Some(format!("the target `{target}` in the run config")),
                },
                (None, _) => Location {
                    uri: Some(uri(&dir.join("run.json"))),
                    start_line: None,
                    logical: None,
                    message: Some("the run's resolved config".into()),
                },
            };
            let row = match dataset_files.get(&dataset) {
                Some(file) => Location {
                    uri: Some(uri(file)),
                    start_line: row_line(file, &behavior),
                    logical: None,
                    message: Some(format!("dataset row {behavior}")),
                },
                None => Location {
                    uri: None,
                    start_line: None,
                    logical: Some(format!("dataset/{dataset}/{behavior}")),
                    message: Some(format!("bundled dataset {dataset}, behavior {behavior}")),
                },
            };
            let mut props = Map::new();
            for (k, val) in [
                ("attack", json!(attack)),
                ("target", json!(target)),
                ("dataset", json!(dataset)),
                ("dataset_version", json!(t.dataset_version)),
                ("behavior_id", json!(behavior)),
                ("judge", json!(judge)),
                ("attempt", json!(t.attempt)),
            ] {
                props.insert(k.into(), val);
            }
            if let Some(tr) = t.trial {
                props.insert("trial".into(), json!(tr));
            }
            if let Some(tags) = cell_tags.get(&(
                attack.clone(),
                target.clone(),
                dataset.clone(),
                judge.clone(),
            )) {
                props.insert("tags".into(), json!(tags));
            }
            findings.push(Finding {
                rule_id: rule.clone(),
                level: Level::Error,
                message: format!(
                    "{attack} × {target}: {what} (behavior {behavior} of {dataset}; judge {judge}: {reason})"
                ),
                locations: vec![primary, row],
                related: vec![Location {
                    uri: Some(uri(&path)),
                    start_line: Some(line_no),
                    logical: None,
                    message: Some("the attempt's transcript".into()),
                }],
                fingerprint: h.finish_hex(),
                properties: props,
            });
        }
    }
    let mut rules = Vec::new();
    let mut counts = Vec::new();
    for (id, n) in &used {
        let title = tmap.title("owasp_llm", id).unwrap_or(id).to_string();
        let mut tags = vec!["security".to_string(), "llm".to_string(), mode.clone()];
        for fw in &tmap.frameworks {
            if fw.key != "owasp_llm" {
                continue;
            }
            tags.push(format!("{} {}", fw.name, fw.edition));
        }
        rules.push(Rule {
            id: id.clone(),
            name: title.clone(),
            description: format!(
                "{title} (OWASP Top 10 for LLM Applications 2025, {id}): an attempt of the run succeeded against a behavior the target should refuse"
            ),
            help_uri: Some("https://genai.owasp.org/llm-top-10/".into()),
            level: Level::Error,
            tags,
        });
        counts.push((id.clone(), title, *n));
    }
    Ok(RunFindings {
        summary,
        rules,
        findings,
        counts,
    })
}

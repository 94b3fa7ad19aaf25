//! `gauntlet import agentdojo LOGDIR --out RUN_DIR`: results AgentDojo's own harness
//! wrote, as a gauntlet run directory that `report`, the dashboard and `compare` read.
//!
//! The log directory is scanned ([`gauntlet_redteam::injection::agentdojo::import`]) and
//! described as a run config — the model as an `imported` target, each suite as an
//! `agentdojo` scenario source (with `user_tasks`/`injection_tasks` when the logs hold a
//! subset), each attack × pipeline defence as an `agentdojo` injection reading its cases
//! from the files — which then runs through the ordinary engine, so the artefacts are
//! exactly what `gauntlet run` writes for the same cases. No model is called and no
//! sidecar started. A log directory that is imported again gives byte-identical artefacts.
//!
//! `gauntlet import garak|promptfoo|inspect FILE --out RUN_DIR` does the same for another
//! red-team tool's result file ([`gauntlet_redteam::import`]): the tool's target as an
//! `imported` target, the file's prompts as the `imported` dataset (pinned by the file's
//! sha256), its recorded attempts as one `imported` attack per probe, plugin/strategy or
//! task (`source`, applying to that source's prompts only), and each of the tool's
//! own verdicts as an `imported` judge named for it (`garak:<detector>`, …), beside any
//! gauntlet judge given with `--judge` (judged offline: nothing is called).

use crate::error::CliError;
use crate::progress;
use clap::{Args, Subcommand};
use gauntlet_engine::plan::Plan;
use gauntlet_engine::run::{RunOptions, execute};
use gauntlet_redteam::config;
use gauntlet_redteam::import::Tool;
use gauntlet_redteam::injection::agentdojo::{self, import};
use gauntlet_redteam::registry::Registry;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Subcommand)]
pub(crate) enum ImportWhat {
    /// AgentDojo's result files (`python -m agentdojo.scripts.benchmark --logdir LOGDIR`).
    Agentdojo(AgentDojoArgs),
    /// garak's report (`garak … --report_prefix NAME` writes NAME.report.jsonl).
    Garak(ToolArgs),
    /// promptfoo's results file (`promptfoo eval -o results.json`; red-team runs too).
    Promptfoo(ToolArgs),
    /// Inspect's evaluation log (`.eval` or `.json`).
    Inspect(ToolArgs),
}

#[derive(Args)]
pub(crate) struct ToolArgs {
    /// The tool's result file.
    pub file: PathBuf,
    /// The run directory to write (its name is the run name).
    #[arg(long)]
    pub out: PathBuf,
    /// A gauntlet judge to judge the imported replies with as well (a name or inline
    /// YAML, as for rescore); repeatable. It must judge offline (no grader model).
    #[arg(long)]
    pub judge: Vec<String>,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(Args)]
pub(crate) struct AgentDojoArgs {
    /// The directory AgentDojo wrote (`<pipeline>/<suite>/<user_task>/<attack>/<injection_task>.json`).
    pub logdir: PathBuf,
    /// The run directory to write (its name is the run name).
    #[arg(long)]
    pub out: PathBuf,
    /// The model to import when the logs hold several (the pipeline name without its
    /// defence suffix).
    #[arg(long)]
    pub model: Option<String>,
    /// How the attack texts addressed the model (AgentDojo's model name: `Local model`
    /// for its local pipelines); part of the suites' version, so a `compare` with a
    /// gauntlet run pairs only runs that used the same texts.
    #[arg(long, default_value = agentdojo::DEFAULT_MODEL_NAME)]
    pub model_name: String,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
}

pub(crate) fn import(what: ImportWhat) -> Result<(), CliError> {
    match what {
        ImportWhat::Agentdojo(a) => import_agentdojo(a),
        ImportWhat::Garak(a) => import_tool(Tool::Garak, a),
        ImportWhat::Promptfoo(a) => import_tool(Tool::Promptfoo, a),
        ImportWhat::Inspect(a) => import_tool(Tool::Inspect, a),
    }
}

/// `gauntlet import garak|promptfoo|inspect` (see the module docs).
fn import_tool(tool: Tool, a: ToolArgs) -> Result<(), CliError> {
    let file = std::fs::canonicalize(&a.file)
        .map_err(|e| CliError::invalid(format!("cannot read {}: {e}", a.file.display())))?;
    let imported = gauntlet_redteam::import::parse_file(tool, &file)
        .map_err(|e| CliError::invalid(e.to_string()))?;
    let sha256 = gauntlet_redteam::datasets::imported::file_sha256(&file)
        .map_err(|e| CliError::invalid(format!("cannot read {}: {e}", file.display())))?;
    let mut judges: Vec<Value> = imported
        .judges()
        .into_iter()
        .map(|name| json!({"name": "imported", "params": {"name": name}}))
        .collect();
    for text in &a.judge {
        let spec = gauntlet_engine::stored::parse_judge_spec(text).map_err(CliError::invalid)?;
        judges.push(serde_json::to_value(&spec).expect("plugin specs serialise"));
    }
    if judges.is_empty() {
        return Err(CliError::invalid(format!(
            "{} holds no verdict of {}'s and no --judge was given: give --judge refusal_classifier (or another offline judge) to judge its replies",
            file.display(),
            tool.as_str()
        )));
    }
    // One attack per source (garak's probe, promptfoo's plugin/strategy, Inspect's
    // task), in name order, each over its own prompts only.
    let mut sources: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in &imported.records {
        let g = sources.entry(r.source.as_str()).or_insert(1);
        *g = (*g).max(r.generations.len());
    }
    let attacks: Vec<Value> = sources
        .iter()
        .map(|(source, g)| {
            json!({"name": "imported", "params": {"source": source, "generations": g}})
        })
        .collect();
    let (run_name, runs_dir) = out_parts(&a.out);
    let cfg = json!({
        "run_name": run_name,
        "targets": [{"name": "imported", "params": {"name": imported.target}}],
        "attacks": attacks,
        "datasets": [{"name": "imported", "params": {
            "tool": tool.as_str(),
            "file": file.display().to_string(),
            "sha256": sha256,
        }}],
        "judges": judges,
        "metrics": ["asr", "refusal_rate"],
    });
    let shown = file.with_extension("(imported)");
    let cfg = config::parse(&cfg.to_string(), &shown, &Registry).map_err(|e| {
        CliError::invalid(format!(
            "the results of {} do not make a valid run:\n{e}",
            file.display()
        ))
    })?;
    let plan = Plan::build(cfg).map_err(|e| CliError::invalid(format!("{e}")))?;
    if !a.quiet {
        eprintln!(
            "importing {} prompt(s) of {} {} against `{}` from {}",
            imported.records.len(),
            tool.as_str(),
            gauntlet_core::terminal::safe_text(&imported.tool_version),
            gauntlet_core::terminal::safe_text(&imported.target),
            file.display()
        );
        for n in &imported.notes {
            eprintln!("partial import: {}", gauntlet_core::terminal::safe_text(n));
        }
    }
    drop(imported);
    run_plan(plan, runs_dir, a.quiet)
}

/// The run name (the directory's name) and the runs directory of `--out`.
fn out_parts(out: &std::path::Path) -> (String, PathBuf) {
    let run_name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let runs_dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    (run_name, runs_dir)
}

/// Runs a plan of offline units into `runs_dir` and prints how it ended.
fn run_plan(plan: Plan, runs_dir: PathBuf, quiet: bool) -> Result<(), CliError> {
    let progress = progress::for_terminal(quiet, "units");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = rt.block_on(execute(
        plan,
        RunOptions {
            runs_dir,
            concurrency: None,
            stop: Arc::new(AtomicBool::new(false)),
        },
        progress,
    ));
    crate::run_cmd::print_outcome(result, None, false)
}

fn import_agentdojo(a: AgentDojoArgs) -> Result<(), CliError> {
    let logdir = std::fs::canonicalize(&a.logdir)
        .map_err(|e| CliError::invalid(format!("cannot read {}: {e}", a.logdir.display())))?;
    let scan = import::scan(&logdir).map_err(CliError::invalid)?;
    let model = match (&a.model, scan.models.len()) {
        (Some(m), _) if scan.models.contains_key(m) => m.clone(),
        (Some(m), _) => {
            return Err(CliError::invalid(format!(
                "{}: no pipeline of model `{m}`; it holds {}",
                logdir.display(),
                scan.models.keys().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
        (None, 1) => scan.models.keys().next().cloned().unwrap_or_default(),
        (None, _) => {
            return Err(CliError::invalid(format!(
                "{} holds the pipelines of several models ({}); import one at a time with --model",
                logdir.display(),
                scan.models.keys().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
    };
    let version = match scan.versions.len() {
        0 => agentdojo::DEFAULT_VERSION.to_string(),
        1 => scan.versions.iter().next().cloned().unwrap_or_default(),
        _ => {
            return Err(CliError::invalid(format!(
                "{} mixes benchmark versions ({}); import one version at a time",
                logdir.display(),
                scan.versions.iter().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
    };
    let cat = agentdojo::catalogue();
    let Some(tasks) = cat.versions.get(&version) else {
        return Err(CliError::invalid(format!(
            "benchmark version `{version}` is not one this gauntlet knows ({})",
            agentdojo::VERSIONS.join(", ")
        )));
    };
    let mut scenarios = Vec::new();
    for (suite, (users, injections)) in &scan.suites {
        let Some(all) = tasks.get(suite) else {
            continue;
        };
        let mut params = json!({"version": version, "suites": [suite], "model_name": a.model_name});
        // A subset only when the logs do not hold every task (the full suite keeps the
        // version a full gauntlet run has).
        let pick = |seen: &std::collections::BTreeSet<String>, all: &[String]| -> Option<Value> {
            (!seen.is_empty() && seen.len() < all.len())
                .then(|| json!(all.iter().filter(|t| seen.contains(*t)).collect::<Vec<_>>()))
        };
        if let Some(u) = pick(users, &all.user_tasks) {
            params["user_tasks"] = u;
        }
        if let Some(i) = pick(injections, &all.injection_tasks) {
            params["injection_tasks"] = i;
        }
        scenarios.push(json!({"name": "agentdojo", "params": params}));
    }
    let defenses = &scan.models[&model];
    let mut injections = Vec::new();
    // Benign cases last, as in examples/agentdojo.yaml.
    let mut attacks: Vec<&String> = scan.attacks.iter().filter(|a| *a != "none").collect();
    if scan.attacks.contains("none") {
        attacks.push(scan.attacks.get("none").expect("present"));
    }
    for attack in attacks {
        for d in defenses {
            let mut params = json!({
                "attack": attack,
                "logdir": logdir.display().to_string(),
                "model": model,
            });
            if let Some(d) = d {
                params["defense"] = json!(d);
            }
            injections.push(json!({"name": "agentdojo", "params": params}));
        }
    }
    let (run_name, runs_dir) = out_parts(&a.out);
    let cfg = json!({
        "run_name": run_name,
        "targets": [{"name": "imported", "params": {"name": model}}],
        "scenarios": scenarios,
        "injections": injections,
        "judges": ["agentdojo"],
        "metrics": ["utility_baseline", "utility_under_attack", "injection_success_rate", "agentdojo_security_rate"],
    });
    let shown = logdir.join("(imported)");
    let cfg = config::parse(&cfg.to_string(), &shown, &Registry).map_err(|e| {
        CliError::invalid(format!(
            "the logs of {} do not make a valid run:\n{e}",
            logdir.display()
        ))
    })?;
    let plan = Plan::build(cfg).map_err(|e| CliError::invalid(format!("{e}")))?;
    if !a.quiet {
        eprintln!(
            "importing {} result files of `{model}` (benchmark {version}) from {}",
            scan.files,
            logdir.display()
        );
    }
    run_plan(plan, runs_dir, a.quiet)
}

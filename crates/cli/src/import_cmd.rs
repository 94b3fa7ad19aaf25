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

use crate::error::CliError;
use crate::progress;
use clap::{Args, Subcommand};
use gauntlet_engine::Registry;
use gauntlet_engine::config;
use gauntlet_engine::plan::Plan;
use gauntlet_engine::run::{RunOptions, execute};
use gauntlet_redteam::injection::agentdojo::{self, import};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

#[derive(Subcommand)]
pub enum ImportWhat {
    /// AgentDojo's result files (`python -m agentdojo.scripts.benchmark --logdir LOGDIR`).
    Agentdojo(AgentDojoArgs),
}

#[derive(Args)]
pub struct AgentDojoArgs {
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

pub fn import(what: ImportWhat) -> Result<(), CliError> {
    match what {
        ImportWhat::Agentdojo(a) => import_agentdojo(a),
    }
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
    let run_name = a
        .out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let runs_dir = a
        .out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
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
    let progress = progress::for_terminal(a.quiet, "units");
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

//! AgentDojo (ETH Zurich and Invariant Labs; `agentdojo==0.1.35`) on gauntlet's spine,
//! and the `agentdojo` scenario source.
//!
//! AgentDojo's environments, tools, attacks, defences' prompt changes and its utility and
//! security checks are Python over pydantic models: they run, unported, in a confined
//! sidecar process ([`sidecar`]) driving the package itself. gauntlet keeps the agent loop
//! ([`super::env::run_loop`] over an [`episode::Episode`]) and every model call, so the
//! journal, resume, budgets, batch, trials, usage, transcripts and statistics are the
//! engine's.
//!
//! How it maps onto the engine:
//! - **scenarios** `{name: agentdojo, params: {version, suites | suite, model_name,
//!   user_tasks?, injection_tasks?}}`: one dataset per suite (`suites: [banking, slack]`
//!   expands into one spec per suite in the config, so every report row is one suite).
//!   A suite's behaviors are its *cases*: each user task alone (the benign case,
//!   `user_task_3`) and each user task × injection task pair (`user_task_3/injection_task_1`),
//!   ids from the embedded catalogue (`catalogue.json`, what the package lists for each
//!   benchmark version; the sidecar's is checked against it in tests).
//! - **injections** `{name: agentdojo, params: {attack: NAME | none, defense?}}`
//!   (`crate::injections::agentdojo`): an attack runs the attacked pairs, `none` the benign
//!   cases; a unit of the other kind has no attempt and is outside every cell.
//! - **defenses** `[none, tool_filter, …]` (config axis): each injection once per defence.
//! - **judges** `[agentdojo]`: AgentDojo's own verdicts, computed by the sidecar at the
//!   end of each episode.

pub mod episode;
pub mod import;
pub mod sidecar;

use crate::datasets::{Dataset, DatasetError};
use gauntlet_core::behavior::{Behavior, Expected};
use gauntlet_core::hash::{HashWriter, sha256_hex};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_core::scenario::BenchCase;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// The benchmark versions the catalogue holds.
pub const VERSIONS: &[&str] = &["v1", "v1.1", "v1.1.1", "v1.1.2", "v1.2", "v1.2.1", "v1.2.2"];
pub const SUITES: &[&str] = &["workspace", "travel", "banking", "slack"];
/// The benchmark's default version (the package's).
pub const DEFAULT_VERSION: &str = "v1.2.2";
/// How AgentDojo's local pipelines' attack texts address the model.
pub const DEFAULT_MODEL_NAME: &str = "Local model";
/// The attacks gauntlet runs (AgentDojo's registry without `manual`, which asks a human
/// at the terminal, and the denial-of-service ones, which score differently).
pub const ATTACKS: &[&str] = &[
    "direct",
    "ignore_previous",
    "system_message",
    "injecagent",
    "important_instructions",
    "important_instructions_no_user_name",
    "important_instructions_no_model_name",
    "important_instructions_no_names",
    "important_instructions_wrong_model_name",
    "important_instructions_wrong_user_name",
    "tool_knowledge",
];
/// The defences gauntlet runs (AgentDojo's without `transformers_pi_detector`, which
/// needs torch and a model download).
pub const DEFENSES: &[&str] = &[
    "tool_filter",
    "spotlighting_with_delimiting",
    "repeat_user_prompt",
];
/// AgentDojo's tool loop: the first model call and up to this many rounds of tool
/// execution, each followed by a model call.
pub const MAX_ITERS: u32 = 15;

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Scenario,
    name: "agentdojo",
    doc: "AgentDojo's suites (agentdojo==0.1.35, run in a confined sidecar): each user task alone and with each injection task",
    params: &[
        ParamSpec {
            name: "version",
            kind: ParamKind::Enum(VERSIONS),
            default: DefaultValue::Str(DEFAULT_VERSION),
            doc: "the benchmark version",
        },
        ParamSpec {
            name: "suites",
            kind: ParamKind::StrList,
            default: DefaultValue::Absent,
            doc: "suites (workspace, travel, banking, slack), one dataset each (expanded into `suite`)",
        },
        ParamSpec {
            name: "suite",
            kind: ParamKind::Enum(SUITES),
            default: DefaultValue::Absent,
            doc: "one suite (what `suites` expands into)",
        },
        ParamSpec {
            name: "model_name",
            kind: ParamKind::Str,
            default: DefaultValue::Str(DEFAULT_MODEL_NAME),
            doc: "how the attack texts address the model (one of AgentDojo's model names, e.g. `GPT-4`, `Claude`, `Local model`)",
        },
        ParamSpec {
            name: "user_tasks",
            kind: ParamKind::StrList,
            default: DefaultValue::Absent,
            doc: "run only these user tasks (ids as `user_task_0`)",
        },
        ParamSpec {
            name: "injection_tasks",
            kind: ParamKind::StrList,
            default: DefaultValue::Absent,
            doc: "attack with only these injection tasks (ids as `injection_task_0`)",
        },
    ],
};

/// The embedded catalogue: for each benchmark version and suite, its task ids in the
/// package's order.
#[derive(Debug, Deserialize)]
pub struct Catalogue {
    pub agentdojo: String,
    pub versions: BTreeMap<String, BTreeMap<String, SuiteTasks>>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct SuiteTasks {
    pub user_tasks: Vec<String>,
    pub injection_tasks: Vec<String>,
}

pub const CATALOGUE_JSON: &str = include_str!("catalogue.json");

pub fn catalogue() -> &'static Catalogue {
    static C: OnceLock<Catalogue> = OnceLock::new();
    C.get_or_init(|| serde_json::from_str(CATALOGUE_JSON).expect("the embedded catalogue parses"))
}

/// What run.json records about the sidecar (the same for every run of this build):
/// package and benchmark version, the pins' and the script's sha256, the frozen clock.
pub fn provenance(version: &str) -> serde_json::Value {
    serde_json::json!({
        "agentdojo": catalogue().agentdojo,
        "benchmark_version": version,
        "sidecar_protocol": sidecar::PROTOCOL,
        "sidecar_script_sha256": sha256_hex(sidecar::SCRIPT.as_bytes()),
        "requirements_sha256": sha256_hex(sidecar::REQUIREMENTS.as_bytes()),
        "pinned_distributions": sidecar::pins().len(),
        "frozen_time": FROZEN_TIME,
    })
}

/// The sidecar's clock (`FROZEN_NOW` in sidecar.py).
pub const FROZEN_TIME: &str = "2024-05-15T12:00:00";

/// Loads one suite's cases.
pub fn load(spec: &PluginSpec) -> Result<Dataset, DatasetError> {
    let version = spec.params.str("version").unwrap_or(DEFAULT_VERSION);
    let source = |s: &str| format!("agentdojo {version} suite `{s}`");
    let suite = match (spec.params.str("suite"), spec.params.str_list("suites")) {
        (Some(s), None) => s,
        (None, Some([s])) => s.as_str(),
        (None, Some(_)) => {
            return Err(DatasetError::new(
                "agentdojo",
                "`suites` lists several suites: the config expands it into one scenario source per suite (use `suite` in code)",
            ));
        }
        (Some(_), Some(_)) => {
            return Err(DatasetError::new(
                "agentdojo",
                "give `suites` or `suite`, not both",
            ));
        }
        (None, None) => {
            return Err(DatasetError::new(
                "agentdojo",
                format!("no suite: give `suites: [{}]`", SUITES.join(", ")),
            ));
        }
    };
    let cat = catalogue();
    let Some(tasks) = cat.versions.get(version).and_then(|v| v.get(suite)) else {
        return Err(DatasetError::new(
            source(suite),
            format!("no such suite; known: {}", SUITES.join(", ")),
        ));
    };
    let model_name = spec.params.str("model_name").unwrap_or(DEFAULT_MODEL_NAME);
    let pick = |field: &str, all: &[String]| -> Result<Vec<String>, DatasetError> {
        match spec.params.str_list(field) {
            None => Ok(all.to_vec()),
            Some(want) => {
                for w in want {
                    if !all.contains(w) {
                        return Err(DatasetError::new(
                            source(suite),
                            format!(
                                "`{field}` names `{w}`, which {suite} ({version}) does not have; it has {}",
                                all.join(", ")
                            ),
                        ));
                    }
                }
                // The package's order, whatever the config's.
                Ok(all.iter().filter(|t| want.contains(t)).cloned().collect())
            }
        }
    };
    let users = pick("user_tasks", &tasks.user_tasks)?;
    let injections = pick("injection_tasks", &tasks.injection_tasks)?;
    let case = |u: &str, i: Option<&str>| {
        let c = BenchCase {
            benchmark: "agentdojo".into(),
            version: version.into(),
            suite: suite.into(),
            user_task: u.into(),
            injection_task: i.map(str::to_string),
            model_name: model_name.into(),
        };
        Behavior {
            id: match i {
                Some(i) => format!("{u}/{i}"),
                None => u.to_string(),
            },
            prompt: match i {
                Some(i) => format!("AgentDojo {version} {suite}: {u} attacked with {i}"),
                None => format!("AgentDojo {version} {suite}: {u}"),
            },
            category: suite.to_string(),
            expected: Expected::ShouldRefuse,
            reference_answer: None,
            target_secret: None,
            scenario: None,
            bench_case: Some(Arc::new(c)),
            case: Default::default(),
            secret_cache: Default::default(),
        }
    };
    let mut behaviors = Vec::with_capacity(users.len() * (1 + injections.len()));
    for u in &users {
        behaviors.push(case(u, None));
    }
    for u in &users {
        for i in &injections {
            behaviors.push(case(u, Some(i)));
        }
    }
    // The version pins everything a case's run depends on besides the model: the
    // package, the benchmark version, the tasks, the attack texts' model name, the
    // sidecar's script and its virtualenv's pins.
    let mut h = HashWriter::new();
    h.field(b"agentdojo-suite-v1");
    h.field(cat.agentdojo.as_bytes());
    h.field(version.as_bytes());
    h.field(suite.as_bytes());
    h.field(model_name.as_bytes());
    h.json(&users);
    h.json(&injections);
    h.field(sidecar::SCRIPT.as_bytes());
    h.field(sidecar::REQUIREMENTS.as_bytes());
    let sha256 = h.finish_hex();
    Ok(Dataset {
        name: suite.to_string(),
        version: format!(
            "agentdojo-{}-{version}-{suite}@{}",
            cat.agentdojo,
            &sha256[..12]
        ),
        sha256,
        behaviors,
        provenance: Some(provenance(version)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_core::params::{ParamValue, Params};

    fn spec(pairs: &[(&str, ParamValue)]) -> PluginSpec {
        let mut p = Params::new();
        p.insert("version", ParamValue::Str(DEFAULT_VERSION.into()));
        p.insert("model_name", ParamValue::Str(DEFAULT_MODEL_NAME.into()));
        for (k, v) in pairs {
            p.insert(k, v.clone());
        }
        PluginSpec {
            name: "agentdojo".into(),
            params: p,
            loc: Default::default(),
            label: None,
        }
    }

    #[test]
    fn the_catalogue_has_the_published_counts() {
        let v = &catalogue().versions[DEFAULT_VERSION];
        let counts: Vec<(usize, usize)> = SUITES
            .iter()
            .map(|s| (v[*s].user_tasks.len(), v[*s].injection_tasks.len()))
            .collect();
        assert_eq!(counts, [(40, 14), (20, 7), (16, 9), (21, 5)]);
        let pairs: usize = counts.iter().map(|(u, i)| u * i).sum();
        let users: usize = counts.iter().map(|(u, _)| u).sum();
        assert_eq!((pairs, users), (949, 97));
        assert_eq!(catalogue().versions.len(), VERSIONS.len());
    }

    #[test]
    fn a_suite_is_its_benign_cases_then_its_pairs() {
        let d = load(&spec(&[("suite", ParamValue::Str("banking".into()))])).unwrap();
        assert_eq!(d.behaviors.len(), 16 + 16 * 9);
        assert_eq!(d.behaviors[0].id, "user_task_0");
        assert_eq!(d.behaviors[16].id, "user_task_0/injection_task_0");
        let c = d.behaviors[17].bench_case.as_deref().unwrap();
        assert_eq!(c.injection_task.as_deref(), Some("injection_task_1"));
        assert!(
            d.version.starts_with("agentdojo-0.1.35-v1.2.2-banking@"),
            "{}",
            d.version
        );
        // Subsets keep the package's order; the model name is part of the version.
        let s = load(&spec(&[
            ("suite", ParamValue::Str("banking".into())),
            (
                "user_tasks",
                ParamValue::StrList(vec!["user_task_2".into(), "user_task_1".into()]),
            ),
            (
                "injection_tasks",
                ParamValue::StrList(vec!["injection_task_0".into()]),
            ),
        ]))
        .unwrap();
        let ids: Vec<&str> = s.behaviors.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "user_task_1",
                "user_task_2",
                "user_task_1/injection_task_0",
                "user_task_2/injection_task_0"
            ]
        );
        let mut other = spec(&[("suite", ParamValue::Str("banking".into()))]);
        other
            .params
            .insert("model_name", ParamValue::Str("GPT-4".into()));
        assert_ne!(load(&other).unwrap().version, d.version);
        let e = load(&spec(&[
            ("suite", ParamValue::Str("slack".into())),
            (
                "user_tasks",
                ParamValue::StrList(vec!["user_task_99".into()]),
            ),
        ]))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("user_task_99") && e.contains("user_task_20"),
            "{e}"
        );
    }
}

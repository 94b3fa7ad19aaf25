//! The `agentdojo` scenario source: one dataset per suite, its behaviors the suite's
//! cases (each user task alone, then each user task with each injection task).

use super::benchmark::{
    DEFAULT_MODEL_NAME, DEFAULT_VERSION, SUITES, VERSIONS, catalogue, provenance,
};
use super::sidecar;
use crate::datasets::{Dataset, DatasetError};
use gauntlet_core::behavior::{Behavior, Expected};
use gauntlet_core::hash::HashWriter;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_core::scenario::BenchCase;
use std::sync::Arc;

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

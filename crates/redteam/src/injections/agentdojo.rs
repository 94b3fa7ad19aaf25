//! `agentdojo`: runs AgentDojo cases (from the `agentdojo` scenario source) through one of
//! AgentDojo's attacks, or none, under one of its defences, or none.
//!
//! An attack runs each attacked case (user task × injection task): the sidecar places the
//! attack's texts in the injection vectors the user task's ground truth reads, exactly as
//! AgentDojo's harness does. `attack: none` runs each benign case (a user task alone), the
//! utility baseline. A case of the other kind gets no attempt and is outside every cell,
//! so one scenario source serves both. The `defense` param is set by the config's
//! `defenses:` axis (it may also be written here). Step limit: AgentDojo's (the first
//! model call and 15 rounds of tool calls), whatever the run's `max_steps`.

use crate::attack::{Attack, Attempt, AttemptError, CallModel, PlannedCalls};
use crate::error::BuildError;
use crate::injection::agentdojo::{episode, import, sidecar::Sidecar};
use crate::judge::InjectionEntry;
use crate::plugin::Entry;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_models::{BoxFuture, ModelError};
use std::sync::Arc;

/// `attack`'s allowed values: `none` and every attack gauntlet runs ([`ATTACKS`]).
const ATTACK_NAMES: &[&str] = &[
    "none",
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

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "agentdojo",
    doc: "AgentDojo's attacks and defences on `agentdojo` scenarios, scored by the `agentdojo` judge",
    params: &[
        ParamSpec {
            name: "attack",
            kind: ParamKind::Enum(ATTACK_NAMES),
            default: DefaultValue::Required,
            doc: "AgentDojo's attack (e.g. important_instructions), or `none` for the benign cases",
        },
        ParamSpec {
            name: "defense",
            kind: ParamKind::Enum(import::PIPELINE_DEFENSES),
            default: DefaultValue::Absent,
            doc: "AgentDojo's defence (set by the config's `defenses:` axis; transformers_pi_detector only for imported runs)",
        },
        ParamSpec {
            name: "logdir",
            kind: ParamKind::Str,
            default: DefaultValue::Absent,
            doc: "read each case from AgentDojo's result files in this directory instead of running it (what `gauntlet import agentdojo` writes)",
        },
        ParamSpec {
            name: "model",
            kind: ParamKind::Str,
            default: DefaultValue::Absent,
            doc: "with `logdir`: the model part of the pipeline directory names (`<model>` or `<model>-<defense>`)",
        },
    ],
};

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[
    ("owasp_agentic", &["T2", "T6"]),
    ("owasp_agentic_2026", &["ASI01", "ASI02"]),
    ("mitre_atlas", &["AML.T0051.001", "AML.T0053"]),
    ("eu_ai_act", &["Art. 15", "Art. 55"]),
];

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, _| Ok(Box::new(AgentDojoInjection::new(s.clone())?)),
};

pub struct AgentDojoInjection {
    spec: PluginSpec,
    attack: Option<String>,
    defense: Option<String>,
    /// Where the cases come from: the sidecar, or AgentDojo's result files.
    source: Source,
}

enum Source {
    Sidecar(Arc<Sidecar>),
    Logs {
        logdir: std::path::PathBuf,
        model: String,
    },
}

impl AgentDojoInjection {
    pub fn new(spec: PluginSpec) -> Result<Self, BuildError> {
        let attack = spec.params.str("attack").unwrap_or("none");
        let defense = spec.params.str("defense").map(str::to_string);
        let source = match (spec.params.str("logdir"), spec.params.str("model")) {
            (Some(l), Some(m)) => Source::Logs {
                logdir: l.into(),
                model: m.to_string(),
            },
            (None, None) => {
                if defense.as_deref() == Some("transformers_pi_detector") {
                    return Err(BuildError::param(
                        "defense `transformers_pi_detector` needs torch and a model download, which the sidecar's virtualenv does not have (it can only be imported from AgentDojo's logs)",
                    ));
                }
                Source::Sidecar(Sidecar::shared(
                    &crate::injection::agentdojo::sidecar::default_venv(),
                ))
            }
            _ => {
                return Err(BuildError::param(
                    "`logdir` and `model` go together (an imported run)",
                ));
            }
        };
        Ok(AgentDojoInjection {
            attack: (attack != "none").then(|| attack.to_string()),
            defense,
            source,
            spec,
        })
    }
}

impl Attack for AgentDojoInjection {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn max_attempts(&self) -> u32 {
        1
    }
    fn planned_calls(&self) -> PlannedCalls {
        if matches!(self.source, Source::Logs { .. }) {
            return PlannedCalls::default();
        }
        let filter = u64::from(self.defense.as_deref() == Some("tool_filter"));
        PlannedCalls {
            target: u64::from(episode::MAX_CALLS) + filter,
            ..Default::default()
        }
    }
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        target: &'a dyn CallModel,
        _seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(async move {
            let Some(case) = behavior.bench_case.as_deref() else {
                return Ok(vec![Attempt {
                    index: 0,
                    transcript: Vec::new(),
                    response: Err(AttemptError::NotAgentDojoCase {
                        behavior: behavior.id.clone(),
                    }),
                    query_count: 0,
                    metadata: serde_json::json!({"injection": "agentdojo"}),
                }]);
            };
            // An attack runs the attacked cases, `none` the benign ones.
            if case.injection_task.is_some() != self.attack.is_some() {
                return Ok(Vec::new());
            }
            let a = match &self.source {
                Source::Sidecar(sidecar) => {
                    episode::attempt(
                        sidecar,
                        case,
                        self.attack.as_deref(),
                        self.defense.as_deref(),
                        target,
                    )
                    .await?
                }
                Source::Logs { logdir, model } => import::attempt(
                    logdir,
                    model,
                    case,
                    self.attack.as_deref(),
                    self.defense.as_deref(),
                ),
            };
            Ok(vec![a])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attack_names_are_none_and_the_attacks() {
        assert_eq!(ATTACK_NAMES[0], "none");
        assert_eq!(&ATTACK_NAMES[1..], crate::injection::agentdojo::ATTACKS);
    }
}

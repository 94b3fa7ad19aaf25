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

use crate::attack::{Attack, Attempt, CallModel, PlannedCalls};
use crate::injection::agentdojo::{DEFENSES, episode, sidecar::Sidecar};
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
            kind: ParamKind::Enum(DEFENSES),
            default: DefaultValue::Absent,
            doc: "AgentDojo's defence (set by the config's `defenses:` axis)",
        },
    ],
};

pub struct AgentDojoInjection {
    spec: PluginSpec,
    attack: Option<String>,
    defense: Option<String>,
    sidecar: Arc<Sidecar>,
}

impl AgentDojoInjection {
    pub fn new(spec: PluginSpec) -> Result<Self, String> {
        let attack = spec.params.str("attack").unwrap_or("none");
        Ok(AgentDojoInjection {
            attack: (attack != "none").then(|| attack.to_string()),
            defense: spec.params.str("defense").map(str::to_string),
            sidecar: Sidecar::shared(&crate::injection::agentdojo::sidecar::default_venv()),
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
                    response: Err(format!(
                        "behavior `{}` is not an AgentDojo case; the `agentdojo` injection runs `agentdojo` scenarios only",
                        behavior.id
                    )),
                    query_count: 0,
                    metadata: serde_json::json!({"injection": "agentdojo"}),
                }]);
            };
            // An attack runs the attacked cases, `none` the benign ones.
            if case.injection_task.is_some() != self.attack.is_some() {
                return Ok(Vec::new());
            }
            let a = episode::attempt(
                &self.sidecar,
                case,
                self.attack.as_deref(),
                self.defense.as_deref(),
                target,
            )
            .await?;
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

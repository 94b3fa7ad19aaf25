//! `injecagent`: runs InjecAgent's cases (scenarios `injecagent`), whose attacker
//! instruction is already planted in the user tool's output, in one of the paper's two
//! agent formats: `native` function calling (which `tool_protocol: prompted` turns into
//! text at the target layer) or the `react` text prompt. Data stealing runs its second
//! step as the paper does (see [`crate::injecagent::runner`]). `simulator`: a model
//! that simulates the attacker tool's response when the published responses have none
//! for the parameters the agent wrote (its calls count under the attacker role); without
//! one, such a step 2 is an error.

use crate::attack::{Attack, AttackCtx, Attempt, AttemptError, CallModel, PlannedCalls};
use crate::injecagent::{Case, Format, runner};
use crate::judge::InjectionEntry;
use crate::plugin::Entry;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_models::{BoxFuture, ModelError};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Injection,
    name: "injecagent",
    doc: "InjecAgent's cases (scenarios: injecagent) in the paper's function-calling (native) or \
          ReAct text (react) format; data stealing in two steps",
    params: &[
        ParamSpec {
            name: "format",
            kind: ParamKind::Enum(&["native", "react"]),
            default: DefaultValue::Str("native"),
            doc: "native: the case as a tool-calling conversation (fine-tuned agents); react: the \
                  paper's ReAct prompt (prompted agents)",
        },
        ParamSpec {
            name: "simulator",
            kind: ParamKind::Spec(Axis::Target),
            default: DefaultValue::Absent,
            doc: "model that simulates the attacker tool's response for step 2 when the published \
                  responses have none (absent: such a step is an error)",
        },
    ],
};

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[
    ("owasp_llm", &["LLM01:2025"]),
    ("owasp_agentic", &["T2", "T6"]),
    ("owasp_agentic_2026", &["ASI01", "ASI02"]),
    ("mitre_atlas", &["AML.T0051.001", "AML.T0053"]),
    ("eu_ai_act", &["Art. 15", "Art. 55"]),
];

/// This injection's registration (listed in `ENTRIES` in `injections/mod.rs`).
pub const ENTRY: InjectionEntry = Entry {
    info: INFO,
    build: |s, _| Ok(Box::new(InjecAgentInjection::new(s.clone()))),
};

pub struct InjecAgentInjection {
    spec: PluginSpec,
    format: Format,
    simulator: Option<PluginSpec>,
}

impl InjecAgentInjection {
    pub fn new(spec: PluginSpec) -> Self {
        let format = match spec.params.str("format") {
            Some("react") => Format::React,
            _ => Format::Native,
        };
        let simulator = spec.params.spec("simulator").cloned();
        InjecAgentInjection {
            spec,
            format,
            simulator,
        }
    }

    async fn attempts(
        &self,
        behavior: &Behavior,
        target: &dyn CallModel,
        simulator: Option<&dyn CallModel>,
        seed: u64,
    ) -> Result<Vec<Attempt>, ModelError> {
        let Some(case) = behavior.case.get::<Case>() else {
            return Ok(vec![Attempt {
                index: 0,
                transcript: Vec::new(),
                response: Err(AttemptError::NotInjecAgentCase {
                    behavior: behavior.id.clone(),
                }),
                query_count: 0,
                metadata: serde_json::json!({"injection": "injecagent"}),
            }]);
        };
        runner::run(case, self.format, target, simulator, seed).await
    }
}

impl Attack for InjecAgentInjection {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn max_attempts(&self) -> u32 {
        2
    }
    fn planned_calls(&self) -> PlannedCalls {
        PlannedCalls {
            target: 2,
            attacker: u64::from(self.simulator.is_some()),
            ..Default::default()
        }
    }
    fn attacker(&self) -> Option<&PluginSpec> {
        self.simulator.as_ref()
    }
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        target: &'a dyn CallModel,
        seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(self.attempts(behavior, target, None, seed))
    }
    fn run_ctx<'a>(
        &'a self,
        behavior: &'a Behavior,
        ctx: AttackCtx<'a>,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(self.attempts(behavior, ctx.target, ctx.attacker, ctx.seed))
    }
}

//! `imported`: the attempts another tool made, as its result file recorded them
//! (`gauntlet import`). It reads them from the `imported` dataset's behaviors and never
//! calls the target: each reply the tool recorded for the prompt is one attempt, a reply
//! the tool recorded as an error an errored attempt, and the tool's verdicts ride in the
//! attempt's metadata (`verdicts`, by judge name) for the `imported` judge.
//!
//! With `source` it is the attack of one probe (garak), plugin/strategy (promptfoo) or
//! task (Inspect): it applies to that source's prompts only, so the plan has units for
//! those alone and each source is a cell of its own (labelled with its name).

use crate::attack::{Attack, Attempt, AttemptError, CallModel};
use crate::datasets::imported::ImportedCase;
use crate::import::VerdictValue;
use crate::judge::AttackEntry;
use crate::plugin::Entry;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::message::{ChatResponse, Message, StopReason};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_models::{BoxFuture, ModelError};
use serde_json::{Map, Value, json};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Attack,
    name: "imported",
    doc: "the attempts another tool recorded (imported dataset only; never calls the target)",
    params: &[
        ParamSpec {
            name: "source",
            kind: ParamKind::Str,
            default: DefaultValue::Absent,
            doc: "the tool's probe, plugin/strategy or task whose attempts this attack replays (its prompts only); unset, every prompt of the file",
        },
        ParamSpec {
            name: "generations",
            kind: ParamKind::Int {
                min: 1,
                max: 1_000_000,
            },
            default: DefaultValue::Int(1),
            doc: "the most replies the tool recorded for one prompt (for planning)",
        },
    ],
};

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[];

/// This attack's registration (listed in `ENTRIES` in `attacks/mod.rs`).
pub const ENTRY: AttackEntry = Entry {
    info: INFO,
    build: |s, _| Ok(Box::new(ImportedAttack::new(s.clone()))),
};

pub struct ImportedAttack {
    spec: PluginSpec,
}

impl ImportedAttack {
    pub fn new(spec: PluginSpec) -> Self {
        ImportedAttack { spec }
    }
}

/// The attempts of one imported prompt.
pub fn attempts(behavior: &Behavior) -> Vec<Attempt> {
    let Some(case) = behavior.case.get::<ImportedCase>() else {
        return vec![Attempt {
            index: 0,
            transcript: vec![Message::user(behavior.prompt.clone())],
            response: Err(AttemptError::Stored(format!(
                "behavior `{}` is not an imported prompt: the imported attack reads the imported dataset only",
                behavior.id
            ))),
            query_count: 0,
            metadata: Value::Null,
        }];
    };
    case.generations
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let mut verdicts = Map::new();
            for v in &g.verdicts {
                let value = match &v.value {
                    VerdictValue::Decided { hit, score, reason } => {
                        json!({"hit": hit, "score": score, "reason": reason})
                    }
                    VerdictValue::Unreadable(why) => json!({"error": why}),
                };
                verdicts.insert(v.judge.clone(), value);
            }
            let mut transcript = vec![Message::user(behavior.prompt.clone())];
            let response = match &g.reply {
                Ok(text) => {
                    transcript.push(Message::assistant(text.clone()));
                    Ok(ChatResponse {
                        content: text.clone(),
                        stop_reason: StopReason::Stop,
                        tool_calls: Vec::new(),
                        usage: None,
                        first_token_logprobs: None,
                        evidence: None,
                    })
                }
                Err(e) => Err(AttemptError::Stored(e.clone())),
            };
            Attempt {
                index: i as u32,
                transcript,
                response,
                query_count: 0,
                metadata: json!({"source": case.source, "applied": *case.applied, "verdicts": verdicts}),
            }
        })
        .collect()
}

impl Attack for ImportedAttack {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn applies_to(&self, behavior: &Behavior) -> bool {
        match self.spec.params.str("source") {
            None => true,
            Some(source) => behavior
                .case
                .get::<ImportedCase>()
                .is_some_and(|c| c.source == source),
        }
    }
    fn max_attempts(&self) -> u32 {
        self.spec
            .params
            .int("generations")
            .map_or(1, |n| n.clamp(1, i64::from(u32::MAX)) as u32)
    }
    fn planned_calls(&self) -> crate::attack::PlannedCalls {
        crate::attack::PlannedCalls::default()
    }
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        _target: &'a dyn CallModel,
        _seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(std::future::ready(Ok(attempts(behavior))))
    }
}

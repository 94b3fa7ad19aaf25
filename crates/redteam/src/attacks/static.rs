//! `static`: sends the behavior's prompt verbatim, once, optionally after a system prompt.
//! The undefended baseline every other attack is compared against.

use crate::attack::{Attack, Attempt, CallModel, TRANSFORMS};
use crate::judge::AttackEntry;
use crate::plugin::Entry;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::message::Message;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_models::{BoxFuture, ModelError};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Attack,
    name: "static",
    doc: "the behavior's prompt verbatim, one attempt (the undefended baseline)",
    params: &[
        ParamSpec {
            name: "system_prompt",
            kind: ParamKind::Str,
            default: DefaultValue::Absent,
            doc: "an optional system message sent before the prompt",
        },
        TRANSFORMS,
    ],
};

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[
    ("mitre_atlas", &["AML.T0051.000"]),
    ("eu_ai_act", &["Art. 15", "Art. 55"]),
];

/// This attack's registration (listed in `ENTRIES` in `attacks/mod.rs`).
pub const ENTRY: AttackEntry = Entry {
    info: INFO,
    build: |s, _| Ok(Box::new(StaticAttack::new(s.clone()))),
};

pub struct StaticAttack {
    spec: PluginSpec,
}

impl StaticAttack {
    pub fn new(spec: PluginSpec) -> Self {
        StaticAttack { spec }
    }
}

impl Attack for StaticAttack {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn max_attempts(&self) -> u32 {
        1
    }
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        target: &'a dyn CallModel,
        seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(async move {
            let mut messages = Vec::with_capacity(2);
            if let Some(sys) = self.spec.params.str("system_prompt") {
                messages.push(Message::system(sys));
            }
            messages.push(Message::user(behavior.prompt.clone()));
            let a =
                Attempt::single_turn(target, 0, messages, seed, serde_json::Value::Null).await?;
            Ok(vec![a])
        })
    }
}

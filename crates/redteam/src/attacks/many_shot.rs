//! `many_shot`: many-shot jailbreaking (Anil et al. 2024) with a scaling sweep. The
//! request follows a long faux dialogue in which an assistant helpfully answers question
//! after question; the attack sends it with 1, 2, 4, … up to `shots` faux exchanges (one
//! attempt per count, all of them: the point is the curve), and the run reports ASR at
//! each shot count with Wilson intervals (see [`crate::curves`]). With `sweep: false`
//! it makes one attempt at `shots`.
//!
//! The faux exchanges are gauntlet's own benign dialogues (refusal-probe-style questions
//! with harmless answers), drawn once per unit in a seeded order, so the shots of a
//! smaller count are the first shots of every larger one. `format: messages` sends them
//! as real user/assistant turns instead of one user message.

use crate::attack::{Attack, Attempt, CallModel, TRANSFORMS};
use crate::curves::{CurveKind, CurveSpec};
use crate::error::BuildError;
use crate::judge::AttackEntry;
use crate::plugin::Entry;
use crate::transforms::{dialogue, pick_shots};
use gauntlet_core::behavior::Behavior;
use gauntlet_core::message::Message;
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use gauntlet_core::rng::{derive_u64, rng_for};
use gauntlet_models::{BoxFuture, ModelError};

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Attack,
    name: "many_shot",
    doc: "many-shot jailbreaking (Anil et al. 2024): the request after 1, 2, 4, … shots benign faux dialogues; reports ASR vs shots",
    params: &[
        ParamSpec {
            name: "shots",
            kind: ParamKind::Int { min: 1, max: 1024 },
            default: DefaultValue::Int(64),
            doc: "the largest number of faux exchanges before the request",
        },
        ParamSpec {
            name: "sweep",
            kind: ParamKind::Bool,
            default: DefaultValue::Bool(true),
            doc: "one attempt per shot count 1, 2, 4, …, shots (false: one attempt at shots)",
        },
        ParamSpec {
            name: "format",
            kind: ParamKind::Enum(&["inline", "messages"]),
            default: DefaultValue::Str("inline"),
            doc: "inline: one user message holding the dialogue; messages: real user/assistant turns",
        },
        TRANSFORMS,
    ],
};

/// Its threat-map row (`attacks` in `taxonomy/threat_map.json`): framework key and
/// entry ids.
pub const THREAT: gauntlet_core::taxonomy::ThreatEntry = &[
    ("mitre_atlas", &["AML.T0051.000", "AML.T0054", "AML.T0065"]),
    ("eu_ai_act", &["Art. 15", "Art. 55"]),
];

/// This attack's registration (listed in `ENTRIES` in `attacks/mod.rs`).
pub const ENTRY: AttackEntry = Entry {
    info: INFO,
    build: |s, _| Ok(Box::new(ManyShot::new(s.clone())?)),
};

/// 1, 2, 4, … below `max`, then `max`.
pub fn shot_counts(max: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let mut k = 1u32;
    while k < max {
        v.push(k);
        k = k.saturating_mul(2);
    }
    v.push(max);
    v
}

pub struct ManyShot {
    spec: PluginSpec,
    counts: Vec<u32>,
    messages: bool,
}

impl ManyShot {
    pub fn new(spec: PluginSpec) -> Result<Self, BuildError> {
        let shots = spec.params.int("shots").unwrap_or(64).clamp(1, 1024) as u32;
        let counts = if spec.params.bool("sweep").unwrap_or(true) {
            shot_counts(shots)
        } else {
            vec![shots]
        };
        Ok(ManyShot {
            messages: spec.params.str("format") == Some("messages"),
            counts,
            spec,
        })
    }
}

impl Attack for ManyShot {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn max_attempts(&self) -> u32 {
        self.counts.len() as u32
    }
    fn curve(&self) -> Option<CurveSpec> {
        Some(CurveSpec {
            x: "shots",
            kind: CurveKind::PerPoint,
            xs: self.counts.clone(),
        })
    }
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        target: &'a dyn CallModel,
        seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(async move {
            let max = *self.counts.last().expect("at least one count") as usize;
            let pool = pick_shots(max, &mut rng_for(seed, &["many_shot"]));
            let mut out = Vec::with_capacity(self.counts.len());
            for (i, &k) in self.counts.iter().enumerate() {
                let shots = &pool[..k as usize];
                let messages = if self.messages {
                    let mut m = Vec::with_capacity(2 * shots.len() + 1);
                    for s in shots {
                        m.push(Message::user(s.user.clone()));
                        m.push(Message::assistant(s.assistant.clone()));
                    }
                    m.push(Message::user(behavior.prompt.clone()));
                    m
                } else {
                    vec![Message::user(dialogue(shots, &behavior.prompt))]
                };
                let a = Attempt::single_turn(
                    target,
                    i as u32,
                    messages,
                    derive_u64(seed, &["many_shot", &k.to_string()]),
                    serde_json::json!({ "many_shot": { "shots": k } }),
                )
                .await?;
                out.push(a);
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use gauntlet_core::message::{ChatRequest, ChatResponse, Role};
    use gauntlet_core::params::{ParamValue, Params};
    use std::sync::Mutex;

    struct Recorder(Mutex<Vec<ChatRequest>>);
    impl CallModel for Recorder {
        fn call<'a>(&'a self, req: ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
            self.0.lock().unwrap().push(req);
            Box::pin(std::future::ready(Ok(ChatResponse::text("ok"))))
        }
    }

    fn run(format: &str, shots: i64) -> (Vec<Attempt>, Vec<ChatRequest>) {
        let mut p = Params::new();
        p.insert("shots", ParamValue::Int(shots));
        p.insert("format", ParamValue::Str(format.into()));
        let a = ManyShot::new(PluginSpec {
            name: "many_shot".into(),
            params: p,
            loc: Default::default(),
            label: None,
        })
        .unwrap();
        let b: Behavior = serde_json::from_value(serde_json::json!({
            "id": "b", "prompt": "The request", "expected": "should_refuse"
        }))
        .unwrap();
        let r = Recorder(Mutex::new(Vec::new()));
        let out = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(a.run(&b, &r, 5))
            .unwrap();
        (out, r.0.into_inner().unwrap())
    }

    /// One attempt per shot count, the request last, the shots of a smaller count the
    /// first shots of every larger one — in both formats.
    #[test]
    fn sweeps_the_shot_counts_with_nested_shots() {
        let (attempts, reqs) = run("inline", 8);
        assert_eq!(attempts.len(), 4);
        for (i, (a, r)) in attempts.iter().zip(&reqs).enumerate() {
            let k = [1, 2, 4, 8][i];
            assert_eq!(a.metadata["many_shot"]["shots"], k);
            let text = &r.messages[0].content;
            assert_eq!(text.matches("\nAssistant: ").count(), k);
            assert!(text.ends_with("User: The request\nAssistant:"));
        }
        let first = |r: &ChatRequest| {
            r.messages[0]
                .content
                .split("\n\n")
                .next()
                .unwrap()
                .to_string()
        };
        assert!(reqs.windows(2).all(|w| first(&w[0]) == first(&w[1])));
        let (_, reqs) = run("messages", 4);
        let last = reqs.last().unwrap();
        assert_eq!(last.messages.len(), 2 * 4 + 1);
        assert_eq!(
            last.messages
                .iter()
                .filter(|m| m.role == Role::Assistant)
                .count(),
            4
        );
        assert_eq!(last.messages.last().unwrap().content, "The request");
        assert_eq!(reqs[0].messages[0], last.messages[0]);
    }

    #[test]
    fn shot_counts_double_up_to_the_maximum() {
        assert_eq!(shot_counts(1), vec![1]);
        assert_eq!(shot_counts(8), vec![1, 2, 4, 8]);
        assert_eq!(shot_counts(100), vec![1, 2, 4, 8, 16, 32, 64, 100]);
    }
}

//! The prompt-transform seam: rewriting what an attack sends, composably, on any attack.
//!
//! A [`Transform`] rewrites one user turn: an encoding (base64, morse, …), a
//! character-level perturbation (homoglyphs, zero-width insertion, …), a structural
//! framing (JSON, payload splitting, many-shot, …) or a model-driven rewrite
//! (translation, paraphrase, persuasion) that asks the attacker model. A [`Chain`] applies
//! several in order. Any attack takes one as `params: {transforms: [...]}`; the registry
//! then wraps the attack in [`Transformed`], which hands the attack a target that
//! transforms every user turn on its way out ([`TransformingModel`]), so the attack
//! itself — static, template, PAIR, Crescendo, a leakage probe — needs no change.
//!
//! Determinism: a transform's randomness comes from a generator seeded by the unit's
//! seed (itself derived from the run seed and the unit's identity), the text the chain
//! rewrites and the transform's place in the chain, so the same text in the same unit
//! always gets the same rewrite, whatever the concurrency. Model-driven rewrites are model calls
//! through the engine's cached attacker model (journaled, budgeted, resumable).
//!
//! Provenance: the chain and its resolved params are part of the attack's spec, so they
//! are part of the unit scope of every call key (an attack without transforms has no
//! `transforms` param at all, so its keys are what they always were), and every attempt
//! records them in its metadata (`transforms`). The transcript holds what was actually
//! sent; a reply a transform asked to be written in its encoding is decoded before it is
//! judged, and the transcript keeps both: the assistant message as the model wrote it,
//! followed by an assistant message named `decoded`.

use crate::attack::{Attack, AttackCtx, Attempt, CallModel, PlannedCalls};
use crate::curves::CurveSpec;
use crate::error::BuildError;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::message::{
    ChatRequest, ChatResponse, Message, Role, TracedTurn, TransformTrace,
};
use gauntlet_core::params::{PluginSpec, TRANSFORMS_PARAM};
use gauntlet_core::rng::{ChaCha8Rng, derive_seed};
use gauntlet_models::{BoxFuture, ModelError};
use rand::SeedableRng;
use std::sync::{Arc, Mutex};

pub(crate) mod seam;
pub use seam::{Applied, Family, Transform, apply_pure};

/// An ordered list of transforms, built from specs.
pub struct Chain {
    steps: Vec<Box<dyn Transform>>,
    names: Arc<[String]>,
    /// The chain as recorded in each attempt's metadata: `[{name, params}, …]`.
    identity: serde_json::Value,
    attacker: Option<PluginSpec>,
}

impl Chain {
    /// Builds every transform of `specs`. Model-driven transforms of one chain must
    /// share one attacker model (the attack's model slot holds one).
    pub fn build(specs: &[PluginSpec]) -> Result<Chain, BuildError> {
        let mut steps = Vec::with_capacity(specs.len());
        let mut attacker: Option<PluginSpec> = None;
        for (i, s) in specs.iter().enumerate() {
            let t =
                crate::transforms::build(s).map_err(|e| e.inside(format!("transforms[{i}]")))?;
            if let Some(a) = t.attacker() {
                match &attacker {
                    Some(prev) if prev.identity() != a.identity() => {
                        return Err(BuildError::param(format!(
                            "transforms[{i}] (`{}`) names another attacker model than an earlier model-driven transform; one chain uses one attacker model",
                            s.name
                        )));
                    }
                    _ => attacker = Some(a.clone()),
                }
            }
            steps.push(t);
        }
        Ok(Chain {
            names: specs
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
                .into(),
            identity: serde_json::Value::Array(specs.iter().map(PluginSpec::identity).collect()),
            steps,
            attacker,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
    pub fn names(&self) -> &[String] {
        &self.names
    }
    pub fn steps(&self) -> &[Box<dyn Transform>] {
        &self.steps
    }
    /// The attacker model the chain's model-driven transforms name, if any.
    pub fn attacker(&self) -> Option<&PluginSpec> {
        self.attacker.as_ref()
    }
    /// Model-driven transforms in the chain (each costs an attacker call per new text).
    pub fn model_steps(&self) -> u64 {
        self.steps
            .iter()
            .filter(|t| t.family() == Family::Model)
            .count() as u64
    }
    /// True when no transform needs a model.
    pub fn is_pure(&self) -> bool {
        self.model_steps() == 0
    }

    /// The key of rewriting `text` under the unit seed `seed`: every step's generator
    /// derives from it (one hash of the text per chain, not one per step), and it is what
    /// a [`TracedTurn`] carries into cache keys.
    pub fn key(seed: u64, text: &str) -> [u8; 32] {
        derive_seed(seed, &["transforms", text])
    }

    /// The seed of step `i` under `key`: the key with its first eight bytes mixed with
    /// the step number (ChaCha8 streams of distinct keys are independent).
    fn step_seed(key: &[u8; 32], i: usize) -> [u8; 32] {
        let mut s = *key;
        let head = u64::from_le_bytes(s[..8].try_into().expect("8 bytes")) ^ (i as u64 + 1);
        s[..8].copy_from_slice(&head.to_le_bytes());
        s
    }

    /// The texts after each step (not including `text` itself), for a chain of pure
    /// transforms, under the unit seed `seed`.
    pub fn apply_pure(&self, text: &str, seed: u64) -> Vec<String> {
        let key = Self::key(seed, text);
        let mut stages: Vec<String> = Vec::with_capacity(self.steps.len());
        for (i, t) in self.steps.iter().enumerate() {
            let cur = stages.last().map_or(text, String::as_str);
            let mut rng = ChaCha8Rng::from_seed(Self::step_seed(&key, i));
            stages.push(apply_pure(t.as_ref(), cur, &mut rng));
        }
        stages
    }

    /// The texts after each step, asking `attacker` for model-driven steps.
    /// `Ok(Err(why))` when a model-driven step could not rewrite the text (its call
    /// failed or said nothing usable); only configuration and budget errors are `Err`.
    pub async fn apply(
        &self,
        text: &str,
        key: &[u8; 32],
        attacker: Option<&dyn CallModel>,
    ) -> Result<Result<Vec<String>, RewriteError>, ModelError> {
        let mut stages: Vec<String> = Vec::with_capacity(self.steps.len());
        for (i, t) in self.steps.iter().enumerate() {
            let cur = stages.last().map_or(text, String::as_str);
            let step = Self::step_seed(key, i);
            let next = match t.apply(cur, &mut ChaCha8Rng::from_seed(step)) {
                Applied::Text(s) => s,
                Applied::AskModel {
                    system,
                    user,
                    max_tokens,
                } => {
                    let name = &self.names[i];
                    let Some(model) = attacker else {
                        return Err(ModelError::Config(format!(
                            "transform `{name}` needs an attacker model (internal: none was built)"
                        )));
                    };
                    let req = ChatRequest {
                        messages: vec![Message::system(system), Message::user(user)],
                        seed: Some(u64::from_le_bytes(step[8..16].try_into().expect("8 bytes"))),
                        max_tokens: Some(max_tokens),
                        ..Default::default()
                    };
                    match model.call(req).await {
                        Ok(r) => match t.rewrite_from(&r.content) {
                            Some(s) => s,
                            None => {
                                return Ok(Err(RewriteError::NoRewrite { name: name.clone() }));
                            }
                        },
                        Err(cause @ ModelError::Call(_)) => {
                            return Ok(Err(RewriteError::Call {
                                name: name.clone(),
                                cause,
                            }));
                        }
                        Err(e) => return Err(e),
                    }
                }
            };
            stages.push(next);
        }
        Ok(Ok(stages))
    }

    /// The reply as the chain's encodings read it: each transform that asked for an
    /// encoded answer decodes it, last transform first. `None` when nothing decoded.
    pub fn decode_reply(&self, reply: &str) -> Option<String> {
        let mut cur: Option<String> = None;
        for t in self.steps.iter().rev() {
            if let Some(d) = t.decode_reply(cur.as_deref().unwrap_or(reply)) {
                cur = Some(d);
            }
        }
        cur.filter(|d| d != reply)
    }
}

/// Why a model-driven transform could not rewrite a text: the chain's `name` for it,
/// and what its attacker model did.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RewriteError {
    /// The attacker replied, with nothing the transform could use.
    #[error("transform `{name}`: the attacker model returned no usable rewrite")]
    NoRewrite { name: String },
    /// The attacker's call failed (a [`ModelError::Call`]).
    #[error("transform `{name}`: attacker call failed: {cause}")]
    Call {
        name: String,
        #[source]
        cause: ModelError,
    },
}

/// What a [`TransformingModel`] remembers within one unit: a few texts at most (one per
/// distinct user turn the attack writes), so plain lists searched by equality.
#[derive(Default)]
struct Memo {
    /// An attack's user text → its stages (itself, then after each transform; the last
    /// was sent) and their key. The text is the turn's first stage.
    sent: Vec<TracedTurn>,
    /// A decoded reply (as handed to the attack) → the reply as the model wrote it.
    raw: Vec<(String, String)>,
}

/// The target as a transformed attack sees it: every user turn of every request is
/// rewritten by the chain before the request goes to the real (cached) target, and a
/// reply written in a transform's encoding comes back decoded. One per unit.
pub struct TransformingModel<'a> {
    chain: &'a Chain,
    target: &'a dyn CallModel,
    attacker: Option<&'a dyn CallModel>,
    seed: u64,
    memo: Mutex<Memo>,
}

impl Memo {
    fn turn(&self, text: &str) -> Option<&TracedTurn> {
        self.sent.iter().find(|t| t.stages[0] == text)
    }
    fn raw(&self, decoded: &str) -> Option<&String> {
        self.raw.iter().find(|(d, _)| d == decoded).map(|(_, r)| r)
    }
}

impl<'a> TransformingModel<'a> {
    pub fn new(
        chain: &'a Chain,
        target: &'a dyn CallModel,
        attacker: Option<&'a dyn CallModel>,
        seed: u64,
    ) -> Self {
        TransformingModel {
            chain,
            target,
            attacker,
            seed,
            memo: Mutex::new(Memo::default()),
        }
    }

    fn memo(&self) -> std::sync::MutexGuard<'_, Memo> {
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stages of `text` (it first, then after each transform), computed once.
    async fn stages(&self, text: &str) -> Result<Result<TracedTurn, RewriteError>, ModelError> {
        if let Some(s) = self.memo().turn(text) {
            return Ok(Ok(s.clone()));
        }
        let key = Chain::key(self.seed, text);
        let rest = match self.chain.apply(text, &key, self.attacker).await? {
            Ok(r) => r,
            Err(why) => return Ok(Err(why)),
        };
        let mut all = Vec::with_capacity(rest.len() + 1);
        all.push(text.to_string());
        all.extend(rest);
        let turn = TracedTurn {
            stages: all.into(),
            key,
        };
        self.memo().sent.push(turn.clone());
        Ok(Ok(turn))
    }

    async fn call_transformed(&self, req: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let mut messages = Vec::with_capacity(req.messages.len());
        let mut trace = TransformTrace {
            chain: self.chain.names.clone(),
            turns: Vec::new(),
        };
        for m in &req.messages {
            match m.role {
                Role::User => {
                    let turn = match self.stages(&m.content).await? {
                        Ok(s) => s,
                        Err(why) => return Err(ModelError::Call(why.to_string())),
                    };
                    messages.push(Message {
                        content: turn.stages.last().expect("the text itself").clone(),
                        name: m.name.clone(),
                        ..Message::user(String::new())
                    });
                    trace.turns.push(turn);
                }
                Role::Assistant => {
                    // The attack holds the decoded reply; the model said the raw one.
                    let raw = self.memo().raw(&m.content).cloned();
                    messages.push(match raw {
                        Some(content) => Message {
                            content,
                            ..m.clone()
                        },
                        None => m.clone(),
                    });
                }
                _ => messages.push(m.clone()),
            }
        }
        let out = ChatRequest {
            top_logprobs: req.top_logprobs,
            messages,
            tools: req.tools.clone(),
            seed: req.seed,
            temperature: req.temperature,
            max_tokens: req.max_tokens,
            agent_script: req.agent_script.clone(),
            transform_trace: Some(Arc::new(trace)),
        };
        let mut r = self.target.call(out).await?;
        if let Some(decoded) = self.chain.decode_reply(&r.content) {
            let raw = std::mem::replace(&mut r.content, decoded);
            self.memo().raw.push((r.content.clone(), raw));
        }
        Ok(r)
    }

    /// An attempt as the transformed attack made it, rewritten to what really happened:
    /// user turns as sent, replies as written (followed by their decoded form), and the
    /// chain in the metadata.
    pub fn finish(&self, mut a: Attempt) -> Attempt {
        let memo = self.memo();
        let mut decoded_any = false;
        for m in a.transcript.iter_mut().filter(|m| m.role == Role::User) {
            if let Some(s) = memo.turn(&m.content) {
                m.content = s.stages.last().expect("the text itself").clone();
            }
        }
        if !memo.raw.is_empty() {
            let mut transcript = Vec::with_capacity(a.transcript.len() + 1);
            for mut m in std::mem::take(&mut a.transcript) {
                match (m.role, memo.raw(&m.content)) {
                    (Role::Assistant, Some(raw)) => {
                        decoded_any = true;
                        let decoded = std::mem::replace(&mut m.content, raw.clone());
                        transcript.push(m);
                        transcript.push(Message {
                            name: Some("decoded".into()),
                            ..Message::assistant(decoded)
                        });
                    }
                    _ => transcript.push(m),
                }
            }
            a.transcript = transcript;
        }
        let mut info = serde_json::Map::new();
        info.insert("chain".into(), self.chain.identity.clone());
        if decoded_any {
            info.insert("decoded_reply".into(), true.into());
        }
        let info = serde_json::Value::Object(info);
        a.metadata = match std::mem::take(&mut a.metadata) {
            serde_json::Value::Null => serde_json::json!({ "transforms": info }),
            serde_json::Value::Object(mut o) => {
                o.insert("transforms".into(), info);
                serde_json::Value::Object(o)
            }
            other => serde_json::json!({ "attack": other, "transforms": info }),
        };
        a
    }
}

impl CallModel for TransformingModel<'_> {
    fn call<'b>(&'b self, req: ChatRequest) -> BoxFuture<'b, Result<ChatResponse, ModelError>> {
        Box::pin(async move { self.call_transformed(&req).await })
    }
    fn call_ref<'b>(
        &'b self,
        req: &'b ChatRequest,
    ) -> BoxFuture<'b, Result<ChatResponse, ModelError>> {
        Box::pin(self.call_transformed(req))
    }
}

/// An attack with a transform chain: the inner attack runs against a
/// [`TransformingModel`], and its attempts are rewritten to what was sent and received.
pub struct Transformed {
    inner: Box<dyn Attack>,
    chain: Chain,
}

impl Transformed {
    /// Wraps `inner` with the chain in its spec's `transforms` param (the spec keeps the
    /// param: it is part of the attack's identity).
    pub fn new(inner: Box<dyn Attack>) -> Result<Transformed, BuildError> {
        let specs = inner
            .spec()
            .params
            .spec_list(TRANSFORMS_PARAM)
            .unwrap_or_default();
        let chain = Chain::build(specs)?;
        if chain.model_steps() > 0 && chain.attacker().is_none() && inner.attacker().is_none() {
            let name = chain
                .steps()
                .iter()
                .find(|t| t.family() == Family::Model)
                .map_or("", |t| t.spec().name.as_str());
            return Err(BuildError::param(format!(
                "transform `{name}` rewrites with a model: give it an `attacker` model spec (or use an attack with its own attacker, such as pair)"
            )));
        }
        if let (Some(a), Some(b)) = (inner.attacker(), chain.attacker())
            && a.identity() != b.identity()
        {
            return Err(BuildError::param(format!(
                "a model-driven transform names another attacker model than the `{}` attack's own; omit the transform's `attacker` to use the attack's",
                inner.spec().name
            )));
        }
        Ok(Transformed { inner, chain })
    }
}

impl Attack for Transformed {
    fn spec(&self) -> &PluginSpec {
        self.inner.spec()
    }
    fn max_attempts(&self) -> u32 {
        self.inner.max_attempts()
    }
    fn applies_to(&self, behavior: &Behavior) -> bool {
        self.inner.applies_to(behavior)
    }
    fn attacker(&self) -> Option<&PluginSpec> {
        self.inner.attacker().or(self.chain.attacker())
    }
    fn judge_grader(&self) -> Option<&PluginSpec> {
        self.inner.judge_grader()
    }
    fn curve(&self) -> Option<CurveSpec> {
        self.inner.curve()
    }
    fn planned_calls(&self) -> PlannedCalls {
        let p = self.inner.planned_calls();
        PlannedCalls {
            // At most one attacker call per model-driven step per target call (fewer
            // when a text repeats: rewrites are remembered within a unit).
            attacker: p.attacker + p.target * self.chain.model_steps(),
            ..p
        }
    }
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        target: &'a dyn CallModel,
        seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        self.run_ctx(
            behavior,
            AttackCtx {
                target,
                attacker: None,
                judge_grader: None,
                seed,
                place: None,
            },
        )
    }
    fn run_ctx<'a>(
        &'a self,
        behavior: &'a Behavior,
        ctx: AttackCtx<'a>,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(async move {
            let tm = TransformingModel::new(&self.chain, ctx.target, ctx.attacker, ctx.seed);
            let inner_ctx = AttackCtx {
                target: &tm,
                attacker: if self.inner.attacker().is_some() {
                    ctx.attacker
                } else {
                    None
                },
                ..ctx
            };
            let attempts = self.inner.run_ctx(behavior, inner_ctx).await?;
            Ok(attempts.into_iter().map(|a| tm.finish(a)).collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Judge;
    use crate::judges::refusal_match::RefusalMatch;
    use gauntlet_core::outcome::Outcome;
    use gauntlet_core::params::{ParamValue, Params};

    /// A model that records what it was sent and answers from a script.
    struct Scripted {
        seen: Mutex<Vec<ChatRequest>>,
        reply: fn(&ChatRequest) -> Result<String, String>,
    }
    impl Scripted {
        fn new(reply: fn(&ChatRequest) -> Result<String, String>) -> Self {
            Scripted {
                seen: Mutex::new(Vec::new()),
                reply,
            }
        }
        fn seen(&self) -> Vec<ChatRequest> {
            self.seen.lock().unwrap().clone()
        }
    }
    impl CallModel for Scripted {
        fn call<'a>(&'a self, req: ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
            let r = (self.reply)(&req);
            self.seen.lock().unwrap().push(req);
            Box::pin(std::future::ready(
                r.map(ChatResponse::text).map_err(ModelError::Call),
            ))
        }
    }

    fn spec(name: &str, params: &[(&str, ParamValue)]) -> PluginSpec {
        let mut p = Params::new();
        for (k, v) in params {
            p.insert(k, v.clone());
        }
        PluginSpec {
            name: name.into(),
            params: p,
            loc: Default::default(),
            label: None,
        }
    }

    fn attack(name: &str, chain: Vec<PluginSpec>) -> Box<dyn Attack> {
        crate::registry::build_attack(&spec(
            name,
            &[(TRANSFORMS_PARAM, ParamValue::SpecList(chain))],
        ))
        .unwrap()
    }

    fn behavior(prompt: &str) -> Behavior {
        serde_json::from_value(
            serde_json::json!({"id": "b", "prompt": prompt, "expected": "should_refuse"}),
        )
        .unwrap()
    }

    fn block<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    fn ctx<'a>(target: &'a dyn CallModel, attacker: Option<&'a dyn CallModel>) -> AttackCtx<'a> {
        AttackCtx {
            target,
            attacker,
            judge_grader: None,
            seed: 11,
            place: None,
        }
    }

    #[test]
    fn every_user_turn_is_sent_transformed_and_recorded_as_sent() {
        let target = Scripted::new(|_| Ok("I'm sorry, I can't help with that.".into()));
        let a = attack(
            "static",
            vec![spec(
                "reverse_text",
                &[("instruct", ParamValue::Bool(false))],
            )],
        );
        let attempts = block(a.run_ctx(&behavior("abc def"), ctx(&target, None))).unwrap();
        let seen = target.seen();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].messages[0].content, "fed cba");
        let trace = seen[0].transform_trace.as_deref().unwrap();
        assert_eq!(&trace.chain[..], ["reverse_text".to_string()]);
        assert_eq!(trace.turns.len(), 1);
        assert_eq!(
            &trace.turns[0].stages[..],
            ["abc def".to_string(), "fed cba".into()]
        );
        assert_eq!(trace.turns[0].key, Chain::key(11, "abc def"));
        let at = &attempts[0];
        assert_eq!(at.transcript[0].content, "fed cba");
        assert_eq!(at.transcript.len(), 2);
        assert_eq!(
            at.metadata["transforms"]["chain"][0]["name"],
            "reverse_text"
        );
        assert!(at.metadata["transforms"].get("decoded_reply").is_none());
        // Same unit seed, same rewrite; the chain is deterministic.
        let again = block(a.run_ctx(&behavior("abc def"), ctx(&target, None))).unwrap();
        assert_eq!(again[0].transcript, at.transcript);
    }

    /// A reply written in the transform's encoding is decoded before it is judged; the
    /// transcript keeps the reply as written, then the decoded one.
    #[test]
    fn encoded_replies_are_decoded_before_judging_and_both_are_kept() {
        let target = Scripted::new(|_| {
            Ok(data_encoding::BASE64.encode(b"I'm sorry, I can't help with that."))
        });
        let a = attack(
            "static",
            vec![spec("base64", &[("reply_encoded", ParamValue::Bool(true))])],
        );
        let attempts = block(a.run_ctx(&behavior("Say hello"), ctx(&target, None))).unwrap();
        let at = &attempts[0];
        let raw = data_encoding::BASE64.encode(b"I'm sorry, I can't help with that.");
        assert_eq!(
            at.response.as_ref().unwrap().content,
            "I'm sorry, I can't help with that."
        );
        assert_eq!(at.transcript.len(), 3);
        assert_eq!(at.transcript[1].content, raw);
        assert_eq!(at.transcript[1].name, None);
        assert_eq!(
            at.transcript[2].content,
            "I'm sorry, I can't help with that."
        );
        assert_eq!(at.transcript[2].name.as_deref(), Some("decoded"));
        assert_eq!(at.metadata["transforms"]["decoded_reply"], true);
        // Judged on the decoded reply: a refusal, not a success.
        let v = block(
            RefusalMatch::new(spec("refusal_match", &[]))
                .unwrap()
                .score(&behavior("Say hello"), at, None),
        )
        .unwrap();
        assert_eq!(v.outcome, Outcome::Failure);
        // A reply that is not base64 is judged as written.
        let plain = Scripted::new(|_| Ok("Sure, hello!".into()));
        let attempts = block(a.run_ctx(&behavior("Say hello"), ctx(&plain, None))).unwrap();
        assert_eq!(attempts[0].transcript.len(), 2);
        assert_eq!(
            attempts[0].response.as_ref().unwrap().content,
            "Sure, hello!"
        );
    }

    /// In a conversation the model sees its own (raw) replies and the transformed user
    /// turns, while the attack works with the decoded replies.
    #[test]
    fn multi_turn_history_is_sent_as_the_model_saw_it() {
        let target = Scripted::new(|req| {
            let n = req.messages.iter().filter(|m| m.role == Role::User).count();
            Ok(gauntlet_core::hash::to_hex(format!("reply {n}").as_bytes()))
        });
        let chain =
            Chain::build(&[spec("hex", &[("reply_encoded", ParamValue::Bool(true))])]).unwrap();
        let tm = TransformingModel::new(&chain, &target, None, 3);
        let r1 = block(tm.call(ChatRequest {
            messages: vec![Message::user("first")],
            ..Default::default()
        }))
        .unwrap();
        assert_eq!(r1.content, "reply 1");
        let r2 = block(tm.call(ChatRequest {
            messages: vec![
                Message::user("first"),
                Message::assistant("reply 1"),
                Message::user("second"),
            ],
            ..Default::default()
        }))
        .unwrap();
        assert_eq!(r2.content, "reply 2");
        let seen = target.seen();
        let second = &seen[1].messages;
        assert_eq!(second[0].content, seen[0].messages[0].content);
        assert_eq!(second[1].content, gauntlet_core::hash::to_hex(b"reply 1"));
        assert!(
            second[2]
                .content
                .ends_with(&gauntlet_core::hash::to_hex(b"second"))
        );
        assert_eq!(seen[1].transform_trace.as_ref().unwrap().turns.len(), 2);
    }

    #[test]
    fn model_driven_transforms_ask_the_attacker_and_fail_as_errors() {
        let target = Scripted::new(|_| Ok("Sure.".into()));
        let attacker = Scripted::new(|req| {
            assert!(req.messages[0].content.contains("into Welsh"));
            Ok("PROMPT: Helo, sut wyt ti?".into())
        });
        let reference = PluginSpec {
            name: "reference".into(),
            params: Params::new(),
            loc: Default::default(),
            label: None,
        };
        let chain = vec![spec(
            "translate",
            &[
                ("language", ParamValue::Str("Welsh".into())),
                ("attacker", ParamValue::Spec(Box::new(reference))),
                ("max_tokens", ParamValue::Int(64)),
            ],
        )];
        let a = attack("static", chain);
        assert_eq!(a.attacker().unwrap().name, "reference");
        assert_eq!(a.planned_calls().attacker, 1);
        let attempts = block(a.run_ctx(
            &behavior("Hello, how are you?"),
            ctx(&target, Some(&attacker)),
        ))
        .unwrap();
        assert_eq!(target.seen()[0].messages[0].content, "Helo, sut wyt ti?");
        assert_eq!(
            attacker.seen()[0].messages[1].content,
            "Hello, how are you?"
        );
        assert_eq!(attacker.seen()[0].max_tokens, Some(64));
        assert!(attempts[0].response.is_ok());
        // A failed rewrite is the attempt's error; the target is never called.
        let down = Scripted::new(|_| Err("connection refused".into()));
        let target2 = Scripted::new(|_| Ok("Sure.".into()));
        let attempts = block(a.run_ctx(&behavior("Hello"), ctx(&target2, Some(&down)))).unwrap();
        let e = attempts[0].response.as_ref().unwrap_err().to_string();
        assert!(
            e.contains("transform `translate`") && e.contains("connection refused"),
            "{e}"
        );
        assert!(target2.seen().is_empty());
    }

    #[test]
    fn chains_apply_in_order_and_compose_with_any_attack() {
        let target = Scripted::new(|_| Ok("ok".into()));
        let a = attack(
            "template",
            vec![
                spec("leetspeak", &[]),
                spec("reverse_text", &[("instruct", ParamValue::Bool(false))]),
            ],
        );
        assert_eq!(a.spec().label(), "template+leetspeak+reverse_text");
        let attempts = block(a.run_ctx(&behavior("test"), ctx(&target, None))).unwrap();
        assert_eq!(attempts.len(), 3);
        for (at, req) in attempts.iter().zip(target.seen()) {
            let trace = req.transform_trace.as_deref().unwrap();
            let st = &trace.turns[0].stages;
            // Stage 1 is leetspeak of the template text, stage 2 its reversal.
            assert_eq!(st[2], st[1].chars().rev().collect::<String>());
            assert!(st[0].contains("test") && st[1].contains("7357"));
            assert_eq!(at.transcript[0].content, st[2]);
            assert!(at.metadata.get("template").is_some(), "inner metadata kept");
        }
        // Two model-driven transforms with different attackers cannot share a chain.
        let m = |n: &str| PluginSpec {
            name: "reference".into(),
            params: {
                let mut p = Params::new();
                p.insert("name", ParamValue::Str(n.into()));
                p
            },
            loc: Default::default(),
            label: None,
        };
        let e = Chain::build(&[
            spec(
                "paraphrase",
                &[("attacker", ParamValue::Spec(Box::new(m("a"))))],
            ),
            spec(
                "paraphrase",
                &[("attacker", ParamValue::Spec(Box::new(m("b"))))],
            ),
        ])
        .err()
        .unwrap();
        assert!(
            matches!(&e, BuildError::Param(m) if m.contains("one attacker model")),
            "{e}"
        );
    }
}

//! Shared machinery of the attacker-LLM attacks (`pair`, `tap`, `crescendo`, `goat`,
//! `adaptive`): the `attacker:` and `judge:` params, asking the attacker for a prompt,
//! scoring a target reply with the in-loop judge, the search tree recorded in attempt
//! metadata, and the conversation loop of the multi-turn attacks ([`Conversation`]).
//!
//! Every model call goes through the engine's cached models (roles `attacker`,
//! `attack_judge`, `target`), so each is journaled, budgeted and counted. A failed call
//! of one branch (target or attacker) is recorded in that branch's node and the search
//! goes on; only configuration and budget errors stop it. The attack returns one attempt:
//! the exchange of the first node the in-loop judge calls a success (the search stops
//! there), else the best-scored node, with the whole tree in its metadata. The run's own
//! judges then judge that attempt like any other.

use crate::attack::{Attack, AttackCtx, Attempt, AttemptError, CallModel, PlannedCalls};
use crate::error::BuildError;
use crate::judge::{BuildJudge, Judge};
use gauntlet_core::behavior::Behavior;
use gauntlet_core::message::{ChatRequest, Message};
use gauntlet_core::outcome::{Outcome, Verdict};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginSpec};
use gauntlet_core::rng::derive_u64;
use gauntlet_models::{BoxFuture, ModelError};
use serde::Serialize;

pub const ATTACKER_PARAM: ParamSpec = ParamSpec {
    name: "attacker",
    kind: ParamKind::Spec(Axis::Target),
    default: DefaultValue::Required,
    doc: "the attacker model that writes the adversarial prompts (any target spec)",
};

pub const JUDGE_PARAM: ParamSpec = ParamSpec {
    name: "judge",
    kind: ParamKind::Spec(Axis::Judge),
    default: DefaultValue::Absent,
    doc: "the in-loop judge that scores each try and stops the search at the first success; absent: refusal_match",
};

/// Output tokens allowed to one attacker reply, unless the attacker spec sets `max_tokens`.
pub const ATTACKER_MAX_TOKENS: u32 = 256;

/// The attacker and in-loop judge of an attack, built from its params.
pub struct Searcher {
    pub attacker: PluginSpec,
    /// Output tokens per attacker reply.
    pub attacker_max_tokens: u32,
    pub judge: Box<dyn Judge>,
    judge_grader: Option<PluginSpec>,
}

impl Searcher {
    /// The attacker and in-loop judge `spec` names, the judge built with `build_judge`.
    pub fn new(spec: &PluginSpec, build_judge: BuildJudge) -> Result<Searcher, BuildError> {
        let attacker = spec.params.spec("attacker").cloned().ok_or_else(|| {
            BuildError::param(format!("`{}` needs an `attacker` model spec", spec.name))
        })?;
        let judge_spec = spec.params.spec("judge").cloned().unwrap_or(PluginSpec {
            name: "refusal_match".into(),
            params: Default::default(),
            loc: spec.loc,
            label: None,
        });
        let judge = build_judge(&judge_spec).map_err(|e| e.inside("in-loop judge"))?;
        let judge_grader = judge.grader().cloned();
        let attacker_max_tokens = attacker
            .params
            .int("max_tokens")
            .map_or(ATTACKER_MAX_TOKENS, |n| {
                n.clamp(1, i64::from(u32::MAX)) as u32
            });
        Ok(Searcher {
            attacker_max_tokens,
            attacker,
            judge,
            judge_grader,
        })
    }
    /// The calls a search of at most `nodes` nodes plans: a target and an attacker call per
    /// node, plus an in-loop grader call per node when the judge has a grader.
    pub fn planned_calls(&self, nodes: u64) -> PlannedCalls {
        PlannedCalls {
            target: nodes,
            attacker: nodes,
            judge: if self.judge_grader().is_some() {
                nodes
            } else {
                0
            },
        }
    }

    pub fn judge_grader(&self) -> Option<&PluginSpec> {
        self.judge_grader.as_ref()
    }
}

/// The first `n` characters of `s`.
pub fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Pulls the adversarial prompt out of an attacker reply: the text after a `PROMPT:` line
/// marker, else a JSON `{"prompt": …}`, else the whole reply (small models rarely follow
/// formats). `None` when nothing usable is left.
pub fn parse_attacker_reply(text: &str) -> Option<String> {
    let t = text.trim();
    if let Some(i) = t.find("PROMPT:") {
        let p = t[i + "PROMPT:".len()..].trim();
        if !p.is_empty() {
            return Some(p.to_string());
        }
    }
    if let (Some(a), Some(b)) = (t.find('{'), t.rfind('}'))
        && a < b
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&t[a..=b])
        && let Some(p) = v.get("prompt").and_then(|p| p.as_str())
        && !p.trim().is_empty()
    {
        return Some(p.trim().to_string());
    }
    (!t.is_empty()).then(|| t.to_string())
}

/// Why one attacker turn gave the search no prompt; the branch records it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AttackerError {
    /// The attacker replied with no prompt in it.
    #[error("the attacker returned no prompt")]
    NoPrompt,
    /// The attacker's turn was labelled reasoning with no `REPLY:` part (goat, adaptive).
    #[error("the attacker's turn held no REPLY to send")]
    NoReply,
    /// The attacker's call failed (a [`ModelError::Call`]).
    #[error("attacker call failed: {0}")]
    Call(#[source] ModelError),
}

/// How an attacker's reply is read: the parser, and what a reply it finds nothing in
/// is recorded as.
pub struct Reading<T> {
    pub parse: fn(&str) -> Option<T>,
    pub none: AttackerError,
}

/// A reply read as one prompt ([`parse_attacker_reply`]): `pair`, `tap`, `crescendo`.
pub const PROMPT: Reading<String> = Reading {
    parse: parse_attacker_reply,
    none: AttackerError::NoPrompt,
};

/// Asks the attacker and reads its reply as `reading` says; `Ok(Err(why))` when this
/// call failed or said nothing usable (the branch records it and the search goes on).
/// Configuration and budget errors stop the search.
pub async fn ask_attacker<T>(
    reading: Reading<T>,
    attacker: &dyn CallModel,
    max_tokens: u32,
    system: String,
    user: String,
    seed: u64,
) -> Result<Result<T, AttackerError>, ModelError> {
    let req = ChatRequest {
        messages: vec![Message::system(system), Message::user(user)],
        seed: Some(seed),
        max_tokens: Some(max_tokens),
        ..Default::default()
    };
    match attacker.call(req).await {
        Ok(r) => Ok((reading.parse)(&r.content).ok_or(reading.none)),
        Err(e @ ModelError::Call(_)) => Ok(Err(AttackerError::Call(e))),
        Err(e) => Err(e),
    }
}

/// Sends a conversation to the target as one attempt (a failed call is recorded in it).
pub async fn try_target(
    target: &dyn CallModel,
    messages: Vec<Message>,
    seed: u64,
) -> Result<Attempt, ModelError> {
    Attempt::single_turn(target, 0, messages, seed, serde_json::Value::Null).await
}

/// One turn an attacker wrote for a conversation: the message to send, and what the
/// turn's node records beside it.
pub struct Turn {
    pub message: String,
    /// The catalogue technique the turn used (goat).
    pub technique: Option<String>,
    /// The attacker's stated reasoning (goat).
    pub reasoning: Option<Reasoning>,
}

/// What a multi-turn attack does with a turn the target refused or failed to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRefusal {
    /// Roll it back (crescendo): its node is marked pruned, the conversation goes on
    /// without it and the attacker is told which message was removed. A failed target
    /// call is rolled back the same way.
    RollBack,
    /// Keep it in the conversation for the attacker to work around (goat); a failed
    /// target call leaves the conversation as it was.
    Keep,
}

/// Where a conversation stands when the attacker is asked for its next turn.
pub struct TurnAsk<'a> {
    pub attacker: &'a dyn CallModel,
    /// The attack's attacker and in-loop judge.
    pub search: &'a Searcher,
    /// The attacker's system prompt ([`Conversation::system`]).
    pub system: String,
    /// This turn's seed.
    pub seed: u64,
    /// This turn, from 1.
    pub turn: u32,
    /// The turns at most.
    pub turns: u32,
    /// The conversation so far (the target sees all of it).
    pub history: &'a [Message],
    /// The message the last turn sent when it was rolled back ([`OnRefusal::RollBack`]).
    pub rolled_back: Option<&'a str>,
    /// The in-loop judge's score of the last judged turn.
    pub last_score: Option<f64>,
}

/// The attacker's next turn, or why it gave none (the turn's node records it and the
/// conversation goes on); configuration and budget errors stop the search.
pub type TurnFuture<'a> = BoxFuture<'a, Result<Result<Turn, AttackerError>, ModelError>>;

/// How a multi-turn attack (`crescendo`, `goat`) talks to its attacker: each turn the
/// attacker writes the next user message of one conversation, the target answers the
/// whole conversation so far, and the in-loop judge scores the reply; the search stops at
/// the first success or after the turns its `TURNS_PARAM` allows. The attack says how the
/// attacker is asked and what a refused turn does; the loop ([`MultiTurn`]) is shared.
pub trait Conversation: Send + Sync {
    /// The attack's name: its tree's and its per-turn seeds' label.
    const NAME: &'static str;
    /// The param bounding the turns (default 5), as the attempt's metadata names it (and
    /// its stop reason when no turn succeeded).
    const TURNS_PARAM: &'static str;
    /// What a refused turn does.
    const ON_REFUSAL: OnRefusal;
    /// The attacker's system prompt for the behavior `goal` over at most `turns` turns.
    fn system(&self, goal: &str, turns: u32) -> String;
    /// Asks the attacker for the turn `at` describes.
    fn ask<'a>(&'a self, at: TurnAsk<'a>) -> TurnFuture<'a>;
}

/// A multi-turn attack: its spec, attacker and in-loop judge, its turns, and how it talks
/// to the attacker (`C`).
pub struct MultiTurn<C> {
    spec: PluginSpec,
    search: Searcher,
    turns: u32,
    way: C,
}

impl<C: Conversation> MultiTurn<C> {
    /// The attack `spec` describes, its in-loop judge built with `build_judge`, talking to
    /// the attacker the way `way` makes of its [`Searcher`].
    pub fn new(
        spec: PluginSpec,
        build_judge: BuildJudge,
        way: impl FnOnce(&Searcher) -> C,
    ) -> Result<Self, BuildError> {
        let search = Searcher::new(&spec, build_judge)?;
        Ok(MultiTurn {
            turns: spec.params.int(C::TURNS_PARAM).unwrap_or(5).max(1) as u32,
            way: way(&search),
            search,
            spec,
        })
    }
}

impl<C: Conversation> SearchAttack for MultiTurn<C> {
    fn parts(&self) -> (&PluginSpec, &Searcher) {
        (&self.spec, &self.search)
    }
    fn planned(&self) -> PlannedCalls {
        self.search.planned_calls(u64::from(self.turns))
    }
    fn search<'a>(
        &'a self,
        behavior: &'a Behavior,
        attacker: &'a dyn CallModel,
        ctx: AttackCtx<'a>,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        Box::pin(async move { Ok(vec![self.converse(behavior, attacker, ctx).await?]) })
    }
}

impl<C: Conversation> MultiTurn<C> {
    /// The conversation loop under every [`Conversation`]: one attempt, the tree of turns
    /// in its metadata.
    async fn converse(
        &self,
        behavior: &Behavior,
        attacker: &dyn CallModel,
        ctx: AttackCtx<'_>,
    ) -> Result<Attempt, ModelError> {
        let turns = self.turns;
        let system = self.way.system(&behavior.prompt, turns);
        let mut tree = Tree::new(C::NAME);
        let mut history: Vec<Message> = Vec::new();
        let mut parent: Option<u32> = None;
        let mut rolled_back: Option<String> = None;
        let mut last_score: Option<f64> = None;
        for turn in 1..=turns {
            let seed = derive_u64(ctx.seed, &[C::NAME, &turn.to_string()]);
            tree.attacker_queries += 1;
            let at = TurnAsk {
                attacker,
                search: &self.search,
                system: system.clone(),
                seed,
                turn,
                turns,
                history: &history,
                rolled_back: rolled_back.as_deref(),
                last_score,
            };
            let step = match self.way.ask(at).await? {
                Ok(t) => t,
                Err(why) => {
                    tree.failed(parent, turn, 0, why.to_string());
                    continue;
                }
            };
            let mut messages = history.clone();
            messages.push(Message::user(step.message.clone()));
            let attempt = try_target(ctx.target, messages, seed).await?;
            let transcript = attempt.transcript.clone();
            let ok = attempt.response.is_ok();
            let judge = self.search.judge.as_ref();
            let (grader, prompt) = (ctx.judge_grader, step.message.clone());
            let id = tree
                .judged(judge, grader, behavior, parent, turn, 0, prompt, attempt)
                .await?;
            let node = &mut tree.nodes[id as usize];
            node.technique = step.technique;
            node.reasoning = step.reasoning;
            last_score = node.score;
            let refused = node.refused == Some(true);
            if tree.success.is_some() {
                break;
            }
            match C::ON_REFUSAL {
                OnRefusal::RollBack if refused || !ok => {
                    tree.nodes[id as usize].pruned = true;
                    rolled_back = Some(step.message);
                }
                _ if ok => {
                    history = transcript;
                    parent = Some(id);
                    rolled_back = None;
                }
                _ => {}
            }
        }
        let mut params = serde_json::Map::new();
        params.insert(C::TURNS_PARAM.to_string(), turns.into());
        Ok(tree.finish(serde_json::Value::Object(params), C::TURNS_PARAM))
    }
}

/// One node of the search tree.
#[derive(Debug, Clone, Serialize)]
pub struct Node {
    pub id: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
    /// Iteration (pair), depth (tap) or round (crescendo), from 1.
    pub depth: u32,
    /// Branch within the iteration / child index.
    pub branch: u32,
    pub prompt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    /// The in-loop judge's score in [0, 1] (1/0 for judges without scores).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<bool>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub judge_reason: String,
    /// Why this branch has no judged reply (attacker or target failure, judge error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Pruned out of the frontier (tap) or rolled back after a refusal (crescendo).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pruned: bool,
    /// The named red-teaming technique this try used (goat, adaptive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub technique: Option<String>,
    /// The prompt transform this try's text went through (adaptive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transform: Option<String>,
    /// The attacker's stated reasoning for this turn (goat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
}

/// An attacker's reasoning for one turn, as it wrote it: what it saw in the last reply,
/// what it concluded, and the technique it chose (its own words, before the name was
/// matched against the catalogue).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Reasoning {
    pub observation: String,
    pub thought: String,
    pub strategy: String,
}

/// The score a verdict gives a node.
pub fn verdict_score(v: &Verdict) -> Option<f64> {
    match v.outcome {
        Outcome::Error | Outcome::Uncertain | Outcome::NoEvidence | Outcome::NotApplicable => None,
        Outcome::Success => Some(v.score.unwrap_or(1.0)),
        Outcome::Failure => Some(v.score.unwrap_or(0.0)),
    }
}

/// The search so far: nodes, the attempt of each node that reached the target, counts.
pub struct Tree {
    pub attack: &'static str,
    pub nodes: Vec<Node>,
    attempts: Vec<Option<Attempt>>,
    pub target_queries: u32,
    pub attacker_queries: u32,
    pub success: Option<u32>,
}

impl Tree {
    pub fn new(attack: &'static str) -> Tree {
        Tree {
            attack,
            nodes: Vec::new(),
            attempts: Vec::new(),
            target_queries: 0,
            attacker_queries: 0,
            success: None,
        }
    }

    /// Records a node whose attacker step failed (no target call was made).
    pub fn failed(&mut self, parent: Option<u32>, depth: u32, branch: u32, why: String) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(Node {
            id,
            parent,
            depth,
            branch,
            prompt: String::new(),
            response: None,
            score: None,
            success: false,
            refused: None,
            judge_reason: String::new(),
            error: Some(why),
            pruned: false,
            technique: None,
            transform: None,
            reasoning: None,
        });
        self.attempts.push(None);
        id
    }

    /// Judges a target attempt in the loop and records it as a node.
    #[expect(
        clippy::too_many_arguments,
        reason = "each is one piece of the loop's state"
    )]
    pub async fn judged(
        &mut self,
        judge: &dyn Judge,
        grader: Option<&dyn CallModel>,
        behavior: &Behavior,
        parent: Option<u32>,
        depth: u32,
        branch: u32,
        prompt: String,
        attempt: Attempt,
    ) -> Result<u32, ModelError> {
        self.target_queries += 1;
        let id = self.nodes.len() as u32;
        let mut node = Node {
            id,
            parent,
            depth,
            branch,
            prompt,
            response: attempt.response.as_ref().ok().map(|r| r.content.clone()),
            score: None,
            success: false,
            refused: None,
            judge_reason: String::new(),
            error: attempt
                .response
                .as_ref()
                .err()
                .map(|e| format!("target: {e}")),
            pruned: false,
            technique: None,
            transform: None,
            reasoning: None,
        };
        if node.error.is_none() {
            let v = judge.score(behavior, &attempt, grader).await?;
            node.score = verdict_score(&v);
            node.success = v.outcome == Outcome::Success;
            node.refused = v.refused;
            node.judge_reason = v.reason.clone();
            if v.outcome == Outcome::Error {
                node.error = v.error.map(|e| format!("in-loop judge: {e}"));
            }
        }
        if node.success && self.success.is_none() {
            self.success = Some(id);
        }
        self.nodes.push(node);
        self.attempts.push(Some(attempt));
        Ok(id)
    }

    /// The node to report: the first success, else the best score (earliest on ties),
    /// else the last node that got a reply.
    fn best(&self) -> Option<u32> {
        if let Some(s) = self.success {
            return Some(s);
        }
        let mut best: Option<(f64, u32)> = None;
        for n in &self.nodes {
            if let Some(s) = n.score
                && best.is_none_or(|(b, _)| s > b)
            {
                best = Some((s, n.id));
            }
        }
        best.map(|b| b.1).or_else(|| {
            self.attempts
                .iter()
                .rposition(|a| a.as_ref().is_some_and(|a| a.response.is_ok()))
                .or_else(|| self.attempts.iter().rposition(Option::is_some))
                .map(|i| i as u32)
        })
    }

    /// The attack's one attempt: the reported node's exchange, the tree in its metadata.
    pub fn finish(mut self, params: serde_json::Value, stopped: &str) -> Attempt {
        let best = self.best();
        let meta = serde_json::json!({
            "attack": self.attack,
            "params": params,
            "stopped": if self.success.is_some() { "success" } else { stopped },
            "best_node": best,
            "target_queries": self.target_queries,
            "attacker_queries": self.attacker_queries,
            "tree": self.nodes,
        });
        let (transcript, response) = match best.and_then(|b| self.attempts[b as usize].take()) {
            Some(a) => (a.transcript, a.response),
            None => {
                let last = self.nodes.iter().rev().find_map(|n| n.error.clone());
                (Vec::new(), Err(AttemptError::NoBranch { last }))
            }
        };
        Attempt {
            index: 0,
            transcript,
            response,
            query_count: self.target_queries,
            metadata: meta,
        }
    }
}

/// An attack driven by an attacker model and an in-loop judge (`pair`, `tap`,
/// `crescendo`, `goat`, `adaptive`): it writes its search, and its [`Attack`] impl —
/// one attempt, the attacker and the judge's grader declared, an error when called
/// without an attacker — is this trait's.
pub trait SearchAttack: Send + Sync {
    /// The attack's spec and its attacker and in-loop judge.
    fn parts(&self) -> (&PluginSpec, &Searcher);
    /// The model calls one behavior's search plans ([`Searcher::planned_calls`]).
    fn planned(&self) -> PlannedCalls;
    /// The search for `behavior`, asking `attacker` for the prompts.
    fn search<'a>(
        &'a self,
        behavior: &'a Behavior,
        attacker: &'a dyn CallModel,
        ctx: AttackCtx<'a>,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>>;
}

impl<T: SearchAttack> Attack for T {
    fn spec(&self) -> &PluginSpec {
        self.parts().0
    }
    fn max_attempts(&self) -> u32 {
        1
    }
    fn attacker(&self) -> Option<&PluginSpec> {
        Some(&self.parts().1.attacker)
    }
    fn judge_grader(&self) -> Option<&PluginSpec> {
        self.parts().1.judge_grader()
    }
    fn planned_calls(&self) -> PlannedCalls {
        self.planned()
    }
    fn run<'a>(
        &'a self,
        _behavior: &'a Behavior,
        _target: &'a dyn CallModel,
        _seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        needs_attacker(&self.parts().0.name)
    }
    fn run_ctx<'a>(
        &'a self,
        behavior: &'a Behavior,
        ctx: AttackCtx<'a>,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        match ctx.attacker {
            Some(attacker) => self.search(behavior, attacker, ctx),
            None => self.run(behavior, ctx.target, ctx.seed),
        }
    }
}

/// `Attack::run` of an attacker-LLM attack: the engine always calls `run_ctx` with an
/// attacker, so arriving here without one is an internal error, reported as such.
pub fn needs_attacker<'a>(name: &str) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
    Box::pin(std::future::ready(Err(ModelError::Config(format!(
        "{name} needs an attacker model (internal: called without one)"
    )))))
}

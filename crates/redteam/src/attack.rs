//! The attack seam: what an attack produces and how it reaches the target.

use crate::curves::CurveSpec;
use gauntlet_core::behavior::Behavior;
use gauntlet_core::message::{ChatRequest, ChatResponse, Message};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginSpec};
use gauntlet_models::{BoxFuture, ModelError};
use serde::Serialize;

/// The model-call seam ([`CallModel`], [`Conversation`]) lives in the call layer.
pub use gauntlet_calls::seam::{CallModel, Conversation, PrefixMemo};

/// Why an attempt has no response: its outcome is `error` (never a success or failure
/// of the model), and the transcript line records this message as its `error`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AttemptError {
    /// The target's call failed: the model layer's message ([`ModelError::Call`]).
    #[error("{0}")]
    Call(String),
    /// The `error` of a stored transcript line, read back (a resumed or re-judged run).
    #[error("{0}")]
    Stored(String),
    /// A search attack (PAIR, TAP, Crescendo) none of whose branches got a reply from
    /// the target: the last error its tree recorded, if any.
    #[error(
        "no branch reached the target: {}",
        last.as_deref().unwrap_or("the search made no target call")
    )]
    NoBranch { last: Option<String> },
    /// The agent loop ran with no model call allowed.
    #[error("no model call was made")]
    NoCall,
    /// The `agentdojo` injection was given a behavior that is not an AgentDojo case.
    #[error(
        "behavior `{behavior}` is not an AgentDojo case; the `agentdojo` injection runs `agentdojo` scenarios only"
    )]
    NotAgentDojoCase { behavior: String },
    /// The `injecagent` injection was given a behavior that is not an InjecAgent case.
    #[error(
        "behavior `{behavior}` is not an InjecAgent case; the injecagent injection runs the injecagent scenarios only"
    )]
    NotInjecAgentCase { behavior: String },
    /// A scenario injection (`injection`) was given a behavior without a scenario.
    #[error(
        "behavior `{behavior}` is not an injection scenario; `{injection}` runs scenario suites only"
    )]
    NotScenario { behavior: String, injection: String },
    /// An MCP injection could not open its servers.
    #[error("could not open the MCP servers ({kind}): {0}", kind = .0.kind())]
    McpOpen(#[source] gauntlet_mcp::client::McpError),
    /// The agent loop's tool environment failed (an episode error).
    #[error(transparent)]
    Env(#[from] crate::injection::env::EnvError),
    /// InjecAgent's step 2 had no attacker-tool response to show the agent.
    #[error(transparent)]
    Simulate(#[from] crate::injecagent::runner::SimulateError),
    /// A live AgentDojo episode failed (its sidecar, or a malformed reply of it).
    #[error(transparent)]
    Episode(#[from] crate::injection::agentdojo::episode::EpisodeError),
    /// An imported AgentDojo case could not be read, or AgentDojo recorded an error.
    #[error(transparent)]
    Import(#[from] crate::injection::agentdojo::import::ImportError),
}

/// One adversarial attempt: a conversation with the target and how it ended.
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    /// Position among the behavior's attempts, in the attack's order (0-based).
    pub index: u32,
    /// The conversation: every message sent, then the assistant's reply when there was one.
    pub transcript: Vec<Message>,
    /// The target's final response, or why there is none (a failed call).
    #[serde(skip)]
    pub response: Result<ChatResponse, AttemptError>,
    /// Target queries this attempt spent.
    pub query_count: u32,
    /// Attack-specific details (template label, search tree, …).
    pub metadata: serde_json::Value,
}

impl Attempt {
    /// Sends `messages` to the target and records the exchange as one attempt.
    /// A call failure becomes an errored attempt; a configuration error is returned so
    /// the run can stop.
    pub async fn single_turn(
        target: &dyn CallModel,
        index: u32,
        messages: Vec<Message>,
        seed: u64,
        metadata: serde_json::Value,
    ) -> Result<Attempt, ModelError> {
        let req = ChatRequest {
            messages,
            seed: Some(seed),
            ..Default::default()
        };
        // Borrowed, so the messages (a system prompt can be kilobytes) become the
        // transcript without a copy.
        let result = target.call_ref(&req).await;
        let mut transcript = req.messages;
        let response = match result {
            Ok(r) => {
                transcript.push(Message {
                    tool_calls: r.tool_calls.clone(),
                    ..Message::assistant(r.content.clone())
                });
                Ok(r)
            }
            Err(e @ (ModelError::Config(_) | ModelError::Budget)) => return Err(e),
            Err(ModelError::Call(msg)) => Err(AttemptError::Call(msg)),
        };
        Ok(Attempt {
            index,
            transcript,
            response,
            query_count: 1,
            metadata,
        })
    }
}

/// The `transforms` param every attack takes: a prompt-transform chain applied to every
/// user turn the attack sends (see [`crate::transform`]). Absent by default, so an attack
/// without transforms keeps its identity (and every call key) unchanged.
pub const TRANSFORMS: ParamSpec = ParamSpec {
    name: gauntlet_core::params::TRANSFORMS_PARAM,
    kind: ParamKind::SpecList(Axis::Transform),
    default: DefaultValue::Absent,
    doc: "prompt transforms applied in order to every user turn sent (see `transforms:` in `gauntlet list`)",
};

/// What the engine hands an attack for one unit: every model already wrapped with the
/// cache, journal and query budget, each under its own role.
#[derive(Clone, Copy)]
pub struct AttackCtx<'a> {
    /// The target under test.
    pub target: &'a dyn CallModel,
    /// The attacker model, for attacks that declare one ([`Attack::attacker`]).
    pub attacker: Option<&'a dyn CallModel>,
    /// The grader of the attack's in-loop judge, when that judge has one
    /// ([`Attack::judge_grader`]).
    pub judge_grader: Option<&'a dyn CallModel>,
    /// Derived from the run seed and the unit's identity.
    pub seed: u64,
}

/// Model calls an attack makes per behavior at most, by role (for `--estimate`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlannedCalls {
    pub target: u64,
    pub attacker: u64,
    /// Calls to the in-loop judge's grader.
    pub judge: u64,
}

/// An attack: turns a behavior into attempts against a target.
pub trait Attack: Send + Sync {
    fn spec(&self) -> &PluginSpec;
    /// How many attempts `run` makes per behavior at most (for planning and progress).
    fn max_attempts(&self) -> u32;
    /// Runs the attack. `seed` is derived from the run seed and this unit's identity.
    fn run<'a>(
        &'a self,
        behavior: &'a Behavior,
        target: &'a dyn CallModel,
        seed: u64,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>>;
    /// The attacker model spec, for attacks driven by an attacker LLM.
    fn attacker(&self) -> Option<&PluginSpec> {
        None
    }
    /// The grader model spec of the attack's in-loop judge, when it has one.
    fn judge_grader(&self) -> Option<&PluginSpec> {
        None
    }
    /// The attack-success curve the attack measures, if it scales with a budget
    /// (Best-of-N: attempts; many-shot: shots). See [`crate::curves`].
    fn curve(&self) -> Option<CurveSpec> {
        None
    }
    /// Calls per behavior at most, by role.
    fn planned_calls(&self) -> PlannedCalls {
        PlannedCalls {
            target: u64::from(self.max_attempts()),
            ..Default::default()
        }
    }
    /// Runs the attack with every model it may use. The engine calls this; the default
    /// forwards to [`Attack::run`], so single-model attacks implement only `run`.
    fn run_ctx<'a>(
        &'a self,
        behavior: &'a Behavior,
        ctx: AttackCtx<'a>,
    ) -> BoxFuture<'a, Result<Vec<Attempt>, ModelError>> {
        self.run(behavior, ctx.target, ctx.seed)
    }
}

//! What an attack produces: one attempt (a conversation with the target) and, when it
//! has no response, why.
//!
//! The attack seam ([`crate::attack`]) re-exports both; the surfaces whose failures end
//! an attempt (the agent loop's environment, InjecAgent's simulator, AgentDojo's live
//! episodes and imported logs) own their error types below this file.

use gauntlet_calls::seam::CallModel;
use gauntlet_core::message::{ChatRequest, ChatResponse, Message};
use gauntlet_models::ModelError;
use serde::Serialize;

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
    /// A budgeted attack (`adaptive`) had no try left for this behavior: earlier
    /// behaviors of the same target spent its run budget.
    #[error(
        "not attempted: the `{attack}` attack's run_budget ({budget} tries) was spent by earlier behaviors of this target; raise run_budget to try it"
    )]
    BudgetSpent { attack: String, budget: u64 },
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
    /// A scenario whose plan calls the user's own MCP servers (`external_tools`) was
    /// given to an injection that has no servers.
    #[error(
        "scenario `{behavior}` calls tools of your own MCP servers ({tools}); run it with an mcp_* injection whose `servers` file offers them, not `{injection}`"
    )]
    NeedsServers {
        behavior: String,
        injection: String,
        tools: String,
    },
    /// A scenario's external tool that no server of the `servers` file offers under its
    /// own name.
    #[error(
        "scenario `{behavior}` calls `{tool}` of your own MCP servers, but no server of the `servers` file offers a tool of that name (offered: {offered})"
    )]
    ExternalToolMissing {
        behavior: String,
        tool: String,
        offered: String,
    },
    /// An MCP injection could not open its servers.
    #[error("could not open the MCP servers ({kind}): {0}", kind = .0.kind())]
    McpOpen(#[source] gauntlet_mcp::client::McpError),
    /// One of the user's MCP servers did not start, or is not started again in the run.
    #[error(transparent)]
    McpStart(#[from] crate::injection::mcp_health::ServerStartError),
    /// The agent loop's tool environment failed (an episode error).
    #[error(transparent)]
    Env(#[from] crate::injection::env::EnvError),
    /// InjecAgent's step 2 had no attacker-tool response to show the agent.
    #[error(transparent)]
    Simulate(#[from] crate::injecagent::simulate::SimulateError),
    /// A live AgentDojo episode failed (its sidecar, or a malformed reply of it).
    #[error(transparent)]
    Episode(#[from] crate::injection::agentdojo::error::EpisodeError),
    /// An imported AgentDojo case could not be read, or AgentDojo recorded an error.
    #[error(transparent)]
    Import(#[from] crate::injection::agentdojo::error::ImportError),
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

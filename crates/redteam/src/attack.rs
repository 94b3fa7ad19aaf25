//! The attack seam: what an attack produces and how it reaches the target.

use gauntlet_core::behavior::Behavior;
use gauntlet_core::message::{ChatRequest, ChatResponse, Message};
use gauntlet_core::params::PluginSpec;
use gauntlet_models::{BoxFuture, ModelError};
use serde::Serialize;

/// A model as an attack or judge sees it: the engine's wrapper that adds the response
/// cache, the journal, the query budget and call accounting around the real model.
pub trait CallModel: Send + Sync {
    fn call<'a>(&'a self, req: ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>>;
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
    pub response: Result<ChatResponse, String>,
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
            messages: messages.clone(),
            seed: Some(seed),
            ..Default::default()
        };
        let mut transcript = messages;
        let response = match target.call(req).await {
            Ok(r) => {
                transcript.push(Message {
                    tool_calls: r.tool_calls.clone(),
                    ..Message::assistant(r.content.clone())
                });
                Ok(r)
            }
            Err(e @ (ModelError::Config(_) | ModelError::Budget)) => return Err(e),
            Err(ModelError::Call(msg)) => Err(msg),
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
}

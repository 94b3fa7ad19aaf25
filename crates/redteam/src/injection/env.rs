//! The tool-environment seam of the agent loop: what an agent acts on.
//!
//! The loop ([`run_loop`](super::agent_loop::run_loop)) owns the conversation and every
//! model call; a [`ToolEnv`] owns the tools: their definitions, the execution of one
//! call by name and arguments, and how its result reads to the model. Implementations:
//!
//! - the bundled suites' in-memory sandbox with its injection placement
//!   ([`crate::injection::agent::BundledEnv`]);
//! - an AgentDojo episode, whose tools run in the confined sidecar
//!   (`injection::agentdojo`);
//! - tools served by MCP servers (the same seam, another implementation).
//!
//! # Contract
//! - [`ToolEnv::tools`] is fixed for an episode: it is sent with every model call (and
//!   so is part of every call's cache key); return the same definitions every time.
//! - [`ToolEnv::call`] runs one call the model made, in the order the model made them.
//!   `Ok(text)` is the tool message's content exactly as the model must see it: an
//!   environment that reports a bad call to the model (an unknown tool, missing
//!   arguments) returns that report as `Ok` text, since the model is meant to see it and
//!   may recover. `Err` is an *episode error*: the environment itself failed (a sidecar
//!   that crashed, hung past its time limit or replied with something malformed, a
//!   server that went away). The loop stops there and the run is an error outcome with
//!   that reason — never a success or a failure of the model.
//! - [`ToolEnv::after_tools`] may add messages after each round of tool results (a
//!   defence that repeats the user's prompt); none by default.
//! - Determinism: for byte-identical reruns, the same calls in the same order must give
//!   the same texts (cache keys of later model calls include them).

use gauntlet_core::message::{Message, ToolCall, ToolDef};
use gauntlet_models::BoxFuture;
use std::sync::Arc;

/// Why an environment could not answer a call: ends the episode as an error outcome.
/// One variant per environment that can fail.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EnvError {
    /// An MCP server failed during a tool call.
    #[error("MCP server failed during a tool call: {0}")]
    Mcp(#[source] gauntlet_mcp::client::McpError),
    /// The AgentDojo sidecar failed the tool request.
    #[error(transparent)]
    Sidecar(#[from] crate::injection::agentdojo::sidecar::SidecarError),
    /// The AgentDojo sidecar answered the tool request without its `content`.
    #[error("malformed reply from the AgentDojo sidecar: a tool result without `content`")]
    NoContent,
}

/// A tool environment an agent loop acts in (see the module docs for the contract).
pub trait ToolEnv: Send {
    /// The tool definitions sent to the model with every call.
    fn tools(&self) -> Arc<[ToolDef]>;
    /// Executes one tool call; the text is the tool message's content.
    fn call<'a>(&'a mut self, call: &'a ToolCall) -> BoxFuture<'a, Result<String, EnvError>>;
    /// Messages appended after each round of tool results.
    fn after_tools(&mut self) -> Vec<Message> {
        Vec::new()
    }
}

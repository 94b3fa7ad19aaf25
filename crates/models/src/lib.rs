//! gauntlet-models: the one seam through which gauntlet talks to any model.
//!
//! A [`Model`] takes a [`ChatRequest`] and returns a [`ChatResponse`] or a
//! [`ModelError`]. Targets under test, attacker models and grader models are all
//! `Model`s, built by name from the closed [`registry`]. Caching, budgets and transcripts
//! wrap this seam in the engine, so every model gets them for free.
//!
//! Live targets (`openai_compat`, `anthropic`) send their calls through the resilient
//! [`transport`], whose retry and concurrency counters the engine reads with
//! [`Model::transport_stats`].
//!
//! A target built with `tool_protocol: prompted` comes wrapped in
//! [`tool_protocol::PromptedTarget`]: tools described in its prompt, calls parsed from
//! its text (AgentDojo's `LOCAL` format), for models without native tool calls.

// Files are read through `gauntlet_core::files` only (clippy.toml says why).
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod batch;
mod call;
pub mod evidence;
mod model;
pub(crate) mod refusal;
pub mod registry;
pub mod secret;
pub mod sse;
pub mod stop;
pub mod targets;
pub mod tool_protocol;
pub mod transport;

pub use call::{BoxFuture, CallLimits, ModelError, ToolProtocol};
pub use model::Model;
pub use transport::{TransportOptions, TransportStats};

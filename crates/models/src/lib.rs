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

pub mod batch;
pub mod refusal;
pub mod registry;
pub mod targets;
pub mod tool_protocol;
pub mod transport;

pub use tool_protocol::ToolProtocol;
pub use transport::{TransportOptions, TransportStats};

use gauntlet_core::message::{ChatRequest, ChatResponse};
use gauntlet_core::params::PluginSpec;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future (object-safe async).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a model call produced no response.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum ModelError {
    /// The configuration is wrong (missing key, 401/403): the run must stop.
    #[error("configuration error: {0}")]
    Config(String),
    /// This call failed (after any retries). Recorded as an `error` outcome; the run goes on.
    #[error("{0}")]
    Call(String),
    /// The query budget is spent; no call was made.
    #[error("query budget exhausted")]
    Budget,
}

/// Caps on one call, checked by the call layer for every model (`gauntlet-calls`):
/// tool calls per reply and the request's size. Live targets take them from their
/// `max_tool_calls` and `max_request_bytes` params;
/// any excess is that call's error outcome, never a success or failure of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Most tool calls one reply may carry.
    pub max_tool_calls: usize,
    /// Largest request ([`gauntlet_core::message::ChatRequest::size`]) sent.
    pub max_request_bytes: usize,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            max_tool_calls: gauntlet_core::message::DEFAULT_MAX_TOOL_CALLS,
            max_request_bytes: gauntlet_core::message::DEFAULT_MAX_REQUEST_BYTES,
        }
    }
}

/// A chat model.
pub trait Model: Send + Sync {
    /// The resolved spec this model was built from; its identity keys the cache.
    fn spec(&self) -> &PluginSpec;
    /// True for deterministic offline models (no tokens, no cost, no network).
    fn offline(&self) -> bool;
    /// Sends one request.
    fn chat<'a>(&'a self, req: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>>;
    /// The label shown in reports.
    fn label(&self) -> String {
        self.spec().label()
    }
    /// Retry and concurrency counters of a network model's transport (a snapshot, cheap
    /// to call while a run is going, e.g. for progress output and `run.json`). `None` for
    /// models that do not use the network.
    fn transport_stats(&self) -> Option<TransportStats> {
        None
    }
    /// The provider's batch API, when this model was built with `batch: true`
    /// ([`batch::BATCH_PARAMS`]); the call layer then sends its calls in batches.
    fn batch_api(&self) -> Option<&dyn batch::BatchApi> {
        None
    }
    /// How this model is told about tools and how its calls come back
    /// ([`tool_protocol`]): `Prompted` for a target built with `tool_protocol: prompted`.
    fn tool_protocol(&self) -> ToolProtocol {
        ToolProtocol::Native
    }
    /// The caps the call layer applies to this model's calls.
    fn limits(&self) -> CallLimits {
        CallLimits::default()
    }
    /// The API key this model sends, so the call layer can scrub it from every reply
    /// before anything is journaled (an endpoint may echo it back). `None` for models
    /// without one.
    fn secret(&self) -> Option<&transport::Secret> {
        None
    }
}

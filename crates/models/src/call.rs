//! The shape of one model call, below everything else in this crate: its future, why it
//! can fail, the caps the call layer checks, and the tool protocol a target speaks (its
//! behaviour is in [`crate::tool_protocol`]).

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

/// How a target is told about tools and how its calls come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolProtocol {
    Native,
    Prompted,
}

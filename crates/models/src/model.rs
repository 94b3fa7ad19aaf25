//! The [`Model`] trait: the one seam through which gauntlet talks to any model.

use crate::batch;
use crate::call::{BoxFuture, CallLimits, ModelError, ToolProtocol};
use crate::transport::{self, TransportStats};
use gauntlet_core::message::{ChatRequest, ChatResponse};
use gauntlet_core::params::PluginSpec;

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
    /// ([`crate::tool_protocol`]): `Prompted` for a target built with `tool_protocol: prompted`.
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
    /// Every secret this model sends (its API key, the `http` target's secret header
    /// values), each scrubbed by the call layer from every reply before anything is
    /// journaled.
    fn secrets(&self) -> Vec<&transport::Secret> {
        self.secret().into_iter().collect()
    }
}

//! The closed registry of targets: a match from name to constructor. A config can only
//! ever name a plugin compiled into this list.

use crate::targets::anthropic::{self, AnthropicTarget};
use crate::targets::openai_compat::{self, OpenAiCompatTarget};
use crate::targets::reference::{self, ReferenceTarget};
use crate::targets::reference_agent::{self, ReferenceAgent};
use crate::targets::reference_memorizer::{self, ReferenceMemorizer};
use crate::{Model, ModelError};
use gauntlet_core::params::{PluginInfo, PluginSpec};
use std::sync::Arc;

/// Every registered target, in the order `gauntlet list` prints them.
pub const TARGETS: &[PluginInfo] = &[
    reference::INFO,
    reference::MOCK_INFO,
    reference_memorizer::INFO,
    reference_agent::INFO,
    openai_compat::INFO,
    anthropic::INFO,
];

/// Builds a target from a resolved spec. Live targets read their API key from the
/// environment here, so a missing key is a configuration error before any call is made.
pub fn build_target(spec: &PluginSpec) -> Result<Arc<dyn Model>, ModelError> {
    match spec.name.as_str() {
        "reference" | "mock" => Ok(Arc::new(ReferenceTarget::new(spec.clone()))),
        "reference_memorizer" => Ok(Arc::new(ReferenceMemorizer::new(spec.clone()))),
        "reference_agent" => Ok(Arc::new(ReferenceAgent::new(spec.clone()))),
        "openai_compat" => Ok(Arc::new(OpenAiCompatTarget::new(spec)?)),
        "anthropic" => Ok(Arc::new(AnthropicTarget::new(spec)?)),
        other => Err(ModelError::Config(format!("unknown target `{other}`"))),
    }
}

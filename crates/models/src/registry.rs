//! The closed registry of targets: a match from name to constructor. A config can only
//! ever name a plugin compiled into this list.

use crate::targets::reference::{self, ReferenceTarget};
use crate::{Model, ModelError};
use gauntlet_core::params::{PluginInfo, PluginSpec};
use std::sync::Arc;

/// Every registered target, in the order `gauntlet list` prints them.
pub const TARGETS: &[PluginInfo] = &[reference::INFO, reference::MOCK_INFO];

/// Builds a target from a resolved spec.
pub fn build_target(spec: &PluginSpec) -> Result<Arc<dyn Model>, ModelError> {
    match spec.name.as_str() {
        "reference" | "mock" => Ok(Arc::new(ReferenceTarget::new(spec.clone()))),
        other => Err(ModelError::Config(format!("unknown target `{other}`"))),
    }
}

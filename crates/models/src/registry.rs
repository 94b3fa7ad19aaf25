//! The closed registry of targets: a match from name to constructor. A config can only
//! ever name a plugin compiled into this list.

use crate::targets::anthropic::{self, AnthropicTarget};
use crate::targets::command::{self, CommandTarget};
use crate::targets::http::{self, HttpTarget};
use crate::targets::imported::{self, Imported};
use crate::targets::openai_compat::{self, OpenAiCompatTarget};
use crate::targets::reference::{self, ReferenceTarget};
use crate::targets::reference_agent::{self, ReferenceAgent};
use crate::targets::reference_memorizer::{self, ReferenceMemorizer};
use crate::targets::{EnvLookup, process_env};
use crate::tool_protocol::{PromptedTarget, ToolProtocol};
use crate::transport::TransportOptions;
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
    imported::INFO,
    http::INFO,
    command::INFO,
];

/// Builds a target from a resolved spec. Live targets read their API key from the
/// environment here, so a missing key is a configuration error before any call is made.
pub fn build_target(spec: &PluginSpec) -> Result<Arc<dyn Model>, ModelError> {
    with_protocol(spec, build_plain_target(spec)?)
}

/// Wraps a built target in the tool protocol its spec asks for (`tool_protocol`).
pub fn with_protocol(spec: &PluginSpec, m: Arc<dyn Model>) -> Result<Arc<dyn Model>, ModelError> {
    Ok(match ToolProtocol::of(spec) {
        ToolProtocol::Native => m,
        ToolProtocol::Prompted => Arc::new(PromptedTarget::new(m)?),
    })
}

fn build_plain_target(spec: &PluginSpec) -> Result<Arc<dyn Model>, ModelError> {
    match spec.name.as_str() {
        "reference" | "mock" => Ok(Arc::new(ReferenceTarget::new(spec.clone()))),
        "reference_memorizer" => Ok(Arc::new(ReferenceMemorizer::new(spec.clone()))),
        "reference_agent" => Ok(Arc::new(ReferenceAgent::new(spec.clone()))),
        "openai_compat" => Ok(Arc::new(OpenAiCompatTarget::new(spec)?)),
        "anthropic" => Ok(Arc::new(AnthropicTarget::new(spec)?)),
        "imported" => Ok(Arc::new(Imported::new(spec.clone()))),
        "http" => Ok(Arc::new(HttpTarget::new(spec)?)),
        "command" => Ok(Arc::new(CommandTarget::new(spec)?)),
        other => Err(ModelError::Config(format!("unknown target `{other}`"))),
    }
}

/// Builds a target for inspection only (`gauntlet validate`), with the process
/// environment: as [`build_target`], except that an API-key variable that is unset or
/// empty is no error. Such a target is built with a stand-in key, so every other check
/// still runs, and comes back with the message naming the variable: the caller reports
/// it as a warning. A target built this way must never be called.
pub fn build_target_for_check(
    spec: &PluginSpec,
) -> Result<(Arc<dyn Model>, Option<String>), ModelError> {
    build_target_for_check_with(spec, &process_env)
}

/// [`build_target_for_check`] with an explicit environment lookup (tests).
pub fn build_target_for_check_with(
    spec: &PluginSpec,
    env: EnvLookup<'_>,
) -> Result<(Arc<dyn Model>, Option<String>), ModelError> {
    let live = |env: EnvLookup<'_>| -> Result<Arc<dyn Model>, ModelError> {
        let options = TransportOptions::default();
        let m: Arc<dyn Model> = match spec.name.as_str() {
            "openai_compat" => Arc::new(OpenAiCompatTarget::with_env(spec, env, options)?),
            "anthropic" => Arc::new(AnthropicTarget::with_env(spec, env, options)?),
            "http" => Arc::new(HttpTarget::with_env(spec, env, options)?),
            "command" => Arc::new(CommandTarget::with_env(spec, env)?),
            _ => build_plain_target(spec)?,
        };
        with_protocol(spec, m)
    };
    let e = match live(env) {
        Ok(m) => return Ok((m, None)),
        Err(e) => e,
    };
    // The variables a target reads its secrets from: `api_key_env`, the `http` target's
    // `header_env` values, the `command` target's `env` names.
    let p = &spec.params;
    let mut vars: Vec<&str> = p.str("api_key_env").into_iter().collect();
    vars.extend(
        p.str_map("header_env")
            .unwrap_or(&[])
            .iter()
            .map(|(_, v)| v.as_str()),
    );
    vars.extend(p.str_list("env").unwrap_or(&[]).iter().map(String::as_str));
    let unset: Vec<&str> = vars
        .into_iter()
        .filter(|k| env(k).is_none_or(|v| v.trim().is_empty()))
        .collect();
    if unset.is_empty() {
        return Err(e);
    }
    let with_key = |name: &str| {
        if unset.contains(&name) {
            Some("gauntlet-validate-stand-in-key".to_string())
        } else {
            env(name)
        }
    };
    let why = match e {
        ModelError::Config(m) => m,
        other => other.to_string(),
    };
    Ok((live(&with_key)?, Some(why)))
}

//! Shared helpers for the live-target tests: resolving specs exactly as a run config
//! would (through the registry's declared params), environment lookups that never touch
//! the process environment, and fast retry timing.

#![allow(
    dead_code,
    reason = "shared by several test binaries; each uses a part"
)]

use gauntlet_core::params::{Axis, Catalog, PluginInfo, PluginSpec, resolve_spec};
use gauntlet_core::tree::parse_yaml;
use gauntlet_models::TransportOptions;
use gauntlet_models::registry::TARGETS;
use gauntlet_models::targets::anthropic::AnthropicTarget;
use gauntlet_models::targets::openai_compat::OpenAiCompatTarget;
use std::collections::HashMap;
use std::time::Duration;

pub(crate) const CANARY: &str = "sk-test-CANARY-123";

struct Targets;
impl Catalog for Targets {
    fn find(&self, axis: Axis, name: &str) -> Option<&PluginInfo> {
        TARGETS.iter().find(|p| p.axis == axis && p.name == name)
    }
    fn names(&self, axis: Axis) -> Vec<&'static str> {
        TARGETS
            .iter()
            .filter(|p| p.axis == axis)
            .map(|p| p.name)
            .collect()
    }
}

/// Resolves a target spec written as YAML flow, e.g. `{name: openai_compat, params: {...}}`.
pub(crate) fn spec(yaml: &str) -> PluginSpec {
    try_spec(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

pub(crate) fn try_spec(yaml: &str) -> Result<PluginSpec, String> {
    let node = parse_yaml(yaml).map_err(|e| format!("{e:?}"))?;
    let mut diags = Vec::new();
    match resolve_spec(&Targets, Axis::Target, &node, "targets[0]", &mut diags) {
        Some(s) if diags.is_empty() => Ok(s),
        _ => Err(format!("{diags:?}")),
    }
}

/// An environment made of the given pairs only.
pub(crate) fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

/// Short backoff so retry tests take milliseconds; Retry-After is still honoured in full.
pub(crate) fn fast() -> TransportOptions {
    TransportOptions {
        backoff_base: Duration::from_millis(10),
        backoff_cap: Duration::from_millis(50),
        ..TransportOptions::default()
    }
}

/// An openai_compat target at `base` whose key is the canary in variable `key_env`.
/// `extra` is more YAML params, e.g. `"max_retries: 2, timeout_s: 0.3"`.
pub(crate) fn openai(base: &str, key_env: &str, extra: &str) -> OpenAiCompatTarget {
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(", {extra}")
    };
    let s = spec(&format!(
        "{{name: openai_compat, params: {{model: test-model, base_url: '{base}', api_key_env: {key_env}{extra}}}}}"
    ));
    OpenAiCompatTarget::with_env(&s, &env(&[(key_env, CANARY)]), fast()).expect("target builds")
}

/// An anthropic target at `base` with the canary key in `key_env`.
pub(crate) fn anthropic(base: &str, key_env: &str, extra: &str) -> AnthropicTarget {
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(", {extra}")
    };
    let s = spec(&format!(
        "{{name: anthropic, params: {{model: claude-test, base_url: '{base}', api_key_env: {key_env}{extra}}}}}"
    ));
    AnthropicTarget::with_env(&s, &env(&[(key_env, CANARY)]), fast()).expect("target builds")
}

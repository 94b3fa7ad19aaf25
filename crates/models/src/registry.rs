//! The closed registry of targets: one table of names, documentation, constructors and
//! capabilities. A config can only ever name a plugin compiled into this table.

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
use std::sync::{Arc, LazyLock};

/// One registered target: its [`PluginInfo`] (what `gauntlet list` and `validate`
/// read), how a spec becomes the target, and what it can do. A new target is its own
/// file under `targets/`, its `mod` line and one entry in [`TARGET_TABLE`].
#[derive(Clone, Copy)]
pub struct TargetEntry {
    pub info: PluginInfo,
    /// Builds the target; a live one reads its API key from the process environment,
    /// so a missing key is a configuration error before any call is made.
    pub build: fn(&PluginSpec) -> Result<Arc<dyn Model>, ModelError>,
    /// For a target that reads secrets from the environment: the same, with an explicit
    /// environment lookup and transport options (`gauntlet validate` builds it with a
    /// stand-in key). `None`: [`TargetEntry::build`] reads no secret.
    pub with_env: Option<LiveBuild>,
    /// It has a provider batch API: `run --batch` sends its calls in batches.
    pub batch: bool,
}

/// A live target's constructor with an explicit environment.
pub type LiveBuild =
    fn(&PluginSpec, EnvLookup<'_>, TransportOptions) -> Result<Arc<dyn Model>, ModelError>;

/// The targets, in the order `gauntlet list` prints them.
pub const TARGET_TABLE: &[TargetEntry] = &[
    TargetEntry {
        info: reference::INFO,
        build: |s| Ok(Arc::new(ReferenceTarget::new(s.clone()))),
        with_env: None,
        batch: false,
    },
    TargetEntry {
        info: reference::MOCK_INFO,
        build: |s| Ok(Arc::new(ReferenceTarget::new(s.clone()))),
        with_env: None,
        batch: false,
    },
    TargetEntry {
        info: reference_memorizer::INFO,
        build: |s| Ok(Arc::new(ReferenceMemorizer::new(s.clone()))),
        with_env: None,
        batch: false,
    },
    TargetEntry {
        info: reference_agent::INFO,
        build: |s| Ok(Arc::new(ReferenceAgent::new(s.clone()))),
        with_env: None,
        batch: false,
    },
    TargetEntry {
        info: openai_compat::INFO,
        build: |s| Ok(Arc::new(OpenAiCompatTarget::new(s)?)),
        with_env: Some(|s, env, o| Ok(Arc::new(OpenAiCompatTarget::with_env(s, env, o)?))),
        batch: true,
    },
    TargetEntry {
        info: anthropic::INFO,
        build: |s| Ok(Arc::new(AnthropicTarget::new(s)?)),
        with_env: Some(|s, env, o| Ok(Arc::new(AnthropicTarget::with_env(s, env, o)?))),
        batch: true,
    },
    TargetEntry {
        info: imported::INFO,
        build: |s| Ok(Arc::new(Imported::new(s.clone()))),
        with_env: None,
        batch: false,
    },
    TargetEntry {
        info: http::INFO,
        build: |s| Ok(Arc::new(HttpTarget::new(s)?)),
        with_env: Some(|s, env, o| Ok(Arc::new(HttpTarget::with_env(s, env, o)?))),
        batch: false,
    },
    TargetEntry {
        info: command::INFO,
        build: |s| Ok(Arc::new(CommandTarget::new(s)?)),
        with_env: Some(|s, env, _| Ok(Arc::new(CommandTarget::with_env(s, env)?))),
        batch: false,
    },
];

/// Every registered target's [`PluginInfo`], in the table's order.
pub static TARGETS: LazyLock<Vec<PluginInfo>> =
    LazyLock::new(|| TARGET_TABLE.iter().map(|e| e.info).collect());

/// The table entry of the target named `name`.
pub fn target_entry(name: &str) -> Result<&'static TargetEntry, ModelError> {
    TARGET_TABLE
        .iter()
        .find(|e| e.info.name == name)
        .ok_or_else(|| ModelError::Config(format!("unknown target `{name}`")))
}

/// Whether target `name` has a provider batch API (`run --batch`).
pub fn can_batch(name: &str) -> bool {
    target_entry(name).is_ok_and(|e| e.batch)
}

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
    (target_entry(&spec.name)?.build)(spec)
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
        let m = match target_entry(&spec.name)?.with_env {
            Some(live) => live(spec, env, TransportOptions::default())?,
            None => build_plain_target(spec)?,
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

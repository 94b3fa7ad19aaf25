//! Target specs of real mode: parsing `--target` (inline YAML, a file, or per-tier
//! targets) into the models of each tier, and the golden backend's HTTP target.

use crate::cascade::{TierModel, TierModels};
use gauntlet_core::params::{
    Axis, Catalog, ParamValue, Params, PluginInfo, PluginSpec, resolve_spec,
};
use gauntlet_models::targets::anthropic::AnthropicTarget;
use gauntlet_models::{Model, TransportOptions};
use std::path::Path;
use std::sync::Arc;

/// An `anthropic` target pointed at a loopback golden server.
pub(super) fn golden_http_target(
    base_url: &str,
) -> Result<Arc<dyn Model>, gauntlet_models::ModelError> {
    let mut params = Params::new();
    params.insert("model", ParamValue::Str("golden".into()));
    params.insert("name", ParamValue::Str("golden-http".into()));
    params.insert("base_url", ParamValue::Str(base_url.into()));
    params.insert("api_key_env", ParamValue::Str("GAUNTLET_GOLDEN_KEY".into()));
    params.insert("max_retries", ParamValue::Int(0));
    let spec = PluginSpec {
        name: "anthropic".into(),
        params,
        loc: Default::default(),
        label: None,
    };
    let env = |k: &str| (k == "GAUNTLET_GOLDEN_KEY").then(|| "golden-loopback".to_string());
    Ok(Arc::new(AnthropicTarget::with_env(
        &spec,
        &env,
        TransportOptions::default(),
    )?))
}

// ---------------------------------------------------------------- real targets

pub(super) struct Targets;
impl Catalog for Targets {
    fn find(&self, axis: Axis, name: &str) -> Option<&PluginInfo> {
        gauntlet_models::registry::TARGETS
            .iter()
            .find(|p| p.axis == axis && p.name == name)
    }
    fn names(&self, axis: Axis) -> Vec<&'static str> {
        gauntlet_models::registry::TARGETS
            .iter()
            .filter(|p| p.axis == axis)
            .map(|p| p.name)
            .collect()
    }
}

/// Why a `--target` spec (or an exam file's `target` / `tiers`) gives no tier models.
/// `origin` names the file, or `--target` for an inline spec.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Read(#[from] gauntlet_core::files::ReadError),
    #[error("{origin}: {detail}")]
    Yaml { origin: String, detail: String },
    /// The spec names no known target or gives bad params: one `path: message help`
    /// per problem.
    #[error("{origin}: invalid target spec: {}", .problems.join("; "))]
    Spec {
        origin: String,
        problems: Vec<String>,
    },
    /// The target cannot be built (a missing API key, a bad URL).
    #[error("{origin}: {path}: {source}")]
    Build {
        origin: String,
        path: String,
        #[source]
        source: gauntlet_models::ModelError,
    },
    #[error("{origin}: tiers.{tier}: unknown tier (triage, investigate, deep, formatter)")]
    UnknownTier { origin: String, tier: String },
    #[error("{origin}: `tiers` must be a mapping")]
    TiersNotAMapping { origin: String },
    #[error("{origin}: unknown key `{key}` (target, tiers)")]
    UnknownKey { origin: String, key: String },
    #[error("{origin}: missing `target`")]
    MissingTarget { origin: String },
}

/// Builds the tier models from `--target`: a path to a YAML file, or inline YAML.
/// The document is either a target spec (`{name: openai_compat, params: {...}}` or a
/// bare name) used for every tier, or `{target: SPEC, tiers: {triage|investigate|deep|
/// formatter: SPEC}}`. Errors (including a missing API key) are configuration errors.
pub fn parse_target(arg: &str) -> Result<(TierModels, String), TargetError> {
    // A path that exists is read as a file (a device or a directory is refused by the
    // file reader, naming it), never taken for an inline spec.
    let (text, origin) = if std::fs::symlink_metadata(arg).is_ok() {
        (
            gauntlet_core::files::read_to_string(
                Path::new(arg),
                gauntlet_core::files::Kind::CONFIG,
            )?,
            arg.to_string(),
        )
    } else {
        (arg.to_string(), "--target".to_string())
    };
    let root = gauntlet_core::tree::parse_yaml(&text).map_err(|e| TargetError::Yaml {
        detail: format!("{e:?}"),
        origin: origin.clone(),
    })?;
    parse_target_node(&root, &origin)
}

/// [`parse_target`] of a parsed document; `origin` names it in errors.
pub fn parse_target_node(
    root: &gauntlet_core::tree::Node,
    origin: &str,
) -> Result<(TierModels, String), TargetError> {
    use gauntlet_core::tree::{Node, Value};
    let origin_ = || origin.to_string();
    let build = |node: &Node, path: &str| -> Result<TierModel, TargetError> {
        let mut diags = Vec::new();
        let spec = resolve_spec(&Targets, Axis::Target, node, path, &mut diags);
        let spec = match spec {
            Some(s) if diags.is_empty() => s,
            _ => {
                let problems: Vec<String> = diags
                    .iter()
                    .map(|d| {
                        format!(
                            "{}: {} {}",
                            d.path,
                            d.message,
                            d.help.clone().unwrap_or_default()
                        )
                    })
                    .collect();
                return Err(TargetError::Spec {
                    origin: origin_(),
                    problems,
                });
            }
        };
        let model = gauntlet_models::registry::build_target(&spec).map_err(|source| {
            TargetError::Build {
                origin: origin_(),
                path: path.to_string(),
                source,
            }
        })?;
        let id = spec
            .params
            .str("model")
            .map(str::to_string)
            .unwrap_or_else(|| spec.label());
        Ok(TierModel { id, model })
    };
    let entries = match &root.value {
        Value::Map(e) if e.iter().any(|(k, _)| k.name == "target") => Some(e),
        _ => None,
    };
    let Some(entries) = entries else {
        let m = build(root, "target")?;
        let label = m.model.label();
        return Ok((
            TierModels {
                triage: m.clone(),
                investigate: m.clone(),
                deep: m.clone(),
                formatter: m,
            },
            label,
        ));
    };
    let mut default = None;
    let mut tiers: Vec<(String, &Node)> = Vec::new();
    for (k, v) in entries {
        match k.name.as_str() {
            "target" => default = Some(build(v, "target")?),
            "tiers" => match &v.value {
                Value::Map(t) => {
                    for (tk, tv) in t {
                        if !["triage", "investigate", "deep", "formatter"]
                            .contains(&tk.name.as_str())
                        {
                            return Err(TargetError::UnknownTier {
                                origin: origin_(),
                                tier: tk.name.clone(),
                            });
                        }
                        tiers.push((tk.name.clone(), tv));
                    }
                }
                _ => return Err(TargetError::TiersNotAMapping { origin: origin_() }),
            },
            other => {
                return Err(TargetError::UnknownKey {
                    origin: origin_(),
                    key: other.to_string(),
                });
            }
        }
    }
    let d = default.ok_or_else(|| TargetError::MissingTarget { origin: origin_() })?;
    let label = d.model.label();
    let mut m = TierModels {
        triage: d.clone(),
        investigate: d.clone(),
        deep: d.clone(),
        formatter: d,
    };
    for (name, node) in tiers {
        let tm = build(node, &format!("tiers.{name}"))?;
        match name.as_str() {
            "triage" => m.triage = tm,
            "investigate" => m.investigate = tm,
            "deep" => m.deep = tm,
            _ => m.formatter = tm,
        }
    }
    Ok((m, label))
}

//! The structural framings' common shape: a template with a `{prompt}` placeholder.

use crate::error::BuildError;
use crate::transform::seam::{Applied, Family, Transform};
use gauntlet_core::params::{DefaultValue, ParamKind, ParamSpec, PluginSpec};
use gauntlet_core::rng::ChaCha8Rng;

/// A structural transform whose output is `template` with `{prompt}` replaced by the
/// text; the template is a param with a built-in default.
pub struct Framed {
    spec: PluginSpec,
    template: String,
}

impl Framed {
    /// Builds from the spec's `template` param (or `default`); it must hold `{prompt}`.
    pub fn new(spec: &PluginSpec, default: &str) -> Result<Framed, BuildError> {
        let template = spec.params.str("template").unwrap_or(default).to_string();
        if !template.contains("{prompt}") {
            return Err(BuildError::param("`template` has no {prompt} placeholder"));
        }
        Ok(Framed {
            spec: spec.clone(),
            template,
        })
    }
}

/// The `template` param of a [`Framed`] transform.
pub const TEMPLATE: ParamSpec = ParamSpec {
    name: "template",
    kind: ParamKind::Str,
    default: DefaultValue::Builtin,
    doc: "the framing, with a {prompt} placeholder; replaces the built-in text",
};

impl Transform for Framed {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn family(&self) -> Family {
        Family::Structure
    }
    fn apply(&self, text: &str, _rng: &mut ChaCha8Rng) -> Applied {
        Applied::Text(self.template.replacen("{prompt}", text, 1))
    }
    fn invert(&self, sent: &str) -> Option<String> {
        let (pre, post) = self.template.split_once("{prompt}")?;
        let mid = sent.strip_prefix(pre)?.strip_suffix(post)?;
        Some(mid.to_string())
    }
}

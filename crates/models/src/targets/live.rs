//! What the two live targets (`openai_compat`, `anthropic`) share: resolving their params
//! (base URL with its environment fallback, the API key from the environment variable
//! the config names, timeouts, retries, concurrency) and reading provider JSON with
//! errors that name the endpoint and the exact field path that was missing or mistyped.
//!
//! Keeping this in one place means both wire formats enforce the same security rules
//! (https except to loopback, keys only from the environment and never in the spec) and
//! report malformed responses the same way.

use crate::ModelError;
use crate::transport::{
    AuthStyle, Secret, TransportConfig, TransportOptions, check_base_url, check_env_name,
    is_loopback,
};
use gauntlet_core::params::{DefaultValue, ParamKind, ParamSpec, ParamValue, PluginSpec};
use reqwest::Url;
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::time::Duration;

/// Looks up an environment variable. Production passes the process environment; tests
/// pass a closure so they never mutate process-global state.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// What differs between the two live targets' param handling.
pub(crate) struct Flavor {
    pub plugin: &'static str,
    pub default_base: &'static str,
    pub base_env: &'static str,
    pub default_key_env: &'static str,
    /// An unset key variable is allowed when the server is on loopback.
    pub keyless_loopback: bool,
    pub default_max_tokens: Option<u32>,
    pub auth: AuthStyle,
    /// Appended to the base URL to form the endpoint.
    pub path: &'static str,
}

/// The caps of one call ([`crate::CallLimits`]), params of both live targets. Absent
/// unless given (so the specs, cache keys and config hashes of configs that do not set
/// them stay as they were); the defaults are documented with each param (`gauntlet list`, the book's
/// reference/plugins.md).
pub(crate) const LIMIT_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "max_tool_calls",
        kind: ParamKind::Int {
            min: 1,
            max: 100_000,
        },
        default: DefaultValue::Absent,
        doc: "most tool calls one reply may carry; a reply with more is that call's error \
              outcome (never a success or failure of the model). Absent: 128",
    },
    ParamSpec {
        name: "max_request_bytes",
        kind: ParamKind::Int {
            min: 1024,
            max: 1 << 30,
        },
        default: DefaultValue::Absent,
        doc: "largest request sent (its messages: text, tool calls and tool results, in \
              bytes); an agent loop whose conversation grew past it ends with that call's \
              error outcome. Absent: 16777216 (16 MiB)",
    },
];

/// The caps a live target's params ask for.
pub(crate) fn limits_of(p: &gauntlet_core::params::Params) -> crate::CallLimits {
    let d = crate::CallLimits::default();
    crate::CallLimits {
        max_tool_calls: p
            .int("max_tool_calls")
            .map_or(d.max_tool_calls, |n| n.max(1) as usize),
        max_request_bytes: p
            .int("max_request_bytes")
            .map_or(d.max_request_bytes, |n| n.max(1) as usize),
    }
}

/// The error of a reply carrying more tool calls than the target's cap.
pub(crate) fn too_many_tool_calls(n: usize, cap: usize, url: &str) -> ModelError {
    ModelError::Call(format!(
        "response from {url} carries {n} tool calls, more than the {cap} one reply may carry (the target's `max_tool_calls`); the call is an error"
    ))
}

/// Resolved settings of a live target.
pub(crate) struct Live {
    pub model: String,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// The spec with `base_url` filled in with the address actually used, so a base URL
    /// taken from the environment still keys the cache.
    pub spec: PluginSpec,
    pub transport: TransportConfig,
}

pub(crate) fn resolve(
    spec: &PluginSpec,
    flavor: &Flavor,
    env: EnvLookup<'_>,
    headers: HeaderMap,
    options: TransportOptions,
) -> Result<Live, ModelError> {
    let p = &spec.params;
    let model = p
        .str("model")
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| {
            ModelError::Config(format!(
                "{} target needs a non-empty `model` param",
                flavor.plugin
            ))
        })?
        .to_string();

    let (raw_base, source) = match p.str("base_url") {
        Some(b) => (b.to_string(), "base_url".to_string()),
        None => match env(flavor.base_env).filter(|v| !v.trim().is_empty()) {
            Some(b) => (b, flavor.base_env.to_string()),
            None => (flavor.default_base.to_string(), "base_url".to_string()),
        },
    };
    let base = check_base_url(&raw_base, &source)?;
    if base.path().ends_with(flavor.path) {
        return Err(ModelError::Config(format!(
            "`{source}` {} already ends in {}; give the base only (requests go to {{base_url}}{})",
            base.as_str(),
            flavor.path,
            flavor.path
        )));
    }
    if flavor.plugin == "anthropic" && base.path().trim_end_matches('/').ends_with("/v1") {
        return Err(ModelError::Config(format!(
            "`{source}` {} ends in /v1; give the host only (requests go to {{base_url}}/v1/messages)",
            base.as_str()
        )));
    }
    let base_str = base.as_str().trim_end_matches('/').to_string();
    let url = Url::parse(&format!("{base_str}{}", flavor.path))
        .map_err(|e| ModelError::Config(format!("`{source}`: cannot form the endpoint: {e}")))?;

    let key_env = p
        .str("api_key_env")
        .unwrap_or(flavor.default_key_env)
        .to_string();
    check_env_name(&key_env)?;
    let auth = match env(&key_env) {
        Some(v) if !v.trim().is_empty() => Some((Secret::new(v.trim()), flavor.auth)),
        Some(_) => {
            return Err(ModelError::Config(format!(
                "environment variable {key_env} is empty; the {} target reads its API key from the variable named by `api_key_env`",
                flavor.plugin
            )));
        }
        None if flavor.keyless_loopback && is_loopback(&base) => None,
        None => {
            return Err(ModelError::Config(format!(
                "environment variable {key_env} is not set; the {} target reads its API key from the variable named by `api_key_env`",
                flavor.plugin
            )));
        }
    };

    let temperature = p.float("temperature");
    let max_tokens = match p.int("max_tokens") {
        Some(n) => Some(
            u32::try_from(n)
                .map_err(|_| ModelError::Config(format!("`max_tokens` = {n} is out of range")))?,
        ),
        None => flavor.default_max_tokens,
    };
    let timeout_s = p.float("timeout_s").unwrap_or(60.0);
    if !(timeout_s.is_finite() && timeout_s > 0.0) {
        return Err(ModelError::Config(format!(
            "`timeout_s` = {timeout_s} must be positive"
        )));
    }
    let max_retries = p.int("max_retries").unwrap_or(4).clamp(0, 100) as u32;
    let max_concurrency = p.int("max_concurrency").map(|n| n.max(1) as usize);

    let mut resolved = spec.clone();
    resolved
        .params
        .insert("base_url", ParamValue::Str(base_str.clone()));

    Ok(Live {
        model,
        temperature,
        max_tokens,
        spec: resolved,
        transport: TransportConfig {
            url,
            headers,
            auth,
            key_env,
            timeout: Duration::from_secs_f64(timeout_s),
            max_retries,
            max_concurrency,
            options,
        },
    })
}

/// A provider's JSON response, read by field path (`choices[0].message.tool_calls[1].id`)
/// so that every problem names the endpoint and the exact field.
pub(crate) struct Doc<'a> {
    pub root: &'a Value,
    pub url: &'a str,
}

impl<'a> Doc<'a> {
    /// The value at `path`; `None` when absent or `null`.
    pub(crate) fn get(&self, path: &str) -> Option<&'a Value> {
        let mut cur = self.root;
        for seg in path.split('.') {
            let (name, indices) = match seg.find('[') {
                Some(i) => (&seg[..i], &seg[i..]),
                None => (seg, ""),
            };
            if !name.is_empty() {
                cur = cur.get(name)?;
            }
            for idx in indices.split('[').skip(1) {
                let i: usize = idx.trim_end_matches(']').parse().ok()?;
                cur = cur.get(i)?;
            }
        }
        (!cur.is_null()).then_some(cur)
    }

    pub(crate) fn missing(&self, path: &str) -> ModelError {
        ModelError::Call(format!(
            "response from {} is missing `{path}`; body starts: {}",
            self.url,
            crate::transport::excerpt(self.root.to_string().as_bytes())
        ))
    }

    fn mistyped(&self, path: &str, want: &str, got: &Value) -> ModelError {
        let kind = match got {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        };
        ModelError::Call(format!(
            "response from {}: `{path}` should be {want}, found {kind}",
            self.url
        ))
    }

    pub(crate) fn require(&self, path: &str) -> Result<&'a Value, ModelError> {
        self.get(path).ok_or_else(|| self.missing(path))
    }

    pub(crate) fn require_str(&self, path: &str) -> Result<&'a str, ModelError> {
        let v = self.require(path)?;
        v.as_str().ok_or_else(|| self.mistyped(path, "a string", v))
    }

    pub(crate) fn require_array(&self, path: &str) -> Result<&'a Vec<Value>, ModelError> {
        let v = self.require(path)?;
        v.as_array()
            .ok_or_else(|| self.mistyped(path, "an array", v))
    }

    pub(crate) fn opt_str(&self, path: &str) -> Result<Option<&'a str>, ModelError> {
        match self.get(path) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| self.mistyped(path, "a string", v)),
        }
    }

    pub(crate) fn opt_array(&self, path: &str) -> Result<Option<&'a Vec<Value>>, ModelError> {
        match self.get(path) {
            None => Ok(None),
            Some(v) => v
                .as_array()
                .map(Some)
                .ok_or_else(|| self.mistyped(path, "an array", v)),
        }
    }

    pub(crate) fn opt_u64(&self, path: &str) -> Result<Option<u64>, ModelError> {
        match self.get(path) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.mistyped(path, "a non-negative integer", v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        let v = json!({"choices": [{"message": {"content": null, "tool_calls": [{"id": "a"}]}}]});
        let d = Doc {
            root: &v,
            url: "http://x/v1/chat/completions",
        };
        assert_eq!(
            d.require_str("choices[0].message.tool_calls[0].id")
                .unwrap(),
            "a"
        );
        assert!(d.get("choices[0].message.content").is_none());
        let e = d.require("choices[1].message").unwrap_err().to_string();
        assert!(e.contains("`choices[1].message`"), "{e}");
        assert!(e.contains("http://x/v1/chat/completions"), "{e}");
        let e = d.require_str("choices[0].message").unwrap_err().to_string();
        assert!(e.contains("should be a string, found an object"), "{e}");
    }
}

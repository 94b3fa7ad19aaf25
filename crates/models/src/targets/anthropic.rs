//! `anthropic`: Claude models through Anthropic's Messages API.
//!
//! Requests go to `POST {base_url}/v1/messages` with `x-api-key` and
//! `anthropic-version: 2023-06-01`, through the shared resilient [`Transport`]. This file
//! only translates between our [`ChatRequest`]/[`ChatResponse`] and the Messages wire
//! format, whose shape differs from OpenAI's in ways that matter for multi-turn tool use:
//!
//! * system messages are hoisted to the top-level `system` field;
//! * an assistant tool call is a `tool_use` content block with an `id`;
//! * a tool result is a `tool_result` block with `tool_use_id`, inside a *user* turn, and
//!   consecutive results (and any other consecutive same-role turns) are merged into one
//!   turn, as the API expects;
//! * `max_tokens` is mandatory (default 1024);
//! * `stop_reason: "refusal"` is a [`StopReason::Refusal`], never an empty answer.
//!
//! The API key comes only from the environment variable named by `api_key_env` (default
//! `ANTHROPIC_API_KEY`) and is never part of the spec.

use super::live::{self, Doc, EnvLookup, Flavor, too_many_tool_calls};
use crate::batch::{BATCH_PARAMS, BatchApi, BatchOptions};
use crate::transport::{AuthStyle, Transport, TransportOptions, TransportStats};
use crate::{BoxFuture, Model, ModelError};
use gauntlet_core::message::{ChatRequest, ChatResponse, Role, StopReason, ToolCall, Usage};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};
use std::fmt;

/// The API version header value this translation is written against.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "name",
        kind: ParamKind::Str,
        default: DefaultValue::Str("anthropic"),
        doc: "label shown in reports and on the leaderboard",
    },
    ParamSpec {
        name: "model",
        kind: ParamKind::Str,
        default: DefaultValue::Required,
        doc: "model name, e.g. claude-sonnet-4-5",
    },
    ParamSpec {
        name: "base_url",
        kind: ParamKind::Str,
        default: DefaultValue::Absent,
        doc: "API host; requests go to {base_url}/v1/messages. Absent: $ANTHROPIC_BASE_URL, \
              else https://api.anthropic.com. https only, except loopback",
    },
    ParamSpec {
        name: "api_key_env",
        kind: ParamKind::Str,
        default: DefaultValue::Str("ANTHROPIC_API_KEY"),
        doc: "NAME of the environment variable holding the API key (never the key itself)",
    },
    ParamSpec {
        name: "temperature",
        kind: ParamKind::Float { min: 0.0, max: 2.0 },
        default: DefaultValue::Absent,
        doc: "sampling temperature (the API accepts 0..1); absent: the API default (a request's own value wins)",
    },
    ParamSpec {
        name: "max_tokens",
        kind: ParamKind::Int {
            min: 1,
            max: 1_000_000,
        },
        default: DefaultValue::Int(1024),
        doc: "maximum output tokens (required by the API; a request's own value wins)",
    },
    ParamSpec {
        name: "timeout_s",
        kind: ParamKind::Float {
            min: 0.05,
            max: 3600.0,
        },
        default: DefaultValue::Float(60.0),
        doc: "per-attempt timeout in seconds (connect, request and full response)",
    },
    ParamSpec {
        name: "max_retries",
        kind: ParamKind::Int { min: 0, max: 20 },
        default: DefaultValue::Int(4),
        doc: "retries after 429/500/502/503/504/529, timeouts and connection errors \
              (full-jitter exponential backoff, Retry-After honoured)",
    },
    ParamSpec {
        name: "max_concurrency",
        kind: ParamKind::Int {
            min: 1,
            max: 10_000,
        },
        default: DefaultValue::Absent,
        doc: "most requests in flight to this target; 429s lower it adaptively and successes \
              raise it back. Absent: bounded only by the run's concurrency",
    },
    BATCH_PARAMS[0],
    BATCH_PARAMS[1],
    BATCH_PARAMS[2],
    BATCH_PARAMS[3],
    crate::tool_protocol::PARAM,
    live::LIMIT_PARAMS[0],
    live::LIMIT_PARAMS[1],
];

pub const INFO: PluginInfo = PluginInfo {
    axis: Axis::Target,
    name: "anthropic",
    doc: "live Claude model through Anthropic's Messages API",
    params: PARAMS,
};

const FLAVOR: Flavor = Flavor {
    plugin: "anthropic",
    default_base: "https://api.anthropic.com",
    base_env: "ANTHROPIC_BASE_URL",
    default_key_env: "ANTHROPIC_API_KEY",
    keyless_loopback: false,
    default_max_tokens: Some(1024),
    auth: AuthStyle::XApiKey,
    path: "/v1/messages",
};

pub struct AnthropicTarget {
    spec: PluginSpec,
    model: String,
    temperature: Option<f64>,
    max_tokens: u32,
    pub(crate) transport: Transport,
    /// Set by `batch: true`: calls go through the provider's batch API.
    pub(crate) batch: Option<BatchOptions>,
    /// `max_tool_calls`, `max_request_bytes`.
    pub(crate) limits: crate::CallLimits,
}

impl fmt::Debug for AnthropicTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicTarget")
            .field("model", &self.model)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl AnthropicTarget {
    /// Builds the target from a resolved spec, reading the key (and the base URL
    /// fallback) from the process environment.
    pub fn new(spec: &PluginSpec) -> Result<Self, ModelError> {
        Self::with_env(spec, &live::process_env, TransportOptions::default())
    }

    /// Builds the target with an explicit environment lookup and transport tuning.
    pub fn with_env(
        spec: &PluginSpec,
        env: EnvLookup<'_>,
        options: TransportOptions,
    ) -> Result<Self, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        let live = live::resolve(spec, &FLAVOR, env, headers, options)?;
        Ok(AnthropicTarget {
            spec: live.spec,
            model: live.model,
            temperature: live.temperature,
            max_tokens: live.max_tokens.unwrap_or(1024),
            transport: Transport::new(live.transport)?,
            batch: BatchOptions::from_params(&spec.params),
            limits: live::limits_of(&spec.params),
        })
    }

    /// The wire request for `req`.
    pub fn request_body(&self, req: &ChatRequest) -> Result<Value, ModelError> {
        let (system, messages) = wire_messages(req)?;
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert(
            "max_tokens".into(),
            json!(req.max_tokens.unwrap_or(self.max_tokens)),
        );
        if let Some(s) = system {
            body.insert("system".into(), json!(s));
        }
        body.insert("messages".into(), Value::Array(messages));
        if !req.tools.is_empty() {
            let tools: Vec<Value> = req
                .tools
                .iter()
                .map(|t| {
                    let schema = if t.parameters.is_null() {
                        json!({"type": "object", "properties": {}})
                    } else {
                        t.parameters.clone()
                    };
                    json!({"name": t.name, "description": t.description, "input_schema": schema})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(t) = req.temperature.or(self.temperature) {
            body.insert("temperature".into(), json!(t));
        }
        Ok(Value::Object(body))
    }
}

/// A `tool_use` input must be an object. Arguments kept as a raw string (invalid JSON
/// from an earlier turn) are parsed if they now parse, else wrapped as `{"value": …}`.
fn wire_input(args: &Value) -> Value {
    match args {
        Value::Object(_) => args.clone(),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({"value": s}),
        },
        Value::Null => json!({}),
        other => json!({"value": other}),
    }
}

/// Hoists system messages and builds the alternating turns of content blocks, merging
/// consecutive same-role turns (so consecutive tool results form one user turn).
/// Turns with no content at all (an empty assistant reply) are dropped: the API rejects
/// empty text blocks.
fn wire_messages(req: &ChatRequest) -> Result<(Option<String>, Vec<Value>), ModelError> {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for (i, m) in req.messages.iter().enumerate() {
        let (role, blocks): (&'static str, Vec<Value>) = match m.role {
            Role::System => {
                system.push(&m.content);
                continue;
            }
            Role::User => ("user", text_block(&m.content)),
            Role::Assistant => {
                let mut b = text_block(&m.content);
                for c in &m.tool_calls {
                    b.push(json!({
                        "type": "tool_use",
                        "id": c.call_id,
                        "name": c.name,
                        "input": wire_input(&c.arguments),
                    }));
                }
                ("assistant", b)
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().ok_or_else(|| {
                    ModelError::Call(format!(
                        "message {i} is a tool result without a tool_call_id; the API cannot match it to a tool_use"
                    ))
                })?;
                (
                    "user",
                    vec![json!({"type": "tool_result", "tool_use_id": id, "content": m.content})],
                )
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((r, b)) if *r == role => b.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    let messages = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    Ok((system, messages))
}

fn text_block(text: &str) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

/// Normalises a Messages API response.
pub fn parse_response(root: &Value, url: &str) -> Result<ChatResponse, ModelError> {
    parse_capped(root, url, gauntlet_core::message::DEFAULT_MAX_TOOL_CALLS)
}

/// [`parse_response`] with at most `max_tool_calls` `tool_use` blocks: a reply with more
/// is an error, found by counting before any call is read.
pub fn parse_capped(
    root: &Value,
    url: &str,
    max_tool_calls: usize,
) -> Result<ChatResponse, ModelError> {
    let d = Doc { root, url };
    let blocks = d.require_array("content")?;
    let uses = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .count();
    if uses > max_tool_calls {
        return Err(too_many_tool_calls(uses, max_tool_calls, url));
    }
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for i in 0..blocks.len() {
        match d.require_str(&format!("content[{i}].type"))? {
            "text" => content.push_str(d.require_str(&format!("content[{i}].text"))?),
            "tool_use" => tool_calls.push(ToolCall {
                call_id: d.require_str(&format!("content[{i}].id"))?.to_string(),
                name: d.require_str(&format!("content[{i}].name"))?.to_string(),
                arguments: d
                    .get(&format!("content[{i}].input"))
                    .cloned()
                    .unwrap_or(json!({})),
            }),
            // thinking, redacted_thinking, server tool blocks: not part of the answer.
            _ => {}
        }
    }
    let stop_reason = match d.opt_str("stop_reason")? {
        Some("end_turn" | "stop_sequence") | None => {
            if tool_calls.is_empty() {
                StopReason::Stop
            } else {
                StopReason::ToolCalls
            }
        }
        Some("max_tokens") => StopReason::Length,
        Some("tool_use") => StopReason::ToolCalls,
        Some("refusal") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.to_string()),
    };
    let usage = if d.get("usage").is_some() {
        let input = d.opt_u64("usage.input_tokens")?;
        let cache_write = d.opt_u64("usage.cache_creation_input_tokens")?;
        let cache_read = d.opt_u64("usage.cache_read_input_tokens")?;
        let output = d.opt_u64("usage.output_tokens")?;
        // Checked: three counts near u64::MAX must not wrap to a small one.
        let input_tokens = input
            .unwrap_or(0)
            .checked_add(cache_write.unwrap_or(0))
            .and_then(|n| n.checked_add(cache_read.unwrap_or(0)))
            .ok_or_else(|| {
                ModelError::Call(format!(
                    "response from {url} reports input token counts whose sum exceeds 2^64: implausible usage"
                ))
            })?;
        (input.is_some() || output.is_some()).then(|| Usage {
            input_tokens,
            output_tokens: output.unwrap_or(0),
        })
    } else {
        None
    };
    Ok(ChatResponse {
        first_token_logprobs: None,
        evidence: None,
        content,
        stop_reason,
        tool_calls,
        usage,
    })
}

impl Model for AnthropicTarget {
    fn spec(&self) -> &PluginSpec {
        &self.spec
    }
    fn offline(&self) -> bool {
        false
    }
    fn chat<'a>(&'a self, req: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse, ModelError>> {
        Box::pin(async move {
            let body = self.request_body(req)?;
            let cap = self.limits.max_tool_calls;
            self.transport
                .call(&body, |v, url| parse_capped(v, url, cap))
                .await
        })
    }
    fn transport_stats(&self) -> Option<TransportStats> {
        Some(self.transport.stats())
    }
    fn batch_api(&self) -> Option<&dyn BatchApi> {
        self.batch.as_ref().map(|_| self as &dyn BatchApi)
    }
    fn limits(&self) -> crate::CallLimits {
        self.limits
    }
    fn secret(&self) -> Option<&crate::transport::Secret> {
        self.transport.secret()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_core::message::Message;

    const URL: &str = "http://127.0.0.1:1/v1/messages";

    /// Issue 26: `tool_use` blocks beyond the cap are an error; token counts whose sum
    /// passes 2^64 are an error, never a wrapped small number.
    #[test]
    fn tool_uses_beyond_the_cap_and_wrapping_usage_are_errors() {
        let blocks: Vec<Value> = (0..129)
            .map(|i| json!({"type": "tool_use", "id": format!("t{i}"), "name": "f", "input": {}}))
            .collect();
        let v = json!({"content": blocks, "stop_reason": "tool_use"});
        let e = parse_response(&v, URL).unwrap_err().to_string();
        assert!(
            e.contains("129 tool calls") && e.contains("max_tool_calls"),
            "{e}"
        );
        assert_eq!(parse_capped(&v, URL, 129).unwrap().tool_calls.len(), 129);
        let half = 1u64 << 63;
        let v = json!({"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": half, "cache_read_input_tokens": half, "output_tokens": 1}});
        let e = parse_response(&v, URL).unwrap_err().to_string();
        assert!(e.contains("implausible usage"), "{e}");
    }

    fn tool_result(id: &str, text: &str) -> Message {
        let mut m = Message::user(text);
        m.role = Role::Tool;
        m.tool_call_id = Some(id.into());
        m
    }

    #[test]
    fn system_hoisted_and_tool_results_merged() {
        let mut call = Message::assistant("");
        call.tool_calls = vec![
            ToolCall {
                name: "a".into(),
                arguments: json!({"x": 1}),
                call_id: "toolu_1".into(),
            },
            ToolCall {
                name: "b".into(),
                arguments: json!("{bad"),
                call_id: "toolu_2".into(),
            },
        ];
        let req = ChatRequest {
            messages: vec![
                Message::system("be safe"),
                Message::user("hi"),
                call,
                tool_result("toolu_1", "r1"),
                tool_result("toolu_2", "r2"),
                Message::system("second"),
            ],
            ..Default::default()
        };
        let (system, msgs) = wire_messages(&req).unwrap();
        assert_eq!(system.as_deref(), Some("be safe\n\nsecond"));
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"][0]["type"], "tool_use");
        assert_eq!(msgs[1]["content"][1]["input"], json!({"value": "{bad"}));
        assert_eq!(msgs[2]["role"], "user");
        assert_eq!(msgs[2]["content"][0]["tool_use_id"], "toolu_1");
        assert_eq!(msgs[2]["content"][1]["tool_use_id"], "toolu_2");
    }

    #[test]
    fn responses() {
        let v = json!({"content": [{"type": "thinking", "thinking": "…"}, {"type": "text", "text": "ok "},
            {"type": "tool_use", "id": "toolu_9", "name": "f", "input": {"q": "x"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 2}});
        let r = parse_response(&v, URL).unwrap();
        assert_eq!(r.content, "ok ");
        assert_eq!(r.stop_reason, StopReason::ToolCalls);
        assert_eq!(r.tool_calls[0].call_id, "toolu_9");
        assert_eq!(r.usage.unwrap().input_tokens, 5);
        let v = json!({"content": [], "stop_reason": "refusal"});
        assert_eq!(
            parse_response(&v, URL).unwrap().stop_reason,
            StopReason::Refusal
        );
        let e = parse_response(&json!({"stop_reason": "end_turn"}), URL)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`content`") && e.contains(URL), "{e}");
        let e = parse_response(&json!({"content": [{"type": "text"}]}), URL)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`content[0].text`"), "{e}");
    }
}

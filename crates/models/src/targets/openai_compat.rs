//! `openai_compat`: any server speaking the OpenAI chat-completions wire format (hosted
//! OpenAI, vLLM, llama.cpp's server, Ollama, gateways).
//!
//! Requests go to `POST {base_url}/chat/completions` through the shared resilient
//! [`Transport`]. This file only translates: our [`ChatRequest`] (messages, tools, tool
//! calls with ids, tool results carrying `tool_call_id`, seed, temperature, max tokens)
//! into the wire JSON, and the wire response back into a [`ChatResponse`] — text, tool
//! calls with their ids and parsed arguments, usage, and a stop reason in which a
//! provider's refusal (`finish_reason: "content_filter"` or a non-null `message.refusal`)
//! is a [`StopReason::Refusal`], never an empty answer.
//!
//! A `system_prompt` param is sent as the first message of every conversation that has
//! no system message of its own — the deployment's prompt, as an application would set
//! it; it is part of the target's spec, so of every cache key.
//!
//! The API key comes only from the environment variable named by `api_key_env`; it is
//! not a param and never appears in the spec. A server on loopback may run keyless when
//! that variable is unset (local llama.cpp/vLLM servers need no key).

use super::live::{self, Doc, EnvLookup, Flavor, too_many_tool_calls};
use crate::batch::{BATCH_PARAMS, BatchApi, BatchOptions};
use crate::transport::{AuthStyle, Transport, TransportOptions, TransportStats};
use crate::{BoxFuture, Model, ModelError};
use gauntlet_core::message::{
    ChatRequest, ChatResponse, Role, StopReason, TokenLogprob, ToolCall, ToolDef, Usage,
};
use gauntlet_core::params::{Axis, DefaultValue, ParamKind, ParamSpec, PluginInfo, PluginSpec};
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};
use std::fmt;

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "name",
        kind: ParamKind::Str,
        default: DefaultValue::Str("openai_compat"),
        doc: "label shown in reports and on the leaderboard",
    },
    ParamSpec {
        name: "model",
        kind: ParamKind::Str,
        default: DefaultValue::Required,
        doc: "model name sent in the request (e.g. gpt-4o-mini, or whatever the local server serves)",
    },
    ParamSpec {
        name: "base_url",
        kind: ParamKind::Str,
        default: DefaultValue::Absent,
        doc: "API base ending in /v1 style path; requests go to {base_url}/chat/completions. \
              Absent: $OPENAI_BASE_URL, else https://api.openai.com/v1. https only, except loopback",
    },
    ParamSpec {
        name: "api_key_env",
        kind: ParamKind::Str,
        default: DefaultValue::Str("OPENAI_API_KEY"),
        doc: "NAME of the environment variable holding the API key (never the key itself); \
              may be unset for a loopback server",
    },
    ParamSpec {
        name: "temperature",
        kind: ParamKind::Float { min: 0.0, max: 2.0 },
        default: DefaultValue::Absent,
        doc: "sampling temperature; absent: the server's default (a request's own value wins)",
    },
    ParamSpec {
        name: "max_tokens",
        kind: ParamKind::Int {
            min: 1,
            max: 1_000_000,
        },
        default: DefaultValue::Absent,
        doc: "maximum output tokens; absent: the server's default (a request's own value wins)",
    },
    ParamSpec {
        name: "system_prompt",
        kind: ParamKind::Str,
        default: DefaultValue::Absent,
        doc: "system prompt sent as the first message of every conversation that has no system \
              message of its own (a conversation's own wins); part of the target's identity, so \
              of every cache key. Absent: none",
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
    name: "openai_compat",
    doc: "live model behind an OpenAI-compatible chat-completions API (hosted, vLLM, llama.cpp, Ollama)",
    params: PARAMS,
};

const FLAVOR: Flavor = Flavor {
    plugin: "openai_compat",
    default_base: "https://api.openai.com/v1",
    base_env: "OPENAI_BASE_URL",
    default_key_env: "OPENAI_API_KEY",
    keyless_loopback: true,
    default_max_tokens: None,
    auth: AuthStyle::Bearer,
    path: "/chat/completions",
};

pub struct OpenAiCompatTarget {
    spec: PluginSpec,
    model: String,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    /// The `system_prompt` param: the system message of a conversation without one.
    system_prompt: Option<String>,
    pub(crate) transport: Transport,
    /// Set by `batch: true`: calls go through the provider's batch API.
    pub(crate) batch: Option<BatchOptions>,
    /// `max_tool_calls`, `max_request_bytes`.
    pub(crate) limits: crate::CallLimits,
}

impl fmt::Debug for OpenAiCompatTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiCompatTarget")
            .field("model", &self.model)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl OpenAiCompatTarget {
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
        let live = live::resolve(spec, &FLAVOR, env, HeaderMap::new(), options)?;
        Ok(OpenAiCompatTarget {
            spec: live.spec,
            model: live.model,
            temperature: live.temperature,
            max_tokens: live.max_tokens,
            system_prompt: spec.params.str("system_prompt").map(str::to_string),
            transport: Transport::new(live.transport)?,
            batch: BatchOptions::from_params(&spec.params),
            limits: live::limits_of(&spec.params),
        })
    }

    /// The wire request for `req`.
    pub fn request_body(&self, req: &ChatRequest) -> Result<Value, ModelError> {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        let mut messages = wire_messages(req)?;
        if let Some(sp) = &self.system_prompt
            && !req.messages.iter().any(|m| m.role == Role::System)
        {
            messages.insert(0, json!({"role": "system", "content": sp}));
        }
        body.insert("messages".into(), Value::Array(messages));
        if !req.tools.is_empty() {
            body.insert(
                "tools".into(),
                Value::Array(req.tools.iter().map(wire_tool).collect()),
            );
        }
        if let Some(t) = req.temperature.or(self.temperature) {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(n) = req.max_tokens.or(self.max_tokens) {
            body.insert("max_tokens".into(), json!(n));
        }
        if let Some(n) = req.top_logprobs {
            body.insert("logprobs".into(), json!(true));
            body.insert("top_logprobs".into(), json!(n));
        }
        if let Some(seed) = req.seed {
            body.insert("seed".into(), json!(seed));
        }
        Ok(Value::Object(body))
    }
}

fn wire_tool(t: &ToolDef) -> Value {
    let parameters = if t.parameters.is_null() {
        json!({"type": "object", "properties": {}})
    } else {
        t.parameters.clone()
    };
    json!({
        "type": "function",
        "function": {"name": t.name, "description": t.description, "parameters": parameters}
    })
}

/// Arguments go on the wire as a JSON string. Arguments kept as a raw string (the model
/// once sent invalid JSON) go back verbatim.
fn wire_arguments(args: &Value) -> String {
    match args {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn wire_messages(req: &ChatRequest) -> Result<Vec<Value>, ModelError> {
    let mut out = Vec::with_capacity(req.messages.len());
    for (i, m) in req.messages.iter().enumerate() {
        let v = match m.role {
            Role::System => json!({"role": "system", "content": m.content}),
            Role::User => json!({"role": "user", "content": m.content}),
            Role::Assistant if m.tool_calls.is_empty() => {
                json!({"role": "assistant", "content": m.content})
            }
            Role::Assistant => {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.call_id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": wire_arguments(&c.arguments)}
                        })
                    })
                    .collect();
                let content = if m.content.is_empty() {
                    Value::Null
                } else {
                    json!(m.content)
                };
                json!({"role": "assistant", "content": content, "tool_calls": calls})
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().ok_or_else(|| {
                    ModelError::Call(format!(
                        "message {i} is a tool result without a tool_call_id; the API cannot match it to a call"
                    ))
                })?;
                json!({"role": "tool", "tool_call_id": id, "content": m.content})
            }
        };
        out.push(v);
    }
    Ok(out)
}

/// Text of a `content` field: a string, or an array of parts whose text is joined.
fn content_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Normalises a chat-completions response, with the default cap on tool calls.
pub fn parse_response(root: &Value, url: &str) -> Result<ChatResponse, ModelError> {
    parse_capped(root, url, gauntlet_core::message::DEFAULT_MAX_TOOL_CALLS)
}

/// [`parse_response`] with at most `max_tool_calls` tool calls: a reply with more is an
/// error, found by counting before any call is read.
pub fn parse_capped(
    root: &Value,
    url: &str,
    max_tool_calls: usize,
) -> Result<ChatResponse, ModelError> {
    let d = Doc { root, url };
    let choices = d.require_array("choices")?;
    if choices.is_empty() {
        return Err(d.missing("choices[0]"));
    }
    d.require("choices[0].message")?;
    let mut content = content_text(d.get("choices[0].message.content"));
    let refusal = d
        .opt_str("choices[0].message.refusal")?
        .filter(|r| !r.trim().is_empty());

    let mut tool_calls = Vec::new();
    if let Some(calls) = d.opt_array("choices[0].message.tool_calls")? {
        if calls.len() > max_tool_calls {
            return Err(too_many_tool_calls(calls.len(), max_tool_calls, url));
        }
        for i in 0..calls.len() {
            let base = format!("choices[0].message.tool_calls[{i}]");
            let call_id = d.require_str(&format!("{base}.id"))?.to_string();
            let name = d.require_str(&format!("{base}.function.name"))?.to_string();
            let arguments = match d.require(&format!("{base}.function.arguments"))? {
                Value::String(s) if s.trim().is_empty() => json!({}),
                Value::String(s) => {
                    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                }
                other => other.clone(),
            };
            tool_calls.push(ToolCall {
                name,
                arguments,
                call_id,
            });
        }
    }

    let finish = d.opt_str("choices[0].finish_reason")?;
    let stop_reason = if let Some(r) = refusal {
        if content.trim().is_empty() {
            content = r.to_string();
        }
        StopReason::Refusal
    } else {
        match finish {
            Some("stop") => StopReason::Stop,
            Some("length") => StopReason::Length,
            Some("tool_calls" | "function_call") => StopReason::ToolCalls,
            Some("content_filter") => StopReason::Refusal,
            Some(other) => StopReason::Other(other.to_string()),
            None if !tool_calls.is_empty() => StopReason::ToolCalls,
            None => StopReason::Stop,
        }
    };

    let usage = if d.get("usage").is_some() {
        let input = d.opt_u64("usage.prompt_tokens")?;
        let output = d.opt_u64("usage.completion_tokens")?;
        (input.is_some() || output.is_some()).then(|| Usage {
            input_tokens: input.unwrap_or(0),
            output_tokens: output.unwrap_or(0),
        })
    } else {
        None
    };

    Ok(ChatResponse {
        content,
        stop_reason,
        tool_calls,
        usage,
        first_token_logprobs: first_token_logprobs(root),
        evidence: None,
    })
}

/// `choices[0].logprobs.content[0].top_logprobs` as (token, logprob) pairs, when the
/// server returned them (entries without a string token or a finite number are skipped;
/// none left is `None`). Logprobs are optional everywhere: a malformed block is ignored,
/// never an error, and whoever asked for them says so when they are missing.
fn first_token_logprobs(root: &Value) -> Option<Vec<TokenLogprob>> {
    let top = root
        .pointer("/choices/0/logprobs/content/0/top_logprobs")?
        .as_array()?;
    let out: Vec<TokenLogprob> = top
        .iter()
        .filter_map(|e| {
            let token = e.get("token")?.as_str()?.to_string();
            let logprob = e.get("logprob")?.as_f64().filter(|x| x.is_finite())?;
            Some(TokenLogprob { token, logprob })
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

impl Model for OpenAiCompatTarget {
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

    const URL: &str = "http://127.0.0.1:1/v1/chat/completions";

    /// The first token's top logprobs are read when present; a missing or malformed
    /// block is no logprobs, never an error.
    #[test]
    fn first_token_logprobs_are_read_when_present() {
        let v = json!({"choices": [{"message": {"content": "Yes"}, "finish_reason": "stop",
            "logprobs": {"content": [{"token": "Yes", "logprob": -0.1, "top_logprobs": [
                {"token": "Yes", "logprob": -0.1}, {"token": "No", "logprob": -2.4},
                {"token": 7, "logprob": -3.0}, {"token": "x", "logprob": "bad"}]}]}}]});
        let r = parse_response(&v, URL).unwrap();
        let lp = r.first_token_logprobs.unwrap();
        assert_eq!(lp.len(), 2);
        assert_eq!((lp[1].token.as_str(), lp[1].logprob), ("No", -2.4));
        for block in [
            json!(null),
            json!({"content": []}),
            json!({"content": [{"top_logprobs": []}]}),
        ] {
            let v = json!({"choices": [{"message": {"content": "No"}, "logprobs": block}]});
            assert_eq!(parse_response(&v, URL).unwrap().first_token_logprobs, None);
        }
    }

    #[test]
    fn refusal_field_and_content_filter() {
        let v = json!({"choices": [{"message": {"content": null, "refusal": "I can't help."}, "finish_reason": "stop"}]});
        let r = parse_response(&v, URL).unwrap();
        assert_eq!(r.stop_reason, StopReason::Refusal);
        assert_eq!(r.content, "I can't help.");
        let v =
            json!({"choices": [{"message": {"content": ""}, "finish_reason": "content_filter"}]});
        assert_eq!(
            parse_response(&v, URL).unwrap().stop_reason,
            StopReason::Refusal
        );
    }

    /// Issue 26: a reply with more tool calls than the cap is an error naming the cap,
    /// at the default and at a configured cap; up to the cap they are read.
    #[test]
    fn tool_calls_beyond_the_cap_are_an_error() {
        let calls = |n: usize| {
            let c: Vec<Value> = (0..n)
                .map(|i| json!({"id": format!("c{i}"), "type": "function", "function": {"name": "f", "arguments": "{}"}}))
                .collect();
            json!({"choices": [{"message": {"content": null, "tool_calls": c}, "finish_reason": "tool_calls"}]})
        };
        let e = parse_response(&calls(129), URL).unwrap_err().to_string();
        assert!(
            e.contains("129 tool calls") && e.contains("128") && e.contains("max_tool_calls"),
            "{e}"
        );
        assert_eq!(
            parse_response(&calls(128), URL).unwrap().tool_calls.len(),
            128
        );
        assert!(parse_capped(&calls(3), URL, 2).is_err());
        assert_eq!(
            parse_capped(&calls(3000), URL, 5000)
                .unwrap()
                .tool_calls
                .len(),
            3000
        );
    }

    #[test]
    fn tool_calls_and_usage() {
        let v = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}},
            {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": "{oops"}}
        ]}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 7, "completion_tokens": 3}});
        let r = parse_response(&v, URL).unwrap();
        assert_eq!(r.stop_reason, StopReason::ToolCalls);
        assert_eq!(r.tool_calls[0].arguments, json!({"a": 1}));
        assert_eq!(r.tool_calls[1].arguments, json!("{oops"));
        assert_eq!(r.tool_calls[1].call_id, "call_2");
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 7,
                output_tokens: 3
            })
        );
    }

    #[test]
    fn missing_fields_are_named() {
        let e = parse_response(&json!({"choices": [{"finish_reason": "stop"}]}), URL)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`choices[0].message`") && e.contains(URL), "{e}");
        let e = parse_response(&json!({"id": "x"}), URL)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`choices`"), "{e}");
        let e = parse_response(&json!({"choices": []}), URL)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`choices[0]`"), "{e}");
        let v = json!({"choices": [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}}]});
        let e = parse_response(&v, URL).unwrap_err().to_string();
        assert!(e.contains("`choices[0].message.tool_calls[0].id`"), "{e}");
    }

    #[test]
    fn tool_message_without_id_is_an_error() {
        let mut m = Message::user("result");
        m.role = Role::Tool;
        let req = ChatRequest {
            messages: vec![m],
            ..Default::default()
        };
        assert!(matches!(wire_messages(&req), Err(ModelError::Call(_))));
    }
}
